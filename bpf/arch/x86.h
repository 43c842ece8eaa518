/* SPDX-License-Identifier: MIT */
#pragma once

/* x86 (__TARGET_ARCH_x86): what only x86 tells. Included by bpf/trapstat.bpf.c after vmlinux.h
 * and the libbpf headers; every architecture header defines the same four functions
 * (bpf/arch/generic.h is the one for architectures without a header of their own). */

#include "../../common/trap-vectors.h"

/* Page fault error code bits (arch/x86/include/asm/trap_pf.h), the error_code argument of the
 * exceptions:page_fault_user tracepoint. */
#define TS_PF_PROT (1U << 0)
#define TS_PF_WRITE (1U << 1)
#define TS_PF_USER (1U << 2)
#define TS_PF_INSTR (1U << 4)

/* The access breakdown of one user-mode fault: an instruction fetch, else a write, else a
 * read; and whether it was a protection violation (the others hit a page not present). */
static __always_inline void ts_arch_fault_access(struct ts_counters *c, unsigned long error_code) {
        if (error_code & TS_PF_INSTR)
                c->fault_exec++;
        else if (error_code & TS_PF_WRITE)
                c->fault_write++;
        else
                c->fault_read++;
        if (error_code & TS_PF_PROT)
                c->fault_protection++;
}

/* The exception vector (arch/x86/include/asm/trapnr.h) that made the kernel send task a fault
 * signal: task->thread.trap_nr, which the trap handlers set before they signal. TS_N_VECTORS
 * when the kernel has no such field or the number is out of range: the trap counts as unknown. */
static __always_inline __u32 ts_arch_trap_vector(struct task_struct *task, int sig, int code, __u64 addr) {
        if (bpf_core_field_exists(task->thread.trap_nr)) {
                __u32 vector = BPF_CORE_READ(task, thread.trap_nr);

                if (vector < TS_N_VECTORS)
                        return vector;
        }
        return TS_N_VECTORS;
}

/* A trap's instruction: int3 (#BP) leaves the instruction pointer after itself, and the site is
 * the int3 (ip - 1), as debuggers show it. */
static __always_inline __u64 ts_arch_trap_ip(__u32 vector, __u64 ip) {
        return vector == TRAP_VECTOR_BP && ip > 0 ? ip - 1 : ip;
}

/* Where the kernel mapped the process's vDSO (mm->context.vdso); 0 when not known. */
static __always_inline __u64 ts_arch_vdso_start(struct mm_struct *mm) {
        if (bpf_core_field_exists(mm->context.vdso))
                return (__u64) BPF_CORE_READ(mm, context.vdso);
        return 0;
}
