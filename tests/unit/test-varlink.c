/* SPDX-License-Identifier: MIT */
/* Tests for the varlink library (common/varlink-*.c): framing and call-header parsing on their own,
 * then the server and client end to end. The server's event loop runs in a thread; the (blocking)
 * client and every assertion stay in the main thread, because cmocka's failure longjmp must not
 * cross threads. */

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* cmocka.h needs these first. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "embedded.h"
#include "json-util.h"
#include "varlink.h"

#define TEST_MAX_MESSAGE_SIZE 4096U
#define TEST_MAX_CONNECTIONS 4U
#define CLIENT_TIMEOUT_USEC (10U * 1000000U)
#define BLOB_SIZE 2000U

static const char test_description[] =
        "# A test interface.\n"
        "interface org.example.test\n"
        "\n"
        "# Returns its parameters.\n"
        "method Echo(a: ?int, b: ?[]string, n: ?int, alive: ?bool, first: ?bool)\n"
        "    -> (a: ?int, b: ?[]string, n: ?int, alive: ?bool, first: ?bool)\n"
        "method Stream() -> (i: int)\n"
        "method Whoami() -> (uid: int, pid: int, method: string)\n"
        "method Blob(seq: int) -> (seq: int, data: string)\n"
        "method Stats() -> (blobs: int, connections: int)\n"
        "method Misuse() -> (continuesWithoutMore: int)\n"
        "method Fail() -> ()\n"
        "method Silent() -> ()\n"
        "# A stream answered by a timer after the handler returned; ends after `count` replies\n"
        "# (0: never), each with `size` bytes of data.\n"
        "method Ticks(count: int, size: int) -> (i: int, data: string)\n"
        "method TickStats() -> (sent: int, skipped: int, closed: int, maxQueued: int)\n"
        "# Answered later, from a timer, with a reply built element by element.\n"
        "method Deferred(n: int) -> (items: []int, n: int)\n"
        "error Late ()\n";

/* ---- helpers ---- */

static void evbuffer_freep(struct evbuffer **b) {
        if (*b)
                evbuffer_free(*b);
}
#define _cleanup_evbuffer_ _cleanup_(evbuffer_freep)

DEFINE_TRIVIAL_CLEANUP_FUNC(VarlinkClient *, varlink_client_free);
#define _cleanup_client_ _cleanup_(varlink_client_freep)

static void add_string(struct evbuffer *b, const char *s) {
        assert_int_equal(evbuffer_add(b, s, strlen(s) + 1), 0); /* with the NUL */
}

static void assert_json_equal(const json_t *a, const char *expected) {
        json_error_t error;
        _cleanup_json_ json_t *e = json_loads(expected, 0, &error);

        assert_non_null(e);
        if (!json_equal(a, e)) {
                _cleanup_free_ char *s = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS);
                fail_msg("got %s, expected %s", s, expected);
        }
}

/* ---- framing ---- */

static void test_read_partial(void **state _unused_) {
        _cleanup_evbuffer_ struct evbuffer *b = evbuffer_new();
        const char msg[] = "{\"a\":[1,2]}"; /* sizeof includes the NUL */
        _cleanup_json_ json_t *m = NULL;

        for (size_t i = 0; i < sizeof(msg) - 1; i++) {
                assert_int_equal(evbuffer_add(b, &msg[i], 1), 0);
                assert_int_equal(varlink_message_read(b, 1024, &m), 0);
                assert_null(m);
                assert_int_equal(evbuffer_get_length(b), i + 1); /* nothing consumed */
        }
        assert_int_equal(evbuffer_add(b, "", 1), 0);
        assert_int_equal(varlink_message_read(b, 1024, &m), 1);
        assert_json_equal(m, "{\"a\":[1,2]}");
        assert_int_equal(evbuffer_get_length(b), 0);
}

static void test_read_two(void **state _unused_) {
        _cleanup_evbuffer_ struct evbuffer *b = evbuffer_new();
        _cleanup_json_ json_t *m1 = NULL, *m2 = NULL, *m3 = NULL;

        add_string(b, "{\"n\":1}");
        add_string(b, "{\"n\":2}");
        assert_int_equal(varlink_message_read(b, 1024, &m1), 1);
        assert_int_equal(varlink_message_read(b, 1024, &m2), 1);
        assert_int_equal(varlink_message_read(b, 1024, &m3), 0);
        assert_json_equal(m1, "{\"n\":1}");
        assert_json_equal(m2, "{\"n\":2}");
        assert_null(m3);
}

static void test_read_too_big(void **state _unused_) {
        _cleanup_evbuffer_ struct evbuffer *b = evbuffer_new();
        _cleanup_json_ json_t *m = NULL;

        /* Exactly max bytes without NUL may still become a valid message; one more may not. */
        assert_int_equal(evbuffer_add(b, "{\"a\":\"xxxxx", 11), 0);
        assert_int_equal(varlink_message_read(b, 11, &m), 0);
        assert_int_equal(evbuffer_add(b, "x", 1), 0);
        assert_int_equal(varlink_message_read(b, 11, &m), -EMSGSIZE);

        /* A complete message of max bytes is fine, one of max+1 is not. */
        evbuffer_drain(b, evbuffer_get_length(b));
        add_string(b, "{\"a\":\"xx\"}"); /* 10 bytes */
        assert_int_equal(varlink_message_read(b, 9, &m), -EMSGSIZE);
        assert_int_equal(varlink_message_read(b, 10, &m), 1);
        assert_json_equal(m, "{\"a\":\"xx\"}");
}

static void test_read_bad(void **state _unused_) {
        _cleanup_evbuffer_ struct evbuffer *b = evbuffer_new();
        _cleanup_json_ json_t *m = NULL;

        add_string(b, "{not json");
        add_string(b, "[1,2]");
        add_string(b, "42");
        add_string(b, "");
        add_string(b, "[\"dup\",\"\\u0000\"]"); /* "\u0000" in no object */
        add_string(b, "{\"ok\":true}");
        /* Each bad message is consumed, so the good one after them still parses. */
        for (int i = 0; i < 5; i++)
                assert_int_equal(varlink_message_read(b, 1024, &m), -EBADMSG);
        assert_null(m);
        assert_int_equal(varlink_message_read(b, 1024, &m), 1);
        assert_json_equal(m, "{\"ok\":true}");
}

/* Numbers JSON allows but int64/double cannot hold become a marker string, so that the IDL check
 * can name the member instead of the whole message being refused. */
static void test_read_out_of_range(void **state _unused_) {
        _cleanup_evbuffer_ struct evbuffer *b = evbuffer_new();
        _cleanup_json_ json_t *m = NULL, *m2 = NULL, *m3 = NULL;

        add_string(b, "{\"pid\":9223372036854775808,\"n\":[1,-9223372036854775809],\"r\":1e400,"
                      "\"ok\":9223372036854775807}");
        assert_int_equal(varlink_message_read(b, 1024, &m), 1);
        assert_json_equal(m, "{\"pid\":\"out of range\",\"n\":[1,\"out of range\"],\"r\":\"out of range\","
                             "\"ok\":9223372036854775807}");
        /* Still invalid JSON around it: refused as before. */
        add_string(b, "{\"pid\":99999999999999999999,}");
        assert_int_equal(varlink_message_read(b, 1024, &m2), -EBADMSG);
        add_string(b, "{\"after\":true}");
        assert_int_equal(varlink_message_read(b, 1024, &m3), 1);
        assert_json_equal(m3, "{\"after\":true}");
}

/* The mark of varlink_message_read(): a string holding only "\u0000". */
static bool is_mark(json_t *v) {
        return json_is_string(v) && json_string_length(v) == 1 && json_string_value(v)[0] == '\0';
}

/* A duplicate key or "\u0000" in a string, at every depth, in keys and values: the message is read
 * and the member of the message, or of its parameters, that holds the first of them is marked;
 * the rest is read as it is (the last of duplicates; keys holding "\u0000" renamed to their text).
 * The message after each is read as usual. */
static void test_read_marked(void **state _unused_) {
        static const struct {
                const char *in, *top, *param; /* param NULL: top is marked in the message itself */
        } cases[] = {
                /* parameters, at their own depth and below */
                { "{\"method\":\"a.B\",\"parameters\":{\"x\":1,\"x\":2}}", "parameters", "x" },
                { "{\"method\":\"a.B\",\"parameters\":{\"x\":\"a\\u0000\"}}", "parameters", "x" },
                { "{\"method\":\"a.B\",\"parameters\":{\"x\":{\"y\":{\"z\":1,\"z\":2}}}}", "parameters", "x" },
                { "{\"method\":\"a.B\",\"parameters\":{\"x\":[{\"y\":1},{\"y\":1,\"y\":1}]}}", "parameters", "x" },
                { "{\"method\":\"a.B\",\"parameters\":{\"w\":[\"\\u0000\"],\"x\":[\"ok\",\"\\u0000\"]}}", "parameters", "w" },
                { "{\"method\":\"a.B\",\"parameters\":{\"x\":{\"k\\u0000\":1}}}", "parameters", "x" },
                { "{\"method\":\"a.B\",\"parameters\":{\"x\":[[[{\"\\u0000\":{}}]]]}}", "parameters", "x" },
                { "{\"method\":\"a.B\",\"parameters\":{\"a\\u0000b\":1}}", "parameters", "a\\u0000b" },
                { "{\"parameters\":{\"\\u0078\":1,\"x\":2},\"method\":\"a.B\"}", "parameters", "x" },
                { "{\"parameters\":{\"a\\\"b\":1,\"a\\\"b\":2},\"method\":\"a.B\"}", "parameters", "a\"b" },
                /* the message's own members */
                { "{\"method\":\"a.B\",\"method\":\"c.D\"}", "method", NULL },
                { "{\"method\":\"a.B\\u0000c\"}", "method", NULL },
                { "{\"method\":\"a.B\",\"parameters\":{},\"parameters\":{}}", "parameters", NULL },
                { "{\"method\":\"a.B\",\"parameters\":[\"\\u0000\"]}", "parameters", NULL },
                { "{\"method\":\"a.B\",\"m\\u0000\":1}", "m\\u0000", NULL },
                { "{\"more\":{\"a\":1,\"a\":1},\"method\":\"a.B\"}", "more", NULL },
                /* "parameters" spelled with an escape is still the parameters */
                { "{\"method\":\"a.B\",\"par\\u0061meters\":{\"x\":1,\"x\":2}}", "parameters", "x" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_evbuffer_ struct evbuffer *b = evbuffer_new();
                _cleanup_json_ json_t *m = NULL, *next = NULL;
                json_t *holder;

                add_string(b, cases[i].in);
                add_string(b, "{\"next\":true}");
                if (varlink_message_read(b, 1024, &m) != 2)
                        fail_msg("not marked: %s", cases[i].in);
                holder = cases[i].param ? json_object_get(m, cases[i].top) : m;
                if (!is_mark(json_object_get(holder, cases[i].param ?: cases[i].top)))
                        fail_msg("%s: %s not marked", cases[i].in, cases[i].param ?: cases[i].top);
                assert_int_equal(varlink_message_read(b, 1024, &next), 1);
                assert_json_equal(next, "{\"next\":true}");
        }
}

/* After the first mark the rest of the message is read in one more parse: the last of later
 * duplicates, every "\u0000" (keys, values) as its text, numbers out of range still replaced; a
 * string that only looks like "\u0000" is no mark; 1000 keys holding "\u0000" cost one parse. */
static void test_read_marked_rest(void **state _unused_) {
        _cleanup_evbuffer_ struct evbuffer *b = evbuffer_new();
        _cleanup_json_ json_t *m1 = NULL, *m2 = NULL, *m3 = NULL, *m4 = NULL;
        _cleanup_free_ char *many = NULL;
        json_t *p;
        size_t size = 0;
        FILE *f;

        add_string(b, "{\"method\":\"a.B\",\"parameters\":{\"n\":99999999999999999999,\"x\":1,\"x\":2,"
                      "\"y\":\"\\u0000\",\"z\\u0000\":3,\"y\":[1]}}");
        assert_int_equal(varlink_message_read(b, 1024, &m1), 2);
        p = json_object_get(m1, "parameters");
        assert_string_equal(json_string_value(json_object_get(p, "n")), "out of range");
        assert_true(is_mark(json_object_get(p, "x")));
        assert_json_equal(json_object_get(p, "y"), "[1]");
        assert_int_equal(json_integer_value(json_object_get(p, "z\\u0000")), 3);
        assert_int_equal(json_object_size(p), 4);
        add_string(b, "{\"method\":\"a.B\",\"parameters\":{\"x\":\"\\u0000\",\"y\":\"\\u0000\\\\\\u0000\"}}");
        json_decref(m1);
        assert_int_equal(varlink_message_read(b, 1024, &m1), 2);
        p = json_object_get(m1, "parameters");
        assert_true(is_mark(json_object_get(p, "x")));
        assert_string_equal(json_string_value(json_object_get(p, "y")), "\\u0000\\\\u0000");

        add_string(b, "{\"s\":\"\\\\u0000\"}"); /* a backslash, then u0000 */
        assert_int_equal(varlink_message_read(b, 1024, &m2), 1);
        assert_string_equal(json_string_value(json_object_get(m2, "s")), "\\u0000");

        f = open_memstream(&many, &size);
        assert_non_null(f);
        fputs("{\"method\":\"a.B\",\"parameters\":{", f);
        for (int i = 0; i < 1000; i++)
                fprintf(f, "%s\"k%d\\u0000\":1", i ? "," : "", i);
        fputs("}}", f);
        assert_int_equal(fclose(f), 0);
        add_string(b, many);
        add_string(b, "{\"ok\":1}");
        assert_int_equal(varlink_message_read(b, 65536, &m3), 2);
        p = json_object_get(m3, "parameters");
        assert_true(is_mark(json_object_get(p, "k0\\u0000")));
        assert_int_equal(json_integer_value(json_object_get(p, "k999\\u0000")), 1);
        assert_int_equal(json_object_size(p), 1000);
        assert_int_equal(varlink_message_read(b, 4096, &m4), 1);
}

static void test_write_read(void **state _unused_) {
        _cleanup_evbuffer_ struct evbuffer *b = evbuffer_new();
        _cleanup_json_ json_t *in = NULL, *out = NULL, *nul = NULL, *array = json_array();
        const char *p;
        size_t len;

        in = json_pack("{s:s, s:i, s:{s:b}, s:[]}", "s", "tab\t quote\" \xc3\xa9", "n", -7, "o", "t", 1, "a");
        assert_non_null(in);
        assert_int_equal(varlink_message_write(b, in), 0);

        len = evbuffer_get_length(b);
        p = (const char *) evbuffer_pullup(b, -1);
        assert_true(len > 1);
        assert_int_equal(p[len - 1], '\0');
        assert_null(memchr(p, '\0', len - 1));
        assert_null(memchr(p, '\n', len - 1)); /* compact */

        assert_int_equal(varlink_message_read(b, 1024, &out), 1);
        assert_true(json_equal(in, out));
        assert_int_equal(evbuffer_get_length(b), 0);

        /* An embedded U+0000 is escaped on the wire (it would end the message early otherwise),
         * and marked on reading (test_read_marked()), since names and values are used as C
         * strings. */
        nul = json_pack("{s:s%}", "s", "a\0b", (size_t) 3);
        assert_non_null(nul);
        assert_int_equal(varlink_message_write(b, nul), 0);
        len = evbuffer_get_length(b);
        assert_null(memchr(evbuffer_pullup(b, -1), '\0', len - 1));
        json_decref(out);
        assert_int_equal(varlink_message_read(b, 1024, &out), 2);
        assert_int_equal(json_string_length(json_object_get(out, "s")), 1); /* the mark: "\u0000" */
        assert_int_equal(evbuffer_get_length(b), 0);

        /* Only objects are messages. */
        assert_int_equal(varlink_message_write(b, array), -EINVAL);
        assert_int_equal(evbuffer_get_length(b), 0);
}

/* ---- call header ---- */

static int parse(const char *s, VarlinkCallHeader *ret) {
        _cleanup_json_ json_t *m = json_loads(s, 0, NULL);

        assert_non_null(m);
        return varlink_call_header_parse(m, ret);
}

static void test_header_valid(void **state _unused_) {
        _cleanup_json_ json_t *m = NULL;
        VarlinkCallHeader h;

        m = json_loads("{\"method\":\"io.trapstat.Top\",\"parameters\":{\"n\":3},\"more\":true,\"oneway\":false}", 0, NULL);
        assert_int_equal(varlink_call_header_parse(m, &h), 0);
        assert_string_equal(h.method, "io.trapstat.Top");
        assert_json_equal(h.parameters, "{\"n\":3}");
        assert_true(h.more);
        assert_false(h.oneway);
        assert_false(h.upgrade);
        json_decref(m);

        /* Absent parameters become an empty object. */
        m = json_loads("{\"method\":\"a.B\",\"upgrade\":true}", 0, NULL);
        assert_int_equal(varlink_call_header_parse(m, &h), 0);
        assert_string_equal(h.method, "a.B");
        assert_true(json_is_object(h.parameters));
        assert_int_equal(json_object_size(h.parameters), 0);
        assert_false(h.more);
        assert_true(h.upgrade);
}

static void test_header_invalid(void **state _unused_) {
        static const char *const bad[] = {
                "{}",                                        /* missing method */
                "{\"parameters\":{}}",                       /* missing method */
                "{\"method\":42}",                           /* method not a string */
                "{\"method\":\"NoDot\"}",                    /* method without a dot */
                "{\"method\":\".Foo\"}",                     /* empty interface */
                "{\"method\":\"a.b.\"}",                     /* empty method name */
                "{\"method\":\"a.B\",\"parameters\":[]}",    /* non-object parameters */
                "{\"method\":\"a.B\",\"parameters\":null}",  /* non-object parameters */
                "{\"method\":\"a.B\",\"more\":1}",           /* non-bool more */
                "{\"method\":\"a.B\",\"oneway\":\"yes\"}",   /* non-bool oneway */
                "{\"method\":\"a.B\",\"upgrade\":null}",     /* non-bool upgrade */
                "{\"method\":\"a.B\",\"extra\":true}",       /* unknown key */
        };
        VarlinkCallHeader h = { .method = "untouched" };
        _cleanup_json_ json_t *array = json_array(), *m = NULL;

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                if (parse(bad[i], &h) != -EBADMSG)
                        fail_msg("accepted %s", bad[i]);
                assert_string_equal(h.method, "untouched"); /* ret written only on success */
        }
        assert_int_equal(varlink_call_header_parse(array, &h), -EBADMSG);

        /* A member marked by varlink_message_read() is named, whatever else is wrong. */
        m = json_pack("{s:s, s:s%, s:i}", "method", "a.B", "more", "", (size_t) 1, "extra", 1);
        assert_non_null(m);
        assert_int_equal(varlink_call_header_parse(m, &h), 0);
        assert_string_equal(h.invalid, "more");
        assert_null(h.method);
}

/* ---- server and client ---- */

typedef struct TestServer {
        char dir[64], path[128];
        struct event_base *base;
        VarlinkServer *server;
        int stop_pipe[2];
        struct event *stop;
        pthread_t thread;

        unsigned n_blobs;            /* server thread only */
        /* Ticks: the kept call, fed every TICK_USEC by a timer (server thread only). */
        VarlinkCall *kept;
        struct event *tick;
        VarlinkCall *deferred; /* Deferred: answered by the `later` timer */
        int deferred_n;
        struct event *later;
        int tick_count, tick_size, sent, skipped, closed;
        size_t max_queued;
        atomic_int after_final[2];   /* results of replying after the final reply (Misuse) */
} TestServer;

static int method_echo(VarlinkCall *call, json_t *parameters, void *userdata _unused_) {
        return varlink_call_reply(call, json_incref(parameters), false);
}

/* Declared VARLINK_METHOD_MORE: the server answers calls without "more" itself. */
static int method_stream(VarlinkCall *call, json_t *parameters _unused_, void *userdata _unused_) {
        int r;

        assert_true(varlink_call_more(call));
        for (int i = 0; i < 3; i++) {
                r = varlink_call_reply(call, json_pack("{s:i}", "i", i), i < 2);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int method_whoami(VarlinkCall *call, json_t *parameters _unused_, void *userdata _unused_) {
        return varlink_call_reply(call,
                                  json_pack("{s:I, s:I, s:s}", "uid", (json_int_t) varlink_call_peer_uid(call), "pid",
                                            (json_int_t) varlink_call_peer_pid(call), "method", varlink_call_method(call)),
                                  false);
}

/* A small call with a large reply, numbered so the client can check the order. */
static int method_blob(VarlinkCall *call, json_t *parameters, void *userdata) {
        TestServer *t = userdata;
        char data[BLOB_SIZE + 1];

        t->n_blobs++;
        memset(data, 'x', BLOB_SIZE);
        data[BLOB_SIZE] = '\0';
        return varlink_call_reply(call, json_pack("{s:O, s:s}", "seq", json_object_get(parameters, "seq"), "data", data),
                                  false);
}

static int method_stats(VarlinkCall *call, json_t *parameters _unused_, void *userdata) {
        TestServer *t = userdata;

        return varlink_call_reply(call,
                                  json_pack("{s:i, s:i}", "blobs", (int) t->n_blobs, "connections",
                                            (int) varlink_server_n_connections(t->server)),
                                  false);
}

/* Breaks the reply rules on purpose; the return codes go back to the test. */
static int method_misuse(VarlinkCall *call, json_t *parameters _unused_, void *userdata) {
        TestServer *t = userdata;
        int continues_without_more, r;

        continues_without_more = varlink_call_reply(call, NULL, true);
        r = varlink_call_reply(call, json_pack("{s:i}", "continuesWithoutMore", continues_without_more), false);
        if (r < 0)
                return r;
        /* The reply is only queued; the loop writes it after we return, so these are stored
         * before the client can see it. */
        atomic_store(&t->after_final[0], varlink_call_reply(call, NULL, false));
        atomic_store(&t->after_final[1], varlink_call_error(call, "org.example.test.Late", NULL));
        return 0;
}

static int method_fail(VarlinkCall *call _unused_, json_t *parameters _unused_, void *userdata _unused_) {
        return -EIO;
}

static int method_silent(VarlinkCall *call _unused_, json_t *parameters _unused_, void *userdata _unused_) {
        return 0;
}

#define TICK_USEC 10000

static void on_kept_close(VarlinkCall *call, void *userdata) {
        TestServer *t = userdata;

        assert_ptr_equal(call, t->kept);
        t->closed++;
        t->kept = varlink_call_unref(t->kept);
}

/* One tick of the Ticks stream: skipped while the client has not taken the last reply. */
static void on_tick(evutil_socket_t fd _unused_, short what _unused_, void *userdata) {
        TestServer *t = userdata;
        size_t queued;
        bool last;
        char *data;

        if (!t->kept)
                return;
        queued = varlink_call_queued_bytes(t->kept);
        t->max_queued = queued > t->max_queued ? queued : t->max_queued;
        if (queued > 0) {
                t->skipped++;
                return;
        }
        data = calloc(1, (size_t) t->tick_size + 1);
        assert_non_null(data);
        memset(data, 'x', (size_t) t->tick_size);
        last = t->tick_count > 0 && t->sent + 1 == t->tick_count;
        assert_int_equal(varlink_call_reply(t->kept, json_pack("{s:i, s:s}", "i", t->sent, "data", data), !last), 0);
        free(data);
        t->sent++;
        if (last)
                t->kept = varlink_call_unref(t->kept);
}

static int method_ticks(VarlinkCall *call, json_t *parameters, void *userdata) {
        TestServer *t = userdata;
        struct timeval tv = { .tv_usec = TICK_USEC };

        if (t->kept) /* one stream at a time in this test server */
                return varlink_call_error(call, "org.example.test.Late", NULL);
        t->tick_count = (int) json_integer_value(json_object_get(parameters, "count"));
        t->tick_size = (int) json_integer_value(json_object_get(parameters, "size"));
        t->sent = t->skipped = 0;
        t->max_queued = 0;
        assert_int_equal(varlink_call_keep(call, on_kept_close, t, &t->kept), 0);
        /* Keeping twice, or replying to the handler's own pointer, is the caller's bug. */
        assert_int_equal(varlink_call_keep(call, on_kept_close, t, &(VarlinkCall *) { NULL }), -EINVAL);
        if (!t->tick) {
                t->tick = event_new(t->base, -1, EV_PERSIST, on_tick, t);
                assert_non_null(t->tick);
        }
        return event_add(t->tick, &tv) < 0 ? -ENOMEM : 0;
}

static int method_tick_stats(VarlinkCall *call, json_t *parameters _unused_, void *userdata) {
        TestServer *t = userdata;

        return varlink_call_reply(call,
                                  json_pack("{s:i, s:i, s:i, s:I}", "sent", t->sent, "skipped", t->skipped, "closed",
                                            t->closed, "maxQueued", (json_int_t) t->max_queued),
                                  false);
}

static void on_later(evutil_socket_t fd _unused_, short what _unused_, void *userdata) {
        TestServer *t = userdata;
        VarlinkReply *r = NULL;

        if (!t->deferred)
                return;
        assert_int_equal(varlink_reply_new_array("items", &r), 0);
        /* Elements as json_t and, every other one, as text: the same array. */
        for (int i = 0; i < t->deferred_n; i++) {
                char text[16];

                if (i % 2 == 0)
                        assert_int_equal(varlink_reply_append(r, json_integer(i)), 0);
                else
                        assert_int_equal(varlink_reply_append_text(r, text, (size_t) snprintf(text, sizeof(text), "%d", i)), 0);
        }
        assert_int_equal(varlink_reply_finish(r, json_pack("{s:i}", "n", t->deferred_n)), 0);
        assert_null(varlink_reply_error(r));
        assert_int_equal(varlink_call_send_reply(t->deferred, r), 0);
        t->deferred = varlink_call_unref(t->deferred);
}

static void on_deferred_close(VarlinkCall *call _unused_, void *userdata) {
        TestServer *t = userdata;

        t->deferred = varlink_call_unref(t->deferred);
}

/* A call without "more" kept and answered after the handler returned. */
static int method_deferred(VarlinkCall *call, json_t *parameters, void *userdata) {
        TestServer *t = userdata;
        struct timeval tv = { .tv_usec = TICK_USEC };

        if (t->deferred)
                return varlink_call_error(call, "org.example.test.Late", NULL);
        t->deferred_n = (int) json_integer_value(json_object_get(parameters, "n"));
        assert_int_equal(varlink_call_keep(call, on_deferred_close, t, &t->deferred), 0);
        if (!t->later) {
                t->later = evtimer_new(t->base, on_later, t);
                assert_non_null(t->later);
        }
        return evtimer_add(t->later, &tv) < 0 ? -ENOMEM : 0;
}

static const VarlinkMethod test_methods[] = {
        { "Echo", method_echo },     { "Stream", method_stream, VARLINK_METHOD_MORE }, { "Whoami", method_whoami },
        { "Blob", method_blob },     { "Stats", method_stats },   { "Misuse", method_misuse },
        { "Fail", method_fail },     { "Silent", method_silent }, { "Ticks", method_ticks, VARLINK_METHOD_MORE },
        { "TickStats", method_tick_stats }, { "Deferred", method_deferred }, {},
};

static void on_stop(evutil_socket_t fd _unused_, short what _unused_, void *userdata) {
        TestServer *t = userdata;

        event_base_loopbreak(t->base);
}

static void *server_thread(void *userdata) {
        TestServer *t = userdata;

        event_base_dispatch(t->base);
        return NULL;
}

/* Leaves a socket file nobody listens on, as a crashed daemon would. */
static void make_stale_socket(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);

        assert_true(fd >= 0);
        strcpy(sa.sun_path, path);
        assert_int_equal(bind(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        close(fd);
}

static int server_start(void **state, unsigned idle_timeout_sec) {
        const VarlinkServerConfig config = {
                .vendor = "trapstat tests",
                .product = "test-varlink",
                .version = "1.0",
                .url = "https://example.org/trapstat",
                .max_message_size = TEST_MAX_MESSAGE_SIZE,
                .max_connections = TEST_MAX_CONNECTIONS,
                .idle_timeout_sec = idle_timeout_sec,
                .refused_error = "org.example.test.TooMany",
        };
        TestServer *t = calloc(1, sizeof(*t));

        assert_non_null(t);
        strcpy(t->dir, "/tmp/test-varlink-XXXXXX");
        assert_non_null(mkdtemp(t->dir));
        snprintf(t->path, sizeof(t->path), "%s/socket", t->dir);
        make_stale_socket(t->path);

        t->base = event_base_new();
        assert_non_null(t->base);
        assert_int_equal(varlink_server_new(t->base, &config, &t->server), 0);
        assert_int_equal(varlink_server_add_interface(t->server, "org.example.test", test_description, test_methods, t), 0);
        assert_int_equal(varlink_server_listen_unix(t->server, t->path, 0600), 0);

        /* The client thread stops the loop through a pipe: event_base_loopbreak() from another
         * thread would need libevent's locking (evthread_use_pthreads). */
        assert_int_equal(pipe(t->stop_pipe), 0);
        t->stop = event_new(t->base, t->stop_pipe[0], EV_READ, on_stop, t);
        assert_non_null(t->stop);
        assert_int_equal(event_add(t->stop, NULL), 0);

        assert_int_equal(pthread_create(&t->thread, NULL, server_thread, t), 0);
        *state = t;
        return 0;
}

static int setup_server(void **state) {
        return server_start(state, 0);
}

static int setup_server_idle(void **state) {
        return server_start(state, 1);
}

static int teardown_server(void **state) {
        TestServer *t = *state;

        assert_int_equal(write(t->stop_pipe[1], "x", 1), 1);
        assert_int_equal(pthread_join(t->thread, NULL), 0);

        varlink_call_unref(t->kept);
        varlink_call_unref(t->deferred);
        varlink_server_free(t->server);
        if (t->tick)
                event_free(t->tick);
        if (t->later)
                event_free(t->later);
        event_free(t->stop);
        event_base_free(t->base);
        close(t->stop_pipe[0]);
        close(t->stop_pipe[1]);
        unlink(t->path);
        assert_int_equal(rmdir(t->dir), 0);
        free(t);
        return 0;
}

static VarlinkClient *client_new(TestServer *t, uint64_t timeout_usec) {
        VarlinkClient *c = NULL;

        assert_int_equal(varlink_client_connect(t->path, timeout_usec, &c), 0);
        return c;
}

/* Sends a call (parameters stolen) and reads one reply. */
static void call(VarlinkClient *c, const char *method, json_t *parameters, unsigned flags, json_t **ret_parameters,
                 char **ret_error, bool *ret_continues) {
        _cleanup_json_ json_t *p = parameters;

        assert_int_equal(varlink_client_call(c, method, p, flags), 0);
        assert_int_equal(varlink_client_read_reply(c, ret_parameters, ret_error, ret_continues), 0);
}

/* A call that must succeed with a single reply equal to expected (JSON text). */
static void call_expect(VarlinkClient *c, const char *method, json_t *parameters, const char *expected) {
        _cleanup_json_ json_t *reply = NULL;
        _cleanup_free_ char *error = NULL;
        bool continues = true;

        call(c, method, parameters, 0, &reply, &error, &continues);
        if (error)
                fail_msg("%s failed with %s", method, error);
        assert_false(continues);
        if (expected)
                assert_json_equal(reply, expected);
}

static void call_expect_error(VarlinkClient *c, const char *method, json_t *parameters, const char *error_name,
                              const char *expected) {
        _cleanup_json_ json_t *reply = NULL;
        _cleanup_free_ char *error = NULL;
        bool continues = true;

        call(c, method, parameters, 0, &reply, &error, &continues);
        assert_non_null(error);
        assert_string_equal(error, error_name);
        assert_false(continues);
        assert_json_equal(reply, expected);
}

static void test_echo(void **state) {
        _cleanup_client_ VarlinkClient *c = client_new(*state, CLIENT_TIMEOUT_USEC);

        call_expect(c, "org.example.test.Echo", json_pack("{s:i, s:[s]}", "a", 1, "b", "x"), "{\"a\":1,\"b\":[\"x\"]}");
        call_expect(c, "org.example.test.Echo", NULL, "{}");
}

static void test_stream(void **state) {
        _cleanup_client_ VarlinkClient *c = client_new(*state, CLIENT_TIMEOUT_USEC);

        assert_int_equal(varlink_client_call(c, "org.example.test.Stream", NULL, VARLINK_CALL_MORE), 0);
        for (int i = 0; i < 3; i++) {
                _cleanup_json_ json_t *reply = NULL;
                char *error = NULL;
                bool continues;

                assert_int_equal(varlink_client_read_reply(c, &reply, &error, &continues), 0);
                assert_null(error);
                assert_int_equal(json_integer_value(json_object_get(reply, "i")), i);
                assert_int_equal(continues, i < 2);
        }

        call_expect_error(c, "org.example.test.Stream", NULL, "org.varlink.service.ExpectedMore", "{}");
}

static void test_get_info(void **state) {
        _cleanup_client_ VarlinkClient *c = client_new(*state, CLIENT_TIMEOUT_USEC);

        call_expect(c, "org.varlink.service.GetInfo", NULL,
                    "{\"vendor\":\"trapstat tests\",\"product\":\"test-varlink\",\"version\":\"1.0\","
                    "\"url\":\"https://example.org/trapstat\","
                    "\"interfaces\":[\"org.varlink.service\",\"org.example.test\"]}");
}

static void test_get_interface_description(void **state) {
        _cleanup_client_ VarlinkClient *c = client_new(*state, CLIENT_TIMEOUT_USEC);
        _cleanup_json_ json_t *reply = NULL;
        const char *text;

        call(c, "org.varlink.service.GetInterfaceDescription", json_pack("{s:s}", "interface", "org.example.test"), 0,
             &reply, NULL, NULL);
        assert_string_equal(json_string_value(json_object_get(reply, "description")), test_description);
        json_decref(reply);

        call(c, "org.varlink.service.GetInterfaceDescription", json_pack("{s:s}", "interface", "org.varlink.service"), 0,
             &reply, NULL, NULL);
        text = json_string_value(json_object_get(reply, "description"));
        assert_non_null(text);
        assert_non_null(strstr(text, "\ninterface org.varlink.service\n"));
        assert_non_null(strstr(text, "error ExpectedMore ()\n"));
        /* Served verbatim: schema/org.varlink.service.varlink as embedded at build time. */
        assert_string_equal(text, embedded_varlink_service[0].text);
        assert_int_equal(strlen(text), embedded_varlink_service[0].size);

        call_expect_error(c, "org.varlink.service.GetInterfaceDescription", json_pack("{s:s}", "interface", "org.example.nope"),
                          "org.varlink.service.InterfaceNotFound", "{\"interface\":\"org.example.nope\"}");
        call_expect_error(c, "org.varlink.service.GetInterfaceDescription", NULL, "org.varlink.service.InvalidParameter",
                          "{\"parameter\":\"interface\"}");
}

static void test_not_found(void **state) {
        _cleanup_client_ VarlinkClient *c = client_new(*state, CLIENT_TIMEOUT_USEC);

        call_expect_error(c, "org.example.test.Nope", NULL, "org.varlink.service.MethodNotFound",
                          "{\"method\":\"org.example.test.Nope\"}");

        /* Parameters are checked against the IDL before the handler runs. */
        call_expect_error(c, "org.example.test.Echo", json_pack("{s:s}", "a", "x"), "org.varlink.service.InvalidParameter",
                          "{\"parameter\":\"a\"}");
        call_expect_error(c, "org.example.test.Echo", json_pack("{s:i, s:i}", "a", 1, "zzz", 2),
                          "org.varlink.service.InvalidParameter", "{\"parameter\":\"zzz\"}");
        call_expect_error(c, "org.example.test.Echo", json_pack("{s:[i]}", "b", 3), "org.varlink.service.InvalidParameter",
                          "{\"parameter\":\"b\"}");
        call_expect_error(c, "org.example.test.Blob", NULL, "org.varlink.service.InvalidParameter",
                          "{\"parameter\":\"seq\"}");
        call_expect(c, "org.example.test.Echo", json_pack("{s:n}", "a"), "{\"a\":null}");
        call_expect_error(c, "org.example.nope.Echo", NULL, "org.varlink.service.InterfaceNotFound",
                          "{\"interface\":\"org.example.nope\"}");
        /* "org.example" is a prefix of a registered interface, not an interface. */
        call_expect_error(c, "org.example.Echo", NULL, "org.varlink.service.InterfaceNotFound",
                          "{\"interface\":\"org.example\"}");
        /* The connection is still usable. */
        call_expect(c, "org.example.test.Echo", json_pack("{s:b}", "alive", 1), "{\"alive\":true}");
}

/* A raw socket, for what the client library cannot send: several calls in one write, an upgrade
 * request, broken messages. */
static int raw_connect(TestServer *t) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct timeval tv = { .tv_sec = CLIENT_TIMEOUT_USEC / 1000000U };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        assert_true(fd >= 0);
        strcpy(sa.sun_path, t->path);
        assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
        assert_int_equal(connect(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        return fd;
}

static void raw_send(int fd, const char *data, size_t len) {
        assert_int_equal(send(fd, data, len, MSG_NOSIGNAL), (ssize_t) len);
}

/* Returns the next message, or NULL when the server closed the connection. */
static json_t *raw_read(int fd, struct evbuffer *b) {
        json_t *m = NULL;
        char chunk[4096];
        ssize_t n;

        while (varlink_message_read(b, SIZE_MAX, &m) == 0) {
                n = recv(fd, chunk, sizeof(chunk), 0);
                if (n == 0 || (n < 0 && errno == ECONNRESET))
                        return NULL;
                assert_true(n > 0);
                assert_int_equal(evbuffer_add(b, chunk, (size_t) n), 0);
        }
        assert_non_null(m);
        return m;
}

static void test_pipelined(void **state) {
        static const char calls[] = "{\"method\":\"org.example.test.Echo\",\"parameters\":{\"n\":1}}\0"
                                    "{\"method\":\"org.example.test.Nope\"}\0"
                                    "{\"method\":\"org.example.test.Echo\",\"parameters\":{\"n\":3}}";
        _cleanup_evbuffer_ struct evbuffer *b = evbuffer_new();
        _cleanup_close_ int fd = raw_connect(*state);
        _cleanup_json_ json_t *r1 = NULL, *r2 = NULL, *r3 = NULL;

        raw_send(fd, calls, sizeof(calls)); /* one write, three calls */
        r1 = raw_read(fd, b);
        r2 = raw_read(fd, b);
        r3 = raw_read(fd, b);
        assert_json_equal(r1, "{\"parameters\":{\"n\":1}}");
        assert_json_equal(r2, "{\"error\":\"org.varlink.service.MethodNotFound\","
                              "\"parameters\":{\"method\":\"org.example.test.Nope\"}}");
        assert_json_equal(r3, "{\"parameters\":{\"n\":3}}");
}

static void test_upgrade(void **state) {
        static const char msg[] = "{\"method\":\"org.example.test.Echo\",\"upgrade\":true}";
        _cleanup_evbuffer_ struct evbuffer *b = evbuffer_new();
        _cleanup_close_ int fd = raw_connect(*state);
        _cleanup_json_ json_t *r = NULL;

        raw_send(fd, msg, sizeof(msg));
        r = raw_read(fd, b);
        assert_json_equal(r, "{\"error\":\"org.varlink.service.InvalidParameter\",\"parameters\":{\"parameter\":\"upgrade\"}}");
}

static void test_oneway(void **state) {
        _cleanup_client_ VarlinkClient *c = client_new(*state, CLIENT_TIMEOUT_USEC);
        _cleanup_json_ json_t *p = json_pack("{s:i}", "seq", 1);

        /* The oneway handler runs (Stats counts it) but its reply never arrives. */
        assert_int_equal(varlink_client_call(c, "org.example.test.Blob", p, VARLINK_CALL_ONEWAY), 0);
        assert_int_equal(varlink_client_call(c, "org.example.test.Nope", NULL, VARLINK_CALL_ONEWAY), 0);
        call_expect(c, "org.example.test.Stats", NULL, "{\"blobs\":1,\"connections\":1}");

        assert_int_equal(varlink_client_call(c, "org.example.test.Echo", NULL, VARLINK_CALL_MORE | VARLINK_CALL_ONEWAY),
                         -EINVAL);
}

/* "more" and "oneway" together: the client reads (it asked for more), so it is told. A number
 * out of range is an InvalidParameter naming its member too, and the connection goes on. */
static void test_odd_calls_answered(void **state) {
        static const char calls[] = "{\"method\":\"org.example.test.Echo\",\"more\":true,\"oneway\":true}\0"
                                    "{\"method\":\"org.example.test.Echo\",\"parameters\":{\"a\":9223372036854775808}}\0"
                                    "{\"method\":\"org.example.test.Echo\",\"parameters\":{\"a\":-1e999}}\0"
                                    "{\"method\":\"org.example.test.Echo\",\"parameters\":{\"a\":9223372036854775807}}";
        _cleanup_evbuffer_ struct evbuffer *b = evbuffer_new();
        _cleanup_close_ int fd = raw_connect(*state);
        _cleanup_json_ json_t *r1 = NULL, *r2 = NULL, *r3 = NULL, *r4 = NULL;

        raw_send(fd, calls, sizeof(calls));
        r1 = raw_read(fd, b);
        r2 = raw_read(fd, b);
        r3 = raw_read(fd, b);
        r4 = raw_read(fd, b);
        assert_json_equal(r1, "{\"error\":\"org.varlink.service.InvalidParameter\",\"parameters\":{\"parameter\":\"oneway\"}}");
        assert_json_equal(r2, "{\"error\":\"org.varlink.service.InvalidParameter\",\"parameters\":{\"parameter\":\"a\"}}");
        assert_json_equal(r3, "{\"error\":\"org.varlink.service.InvalidParameter\",\"parameters\":{\"parameter\":\"a\"}}");
        assert_json_equal(r4, "{\"parameters\":{\"a\":9223372036854775807}}");
}

/* Duplicate keys and "\u0000" in strings get InvalidParameter naming the parameter holding them
 * (or the member of the call), at any depth, and the connection answers the next call; even a
 * oneway one is answered, since which of two "oneway" counts is not known. */
static void test_dup_and_nul_answered(void **state) {
        static const char calls[] = "{\"method\":\"org.example.test.Echo\",\"parameters\":{\"a\":1,\"a\":2}}\0"
                                    "{\"method\":\"org.example.test.Echo\",\"parameters\":{\"b\":[\"x\",\"y\\u0000z\"]}}\0"
                                    "{\"method\":\"org.example.test.Echo\",\"parameters\":{\"n\\u0000\":1}}\0"
                                    "{\"method\":\"org.example.test.Echo\",\"method\":\"org.example.test.Echo\"}\0"
                                    "{\"method\":\"org.example.test.Echo\\u0000.Stream\"}\0"
                                    "{\"method\":\"org.example.test.Echo\",\"oneway\":true,\"oneway\":true}\0"
                                    "{\"method\":\"org.example.test.Nope\",\"parameters\":{\"a\":1,\"a\":1}}\0"
                                    "{\"method\":\"org.example.test.Echo\",\"parameters\":{\"a\":7}}";
        static const char *const expected[] = {
                "{\"error\":\"org.varlink.service.InvalidParameter\",\"parameters\":{\"parameter\":\"a\"}}",
                "{\"error\":\"org.varlink.service.InvalidParameter\",\"parameters\":{\"parameter\":\"b\"}}",
                "{\"error\":\"org.varlink.service.InvalidParameter\",\"parameters\":{\"parameter\":\"n\\\\u0000\"}}",
                "{\"error\":\"org.varlink.service.InvalidParameter\",\"parameters\":{\"parameter\":\"method\"}}",
                "{\"error\":\"org.varlink.service.InvalidParameter\",\"parameters\":{\"parameter\":\"method\"}}",
                "{\"error\":\"org.varlink.service.InvalidParameter\",\"parameters\":{\"parameter\":\"oneway\"}}",
                /* The method is looked up first, as for any call. */
                "{\"error\":\"org.varlink.service.MethodNotFound\",\"parameters\":{\"method\":\"org.example.test.Nope\"}}",
                "{\"parameters\":{\"a\":7}}",
        };
        _cleanup_evbuffer_ struct evbuffer *b = evbuffer_new();
        _cleanup_close_ int fd = raw_connect(*state);

        raw_send(fd, calls, sizeof(calls));
        for (size_t i = 0; i < ELEMENTSOF(expected); i++) {
                _cleanup_json_ json_t *r = raw_read(fd, b);

                assert_non_null(r);
                assert_json_equal(r, expected[i]);
        }
}

/* A kept call without "more" answered later with a reply built element by element; the calls
 * pipelined behind it wait for it. */
static void test_deferred_reply(void **state) {
        static const char calls[] = "{\"method\":\"org.example.test.Deferred\",\"parameters\":{\"n\":3}}\0"
                                    "{\"method\":\"org.example.test.Deferred\",\"parameters\":{\"n\":0}}\0"
                                    "{\"method\":\"org.example.test.Echo\",\"parameters\":{\"n\":7}}";
        _cleanup_evbuffer_ struct evbuffer *b = evbuffer_new();
        _cleanup_close_ int fd = raw_connect(*state);
        _cleanup_json_ json_t *r1 = NULL, *r2 = NULL, *r3 = NULL;

        raw_send(fd, calls, sizeof(calls));
        r1 = raw_read(fd, b);
        r2 = raw_read(fd, b);
        r3 = raw_read(fd, b);
        assert_json_equal(r1, "{\"parameters\":{\"items\":[0,1,2],\"n\":3}}");
        assert_json_equal(r2, "{\"parameters\":{\"items\":[],\"n\":0}}");
        assert_json_equal(r3, "{\"parameters\":{\"n\":7}}");
}

static void test_reply_builder(void **state _unused_) {
        VarlinkReply *r = NULL;

        /* Misuse is refused, not turned into broken JSON. */
        assert_int_equal(varlink_reply_new(json_array(), &r), -EINVAL);
        assert_int_equal(varlink_reply_new_array("rows", &r), 0);
        assert_int_equal(varlink_reply_finish(r, json_array()), -EINVAL);
        assert_int_equal(varlink_reply_append(r, json_pack("{s:s}", "s", "\"quoted\"\n")), 0);
        assert_int_equal(varlink_reply_finish(r, NULL), 0);
        assert_int_equal(varlink_reply_append(r, json_integer(1)), -EINVAL);
        assert_true(varlink_reply_size(r) > 0);
        r = varlink_reply_free(r);

        assert_int_equal(varlink_reply_new_error("a.B", json_pack("{s:i}", "limit", 5), &r), 0);
        assert_string_equal(varlink_reply_error(r), "a.B");
        r = varlink_reply_free(r);
}

/* A reply stops growing at the thread's limit: the element that would cross it is refused whole,
 * error replies are never limited, and other threads (and later replies after a reset) are not
 * affected. */
static void test_reply_max_size(void **state _unused_) {
        VarlinkReply *r = NULL;
        char element[100];
        int k = 0, i;

        memset(element, 'a', sizeof(element));
        element[0] = element[sizeof(element) - 1] = '"';
        varlink_reply_set_thread_max_size(1000);
        assert_int_equal(varlink_reply_new_array("rows", &r), 0);
        for (i = 0; i < 100 && (k = varlink_reply_append_text(r, element, sizeof(element))) == 0; i++)
                ;
        assert_int_equal(k, -EMSGSIZE);
        assert_int_equal(i, 9); /* 23 bytes of header and 9 elements of 100 bytes and a comma, "]}}" and NUL */
        assert_true(varlink_reply_size(r) <= 1000);
        assert_int_equal(varlink_reply_append(r, json_string("x")), 0);
        assert_int_equal(varlink_reply_append(r, json_pack("{s:s%}", "s", element, sizeof(element))), -EMSGSIZE);
        r = varlink_reply_free(r);

        assert_int_equal(varlink_reply_new(json_pack("{s:s%}", "s", element, sizeof(element)), &r), 0);
        r = varlink_reply_free(r);
        varlink_reply_set_thread_max_size(50);
        assert_int_equal(varlink_reply_new(json_pack("{s:s%}", "s", element, sizeof(element)), &r), -EMSGSIZE);
        assert_null(r);
        assert_int_equal(varlink_reply_new_error("a.B", json_pack("{s:s%}", "s", element, sizeof(element)), &r), 0);
        r = varlink_reply_free(r);

        varlink_reply_set_thread_max_size(0);
        assert_int_equal(varlink_reply_new_array("rows", &r), 0);
        for (i = 0; i < 100; i++)
                assert_int_equal(varlink_reply_append_text(r, element, sizeof(element)), 0);
        assert_int_equal(varlink_reply_finish(r, NULL), 0);
        r = varlink_reply_free(r);
}

static void test_reply_rules(void **state) {
        TestServer *t = *state;
        _cleanup_client_ VarlinkClient *c = client_new(t, CLIENT_TIMEOUT_USEC);

        call_expect(c, "org.example.test.Misuse", NULL, "{\"continuesWithoutMore\":-22}");
        assert_int_equal(atomic_load(&t->after_final[0]), -EALREADY);
        assert_int_equal(atomic_load(&t->after_final[1]), -EALREADY);
}

static void test_handler_failure(void **state) {
        const char *const methods[] = { "org.example.test.Fail", "org.example.test.Silent" };

        for (size_t i = 0; i < ELEMENTSOF(methods); i++) {
                _cleanup_client_ VarlinkClient *c = client_new(*state, CLIENT_TIMEOUT_USEC);

                assert_int_equal(varlink_client_call(c, methods[i], NULL, 0), 0);
                assert_int_equal(varlink_client_read_reply(c, NULL, NULL, NULL), -ECONNRESET);
        }
}

static void test_too_large(void **state) {
        _cleanup_client_ VarlinkClient *c = client_new(*state, CLIENT_TIMEOUT_USEC);
        char big[2 * TEST_MAX_MESSAGE_SIZE];
        _cleanup_json_ json_t *p = NULL;

        memset(big, 'y', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        p = json_pack("{s:s}", "big", big);
        /* Fits in the socket buffer, so the send completes before the server reacts. */
        assert_int_equal(varlink_client_call(c, "org.example.test.Echo", p, 0), 0);
        assert_int_equal(varlink_client_read_reply(c, NULL, NULL, NULL), -ECONNRESET);
}

static void test_bad_messages(void **state) {
        static const struct {
                const char *data;
                size_t len;
        } bad[] = {
#define BAD(s) { s, sizeof(s) }
                BAD("{\"method\":"),                          /* invalid JSON */
                BAD("[\"org.example.test.Echo\"]"),           /* not an object */
                BAD("{\"method\":\"org.example.test.Echo\",\"x\":1}"), /* invalid call header */
#undef BAD
        };
        static const char echo[] = "{\"method\":\"org.example.test.Echo\",\"parameters\":{\"first\":true}}";

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_evbuffer_ struct evbuffer *b = evbuffer_new();
                _cleanup_close_ int fd = raw_connect(*state);
                _cleanup_json_ json_t *r1 = NULL, *r2 = NULL;

                /* A call before the bad message is still answered, then the connection ends. */
                raw_send(fd, echo, sizeof(echo));
                raw_send(fd, bad[i].data, bad[i].len);
                r1 = raw_read(fd, b);
                assert_json_equal(r1, "{\"parameters\":{\"first\":true}}");
                r2 = raw_read(fd, b);
                assert_null(r2);
        }
}

static void test_peer(void **state) {
        TestServer *t = *state;
        _cleanup_client_ VarlinkClient *c = client_new(t, CLIENT_TIMEOUT_USEC);
        _cleanup_json_ json_t *reply = NULL;
        struct stat st;

        call(c, "org.example.test.Whoami", NULL, 0, &reply, NULL, NULL);
        assert_int_equal(json_integer_value(json_object_get(reply, "uid")), getuid());
        assert_int_equal(json_integer_value(json_object_get(reply, "pid")), getpid());
        assert_string_equal(json_string_value(json_object_get(reply, "method")), "org.example.test.Whoami");

        /* listen_unix replaced the stale socket file and applied the mode. */
        assert_int_equal(stat(t->path, &st), 0);
        assert_true(S_ISSOCK(st.st_mode));
        assert_int_equal(st.st_mode & 0777, 0600);
}

static void test_max_connections(void **state) {
        TestServer *t = *state;
        VarlinkClient *c[TEST_MAX_CONNECTIONS] = {};
        _cleanup_client_ VarlinkClient *extra = NULL;
        _cleanup_json_ json_t *refusal = NULL;
        _cleanup_free_ char *error = NULL;
        int r;

        /* A round trip on each makes sure the server has accepted all of them. */
        for (unsigned i = 0; i < TEST_MAX_CONNECTIONS; i++) {
                c[i] = client_new(t, CLIENT_TIMEOUT_USEC);
                call_expect(c[i], "org.example.test.Echo", NULL, "{}");
        }
        call_expect(c[0], "org.example.test.Stats", NULL, "{\"blobs\":0,\"connections\":4}");

        /* connect() succeeds (the kernel queues it), then the server says why it refuses and
         * closes. The call "succeeds" whether or not the send saw the close: the refusal is
         * what the client reads. */
        extra = client_new(t, CLIENT_TIMEOUT_USEC);
        assert_int_equal(varlink_client_call(extra, "org.example.test.Echo", NULL, 0), 0);
        assert_int_equal(varlink_client_read_reply(extra, &refusal, &error, NULL), 0);
        assert_string_equal(error, "org.example.test.TooMany");
        assert_json_equal(refusal, "{\"limit\":4}");
        r = varlink_client_read_reply(extra, NULL, NULL, NULL);
        assert_int_equal(r, -ECONNRESET);

        call_expect(c[1], "org.example.test.Stats", NULL, "{\"blobs\":0,\"connections\":4}");
        for (unsigned i = 0; i < TEST_MAX_CONNECTIONS; i++)
                varlink_client_free(c[i]);
}

/* A client that sends calls without reading the replies must make the server stop reading, not
 * buffer replies without bound; once it reads, every call is answered, in order. */
static void test_backpressure(void **state) {
        TestServer *t = *state;
        /* The send timeout is how the test sees the server stop reading. */
        _cleanup_client_ VarlinkClient *greedy = client_new(t, 1000000U);
        _cleanup_client_ VarlinkClient *other = client_new(t, CLIENT_TIMEOUT_USEC);
        _cleanup_json_ json_t *stats = NULL;
        unsigned sent;
        int r = 0;

        for (sent = 0; sent < 20000; sent++) {
                _cleanup_json_ json_t *p = json_pack("{s:i}", "seq", (int) sent);

                r = varlink_client_call(greedy, "org.example.test.Blob", p, 0);
                if (r < 0)
                        break;
        }
        assert_int_equal(r, -ETIMEDOUT);

        /* Another client is served meanwhile, and the server has not run every call sent. */
        call(other, "org.example.test.Stats", NULL, 0, &stats, NULL, NULL);
        assert_true(json_integer_value(json_object_get(stats, "blobs")) < (json_int_t) sent);
        /* One reply in flight: at most what the kernel buffers (a few hundred KiB) plus one. */
        assert_true(json_integer_value(json_object_get(stats, "blobs")) * BLOB_SIZE < 512U * 1024U);

        for (unsigned i = 0; i < sent; i++) {
                _cleanup_json_ json_t *reply = NULL;

                assert_int_equal(varlink_client_read_reply(greedy, &reply, NULL, NULL), 0);
                assert_int_equal(json_integer_value(json_object_get(reply, "seq")), i);
                assert_int_equal(strlen(json_string_value(json_object_get(reply, "data"))), BLOB_SIZE);
        }

        json_decref(stats);
        call(other, "org.example.test.Stats", NULL, 0, &stats, NULL, NULL);
        assert_int_equal(json_integer_value(json_object_get(stats, "blobs")), sent);
}

/* A kept call streams after its handler returned; a call pipelined behind it is answered only
 * after the stream's final reply. */
static void test_kept_stream(void **state) {
        static const char calls[] = "{\"method\":\"org.example.test.Ticks\",\"parameters\":{\"count\":5,\"size\":10},"
                                    "\"more\":true}\0"
                                    "{\"method\":\"org.example.test.Echo\",\"parameters\":{\"n\":7}}";
        _cleanup_evbuffer_ struct evbuffer *b = evbuffer_new();
        _cleanup_close_ int fd = raw_connect(*state);

        raw_send(fd, calls, sizeof(calls));
        for (int i = 0; i < 5; i++) {
                _cleanup_json_ json_t *r = raw_read(fd, b);
                json_t *p = json_object_get(r, "parameters");

                assert_non_null(r);
                assert_int_equal(json_integer_value(json_object_get(p, "i")), i);
                assert_true(json_is_true(json_object_get(r, "continues")) == (i < 4));
        }
        _cleanup_json_ json_t *echo = raw_read(fd, b);
        assert_json_equal(echo, "{\"parameters\":{\"n\":7}}");
}

/* A client that never reads: the stream skips ticks instead of queueing them, so at most one
 * reply waits in user space; when the client goes, the owner of the call is told. */
static void test_kept_stream_not_read(void **state) {
        static const char call_ticks[] = "{\"method\":\"org.example.test.Ticks\",\"parameters\":{\"count\":0,"
                                         "\"size\":3000},\"more\":true}";
        TestServer *t = *state;
        _cleanup_client_ VarlinkClient *other = client_new(t, CLIENT_TIMEOUT_USEC);
        int fd = raw_connect(t), rcvbuf = 4096;
        json_t *stats = NULL;

        assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), 0);
        raw_send(fd, call_ticks, sizeof(call_ticks));
        /* Long enough for the kernel's socket buffer to fill and many ticks to be skipped. */
        for (int i = 0; i < 100; i++) {
                json_decref(stats);
                call(other, "org.example.test.TickStats", NULL, 0, &stats, NULL, NULL);
                if (json_integer_value(json_object_get(stats, "skipped")) >= 50)
                        break;
                usleep(50000);
        }
        assert_true(json_integer_value(json_object_get(stats, "skipped")) >= 50);
        /* Never more than the one reply that did not fit the socket. */
        assert_true(json_integer_value(json_object_get(stats, "maxQueued")) <= 3100);
        assert_int_equal(json_integer_value(json_object_get(stats, "closed")), 0);

        close(fd);
        for (int i = 0; i < 100; i++) {
                json_decref(stats);
                call(other, "org.example.test.TickStats", NULL, 0, &stats, NULL, NULL);
                if (json_integer_value(json_object_get(stats, "closed")) == 1)
                        break;
                usleep(20000);
        }
        assert_int_equal(json_integer_value(json_object_get(stats, "closed")), 1);
        json_decref(stats);
}

static void test_idle_timeout(void **state) {
        _cleanup_client_ VarlinkClient *c = client_new(*state, CLIENT_TIMEOUT_USEC);

        call_expect(c, "org.example.test.Echo", NULL, "{}");
        /* Blocks until the server drops the idle connection, after about one second. */
        assert_int_equal(varlink_client_read_reply(c, NULL, NULL, NULL), -ECONNRESET);
}

static void test_server_setup_errors(void **state _unused_) {
        struct event_base *base = event_base_new();
        VarlinkServer *s = NULL;
        int fd;

        assert_non_null(base);
        assert_int_equal(varlink_server_new(base, NULL, &s), 0);
        assert_int_equal(varlink_server_n_connections(s), 0);

        assert_int_equal(varlink_server_add_interface(s, "org.varlink.service", "", test_methods, NULL), -EEXIST);

        /* The IDL must parse, name the interface, and declare exactly the handled methods. */
        assert_int_equal(varlink_server_add_interface(s, "org.example.test", "", test_methods, NULL), -EBADMSG);
        assert_non_null(strstr(varlink_server_error(s), "org.example.test.varlink:"));
        assert_int_equal(varlink_server_add_interface(s, "org.example.test",
                                                      "interface org.example.other\nmethod Echo() -> ()\n", test_methods,
                                                      NULL),
                         -EINVAL);
        assert_non_null(strstr(varlink_server_error(s), "described as org.example.other"));
        assert_int_equal(varlink_server_add_interface(s, "org.example.test",
                                                      "interface org.example.test\nmethod Echo() -> ()\n", test_methods,
                                                      NULL),
                         -EINVAL);
        assert_string_equal(varlink_server_error(s), "method org.example.test.Stream has a handler but is not declared");
        {
                static const VarlinkMethod echo_only[] = { { "Echo", method_echo }, {} };
                assert_int_equal(varlink_server_add_interface(s, "org.example.test",
                                                              "interface org.example.test\nmethod Echo() -> ()\n"
                                                              "method Gone() -> ()\n",
                                                              echo_only, NULL),
                                 -EINVAL);
                assert_string_equal(varlink_server_error(s), "method org.example.test.Gone is declared but has no handler");
        }

        assert_int_equal(varlink_server_add_interface(s, "org.example.test", test_description, test_methods, NULL), 0);
        assert_int_equal(varlink_server_add_interface(s, "org.example.test", test_description, test_methods, NULL), -EEXIST);

        /* Not listening: refused (and the fd is taken either way). */
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        assert_true(fd >= 0);
        assert_int_equal(varlink_server_listen_fd(s, fd), -EINVAL);

        assert_int_equal(varlink_server_listen_unix(s, "/nonexistent-dir/socket", 0600), -ENOENT);

        varlink_server_free(s);
        event_base_free(base);
}

static void test_client_errors(void **state _unused_) {
        VarlinkClient *c = NULL;

        assert_int_equal(varlink_client_connect("/nonexistent-dir/socket", 0, &c), -ENOENT);
        assert_null(c);
}

int main(void) {
        /* As in trapstatd: the server writes to clients that may have closed. */
        signal(SIGPIPE, SIG_IGN);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_read_partial),
                cmocka_unit_test(test_read_two),
                cmocka_unit_test(test_read_too_big),
                cmocka_unit_test(test_read_bad),
                cmocka_unit_test(test_read_out_of_range),
                cmocka_unit_test(test_read_marked),
                cmocka_unit_test(test_read_marked_rest),
                cmocka_unit_test(test_write_read),
                cmocka_unit_test(test_reply_builder),
                cmocka_unit_test(test_reply_max_size),
                cmocka_unit_test(test_header_valid),
                cmocka_unit_test(test_header_invalid),
                cmocka_unit_test(test_server_setup_errors),
                cmocka_unit_test(test_client_errors),
                cmocka_unit_test_setup_teardown(test_echo, setup_server, teardown_server),
                cmocka_unit_test_setup_teardown(test_stream, setup_server, teardown_server),
                cmocka_unit_test_setup_teardown(test_get_info, setup_server, teardown_server),
                cmocka_unit_test_setup_teardown(test_get_interface_description, setup_server, teardown_server),
                cmocka_unit_test_setup_teardown(test_not_found, setup_server, teardown_server),
                cmocka_unit_test_setup_teardown(test_pipelined, setup_server, teardown_server),
                cmocka_unit_test_setup_teardown(test_upgrade, setup_server, teardown_server),
                cmocka_unit_test_setup_teardown(test_oneway, setup_server, teardown_server),
                cmocka_unit_test_setup_teardown(test_reply_rules, setup_server, teardown_server),
                cmocka_unit_test_setup_teardown(test_odd_calls_answered, setup_server, teardown_server),
                cmocka_unit_test_setup_teardown(test_dup_and_nul_answered, setup_server, teardown_server),
                cmocka_unit_test_setup_teardown(test_deferred_reply, setup_server, teardown_server),
                cmocka_unit_test_setup_teardown(test_handler_failure, setup_server, teardown_server),
                cmocka_unit_test_setup_teardown(test_too_large, setup_server, teardown_server),
                cmocka_unit_test_setup_teardown(test_bad_messages, setup_server, teardown_server),
                cmocka_unit_test_setup_teardown(test_peer, setup_server, teardown_server),
                cmocka_unit_test_setup_teardown(test_max_connections, setup_server, teardown_server),
                cmocka_unit_test_setup_teardown(test_backpressure, setup_server, teardown_server),
                cmocka_unit_test_setup_teardown(test_idle_timeout, setup_server_idle, teardown_server),
                cmocka_unit_test_setup_teardown(test_kept_stream, setup_server, teardown_server),
                cmocka_unit_test_setup_teardown(test_kept_stream_not_read, setup_server, teardown_server),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
