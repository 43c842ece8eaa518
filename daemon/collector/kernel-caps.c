/* SPDX-License-Identifier: MIT */
#include "kernel-caps.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "collector-util.h"
#include "macro.h"
#include "trapstat.h"

static const struct {
        const char *name;
        const char *since; /* the Linux release that brought it */
} caps[_KERNEL_CAP_MAX] = {
        [KERNEL_CAP_BTF] = { "btf", "5.5, with CONFIG_DEBUG_INFO_BTF" },
        [KERNEL_CAP_RINGBUF] = { "ringbuf", "5.8" },
        [KERNEL_CAP_TASK_ITER] = { "task_iterator", "5.8" },
        [KERNEL_CAP_TASK_BTF] = { "get_current_task_btf", "5.11" },
        [KERNEL_CAP_TASK_STORAGE] = { "task_storage", "5.11" },
        [KERNEL_CAP_ATOMICS] = { "atomics", "5.12" },
        [KERNEL_CAP_TASK_PT_REGS] = { "task_pt_regs", "5.15" },
        [KERNEL_CAP_LOOP] = { "bpf_loop", "5.17" },
        [KERNEL_CAP_FIND_VMA] = { "bpf_find_vma", "5.17" },
        [KERNEL_CAP_TASK_FROM_PID] = { "bpf_task_from_pid", "6.2" },
};

const char *kernel_cap_name(KernelCap cap) {
        return cap < _KERNEL_CAP_MAX ? caps[cap].name : NULL;
}

const char *kernel_cap_since(KernelCap cap) {
        return cap < _KERNEL_CAP_MAX ? caps[cap].since : NULL;
}

const char *bpf_object_name(BpfObject o) {
        static const char *const names[_BPF_OBJECT_MAX] = {
                [BPF_OBJECT_FULL] = "full",
                [BPF_OBJECT_NOLOOP] = "noloop",
                [BPF_OBJECT_BASE] = "base",
        };
        return o < _BPF_OBJECT_MAX ? names[o] : NULL;
}

/* What each object needs, in the order a reason names the first missing (the task iterator is
 * none's: without it /proc/PID/stat is read instead). */
static const KernelCap base_needs[] = { KERNEL_CAP_BTF, KERNEL_CAP_RINGBUF };
static const KernelCap noloop_needs[] = { KERNEL_CAP_BTF,          KERNEL_CAP_RINGBUF, KERNEL_CAP_TASK_BTF,
                                          KERNEL_CAP_TASK_STORAGE, KERNEL_CAP_ATOMICS, KERNEL_CAP_TASK_PT_REGS };
static const KernelCap full_needs[] = { KERNEL_CAP_BTF,      KERNEL_CAP_RINGBUF,      KERNEL_CAP_TASK_BTF,
                                        KERNEL_CAP_TASK_STORAGE, KERNEL_CAP_ATOMICS, KERNEL_CAP_TASK_PT_REGS,
                                        KERNEL_CAP_LOOP,     KERNEL_CAP_FIND_VMA };

/* The first capability of needs[] the kernel lacks; _KERNEL_CAP_MAX when it has them all. */
static KernelCap first_missing(const KernelCaps *k, const KernelCap *needs, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!k->has[needs[i]])
                        return needs[i];
        return _KERNEL_CAP_MAX;
}

/* Why the kernel cannot run object o on n_cpus CPUs: the capability it misses, or
 * _KERNEL_CAP_MAX when it can. */
static KernelCap object_missing(const KernelCaps *k, BpfObject o, int n_cpus) {
        switch (o) {
        case BPF_OBJECT_FULL:
                return first_missing(k, full_needs, ELEMENTSOF(full_needs));
        case BPF_OBJECT_NOLOOP: {
                KernelCap cap = first_missing(k, noloop_needs, ELEMENTSOF(noloop_needs));

                /* Its loop over the CPUs is written out for so many at most. */
                if (cap == _KERNEL_CAP_MAX && n_cpus > TS_NO_LOOP_MAX_CPUS && !k->has[KERNEL_CAP_LOOP])
                        return KERNEL_CAP_LOOP;
                return cap;
        }
        default:
                return first_missing(k, base_needs, ELEMENTSOF(base_needs));
        }
}

int kernel_caps_object(const KernelCaps *k, int n_cpus, BpfObject want, BpfObject *ret, KernelCap *ret_missing) {
        KernelCap missing = _KERNEL_CAP_MAX;

        for (BpfObject o = 0; o < _BPF_OBJECT_MAX; o++) {
                if (want != _BPF_OBJECT_MAX && o != want)
                        continue;
                missing = object_missing(k, o, n_cpus);
                if (missing == _KERNEL_CAP_MAX) {
                        *ret = o;
                        return 0;
                }
        }
        if (ret_missing)
                *ret_missing = missing;
        return -ENOTSUP;
}

int bpf_object_from_name(const char *name, BpfObject *ret) {
        for (BpfObject o = 0; o < _BPF_OBJECT_MAX; o++)
                if (name && strcmp(name, bpf_object_name(o)) == 0) {
                        *ret = o;
                        return 0;
                }
        return -EINVAL;
}

static const char *needs(KernelCap cap, char *buf, size_t size) {
        snprintf(buf, size, "needs %s (Linux %s)", caps[cap].name, caps[cap].since);
        return buf;
}

/* The reason a part that object `from` and richer ones have is inactive with o: what `from`
 * misses here, or that o was asked for (--bpf-object); NULL when o has it. */
static const char *part_missing(const KernelCaps *k, BpfObject o, int n_cpus, BpfObject from, char *buf, size_t size) {
        KernelCap cap;

        if (o <= from)
                return NULL;
        cap = object_missing(k, from, n_cpus);
        if (cap == _KERNEL_CAP_MAX) {
                snprintf(buf, size, "not in the %s BPF object (--bpf-object)", bpf_object_name(o));
                return buf;
        }
        return needs(cap, buf, size);
}

const char *const collector_feature_names[_FEATURE_MAX] = {
        [FEATURE_COUNTING_SLOTS] = "counting_slots",
        [FEATURE_FAULT_SITES] = "fault_sites",
        [FEATURE_TRAP_SITES] = "trap_sites",
        [FEATURE_VMA_LOOKUP] = "vma_lookup",
        [FEATURE_TASK_READS] = "task_reads",
};

/* task-reads.bpf.o, whatever the counting object: a process found by its pid, its threads summed
 * with bpf_loop() over signal's list (group_faults()). */
static const KernelCap task_reads_needs[] = { KERNEL_CAP_BTF, KERNEL_CAP_TASK_FROM_PID, KERNEL_CAP_LOOP };

void kernel_caps_features(const KernelCaps *k, BpfObject o, int n_cpus, bool fault_sites_on, CollectorSource ret[static _FEATURE_MAX],
                          char reasons[static _FEATURE_MAX][KERNEL_CAPS_REASON_MAX]) {
        static const BpfObject from[_FEATURE_MAX] = {
                [FEATURE_COUNTING_SLOTS] = BPF_OBJECT_NOLOOP,
                [FEATURE_FAULT_SITES] = BPF_OBJECT_NOLOOP,
                [FEATURE_TRAP_SITES] = BPF_OBJECT_NOLOOP,
                [FEATURE_VMA_LOOKUP] = BPF_OBJECT_FULL,
                [FEATURE_TASK_READS] = BPF_OBJECT_BASE, /* needs task_reads_needs[] instead */
        };
        static const char *const without[_FEATURE_MAX] = {
                [FEATURE_COUNTING_SLOTS] = "every process counts in the per-CPU hash, about twice the BPF time per fault",
                [FEATURE_FAULT_SITES] = "no fault sites",
                [FEATURE_TRAP_SITES] = "no trap sites",
                [FEATURE_VMA_LOOKUP] = "a site's instruction is named from /proc/PID/maps while its process lives",
                [FEATURE_TASK_READS] = FEATURE_TASK_READS_WITHOUT,
        };

        for (int f = 0; f < _FEATURE_MAX; f++) {
                char need[96];
                const char *why = part_missing(k, o, n_cpus, from[f], need, sizeof(need));

                if (f == FEATURE_TASK_READS) {
                        KernelCap cap = first_missing(k, task_reads_needs, ELEMENTSOF(task_reads_needs));

                        why = cap == _KERNEL_CAP_MAX ? NULL : needs(cap, need, sizeof(need));
                }

                ret[f] = (CollectorSource) { .name = collector_feature_names[f], .active = true };
                if (why)
                        snprintf(reasons[f], KERNEL_CAPS_REASON_MAX, "%s: %s", why, without[f]);
                else if (f == FEATURE_FAULT_SITES && !fault_sites_on)
                        snprintf(reasons[f], KERNEL_CAPS_REASON_MAX, "off: --fault-sample off");
                else
                        continue;
                ret[f].active = false;
                ret[f].reason = reasons[f];
        }
}

const char *kernel_caps_source_missing(const KernelCaps *k, BpfObject o, int n_cpus, int source, char *buf,
                                       size_t size) {
        switch (source) {
        case SOURCE_FAULT_TIME:
                return part_missing(k, o, n_cpus, BPF_OBJECT_NOLOOP, buf, size);
        case SOURCE_MAJOR_CAUSE: /* bpf_find_vma() */
                return part_missing(k, o, n_cpus, BPF_OBJECT_FULL, buf, size);
        case SOURCE_TASK_ITERATOR:
                return k->has[KERNEL_CAP_TASK_ITER] ? NULL : needs(KERNEL_CAP_TASK_ITER, buf, size);
        default:
                return NULL;
        }
}
