/* SPDX-License-Identifier: MIT */
#pragma once

/* One typed function per method of io.trapstat (schema/io.trapstat.varlink): a request struct in,
 * a reply struct out, the error as a value.
 *
 * Every call returns 0 and fills *ret (free it with its _done() function); TRAPSTAT_ERROR_REPLY
 * (-EBADR) and the daemon's error in *ret_error (name and parameters, trapstat_error_message()
 * for a line of text); or another negative errno as trapstat_client_call() does: -EINVAL for a
 * request the IDL does not allow (a pid of 0), -ECONNRESET, -ETIMEDOUT, -EBADMSG, -ENOMEM.
 * *ret is written only on success. ret_error may be NULL.
 *
 * A reply keeps the whole reply object (json, owned) for the nested parts a C struct would only
 * copy (rows, samples, counters): the formatters read them from there, and --json prints it. The
 * members the callers decide on are typed; a member a reply lacks reads as 0 (or -1 where said),
 * as the formatters, which check what they print, expect.
 *
 * Requests leave a member to the daemon's default with 0 (NULL for text) unless said otherwise.
 * Every method has a trapstat_*_parameters() too, the call's parameters as a new object, for
 * tests and for trapstat call. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "counters.h"
#include "filter.h"
#include "sites.h"
#include "trapstat-client.h"

/* ---- GetStatus ---- */

typedef struct TrapstatStatusReply {
        json_t *json;
        const char *version, *arch; /* NULL when absent */
        uint64_t tick_usec, processes_tracked, drops, fault_sample_period;
} TrapstatStatusReply;

int trapstat_get_status(TrapstatClient *c, TrapstatStatusReply *ret, TrapstatError *ret_error);
void trapstat_status_reply_done(TrapstatStatusReply *r);

/* ---- Top ---- */

typedef struct TrapstatTopRequest {
        uint64_t window_sec;          /* 0: the daemon's default (60) */
        const char *sort_by;          /* a SortKey's name; NULL: "user" */
        unsigned limit;               /* 0: the daemon's default (20) */
        const ProcessFilter *filter;  /* NULL: every process; its container too */
} TrapstatTopRequest;

typedef struct TrapstatTopReply {
        json_t *json;
        json_t *rows;              /* borrowed from json: []ProcessCounters */
        int64_t other_processes;   /* -1: an older daemon did not say */
} TrapstatTopReply;

int trapstat_top_parameters(const TrapstatTopRequest *q, json_t **ret);
int trapstat_top(TrapstatClient *c, const TrapstatTopRequest *q, TrapstatTopReply *ret, TrapstatError *ret_error);
void trapstat_top_reply_done(TrapstatTopReply *r);

/* ---- History ---- */

typedef struct TrapstatHistoryRequest {
        uint32_t pid;              /* required */
        int64_t start_time;        /* one incarnation of the pid; -1: the newest */
        uint64_t since_usec, until_usec;
        uint64_t resolution_sec;
} TrapstatHistoryRequest;

typedef struct TrapstatHistoryReply {
        json_t *json;
        json_t *process, *total, *samples; /* borrowed from json */
        uint64_t start_time;               /* of process */
} TrapstatHistoryReply;

int trapstat_history_parameters(const TrapstatHistoryRequest *q, json_t **ret);
int trapstat_history(TrapstatClient *c, const TrapstatHistoryRequest *q, TrapstatHistoryReply *ret,
                     TrapstatError *ret_error);
void trapstat_history_reply_done(TrapstatHistoryReply *r);

/* ---- UnitHistory ---- */

typedef struct TrapstatUnitHistoryRequest {
        const char *unit;          /* required: a unit or a glob */
        uint64_t since_usec, until_usec;
        uint64_t resolution_sec;
} TrapstatUnitHistoryRequest;

typedef struct TrapstatUnitHistoryReply {
        json_t *json;
        json_t *units, *total, *samples; /* borrowed from json */
        uint64_t processes, running;
} TrapstatUnitHistoryReply;

int trapstat_unit_history_parameters(const TrapstatUnitHistoryRequest *q, json_t **ret);
int trapstat_unit_history(TrapstatClient *c, const TrapstatUnitHistoryRequest *q, TrapstatUnitHistoryReply *ret,
                          TrapstatError *ret_error);
void trapstat_unit_history_reply_done(TrapstatUnitHistoryReply *r);

/* ---- ContainerHistory ---- */

typedef struct TrapstatContainerHistoryRequest {
        const char *container;     /* required: a name, an id or the start of an id */
        uint64_t since_usec, until_usec;
        uint64_t resolution_sec;
} TrapstatContainerHistoryRequest;

typedef struct TrapstatContainerHistoryReply {
        json_t *json;
        json_t *containers, *total, *samples; /* borrowed from json */
        uint64_t processes, running;
} TrapstatContainerHistoryReply;

int trapstat_container_history_parameters(const TrapstatContainerHistoryRequest *q, json_t **ret);
int trapstat_container_history(TrapstatClient *c, const TrapstatContainerHistoryRequest *q,
                               TrapstatContainerHistoryReply *ret, TrapstatError *ret_error);
void trapstat_container_history_reply_done(TrapstatContainerHistoryReply *r);

/* ---- UnitTotals ---- */

typedef struct TrapstatUnitTotalsRequest {
        unsigned limit;
} TrapstatUnitTotalsRequest;

typedef struct TrapstatUnitTotalsReply {
        json_t *json;
        json_t *units, *total; /* borrowed from json */
        uint64_t since_usec, other_units;
        bool has_since;        /* sinceUsec was an integer */
} TrapstatUnitTotalsReply;

int trapstat_unit_totals_parameters(const TrapstatUnitTotalsRequest *q, json_t **ret);
int trapstat_unit_totals(TrapstatClient *c, const TrapstatUnitTotalsRequest *q, TrapstatUnitTotalsReply *ret,
                         TrapstatError *ret_error);
void trapstat_unit_totals_reply_done(TrapstatUnitTotalsReply *r);

/* ---- Sites ---- */

typedef struct TrapstatSitesQuery {
        uint32_t pid;        /* required */
        uint64_t start_time; /* one incarnation of the pid; 0: the newest */
        uint64_t since_usec; /* 0: from the start of its history */
        uint64_t until_usec; /* 0: up to now */
        int kind;            /* a SiteKind; -1: every kind */
        unsigned limit;      /* at most this many sites; 0: the daemon's default (20) */
} TrapstatSitesQuery;

typedef struct TrapstatSitesReply {
        json_t *json;
        json_t *process;     /* borrowed from json */
        SiteCount *sites;    /* read by site_count_from_json(), in the reply's order */
        size_t n_sites;
        int64_t other_sites; /* -1: an older daemon did not say */
} TrapstatSitesReply;

int trapstat_sites_parameters(const TrapstatSitesQuery *q, json_t **ret);
/* A reply whose sites are not an array of sites is -EBADMSG. An older trapstatd answers with the
 * error TRAPSTAT_ERROR_METHOD_NOT_FOUND. */
int trapstat_sites(TrapstatClient *c, const TrapstatSitesQuery *q, TrapstatSitesReply *ret, TrapstatError *ret_error);
void trapstat_sites_reply_done(TrapstatSitesReply *r);
/* The sites of a Sites reply, in its order: 0, a malloc'd array (NULL when there are none; free
 * it with site_counts_free()) and its length; -EBADMSG when the reply has no array "sites" or a
 * site is malformed; -ENOMEM. */
int trapstat_sites_from_reply(json_t *reply, SiteCount **ret, size_t *ret_n);

/* ---- ListProcesses ---- */

typedef struct TrapstatListProcessesRequest {
        uint32_t pid;            /* 0: any */
        bool include_exited;
        const char *comm, *unit; /* NULL: any */
        const char *container;   /* a container's name, id or id prefix; NULL: any */
        unsigned limit;
        const char *after; /* NULL: the first page; else a previous reply's next */
} TrapstatListProcessesRequest;

typedef struct TrapstatListProcessesReply {
        json_t *json;
        json_t *processes;       /* borrowed from json: []Process */
        int64_t other_processes; /* -1: an older daemon did not say */
        const char *next;        /* borrowed from json: the next page's after; NULL: none (or an older daemon) */
} TrapstatListProcessesReply;

int trapstat_list_processes_parameters(const TrapstatListProcessesRequest *q, json_t **ret);
int trapstat_list_processes(TrapstatClient *c, const TrapstatListProcessesRequest *q, TrapstatListProcessesReply *ret,
                            TrapstatError *ret_error);
void trapstat_list_processes_reply_done(TrapstatListProcessesReply *r);

/* ---- Watch: a stream ---- */

typedef struct TrapstatWatchRequest {
        const char *sort_by;         /* required: a SortKey's name */
        unsigned limit;              /* 0: the daemon's default (20) */
        const ProcessFilter *filter; /* NULL: every process; its container too */
} TrapstatWatchRequest;

typedef struct TrapstatWatchReply {
        json_t *json;
        uint64_t time_usec, interval_usec;
        bool continues; /* false: the stream ended with this reply */
} TrapstatWatchReply;

int trapstat_watch_parameters(const TrapstatWatchRequest *q, json_t **ret);
/* Starts the stream; its replies (one per tick) are read with trapstat_watch_read(). 0 or a
 * negative errno; the daemon's error, if any, comes with the first read. */
int trapstat_watch(TrapstatClient *c, const TrapstatWatchRequest *q);
/* The next tick. -ETIMEDOUT ends nothing: no reply came within the connection's timeout. */
int trapstat_watch_read(TrapstatClient *c, TrapstatWatchReply *ret, TrapstatError *ret_error);
void trapstat_watch_reply_done(TrapstatWatchReply *r);

/* ---- Traps ---- */

typedef struct TrapstatTrapsRequest {
        uint64_t window_sec; /* 0: the daemon's default (3600) */
} TrapstatTrapsRequest;

typedef struct TrapstatTrapsReply {
        json_t *json;
        json_t *traps, *signals, *signal_codes; /* borrowed from json */
        uint64_t processes;
} TrapstatTrapsReply;

int trapstat_traps_parameters(const TrapstatTrapsRequest *q, json_t **ret);
int trapstat_traps(TrapstatClient *c, const TrapstatTrapsRequest *q, TrapstatTrapsReply *ret, TrapstatError *ret_error);
void trapstat_traps_reply_done(TrapstatTrapsReply *r);

/* ---- every method ---- */

/* The methods of io.trapstat and their functions, in the IDL's order: a unit test compares it
 * with the IDL, so a method added there without a function here fails it. */
typedef struct TrapstatClientMethod {
        const char *name;      /* unqualified, as the IDL declares it: "Top" */
        void (*function)(void); /* the typed call, cast: call it only through its own type */
} TrapstatClientMethod;

extern const TrapstatClientMethod trapstat_client_methods[];
extern const size_t trapstat_client_n_methods;
