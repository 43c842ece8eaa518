/* SPDX-License-Identifier: MIT */
#include "delayacct.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>


/* Whether the word w is one of the space-separated words of text. */
static bool has_word(const char *text, const char *w) {
        size_t n = strlen(w);

        for (const char *p = text; (p = strstr(p, w)); p += n)
                if ((p == text || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || p[n] == '\0'))
                        return true;
        return false;
}

int delayacct_open(int proc_fd, DelayAcct *ret) {
        char cmdline[4096];
        ssize_t n;
        int fd;

        fd = openat(proc_fd, DELAYACCT_SYSCTL, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
                *ret = (DelayAcct) { .fd = fd };
                return 0;
        }
        if (errno != ENOENT)
                return -errno;
        fd = openat(proc_fd, "cmdline", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = read(fd, cmdline, sizeof(cmdline) - 1);
        close(fd);
        if (n < 0)
                return -errno;
        cmdline[n] = '\0';
        *ret = (DelayAcct) { .fd = -1, .boot_on = !has_word(cmdline, "nodelayacct") };
        return 0;
}

void delayacct_close(DelayAcct *d) {
        if (d->fd >= 0)
                close(d->fd);
        d->fd = -1;
}

int delayacct_state(const DelayAcct *d) {
        char buf[16];
        ssize_t n;

        if (d->fd < 0)
                return d->boot_on;
        /* A sysctl file reads from offset 0 each time: one call, no seek. */
        n = pread(d->fd, buf, sizeof(buf) - 1, 0);
        if (n < 0)
                return -errno;
        if (n == 0 || (buf[0] != '0' && buf[0] != '1') || (n > 1 && buf[1] != '\n'))
                return -EBADMSG;
        return buf[0] == '1';
}

int delayacct_enable(int proc_fd) {
        int fd = openat(proc_fd, DELAYACCT_SYSCTL, O_WRONLY | O_CLOEXEC), r = 0;

        if (fd < 0)
                return -errno;
        if (write(fd, "1\n", 2) != 2)
                r = errno ? -errno : -EIO;
        close(fd);
        return r;
}
