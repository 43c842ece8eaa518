/* SPDX-License-Identifier: MIT */
#pragma once

/* A small varlink (https://varlink.org) protocol library: message framing, a libevent server and
 * a blocking client. Linked by trapstatd, trapstat and the tests.
 *
 * Wire format: each message is one JSON object followed by a NUL byte.
 *   call:  {"method": "iface.Method", "parameters": {...}, "more": true, "oneway": true}
 *   reply: {"parameters": {...}, "continues": true}   or   {"error": "iface.Name", "parameters": {...}}
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ucred; /* <sys/socket.h>, with _GNU_SOURCE */

struct event_base;
struct evbuffer;

/* Default limits; every one of them is configurable per server / client. The connection limits
 * are sd-varlink's. A call is small (parameters, not data), so the server accepts calls up to
 * 64 KiB; replies may be large, so the client accepts replies up to 64 MiB. */
#define VARLINK_DEFAULT_MAX_MESSAGE_SIZE (64U * 1024U)
#define VARLINK_DEFAULT_MAX_BUFFER (32U * 1024U * 1024U)
#define VARLINK_DEFAULT_MAX_CONNECTIONS 4096U
#define VARLINK_DEFAULT_MAX_CONNECTIONS_PER_UID 1024U
#define VARLINK_DEFAULT_RESERVED_CONNECTIONS 64U
#define VARLINK_DEFAULT_IDLE_TIMEOUT_SEC 60U
/* Of max_buffer, the part only root and the privileged group may fill: a quarter. */
#define VARLINK_BUFFER_RESERVE_DIVISOR 4U
#define VARLINK_CLIENT_DEFAULT_MAX_MESSAGE_SIZE (64U * 1024U * 1024U)

/* ---- framing (pure; unit-tested on their own) ---- */

/* Takes one complete message off the front of buf.
 * Returns 1 and sets *ret (a JSON object, new reference) when a message was complete,
 * 2 and sets *ret likewise for a message that is a JSON object but has a duplicate key or
 *  "\u0000" in a string (in a key too) somewhere: it is read with the last of each duplicate and
 *  every "\u0000" as the text it is ("a\\u0000b"), and the member of the message, or of its
 *  parameters, holding the first such thing is replaced by a string holding "\u0000", which no
 *  varlink type accepts: varlink_call_header_parse() or the IDL check names it in an error, and
 *  the connection goes on,
 * 0 when buf holds only part of a message (nothing is consumed),
 * -EMSGSIZE when more than max_size bytes are pending without a NUL, or the complete message
 *  is longer than max_size,
 * -EBADMSG when the message is not valid JSON or not an object (the message is consumed).
 * A number JSON allows but a 64-bit integer or a double cannot hold (9223372036854775808, 1e400)
 * is read as the string "out of range" in its place: the message is valid JSON, and whoever
 * checks that member's type names it in an InvalidParameter error. */
int varlink_message_read(struct evbuffer *buf, size_t max_size, json_t **ret);

/* Appends msg as compact JSON plus the terminating NUL. Returns 0 or negative errno. */
int varlink_message_write(struct evbuffer *buf, const json_t *msg);

/* A parsed call. Pointers borrow from the message object. */
typedef struct VarlinkCallHeader {
        const char *method;     /* fully qualified: "io.trapstat.Top" */
        json_t *parameters;     /* always an object (empty when absent) */
        bool more, oneway, upgrade;
        const char *invalid;    /* a member marked by varlink_message_read(); the rest unset */
} VarlinkCallHeader;

/* Checks a call message: "method" a string of the form interface.Method, "parameters" absent or
 * an object, "more"/"oneway"/"upgrade" absent or booleans, no other keys.
 * Returns 0 or -EBADMSG. 0 with only invalid set when a member is marked (varlink_message_read()):
 * the call is to be answered with InvalidParameter naming it. */
int varlink_call_header_parse(json_t *msg, VarlinkCallHeader *ret);

/* ---- server ---- */

typedef struct VarlinkServer VarlinkServer;
typedef struct VarlinkCall VarlinkCall;

/* A method handler. It must answer the call before returning, with varlink_call_reply() or
 * one of the error functions, unless the call was oneway (then any reply is dropped).
 * Returns 0, or negative errno on a failure it could not answer with an error of its own
 * interface; the server then logs it and closes that connection (varlink has no generic
 * "internal error", so handlers should reply with an error of their interface instead). */
typedef int (*VarlinkMethodFn)(VarlinkCall *call, json_t *parameters, void *userdata);

enum {
        /* A streaming method: calls without "more" are answered org.varlink.service.ExpectedMore. */
        VARLINK_METHOD_MORE = 1 << 0,
};

typedef struct VarlinkMethod {
        const char *name;  /* unqualified: "Top" */
        VarlinkMethodFn fn;
        unsigned flags;    /* VARLINK_METHOD_* */
} VarlinkMethod;

/* Limits. Each connection has at most one reply in flight: while a reply is unsent or a call is
 * being answered (a kept call, see varlink_call_keep()), the connection is not read further, so
 * pipelined calls wait in the kernel's socket buffer, not in ours. max_buffer bounds what all
 * connections hold together, in shares: peers that are not privileged hold at most three quarters of
 * it together (the last quarter is the privileged peers' reserve) and one uid at most half of
 * that. A connection whose share is full starts no new call until replies drain (a connection that
 * sends part of a call meanwhile is closed); the others go on. A reply has write_timeout to go out
 * whole, from the moment it is queued (not restarted by progress): a client that reads slower is
 * closed. Connections: at most max_connections; peers
 * that are not privileged (root, or a member of privileged_group) get at most
 * max_connections - reserved_connections of them together and max_connections_per_uid each, so
 * other users can never lock the privileged ones out. A refused connection is sent the error
 * refused_error {"limit": N} (when set) before it is closed. */
typedef struct VarlinkServerConfig {
        const char *vendor, *product, *version, *url;  /* for org.varlink.service.GetInfo */
        size_t max_message_size;                        /* largest call; 0: default */
        size_t max_buffer;                              /* 0: default */
        unsigned max_connections;                       /* 0: default */
        unsigned max_connections_per_uid;               /* 0: default */
        unsigned reserved_connections;                  /* (unsigned) -1: none; 0: default, 64 or
                                                         * max_connections / 16 if less */
        unsigned idle_timeout_sec;                      /* 0: default */
        uint64_t write_timeout_usec;                    /* 0: idle_timeout_sec */
        const char *privileged_group;                   /* NULL: root only */
        const char *refused_error;                      /* e.g. "io.trapstat.TooManyConnections" */
        /* Called once per accepted connection with its fd and SO_PEERCRED, before anything is
         * read: an opaque value the server's owner keeps about the peer (e.g. which processes it
         * may see), given back by varlink_call_peer_label(). NULL: every label is 0. */
        uint64_t (*peer_label)(int fd, const struct ucred *peer, void *userdata);
        void *peer_label_userdata;
} VarlinkServerConfig;

/* The process must ignore SIGPIPE (libevent writes with writev()): a client that closes while a
 * reply is being written would otherwise kill it. */
int varlink_server_new(struct event_base *base, const VarlinkServerConfig *config, VarlinkServer **ret);
VarlinkServer *varlink_server_free(VarlinkServer *s);

/* Registers an interface: name ("io.trapstat"), its IDL text (served verbatim by
 * org.varlink.service.GetInterfaceDescription), and a NULL-terminated method table.
 * org.varlink.service itself is built in. Strings and table must outlive the server.
 * The IDL is parsed; every call is checked against it before its handler runs (unknown,
 * missing or ill-typed member: org.varlink.service.InvalidParameter naming it). Fails with
 * -EBADMSG when the IDL does not parse and -EINVAL when it does not declare exactly the
 * methods of the table; varlink_server_error() then says what is wrong. */
int varlink_server_add_interface(VarlinkServer *s, const char *name, const char *description,
                                 const VarlinkMethod *methods, void *userdata);
const char *varlink_server_error(VarlinkServer *s);

/* Starts accepting on an already listening socket (e.g. from sd_listen_fds). Takes the fd. */
int varlink_server_listen_fd(VarlinkServer *s, int fd);
/* Binds and listens on a Unix socket path (an existing stale socket file is replaced). */
int varlink_server_listen_unix(VarlinkServer *s, const char *path, mode_t mode);
/* Serves an already connected AF_UNIX stream socket as a client connection, exactly like an
 * accepted one (peer credentials, limits, idle timeout): e.g. a socket unit with Accept=yes, or a
 * socketpair() in tests. Takes the fd, also on failure; makes it non-blocking and close-on-exec.
 * Returns 0; -EINVAL when fd is not an AF_UNIX stream socket; -EUSERS when max_connections or
 * max_connections_per_uid is reached; -ENOMEM; or the negative errno of getsockopt()/fcntl(). */
int varlink_server_add_connection(VarlinkServer *s, int fd);
/* trapstatd only listens (its socket or systemd's); the fuzzers (fuzz-varlink.c, fuzz-methods.c)
 * hand the server one end of a socketpair through varlink_server_add_connection(): the path of an
 * accepted connection, without a listening socket. */

/* Connections open. Only tests ask (test-varlink.c, fuzz-client.c): they wait for the server to
 * have let a connection go; the server's private state. */
unsigned varlink_server_n_connections(VarlinkServer *s);

/* Replying. parameters may be NULL (sent as {}); the reference is stolen in every case.
 * continues=true is only allowed when the caller set "more". */
int varlink_call_reply(VarlinkCall *call, json_t *parameters, bool continues);
int varlink_call_error(VarlinkCall *call, const char *error, json_t *parameters);
/* org.varlink.service.InvalidParameter {"parameter": field} */
int varlink_call_error_invalid_parameter(VarlinkCall *call, const char *field);

/* Deferred replies and streams. A handler may keep the call, return, and reply later: once, from
 * a worker's result, or (a call with "more") once per tick with varlink_call_reply(...,
 * continues=true), ending with continues=false or an error. The kept call is *ret, owned by the
 * caller until varlink_call_unref(); the handler's own pointer is invalid once it returns. While
 * a call is kept, later calls on the same connection wait (replies stay in call order). When the
 * connection goes away first, on_close runs once (it may unref the call); later replies then
 * fail with -ENOTCONN. Returns -EINVAL when the call is oneway or was answered already. */
typedef void (*VarlinkCallCloseFn)(VarlinkCall *call, void *userdata);
int varlink_call_keep(VarlinkCall *call, VarlinkCallCloseFn on_close, void *userdata, VarlinkCall **ret);
/* Releases a kept call. Unreffed in mid-stream (no final reply), its connection is closed once
 * what is queued has been written: the client must not wait for replies that never come. */
VarlinkCall *varlink_call_unref(VarlinkCall *call);
/* Bytes of replies queued in user space for the call's connection: the kernel's socket buffer
 * is full. A stream skips updates while this is non-zero, so a slow reader costs at most one
 * reply of memory and never holds the others back. */
size_t varlink_call_queued_bytes(VarlinkCall *call);
/* The largest reply the call's connection may be sent now, within its share of max_buffer (see
 * VarlinkServerConfig): what its uid's and all peers' connections hold already is taken off. A
 * deferred reply larger than this is answered with an error instead (the caller's choice). 0 when
 * the connection is gone. */
size_t varlink_call_reply_room(VarlinkCall *call);

/* A reply formatted away from the event loop, e.g. by a worker thread (nothing in it touches the
 * server), and sent later with varlink_call_send_reply(). A reply whose parameters hold one large
 * array is built element by element, so that the whole JSON tree never exists at once:
 *     varlink_reply_new_array("rows", &r); varlink_reply_append(r, row)...;
 *     varlink_reply_finish(r, other_members);
 * Every function steals its json_t reference, also on failure. */
typedef struct VarlinkReply VarlinkReply;
int varlink_reply_new(json_t *parameters, VarlinkReply **ret);
int varlink_reply_new_error(const char *error, json_t *parameters, VarlinkReply **ret);
int varlink_reply_new_array(const char *member, VarlinkReply **ret);
int varlink_reply_append(VarlinkReply *r, json_t *element);
/* Appends an element already written as compact JSON text (len bytes, valid JSON: the caller's
 * word), for replies of thousands of small elements where building and dumping a json_t per
 * element is most of the cost. */
int varlink_reply_append_text(VarlinkReply *r, const char *json, size_t len);
/* members: an object of the parameters' other members, or NULL. */
int varlink_reply_finish(VarlinkReply *r, json_t *members);
/* Replies built by the calling thread from now on stop growing at max bytes: a
 * varlink_reply_new(), _append*() or _finish() that would make one longer fails with -EMSGSIZE,
 * so that a reply over the limit is never built whole. 0: no limit (the default). Error replies
 * are not limited. */
void varlink_reply_set_thread_max_size(size_t max);
size_t varlink_reply_size(const VarlinkReply *r);
/* The error name of an error reply, NULL for a normal one. Only test-varlink.c asks, of the replies
 * it built (a reply's private state). */
const char *varlink_reply_error(const VarlinkReply *r);
VarlinkReply *varlink_reply_free(VarlinkReply *r);
/* Sends a complete reply as the call's final answer. Takes r in every case. */
int varlink_call_send_reply(VarlinkCall *call, VarlinkReply *r);

bool varlink_call_more(VarlinkCall *call);
/* The method a call named. trapstatd's server dispatches from its method table and never asks;
 * the certification server (tests/helpers/varlink-cert-server.c), fuzz-varlink.c and
 * test-varlink.c dispatch on it with handlers of their own. */
const char *varlink_call_method(VarlinkCall *call);
/* SO_PEERCRED of the connection the call came from. */
uid_t varlink_call_peer_uid(VarlinkCall *call);
/* Whether the peer is root or a member (primary or supplementary group, SO_PEERGROUPS) of the
 * server's privileged_group, as decided when it connected: the same answer the connection limits
 * use. The group is looked up then, so creating it or adding a user needs no restart, only a new
 * connection. */
bool varlink_call_peer_privileged(VarlinkCall *call);
/* What VarlinkServerConfig.peer_label said of the connection's peer when it connected. */
uint64_t varlink_call_peer_label(VarlinkCall *call);
/* The peer's pid as SO_PEERCRED gave it at connect. Only test-varlink.c asks, to check the
 * credentials a connection recorded (the connection's private state). */
pid_t varlink_call_peer_pid(VarlinkCall *call);

/* ---- client (blocking) ---- */

typedef struct VarlinkClient VarlinkClient;

enum {
        VARLINK_CALL_MORE = 1 << 0,
        VARLINK_CALL_ONEWAY = 1 << 1,
};

/* Connects to a Unix socket. timeout_usec bounds every later read and write (0: none).
 * Returns 0 or the negative errno of socket()/connect(). */
int varlink_client_connect(const char *path, uint64_t timeout_usec, VarlinkClient **ret);
VarlinkClient *varlink_client_free(VarlinkClient *c);

/* Sends one call; parameters is borrowed and may be NULL. When the server has closed the
 * connection, the call still succeeds: a server that refuses a connection says why before it
 * closes, and varlink_client_read_reply() returns what it said (or -ECONNRESET). */
int varlink_client_call(VarlinkClient *c, const char *method, const json_t *parameters, unsigned flags);

/* Reads the next reply. On success returns 0 and sets:
 *   *ret_parameters: the reply's parameters object (new reference; {} when absent),
 *   *ret_error: NULL for a normal reply, else the error name (malloc'd),
 *   *ret_continues: whether more replies follow for this call.
 * Returns -ECONNRESET when the server closed the connection, -ETIMEDOUT on timeout,
 * -EBADMSG / -EMSGSIZE on a malformed reply. */
int varlink_client_read_reply(VarlinkClient *c, json_t **ret_parameters, char **ret_error, bool *ret_continues);
