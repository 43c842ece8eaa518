/* SPDX-License-Identifier: MIT */
/* Units by cgroup id: the unified hierarchy's mount point from mountinfo, and the map made by
 * walking a tree (a temporary directory tree stands in for the cgroup file system: there too a
 * directory's inode number is what names it). */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup-util.h"
#include "macro.h"

/* The chroot of a hybrid host with a cgroup2 of its own over /sys/fs/cgroup: the host's
 * unified mount (55) comes first and is covered. */
static const char hybrid_then_unified[] = "55 46 0:38 / /sys/fs/cgroup/unified rw shared:22 - cgroup2 cgroup rw\n"
                                          "90 22 0:38 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";

static bool not_mount_55(uint64_t mount_id, const char *path) {
        return mount_id != 55;
}

static void test_mount_parse(void **state) {
        char *path = NULL;

        /* A hybrid system: the v1 hierarchies first, the unified one below /sys/fs/cgroup. */
        const char *hybrid = "22 1 0:20 / /sys rw,nosuid shared:7 - sysfs sysfs rw\n"
                             "46 22 0:51 / /sys/fs/cgroup ro shared:13 - tmpfs tmpfs ro,mode=755\n"
                             "47 46 0:33 / /sys/fs/cgroup/devices ro shared:14 - cgroup cgroup rw,devices\n"
                             "55 46 0:38 / /sys/fs/cgroup/unified rw shared:22 master:3 - cgroup2 cgroup rw\n"
                             "56 46 0:37 / /sys/fs/cgroup/systemd rw shared:23 - cgroup cgroup rw,name=systemd\n";
        assert_int_equal(cgroup2_mount_parse(hybrid, NULL, &path), 0);
        assert_string_equal(path, "/sys/fs/cgroup/unified");
        free(path);

        /* Unified only, no optional fields, no trailing newline. */
        assert_int_equal(
                cgroup2_mount_parse("30 22 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate", NULL, &path), 0);
        assert_string_equal(path, "/sys/fs/cgroup");
        free(path);

        /* A mount point with a space and a backslash, escaped as the kernel does; a path holding
         * " - " cannot be mistaken for the separator, it is escaped too. */
        assert_int_equal(cgroup2_mount_parse("31 22 0:27 / /mnt/a\\040-\\040b\\134c rw shared:1 - cgroup2 none rw\n",
                                             NULL, &path),
                         0);
        assert_string_equal(path, "/mnt/a - b\\c");
        free(path);

        /* Only v1, or a cgroup2 name that is a source, not the type. */
        assert_int_equal(
                cgroup2_mount_parse("47 46 0:33 / /sys/fs/cgroup/cpu ro - cgroup cgroup rw,cpu\n", NULL, &path),
                -ENOENT);
        assert_int_equal(cgroup2_mount_parse("48 46 0:34 / /x rw - tmpfs cgroup2 rw\n", NULL, &path), -ENOENT);
        /* Malformed lines are skipped, not read past. */
        assert_int_equal(cgroup2_mount_parse("garbage\n1 2\n- cgroup2\n\n", NULL, &path), -ENOENT);
        assert_int_equal(cgroup2_mount_parse("", NULL, &path), -ENOENT);

        /* One covered by another: the first that usable() takes. */
        assert_int_equal(cgroup2_mount_parse(hybrid_then_unified, not_mount_55, &path), 0);
        assert_string_equal(path, "/sys/fs/cgroup");
        free(path);
        assert_int_equal(cgroup2_mount_parse(hybrid, not_mount_55, &path), -ENOENT);
}

typedef struct Tree {
        char root[64];
} Tree;

static uint64_t make_dir(const Tree *t, const char *rel) {
        char path[512];
        struct stat st;

        snprintf(path, sizeof(path), "%s/%s", t->root, rel);
        assert_int_equal(mkdir(path, 0755), 0);
        assert_int_equal(stat(path, &st), 0);
        return st.st_ino;
}

static void remove_tree(const Tree *t) {
        char cmd[128];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->root);
        assert_int_equal(system(cmd), 0);
}

/* The unit (NULL: none) and the container's runtime and id (NULL: none) of cgroup id. */
static void assert_place(CgroupUnits *c, uint64_t id, uint64_t now, const char *unit, const char *runtime,
                         const char *container_id) {
        _cleanup_free_ char *u = NULL;
        _cleanup_free_ Container *k = NULL;

        assert_int_equal(cgroup_units_lookup(c, id, now, &u, &k), 0);
        if (unit)
                assert_string_equal(u, unit);
        else
                assert_null(u);
        if (runtime) {
                assert_non_null(k);
                assert_string_equal(k->runtime, runtime);
                assert_string_equal(k->id, container_id);
        } else
                assert_null(k);
}

static void assert_unit(CgroupUnits *c, uint64_t id, uint64_t now, const char *expect) {
        assert_place(c, id, now, expect, NULL, NULL);
}

static void assert_lookup_fails(CgroupUnits *c, uint64_t id, uint64_t now, int expect) {
        char *unit = NULL;
        Container *k = NULL;

        assert_int_equal(cgroup_units_lookup(c, id, now, &unit, &k), expect);
        assert_null(unit);
        assert_null(k);
}

static void test_units(void **state) {
        Tree t = { .root = "/tmp/test-cgroup-util.XXXXXX" };
        CgroupUnits *c = NULL;
        struct stat st;
        uint64_t sys, svc, payload, scope, user, late, nested;

        assert_non_null(mkdtemp(t.root));
        assert_int_equal(stat(t.root, &st), 0);
        sys = make_dir(&t, "system.slice");
        svc = make_dir(&t, "system.slice/nginx.service");
        payload = make_dir(&t, "system.slice/nginx.service/payload");
        nested = make_dir(&t, "system.slice/nginx.service/payload/inner.scope");
        scope = make_dir(&t, "system.slice/run-u7.scope");
        user = make_dir(&t, "user.slice");

        assert_int_equal(cgroup_units_new(t.root, CGROUP_UNITS_MAX_DEFAULT, 1000, &c), 0);
        assert_int_equal(cgroup_units_scans(c), 0);
        /* The innermost unit of the path, as from /proc/PID/cgroup. */
        assert_unit(c, svc, 1, "nginx.service");
        assert_int_equal(cgroup_units_scans(c), 1);
        assert_int_equal(cgroup_units_size(c), 7);
        assert_unit(c, payload, 2, "nginx.service");
        assert_unit(c, nested, 3, "inner.scope");
        assert_unit(c, scope, 4, "run-u7.scope");
        /* In no unit: the root and the slices. */
        assert_unit(c, st.st_ino, 5, NULL);
        assert_unit(c, sys, 6, NULL);
        assert_unit(c, user, 7, NULL);
        /* Hits never walk again. */
        assert_int_equal(cgroup_units_scans(c), 1);

        /* A cgroup made after the walk is found by the next one, which a miss makes only once
         * the rescan interval has passed since the last. */
        late = make_dir(&t, "system.slice/late.service");
        assert_lookup_fails(c, late, 500, -ENOENT);
        assert_int_equal(cgroup_units_scans(c), 1);
        assert_unit(c, late, 1001, "late.service");
        assert_int_equal(cgroup_units_scans(c), 2);
        /* An id that is nowhere: one walk per interval, however many lookups. */
        for (uint64_t now = 1002; now < 2001; now += 7)
                assert_lookup_fails(c, UINT64_MAX - 1, now, -ENOENT);
        assert_int_equal(cgroup_units_scans(c), 2);
        assert_lookup_fails(c, UINT64_MAX - 1, 2001, -ENOENT);
        assert_int_equal(cgroup_units_scans(c), 3);

        /* A removed cgroup is gone from the map at the next walk. */
        {
                char path[512];

                snprintf(path, sizeof(path), "%s/system.slice/late.service", t.root);
                assert_int_equal(rmdir(path), 0);
        }
        assert_lookup_fails(c, UINT64_MAX - 1, 3001, -ENOENT);
        assert_lookup_fails(c, late, 3002, -ENOENT);
        assert_int_equal(cgroup_units_size(c), 7);
        c = cgroup_units_free(c);
        assert_null(c);
        assert_null(cgroup_units_free(NULL));

        /* The bound: a larger tree is read up to it. */
        assert_int_equal(cgroup_units_new(t.root, 3, 1000, &c), 0);
        assert_lookup_fails(c, UINT64_MAX - 1, 1, -ENOENT);
        assert_int_equal(cgroup_units_size(c), 3);
        c = cgroup_units_free(c);

        /* A root that is not there: every lookup fails, none crashes. */
        assert_int_equal(cgroup_units_new("/nonexistent/cgroup", 10, 1000, &c), 0);
        assert_lookup_fails(c, svc, 1, -ENOENT);
        c = cgroup_units_free(c);
        assert_int_equal(cgroup_units_new(NULL, 10, 1000, &c), -EINVAL);
        assert_int_equal(cgroup_units_new(t.root, 0, 1000, &c), -EINVAL);

        remove_tree(&t);
}

/* Containers by where their cgroups are: the outermost one of a path, and only at the places the
 * runtimes use (a user's own subtree names none but rootless ones, and those as the user's). */
static void test_containers(void **state) {
        Tree t = { .root = "/tmp/test-cgroup-util.XXXXXX" };
        const char *id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        uint64_t machine, payload, nginx, docker, fake, rootless, lxc;
        CgroupUnits *c = NULL;
        char rel[512];

        assert_non_null(mkdtemp(t.root));
        (void) make_dir(&t, "machine.slice");
        machine = make_dir(&t, "machine.slice/machine-web\\x2d1.scope");
        payload = make_dir(&t, "machine.slice/machine-web\\x2d1.scope/payload");
        (void) make_dir(&t, "machine.slice/machine-web\\x2d1.scope/payload/system.slice");
        nginx = make_dir(&t, "machine.slice/machine-web\\x2d1.scope/payload/system.slice/nginx.service");
        (void) make_dir(&t, "system.slice");
        snprintf(rel, sizeof(rel), "system.slice/docker-%s.scope", id);
        docker = make_dir(&t, rel);
        (void) make_dir(&t, "machine.slice/other");
        (void) make_dir(&t, "user.slice");
        (void) make_dir(&t, "user.slice/user-1000.slice");
        (void) make_dir(&t, "user.slice/user-1000.slice/user@1000.service");
        (void) make_dir(&t, "user.slice/user-1000.slice/user@1000.service/machine.slice");
        fake = make_dir(&t, "user.slice/user-1000.slice/user@1000.service/machine.slice/machine-web\\x2d1.scope");
        snprintf(rel, sizeof(rel), "user.slice/user-1000.slice/user@1000.service/libpod-%s.scope", id);
        rootless = make_dir(&t, rel);
        lxc = make_dir(&t, "lxc.payload.db");

        assert_int_equal(cgroup_units_new(t.root, CGROUP_UNITS_MAX_DEFAULT, 1000, &c), 0);
        assert_place(c, machine, 1, "machine-web\\x2d1.scope", "machined", "web-1");
        assert_place(c, payload, 1, "machine-web\\x2d1.scope", "machined", "web-1");
        assert_place(c, nginx, 1, "nginx.service", "machined", "web-1");
        snprintf(rel, sizeof(rel), "docker-%s.scope", id);
        assert_place(c, docker, 1, rel, "docker", id);
        assert_place(c, fake, 1, "machine-web\\x2d1.scope", NULL, NULL);
        {
                _cleanup_free_ char *u = NULL;
                _cleanup_free_ Container *k = NULL;

                assert_int_equal(cgroup_units_lookup(c, rootless, 1, &u, &k), 0);
                assert_non_null(k);
                assert_string_equal(k->runtime, "podman");
                assert_int_equal(k->user, 1000);
        }
        assert_place(c, lxc, 1, NULL, "lxc", "db");
        assert_int_equal(cgroup_units_scans(c), 1);
        c = cgroup_units_free(c);
        remove_tree(&t);
}

/* Nesting is walked 32 levels deep, no deeper. */
static void test_depth(void **state) {
        Tree t = { .root = "/tmp/test-cgroup-util.XXXXXX" };
        CgroupUnits *c = NULL;
        char rel[512] = "";
        uint64_t ids[34];

        assert_non_null(mkdtemp(t.root));
        for (int level = 1; level <= 33; level++) {
                char name[16];

                if (level == 1)
                        snprintf(name, sizeof(name), "l1.service");
                else
                        snprintf(name, sizeof(name), "/l%d", level);
                strcat(rel, name);
                ids[level] = make_dir(&t, rel);
        }
        assert_int_equal(cgroup_units_new(t.root, CGROUP_UNITS_MAX_DEFAULT, 1000, &c), 0);
        assert_unit(c, ids[1], 1, "l1.service");
        assert_unit(c, ids[32], 1, "l1.service");
        assert_lookup_fails(c, ids[33], 1, -ENOENT);
        assert_int_equal(cgroup_units_size(c), 33); /* the root and 32 levels */
        cgroup_units_free(c);
        remove_tree(&t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_mount_parse),
                cmocka_unit_test(test_units),
                cmocka_unit_test(test_depth),
                cmocka_unit_test(test_containers),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
