/* SPDX-License-Identifier: MIT */
#pragma once

/* Architectures without a header of their own in bpf/arch/: the kernel does not tell the BPF
 * programs which exception raised a fault signal, nor the access kind of a page fault. So every
 * trap counts under vector_unknown ("unknown" in Counters.traps) and the read / write / exec /
 * protection breakdown stays zero; the signal and si_code counts and the page fault totals are
 * the same as on x86. The exceptions:page_fault_user / page_fault_kernel tracepoints are x86's:
 * where the kernel lacks them the daemon does not load their programs and counts faults with
 * the perf software event instead (daemon/collector/collector-bpf.c). */

static __always_inline void ts_arch_fault_access(struct ts_counters *c, unsigned long error_code) {
}

static __always_inline __u32 ts_arch_trap_vector(struct task_struct *task, int sig, int code, __u64 addr) {
        return TS_N_VECTORS;
}

static __always_inline __u64 ts_arch_trap_ip(__u32 vector, __u64 ip) {
        return ip;
}

/* Where the vDSO is cannot be told here: vDSO code counts as anonymous memory. */
static __always_inline __u64 ts_arch_vdso_start(struct mm_struct *mm) {
        return 0;
}
