/* SPDX-License-Identifier: MIT */
#pragma once

/* The container a process is in, named from its cgroup path in the unified hierarchy.
 *
 * A cgroup's position is part of its identity: a local user can create cgroups named anything
 * inside the subtree systemd delegates to their own service manager (user@UID.service), so a name
 * counts only where its runtime puts it. Inside a user@UID.service only rootless podman and
 * docker are recognised, and they carry that UID; machined, LXC and Kubernetes are recognised
 * only at their system positions. A cgroup below a container's (its payload's own tree) is in that
 * container: the outermost match wins. Pure string logic: no file is read; never logs. */

#include <stdbool.h>
#include <stdint.h>

#define CONTAINER_RUNTIME_MAX 16 /* with the NUL: "machined", "podman", "docker", "containerd", "cri-o", "lxc" */
#define CONTAINER_ID_MAX 64      /* longest id kept, bytes */
#define CONTAINER_NAME_MAX 64
#define CONTAINER_POD_MAX 36 /* a pod UID, 8-4-4-4-12 (a static pod's: 32 hex digits) */

typedef struct Container {
        char runtime[CONTAINER_RUNTIME_MAX];
        char id[CONTAINER_ID_MAX + 1];     /* lowercase hex, or the name for machined and LXC */
        char name[CONTAINER_NAME_MAX + 1]; /* "" when the cgroup does not tell it */
        char pod[CONTAINER_POD_MAX + 1];   /* Kubernetes pod UID, "" otherwise */
        uint32_t user; /* the uid whose user@UID.service holds it (a rootless container); UINT32_MAX for a system one */
} Container;

/* The container a cgroup path of the unified hierarchy is in, as in /proc/PID/cgroup's "0::" line
 * (starting with '/'):
 *   machined    /machine.slice/machine-NAME.scope (NAME unit-name escaped: "\x2d" for '-')
 *   podman      /machine.slice/libpod-ID.scope, /libpod_parent/libpod-ID (its cgroupfs manager), or
 *               libpod-ID.scope anywhere in a user@UID.service
 *   docker      /system.slice/docker-ID.scope, /docker/ID, or docker-ID.scope anywhere in a
 *               user@UID.service (/user.slice/user-UID.slice/user@UID.service/...)
 *   containerd  /kubepods.slice/[kubepods-QOS.slice/]kubepods[-QOS]-podUID.slice/cri-containerd-ID.scope
 *   cri-o       the same with crio-ID.scope
 *   lxc         /lxc.payload.NAME
 * each optionally followed by sub-cgroups. IDs are 1 to 64 lowercase hex digits; names 1 to 64
 * bytes without control characters; a pod UID is 8-4-4-4-12 lowercase hex (the slice has '_'
 * for '-') or a static pod's 32 hex digits. A component that does not satisfy these is no
 * container. Linear in the path's length.
 * 0 and *ret filled; -ENODATA when the path is in no container; -EINVAL when it is not absolute. */
int container_from_cgroup(const char *path, Container *ret);

/* A container as a user names it (trapstat --container, the varlink container members): its name,
 * its id, or the first CONTAINER_PREFIX_MIN to CONTAINER_ID_MAX - 1 hex digits of a hex id (as
 * docker and podman print them). At most CONTAINER_ID_MAX bytes, not empty. */
#define CONTAINER_PREFIX_MIN 4
bool container_query_valid(const char *query);
/* Whether query may name a container by the start of its id: CONTAINER_PREFIX_MIN to
 * CONTAINER_ID_MAX - 1 lowercase hex digits. */
bool container_query_is_prefix(const char *query);
/* Whether query names c. The prefix of an id counts only for the runtimes whose ids are hex (not
 * machined's or LXC's, whose ids are names). */
bool container_matches(const Container *c, const char *query);
/* Whether the runtime's ids are hex digits, so that an id's prefix may name a container. */
bool container_runtime_has_hex_ids(const char *runtime);
