/* SPDX-License-Identifier: MIT */
#include "query-pool.h"

#include <errno.h>
#include <event2/event.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "json-util.h"
#include "log.h"
#include "loop-turn.h"
#include "macro.h"
#include "time-util.h"

/* Memory the calls freed is given back once no call has run for this long. */
#define QUERY_TRIM_IDLE_USEC (5 * USEC_PER_SEC)

typedef enum JobState { JOB_QUEUED, JOB_RUNNING, JOB_DONE } JobState;

typedef struct QueryJob QueryJob;
struct QueryJob {
        QueryJob *next;    /* in the queue or in the done list */
        QueryPool *pool;
        VarlinkCall *call; /* kept; the event loop's alone */
        uid_t uid;
        uint64_t seq; /* the newest tick the database must hold first; 0: none */
        QueryRunFn run;
        void *args;
        void (*free_args)(void *args);
        JobState state;    /* under the pool's lock */
        /* Set by the event loop when the client went away, read by the progress handler. */
        bool cancelled;
        /* The worker's alone while it runs the job. */
        uint64_t steps;
        uint64_t deadline_usec; /* CLOCK_MONOTONIC */
        bool over_budget, over_time;
        int error;
        VarlinkReply *reply;
};

typedef struct Worker {
        QueryPool *pool;
        pthread_t thread;
        bool started;
        Store *reader; /* opened on the first job, reopened after a failure */
        QueryJob *job; /* the job it runs; under the pool's lock */
} Worker;

struct QueryPool {
        char *db_path, *boot_id;
        QuerySyncFn sync;
        void *sync_userdata;
        unsigned per_uid;
        uint64_t cost_limit, time_limit_usec;
        size_t max_reply_size;
        unsigned progress_every; /* steps between two progress callbacks: a tenth of the limit */

        int done_fd; /* eventfd: workers tell the event loop that jobs are done */
        struct event *done_event;

        pthread_mutex_t lock;
        pthread_cond_t wake;
        bool stopping;
        QueryJob *queue, **queue_tail; /* FIFO */
        QueryJob *done;
        Worker *workers;
        unsigned n_workers;
        bool trim_due; /* a job ran since memory was last given back */
};

static void job_free(QueryJob *j) {
        if (!j)
                return;
        if (j->free_args)
                j->free_args(j->args);
        varlink_reply_free(j->reply);
        varlink_call_unref(j->call);
        free(j);
}

/* ---- workers ---- */

static unsigned running_of_uid(const QueryPool *p, uid_t uid) {
        unsigned n = 0;

        for (unsigned i = 0; i < p->n_workers; i++)
                n += p->workers[i].job && p->workers[i].job->uid == uid;
        return n;
}

/* Unlinks j from the queue; under the lock. */
static void queue_unlink(QueryPool *p, QueryJob **link) {
        QueryJob *j = *link;

        *link = j->next;
        if (p->queue_tail == &j->next)
                p->queue_tail = link;
        j->next = NULL;
}

/* Takes the first queued job whose uid is below its share of the workers; under the lock. */
static QueryJob *queue_take(QueryPool *p) {
        for (QueryJob **link = &p->queue; *link; link = &(*link)->next) {
                QueryJob *j = *link;

                if (running_of_uid(p, j->uid) < p->per_uid) {
                        queue_unlink(p, link);
                        return j;
                }
        }
        return NULL;
}

static int on_progress(void *userdata) {
        QueryJob *j = userdata;

        if (__atomic_load_n(&j->cancelled, __ATOMIC_RELAXED))
                return 1;
        j->steps += j->pool->progress_every;
        if (j->steps >= j->pool->cost_limit) {
                j->over_budget = true;
                return 1;
        }
        /* A clock read per thousand steps (some 10 us of SQLite's work) costs nothing. */
        if (now_usec(CLOCK_MONOTONIC) >= j->deadline_usec) {
                j->over_time = true;
                return 1;
        }
        return 0;
}

static void worker_run(Worker *w, QueryJob *j) {
        QueryPool *p = w->pool;
        int r;

        if (!w->reader) {
                r = store_open_reader(p->db_path, p->boot_id, &w->reader);
                if (r < 0) {
                        j->error = r;
                        return;
                }
        }
        j->deadline_usec = now_usec(CLOCK_MONOTONIC) + p->time_limit_usec;
        /* The ticks drained before the call arrived are in its reply: the writer has them in the
         * database first. */
        if (j->seq > 0 && p->sync) {
                r = p->sync(p->sync_userdata, j->seq, j->deadline_usec, &j->cancelled);
                if (r == -ETIME)
                        j->over_time = true;
                if (r < 0) {
                        j->error = -ECANCELED;
                        return;
                }
        }
        store_set_progress_handler(w->reader, p->progress_every, on_progress, j);
        /* One snapshot per call, the only one (the store's queries begin none): what a reply says
         * of a process agrees with its counts, however many queries it takes. */
        r = store_snapshot_begin(w->reader);
        if (r >= 0) {
                r = j->run(w->reader, j->args, &j->reply);
                store_snapshot_end(w->reader);
        }
        store_set_progress_handler(w->reader, 0, NULL, NULL);
        /* Whatever went wrong, a fresh connection for the next query: the database may have been
         * moved aside and recreated meanwhile. */
        if (r < 0 && r != -ECANCELED && r != -EMSGSIZE)
                w->reader = store_free(w->reader);
        j->error = r;
}

static void *worker_main(void *userdata) {
        Worker *w = userdata;
        QueryPool *p = w->pool;
        const uint64_t one = 1;

        /* Every reply this worker builds stops at the limit (-EMSGSIZE): never built whole. */
        varlink_reply_set_thread_max_size(p->max_reply_size);
        /* Named, but not made background work (thread-util.h): a query is a client's answer,
         * and a batch worker woken on a busy machine waits for the scheduler's tick before it
         * runs (Top's median beside 10000 idle processes was 1.88 times that beside 1000,
         * against 1.06 times with normal workers; bench/README.md). */
        (void) pthread_setname_np(pthread_self(), "ts-query");
        pthread_mutex_lock(&p->lock);
        for (;;) {
                QueryJob *j = NULL;

                while (!p->stopping && !(j = queue_take(p))) {
                        struct timespec until;

                        if (!p->trim_due) {
                                pthread_cond_wait(&p->wake, &p->lock);
                                continue;
                        }
                        /* What the calls freed stays in the heap for the next ones (trapstatd.c,
                         * mallopt); once they have stopped for a while, one worker gives it back. */
                        until = usec_to_timespec(now_usec(CLOCK_MONOTONIC) + QUERY_TRIM_IDLE_USEC);
                        if (pthread_cond_timedwait(&p->wake, &p->lock, &until) == ETIMEDOUT && p->trim_due &&
                            !p->queue) {
                                p->trim_due = false;
                                pthread_mutex_unlock(&p->lock);
                                (void) malloc_trim(0);
                                pthread_mutex_lock(&p->lock);
                        }
                }
                if (p->stopping)
                        break;
                j->state = JOB_RUNNING;
                w->job = j;
                pthread_mutex_unlock(&p->lock);

                worker_run(w, j);

                pthread_mutex_lock(&p->lock);
                w->job = NULL;
                p->trim_due = true;
                j->state = JOB_DONE;
                j->next = p->done;
                p->done = j;
                /* Its uid has a slot free again: a job another worker skipped may go now. */
                pthread_cond_broadcast(&p->wake);
                /* An eventfd counter does not overflow at one write per query. */
                (void) !write(p->done_fd, &one, sizeof(one));
        }
        pthread_mutex_unlock(&p->lock);
        return NULL;
}

/* ---- the event loop's side ---- */

static VarlinkReply *reply_too_large(size_t limit) {
        VarlinkReply *reply = NULL;

        (void) varlink_reply_new_error("io.trapstat.ReplyTooLarge", json_pack("{s:I}", "limit", (json_int_t) limit),
                                       &reply);
        return reply;
}

static VarlinkReply *reply_for(QueryPool *p, QueryJob *j) {
        VarlinkReply *reply = NULL;
        char message[256];
        size_t room;

        if (j->over_budget) {
                (void) varlink_reply_new_error("io.trapstat.QueryTooExpensive",
                                               json_pack("{s:I}", "limit", (json_int_t) p->cost_limit), &reply);
                return reply;
        }
        if (j->over_time) {
                (void) varlink_reply_new_error("io.trapstat.QueryTooSlow",
                                               json_pack("{s:I}", "limitMsec", (json_int_t) (p->time_limit_usec / 1000)),
                                               &reply);
                return reply;
        }
        if (j->error == -EMSGSIZE)
                return reply_too_large(p->max_reply_size);
        if (j->error >= 0 && j->reply) {
                /* Its connection's share of the buffers must hold it now, or the reply is not
                 * queued: a user's connections cannot take more than their share between them. */
                room = varlink_call_reply_room(j->call);
                if (varlink_reply_size(j->reply) > room)
                        return reply_too_large(MIN(room, p->max_reply_size));
                return TAKE_PTR(j->reply);
        }
        snprintf(message, sizeof(message), "query failed: %s", strerror(j->error < 0 ? -j->error : EIO));
        (void) varlink_reply_new_error("io.trapstat.DatabaseError", json_pack("{s:s}", "message", message), &reply);
        return reply;
}

static void job_answer(QueryPool *p, QueryJob *j) {
        VarlinkReply *reply;
        int r;

        if (!j->cancelled) {
                reply = reply_for(p, j);
                r = reply ? varlink_call_send_reply(j->call, reply) : -ENOMEM;
                if (r < 0 && r != -ENOTCONN)
                        log_debug_errno(r, "Failed to send the reply of a query: %m");
        }
        /* Unanswered (out of memory), the call's connection is closed: the client is not left
         * waiting. */
        job_free(j);
}

static void on_done(evutil_socket_t fd, short what _unused_, void *userdata) {
        LOOP_TURN;
        QueryPool *p = userdata;
        QueryJob *done;
        uint64_t n;

        /* Resets the counter; nothing to read is only a spurious wakeup. */
        (void) !read(fd, &n, sizeof(n));

        pthread_mutex_lock(&p->lock);
        done = p->done;
        p->done = NULL;
        pthread_mutex_unlock(&p->lock);

        while (done) {
                QueryJob *j = done;

                done = j->next;
                job_answer(p, j);
        }
}

/* The client went away: a queued job goes at once, a running one is interrupted by its next
 * progress callback, a done one is dropped by on_done(). */
static void on_call_close(VarlinkCall *call _unused_, void *userdata) {
        QueryJob *j = userdata;
        QueryPool *p = j->pool;
        bool queued = false;

        pthread_mutex_lock(&p->lock);
        if (j->state == JOB_QUEUED) {
                for (QueryJob **link = &p->queue; *link; link = &(*link)->next)
                        if (*link == j) {
                                queue_unlink(p, link);
                                queued = true;
                                break;
                        }
        } else
                __atomic_store_n(&j->cancelled, true, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&p->lock);

        if (queued)
                job_free(j);
}

int query_pool_submit(QueryPool *p, VarlinkCall *call, uid_t uid, uint64_t seq, QueryRunFn run, void *args,
                      void (*free_args)(void *args)) {
        QueryJob *j;
        int r;

        j = calloc(1, sizeof(*j));
        if (!j) {
                if (free_args)
                        free_args(args);
                return -ENOMEM;
        }
        *j = (QueryJob) { .pool = p, .uid = uid, .seq = seq, .run = run, .args = args, .free_args = free_args };

        r = varlink_call_keep(call, on_call_close, j, &j->call);
        if (r < 0) {
                job_free(j);
                return r;
        }

        pthread_mutex_lock(&p->lock);
        j->state = JOB_QUEUED;
        *p->queue_tail = j;
        p->queue_tail = &j->next;
        pthread_mutex_unlock(&p->lock);
        /* One job, one worker; woken after the unlock, so that it does not wake only to wait for
         * the lock the loop holds. Each woken thread may take the loop's CPU until its slice ends
         * (the kernel's wakeup preemption): a broadcast woke every idle worker, all but one for
         * nothing. A worker that cannot take the job (its uid's share is running) is one no other
         * could: the job goes when a running one of that uid ends, by the worker that ran it. */
        pthread_cond_signal(&p->wake);
        return 0;
}

int query_pool_new(struct event_base *base, const QueryPoolConfig *config, QueryPool **ret) {
        QueryPool *p;
        int r;

        if (!base || !config || !config->db_path || !config->boot_id || !ret)
                return -EINVAL;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->done_fd = -1;
        p->queue_tail = &p->queue;
        p->sync = config->sync;
        p->sync_userdata = config->sync_userdata;
        p->per_uid = config->per_uid ?: QUERY_DEFAULT_PER_UID;
        p->cost_limit = config->cost_limit ?: QUERY_DEFAULT_COST_LIMIT;
        p->time_limit_usec = config->time_limit_usec ?: QUERY_DEFAULT_TIME_LIMIT_USEC;
        p->max_reply_size = config->max_reply_size ?: QUERY_DEFAULT_MAX_REPLY_SIZE;
        /* Often enough that the limit holds to a tenth, rarely enough to cost nothing. */
        p->progress_every = (unsigned) MAX(UINT64_C(1), MIN(UINT64_C(1000), p->cost_limit / 10));
        p->n_workers = config->threads ?: QUERY_DEFAULT_THREADS;
        pthread_mutex_init(&p->lock, NULL);
        pthread_condattr_t attr;
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&p->wake, &attr);
        pthread_condattr_destroy(&attr);

        p->db_path = strdup(config->db_path);
        p->boot_id = strdup(config->boot_id);
        p->workers = calloc(p->n_workers, sizeof(*p->workers));
        if (!p->db_path || !p->boot_id || !p->workers) {
                r = -ENOMEM;
                goto fail;
        }
        p->done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (p->done_fd < 0) {
                r = -errno;
                goto fail;
        }
        p->done_event = event_new(base, p->done_fd, EV_READ | EV_PERSIST, on_done, p);
        if (!p->done_event || event_add(p->done_event, NULL) < 0) {
                r = -ENOMEM;
                goto fail;
        }

        for (unsigned i = 0; i < p->n_workers; i++) {
                p->workers[i].pool = p;
                r = -pthread_create(&p->workers[i].thread, NULL, worker_main, &p->workers[i]);
                if (r < 0)
                        goto fail;
                p->workers[i].started = true;
        }

        *ret = p;
        return 0;
fail:
        query_pool_free(p);
        return r;
}

QueryPool *query_pool_free(QueryPool *p) {
        if (!p)
                return NULL;

        pthread_mutex_lock(&p->lock);
        p->stopping = true;
        for (unsigned i = 0; p->workers && i < p->n_workers; i++)
                if (p->workers[i].job)
                        __atomic_store_n(&p->workers[i].job->cancelled, true, __ATOMIC_RELAXED);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->lock);

        for (unsigned i = 0; p->workers && i < p->n_workers; i++)
                if (p->workers[i].started)
                        pthread_join(p->workers[i].thread, NULL);

        /* No worker runs any more: the lists are ours. Their calls end with their connections. */
        for (QueryJob *j = p->queue, *next; j; j = next) {
                next = j->next;
                job_free(j);
        }
        for (QueryJob *j = p->done, *next; j; j = next) {
                next = j->next;
                job_free(j);
        }
        for (unsigned i = 0; p->workers && i < p->n_workers; i++)
                store_free(p->workers[i].reader);
        free(p->workers);
        if (p->done_event)
                event_free(p->done_event);
        if (p->done_fd >= 0)
                close(p->done_fd);
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->lock);
        free(p->db_path);
        free(p->boot_id);
        free(p);
        return NULL;
}
