/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <cmocka.h>

#include "collector-util.h"
#include "delayacct.h"
#include "macro.h"

#include <fcntl.h>

static void test_sources_parse(void **state) {
        bool disabled[_SOURCE_MAX] = {};
        const char *unknown = NULL;
        size_t len = 0;

        /* Nothing to disable. */
        assert_int_equal(collector_sources_parse(NULL, disabled, NULL, NULL), 0);
        assert_int_equal(collector_sources_parse("", disabled, NULL, NULL), 0);
        for (int i = 0; i < _SOURCE_MAX; i++)
                assert_false(disabled[i]);

        /* Empty names and a trailing comma are skipped. */
        assert_int_equal(collector_sources_parse("page_fault_user,,task_iterator,", disabled, NULL, NULL), 0);
        for (int i = 0; i < _SOURCE_MAX; i++)
                assert_int_equal(disabled[i], i == SOURCE_PAGE_FAULT_USER || i == SOURCE_TASK_ITERATOR);

        /* Every name GetStatus lists is one --disable-source takes. */
        for (int i = 0; i < _SOURCE_MAX; i++) {
                bool d[_SOURCE_MAX] = {};

                assert_int_equal(collector_sources_parse(collector_source_names[i], d, NULL, NULL), 0);
                assert_true(d[i]);
        }

        /* A prefix or an extension of a name is no name; the unknown one is pointed at. */
        assert_int_equal(collector_sources_parse("signal_generate,page_fault,x", disabled, &unknown, &len), -EINVAL);
        assert_int_equal(len, strlen("page_fault"));
        assert_memory_equal(unknown, "page_fault", len);
        assert_int_equal(collector_sources_parse("page_fault_users", disabled, &unknown, &len), -EINVAL);
        assert_int_equal(len, strlen("page_fault_users"));
        assert_int_equal(collector_sources_parse("Page_Fault_User", disabled, NULL, NULL), -EINVAL);
}

static void test_sources_choose(void **state) {
        SourceChoice c[_SOURCE_MAX];
        char *error = NULL;

        /* Neither list: every source but the ones off by default. */
        assert_int_equal(collector_sources_choose(NULL, NULL, c, &error), 0);
        for (int i = 0; i < _SOURCE_MAX; i++)
                assert_int_equal(c[i], i == SOURCE_FAULT_TIME ? SOURCE_NOT_ENABLED : SOURCE_USED);
        assert_null(error);

        assert_int_equal(collector_sources_choose("signal_generate", "fault_time", c, &error), 0);
        for (int i = 0; i < _SOURCE_MAX; i++)
                assert_int_equal(c[i], i == SOURCE_SIGNAL_GENERATE ? SOURCE_DISABLED : SOURCE_USED);
        /* Disabling one off by default says so, as disabled. */
        assert_int_equal(collector_sources_choose("fault_time", "", c, &error), 0);
        assert_int_equal(c[SOURCE_FAULT_TIME], SOURCE_DISABLED);
        /* Enabling one that is on by default changes nothing. */
        assert_int_equal(collector_sources_choose(NULL, "task_iterator", c, &error), 0);
        assert_int_equal(c[SOURCE_TASK_ITERATOR], SOURCE_USED);

        /* One line that names the source and, for an unknown one, the list. */
        assert_int_equal(collector_sources_choose("task_iterator,fault_time", "fault_time", c, &error), -EINVAL);
        assert_string_equal(error, "Source 'fault_time' is both in --disable-source and --enable-source");
        free(error);
        error = NULL;
        assert_int_equal(collector_sources_choose("page_fault_user,bogus", NULL, c, &error), -EINVAL);
        assert_string_equal(error, "Unknown source 'bogus' in --disable-source");
        free(error);
        error = NULL;
        assert_int_equal(collector_sources_choose("page_fault_user", "fault_time,bogus,x", c, &error), -EINVAL);
        assert_string_equal(error, "Unknown source 'bogus' in --enable-source");
        free(error);
        /* Without a place for the message: none is made. */
        assert_int_equal(collector_sources_choose("x", NULL, c, NULL), -EINVAL);
}

static void test_counters_delta(void **state) {
        ProcCounters seen = {}, sum = {};
        ProcCounters cpu0 = { .c = { .user_faults = 10, .kernel_faults = 1, .fault_read = 4, .fault_write = 5,
                                     .fault_exec = 1, .fault_protection = 2 } };
        ProcCounters cpu1 = { .c = { .user_faults = 5, .fault_read = 5 } };
        FaultTime t;
        Faults d;

        uint64_t next[2] = {};

        counters_sum(&cpu0, 0, &next[0], &sum);
        counters_sum(&cpu1, 0, &next[1], &sum);
        assert_int_equal(sum.c.user_faults, 15);
        assert_int_equal(sum.c.fault_read, 9);

        d = counters_delta(&sum, &seen, &t);
        assert_int_equal(d.user, 15);
        assert_int_equal(d.kernel, 1);
        assert_int_equal(d.read, 9);
        assert_int_equal(d.write, 5);
        assert_int_equal(d.exec, 1);
        assert_int_equal(d.protection, 2);
        assert_int_equal(d.minor, 0);
        assert_int_equal(d.major, 0);
        assert_true(fault_time_is_zero(&t));
        assert_memory_equal(&seen, &sum, sizeof(sum));

        /* Nothing new: a zero delta. */
        d = counters_delta(&sum, &seen, &t);
        assert_true(faults_is_zero(&d));

        sum.c.kernel_faults += 3;
        d = counters_delta(&sum, &seen, &t);
        assert_int_equal(d.kernel, 3);
        assert_int_equal(d.user, 0);
}

/* Major faults by cause, and their time, summed over the CPUs (a major fault sleeps: it completes
 * on any of them) and turned into deltas like the other counters. */
static void test_counters_major_cause(void **state) {
        ProcCounters seen = {}, sum = {};
        ProcCounters cpu0 = { .c = { .major_cause = { [TS_MAJOR_FILE] = 3, [TS_MAJOR_ANON] = 7 } },
                              .t = { .major_cause_ns = { [TS_MAJOR_FILE] = 3000, [TS_MAJOR_ANON] = 700 } } };
        ProcCounters cpu1 = { .c = { .major_cause = { [TS_MAJOR_ANON] = 1, [TS_MAJOR_SHMEM] = 2 } },
                              .t = { .major_cause_ns = { [TS_MAJOR_ANON] = 100, [TS_MAJOR_SHMEM] = 40 } } };
        uint64_t next[2] = {};
        FaultTime t;
        Faults d;

        counters_sum(&cpu0, 0, &next[0], &sum);
        counters_sum(&cpu1, 0, &next[1], &sum);
        d = counters_delta(&sum, &seen, &t);
        assert_int_equal(d.major_file, 3);
        assert_int_equal(d.major_anon, 8);
        assert_int_equal(d.major_shmem, 2);
        assert_int_equal(d.major, 0); /* the kernel's maj_flt: not these */
        assert_int_equal(t.major_file_ns, 3000);
        assert_int_equal(t.major_anon_ns, 800);
        assert_int_equal(t.major_shmem_ns, 40);

        /* A copy read in place keeps them; without the fault time, its part is zero. */
        ProcCounters copy;
        counters_load(&cpu1.c, &cpu1.t, &copy);
        assert_memory_equal(copy.c.major_cause, cpu1.c.major_cause, sizeof(copy.c.major_cause));
        assert_memory_equal(copy.t.major_cause_ns, cpu1.t.major_cause_ns, sizeof(copy.t.major_cause_ns));
        counters_load(&cpu1.c, NULL, &copy);
        assert_memory_equal(copy.c.major_cause, cpu1.c.major_cause, sizeof(copy.c.major_cause));
        assert_memory_equal(&copy.t, &(struct ts_fault_times) {}, sizeof(copy.t));

        sum.c.major_cause[TS_MAJOR_SHMEM] += 5;
        d = counters_delta(&sum, &seen, &t);
        assert_int_equal(d.major_shmem, 5);
        assert_int_equal(d.major_file + d.major_anon, 0);
        assert_true(fault_time_is_zero(&t));
        (void) state;
}

/* The kernel's delay accounting of a process: what grew past the largest sum seen, so a sum that
 * falls for a moment (an exiting thread in neither place) is not counted again when it comes
 * back; a process that started before counting has its first reading as the baseline. */
static void test_stall_account(void **state) {
        StallSeen seen = {}, old = { .baseline = true };
        struct ts_delays now = { .ns = { [TS_STALL_SWAPIN] = 3000 }, .count = { [TS_STALL_SWAPIN] = 3 } };
        Stall d = {};

        assert_true(stall_account(&seen, &now, &d));
        assert_int_equal(d.ns[STALL_SWAPIN], 3000);
        assert_int_equal(d.count[STALL_SWAPIN], 3);
        /* A thread leaving: the sum falls by its 1000 ns, then its delays arrive in signal's. */
        now.ns[TS_STALL_SWAPIN] = 2000;
        d = (Stall) {};
        assert_false(stall_account(&seen, &now, &d));
        assert_true(stall_is_zero(&d));
        now.ns[TS_STALL_SWAPIN] = 3500;
        assert_true(stall_account(&seen, &now, &d));
        assert_int_equal(d.ns[STALL_SWAPIN], 500);
        /* Every cause on its own. */
        now.ns[TS_STALL_BLKIO] = 7;
        now.count[TS_STALL_RECLAIM] = 1;
        d = (Stall) {};
        assert_true(stall_account(&seen, &now, &d));
        assert_int_equal(d.ns[STALL_BLKIO], 7);
        assert_int_equal(d.count[STALL_RECLAIM], 1);
        assert_int_equal(d.ns[STALL_SWAPIN], 0);
        /* Started before counting: the first reading is what it had then. */
        d = (Stall) {};
        assert_false(stall_account(&old, &now, &d));
        assert_true(stall_is_zero(&d));
        now.count[TS_STALL_THRASHING] = 2;
        assert_true(stall_account(&old, &now, &d));
        assert_int_equal(d.count[STALL_THRASHING], 2);
        assert_int_equal(d.ns[STALL_SWAPIN], 0);
        (void) state;
}

/* Fault time: sums and buckets grow like counts. The longest fault of a read: of the tick that
 * ended (after the last read), and of the next tick so far (between the flip and the read), each
 * once; never one kept for an older tick. */
static void test_counters_fault_time(void **state) {
        ProcCounters seen = {}, sum = {};
        uint64_t next[2] = {};
        /* Read 6 (BPF now stamps 7): CPU 0's longest of tick 6 is 5 ms. CPU 1 has one of tick 4
         * (an old one, ignored) and, since the flip, one of tick 7 of 2.5 us. */
        ProcCounters cpu0 = { .t = { .minor_ns = 3000, .major_ns = 5000000, .kernel_ns = 700,
                                     .buckets = { [0] = 1, [2] = 1, [13] = 1 },
                                     .max_ns = { 5000000, 0 }, .max_tick = { 6, 0 } } };
        ProcCounters cpu1 = { .t = { .minor_ns = 2500, .buckets = { [2] = 1 },
                                     .max_ns = { 9000000, 2500 }, .max_tick = { 4, 7 } } };
        FaultTime t;

        counters_sum(&cpu0, 6, &next[0], &sum);
        counters_sum(&cpu1, 6, &next[1], &sum);
        (void) counters_delta(&sum, &seen, &t);
        assert_int_equal(t.minor_ns, 5500);
        assert_int_equal(t.major_ns, 5000000);
        assert_int_equal(t.kernel_ns, 700);
        assert_int_equal(t.histogram[0], 1);
        assert_int_equal(t.histogram[2], 2);
        assert_int_equal(t.histogram[13], 1);
        assert_int_equal(fault_time_count(&t), 4);
        assert_int_equal(t.max_ns, 5000000);
        assert_int_equal(next[1], 2500);

        /* Read 7 (BPF now stamps 8). CPU 1's tick 7 did not grow past what read 6 saw of it:
         * nothing new, nothing longest. */
        sum = (ProcCounters) {};
        counters_sum(&cpu0, 7, &next[0], &sum);
        counters_sum(&cpu1, 7, &next[1], &sum);
        (void) counters_delta(&sum, &seen, &t);
        assert_true(fault_time_is_zero(&t));

        /* Read 8 (BPF stamps 9). CPU 1 took a 40 us fault in tick 8 and, after the flip, a 1 ms
         * one of tick 9; CPU 0 a 3 us one in tick 8. */
        cpu1.t.minor_ns += 40000 + 1000000;
        cpu1.t.buckets[6]++;
        cpu1.t.buckets[10]++;
        cpu1.t.max_ns[0] = 40000, cpu1.t.max_tick[0] = 8;
        cpu1.t.max_ns[1] = 1000000, cpu1.t.max_tick[1] = 9;
        cpu0.t.minor_ns += 3000;
        cpu0.t.buckets[2]++;
        cpu0.t.max_ns[0] = 3000, cpu0.t.max_tick[0] = 8;
        sum = (ProcCounters) {};
        counters_sum(&cpu0, 8, &next[0], &sum);
        counters_sum(&cpu1, 8, &next[1], &sum);
        (void) counters_delta(&sum, &seen, &t);
        assert_int_equal(fault_time_count(&t), 3);
        assert_int_equal(t.max_ns, 1000000);

        /* Read 9: CPU 1 took a 200 us fault in tick 9 after read 8, shorter than the 1 ms read 8
         * reported: counted, its length not known, the longest not more than what was read. */
        cpu1.t.minor_ns += 200000;
        cpu1.t.buckets[8]++;
        cpu0.t.minor_ns += 1500;
        cpu0.t.buckets[1]++;
        cpu0.t.max_ns[1] = 1500, cpu0.t.max_tick[1] = 9;
        sum = (ProcCounters) {};
        counters_sum(&cpu0, 9, &next[0], &sum);
        counters_sum(&cpu1, 9, &next[1], &sum);
        (void) counters_delta(&sum, &seen, &t);
        assert_int_equal(fault_time_count(&t), 2);
        assert_int_equal(t.max_ns, 1500);
        (void) state;
}

static void test_minmaj_account(void **state) {
        MinMajSeen seen = { .baseline = true };
        Faults delta = {};

        /* A process older than counting: its first reading is where it starts. */
        assert_false(minmaj_account(&seen, 1000, 10, &delta));
        assert_true(faults_is_zero(&delta));
        assert_false(seen.baseline);

        assert_true(minmaj_account(&seen, 1005, 10, &delta));
        assert_int_equal(delta.minor, 5);
        assert_int_equal(delta.major, 0);
        assert_true(minmaj_account(&seen, 1005, 12, &delta));
        assert_int_equal(delta.minor, 5);
        assert_int_equal(delta.major, 2);
        assert_false(minmaj_account(&seen, 1005, 12, &delta));

        /* A reading below the last (a mismatched one) subtracts nothing and is not remembered. */
        assert_false(minmaj_account(&seen, 3, 1, &delta));
        assert_int_equal(seen.minflt, 1005);
        assert_int_equal(seen.majflt, 12);
        assert_true(minmaj_account(&seen, 1006, 12, &delta));
        assert_int_equal(delta.minor, 6);

        /* Without a baseline everything counts. */
        seen = (MinMajSeen) {};
        delta = (Faults) {};
        assert_true(minmaj_account(&seen, 7, 1, &delta));
        assert_int_equal(delta.minor, 7);
        assert_int_equal(delta.major, 1);
}

static void test_traps_account(void **state) {
        struct ts_traps *bpf = calloc(1, sizeof(*bpf));
        Traps cur, seen = {}, delta = {};

        assert_non_null(bpf);
        bpf->vector[6] = 2; /* #UD */
        bpf->vector_unknown = 1;
        bpf->signal[TS_SIG_SIGILL][2] = 2;
        traps_from_bpf(bpf, &cur);
        assert_int_equal(cur.vector[6], 2);
        assert_int_equal(cur.vector[TRAP_VECTOR_UNKNOWN], 1);
        assert_int_equal(cur.signal[TS_SIG_SIGILL][2], 2);

        assert_true(traps_account(&cur, &seen, &delta));
        assert_int_equal(delta.vector[6], 2);
        assert_int_equal(delta.vector[TRAP_VECTOR_UNKNOWN], 1);
        assert_int_equal(delta.signal[TS_SIG_SIGILL][2], 2);
        assert_memory_equal(&seen, &cur, sizeof(cur));

        /* The same reading again: nothing changed, the delta stays. */
        assert_false(traps_account(&cur, &seen, &delta));
        assert_int_equal(delta.vector[6], 2);

        /* A new signal only: a change, added to what the tick has. */
        bpf->signal[TS_SIG_SIGSEGV][1] = 1;
        traps_from_bpf(bpf, &cur);
        assert_true(traps_account(&cur, &seen, &delta));
        assert_int_equal(delta.signal[TS_SIG_SIGSEGV][1], 1);
        assert_int_equal(delta.signal[TS_SIG_SIGILL][2], 2);
        free(bpf);
}

static void test_lifecycle_event_decode(void **state) {
        struct ts_exit_event exit_event = {
                .h = { .type = TS_EVENT_EXIT, .tgid = 42, .start_time = 7 },
                .min_flt = 100,
                .maj_flt = 3,
                .uid = 1000,
        };
        struct ts_exec_event exec_event = {
                .h = { .type = TS_EVENT_EXEC, .tgid = 43, .start_time = 8 },
                .uid = 0,
        };
        LifecycleEvent e;

        /* The name fills the array without a NUL in the kernel's copy: one is added. */
        memset(exit_event.comm, 'x', sizeof(exit_event.comm));
        assert_int_equal(lifecycle_event_decode(&exit_event, sizeof(exit_event), &e), 0);
        assert_int_equal(e.type, TS_EVENT_EXIT);
        assert_int_equal(e.tgid, 42);
        assert_int_equal(e.start_time, 7);
        assert_int_equal(e.min_flt, 100);
        assert_int_equal(e.maj_flt, 3);
        assert_int_equal(e.uid, 1000);
        assert_int_equal(strlen(e.comm), COMM_MAX - 1);
        assert_null(e.cmdline);

        /* Too short, or a type this daemon does not know: skipped. */
        assert_int_equal(lifecycle_event_decode(&exit_event, sizeof(struct ts_event_header) - 1, &e), -EBADMSG);
        assert_int_equal(lifecycle_event_decode(&exit_event, sizeof(exit_event) - 1, &e), -EBADMSG);
        exit_event.h.type = 99;
        assert_int_equal(lifecycle_event_decode(&exit_event, sizeof(exit_event), &e), -EBADMSG);

        strcpy(exec_event.comm, "sh");
        memcpy(exec_event.args, "sh\0-c\0true\0", 11);
        exec_event.args_len = 11;
        assert_int_equal(lifecycle_event_decode(&exec_event, sizeof(exec_event), &e), 0);
        assert_int_equal(e.type, TS_EVENT_EXEC);
        assert_int_equal(e.tgid, 43);
        assert_string_equal(e.comm, "sh");
        assert_string_equal(e.cmdline, "sh -c true");
        assert_null(e.unit); /* "": in no unit */
        lifecycle_event_done(&e);
        assert_null(e.cmdline);

        /* The unit BPF named, and the cgroup id; a name filling the array without its NUL is
         * cut to TS_UNIT_LEN - 1 bytes. */
        strcpy(exec_event.unit, "nginx.service");
        exec_event.cgroup_id = 4242;
        assert_int_equal(lifecycle_event_decode(&exec_event, sizeof(exec_event), &e), 0);
        assert_string_equal(e.unit, "nginx.service");
        assert_int_equal(e.cgroup_id, 4242);
        lifecycle_event_done(&e);
        assert_null(e.unit);
        memset(exec_event.unit, 'u', sizeof(exec_event.unit));
        assert_int_equal(lifecycle_event_decode(&exec_event, sizeof(exec_event), &e), 0);
        assert_int_equal(strlen(e.unit), TS_UNIT_LEN - 1);
        lifecycle_event_done(&e);
        exec_event.unit[0] = '\0';

        /* No arguments: no command line. */
        exec_event.args_len = 0;
        assert_int_equal(lifecycle_event_decode(&exec_event, sizeof(exec_event), &e), 0);
        assert_null(e.cmdline);

        /* A length beyond the array (BPF's word) is cut at the array, and the cut drops a
         * character it splits: "é" is two bytes, the second one beyond the end. */
        memset(exec_event.args, 'a', sizeof(exec_event.args));
        exec_event.args[TS_ARGS_LEN - 1] = (char) 0xC3;
        exec_event.args_len = TS_ARGS_LEN + 100;
        assert_int_equal(lifecycle_event_decode(&exec_event, sizeof(exec_event), &e), 0);
        assert_non_null(e.cmdline);
        assert_int_equal(strlen(e.cmdline), TS_ARGS_LEN - 1);
        lifecycle_event_done(&e);
        assert_int_equal(lifecycle_event_decode(&exec_event, sizeof(exec_event) - 1, &e), -EBADMSG);
}

/* BPF's path of a file, components innermost first: joined outermost first; a path cut at
 * TS_PATH_DEPTH says so; a component of TS_NAME_LEN - 1 bytes survives whole. */
static void test_file_name_join(void **state) {
        struct ts_file_name n = { .depth = 3 };
        char *s;

        strcpy(n.names[0], "libc.so.6");
        strcpy(n.names[1], "lib");
        strcpy(n.names[2], "usr");
        s = file_name_join(&n);
        assert_string_equal(s, "/usr/lib/libc.so.6");
        free(s);

        n.truncated = 1;
        s = file_name_join(&n);
        assert_string_equal(s, ".../usr/lib/libc.so.6");
        free(s);

        n = (struct ts_file_name) { .depth = 0 };
        s = file_name_join(&n);
        assert_string_equal(s, "/");
        free(s);

        n = (struct ts_file_name) { .depth = 1 };
        memset(n.names[0], 'x', TS_NAME_LEN - 1);
        s = file_name_join(&n);
        assert_int_equal(strlen(s), TS_NAME_LEN);
        free(s);

        /* A depth beyond the array (a corrupt value) reads no further than the array. */
        n = (struct ts_file_name) { .depth = 1000 };
        for (int i = 0; i < TS_PATH_DEPTH; i++)
                strcpy(n.names[i], "d");
        s = file_name_join(&n);
        assert_int_equal(strlen(s), 2 * TS_PATH_DEPTH);
        free(s);
}

/* A path from /proc/PID/maps into BPF's form: file_name_join() gives it back; past TS_PATH_DEPTH
 * components the outermost go (truncated), a long component is cut, a relative path refused. */
static void test_file_name_split(void **state) {
        char deep[4 * TS_PATH_DEPTH + 1] = "", *s;
        struct ts_file_name n;

        assert_int_equal(file_name_split("/usr//lib/libc.so.6", &n), 0);
        assert_int_equal(n.depth, 3);
        assert_string_equal(n.names[0], "libc.so.6");
        s = file_name_join(&n);
        assert_string_equal(s, "/usr/lib/libc.so.6");
        free(s);

        assert_int_equal(file_name_split("/", &n), 0);
        assert_int_equal(n.depth, 0);
        for (int i = 0; i < TS_PATH_DEPTH + 2; i++)
                strcat(deep, i < 10 ? "/d0" : "/d1");
        assert_int_equal(file_name_split(deep, &n), 0);
        assert_true(n.depth == TS_PATH_DEPTH && n.truncated);
        s = file_name_join(&n);
        assert_int_equal(strncmp(s, ".../d0", 6), 0);
        assert_int_equal(strlen(s), 3 + 3 * TS_PATH_DEPTH);
        free(s);

        memset(deep, 'x', sizeof(deep) - 1);
        deep[0] = '/';
        assert_int_equal(file_name_split(deep, &n), 0);
        assert_int_equal(strlen(n.names[0]), TS_NAME_LEN - 1);
        assert_int_equal(file_name_split("usr/lib", &n), -EINVAL);
}

/* The kernel's s_dev (major << 20 | minor) is stat()'s st_dev: major 259, minor 1 (an NVMe
 * partition) and a minor above 255, which the two encodings place differently. */
static void test_dev_from_kernel(void **state) {
        assert_int_equal(dev_from_kernel((259U << 20) | 1), makedev(259, 1));
        assert_int_equal(dev_from_kernel((8U << 20) | 300), makedev(8, 300));
        assert_int_equal(major(dev_from_kernel((8U << 20) | 300)), 8);
        assert_int_equal(minor(dev_from_kernel((8U << 20) | 300)), 300);
}

/* A walked path seen from a root below the mount tree's: the longest suffix that is the file. */
static void test_file_path_visible(void **state) {
        char dir[] = "/tmp/trapstat-visible-XXXXXX", file[128], other[128], walked[256];
        struct stat st;
        FILE *f;

        assert_non_null(mkdtemp(dir));
        snprintf(file, sizeof(file), "%s/lib.so", dir);
        snprintf(other, sizeof(other), "%s/other.so", dir);
        assert_non_null(f = fopen(file, "w"));
        fclose(f);
        assert_non_null(f = fopen(other, "w"));
        fclose(f);
        assert_int_equal(stat(file, &st), 0);

        /* Seen as it is. */
        assert_ptr_equal(file_path_visible(file, st.st_dev, st.st_ino), file);
        /* Walked from a root above this one: the prefix is dropped. */
        snprintf(walked, sizeof(walked), "/no-such-root/srv/chroot%s", file);
        assert_string_equal(file_path_visible(walked, st.st_dev, st.st_ino), file);
        /* Another file at that path is not it: the walked path stays. */
        snprintf(walked, sizeof(walked), "/no-such-root%s", other);
        assert_string_equal(file_path_visible(walked, st.st_dev, st.st_ino), walked);
        /* Nothing there, or not a path. */
        assert_string_equal(file_path_visible("/no/such/file", st.st_dev, st.st_ino), "/no/such/file");
        assert_string_equal(file_path_visible(".../lib.so", st.st_dev, st.st_ino), ".../lib.so");
        assert_string_equal(file_path_visible("", st.st_dev, st.st_ino), "");

        assert_int_equal(unlink(file), 0);
        assert_int_equal(unlink(other), 0);
        assert_int_equal(rmdir(dir), 0);
}

/* Writes text to dir/name, creating dir/sys/kernel. */
static void put_file(const char *dir, const char *name, const char *text) {
        char path[256];
        FILE *f;

        snprintf(path, sizeof(path), "%s/sys", dir);
        (void) mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s/sys/kernel", dir);
        (void) mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        assert_non_null(f = fopen(path, "w"));
        fputs(text, f);
        fclose(f);
}

/* Whether the kernel keeps its delay accounting, from a fake proc root: the sysctl, read again at
 * each call (it changes at run time); without it (Linux before 5.14) the command line; a sysctl
 * that is not 0 or 1 is an error, never a guess; turning it on writes 1. */
static void test_delay_accounting_state(void **state) {
        char dir[] = "/tmp/trapstat-delayacct-XXXXXX", path[256];
        DelayAcct d;
        int proc_fd;

        assert_non_null(mkdtemp(dir));
        assert_true((proc_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0);
        /* No sysctl, no command line: an error, not a guess. */
        assert_int_equal(delayacct_open(proc_fd, &d), -ENOENT);
        put_file(dir, "cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/vda rw nodelayacct\n");
        assert_int_equal(delayacct_open(proc_fd, &d), 0);
        assert_int_equal(delayacct_state(&d), 0);
        delayacct_close(&d);
        /* A word that only contains it is not it. */
        put_file(dir, "cmdline", "root=/dev/vda xnodelayacct nodelayacctx\n");
        assert_int_equal(delayacct_open(proc_fd, &d), 0);
        assert_int_equal(delayacct_state(&d), 1);
        delayacct_close(&d);
        assert_int_equal(delayacct_enable(proc_fd), -ENOENT);

        put_file(dir, DELAYACCT_SYSCTL, "0\n");
        assert_int_equal(delayacct_open(proc_fd, &d), 0);
        assert_int_equal(delayacct_state(&d), 0);
        assert_int_equal(delayacct_enable(proc_fd), 0);
        assert_int_equal(delayacct_state(&d), 1);
        put_file(dir, DELAYACCT_SYSCTL, "0\n");
        assert_int_equal(delayacct_state(&d), 0);
        put_file(dir, DELAYACCT_SYSCTL, "2\n");
        assert_int_equal(delayacct_state(&d), -EBADMSG);
        put_file(dir, DELAYACCT_SYSCTL, "");
        assert_int_equal(delayacct_state(&d), -EBADMSG);
        put_file(dir, DELAYACCT_SYSCTL, "10\n");
        assert_int_equal(delayacct_state(&d), -EBADMSG);
        delayacct_close(&d);
        assert_int_equal(d.fd, -1);

        snprintf(path, sizeof(path), "%s/%s", dir, DELAYACCT_SYSCTL);
        assert_int_equal(unlink(path), 0);
        snprintf(path, sizeof(path), "%s/cmdline", dir);
        assert_int_equal(unlink(path), 0);
        snprintf(path, sizeof(path), "%s/sys/kernel", dir);
        assert_int_equal(rmdir(path), 0);
        snprintf(path, sizeof(path), "%s/sys", dir);
        assert_int_equal(rmdir(path), 0);
        close(proc_fd);
        assert_int_equal(rmdir(dir), 0);
        (void) state;
}

/* The names the collector keeps for processes' files, by shares: one user other than root takes
 * at most a quarter, all of them seven eighths, and root still has its reserve when they did. */
static void test_name_shares(void **state) {
        const size_t max = 8000;
        NameShares s = {};

        /* A hostile user fills their quarter and no more. */
        for (int i = 0; i < 20; i++)
                assert_int_equal(name_shares_charge(&s, 1000, 100, max), 0);
        assert_int_equal(name_shares_charge(&s, 1000, 1, max), -E2BIG);
        assert_int_equal(s.total, 2000);
        /* Three more users: 2000, 2000 and what is left of seven eighths (1000). */
        assert_int_equal(name_shares_charge(&s, 1001, 2000, max), 0);
        assert_int_equal(name_shares_charge(&s, 1002, 2000, max), 0);
        assert_int_equal(name_shares_charge(&s, 1003, 1001, max), -E2BIG);
        assert_int_equal(name_shares_charge(&s, 1003, 1000, max), 0);
        assert_int_equal(name_shares_charge(&s, 1004, 1, max), -E2BIG);
        /* root: the last eighth. */
        assert_int_equal(name_shares_charge(&s, 0, 1000, max), 0);
        assert_int_equal(name_shares_charge(&s, 0, 1, max), -E2BIG);
        assert_int_equal(s.total, max);
        /* Given back: another user may take it. */
        name_shares_release(&s, 1000, 2000);
        assert_int_equal(s.n_users, 4);
        assert_int_equal(name_shares_charge(&s, 1004, 1000, max), 0);
        assert_int_equal(name_shares_charge(&s, 1004, 1, max), -E2BIG); /* seven eighths again */
        name_shares_release(&s, 1004, 5000);                            /* no more than it held */
        assert_int_equal(s.total, 6000);
        name_shares_done(&s);
        (void) state;
}

/* The site hash's kinds: faults sampled with the daemon's period, traps and major faults exact;
 * time kept but for traps; a kind BPF never writes refused. */
static void test_site_kind_from_bpf(void **state) {
        SiteKind kind = _SITE_KIND_MAX;
        uint32_t period = 0;
        bool timed = true;

        assert_int_equal(site_kind_from_bpf(TS_SITE_TRAP, 512, &kind, &period, &timed), 0);
        assert_int_equal(kind, SITE_TRAP);
        assert_int_equal(period, 1);
        assert_false(timed);
        assert_int_equal(site_kind_from_bpf(TS_SITE_FAULT, 512, &kind, &period, &timed), 0);
        assert_int_equal(kind, SITE_FAULT);
        assert_int_equal(period, 512);
        assert_true(timed);
        timed = false;
        assert_int_equal(site_kind_from_bpf(TS_SITE_MAJOR, 512, &kind, &period, &timed), 0);
        assert_int_equal(kind, SITE_MAJOR);
        assert_int_equal(period, 1);
        assert_true(timed);
        assert_int_equal(site_kind_from_bpf(3, 512, &kind, &period, &timed), -EBADMSG);
        assert_int_equal(kind, SITE_MAJOR); /* untouched */
        assert_int_equal(site_kind_from_bpf(255, 512, &kind, &period, &timed), -EBADMSG);
        /* The numbers BPF writes are the data model's, which the store keeps. */
        assert_int_equal(TS_SITE_TRAP, SITE_TRAP);
        assert_int_equal(TS_SITE_FAULT, SITE_FAULT);
        assert_int_equal(TS_SITE_MAJOR, SITE_MAJOR);
        (void) state;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_site_kind_from_bpf),
                cmocka_unit_test(test_sources_parse),
                cmocka_unit_test(test_sources_choose),
                cmocka_unit_test(test_counters_delta),
                cmocka_unit_test(test_counters_major_cause),
                cmocka_unit_test(test_stall_account),
                cmocka_unit_test(test_counters_fault_time),
                cmocka_unit_test(test_minmaj_account),
                cmocka_unit_test(test_traps_account),
                cmocka_unit_test(test_lifecycle_event_decode),
                cmocka_unit_test(test_file_name_join),
                cmocka_unit_test(test_file_name_split),
                cmocka_unit_test(test_file_path_visible),
                cmocka_unit_test(test_dev_from_kernel),
                cmocka_unit_test(test_name_shares),
                cmocka_unit_test(test_delay_accounting_state),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
