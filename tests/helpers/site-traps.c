/* SPDX-License-Identifier: MIT */
/* Test workload for sites (io.trapstat.Sites): traps and page faults at known instructions in
 * functions with distinctive names, in the executable and in a shared library, so that a test
 * can check the file, offset and symbol trapstatd reports for each, and the exact counts.
 *
 * usage: site-traps [--ud N] [--bp N] [--spread N [--chunk K] [--pause MS] [--rounds R]] [--null-child]
 *                   [--pages N] [--hold-after SECONDS]
 *
 * The steps given run in this order:
 *   --ud N          site_ud_main (this executable) executes one ud2 N times: #UD, SIGILL; the
 *                   handler steps over the 2-byte instruction
 *   --bp N          site_bp_lib (libsite-traps.so) executes one int3 N times: #BP, SIGTRAP; RIP
 *                   is already past the int3
 *   --null-child    a forked child calls site_null_write (this executable), a store to address
 *                   8: #PF, and the child dies of the SIGSEGV (default action, no core dump)
 *   --pages N       site_touch_pages (this executable) writes one byte to each of N fresh
 *                   anonymous pages (no transparent huge pages): N user write faults at one
 *                   instruction
 *   --spread N      N ud2 one after another in anonymous executable memory, as a JIT's code:
 *                   N sites ("[anon]"), one trap each; with --chunk K, K at a time with a pause of
 *                   MS milliseconds (--pause) after each K; with --rounds R all of it R times (N
 *                   sites, R traps each)
 *   --hold-after S  then stays alive S seconds, or until it gets SIGUSR1, and exits 0
 *
 * prints, one line each, flushed at once (a test reads them to know where the workload is):
 *   pid P
 *   done ud signals=N
 *   done bp signals=N
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
 * (rpath $ORIGIN): a trap site is to be in a shared library. x86-64 only (ud2 and int3):
 * elsewhere it says so and exits 77, which the tests that use it take as "skipped". */

#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__x86_64__)

#define PAGE 4096

/* libsite-traps.so (tests/helpers/site-lib.c). */
void site_bp_lib(int n);

static volatile sig_atomic_t sigills, sigtraps;

/* Only async-signal-safe calls in the handler. */
static _Noreturn void handler_fail(const char *what) {
        ssize_t r = write(STDERR_FILENO, what, strlen(what));

        (void) r;
        _exit(1);
}

static void on_signal(int sig, siginfo_t *si, void *ctx) {
        ucontext_t *uc = ctx;
        greg_t *g = uc->uc_mcontext.gregs;
        const unsigned char *rip = (const unsigned char *) g[REG_RIP];

        if (sig == SIGILL) {
                /* A fault: RIP is at the ud2; step over it. */
                if (si->si_code != ILL_ILLOPN || rip[0] != 0x0f || rip[1] != 0x0b)
                        handler_fail("site-traps: SIGILL not from the ud2\n");
                g[REG_RIP] += 2;
                sigills = sigills + 1;
        } else if (sig == SIGTRAP) {
                /* A trap: RIP is already past the int3. */
                if (si->si_code != SI_KERNEL || rip[-1] != 0xcc)
                        handler_fail("site-traps: SIGTRAP not from the int3\n");
                sigtraps = sigtraps + 1;
        } else {
                handler_fail("site-traps: unexpected signal\n");
        }
}

/* Executes one ud2 n times: one instruction, so one site with a count of n. The loop is written
 * in assembly: a compiler may unroll a C loop into several ud2 (gcc 16 does). The handler steps
 * over the ud2 to the dec. */
__attribute__((noinline, used, visibility("default"))) void site_ud_main(int n) {
        if (n > 0)
                __asm__ volatile("1: ud2\n\t"
                                 "dec %0\n\t"
                                 "jnz 1b"
                                 : "+r"(n)
                                 :
                                 : "memory", "cc");
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

                __asm__ volatile("1: movb $1, (%0)\n\t"
                                 "add %2, %0\n\t"
                                 "dec %1\n\t"
                                 "jnz 1b"
                                 : "+r"(p), "+r"(left)
                                 : "r"((size_t) PAGE)
                                 : "memory", "cc");
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

/* n ud2 in anonymous memory, a ret after every chunk of them: one call of a chunk traps chunk times,
 * at as many addresses (the handler steps over each ud2 into the next). Every chunk is called in
 * turn, pause_ms after each, the whole rounds times. The code stays mapped until the exit, as a
 * JIT's would: trapstatd may name it from /proc/PID/maps while the process lives. -1 when the
 * memory cannot be had. */
static int spread_ud(long n, long chunk, long pause_ms, long rounds) {
        long chunks = (n + chunk - 1) / chunk;
        size_t size = (size_t) n * 2 + (size_t) chunks;
        struct timespec pause = { pause_ms / 1000, (pause_ms % 1000) * 1000000L };
        unsigned char *code = mmap(NULL, size, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        if (code == MAP_FAILED)
                return -1;
        for (long c = 0, at = 0; c < chunks; c++) {
                for (long i = c * chunk; i < n && i < (c + 1) * chunk; i++) {
                        code[at++] = 0x0f;
                        code[at++] = 0x0b;
                }
                code[at++] = 0xc3;
        }
        for (long r = 0; r < rounds; r++)
                for (long c = 0; c < chunks; c++) {
                        ((void (*)(void))(code + c * (2 * chunk + 1)))();
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
                        fprintf(stderr, "site-traps: %d SIGILL for %ld ud2\n", (int) sigills, ud);
                        return 1;
                }
                say("done ud signals=%d", (int) sigills);
        }
        if (bp) {
                site_bp_lib((int) bp);
                if (sigtraps != bp) {
                        fprintf(stderr, "site-traps: %d SIGTRAP for %ld int3\n", (int) sigtraps, bp);
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
                        fprintf(stderr, "site-traps: %ld SIGILL for %ld ud2\n", (long) (sigills - before),
                                spread * rounds);
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
        fprintf(stderr, "site-traps: x86-64 only (it raises x86 exceptions), skipped\n");
        return 77;
}

#endif
