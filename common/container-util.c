/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "container-util.h"

/* One component of a path: not NUL-terminated, as the path is not copied. */
typedef struct Span {
        const char *s;
        size_t n;
} Span;

/* The component after *pos, which is at a '/' or the path's end; advances *pos past it. Each byte
 * of the path is looked at once, which keeps a path of a million components linear. */
static bool next_component(const char **pos, Span *ret) {
        const char *p = *pos;

        if (*p != '/')
                return false;
        p++;
        *ret = (Span) { .s = p, .n = strcspn(p, "/") };
        *pos = p + ret->n;
        return true;
}

static bool span_eq(Span c, const char *s) {
        return c.n == strlen(s) && memcmp(c.s, s, c.n) == 0;
}

static bool span_startswith(Span c, const char *prefix) {
        size_t n = strlen(prefix);

        return c.n >= n && memcmp(c.s, prefix, n) == 0;
}

/* PREFIX<middle>SUFFIX: the middle, possibly empty, in *ret. */
static bool span_strip(Span c, const char *prefix, const char *suffix, Span *ret) {
        size_t p = strlen(prefix), s = strlen(suffix);

        if (c.n < p + s || memcmp(c.s, prefix, p) != 0 || memcmp(c.s + c.n - s, suffix, s) != 0)
                return false;
        *ret = (Span) { .s = c.s + p, .n = c.n - p - s };
        return true;
}

static bool is_lower_hex(char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static int unhex(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* Docker, podman, containerd and CRI-O ids: 64 lowercase hex digits in practice. Fewer are
 * accepted (nothing is gained by refusing them), anything else is not an id these write. */
static bool copy_id(Span id, char ret[static CONTAINER_ID_MAX + 1]) {
        if (id.n == 0 || id.n > CONTAINER_ID_MAX)
                return false;
        for (size_t i = 0; i < id.n; i++)
                if (!is_lower_hex(id.s[i]))
                        return false;
        memcpy(ret, id.s, id.n);
        ret[id.n] = '\0';
        return true;
}

/* A machine or LXC name, unit-name unescaped when escaped (only "\xNN" is an escape there, as
 * systemd's unit_name_unescape() has it). The result is shown to people and stored: no control
 * characters, no '/', 1 to 64 bytes; bytes from 0x80 on are kept as they are. */
static bool copy_name(Span raw, bool escaped, char ret[static CONTAINER_NAME_MAX + 1]) {
        size_t n = 0;

        for (size_t i = 0; i < raw.n; i++) {
                unsigned char c = (unsigned char) raw.s[i];

                if (escaped && c == '\\') {
                        int hi, lo;

                        if (raw.n - i < 4 || raw.s[i + 1] != 'x' || (hi = unhex(raw.s[i + 2])) < 0 ||
                            (lo = unhex(raw.s[i + 3])) < 0)
                                return false;
                        c = (unsigned char) (hi << 4 | lo);
                        i += 3;
                }
                if (c < 0x20 || c == 0x7f || c == '/' || n == CONTAINER_NAME_MAX)
                        return false;
                ret[n++] = (char) c;
        }
        ret[n] = '\0';
        return n > 0;
}

/* A pod UID as the kubelet writes it into a slice name: 8-4-4-4-12 lowercase hex with '_' for
 * each '-', since '-' in a slice name is systemd's nesting, given back with '-'; or a static pod's
 * (a manifest file's: etcd, kube-apiserver), 32 hex digits, the hash of its manifest. */
static bool copy_pod_uid(Span s, char ret[static CONTAINER_POD_MAX + 1]) {
        if (s.n == 32) {
                for (size_t i = 0; i < s.n; i++)
                        if (!is_lower_hex(s.s[i]))
                                return false;
                memcpy(ret, s.s, s.n);
                ret[s.n] = '\0';
                return true;
        }
        if (s.n != CONTAINER_POD_MAX)
                return false;
        for (size_t i = 0; i < s.n; i++) {
                bool dash = i == 8 || i == 13 || i == 18 || i == 23;

                if (dash ? s.s[i] != '_' : !is_lower_hex(s.s[i]))
                        return false;
                ret[i] = dash ? '-' : s.s[i];
        }
        ret[s.n] = '\0';
        return true;
}

/* A uid as systemd writes it into user-UID.slice: decimal without leading zeros (so that the
 * two places it appears compare as text), below UINT32_MAX, which is no uid ((uid_t) -1). */
static bool parse_uid(Span s, uint32_t *ret) {
        uint64_t v = 0;

        if (s.n == 0 || s.n > 10 || (s.s[0] == '0' && s.n > 1))
                return false;
        for (size_t i = 0; i < s.n; i++) {
                if (s.s[i] < '0' || s.s[i] > '9')
                        return false;
                v = v * 10 + (uint64_t) (s.s[i] - '0');
        }
        if (v >= UINT32_MAX)
                return false;
        *ret = (uint32_t) v;
        return true;
}

static bool set_runtime_id(Container *c, const char *runtime, Span id) {
        if (!copy_id(id, c->id))
                return false;
        strcpy(c->runtime, runtime);
        return true;
}

/* Directly under /machine.slice: machined's machines and rootful podman's containers. */
static bool match_machine_slice(Span c, Container *ret) {
        Span middle;

        if (span_startswith(c, "libpod-conmon-")) /* podman's monitor, outside the container */
                return false;
        if (span_strip(c, "libpod-", ".scope", &middle))
                return set_runtime_id(ret, "podman", middle);
        if (!span_strip(c, "machine-", ".scope", &middle) || !copy_name(middle, true, ret->name))
                return false;
        strcpy(ret->runtime, "machined");
        strcpy(ret->id, ret->name);
        return true;
}

/* /kubepods.slice/[kubepods-QOS.slice/]kubepods[-QOS]-podUID.slice/RUNTIME-ID.scope, the kubelet's
 * systemd cgroup driver; *pos is after /kubepods.slice. Guaranteed pods have no QOS slice. */
static bool match_kubepods(const char **pos, Container *ret) {
        const char *pod_prefix = "kubepods-pod";
        bool qos = true;
        Span c, middle;

        if (!next_component(pos, &c))
                return false;
        if (span_eq(c, "kubepods-burstable.slice"))
                pod_prefix = "kubepods-burstable-pod";
        else if (span_eq(c, "kubepods-besteffort.slice"))
                pod_prefix = "kubepods-besteffort-pod";
        else
                qos = false;
        if (qos && !next_component(pos, &c))
                return false;
        if (!span_strip(c, pod_prefix, ".slice", &middle) || !copy_pod_uid(middle, ret->pod))
                return false;

        if (!next_component(pos, &c))
                return false;
        if (span_strip(c, "cri-containerd-", ".scope", &middle))
                return set_runtime_id(ret, "containerd", middle);
        if (span_startswith(c, "crio-conmon-")) /* CRI-O's monitor, outside the container */
                return false;
        if (span_strip(c, "crio-", ".scope", &middle))
                return set_runtime_id(ret, "cri-o", middle);
        return false;
}

/* /user.slice/user-UID.slice/user@UID.service/...: the user's own delegated tree, where only
 * rootless podman and docker are believed, at any depth (they run under whatever unit the user
 * started them from). *pos is after /user.slice. */
static bool match_user(const char **pos, Container *ret) {
        Span c, slice_uid, service_uid, middle;
        uint32_t uid;

        if (!next_component(pos, &c) || !span_strip(c, "user-", ".slice", &slice_uid) || !parse_uid(slice_uid, &uid))
                return false;
        /* The same uid, as the same text: parse_uid() takes only one spelling of each. */
        if (!next_component(pos, &c) || !span_strip(c, "user@", ".service", &service_uid) ||
            service_uid.n != slice_uid.n || memcmp(service_uid.s, slice_uid.s, slice_uid.n) != 0)
                return false;

        while (next_component(pos, &c)) {
                bool found = false;

                if (span_startswith(c, "libpod-conmon-"))
                        continue;
                if (span_strip(c, "libpod-", ".scope", &middle))
                        found = set_runtime_id(ret, "podman", middle);
                else if (span_strip(c, "docker-", ".scope", &middle))
                        found = set_runtime_id(ret, "docker", middle);
                if (found) {
                        ret->user = uid;
                        return true;
                }
        }
        return false;
}

int container_from_cgroup(const char *path, Container *ret) {
        Container c = { .user = UINT32_MAX };
        const char *pos = path;
        Span top, second, middle;
        bool found;

        if (!path || path[0] != '/')
                return -EINVAL;
        if (!next_component(&pos, &top))
                return -ENODATA;

        /* Each runtime is recognised by the top-level cgroup it is below: nothing else is looked at
         * for the others, and nothing below the container's own component. */
        if (span_eq(top, "machine.slice"))
                found = next_component(&pos, &second) && match_machine_slice(second, &c);
        else if (span_eq(top, "system.slice"))
                found = next_component(&pos, &second) && span_strip(second, "docker-", ".scope", &middle) &&
                        set_runtime_id(&c, "docker", middle);
        else if (span_eq(top, "docker")) /* docker's cgroupfs driver */
                found = next_component(&pos, &second) && set_runtime_id(&c, "docker", second);
        else if (span_eq(top, "libpod_parent")) /* podman's cgroupfs manager (no systemd) */
                found = next_component(&pos, &second) && span_strip(second, "libpod-", "", &middle) &&
                        set_runtime_id(&c, "podman", middle);
        else if (span_eq(top, "kubepods.slice"))
                found = match_kubepods(&pos, &c);
        else if (span_eq(top, "user.slice"))
                found = match_user(&pos, &c);
        else if (span_strip(top, "lxc.payload.", "", &middle) && copy_name(middle, false, c.name)) {
                /* LXC names its cgroups after the container as it is, without escaping. */
                strcpy(c.runtime, "lxc");
                strcpy(c.id, c.name);
                found = true;
        } else
                found = false;

        if (!found)
                return -ENODATA;
        *ret = c;
        return 0;
}

bool container_query_valid(const char *query) {
        size_t n = query ? strnlen(query, CONTAINER_ID_MAX + 1) : 0;

        return n > 0 && n <= CONTAINER_ID_MAX;
}

bool container_query_is_prefix(const char *query) {
        size_t n = strnlen(query, CONTAINER_ID_MAX);

        if (n < CONTAINER_PREFIX_MIN || n >= CONTAINER_ID_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!is_lower_hex(query[i]))
                        return false;
        return true;
}

bool container_runtime_has_hex_ids(const char *runtime) {
        return strcmp(runtime, "machined") != 0 && strcmp(runtime, "lxc") != 0;
}

bool container_matches(const Container *c, const char *query) {
        if (!c)
                return false;
        if (strcmp(c->id, query) == 0 || (c->name[0] && strcmp(c->name, query) == 0))
                return true;
        return container_runtime_has_hex_ids(c->runtime) && container_query_is_prefix(query) &&
               strncmp(c->id, query, strlen(query)) == 0;
}
