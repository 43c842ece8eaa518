/* SPDX-License-Identifier: MIT */
#include "http-server.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include "log.h"
#include "macro.h"
#include "time-util.h"

typedef enum Phase {
        PHASE_HEADERS, /* reading the request line and headers */
        PHASE_BODY,    /* reading (and dropping) the body */
        PHASE_SEND,    /* the reply is going out; nothing is read */
        PHASE_LINGER,  /* the reply is out and our side shut: reading until the client closes, so
                        * that data it sent and we never read does not turn our close into a
                        * reset that destroys the reply before it is read */
} Phase;

/* Descriptors kept free below the open-files limit once it is met (see server_lower_cap()). */
#define EMFILE_SPARE 8U

/* What is logged, each at most once per log interval. */
typedef enum Condition {
        CONDITION_ACCEPT,
        CONDITION_EVICT,
        CONDITION_FULL,
        CONDITION_HEADERS,
        CONDITION_BODY,
        CONDITION_SEND,
        _CONDITION_MAX,
} Condition;

/* The request as read, until it is answered. */
typedef struct Head {
        char *method;
        char *target;
        char *accept;
        uint64_t content_length;
        bool has_length;
        bool head;
} Head;

typedef struct Connection {
        HttpServer *server;
        struct bufferevent *bev;
        int fd;
        struct event *deadline;
        Phase phase;
        Head head;
        TAILQ_ENTRY(Connection) link;
} Connection;

struct HttpServer {
        struct event_base *base;
        struct evconnlistener *listener;
        struct event *resume;
        HttpLimits limits;
        HttpHandler handler;
        void *userdata;
        TAILQ_HEAD(, Connection) connections; /* oldest first */
        unsigned n_connections;
        bool paused;
        RateLimit ratelimit[_CONDITION_MAX];
};

static void head_done(Head *h) {
        free(h->method);
        free(h->target);
        free(h->accept);
        *h = (Head) {};
}

static void server_resume(HttpServer *s) {
        if (!s->paused)
                return;
        s->paused = false;
        evtimer_del(s->resume);
        (void) evconnlistener_enable(s->listener);
}

/* Stops accepting for the accept pause, or until a connection closes. */
static void server_pause(HttpServer *s) {
        struct timeval tv = {
                .tv_sec = (time_t) (s->limits.accept_pause_usec / USEC_PER_SEC),
                .tv_usec = (suseconds_t) (s->limits.accept_pause_usec % USEC_PER_SEC),
        };
        s->paused = true;
        (void) evconnlistener_disable(s->listener);
        (void) evtimer_add(s->resume, &tv);
}

static void connection_free(Connection *c) {
        HttpServer *s = c->server;

        TAILQ_REMOVE(&s->connections, c, link);
        s->n_connections--;
        if (c->deadline)
                event_free(c->deadline);
        if (c->bev)
                bufferevent_free(c->bev);
        /* Closed here, not by the bufferevent: libevent frees it (and would close its socket)
         * only later in the loop's turn, and an accept loop evicting connections to make room
         * would run out of descriptors before then. bufferevent_free() has taken the socket
         * out of epoll already. */
        if (c->fd >= 0)
                (void) close(c->fd);
        head_done(&c->head);
        free(c);
        /* A descriptor and a place are free again. */
        server_resume(s);
}

static void arm_deadline(Connection *c, uint64_t usec) {
        struct timeval tv = { .tv_sec = (time_t) (usec / USEC_PER_SEC),
                              .tv_usec = (suseconds_t) (usec % USEC_PER_SEC) };
        /* From now, not from the loop's cached time: a scrape may have held the loop for
         * seconds since the turn began. */
        (void) event_base_update_cache_time(c->server->base);
        (void) evtimer_add(c->deadline, &tv);
}

static const char *status_text(int status) {
        switch (status) {
        case 200:
                return "OK";
        case 400:
                return "Bad Request";
        case 404:
                return "Not Found";
        case 405:
                return "Method Not Allowed";
        case 413:
                return "Content Too Large";
        case 431:
                return "Request Header Fields Too Large";
        case 501:
                return "Not Implemented";
        case 505:
                return "HTTP Version Not Supported";
        default:
                return "Internal Server Error";
        }
}

/* Closes the connection from the loop, not from within the callback that found it broken
 * (whose caller still holds it). */
static void connection_abort(Connection *c) {
        c->phase = PHASE_LINGER;
        (void) bufferevent_disable(c->bev, EV_READ | EV_WRITE);
        arm_deadline(c, 0);
}

/* Queues the reply and waits for it to go out; the body is freed. */
static void connection_send(Connection *c, HttpResponse *r) {
        struct evbuffer *out = bufferevent_get_output(c->bev);
        _cleanup_free_ char *body = TAKE_PTR(r->body);

        if (evbuffer_add_printf(out,
                                "HTTP/1.1 %d %s\r\n"
                                "Content-Type: %s\r\n"
                                "Content-Length: %zu\r\n"
                                "Cache-Control: no-store\r\n"
                                "Connection: close\r\n"
                                "%s%s%s"
                                "\r\n",
                                r->status, status_text(r->status), r->content_type, r->size, r->allow ? "Allow: " : "",
                                r->allow ?: "", r->allow ? "\r\n" : "") < 0 ||
            (!c->head.head && body && evbuffer_add(out, body, r->size) < 0)) {
                connection_abort(c);
                return;
        }
        c->phase = PHASE_SEND;
        (void) bufferevent_disable(c->bev, EV_READ);
        (void) bufferevent_enable(c->bev, EV_WRITE);
        arm_deadline(c, c->server->limits.send_timeout_usec);
}

static void connection_send_error(Connection *c, int status) {
        HttpResponse r = { .status = status, .content_type = "text/plain; charset=utf-8" };
        if (asprintf(&r.body, "%s\n", status_text(status)) < 0) {
                connection_abort(c);
                return;
        }
        r.size = strlen(r.body);
        connection_send(c, &r);
}

/* The request is whole: the handler answers. */
static void connection_dispatch(Connection *c) {
        HttpServer *s = c->server;
        struct evhttp_uri *uri = evhttp_uri_parse_with_flags(c->head.target, 0);
        const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
        if (!path) {
                if (uri)
                        evhttp_uri_free(uri);
                connection_send_error(c, 400);
                return;
        }

        HttpRequest request = { .method = c->head.method, .path = path, .accept = c->head.accept };
        HttpResponse response = { .status = 500, .content_type = "text/plain; charset=utf-8" };
        s->handler(&request, &response, s->userdata);
        evhttp_uri_free(uri);
        connection_send(c, &response);
}

/* "METHOD SP TARGET SP HTTP/1.x"; 0 or the status to refuse it with. */
static int parse_request_line(char *line, Head *h) {
        char *sp1 = strchr(line, ' ');
        char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
        if (!sp1 || !sp2 || sp1 == line || sp2 == sp1 + 1 || strchr(sp2 + 1, ' '))
                return 400;
        *sp1 = *sp2 = '\0';
        const char *version = sp2 + 1;
        if (strncmp(version, "HTTP/", 5) != 0)
                return 400;
        if (strcmp(version, "HTTP/1.1") != 0 && strcmp(version, "HTTP/1.0") != 0)
                return 505;
        h->method = strdup(line);
        h->target = strdup(sp1 + 1);
        if (!h->method || !h->target)
                return 500;
        h->head = strcmp(h->method, "HEAD") == 0;
        return 0;
}

/* One "Name: value" line; the few headers that matter are kept. 0 or a status. */
static int parse_header(char *line, uint64_t max_body, Head *h) {
        char *colon = strchr(line, ':');
        const char *space = strpbrk(line, " \t");
        /* No name, whitespace before the colon or a folded line: RFC 9112 says reject. */
        if (!colon || colon == line || (space && space < colon))
                return 400;
        *colon = '\0';
        char *value = colon + 1 + strspn(colon + 1, " \t");
        size_t n = strlen(value);
        while (n > 0 && (value[n - 1] == ' ' || value[n - 1] == '\t'))
                value[--n] = '\0';

        if (strcasecmp(line, "Content-Length") == 0) {
                char *end;
                errno = 0;
                unsigned long long v = strtoull(value, &end, 10);
                if (errno != 0 || end == value || *end || value[0] < '0' || value[0] > '9')
                        return 400;
                /* Two lengths that differ: which one frames the request is anyone's guess. */
                if (h->has_length && h->content_length != v)
                        return 400;
                if (v > max_body)
                        return 413;
                h->content_length = v;
                h->has_length = true;
        } else if (strcasecmp(line, "Transfer-Encoding") == 0)
                return 501; /* a scrape has no body: no chunked one either */
        else if (strcasecmp(line, "Accept") == 0 && !h->accept) {
                h->accept = strdup(value);
                if (!h->accept)
                        return 500;
        }
        return 0;
}

/* The whole head is in the buffer (it ends with an empty line): parsed into c->head. */
static int parse_head(struct evbuffer *in, const HttpLimits *limits, Head *h) {
        bool first = true;
        for (;;) {
                _cleanup_free_ char *line = evbuffer_readln(in, NULL, EVBUFFER_EOL_CRLF_STRICT);
                if (!line)
                        return 400;
                if (first) {
                        int r = parse_request_line(line, h);
                        if (r != 0)
                                return r;
                        first = false;
                        continue;
                }
                if (!line[0])
                        return 0;
                int r = parse_header(line, limits->max_body_size, h);
                if (r != 0)
                        return r;
        }
}

static void read_headers(Connection *c, struct evbuffer *in) {
        const HttpLimits *limits = &c->server->limits;
        struct evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
        if (end.pos < 0) {
                if (evbuffer_get_length(in) > limits->max_header_size)
                        connection_send_error(c, 431);
                return;
        }
        if ((size_t) end.pos + 4 > limits->max_header_size) {
                connection_send_error(c, 431);
                return;
        }
        int r = parse_head(in, limits, &c->head);
        if (r != 0) {
                connection_send_error(c, r);
                return;
        }
        if (c->head.content_length == 0) {
                connection_dispatch(c);
                return;
        }
        /* The body's own deadline starts now. */
        c->phase = PHASE_BODY;
        arm_deadline(c, limits->body_timeout_usec);
}

static void on_read(struct bufferevent *bev, void *userdata) {
        Connection *c = userdata;
        struct evbuffer *in = bufferevent_get_input(bev);

        if (c->phase == PHASE_HEADERS)
                read_headers(c, in);
        if (c->phase == PHASE_BODY) {
                size_t n = MIN(evbuffer_get_length(in), c->head.content_length);
                (void) evbuffer_drain(in, n);
                c->head.content_length -= n;
                if (c->head.content_length == 0)
                        connection_dispatch(c);
        } else if (c->phase == PHASE_LINGER)
                (void) evbuffer_drain(in, evbuffer_get_length(in));
}

/* The output buffer ran empty: the reply is out. */
static void on_write(struct bufferevent *bev, void *userdata) {
        Connection *c = userdata;
        if (c->phase != PHASE_SEND)
                return;
        c->phase = PHASE_LINGER;
        (void) shutdown(c->fd, SHUT_WR);
        (void) bufferevent_enable(bev, EV_READ);
}

static void on_event(struct bufferevent *bev, short what, void *userdata) {
        (void) bev;
        /* End of file or an error: in any phase, the connection is over (a request not whole
         * is never answered). */
        if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
                connection_free(userdata);
}

static void on_deadline(evutil_socket_t fd, short events, void *userdata) {
        (void) fd;
        (void) events;
        Connection *c = userdata;
        HttpServer *s = c->server;
        const HttpLimits *l = &s->limits;

        switch (c->phase) {
        case PHASE_HEADERS:
                log_ratelimited(&s->ratelimit[CONDITION_HEADERS], LOG_LEVEL_WARNING, 0,
                                "%s: closed a connection whose request line and headers were not in within %" PRIu64
                                " ms",
                                program_invocation_short_name, l->header_timeout_usec / USEC_PER_MSEC);
                break;
        case PHASE_BODY:
                log_ratelimited(&s->ratelimit[CONDITION_BODY], LOG_LEVEL_WARNING, 0,
                                "%s: closed a connection whose request body was not in within %" PRIu64 " ms",
                                program_invocation_short_name, l->body_timeout_usec / USEC_PER_MSEC);
                break;
        case PHASE_SEND:
                log_ratelimited(&s->ratelimit[CONDITION_SEND], LOG_LEVEL_WARNING, 0,
                                "%s: closed a connection that did not take its reply within %" PRIu64 " ms",
                                program_invocation_short_name, l->send_timeout_usec / USEC_PER_MSEC);
                break;
        case PHASE_LINGER:
                break; /* answered: the client just did not close */
        }
        connection_free(c);
}

/* The oldest connection not sending a reply (still reading its request, or done and waiting
 * for the client to close), or NULL. */
static Connection *oldest_unanswered(HttpServer *s) {
        Connection *c;
        TAILQ_FOREACH(c, &s->connections, link) {
                if (c->phase != PHASE_SEND)
                        return c;
        }
        return NULL;
}

/* Makes room for one more; false when every place holds a reply still going out. */
static bool server_make_room(HttpServer *s) {
        if (s->n_connections < s->limits.max_connections)
                return true;
        Connection *old = oldest_unanswered(s);
        if (!old) {
                log_ratelimited(&s->ratelimit[CONDITION_FULL], LOG_LEVEL_WARNING, 0,
                                "%s: %u connections, all sending replies: not accepting until one closes",
                                program_invocation_short_name, s->n_connections);
                return false;
        }
        log_ratelimited(&s->ratelimit[CONDITION_EVICT], LOG_LEVEL_WARNING, 0,
                        "%s: %u connections, the most allowed: closed the oldest one that had not sent its request",
                        program_invocation_short_name, s->n_connections);
        connection_free(old);
        return true;
}

static void on_accept(struct evconnlistener *listener, evutil_socket_t fd, struct sockaddr *sa, int socklen,
                      void *userdata) {
        (void) listener;
        (void) sa;
        (void) socklen;
        HttpServer *s = userdata;

        if (!server_make_room(s)) {
                evutil_closesocket(fd);
                /* Until a connection closes (and at most for the pause): accepting more now
                 * would only close them. */
                server_pause(s);
                return;
        }
        Connection *c = calloc(1, sizeof(Connection));
        if (!c) {
                evutil_closesocket(fd);
                return;
        }
        c->server = s;
        c->fd = fd;
        TAILQ_INSERT_TAIL(&s->connections, c, link);
        s->n_connections++;
        c->bev = bufferevent_socket_new(s->base, fd, 0);
        c->deadline = evtimer_new(s->base, on_deadline, c);
        if (!c->bev || !c->deadline) {
                connection_free(c);
                return;
        }
        bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
        (void) bufferevent_enable(c->bev, EV_READ);
        arm_deadline(c, s->limits.header_timeout_usec);
}

/* EMFILE with connections open: the open-files limit is lower than the cap was fitted to (lowered
 * while we run, or descriptors taken by something else). The cap follows it, EMFILE_SPARE below
 * what is open, for a scrape's own connection to trapstatd; the oldest unanswered connections
 * beyond it go, so that a new one (a scrape) gets in as at the cap, not after their deadlines. */
static void server_lower_cap(HttpServer *s) {
        if (s->n_connections <= EMFILE_SPARE || s->limits.max_connections <= s->n_connections - EMFILE_SPARE)
                return;
        s->limits.max_connections = s->n_connections - EMFILE_SPARE;
        log_warning("%s: out of descriptors at %u connections: at most %u from now on", program_invocation_short_name,
                    s->n_connections, s->limits.max_connections);
        while (s->n_connections > s->limits.max_connections) {
                Connection *old = oldest_unanswered(s);
                if (!old)
                        break;
                connection_free(old);
        }
}

/* accept() failed with what EVUTIL_ERR_ACCEPT_RETRIABLE does not cover: out of descriptors
 * (EMFILE, ENFILE) or memory above all. Trying again at once would fail again, in a loop that
 * takes a whole CPU; so accepting pauses. */
static void on_accept_error(struct evconnlistener *listener, void *userdata) {
        (void) listener;
        HttpServer *s = userdata;
        int error = EVUTIL_SOCKET_ERROR();

        log_ratelimited(&s->ratelimit[CONDITION_ACCEPT], LOG_LEVEL_WARNING, error,
                        "%s: cannot accept connections (%u open): %m; pausing accepting for %" PRIu64
                        " ms or until one closes",
                        program_invocation_short_name, s->n_connections, s->limits.accept_pause_usec / USEC_PER_MSEC);
        /* ENFILE is the whole system's shortage, and may pass: the cap stays. */
        if (error == EMFILE)
                server_lower_cap(s);
        server_pause(s);
}

static void on_resume(evutil_socket_t fd, short events, void *userdata) {
        (void) fd;
        (void) events;
        HttpServer *s = userdata;
        s->paused = false;
        (void) evconnlistener_enable(s->listener);
}

int http_server_new(struct event_base *base, int listen_fd, const HttpLimits *limits, HttpHandler handler,
                    void *userdata, HttpServer **ret) {
        if (limits->max_connections == 0)
                return -EINVAL;
        HttpServer *s = calloc(1, sizeof(HttpServer));
        if (!s)
                return -ENOMEM;
        *s = (HttpServer) {
                .base = base,
                .limits = *limits,
                .handler = handler,
                .userdata = userdata,
        };
        TAILQ_INIT(&s->connections);
        for (size_t i = 0; i < ELEMENTSOF(s->ratelimit); i++)
                s->ratelimit[i] = (RateLimit) { .interval_usec = limits->log_interval_usec, .burst = 1 };

        s->resume = evtimer_new(base, on_resume, s);
        /* Backlog 0: the socket listens already, with its own backlog (systemd's Backlog=, or
         * SOMAXCONN); libevent's -1 would shrink it to 128, and connections beyond a full
         * backlog wait seconds for the kernel's retransmissions. */
        s->listener = s->resume ? evconnlistener_new(base, on_accept, s, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
                                                     0, listen_fd)
                                : NULL;
        if (!s->listener) {
                http_server_free(s);
                return -ENOMEM;
        }
        evconnlistener_set_error_cb(s->listener, on_accept_error);
        *ret = s;
        return 0;
}

HttpServer *http_server_free(HttpServer *s) {
        if (!s)
                return NULL;
        while (!TAILQ_EMPTY(&s->connections))
                connection_free(TAILQ_FIRST(&s->connections));
        if (s->listener)
                evconnlistener_free(s->listener);
        if (s->resume)
                event_free(s->resume);
        free(s);
        return NULL;
}
