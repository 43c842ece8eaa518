/* SPDX-License-Identifier: MIT */
#pragma once

/* The exporter's HTTP/1.1 front on libevent: one listening socket, GET and HEAD of small
 * resources, one request per connection (answered with "Connection: close"), and limits that
 * hold against hostile clients:
 *
 * - at most max_connections connections; when all are taken, a new one takes the place of the
 *   oldest that has not yet sent its whole request (a scrape sends it at once, a slow client
 *   does not), so slow clients cannot keep a scrape out;
 * - deadlines, not idle timeouts: the request line and headers must have arrived within
 *   header_timeout of the accept, the body within body_timeout of the headers, and the reply
 *   must have been taken within send_timeout; progress does not extend them;
 * - when accept() fails for want of descriptors (EMFILE, ENFILE) or memory, accepting pauses
 *   for accept_pause or until a connection closes, instead of trying again at once;
 * - each of these conditions is logged at most once per log_interval, with the number of
 *   lines left out.
 *
 * libevent 2.1's evhttp has none of the hooks this needs (no connection cap, no notice of a new
 * or closed server connection, idle timeouts only), hence this front; the exporter needs no
 * more of HTTP than this. */

#include <event2/event.h>
#include <stddef.h>
#include <stdint.h>

typedef struct HttpLimits {
        unsigned max_connections;
        uint64_t header_timeout_usec;
        uint64_t body_timeout_usec;
        uint64_t send_timeout_usec;
        size_t max_header_size;
        size_t max_body_size;
        uint64_t accept_pause_usec;
        uint64_t log_interval_usec;
} HttpLimits;

typedef struct HttpRequest {
        const char *method; /* as sent: "GET", "HEAD", ... */
        const char *path;   /* the path of the target, without its query */
        const char *accept; /* the Accept header, or NULL */
} HttpRequest;

/* What the handler answers. A HEAD request is answered like a GET without the body (the
 * handler need not know). */
typedef struct HttpResponse {
        int status;
        const char *content_type; /* static text */
        const char *allow;        /* for 405: the Allow header (static text), else NULL */
        char *body;               /* malloc'd; the server frees it */
        size_t size;
} HttpResponse;

typedef void (*HttpHandler)(const HttpRequest *request, HttpResponse *response, void *userdata);

typedef struct HttpServer HttpServer;

/* Serves on listen_fd (a listening stream socket, taken over: closed by http_server_free()). */
int http_server_new(struct event_base *base, int listen_fd, const HttpLimits *limits, HttpHandler handler,
                    void *userdata, HttpServer **ret);
HttpServer *http_server_free(HttpServer *s);
/* Connections open now. */
unsigned http_server_connections(const HttpServer *s);
