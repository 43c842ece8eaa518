/* SPDX-License-Identifier: MIT */
#pragma once

/* arm64 (__TARGET_ARCH_arm64): what only arm64 tells. Included by bpf/trapstat.bpf.c after
 * vmlinux.h and the libbpf headers, with the same functions as bpf/arch/x86.h.
 *
 * Page faults: arm64 has no exceptions:page_fault_user / page_fault_kernel tracepoints, so the
 * daemon counts faults with the perf software events, whose context carries no syndrome: the
 * read / write / exec / protection breakdown is not known here (the replies say so, null).
 *
 * Traps: by the exception class of the syndrome the kernel keeps for a fault signal
 * (task->thread.fault_code, an ESR_EL1 value), at its slot of common/trap-vectors.h. The debug
 * exceptions do not set it (their SIGTRAP is sent without a syndrome), so a SIGTRAP's class
 * comes from its si_code and, for a breakpoint, from the instruction at si_addr. */

#include "../../common/trap-vectors.h"

#define TS_ESR_EC_SHIFT 26
#define TS_ESR_EC_MASK 0x3f
/* BRK #imm16: 0xd4200000 with imm16 in bits 20:5. */
#define TS_BRK64_MASK 0xffe0001fU
#define TS_BRK64 0xd4200000U
/* SIGTRAP's si_codes (uapi asm-generic/siginfo.h). */
#define TS_TRAP_BRKPT 1
#define TS_TRAP_TRACE 2
#define TS_TRAP_HWBKPT 4
#define TS_SIGTRAP 5

static __always_inline void ts_arch_fault_access(struct ts_counters *c, unsigned long error_code) {
}

/* The slot of an exception class; TS_N_VECTORS for a class without one. */
static __always_inline __u32 ts_arch_class_slot(__u32 class) {
        switch (class) {
#define TS_CLASS_CASE(slot, class, mnemonic, description) \
        case class:                                       \
                return slot;
                TRAP_ARM64_CLASS_TABLE(TS_CLASS_CASE)
#undef TS_CLASS_CASE
        }
        return TS_N_VECTORS;
}

/* A SIGTRAP's class: a brk instruction at addr (the pc of the trap) or else a hardware
 * breakpoint, a software step, a watchpoint. The instruction is read only from the process
 * being signalled when it is the current one (a synchronous trap is signalled by the kernel in
 * its own context). */
static __always_inline __u32 ts_arch_debug_slot(struct task_struct *task, int code, __u64 addr) {
        __u32 insn = 0;

        switch (code) {
        case TS_TRAP_BRKPT:
                if (task == current_task() && bpf_probe_read_user(&insn, sizeof(insn), (void *) addr) == 0 &&
                    (insn & TS_BRK64_MASK) == TS_BRK64)
                        return TRAP_ARM64_BRK64;
                return TRAP_ARM64_BREAKPT_LOW;
        case TS_TRAP_TRACE:
                return TRAP_ARM64_SOFTSTP_LOW;
        case TS_TRAP_HWBKPT:
                return TRAP_ARM64_WATCHPT_LOW;
        }
        return TS_N_VECTORS;
}

/* The slot of the exception class that made the kernel send task signal sig (si_code code,
 * si_addr addr); TS_N_VECTORS when it cannot be told: the trap counts as unknown. */
static __always_inline __u32 ts_arch_trap_vector(struct task_struct *task, int sig, int code, __u64 addr) {
        __u64 esr;

        if (sig == TS_SIGTRAP)
                return ts_arch_debug_slot(task, code, addr);
        if (!bpf_core_field_exists(task->thread.fault_code))
                return TS_N_VECTORS;
        esr = BPF_CORE_READ(task, thread.fault_code);
        return ts_arch_class_slot((__u32) (esr >> TS_ESR_EC_SHIFT) & TS_ESR_EC_MASK);
}

/* A trap's instruction: the pc as the exception left it. brk, unlike x86's int3, leaves it at
 * itself. */
static __always_inline __u64 ts_arch_trap_ip(__u32 vector, __u64 ip) {
        return ip;
}

/* Where the kernel mapped the process's vDSO (mm->context.vdso); 0 when not known. */
static __always_inline __u64 ts_arch_vdso_start(struct mm_struct *mm) {
        if (bpf_core_field_exists(mm->context.vdso))
                return (__u64) BPF_CORE_READ(mm, context.vdso);
        return 0;
}
