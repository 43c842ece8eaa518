/* SPDX-License-Identifier: MIT */
/* Fuzzes the varlink server with what a client sends on one connection: framing (NUL-terminated
 * messages, the size limit), JSON parsing, call-header parsing, validation against the
 * io.trapstat IDL and dispatch, over a real socket and the real event loop.
 *
 * The handlers answer with small fixed objects, or with io.trapstat errors for some parameters,
 * and check their own answers against the IDL: a method added to the IDL without a handler here
 * makes the server refuse the interface, and a changed reply type makes this target abort, so the
 * harness cannot silently fall behind the schema.
 *
 * Besides the sanitizers, two things are checked: the server ends every connection once the
 * client has half-closed it and read all replies, and everything it sends is a well-formed reply. */

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "embedded.h"
#include "fuzz-client.h"
#include "fuzz.h"
#include "json-util.h"
#include "varlink-idl.h"
#include "varlink.h"

/* Small, so that the message size limit and the output limit (4 times it: throttling) are
 * reachable with libFuzzer's default -max_len of 4096. */
#define FUZZ_MAX_MESSAGE_SIZE 2048U

static struct event_base *base;
static VarlinkServer *server;
static VarlinkInterface *idl; /* parsed once more, to check the handlers' own replies */

const char fuzz_target[] = "fuzz-varlink";

static void evbuffer_freep(struct evbuffer **b) {
        if (*b)
                evbuffer_free(*b);
}
#define _cleanup_evbuffer_ _cleanup_(evbuffer_freep)

/* ---- handlers ---- */

static int reply(VarlinkCall *call, json_t *parameters, bool continues) {
        const char *method = varlink_call_method(call), *field = NULL;

        if (!parameters)
                return -ENOMEM;
        if (varlink_interface_validate_output(idl, method, parameters, &field) < 0)
                fuzz_fail("the reply to %s does not match the IDL (%s): update the handler", method,
                          field ?: "?");
        return varlink_call_reply(call, parameters, continues);
}

static int reply_error(VarlinkCall *call, const char *error, json_t *parameters) {
        const char *field = NULL;

        if (!parameters)
                return -ENOMEM;
        if (varlink_interface_validate_error(idl, error, parameters, &field) < 0)
                fuzz_fail("error %s does not match the IDL (%s): update the handler", error, field ?: "?");
        return varlink_call_error(call, error, parameters);
}

static json_int_t optional_int(json_t *parameters, const char *name, json_int_t fallback) {
        json_t *v = json_object_get(parameters, name);

        /* The server validated the parameters: an int member is an integer, or null when optional. */
        return json_is_integer(v) ? json_integer_value(v) : fallback;
}

static json_t *process_new(json_int_t pid) {
        return json_pack("{s:I, s:I, s:s, s:n, s:i, s:n, s:I, s:I, s:b}", "pid", pid, "startTime",
                         (json_int_t) 123456789, "comm", "fuzz", "cmdline", "uid", 0, "unit", "firstSeenUsec",
                         (json_int_t) 1700000000000000, "lastSeenUsec", (json_int_t) 1700000010000000, "exited", 0);
}

static json_t *counters_new(void) {
        return json_pack("{s:{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:{s:i, s:i, s:i}}, s:{s:i, s:i, s:i, s:i, "
                         "s:[iiiiiiiiiiiiiiiiiiiiiiii], s:{s:i, s:i, s:i}}, s:{s:i}, s:{s:i}, s:{s:i}}",
                         "faults", "user", 3, "kernel", 1, "minor", 4, "major", 1, "read", 2, "write", 1, "exec", 0,
                         "protection", 0, "majorByCause", "file", 0, "anon", 1, "shmem", 0, "faultTime", "minorNs",
                         5200, "majorNs", 0, "kernelNs", 900, "maxNs", 2100, "histogram", 1, 2, 1, 0, 0, 0, 0, 0, 0,
                         0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, "majorNsByCause", "file", 0, "anon", 700,
                         "shmem", 0, "traps", "UD", 1, "signals", "SIGILL", 1, "signalCodes", "SIGILL/ILL_ILLOPN", 1);
}

static int method_get_status(VarlinkCall *call, json_t *parameters _unused_, void *userdata _unused_) {
        return reply(call,
                     json_pack("{s:s, s:s, s:[{s:s, s:b, s:n}, {s:s, s:b, s:s}], s:i, s:s, s:i, s:i, s:i, s:i, "
                               "s:[{s:s, s:i, s:s}], s:[{s:i, s:i, s:[{s:s, s:i, s:s}]}], s:i}",
                               "version", "fuzz", "arch", "x86_64", "sources", "name", "page_fault_user", "active", 1,
                               "reason", "name",
                               "page_fault_kernel", "active", 0, "reason", "not attached", "tickUsec", 1000000,
                               "databasePath", "/nonexistent/trapstat.db", "databaseBytes", 4096,
                               "processesTracked", 1, "drops", 0, "unsavedSamples", 0, "dropsByKind", "kind",
                               "fault_map_full", "count", 0, "lost", "one page fault", "dropsByUser", "uid", 1000,
                               "drops", 2, "dropsByKind", "kind", "trap_map_full", "count", 2, "lost", "one trap",
                               "faultSamplePeriod", 64),
                     false);
}

static json_t *top_rows_new(void) {
        return json_pack("{s:[{s:o, s:o}]}", "rows", "process", process_new(1), "counters", counters_new());
}

static int method_top(VarlinkCall *call, json_t *parameters _unused_, void *userdata _unused_) {
        int r;

        /* A streaming answer when the client asked for one: exercises "continues". */
        if (varlink_call_more(call)) {
                r = reply(call, top_rows_new(), true);
                if (r < 0)
                        return r;
        }
        return reply(call, top_rows_new(), false);
}

static int method_history(VarlinkCall *call, json_t *parameters, void *userdata _unused_) {
        json_int_t pid = optional_int(parameters, "pid", 0);

        if (pid % 2 != 0)
                return reply_error(call, "io.trapstat.NoSuchProcess", json_pack("{s:I}", "pid", pid));
        return reply(call,
                     json_pack("{s:o, s:o, s:[{s:I, s:o}]}", "process", process_new(pid), "total", counters_new(),
                               "samples", "timeUsec", (json_int_t) 1700000000000000, "counters", counters_new()),
                     false);
}

/* NoSuchContainer for a container that starts with "x", else one docker container with one sample. */
static int method_container_history(VarlinkCall *call, json_t *parameters, void *userdata _unused_) {
        const char *container = json_string_value(json_object_get(parameters, "container"));

        if (!container)
                return varlink_call_error_invalid_parameter(call, "container");
        if (container[0] == 'x')
                return reply_error(call, "io.trapstat.NoSuchContainer", json_pack("{s:s}", "container", container));
        return reply(call,
                     json_pack("{s:[{s:s, s:s, s:n, s:n, s:n}], s:i, s:i, s:o, s:[{s:I, s:o}]}", "containers", "runtime",
                               "docker", "id", "0123456789ab", "name", "pod", "user", "processes", 1, "running", 0,
                               "total", counters_new(), "samples", "timeUsec", (json_int_t) 1700000000000000,
                               "counters", counters_new()),
                     false);
}

/* NoSuchUnit for a unit that starts with "x", else two units with one sample. */
static int method_unit_history(VarlinkCall *call, json_t *parameters, void *userdata _unused_) {
        const char *unit = json_string_value(json_object_get(parameters, "unit"));

        if (!unit)
                return varlink_call_error_invalid_parameter(call, "unit");
        if (unit[0] == 'x')
                return reply_error(call, "io.trapstat.NoSuchUnit", json_pack("{s:s}", "unit", unit));
        return reply(call,
                     json_pack("{s:[s, s], s:i, s:i, s:o, s:[{s:I, s:o}]}", "units", "a.service", "b.service",
                               "processes", 2, "running", 1, "total", counters_new(), "samples", "timeUsec",
                               (json_int_t) 1700000000000000, "counters", counters_new()),
                     false);
}

/* One trap site with a symbol and one sampled fault site in a file; kind "trap" leaves the
 * fault out. (Built by hand: the libFuzzer build compiles only the protocol's sources.) */
static int method_sites(VarlinkCall *call, json_t *parameters, void *userdata _unused_) {
        json_int_t pid = optional_int(parameters, "pid", 0);
        const char *kind = json_string_value(json_object_get(parameters, "kind"));
        json_t *sites;

        if (pid % 2 != 0)
                return reply_error(call, "io.trapstat.NoSuchProcess", json_pack("{s:I}", "pid", pid));
        sites = json_pack("[{s:s, s:s, s:s, s:i, s:s, s:i, s:i, s:b, s:i, s:i, s:s, s:n, s:i, s:i}]", "kind", "trap",
                          "vector", "UD", "object", "/usr/bin/fuzz", "offset", 4096, "symbol", "main", "symbolOffset",
                          20, "count", 2, "sampled", 0, "period", 1, "estimated", 2, "memory", "none", "memoryObject",
                          "timeNs", 0, "estimatedTimeNs", 0);
        if (sites && !(kind && strcmp(kind, "trap") == 0))
                json_array_append_new(sites,
                                      json_pack("{s:s, s:s, s:s, s:i, s:n, s:n, s:i, s:b, s:i, s:i, s:s, s:s, s:i, s:i}",
                                                "kind", "fault", "vector", "PF", "object", "/usr/bin/fuzz", "offset",
                                                8192, "symbol", "symbolOffset", "count", 3, "sampled", 1, "period", 64,
                                                "estimated", 192, "memory", "file", "memoryObject", "/var/lib/fuzz/data",
                                                "timeNs", 4000, "estimatedTimeNs", 256000));
        return reply(call, json_pack("{s:o, s:o}", "process", process_new(pid), "sites", sites), false);
}

static int method_list_processes(VarlinkCall *call, json_t *parameters, void *userdata _unused_) {
        json_int_t pid = optional_int(parameters, "pid", 2), limit = optional_int(parameters, "limit", 1000);

        if (pid % 2 != 0)
                return reply_error(call, "io.trapstat.NoSuchProcess", json_pack("{s:I}", "pid", pid));
        if (limit == 0)
                return reply_error(call, "io.trapstat.DatabaseError", json_pack("{s:s}", "message", "fuzz"));
        if (limit < 0)
                return varlink_call_error_invalid_parameter(call, "limit");
        /* limit 1 leaves one out, as a limit of trapstatd's does (otherProcesses). */
        return reply(call,
                     json_pack("{s:[o], s:I}", "processes", process_new(pid), "otherProcesses", (json_int_t) (limit == 1)),
                     false);
}

/* Streams the way trapstatd's Watch does, through a kept call, but ends after two replies so that
 * calls pipelined behind it are served too. */
static int method_watch(VarlinkCall *call, json_t *parameters _unused_, void *userdata _unused_) {
        VarlinkCall *kept = NULL;
        int r;

        if (!varlink_call_more(call))
                return 0; /* oneway */
        r = varlink_call_keep(call, NULL, NULL, &kept);
        if (r < 0)
                return r;
        for (int i = 0; i < 2 && r >= 0; i++) {
                _cleanup_json_ json_t *top = top_rows_new();

                r = reply(kept,
                          json_pack("{s:I, s:I, s:o, s:i, s:O, s:i, s:[{s:i, s:I}]}", "timeUsec",
                                    (json_int_t) 1700000000000000, "intervalUsec", (json_int_t) 1000000, "total",
                                    counters_new(), "processes", (int) json_array_size(json_object_get(top, "rows")),
                                    "rows", json_object_get(top, "rows"), "missedTicks", i, "exited", "pid", 3,
                                    "startTime", (json_int_t) 123456789),
                          i == 0);
        }
        varlink_call_unref(kept);
        return r;
}

static int method_traps(VarlinkCall *call, json_t *parameters _unused_, void *userdata _unused_) {
        return reply(call,
                     json_pack("{s:{s:i}, s:{s:i}, s:{s:i}, s:i}", "traps", "UD", 1, "signals", "SIGILL", 1, "signalCodes",
                               "SIGILL/ILL_ILLOPN", 1, "processes", 1),
                     false);
}

/* Two units, one in no unit; limit 1 leaves one out. */
static int method_unit_totals(VarlinkCall *call, json_t *parameters, void *userdata _unused_) {
        json_int_t limit = optional_int(parameters, "limit", 1000);

        if (limit < 1)
                return varlink_call_error_invalid_parameter(call, "limit");
        return reply(call,
                     json_pack("{s:I, s:[{s:s, s:i, s:o}], s:I, s:o}", "sinceUsec", (json_int_t) 1700000000000000,
                               "units", "unit", "a.service", "processes", 2, "counters", counters_new(), "otherUnits",
                               (json_int_t) (limit > 1 ? 0 : 1), "total", counters_new()),
                     false);
}

/* Every method io.trapstat declares: the server refuses the interface otherwise. */
static const VarlinkMethod methods[] = {
        { "GetStatus", method_get_status },
        { "Top", method_top },
        { "History", method_history },
        { "UnitHistory", method_unit_history },
        { "ContainerHistory", method_container_history },
        { "Sites", method_sites },
        { "ListProcesses", method_list_processes },
        { "Watch", method_watch, VARLINK_METHOD_MORE },
        { "Traps", method_traps },
        { "UnitTotals", method_unit_totals },
        {},
};

/* ---- set-up, once per process ---- */

static void setup(void) {
        const VarlinkServerConfig config = {
                .vendor = "trapstat",
                .product = "fuzz-varlink",
                .version = "0",
                .url = "https://example.invalid/trapstat",
                .max_message_size = FUZZ_MAX_MESSAGE_SIZE,
        };
        char error[200];
        int r;

        /* The server writes to sockets whose peer may be gone. */
        signal(SIGPIPE, SIG_IGN);

        base = event_base_new();
        if (!base)
                fuzz_fail("event_base_new() failed");
        r = varlink_server_new(base, &config, &server);
        if (r < 0)
                fuzz_fail("varlink_server_new() failed: %s", strerror(-r));
        r = varlink_interface_parse(embedded_varlink[0].text, &idl, error, sizeof(error));
        if (r < 0)
                fuzz_fail("io.trapstat.varlink:%s", error);
        r = varlink_server_add_interface(server, "io.trapstat", embedded_varlink[0].text, methods, NULL);
        if (r < 0)
                fuzz_fail("io.trapstat refused: %s", varlink_server_error(server));
}

/* ---- one input ---- */

typedef struct Client {
        int fd;
        struct evbuffer *replies;
        bool eof;
} Client;

/* The server's turn: whatever is ready, without waiting. */
static bool serve(void *userdata) {
        Client *c = userdata;

        if (event_base_loop(base, EVLOOP_NONBLOCK) < 0)
                fuzz_fail("event_base_loop() failed");
        return fuzz_receive(c->fd, c->replies, &c->eof);
}

/* Everything on the wire must be {"parameters": {...}} plus "continues": true or "error": "name". */
static void check_replies(struct evbuffer *replies) {
        for (;;) {
                _cleanup_json_ json_t *msg = NULL;
                json_t *parameters, *continues, *error;
                int r;

                r = varlink_message_read(replies, SIZE_MAX, &msg);
                if (r == 0)
                        break;
                if (r < 0)
                        fuzz_fail("the server sent a malformed message: %s", strerror(-r));

                parameters = json_object_get(msg, "parameters");
                continues = json_object_get(msg, "continues");
                error = json_object_get(msg, "error");
                if (!json_is_object(parameters) || (continues && !json_is_true(continues)) ||
                    (error && (!json_is_string(error) || continues)) ||
                    json_object_size(msg) != (size_t) (1 + !!continues + !!error)) {
                        _cleanup_free_ char *s = json_dumps(msg, JSON_COMPACT);
                        fuzz_fail("the server sent an invalid reply: %s", s ?: "?");
                }
        }
        if (evbuffer_get_length(replies) > 0)
                fuzz_fail("the server sent %zu bytes of an incomplete message",
                          evbuffer_get_length(replies));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_evbuffer_ struct evbuffer *replies = NULL;
        _cleanup_close_ int fd = -1;
        Client c = {};
        int pair[2], r;

        if (!server)
                setup();

        replies = evbuffer_new();
        if (!replies)
                fuzz_fail("out of memory");
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) < 0)
                fuzz_fail("socketpair() failed: %s", strerror(errno));
        fd = pair[1];
        r = varlink_server_add_connection(server, pair[0]);
        if (r < 0)
                fuzz_fail("varlink_server_add_connection() failed: %s", strerror(-r));

        c = (Client) { .fd = fd, .replies = replies };
        fuzz_send(fd, data, size, &c.eof, serve, &c);
        fuzz_finish(fd, server, &c.eof, serve, &c);
        check_replies(replies);
        return 0;
}
