/* SPDX-License-Identifier: MIT */
#pragma once

/* What the running kernel can do for BPF, as probed at start (kernel-probe.c), and what follows
 * from it: which of the three BPF objects to load (the comment at the top of
 * bpf/trapstat.bpf.c) and which features are active, each inactive one with the capability it
 * misses and the kernel that brought it. Pure: unit-tested with every capability absent in turn
 * (tests/unit/test-kernel-caps.c). Never compares version numbers: the versions here only
 * explain. */

#include <stdbool.h>
#include <stddef.h>

#include "collector.h"

typedef enum KernelCap {
        KERNEL_CAP_BTF,          /* the kernel's own BTF: tp_btf programs, CO-RE */
        KERNEL_CAP_RINGBUF,      /* BPF_MAP_TYPE_RINGBUF */
        KERNEL_CAP_TASK_ITER,    /* iter/task programs */
        KERNEL_CAP_TASK_BTF,     /* bpf_get_current_task_btf() */
        KERNEL_CAP_TASK_STORAGE, /* BPF_MAP_TYPE_TASK_STORAGE */
        KERNEL_CAP_ATOMICS,      /* BPF_ATOMIC with BPF_FETCH, compare-and-exchange, exchange */
        KERNEL_CAP_TASK_PT_REGS, /* bpf_task_pt_regs() */
        KERNEL_CAP_LOOP,         /* bpf_loop() */
        KERNEL_CAP_FIND_VMA,     /* bpf_find_vma() */
        KERNEL_CAP_TASK_FROM_PID, /* the bpf_task_from_pid() kfunc in tracing programs */
        _KERNEL_CAP_MAX
} KernelCap;

typedef struct KernelCaps {
        bool has[_KERNEL_CAP_MAX];
} KernelCaps;

/* Name (as GetStatus reports it) and the Linux release that brought each capability. */
const char *kernel_cap_name(KernelCap cap);
const char *kernel_cap_since(KernelCap cap);

typedef enum BpfObject {
        BPF_OBJECT_FULL,   /* trapstat.bpf.o */
        BPF_OBJECT_NOLOOP, /* trapstat-noloop.bpf.o */
        BPF_OBJECT_BASE,   /* trapstat-base.bpf.o */
        _BPF_OBJECT_MAX
} BpfObject;

/* "full", "noloop", "base". */
const char *bpf_object_name(BpfObject o);

/* The richest object the kernel can run on n_cpus possible CPUs (the object without bpf_loop
 * clears a slot's copies on at most TS_NO_LOOP_MAX_CPUS), or `want` when it is not
 * _BPF_OBJECT_MAX; -ENOTSUP when none can (or not `want`), with *ret_missing (unless NULL) the
 * first capability the last one tried needs. */
int kernel_caps_object(const KernelCaps *caps, int n_cpus, BpfObject want, BpfObject *ret, KernelCap *ret_missing);
/* The object named name ("full", "noloop", "base"); -EINVAL for another name. */
int bpf_object_from_name(const char *name, BpfObject *ret);

#define KERNEL_CAPS_REASON_MAX 200

typedef enum CollectorFeature {
        FEATURE_COUNTING_SLOTS, /* a process counts in a slot of its own: the cheap path per fault */
        FEATURE_FAULT_SITES,    /* sampled fault sites */
        FEATURE_TRAP_SITES,     /* every trap's site */
        FEATURE_VMA_LOOKUP,     /* a site's mapping found in the kernel, also after the process died */
        FEATURE_TASK_READS,     /* the active processes' minor/major faults read in the kernel, not /proc */
        _FEATURE_MAX
} CollectorFeature;

/* What the daemon does without FEATURE_TASK_READS, whatever turned it off: its reasons end so. */
#define FEATURE_TASK_READS_WITHOUT                                                                                    \
        "the minor/major faults of the processes active in a tick are read from /proc/PID/stat, their delay "      \
        "accounting every 30 s and at exit"

extern const char *const collector_feature_names[_FEATURE_MAX];

/* Whether each feature is active with object o on a kernel with caps and n_cpus (fault_sites_on: the
 * configuration samples fault sites); each inactive one gets its reason, written into
 * reasons[i]. */
void kernel_caps_features(const KernelCaps *caps, BpfObject o, int n_cpus, bool fault_sites_on,
                          CollectorSource ret[static _FEATURE_MAX], char reasons[static _FEATURE_MAX][KERNEL_CAPS_REASON_MAX]);

/* The reason a source the object cannot run is inactive ("needs task storage (Linux 5.11)"), or
 * NULL when it can. */
const char *kernel_caps_source_missing(const KernelCaps *caps, BpfObject o, int n_cpus, int source, char *buf,
                                       size_t size);
