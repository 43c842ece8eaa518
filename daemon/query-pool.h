/* SPDX-License-Identifier: MIT */
#pragma once

/* Queries off the event loop. A small pool of worker threads, each with its own read-only
 * connection to the database (store_open_reader()), answers the calls that read the history
 * (Top, History, UnitHistory, Sites, ListProcesses, Traps). The event loop only hands a call
 * over and sends the reply a worker formatted, so ticks, Watch and cheap calls never wait for a
 * query.
 *
 * Fairness and cost: at most per_uid queries of one uid run at once (the rest of that uid's
 * wait while other users' queries go first), and every query stops after cost_limit SQLite
 * virtual machine steps with io.trapstat.QueryTooExpensive, or after time_limit_usec of wall time
 * with io.trapstat.QueryTooSlow. A reply stops growing at max_reply_size (its text is built in the
 * worker, so its size is known there, for nothing) and is answered io.trapstat.ReplyTooLarge; so
 * is a reply larger than what its connection's share of the server's buffers has room for when it
 * is done (varlink_call_reply_room()). A query whose client went away is dropped from the queue,
 * or interrupted if it runs. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "store.h"
#include "varlink.h"

struct event_base;

#define QUERY_DEFAULT_THREADS 4U
#define QUERY_DEFAULT_PER_UID 2U
/* About 2 s of one core here (100 million steps a second); Top over a day or a year of a
 * database of 1000 processes takes 1 to 4 million. */
#define QUERY_DEFAULT_COST_LIMIT UINT64_C(200000000)
/* Five times what the default cost limit takes alone: a query that is slow for another reason
 * (a busy machine, a cold cache) still gets its answer. */
#define QUERY_DEFAULT_TIME_LIMIT_USEC (10U * 1000000U)
/* A Top of 10000 rows of ordinary command lines is 4 to 6 MiB. */
#define QUERY_DEFAULT_MAX_REPLY_SIZE (8U * 1024U * 1024U)

/* Waits until the database holds every tick up to seq (writer_sync()); -ETIME at deadline_usec
 * (CLOCK_MONOTONIC), -ECANCELED when *cancelled turns true. */
typedef int (*QuerySyncFn)(void *userdata, uint64_t seq, uint64_t deadline_usec, const bool *cancelled);

typedef struct QueryPoolConfig {
        const char *db_path, *boot_id;
        QuerySyncFn sync; /* NULL: queries never wait */
        void *sync_userdata;
        unsigned threads;    /* 0: default */
        unsigned per_uid;    /* 0: default */
        uint64_t cost_limit; /* virtual machine steps; 0: default */
        uint64_t time_limit_usec; /* wall time of one query; 0: default */
        size_t max_reply_size;    /* bytes; 0: default */
} QueryPoolConfig;

/* Runs in a worker with that worker's reader. Returns 0 and the complete reply (a normal one or
 * an error of the interface) in *ret, or a negative errno: -ECANCELED when the progress handler
 * stopped it, else the pool answers io.trapstat.DatabaseError with the errno's text. */
typedef int (*QueryRunFn)(Store *reader, void *args, VarlinkReply **ret);

typedef struct QueryPool QueryPool;

int query_pool_new(struct event_base *base, const QueryPoolConfig *config, QueryPool **ret);
/* Stops the workers (running queries are interrupted) and drops the queued calls. */
QueryPool *query_pool_free(QueryPool *p);

/* Answers call (the handler's, not kept yet) from a worker: run(reader, args), once the
 * database holds every tick up to seq (0: at once; the wait counts in the query's time limit).
 * args is freed with free_args when the query is done or dropped, also when this fails. */
int query_pool_submit(QueryPool *p, VarlinkCall *call, uid_t uid, uint64_t seq, QueryRunFn run, void *args,
                      void (*free_args)(void *args));
