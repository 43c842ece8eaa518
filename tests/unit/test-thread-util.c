/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "thread-util.h"

/* What /proc says of one thread of this process: its name, policy and nice value. */
typedef struct Seen {
        char comm[16];
        int policy, nice;
} Seen;

static Seen seen_of(pid_t tid) {
        char path[64], stat[1024], *close_paren;
        Seen s = {};
        FILE *f;
        size_t n;

        snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int) tid);
        f = fopen(path, "re");
        assert_non_null(f);
        n = fread(stat, 1, sizeof(stat) - 1, f);
        fclose(f);
        stat[n] = '\0';
        close_paren = strrchr(stat, ')');
        assert_non_null(close_paren);
        *close_paren = '\0';
        snprintf(s.comm, sizeof(s.comm), "%s", strchr(stat, '(') + 1);
        /* Fields from 3 (state) on: nice is field 19, policy field 41. */
        {
                char *field = close_paren + 2, *save = NULL;
                int i = 3;

                for (char *t = strtok_r(field, " ", &save); t; t = strtok_r(NULL, " ", &save), i++) {
                        if (i == 19)
                                s.nice = atoi(t);
                        if (i == 41)
                                s.policy = atoi(t);
                }
        }
        return s;
}

typedef struct Run {
        const char *name;
        int nice, result;
        Seen seen;
} Run;

static void *background(void *userdata) {
        Run *run = userdata;

        run->result = thread_make_background(run->name, run->nice);
        run->seen = seen_of(gettid());
        return NULL;
}

static Run run_thread(const char *name, int nice) {
        Run run = { .name = name, .nice = nice };
        pthread_t t;

        assert_int_equal(pthread_create(&t, NULL, background, &run), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
        return run;
}

static void test_batch_nice_and_name(void **state) {
        Run run = run_thread("ts-test", 7);
        Seen main_thread;

        (void) state;
        assert_int_equal(run.result, 0);
        assert_string_equal(run.seen.comm, "ts-test");
        assert_int_equal(run.seen.policy, SCHED_BATCH);
        assert_int_equal(run.seen.nice, 7);
        /* The thread's own settings: the thread that started it keeps its policy and nice. */
        main_thread = seen_of(gettid());
        assert_int_equal(main_thread.policy, SCHED_OTHER);
        assert_int_equal(main_thread.nice, getpriority(PRIO_PROCESS, (id_t) gettid()));
        assert_int_not_equal(main_thread.nice, 7);
}

static void test_nice_zero_keeps_the_weight(void **state) {
        int before = getpriority(PRIO_PROCESS, (id_t) gettid());
        Run run = run_thread("ts-test-0", 0);

        (void) state;
        assert_int_equal(run.result, 0);
        assert_int_equal(run.seen.policy, SCHED_BATCH);
        /* A new thread starts at its creator's nice value; 0 asks no change. */
        assert_int_equal(run.seen.nice, before);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_batch_nice_and_name),
                cmocka_unit_test(test_nice_zero_keeps_the_weight),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
