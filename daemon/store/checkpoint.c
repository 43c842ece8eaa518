/* SPDX-License-Identifier: MIT */
#include "checkpoint.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "store.h"
#include "thread-util.h"
#include "time-util.h"

struct Checkpointer {
        char *path;
        pthread_t thread;
        bool started;
        pthread_mutex_t lock;
        pthread_cond_t wake, idle; /* idle: a checkpoint ended (CLOCK_MONOTONIC) */
        bool due, force, stopping, running; /* under the lock */
};

static void *checkpointer_main(void *userdata) {
        Checkpointer *c = userdata;
        int last_error = 0;

        /* thread-util.h; the writer logs a refusal. */
        (void) thread_make_background("ts-checkpoint", 0);
        pthread_mutex_lock(&c->lock);
        for (;;) {
                int r;

                while (!c->due && !c->stopping)
                        pthread_cond_wait(&c->wake, &c->lock);
                bool force = c->force;

                if (!c->due)
                        break;
                c->due = c->force = false;
                c->running = true;
                pthread_mutex_unlock(&c->lock);

                /* Busy: a forced checkpoint found readers or the writer past its wait; the next
                 * request retries. */
                r = store_checkpoint(c->path, force, NULL);
                if (r < 0 && r != -EBUSY && r != last_error)
                        log_warning_errno(r, "Failed to checkpoint the write-ahead log of %s: %m", c->path);
                last_error = r < 0 ? r : 0;

                pthread_mutex_lock(&c->lock);
                c->running = false;
                pthread_cond_broadcast(&c->idle);
        }
        pthread_mutex_unlock(&c->lock);
        return NULL;
}

int checkpointer_new(const char *path, Checkpointer **ret) {
        pthread_condattr_t attr;
        Checkpointer *c;
        int r;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        pthread_mutex_init(&c->lock, NULL);
        pthread_cond_init(&c->wake, NULL);
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&c->idle, &attr);
        pthread_condattr_destroy(&attr);
        c->path = strdup(path);
        if (!c->path) {
                checkpointer_free(c);
                return -ENOMEM;
        }
        r = -pthread_create(&c->thread, NULL, checkpointer_main, c);
        if (r < 0) {
                checkpointer_free(c);
                return r;
        }
        c->started = true;
        *ret = c;
        return 0;
}

void checkpointer_request(void *userdata, bool force) {
        Checkpointer *c = userdata;

        pthread_mutex_lock(&c->lock);
        c->force = c->force || force;
        if (!c->due) {
                c->due = true;
                pthread_cond_signal(&c->wake);
        }
        pthread_mutex_unlock(&c->lock);
}

bool checkpointer_wait_idle(Checkpointer *c, uint64_t timeout_usec) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + timeout_usec;
        bool waited;

        if (!c)
                return false;
        pthread_mutex_lock(&c->lock);
        waited = c->running;
        while (c->running && now_usec(CLOCK_MONOTONIC) < deadline) {
                struct timespec ts = usec_to_timespec(deadline);

                (void) pthread_cond_timedwait(&c->idle, &c->lock, &ts);
        }
        pthread_mutex_unlock(&c->lock);
        return waited;
}

Checkpointer *checkpointer_free(Checkpointer *c) {
        if (!c)
                return NULL;
        if (c->started) {
                pthread_mutex_lock(&c->lock);
                c->stopping = true;
                pthread_cond_signal(&c->wake);
                pthread_mutex_unlock(&c->lock);
                pthread_join(c->thread, NULL);
        }
        pthread_cond_destroy(&c->wake);
        pthread_cond_destroy(&c->idle);
        pthread_mutex_destroy(&c->lock);
        free(c->path);
        free(c);
        return NULL;
}
