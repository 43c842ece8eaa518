/* SPDX-License-Identifier: MIT */
#include "proc-util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file-util.h"
#include "macro.h"
#include "time-util.h"

/* Reads /proc/PID/<name>: its first max bytes, which is all of it unless it is cut (*ret_size == max). */
static int read_pid_file(int proc_fd, uint32_t pid, const char *name, size_t max, char **ret, size_t *ret_size) {
        char path[64];

        snprintf(path, sizeof(path), "%" PRIu32 "/%s", pid, name);
        return read_full_file_at(proc_fd, path, max, READ_FULL_TRUNCATE, ret, ret_size);
}

/* A decimal number that ends at a space, a newline or the end, as the kernel prints its fields;
 * *p moves past it. */
static int parse_stat_u64(const char **p, uint64_t *ret) {
        const char *c = *p;
        uint64_t v = 0;

        if (*c < '0' || *c > '9')
                return -EBADMSG;
        for (; *c >= '0' && *c <= '9'; c++) {
                uint64_t d = (uint64_t) (*c - '0');

                if (v > (UINT64_MAX - d) / 10)
                        return -EBADMSG;
                v = v * 10 + d;
        }
        if (*c != ' ' && *c != '\n' && *c != '\0')
                return -EBADMSG;
        *p = c;
        *ret = v;
        return 0;
}

int proc_stat_parse(const char *text, ProcStat *ret) {
        /* After ") " come fields 3 (state) onwards: minflt is field 10, majflt 12, starttime 22. */
        enum { MINFLT = 10 - 3, MAJFLT = 12 - 3, START = 22 - 3 };
        ProcStat st = {};
        const char *open, *close, *p;
        size_t len;

        /* "pid (comm) state ...": comm may hold spaces and parentheses, so it ends at the last ')'. */
        open = strchr(text, '(');
        close = strrchr(text, ')');
        if (!open || !close || close < open || close[1] != ' ')
                return -EBADMSG;
        len = (size_t) (close - open - 1);
        if (len >= sizeof(st.comm))
                len = sizeof(st.comm) - 1;
        memcpy(st.comm, open + 1, len);

        /* Read for every process active in a tick: by hand, sscanf() was a tenth of the daemon's
         * time at 1000 processes faulting every second. */
        p = close + 2;
        for (int field = 0; field <= START; field++) {
                uint64_t *want = field == MINFLT ? &st.minflt : field == MAJFLT ? &st.majflt :
                                 field == START  ? &st.start_ticks : NULL;
                int r;

                if (want) {
                        r = parse_stat_u64(&p, want);
                        if (r < 0)
                                return r;
                } else {
                        size_t n = strcspn(p, " \n");

                        if (n == 0)
                                return -EBADMSG;
                        p += n;
                }
                if (field < START) {
                        if (*p != ' ')
                                return -EBADMSG;
                        p++;
                }
        }
        *ret = st;
        return 0;
}

int proc_read_stat(int proc_fd, uint32_t pid, ProcStat *ret) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = read_pid_file(proc_fd, pid, "stat", 4096, &text, NULL);
        if (r < 0)
                return r;
        return proc_stat_parse(text, ret);
}

bool proc_is_alive(int proc_fd, uint32_t pid, uint64_t start_time_ns) {
        long hz = sysconf(_SC_CLK_TCK);
        ProcStat st;

        if (hz <= 0 || proc_read_stat(proc_fd, pid, &st) < 0)
                return false;
        return st.start_ticks == start_time_ns / (NSEC_PER_SEC / (uint64_t) hz);
}

int proc_maps_parse_line(char *line, ProcMapping *ret) {
        ProcMapping m = {};
        char perms[5];
        int used = 0;
        size_t n;

        if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %" SCNx32 ":%" SCNx32 " %" SCNu64 "%n", &m.start,
                   &m.end, perms, &m.offset, &m.major, &m.minor, &m.ino, &used) != 7 ||
            used == 0 || m.end < m.start)
                return -EBADMSG;
        line += used;
        line += strspn(line, " ");
        n = strcspn(line, "\n");
        line[n] = '\0';
        /* A file deleted since it was mapped: the name it had. */
        if (n > 10 && strcmp(line + n - 10, " (deleted)") == 0)
                line[n - 10] = '\0';
        m.path = line;
        *ret = m;
        return 0;
}

/* /proc/PID as a directory fd, when pid still is the process that started at start_time_ns:
 * what is opened through it is bound to that process, so pid cannot be reused in between. */
static int open_pid_dir(int proc_fd, uint32_t pid, uint64_t start_time_ns) {
        _cleanup_close_ int dir = -1, stat_fd = -1;
        long hz = sysconf(_SC_CLK_TCK);
        char path[16];
        ProcStat st;
        int r;

        snprintf(path, sizeof(path), "%" PRIu32, pid);
        dir = openat(proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        stat_fd = openat(dir, "stat", O_RDONLY | O_CLOEXEC);
        if (stat_fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        r = proc_pread_stat(stat_fd, &st);
        if (r < 0)
                return r;
        if (hz <= 0 || st.start_ticks != start_time_ns / (NSEC_PER_SEC / (uint64_t) hz))
                return -ESRCH;
        return TAKE_FD(dir);
}

int proc_open_maps(int proc_fd, uint32_t pid, uint64_t start_time_ns, FILE **ret) {
        _cleanup_close_ int dir = -1, maps_fd = -1;
        FILE *f;

        dir = open_pid_dir(proc_fd, pid, start_time_ns);
        if (dir < 0)
                return dir;
        maps_fd = openat(dir, "maps", O_RDONLY | O_CLOEXEC);
        if (maps_fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        f = fdopen(maps_fd, "re");
        if (!f)
                return -errno;
        maps_fd = -1;
        *ret = f;
        return 0;
}

int proc_open_map_file(int proc_fd, uint32_t pid, uint64_t start_time_ns, uint64_t start, uint64_t end,
                       int *ret_fd) {
        _cleanup_close_ int dir = -1;
        char name[64];
        int fd;

        dir = open_pid_dir(proc_fd, pid, start_time_ns);
        if (dir < 0)
                return dir;
        /* The kernel's names, "%lx-%lx": unlike /proc/PID/maps, without leading zeros. The entry
         * is a link the kernel resolves to the mapping's own file, so it is followed. O_NONBLOCK:
         * a mapped FIFO or device must not block the open; the caller checks what it got. */
        snprintf(name, sizeof(name), "map_files/%" PRIx64 "-%" PRIx64, start, end);
        fd = openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        *ret_fd = fd;
        return 0;
}

int proc_open_stat(int proc_fd, uint32_t pid) {
        char path[32];
        int fd;

        snprintf(path, sizeof(path), "%" PRIu32 "/stat", pid);
        fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

int proc_pread_stat(int fd, ProcStat *ret) {
        /* The line is a few hundred bytes; comm is at most 64. */
        char buf[2048];
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

        if (n < 0)
                return -errno;
        if (n == 0 || (size_t) n == sizeof(buf) - 1)
                return -EBADMSG;
        buf[n] = '\0';
        return proc_stat_parse(buf, ret);
}

int proc_read_uid(int proc_fd, uint32_t pid, uint32_t *ret) {
        char path[16];
        struct stat st;

        snprintf(path, sizeof(path), "%" PRIu32, pid);
        if (fstatat(proc_fd, path, &st, 0) < 0)
                return -errno;
        *ret = st.st_uid;
        return 0;
}

int proc_cmdline_format(const char *args, size_t n, bool cut, char **ret) {
        char *text;

        while (n > 0 && args[n - 1] == '\0')
                n--;
        if (n == 0)
                return -ENODATA;
        text = malloc(n + 1);
        if (!text)
                return -ENOMEM;
        memcpy(text, args, n);
        text[n] = '\0';
        for (size_t i = 0; i < n; i++)
                if (text[i] == '\0')
                        text[i] = ' ';

        /* JSON needs valid UTF-8: drop a character the cut left incomplete. */
        if (cut) {
                size_t lead = n;

                while (lead > 0 && ((unsigned char) text[lead - 1] & 0xC0) == 0x80)
                        lead--;
                if (lead > 0) {
                        unsigned char c = (unsigned char) text[--lead];
                        size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
                        if (n - lead < need)
                                text[lead] = '\0';
                }
        }
        *ret = text;
        return 0;
}

int proc_read_cmdline(int proc_fd, uint32_t pid, size_t max, char **ret) {
        _cleanup_free_ char *text = NULL;
        size_t n;
        int r;

        r = read_pid_file(proc_fd, pid, "cmdline", max, &text, &n);
        if (r < 0)
                return r;
        return proc_cmdline_format(text, n, n == max, ret);
}

bool proc_cgroup_name_is_unit(const char *s, size_t n) {
        static const char *const suffixes[] = { ".service", ".scope" };

        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                size_t l = strlen(suffixes[i]);
                if (n > l && memcmp(s + n - l, suffixes[i], l) == 0)
                        return true;
        }
        return false;
}

/* Innermost unit in a cgroup path like "/system.slice/foo.service/payload". */
static char *path_unit(const char *path, size_t len) {
        const char *best = NULL;
        size_t best_len = 0;

        for (size_t i = 0; i < len;) {
                size_t j = i;

                while (j < len && path[j] != '/')
                        j++;
                if (proc_cgroup_name_is_unit(path + i, j - i)) {
                        best = path + i;
                        best_len = j - i;
                }
                i = j + 1;
        }
        return best ? strndup(best, best_len) : NULL;
}

/* The path of the unified hierarchy's line ("0::PATH") in a /proc/PID/cgroup text, or with named
 * of the name=systemd one (cgroup v1): a pointer into text and its length; false when not there. */
static bool cgroup_text_path(const char *text, bool named, const char **ret_path, size_t *ret_len) {
        const char *want = named ? "name=systemd" : "";

        for (const char *line = text; *line;) {
                const char *eol = strchrnul(line, '\n');
                const char *c1 = memchr(line, ':', (size_t) (eol - line));
                const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t) (eol - c1 - 1)) : NULL;

                if (c2 && (named || strncmp(line, "0:", 2) == 0) && (size_t) (c2 - c1 - 1) == strlen(want) &&
                    strncmp(c1 + 1, want, strlen(want)) == 0) {
                        *ret_path = c2 + 1;
                        *ret_len = (size_t) (eol - c2 - 1);
                        return true;
                }
                line = *eol ? eol + 1 : eol;
        }
        return false;
}

/* The innermost unit of the unified hierarchy's path, else of name=systemd's. */
int proc_cgroup_parse_unit(const char *text, char **ret) {
        for (int named = 0; named <= 1; named++) {
                const char *path;
                size_t len;
                char *unit;

                if (!cgroup_text_path(text, named, &path, &len))
                        continue;
                unit = path_unit(path, len);
                if (unit) {
                        *ret = unit;
                        return 0;
                }
        }
        return -ENODATA;
}

int proc_cgroup_parse_container(const char *text, Container **ret) {
        _cleanup_free_ char *path = NULL;
        Container c, *copy;
        const char *p;
        size_t len;
        int r;

        if (!cgroup_text_path(text, false, &p, &len) && !cgroup_text_path(text, true, &p, &len))
                return -ENODATA;
        path = strndup(p, len);
        if (!path)
                return -ENOMEM;
        r = container_from_cgroup(path, &c);
        if (r < 0)
                return r == -EINVAL ? -ENODATA : r;
        copy = malloc(sizeof(*copy));
        if (!copy)
                return -ENOMEM;
        *copy = c;
        *ret = copy;
        return 0;
}

int proc_read_cgroup(int proc_fd, uint32_t pid, char **ret_unit, Container **ret_container) {
        _cleanup_free_ char *text = NULL, *unit = NULL;
        Container *container = NULL;
        int r;

        r = read_pid_file(proc_fd, pid, "cgroup", 16384, &text, NULL);
        if (r < 0)
                return r;
        r = proc_cgroup_parse_unit(text, &unit);
        if (r < 0 && r != -ENODATA)
                return r;
        r = proc_cgroup_parse_container(text, &container);
        if (r < 0 && r != -ENODATA)
                return r;
        *ret_unit = TAKE_PTR(unit);
        *ret_container = container;
        return 0;
}

/* The columns of the "NSpid:" line of a /proc/PID/status or pidfd fdinfo text. */
static int nspid_levels_parse(const char *text, unsigned *ret) {
        unsigned n = 0;
        const char *p = strstr(text, "\nNSpid:");

        if (!p)
                return -ENODATA;
        for (p += strlen("\nNSpid:"); *p && *p != '\n';) {
                while (*p == ' ' || *p == '\t')
                        p++;
                if (*p >= '0' && *p <= '9')
                        n++;
                while (*p >= '0' && *p <= '9')
                        p++;
                if (*p && *p != '\n' && *p != ' ' && *p != '\t')
                        return -EBADMSG;
        }
        if (n == 0)
                return -EBADMSG;
        *ret = n;
        return 0;
}

int proc_read_nspid_levels(int proc_fd, uint32_t pid, unsigned *ret) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = read_pid_file(proc_fd, pid, "status", 16384, &text, NULL);
        if (r < 0)
                return r;
        return nspid_levels_parse(text, ret);
}

int proc_read_pidfd_nspid_levels(int proc_fd, int pidfd, unsigned *ret) {
        _cleanup_free_ char *text = NULL;
        char path[64];
        int r;

        snprintf(path, sizeof(path), "self/fdinfo/%d", pidfd);
        r = read_full_file_at(proc_fd, path, 4096, READ_FULL_TRUNCATE, &text, NULL);
        if (r < 0)
                return r;
        return nspid_levels_parse(text, ret);
}

int proc_read_mountinfo(int proc_fd, char **ret) {
        return read_full_file_at(proc_fd, "self/mountinfo", 1U << 20, READ_FULL_TRUNCATE, ret, NULL);
}

int proc_read_boot_id(int proc_fd, char ret[static 37]) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = read_full_file_at(proc_fd, "sys/kernel/random/boot_id", 64, READ_FULL_TRUNCATE, &text, NULL);
        if (r < 0)
                return r;
        if (strlen(text) < 36 || (text[36] != '\n' && text[36] != '\0'))
                return -EBADMSG;
        memcpy(ret, text, 36);
        ret[36] = '\0';
        return 0;
}
