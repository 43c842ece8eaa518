/* SPDX-License-Identifier: MIT */
#pragma once

/* Internal to the varlink library: only common/varlink-*.c include this; everyone else uses
 * varlink.h. It holds the structs the pieces of the library share and the functions one piece
 * calls in another:
 *   varlink-message.c     framing, call-header parsing, the VarlinkReply builder
 *   varlink-server.c      the server: interfaces, org.varlink.service, listening, accepting
 *   varlink-connection.c  a connection: limits, reading and dispatching calls, replies, kept calls
 *   varlink-client.c      the blocking client
 * struct ucred (SO_PEERCRED) is a GNU extension: the files that include this define _GNU_SOURCE
 * before any system header. */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "log.h"
#include "varlink-idl.h"
#include "varlink.h"

/* Server-side closes (protocol errors, limits) are reported at debug level only, rate-limited:
 * they are caused by clients, there is nobody to return an error to, and a noisy client must not
 * flood the log. One limit for the whole library (defined in varlink-connection.c). */
extern RateLimit varlink_client_log_ratelimit;
#define log_client(error, ...) log_ratelimited(&varlink_client_log_ratelimit, LOG_LEVEL_DEBUG, (error), __VA_ARGS__)

/* A registered interface: its IDL, parsed, is what every call is checked against. */
typedef struct ServerInterface {
        const char *name, *description;
        const VarlinkMethod *methods;
        void *userdata;
        VarlinkInterface *idl;
} ServerInterface;

typedef struct VarlinkConnection VarlinkConnection;

struct VarlinkConnection {
        VarlinkServer *server;
        VarlinkConnection *prev, *next;
        struct bufferevent *bev;
        struct ucred peer;
        bool privileged; /* root or a member of the server's privileged group */
        uint64_t label;  /* VarlinkServerConfig.peer_label's */
        size_t scanned;  /* input bytes already searched for a NUL, without finding one */
        bool throttled;  /* reading paused until the client has taken its reply */
        bool waiting;    /* reading paused until the connection's share of max_buffer has room */
        bool closing;    /* reading stopped for good; freed once the output is flushed */
        /* A call kept after its handler returned (varlink_call_keep()): a deferred reply or a
         * stream. Later calls wait until it ends, so replies stay in call order. */
        VarlinkCall *kept;
        struct event *resume; /* goes on with waiting calls from the event loop */
        size_t buffered;      /* bytes in this connection's input and output buffers */
        /* Runs out write_timeout after the output became non-empty, unless it was written whole
         * meanwhile: the deadline of the reply in flight, not restarted by partial writes. */
        struct event *deadline;
};

/* A call lives on the stack of connection_dispatch() and is valid while its handler runs,
 * unless the handler keeps it: then it is a heap copy, valid until varlink_call_unref(). */
struct VarlinkCall {
        VarlinkConnection *connection; /* NULL once a kept call's connection is gone */
        const char *method;
        bool more, oneway;
        bool finished; /* the final reply or error was sent (or dropped, for oneway) */
        VarlinkCall *kept; /* on the stack copy: the heap copy that replaces it */
        char *method_buf;  /* a kept call's own copy of the method name */
        VarlinkCallCloseFn on_close;
        void *userdata;
};

struct VarlinkServer {
        struct event_base *base;
        char *vendor, *product, *version, *url;
        size_t max_message_size, max_buffer;
        unsigned max_connections, max_connections_per_uid, reserved_connections, idle_timeout_sec;
        char *privileged_group, *refused_error;
        uint64_t (*peer_label)(int fd, const struct ucred *peer, void *userdata);
        void *peer_label_userdata;

        ServerInterface *interfaces;
        size_t n_interfaces, interfaces_capacity;
        char error[256]; /* why the last varlink_server_add_interface() failed */

        struct evconnlistener **listeners;
        size_t n_listeners, listeners_capacity;
        struct event *accept_retry; /* re-enables the listeners after accept() ran out of fds */

        VarlinkConnection *connections;
        unsigned n_connections;
        size_t buffered;  /* bytes in every connection's input and output buffers */
        size_t buffered_unprivileged; /* of them, in the connections of peers not privileged */
        struct timeval write_timeout;
        unsigned n_waiting; /* connections with `waiting` set */
};

struct VarlinkReply {
        struct evbuffer *text; /* the message as it goes on the wire */
        char *error;           /* the error name of an error reply */
        bool array_open;       /* varlink_reply_new_array() until varlink_reply_finish() */
        bool first;            /* no element appended yet */
        size_t max_size;       /* the text stops growing here (-EMSGSIZE); 0: no limit */
};

/* ---- varlink-message.c ---- */

/* Like varlink_message_read(), but remembers in *scanned how much of buf is already known to hold
 * no NUL. A large message arriving in small pieces is then searched once, not once per piece
 * (which would be quadratic in the message size). */
int varlink_message_read_incremental(struct evbuffer *buf, size_t max_size, size_t *scanned, json_t **ret);
/* Serializes msg into a malloc'd buffer holding compact JSON plus the terminating NUL. */
int varlink_message_format(const json_t *msg, char **ret, size_t *ret_size);

/* ---- varlink-connection.c ---- */

/* Sets up a connection on an accepted (or adopted) socket, or refuses it when a limit is reached
 * (-EUSERS). Takes the fd in every case. */
int varlink_connection_new(VarlinkServer *s, int fd);
void varlink_connection_free(VarlinkConnection *c);
/* An error whose parameters are one string field; used for the org.varlink.service errors. */
int varlink_call_error_string(VarlinkCall *call, const char *error, const char *field, const char *value,
                              size_t len);

/* ---- lookups, shared by the server and its connections ---- */

static inline const VarlinkMethod *find_handler(const VarlinkMethod *methods, const char *name) {
        for (const VarlinkMethod *m = methods; m->name; m++)
                if (strcmp(m->name, name) == 0)
                        return m;
        return NULL;
}

static inline const ServerInterface *server_find_interface(const VarlinkServer *s, const char *name, size_t len) {
        for (size_t i = 0; i < s->n_interfaces; i++)
                if (strlen(s->interfaces[i].name) == len && memcmp(s->interfaces[i].name, name, len) == 0)
                        return &s->interfaces[i];
        return NULL;
}

/* Shared by the server's listen and the client's connect. */
static inline int sockaddr_un_set(struct sockaddr_un *sa, const char *path, socklen_t *ret_len) {
        size_t len;

        if (!path || !*path)
                return -EINVAL;
        len = strlen(path);
        if (len >= sizeof(sa->sun_path))
                return -ENAMETOOLONG;

        *sa = (struct sockaddr_un) { .sun_family = AF_UNIX };
        memcpy(sa->sun_path, path, len + 1);
        *ret_len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + len + 1);
        return 0;
}
