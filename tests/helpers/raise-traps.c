/* SPDX-License-Identifier: MIT */
/* Test workload: raises exactly N of each user-space CPU exception listed below, recovers
 * from each in a signal handler, checks it saw exactly one signal per raise with the
 * kernel's trap number for the vector it meant to raise (on arm64: the exception class of
 * the syndrome in the signal frame, where the kernel puts one), and exits.
 *
 * usage: raise-traps N [--threads] [--only DE,UD,...] [--hold]
 *   --threads  half of each vector's N (rounded down) is raised from a second thread, the
 *              rest from the main thread, both at once
 *   --only     raise just the listed vectors (default: all of them); on arm64 the classes,
 *              e.g. --only BRK64,DABT_LOW
 *   --hold     after printing, stay (not faulting, not trapping) until standard input ends:
 *              the test decides when it exits, e.g. once trapstatd knows it
 *
 * x86-64:
 *   vector  trap  how                                     signal
 *   DE      0     idiv by zero                            SIGFPE  FPE_INTDIV
 *   DB      1     EFLAGS.TF set by popf, then one nop     SIGTRAP TRAP_TRACE
 *   BP      3     int3                                    SIGTRAP SI_KERNEL
 *   UD      6     ud2                                     SIGILL  ILL_ILLOPN
 *   GP      13    cli (privileged at CPL 3)               SIGSEGV SI_KERNEL
 *   PF      14    store to a PROT_NONE page               SIGSEGV SEGV_ACCERR
 *   MF      16    x87 fdiv by zero with ZE unmasked,      SIGFPE  FPE_FLTDIV
 *                 reported at the next fwait
 *   AC      17    EFLAGS.AC set, unaligned 4-byte load    SIGBUS  BUS_ADRALN   not under qemu's
 *                                                                               TCG (may_not_raise())
 *   XM      19    divss by zero with MXCSR.ZM clear       SIGFPE  FPE_FLTDIV   not with Debian 11's
 *                                                                               5.10 under qemu's TCG
 *
 * arm64 (the "vectors" are exception classes, ESR_ELx.EC; the slot is Traps.vector's):
 *   class     slot  EC    how                                  signal  si_code      si_addr
 *   UNKNOWN   0     0x00  udf #0                               SIGILL  ILL_ILLOPC   the udf
 *   IABT_LOW  17    0x20  blr into a PROT_READ page            SIGSEGV SEGV_ACCERR  the page
 *   PC_ALIGN  18    0x22  br to a code address + 2             SIGBUS  BUS_ADRALN   that address
 *   DABT_LOW  19    0x24  load from a PROT_NONE page           SIGSEGV SEGV_ACCERR  the page
 *   SP_ALIGN  20    0x26  load through sp - 1 (sp misaligned)  SIGBUS  BUS_ADRALN   the sp
 *   BRK64     31    0x3C  brk #0x7ab                           SIGTRAP TRAP_BRKPT   the brk
 * The pc in the signal frame is the raising instruction's (the brk's too: the handler steps
 * over it), or for IABT_LOW and PC_ALIGN the address branched to.
 * The syndrome in the frame's esr record, written when the thread's fault_code is not 0
 * (measured: kernel 7.2, qemu-system-aarch64 TCG -cpu max):
 *   UNKNOWN   no record: the kernel sets fault_code to 0 for an undefined instruction
 *   IABT_LOW  0x82000007: EC 0x20, translation fault level 3 (the page was never touched)
 *   PC_ALIGN  0x8a000000: EC 0x22
 *   DABT_LOW  0x92000007: EC 0x24, translation fault level 3, a read
 *   SP_ALIGN  not measured: TCG does not check sp alignment, so the class is left out there
 *             (may_not_raise()). The kernel takes it as it takes PC_ALIGN (do_sp_pc_abort),
 *             keeping the syndrome; its row above is from the kernel's source, too
 *   BRK64     not its own: fault_code (and fault_address) stay as the thread's last fault
 *             signal left them, so the record is that one's (0x92000007 after a DABT_LOW)
 *             or there is none
 * Where there is a record of another class (a stale one) for UNKNOWN or BRK64, that is not an
 * error; for the other classes it is.
 *
 * prints: {"pid": P, "n": N, "threads": false, "tids": [T1], "trapnoChecked": true,
 *          "traps": {"DE": N, ...}, "signals": {"SIGFPE": a, "SIGTRAP": b, "SIGILL": c,
 *          "SIGSEGV": d, "SIGBUS": e}, "siCodes": {"DE": 1, ...}}
 * on arm64 "esrChecked": {"UNKNOWN": false, ..., "BRK64": false} in place of "trapnoChecked":
 * per class, whether every raise's frame had an esr record of the class's EC.
 * "tids" holds a second thread id with --threads; "traps" and "siCodes" hold only the
 * vectors raised. Any missing, extra or unexpected signal is an error: a message on
 * stderr and exit status 1 (2 for bad usage, 3 for a failed system call, 77 when --only asks
 * for a class the CPU does not raise: AC, XM and SP_ALIGN under qemu's TCG).
 * Linked statically so that start-up faults (the dynamic loader) stay few.
 *
 * x86-64 and arm64 only (the raises are their instructions): elsewhere it says so and exits
 * 77, which the tests that use it take as "skipped". The vector (class) names and numbers are
 * common/trap-vectors.h's. */

#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <ucontext.h>
#include <unistd.h>
#if defined(__aarch64__)
#include <asm/sigcontext.h>
#endif

#include "../../common/trap-vectors.h"

#if defined(__x86_64__) || defined(__aarch64__)

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

#define VECTOR_WORD "vector"
#define VECTOR_LIST "DE DB BP UD GP PF MF AC XM"
#define VECTOR_USAGE "DE,DB,BP,UD,GP,PF,MF,AC,XM"
/* Nothing here runs on an alternate signal stack. */
#define HANDLER_FLAGS SA_SIGINFO

#elif defined(__aarch64__)

/* Exception classes; "vector" as on x86, for the code both share. */
enum vector { V_UNKNOWN, V_IABT_LOW, V_PC_ALIGN, V_DABT_LOW, V_SP_ALIGN, V_BRK64, NVEC };

struct vecinfo {
        int slot; /* TRAP_ARM64_*: the class's name and EC are the table's at this slot */
        int signo;
        /* si_code values the kernel may give; 0 ends the list (no class expects 0) */
        int codes[3];
        /* Whether the kernel keeps the class's syndrome for the signal (thread.fault_code, which
         * the signal frame's esr record carries): measured, see the table above. Where it does
         * not, a record in the frame is what the thread's last fault signal left there, if any,
         * and a class other than this one is no error. */
        int esr_kept;
};

static const struct vecinfo vecs[NVEC] = {
        [V_UNKNOWN] = {TRAP_ARM64_UNKNOWN, SIGILL, {ILL_ILLOPC}, 0},
        [V_IABT_LOW] = {TRAP_ARM64_IABT_LOW, SIGSEGV, {SEGV_ACCERR, SEGV_MAPERR}, 1},
        [V_PC_ALIGN] = {TRAP_ARM64_PC_ALIGN, SIGBUS, {BUS_ADRALN}, 1},
        [V_DABT_LOW] = {TRAP_ARM64_DABT_LOW, SIGSEGV, {SEGV_ACCERR, SEGV_MAPERR}, 1},
        [V_SP_ALIGN] = {TRAP_ARM64_SP_ALIGN, SIGBUS, {BUS_ADRALN}, 1},
        [V_BRK64] = {TRAP_ARM64_BRK64, SIGTRAP, {TRAP_BRKPT}, 0},
};

/* "UNKNOWN", "BRK64", ... and their exception classes, by slot. */
static const char *const vector_names[TRAP_VECTORS] = {
#define CLASS_NAME(slot, class, mnemonic, description) [slot] = #mnemonic,
        TRAP_ARM64_CLASS_TABLE(CLASS_NAME)
#undef CLASS_NAME
};
static const unsigned char class_ecs[TRAP_VECTORS] = {
#define CLASS_EC(slot, class, mnemonic, description) [slot] = class,
        TRAP_ARM64_CLASS_TABLE(CLASS_EC)
#undef CLASS_EC
};
#define NAME(v) vector_names[vecs[v].slot]

#define VECTOR_WORD "class"
#define VECTOR_LIST "UNKNOWN IABT_LOW PC_ALIGN DABT_LOW SP_ALIGN BRK64"
#define VECTOR_USAGE "UNKNOWN,IABT_LOW,PC_ALIGN,DABT_LOW,SP_ALIGN,BRK64"
/* SP_ALIGN leaves sp misaligned, 1 byte into the raiser's frame: its handler runs on a stack
 * of its own rather than rely on the kernel aligning sp down for the signal frame. */
#define HANDLER_FLAGS (SA_SIGINFO | SA_ONSTACK)

#endif

/* The fault signals, the output's keys on both architectures (arm64 never raises SIGFPE here:
 * one would be an error). */
static const int signos[] = {SIGFPE, SIGTRAP, SIGILL, SIGSEGV, SIGBUS};
static const char *const signames[] = {"SIGFPE", "SIGTRAP", "SIGILL", "SIGSEGV", "SIGBUS"};
#define NSIG_USED (sizeof(signos) / sizeof(signos[0]))

static int selected[NVEC], only;
/* Classes whose first raise in a thread gave no signal where the CPU may not raise them at all
 * (arch's may_not_raise()): they are left out rather than failed, unless asked for by --only. */
static atomic_int not_raised[NVEC];

struct worker {
        long count;
        pid_t tid;
        /* err names a failed system call rather than a wrong signal (exit status 3, not 1) */
        int syscall_failed;
        char err[128];
};

/* The handler learns from these which vector the interrupted code is raising; it takes
 * the expectation away after one signal so that a second one for the same raise fails. */
static _Thread_local volatile int expected = -1;
static _Thread_local volatile int hits;

static atomic_ulong traps[NVEC];
static atomic_int sicodes[NVEC];
static atomic_ulong sigcounts[NSIG_USED];

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

#if defined(__x86_64__)

/* The page PF stores into; an unaligned word for AC to load. */
static char *guard;
static _Alignas(16) unsigned char unaligned_buf[16];

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

static int arch_setup(void) {
        guard = mmap(NULL, (size_t) sysconf(_SC_PAGESIZE), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (guard == MAP_FAILED) {
                perror("raise-traps: mmap");
                return -1;
        }
        return 0;
}

static int thread_setup(struct worker *w) {
        (void) w;
        return 0;
}

/* What qemu's TCG leaves out (measured under qemu-system-x86_64, TCG, -cpu max): alignment
 * checking (EFLAGS.AC with CR0.AM, which Linux sets), so that the unaligned load just loads
 * (Debian 13's 6.12, and 11's 5.10); and with Debian 11's 5.10 the SIMD exception's signal: the
 * divss by zero raises no SIGFPE there (6.12 sends it). Real CPUs raise both. */
static int may_not_raise(int v) {
        return v == V_AC || v == V_XM;
}

static void print_checked(void) {
        printf("\"trapnoChecked\": true");
}

#elif defined(__aarch64__)

/* The page DABT_LOW loads from (PROT_NONE), the page IABT_LOW branches into (PROT_READ). */
static char *guard, *nx_page;

/* The syndrome of the class each raise's frame carried, raise by raise: "esrChecked". */
static atomic_ulong esr_matched[NVEC];

static void put_hex(unsigned long v) {
        char buf[24], *p = buf + sizeof(buf);

        *--p = '\0';
        do
                *--p = "0123456789abcdef"[v & 0xf];
        while ((v >>= 4) && p > buf + 3);
        *--p = 'x';
        *--p = '0';
        put(p);
}

static _Noreturn void handler_fail(const char *what, int sig, const siginfo_t *si, const mcontext_t *m, int has_esr,
                                   unsigned long esr) {
        put("raise-traps: ");
        put(what);
        put(" (class ");
        put(expected >= 0 ? NAME(expected) : "none");
        put(", signal ");
        put_num(sig);
        put(", si_code ");
        put_num(si->si_code);
        put(", si_addr ");
        put_hex((unsigned long) si->si_addr);
        put(", pc ");
        put_hex(m->pc);
        put(", esr ");
        if (has_esr)
                put_hex(esr);
        else
                put("none");
        put(")\n");
        _exit(1);
}

/* The esr record of the signal frame (<asm/sigcontext.h>): the kernel writes one when the
 * thread's fault_code is not 0. Records follow each other in __reserved up to one of magic 0;
 * an extra record, last before that, moves the rest to a block of its own. */
static int frame_esr(const mcontext_t *m, unsigned long *esr) {
        const unsigned char *p = m->__reserved, *end = p + sizeof(m->__reserved);

        for (int i = 0; i < 64 && (size_t) (end - p) >= sizeof(struct _aarch64_ctx); i++) {
                const struct _aarch64_ctx *head = (const void *) p;

                if (head->magic == 0)
                        break;
                if (head->size < sizeof(*head) || head->size > (size_t) (end - p))
                        break;
                if (head->magic == ESR_MAGIC && head->size >= sizeof(struct esr_context)) {
                        *esr = ((const struct esr_context *) p)->esr;
                        return 1;
                }
                if (head->magic == EXTRA_MAGIC && head->size >= sizeof(struct extra_context)) {
                        const struct extra_context *extra = (const void *) p;

                        p = (const unsigned char *) (uintptr_t) extra->datap;
                        end = p + extra->size;
                        continue;
                }
                p += head->size;
        }
        return 0;
}

/* Each raise is a function in assembly, so that the raising instruction is one the handler
 * knows by its label, no register or stack slot the compiler uses is touched, and the
 * compiler cannot move, fold or duplicate it. The labels are local to this file: declared
 * hidden, the compiler reaches them with adrp/add; through the GOT (its default in a PIE
 * build) the linker gives every local label of the section the same entry. */
#define LOCAL __attribute__((visibility("hidden")))
LOCAL void raise_unknown(void);
LOCAL void raise_iabt_low(char *page);
LOCAL void raise_pc_align(void);
LOCAL void raise_dabt_low(char *page);
LOCAL void raise_sp_align(void);
LOCAL void raise_brk64(void);
LOCAL extern const unsigned int unknown_at[], iabt_low_return[], pc_align_target[], pc_align_return[], dabt_low_at[],
        sp_align_at[], brk64_at[];

__asm__(".pushsection .text\n"
        ".p2align 2\n"
        ".type raise_unknown, %function\n"
        "raise_unknown:\n"
        "unknown_at:\n"
        "        udf     #0\n"
        "        ret\n"
        ".size raise_unknown, . - raise_unknown\n"

        /* blr puts the return address in lr, and the fault comes at the page: the handler
         * goes on at lr. The frame record keeps the caller's lr meanwhile. */
        ".p2align 2\n"
        ".type raise_iabt_low, %function\n"
        "raise_iabt_low:\n"
        "        stp     x29, x30, [sp, #-16]!\n"
        "        mov     x29, sp\n"
        "        blr     x0\n"
        "iabt_low_return:\n"
        "        ldp     x29, x30, [sp], #16\n"
        "        ret\n"
        ".size raise_iabt_low, . - raise_iabt_low\n"

        /* The branch itself is fine; fetching from the halfword it lands on faults. */
        ".p2align 2\n"
        ".type raise_pc_align, %function\n"
        "raise_pc_align:\n"
        "        adr     x9, pc_align_target\n"
        "        add     x9, x9, #2\n"
        "        br      x9\n"
        "pc_align_target:\n"
        "        nop\n"
        "pc_align_return:\n"
        "        ret\n"
        ".size raise_pc_align, . - raise_pc_align\n"

        ".p2align 2\n"
        ".type raise_dabt_low, %function\n"
        "raise_dabt_low:\n"
        "dabt_low_at:\n"
        "        ldr     x9, [x0]\n"
        "        ret\n"
        ".size raise_dabt_low, . - raise_dabt_low\n"

        /* sp - 1 is inside this function's own view of the stack (below the caller's frame,
         * which a load does not change anyway); the handler skips the load and the mov puts
         * sp back from x9, which nothing on the way changes. */
        ".p2align 2\n"
        ".type raise_sp_align, %function\n"
        "raise_sp_align:\n"
        "        mov     x9, sp\n"
        "        sub     sp, sp, #1\n"
        "sp_align_at:\n"
        "        ldr     x10, [sp]\n"
        "        mov     sp, x9\n"
        "        ret\n"
        ".size raise_sp_align, . - raise_sp_align\n"

        /* Any immediate the kernel has no user break hook for (uprobes use 0x005). */
        ".p2align 2\n"
        ".type raise_brk64, %function\n"
        "raise_brk64:\n"
        "brk64_at:\n"
        "        brk     #0x7ab\n"
        "        ret\n"
        ".size raise_brk64, . - raise_brk64\n"
        ".popsection");

static void on_signal(int sig, siginfo_t *si, void *ctx) {
        ucontext_t *uc = ctx;
        mcontext_t *m = &uc->uc_mcontext;
        int v = expected, ok = 0, none = -1, has_esr;
        uintptr_t at = 0, addr = 0, resume = 0;
        unsigned long esr = 0;
        const struct vecinfo *vi;

        has_esr = frame_esr(m, &esr);
        if (v < 0)
                handler_fail("unexpected signal", sig, si, m, has_esr, esr);
        vi = &vecs[v];
        if (sig != vi->signo)
                handler_fail("wrong signal", sig, si, m, has_esr, esr);
        for (int i = 0; i < 3 && vi->codes[i]; i++)
                ok |= si->si_code == vi->codes[i];
        if (!ok)
                handler_fail("unexpected si_code", sig, si, m, has_esr, esr);

        /* Where the frame's pc must be and si_addr point, and where to go on. */
        switch (v) {
        case V_UNKNOWN:
                at = addr = (uintptr_t) unknown_at;
                resume = at + 4;
                break;
        case V_IABT_LOW:
                at = addr = (uintptr_t) nx_page;
                resume = (uintptr_t) iabt_low_return;
                if (m->regs[30] != resume)
                        handler_fail("link register is not past the blr", sig, si, m, has_esr, esr);
                break;
        case V_PC_ALIGN:
                at = addr = (uintptr_t) pc_align_target + 2;
                resume = (uintptr_t) pc_align_return;
                break;
        case V_DABT_LOW:
                at = (uintptr_t) dabt_low_at;
                addr = (uintptr_t) guard;
                resume = at + 4;
                break;
        case V_SP_ALIGN:
                at = (uintptr_t) sp_align_at;
                addr = m->regs[9] - 1;
                if (m->sp != addr)
                        handler_fail("sp is not the misaligned one", sig, si, m, has_esr, esr);
                resume = at + 4;
                break;
        case V_BRK64:
                /* The pc stays at the brk: return there and it traps again. */
                at = addr = (uintptr_t) brk64_at;
                resume = at + 4;
                break;
        default:
                break;
        }
        if (m->pc != at)
                handler_fail("signal is not from the raising instruction", sig, si, m, has_esr, esr);
        if ((uintptr_t) si->si_addr != addr)
                handler_fail("unexpected si_addr", sig, si, m, has_esr, esr);
        if (!atomic_compare_exchange_strong(&sicodes[v], &none, si->si_code) && none != si->si_code)
                handler_fail("si_code differs from an earlier raise", sig, si, m, has_esr, esr);
        if (has_esr && (esr >> 26 & 0x3f) == class_ecs[vi->slot])
                atomic_fetch_add(&esr_matched[v], 1);
        else if (has_esr && vi->esr_kept)
                handler_fail("esr record of another exception class", sig, si, m, has_esr, esr);
        m->pc = resume;

        atomic_fetch_add(&traps[v], 1);
        for (size_t i = 0; i < NSIG_USED; i++)
                if (signos[i] == sig)
                        atomic_fetch_add(&sigcounts[i], 1);
        hits = hits + 1;
        expected = -1;
}

static void raise_iabt_low_nx(void) {
        raise_iabt_low(nx_page);
}

static void raise_dabt_low_guard(void) {
        raise_dabt_low(guard);
}

static void (*const raisers[NVEC])(void) = {
        [V_UNKNOWN] = raise_unknown,         [V_IABT_LOW] = raise_iabt_low_nx, [V_PC_ALIGN] = raise_pc_align,
        [V_DABT_LOW] = raise_dabt_low_guard, [V_SP_ALIGN] = raise_sp_align,    [V_BRK64] = raise_brk64,
};

static int arch_setup(void) {
        size_t page = (size_t) sysconf(_SC_PAGESIZE);

        guard = mmap(NULL, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        nx_page = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (guard == MAP_FAILED || nx_page == MAP_FAILED) {
                perror("raise-traps: mmap");
                return -1;
        }
        return 0;
}

/* Each thread's own alternate signal stack, big enough for the largest frame the CPU may need
 * (SVE and SME state make it far larger than SIGSTKSZ). Never freed: the process ends soon. */
static int thread_setup(struct worker *w) {
        long min = sysconf(_SC_SIGSTKSZ);
        stack_t ss = {.ss_size = 256 * 1024};

        if (min > 0 && (size_t) min > ss.ss_size)
                ss.ss_size = (size_t) min;
        ss.ss_sp = mmap(NULL, ss.ss_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (ss.ss_sp == MAP_FAILED || sigaltstack(&ss, NULL) < 0) {
                snprintf(w->err, sizeof(w->err), "alternate signal stack: %s", strerror(errno));
                return -1;
        }
        return 0;
}

/* SP alignment checking (SCTLR_EL1.SA0, which Linux sets) is one a CPU may leave out: qemu's
 * TCG does, for speed, so under it the load through sp - 1 just loads. */
static int may_not_raise(int v) {
        return v == V_SP_ALIGN;
}

static void print_checked(void) {
        printf("\"esrChecked\": {");
        for (int v = 0, first = 1; v < NVEC; v++)
                if (selected[v]) {
                        printf("%s\"%s\": %s", first ? "" : ", ", NAME(v),
                               atomic_load(&esr_matched[v]) == atomic_load(&traps[v]) ? "true" : "false");
                        first = 0;
                }
        printf("}");
}

#endif

static int raise_all(struct worker *w) {
        w->tid = gettid();
        if (thread_setup(w) < 0) {
                w->syscall_failed = 1;
                return -1;
        }
        for (int v = 0; v < NVEC; v++) {
                if (!selected[v])
                        continue;
                for (long i = 0; i < w->count; i++) {
                        hits = 0;
                        expected = v;
                        raisers[v]();
                        expected = -1;
                        if (hits == 0 && i == 0 && may_not_raise(v)) {
                                atomic_store(&not_raised[v], 1);
                                break;
                        }
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
                        fprintf(stderr, "raise-traps: unknown " VECTOR_WORD " '%s' (" VECTOR_LIST ")\n", t);
                        return -1;
                }
                selected[v] = 1;
        }
        return 0;
}

static _Noreturn void usage(void) {
        fprintf(stderr, "usage: raise-traps N [--threads] [--only " VECTOR_USAGE "] [--hold]\n");
        exit(2);
}

int main(int argc, char *argv[]) {
        struct worker mainw = {0}, second = {0};
        struct sigaction sa;
        pthread_t thread;
        int threads = 0, hold = 0, r;
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

        if (arch_setup() < 0)
                return 3;
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = on_signal;
        sa.sa_flags = HANDLER_FLAGS;
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
                struct worker *w = mainw.err[0] ? &mainw : &second;

                fprintf(stderr, "raise-traps: %s\n", w->err);
                return w->syscall_failed ? 3 : 1;
        }
        for (int v = 0; v < NVEC; v++) {
                if (!selected[v] || !atomic_load(&not_raised[v]) || atomic_load(&traps[v]) != 0)
                        continue;
                if (only) {
                        fprintf(stderr, "raise-traps: %s: this CPU does not raise it, skipped\n", NAME(v));
                        return 77;
                }
                fprintf(stderr, "raise-traps: %s: this CPU does not raise it, left out\n", NAME(v));
                selected[v] = 0;
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
        printf("], ");
        print_checked();
        printf(", \"traps\": {");
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
        fprintf(stderr, "raise-traps: x86-64 and arm64 only (it raises their exceptions), skipped\n");
        return 77;
}

#endif
