/* SPDX-License-Identifier: MIT */
/* struct ucred (SO_PEERCRED) is a GNU extension; the build may already define this. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "varlink.h"
#include "varlink-idl.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "json-util.h"
#include "log.h"
#include "macro.h"

/* Server-side closes (protocol errors, limits) are reported at debug level only, rate-limited:
 * they are caused by clients, there is nobody to return an error to, and a noisy client must not
 * flood the log. */
static RateLimit client_log_ratelimit = RATELIMIT_CLIENT;
#define log_client(error, ...) log_ratelimited(&client_log_ratelimit, LOG_LEVEL_DEBUG, (error), __VA_ARGS__)
/* Failures of our own handlers (out of memory, say) are errors, but any client can trigger the
 * call that fails: rate-limited too. */
static RateLimit handler_log_ratelimit = RATELIMIT_CLIENT;
#define log_handler(error, ...) log_ratelimited(&handler_log_ratelimit, LOG_LEVEL_ERR, (error), __VA_ARGS__)

/* Bursts of clients (scripts, many trapstat at once) queue rather than fail; the kernel caps it
 * at net.core.somaxconn. */
#define LISTEN_BACKLOG SOMAXCONN
/* Bytes asked of recv() per read in the client; replies may be megabytes long. */
#define CLIENT_READ_CHUNK (64U * 1024U)

static const char service_description[] =
        "# The Varlink Service Interface is provided by every varlink service. It\n"
        "# describes the service and the interfaces it implements.\n"
        "interface org.varlink.service\n"
        "\n"
        "# Get a list of all the interfaces a service provides and information\n"
        "# about the implementation.\n"
        "method GetInfo() -> (\n"
        "  vendor: string,\n"
        "  product: string,\n"
        "  version: string,\n"
        "  url: string,\n"
        "  interfaces: []string\n"
        ")\n"
        "\n"
        "# Get the description of an interface that is implemented by this service.\n"
        "method GetInterfaceDescription(interface: string) -> (description: string)\n"
        "\n"
        "# The requested interface was not found.\n"
        "error InterfaceNotFound (interface: string)\n"
        "\n"
        "# The requested method was not found\n"
        "error MethodNotFound (method: string)\n"
        "\n"
        "# The interface defines the requested method, but the service does not\n"
        "# implement it.\n"
        "error MethodNotImplemented (method: string)\n"
        "\n"
        "# One of the passed parameters is invalid.\n"
        "error InvalidParameter (parameter: string)\n"
        "\n"
        "# Client is denied access\n"
        "error PermissionDenied ()\n"
        "\n"
        "# Method is expected to be called with 'more' set to true, but wasn't\n"
        "error ExpectedMore ()\n";

/* ---- framing ---- */

#define OUT_OF_RANGE "\"out of range\""
#define OUT_OF_RANGE_MAX 64 /* numbers replaced per message; a message with more is refused */

static bool is_number_char(char c) {
        return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/* data failed to parse only because of a number out of range: parses it again with each such
 * number replaced by the string OUT_OF_RANGE. jansson reports the offset just past the number. */
static json_t *load_out_of_range(const char *data, size_t len) {
        _cleanup_free_ char *copy = NULL;
        json_error_t error;
        size_t size = len;

        copy = malloc(len ? len : 1);
        if (!copy)
                return NULL;
        memcpy(copy, data, len);

        for (unsigned i = 0; i < OUT_OF_RANGE_MAX; i++) {
                size_t end, start;
                json_t *msg;
                char *next;

                msg = json_loadb(copy, size, JSON_REJECT_DUPLICATES, &error);
                if (msg || json_error_code(&error) != json_error_numeric_overflow)
                        return msg;
                if (error.position <= 0 || (size_t) error.position > size)
                        return NULL;
                end = start = (size_t) error.position;
                while (start > 0 && is_number_char(copy[start - 1]))
                        start--;
                if (start == end)
                        return NULL;

                next = malloc(size - (end - start) + strlen(OUT_OF_RANGE));
                if (!next)
                        return NULL;
                memcpy(next, copy, start);
                memcpy(next + start, OUT_OF_RANGE, strlen(OUT_OF_RANGE));
                memcpy(next + start + strlen(OUT_OF_RANGE), copy + end, size - end);
                size = size - (end - start) + strlen(OUT_OF_RANGE);
                free(copy);
                copy = next;
        }
        return NULL;
}

int varlink_message_read(struct evbuffer *buf, size_t max_size, json_t **ret) {
        struct evbuffer_ptr nul;
        json_error_t error;
        const char *data;
        json_t *msg;
        size_t len;

        if (!buf || !ret)
                return -EINVAL;

        nul = evbuffer_search(buf, "", 1, NULL);
        if (nul.pos < 0)
                return evbuffer_get_length(buf) > max_size ? -EMSGSIZE : 0;

        /* An oversized message is left in the buffer: the stream cannot be trusted any more and
         * the caller drops the connection, so skipping it would only hide the problem. */
        len = (size_t) nul.pos;
        if (len > max_size)
                return -EMSGSIZE;

        data = (const char *) evbuffer_pullup(buf, (ev_ssize_t) len + 1);
        if (!data)
                return -ENOMEM;

        /* Duplicate keys are rejected: {"method":"a.B","method":"c.D"} has no single meaning.
         * So is "\u0000" in strings (jansson's default): every consumer uses them as C strings,
         * where it would silently cut off the rest. */
        msg = json_loadb(data, len, JSON_REJECT_DUPLICATES, &error);
        if (!msg && json_error_code(&error) == json_error_numeric_overflow)
                msg = load_out_of_range(data, len);
        evbuffer_drain(buf, len + 1);
        if (!msg)
                return -EBADMSG;
        if (!json_is_object(msg)) {
                json_decref(msg);
                return -EBADMSG;
        }

        *ret = msg;
        return 1;
}

/* Like varlink_message_read(), but remembers in *scanned how much of buf is already known to hold
 * no NUL. A large message arriving in small pieces is then searched once, not once per piece
 * (which would be quadratic in the message size). */
static int message_read_incremental(struct evbuffer *buf, size_t max_size, size_t *scanned, json_t **ret) {
        size_t len = evbuffer_get_length(buf);

        if (*scanned < len) {
                struct evbuffer_ptr start, nul;

                if (evbuffer_ptr_set(buf, &start, *scanned, EVBUFFER_PTR_SET) < 0)
                        return -EINVAL;
                nul = evbuffer_search(buf, "", 1, &start);
                if (nul.pos >= 0) {
                        *scanned = 0;
                        return varlink_message_read(buf, max_size, ret);
                }
                *scanned = len;
        }

        return len > max_size ? -EMSGSIZE : 0;
}

/* Serializes msg into a malloc'd buffer holding compact JSON plus the terminating NUL. */
static int message_format(const json_t *msg, char **ret, size_t *ret_size) {
        char *s;

        if (!json_is_object(msg))
                return -EINVAL;

        /* jansson escapes U+0000 inside strings, so the only NUL on the wire is the terminator. */
        s = json_dumps(msg, JSON_COMPACT);
        if (!s)
                return -ENOMEM;

        *ret_size = strlen(s) + 1;
        *ret = s;
        return 0;
}

static void free_reference(const void *data, size_t len _unused_, void *extra _unused_) {
        free((void *) data);
}

int varlink_message_write(struct evbuffer *buf, const json_t *msg) {
        char *s;
        size_t size;
        int r;

        if (!buf)
                return -EINVAL;

        r = message_format(msg, &s, &size);
        if (r < 0)
                return r;

        /* Hand the string to the evbuffer instead of copying it: replies can be large. */
        if (evbuffer_add_reference(buf, s, size, free_reference, NULL) < 0) {
                free(s);
                return -ENOMEM;
        }
        return 0;
}

static int json_get_optional_bool(json_t *msg, const char *key, bool *ret) {
        json_t *v = json_object_get(msg, key);

        if (!v) {
                *ret = false;
                return 0;
        }
        if (!json_is_boolean(v))
                return -EBADMSG;
        *ret = json_is_true(v);
        return 0;
}

int varlink_call_header_parse(json_t *msg, VarlinkCallHeader *ret) {
        VarlinkCallHeader h = {};
        const char *key, *dot;
        json_t *value;

        if (!ret)
                return -EINVAL;
        if (!json_is_object(msg))
                return -EBADMSG;

        json_object_foreach(msg, key, value) {
                if (!strcmp(key, "method")) {
                        if (!json_is_string(value))
                                return -EBADMSG;
                        h.method = json_string_value(value);
                } else if (!strcmp(key, "parameters")) {
                        if (!json_is_object(value))
                                return -EBADMSG;
                        h.parameters = value;
                } else if (strcmp(key, "more") && strcmp(key, "oneway") && strcmp(key, "upgrade"))
                        return -EBADMSG;
        }

        if (json_get_optional_bool(msg, "more", &h.more) < 0 ||
            json_get_optional_bool(msg, "oneway", &h.oneway) < 0 ||
            json_get_optional_bool(msg, "upgrade", &h.upgrade) < 0)
                return -EBADMSG;

        /* "interface.Method": both halves non-empty, split at the last dot. */
        if (!h.method)
                return -EBADMSG;
        dot = strrchr(h.method, '.');
        if (!dot || dot == h.method || dot[1] == '\0')
                return -EBADMSG;

        /* Handlers always get an object. Storing it in msg keeps "pointers borrow from msg" true. */
        if (!h.parameters) {
                h.parameters = json_object();
                if (!h.parameters || json_object_set_new(msg, "parameters", h.parameters) < 0)
                        return -ENOMEM;
        }

        *ret = h;
        return 0;
}

/* ---- server ---- */

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
        gid_t *peer_groups;   /* supplementary groups (SO_PEERGROUPS) */
        size_t n_peer_groups;
        bool privileged; /* root or a member of the server's privileged group */
        size_t scanned;  /* input bytes already searched for a NUL, without finding one */
        bool throttled;  /* reading paused until the client has taken its reply */
        bool waiting;    /* reading paused until the server's buffers are below max_buffer */
        bool closing;    /* reading stopped for good; freed once the output is flushed */
        /* A call kept after its handler returned (varlink_call_keep()): a deferred reply or a
         * stream. Later calls wait until it ends, so replies stay in call order. */
        VarlinkCall *kept;
        struct event *resume; /* goes on with waiting calls from the event loop */
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

        ServerInterface *interfaces;
        size_t n_interfaces;
        char error[256]; /* why the last varlink_server_add_interface() failed */

        struct evconnlistener **listeners;
        size_t n_listeners;
        struct event *accept_retry; /* re-enables the listeners after accept() ran out of fds */

        VarlinkConnection *connections;
        unsigned n_connections;
        size_t buffered;  /* bytes in every connection's input and output buffers */
        unsigned n_waiting; /* connections with `waiting` set */
};

static const VarlinkMethod *find_handler(const VarlinkMethod *methods, const char *name) {
        for (const VarlinkMethod *m = methods; m->name; m++)
                if (strcmp(m->name, name) == 0)
                        return m;
        return NULL;
}

static const ServerInterface *server_find_interface(const VarlinkServer *s, const char *name, size_t len) {
        for (size_t i = 0; i < s->n_interfaces; i++)
                if (strlen(s->interfaces[i].name) == len && memcmp(s->interfaces[i].name, name, len) == 0)
                        return &s->interfaces[i];
        return NULL;
}

/* Ends the connection's kept call, if any, from the connection's side: its owner learns of it
 * through on_close, and its later replies fail with -ENOTCONN. */
static void connection_drop_kept(VarlinkConnection *c) {
        VarlinkCall *k = c->kept;

        if (!k)
                return;
        c->kept = NULL;
        k->connection = NULL;
        if (k->on_close)
                k->on_close(k, k->userdata);
}

/* Counts what goes in and out of a connection's buffers towards max_buffer. */
static void on_buffer_change(struct evbuffer *b _unused_, const struct evbuffer_cb_info *info, void *userdata) {
        VarlinkServer *s = userdata;

        s->buffered += info->n_added;
        s->buffered -= MIN(info->n_deleted, s->buffered);
}

static void server_resume_waiting(VarlinkServer *s);

static void connection_free(VarlinkConnection *c) {
        VarlinkServer *s;

        if (!c)
                return;
        s = c->server;

        connection_drop_kept(c);
        if (c->resume)
                event_free(c->resume);
        if (c->waiting)
                s->n_waiting--;

        if (c->prev)
                c->prev->next = c->next;
        else
                c->server->connections = c->next;
        if (c->next)
                c->next->prev = c->prev;
        c->server->n_connections--;

        /* What the buffers still hold is not ours to count any more: libevent frees them later. */
        evbuffer_remove_cb(bufferevent_get_input(c->bev), on_buffer_change, s);
        evbuffer_remove_cb(bufferevent_get_output(c->bev), on_buffer_change, s);
        s->buffered -= MIN(s->buffered, evbuffer_get_length(bufferevent_get_input(c->bev)) +
                                                evbuffer_get_length(bufferevent_get_output(c->bev)));
        /* Safe from inside the bufferevent's own callbacks: libevent defers the actual free. */
        bufferevent_free(c->bev);
        free(c->peer_groups);
        free(c);
        server_resume_waiting(s);
}

/* Stops reading and closes once the queued replies are written, so that replies to calls that came
 * before a protocol error, or before the client half-closed its side, still reach the client.
 * The write timeout bounds how long a client that does not read can keep us waiting. */
static void connection_close_after_flush(VarlinkConnection *c) {
        /* An open stream would never let the output drain. */
        connection_drop_kept(c);
        if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0) {
                connection_free(c);
                return;
        }
        bufferevent_disable(c->bev, EV_READ);
        c->closing = true;
}

static void call_finish(VarlinkCall *call) {
        call->finished = true;
        if (call->connection && call->connection->kept == call) {
                /* The kept call is answered: on with the calls waiting behind it, from the event
                 * loop rather than from inside our caller. */
                call->connection->kept = NULL;
                event_active(call->connection->resume, 0, 0);
        }
}

static int call_send(VarlinkCall *call, json_t *msg, bool continues) {
        int r;

        if (!call->connection)
                return -ENOTCONN;
        if (!call->oneway) {
                r = varlink_message_write(bufferevent_get_output(call->connection->bev), msg);
                if (r < 0)
                        return r;
        }
        if (!continues)
                call_finish(call);
        return 0;
}

int varlink_call_reply(VarlinkCall *call, json_t *parameters, bool continues) {
        _cleanup_json_ json_t *p = parameters, *msg = NULL;

        if (!call || (p && !json_is_object(p)))
                return -EINVAL;
        if (call->finished)
                return -EALREADY;
        if (continues && !call->more)
                return -EINVAL;

        if (!p) {
                p = json_object();
                if (!p)
                        return -ENOMEM;
        }
        msg = json_pack("{s:O}", "parameters", p);
        if (!msg)
                return -ENOMEM;
        if (continues && json_object_set_new(msg, "continues", json_true()) < 0)
                return -ENOMEM;

        return call_send(call, msg, continues);
}

int varlink_call_error(VarlinkCall *call, const char *error, json_t *parameters) {
        _cleanup_json_ json_t *p = parameters, *msg = NULL;

        if (!call || !error || (p && !json_is_object(p)))
                return -EINVAL;
        if (call->finished)
                return -EALREADY;

        msg = p ? json_pack("{s:s, s:O}", "error", error, "parameters", p)
                : json_pack("{s:s, s:{}}", "error", error, "parameters");
        if (!msg)
                return -ENOMEM;

        return call_send(call, msg, false);
}

/* An error whose parameters are one string field; used for the org.varlink.service errors. */
static int call_error_string(VarlinkCall *call, const char *error, const char *field, const char *value, size_t len) {
        json_t *p = json_pack("{s:s%}", field, value, len);

        if (!p)
                return -ENOMEM;
        return varlink_call_error(call, error, p);
}

int varlink_call_error_invalid_parameter(VarlinkCall *call, const char *field) {
        if (!field)
                return -EINVAL;
        return call_error_string(call, "org.varlink.service.InvalidParameter", "parameter", field, strlen(field));
}

bool varlink_call_more(VarlinkCall *call) {
        return call && call->more;
}

const char *varlink_call_method(VarlinkCall *call) {
        return call ? call->method : NULL;
}

uid_t varlink_call_peer_uid(VarlinkCall *call) {
        return call && call->connection ? call->connection->peer.uid : (uid_t) -1;
}

bool varlink_call_peer_in_group(VarlinkCall *call, gid_t gid) {
        const VarlinkConnection *c;

        if (!call || !call->connection)
                return false;
        c = call->connection;
        if (c->peer.gid == gid)
                return true;
        for (size_t i = 0; i < c->n_peer_groups; i++)
                if (c->peer_groups[i] == gid)
                        return true;
        return false;
}

pid_t varlink_call_peer_pid(VarlinkCall *call) {
        return call && call->connection ? call->connection->peer.pid : 0;
}

static void on_resume(evutil_socket_t fd _unused_, short what _unused_, void *userdata);

int varlink_call_keep(VarlinkCall *call, VarlinkCallCloseFn on_close, void *userdata, VarlinkCall **ret) {
        VarlinkConnection *c;
        VarlinkCall *k;

        if (!call || !ret || call->kept || !call->connection)
                return -EINVAL;
        if (call->oneway || call->finished)
                return -EINVAL;
        c = call->connection;

        k = calloc(1, sizeof(*k));
        if (!k)
                return -ENOMEM;
        *k = *call;
        k->method_buf = strdup(call->method);
        if (!k->method_buf) {
                free(k);
                return -ENOMEM;
        }
        k->method = k->method_buf;
        k->on_close = on_close;
        k->userdata = userdata;

        call->kept = k;
        c->kept = k;
        *ret = k;
        return 0;
}

VarlinkCall *varlink_call_unref(VarlinkCall *call) {
        if (!call)
                return NULL;
        /* Dropped unanswered or in mid-stream: the client waits for more that will never come.
         * It is told by the connection's end, after what is queued has been written. */
        if (call->connection && call->connection->kept == call) {
                call->on_close = NULL;
                connection_close_after_flush(call->connection);
        }
        free(call->method_buf);
        free(call);
        return NULL;
}

size_t varlink_call_queued_bytes(VarlinkCall *call) {
        if (!call || !call->connection)
                return 0;
        return evbuffer_get_length(bufferevent_get_output(call->connection->bev));
}

/* ---- replies formatted ahead ---- */

struct VarlinkReply {
        struct evbuffer *text; /* the message as it goes on the wire */
        char *error;           /* the error name of an error reply */
        bool array_open;       /* varlink_reply_new_array() until varlink_reply_finish() */
        bool first;            /* no element appended yet */
};

static int reply_alloc(VarlinkReply **ret) {
        VarlinkReply *r = calloc(1, sizeof(*r));

        if (!r)
                return -ENOMEM;
        r->text = evbuffer_new();
        if (!r->text) {
                free(r);
                return -ENOMEM;
        }
        *ret = r;
        return 0;
}

/* Appends v as compact JSON. */
static int reply_add_json(VarlinkReply *r, const json_t *v) {
        _cleanup_free_ char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

        if (!s)
                return -ENOMEM;
        return evbuffer_add(r->text, s, strlen(s)) < 0 ? -ENOMEM : 0;
}

static int reply_new_message(json_t *msg, const char *error, VarlinkReply **ret) {
        _cleanup_json_ json_t *m = msg;
        VarlinkReply *r;

        if (!m || reply_alloc(&r) < 0)
                return -ENOMEM;
        if ((error && !(r->error = strdup(error))) || varlink_message_write(r->text, m) < 0) {
                varlink_reply_free(r);
                return -ENOMEM;
        }
        *ret = r;
        return 0;
}

int varlink_reply_new(json_t *parameters, VarlinkReply **ret) {
        _cleanup_json_ json_t *p = parameters;

        if (!ret || (p && !json_is_object(p)))
                return -EINVAL;
        return reply_new_message(p ? json_pack("{s:O}", "parameters", p) : json_pack("{s:{}}", "parameters"), NULL, ret);
}

int varlink_reply_new_error(const char *error, json_t *parameters, VarlinkReply **ret) {
        _cleanup_json_ json_t *p = parameters;

        if (!error || !ret || (p && !json_is_object(p)))
                return -EINVAL;
        return reply_new_message(p ? json_pack("{s:s, s:O}", "error", error, "parameters", p)
                                   : json_pack("{s:s, s:{}}", "error", error, "parameters"),
                                 error, ret);
}

int varlink_reply_new_array(const char *member, VarlinkReply **ret) {
        _cleanup_json_ json_t *name = NULL;
        VarlinkReply *r;

        if (!member || !ret)
                return -EINVAL;
        name = json_string(member);
        if (!name || reply_alloc(&r) < 0)
                return -ENOMEM;
        if (evbuffer_add_printf(r->text, "{\"parameters\":{") < 0 || reply_add_json(r, name) < 0 ||
            evbuffer_add_printf(r->text, ":[") < 0) {
                varlink_reply_free(r);
                return -ENOMEM;
        }
        r->array_open = r->first = true;
        *ret = r;
        return 0;
}

int varlink_reply_append(VarlinkReply *r, json_t *element) {
        _cleanup_json_ json_t *e = element;

        if (!r || !e || !r->array_open)
                return -EINVAL;
        if (!r->first && evbuffer_add(r->text, ",", 1) < 0)
                return -ENOMEM;
        r->first = false;
        return reply_add_json(r, e);
}

int varlink_reply_finish(VarlinkReply *r, json_t *members) {
        _cleanup_json_ json_t *m = members;
        _cleanup_free_ char *s = NULL;
        size_t len;

        if (!r || !r->array_open || (m && !json_is_object(m)))
                return -EINVAL;
        if (evbuffer_add(r->text, "]", 1) < 0)
                return -ENOMEM;
        /* The other members follow the array: "{...}" without its braces, after a comma. */
        if (m && json_object_size(m) > 0) {
                s = json_dumps(m, JSON_COMPACT);
                if (!s)
                        return -ENOMEM;
                len = strlen(s);
                if (evbuffer_add(r->text, ",", 1) < 0 || evbuffer_add(r->text, s + 1, len - 2) < 0)
                        return -ENOMEM;
        }
        /* The closing braces of parameters and of the message, and the message's NUL. */
        if (evbuffer_add(r->text, "}}", 3) < 0)
                return -ENOMEM;
        r->array_open = false;
        return 0;
}

size_t varlink_reply_size(const VarlinkReply *r) {
        return r ? evbuffer_get_length(r->text) : 0;
}

const char *varlink_reply_error(const VarlinkReply *r) {
        return r ? r->error : NULL;
}

VarlinkReply *varlink_reply_free(VarlinkReply *r) {
        if (!r)
                return NULL;
        if (r->text)
                evbuffer_free(r->text);
        free(r->error);
        free(r);
        return NULL;
}

int varlink_call_send_reply(VarlinkCall *call, VarlinkReply *r) {
        int k = 0;

        if (!call || !r || r->array_open)
                k = -EINVAL;
        else if (call->finished)
                k = -EALREADY;
        else if (!call->connection)
                k = -ENOTCONN;
        else if (!call->oneway && evbuffer_add_buffer(bufferevent_get_output(call->connection->bev), r->text) < 0)
                /* Moves the text's memory into the output; nothing is copied. */
                k = -ENOMEM;
        else
                call_finish(call);
        varlink_reply_free(r);
        return k;
}

/* Runs one call. Returns 0 to go on with the next one, <0 to close the connection. */
static int connection_dispatch(VarlinkConnection *c, json_t *msg) {
        const ServerInterface *iface;
        const VarlinkMethod *m;
        const char *field = NULL;
        VarlinkCallHeader h;
        VarlinkCall call;
        const char *dot;
        size_t iface_len;
        int r;

        /* A malformed call header is a client bug like malformed JSON: close, without a reply. */
        r = varlink_call_header_parse(msg, &h);
        if (r < 0)
                return log_client(r, "Received an invalid varlink call, closing connection: %m");

        call = (VarlinkCall) {
                .connection = c,
                .method = h.method,
                .more = h.more,
                /* A client that asks for more replies and for none is told so: it set "more", so
                 * it reads. */
                .oneway = h.oneway && !h.more,
        };

        if (h.oneway && h.more)
                return varlink_call_error_invalid_parameter(&call, "oneway");
        /* No method here upgrades the connection to another protocol. */
        if (h.upgrade)
                return varlink_call_error_invalid_parameter(&call, "upgrade");

        dot = strrchr(h.method, '.');
        iface_len = (size_t) (dot - h.method);
        iface = server_find_interface(c->server, h.method, iface_len);
        if (!iface)
                return call_error_string(&call, "org.varlink.service.InterfaceNotFound", "interface", h.method, iface_len);

        m = find_handler(iface->methods, dot + 1);
        if (!m)
                return call_error_string(&call, "org.varlink.service.MethodNotFound", "method", h.method, strlen(h.method));

        /* Streaming methods answer only calls that take their stream. */
        if ((m->flags & VARLINK_METHOD_MORE) && !h.more && !h.oneway)
                return varlink_call_error(&call, "org.varlink.service.ExpectedMore", NULL);
        /* Handlers only see parameters the IDL allows: every member known, of its type, and
         * every required one present. */
        r = varlink_interface_validate_input(iface->idl, m->name, h.parameters, &field);
        if (r < 0)
                return varlink_call_error_invalid_parameter(&call, field ?: "parameters");

        r = m->fn(&call, h.parameters, iface->userdata);
        if (call.kept) {
                /* The handler keeps the call to answer it later; it owns the kept copy now. */
                if (r < 0)
                        log_handler(r, "Method %s failed after keeping its call: %m", h.method);
                return 0;
        }
        if (r < 0 && !call.finished)
                return log_handler(r, "Method %s failed, closing connection: %m", h.method);
        if (r < 0)
                log_handler(r, "Method %s failed after replying: %m", h.method);
        else if (!call.finished && !call.oneway)
                /* The client would wait forever for an answer; better it sees the connection end. */
                return log_handler(EPROTO, "Method %s returned without replying, closing connection.", h.method);

        return 0;
}

/* Pauses reading until the server's buffers are below max_buffer again. */
static void connection_wait(VarlinkConnection *c) {
        if (!c->waiting) {
                c->waiting = true;
                c->server->n_waiting++;
        }
        bufferevent_disable(c->bev, EV_READ);
}

/* Lets the waiting connections go on once the buffers are below max_buffer. Each goes on from
 * the event loop; the first ones may fill the buffers again, and the others wait again. */
static void server_resume_waiting(VarlinkServer *s) {
        if (s->n_waiting == 0 || s->buffered > s->max_buffer)
                return;
        for (VarlinkConnection *c = s->connections; c; c = c->next)
                if (c->waiting) {
                        c->waiting = false;
                        s->n_waiting--;
                        bufferevent_enable(c->bev, EV_READ);
                        event_active(c->resume, 0, 0);
                }
}

/* Answers the complete calls in the input buffer, one at a time, until it runs dry, a reply is
 * in flight, or the connection is closed (c is then freed: callers must not touch it
 * afterwards). */
static void connection_process(VarlinkConnection *c) {
        VarlinkServer *s = c->server;
        struct evbuffer *in = bufferevent_get_input(c->bev), *out = bufferevent_get_output(c->bev);

        /* While a call is kept, later calls wait; the input high watermark bounds how much of
         * them is buffered. */
        while (!c->closing && !c->kept && !c->waiting) {
                _cleanup_json_ json_t *msg = NULL;
                int r;

                /* One reply in flight: until the client has taken it, its next calls stay in the
                 * kernel's socket buffer. on_write() goes on once the output is empty. */
                if (evbuffer_get_length(out) > 0) {
                        c->throttled = true;
                        bufferevent_disable(c->bev, EV_READ);
                        return;
                }
                /* Replies of all connections together fill max_buffer: no new call starts. */
                if (s->buffered > s->max_buffer && evbuffer_get_length(in) > 0) {
                        connection_wait(c);
                        return;
                }

                r = message_read_incremental(in, s->max_message_size, &c->scanned, &msg);
                if (r == 0) {
                        /* Part of a call, while the buffers are full: the one thing that would
                         * have us buffer more for a client that has not finished asking. */
                        if (evbuffer_get_length(in) > 0 && s->buffered > s->max_buffer) {
                                log_client(ENOBUFS, "Buffers of all connections are full, closing a connection "
                                                    "that sent part of a call");
                                connection_close_after_flush(c);
                        }
                        return;
                }
                if (r < 0) {
                        log_client(r, "Received an invalid varlink message, closing connection: %m");
                        connection_close_after_flush(c);
                        return;
                }

                if (connection_dispatch(c, msg) < 0) {
                        connection_close_after_flush(c);
                        return;
                }
        }
}

static void on_read(struct bufferevent *bev _unused_, void *userdata) {
        connection_process(userdata);
}

static void on_resume(evutil_socket_t fd _unused_, short what _unused_, void *userdata) {
        connection_process(userdata);
}

/* Called when the output is empty: the client has taken its reply. */
static void on_write(struct bufferevent *bev, void *userdata) {
        VarlinkConnection *c = userdata;

        if (c->closing) {
                if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
                        connection_free(c);
                return;
        }

        server_resume_waiting(c->server);
        if (c->throttled) {
                c->throttled = false;
                bufferevent_enable(bev, EV_READ);
                /* Calls read before we paused are already buffered and no read event will
                 * announce them again. */
                connection_process(c);
        }
}

static void on_event(struct bufferevent *bev, short what, void *userdata) {
        VarlinkConnection *c = userdata;

        /* A client still receiving a long reply, or a stream, is not idle even if it sends
         * nothing. libevent
         * disabled reading on the timeout; turn it back on. If the client stops reading
         * altogether, the write timeout ends the connection. */
        if ((what & BEV_EVENT_TIMEOUT) && (what & BEV_EVENT_READING) &&
            (evbuffer_get_length(bufferevent_get_output(bev)) > 0 || c->kept)) {
                bufferevent_enable(bev, EV_READ);
                return;
        }

        /* The client closed (at least) its sending side: deliver what is queued, then close.
         * Timeouts and socket errors close at once. */
        if ((what & BEV_EVENT_EOF) && !(what & (BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)))
                connection_close_after_flush(c);
        else
                connection_free(c);
}

/* The peer's supplementary groups, for access by group membership. */
static int read_peer_groups(int fd, gid_t **ret, size_t *ret_n) {
        socklen_t len = 0;
        gid_t *groups;

        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, NULL, &len) == 0 || errno != ERANGE) {
                /* No supplementary groups (or a kernel without SO_PEERGROUPS: primary only). */
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        groups = malloc(len ? len : 1);
        if (!groups)
                return -ENOMEM;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0) {
                free(groups);
                return -errno;
        }
        *ret = groups;
        *ret_n = len / sizeof(gid_t);
        return 0;
}

static unsigned connections_of_uid(const VarlinkServer *s, uid_t uid) {
        unsigned n = 0;

        for (const VarlinkConnection *c = s->connections; c; c = c->next)
                n += c->peer.uid == uid;
        return n;
}

/* Root, or a member (primary or supplementary group) of the server's privileged group. The group
 * is looked up now, so creating it or adding a user to it needs no restart. */
static bool peer_privileged(const VarlinkServer *s, const struct ucred *peer, const gid_t *groups, size_t n) {
        struct group grp, *found = NULL;
        char buf[4096];

        if (peer->uid == 0)
                return true;
        if (!s->privileged_group || getgrnam_r(s->privileged_group, &grp, buf, sizeof(buf), &found) != 0 || !found)
                return false;
        if (peer->gid == found->gr_gid)
                return true;
        for (size_t i = 0; i < n; i++)
                if (groups[i] == found->gr_gid)
                        return true;
        return false;
}

/* Tells a refused client why, in one error message, before closing. The socket is new and empty,
 * so the message fits in its buffer; if not, the client only sees the close. */
static void connection_refuse(VarlinkServer *s, int fd, unsigned limit) {
        _cleanup_json_ json_t *msg = NULL;
        _cleanup_free_ char *text = NULL;
        size_t size;

        if (!s->refused_error)
                return;
        msg = json_pack("{s:s, s:{s:I}}", "error", s->refused_error, "parameters", "limit", (json_int_t) limit);
        if (msg && message_format(msg, &text, &size) >= 0)
                (void) send(fd, text, size, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* The limit a new connection of this peer would exceed, or 0 when there is room for it. */
static unsigned connection_limit_reached(VarlinkServer *s, const VarlinkConnection *c) {
        if (s->n_connections >= s->max_connections)
                return s->max_connections;
        if (c->privileged)
                return 0;
        /* The last reserved_connections are for root and the privileged group. */
        if (s->n_connections >= s->max_connections - s->reserved_connections)
                return s->max_connections - s->reserved_connections;
        /* One user cannot take every connection: the others keep theirs. */
        if (connections_of_uid(s, c->peer.uid) >= s->max_connections_per_uid)
                return s->max_connections_per_uid;
        return 0;
}

static int connection_new(VarlinkServer *s, int fd) {
        _cleanup_close_ int fd_close = fd;
        struct timeval idle = { .tv_sec = s->idle_timeout_sec };
        socklen_t len = sizeof(struct ucred);
        VarlinkConnection *c;
        unsigned limit;
        int r;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->server = s;

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c->peer, &len) < 0) {
                free(c);
                return -errno;
        }
        r = read_peer_groups(fd, &c->peer_groups, &c->n_peer_groups);
        if (r < 0) {
                free(c);
                return r;
        }
        c->privileged = peer_privileged(s, &c->peer, c->peer_groups, c->n_peer_groups);

        limit = connection_limit_reached(s, c);
        if (limit > 0) {
                uid_t uid = c->peer.uid;

                connection_refuse(s, fd, limit);
                free(c->peer_groups);
                free(c);
                return log_client(EUSERS, "Too many varlink connections (limit %u reached for uid %u), refusing a new one.",
                                  limit, (unsigned) uid);
        }

        c->resume = event_new(s->base, -1, 0, on_resume, c);
        c->bev = c->resume ? bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE) : NULL;
        if (!c->bev) {
                if (c->resume)
                        event_free(c->resume);
                free(c->peer_groups);
                free(c);
                return -ENOMEM;
        }
        TAKE_FD(fd_close);

        bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
        /* The read timeout is the idle timeout; the write timeout ends a connection whose client
         * stopped reading while we wait to flush (reading is paused then, so no read timeout). */
        bufferevent_set_timeouts(c->bev, &idle, &idle);
        /* on_write() runs once the output is empty: the reply in flight is taken. */
        bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
        evbuffer_add_cb(bufferevent_get_input(c->bev), on_buffer_change, s);
        evbuffer_add_cb(bufferevent_get_output(c->bev), on_buffer_change, s);
        /* Input is consumed as it arrives, except behind an open stream: then reading pauses
         * once a message's worth is waiting. One byte more than the limit lets a message of
         * exactly max_message_size bytes (plus its NUL) in, and shows when one is longer. */
        bufferevent_setwatermark(c->bev, EV_READ, 0, s->max_message_size + 2);

        c->next = s->connections;
        if (c->next)
                c->next->prev = c;
        s->connections = c;
        s->n_connections++;

        if (bufferevent_enable(c->bev, EV_READ) < 0) {
                connection_free(c);
                return -ENOMEM;
        }
        return 0;
}

static void on_accept(struct evconnlistener *l _unused_, evutil_socket_t fd, struct sockaddr *sa _unused_,
                      int socklen _unused_, void *userdata) {
        VarlinkServer *s = userdata;
        int r;

        r = connection_new(s, fd);
        if (r < 0 && r != -EUSERS)
                log_client(r, "Failed to set up varlink connection: %m");
}

static void on_accept_error(struct evconnlistener *l _unused_, void *userdata) {
        VarlinkServer *s = userdata;

        /* Typically EMFILE/ENFILE. The pending connection stays in the backlog, so the listener
         * would fire again at once and spin; pause accepting for a second instead. */
        log_client(EVUTIL_SOCKET_ERROR(), "Failed to accept varlink connection, pausing: %m");
        for (size_t i = 0; i < s->n_listeners; i++)
                evconnlistener_disable(s->listeners[i]);
        evtimer_add(s->accept_retry, &(struct timeval) { .tv_sec = 1 });
}

static void on_accept_retry(evutil_socket_t fd _unused_, short what _unused_, void *userdata) {
        VarlinkServer *s = userdata;

        for (size_t i = 0; i < s->n_listeners; i++)
                evconnlistener_enable(s->listeners[i]);
}

static int service_get_info(VarlinkCall *call, json_t *parameters _unused_, void *userdata) {
        VarlinkServer *s = userdata;
        _cleanup_json_ json_t *interfaces = json_array();
        json_t *reply;

        if (!interfaces)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_interfaces; i++)
                if (json_array_append_new(interfaces, json_string(s->interfaces[i].name)) < 0)
                        return -ENOMEM;

        reply = json_pack("{s:s, s:s, s:s, s:s, s:O}", "vendor", s->vendor, "product", s->product, "version",
                          s->version, "url", s->url, "interfaces", interfaces);
        if (!reply)
                return -ENOMEM;
        return varlink_call_reply(call, reply, false);
}

static int service_get_interface_description(VarlinkCall *call, json_t *parameters, void *userdata) {
        VarlinkServer *s = userdata;
        json_t *name = json_object_get(parameters, "interface"), *reply;
        const ServerInterface *iface;

        if (!json_is_string(name))
                return varlink_call_error_invalid_parameter(call, "interface");

        iface = server_find_interface(s, json_string_value(name), json_string_length(name));
        if (!iface)
                return call_error_string(call, "org.varlink.service.InterfaceNotFound", "interface",
                                         json_string_value(name), json_string_length(name));

        reply = json_pack("{s:s}", "description", iface->description);
        if (!reply)
                return -ENOMEM;
        return varlink_call_reply(call, reply, false);
}

static const VarlinkMethod service_methods[] = {
        { "GetInfo", service_get_info },
        { "GetInterfaceDescription", service_get_interface_description },
        {},
};

int varlink_server_new(struct event_base *base, const VarlinkServerConfig *config, VarlinkServer **ret) {
        const VarlinkServerConfig empty = {};
        VarlinkServer *s;
        int r;

        if (!base || !ret)
                return -EINVAL;
        if (!config)
                config = &empty;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;

        s->base = base;
        s->max_message_size = config->max_message_size ?: VARLINK_DEFAULT_MAX_MESSAGE_SIZE;
        s->max_buffer = config->max_buffer ?: VARLINK_DEFAULT_MAX_BUFFER;
        s->max_connections = config->max_connections ?: VARLINK_DEFAULT_MAX_CONNECTIONS;
        s->max_connections_per_uid = config->max_connections_per_uid ?: VARLINK_DEFAULT_MAX_CONNECTIONS_PER_UID;
        /* The default reserve is a 16th of the connections at most: a small limit stays usable. */
        s->reserved_connections = config->reserved_connections == (unsigned) -1 ? 0
                                  : config->reserved_connections
                                          ?: MIN(VARLINK_DEFAULT_RESERVED_CONNECTIONS, s->max_connections / 16);
        if (s->reserved_connections >= s->max_connections) {
                free(s);
                return -EINVAL;
        }
        s->idle_timeout_sec = config->idle_timeout_sec ?: VARLINK_DEFAULT_IDLE_TIMEOUT_SEC;

        s->vendor = strdup(config->vendor ?: "");
        s->product = strdup(config->product ?: "");
        s->version = strdup(config->version ?: "");
        s->url = strdup(config->url ?: "");
        s->privileged_group = config->privileged_group ? strdup(config->privileged_group) : NULL;
        s->refused_error = config->refused_error ? strdup(config->refused_error) : NULL;
        s->accept_retry = evtimer_new(base, on_accept_retry, s);
        if (!s->vendor || !s->product || !s->version || !s->url || !s->accept_retry ||
            (config->privileged_group && !s->privileged_group) || (config->refused_error && !s->refused_error)) {
                varlink_server_free(s);
                return -ENOMEM;
        }

        r = varlink_server_add_interface(s, "org.varlink.service", service_description, service_methods, s);
        if (r < 0) {
                varlink_server_free(s);
                return r;
        }

        *ret = s;
        return 0;
}

/* Not from inside a method handler: the connection being served would be freed under it. */
VarlinkServer *varlink_server_free(VarlinkServer *s) {
        if (!s)
                return NULL;

        while (s->connections)
                connection_free(s->connections);
        for (size_t i = 0; i < s->n_listeners; i++)
                evconnlistener_free(s->listeners[i]);
        free(s->listeners);
        if (s->accept_retry)
                event_free(s->accept_retry);
        for (size_t i = 0; i < s->n_interfaces; i++)
                varlink_interface_free(s->interfaces[i].idl);
        free(s->interfaces);
        free(s->vendor);
        free(s->product);
        free(s->version);
        free(s->url);
        free(s->privileged_group);
        free(s->refused_error);
        free(s);
        return NULL;
}

int varlink_server_add_interface(VarlinkServer *s, const char *name, const char *description,
                                 const VarlinkMethod *methods, void *userdata) {
        VarlinkInterface *idl = NULL;
        ServerInterface *a;
        char error[200];
        int r;

        if (!s || !name || !*name || !description || !methods)
                return -EINVAL;
        s->error[0] = '\0';
        if (server_find_interface(s, name, strlen(name)))
                return -EEXIST;

        r = varlink_interface_parse(description, &idl, error, sizeof(error));
        if (r < 0) {
                snprintf(s->error, sizeof(s->error), "%s.varlink:%s", name, error);
                return r;
        }
        /* The IDL and the handlers must match exactly: a declared method nobody answers, or
         * a handler the IDL does not describe, is a bug to catch at start, not at call time. */
        r = -EINVAL;
        if (strcmp(varlink_interface_name(idl), name) != 0)
                snprintf(s->error, sizeof(s->error), "interface %s is described as %s", name, varlink_interface_name(idl));
        else {
                r = 0;
                for (size_t i = 0; r == 0 && i < varlink_interface_n_methods(idl); i++)
                        if (!find_handler(methods, varlink_interface_method_name(idl, i))) {
                                snprintf(s->error, sizeof(s->error), "method %s.%s is declared but has no handler", name,
                                         varlink_interface_method_name(idl, i));
                                r = -EINVAL;
                        }
                for (const VarlinkMethod *m = methods; r == 0 && m->name; m++)
                        if (!varlink_interface_has_method(idl, m->name)) {
                                snprintf(s->error, sizeof(s->error), "method %s.%s has a handler but is not declared",
                                         name, m->name);
                                r = -EINVAL;
                        }
        }
        if (r < 0) {
                varlink_interface_free(idl);
                return r;
        }

        a = realloc(s->interfaces, (s->n_interfaces + 1) * sizeof(*a));
        if (!a) {
                varlink_interface_free(idl);
                return -ENOMEM;
        }
        s->interfaces = a;
        s->interfaces[s->n_interfaces++] = (ServerInterface) {
                .name = name,
                .description = description,
                .methods = methods,
                .userdata = userdata,
                .idl = idl,
        };
        return 0;
}

const char *varlink_server_error(VarlinkServer *s) {
        return s && s->error[0] ? s->error : "no error";
}

int varlink_server_listen_fd(VarlinkServer *s, int fd) {
        _cleanup_close_ int fd_close = fd;
        int domain = 0, accepting = 0;
        socklen_t len = sizeof(int);
        struct evconnlistener **a, *l;

        if (!s || fd < 0)
                return -EINVAL;

        /* Catch a wrong fd (e.g. from a misconfigured socket unit) here rather than failing on
         * every connection: SO_PEERCRED needs AF_UNIX. */
        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 ||
            getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) < 0)
                return -errno;
        if (domain != AF_UNIX || !accepting)
                return -EINVAL;

        /* evconnlistener sets these on accepted sockets only, not on the listening one. */
        if (evutil_make_socket_nonblocking(fd) < 0 || evutil_make_socket_closeonexec(fd) < 0)
                return -errno;

        a = realloc(s->listeners, (s->n_listeners + 1) * sizeof(*a));
        if (!a)
                return -ENOMEM;
        s->listeners = a;

        /* backlog 0: the socket is already listening. */
        l = evconnlistener_new(s->base, on_accept, s, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd);
        if (!l)
                return -ENOMEM;
        TAKE_FD(fd_close);

        evconnlistener_set_error_cb(l, on_accept_error);
        s->listeners[s->n_listeners++] = l;
        return 0;
}

static int sockaddr_un_set(struct sockaddr_un *sa, const char *path, socklen_t *ret_len) {
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

/* 1 if a server accepts on the socket at sa, 0 if the socket is stale (nobody listens). The
 * connect is non-blocking: a full listen backlog (EAGAIN) means a live server as well. */
static int socket_probe_listening(const struct sockaddr_un *sa, socklen_t sa_len) {
        _cleanup_close_ int fd = -1;

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (const struct sockaddr *) sa, sa_len) == 0)
                return 1;
        if (errno == EAGAIN || errno == EINPROGRESS)
                return 1;
        if (errno == ECONNREFUSED)
                return 0;
        /* Gone meanwhile: nothing to remove, bind() takes the path. */
        if (errno == ENOENT)
                return 0;
        return -errno;
}

int varlink_server_listen_unix(VarlinkServer *s, const char *path, mode_t mode) {
        _cleanup_close_ int fd = -1;
        struct sockaddr_un sa;
        socklen_t sa_len;
        struct stat st;
        int r;

        if (!s)
                return -EINVAL;
        r = sockaddr_un_set(&sa, path, &sa_len);
        if (r < 0)
                return r;

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;

        /* A socket file left by an earlier run would make bind() fail with EADDRINUSE. Only a
         * stale socket is removed: never some other file that happens to have the name, and
         * never the socket of a server that still accepts on it, whose clients would otherwise
         * silently end up with us. */
        if (lstat(path, &st) == 0) {
                if (!S_ISSOCK(st.st_mode))
                        return -EEXIST;
                r = socket_probe_listening(&sa, sa_len);
                if (r < 0)
                        return r;
                if (r > 0)
                        return -EADDRINUSE;
                (void) unlink(path);
        }

        if (bind(fd, (struct sockaddr *) &sa, sa_len) < 0)
                return -errno;

        /* Nobody can connect before listen(), so the umask-dependent mode between bind() and
         * chmod() does not matter. */
        if (chmod(path, mode) < 0 || listen(fd, LISTEN_BACKLOG) < 0) {
                r = -errno;
                (void) unlink(path);
                return r;
        }

        r = varlink_server_listen_fd(s, TAKE_FD(fd));
        if (r < 0)
                (void) unlink(path);
        return r;
}

int varlink_server_add_connection(VarlinkServer *s, int fd) {
        _cleanup_close_ int fd_close = fd;
        int domain = 0, type = 0;
        socklen_t len = sizeof(int);

        if (!s || fd < 0)
                return -EINVAL;

        /* SO_PEERCRED, on which access control rests, means something only for AF_UNIX. */
        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 ||
            getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
                return -errno;
        if (domain != AF_UNIX || type != SOCK_STREAM)
                return -EINVAL;

        /* What accept4() in evconnlistener does for accepted sockets; a blocking write would
         * stall the whole event loop. */
        if (evutil_make_socket_nonblocking(fd) < 0 || evutil_make_socket_closeonexec(fd) < 0)
                return -errno;

        return connection_new(s, TAKE_FD(fd_close));
}

unsigned varlink_server_n_connections(VarlinkServer *s) {
        return s ? s->n_connections : 0;
}

/* ---- client ---- */

struct VarlinkClient {
        int fd;
        struct evbuffer *input;
        size_t scanned; /* see message_read_incremental() */
        size_t max_message_size;
};

int varlink_client_connect(const char *path, uint64_t timeout_usec, VarlinkClient **ret) {
        _cleanup_close_ int fd = -1;
        struct sockaddr_un sa;
        socklen_t sa_len;
        VarlinkClient *c;
        int r;

        if (!ret)
                return -EINVAL;
        r = sockaddr_un_set(&sa, path, &sa_len);
        if (r < 0)
                return r;

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;

        if (timeout_usec > 0) {
                struct timeval tv = {
                        .tv_sec = (time_t) (timeout_usec / 1000000U),
                        .tv_usec = (suseconds_t) (timeout_usec % 1000000U),
                };

                if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
                    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
                        return -errno;
        }

        if (connect(fd, (struct sockaddr *) &sa, sa_len) < 0)
                return -errno;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->input = evbuffer_new();
        if (!c->input) {
                free(c);
                return -ENOMEM;
        }
        /* Replies (e.g. a large query result) may be bigger than any call a server accepts. */
        c->max_message_size = VARLINK_CLIENT_DEFAULT_MAX_MESSAGE_SIZE;
        c->fd = TAKE_FD(fd);

        *ret = c;
        return 0;
}

VarlinkClient *varlink_client_free(VarlinkClient *c) {
        if (!c)
                return NULL;

        if (c->fd >= 0)
                close(c->fd);
        if (c->input)
                evbuffer_free(c->input);
        free(c);
        return NULL;
}

void varlink_client_set_max_message_size(VarlinkClient *c, size_t max) {
        if (c)
                c->max_message_size = max ?: VARLINK_CLIENT_DEFAULT_MAX_MESSAGE_SIZE;
}

static int client_send(VarlinkClient *c, const char *p, size_t n) {
        while (n > 0) {
                /* MSG_NOSIGNAL: a server that went away must give us EPIPE, not kill us. */
                ssize_t k = send(c->fd, p, n, MSG_NOSIGNAL);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN || errno == EWOULDBLOCK)
                                return -ETIMEDOUT;
                        return -errno;
                }
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

int varlink_client_call(VarlinkClient *c, const char *method, const json_t *parameters, unsigned flags) {
        _cleanup_json_ json_t *msg = NULL;
        _cleanup_free_ char *s = NULL;
        size_t size;
        int r;

        if (!c || !method || (parameters && !json_is_object(parameters)))
                return -EINVAL;
        /* A oneway call gets no reply at all, so asking for several replies makes no sense. */
        if ((flags & ~(unsigned) (VARLINK_CALL_MORE | VARLINK_CALL_ONEWAY)) ||
            ((flags & VARLINK_CALL_MORE) && (flags & VARLINK_CALL_ONEWAY)))
                return -EINVAL;

        msg = json_pack("{s:s}", "method", method);
        if (!msg)
                return -ENOMEM;
        /* json_object_set() only takes a reference; parameters is not modified. */
        if ((parameters && json_object_set(msg, "parameters", (json_t *) parameters) < 0) ||
            ((flags & VARLINK_CALL_MORE) && json_object_set_new(msg, "more", json_true()) < 0) ||
            ((flags & VARLINK_CALL_ONEWAY) && json_object_set_new(msg, "oneway", json_true()) < 0))
                return -ENOMEM;

        r = message_format(msg, &s, &size);
        if (r < 0)
                return r;
        r = client_send(c, s, size);
        /* The server closed: what it said before, if anything, is waiting to be read. */
        if (r == -EPIPE || r == -ECONNRESET)
                return 0;
        return r;
}

/* Reads whatever the socket has (blocking up to the timeout) into the input buffer. */
static int client_fill(VarlinkClient *c) {
        struct evbuffer_iovec v;
        ssize_t n;

        if (evbuffer_reserve_space(c->input, CLIENT_READ_CHUNK, &v, 1) != 1)
                return -ENOMEM;

        do
                n = recv(c->fd, v.iov_base, v.iov_len, 0);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
        if (n == 0)
                return -ECONNRESET;

        v.iov_len = (size_t) n;
        if (evbuffer_commit_space(c->input, &v, 1) < 0)
                return -ENOMEM;
        return 0;
}

int varlink_client_read_reply(VarlinkClient *c, json_t **ret_parameters, char **ret_error, bool *ret_continues) {
        _cleanup_json_ json_t *msg = NULL, *parameters = NULL;
        _cleanup_free_ char *error_name = NULL;
        json_t *p, *error, *continues;
        int r;

        if (!c)
                return -EINVAL;

        for (;;) {
                r = message_read_incremental(c->input, c->max_message_size, &c->scanned, &msg);
                if (r < 0)
                        return r;
                if (r > 0)
                        break;
                r = client_fill(c);
                if (r < 0)
                        return r;
        }

        p = json_object_get(msg, "parameters");
        error = json_object_get(msg, "error");
        continues = json_object_get(msg, "continues");
        if ((p && !json_is_object(p)) || (error && !json_is_string(error)) || (continues && !json_is_boolean(continues)))
                return -EBADMSG;

        parameters = p ? json_incref(p) : json_object();
        if (!parameters)
                return -ENOMEM;
        if (error) {
                error_name = strdup(json_string_value(error));
                if (!error_name)
                        return -ENOMEM;
        }

        if (ret_parameters)
                *ret_parameters = TAKE_PTR(parameters);
        if (ret_error)
                *ret_error = TAKE_PTR(error_name);
        if (ret_continues)
                *ret_continues = json_is_true(continues);
        return 0;
}
