/* SPDX-License-Identifier: MIT */
#include "peer-scope.h"

#define PEER_SCOPE_UNKNOWN_LABEL UINT64_MAX

uint64_t peer_scope_encode(PeerScope s) {
        switch (s.kind) {
        case PEER_SCOPE_ALL:
                return 0;
        case PEER_SCOPE_NS:
                return (uint64_t) s.level << 32 | s.ns;
        default:
                return PEER_SCOPE_UNKNOWN_LABEL;
        }
}

PeerScope peer_scope_decode(uint64_t label) {
        if (label == 0)
                return (PeerScope) { .kind = PEER_SCOPE_ALL };
        if (label == PEER_SCOPE_UNKNOWN_LABEL || (label >> 32) == 0)
                return (PeerScope) { .kind = PEER_SCOPE_UNKNOWN };
        return (PeerScope) { .kind = PEER_SCOPE_NS, .ns = (uint32_t) label, .level = (uint32_t) (label >> 32) };
}

PeerScope peer_scope_from(const CollectorPidNs *own, const CollectorPidNs *peer) {
        uint32_t own_level = own ? own->level : 0;

        /* A peer can reach trapstatd's socket only from its namespace or one below (one above
         * shows no pid to SO_PEERCRED); at its level or above, only its own namespace is ours. */
        if (peer->level <= own_level)
                return (PeerScope) { .kind = (!own || peer->ns == own->ns) ? PEER_SCOPE_ALL : PEER_SCOPE_UNKNOWN };
        return (PeerScope) { .kind = PEER_SCOPE_NS, .ns = peer->ns, .level = peer->level };
}

bool peer_scope_pid(PeerScope scope, const ProcessInfo *p, uint32_t *ret_pid) {
        if (scope.kind == PEER_SCOPE_ALL) {
                *ret_pid = p->pid;
                return true;
        }
        return scope.kind == PEER_SCOPE_NS && process_info_pid_in(p, scope.ns, ret_pid);
}
