/* SPDX-License-Identifier: MIT */
/* Test workload: raises exactly N of each user-space CPU exception listed below, recovers
 * from each in a signal handler, checks it saw exactly one signal per raise with the
 * kernel's trap number for the vector it meant to raise, and exits.
 *
 * usage: raise-traps N [--threads] [--only DE,UD,...] [--hold]
 *   --threads  half of each vector's N (rounded down) is raised from a second thread, the
 *              rest from the main thread, both at once
 *   --only     raise just the listed vectors (default: all of them)
 *   --hold     after printing, stay (not faulting, not trapping) until standard input ends:
 *              the test decides when it exits, e.g. once trapstatd knows it
 *
 *   vector  trap  how                                     signal
 *   DE      0     idiv by zero                            SIGFPE  FPE_INTDIV
 *   DB      1     EFLAGS.TF set by popf, then one nop     SIGTRAP TRAP_TRACE
 *   BP      3     int3                                    SIGTRAP SI_KERNEL
 *   UD      6     ud2                                     SIGILL  ILL_ILLOPN
 *   GP      13    cli (privileged at CPL 3)               SIGSEGV SI_KERNEL
 *   PF      14    store to a PROT_NONE page               SIGSEGV SEGV_ACCERR
 *   MF      16    x87 fdiv by zero with ZE unmasked,      SIGFPE  FPE_FLTDIV
 *                 reported at the next fwait
 *   AC      17    EFLAGS.AC set, unaligned 4-byte load    SIGBUS  BUS_ADRALN
 *   XM      19    divss by zero with MXCSR.ZM clear       SIGFPE  FPE_FLTDIV
 *
 * prints: {"pid": P, "n": N, "threads": false, "tids": [T1], "trapnoChecked": true,
 *          "traps": {"DE": N, ...}, "signals": {"SIGFPE": a, "SIGTRAP": b, "SIGILL": c,
 *          "SIGSEGV": d, "SIGBUS": e}, "siCodes": {"DE": 1, ...}}
 * "tids" holds a second thread id with --threads; "traps" and "siCodes" hold only the
 * vectors raised. Any missing, extra or unexpected signal is an error: a message on
 * stderr and exit status 1 (2 for bad usage, 3 for a failed system call).
 * Linked statically so that start-up faults (the dynamic loader) stay few.
 *
 * x86-64 only (the raises are x86 instructions): elsewhere it says so and exits 77, which the
 * tests that use it take as "skipped". The vector names and numbers are common/trap-vectors.h's. */

#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <ucontext.h>
#include <unistd.h>

#include "../../common/trap-vectors.h"

#if defined(__x86_64__)

enum vector { V_DE, V_DB, V_BP, V_UD, V_GP, V_PF, V_MF, V_AC, V_XM, NVEC };

#define EFLAGS_TF 0x100L
#define EFLAGS_AC 0x40000L

struct vecinfo {
        int trapno; /* TRAP_VECTOR_* */
        int signo;
        /* si_code values the kernel may give; 0 ends the list (no vector expects 0) */
        int codes[3];
        /* Bytes the handler expects at the faulting instruction, to be sure the signal
         * came from our instruction and not from somewhere else in the program. For
         * traps (DB, BP) RIP is already past the instruction, so they sit before RIP. */
        unsigned char op[3];
        int oplen;
        int trap;
        /* How far the handler moves RIP: faults the handler cannot make succeed on retry
         * are skipped; MF, AC and XM are retried once the handler has disarmed them. */
        int skip;
};

static const struct vecinfo vecs[NVEC] = {
        [V_DE] = {TRAP_VECTOR_DE, SIGFPE, {FPE_INTDIV}, {0xf7, 0xf9}, 2, 0, 2},          /* idivl %ecx */
        [V_DB] = {TRAP_VECTOR_DB, SIGTRAP, {TRAP_TRACE, TRAP_BRKPT}, {0x90}, 1, 1, 0},   /* nop */
        [V_BP] = {TRAP_VECTOR_BP, SIGTRAP, {SI_KERNEL, TRAP_BRKPT}, {0xcc}, 1, 1, 0},    /* int3 */
        [V_UD] = {TRAP_VECTOR_UD, SIGILL, {ILL_ILLOPN}, {0x0f, 0x0b}, 2, 0, 2},          /* ud2 */
        [V_GP] = {TRAP_VECTOR_GP, SIGSEGV, {SI_KERNEL}, {0xfa}, 1, 0, 1},                /* cli */
        [V_PF] = {TRAP_VECTOR_PF, SIGSEGV, {SEGV_ACCERR, SEGV_MAPERR}, {0x89, 0x02}, 2, 0, 2}, /* mov %eax,(%rdx) */
        [V_MF] = {TRAP_VECTOR_MF, SIGFPE, {FPE_FLTDIV}, {0x9b}, 1, 0, 0},                /* fwait */
        [V_AC] = {TRAP_VECTOR_AC, SIGBUS, {BUS_ADRALN}, {0x8b, 0x06}, 2, 0, 0},          /* mov (%rsi),%eax */
        [V_XM] = {TRAP_VECTOR_XM, SIGFPE, {FPE_FLTDIV}, {0xf3, 0x0f, 0x5e}, 3, 0, 0},    /* divss %xmm1,%xmm0 */
};

/* "DE", "DB", ... by trap number, as trapstatd names them. */
static const char *const vector_names[TRAP_VECTORS] = {
#define VECTOR_NAME(number, mnemonic, description) [number] = #mnemonic,
        TRAP_VECTOR_TABLE(VECTOR_NAME)
#undef VECTOR_NAME
};
#define NAME(v) vector_names[vecs[v].trapno]

static const int signos[] = {SIGFPE, SIGTRAP, SIGILL, SIGSEGV, SIGBUS};
static const char *const signames[] = {"SIGFPE", "SIGTRAP", "SIGILL", "SIGSEGV", "SIGBUS"};
#define NSIG_USED (sizeof(signos) / sizeof(signos[0]))

/* The handler learns from these which vector the interrupted code is raising; it takes
 * the expectation away after one signal so that a second one for the same raise fails. */
static _Thread_local volatile int expected = -1;
static _Thread_local volatile int hits;

static atomic_ulong traps[NVEC];
static atomic_int sicodes[NVEC];
static atomic_ulong sigcounts[NSIG_USED];

/* The page PF stores into; an unaligned word for AC to load. */
static char *guard;
static _Alignas(16) unsigned char unaligned_buf[16];

/* Only async-signal-safe calls from here on: the handler may need to fail. */
static void put(const char *s) {
        ssize_t r = write(STDERR_FILENO, s, strlen(s));

        (void) r;
}

static void put_num(long v) {
        char buf[24], *p = buf + sizeof(buf);
        unsigned long u = v < 0 ? -(unsigned long) v : (unsigned long) v;

        *--p = '\0';
        do
                *--p = (char) ('0' + u % 10);
        while ((u /= 10) && p > buf + 1);
        if (v < 0)
                *--p = '-';
        put(p);
}

static _Noreturn void handler_fail(const char *what, int sig, int code, long trapno) {
        put("raise-traps: ");
        put(what);
        put(" (vector ");
        put(expected >= 0 ? NAME(expected) : "none");
        put(", signal ");
        put_num(sig);
        put(", si_code ");
        put_num(code);
        put(", trapno ");
        put_num(trapno);
        put(")\n");
        _exit(1);
}

static void on_signal(int sig, siginfo_t *si, void *ctx) {
        ucontext_t *uc = ctx;
        greg_t *g = uc->uc_mcontext.gregs;
        int v = expected;
        const struct vecinfo *vi;
        const unsigned char *at;
        int ok = 0, none = -1;

        /* The kernel does not clear EFLAGS.AC for a handler: were AC's signal handled
         * with it still set, any unaligned access here would raise a SIGBUS that is
         * blocked, and that kills the process. Keep clear of the red zone. */
        __asm__ volatile("subq $128, %%rsp\n\t"
                         "pushfq\n\t"
                         "andl $~0x40000, (%%rsp)\n\t"
                         "popfq\n\t"
                         "addq $128, %%rsp" ::: "cc", "memory");

        if (v < 0)
                handler_fail("unexpected signal", sig, si->si_code, g[REG_TRAPNO]);
        vi = &vecs[v];
        if (sig != vi->signo)
                handler_fail("wrong signal", sig, si->si_code, g[REG_TRAPNO]);
        if (g[REG_TRAPNO] != vi->trapno)
                handler_fail("wrong trap number in ucontext", sig, si->si_code, g[REG_TRAPNO]);
        for (int i = 0; i < 3 && vi->codes[i]; i++)
                ok |= si->si_code == vi->codes[i];
        if (!ok)
                handler_fail("unexpected si_code", sig, si->si_code, g[REG_TRAPNO]);
        at = (const unsigned char *) g[REG_RIP] - (vi->trap ? vi->oplen : 0);
        if (memcmp(at, vi->op, (size_t) vi->oplen) != 0)
                handler_fail("signal is not from the raising instruction", sig, si->si_code, g[REG_TRAPNO]);
        if (!atomic_compare_exchange_strong(&sicodes[v], &none, si->si_code) && none != si->si_code)
                handler_fail("si_code differs from an earlier raise", sig, si->si_code, g[REG_TRAPNO]);

        switch (v) {
        case V_DB:
                /* Else every instruction after the handler returns traps again. */
                g[REG_EFL] &= ~EFLAGS_TF;
                break;
        case V_AC:
                /* The load is retried, aligned checks off: it then succeeds. */
                g[REG_EFL] &= ~EFLAGS_AC;
                break;
        case V_MF:
        case V_XM:
                if (!uc->uc_mcontext.fpregs)
                        handler_fail("no FPU state in ucontext", sig, si->si_code, g[REG_TRAPNO]);
                if (v == V_MF) {
                        /* The pending x87 exception stays in the saved status word and
                         * fwait would raise #MF again on return: clear the exception
                         * flags, stack fault, summary and busy bits, and mask all. */
                        uc->uc_mcontext.fpregs->swd &= (__uint16_t) ~0x80ffu;
                        uc->uc_mcontext.fpregs->cwd |= 0x3f;
                } else {
                        /* Mask divide-by-zero and drop the flag: the retried divss then
                         * gives +inf quietly; raise_xm restores its caller's MXCSR. */
                        uc->uc_mcontext.fpregs->mxcsr = (uc->uc_mcontext.fpregs->mxcsr | 0x200u) & ~0x3fu;
                }
                break;
        default:
                break;
        }
        g[REG_RIP] += vi->skip;

        atomic_fetch_add(&traps[v], 1);
        for (size_t i = 0; i < NSIG_USED; i++)
                if (signos[i] == sig)
                        atomic_fetch_add(&sigcounts[i], 1);
        hits = hits + 1;
        expected = -1;
}

/* Each raise is one asm statement with fixed registers, so that the faulting instruction
 * is exactly the one the handler's table describes, and the compiler cannot fold it; and a
 * function of its own, never inlined (gcc 16 inlines them through the const table below), so
 * that each vector traps at one instruction of one function (raise_ud, raise_bp, ...). */
static __attribute__((noinline)) void raise_de(void) {
        __asm__ volatile("xorl %%edx, %%edx\n\t"
                         "movl $1, %%eax\n\t"
                         "xorl %%ecx, %%ecx\n\t"
                         "idivl %%ecx" ::: "eax", "ecx", "edx", "cc", "memory");
}

static __attribute__((noinline)) void raise_db(void) {
        /* popf sets TF; the single-step trap comes after the one instruction that
         * follows (the nop). pushf/popf would overwrite the red zone: step below it. */
        __asm__ volatile("subq $128, %%rsp\n\t"
                         "pushfq\n\t"
                         "orl $0x100, (%%rsp)\n\t"
                         "popfq\n\t"
                         "nop\n\t"
                         "addq $128, %%rsp" ::: "cc", "memory");
}

static __attribute__((noinline)) void raise_bp(void) {
        __asm__ volatile("int3" ::: "memory");
}

static __attribute__((noinline)) void raise_ud(void) {
        __asm__ volatile("ud2" ::: "memory");
}

static __attribute__((noinline)) void raise_gp(void) {
        __asm__ volatile("cli" ::: "memory");
}

static __attribute__((noinline)) void raise_pf(void) {
        __asm__ volatile("movl %%eax, (%%rdx)" : : "a"(1), "d"(guard) : "memory");
}

static __attribute__((noinline)) void raise_mf(void) {
        static const float one = 1.0f, zero = 0.0f;
        /* The default control word 0x37f with ZM (bit 2) cleared. */
        static const unsigned short cw = 0x37b;

        /* fdiv only records the exception; #MF comes at the next waiting x87
         * instruction, the fwait. fninit then empties the x87 stack and restores the
         * default control word, as the ABI wants it between functions. */
        __asm__ volatile("fninit\n\t"
                         "fldcw %[cw]\n\t"
                         "flds %[one]\n\t"
                         "fdivs %[zero]\n\t"
                         "fwait\n\t"
                         "fninit"
                         :
                         : [cw] "m"(cw), [one] "m"(one), [zero] "m"(zero)
                         : "st", "memory");
}

static __attribute__((noinline)) void raise_ac(void) {
        /* AC is set for the single load only: anything else (libc's unaligned
         * memcpy, say) would raise #AC too. The handler clears AC for the retry; the
         * clearing here is for the case it was not raised. */
        __asm__ volatile("subq $128, %%rsp\n\t"
                         "pushfq\n\t"
                         "orl $0x40000, (%%rsp)\n\t"
                         "popfq\n\t"
                         "movl (%%rsi), %%eax\n\t"
                         "pushfq\n\t"
                         "andl $~0x40000, (%%rsp)\n\t"
                         "popfq\n\t"
                         "addq $128, %%rsp"
                         :
                         : "S"(unaligned_buf + 1)
                         : "eax", "cc", "memory");
}

static __attribute__((noinline)) void raise_xm(void) {
        static const float one = 1.0f;
        unsigned int saved, unmasked;

        __asm__ volatile("stmxcsr %0" : "=m"(saved));
        unmasked = saved & ~0x200u & ~0x3fu;
        __asm__ volatile("ldmxcsr %[u]\n\t"
                         "xorps %%xmm1, %%xmm1\n\t"
                         "movss %[one], %%xmm0\n\t"
                         "divss %%xmm1, %%xmm0\n\t"
                         "ldmxcsr %[s]"
                         :
                         : [u] "m"(unmasked), [s] "m"(saved), [one] "m"(one)
                         : "xmm0", "xmm1", "memory");
}

static void (*const raisers[NVEC])(void) = {
        [V_DE] = raise_de, [V_DB] = raise_db, [V_BP] = raise_bp, [V_UD] = raise_ud, [V_GP] = raise_gp,
        [V_PF] = raise_pf, [V_MF] = raise_mf, [V_AC] = raise_ac, [V_XM] = raise_xm,
};

static int selected[NVEC];

struct worker {
        long count;
        pid_t tid;
        char err[128];
};

static int raise_all(struct worker *w) {
        w->tid = gettid();
        for (int v = 0; v < NVEC; v++) {
                if (!selected[v])
                        continue;
                for (long i = 0; i < w->count; i++) {
                        hits = 0;
                        expected = v;
                        raisers[v]();
                        expected = -1;
                        if (hits != 1) {
                                snprintf(w->err, sizeof(w->err), "%s raise %ld in thread %d gave %d signals, not 1",
                                         NAME(v), i + 1, (int) w->tid, hits);
                                return -1;
                        }
                }
        }
        return 0;
}

static void *worker_main(void *arg) {
        raise_all(arg);
        return NULL;
}

static int parse_only(char *list) {
        char *save = NULL;

        for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                int v;

                for (v = 0; v < NVEC; v++)
                        if (strcmp(t, NAME(v)) == 0)
                                break;
                if (v == NVEC) {
                        fprintf(stderr, "raise-traps: unknown vector '%s' (DE DB BP UD GP PF MF AC XM)\n", t);
                        return -1;
                }
                selected[v] = 1;
        }
        return 0;
}

static _Noreturn void usage(void) {
        fprintf(stderr, "usage: raise-traps N [--threads] [--only DE,DB,BP,UD,GP,PF,MF,AC,XM] [--hold]\n");
        exit(2);
}

int main(int argc, char *argv[]) {
        struct worker mainw = {0}, second = {0};
        struct sigaction sa;
        pthread_t thread;
        int threads = 0, only = 0, hold = 0, r;
        long n = -1;
        char *end;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--threads") == 0) {
                        threads = 1;
                } else if (strcmp(argv[i], "--hold") == 0) {
                        hold = 1;
                } else if (strcmp(argv[i], "--only") == 0) {
                        if (++i == argc || parse_only(argv[i]) < 0)
                                usage();
                        only = 1;
                } else if (n < 0) {
                        errno = 0;
                        n = strtol(argv[i], &end, 10);
                        if (errno || end == argv[i] || *end || n <= 0)
                                usage();
                } else {
                        usage();
                }
        }
        if (n < 0)
                usage();
        if (!only)
                for (int v = 0; v < NVEC; v++)
                        selected[v] = 1;
        for (int v = 0; v < NVEC; v++)
                atomic_init(&sicodes[v], -1);

        guard = mmap(NULL, (size_t) sysconf(_SC_PAGESIZE), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (guard == MAP_FAILED) {
                perror("raise-traps: mmap");
                return 3;
        }
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = on_signal;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        for (size_t i = 0; i < NSIG_USED; i++)
                if (sigaction(signos[i], &sa, NULL) < 0) {
                        perror("raise-traps: sigaction");
                        return 3;
                }

        mainw.count = threads ? n - n / 2 : n;
        second.count = n / 2;
        if (threads && (r = pthread_create(&thread, NULL, worker_main, &second)) != 0) {
                fprintf(stderr, "raise-traps: pthread_create: %s\n", strerror(r));
                return 3;
        }
        raise_all(&mainw);
        if (threads && (r = pthread_join(thread, NULL)) != 0) {
                fprintf(stderr, "raise-traps: pthread_join: %s\n", strerror(r));
                return 3;
        }
        if (mainw.err[0] || second.err[0]) {
                fprintf(stderr, "raise-traps: %s\n", mainw.err[0] ? mainw.err : second.err);
                return 1;
        }
        for (int v = 0; v < NVEC; v++)
                if (selected[v] && atomic_load(&traps[v]) != (unsigned long) n) {
                        fprintf(stderr, "raise-traps: %s: %lu signals for %ld raises\n", NAME(v),
                                atomic_load(&traps[v]), n);
                        return 1;
                }

        printf("{\"pid\": %d, \"n\": %ld, \"threads\": %s, \"tids\": [%d", getpid(), n, threads ? "true" : "false",
               (int) mainw.tid);
        if (threads)
                printf(", %d", (int) second.tid);
        printf("], \"trapnoChecked\": true, \"traps\": {");
        for (int v = 0, first = 1; v < NVEC; v++)
                if (selected[v]) {
                        printf("%s\"%s\": %lu", first ? "" : ", ", NAME(v), atomic_load(&traps[v]));
                        first = 0;
                }
        printf("}, \"signals\": {");
        for (size_t i = 0; i < NSIG_USED; i++)
                printf("%s\"%s\": %lu", i ? ", " : "", signames[i], atomic_load(&sigcounts[i]));
        printf("}, \"siCodes\": {");
        for (int v = 0, first = 1; v < NVEC; v++)
                if (selected[v]) {
                        printf("%s\"%s\": %d", first ? "" : ", ", NAME(v), atomic_load(&sicodes[v]));
                        first = 0;
                }
        printf("}}\n");
        if (fflush(stdout) != 0) {
                perror("raise-traps: stdout");
                return 3;
        }
        if (hold) {
                char buf[64];

                /* read(2) into a buffer already touched (on the stack, faulted in by now). */
                buf[0] = 0;
                while (read(STDIN_FILENO, buf, sizeof(buf)) > 0)
                        ;
        }
        return 0;
}

#else

int main(void) {
        fprintf(stderr, "raise-traps: x86-64 only (it raises x86 exceptions), skipped\n");
        return 77;
}

#endif
