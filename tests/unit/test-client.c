/* SPDX-License-Identifier: MIT */
/* Tests for the client library (libtrapstat-client/): the line for each error reply of the
 * daemon, then connect, call, stream, timeout and each typed call against a socket this test
 * answers itself; and that the library has a function for every method of the IDL. No
 * daemon and no thread: the kernel's socket buffers hold the call and the canned replies, so the
 * test writes a reply before the client reads it, and cmocka's asserts stay in one thread. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* cmocka.h needs these first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "embedded.h"
#include "json-util.h"
#include "macro.h"
#include "trapstat-methods.h"
#include "varlink-idl.h"
#include "traps.h"

#define TIMEOUT_USEC (5U * 1000000U)

/* The line for error name with parameters (JSON text), in reply to a call of method. */
static char *message_of(const char *method, const char *name, const char *parameters) {
        TrapstatError e = { .name = strdup(name), .parameters = json_loads(parameters, 0, NULL) };
        char *m = NULL;

        assert_non_null(e.name);
        assert_non_null(e.parameters);
        assert_int_equal(trapstat_error_message(method, &e, &m), 0);
        assert_non_null(m);
        trapstat_error_done(&e);
        assert_null(e.name);
        assert_null(e.parameters);
        return m;
}

static void assert_message(const char *method, const char *name, const char *parameters, const char *expected) {
        _cleanup_free_ char *m = message_of(method, name, parameters);

        assert_string_equal(m, expected);
}

static void test_error_message(void **state) {
        assert_message("io.trapstat.History", TRAPSTAT_ERROR_NO_SUCH_PROCESS, "{\"pid\": 4242}",
                       "no process with pid 4242 is known to trapstatd (trapstat procs --exited lists the known ones)");
        assert_message("io.trapstat.UnitHistory", TRAPSTAT_ERROR_NO_SUCH_UNIT, "{\"unit\": \"web*.service\"}",
                       "no process of a unit matching 'web*.service' is known to trapstatd, or none you may see "
                       "(trapstat procs --exited --unit NAME lists a unit's)");
        /* Without its member: the generic form. */
        assert_message("io.trapstat.UnitHistory", TRAPSTAT_ERROR_NO_SUCH_UNIT, "{}", "io.trapstat.UnitHistory failed: io.trapstat.NoSuchUnit");
        assert_message("io.trapstat.ContainerHistory", TRAPSTAT_ERROR_NO_SUCH_CONTAINER, "{\"container\": \"web\"}",
                       "no process of a container named 'web' (or with such an id) is known to trapstatd, or none "
                       "you may see (trapstat procs --exited shows each process's CONTAINER)");
        assert_message("io.trapstat.ContainerHistory", TRAPSTAT_ERROR_NO_SUCH_CONTAINER, "{}",
                       "io.trapstat.ContainerHistory failed: io.trapstat.NoSuchContainer");
        assert_message("io.trapstat.History", TRAPSTAT_ERROR_PERMISSION_DENIED, "{}",
                       "permission denied: that process belongs to another user (root and members of group trapstat see all)");
        assert_message("io.trapstat.Top", TRAPSTAT_ERROR_INVALID_PARAMETER, "{\"parameter\": \"sortBy\"}",
                       "trapstatd rejected parameter 'sortBy' of io.trapstat.Top");
        assert_message("io.trapstat.GetStatus", TRAPSTAT_ERROR_TOO_MANY_CONNECTIONS, "{\"limit\": 4096}",
                       "trapstatd refused the connection: too many connections (limit 4096; trapstatd --max-connections, "
                       "--max-connections-per-uid)");
        assert_message("io.trapstat.Top", TRAPSTAT_ERROR_QUERY_TOO_EXPENSIVE, "{\"limit\": 200000000}",
                       "io.trapstat.Top was stopped after 200000000 database steps (trapstatd --query-cost-limit): ask for a "
                       "shorter window or fewer rows");
        assert_message("io.trapstat.Nope", TRAPSTAT_ERROR_METHOD_NOT_FOUND, "{\"method\": \"io.trapstat.Nope\"}",
                       "io.trapstat.Nope failed: org.varlink.service.MethodNotFound (trapstatd has no such method; is it older "
                       "than this trapstat? see trapstat status)");
        assert_message("org.example.X", TRAPSTAT_ERROR_INTERFACE_NOT_FOUND, "{\"interface\": \"org.example\"}",
                       "org.example.X failed: org.varlink.service.InterfaceNotFound (trapstatd has no such interface)");
}

/* Errors the library has no words of its own for: the name, and the message when there is one. */
static void test_error_message_other(void **state) {
        assert_message("io.trapstat.Top", TRAPSTAT_ERROR_DATABASE, "{\"message\": \"disk I/O error\"}",
                       "io.trapstat.Top failed: io.trapstat.DatabaseError: disk I/O error");
        assert_message("io.trapstat.Top", "org.example.Odd", "{}", "io.trapstat.Top failed: org.example.Odd");
        assert_message("io.trapstat.Top", "org.example.Odd", "{\"message\": 7}", "io.trapstat.Top failed: org.example.Odd");
        /* An InvalidParameter that does not name one is no parameter to name. */
        assert_message("io.trapstat.Top", TRAPSTAT_ERROR_INVALID_PARAMETER, "{}",
                       "io.trapstat.Top failed: org.varlink.service.InvalidParameter");
        /* Missing or ill-typed numbers read as 0 rather than failing. */
        assert_message("io.trapstat.History", TRAPSTAT_ERROR_NO_SUCH_PROCESS, "{\"pid\": \"x\"}",
                       "no process with pid 0 is known to trapstatd (trapstat procs --exited lists the known ones)");
}

static void test_error_done(void **state) {
        TrapstatError e = {};

        /* Twice, and on nothing: both harmless. */
        trapstat_error_done(&e);
        trapstat_error_done(NULL);
        e.name = strdup("org.example.Odd");
        e.parameters = json_object();
        trapstat_error_done(&e);
        trapstat_error_done(&e);
        assert_null(e.name);
}

/* ---- against a socket of the test's own ---- */

typedef struct Peer {
        char dir[64];
        char path[96];
        int listen_fd;
        int fd; /* the accepted connection */
} Peer;

static void peer_listen(Peer *p) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        *p = (Peer) { .listen_fd = -1, .fd = -1 };
        snprintf(p->dir, sizeof(p->dir), "/tmp/test-client-XXXXXX");
        assert_non_null(mkdtemp(p->dir));
        snprintf(p->path, sizeof(p->path), "%s/socket", p->dir);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", p->path);
        p->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(p->listen_fd >= 0);
        assert_int_equal(bind(p->listen_fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        assert_int_equal(listen(p->listen_fd, 4), 0);
}

static void peer_accept(Peer *p) {
        p->fd = accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        assert_true(p->fd >= 0);
}

static void peer_close(Peer *p) {
        if (p->fd >= 0)
                close(p->fd);
        if (p->listen_fd >= 0)
                close(p->listen_fd);
        unlink(p->path);
        rmdir(p->dir);
        *p = (Peer) { .listen_fd = -1, .fd = -1 };
}

/* The next call the client sent, up to its NUL. */
static json_t *peer_read_call(Peer *p) {
        char buf[4096];
        size_t n = 0;

        for (;;) {
                ssize_t k;

                assert_true(n < sizeof(buf));
                k = read(p->fd, buf + n, 1); /* byte by byte: never past this call's NUL */
                assert_int_equal(k, 1);
                if (buf[n] == '\0')
                        break;
                n++;
        }
        return json_loads(buf, 0, NULL);
}

/* Sends bytes as they are: part of a message. */
static void peer_write(Peer *p, const char *s) {
        size_t n = strlen(s);

        assert_int_equal(write(p->fd, s, n), (ssize_t) n);
}

/* Sends (the end of) a message, a JSON text, and its NUL. */
static void peer_send(Peer *p, const char *message) {
        size_t n = strlen(message) + 1;

        assert_int_equal(write(p->fd, message, n), (ssize_t) n);
}

static void assert_json(const json_t *j, const char *expected) {
        _cleanup_json_ json_t *e = json_loads(expected, 0, NULL);

        assert_non_null(e);
        assert_true(json_equal(j, e));
}

static void test_connect_missing(void **state) {
        TrapstatClient *c = NULL;

        assert_int_equal(trapstat_client_connect("/nonexistent/trapstat-test/socket", TIMEOUT_USEC, &c), -ENOENT);
        assert_null(c);
        assert_int_equal(trapstat_client_connect(NULL, TIMEOUT_USEC, &c), -EINVAL);
        assert_null(trapstat_client_free(NULL));
}

static void test_call(void **state) {
        _cleanup_(trapstat_client_freep) TrapstatClient *c = NULL;
        _cleanup_json_ json_t *call = NULL, *reply = NULL;
        TrapstatError error = {};
        Peer p;

        peer_listen(&p);
        assert_int_equal(trapstat_client_connect(p.path, TIMEOUT_USEC, &c), 0);
        peer_accept(&p);

        /* A reply. */
        peer_send(&p, "{\"parameters\": {\"version\": \"1\"}}");
        assert_int_equal(trapstat_client_call(c, "io.trapstat.GetStatus", NULL, &reply, &error), 0);
        assert_json(reply, "{\"version\": \"1\"}");
        assert_null(error.name);
        call = peer_read_call(&p);
        assert_json(call, "{\"method\": \"io.trapstat.GetStatus\"}");

        /* An error reply: the error, no reply. */
        json_decref(TAKE_PTR(reply));
        json_decref(TAKE_PTR(call));
        peer_send(&p, "{\"error\": \"io.trapstat.NoSuchProcess\", \"parameters\": {\"pid\": 42}}");
        {
                _cleanup_json_ json_t *params = json_pack("{s:i}", "pid", 42);

                assert_int_equal(trapstat_client_call(c, "io.trapstat.History", params, &reply, &error), TRAPSTAT_ERROR_REPLY);
        }
        assert_null(reply);
        assert_string_equal(error.name, TRAPSTAT_ERROR_NO_SUCH_PROCESS);
        assert_json(error.parameters, "{\"pid\": 42}");
        trapstat_error_done(&error);
        call = peer_read_call(&p);
        assert_json(call, "{\"method\": \"io.trapstat.History\", \"parameters\": {\"pid\": 42}}");

        /* Not varlink: a failure to talk, not an error of the daemon. */
        peer_send(&p, "[1]");
        assert_int_equal(trapstat_client_call(c, "io.trapstat.GetStatus", NULL, &reply, &error), -EBADMSG);
        assert_null(error.name);

        /* The daemon went away. */
        close(TAKE_FD(p.fd));
        assert_int_equal(trapstat_client_call(c, "io.trapstat.GetStatus", NULL, &reply, &error), -ECONNRESET);
        assert_null(reply);
        assert_null(error.name);
        peer_close(&p);
}

static void test_watch(void **state) {
        _cleanup_(trapstat_client_freep) TrapstatClient *c = NULL;
        _cleanup_json_ json_t *call = NULL;
        TrapstatError error = {};
        bool continues = false;
        json_t *reply = NULL;
        SortKey sort;
        Peer p;

        peer_listen(&p);
        /* A short timeout, as the live view's. */
        assert_int_equal(trapstat_client_connect(p.path, 100 * 1000, &c), 0);
        peer_accept(&p);

        assert_int_equal(sort_key_from_name("traps", &sort), 0);
        assert_int_equal(trapstat_watch(c, &(TrapstatWatchRequest) { .sort_by = sort.name, .limit = 7 }), 0);
        call = peer_read_call(&p);
        assert_json(call, "{\"method\": \"io.trapstat.Watch\", \"more\": true, \"parameters\": {\"sortBy\": \"traps\", \"limit\": 7}}");

        /* Nothing yet: a timeout, which ends nothing. */
        assert_int_equal(trapstat_client_read(c, &reply, &continues, &error), -ETIMEDOUT);
        assert_null(reply);

        /* One reply in two pieces, with a timeout between them. */
        peer_write(&p, "{\"parameters\": {\"tick\"");
        assert_int_equal(trapstat_client_read(c, &reply, &continues, &error), -ETIMEDOUT);
        peer_send(&p, ": 1}, \"continues\": true}");
        assert_int_equal(trapstat_client_read(c, &reply, &continues, &error), 0);
        assert_json(reply, "{\"tick\": 1}");
        assert_true(continues);
        json_decref(TAKE_PTR(reply));

        /* The stream ends with an error. */
        peer_send(&p, "{\"error\": \"io.trapstat.QueryTooExpensive\", \"parameters\": {\"limit\": 5}}");
        assert_int_equal(trapstat_client_read(c, &reply, &continues, &error), TRAPSTAT_ERROR_REPLY);
        assert_null(reply);
        assert_string_equal(error.name, TRAPSTAT_ERROR_QUERY_TOO_EXPENSIVE);
        trapstat_error_done(&error);

        /* The default limit is the daemon's: none sent. */
        json_decref(TAKE_PTR(call));
        assert_int_equal(sort_key_from_name("major", &sort), 0);
        assert_int_equal(trapstat_watch(c, &(TrapstatWatchRequest) { .sort_by = sort.name, .filter = &PROCESS_FILTER_NONE }), 0);
        call = peer_read_call(&p);
        assert_json(call, "{\"method\": \"io.trapstat.Watch\", \"more\": true, \"parameters\": {\"sortBy\": \"major\"}}");
        assert_int_equal(trapstat_watch(c, &(TrapstatWatchRequest) {}), -EINVAL);

        /* Each filter member that is set, and only those. */
        json_decref(TAKE_PTR(call));
        {
                ProcessFilter f = { .pids = { 7, 9 }, .n_pids = 2, .uid = 1000, .unit = (char *) "web*.service" };

                assert_int_equal(trapstat_watch(c, &(TrapstatWatchRequest) { .sort_by = sort.name, .filter = &f }), 0);
                call = peer_read_call(&p);
                assert_json(call, "{\"method\": \"io.trapstat.Watch\", \"more\": true, \"parameters\": {\"sortBy\": \"major\", "
                                  "\"pids\": [7, 9], \"uid\": 1000, \"unit\": \"web*.service\"}}");
                json_decref(TAKE_PTR(call));
                f = (ProcessFilter) { .uid = -1, .comm = (char *) "py*" };
                assert_int_equal(trapstat_watch(c, &(TrapstatWatchRequest) { .sort_by = sort.name, .filter = &f }), 0);
                call = peer_read_call(&p);
                assert_json(call, "{\"method\": \"io.trapstat.Watch\", \"more\": true, \"parameters\": {\"sortBy\": \"major\", "
                                  "\"comm\": \"py*\"}}");
        }
        peer_close(&p);
}

/* Only what the query sets is sent: the daemon's defaults apply to the rest. */
static json_t *sites_parameters(const TrapstatSitesQuery *q) {
        json_t *p = NULL;

        return trapstat_sites_parameters(q, &p) == 0 ? p : NULL;
}

static void test_sites_parameters(void **state) {
        _cleanup_json_ json_t *minimal = sites_parameters(&(TrapstatSitesQuery) { .pid = 42, .kind = -1 });
        _cleanup_json_ json_t *full = sites_parameters(&(TrapstatSitesQuery) {
                .pid = 42, .start_time = 987654000000, .since_usec = 1700000000000000,
                .until_usec = 1700000060000000, .kind = SITE_FAULT, .limit = 3 });
        json_t *p = NULL;

        assert_json(minimal, "{\"pid\": 42}");
        assert_json(full, "{\"pid\": 42, \"startTime\": 987654000000, \"sinceUsec\": 1700000000000000,"
                          " \"untilUsec\": 1700000060000000, \"kind\": \"fault\", \"limit\": 3}");
        assert_int_equal(trapstat_sites_parameters(&(TrapstatSitesQuery) { .pid = 0, .kind = -1 }, &p), -EINVAL);
        assert_int_equal(trapstat_sites_parameters(&(TrapstatSitesQuery) { .pid = 1, .kind = _SITE_KIND_MAX }, &p), -EINVAL);
        assert_int_equal(trapstat_sites_parameters(NULL, &p), -EINVAL);
        assert_null(p);
}

/* The sites of a reply, strictly: one malformed site spoils the reply. */
static void test_sites_from_reply(void **state) {
        static const char trap[] = "{\"kind\": \"trap\", \"vector\": \"UD\", \"object\": \"/usr/lib/x/libfoo.so\","
                                   " \"offset\": 4660, \"symbol\": \"foo_init\", \"symbolOffset\": 20, \"count\": 37,"
                                   " \"sampled\": false, \"period\": 1, \"estimated\": 37, \"memory\": \"none\","
                                   " \"memoryObject\": null}";
        static const char fault[] = "{\"kind\": \"fault\", \"vector\": \"PF\", \"object\": \"/usr/bin/app\","
                                    " \"offset\": 10752, \"symbol\": null, \"symbolOffset\": null, \"count\": 100,"
                                    " \"sampled\": true, \"period\": 64, \"estimated\": 6400, \"memory\": \"heap\","
                                    " \"memoryObject\": null}";
        char text[2048];
        SiteCount *sites = NULL;
        size_t n = 99;

        snprintf(text, sizeof(text), "{\"process\": {}, \"sites\": [%s, %s]}", trap, fault);
        {
                _cleanup_json_ json_t *reply = json_loads(text, 0, NULL);

                assert_int_equal(trapstat_sites_from_reply(reply, &sites, &n), 0);
        }
        assert_int_equal(n, 2);
        assert_int_equal(sites[0].kind, SITE_TRAP);
        assert_string_equal(sites[0].symbol, "foo_init");
        assert_int_equal(sites[0].symbol_offset, 20);
        assert_int_equal(sites[1].kind, SITE_FAULT);
        assert_int_equal(sites[1].memory, MEMORY_HEAP);
        assert_int_equal(site_count_estimated(&sites[1]), 6400);
        site_counts_free(sites, n);

        {
                _cleanup_json_ json_t *empty = json_loads("{\"sites\": []}", 0, NULL);

                sites = (SiteCount *) 1;
                assert_int_equal(trapstat_sites_from_reply(empty, &sites, &n), 0);
                assert_null(sites);
                assert_int_equal(n, 0);
        }
        {
                _cleanup_json_ json_t *none = json_loads("{\"process\": {}}", 0, NULL);
                _cleanup_json_ json_t *object = json_loads("{\"sites\": {}}", 0, NULL);

                assert_int_equal(trapstat_sites_from_reply(none, &sites, &n), -EBADMSG);
                assert_int_equal(trapstat_sites_from_reply(object, &sites, &n), -EBADMSG);
                assert_int_equal(trapstat_sites_from_reply(NULL, &sites, &n), -EBADMSG);
        }
        /* The second site claims an estimate that is not count × period. */
        snprintf(text, sizeof(text), "{\"sites\": [%s, %.*s6401%s]}", trap, (int) (strstr(fault, "6400") - fault), fault,
                 strstr(fault, "6400") + 4);
        {
                _cleanup_json_ json_t *reply = json_loads(text, 0, NULL);

                assert_non_null(reply);
                assert_int_equal(trapstat_sites_from_reply(reply, &sites, &n), -EBADMSG);
        }
}

/* The call on the wire, and an older daemon's answer. */
static void test_sites_call(void **state) {
        _cleanup_(trapstat_client_freep) TrapstatClient *c = NULL;
        _cleanup_json_ json_t *call = NULL;
        TrapstatSitesReply reply = {};
        TrapstatError error = {};
        Peer p;

        peer_listen(&p);
        assert_int_equal(trapstat_client_connect(p.path, TIMEOUT_USEC, &c), 0);
        peer_accept(&p);

        peer_send(&p, "{\"parameters\": {\"process\": {\"pid\": 7}, \"sites\": [], \"otherSites\": 4}}");
        assert_int_equal(trapstat_sites(c, &(TrapstatSitesQuery) { .pid = 7, .kind = SITE_TRAP, .limit = 3 }, &reply, &error), 0);
        assert_json(reply.json, "{\"process\": {\"pid\": 7}, \"sites\": [], \"otherSites\": 4}");
        assert_json(reply.process, "{\"pid\": 7}");
        assert_int_equal(reply.n_sites, 0);
        assert_int_equal(reply.other_sites, 4);
        trapstat_sites_reply_done(&reply);
        assert_null(reply.json);
        call = peer_read_call(&p);
        assert_json(call, "{\"method\": \"io.trapstat.Sites\", \"parameters\": {\"pid\": 7, \"kind\": \"trap\", \"limit\": 3}}");

        json_decref(TAKE_PTR(call));
        peer_send(&p, "{\"error\": \"org.varlink.service.MethodNotFound\", \"parameters\": {\"method\": \"io.trapstat.Sites\"}}");
        assert_int_equal(trapstat_sites(c, &(TrapstatSitesQuery) { .pid = 7, .kind = -1 }, &reply, &error),
                         TRAPSTAT_ERROR_REPLY);
        assert_null(reply.json);
        assert_string_equal(error.name, TRAPSTAT_ERROR_METHOD_NOT_FOUND);
        trapstat_error_done(&error);
        call = peer_read_call(&p);
        assert_json(call, "{\"method\": \"io.trapstat.Sites\", \"parameters\": {\"pid\": 7}}");

        /* A reply whose sites are not sites: an error, nothing kept. */
        json_decref(TAKE_PTR(call));
        peer_send(&p, "{\"parameters\": {\"process\": {}, \"sites\": {}}}");
        assert_int_equal(trapstat_sites(c, &(TrapstatSitesQuery) { .pid = 7, .kind = -1 }, &reply, &error), -EBADMSG);
        assert_null(reply.json);
        assert_null(error.name);
        call = peer_read_call(&p);

        assert_int_equal(trapstat_sites(c, &(TrapstatSitesQuery) { .pid = 0, .kind = -1 }, &reply, &error), -EINVAL);
        assert_int_equal(trapstat_sites(c, NULL, &reply, &error), -EINVAL);
        peer_close(&p);
}

/* Each typed call: its parameters on the wire, the members of its reply. */
static void test_typed_calls(void **state) {
        _cleanup_(trapstat_client_freep) TrapstatClient *c = NULL;
        TrapstatError error = {};
        Peer p;

        peer_listen(&p);
        assert_int_equal(trapstat_client_connect(p.path, TIMEOUT_USEC, &c), 0);
        peer_accept(&p);

        {
                _cleanup_(trapstat_status_reply_done) TrapstatStatusReply r = {};
                _cleanup_json_ json_t *call = NULL;

                peer_send(&p, "{\"parameters\": {\"version\": \"0.1.0\", \"arch\": \"x86_64\", \"tickUsec\": 1000000,"
                              " \"processesTracked\": 12, \"drops\": 3, \"faultSamplePeriod\": 256}}");
                assert_int_equal(trapstat_get_status(c, &r, &error), 0);
                assert_string_equal(r.version, "0.1.0");
                assert_string_equal(r.arch, "x86_64");
                assert_int_equal(r.tick_usec, 1000000);
                assert_int_equal(r.processes_tracked, 12);
                assert_int_equal(r.drops, 3);
                assert_int_equal(r.fault_sample_period, 256);
                call = peer_read_call(&p);
                assert_json(call, "{\"method\": \"io.trapstat.GetStatus\"}");
        }
        {
                _cleanup_(trapstat_top_reply_done) TrapstatTopReply r = {};
                _cleanup_json_ json_t *call = NULL;
                ProcessFilter f = { .uid = 1000, .comm = (char *) "py*" };

                peer_send(&p, "{\"parameters\": {\"rows\": [{}]}}");
                assert_int_equal(trapstat_top(c, &(TrapstatTopRequest) { .window_sec = 60, .sort_by = "major", .limit = 5,
                                                                          .filter = &f },
                                              &r, &error),
                                 0);
                assert_int_equal(json_array_size(r.rows), 1);
                assert_int_equal(r.other_processes, -1); /* an older daemon */
                call = peer_read_call(&p);
                assert_json(call, "{\"method\": \"io.trapstat.Top\", \"parameters\": {\"windowSec\": 60, \"sortBy\": \"major\","
                                  " \"limit\": 5, \"uid\": 1000, \"comm\": \"py*\"}}");
        }
        {
                _cleanup_(trapstat_top_reply_done) TrapstatTopReply r = {};
                _cleanup_json_ json_t *call = NULL;

                ProcessFilter f = { .uid = -1, .container = (char *) "0123abcd" };

                peer_send(&p, "{\"parameters\": {\"rows\": [], \"otherProcesses\": 0}}");
                assert_int_equal(trapstat_top(c, &(TrapstatTopRequest) { .filter = &f }, &r, &error), 0);
                call = peer_read_call(&p);
                assert_json(call, "{\"method\": \"io.trapstat.Top\", \"parameters\": {\"container\": \"0123abcd\"}}");
        }
        {
                _cleanup_(trapstat_history_reply_done) TrapstatHistoryReply r = {};
                _cleanup_json_ json_t *call = NULL;

                peer_send(&p, "{\"parameters\": {\"process\": {\"startTime\": 55}, \"total\": {}, \"samples\": []}}");
                assert_int_equal(trapstat_history(c, &(TrapstatHistoryRequest) { .pid = 9, .start_time = 0, .resolution_sec = 60 },
                                                  &r, &error),
                                 0);
                assert_int_equal(r.start_time, 55);
                assert_true(json_is_array(r.samples));
                call = peer_read_call(&p);
                /* start_time 0 is an incarnation; -1 is none. */
                assert_json(call, "{\"method\": \"io.trapstat.History\", \"parameters\": {\"pid\": 9, \"startTime\": 0,"
                                  " \"resolutionSec\": 60}}");
        }
        {
                _cleanup_(trapstat_unit_history_reply_done) TrapstatUnitHistoryReply r = {};
                _cleanup_json_ json_t *call = NULL;

                peer_send(&p, "{\"parameters\": {\"units\": [\"a.service\"], \"processes\": 4, \"running\": 1,"
                              " \"total\": {}, \"samples\": []}}");
                assert_int_equal(trapstat_unit_history(c, &(TrapstatUnitHistoryRequest) { .unit = "a.service", .since_usec = 5 },
                                                       &r, &error),
                                 0);
                assert_int_equal(r.processes, 4);
                assert_int_equal(r.running, 1);
                call = peer_read_call(&p);
                assert_json(call, "{\"method\": \"io.trapstat.UnitHistory\", \"parameters\": {\"unit\": \"a.service\","
                                  " \"sinceUsec\": 5}}");
        }
        {
                _cleanup_(trapstat_container_history_reply_done) TrapstatContainerHistoryReply r = {};
                _cleanup_json_ json_t *call = NULL;
                TrapstatContainerHistoryRequest q = { .container = "web", .until_usec = 9, .resolution_sec = 60 };

                peer_send(&p, "{\"parameters\": {\"containers\": [{\"runtime\": \"machined\", \"id\": \"web\","
                              " \"name\": \"web\", \"pod\": null, \"user\": null}], \"processes\": 3, \"running\": 2,"
                              " \"total\": {}, \"samples\": []}}");
                assert_int_equal(trapstat_container_history(c, &q, &r, &error), 0);
                assert_int_equal(r.processes, 3);
                assert_int_equal(r.running, 2);
                assert_int_equal(json_array_size(r.containers), 1);
                assert_true(json_is_object(r.total));
                assert_true(json_is_array(r.samples));
                call = peer_read_call(&p);
                assert_json(call, "{\"method\": \"io.trapstat.ContainerHistory\", \"parameters\":"
                                  " {\"container\": \"web\", \"untilUsec\": 9, \"resolutionSec\": 60}}");
        }
        {
                _cleanup_(trapstat_unit_totals_reply_done) TrapstatUnitTotalsReply r = {};
                _cleanup_json_ json_t *call = NULL;

                peer_send(&p, "{\"parameters\": {\"sinceUsec\": 17, \"units\": [], \"otherUnits\": 2, \"total\": {}}}");
                assert_int_equal(trapstat_unit_totals(c, &(TrapstatUnitTotalsRequest) { .limit = 10 }, &r, &error), 0);
                assert_true(r.has_since);
                assert_int_equal(r.since_usec, 17);
                assert_int_equal(r.other_units, 2);
                call = peer_read_call(&p);
                assert_json(call, "{\"method\": \"io.trapstat.UnitTotals\", \"parameters\": {\"limit\": 10}}");
        }
        {
                _cleanup_(trapstat_list_processes_reply_done) TrapstatListProcessesReply r = {};
                _cleanup_json_ json_t *call = NULL;
                TrapstatListProcessesRequest q = { .pid = 3, .include_exited = true, .container = "web" };

                peer_send(&p, "{\"parameters\": {\"processes\": [], \"otherProcesses\": 0}}");
                assert_int_equal(trapstat_list_processes(c, &q, &r, &error), 0);
                assert_int_equal(r.other_processes, 0);
                call = peer_read_call(&p);
                assert_json(call, "{\"method\": \"io.trapstat.ListProcesses\", \"parameters\": {\"pid\": 3,"
                                  " \"includeExited\": true, \"container\": \"web\"}}");
        }
        {
                _cleanup_(trapstat_traps_reply_done) TrapstatTrapsReply r = {};
                _cleanup_json_ json_t *call = NULL;

                peer_send(&p, "{\"parameters\": {\"traps\": {\"UD\": 2}, \"signals\": {}, \"signalCodes\": {}, \"processes\": 1}}");
                assert_int_equal(trapstat_traps(c, &(TrapstatTrapsRequest) { .window_sec = 3600 }, &r, &error), 0);
                assert_int_equal(r.processes, 1);
                assert_int_equal(json_integer_value(json_object_get(r.traps, "UD")), 2);
                call = peer_read_call(&p);
                assert_json(call, "{\"method\": \"io.trapstat.Traps\", \"parameters\": {\"windowSec\": 3600}}");
        }
        /* An error reply: -EBADR with the error, the reply untouched. */
        {
                TrapstatTrapsReply r = {};

                peer_send(&p, "{\"error\": \"io.trapstat.QueryTooSlow\", \"parameters\": {\"limitMsec\": 5000}}");
                assert_int_equal(trapstat_traps(c, &(TrapstatTrapsRequest) {}, &r, &error), -EBADR);
                assert_null(r.json);
                assert_string_equal(error.name, TRAPSTAT_ERROR_QUERY_TOO_SLOW);
                trapstat_error_done(&error);
                json_decref(peer_read_call(&p));
        }
        peer_close(&p);
}

/* The IDL's methods as its parser reads them: every one has its function in the library's
 * table, and the table names no method the IDL lacks. */
static void test_every_method_has_a_function(void **state) {
        VarlinkInterface *idl = NULL;
        char error[256] = "";

        assert_int_equal(embedded_varlink_count, 1);
        assert_int_equal(varlink_interface_parse(embedded_varlink[0].text, &idl, error, sizeof(error)), 0);
        for (size_t i = 0; i < varlink_interface_n_methods(idl); i++) {
                const char *name = varlink_interface_method_name(idl, i);
                bool found = false;

                for (size_t k = 0; k < trapstat_client_n_methods; k++)
                        if (strcmp(trapstat_client_methods[k].name, name) == 0) {
                                assert_false(found);
                                assert_non_null(trapstat_client_methods[k].function);
                                found = true;
                        }
                if (!found)
                        fail_msg("io.trapstat.%s has no function in libtrapstat-client (trapstat_client_methods[])", name);
        }
        for (size_t k = 0; k < trapstat_client_n_methods; k++)
                if (!varlink_interface_has_method(idl, trapstat_client_methods[k].name))
                        fail_msg("trapstat_client_methods[] names %s, which io.trapstat does not declare",
                                 trapstat_client_methods[k].name);
        varlink_interface_free(idl);
}

/* What each function sends is what the IDL accepts: the least and the most a request sets. */
static void assert_valid(const VarlinkInterface *idl, const char *method, int r, json_t *parameters) {
        const char *field = NULL;

        assert_int_equal(r, 0);
        if (varlink_interface_validate_input(idl, method, parameters, &field) != 0)
                fail_msg("the parameters of %s are not what io.trapstat declares: %s", method, field ?: "(not an object)");
        json_decref(parameters);
}

static void test_parameters_match_the_idl(void **state) {
        ProcessFilter f = { .pids = { 7, 9 }, .n_pids = 2, .uid = 1000, .unit = (char *) "web*.service",
                            .comm = (char *) "py*", .container = (char *) "0123abcd", .pidns = 4026531836 };
        VarlinkInterface *idl = NULL;
        json_t *j = NULL;
        int r;

        assert_int_equal(varlink_interface_parse(embedded_varlink[0].text, &idl, NULL, 0), 0);
        r = trapstat_top_parameters(&(TrapstatTopRequest) {}, &j);
        assert_valid(idl, "Top", r, j);
        r = trapstat_top_parameters(&(TrapstatTopRequest) { .window_sec = 60, .sort_by = "traps", .limit = 3, .filter = &f }, &j);
        assert_valid(idl, "Top", r, j);
        r = trapstat_history_parameters(&(TrapstatHistoryRequest) { .pid = 1, .start_time = -1 }, &j);
        assert_valid(idl, "History", r, j);
        r = trapstat_history_parameters(&(TrapstatHistoryRequest) { .pid = 1, .start_time = 5, .since_usec = 1, .until_usec = 2,
                                                                    .resolution_sec = 10 },
                                        &j);
        assert_valid(idl, "History", r, j);
        r = trapstat_unit_history_parameters(&(TrapstatUnitHistoryRequest) { .unit = "a.service", .since_usec = 1, .until_usec = 2,
                                                                             .resolution_sec = 60 },
                                             &j);
        assert_valid(idl, "UnitHistory", r, j);
        r = trapstat_container_history_parameters(&(TrapstatContainerHistoryRequest) { .container = "web" }, &j);
        assert_valid(idl, "ContainerHistory", r, j);
        r = trapstat_container_history_parameters(&(TrapstatContainerHistoryRequest) { .container = "0123abcd",
                                                                                       .since_usec = 1, .until_usec = 2,
                                                                                       .resolution_sec = 60 },
                                                  &j);
        assert_valid(idl, "ContainerHistory", r, j);
        r = trapstat_unit_totals_parameters(&(TrapstatUnitTotalsRequest) { .limit = 5 }, &j);
        assert_valid(idl, "UnitTotals", r, j);
        r = trapstat_sites_parameters(&(TrapstatSitesQuery) { .pid = 1, .start_time = 5, .since_usec = 1, .until_usec = 2,
                                                              .kind = SITE_FAULT, .limit = 3 },
                                      &j);
        assert_valid(idl, "Sites", r, j);
        r = trapstat_list_processes_parameters(&(TrapstatListProcessesRequest) { .pid = 1, .include_exited = true, .comm = "a",
                                                                                 .unit = "b", .container = "c",
                                                                                 .limit = 2 },
                                               &j);
        assert_valid(idl, "ListProcesses", r, j);
        r = trapstat_watch_parameters(&(TrapstatWatchRequest) { .sort_by = "user", .limit = 4, .filter = &f }, &j);
        assert_valid(idl, "Watch", r, j);
        r = trapstat_traps_parameters(&(TrapstatTrapsRequest) { .window_sec = 60 }, &j);
        assert_valid(idl, "Traps", r, j);

        /* What the IDL requires, a request must set. */
        assert_int_equal(trapstat_history_parameters(&(TrapstatHistoryRequest) { .start_time = -1 }, &j), -EINVAL);
        assert_int_equal(trapstat_unit_history_parameters(&(TrapstatUnitHistoryRequest) {}, &j), -EINVAL);
        assert_int_equal(trapstat_container_history_parameters(&(TrapstatContainerHistoryRequest) {}, &j), -EINVAL);
        assert_int_equal(trapstat_watch_parameters(&(TrapstatWatchRequest) {}, &j), -EINVAL);
        varlink_interface_free(idl);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_error_message), cmocka_unit_test(test_error_message_other),
                cmocka_unit_test(test_error_done),    cmocka_unit_test(test_connect_missing),
                cmocka_unit_test(test_call),          cmocka_unit_test(test_watch),
                cmocka_unit_test(test_sites_parameters), cmocka_unit_test(test_sites_from_reply),
                cmocka_unit_test(test_sites_call),    cmocka_unit_test(test_typed_calls),
                cmocka_unit_test(test_every_method_has_a_function), cmocka_unit_test(test_parameters_match_the_idl),
        };
        /* Written with x86's trap names, whatever the machine (common/traps.h). */
        trap_arch = TRAP_ARCH_X86;
        return cmocka_run_group_tests(tests, NULL, NULL);
}
