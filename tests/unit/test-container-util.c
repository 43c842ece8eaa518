/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "container-util.h"
#include "macro.h"

/* Container ids as docker, podman, containerd and CRI-O write them: 64 lowercase hex digits. */
#define ID1 "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"
#define ID2 "3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d"
#define ID1_UPPER "CA978112CA1BBDCAFAC231B39A23DC4DA786EFF8147C4E72B9807785AFEE48BB"
/* A pod UID, and as the kubelet's slice names spell it. */
#define POD "4f1e7c2a-9b3d-4e5f-8a6b-1c2d3e4f5a6b"
#define POD_SLICE "4f1e7c2a_9b3d_4e5f_8a6b_1c2d3e4f5a6b"

#define S8 "abcdefgh"
#define NAME64 S8 S8 S8 S8 S8 S8 S8 S8
#define A8 "AAAAAAAA"
#define E8 "\\x41\\x41\\x41\\x41\\x41\\x41\\x41\\x41" /* A8 unit-name escaped */

#define USER1000 "/user.slice/user-1000.slice/user@1000.service"
#define SYSTEM UINT32_MAX

typedef struct Case {
        const char *path;
        int r;
        const char *runtime, *id, *name, *pod;
        uint32_t user;
} Case;

#define NONE(p) { .path = (p), .r = -ENODATA }

static void check_case(const Case *c) {
        Container got, untouched;
        int r;

        /* Anything but what a success writes: a failure must leave it as it is. */
        memset(&got, 0x5a, sizeof(got));
        untouched = got;
        r = container_from_cgroup(c->path, &got);
        if (r != c->r)
                fail_msg("'%s': got %d, want %d", c->path, r, c->r);
        if (r < 0) {
                if (memcmp(&got, &untouched, sizeof(got)) != 0)
                        fail_msg("'%s': failed with %d but wrote the result", c->path, r);
                return;
        }
        if (strcmp(got.runtime, c->runtime) != 0 || strcmp(got.id, c->id) != 0 || strcmp(got.name, c->name) != 0 ||
            strcmp(got.pod, c->pod) != 0 || got.user != c->user)
                fail_msg("'%s': got %s/%s/'%s'/'%s'/%u, want %s/%s/'%s'/'%s'/%u", c->path, got.runtime, got.id,
                         got.name, got.pod, got.user, c->runtime, c->id, c->name, c->pod, c->user);
}

static void check_cases(const Case *cases, size_t n) {
        for (size_t i = 0; i < n; i++)
                check_case(&cases[i]);
}

static const Case machined_cases[] = {
        { "/machine.slice/machine-web.scope", 0, "machined", "web", "web", "", SYSTEM },
        { "/machine.slice/machine-web.scope/payload/system.slice/nginx.service", 0, "machined", "web", "web", "",
          SYSTEM },
        { "/machine.slice/machine-web.scope/supervisor", 0, "machined", "web", "web", "", SYSTEM },
        { "/machine.slice/machine-my\\x2dvm.scope", 0, "machined", "my-vm", "my-vm", "", SYSTEM },
        { "/machine.slice/machine-\\x2ehidden.scope", 0, "machined", ".hidden", ".hidden", "", SYSTEM },
        { "/machine.slice/machine-a\\x2Db.scope", 0, "machined", "a-b", "a-b", "", SYSTEM },
        { "/machine.slice/machine-caf\\xc3\\xa9.scope", 0, "machined", "caf\xc3\xa9", "caf\xc3\xa9", "", SYSTEM },
        { "/machine.slice/machine-\xff\xfe.scope", 0, "machined", "\xff\xfe", "\xff\xfe", "", SYSTEM },
        { "/machine.slice/machine-" NAME64 ".scope", 0, "machined", NAME64, NAME64, "", SYSTEM },
        /* 64 bytes from 256 escaped: the bound is on the name, not its spelling. */
        { "/machine.slice/machine-" E8 E8 E8 E8 E8 E8 E8 E8 ".scope", 0, "machined", A8 A8 A8 A8 A8 A8 A8 A8,
          A8 A8 A8 A8 A8 A8 A8 A8, "", SYSTEM },
        NONE("/machine.slice/machine-" NAME64 "x.scope"),
        NONE("/machine.slice/machine-" E8 E8 E8 E8 E8 E8 E8 E8 "\\x41.scope"),
        NONE("/machine.slice/machine-.scope"),
        /* Escapes giving NUL, control characters, '/'; escapes that are not two hex digits. */
        NONE("/machine.slice/machine-a\\x00b.scope"),
        NONE("/machine.slice/machine-a\\x0ab.scope"),
        NONE("/machine.slice/machine-\\x1b[31m.scope"),
        NONE("/machine.slice/machine-a\\x7f.scope"),
        NONE("/machine.slice/machine-..\\x2f..\\x2fetc.scope"),
        NONE("/machine.slice/machine-a\\x2.scope"),
        NONE("/machine.slice/machine-a\\xzz.scope"),
        NONE("/machine.slice/machine-a\\x.scope"),
        NONE("/machine.slice/machine-a\\y41.scope"),
        NONE("/machine.slice/machine-a\\.scope"),
        NONE("/machine.slice/machine-a\tb.scope"),
        NONE("/machine.slice/machine-a\x7f.scope"),
        /* Only directly under /machine.slice, and only a scope. */
        NONE("/machine.slice"),
        NONE("/machine.slice/"),
        NONE("/machine.slice/machine-web.service"),
        NONE("/machine.slice/machine-web.scopex"),
        NONE("/machine.slice/other.slice/machine-web.scope"),
        NONE("/machine.slice//machine-web.scope"),
        NONE("/system.slice/machine-web.scope"),
        NONE("/machine-web.scope"),
        NONE("/init.scope/machine.slice/machine-web.scope"),
};

static void test_machined(void **state) {
        check_cases(machined_cases, ELEMENTSOF(machined_cases));
}

static const Case podman_cases[] = {
        { "/machine.slice/libpod-" ID1 ".scope", 0, "podman", ID1, "", "", SYSTEM },
        { "/machine.slice/libpod-" ID1 ".scope/container", 0, "podman", ID1, "", "", SYSTEM },
        { "/machine.slice/libpod-" ID1 ".scope/container/system.slice/nginx.service", 0, "podman", ID1, "", "",
          SYSTEM },
        { USER1000 "/user.slice/libpod-" ID1 ".scope", 0, "podman", ID1, "", "", 1000 },
        { USER1000 "/user.slice/libpod-" ID1 ".scope/container", 0, "podman", ID1, "", "", 1000 },
        { USER1000 "/app.slice/app-podman.slice/libpod-" ID1 ".scope", 0, "podman", ID1, "", "", 1000 },
        { USER1000 "/libpod-" ID1 ".scope", 0, "podman", ID1, "", "", 1000 },
        { USER1000 "/user.slice/libpod-conmon-" ID2 ".scope/libpod-" ID1 ".scope", 0, "podman", ID1, "", "", 1000 },
        { "/machine.slice/libpod-abc.scope", 0, "podman", "abc", "", "", SYSTEM },
        /* Its cgroupfs manager, where no systemd runs: its monitor (conmon) beside the container. */
        { "/libpod_parent/libpod-" ID1, 0, "podman", ID1, "", "", SYSTEM },
        { "/libpod_parent/libpod-" ID1 "/ctr", 0, "podman", ID1, "", "", SYSTEM },
        NONE("/libpod_parent/conmon"),
        NONE("/libpod_parent/libpod-conmon-" ID1),
        NONE("/libpod_parent/libpod-" ID1 ".scope"),
        NONE("/libpod_parent"),
        /* The monitor is not in the container. */
        NONE("/machine.slice/libpod-conmon-" ID1 ".scope"),
        NONE(USER1000 "/user.slice/libpod-conmon-" ID1 ".scope"),
        NONE("/machine.slice/libpod-" ID1 "a.scope"),
        NONE("/machine.slice/libpod-" ID1_UPPER ".scope"),
        NONE("/machine.slice/libpod-" ID1 "/.scope"),
        NONE("/machine.slice/libpod-xyz.scope"),
        NONE("/machine.slice/libpod-.scope"),
        NONE("/machine.slice/libpod-" ID1 ".service"),
        NONE("/machine.slice/libpod_parent/libpod-" ID1),
        NONE("/machine.slice/podman.slice/libpod-" ID1 ".scope"),
        NONE("/system.slice/libpod-" ID1 ".scope"),
        NONE("/libpod-" ID1 ".scope"),
};

static void test_podman(void **state) {
        check_cases(podman_cases, ELEMENTSOF(podman_cases));
}

static const Case docker_cases[] = {
        { "/system.slice/docker-" ID1 ".scope", 0, "docker", ID1, "", "", SYSTEM },
        { "/system.slice/docker-" ID1 ".scope/init.scope", 0, "docker", ID1, "", "", SYSTEM },
        /* Docker in docker: the outer one. */
        { "/system.slice/docker-" ID1 ".scope/system.slice/docker-" ID2 ".scope", 0, "docker", ID1, "", "", SYSTEM },
        { "/docker/" ID1, 0, "docker", ID1, "", "", SYSTEM },
        { "/docker/" ID1 "/docker/" ID2, 0, "docker", ID1, "", "", SYSTEM },
        { "/docker/abc", 0, "docker", "abc", "", "", SYSTEM },
        { USER1000 "/user.slice/docker-" ID1 ".scope", 0, "docker", ID1, "", "", 1000 },
        { USER1000 "/docker-" ID1 ".scope/sub", 0, "docker", ID1, "", "", 1000 },
        NONE("/system.slice/docker-" ID1 "a.scope"),
        NONE("/system.slice/docker-" ID1_UPPER ".scope"),
        NONE("/system.slice/docker-" ID1 "-x.scope"),
        NONE("/system.slice/docker-.scope"),
        NONE("/system.slice/docker.service"),
        NONE("/system.slice/docker.socket"),
        NONE("/system.slice/docker-" ID1 ".service"),
        NONE("/system.slice/other.slice/docker-" ID1 ".scope"),
        NONE("/system.slice"),
        NONE("/docker"),
        NONE("/docker/"),
        NONE("/docker/" ID1 "a"),
        NONE("/docker/" ID1_UPPER),
        NONE("/docker/buildkit"),
        NONE("/docker/docker-" ID1 ".scope"),
        NONE("/docker-" ID1 ".scope"),
        NONE("/init.scope/docker/" ID1),
};

static void test_docker(void **state) {
        check_cases(docker_cases, ELEMENTSOF(docker_cases));
}

#define KUBE_BURSTABLE "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" POD_SLICE ".slice"
#define KUBE_BESTEFFORT "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" POD_SLICE ".slice"
#define KUBE_GUARANTEED "/kubepods.slice/kubepods-pod" POD_SLICE ".slice"

static const Case kubernetes_cases[] = {
        { KUBE_GUARANTEED "/cri-containerd-" ID1 ".scope", 0, "containerd", ID1, "", POD, SYSTEM },
        { KUBE_BURSTABLE "/cri-containerd-" ID1 ".scope", 0, "containerd", ID1, "", POD, SYSTEM },
        { KUBE_BESTEFFORT "/cri-containerd-" ID1 ".scope", 0, "containerd", ID1, "", POD, SYSTEM },
        { KUBE_BURSTABLE "/cri-containerd-" ID1 ".scope/sub/deeper", 0, "containerd", ID1, "", POD, SYSTEM },
        { KUBE_GUARANTEED "/crio-" ID2 ".scope", 0, "cri-o", ID2, "", POD, SYSTEM },
        { KUBE_BURSTABLE "/crio-" ID2 ".scope", 0, "cri-o", ID2, "", POD, SYSTEM },
        { KUBE_BESTEFFORT "/crio-" ID2 ".scope/container", 0, "cri-o", ID2, "", POD, SYSTEM },
        NONE(KUBE_BURSTABLE "/crio-conmon-" ID2 ".scope"),
        NONE(KUBE_GUARANTEED "/crio-conmon-" ID2 ".scope"),
        NONE(KUBE_BURSTABLE "/cri-containerd-" ID1 "a.scope"),
        NONE(KUBE_BURSTABLE "/cri-containerd-" ID1_UPPER ".scope"),
        NONE(KUBE_BURSTABLE "/crio-" ID1 "g.scope"),
        NONE(KUBE_BURSTABLE "/cri-containerd-.scope"),
        NONE(KUBE_BURSTABLE "/docker-" ID1 ".scope"),
        NONE(KUBE_BURSTABLE "/libpod-" ID1 ".scope"),
        NONE(KUBE_BURSTABLE),
        NONE(KUBE_BURSTABLE "/extra.slice/cri-containerd-" ID1 ".scope"),
        NONE("/kubepods.slice"),
        NONE("/kubepods.slice/kubepods-burstable.slice"),
        NONE("/kubepods.slice/cri-containerd-" ID1 ".scope"),
        /* The QOS class of the pod slice is that of the slice it is in. */
        NONE("/kubepods.slice/kubepods-burstable.slice/kubepods-besteffort-pod" POD_SLICE ".slice/crio-" ID1
             ".scope"),
        NONE("/kubepods.slice/kubepods-burstable.slice/kubepods-pod" POD_SLICE ".slice/crio-" ID1 ".scope"),
        NONE("/kubepods.slice/kubepods-burstable-pod" POD_SLICE ".slice/crio-" ID1 ".scope"),
        NONE("/kubepods.slice/kubepods-guaranteed.slice/kubepods-guaranteed-pod" POD_SLICE ".slice/crio-" ID1
             ".scope"),
        /* Pod UIDs: the 8-4-4-4-12 shape with '_', lowercase, or a static pod's 32 digits. */
        NONE("/kubepods.slice/kubepods-pod" POD ".slice/crio-" ID1 ".scope"),
        NONE("/kubepods.slice/kubepods-pod4F1E7C2A_9B3D_4E5F_8A6B_1C2D3E4F5A6B.slice/crio-" ID1 ".scope"),
        NONE("/kubepods.slice/kubepods-pod4f1e7c2a_9b3d_4e5f_8a6b_1c2d3e4f5a6.slice/crio-" ID1 ".scope"),
        NONE("/kubepods.slice/kubepods-pod4f1e7c2a_9b3d_4e5f_8a6b_1c2d3e4f5a6bb.slice/crio-" ID1 ".scope"),
        NONE("/kubepods.slice/kubepods-pod4f1e7c2a9_b3d_4e5f_8a6b_1c2d3e4f5a6b.slice/crio-" ID1 ".scope"),
        NONE("/kubepods.slice/kubepods-pod4f1e7c2z_9b3d_4e5f_8a6b_1c2d3e4f5a6b.slice/crio-" ID1 ".scope"),
        { "/kubepods.slice/kubepods-pod4f1e7c2a9b3d4e5f8a6b1c2d3e4f5a6b.slice/crio-" ID1 ".scope", 0, "cri-o", ID1, "",
          "4f1e7c2a9b3d4e5f8a6b1c2d3e4f5a6b", SYSTEM },
        NONE("/kubepods.slice/kubepods-pod4F1E7C2A9B3D4E5F8A6B1C2D3E4F5A6B.slice/crio-" ID1 ".scope"),
        NONE("/kubepods.slice/kubepods-pod4f1e7c2a9b3d4e5f8a6b1c2d3e4f5a6bb.slice/crio-" ID1 ".scope"),
        NONE("/kubepods.slice/kubepods-pod.slice/crio-" ID1 ".scope"),
        NONE("/system.slice/kubepods.slice/kubepods-pod" POD_SLICE ".slice/crio-" ID1 ".scope"),
};

static void test_kubernetes(void **state) {
        check_cases(kubernetes_cases, ELEMENTSOF(kubernetes_cases));
}

static const Case lxc_cases[] = {
        { "/lxc.payload.web", 0, "lxc", "web", "web", "", SYSTEM },
        { "/lxc.payload.web/init.scope", 0, "lxc", "web", "web", "", SYSTEM },
        { "/lxc.payload.web/system.slice/lxc.payload.inner", 0, "lxc", "web", "web", "", SYSTEM },
        { "/lxc.payload.my-ct.v2", 0, "lxc", "my-ct.v2", "my-ct.v2", "", SYSTEM },
        /* LXC does not escape: a backslash is part of the name. */
        { "/lxc.payload.a\\x2db", 0, "lxc", "a\\x2db", "a\\x2db", "", SYSTEM },
        { "/lxc.payload.\xc3\xa9t\xc3\xa9", 0, "lxc", "\xc3\xa9t\xc3\xa9", "\xc3\xa9t\xc3\xa9", "", SYSTEM },
        { "/lxc.payload." NAME64, 0, "lxc", NAME64, NAME64, "", SYSTEM },
        NONE("/lxc.payload." NAME64 "x"),
        NONE("/lxc.payload."),
        NONE("/lxc.payload"),
        NONE("/lxc.payload.a\nb"),
        NONE("/lxc.payload.a\x1b"),
        NONE("/lxc.payload.\x7f"),
        NONE("/lxc.monitor.web"),
        NONE("/lxc.pivot"),
        NONE("/system.slice/lxc.payload.web"),
        NONE("/lxc/web"),
};

static void test_lxc(void **state) {
        check_cases(lxc_cases, ELEMENTSOF(lxc_cases));
}

/* A user creates cgroups named anything in their own user@UID.service: only rootless podman and
 * docker count there, as that user's. */
static const Case user_cases[] = {
        NONE(USER1000 "/machine.slice/machine-web.scope"),
        NONE(USER1000 "/machine-web.scope"),
        NONE(USER1000 "/lxc.payload.web"),
        NONE(USER1000 "/app.slice/lxc.payload.web"),
        NONE(USER1000 "/kubepods.slice/kubepods-pod" POD_SLICE ".slice/cri-containerd-" ID1 ".scope"),
        NONE(USER1000 "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" POD_SLICE
                      ".slice/crio-" ID1 ".scope"),
        NONE(USER1000 "/docker/" ID1),
        NONE(USER1000 "/system.slice/machine-web.scope"),
        { USER1000 "/machine.slice/libpod-" ID1 ".scope", 0, "podman", ID1, "", "", 1000 },
        { USER1000 "/system.slice/docker-" ID1 ".scope", 0, "docker", ID1, "", "", 1000 },
        { USER1000 "/kubepods.slice/kubepods-pod" POD_SLICE ".slice/docker-" ID1 ".scope", 0, "docker", ID1, "",
          "", 1000 },
        /* The outermost that is a container; one that is not does not hide what is below it. */
        { USER1000 "/docker-" ID1 ".scope/libpod-" ID2 ".scope", 0, "docker", ID1, "", "", 1000 },
        { USER1000 "/docker-XYZ.scope/libpod-" ID2 ".scope", 0, "podman", ID2, "", "", 1000 },
        { USER1000 "/docker-" ID1 "0.scope/docker-" ID2 ".scope", 0, "docker", ID2, "", "", 1000 },
        { "/user.slice/user-0.slice/user@0.service/docker-" ID1 ".scope", 0, "docker", ID1, "", "", 0 },
        { "/user.slice/user-4294967294.slice/user@4294967294.service/docker-" ID1 ".scope", 0, "docker", ID1, "", "",
          4294967294U },
        NONE(USER1000 "/docker-" ID1_UPPER ".scope"),
        NONE(USER1000 "/docker-" ID1 "a.scope"),
        NONE(USER1000),
        NONE(USER1000 "/"),
        /* Only a service manager's tree, of a uid written the same twice. */
        NONE("/user.slice/user-1000.slice/user@1001.service/docker-" ID1 ".scope"),
        NONE("/user.slice/user-1001.slice/user@1000.service/docker-" ID1 ".scope"),
        NONE("/user.slice/user-01000.slice/user@01000.service/docker-" ID1 ".scope"),
        NONE("/user.slice/user-1000.slice/user@01000.service/docker-" ID1 ".scope"),
        NONE("/user.slice/user-+1000.slice/user@+1000.service/docker-" ID1 ".scope"),
        NONE("/user.slice/user-.slice/user@.service/docker-" ID1 ".scope"),
        NONE("/user.slice/user-abc.slice/user@abc.service/docker-" ID1 ".scope"),
        NONE("/user.slice/user-4294967295.slice/user@4294967295.service/docker-" ID1 ".scope"),
        NONE("/user.slice/user-4294967296.slice/user@4294967296.service/docker-" ID1 ".scope"),
        NONE("/user.slice/user-18446744073709551616.slice/user@18446744073709551616.service/docker-" ID1 ".scope"),
        NONE("/user.slice/user-1000.slice/session-2.scope/docker-" ID1 ".scope"),
        NONE("/user.slice/user-1000.slice/docker-" ID1 ".scope"),
        NONE("/user.slice/docker-" ID1 ".scope"),
        NONE("/user.slice/user-1000.slice/x/user@1000.service/docker-" ID1 ".scope"),
        NONE("/user.slice/user-1000.slice/user@1000.scope/docker-" ID1 ".scope"),
        NONE("/system.slice/user-1000.slice/user@1000.service/docker-" ID1 ".scope"),
        NONE("/system.slice/user@1000.service/docker-" ID1 ".scope"),
        NONE("/system.slice/x.service/user.slice/user-1000.slice/user@1000.service/docker-" ID1 ".scope"),
        /* A machine's own users are the machine's. */
        { "/machine.slice/machine-web.scope/user.slice/user-1000.slice/user@1000.service/docker-" ID1 ".scope", 0,
          "machined", "web", "web", "", SYSTEM },
};

static void test_user(void **state) {
        check_cases(user_cases, ELEMENTSOF(user_cases));
}

static const Case invalid_cases[] = {
        { NULL, -EINVAL, NULL, NULL, NULL, NULL, 0 },
        { "", -EINVAL, NULL, NULL, NULL, NULL, 0 },
        { "machine.slice/machine-web.scope", -EINVAL, NULL, NULL, NULL, NULL, 0 },
        { "docker/" ID1, -EINVAL, NULL, NULL, NULL, NULL, 0 },
        { " /docker/" ID1, -EINVAL, NULL, NULL, NULL, NULL, 0 },
        NONE("/"),
        NONE("//"),
        NONE("/init.scope"),
        NONE("/system.slice/nginx.service"),
        NONE("/user.slice/user-1000.slice/user@1000.service/app.slice/foot.service"),
        NONE("//docker/" ID1),
};

static void test_invalid(void **state) {
        check_cases(invalid_cases, ELEMENTSOF(invalid_cases));
}

/* prefix, then "/c" n times, then suffix: a malloc'd path. */
static char *long_path(const char *prefix, size_t n, const char *suffix) {
        size_t p = strlen(prefix), s = strlen(suffix);
        char *path = malloc(p + 2 * n + s + 1);

        assert_non_null(path);
        memcpy(path, prefix, p);
        for (size_t i = 0; i < n; i++)
                memcpy(path + p + 2 * i, "/c", 2);
        memcpy(path + p + 2 * n, suffix, s + 1);
        return path;
}

/* A path of 100000 components and one of a 1 MB component: read once, without recursion. */
static void test_long_paths(void **state) {
        const size_t n = 100000;
        _cleanup_free_ char *deep_user = long_path(USER1000, n, "/docker-" ID1 ".scope");
        _cleanup_free_ char *deep_user_none = long_path(USER1000, n, "/docker-" ID1_UPPER ".scope");
        _cleanup_free_ char *deep_machine = long_path("/machine.slice/machine-web.scope", n, "");
        _cleanup_free_ char *deep_none = long_path("", n, "");
        _cleanup_free_ char *wide = malloc(1024 * 1024 + 256);
        const char *shapes[][2] = {
                { "/machine.slice/machine-", ".scope" }, { "/lxc.payload.", "" },
                { "/system.slice/docker-", ".scope" },   { USER1000 "/docker-", ".scope" },
                { "/kubepods.slice/kubepods-pod", ".slice/crio-" ID1 ".scope" },
        };
        const Case cases[] = {
                { deep_user, 0, "docker", ID1, "", "", 1000 },
                { deep_machine, 0, "machined", "web", "web", "", SYSTEM },
                NONE(deep_user_none),
                NONE(deep_none),
        };

        check_cases(cases, ELEMENTSOF(cases));

        /* One component of 1 MB where a name, an id and a pod UID would be. */
        assert_non_null(wide);
        for (size_t i = 0; i < ELEMENTSOF(shapes); i++) {
                size_t p = strlen(shapes[i][0]);

                memcpy(wide, shapes[i][0], p);
                memset(wide + p, 'a', 1024 * 1024);
                strcpy(wide + p + 1024 * 1024, shapes[i][1]);
                check_case(&(const Case) NONE(wide));
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_machined), cmocka_unit_test(test_podman), cmocka_unit_test(test_docker),
                cmocka_unit_test(test_kubernetes), cmocka_unit_test(test_lxc), cmocka_unit_test(test_user),
                cmocka_unit_test(test_invalid), cmocka_unit_test(test_long_paths),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
