/* SPDX-License-Identifier: MIT */
#pragma once

/* The client library of trapstatd, for trapstat and any other program that asks it (the
 * exporter): connecting to its socket, one call with its reply, and streams (Watch) read with a
 * timeout. The typed call of each method is in trapstat-methods.h; the untyped calls here are
 * for what has no type (trapstat call) and for the typed ones underneath.
 *
 * One convention throughout: a negative errno on failure, 0 on success. Nothing here prints or
 * exits; what to tell a person is the caller's choice. A call that reached the daemon and got an
 * error reply returns TRAPSTAT_ERROR_REPLY (-EBADR) and the error as a TrapstatError, which
 * trapstat_error_message() turns into a line of text. */

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "counters.h"
#include "filter.h"
#include "macro.h"

/* The errors a client of trapstatd meets: those of io.trapstat (schema/io.trapstat.varlink)
 * and those of org.varlink.service the daemon sends. */
#define TRAPSTAT_ERROR_NO_SUCH_PROCESS "io.trapstat.NoSuchProcess"
#define TRAPSTAT_ERROR_NO_SUCH_UNIT "io.trapstat.NoSuchUnit"
#define TRAPSTAT_ERROR_NO_SUCH_CONTAINER "io.trapstat.NoSuchContainer"
#define TRAPSTAT_ERROR_DATABASE "io.trapstat.DatabaseError"
#define TRAPSTAT_ERROR_QUERY_TOO_EXPENSIVE "io.trapstat.QueryTooExpensive"
#define TRAPSTAT_ERROR_QUERY_TOO_SLOW "io.trapstat.QueryTooSlow"
#define TRAPSTAT_ERROR_REPLY_TOO_LARGE "io.trapstat.ReplyTooLarge"
#define TRAPSTAT_ERROR_TOO_MANY_CONNECTIONS "io.trapstat.TooManyConnections"
#define TRAPSTAT_ERROR_PERMISSION_DENIED "org.varlink.service.PermissionDenied"
#define TRAPSTAT_ERROR_INVALID_PARAMETER "org.varlink.service.InvalidParameter"
#define TRAPSTAT_ERROR_METHOD_NOT_FOUND "org.varlink.service.MethodNotFound"
#define TRAPSTAT_ERROR_INTERFACE_NOT_FOUND "org.varlink.service.InterfaceNotFound"

/* Returned when the daemon answered with an error (then in a TrapstatError): a negative errno like
 * every other failure, and one the connection code never returns, so that a caller tells "the
 * daemon said no" from "could not talk to the daemon" by this value alone. */
#define TRAPSTAT_ERROR_REPLY (-EBADR)

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

/* How long trapstat_client_call() waits for its reply in all (0, the default: the connection's
 * timeout), for a connection whose timeout is short because it is for a stream read between
 * other work (a live view's Watch): the call reads again after each of the connection's timeouts
 * until this one has passed. */
void trapstat_client_set_call_timeout(TrapstatClient *c, uint64_t timeout_usec);

/* Sends a call without waiting for its reply; with more, the call of a stream, which the daemon
 * answers with reply after reply. Read them with trapstat_client_read(). 0 or a negative errno. */
int trapstat_client_start(TrapstatClient *c, const char *method, const json_t *parameters, bool more);
/* Adds the members of Top and Watch that filter processes (pids, uid, unit, comm, container) for
 * what f sets (f may be NULL; its pidns is the daemon's, never sent). 0 or -ENOMEM. */
int trapstat_filter_parameters(json_t *parameters, const ProcessFilter *f);

/* Reads the next reply of the call in progress. Returns 0, the reply's parameters in *ret_reply
 * (a new reference) and whether more replies follow in *ret_continues; TRAPSTAT_ERROR_REPLY and
 * the error in *ret_error (the call has ended); or a negative errno as trapstat_client_call()
 * does. -ETIMEDOUT ends nothing: no reply came within the connection's timeout, and the next
 * read waits for it again (a stream read with a short timeout leaves time for other work). */
int trapstat_client_read(TrapstatClient *c, json_t **ret_reply, bool *ret_continues, TrapstatError *ret_error);
