/* SPDX-License-Identifier: MIT */
#include "cgroup-util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array-util.h"
#include "macro.h"
#include "proc-util.h"

/* Nesting deeper than this is not walked: systemd's trees are a few levels deep, and the bound
 * keeps the walk's fds and stack small whatever a delegated subtree holds. */
#define CGROUP_MAX_DEPTH 32

/* A path in the tree at most this long is named: CGROUP_MAX_DEPTH components of NAME_MAX bytes. */
#define CGROUP_PATH_MAX (CGROUP_MAX_DEPTH * 256)

typedef struct CgroupEntry {
        uint64_t id;
        const char *unit;           /* points into units[], NULL when in no unit */
        const Container *container; /* points into containers[], NULL when in none */
} CgroupEntry;

struct CgroupUnits {
        char *root;
        uint32_t max_cgroups;
        uint64_t rescan_usec;
        uint64_t last_scan_usec;
        bool scanned;
        uint64_t scans;

        CgroupEntry *entries; /* sorted by id after a walk */
        size_t n_entries, entries_capacity;
        char **units; /* each unit's name once per walk */
        size_t n_units, units_capacity;
        Container **containers; /* each container once per walk */
        size_t n_containers, containers_capacity;
        char path[CGROUP_PATH_MAX + 1]; /* the walk's: the cgroup's path below the root */
};

static void entries_clear(CgroupUnits *c) {
        for (size_t i = 0; i < c->n_units; i++)
                free(c->units[i]);
        for (size_t i = 0; i < c->n_containers; i++)
                free(c->containers[i]);
        c->n_units = 0;
        c->n_containers = 0;
        c->n_entries = 0;
}

int cgroup_units_new(const char *root, uint32_t max_cgroups, uint64_t rescan_usec, CgroupUnits **ret) {
        CgroupUnits *c;

        if (!root || max_cgroups == 0)
                return -EINVAL;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->root = strdup(root);
        if (!c->root) {
                free(c);
                return -ENOMEM;
        }
        c->max_cgroups = max_cgroups;
        c->rescan_usec = rescan_usec;
        *ret = c;
        return 0;
}

CgroupUnits *cgroup_units_free(CgroupUnits *c) {
        if (!c)
                return NULL;
        entries_clear(c);
        free(c->entries);
        free(c->units);
        free(c->containers);
        free(c->root);
        free(c);
        return NULL;
}

static int entry_add(CgroupUnits *c, uint64_t id, const char *unit, const Container *container) {
        CgroupEntry e = { .id = id, .unit = unit, .container = container };

        if (c->n_entries >= c->max_cgroups)
                return -E2BIG;
        return array_append((void **) &c->entries, &c->n_entries, &c->entries_capacity, sizeof(e), &e);
}

/* Adds a copy of v (size bytes) to the list *items of *n: NULL when out of memory. */
static void *keep(void ***items, size_t *n, size_t *capacity, const void *v, size_t size) {
        void *copy = malloc(size);

        if (!copy)
                return NULL;
        memcpy(copy, v, size);
        if (array_append((void **) items, n, capacity, sizeof(copy), &copy) < 0) {
                free(copy);
                return NULL;
        }
        return copy;
}

/* What a child cgroup named name (len bytes) below the walk's path is in: the innermost unit and
 * the outermost container. c->path is the child's path while this runs. */
static int child_place(CgroupUnits *c, const char *name, size_t len, const char **unit, const Container **container) {
        Container found;

        if (proc_cgroup_name_is_unit(name, len) &&
            !(*unit = keep((void ***) &c->units, &c->n_units, &c->units_capacity, name, len + 1)))
                return -ENOMEM;
        if (!*container && container_from_cgroup(c->path, &found) >= 0 &&
            !(*container = keep((void ***) &c->containers, &c->n_containers, &c->containers_capacity, &found,
                                sizeof(found))))
                return -ENOMEM;
        return 0;
}

/* The cgroups below the directory dir_fd (taken) at c->path (path_len bytes), which is in unit
 * and container. */
static int walk(CgroupUnits *c, int dir_fd, size_t path_len, const char *unit, const Container *container,
                unsigned depth) {
        DIR *d = fdopendir(dir_fd);
        struct dirent *de;
        int r = 0;

        if (!d) {
                r = -errno;
                close(dir_fd);
                return r;
        }
        while (r >= 0 && (de = readdir(d))) {
                const char *child_unit = unit;
                const Container *child_container = container;
                size_t len;
                int fd;

                if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                len = strlen(de->d_name);
                /* Never longer than the bound, as the depth is bounded too. */
                snprintf(c->path + path_len, sizeof(c->path) - path_len, "/%s", de->d_name);
                r = child_place(c, de->d_name, len, &child_unit, &child_container);
                if (r < 0)
                        break;
                /* A directory's inode number, as readdir() gives it, is the cgroup's id. */
                r = entry_add(c, de->d_ino, child_unit, child_container);
                if (r < 0 || depth + 1 >= CGROUP_MAX_DEPTH)
                        continue;
                fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        continue; /* removed meanwhile, or not ours to read: its id is known */
                r = walk(c, fd, MIN(path_len + 1 + len, sizeof(c->path) - 1), child_unit, child_container,
                         depth + 1);
        }
        closedir(d);
        return r;
}

static int entry_compare(const void *a, const void *b) {
        const CgroupEntry *x = a, *y = b;

        return x->id < y->id ? -1 : x->id > y->id;
}

/* Makes the map anew. A tree over the bound is kept up to it (-E2BIG is not an error here). */
static int scan(CgroupUnits *c) {
        struct stat st;
        int fd, r;

        entries_clear(c);
        c->scans++;
        fd = open(c->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0) {
                r = -errno;
                close(fd);
                return r;
        }
        r = entry_add(c, st.st_ino, NULL, NULL);
        if (r < 0) {
                close(fd);
                return r;
        }
        c->path[0] = '\0';
        r = walk(c, fd, 0, NULL, NULL, 0);
        qsort(c->entries, c->n_entries, sizeof(*c->entries), entry_compare);
        return r == -E2BIG ? 0 : r;
}

static const CgroupEntry *entry_find(const CgroupUnits *c, uint64_t id) {
        CgroupEntry key = { .id = id };

        if (c->n_entries == 0)
                return NULL;
        return bsearch(&key, c->entries, c->n_entries, sizeof(*c->entries), entry_compare);
}

int cgroup_units_lookup(CgroupUnits *c, uint64_t id, uint64_t now_usec, char **ret_unit, Container **ret_container) {
        const CgroupEntry *e = entry_find(c, id);
        _cleanup_free_ char *unit = NULL;
        Container *container = NULL;

        if (!e && (!c->scanned || now_usec - c->last_scan_usec >= c->rescan_usec)) {
                int r = scan(c);

                c->scanned = true;
                c->last_scan_usec = now_usec;
                if (r < 0)
                        return r;
                e = entry_find(c, id);
        }
        if (!e)
                return -ENOENT;
        if (e->unit && !(unit = strdup(e->unit)))
                return -ENOMEM;
        if (e->container && !(container = malloc(sizeof(*container))))
                return -ENOMEM;
        if (container)
                *container = *e->container;
        *ret_unit = TAKE_PTR(unit);
        *ret_container = container;
        return 0;
}

uint32_t cgroup_units_size(const CgroupUnits *c) {
        return (uint32_t) c->n_entries;
}

uint64_t cgroup_units_scans(const CgroupUnits *c) {
        return c->scans;
}

/* mountinfo escapes space, tab, newline and backslash in paths as \ooo. */
static char *unescape_octal(const char *s, size_t n) {
        char *out = malloc(n + 1), *o = out;

        if (!out)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                if (s[i] == '\\' && i + 3 < n && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
                    s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
                        *o++ = (char) ((s[i + 1] - '0') << 6 | (s[i + 2] - '0') << 3 | (s[i + 3] - '0'));
                        i += 3;
                } else
                        *o++ = s[i];
        }
        *o = '\0';
        return out;
}

/* The n-th (from 0) space-separated field of [line, eol). */
static const char *field(const char *line, const char *eol, unsigned n, size_t *ret_len) {
        const char *p = line;

        for (unsigned i = 0; i < n; i++) {
                p = memchr(p, ' ', (size_t) (eol - p));
                if (!p)
                        return NULL;
                p++;
        }
        *ret_len = (size_t) ((const char *) (memchr(p, ' ', (size_t) (eol - p)) ?: eol) - p);
        return p;
}

int cgroup2_mount_parse(const char *mountinfo, bool (*usable)(uint64_t mount_id, const char *path), char **ret) {
        for (const char *line = mountinfo; *line;) {
                const char *eol = strchrnul(line, '\n');
                /* "36 35 98:0 /root /mnt opts[ optional...] - fstype source superopts" */
                const char *sep = line;
                const char *mount_point, *fstype;
                size_t mp_len = 0, fs_len = 0;

                while ((sep = memchr(sep, '-', (size_t) (eol - sep))) &&
                       !(sep > line && sep[-1] == ' ' && sep + 1 < eol && sep[1] == ' '))
                        sep++;
                mount_point = field(line, eol, 4, &mp_len);
                fstype = sep ? field(sep + 2, eol, 0, &fs_len) : NULL;
                if (mount_point && fstype && fs_len == strlen("cgroup2") && memcmp(fstype, "cgroup2", fs_len) == 0) {
                        char *path = unescape_octal(mount_point, mp_len);

                        if (!path)
                                return -ENOMEM;
                        if (!usable || usable(strtoull(line, NULL, 10), path)) {
                                *ret = path;
                                return 0;
                        }
                        free(path);
                }
                line = *eol ? eol + 1 : eol;
        }
        return -ENOENT;
}

/* Whether path leads to the mount mount_id: not to one mounted over it since (a chroot's or a
 * container's own cgroup2 over the host's /sys/fs/cgroup, say). Where the kernel does not tell a
 * path's mount (before Linux 5.8), yes. */
static bool mount_reachable(uint64_t mount_id, const char *path) {
        struct statx stx;

        if (statx(AT_FDCWD, path, 0, STATX_MNT_ID, &stx) < 0)
                return false;
        return !(stx.stx_mask & STATX_MNT_ID) || stx.stx_mnt_id == mount_id;
}

int cgroup2_mount_find(int proc_fd, char **ret) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = proc_read_mountinfo(proc_fd, &text);
        if (r < 0)
                return r;
        return cgroup2_mount_parse(text, mount_reachable, ret);
}
