/* SPDX-License-Identifier: MIT */
#include "thread-util.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

int thread_make_background(const char *name, int nice) {
        struct sched_param param = { .sched_priority = 0 };
        int r = 0;

        (void) pthread_setname_np(pthread_self(), name);
        /* pid 0: the calling thread, whose policy is its own. */
        if (sched_setscheduler(0, SCHED_BATCH, &param) < 0)
                r = -errno;
        if (nice > 0 && setpriority(PRIO_PROCESS, (id_t) gettid(), nice) < 0 && r == 0)
                r = -errno;
        return r;
}
