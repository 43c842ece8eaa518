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

/* Whether the process (by its pid) started by started_ns (ns since boot), so was running before the
 * connection was accepted: a pid reused after the peer exited is another's, started later. */
static bool started_by(const PeerScopes *s, pid_t pid, uint64_t started_ns) {
        long ticks = sysconf(_SC_CLK_TCK);
        ProcStat st;

        return ticks > 0 && proc_read_stat(s->proc_fd, (uint32_t) pid, &st) >= 0 &&
               st.start_ticks * (1000000000ULL / (uint64_t) ticks) <= started_ns;
}

/* Where BPF cannot read the namespace: NSpid tells one in our own (a single column). From the
 * pidfd's fdinfo, bound to the process; before 5.10 from /proc/PID/status by its pid, the pidfd
 * showing the process still running afterwards. */
static PeerScope scope_from_nspid(const PeerScopes *s, int pidfd, pid_t pid) {
        unsigned levels;
        int r;

        r = proc_read_pidfd_nspid_levels(s->proc_fd, pidfd, &levels);
        if (r == -ENODATA && (r = proc_read_nspid_levels(s->proc_fd, (uint32_t) pid, &levels)) >= 0 &&
            !pidfd_alive(pidfd))
                r = -ESRCH;
        return (PeerScope) { .kind = r >= 0 && levels == 1 ? PEER_SCOPE_ALL : PEER_SCOPE_UNKNOWN };
}

static PeerScope scope_of(const PeerScopes *s, int fd, const struct ucred *peer) {
        uint64_t accepted_ns = now_usec(CLOCK_BOOTTIME) * 1000 + 999;
        socklen_t len = sizeof(int);
        _cleanup_close_ int pidfd = -1;
        bool bound = true;
        CollectorPidNs ns;
        unsigned levels;
        int r;

        /* The kernel's pidfd of the peer as it connected; before 6.5 one opened by its pid,
         * which may have been reused since: the process found must have started before the
         * connection was accepted, and (where trapstatd's pids are the kernel's) have that pid. */
        if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0) {
                bound = false;
                if (peer->pid <= 0 || (pidfd = pidfd_open_pid(peer->pid)) < 0)
                        return (PeerScope) { .kind = PEER_SCOPE_UNKNOWN };
        }
        /* The kernel's pidfd in our own namespace (most clients): told by its fdinfo, without BPF
         * (a third of a connection's cost). */
        if (bound && proc_read_pidfd_nspid_levels(s->proc_fd, pidfd, &levels) >= 0 && levels == 1)
                return (PeerScope) { .kind = PEER_SCOPE_ALL };
        r = collector_pidns(s->collector, pidfd, &ns);
        if (r == -EOPNOTSUPP)
                return bound || started_by(s, peer->pid, accepted_ns) ? scope_from_nspid(s, pidfd, peer->pid)
                                                                     : (PeerScope) { .kind = PEER_SCOPE_UNKNOWN };
        if (r < 0 || ns.start_time > accepted_ns ||
            (s->own_known && s->own.level == 0 && ns.tgid != (uint32_t) peer->pid))
                return (PeerScope) { .kind = PEER_SCOPE_UNKNOWN };
        return peer_scope_from(s->own_known ? &s->own : NULL, &ns);
}

uint64_t peer_scope_identify(int fd, const struct ucred *peer, void *userdata) {
        return peer_scope_encode(scope_of(userdata, fd, peer));
}

