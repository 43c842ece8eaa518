/* SPDX-License-Identifier: MIT */
#pragma once

/* Which processes a varlink peer sees, by the pid namespace it is in. A client connected from a
 * pid namespace below trapstatd's (a container given the socket) sees only the processes of that
 * namespace and of those below it, by their pids there, whatever its uid: uid 0 in a container
 * that shares the host's user namespace is not the host's root for this. The uid rules apply on
 * top (a user other than root sees their own processes only).
 *
 * The scope is found once per connection, when it is accepted: the peer's pidfd (SO_PEERPIDFD,
 * Linux 6.5; before, pidfd_open() of SO_PEERCRED's pid, checked to have started before the
 * connection was accepted), and the namespace of that process read by BPF (task-reads.bpf.o,
 * Linux 6.2). Where BPF cannot read it, /proc/PID/status's NSpid tells one in trapstatd's own
 * namespace (a single column) from one in another; the namespace of the other cannot be told,
 * and such a peer is refused every call (io.trapstat.NamespaceUnknown), as is one whose pidfd
 * cannot be had. */

#include <stdbool.h>
#include <stdint.h>

#include "collector.h"

struct ucred;

typedef enum PeerScopeKind {
        PEER_SCOPE_ALL,     /* trapstatd's own pid namespace: every process (as the uid allows) */
        PEER_SCOPE_NS,      /* a namespace below it: that namespace's processes, by their pids there */
        PEER_SCOPE_UNKNOWN, /* not known: nothing */
} PeerScopeKind;

typedef struct PeerScope {
        PeerScopeKind kind;
        uint32_t ns;    /* PEER_SCOPE_NS: the namespace's inode number */
        uint32_t level; /* PEER_SCOPE_NS: its level, 1 or more */
} PeerScope;

/* As a varlink connection's peer label (VarlinkServerConfig.peer_label), and back. Label 0 (a
 * server without the hook) is PEER_SCOPE_ALL. */
uint64_t peer_scope_encode(PeerScope s);
PeerScope peer_scope_decode(uint64_t label);

/* The scope of a peer in namespace peer, for a trapstatd in own (NULL: not known; then a peer in
 * the initial namespace sees everything). Pure. */
PeerScope peer_scope_from(const CollectorPidNs *own, const CollectorPidNs *peer);

/* peer-identify.c: what peer_scope_identify() needs: the collector (BPF) and trapstatd's own namespace. */
typedef struct PeerScopes {
        Collector *collector;
        int proc_fd; /* /proc */
        CollectorPidNs own;
        bool own_known;
} PeerScopes;

/* Reads trapstatd's own namespace into s (own_known false where BPF cannot). */
void peer_scopes_init(PeerScopes *s, Collector *collector, int proc_fd);

/* The varlink peer_label hook (userdata: PeerScopes): the encoded scope of the peer of the
 * connection fd. Never fails: what cannot be told is PEER_SCOPE_UNKNOWN. */
uint64_t peer_scope_identify(int fd, const struct ucred *peer, void *userdata);

/* Whether a process that is in the namespaces p lists (ProcessInfo.pidns) is in scope, and its pid
 * there (*ret_pid: its pid as the peer knows it). */
bool peer_scope_pid(PeerScope scope, const ProcessInfo *p, uint32_t *ret_pid);
