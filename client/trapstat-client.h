/* SPDX-License-Identifier: MIT */
#pragma once

/* The client library of trapstatd, for trapstat and any other program that asks it (an exporter):
 * connecting to its socket, one call with its reply, and streams (Watch) read with a timeout.
 *
 * One convention throughout: a negative errno on failure, 0 (or a positive value the function
 * names) on success. Nothing here prints or exits; what to tell a person is the caller's choice.
 * A call that reached the daemon and got an error reply is not a failure to talk to it: the
 * functions return TRAPSTAT_ERROR_REPLY and the error as a TrapstatError, which
 * trapstat_error_message() turns into a line of text. */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "counters.h"
#include "filter.h"
#include "macro.h"
#include "sites.h"

/* The errors a client of trapstatd meets: those of io.trapstat (schema/io.trapstat.varlink)
 * and those of org.varlink.service the daemon sends. */
#define TRAPSTAT_ERROR_NO_SUCH_PROCESS "io.trapstat.NoSuchProcess"
#define TRAPSTAT_ERROR_NO_SUCH_UNIT "io.trapstat.NoSuchUnit"
#define TRAPSTAT_ERROR_DATABASE "io.trapstat.DatabaseError"
#define TRAPSTAT_ERROR_QUERY_TOO_EXPENSIVE "io.trapstat.QueryTooExpensive"
#define TRAPSTAT_ERROR_QUERY_TOO_SLOW "io.trapstat.QueryTooSlow"
#define TRAPSTAT_ERROR_REPLY_TOO_LARGE "io.trapstat.ReplyTooLarge"
#define TRAPSTAT_ERROR_TOO_MANY_CONNECTIONS "io.trapstat.TooManyConnections"
#define TRAPSTAT_ERROR_PERMISSION_DENIED "org.varlink.service.PermissionDenied"
#define TRAPSTAT_ERROR_INVALID_PARAMETER "org.varlink.service.InvalidParameter"
#define TRAPSTAT_ERROR_METHOD_NOT_FOUND "org.varlink.service.MethodNotFound"
#define TRAPSTAT_ERROR_INTERFACE_NOT_FOUND "org.varlink.service.InterfaceNotFound"

/* Returned instead of 0 when the daemon answered with an error: positive, so that it is never
 * taken for a failure to talk to the daemon, and never for a reply. */
#define TRAPSTAT_ERROR_REPLY 1

/* An error reply of the daemon. */
typedef struct TrapstatError {
        char *name;         /* "io.trapstat.NoSuchProcess"; NULL when there was none */
        json_t *parameters; /* the error's parameters ({"pid": 4242}), an object */
} TrapstatError;

void trapstat_error_done(TrapstatError *e);

/* One line for a person saying what the error reply e to a call of method means and, where there
 * is one, what to do about it: "no process with pid 4242 is known to trapstatd (trapstat procs
 * --exited lists the known ones)". Any error has a line, also one this library does not know
 * (then its name and its "message" parameter, when it has one). No trailing newline, no program
 * name. Returns 0 and a malloc'd string, or -ENOMEM. */
int trapstat_error_message(const char *method, const TrapstatError *e, char **ret);

/* A connection to trapstatd. */
typedef struct TrapstatClient TrapstatClient;

/* Connects to the socket at socket_path. timeout_usec bounds every later send and every wait for
 * a reply (0: none). Returns 0, or the negative errno of socket()/connect(): -ENOENT or
 * -ECONNREFUSED when no daemon listens there, -EACCES or -EPERM when the socket or its directory
 * is not accessible to the caller. */
int trapstat_client_connect(const char *socket_path, uint64_t timeout_usec, TrapstatClient **ret);
TrapstatClient *trapstat_client_free(TrapstatClient *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(TrapstatClient *, trapstat_client_free)

/* One call and its one reply. Returns 0 and the reply's parameters in *ret_reply (a new
 * reference); TRAPSTAT_ERROR_REPLY and the error in *ret_error when the daemon answered with
 * one; or a negative errno: -ECONNRESET when the daemon closed the connection, -ETIMEDOUT when
 * no reply came within the timeout, -EBADMSG or -EMSGSIZE for a malformed reply, -ENOMEM.
 * parameters is borrowed and may be NULL. A connection takes one call after the other. */
int trapstat_client_call(TrapstatClient *c, const char *method, const json_t *parameters, json_t **ret_reply,
                         TrapstatError *ret_error);

/* Sends a call without waiting for its reply; with more, the call of a stream, which the daemon
 * answers with reply after reply. Read them with trapstat_client_read(). 0 or a negative errno. */
int trapstat_client_start(TrapstatClient *c, const char *method, const json_t *parameters, bool more);
/* Adds the members of Top and Watch that filter processes (pids, uid, unit, comm) for what f
 * sets (f may be NULL). 0 or -ENOMEM. */
int trapstat_filter_parameters(json_t *parameters, const ProcessFilter *f);
/* Starts io.trapstat.Watch: one reply per tick, rows sorted by sort, at most limit rows each
 * (0: the daemon's default), of the processes filter lets through (NULL: all). 0 or a negative
 * errno. */
int trapstat_client_watch(TrapstatClient *c, const SortKey *sort, unsigned limit, const ProcessFilter *filter);

/* Reads the next reply of the call in progress. Returns 0, the reply's parameters in *ret_reply
 * (a new reference) and whether more replies follow in *ret_continues; TRAPSTAT_ERROR_REPLY and
 * the error in *ret_error (the call has ended); or a negative errno as trapstat_client_call()
 * does. -ETIMEDOUT ends nothing: no reply came within the connection's timeout, and the next
 * read waits for it again (a stream read with a short timeout leaves time for other work). */
int trapstat_client_read(TrapstatClient *c, json_t **ret_reply, bool *ret_continues, TrapstatError *ret_error);

/* What io.trapstat.Sites is asked: where process pid trapped and faulted. */
typedef struct TrapstatSitesQuery {
        uint32_t pid;
        uint64_t start_time; /* one incarnation of the pid; 0: the newest */
        uint64_t since_usec; /* 0: from the start of its history */
        uint64_t until_usec; /* 0: up to now */
        int kind;            /* a SiteKind; -1: both kinds */
        unsigned limit;      /* at most this many sites; 0: the daemon's default (20) */
} TrapstatSitesQuery;

/* The parameters of io.trapstat.Sites for q, a new object: only what q sets, so that the
 * daemon's defaults apply to the rest. NULL on ENOMEM, or for pid 0 or an unknown kind. */
json_t *trapstat_sites_parameters(const TrapstatSitesQuery *q);
/* Calls io.trapstat.Sites and returns as trapstat_client_call() does; the sites of *ret_reply
 * are read with trapstat_sites_from_reply(). An older trapstatd answers with the error
 * TRAPSTAT_ERROR_METHOD_NOT_FOUND. */
int trapstat_client_sites(TrapstatClient *c, const TrapstatSitesQuery *q, json_t **ret_reply, TrapstatError *ret_error);
/* The sites of a Sites reply, in its order, each read by site_count_from_json(): 0, a malloc'd
 * array (NULL when there are none; free it with site_counts_free()) and its length; -EBADMSG
 * when the reply has no array "sites" or a site is malformed; -ENOMEM. */
int trapstat_sites_from_reply(json_t *reply, SiteCount **ret, size_t *ret_n);
