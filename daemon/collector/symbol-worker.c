/* SPDX-License-Identifier: MIT */
#include "symbol-worker.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array-util.h"
#include "proc-util.h"
#include "symbolize.h"
#include "thread-util.h"
#include "time-util.h"

#define BUDGET_WINDOW_USEC (60 * UINT64_C(1000000))
#define SYMBOL_WORKER_NICE 10

/* What one uid had parsed in its current minute. */
typedef struct UidBudget {
        uint32_t uid;
        uint64_t window_start; /* CLOCK_MONOTONIC µs */
        uint64_t files, bytes;
} UidBudget;

struct SymbolWorker {
        SymbolWorkerConfig config;
        pthread_t thread;
        bool started;

        /* Under lock. */
        pthread_mutex_t lock;
        pthread_cond_t wake;
        bool stop;
        SymbolRequest *queue; /* a ring of SYMBOL_WORKER_QUEUE_MAX */
        size_t head, n_queued;
        SymbolResult *results;
        size_t n_results, results_capacity;

        /* The thread's alone. */
        Symbolizer *symbolizer;
        UidBudget *budgets;
        size_t n_budgets, budgets_capacity;

        uint64_t refused, unreadable; /* atomic */
};

void symbol_results_free(SymbolResult *results, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(results[i].request.path);
                free(results[i].symbol);
        }
        free(results);
}

/* The uid's budget, its minute started again when it is over; NULL when out of memory. Old
 * windows are dropped while looking, so the array holds the uids of the last minute. */
static UidBudget *budget_of(SymbolWorker *w, uint32_t uid, uint64_t now) {
        UidBudget *found = NULL;

        for (size_t i = 0; i < w->n_budgets;) {
                UidBudget *b = &w->budgets[i];

                if (now - b->window_start >= BUDGET_WINDOW_USEC) {
                        *b = w->budgets[--w->n_budgets];
                        continue;
                }
                if (b->uid == uid)
                        found = b;
                i++;
        }
        if (found)
                return found;
        if (array_append((void **) &w->budgets, &w->n_budgets, &w->budgets_capacity, sizeof(UidBudget),
                         &(UidBudget) { .uid = uid, .window_start = now }) < 0)
                return NULL;
        return &w->budgets[w->n_budgets - 1];
}

/* The file of q, opened and proved to be the one named: through the process's mapping while it
 * lives, else by path. *ret_mapping_error says why the mapping was not used (0 when it was). */
static int open_file(SymbolWorker *w, const SymbolRequest *q, int *ret_mapping_error, int *ret_fd) {
        uint64_t max_size = symbolizer_max_file_size(w->symbolizer);
        _cleanup_close_ int fd = -1;
        int r = -ENODATA;

        if (q->map_end > q->map_start && w->config.proc_fd >= 0) {
                r = proc_open_map_file(w->config.proc_fd, q->pid, q->start_time, q->map_start, q->map_end, &fd);
                /* The mapping's own file: no change time to compare, a rename changes it and the
                 * descriptor is the file itself; the device and inode prove it is still the file
                 * BPF named, not another mapped at that address since. */
                if (r >= 0)
                        r = symbolizer_check_fd(fd, q->dev, q->ino, NULL, max_size);
                if (r >= 0 || r == -EFBIG) {
                        *ret_mapping_error = 0;
                        if (r >= 0)
                                *ret_fd = TAKE_FD(fd);
                        return r;
                }
        }
        *ret_mapping_error = r;
        /* A path BPF cut short ("...") or no path at all: nothing to open. */
        if (q->path[0] != '/')
                return -ENOENT;
        return symbolizer_open(q->path, q->dev, q->ino, &q->ctime, max_size, ret_fd);
}

static void symbolize_one(SymbolWorker *w, const SymbolRequest *q, SymbolResult *ret) {
        _cleanup_close_ int fd = -1;
        SymbolizedFrame frame = {};
        SymbolizerStats before, after;
        SymbolizerBudget left;
        UidBudget *b;
        int r;

        r = open_file(w, q, &ret->mapping_error, &fd);
        if (r < 0) {
                ret->error = r;
                /* Too large is about the file itself, like the lookup's answers; the rest says
                 * only that it could not be had now. */
                ret->unreadable = r != -EFBIG;
                if (ret->unreadable)
                        __atomic_add_fetch(&w->unreadable, 1, __ATOMIC_RELAXED);
                return;
        }
        b = budget_of(w, q->uid, now_usec(CLOCK_MONOTONIC));
        if (!b) {
                ret->error = -ENOMEM;
                return;
        }
        left = (SymbolizerBudget) { .files = w->config.files_per_minute - MIN(b->files, w->config.files_per_minute),
                                    .bytes = w->config.bytes_per_minute - MIN(b->bytes, w->config.bytes_per_minute) };
        symbolizer_get_stats(w->symbolizer, &before);
        r = symbolizer_lookup_fd(w->symbolizer, fd, q->offset, &left, &frame);
        symbolizer_get_stats(w->symbolizer, &after);
        b->files = w->config.files_per_minute - left.files;
        b->bytes = w->config.bytes_per_minute - left.bytes;
        if (r == -EDQUOT)
                __atomic_add_fetch(&w->refused, 1, __ATOMIC_RELAXED);
        /* libelf's copies of the tables and the candidates were freed: give the pages back, so
         * that one large table does not stay in the daemon's RSS. */
        if (after.loads != before.loads)
                (void) malloc_trim(0);
        ret->error = r < 0 ? r : 0;
        if (r >= 0) {
                ret->symbol = TAKE_PTR(frame.symbol);
                ret->symbol_offset = frame.offset;
        }
}

static void *worker_main(void *userdata) {
        SymbolWorker *w = userdata;

        /* Background work: on a busy machine the loop that ticks and answers goes first. A
         * refusal leaves it a normal thread, which works as well but may delay the loop more. */
        (void) thread_make_background("ts-symbols", SYMBOL_WORKER_NICE);
        pthread_mutex_lock(&w->lock);
        for (;;) {
                SymbolResult result = {};

                while (!w->stop && w->n_queued == 0)
                        pthread_cond_wait(&w->wake, &w->lock);
                if (w->stop)
                        break;
                result.request = w->queue[w->head];
                w->head = (w->head + 1) % SYMBOL_WORKER_QUEUE_MAX;
                w->n_queued--;
                pthread_mutex_unlock(&w->lock);

                symbolize_one(w, &result.request, &result);

                pthread_mutex_lock(&w->lock);
                /* Without memory the answer is lost: the collector asks again at the next count. */
                if (array_append((void **) &w->results, &w->n_results, &w->results_capacity, sizeof(result), &result) < 0) {
                        free(result.request.path);
                        free(result.symbol);
                }
        }
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

int symbol_worker_new(const SymbolWorkerConfig *config, SymbolWorker **ret) {
        _cleanup_(symbol_worker_freep) SymbolWorker *w = NULL;
        int r;

        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->wake, NULL);
        w->config = *config;
        if (w->config.files_per_minute == 0)
                w->config.files_per_minute = COLLECTOR_SYMBOL_FILES_PER_MINUTE_DEFAULT;
        if (w->config.bytes_per_minute == 0)
                w->config.bytes_per_minute = COLLECTOR_SYMBOL_BYTES_PER_MINUTE_DEFAULT;
        w->queue = calloc(SYMBOL_WORKER_QUEUE_MAX, sizeof(*w->queue));
        if (!w->queue)
                return -ENOMEM;
        /* The table read and the table kept are bounded alike: what one load costs in memory is
         * known whatever the file. */
        r = symbolizer_new(&(SymbolizerConfig) { .max_bytes = config->max_bytes, .max_read_bytes = config->max_bytes },
                           &w->symbolizer);
        if (r < 0)
                return r;
        r = -pthread_create(&w->thread, NULL, worker_main, w);
        if (r < 0)
                return r;
        w->started = true;
        *ret = TAKE_PTR(w);
        return 0;
}

SymbolWorker *symbol_worker_free(SymbolWorker *w) {
        if (!w)
                return NULL;
        if (w->started) {
                pthread_mutex_lock(&w->lock);
                w->stop = true;
                pthread_cond_signal(&w->wake);
                pthread_mutex_unlock(&w->lock);
                pthread_join(w->thread, NULL);
        }
        if (w->queue)
                for (size_t i = 0; i < w->n_queued; i++)
                        free(w->queue[(w->head + i) % SYMBOL_WORKER_QUEUE_MAX].path);
        free(w->queue);
        symbol_results_free(w->results, w->n_results);
        symbolizer_free(w->symbolizer);
        free(w->budgets);
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return NULL;
}

int symbol_worker_submit(SymbolWorker *w, const SymbolRequest *request) {
        SymbolRequest q = *request;
        int r = 0;

        q.path = strdup(request->path);
        if (!q.path)
                return -ENOMEM;
        pthread_mutex_lock(&w->lock);
        if (w->n_queued >= SYMBOL_WORKER_QUEUE_MAX)
                r = -EAGAIN;
        else {
                w->queue[(w->head + w->n_queued) % SYMBOL_WORKER_QUEUE_MAX] = q;
                w->n_queued++;
                pthread_cond_signal(&w->wake);
        }
        pthread_mutex_unlock(&w->lock);
        if (r < 0)
                free(q.path);
        return r;
}

void symbol_worker_take(SymbolWorker *w, SymbolResult **ret, size_t *ret_n) {
        pthread_mutex_lock(&w->lock);
        *ret = TAKE_PTR(w->results);
        *ret_n = w->n_results;
        w->n_results = w->results_capacity = 0;
        pthread_mutex_unlock(&w->lock);
}

uint64_t symbol_worker_refused(SymbolWorker *w) {
        return __atomic_load_n(&w->refused, __ATOMIC_RELAXED);
}

uint64_t symbol_worker_unreadable(SymbolWorker *w) {
        return __atomic_load_n(&w->unreadable, __ATOMIC_RELAXED);
}
