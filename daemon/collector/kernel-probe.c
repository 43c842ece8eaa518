/* SPDX-License-Identifier: MIT */
#include "kernel-probe.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/bpf.h>
#include <unistd.h>

#include "macro.h"

/* Whether a tracepoint program may call helper. libbpf loads `call helper; exit` and reads the
 * verifier's answer: an unknown helper is named as such, any other complaint (the arguments) means
 * the kernel has it. The helpers probed here are offered to tp_btf programs as to tracepoint ones. */
static bool has_helper(enum bpf_func_id helper) {
        return libbpf_probe_bpf_helper(BPF_PROG_TYPE_TRACEPOINT, helper, NULL) == 1;
}

/* Atomic fetch-and-add on the stack, which kernels before 5.12 reject ("BPF_XADD uses reserved
 * fields"); compare-and-exchange and exchange came with it. */
static bool has_atomics(void) {
        const struct bpf_insn insns[] = {
                { .code = BPF_ST | BPF_MEM | BPF_DW, .dst_reg = BPF_REG_10, .off = -8, .imm = 0 },
                { .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_1, .imm = 1 },
                { .code = BPF_STX | BPF_ATOMIC | BPF_DW, .dst_reg = BPF_REG_10, .src_reg = BPF_REG_1, .off = -8,
                  .imm = BPF_ADD | BPF_FETCH },
                { .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
                { .code = BPF_JMP | BPF_EXIT },
        };
        int fd = bpf_prog_load(BPF_PROG_TYPE_TRACEPOINT, NULL, "GPL", insns, ELEMENTSOF(insns), NULL);

        if (fd < 0)
                return false;
        close(fd);
        return true;
}

void kernel_probe(KernelCaps *ret) {
        struct btf *vmlinux = btf__load_vmlinux_btf();
        KernelCaps k = {};

        k.has[KERNEL_CAP_BTF] = vmlinux != NULL;
        /* The task iterator's target is a function of the kernel's BTF: bpf_iter_task. */
        k.has[KERNEL_CAP_TASK_ITER] = vmlinux && btf__find_by_name_kind(vmlinux, "bpf_iter_task", BTF_KIND_FUNC) >= 0;
        /* So is a kfunc: a function of the kernel's BTF (tracing programs may call those of
         * bpf_task_from_pid()'s kind since it came). */
        k.has[KERNEL_CAP_TASK_FROM_PID] = vmlinux &&
                                          btf__find_by_name_kind(vmlinux, "bpf_task_from_pid", BTF_KIND_FUNC) >= 0;
        btf__free(vmlinux);
        k.has[KERNEL_CAP_RINGBUF] = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) == 1;
        k.has[KERNEL_CAP_TASK_STORAGE] = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) == 1;
        k.has[KERNEL_CAP_TASK_BTF] = has_helper(BPF_FUNC_get_current_task_btf);
        k.has[KERNEL_CAP_ATOMICS] = has_atomics();
        k.has[KERNEL_CAP_TASK_PT_REGS] = has_helper(BPF_FUNC_task_pt_regs);
        k.has[KERNEL_CAP_LOOP] = has_helper(BPF_FUNC_loop);
        k.has[KERNEL_CAP_FIND_VMA] = has_helper(BPF_FUNC_find_vma);
        *ret = k;
}
