/* SPDX-License-Identifier: MIT */
/* Which processes a varlink peer sees by its pid namespace (daemon/peer-scope.c): the scope as a
 * connection's label and back, the scope of a peer against trapstatd's own namespace, a process's
 * pid as the peer knows it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "peer-scope.h"

static void test_labels(void **state) {
        PeerScope s;

        /* 0, a server without the hook: everything. */
        assert_int_equal(peer_scope_decode(0).kind, PEER_SCOPE_ALL);
        assert_int_equal(peer_scope_encode((PeerScope) { .kind = PEER_SCOPE_ALL }), 0);
        s = peer_scope_decode(peer_scope_encode((PeerScope) { .kind = PEER_SCOPE_NS, .ns = 4026532175U, .level = 2 }));
        assert_int_equal(s.kind, PEER_SCOPE_NS);
        assert_int_equal(s.ns, 4026532175U);
        assert_int_equal(s.level, 2);
        assert_int_equal(peer_scope_decode(peer_scope_encode((PeerScope) { .kind = PEER_SCOPE_UNKNOWN })).kind,
                         PEER_SCOPE_UNKNOWN);
        /* What no encoding gives (a namespace at level 0) is not taken for one. */
        assert_int_equal(peer_scope_decode(4026532175U).kind, PEER_SCOPE_UNKNOWN);
}

static void test_from(void **state) {
        const CollectorPidNs init = { .level = 0, .ns = 4026531836U }, box = { .level = 1, .ns = 4026532175U },
                             nested = { .level = 2, .ns = 4026532300U }, other_box = { .level = 1, .ns = 4026532999U };
        PeerScope s;

        /* trapstatd in the initial namespace. */
        assert_int_equal(peer_scope_from(&init, &init).kind, PEER_SCOPE_ALL);
        s = peer_scope_from(&init, &box);
        assert_int_equal(s.kind, PEER_SCOPE_NS);
        assert_int_equal(s.ns, box.ns);
        assert_int_equal(s.level, 1);
        assert_int_equal(peer_scope_from(&init, &nested).ns, nested.ns);
        /* trapstatd in a container: its own namespace sees all, one below it its own, one beside
         * or above it (which could not be its peer) nothing. */
        assert_int_equal(peer_scope_from(&box, &box).kind, PEER_SCOPE_ALL);
        assert_int_equal(peer_scope_from(&box, &nested).kind, PEER_SCOPE_NS);
        assert_int_equal(peer_scope_from(&box, &other_box).kind, PEER_SCOPE_UNKNOWN);
        assert_int_equal(peer_scope_from(&box, &init).kind, PEER_SCOPE_UNKNOWN);
        /* Its own not known: only a peer in the initial namespace sees all. */
        assert_int_equal(peer_scope_from(NULL, &init).kind, PEER_SCOPE_ALL);
        assert_int_equal(peer_scope_from(NULL, &box).kind, PEER_SCOPE_NS);
}

static void test_pid(void **state) {
        /* Host pid 5000, 17 in a container, 1 in a namespace inside it. */
        ProcessInfo p = { .pid = 5000,
                          .n_pidns = 3,
                          .pidns = { { 4026531836U, 5000 }, { 4026532175U, 17 }, { 4026532300U, 1 } } };
        ProcessInfo host = { .pid = 42, .n_pidns = 1, .pidns = { { 4026531836U, 42 } } };
        uint32_t pid = 0;

        assert_true(peer_scope_pid((PeerScope) { .kind = PEER_SCOPE_ALL }, &p, &pid));
        assert_int_equal(pid, 5000);
        assert_true(peer_scope_pid((PeerScope) { .kind = PEER_SCOPE_NS, .ns = 4026532175U, .level = 1 }, &p, &pid));
        assert_int_equal(pid, 17);
        assert_true(peer_scope_pid((PeerScope) { .kind = PEER_SCOPE_NS, .ns = 4026532300U, .level = 2 }, &p, &pid));
        assert_int_equal(pid, 1);
        /* A host process is not in the container's namespace; an unknown scope sees nothing. */
        pid = 0;
        assert_false(peer_scope_pid((PeerScope) { .kind = PEER_SCOPE_NS, .ns = 4026532175U, .level = 1 }, &host, &pid));
        assert_false(peer_scope_pid((PeerScope) { .kind = PEER_SCOPE_UNKNOWN }, &p, &pid));
        assert_int_equal(pid, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_labels),
                cmocka_unit_test(test_from),
                cmocka_unit_test(test_pid),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
