/* SPDX-License-Identifier: MIT */
/* Test workload for sites (io.trapstat.Sites): traps and page faults at known instructions in
 * functions with distinctive names, in the executable and in a shared library, so that a test
 * can check the file, offset and symbol trapstatd reports for each, and the exact counts.
 *
 * usage: site-traps [--ud N] [--bp N] [--spread N [--chunk K] [--pause MS] [--rounds R]] [--null-child]
 *                   [--pages N] [--hold-after SECONDS]
 *
 * The steps given run in this order:
 *   --ud N          site_ud_main (this executable) executes one undefined instruction N times,
 *                   SIGILL; the handler steps over it
 *   --bp N          site_bp_lib (libsite-traps.so) executes one breakpoint instruction N times,
 *                   SIGTRAP; the handler goes on after it
 *   --spread N      N undefined instructions one after another in anonymous executable memory,
 *                   as a JIT's code: N sites ("[anon]"), one trap each; with --chunk K, K at a
 *                   time with a pause of MS milliseconds (--pause) after each K; with --rounds R
 *                   all of it R times (N sites, R traps each)
 *   --null-child    a forked child calls site_null_write (this executable), a store to address
 *                   8: a page fault, and the child dies of the SIGSEGV (default action, no core
 *                   dump)
 *   --pages N       site_touch_pages (this executable) writes one byte to each of N fresh
 *                   anonymous pages (no transparent huge pages): N user write faults at one
 *                   instruction
 *   --hold-after S  then stays alive S seconds, or until it gets SIGUSR1, and exits 0
 *
 * The instructions, and the names trapstatd gives their traps (common/trap-vectors.h):
 *            --ud, --spread                        --bp
 *   x86-64   ud2: UD, SIGILL ILL_ILLOPN, RIP at    int3: BP, SIGTRAP SI_KERNEL, RIP past
 *            the ud2 (2 bytes)                     the int3 (1 byte)
 *   arm64    udf #0: UNKNOWN, SIGILL ILL_ILLOPC,   brk #0x7ab: BRK64, SIGTRAP TRAP_BRKPT, pc
 *            pc at the udf (4 bytes)               at the brk (4 bytes), unlike x86
 * Either way the site of a trap is the instruction itself: the handler checks the signal came
 * from it and resumes after it.
 *
 * prints, one line each, flushed at once (a test reads them to know where the workload is),
 * the same on both architectures (the steps are named by their options, not by vector):
 *   pid P
 *   done ud signals=N
 *   done bp signals=N
 *   done spread signals=N
 *   child C                              (before the child runs)
 *   done null-child signal=11
 *   done pages pages=N minflt=M          (M: the kernel's minflt delta over the step)
 *   holding seconds=S
 *   done hold
 * A signal that is not the one expected, a missing one, or a child that does not die of
 * SIGSEGV is an error: a message on stderr, exit status 1 (2 for bad usage, 3 for a failed
 * system call).
 *
 * Linked dynamically (unlike the other workloads), against libsite-traps.so found next to it
 * (rpath $ORIGIN): a trap site is to be in a shared library. x86-64 and arm64 only (the traps
 * are their instructions): elsewhere it says so and exits 77, which the tests that use it take
 * as "skipped". */

#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "../../common/trap-vectors.h"

#if defined(__x86_64__) || defined(__aarch64__)

#define PAGE 4096

#if defined(__x86_64__)

#define UD_INSN "ud2"
#define BP_INSN "int3"
/* si_code of each; the instructions' bytes, and of the ret that ends a chunk of --spread. */
#define UD_CODE ILL_ILLOPN
#define BP_CODE SI_KERNEL
static const unsigned char ud_bytes[] = {0x0f, 0x0b};
static const unsigned char bp_bytes[] = {0xcc};
static const unsigned char ret_bytes[] = {0xc3};
/* #BP is a trap: RIP is already past the int3. */
#define BP_PC_PAST 1

/* "UD", "BP": the names trapstatd gives the vectors. */
static const char *const vector_names[TRAP_VECTORS] = {
#define VECTOR_NAME(number, mnemonic, description) [number] = #mnemonic,
        TRAP_VECTOR_TABLE(VECTOR_NAME)
#undef VECTOR_NAME
};
#define UD_NAME vector_names[TRAP_VECTOR_UD]
#define BP_NAME vector_names[TRAP_VECTOR_BP]

/* n in %0, not 0: one ud2, executed n times. */
#define UD_LOOP                                                                                                        \
        "1: ud2\n\t"                                                                                                   \
        "dec %0\n\t"                                                                                                   \
        "jnz 1b"
/* p in %0, pages in %1 (not 0), PAGE in %2: one byte store, executed once per page. */
#define TOUCH_LOOP                                                                                                     \
        "1: movb $1, (%0)\n\t"                                                                                         \
        "add %2, %0\n\t"                                                                                               \
        "dec %1\n\t"                                                                                                   \
        "jnz 1b"

static uintptr_t get_pc(const ucontext_t *uc) {
        return (uintptr_t) uc->uc_mcontext.gregs[REG_RIP];
}

static void set_pc(ucontext_t *uc, uintptr_t pc) {
        uc->uc_mcontext.gregs[REG_RIP] = (greg_t) pc;
}

#elif defined(__aarch64__)

#define UD_INSN "udf"
#define BP_INSN "brk"
#define UD_CODE ILL_ILLOPC
#define BP_CODE TRAP_BRKPT
/* udf #0 is the word 0; brk #0x7ab (site-lib.c's: an immediate the kernel has no user break
 * hook for, uprobes use 0x005) is 0xd4200000 | 0x7ab << 5; ret is 0xd65f03c0. Little-endian. */
static const unsigned char ud_bytes[] = {0x00, 0x00, 0x00, 0x00};
static const unsigned char bp_bytes[] = {0x60, 0xf5, 0x20, 0xd4};
static const unsigned char ret_bytes[] = {0xc0, 0x03, 0x5f, 0xd6};
/* The pc stays at the brk: the exception is taken before it executes. */
#define BP_PC_PAST 0

/* "UNKNOWN", "BRK64": the names trapstatd gives the exception classes, by slot. */
static const char *const vector_names[TRAP_VECTORS] = {
#define CLASS_NAME(slot, class, mnemonic, description) [slot] = #mnemonic,
        TRAP_ARM64_CLASS_TABLE(CLASS_NAME)
#undef CLASS_NAME
};
#define UD_NAME vector_names[TRAP_ARM64_UNKNOWN]
#define BP_NAME vector_names[TRAP_ARM64_BRK64]

#define UD_LOOP                                                                                                        \
        "1: udf #0\n\t"                                                                                                \
        "subs %w0, %w0, #1\n\t"                                                                                        \
        "b.ne 1b"
/* The zero register's low byte: a write all the same (the page is fresh, so zero already), and
 * no register to load with a value first. */
#define TOUCH_LOOP                                                                                                     \
        "1: strb wzr, [%0]\n\t"                                                                                        \
        "add %0, %0, %2\n\t"                                                                                           \
        "subs %1, %1, #1\n\t"                                                                                          \
        "b.ne 1b"

static uintptr_t get_pc(const ucontext_t *uc) {
        return (uintptr_t) uc->uc_mcontext.pc;
}

static void set_pc(ucontext_t *uc, uintptr_t pc) {
        uc->uc_mcontext.pc = pc;
}

#endif

/* libsite-traps.so (tests/helpers/site-lib.c). */
void site_bp_lib(int n);

static volatile sig_atomic_t sigills, sigtraps;

/* Only async-signal-safe calls in the handler. */
static void put(const char *s) {
        ssize_t r = write(STDERR_FILENO, s, strlen(s));

        (void) r;
}

static _Noreturn void handler_fail(const char *sig, const char *insn, const char *vector) {
        put("site-traps: ");
        put(sig);
        put(" not from the ");
        put(insn);
        put(" (");
        put(vector);
        put(")\n");
        _exit(1);
}

static void on_signal(int sig, siginfo_t *si, void *ctx) {
        ucontext_t *uc = ctx;
        uintptr_t pc = get_pc(uc);

        if (sig == SIGILL) {
                /* A fault: the pc is at the instruction; step over it. */
                if (si->si_code != UD_CODE || memcmp((const void *) pc, ud_bytes, sizeof(ud_bytes)) != 0)
                        handler_fail("SIGILL", UD_INSN, UD_NAME);
                set_pc(uc, pc + sizeof(ud_bytes));
                sigills = sigills + 1;
        } else if (sig == SIGTRAP) {
                /* At the breakpoint or past it (BP_PC_PAST): go on after it either way. */
                const unsigned char *bp = (const unsigned char *) pc - BP_PC_PAST;

                if (si->si_code != BP_CODE || memcmp(bp, bp_bytes, sizeof(bp_bytes)) != 0)
                        handler_fail("SIGTRAP", BP_INSN, BP_NAME);
                set_pc(uc, (uintptr_t) bp + sizeof(bp_bytes));
                sigtraps = sigtraps + 1;
        } else {
                put("site-traps: unexpected signal\n");
                _exit(1);
        }
}

/* Executes one undefined instruction n times: one instruction, so one site with a count of n.
 * The loop is written in assembly: a compiler may unroll a C loop into several ud2 (gcc 16
 * does). The handler steps over it to the decrement. */
__attribute__((noinline, used, visibility("default"))) void site_ud_main(int n) {
        if (n > 0)
                __asm__ volatile(UD_LOOP : "+r"(n) : : "memory", "cc");
}

/* A store to address 8, which nothing maps: the pointer is read from a volatile so that the
 * compiler neither knows nor warns about its value. */
__attribute__((noinline, used, visibility("default"))) void site_null_write(void) {
        int *volatile p = (int *) 8;

        *p = 1;
}

/* Writes one byte to each of pages fresh anonymous pages, in order: pages user write faults at
 * the one store of the loop. -1 when the memory cannot be had. */
__attribute__((noinline, used, visibility("default"))) int site_touch_pages(size_t pages) {
        volatile char *mem = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        if (mem == MAP_FAILED)
                return -1;
        /* No transparent huge pages: one fault per 4 KiB page. */
        (void) madvise((void *) mem, pages * PAGE, MADV_NOHUGEPAGE);
        /* One store instruction, in assembly: a C loop may be unrolled into several. */
        if (pages > 0) {
                volatile char *p = mem;
                size_t left = pages;

                __asm__ volatile(TOUCH_LOOP : "+r"(p), "+r"(left) : "r"((size_t) PAGE) : "memory", "cc");
        }
        munmap((void *) mem, pages * PAGE);
        return 0;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        putchar('\n');
        if (fflush(stdout) != 0) {
                perror("site-traps: stdout");
                exit(3);
        }
}

static long minflt(void) {
        struct rusage ru;

        if (getrusage(RUSAGE_SELF, &ru) < 0) {
                perror("site-traps: getrusage");
                exit(3);
        }
        return ru.ru_minflt;
}

static void null_child(void) {
        struct rlimit none = {0, 0};
        int status;
        pid_t pid;

        pid = fork();
        if (pid < 0) {
                perror("site-traps: fork");
                exit(3);
        }
        if (pid == 0) {
                /* The default action of SIGSEGV, without leaving a core file behind. */
                (void) setrlimit(RLIMIT_CORE, &none);
                signal(SIGSEGV, SIG_DFL);
                site_null_write();
                _exit(1);
        }
        say("child %d", (int) pid);
        if (waitpid(pid, &status, 0) < 0) {
                perror("site-traps: waitpid");
                exit(3);
        }
        if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSEGV) {
                fprintf(stderr, "site-traps: the child did not die of SIGSEGV (status 0x%x)\n", status);
                exit(1);
        }
        say("done null-child signal=%d", WTERMSIG(status));
}

/* Waits seconds, or until SIGUSR1 (blocked since the start, so an early one is not lost). */
static void hold(long seconds) {
        struct timespec now, end, left;
        sigset_t usr1;

        sigemptyset(&usr1);
        sigaddset(&usr1, SIGUSR1);
        say("holding seconds=%ld", seconds);
        clock_gettime(CLOCK_MONOTONIC, &end);
        end.tv_sec += seconds;
        for (;;) {
                clock_gettime(CLOCK_MONOTONIC, &now);
                if (now.tv_sec > end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
                        break;
                left.tv_sec = end.tv_sec - now.tv_sec;
                left.tv_nsec = end.tv_nsec - now.tv_nsec;
                if (left.tv_nsec < 0) {
                        left.tv_sec--;
                        left.tv_nsec += 1000000000L;
                }
                if (sigtimedwait(&usr1, NULL, &left) == SIGUSR1)
                        break;
                if (errno != EAGAIN && errno != EINTR) {
                        perror("site-traps: sigtimedwait");
                        exit(3);
                }
        }
        say("done hold");
}

static _Noreturn void usage(void) {
        fprintf(stderr, "usage: site-traps [--ud N] [--bp N] [--spread N [--chunk K] [--pause MS] [--rounds R]] "
                        "[--null-child] [--pages N] [--hold-after SECONDS]\n");
        exit(2);
}

static long number(const char *s) {
        char *end;
        long v;

        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || end == s || *end || v < 0 || v > 100000000)
                usage();
        return v;
}

/* n undefined instructions in anonymous memory, a ret after every chunk of them: one call of a
 * chunk traps chunk times, at as many addresses (the handler steps over each into the next).
 * Every chunk is called in turn, pause_ms after each, the whole rounds times. The code stays
 * mapped until the exit, as a JIT's would: trapstatd may name it from /proc/PID/maps while the
 * process lives. -1 when the memory cannot be had. */
static int spread_ud(long n, long chunk, long pause_ms, long rounds) {
        long chunks = (n + chunk - 1) / chunk;
        size_t stride = (size_t) chunk * sizeof(ud_bytes) + sizeof(ret_bytes);
        size_t size = (size_t) n * sizeof(ud_bytes) + (size_t) chunks * sizeof(ret_bytes);
        struct timespec pause = { pause_ms / 1000, (pause_ms % 1000) * 1000000L };
        unsigned char *code = mmap(NULL, size, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        unsigned char *at = code;

        if (code == MAP_FAILED)
                return -1;
        for (long c = 0; c < chunks; c++) {
                for (long i = c * chunk; i < n && i < (c + 1) * chunk; i++) {
                        memcpy(at, ud_bytes, sizeof(ud_bytes));
                        at += sizeof(ud_bytes);
                }
                memcpy(at, ret_bytes, sizeof(ret_bytes));
                at += sizeof(ret_bytes);
        }
        /* arm64 fetches instructions through caches that do not see these stores unless told;
         * on x86-64 this is nothing. */
        __builtin___clear_cache((char *) code, (char *) code + size);
        for (long r = 0; r < rounds; r++)
                for (long c = 0; c < chunks; c++) {
                        ((void (*)(void))(code + (size_t) c * stride))();
                        if (pause_ms > 0)
                                nanosleep(&pause, NULL);
                }
        return 0;
}

int main(int argc, char *argv[]) {
        long ud = 0, bp = 0, pages = 0, hold_sec = -1, spread = 0, chunk = 0, pause_ms = 0, rounds = 1;
        int child = 0;
        struct sigaction sa;
        sigset_t usr1;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--null-child") == 0)
                        child = 1;
                else if (i + 1 == argc)
                        usage();
                else if (strcmp(argv[i], "--ud") == 0)
                        ud = number(argv[++i]);
                else if (strcmp(argv[i], "--bp") == 0)
                        bp = number(argv[++i]);
                else if (strcmp(argv[i], "--pages") == 0)
                        pages = number(argv[++i]);
                else if (strcmp(argv[i], "--spread") == 0)
                        spread = number(argv[++i]);
                else if (strcmp(argv[i], "--chunk") == 0)
                        chunk = number(argv[++i]);
                else if (strcmp(argv[i], "--pause") == 0)
                        pause_ms = number(argv[++i]);
                else if (strcmp(argv[i], "--rounds") == 0)
                        rounds = number(argv[++i]);
                else if (strcmp(argv[i], "--hold-after") == 0)
                        hold_sec = number(argv[++i]);
                else
                        usage();
        }

        sigemptyset(&usr1);
        sigaddset(&usr1, SIGUSR1);
        if (sigprocmask(SIG_BLOCK, &usr1, NULL) < 0) {
                perror("site-traps: sigprocmask");
                return 3;
        }
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = on_signal;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGILL, &sa, NULL) < 0 || sigaction(SIGTRAP, &sa, NULL) < 0) {
                perror("site-traps: sigaction");
                return 3;
        }

        say("pid %d", (int) getpid());
        if (ud) {
                site_ud_main((int) ud);
                if (sigills != ud) {
                        fprintf(stderr, "site-traps: %d SIGILL for %ld %s (%s)\n", (int) sigills, ud, UD_INSN, UD_NAME);
                        return 1;
                }
                say("done ud signals=%d", (int) sigills);
        }
        if (bp) {
                site_bp_lib((int) bp);
                if (sigtraps != bp) {
                        fprintf(stderr, "site-traps: %d SIGTRAP for %ld %s (%s)\n", (int) sigtraps, bp, BP_INSN,
                                BP_NAME);
                        return 1;
                }
                say("done bp signals=%d", (int) sigtraps);
        }
        if (spread) {
                long before = sigills;

                if (spread_ud(spread, chunk > 0 ? chunk : spread, pause_ms, rounds) < 0) {
                        perror("site-traps: mmap");
                        return 3;
                }
                if (sigills - before != spread * rounds) {
                        fprintf(stderr, "site-traps: %ld SIGILL for %ld %s (%s)\n", (long) (sigills - before),
                                spread * rounds, UD_INSN, UD_NAME);
                        return 1;
                }
                say("done spread signals=%ld", spread * rounds);
        }
        if (child)
                null_child();
        if (pages) {
                long before = minflt();

                if (site_touch_pages((size_t) pages) < 0) {
                        perror("site-traps: mmap");
                        return 3;
                }
                say("done pages pages=%ld minflt=%ld", pages, minflt() - before);
        }
        if (hold_sec >= 0)
                hold(hold_sec);
        return 0;
}

#else

int main(void) {
        fprintf(stderr, "site-traps: x86-64 and arm64 only (it raises their exceptions), skipped\n");
        return 77;
}

#endif
