/* SPDX-License-Identifier: MIT */
#include "trapstat-client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "time-util.h"
#include "varlink.h"

struct TrapstatClient {
        VarlinkClient *varlink;
        uint64_t call_timeout_usec; /* 0: the connection's timeout */
};

void trapstat_error_done(TrapstatError *e) {
        if (!e)
                return;
        free(e->name);
        json_decref(e->parameters);
        *e = (TrapstatError) {};
}

static json_int_t error_integer(const TrapstatError *e, const char *member) {
        return json_integer_value(json_object_get(e->parameters, member));
}

int trapstat_error_message(const char *method, const TrapstatError *e, char **ret) {
        json_t *param = json_object_get(e->parameters, "parameter");
        json_t *message = json_object_get(e->parameters, "message");
        const char *name = e->name ?: "(no error)";
        int n;

        if (strcmp(name, TRAPSTAT_ERROR_NO_SUCH_PROCESS) == 0)
                n = asprintf(ret, "no process with pid %" JSON_INTEGER_FORMAT
                             " is known to trapstatd (trapstat procs --exited lists the known ones)",
                             error_integer(e, "pid"));
        else if (strcmp(name, TRAPSTAT_ERROR_NO_SUCH_UNIT) == 0 && json_is_string(json_object_get(e->parameters, "unit")))
                n = asprintf(ret, "no process of a unit matching '%s' is known to trapstatd, or none you may see "
                             "(trapstat procs --exited --unit NAME lists a unit's)",
                             json_string_value(json_object_get(e->parameters, "unit")));
        else if (strcmp(name, TRAPSTAT_ERROR_NO_SUCH_CONTAINER) == 0 &&
                 json_is_string(json_object_get(e->parameters, "container")))
                n = asprintf(ret, "no process of a container named '%s' (or with such an id) is known to trapstatd, or "
                             "none you may see (trapstat procs --exited shows each process's CONTAINER)",
                             json_string_value(json_object_get(e->parameters, "container")));
        else if (strcmp(name, TRAPSTAT_ERROR_PERMISSION_DENIED) == 0)
                n = asprintf(ret, "permission denied: that process belongs to another user (root and members of group trapstat see all)");
        else if (strcmp(name, TRAPSTAT_ERROR_INVALID_PARAMETER) == 0 && json_is_string(param))
                n = asprintf(ret, "trapstatd rejected parameter '%s' of %s", json_string_value(param), method);
        else if (strcmp(name, TRAPSTAT_ERROR_TOO_MANY_CONNECTIONS) == 0)
                n = asprintf(ret, "trapstatd refused the connection: too many connections (limit %" JSON_INTEGER_FORMAT
                             "; trapstatd --max-connections, --max-connections-per-uid)",
                             error_integer(e, "limit"));
        else if (strcmp(name, TRAPSTAT_ERROR_QUERY_TOO_EXPENSIVE) == 0)
                n = asprintf(ret, "%s was stopped after %" JSON_INTEGER_FORMAT
                             " database steps (trapstatd --query-cost-limit): ask for a shorter window or fewer rows",
                             method, error_integer(e, "limit"));
        else if (strcmp(name, TRAPSTAT_ERROR_QUERY_TOO_SLOW) == 0)
                n = asprintf(ret, "%s was stopped after %" JSON_INTEGER_FORMAT
                             " ms (trapstatd --query-time-limit): ask for a shorter window, fewer rows or processes",
                             method, error_integer(e, "limitMsec"));
        else if (strcmp(name, TRAPSTAT_ERROR_REPLY_TOO_LARGE) == 0)
                n = asprintf(ret, "the reply to %s would be over %" JSON_INTEGER_FORMAT
                             " bytes (trapstatd --max-reply-size, less while your other connections hold unread "
                             "replies): ask for fewer rows (--limit), a shorter window or a filter",
                             method, error_integer(e, "limit"));
        else if (strcmp(name, TRAPSTAT_ERROR_METHOD_NOT_FOUND) == 0)
                n = asprintf(ret, "%s failed: %s (trapstatd has no such method; is it older than this trapstat? see trapstat status)",
                             method, name);
        else if (strcmp(name, TRAPSTAT_ERROR_INTERFACE_NOT_FOUND) == 0)
                n = asprintf(ret, "%s failed: %s (trapstatd has no such interface)", method, name);
        else
                n = asprintf(ret, "%s failed: %s%s%s", method, name, json_is_string(message) ? ": " : "",
                             json_is_string(message) ? json_string_value(message) : "");
        if (n < 0) {
                *ret = NULL;
                return -ENOMEM;
        }
        return 0;
}

int trapstat_client_connect(const char *socket_path, uint64_t timeout_usec, TrapstatClient **ret) {
        TrapstatClient *c;
        int r;

        if (!socket_path || !ret)
                return -EINVAL;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        r = varlink_client_connect(socket_path, timeout_usec, &c->varlink);
        if (r < 0) {
                free(c);
                return r;
        }
        *ret = c;
        return 0;
}

TrapstatClient *trapstat_client_free(TrapstatClient *c) {
        if (!c)
                return NULL;
        varlink_client_free(c->varlink);
        free(c);
        return NULL;
}

int trapstat_client_start(TrapstatClient *c, const char *method, const json_t *parameters, bool more) {
        if (!c)
                return -EINVAL;
        return varlink_client_call(c->varlink, method, parameters, more ? VARLINK_CALL_MORE : 0);
}

int trapstat_filter_parameters(json_t *parameters, const ProcessFilter *f) {
        if (!f)
                return 0;
        if (f->n_pids > 0) {
                json_t *pids = json_array();

                if (json_object_set_new(parameters, "pids", pids) < 0)
                        return -ENOMEM;
                for (size_t i = 0; i < f->n_pids; i++)
                        if (json_array_append_new(pids, json_integer(f->pids[i])) < 0)
                                return -ENOMEM;
        }
        if ((f->uid >= 0 && json_object_set_new(parameters, "uid", json_integer(f->uid)) < 0) ||
            (f->unit && json_object_set_new(parameters, "unit", json_string(f->unit)) < 0) ||
            (f->comm && json_object_set_new(parameters, "comm", json_string(f->comm)) < 0) ||
            (f->container && json_object_set_new(parameters, "container", json_string(f->container)) < 0))
                return -ENOMEM;
        return 0;
}

int trapstat_client_read(TrapstatClient *c, json_t **ret_reply, bool *ret_continues, TrapstatError *ret_error) {
        _cleanup_json_ json_t *parameters = NULL;
        _cleanup_free_ char *error = NULL;
        bool continues;
        int r;

        if (!c)
                return -EINVAL;
        r = varlink_client_read_reply(c->varlink, &parameters, &error, &continues);
        if (r < 0)
                return r;
        if (error) {
                if (ret_error)
                        *ret_error = (TrapstatError) { .name = TAKE_PTR(error), .parameters = TAKE_PTR(parameters) };
                return TRAPSTAT_ERROR_REPLY;
        }
        if (ret_reply)
                *ret_reply = TAKE_PTR(parameters);
        if (ret_continues)
                *ret_continues = continues;
        return 0;
}

void trapstat_client_set_call_timeout(TrapstatClient *c, uint64_t timeout_usec) {
        if (c)
                c->call_timeout_usec = timeout_usec;
}

int trapstat_client_call(TrapstatClient *c, const char *method, const json_t *parameters, json_t **ret_reply,
                         TrapstatError *ret_error) {
        uint64_t deadline;
        int r;

        r = trapstat_client_start(c, method, parameters, false);
        if (r < 0)
                return r;
        deadline = c->call_timeout_usec ? now_usec(CLOCK_MONOTONIC) + c->call_timeout_usec : 0;
        do
                r = trapstat_client_read(c, ret_reply, NULL, ret_error);
        while (r == -ETIMEDOUT && deadline && now_usec(CLOCK_MONOTONIC) < deadline);
        return r;
}
