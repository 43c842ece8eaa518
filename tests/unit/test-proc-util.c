/* SPDX-License-Identifier: MIT */
/* /proc parsers against the fake tree in tests/data/proc. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sys/wait.h>
#include <signal.h>

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc-util.h"
#include "time-util.h"

static int proc_fd = -1;

static void test_stat(void **state) {
        ProcStat st;

        /* comm holding ") (" and spaces ends at the last ')'. */
        assert_int_equal(proc_read_stat(proc_fd, 4242, &st), 0);
        assert_string_equal(st.comm, "evil) (name");
        assert_int_equal(st.minflt, 5123);
        assert_int_equal(st.majflt, 0);
        assert_int_equal(st.start_ticks, 987654);

        assert_int_equal(proc_read_stat(proc_fd, 77, &st), 0);
        assert_string_equal(st.comm, "kthreadd");
        assert_int_equal(st.start_ticks, 2);

        assert_int_equal(proc_read_stat(proc_fd, 99999, &st), -ENOENT);
        assert_int_equal(proc_stat_parse("12 (x) S 1 2", &st), -EBADMSG);
        assert_int_equal(proc_stat_parse("garbage", &st), -EBADMSG);
        assert_int_equal(proc_stat_parse("", &st), -EBADMSG);

        /* The three fields read, as the kernel prints them: minflt 10, majflt 12, starttime 22. */
        assert_int_equal(proc_stat_parse("7 (a b) R 1 7 7 0 -1 4194560 18446744073709551615 3 41 5 1 2 3 4 20 0 1 0 "
                                         "123456789 2 3\n",
                                         &st),
                         0);
        assert_string_equal(st.comm, "a b");
        assert_int_equal(st.minflt, UINT64_MAX);
        assert_int_equal(st.majflt, 41);
        assert_int_equal(st.start_ticks, 123456789);
        /* Ending right after starttime, as a read cut there would. */
        assert_int_equal(proc_stat_parse("7 (a) R 1 7 7 0 -1 0 8 0 9 0 0 0 0 0 0 0 1 0 55", &st), 0);
        assert_int_equal(st.minflt, 8);
        assert_int_equal(st.majflt, 9);
        assert_int_equal(st.start_ticks, 55);
        /* Cut before it, a number too large, a sign or junk in a field read: refused. */
        assert_int_equal(proc_stat_parse("7 (a) R 1 7 7 0 -1 0 8 0 9 0 0 0 0 0 0 0 1 0", &st), -EBADMSG);
        assert_int_equal(proc_stat_parse("7 (a) R 1 7 7 0 -1 0 18446744073709551616 0 9 0 0 0 0 0 0 0 1 0 55", &st),
                         -EBADMSG);
        assert_int_equal(proc_stat_parse("7 (a) R 1 7 7 0 -1 0 -8 0 9 0 0 0 0 0 0 0 1 0 55", &st), -EBADMSG);
        assert_int_equal(proc_stat_parse("7 (a) R 1 7 7 0 -1 0 8x 0 9 0 0 0 0 0 0 0 1 0 55", &st), -EBADMSG);
        assert_int_equal(proc_stat_parse("7 (a) R 1 7 7 0 -1 0 8  0 9 0 0 0 0 0 0 0 1 0 55", &st), -EBADMSG);
}

/* A start time in ns since boot names the process only if it falls in its start tick. */
static void test_is_alive(void **state) {
        uint64_t tick = NSEC_PER_SEC / (uint64_t) sysconf(_SC_CLK_TCK);

        assert_true(proc_is_alive(proc_fd, 4242, 987654 * tick));
        assert_true(proc_is_alive(proc_fd, 4242, 987654 * tick + tick - 1));
        assert_false(proc_is_alive(proc_fd, 4242, 987655 * tick));
        assert_false(proc_is_alive(proc_fd, 4242, 987653 * tick));
        assert_false(proc_is_alive(proc_fd, 99999, 987654 * tick));
}

/* The kept-open fd reads the same as the path, as often as asked; a real process's fd fails
 * with ESRCH once the process is reaped. */
static void test_stat_fd(void **state) {
        ProcStat st;
        pid_t child;
        int fd, self;

        fd = proc_open_stat(proc_fd, 4242);
        assert_true(fd >= 0);
        for (int i = 0; i < 2; i++) {
                assert_int_equal(proc_pread_stat(fd, &st), 0);
                assert_string_equal(st.comm, "evil) (name");
                assert_int_equal(st.minflt, 5123);
                assert_int_equal(st.start_ticks, 987654);
        }
        close(fd);
        assert_int_equal(proc_open_stat(proc_fd, 99999), -ENOENT);

        self = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(self >= 0);
        child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                pause();
                _exit(0);
        }
        fd = proc_open_stat(self, (uint32_t) child);
        assert_true(fd >= 0);
        assert_int_equal(proc_pread_stat(fd, &st), 0);
        kill(child, SIGKILL);
        assert_int_equal(waitpid(child, NULL, 0), child);
        assert_int_equal(proc_pread_stat(fd, &st), -ESRCH);
        close(fd);
        close(self);
}

static void test_cmdline(void **state) {
        char *s;

        assert_int_equal(proc_read_cmdline(proc_fd, 4242, 4096, &s), 0);
        assert_string_equal(s, "worker --threads \xc3\xa9t\xc3\xa9");
        free(s);
        /* Cut inside the 2-byte 'é' at the end: the partial character is dropped. */
        assert_int_equal(proc_read_cmdline(proc_fd, 4242, 21, &s), 0);
        assert_string_equal(s, "worker --threads \xc3\xa9t");
        free(s);
        /* Cut right after a complete character: nothing is dropped. */
        assert_int_equal(proc_read_cmdline(proc_fd, 4242, 22, &s), 0);
        assert_string_equal(s, "worker --threads \xc3\xa9t\xc3\xa9");
        free(s);
        assert_int_equal(proc_read_cmdline(proc_fd, 77, 4096, &s), -ENODATA);
}

static void test_cmdline_format(void **state) {
        char *s;

        assert_int_equal(proc_cmdline_format("a\0b c\0", 6, false, &s), 0);
        assert_string_equal(s, "a b c");
        free(s);
        assert_int_equal(proc_cmdline_format("\0\0", 2, false, &s), -ENODATA);
        assert_int_equal(proc_cmdline_format("", 0, false, &s), -ENODATA);
        /* Cut inside a 3-byte character: dropped; not cut: kept as it is. */
        assert_int_equal(proc_cmdline_format("x \xe2\x82", 4, true, &s), 0);
        assert_string_equal(s, "x ");
        free(s);
        assert_int_equal(proc_cmdline_format("x \xe2\x82\xac", 5, true, &s), 0);
        assert_string_equal(s, "x \xe2\x82\xac");
        free(s);
}

static void test_unit(void **state) {
        Container *c = NULL;
        char *s = NULL;

        /* The innermost unit of the unified hierarchy wins over name=systemd and v1 controllers;
         * the container is the outermost one of that path. */
        assert_int_equal(proc_read_cgroup(proc_fd, 4242, &s, &c), 0);
        assert_string_equal(s, "payload.scope");
        assert_null(c);
        free(s);
        assert_int_equal(proc_read_cgroup(proc_fd, 77, &s, &c), 0);
        assert_null(s);
        assert_null(c);
        assert_int_equal(proc_read_cgroup(proc_fd, 99999, &s, &c), -ENOENT);

        /* NSpid: the namespaces as this /proc sees them. */
        {
                unsigned levels = 0;

                assert_int_equal(proc_read_nspid_levels(proc_fd, 4242, &levels), 0);
                assert_int_equal(levels, 3);
                assert_int_equal(proc_read_nspid_levels(proc_fd, 77, &levels), 0);
                assert_int_equal(levels, 1);
                assert_int_equal(proc_read_nspid_levels(proc_fd, 99999, &levels), -ENOENT);
        }

        assert_int_equal(proc_cgroup_parse_container("1:name=systemd:/x\n0::/machine.slice/machine-web\\x2d1.scope/"
                                                     "payload/system.slice/nginx.service\n",
                                                     &c),
                         0);
        assert_string_equal(c->runtime, "machined");
        assert_string_equal(c->id, "web-1");
        assert_string_equal(c->name, "web-1");
        assert_int_equal(c->user, UINT32_MAX);
        free(c);
        /* From name=systemd where there is no unified hierarchy (cgroup v1). */
        assert_int_equal(proc_cgroup_parse_container("1:name=systemd:/system.slice/docker-"
                                                     "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                                                     ".scope\n",
                                                     &c),
                         0);
        assert_string_equal(c->runtime, "docker");
        assert_string_equal(c->id, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
        free(c);
        /* A container's name in a user's own subtree is not one. */
        assert_int_equal(proc_cgroup_parse_container("0::/user.slice/user-1000.slice/user@1000.service/"
                                                     "machine.slice/machine-web.scope\n",
                                                     &c),
                         -ENODATA);
        assert_int_equal(proc_cgroup_parse_container("0::\n", &c), -ENODATA);
        assert_int_equal(proc_cgroup_parse_container("", &c), -ENODATA);

        assert_int_equal(proc_cgroup_parse_unit("1:name=systemd:/user.slice/user-1000.slice/session-2.scope\n0::/\n", &s), 0);
        assert_string_equal(s, "session-2.scope");
        free(s);
        assert_int_equal(proc_cgroup_parse_unit("0::/system.slice/sshd.service", &s), 0);
        assert_string_equal(s, "sshd.service");
        free(s);
        assert_int_equal(proc_cgroup_parse_unit("0::/.service\n", &s), -ENODATA);
        assert_int_equal(proc_cgroup_parse_unit("", &s), -ENODATA);
}

/* The owner of the directory, whoever checked the tree out. */
static void test_uid(void **state) {
        struct stat st;
        uint32_t uid = 12345;

        assert_int_equal(fstatat(proc_fd, "4242", &st, 0), 0);
        assert_int_equal(proc_read_uid(proc_fd, 4242, &uid), 0);
        assert_int_equal(uid, st.st_uid);
        assert_int_equal(proc_read_uid(proc_fd, 99999, &uid), -ENOENT);
}

static void test_boot_id(void **state) {
        char id[37];

        assert_int_equal(proc_read_boot_id(proc_fd, id), 0);
        assert_string_equal(id, "0f6a1b2c-3d4e-4f50-8a6b-7c8d9e0f1a2b");
}

/* Lines of /proc/PID/maps: a file (deleted since it was mapped, too), anonymous memory, a named
 * kind; anything else refused. */
static void test_maps_line(void **state) {
        char file[] = "7f1c2a000000-7f1c2a021000 r-xp 00002000 fd:01 1234567                    /usr/lib/x.so\n";
        char deleted[] = "00400000-00401000 r-xp 00001000 103:02 42 /tmp/a b (deleted)\n";
        char anon[] = "7f1c2b000000-7f1c2b001000 rwxp 00000000 00:00 0 \n";
        char heap[] = "01000000-01021000 rw-p 00000000 00:00 0                          [heap]";
        char bad[] = "7f1c2b000000 rwxp 00000000 00:00 0";
        ProcMapping m;

        assert_int_equal(proc_maps_parse_line(file, &m), 0);
        assert_true(m.start == 0x7f1c2a000000 && m.end == 0x7f1c2a021000 && m.offset == 0x2000);
        assert_true(m.major == 0xfd && m.minor == 1 && m.ino == 1234567);
        assert_string_equal(m.path, "/usr/lib/x.so");
        assert_int_equal(proc_maps_parse_line(deleted, &m), 0);
        assert_true(m.major == 0x103 && m.minor == 2 && m.ino == 42);
        assert_string_equal(m.path, "/tmp/a b");
        assert_int_equal(proc_maps_parse_line(anon, &m), 0);
        assert_string_equal(m.path, "");
        assert_int_equal(proc_maps_parse_line(heap, &m), 0);
        assert_string_equal(m.path, "[heap]");
        assert_int_equal(proc_maps_parse_line(bad, &m), -EBADMSG);
}

/* The real /proc: this process's maps, only for its own start time. */
static void test_open_maps(void **state) {
        int real = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        uint64_t tick_ns = NSEC_PER_SEC / (uint64_t) sysconf(_SC_CLK_TCK);
        ProcStat st;
        FILE *f = NULL;

        assert_true(real >= 0);
        assert_int_equal(proc_read_stat(real, (uint32_t) getpid(), &st), 0);
        assert_int_equal(proc_open_maps(real, (uint32_t) getpid(), st.start_ticks * tick_ns, &f), 0);
        assert_non_null(f);
        fclose(f);
        f = NULL;
        assert_int_equal(proc_open_maps(real, (uint32_t) getpid(), (st.start_ticks + 1) * tick_ns, &f), -ESRCH);
        assert_int_equal(proc_open_maps(real, 99999999, 0, &f), -ESRCH);
        assert_null(f);
        close(real);
}

/* The real /proc: this executable's first mapping, opened through map_files, is this executable
 * (root only: others get -EPERM, as the daemon under systemd does); only for its own start time,
 * and only where something is mapped. */
static void test_open_map_file(void **state) {
        int real = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        uint64_t tick_ns = NSEC_PER_SEC / (uint64_t) sysconf(_SC_CLK_TCK), start_ns;
        char exe[4096], line[8192];
        struct stat want, got;
        ProcMapping m = {};
        ProcStat st;
        FILE *maps;
        ssize_t n;
        int fd = -1;

        assert_true(real >= 0);
        n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        assert_true(n > 0);
        exe[n] = '\0';
        assert_int_equal(stat(exe, &want), 0);
        maps = fopen("/proc/self/maps", "re");
        assert_non_null(maps);
        while (fgets(line, sizeof(line), maps))
                if (proc_maps_parse_line(line, &m) == 0 && m.ino == (uint64_t) want.st_ino)
                        break;
        fclose(maps);
        assert_int_equal(m.ino, (uint64_t) want.st_ino);
        assert_int_equal(proc_read_stat(real, (uint32_t) getpid(), &st), 0);
        start_ns = st.start_ticks * tick_ns;

        if (geteuid() == 0) {
                assert_int_equal(proc_open_map_file(real, (uint32_t) getpid(), start_ns, m.start, m.end, &fd), 0);
                assert_int_equal(fstat(fd, &got), 0);
                assert_int_equal(got.st_dev, want.st_dev);
                assert_int_equal(got.st_ino, want.st_ino);
                close(fd);
                /* Nothing mapped at the first page. */
                assert_int_equal(proc_open_map_file(real, (uint32_t) getpid(), start_ns, 0, 4096, &fd), -ENOENT);
        } else
                assert_int_equal(proc_open_map_file(real, (uint32_t) getpid(), start_ns, m.start, m.end, &fd), -EPERM);
        fd = -1;
        assert_int_equal(proc_open_map_file(real, (uint32_t) getpid(), start_ns + tick_ns, m.start, m.end, &fd), -ESRCH);
        assert_int_equal(proc_open_map_file(real, 99999999, 0, m.start, m.end, &fd), -ESRCH);
        assert_int_equal(fd, -1);
        close(real);
}

int main(int argc, char *argv[]) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_stat),
                cmocka_unit_test(test_is_alive),
                cmocka_unit_test(test_stat_fd),
                cmocka_unit_test(test_cmdline),
                cmocka_unit_test(test_cmdline_format),
                cmocka_unit_test(test_unit),
                cmocka_unit_test(test_uid),
                cmocka_unit_test(test_boot_id),
                cmocka_unit_test(test_maps_line),
                cmocka_unit_test(test_open_maps),
                cmocka_unit_test(test_open_map_file),
        };

        if (argc != 2) {
                fprintf(stderr, "usage: test-proc-util PROC-DIR\n");
                return 2;
        }
        proc_fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (proc_fd < 0) {
                perror(argv[1]);
                return 1;
        }
        return cmocka_run_group_tests(tests, NULL, NULL);
}
