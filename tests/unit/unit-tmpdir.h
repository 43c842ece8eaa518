/* SPDX-License-Identifier: MIT */
#pragma once

/* A temporary directory for the tests of one unit-test program: made before its first test and
 * removed, with everything in it, after its last (cmocka's group setup and teardown). After
 * cmocka.h:
 *     DEFINE_TEST_TMPDIR("test-store");
 *     ... snprintf(path, sizeof(path), "%s/x.db", tmpdir) ...
 *     return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown); */

#include <stdio.h>
#include <stdlib.h>

#define DEFINE_TEST_TMPDIR(name)                                                                   \
        static char tmpdir[] = "/tmp/" name "-XXXXXX";                                             \
        static int tmpdir_setup(void **state) {                                                    \
                (void) state;                                                                      \
                return mkdtemp(tmpdir) ? 0 : -1;                                                   \
        }                                                                                          \
        static int tmpdir_teardown(void **state) {                                                 \
                char cmd[300];                                                                     \
                (void) state;                                                                      \
                snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);                                 \
                return system(cmd);                                                                \
        }
