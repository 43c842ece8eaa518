/* SPDX-License-Identifier: MIT */
/* Finding a varlink peer's pid namespace when it connects (peer-scope.h): apart from the pure
 * scope logic, as it needs the collector's BPF and the peer's process. */
#include "peer-scope.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "macro.h"
#include "proc-util.h"
#include "time-util.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5; the same number on every architecture */
#endif

static int pidfd_open_pid(pid_t pid) {
        return (int) syscall(SYS_pidfd_open, pid, 0);
}

void peer_scopes_init(PeerScopes *s, Collector *collector, int proc_fd) {
        int pidfd = pidfd_open_pid(getpid());

        *s = (PeerScopes) { .collector = collector, .proc_fd = proc_fd };
        s->own_known = pidfd >= 0 && collector_pidns(collector, pidfd, &s->own) >= 0;
        if (pidfd >= 0)
                close(pidfd);
}

/* Whether the process of pidfd is still running: a pidfd polls readable once it exits. */
static bool pidfd_alive(int pidfd) {
        struct pollfd p = { .fd = pidfd, .events = POLLIN };

        return poll(&p, 1, 0) == 0;
}

/* Without BPF's reading: NSpid of the peer's pid tells whether it is in our namespace. Read by the
 * pid, so the pidfd must show the process still running afterwards: the pid was not reused. */
static PeerScope scope_from_proc(const PeerScopes *s, int pidfd, pid_t pid) {
        unsigned levels;

        if (proc_read_nspid_levels(s->proc_fd, (uint32_t) pid, &levels) < 0 || !pidfd_alive(pidfd))
                return (PeerScope) { .kind = PEER_SCOPE_UNKNOWN };
        return (PeerScope) { .kind = levels == 1 ? PEER_SCOPE_ALL : PEER_SCOPE_UNKNOWN };
}

static PeerScope scope_of(const PeerScopes *s, int fd, const struct ucred *peer) {
        uint64_t accepted_ns = now_usec(CLOCK_BOOTTIME) * 1000 + 999;
        socklen_t len = sizeof(int);
        _cleanup_close_ int pidfd = -1;
        CollectorPidNs ns;
        int r;

        /* The kernel's pidfd of the peer as it connected; before 6.5 one opened by its pid,
         * which may have been reused since: the process found must have started before the
         * connection was accepted, and (where trapstatd's pids are the kernel's) have that pid. */
        if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0) {
                pidfd = -1;
                if (peer->pid <= 0 || (pidfd = pidfd_open_pid(peer->pid)) < 0)
                        return (PeerScope) { .kind = PEER_SCOPE_UNKNOWN };
        }
        r = collector_pidns(s->collector, pidfd, &ns);
        if (r == -EOPNOTSUPP)
                return scope_from_proc(s, pidfd, peer->pid);
        if (r < 0 || ns.start_time > accepted_ns || (s->own_known && s->own.level == 0 && ns.tgid != (uint32_t) peer->pid))
                return (PeerScope) { .kind = PEER_SCOPE_UNKNOWN };
        return peer_scope_from(s->own_known ? &s->own : NULL, &ns);
}

uint64_t peer_scope_identify(int fd, const struct ucred *peer, void *userdata) {
        return peer_scope_encode(scope_of(userdata, fd, peer));
}

