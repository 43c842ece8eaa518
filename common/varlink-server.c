/* SPDX-License-Identifier: MIT */
/* The varlink server: its configuration, its interfaces (each IDL parsed and matched against its
 * method table), the built-in org.varlink.service (GetInfo, GetInterfaceDescription; its IDL is
 * schema/org.varlink.service.varlink, embedded at build time), listening and accepting. */

/* struct ucred (SO_PEERCRED, in varlink-internal.h) is a GNU extension; the build may already
 * define this. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "varlink.h"
#include "varlink-internal.h"

#include <errno.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "array-util.h"
#include "embedded.h"
#include "json-util.h"
#include "log.h"
#include "loop-turn.h"
#include "macro.h"

/* Bursts of clients (scripts, many trapstat at once) queue rather than fail; the kernel caps it
 * at net.core.somaxconn. */
#define LISTEN_BACKLOG SOMAXCONN

static void on_accept(struct evconnlistener *l _unused_, evutil_socket_t fd, struct sockaddr *sa _unused_,
                      int socklen _unused_, void *userdata) {
        LOOP_TURN;
        VarlinkServer *s = userdata;
        int r;

        r = varlink_connection_new(s, fd);
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
                return varlink_call_error_string(call, "org.varlink.service.InterfaceNotFound", "interface",
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
        s->write_timeout = config->write_timeout_usec
                                   ? (struct timeval) { .tv_sec = (time_t) (config->write_timeout_usec / 1000000),
                                                        .tv_usec = (suseconds_t) (config->write_timeout_usec % 1000000) }
                                   : (struct timeval) { .tv_sec = s->idle_timeout_sec };

        s->vendor = strdup(config->vendor ?: "");
        s->product = strdup(config->product ?: "");
        s->version = strdup(config->version ?: "");
        s->url = strdup(config->url ?: "");
        s->privileged_group = config->privileged_group ? strdup(config->privileged_group) : NULL;
        s->refused_error = config->refused_error ? strdup(config->refused_error) : NULL;
        s->peer_label = config->peer_label;
        s->peer_label_userdata = config->peer_label_userdata;
        s->accept_retry = evtimer_new(base, on_accept_retry, s);
        if (!s->vendor || !s->product || !s->version || !s->url || !s->accept_retry ||
            (config->privileged_group && !s->privileged_group) || (config->refused_error && !s->refused_error)) {
                varlink_server_free(s);
                return -ENOMEM;
        }

        /* schema/org.varlink.service.varlink, served verbatim like every interface's IDL. */
        r = varlink_server_add_interface(s, "org.varlink.service", embedded_varlink_service[0].text,
                                         service_methods, s);
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
                varlink_connection_free(s->connections);
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

        r = array_grow((void **) &s->interfaces, &s->interfaces_capacity, s->n_interfaces, 1, sizeof(*s->interfaces));
        if (r < 0) {
                varlink_interface_free(idl);
                return r;
        }
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
        struct evconnlistener *l;
        int r;

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

        r = array_grow((void **) &s->listeners, &s->listeners_capacity, s->n_listeners, 1, sizeof(*s->listeners));
        if (r < 0)
                return r;

        /* backlog 0: the socket is already listening. */
        l = evconnlistener_new(s->base, on_accept, s, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd);
        if (!l)
                return -ENOMEM;
        TAKE_FD(fd_close);

        evconnlistener_set_error_cb(l, on_accept_error);
        s->listeners[s->n_listeners++] = l;
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

        return varlink_connection_new(s, TAKE_FD(fd_close));
}

unsigned varlink_server_n_connections(VarlinkServer *s) {
        return s ? s->n_connections : 0;
}
