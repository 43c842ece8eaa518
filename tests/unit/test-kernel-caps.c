/* SPDX-License-Identifier: MIT */
/* The choice from the kernel's probed capabilities to the BPF object, the sources and the
 * features, with each capability absent in turn: a fake probe (KernelCaps filled by hand), as a
 * kernel from 5.10 to 5.17 would answer. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "collector-util.h"
#include "kernel-caps.h"
#include "macro.h"
#include "trapstat.h"

static KernelCaps all_but(int missing) {
        KernelCaps k;

        for (int i = 0; i < _KERNEL_CAP_MAX; i++)
                k.has[i] = i != missing;
        return k;
}

/* Kernels by what they have (bpftool feature probe on Debian 11's 5.10 and Ubuntu 22.04's 5.15). */
static KernelCaps kernel_5_10(void) {
        KernelCaps k = {};

        k.has[KERNEL_CAP_BTF] = k.has[KERNEL_CAP_RINGBUF] = k.has[KERNEL_CAP_TASK_ITER] = true;
        return k;
}

static KernelCaps kernel_5_15(void) {
        KernelCaps k = all_but(KERNEL_CAP_LOOP);

        k.has[KERNEL_CAP_FIND_VMA] = k.has[KERNEL_CAP_TASK_FROM_PID] = false;
        return k;
}

static BpfObject object_of(KernelCaps k, int n_cpus) {
        BpfObject o = _BPF_OBJECT_MAX;
        KernelCap missing = _KERNEL_CAP_MAX;

        assert_int_equal(kernel_caps_object(&k, n_cpus, _BPF_OBJECT_MAX, &o, &missing), 0);
        return o;
}

static void test_object_for_each_missing_capability(void **state) {
        static const BpfObject want[_KERNEL_CAP_MAX] = {
                [KERNEL_CAP_TASK_ITER] = BPF_OBJECT_FULL, /* /proc/PID/stat instead */
                [KERNEL_CAP_TASK_BTF] = BPF_OBJECT_BASE,  [KERNEL_CAP_TASK_STORAGE] = BPF_OBJECT_BASE,
                [KERNEL_CAP_ATOMICS] = BPF_OBJECT_BASE,   [KERNEL_CAP_TASK_PT_REGS] = BPF_OBJECT_BASE,
                [KERNEL_CAP_LOOP] = BPF_OBJECT_NOLOOP,    [KERNEL_CAP_FIND_VMA] = BPF_OBJECT_NOLOOP,
        };
        KernelCaps k = all_but(-1);
        KernelCap missing = _KERNEL_CAP_MAX;
        BpfObject o;

        assert_int_equal(object_of(k, 2), BPF_OBJECT_FULL);
        for (int cap = 0; cap < _KERNEL_CAP_MAX; cap++) {
                k = all_but(cap);
                if (cap == KERNEL_CAP_BTF || cap == KERNEL_CAP_RINGBUF) {
                        /* Nothing counts without them: the reason names what is missing. */
                        assert_int_equal(kernel_caps_object(&k, 2, _BPF_OBJECT_MAX, &o, &missing), -ENOTSUP);
                        assert_int_equal(missing, cap);
                        continue;
                }
                assert_int_equal(object_of(k, 2), want[cap]);
        }
        /* Without bpf_loop the exit's loop over the CPUs is written out for so many at most. */
        assert_int_equal(object_of(kernel_5_15(), TS_NO_LOOP_MAX_CPUS), BPF_OBJECT_NOLOOP);
        assert_int_equal(object_of(kernel_5_15(), TS_NO_LOOP_MAX_CPUS + 1), BPF_OBJECT_BASE);
        assert_int_equal(object_of(kernel_5_10(), 2), BPF_OBJECT_BASE);
        /* An object asked for (--bpf-object): only if the kernel can run it. */
        k = kernel_5_15();
        assert_int_equal(kernel_caps_object(&k, 2, BPF_OBJECT_FULL, &o, &missing), -ENOTSUP);
        assert_int_equal(missing, KERNEL_CAP_LOOP);
        assert_int_equal(kernel_caps_object(&k, 2, BPF_OBJECT_BASE, &o, &missing), 0);
        assert_int_equal(o, BPF_OBJECT_BASE);
}

static void features_of(KernelCaps k, BpfObject o, bool fault_sites_on, CollectorSource f[static _FEATURE_MAX],
                        char reasons[static _FEATURE_MAX][KERNEL_CAPS_REASON_MAX]) {
        kernel_caps_features(&k, o, 2, fault_sites_on, f, reasons);
        for (int i = 0; i < _FEATURE_MAX; i++) {
                assert_string_equal(f[i].name, collector_feature_names[i]);
                assert_true(f[i].active == (f[i].reason == NULL));
        }
}

static void test_features_and_their_reasons(void **state) {
        char reasons[_FEATURE_MAX][KERNEL_CAPS_REASON_MAX], buf[KERNEL_CAPS_REASON_MAX];
        CollectorSource f[_FEATURE_MAX];
        KernelCaps k = all_but(-1);

        features_of(k, BPF_OBJECT_FULL, true, f, reasons);
        for (int i = 0; i < _FEATURE_MAX; i++)
                assert_true(f[i].active);
        /* Fault sites off by the options, not the kernel. */
        features_of(k, BPF_OBJECT_FULL, false, f, reasons);
        assert_false(f[FEATURE_FAULT_SITES].active);
        assert_string_equal(f[FEATURE_FAULT_SITES].reason, "off: --fault-sample off");

        /* Ubuntu 22.04's 5.15: the VMA lookup goes, and says why and what instead. */
        features_of(kernel_5_15(), BPF_OBJECT_NOLOOP, true, f, reasons);
        assert_true(f[FEATURE_COUNTING_SLOTS].active && f[FEATURE_FAULT_SITES].active && f[FEATURE_TRAP_SITES].active);
        assert_string_equal(f[FEATURE_VMA_LOOKUP].reason, "needs bpf_loop (Linux 5.17): a site's instruction is named "
                                                          "from /proc/PID/maps while its process lives");
        k = kernel_5_15();
        assert_null(kernel_caps_source_missing(&k, BPF_OBJECT_NOLOOP, 2, SOURCE_FAULT_TIME, buf, sizeof(buf)));

        /* Debian 11's 5.10: the first capability each part misses. */
        features_of(kernel_5_10(), BPF_OBJECT_BASE, true, f, reasons);
        assert_string_equal(f[FEATURE_COUNTING_SLOTS].reason, "needs get_current_task_btf (Linux 5.11): every process "
                                                              "counts in the per-CPU hash, about twice the BPF time per fault");
        assert_string_equal(f[FEATURE_TRAP_SITES].reason, "needs get_current_task_btf (Linux 5.11): no trap sites");
        assert_string_equal(f[FEATURE_VMA_LOOKUP].reason, "needs get_current_task_btf (Linux 5.11): a site's instruction "
                                                          "is named from /proc/PID/maps while its process lives");
        k = kernel_5_10();
        assert_string_equal(kernel_caps_source_missing(&k, BPF_OBJECT_BASE, 2, SOURCE_FAULT_TIME, buf, sizeof(buf)),
                            "needs get_current_task_btf (Linux 5.11)");
        assert_null(kernel_caps_source_missing(&k, BPF_OBJECT_BASE, 2, SOURCE_TASK_ITERATOR, buf, sizeof(buf)));
        assert_null(kernel_caps_source_missing(&k, BPF_OBJECT_BASE, 2, SOURCE_SIGNAL_GENERATE, buf, sizeof(buf)));

        /* 5.12-5.14 without backports: atomics, no bpf_task_pt_regs. */
        k = all_but(KERNEL_CAP_TASK_PT_REGS);
        k.has[KERNEL_CAP_LOOP] = k.has[KERNEL_CAP_FIND_VMA] = false;
        features_of(k, BPF_OBJECT_BASE, true, f, reasons);
        assert_string_equal(f[FEATURE_FAULT_SITES].reason, "needs task_pt_regs (Linux 5.15): no fault sites");

        /* Without the task iterator, /proc/PID/stat: its source says why. */
        k = all_but(KERNEL_CAP_TASK_ITER);
        assert_string_equal(kernel_caps_source_missing(&k, BPF_OBJECT_FULL, 2, SOURCE_TASK_ITERATOR, buf, sizeof(buf)),
                            "needs task_iterator (Linux 5.8)");

        /* A smaller object asked for on a kernel that has it all: the task reads are an object of
         * their own, which any counting object runs beside. */
        features_of(all_but(-1), BPF_OBJECT_BASE, true, f, reasons);
        assert_string_equal(f[FEATURE_TRAP_SITES].reason, "not in the base BPF object (--bpf-object): no trap sites");
        assert_true(f[FEATURE_TASK_READS].active);

        /* The task reads need the kfunc (6.2): Debian 12's 6.1 has all else. */
        features_of(all_but(KERNEL_CAP_TASK_FROM_PID), BPF_OBJECT_FULL, true, f, reasons);
        assert_true(f[FEATURE_VMA_LOOKUP].active);
        assert_string_equal(f[FEATURE_TASK_READS].reason, "needs bpf_task_from_pid (Linux 6.2): the minor/major "
                                                          "faults of the processes active in a tick are read from "
                                                          "/proc/PID/stat, their delay accounting every 30 s and "
                                                          "at exit");
        features_of(kernel_5_10(), BPF_OBJECT_BASE, true, f, reasons);
        assert_string_equal(f[FEATURE_TASK_READS].reason, "needs bpf_task_from_pid (Linux 6.2): the minor/major "
                                                          "faults of the processes active in a tick are read from "
                                                          "/proc/PID/stat, their delay accounting every 30 s and "
                                                          "at exit");
}

static void test_names(void **state) {
        BpfObject o;

        for (int i = 0; i < _KERNEL_CAP_MAX; i++) {
                assert_non_null(kernel_cap_name(i));
                assert_non_null(kernel_cap_since(i));
        }
        assert_null(kernel_cap_name(_KERNEL_CAP_MAX));
        for (BpfObject i = 0; i < _BPF_OBJECT_MAX; i++) {
                assert_int_equal(bpf_object_from_name(bpf_object_name(i), &o), 0);
                assert_int_equal(o, i);
        }
        assert_int_equal(bpf_object_from_name("fast", &o), -EINVAL);
        assert_int_equal(bpf_object_from_name(NULL, &o), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_object_for_each_missing_capability),
                cmocka_unit_test(test_features_and_their_reasons),
                cmocka_unit_test(test_names),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
