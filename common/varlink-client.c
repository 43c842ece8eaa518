/* SPDX-License-Identifier: MIT */
/* The blocking varlink client: connect, send a call, read replies (with a timeout). */

/* struct ucred (SO_PEERCRED, in varlink-internal.h) is a GNU extension; the build may already
 * define this. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "varlink.h"
#include "varlink-internal.h"

#include <errno.h>
#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "json-util.h"
#include "macro.h"

/* Bytes asked of recv() per read in the client; replies may be megabytes long. */
#define CLIENT_READ_CHUNK (64U * 1024U)

struct VarlinkClient {
        int fd;
        struct evbuffer *input;
        size_t scanned; /* see varlink_message_read_incremental() */
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

        r = varlink_message_format(msg, &s, &size);
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
                r = varlink_message_read_incremental(c->input, c->max_message_size, &c->scanned, &msg);
                /* A reply with a duplicate key or "\u0000" is a server's bug: not to be guessed at. */
                if (r == 2)
                        return -EBADMSG;
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
