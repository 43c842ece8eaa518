/* SPDX-License-Identifier: MIT */
/* A test-only server for org.varlink.certification, built from the same varlink library
 * (common/varlink-*.c) as trapstatd, so that the reference client (`varlink-go-certification
 * -client`, Debian package varlink-go) can certify our server side: framing, IDL validation, "more"
 * streams and "oneway".
 *
 * usage: varlink-cert-server SOCKET-PATH
 * Prints "ready" on stdout once listening; runs until SIGTERM or SIGINT, then exits 0.
 *
 * Like the reference servers, it is stricter than the reference client: every client (one
 * client_id from Start) must call Start, Test01 ... Test11, End in this order, each with exactly
 * the parameters the previous reply returned. A wrong call gets CertificationError {wants, got}
 * (both {"method", "parameters"}) and makes End answer all_ok: false. */

#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "json-util.h"
#include "log.h"
#include "macro.h"
#include "varlink-cert-json.h"
#include "embedded.h"
#include "varlink.h"

#define INTERFACE "org.varlink.certification"
/* Clients that called Start but not End yet; the oldest is forgotten when a new one needs room. */
#define MAX_CLIENTS 64U
#define N_MORE_REPLIES 10

static const char *strna(const char *s) {
        return s ?: "n/a";
}

/* tests/data/org.varlink.certification.varlink, embedded at build time: the interface exactly as
 * varlink-go 0.4.0 (`varlink-go-certification`) serves it through
 * org.varlink.service.GetInterfaceDescription; test_certification.py checks that the two stay
 * byte-identical, and test-varlink-idl parses the same file. The text is the reference's, never
 * edited by us. */
extern const EmbeddedFile embedded_certification[];
#define certification_description (embedded_certification[0].text)
/* The calls a client makes, in order. Test01 ... Test09 have a fixed reply; Start returns a new
 * client_id, Test10 streams N_MORE_REPLIES strings, Test11 is oneway and End returns all_ok.
 * "input" is what a call must carry besides client_id: the previous step's reply, except for
 * Test11, which sends back the ten Test10 replies. Numbers compare by value: the reference client
 * sends the float 1.0 as 1. */
typedef struct Step {
        const char *method;
        const char *input, *output;
} Step;

#define STEP05 "{\"bool\":false,\"int\":2,\"float\":3.141592653589793,\"string\":\"a lot of string\"}"
#define MYTYPE                                                                                             \
        "{\"object\":{\"method\":\"org.varlink.certification.Test09\","                                  \
        "\"parameters\":{\"map\":{\"foo\":\"Foo\",\"bar\":\"Bar\"}}},"                                    \
        "\"enum\":\"two\",\"struct\":{\"first\":1,\"second\":\"2\"},\"array\":[\"one\",\"two\",\"three\"]," \
        "\"dictionary\":{\"foo\":\"Foo\",\"bar\":\"Bar\"},\"stringset\":{\"one\":{},\"two\":{},\"three\":{}}," \
        "\"interface\":{\"foo\":[null,{\"Foo\":\"foo\",\"Bar\":\"bar\"},null,{\"one\":\"foo\",\"two\":\"bar\"}]," \
        "\"anon\":{\"foo\":true,\"bar\":false}}}"
#define MORE_REPLIES                                                                                       \
        "[\"Reply number 1\",\"Reply number 2\",\"Reply number 3\",\"Reply number 4\",\"Reply number 5\","   \
        "\"Reply number 6\",\"Reply number 7\",\"Reply number 8\",\"Reply number 9\",\"Reply number 10\"]"

enum { STEP_START, STEP_TEST10 = 10, STEP_TEST11, STEP_END, N_STEPS };

static const Step steps[N_STEPS] = {
        { "Start", "{}", NULL }, /* the reply is the new client_id */
        { "Test01", "{}", "{\"bool\":true}" },
        { "Test02", "{\"bool\":true}", "{\"int\":1}" },
        { "Test03", "{\"int\":1}", "{\"float\":1.0}" },
        { "Test04", "{\"float\":1.0}", "{\"string\":\"ping\"}" },
        { "Test05", "{\"string\":\"ping\"}", STEP05 },
        { "Test06", STEP05, "{\"struct\":" STEP05 "}" },
        { "Test07", "{\"struct\":" STEP05 "}", "{\"map\":{\"foo\":\"Foo\",\"bar\":\"Bar\"}}" },
        { "Test08", "{\"map\":{\"foo\":\"Foo\",\"bar\":\"Bar\"}}", "{\"set\":{\"one\":{},\"two\":{},\"three\":{}}}" },
        { "Test09", "{\"set\":{\"one\":{},\"two\":{},\"three\":{}}}", "{\"mytype\":" MYTYPE "}" },
        { "Test10", "{\"mytype\":" MYTYPE "}", NULL },         /* "Reply number 1" ... 10, streamed */
        { "Test11", "{\"last_more_replies\":" MORE_REPLIES "}", "{}" }, /* oneway: the reply is dropped */
        { "End", "{}", NULL },                                  /* all_ok */
};

typedef struct CertClient {
        char id[37]; /* a random UUID; "" when the slot is free */
        unsigned next; /* the step expected next */
        bool failed;   /* a call was out of order or had wrong parameters */
} CertClient;

typedef struct CertServer {
        json_t *inputs[N_STEPS], *outputs[N_STEPS];
        CertClient clients[MAX_CLIENTS];
        unsigned n_started; /* picks the slot of the next Start, round robin */
} CertServer;

static int step_index(const char *method) {
        const char *name = method + strlen(INTERFACE ".");

        for (int i = 0; i < N_STEPS; i++)
                if (strcmp(steps[i].method, name) == 0)
                        return i;
        return -ENOENT;
}

static CertClient *client_find(CertServer *s, const char *id) {
        if (!id)
                return NULL;
        for (unsigned i = 0; i < MAX_CLIENTS; i++)
                if (s->clients[i].id[0] && strcmp(s->clients[i].id, id) == 0)
                        return &s->clients[i];
        return NULL;
}

static int uuid_random(char ret[static 37]) {
        uint8_t b[16];
        ssize_t n = getrandom(b, sizeof(b), 0);

        if (n < 0)
                return -errno;
        if (n != (ssize_t) sizeof(b))
                return -EIO;
        b[6] = (b[6] & 0x0f) | 0x40; /* version 4 */
        b[8] = (b[8] & 0x3f) | 0x80; /* RFC 4122 variant */
        snprintf(ret, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
                 b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
        return 0;
}

/* Replies CertificationError {wants, got}, the expected and the received call, and marks the
 * client failed. got_parameters is borrowed. */
static int reply_certification_error(CertServer *s, VarlinkCall *call, CertClient *client, unsigned expected,
                                     json_t *got_parameters) {
        _cleanup_free_ char *wants_text = json_dumps(s->inputs[expected], JSON_COMPACT),
                            *got_text = json_dumps(got_parameters, JSON_COMPACT);

        client->failed = true;
        log_error("Client %s: expected " INTERFACE ".%s %s, got %s %s", client->id, steps[expected].method,
                  strna(wants_text), varlink_call_method(call), strna(got_text));
        return varlink_call_error(call, INTERFACE ".CertificationError",
                                  json_pack("{s:{s:s+, s:O}, s:{s:s, s:O}}", "wants", "method", INTERFACE ".",
                                            steps[expected].method, "parameters", s->inputs[expected], "got", "method",
                                            varlink_call_method(call), "parameters", got_parameters));
}

/* Checks that this call is the step the client is at, with the expected parameters. Returns 1
 * with *ret set when the handler should go on; 0 when it already answered with an error. */
static int call_check(CertServer *s, VarlinkCall *call, json_t *parameters, CertClient **ret) {
        _cleanup_json_ json_t *p = NULL;
        CertClient *client;
        int step, r;

        client = client_find(s, json_string_value(json_object_get(parameters, "client_id")));
        if (!client) {
                r = varlink_call_error(call, INTERFACE ".ClientIdError", NULL);
                return r < 0 ? r : 0;
        }

        step = step_index(varlink_call_method(call));
        /* Everything but client_id must be the expected input. */
        p = json_deep_copy(parameters);
        if (!p)
                return -ENOMEM;
        (void) json_object_del(p, "client_id");

        if (step != (int) client->next || !json_equivalent(s->inputs[step], p)) {
                r = reply_certification_error(s, call, client, client->next, p);
                return r < 0 ? r : 0;
        }

        client->next++;
        *ret = client;
        return 1;
}

static int method_start(VarlinkCall *call, json_t *parameters _unused_, void *userdata) {
        CertServer *s = userdata;
        CertClient *client = &s->clients[s->n_started++ % MAX_CLIENTS];
        int r;

        *client = (CertClient) { .next = STEP_START + 1 };
        r = uuid_random(client->id);
        if (r < 0)
                return r;
        return varlink_call_reply(call, json_pack("{s:s}", "client_id", client->id), false);
}

/* Test01 ... Test09 and Test11: a fixed reply. For Test11 it is dropped by the library, as the
 * call must be oneway. The library offers no way to tell a oneway call from the handler, so unlike
 * the reference servers this cannot refuse a Test11 that is not oneway; but a library that sent
 * the reply of a oneway call would hand it to the reference client as the answer to End. */
static int method_fixed(VarlinkCall *call, json_t *parameters, void *userdata) {
        CertServer *s = userdata;
        CertClient *client;
        int r;

        r = call_check(s, call, parameters, &client);
        if (r <= 0)
                return r;
        return varlink_call_reply(call, json_incref(s->outputs[client->next - 1]), false);
}

static int method_test10(VarlinkCall *call, json_t *parameters, void *userdata) {
        CertServer *s = userdata;
        CertClient *client;
        int r;

        r = call_check(s, call, parameters, &client);
        if (r <= 0)
                return r;
        /* Declared VARLINK_METHOD_MORE, so only a oneway call gets here without "more". */
        if (!varlink_call_more(call))
                return reply_certification_error(s, call, client, STEP_TEST10, parameters);

        for (int i = 1; i <= N_MORE_REPLIES; i++) {
                char reply[32];

                snprintf(reply, sizeof(reply), "Reply number %d", i);
                r = varlink_call_reply(call, json_pack("{s:s}", "string", reply), i < N_MORE_REPLIES);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int method_end(VarlinkCall *call, json_t *parameters, void *userdata) {
        CertServer *s = userdata;
        CertClient *client;
        bool all_ok;
        int r;

        client = client_find(s, json_string_value(json_object_get(parameters, "client_id")));
        if (!client)
                return varlink_call_error(call, INTERFACE ".ClientIdError", NULL);

        all_ok = !client->failed && client->next == STEP_END;
        if (!all_ok)
                log_error("Client %s: End after %s%s", client->id, steps[client->next - 1].method,
                          client->failed ? ", with failed calls" : "");
        r = varlink_call_reply(call, json_pack("{s:b}", "all_ok", all_ok), false);
        *client = (CertClient) {}; /* the client_id is used up */
        return r;
}

static const VarlinkMethod certification_methods[] = {
        { "Start", method_start },
        { "Test01", method_fixed },
        { "Test02", method_fixed },
        { "Test03", method_fixed },
        { "Test04", method_fixed },
        { "Test05", method_fixed },
        { "Test06", method_fixed },
        { "Test07", method_fixed },
        { "Test08", method_fixed },
        { "Test09", method_fixed },
        { "Test10", method_test10, VARLINK_METHOD_MORE },
        { "Test11", method_fixed },
        { "End", method_end },
        {},
};

static void cert_server_done(CertServer *s) {
        for (int i = 0; i < N_STEPS; i++) {
                json_decref(s->inputs[i]);
                json_decref(s->outputs[i]);
        }
}

static int cert_server_init(CertServer *s) {
        *s = (CertServer) {};
        for (int i = 0; i < N_STEPS; i++) {
                s->inputs[i] = json_loads(steps[i].input, 0, NULL);
                s->outputs[i] = steps[i].output ? json_loads(steps[i].output, 0, NULL) : json_null();
                if (!s->inputs[i] || !s->outputs[i]) {
                        cert_server_done(s);
                        return -EINVAL; /* a typo in the table above */
                }
        }
        return 0;
}

static void on_signal(evutil_socket_t sig _unused_, short what _unused_, void *userdata) {
        event_base_loopbreak(userdata);
}

static int run(const char *path) {
        const VarlinkServerConfig config = {
                .vendor = "trapstat",
                .product = "varlink-cert-server",
                .version = TRAPSTAT_VERSION,
                .url = "https://varlink.org",
        };
        struct event_base *base = NULL;
        struct event *sigterm = NULL, *sigint = NULL;
        VarlinkServer *server = NULL;
        CertServer cert;
        int r;

        r = cert_server_init(&cert);
        if (r < 0)
                return log_error_errno(r, "Failed to parse the certification steps: %m");

        base = event_base_new();
        if (!base) {
                r = log_error_errno(ENOMEM, "Failed to create event loop");
                goto finish;
        }
        r = varlink_server_new(base, &config, &server);
        if (r < 0) {
                log_error_errno(r, "Failed to create varlink server: %m");
                goto finish;
        }
        r = varlink_server_add_interface(server, INTERFACE, certification_description, certification_methods, &cert);
        if (r < 0) {
                log_error_errno(r, "Failed to register " INTERFACE ": %s", varlink_server_error(server));
                goto finish;
        }
        r = varlink_server_listen_unix(server, path, 0600);
        if (r < 0) {
                log_error_errno(r, "Failed to listen on %s: %m", path);
                goto finish;
        }
        sigterm = evsignal_new(base, SIGTERM, on_signal, base);
        sigint = evsignal_new(base, SIGINT, on_signal, base);
        if (!sigterm || !sigint || event_add(sigterm, NULL) < 0 || event_add(sigint, NULL) < 0) {
                r = log_error_errno(ENOMEM, "Failed to set up signal handling");
                goto finish;
        }

        printf("ready\n");
        fflush(stdout);
        if (event_base_dispatch(base) < 0)
                r = log_error_errno(EIO, "Event loop failed");

finish:
        varlink_server_free(server);
        if (sigterm)
                event_free(sigterm);
        if (sigint)
                event_free(sigint);
        if (base)
                event_base_free(base);
        cert_server_done(&cert);
        return r;
}

int main(int argc, char *argv[]) {
        if (argc != 2) {
                fprintf(stderr, "usage: varlink-cert-server SOCKET-PATH\n");
                return 2;
        }
        signal(SIGPIPE, SIG_IGN); /* clients may close while a reply is written */
        return run(argv[1]) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
