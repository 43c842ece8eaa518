/* SPDX-License-Identifier: MIT */
/* The server's connections: peer credentials and the connection limits, reading calls one at a
 * time (one reply in flight, the shared max_buffer), dispatching them to the handlers after
 * checking them against the IDL, the replies and errors of a call, kept calls (deferred replies
 * and streams), and closing. */

/* struct ucred (SO_PEERCRED, in varlink-internal.h) is a GNU extension; the build may already
 * define this. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "varlink.h"
#include "varlink-internal.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "json-util.h"
#include "log.h"
#include "loop-turn.h"
#include "macro.h"

/* The rate limit of log_client() (varlink-internal.h), shared by every file of the library. */
RateLimit varlink_client_log_ratelimit = RATELIMIT_CLIENT;
/* Failures of our own handlers (out of memory, say) are errors, but any client can trigger the
 * call that fails: rate-limited too. */
static RateLimit handler_log_ratelimit = RATELIMIT_CLIENT;
#define log_handler(error, ...) log_ratelimited(&handler_log_ratelimit, LOG_LEVEL_ERR, (error), __VA_ARGS__)

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

/* Counts bytes added to and deleted from c's buffers in its and the server's sums. */
static void connection_count(VarlinkConnection *c, size_t added, size_t deleted) {
        VarlinkServer *s = c->server;

        /* The server's counts are sums of the connections': the same delta keeps them so. */
        deleted = MIN(deleted, c->buffered + added);
        c->buffered = c->buffered + added - deleted;
        s->buffered = s->buffered + added - deleted;
        if (!c->privileged)
                s->buffered_unprivileged = s->buffered_unprivileged + added - deleted;
}

/* Counts what goes in and out of a connection's buffers towards max_buffer, and runs the reply's
 * deadline while the output holds anything. */
static void on_buffer_change(struct evbuffer *b, const struct evbuffer_cb_info *info, void *userdata) {
        VarlinkConnection *c = userdata;

        connection_count(c, info->n_added, info->n_deleted);
        if (b != bufferevent_get_output(c->bev))
                return;
        if (evbuffer_get_length(b) == 0)
                evtimer_del(c->deadline);
        else if (!evtimer_pending(c->deadline, NULL))
                evtimer_add(c->deadline, &c->server->write_timeout);
}

/* The reserve of the privileged peers, and what one unprivileged uid may hold. */
static size_t server_reserve(const VarlinkServer *s) {
        return s->max_buffer / VARLINK_BUFFER_RESERVE_DIVISOR;
}

static size_t server_uid_share(const VarlinkServer *s) {
        return (s->max_buffer - server_reserve(s)) / 2;
}

static size_t uid_buffered(const VarlinkServer *s, uid_t uid) {
        size_t n = 0;

        for (const VarlinkConnection *c = s->connections; c; c = c->next)
                if (c->peer.uid == uid && !c->privileged)
                        n += c->buffered;
        return n;
}

/* How many more bytes c's share of max_buffer holds: for a privileged peer what the others left
 * free, and at least the reserve minus what privileged peers hold; for any other, the room left to
 * the unprivileged peers together and to its uid, whichever is less. The uid's connections are
 * walked only when the unprivileged peers together have room but hold more than one uid's share. */
static size_t connection_room(const VarlinkConnection *c) {
        const VarlinkServer *s = c->server;
        size_t reserve = server_reserve(s), share = server_uid_share(s), pool = s->max_buffer - reserve;
        size_t privileged, held;

        if (c->privileged) {
                privileged = s->buffered - MIN(s->buffered, s->buffered_unprivileged);
                return MAX(s->max_buffer - MIN(s->max_buffer, s->buffered), reserve - MIN(reserve, privileged));
        }
        if (s->buffered_unprivileged >= pool)
                return 0;
        held = s->buffered_unprivileged <= share ? s->buffered_unprivileged : uid_buffered(s, c->peer.uid);
        return MIN(pool - s->buffered_unprivileged, share - MIN(share, held));
}

static void server_resume_waiting(VarlinkServer *s);

void varlink_connection_free(VarlinkConnection *c) {
        VarlinkServer *s;

        if (!c)
                return;
        s = c->server;

        connection_drop_kept(c);
        if (c->resume)
                event_free(c->resume);
        if (c->deadline)
                event_free(c->deadline);
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
        evbuffer_remove_cb(bufferevent_get_input(c->bev), on_buffer_change, c);
        evbuffer_remove_cb(bufferevent_get_output(c->bev), on_buffer_change, c);
        connection_count(c, 0, c->buffered);
        /* Safe from inside the bufferevent's own callbacks: libevent defers the actual free. */
        bufferevent_free(c->bev);
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
                varlink_connection_free(c);
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
int varlink_call_error_string(VarlinkCall *call, const char *error, const char *field, const char *value,
                              size_t len) {
        json_t *p = json_pack("{s:s%}", field, value, len);

        if (!p)
                return -ENOMEM;
        return varlink_call_error(call, error, p);
}

int varlink_call_error_invalid_parameter(VarlinkCall *call, const char *field) {
        if (!field)
                return -EINVAL;
        return varlink_call_error_string(call, "org.varlink.service.InvalidParameter", "parameter", field,
                                         strlen(field));
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

bool varlink_call_peer_privileged(VarlinkCall *call) {
        return call && call->connection && call->connection->privileged;
}

uint64_t varlink_call_peer_label(VarlinkCall *call) {
        return call && call->connection ? call->connection->label : 0;
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

size_t varlink_call_reply_room(VarlinkCall *call) {
        if (!call || !call->connection)
                return 0;
        return connection_room(call->connection);
}

size_t varlink_call_queued_bytes(VarlinkCall *call) {
        if (!call || !call->connection)
                return 0;
        return evbuffer_get_length(bufferevent_get_output(call->connection->bev));
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

        /* A duplicate key or "\u0000" outside the parameters (varlink_message_read()). */
        if (h.invalid)
                return varlink_call_error_invalid_parameter(&call, h.invalid);
        if (h.oneway && h.more)
                return varlink_call_error_invalid_parameter(&call, "oneway");
        /* No method here upgrades the connection to another protocol. */
        if (h.upgrade)
                return varlink_call_error_invalid_parameter(&call, "upgrade");

        dot = strrchr(h.method, '.');
        iface_len = (size_t) (dot - h.method);
        iface = server_find_interface(c->server, h.method, iface_len);
        if (!iface)
                return varlink_call_error_string(&call, "org.varlink.service.InterfaceNotFound", "interface", h.method,
                                                 iface_len);

        m = find_handler(iface->methods, dot + 1);
        if (!m)
                return varlink_call_error_string(&call, "org.varlink.service.MethodNotFound", "method", h.method,
                                                 strlen(h.method));

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

/* Pauses reading until the connection's share of max_buffer has room again. */
static void connection_wait(VarlinkConnection *c) {
        if (!c->waiting) {
                c->waiting = true;
                c->server->n_waiting++;
        }
        bufferevent_disable(c->bev, EV_READ);
}

/* Lets the waiting connections whose share has room again go on. Each goes on from the event
 * loop; the first ones may fill the buffers again, and the others wait again. */
static void server_resume_waiting(VarlinkServer *s) {
        if (s->n_waiting == 0)
                return;
        for (VarlinkConnection *c = s->connections; c; c = c->next)
                if (c->waiting && connection_room(c) > 0) {
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
                /* The connection's share of max_buffer is full (its uid's, or all unprivileged
                 * peers'): no new call starts here; other connections go on. */
                if (evbuffer_get_length(in) > 0 && connection_room(c) == 0) {
                        connection_wait(c);
                        return;
                }

                r = varlink_message_read_incremental(in, c->server->max_message_size, &c->scanned, &msg);
                if (r == 0) {
                        /* Part of a call, while the buffers are full: the one thing that would
                         * have us buffer more for a client that has not finished asking. */
                        if (evbuffer_get_length(in) > 0 && connection_room(c) == 0) {
                                log_client(ENOBUFS, "The buffers of this connection's share are full, closing "
                                                    "a connection that sent part of a call");
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
        LOOP_TURN;
        connection_process(userdata);
}

static void on_resume(evutil_socket_t fd _unused_, short what _unused_, void *userdata) {
        LOOP_TURN;
        connection_process(userdata);
}

/* A reply was not written whole within the write timeout: the client reads too slowly (or not
 * at all) and holds its share of the buffers; it is closed, whatever it took so far. */
static void on_deadline(evutil_socket_t fd _unused_, short what _unused_, void *userdata) {
        LOOP_TURN;
        VarlinkConnection *c = userdata;

        log_client(ETIMEDOUT, "A reply was not taken within the write timeout, closing connection (uid %u)",
                   (unsigned) c->peer.uid);
        varlink_connection_free(c);
}

/* Called when the output is empty: the client has taken its reply. */
static void on_write(struct bufferevent *bev, void *userdata) {
        LOOP_TURN;
        VarlinkConnection *c = userdata;

        if (c->closing) {
                if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
                        varlink_connection_free(c);
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
        LOOP_TURN;
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
                varlink_connection_free(c);
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
        if (msg && varlink_message_format(msg, &text, &size) >= 0)
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

int varlink_connection_new(VarlinkServer *s, int fd) {
        _cleanup_close_ int fd_close = fd;
        struct timeval idle = { .tv_sec = s->idle_timeout_sec };
        socklen_t len = sizeof(struct ucred);
        _cleanup_free_ gid_t *groups = NULL;
        VarlinkConnection *c;
        size_t n_groups = 0;
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
        /* The supplementary groups only decide this, once: the connection keeps the answer. */
        r = read_peer_groups(fd, &groups, &n_groups);
        if (r < 0) {
                free(c);
                return r;
        }
        c->privileged = peer_privileged(s, &c->peer, groups, n_groups);

        limit = connection_limit_reached(s, c);
        if (limit > 0) {
                uid_t uid = c->peer.uid;

                connection_refuse(s, fd, limit);
                free(c);
                return log_client(EUSERS, "Too many varlink connections (limit %u reached for uid %u), refusing a new one.",
                                  limit, (unsigned) uid);
        }

        if (s->peer_label)
                c->label = s->peer_label(fd, &c->peer, s->peer_label_userdata);

        c->resume = event_new(s->base, -1, 0, on_resume, c);
        c->deadline = evtimer_new(s->base, on_deadline, c);
        c->bev = c->resume && c->deadline ? bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE) : NULL;
        if (!c->bev) {
                if (c->resume)
                        event_free(c->resume);
                if (c->deadline)
                        event_free(c->deadline);
                free(c);
                return -ENOMEM;
        }
        TAKE_FD(fd_close);

        bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
        /* The read timeout is the idle timeout. Writes have c->deadline instead of libevent's
         * write timeout, which restarts on every partial write: a client reading a few bytes
         * every so often would hold its reply's buffers for ever. */
        bufferevent_set_timeouts(c->bev, &idle, NULL);
        /* on_write() runs once the output is empty: the reply in flight is taken. */
        bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
        evbuffer_add_cb(bufferevent_get_input(c->bev), on_buffer_change, c);
        evbuffer_add_cb(bufferevent_get_output(c->bev), on_buffer_change, c);
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
                varlink_connection_free(c);
                return -ENOMEM;
        }
        return 0;
}
