/* SPDX-License-Identifier: MIT */
/* Test workload: a storm of short-lived processes. Forks N children at full speed, at most
 * INFLIGHT of them alive at once. Each child renames itself to NAME right after the fork (so
 * the name it counts under is not the one it was forked with), writes 4 fresh anonymous pages,
 * raises one breakpoint (SIGTRAP) and one undefined instruction (SIGILL), recovers from both in
 * a handler that skips the instruction, and exits. The parent reaps every child and sums the
 * kernel's fault accounting of them from wait4(). It shows whether a counter of processes keeps
 * up with thousands of births and deaths a second: every child counted, under its new name,
 * with its real uid, nothing dropped.
 *
 * usage: storm N INFLIGHT NAME
 *
 * The raises, and the names of their traps (common/trap-vectors.h, as trapstatd names them):
 *   arch     trap     how      signal  si_code     pc in the frame
 *   x86-64   BP       int3     SIGTRAP             past the int3
 *            UD       ud2      SIGILL              at the ud2: skipped, 2 bytes
 *   arm64    BRK64    brk      SIGTRAP TRAP_BRKPT  at the brk: skipped, 4 bytes
 *            UNKNOWN  udf #0   SIGILL  ILL_ILLOPC  at the udf: skipped, 4 bytes
 * On arm64 the handler checks the si_code and that pc and si_addr are the instruction's; on
 * x86-64 it checks the instruction's bytes at RIP.
 *
 * prints, on x86-64:
 *         {"pid": P, "children": [C1, ...], "traps": {"BP": N, "UD": N},
 *          "minflt": M, "majflt": J, "wallSec": S}
 * on arm64 the same with "traps": {"BRK64": N, "UNKNOWN": N}.
 * "minflt" and "majflt" are the sums of the children's ru_minflt and ru_majflt. A child that
 * did not see exactly one signal per raise exits 1, and so does the parent then: a message
 * on stderr, exit status 1 (2 for bad usage, 3 for a failed system call).
 * Linked statically so that start-up faults (the dynamic loader) stay few.
 *
 * x86-64 and arm64 only (the raises are their instructions): elsewhere it says so and exits 77,
 * which the tests that use it take as "skipped". */

#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "../../common/trap-vectors.h"

#if defined(__x86_64__) || defined(__aarch64__)

#define PAGES 4

/* Only async-signal-safe calls in the child: it is the child of a fork. */
static _Noreturn void child_fail(const char *what) {
        ssize_t r = write(STDERR_FILENO, what, strlen(what));

        (void) r;
        _exit(1);
}

/* Per architecture: the names of the two traps, the two raises, and the handler's part for
 * each (it fails the child unless the signal is from the raise, and leaves the frame's pc
 * where the child is to go on). */
#if defined(__x86_64__)

/* "BP", "UD", ... by vector, as trapstatd names them. */
static const char *const trap_names[TRAP_VECTORS] = {
#define TRAP_NAME(number, mnemonic, description) [number] = #mnemonic,
        TRAP_VECTOR_TABLE(TRAP_NAME)
#undef TRAP_NAME
};
#define BREAK_TRAP TRAP_VECTOR_BP
#define ILLEGAL_TRAP TRAP_VECTOR_UD
#define BREAK_INSN "int3"
#define ILLEGAL_INSN "ud2"

static inline void raise_break(void) {
        __asm__ volatile("int3" ::: "memory");
}

static inline void raise_illegal(void) {
        __asm__ volatile("ud2" ::: "memory");
}

static void on_break(const siginfo_t *si, ucontext_t *uc) {
        const unsigned char *rip = (const unsigned char *) uc->uc_mcontext.gregs[REG_RIP];

        (void) si;
        /* A trap: RIP is already past the int3. */
        if (rip[-1] != 0xcc)
                child_fail("storm: SIGTRAP not from the int3\n");
}

static void on_illegal(const siginfo_t *si, ucontext_t *uc) {
        greg_t *g = uc->uc_mcontext.gregs;
        const unsigned char *rip = (const unsigned char *) g[REG_RIP];

        (void) si;
        /* A fault: RIP is at the ud2; step over it. */
        if (rip[0] != 0x0f || rip[1] != 0x0b)
                child_fail("storm: SIGILL not from the ud2\n");
        g[REG_RIP] += 2;
}

#elif defined(__aarch64__)

/* "UNKNOWN", "BRK64", ... by slot of their exception class, as trapstatd names them. */
static const char *const trap_names[TRAP_VECTORS] = {
#define TRAP_NAME(slot, class, mnemonic, description) [slot] = #mnemonic,
        TRAP_ARM64_CLASS_TABLE(TRAP_NAME)
#undef TRAP_NAME
};
#define BREAK_TRAP TRAP_ARM64_BRK64
#define ILLEGAL_TRAP TRAP_ARM64_UNKNOWN
#define BREAK_INSN "brk"
#define ILLEGAL_INSN "udf"

/* Each raise is a function in assembly, as in raise-traps.c: the handler knows the raising
 * instruction by its label, and the compiler cannot move, fold or duplicate it. The labels are
 * declared hidden so that the compiler reaches them with adrp/add; through the GOT (its default
 * in a PIE build) the linker gives every local label of the section the same entry. */
#define LOCAL __attribute__((visibility("hidden")))
LOCAL void raise_break(void);
LOCAL void raise_illegal(void);
LOCAL extern const unsigned int break_at[], illegal_at[];

__asm__(".pushsection .text\n"
        /* Any immediate the kernel has no user break hook for (uprobes use 0x005). */
        ".p2align 2\n"
        ".type raise_break, %function\n"
        "raise_break:\n"
        "break_at:\n"
        "        brk     #0x7ab\n"
        "        ret\n"
        ".size raise_break, . - raise_break\n"

        ".p2align 2\n"
        ".type raise_illegal, %function\n"
        "raise_illegal:\n"
        "illegal_at:\n"
        "        udf     #0\n"
        "        ret\n"
        ".size raise_illegal, . - raise_illegal\n"
        ".popsection");

static void on_break(const siginfo_t *si, ucontext_t *uc) {
        mcontext_t *m = &uc->uc_mcontext;

        if (si->si_code != TRAP_BRKPT || m->pc != (uintptr_t) break_at || si->si_addr != (void *) break_at)
                child_fail("storm: SIGTRAP not from the brk\n");
        /* The pc stays at the brk: returning there would trap again. */
        m->pc += 4;
}

static void on_illegal(const siginfo_t *si, ucontext_t *uc) {
        mcontext_t *m = &uc->uc_mcontext;

        if (si->si_code != ILL_ILLOPC || m->pc != (uintptr_t) illegal_at || si->si_addr != (void *) illegal_at)
                child_fail("storm: SIGILL not from the udf\n");
        m->pc += 4;
}

#endif

/* Which signal the child is about to raise, and how many signals it saw for it. */
static volatile sig_atomic_t expected, hits;

static void on_signal(int sig, siginfo_t *si, void *ctx) {
        if (sig != expected)
                child_fail("storm: unexpected signal in child\n");
        if (sig == SIGTRAP)
                on_break(si, ctx);
        else
                on_illegal(si, ctx);
        hits = hits + 1;
        expected = 0;
}

static _Noreturn void child(const char *name, long page) {
        char *mem;

        /* First thing after the fork: the name this process is to be counted under. */
        if (prctl(PR_SET_NAME, name, 0, 0, 0) < 0)
                child_fail("storm: prctl(PR_SET_NAME) failed\n");
        mem = mmap(NULL, PAGES * (size_t) page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED)
                child_fail("storm: mmap failed\n");
        for (int i = 0; i < PAGES; i++)
                ((volatile char *) mem)[i * page] = 1;

        hits = 0;
        expected = SIGTRAP;
        raise_break();
        if (hits != 1)
                child_fail("storm: " BREAK_INSN " did not give exactly one SIGTRAP\n");
        hits = 0;
        expected = SIGILL;
        raise_illegal();
        if (hits != 1)
                child_fail("storm: " ILLEGAL_INSN " did not give exactly one SIGILL\n");
        _exit(0);
}

static int parse_count(const char *s, long *ret) {
        char *end;
        long v;

        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || end == s || *end || v <= 0)
                return -1;
        *ret = v;
        return 0;
}

/* Reaps one child: adds its faults, fails unless it exited 0. */
static int reap(unsigned long long *minflt, unsigned long long *majflt) {
        struct rusage ru;
        int status;
        pid_t pid;

        do
                pid = wait4(-1, &status, 0, &ru);
        while (pid < 0 && errno == EINTR);
        if (pid < 0) {
                perror("storm: wait4");
                return -3;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "storm: child %d %s %d\n", (int) pid,
                        WIFEXITED(status) ? "exited" : "was killed by signal",
                        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
                return -1;
        }
        *minflt += (unsigned long long) ru.ru_minflt;
        *majflt += (unsigned long long) ru.ru_majflt;
        return 0;
}

int main(int argc, char *argv[]) {
        unsigned long long minflt = 0, majflt = 0;
        long n, inflight, alive = 0, page = sysconf(_SC_PAGESIZE);
        struct timespec t0, t1;
        struct sigaction sa;
        pid_t *pids;
        int r, failed = 0;

        if (argc != 4 || parse_count(argv[1], &n) < 0 || parse_count(argv[2], &inflight) < 0 || !argv[3][0]) {
                fprintf(stderr, "usage: storm N INFLIGHT NAME\n");
                return 2;
        }
        pids = calloc((size_t) n, sizeof(*pids));
        if (!pids) {
                perror("storm: calloc");
                return 3;
        }
        /* Installed once here; the children inherit the handlers. */
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = on_signal;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGTRAP, &sa, NULL) < 0 || sigaction(SIGILL, &sa, NULL) < 0) {
                perror("storm: sigaction");
                return 3;
        }
        /* Nothing buffered may be copied into the children (they _exit, but be sure). */
        if (fflush(NULL) != 0) {
                perror("storm: fflush");
                return 3;
        }

        if (clock_gettime(CLOCK_MONOTONIC, &t0) < 0) {
                perror("storm: clock_gettime");
                return 3;
        }
        for (long started = 0; started < n || alive > 0;) {
                if (started < n && alive < inflight && !failed) {
                        pid_t pid = fork();

                        if (pid < 0) {
                                perror("storm: fork");
                                failed = 3;
                                continue;
                        }
                        if (pid == 0)
                                child(argv[3], page);
                        pids[started++] = pid;
                        alive++;
                        continue;
                }
                if (alive == 0)
                        break; /* a fork failed: stop starting more */
                r = reap(&minflt, &majflt);
                if (r < 0 && !failed)
                        failed = -r;
                if (r != -3)
                        alive--;
                else
                        break;
        }
        if (clock_gettime(CLOCK_MONOTONIC, &t1) < 0) {
                perror("storm: clock_gettime");
                return 3;
        }
        if (failed)
                return failed;

        printf("{\"pid\": %d, \"children\": [", getpid());
        for (long i = 0; i < n; i++)
                printf("%s%d", i ? ", " : "", (int) pids[i]);
        printf("], \"traps\": {\"%s\": %ld, \"%s\": %ld}, \"minflt\": %llu, \"majflt\": %llu, \"wallSec\": %.3f}\n",
               trap_names[BREAK_TRAP], n, trap_names[ILLEGAL_TRAP], n, minflt, majflt,
               (double) (t1.tv_sec - t0.tv_sec) + (double) (t1.tv_nsec - t0.tv_nsec) / 1e9);
        if (fflush(stdout) != 0) {
                perror("storm: stdout");
                return 3;
        }
        free(pids);
        return 0;
}

#else

int main(void) {
        fprintf(stderr, "storm: x86-64 and arm64 only (it raises their exceptions), skipped\n");
        return 77;
}

#endif
