/* SPDX-License-Identifier: MIT */
#include "writer.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "proc-util.h"
#include "store-recover.h"
#include "thread-util.h"
#include "tick-batch.h"
#include "time-util.h"

/* Roll-ups and retention, in short steps between ticks: every MAINTENANCE_INTERVAL, and right
 * again (after the ticks waiting) while a step says more is pending. A database that cannot be
 * opened is tried again at the same interval. */
#define MAINTENANCE_INTERVAL_USEC (10 * USEC_PER_SEC)
#define MAINTENANCE_BUSY_USEC (100 * USEC_PER_MSEC)
/* A tick the database refused as locked is tried again after this. */
#define BUSY_RETRY_USEC (100 * USEC_PER_MSEC)
#define MAINTENANCE_SLICE_USEC (10 * USEC_PER_MSEC)
#define HOLD_POLL_USEC (20 * USEC_PER_MSEC)
#define SYNC_POLL_USEC (50 * USEC_PER_MSEC)
/* How long a forced checkpoint waits for the checkpoint thread's to end (checkpoint_forced()). */
#define CHECKPOINT_WAIT_USEC (2 * USEC_PER_SEC)
/* A transaction writes at most this many process rows with their text or an exit (store_flush_part()). The
 * WAL holds a transaction whole until it commits, so a tick of thousands of new processes (a storm
 * of short ones, each with its command line: about 1.3 KiB a process with a 1 KiB one) is written
 * in several, with a checkpoint between them when the WAL asks for one: the WAL stays near the
 * checkpoint's backstop (4/32 of the cap) instead of growing by a whole tick. Readers may see part
 * of such a tick for a moment, as they see the ticks of a 10 s bucket one by one. The samples of
 * processes whose rows are written already (a few bytes each in the tick's pending row) do not
 * count: 1000 of them are one transaction, not four, each with its own pending row and commit. */
#define ROWS_PER_TRANSACTION 256

struct Writer {
        WriterConfig config;
        char *db_path, *boot_id, *hold_file;
        pthread_t thread;
        bool started;

        /* The writer thread's alone once it runs. */
        Store *store; /* NULL while the database cannot be opened */
        int store_open_error, last_flush_error, last_maintenance_error;
        uint64_t maintenance_due;     /* CLOCK_MONOTONIC */
        uint64_t maintenance_started; /* of the step running */
        bool checkpoint_forced;       /* a commit left the WAL past the backstop */

        pthread_mutex_t lock;
        pthread_cond_t wake; /* the writer: a tick or the stop */
        pthread_cond_t done; /* writer_sync(): written moved */
        /* Under the lock. */
        TickBatch *queue, *tail;
        unsigned queued;
        uint64_t submitted, written;
        uint64_t wanted; /* the newest tick a query waits for (writer_sync()) */
        bool stopping;
        WriterStats stats;
};

static bool process_alive(uint32_t pid, uint64_t start_time, void *userdata) {
        const int *proc_fd = userdata;

        return proc_is_alive(*proc_fd, pid, start_time);
}

/* A maintenance step gives way between its parts to a query waiting for a tick, once it has run
 * for MAINTENANCE_SLICE_USEC: every step gets that far, so that a flood of queries cannot starve
 * the size cap. Ticks alone do not interrupt it: they wait in the queue (merged if need be),
 * nothing is lost. */
static bool urgent(void *userdata) {
        Writer *w = userdata;
        bool r;

        if (now_usec(CLOCK_MONOTONIC) < w->maintenance_started + MAINTENANCE_SLICE_USEC)
                return false;
        pthread_mutex_lock(&w->lock);
        r = w->wanted > w->written || w->stopping;
        pthread_mutex_unlock(&w->lock);
        return r;
}

/* The store's commits ask for checkpoints (store_set_checkpoint_handler()): the passive ones on
 * the checkpoint thread, beside the writer; a forced one (the WAL past the backstop: passive ones
 * are not keeping up with a storm of writes) on this thread, after the work item, so that no
 * write of ours keeps it from emptying the WAL. Readers hold it back at most
 * STORE_CHECKPOINT_FORCE_MSEC. */
static void on_checkpoint(void *userdata, bool force) {
        Writer *w = userdata;

        if (force)
                w->checkpoint_forced = true;
        else
                checkpointer_request(w->config.checkpointer, false);
}

static void checkpoint_forced(Writer *w) {
        int r;

        if (!w->checkpoint_forced)
                return;
        w->checkpoint_forced = false;
        r = store_checkpoint(w->db_path, true, NULL);
        /* The checkpoint thread's own was running (SQLite then refuses at once): on a machine whose
         * CPUs are busy it may not get to finish for a while, and each commit meanwhile adds to
         * the WAL (measured: 7.5 MiB under an 8 MiB cap beside a VM taking both CPUs). The writer
         * waits for it, writing nothing, and empties the WAL itself. */
        if (r == -EBUSY && checkpointer_wait_idle(w->config.checkpointer, CHECKPOINT_WAIT_USEC))
                r = store_checkpoint(w->db_path, true, NULL);
        if (r < 0 && r != -EBUSY)
                log_debug_errno(r, "Failed to checkpoint the write-ahead log of %s: %m", w->db_path);
}

static int writer_open_store(Writer *w) {
        _cleanup_free_ char *moved_to = NULL;
        size_t gone = 0;
        int r;

        r = store_open_recover(w->db_path, w->boot_id, now_usec(CLOCK_REALTIME), &w->store, &moved_to);
        if (r == -EPROTO)
                return log_error_errno(r, "Database %s was written by a newer trapstatd; refusing to touch it",
                                       w->db_path);
        if (r == -ELOOP)
                return log_error_errno(r, "Database %s is a symbolic link; refusing to follow it", w->db_path);
        if (r < 0) {
                if (r != w->store_open_error)
                        log_error_errno(r, "Failed to open database %s: %m; serving live counts only, retrying every %u s",
                                        w->db_path, (unsigned) (MAINTENANCE_INTERVAL_USEC / USEC_PER_SEC));
                w->store_open_error = r;
                return r;
        }
        w->store_open_error = 0;
        store_set_checkpoint_handler(w->store, store_checkpoint_pages(w->config.retention.max_bytes), on_checkpoint,
                                     w);
        store_set_max_cmdline(w->store, w->config.max_cmdline);
        store_set_maintain_yield(w->store, urgent, w);
        if (moved_to) {
                log_warning("Database %s is corrupt; moved it to %s and started a new one", w->db_path, moved_to);
                return 0;
        }
        r = store_mark_gone(w->store, process_alive, &w->config.proc_fd, &gone);
        if (r < 0)
                log_warning_errno(r, "Failed to mark processes that ended while trapstatd was not running: %s (%m)",
                                  store_errmsg(w->store));
        else if (gone > 0)
                log_info("%zu processes ended while trapstatd was not running; marked them exited", gone);
        return 0;
}

static void count_unsaved(Writer *w, size_t n) {
        pthread_mutex_lock(&w->lock);
        w->stats.unsaved_samples += n;
        pthread_mutex_unlock(&w->lock);
}

/* Writes the batch from where it stopped, ROWS_PER_TRANSACTION process rows a transaction.
 * -EBUSY: the database is locked, what was committed is kept in b->written and the rest is tried
 * again later; any other failure loses the rest (counted unsaved). */
static int write_batch(Writer *w, TickBatch *b) {
        const ProcessSample *samples;
        size_t n;
        int r;

        r = tick_batch_samples(b, &samples, &n);
        if (r < 0 || !w->store) {
                count_unsaved(w, b->n_entries - b->written);
                return 0;
        }
        /* Symbols the worker found for sites stored without one. Best effort: a site that counts
         * again carries its symbol with it. */
        if (b->n_fills > 0 && !b->fills_written) {
                r = store_sites_fill(w->store, b->fills, b->n_fills);
                if (r == -EBUSY)
                        return r;
                if (r < 0)
                        log_debug_errno(r, "Failed to write %zu symbols to %s: %s (%m)", b->n_fills, w->db_path,
                                        store_errmsg(w->store));
                b->fills_written = true;
        }
        while (b->written < n) {
                size_t k = 0;

                r = store_flush_part(w->store, b->now_usec, samples + b->written, n - b->written, ROWS_PER_TRANSACTION,
                                     &k);
                if (r == -EBUSY)
                        return r;
                if (r < 0) {
                        count_unsaved(w, n - b->written);
                        if (r != w->last_flush_error)
                                log_error_errno(r, "Failed to write %zu samples to %s: %s (%m); counting what is lost "
                                                   "until writing works again",
                                                n - b->written, w->db_path, store_errmsg(w->store));
                        break;
                }
                b->written += k;
                if (b->written < n)
                        checkpoint_forced(w);
        }
        if (r >= 0 && store_over_cap(w->store, &w->config.retention))
                /* A storm of processes fills the cap within seconds: the cap's step now, not at
                 * the next maintenance interval. */
                w->maintenance_due = 0;
        else if (r >= 0 && store_folding(w->store))
                /* The last bucket's ticks, a slice a step, between the ticks. */
                w->maintenance_due = MIN(w->maintenance_due, now_usec(CLOCK_MONOTONIC) + MAINTENANCE_BUSY_USEC);
        if (r >= 0 && w->last_flush_error < 0)
                log_notice("Writing to %s again; %" PRIu64 " samples could not be stored meanwhile", w->db_path,
                           writer_stats(w).unsaved_samples);
        w->last_flush_error = r < 0 ? r : 0;
        return 0;
}

static void maintain(Writer *w) {
        bool more = false;
        int r;

        /* Without a database, retry opening it; nothing to maintain until then. */
        if (!w->store && writer_open_store(w) >= 0)
                log_notice("Opened database %s; writing history again, %" PRIu64 " samples could not be stored meanwhile",
                           w->db_path, writer_stats(w).unsaved_samples);
        if (w->store) {
                w->maintenance_started = now_usec(CLOCK_MONOTONIC);
                r = store_maintain(w->store, now_usec(CLOCK_REALTIME), &w->config.retention, &more);
                if (r < 0 && r != w->last_maintenance_error)
                        log_error_errno(r, "Failed to roll up or expire history in %s: %s", w->db_path,
                                        store_errmsg(w->store));
                w->last_maintenance_error = r < 0 ? r : 0;
                more = more && r >= 0;
        }
        w->maintenance_due = now_usec(CLOCK_MONOTONIC) + (more ? MAINTENANCE_BUSY_USEC : MAINTENANCE_INTERVAL_USEC);
}

static bool held(Writer *w) {
        return w->hold_file && !w->stopping && access(w->hold_file, F_OK) == 0;
}

static void wait_until(pthread_cond_t *cond, pthread_mutex_t *lock, uint64_t usec) {
        struct timespec ts = usec_to_timespec(usec);

        (void) pthread_cond_timedwait(cond, lock, &ts);
}

/* What the writer does next, under the lock: 1 a batch (taken from the queue into *ret), 2
 * maintenance, 0 stop. Waits until one of them is due. */
static int next_work(Writer *w, TickBatch **ret) {
        for (;;) {
                uint64_t now = now_usec(CLOCK_MONOTONIC);

                if (held(w)) {
                        wait_until(&w->wake, &w->lock, now + HOLD_POLL_USEC);
                        continue;
                }
                /* A step that is due goes before the ticks waiting, as the loop's timer did
                 * between two ticks: a storm's ticks, written one after the other, would keep the
                 * size cap's step from ever running. Each step ends within a few transactions and
                 * the next is at least MAINTENANCE_BUSY_USEC later. */
                if (!w->stopping && now >= w->maintenance_due)
                        return 2;
                if (w->queue) {
                        TickBatch *b = w->queue;

                        w->queue = b->next;
                        if (!w->queue)
                                w->tail = NULL;
                        b->next = NULL;
                        w->queued--;
                        *ret = b;
                        return 1;
                }
                if (w->stopping)
                        return 0;
                wait_until(&w->wake, &w->lock, w->maintenance_due);
        }
}

/* A batch the database refused as locked goes back to the head of the queue. */
static void requeue(Writer *w, TickBatch *b) {
        b->next = w->queue;
        w->queue = b;
        if (!w->tail)
                w->tail = b;
        w->queued++;
}

static void *writer_main(void *userdata) {
        Writer *w = userdata;
        /* Background work (thread-util.h). The checkpointer and the symbol worker ask the same
         * and would be refused alike: the writer alone says so, one line and not three. */
        int k = thread_make_background("ts-writer", 0);

        if (k < 0)
                log_warning_errno(k, "Failed to make the writer a SCHED_BATCH thread, the event loop may wait "
                                     "behind the background threads on a busy machine: %m");
        pthread_mutex_lock(&w->lock);
        for (;;) {
                TickBatch *b = NULL;
                int work = next_work(w, &b), r = 0;

                if (work == 0)
                        break;
                pthread_mutex_unlock(&w->lock);
                uint64_t started = now_usec(CLOCK_MONOTONIC);
                if (work == 1)
                        r = write_batch(w, b);
                else if (work == 2)
                        maintain(w);
                checkpoint_forced(w);
                uint64_t bytes = w->store ? store_size_bytes(w->store) : 0;
                uint64_t took = now_usec(CLOCK_MONOTONIC) - started;

                pthread_mutex_lock(&w->lock);
                *(work == 1 ? &w->stats.write_usec : &w->stats.maintain_usec) += took;
                w->stats.longest_step_usec = MAX(w->stats.longest_step_usec, took);
                if (r == -EBUSY) {
                        requeue(w, b);
                        wait_until(&w->wake, &w->lock, now_usec(CLOCK_MONOTONIC) + BUSY_RETRY_USEC);
                } else if (b) {
                        w->written = b->seq;
                        tick_batch_free(b);
                        pthread_cond_broadcast(&w->done);
                }
                w->stats.available = w->store != NULL;
                w->stats.failing = w->last_flush_error < 0;
                w->stats.database_bytes = bytes;
        }
        pthread_cond_broadcast(&w->done);
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

int writer_new(const WriterConfig *config, Writer **ret) {
        pthread_condattr_t attr;
        Writer *w;
        int r;

        w = calloc(1, sizeof(*w));
        if (!w)
                return log_error_errno(ENOMEM, "Out of memory");
        w->config = *config;
        w->config.max_queue = config->max_queue ?: WRITER_DEFAULT_QUEUE;
        pthread_mutex_init(&w->lock, NULL);
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&w->wake, &attr);
        pthread_cond_init(&w->done, &attr);
        pthread_condattr_destroy(&attr);
        w->db_path = strdup(config->db_path);
        w->boot_id = strdup(config->boot_id);
        if (!w->db_path || !w->boot_id) {
                writer_free(w);
                return log_error_errno(ENOMEM, "Out of memory");
        }
        /* A database newer than us is left alone; any other failure (a full disk, say) leaves
         * the live view working while the writer retries. */
        r = writer_open_store(w);
        if (r == -EPROTO || r == -ELOOP) {
                writer_free(w);
                return r;
        }
        w->stats.available = w->store != NULL;
        w->stats.database_bytes = w->store ? store_size_bytes(w->store) : 0;
        r = -pthread_create(&w->thread, NULL, writer_main, w);
        if (r < 0) {
                writer_free(w);
                return log_error_errno(r, "Failed to start the writer thread: %m");
        }
        w->started = true;
        *ret = w;
        return 0;
}

Writer *writer_free(Writer *w) {
        if (!w)
                return NULL;
        if (w->started) {
                pthread_mutex_lock(&w->lock);
                w->stopping = true;
                pthread_cond_signal(&w->wake);
                pthread_mutex_unlock(&w->lock);
                pthread_join(w->thread, NULL);
        }
        /* Unsaved only when the thread never ran. */
        while (w->queue) {
                TickBatch *b = w->queue;

                w->queue = b->next;
                tick_batch_free(b);
        }
        store_free(w->store);
        pthread_cond_destroy(&w->wake);
        pthread_cond_destroy(&w->done);
        pthread_mutex_destroy(&w->lock);
        free(w->db_path);
        free(w->boot_id);
        free(w->hold_file);
        free(w);
        return NULL;
}

int64_t writer_submit(Writer *w, uint64_t now_usec, const ProcessSample *samples, size_t n, const SiteCount *fills,
                      size_t n_fills) {
        TickBatch *b = NULL;
        int64_t seq;
        int r;

        pthread_mutex_lock(&w->lock);
        if (w->queued >= w->config.max_queue && w->tail && w->tail->written == 0 && !w->tail->fills_written) {
                /* The tail is still queued (the writer takes batches from the head) and stays
                 * there while the lock is held. */
                seq = (int64_t) ++w->submitted;
                r = tick_batch_merge(w->tail, (uint64_t) seq, now_usec, samples, n, fills, n_fills);
                w->stats.merged_ticks++;
                if (r < 0)
                        w->stats.unsaved_samples += n;
                pthread_mutex_unlock(&w->lock);
                return r < 0 ? r : seq;
        }
        pthread_mutex_unlock(&w->lock);

        /* The copy outside the lock: only this thread adds to the queue. */
        r = tick_batch_new(0, now_usec, samples, n, fills, n_fills, &b);

        pthread_mutex_lock(&w->lock);
        if (r < 0) {
                /* Not queued, and no sequence number: nothing waits for it. */
                w->stats.unsaved_samples += n;
                pthread_mutex_unlock(&w->lock);
                return r;
        }
        seq = (int64_t) ++w->submitted;
        b->seq = (uint64_t) seq;
        if (w->tail)
                w->tail->next = b;
        else
                w->queue = b;
        w->tail = b;
        w->queued++;
        pthread_cond_signal(&w->wake);
        pthread_mutex_unlock(&w->lock);
        return seq;
}

uint64_t writer_seq(Writer *w) {
        uint64_t seq;

        pthread_mutex_lock(&w->lock);
        seq = w->submitted;
        pthread_mutex_unlock(&w->lock);
        return seq;
}

int writer_sync(Writer *w, uint64_t seq, uint64_t deadline_usec, const bool *cancelled) {
        int r = 0;

        pthread_mutex_lock(&w->lock);
        while (w->written < seq) {
                uint64_t now = now_usec(CLOCK_MONOTONIC);

                if (w->stopping || (cancelled && __atomic_load_n(cancelled, __ATOMIC_RELAXED))) {
                        r = -ECANCELED;
                        break;
                }
                if (now >= deadline_usec) {
                        r = -ETIME;
                        break;
                }
                /* Seen by a maintenance step, which then gives way to the ticks (urgent()). */
                w->wanted = MAX(w->wanted, seq);
                wait_until(&w->done, &w->lock, MIN(deadline_usec, now + SYNC_POLL_USEC));
        }
        pthread_mutex_unlock(&w->lock);
        return r;
}

WriterStats writer_stats(Writer *w) {
        WriterStats s;

        pthread_mutex_lock(&w->lock);
        s = w->stats;
        s.queued = w->queued;
        pthread_mutex_unlock(&w->lock);
        return s;
}

void writer_set_hold_file(Writer *w, const char *path) {
        char *p = path ? strdup(path) : NULL;

        pthread_mutex_lock(&w->lock);
        free(w->hold_file);
        w->hold_file = p;
        pthread_mutex_unlock(&w->lock);
}
