/* SPDX-License-Identifier: MIT */
#include "fuzz-client.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

void fuzz_fail(const char *fmt, ...) {
        int saved = errno; /* for a %m in fmt */
        va_list ap;

        va_start(ap, fmt);
        fprintf(stderr, "%s: ", fuzz_target);
        errno = saved;
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        abort();
}

bool fuzz_receive(int fd, struct evbuffer *replies, bool *eof) {
        bool progress = false;

        while (!*eof) {
                int n = evbuffer_read(replies, fd, 64 * 1024);

                if (n > 0) {
                        progress = true;
                        continue;
                }
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        break;
                if (n < 0 && errno != ECONNRESET)
                        fuzz_fail("recv() failed: %s", strerror(errno));
                *eof = true;
                progress = true;
        }
        return progress;
}

void fuzz_send(int fd, const uint8_t *data, size_t size, const bool *eof, FuzzServeFn serve, void *userdata) {
        uint64_t last = now_usec(CLOCK_MONOTONIC);

        for (size_t written = 0; written < size && !*eof;) {
                ssize_t n = send(fd, data + written, MIN(size - written, FUZZ_WRITE_PIECE), MSG_NOSIGNAL);
                bool progress = n > 0;

                if (n > 0)
                        written += (size_t) n;
                else if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
                        return;
                else if (n < 0 && errno != EAGAIN && errno != EINTR)
                        fuzz_fail("send() failed: %s", strerror(errno));
                progress |= serve(userdata);
                if (progress)
                        last = now_usec(CLOCK_MONOTONIC);
                else if (now_usec(CLOCK_MONOTONIC) - last > FUZZ_HANG_USEC)
                        fuzz_fail("the server stopped reading (%zu of %zu bytes written)", written, size);
        }
}

void fuzz_finish(int fd, VarlinkServer *server, const bool *eof, FuzzServeFn serve, void *userdata) {
        uint64_t last = now_usec(CLOCK_MONOTONIC);

        if (shutdown(fd, SHUT_WR) < 0 && errno != ENOTCONN)
                fuzz_fail("shutdown() failed: %s", strerror(errno));
        while (!*eof || varlink_server_n_connections(server) > 0) {
                if (serve(userdata))
                        last = now_usec(CLOCK_MONOTONIC);
                else if (now_usec(CLOCK_MONOTONIC) - last > FUZZ_HANG_USEC)
                        fuzz_fail("the server did not close a half-closed, drained connection");
        }
}
