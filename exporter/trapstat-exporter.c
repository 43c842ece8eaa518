/* SPDX-License-Identifier: MIT */
/* trapstat-exporter: serves trapstatd's running totals per unit as Prometheus metrics.
 *
 * Each GET /metrics asks the daemon anew over its varlink socket (UnitTotals, GetStatus and,
 * with --process-series, Top) and formats the replies (metrics.c). Nothing is cached between
 * scrapes: the counters are the daemon's, monotonic while it runs, and a restart of the daemon
 * is a counter reset Prometheus handles. Scrapes are answered one after the other from one
 * event loop; the calls to the daemon of one scrape together wait at most --timeout. */

#include <errno.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "defaults.h"
#include "metrics.h"
#include "time-util.h"
#include "trapstat-client.h"

#define DEFAULT_LISTEN "127.0.0.1:9472"
#define DEFAULT_TIMEOUT_USEC (5 * USEC_PER_SEC)
/* A scrape is a GET with a few headers and no body: anything bigger is not one. */
#define MAX_HEADERS_SIZE 8192
#define MAX_BODY_SIZE 1024
/* An idle or slow HTTP connection is closed after this long. */
#define HTTP_TIMEOUT_SEC 30

typedef struct Exporter {
        const char *socket_path;
        uint64_t timeout_usec;
        unsigned unit_limit;
        unsigned process_series;
} Exporter;

static const char *program = "trapstat-exporter";

static void help(void) {
        printf("Usage: %s [OPTIONS]\n\n"
               "Serves trapstatd's counters per systemd unit as Prometheus metrics on GET /metrics.\n\n"
               "  -s, --socket PATH          trapstatd's socket (default %s)\n"
               "  -l, --listen ADDR:PORT     where to listen (default %s; [ADDR]:PORT for IPv6);\n"
               "                             a socket passed by systemd takes its place\n"
               "  -u, --unit-limit N         at most N unit series per family plus \"other\" (default %d, 1 to %d)\n"
               "  -p, --process-series N     also N per-process series plus \"other\" (default 0, at most %d)\n"
               "  -t, --timeout DURATION     longest a scrape waits for trapstatd (default 5s)\n"
               "  -h, --help                 print this help\n"
               "      --version              print the version\n",
               program, TRAPSTAT_DEFAULT_SOCKET, DEFAULT_LISTEN, UNIT_TOTALS_DEFAULT_LIMIT, UNIT_TOTALS_MAX_LIMIT,
               TOP_MAX_LIMIT);
}

static int usage_error(const char *fmt, const char *arg) {
        fprintf(stderr, "%s: ", program);
        fprintf(stderr, fmt, arg);
        fprintf(stderr, "\nTry '%s --help'.\n", program);
        return 2;
}

static int parse_unsigned(const char *s, unsigned min, unsigned max, unsigned *ret) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (errno != 0 || end == s || *end || s[0] == '-' || v < min || v > max)
                return -EINVAL;
        *ret = (unsigned) v;
        return 0;
}

static void log_error(const char *what, int r, const char *method, TrapstatError *e) {
        if (r == TRAPSTAT_ERROR_REPLY) {
                _cleanup_free_ char *m = NULL;
                if (trapstat_error_message(method, e, &m) >= 0)
                        fprintf(stderr, "%s: %s: %s\n", program, what, m);
        } else
                fprintf(stderr, "%s: %s: %s\n", program, what, strerror(-r));
}

/* One call; NULL when it failed, which is logged. After a failure to talk to the daemon (not
 * an error reply) *broken is set: a reply that came late would be read as the next call's. */
static json_t *call(TrapstatClient *c, const char *method, json_t *parameters, bool *broken) {
        json_t *reply = NULL;
        TrapstatError e = {};
        if (*broken)
                return NULL;
        int r = trapstat_client_call(c, method, parameters, &reply, &e);
        if (r != 0) {
                *broken = r < 0;
                log_error(method, r, method, &e);
                trapstat_error_done(&e);
                return NULL;
        }
        return reply;
}

/* Asks the daemon and formats the replies; on any failure to get the unit totals, up 0. */
static int scrape(const Exporter *x, MetricsFormat format, char **ret, size_t *ret_size) {
        uint64_t start = now_usec(CLOCK_MONOTONIC);
        _cleanup_(json_decrefp) json_t *totals = NULL, *status = NULL, *top = NULL;
        _cleanup_(trapstat_client_freep) TrapstatClient *c = NULL;
        bool broken = false;

        /* --timeout bounds the whole scrape, as Prometheus' scrape_timeout bounds its wait:
         * each call gets an equal share of it. */
        uint64_t calls = 2 + (x->process_series > 0);
        int r = trapstat_client_connect(x->socket_path, MAX(x->timeout_usec / calls, 1), &c);
        if (r < 0)
                fprintf(stderr, "%s: connecting to %s: %s\n", program, x->socket_path, strerror(-r));
        else {
                _cleanup_(json_decrefp) json_t *p = json_pack("{s:i}", "limit", (json_int_t) x->unit_limit);
                totals = p ? call(c, "io.trapstat.UnitTotals", p, &broken) : NULL;
        }
        if (totals) {
                status = call(c, "io.trapstat.GetStatus", NULL, &broken);
                json_t *since = json_object_get(totals, "sinceUsec");
                if (x->process_series > 0 && json_is_integer(since)) {
                        /* The whole life of the daemon (its history is kept in 10 s buckets, so
                         * one more), that the process series count what the unit series do. */
                        uint64_t now = now_usec(CLOCK_REALTIME), s = (uint64_t) json_integer_value(since);
                        uint64_t window = (now > s ? (now - s) / USEC_PER_SEC : 0) + 10;
                        _cleanup_(json_decrefp) json_t *p = json_pack(
                                "{s:I,s:s,s:i}", "windowSec", (json_int_t) MIN(window, (uint64_t) MAX_WINDOW_SEC),
                                "sortBy", "user", "limit", (json_int_t) x->process_series);
                        top = p ? call(c, "io.trapstat.Top", p, &broken) : NULL;
                }
        }

        MetricsInput in = {
                .unit_totals = totals,
                .status = status,
                .top = top,
                .unit_limit = x->unit_limit,
                .process_series = x->process_series,
                .scrape_seconds = (double) (now_usec(CLOCK_MONOTONIC) - start) / USEC_PER_SEC,
        };
        r = metrics_render(&in, format, ret, ret_size);
        if (r == -EBADMSG) {
                fprintf(stderr, "%s: trapstatd's reply is not what io.trapstat promises\n", program);
                in = (MetricsInput) { .scrape_seconds = -1 };
                r = metrics_render(&in, format, ret, ret_size);
        }
        return r;
}

static void on_request(struct evhttp_request *req, void *userdata) {
        const Exporter *x = userdata;
        enum evhttp_cmd_type method = evhttp_request_get_command(req);
        struct evkeyvalq *out_headers = evhttp_request_get_output_headers(req);

        const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
        if (!path || strcmp(path, "/metrics") != 0) {
                evhttp_send_error(req, HTTP_NOTFOUND, NULL);
                return;
        }
        if (method != EVHTTP_REQ_GET && method != EVHTTP_REQ_HEAD) {
                evhttp_add_header(out_headers, "Allow", "GET, HEAD");
                evhttp_send_error(req, 405, "Method Not Allowed");
                return;
        }

        const char *accept = evhttp_find_header(evhttp_request_get_input_headers(req), "Accept");
        MetricsFormat format = metrics_format_from_accept(accept);
        _cleanup_free_ char *body = NULL;
        size_t size;
        if (scrape(x, format, &body, &size) < 0) {
                evhttp_send_error(req, HTTP_INTERNAL, NULL);
                return;
        }
        struct evbuffer *buf = evbuffer_new();
        if (!buf || evbuffer_add(buf, body, size) < 0) {
                if (buf)
                        evbuffer_free(buf);
                evhttp_send_error(req, HTTP_INTERNAL, NULL);
                return;
        }
        evhttp_add_header(out_headers, "Content-Type", metrics_content_type(format));
        evhttp_add_header(out_headers, "Cache-Control", "no-store");
        /* libevent leaves the body out of the answer to a HEAD and keeps its length. */
        evhttp_send_reply(req, HTTP_OK, "OK", buf);
        evbuffer_free(buf);
}

static void on_signal(evutil_socket_t sig, short events, void *userdata) {
        (void) sig;
        (void) events;
        event_base_loopbreak(userdata);
}

/* "ADDR:PORT" or "[ADDR6]:PORT" into *host (malloc'd) and *port. */
static int parse_listen(const char *s, char **ret_host, uint16_t *ret_port) {
        const char *colon = strrchr(s, ':');
        if (!colon || colon == s)
                return -EINVAL;
        unsigned port;
        if (parse_unsigned(colon + 1, 0, 65535, &port) < 0)
                return -EINVAL;
        const char *h = s;
        size_t n = colon - s;
        if (h[0] == '[') {
                if (n < 2 || h[n - 1] != ']')
                        return -EINVAL;
                h++;
                n -= 2;
        } else if (memchr(h, ':', n))
                return -EINVAL; /* an IPv6 address without brackets: ambiguous */
        char *host = strndup(h, n);
        if (!host)
                return -ENOMEM;
        *ret_host = host;
        *ret_port = (uint16_t) port;
        return 0;
}

int main(int argc, char **argv) {
        enum { OPT_VERSION = 0x100 };
        static const struct option options[] = {
                { "socket", required_argument, NULL, 's' },
                { "listen", required_argument, NULL, 'l' },
                { "unit-limit", required_argument, NULL, 'u' },
                { "process-series", required_argument, NULL, 'p' },
                { "timeout", required_argument, NULL, 't' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, OPT_VERSION },
                {},
        };
        Exporter x = {
                .socket_path = TRAPSTAT_DEFAULT_SOCKET,
                .timeout_usec = DEFAULT_TIMEOUT_USEC,
                .unit_limit = UNIT_TOTALS_DEFAULT_LIMIT,
        };
        const char *listen = DEFAULT_LISTEN;
        int c;
        while ((c = getopt_long(argc, argv, "s:l:u:p:t:h", options, NULL)) >= 0)
                switch (c) {
                case 's':
                        x.socket_path = optarg;
                        break;
                case 'l':
                        listen = optarg;
                        break;
                case 'u':
                        if (parse_unsigned(optarg, 1, UNIT_TOTALS_MAX_LIMIT, &x.unit_limit) < 0)
                                return usage_error("invalid --unit-limit '%s': expected 1 to 100000", optarg);
                        break;
                case 'p':
                        if (parse_unsigned(optarg, 0, TOP_MAX_LIMIT, &x.process_series) < 0)
                                return usage_error("invalid --process-series '%s': expected 0 to 10000", optarg);
                        break;
                case 't':
                        if (parse_duration_usec(optarg, &x.timeout_usec) < 0 || x.timeout_usec < USEC_PER_MSEC ||
                            x.timeout_usec > 600 * USEC_PER_SEC)
                                return usage_error("invalid --timeout '%s': expected a duration from 1ms to 10min",
                                                   optarg);
                        break;
                case 'h':
                        help();
                        return 0;
                case OPT_VERSION:
                        printf("%s %s\n", program, TRAPSTAT_VERSION);
                        return 0;
                default:
                        fprintf(stderr, "Try '%s --help'.\n", program);
                        return 2;
                }
        if (optind < argc)
                return usage_error("unexpected argument '%s'", argv[optind]);

        _cleanup_free_ char *host = NULL;
        uint16_t port;
        if (parse_listen(listen, &host, &port) < 0)
                return usage_error("invalid --listen '%s': expected ADDR:PORT or [ADDR]:PORT", listen);

        /* A scrape to a peer that went away must not kill us. */
        signal(SIGPIPE, SIG_IGN);

        struct event_base *base = event_base_new();
        struct evhttp *http = base ? evhttp_new(base) : NULL;
        if (!http) {
                fprintf(stderr, "%s: cannot set up the event loop\n", program);
                return 1;
        }
        evhttp_set_max_headers_size(http, MAX_HEADERS_SIZE);
        evhttp_set_max_body_size(http, MAX_BODY_SIZE);
        evhttp_set_timeout(http, HTTP_TIMEOUT_SEC);
        /* Every method reaches on_request, which answers 405 itself (libevent would say 501). */
        evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
                                                 EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE |
                                                 EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
        evhttp_set_gencb(http, on_request, &x);

        /* systemd's socket (trapstat-exporter.socket) replaces --listen. */
        int n = sd_listen_fds(1);
        if (n < 0) {
                fprintf(stderr, "%s: sd_listen_fds: %s\n", program, strerror(-n));
                return 1;
        }
        if (n > 1) {
                fprintf(stderr, "%s: systemd passed %d sockets, expected one\n", program, n);
                return 1;
        }
        if (n == 1) {
                /* libevent accepts until EAGAIN: on systemd's blocking socket the second accept
                 * would block the loop for good. */
                if (evutil_make_socket_nonblocking(SD_LISTEN_FDS_START) < 0 ||
                    !evhttp_accept_socket_with_handle(http, SD_LISTEN_FDS_START)) {
                        fprintf(stderr, "%s: cannot listen on the socket passed by systemd\n", program);
                        return 1;
                }
        } else if (!evhttp_bind_socket_with_handle(http, host, port)) {
                fprintf(stderr, "%s: cannot listen on %s: %s\n", program, listen, strerror(errno));
                return 1;
        }

        struct event *sigterm = evsignal_new(base, SIGTERM, on_signal, base);
        struct event *sigint = evsignal_new(base, SIGINT, on_signal, base);
        if (!sigterm || !sigint || evsignal_add(sigterm, NULL) < 0 || evsignal_add(sigint, NULL) < 0) {
                fprintf(stderr, "%s: cannot handle signals\n", program);
                return 1;
        }
        (void) sd_notify(0, "READY=1");
        int r = event_base_dispatch(base);

        event_free(sigterm);
        event_free(sigint);
        evhttp_free(http);
        event_base_free(base);
        return r < 0 ? 1 : 0;
}
