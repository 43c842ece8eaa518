// SPDX-License-Identifier: (MIT OR GPL-2.0)
/* Reference hot paths for bench/overhead.py, measured side by side with trapstatd:
 *   floor: one add to one per-CPU array slot per user page fault (the least a BPF program
 *          on the tracepoint can cost);
 *   hash:  a per-CPU hash keyed by tgid, created on first fault (the plain per-process design
 *          trapstatd's slots replace). */

#include "vmlinux.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, __u64);
} floor_count SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
        __uint(max_entries, 16384);
        __type(key, __u32);
        __type(value, __u64);
} hash_count SEC(".maps");

SEC("tp_btf/page_fault_user")
int BPF_PROG(count_floor, unsigned long address, struct pt_regs *regs, unsigned long error_code) {
        __u32 zero = 0;
        __u64 *n = bpf_map_lookup_elem(&floor_count, &zero);

        if (n)
                (*n)++;
        return 0;
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(count_hash, unsigned long address, struct pt_regs *regs, unsigned long error_code) {
        __u32 tgid = bpf_get_current_pid_tgid() >> 32;
        __u64 *n = bpf_map_lookup_elem(&hash_count, &tgid), one = 1;

        if (n)
                (*n)++;
        else
                bpf_map_update_elem(&hash_count, &tgid, &one, BPF_NOEXIST);
        return 0;
}
