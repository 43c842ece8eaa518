/* SPDX-License-Identifier: MIT */
/* A test-only client for org.varlink.certification, built from the same varlink library
 * (common/varlink-*.c) as the trapstat CLI, run against the reference server
 * (`varlink-go-certification -varlink=unix:PATH`, Debian package varlink-go) to certify our client
 * side and IDL parser.
 *
 * usage: varlink-cert-client SOCKET-PATH
 *
 * It calls Start, Test01 ... Test11, End as the reference client does: each call's arguments are
 * the previous reply (plus client_id), Test10 with "more", Test11 oneway. Every reply is checked
 * against the interface description the server sends (parsed with common/varlink-idl.c) and
 * against the exact values the certification defines. Prints each step; exits 0 only when every
 * check passed and End said all_ok: true. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"
#include "varlink-cert-json.h"
#include "varlink-idl.h"
#include "varlink.h"

#define INTERFACE "org.varlink.certification"
#define TIMEOUT_USEC (10U * 1000000U)
#define N_MORE_REPLIES 10

DEFINE_TRIVIAL_CLEANUP_FUNC(VarlinkClient *, varlink_client_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(VarlinkInterface *, varlink_interface_free);

#define STEP05 "{\"bool\":false,\"int\":2,\"float\":3.141592653589793,\"string\":\"a lot of string\"}"
#define MYTYPE                                                                                             \
        "{\"object\":{\"method\":\"org.varlink.certification.Test09\","                                  \
        "\"parameters\":{\"map\":{\"foo\":\"Foo\",\"bar\":\"Bar\"}}},"                                    \
        "\"enum\":\"two\",\"struct\":{\"first\":1,\"second\":\"2\"},\"array\":[\"one\",\"two\",\"three\"]," \
        "\"dictionary\":{\"foo\":\"Foo\",\"bar\":\"Bar\"},\"stringset\":{\"one\":{},\"two\":{},\"three\":{}}," \
        "\"interface\":{\"foo\":[null,{\"Foo\":\"foo\",\"Bar\":\"bar\"},null,{\"one\":\"foo\",\"two\":\"bar\"}]," \
        "\"anon\":{\"foo\":true,\"bar\":false}}}"

/* Test01 ... Test09: the reply each must return; the next call sends it back. */
static const struct {
        const char *method, *reply;
} fixed_steps[] = {
        { "Test01", "{\"bool\":true}" },
        { "Test02", "{\"int\":1}" },
        { "Test03", "{\"float\":1.0}" },
        { "Test04", "{\"string\":\"ping\"}" },
        { "Test05", STEP05 },
        { "Test06", "{\"struct\":" STEP05 "}" },
        { "Test07", "{\"map\":{\"foo\":\"Foo\",\"bar\":\"Bar\"}}" },
        { "Test08", "{\"set\":{\"one\":{},\"two\":{},\"three\":{}}}" },
        { "Test09", "{\"mytype\":" MYTYPE "}" },
};

static void print_json(const char *prefix, const json_t *j) {
        _cleanup_free_ char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);

        printf("%s%s\n", prefix, s ?: "(out of memory)");
}

/* Reads one reply to method and checks it: no error, "continues" as expected, parameters valid
 * for the method's output in the server's IDL and equivalent to expected (unless NULL).
 * Returns 0 and the parameters in *ret (when not NULL), or -EPROTO after printing why. */
static int read_checked(VarlinkClient *c, const VarlinkInterface *idl, const char *method, bool continues_expected,
                        const json_t *expected, json_t **ret) {
        _cleanup_json_ json_t *reply = NULL;
        _cleanup_free_ char *error = NULL;
        const char *field = NULL;
        bool continues;
        int r;

        r = varlink_client_read_reply(c, &reply, &error, &continues);
        if (r < 0) {
                printf("%s: reading the reply failed: %s\n", method, strerror(-r));
                return -EPROTO;
        }
        if (error) {
                printf("%s: failed with error %s\n", method, error);
                print_json("  parameters: ", reply);
                return -EPROTO;
        }
        if (continues != continues_expected) {
                printf("%s: reply has continues=%s, expected %s\n", method, continues ? "true" : "false",
                       continues_expected ? "true" : "false");
                return -EPROTO;
        }
        if (varlink_interface_validate_output(idl, method, reply, &field) < 0) {
                printf("%s: reply does not match the interface (member %s)\n", method, field ?: "(parameters)");
                print_json("  got: ", reply);
                return -EPROTO;
        }
        if (expected && !json_equivalent(expected, reply)) {
                printf("%s: unexpected reply\n", method);
                print_json("  expected: ", expected);
                print_json("  got:      ", reply);
                return -EPROTO;
        }

        if (ret)
                *ret = TAKE_PTR(reply);
        return 0;
}

/* Sends INTERFACE.method with parameters (borrowed). */
static int send_call(VarlinkClient *c, const char *method, const json_t *parameters, unsigned flags) {
        char qualified[128];
        int r;

        snprintf(qualified, sizeof(qualified), INTERFACE ".%s", method);
        r = varlink_client_call(c, qualified, parameters, flags);
        if (r < 0) {
                printf("%s: sending the call failed: %s\n", method, strerror(-r));
                return -EPROTO;
        }
        return 0;
}

/* The previous reply plus client_id: the arguments of the next call. */
static json_t *next_arguments(const json_t *previous, const char *client_id) {
        json_t *p = json_deep_copy(previous);

        if (p && json_object_set_new(p, "client_id", json_string(client_id)) < 0) {
                json_decref(p);
                return NULL;
        }
        return p;
}

static int fetch_interface(VarlinkClient *c, VarlinkInterface **ret) {
        _cleanup_json_ json_t *args = json_pack("{s:s}", "interface", INTERFACE), *reply = NULL;
        _cleanup_free_ char *error = NULL;
        const char *text;
        char why[256];
        int r;

        if (!args)
                return -ENOMEM;
        r = varlink_client_call(c, "org.varlink.service.GetInterfaceDescription", args, 0);
        if (r >= 0)
                r = varlink_client_read_reply(c, &reply, &error, NULL);
        if (r < 0 || error) {
                printf("GetInterfaceDescription: failed: %s\n", error ?: strerror(-r));
                return -EPROTO;
        }
        text = json_string_value(json_object_get(reply, "description"));
        if (!text) {
                print_json("GetInterfaceDescription: no description in ", reply);
                return -EPROTO;
        }
        r = varlink_interface_parse(text, ret, why, sizeof(why));
        if (r < 0) {
                printf("GetInterfaceDescription: the server's " INTERFACE " does not parse: %s\n", why);
                return -EPROTO;
        }
        printf("GetInterfaceDescription: %zu bytes, %zu methods\n", strlen(text), varlink_interface_n_methods(*ret));
        return 0;
}

static int certify(const char *path) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_(varlink_interface_freep) VarlinkInterface *idl = NULL;
        _cleanup_json_ json_t *reply = NULL, *args = NULL, *more_replies = json_array(), *expected = NULL;
        _cleanup_free_ char *client_id = NULL;
        int r;

        if (!more_replies)
                return -ENOMEM;
        r = varlink_client_connect(path, TIMEOUT_USEC, &c);
        if (r < 0) {
                printf("Failed to connect to %s: %s\n", path, strerror(-r));
                return -EPROTO;
        }
        r = fetch_interface(c, &idl);
        if (r < 0)
                return r;

        /* Start: no arguments; the reference client sends no "parameters" at all. */
        r = send_call(c, "Start", NULL, 0);
        if (r >= 0)
                r = read_checked(c, idl, "Start", false, NULL, &reply);
        if (r < 0)
                return r;
        client_id = strdup(json_string_value(json_object_get(reply, "client_id")));
        if (!client_id)
                return -ENOMEM;
        if (client_id[0] == '\0') {
                printf("Start: empty client_id\n");
                return -EPROTO;
        }
        printf("Start: client_id=%s\n", client_id);

        for (size_t i = 0; i < ELEMENTSOF(fixed_steps); i++) {
                const char *method = fixed_steps[i].method;

                json_decref(args);
                json_decref(expected);
                args = next_arguments(reply, client_id);
                expected = json_loads(fixed_steps[i].reply, 0, NULL);
                if (!args || !expected)
                        return -ENOMEM;
                json_decref(reply);
                reply = NULL;

                r = send_call(c, method, args, 0);
                if (r >= 0)
                        r = read_checked(c, idl, method, false, expected, &reply);
                if (r < 0)
                        return r;
                printf("%s: ", method);
                print_json("", reply);
        }

        /* Test10: the Test09 reply back, with "more"; ten replies, all but the last "continues". */
        json_decref(args);
        args = next_arguments(reply, client_id);
        if (!args)
                return -ENOMEM;
        r = send_call(c, "Test10", args, VARLINK_CALL_MORE);
        if (r < 0)
                return r;
        for (int i = 1; i <= N_MORE_REPLIES; i++) {
                char s[32];

                snprintf(s, sizeof(s), "Reply number %d", i);
                json_decref(expected);
                expected = json_pack("{s:s}", "string", s);
                if (!expected)
                        return -ENOMEM;
                json_decref(reply);
                reply = NULL;
                r = read_checked(c, idl, "Test10", i < N_MORE_REPLIES, expected, &reply);
                if (r < 0)
                        return r;
                printf("Test10: reply %d: ", i);
                print_json("", reply);
                if (json_array_append(more_replies, json_object_get(reply, "string")) < 0)
                        return -ENOMEM;
        }

        /* Test11: the ten replies back, oneway. Nothing comes back; if anything did, it would be
         * read below as the reply to End and fail the check. */
        json_decref(args);
        args = json_pack("{s:s, s:O}", "client_id", client_id, "last_more_replies", more_replies);
        if (!args)
                return -ENOMEM;
        r = send_call(c, "Test11", args, VARLINK_CALL_ONEWAY);
        if (r < 0)
                return r;
        printf("Test11: sent oneway\n");

        json_decref(args);
        json_decref(expected);
        args = json_pack("{s:s}", "client_id", client_id);
        expected = json_pack("{s:b}", "all_ok", true);
        if (!args || !expected)
                return -ENOMEM;
        json_decref(reply);
        reply = NULL;
        r = send_call(c, "End", args, 0);
        if (r >= 0)
                r = read_checked(c, idl, "End", false, expected, &reply);
        if (r < 0)
                return r;
        print_json("End: ", reply);

        /* The client_id is used up: the server must say so with an error of its interface. */
        json_decref(reply);
        reply = NULL;
        {
                _cleanup_free_ char *error = NULL;

                r = send_call(c, "End", args, 0);
                if (r >= 0)
                        r = varlink_client_read_reply(c, &reply, &error, NULL);
                if (r < 0) {
                        printf("End (again): %s\n", strerror(-r));
                        return -EPROTO;
                }
                if (!error || strcmp(error, INTERFACE ".ClientIdError") != 0) {
                        printf("End (again): expected error " INTERFACE ".ClientIdError, got %s\n",
                               error ?: "a reply");
                        return -EPROTO;
                }
                printf("End (again): %s\n", error);
        }
        return 0;
}

int main(int argc, char *argv[]) {
        int r;

        if (argc != 2) {
                fprintf(stderr, "usage: varlink-cert-client SOCKET-PATH\n");
                return 2;
        }
        r = certify(argv[1]);
        if (r < 0) {
                if (r != -EPROTO)
                        printf("Certification failed: %s\n", strerror(-r));
                printf("Certification FAILED\n");
                return EXIT_FAILURE;
        }
        printf("Certification passed\n");
        return EXIT_SUCCESS;
}
