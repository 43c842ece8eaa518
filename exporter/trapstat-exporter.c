/* SPDX-License-Identifier: MIT */
/* trapstat-exporter: serves trapstatd's running totals per unit as Prometheus metrics.
 *
 * Each GET /metrics asks the daemon anew over its varlink socket (UnitTotals, GetStatus and,
 * with --process-series, Top) and formats the replies (exposition.c). Nothing is cached between
 * scrapes: the counters are the daemon's, monotonic while it runs, and a restart of the daemon
 * is a counter reset Prometheus handles. Scrapes are answered one after the other from one
 * event loop; the calls to the daemon of one scrape together wait at most --timeout. */

#include <errno.h>
#include <event2/event.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>

#include "argv-util.h"
#include "defaults.h"
#include "http-server.h"
#include "log.h"
#include "exposition.h"
#include "time-util.h"
#include "trapstat-methods.h"

#define DEFAULT_LISTEN "127.0.0.1:9472"
#define DEFAULT_TIMEOUT_USEC (5 * USEC_PER_SEC)
/* Prometheus servers scrape over a handful of connections: 512 is room for many of them, and
 * with FD_RESERVE it is the unit's LimitNOFILE (544). */
#define DEFAULT_MAX_CONNECTIONS 512
#define MAX_MAX_CONNECTIONS 65536
/* Descriptors besides the connections: standard I/O, the event loop's, the listening socket,
 * a scrape's connection to trapstatd, with room to spare. */
#define FD_RESERVE 32
#define DEFAULT_HTTP_DEADLINE_USEC (10 * USEC_PER_SEC)
/* A scrape is a GET with a few headers and no body: anything bigger is not one. */
#define MAX_HEADERS_SIZE 8192
#define MAX_BODY_SIZE 1024
/* After accept() failed for want of descriptors or memory. */
#define ACCEPT_PAUSE_USEC (1 * USEC_PER_SEC)
/* Each condition a client can cause (a deadline, the cap, a failed accept) is logged at most
 * once in this interval, with the number of lines left out. */
#define LOG_INTERVAL_USEC (10 * USEC_PER_SEC)

typedef struct Exporter {
        const char *socket_path;
        const char *listen;
        uint64_t timeout_usec;
        unsigned unit_limit;
        unsigned process_series;
        HttpLimits http;
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
               "      --max-connections N    at most N HTTP connections (default %d, 1 to %d)\n"
               "      --header-timeout DURATION\n"
               "                             request line and headers due this long after the connect (default 10s)\n"
               "      --body-timeout DURATION\n"
               "                             a request's body due this long after its headers (default 10s)\n"
               "      --send-timeout DURATION\n"
               "                             the reply taken by the client within this long (default 10s)\n"
               "  -h, --help                 print this help\n"
               "      --version              print the version\n",
               program, TRAPSTAT_DEFAULT_SOCKET, DEFAULT_LISTEN, UNIT_TOTALS_DEFAULT_LIMIT, UNIT_TOTALS_MAX_LIMIT,
               TOP_MAX_LIMIT, DEFAULT_MAX_CONNECTIONS, MAX_MAX_CONNECTIONS);
}

static void log_call_error(const char *method, int r, TrapstatError *e) {
        _cleanup_free_ char *m = NULL;

        if (r == TRAPSTAT_ERROR_REPLY && trapstat_error_message(method, e, &m) >= 0)
                log_error("%s: %s: %s", program, method, m);
        else if (r != TRAPSTAT_ERROR_REPLY)
                log_error_errno(r, "%s: %s: %m", program, method);
        trapstat_error_done(e);
}

/* The replies of one scrape; a reply's json is NULL when its call failed or was not made. */
typedef struct ScrapeReplies {
        TrapstatUnitTotalsReply totals;
        TrapstatStatusReply status;
        TrapstatTopReply top;
} ScrapeReplies;

static void scrape_replies_done(ScrapeReplies *s) {
        trapstat_unit_totals_reply_done(&s->totals);
        trapstat_status_reply_done(&s->status);
        trapstat_top_reply_done(&s->top);
}

/* Whether a call's result leaves the connection usable: after a failure to talk to the daemon
 * (not an error reply), a reply that came late would be read as the next call's. Logs failures. */
static bool call_done(const char *method, int r, TrapstatError *e) {
        if (r < 0)
                log_call_error(method, r, e);
        return r >= 0 || r == TRAPSTAT_ERROR_REPLY;
}

/* The process series: Top over the whole life of the daemon (its history is kept in 10 s
 * buckets, so one more), that they count what the unit series do. */
static bool scrape_top(const Exporter *x, TrapstatClient *c, uint64_t since_usec, TrapstatTopReply *ret) {
        TrapstatError e = {};
        uint64_t now = now_usec(CLOCK_REALTIME);
        uint64_t window = (now > since_usec ? (now - since_usec) / USEC_PER_SEC : 0) + 10;
        TrapstatTopRequest q = {
                .window_sec = MIN(window, (uint64_t) MAX_WINDOW_SEC),
                .sort_by = "user",
                .limit = x->process_series,
        };

        return call_done("io.trapstat.Top", trapstat_top(c, &q, ret, &e), &e);
}

/* UnitTotals, then GetStatus and (--process-series) Top on the same connection. */
static void scrape_calls(const Exporter *x, TrapstatClient *c, ScrapeReplies *ret) {
        TrapstatError e = {};

        if (!call_done("io.trapstat.UnitTotals",
                       trapstat_unit_totals(c, &(TrapstatUnitTotalsRequest) { .limit = x->unit_limit }, &ret->totals, &e), &e) ||
            !ret->totals.json)
                return;
        if (!call_done("io.trapstat.GetStatus", trapstat_get_status(c, &ret->status, &e), &e))
                return;
        if (x->process_series > 0 && ret->totals.has_since)
                (void) scrape_top(x, c, ret->totals.since_usec, &ret->top);
}

/* Asks the daemon and formats the replies; on any failure to get the unit totals, up 0. */
static int scrape(const Exporter *x, MetricsFormat format, char **ret, size_t *ret_size) {
        uint64_t start = now_usec(CLOCK_MONOTONIC);
        _cleanup_(trapstat_client_freep) TrapstatClient *c = NULL;
        _cleanup_(scrape_replies_done) ScrapeReplies replies = {};

        /* --timeout bounds the whole scrape, as Prometheus' scrape_timeout bounds its wait:
         * each call gets an equal share of it. */
        uint64_t calls = 2 + (x->process_series > 0);
        int r = trapstat_client_connect(x->socket_path, MAX(x->timeout_usec / calls, 1), &c);
        if (r < 0)
                log_error_errno(r, "%s: connecting to %s: %m", program, x->socket_path);
        else
                scrape_calls(x, c, &replies);

        MetricsInput in = {
                .unit_totals = replies.totals.json,
                .status = replies.status.json,
                .top = replies.top.json,
                .unit_limit = x->unit_limit,
                .process_series = x->process_series,
                .scrape_seconds = (double) (now_usec(CLOCK_MONOTONIC) - start) / USEC_PER_SEC,
        };
        r = metrics_render(&in, format, ret, ret_size);
        if (r == -EBADMSG) {
                log_error("%s: trapstatd's reply is not what io.trapstat promises", program);
                in = (MetricsInput) { .scrape_seconds = -1 };
                r = metrics_render(&in, format, ret, ret_size);
        }
        return r;
}

static void on_request(const HttpRequest *request, HttpResponse *response, void *userdata) {
        const Exporter *x = userdata;

        if (strcmp(request->path, "/metrics") != 0) {
                response->status = 404;
                return;
        }
        if (strcmp(request->method, "GET") != 0 && strcmp(request->method, "HEAD") != 0) {
                response->status = 405;
                response->allow = "GET, HEAD";
                return;
        }
        MetricsFormat format = metrics_format_from_accept(request->accept);
        if (scrape(x, format, &response->body, &response->size) < 0) {
                response->status = 500;
                return;
        }
        response->status = 200;
        response->content_type = metrics_content_type(format);
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
        uint64_t port;
        if (parse_integer(colon + 1, 0, 65535, 0, &port) < 0)
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

enum {
        OPT_VERSION = 0x100,
        OPT_MAX_CONNECTIONS,
        OPT_HEADER_TIMEOUT,
        OPT_BODY_TIMEOUT,
        OPT_SEND_TIMEOUT
};

/* A count option into *ret, or the usage error. */
static int parse_count_option(const char *name, const char *arg, unsigned min, unsigned max, unsigned *ret) {
        uint64_t v;

        if (parse_integer(arg, min, max, 0, &v) < 0)
                return usage_error(NULL, "invalid --%s '%s': expected %u to %u", name, arg, min, max);
        *ret = (unsigned) v;
        return 1;
}

/* A duration option of 1ms to 10min into *ret, or the usage error. */
static int parse_deadline_option(const char *name, const char *arg, uint64_t *ret) {
        uint64_t v;

        if (parse_duration_usec(arg, &v) < 0 || v < USEC_PER_MSEC || v > 600 * USEC_PER_SEC)
                return usage_error(NULL, "invalid --%s '%s': expected a duration from 1ms to 10min", name, arg);
        *ret = v;
        return 1;
}

/* One option into *x; returns as parse_argv() (argv-util.h). */
static int parse_option(int c, const char *arg, Exporter *x) {
        switch (c) {
        case 's':
                x->socket_path = arg;
                return 1;
        case 'l':
                x->listen = arg;
                return 1;
        case 'u':
                return parse_count_option("unit-limit", arg, 1, UNIT_TOTALS_MAX_LIMIT, &x->unit_limit);
        case 'p':
                return parse_count_option("process-series", arg, 0, TOP_MAX_LIMIT, &x->process_series);
        case 't':
                return parse_deadline_option("timeout", arg, &x->timeout_usec);
        case OPT_MAX_CONNECTIONS:
                return parse_count_option("max-connections", arg, 1, MAX_MAX_CONNECTIONS, &x->http.max_connections);
        case OPT_HEADER_TIMEOUT:
                return parse_deadline_option("header-timeout", arg, &x->http.header_timeout_usec);
        case OPT_BODY_TIMEOUT:
                return parse_deadline_option("body-timeout", arg, &x->http.body_timeout_usec);
        case OPT_SEND_TIMEOUT:
                return parse_deadline_option("send-timeout", arg, &x->http.send_timeout_usec);
        case 'h':
                help();
                return 0;
        case OPT_VERSION:
                printf("%s %s\n", program, TRAPSTAT_VERSION);
                return 0;
        default:
                return usage_hint(NULL);
        }
}

/* Fills *x from the command line; returns as every parse_argv() (argv-util.h): > 0 to run. */
static int parse_argv(int argc, char **argv, Exporter *x) {
        static const struct option options[] = {
                { "socket", required_argument, NULL, 's' },
                { "listen", required_argument, NULL, 'l' },
                { "unit-limit", required_argument, NULL, 'u' },
                { "process-series", required_argument, NULL, 'p' },
                { "timeout", required_argument, NULL, 't' },
                { "max-connections", required_argument, NULL, OPT_MAX_CONNECTIONS },
                { "header-timeout", required_argument, NULL, OPT_HEADER_TIMEOUT },
                { "body-timeout", required_argument, NULL, OPT_BODY_TIMEOUT },
                { "send-timeout", required_argument, NULL, OPT_SEND_TIMEOUT },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, OPT_VERSION },
                {},
        };
        _cleanup_free_ char *host = NULL;
        uint16_t port;
        int c, r;

        while ((c = getopt_long(argc, argv, "s:l:u:p:t:h", options, NULL)) >= 0) {
                r = parse_option(c, optarg, x);
                if (r <= 0)
                        return r;
        }
        if (optind < argc)
                return usage_error(NULL, "unexpected argument '%s'", argv[optind]);
        /* Only checked here: listen_socket() resolves it. */
        if (parse_listen(x->listen, &host, &port) < 0)
                return usage_error(NULL, "invalid --listen '%s': expected ADDR:PORT or [ADDR]:PORT", x->listen);
        return 1;
}

/* Room for every connection: the soft limit of open files raised towards the hard one (a
 * program on epoll need not keep 1024); where even that is too low, fewer connections, said
 * once. Under the unit, LimitNOFILE is already enough (and @resources is filtered). */
static unsigned fit_fd_limit(unsigned max_connections) {
        rlim_t want = (rlim_t) max_connections + FD_RESERVE;
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return max_connections;
        if (rl.rlim_cur < want && rl.rlim_cur < rl.rlim_max) {
                struct rlimit raised = { .rlim_cur = MIN(want, rl.rlim_max), .rlim_max = rl.rlim_max };
                if (setrlimit(RLIMIT_NOFILE, &raised) == 0)
                        rl = raised;
        }
        if (rl.rlim_cur >= want)
                return max_connections;
        unsigned fit = rl.rlim_cur > FD_RESERVE + 1 ? (unsigned) (rl.rlim_cur - FD_RESERVE) : 1;
        log_warning("%s: open files limited to %ju: at most %u HTTP connections, not %u (--max-connections)", program,
                    (uintmax_t) rl.rlim_cur, fit, max_connections);
        return fit;
}

/* The socket systemd passed (trapstat-exporter.socket), else one bound to --listen. */
static int listen_socket(const char *listen_addr, int *ret_fd) {
        int n = sd_listen_fds(1);
        if (n < 0)
                return log_error_errno(n, "%s: sd_listen_fds: %m", program);
        if (n > 1)
                return log_error_errno(EINVAL, "%s: systemd passed %d sockets, expected one", program, n);
        if (n == 1) {
                /* libevent accepts until EAGAIN: on systemd's blocking socket the second accept
                 * would block the loop for good. */
                if (evutil_make_socket_nonblocking(SD_LISTEN_FDS_START) < 0)
                        return log_error_errno(errno, "%s: cannot use the socket passed by systemd: %m", program);
                *ret_fd = SD_LISTEN_FDS_START;
                return 0;
        }

        struct sockaddr_storage ss;
        int len = sizeof(ss);
        if (evutil_parse_sockaddr_port(listen_addr, (struct sockaddr *) &ss, &len) < 0)
                return log_error_errno(EINVAL, "%s: cannot listen on %s: not an address", program, listen_addr);
        _cleanup_close_ int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        int one = 1;
        if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
            bind(fd, (struct sockaddr *) &ss, (socklen_t) len) < 0 || listen(fd, SOMAXCONN) < 0)
                return log_error_errno(errno, "%s: cannot listen on %s: %m", program, listen_addr);
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static int run(Exporter *x) {
        /* A scrape to a peer that went away must not kill us. */
        signal(SIGPIPE, SIG_IGN);
        x->http.max_connections = fit_fd_limit(x->http.max_connections);

        int fd = -1;
        if (listen_socket(x->listen, &fd) < 0)
                return 1;
        struct event_base *base = event_base_new();
        HttpServer *server = NULL;
        if (!base || http_server_new(base, fd, &x->http, on_request, x, &server) < 0) {
                log_error("%s: cannot set up the event loop", program);
                close(fd);
                if (base)
                        event_base_free(base);
                return 1;
        }

        struct event *sigterm = evsignal_new(base, SIGTERM, on_signal, base);
        struct event *sigint = evsignal_new(base, SIGINT, on_signal, base);
        int r = -1;
        if (!sigterm || !sigint || evsignal_add(sigterm, NULL) < 0 || evsignal_add(sigint, NULL) < 0)
                log_error("%s: cannot handle signals", program);
        else {
                (void) sd_notify(0, "READY=1");
                r = event_base_dispatch(base);
        }

        if (sigterm)
                event_free(sigterm);
        if (sigint)
                event_free(sigint);
        http_server_free(server);
        event_base_free(base);
        return r < 0 ? 1 : 0;
}

int main(int argc, char **argv) {
        Exporter x = {
                .socket_path = TRAPSTAT_DEFAULT_SOCKET,
                .listen = DEFAULT_LISTEN,
                .timeout_usec = DEFAULT_TIMEOUT_USEC,
                .unit_limit = UNIT_TOTALS_DEFAULT_LIMIT,
                .http = {
                        .max_connections = DEFAULT_MAX_CONNECTIONS,
                        .header_timeout_usec = DEFAULT_HTTP_DEADLINE_USEC,
                        .body_timeout_usec = DEFAULT_HTTP_DEADLINE_USEC,
                        .send_timeout_usec = DEFAULT_HTTP_DEADLINE_USEC,
                        .max_header_size = MAX_HEADERS_SIZE,
                        .max_body_size = MAX_BODY_SIZE,
                        .accept_pause_usec = ACCEPT_PAUSE_USEC,
                        .log_interval_usec = LOG_INTERVAL_USEC,
                },
        };
        int r = parse_argv(argc, argv, &x);
        if (r <= 0)
                return parse_argv_exit_code(r);
        return run(&x);
}
