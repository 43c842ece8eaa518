/* SPDX-License-Identifier: MIT */
#pragma once

/* The unit and container of a process that /proc cannot tell, named from its cgroup id.
 *
 * BPF records each process's cgroup in the unified (v2) hierarchy as the kernel numbers it: the
 * inode number of the cgroup's directory there. trapstatd reads the unit from /proc/PID/cgroup
 * wherever it can; the id is for the processes it cannot: those gone before the tick read them,
 * and those of another pid namespace. A trapstatd in a container gets the host's pids from BPF,
 * so /proc/PID there is another process or none, while the container's own cgroups are still
 * its to see under its cgroup mount.
 *
 * CgroupUnits maps ids to units by walking that mount: a directory's unit is the innermost
 * component of its path ending in .service or .scope, as for /proc/PID/cgroup, and its container
 * what container_from_cgroup() makes of its path. The map is made
 * anew on a miss, at most once per rescan interval, and holds at most a bounded number of
 * cgroups (a larger tree is read up to the bound). Returns negative errno, never logs. */

#include <stdbool.h>
#include <stdint.h>

#include "container-util.h"

typedef struct CgroupUnits CgroupUnits;

#define CGROUP_UNITS_MAX_DEFAULT 100000U /* cgroups in the map: about 6 MB at most */
#define CGROUP_UNITS_RESCAN_USEC 1000000ULL

/* root: the directory where the unified hierarchy is mounted (see cgroup2_mount_find()).
 * max_cgroups: the bound on the map; rescan_usec: the least time between two walks. */
int cgroup_units_new(const char *root, uint32_t max_cgroups, uint64_t rescan_usec, CgroupUnits **ret);
CgroupUnits *cgroup_units_free(CgroupUnits *c);

/* The unit and the container of cgroup id: 0 and each malloc'd, NULL when that cgroup is in no
 * unit, in no container; -ENOENT when no such cgroup is (or was, at the last walk) under the root.
 * now_usec: any monotonic clock; a miss walks the tree again if the last walk is rescan_usec old. */
int cgroup_units_lookup(CgroupUnits *c, uint64_t id, uint64_t now_usec, char **ret_unit, Container **ret_container);

/* How many cgroups the last walk found, and how many walks there were. Only test-cgroup-util.c
 * reads them: the walk's bound and its rate limit, which are the CgroupUnits' private state. */
uint32_t cgroup_units_size(const CgroupUnits *c);
uint64_t cgroup_units_scans(const CgroupUnits *c);

/* The mount point of the first cgroup2 file system in a mountinfo text (the format of
 * /proc/self/mountinfo), unescaped, among those usable() accepts (by mount id and mount point;
 * NULL: any). -ENOENT when there is none (a cgroup v1-only system). */
int cgroup2_mount_parse(const char *mountinfo, bool (*usable)(uint64_t mount_id, const char *path), char **ret);
/* The same from proc_fd's self/mountinfo, of the mounts this process reaches by their mount
 * point (one may be covered by another): where it sees the unified hierarchy. */
int cgroup2_mount_find(int proc_fd, char **ret);
