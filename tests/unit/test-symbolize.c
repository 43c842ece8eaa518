/* SPDX-License-Identifier: MIT */
/* The symbolizer against the ELF files tests/meson.build builds from tests/data/symbolize-target.c:
 * a PIE, an ET_EXEC and a shared library, the PIE and the library also stripped to .dynsym.
 * The expected file offsets come from running those files: each prints where its functions are
 * mapped (from /proc/self/maps), so they do not come from reading the ELF as the code under test
 * does. Then the cache, the limits, and damaged and hostile files. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "unit-tmpdir.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <inttypes.h>
#include <limits.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc-util.h"
#include "symbol-worker.h"
#include "symbolize.h"
#include "time-util.h"

static const char *pie, *pie_stripped, *exec_nopie, *lib, *lib_stripped;
DEFINE_TEST_TMPDIR("test-symbolize");

#define PATH 512

typedef struct Offsets {
        uint64_t alpha, beta, hidden, nosize, asm_func;
} Offsets;

/* Runs `exe [library]` and reads its "NAME OFFSET" lines. */
static void target_offsets(const char *exe, const char *library, Offsets *ret) {
        char name[64];
        unsigned long long off;
        int fds[2], status, seen = 0;
        pid_t pid;
        FILE *f;

        assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                dup2(fds[1], STDOUT_FILENO);
                execl(exe, exe, library, (char *) NULL);
                _exit(127);
        }
        close(fds[1]);
        f = fdopen(fds[0], "r");
        assert_non_null(f);
        *ret = (Offsets) {};
        while (fscanf(f, "%63s %llu", name, &off) == 2) {
                if (strcmp(name, "ts_target_alpha") == 0)
                        ret->alpha = off;
                else if (strcmp(name, "ts_target_beta") == 0)
                        ret->beta = off;
                else if (strcmp(name, "ts_target_hidden") == 0)
                        ret->hidden = off;
                else if (strcmp(name, "ts_target_nosize") == 0)
                        ret->nosize = off;
                else if (strcmp(name, "ts_target_asm") == 0)
                        ret->asm_func = off;
                else
                        fail_msg("unexpected line %s", name);
                seen++;
        }
        fclose(f);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        assert_int_equal(seen, 5);
        assert_true(ret->alpha > 0 && ret->beta > 0 && ret->hidden > 0 && ret->nosize > 0 && ret->asm_func > 0);
}

/* A lookup as the symbol worker makes one (daemon/symbol-worker.c): the file at path opened and
 * proved to be the one stat() saw, then read. */
static int lookup_path(Symbolizer *s, const char *path, uint64_t offset, SymbolizedFrame *ret) {
        _cleanup_close_ int fd = -1;
        struct stat st;
        int r;

        if (lstat(path, &st) < 0)
                return -errno;
        r = symbolizer_open(path, st.st_dev, st.st_ino, &st.st_ctim, symbolizer_max_file_size(s), &fd);
        if (r < 0)
                return r;
        return symbolizer_lookup_fd(s, fd, offset, NULL, ret);
}

static void assert_symbol(Symbolizer *s, const char *path, uint64_t offset, const char *symbol, uint64_t want) {
        SymbolizedFrame f = {};
        int r = lookup_path(s, path, offset, &f);

        if (r != 0)
                fail_msg("%s at %#" PRIx64 ": %s, not %s", path, offset, strerror(-r), symbol);
        assert_string_equal(f.symbol, symbol);
        assert_int_equal(f.offset, want);
        free(f.symbol);
}

static void assert_no_symbol(Symbolizer *s, const char *path, uint64_t offset, int error) {
        SymbolizedFrame f = { .symbol = (char *) "untouched", .offset = 77 };

        assert_int_equal(lookup_path(s, path, offset, &f), error);
        /* Written only on success. */
        assert_string_equal(f.symbol, "untouched");
        assert_int_equal(f.offset, 77);
}

/* The exact symbol and offset at and inside each known function; the local ones only where
 * .symtab is left. */
static void check_file(const char *path, const Offsets *o, bool symtab) {
        _cleanup_(symbolizer_freep) Symbolizer *s = NULL;

        assert_int_equal(symbolizer_new(NULL, &s), 0);
        assert_symbol(s, path, o->alpha, "ts_target_alpha", 0);
        assert_symbol(s, path, o->alpha + 5, "ts_target_alpha", 5);
        assert_symbol(s, path, o->beta, "ts_target_beta", 0);
        assert_symbol(s, path, o->beta + 3, "ts_target_beta", 3);
        if (symtab) {
                assert_symbol(s, path, o->hidden, "ts_target_hidden", 0);
                assert_symbol(s, path, o->hidden + 2, "ts_target_hidden", 2);
                /* Size 0: the nearest preceding symbol, up to where the next one starts. */
                assert_symbol(s, path, o->nosize, "ts_target_nosize", 0);
                assert_symbol(s, path, o->nosize + 5, "ts_target_nosize", 5);
                assert_symbol(s, path, o->nosize + 63, "ts_target_nosize", 63);
                assert_int_equal(o->asm_func, o->nosize + 64);
                /* The sized function, not the label inside it. */
                assert_symbol(s, path, o->asm_func, "ts_target_asm", 0);
                assert_symbol(s, path, o->asm_func + 16, "ts_target_asm", 16);
                assert_symbol(s, path, o->asm_func + 31, "ts_target_asm", 31);
        } else {
                assert_no_symbol(s, path, o->hidden, -ENOENT);
                assert_no_symbol(s, path, o->hidden + 2, -ENOENT);
                assert_no_symbol(s, path, o->nosize + 5, -ENOENT);
        }
        /* Offsets in no loadable segment. */
        assert_no_symbol(s, path, UINT64_MAX, -ENOENT);
        assert_no_symbol(s, path, UINT64_C(1) << 40, -ENOENT);
}

static void test_pie(void **state) {
        Offsets o;

        target_offsets(pie, NULL, &o);
        check_file(pie, &o, true);
        target_offsets(pie_stripped, NULL, &o);
        check_file(pie_stripped, &o, false);
}

static void test_exec(void **state) {
        Offsets o;

        target_offsets(exec_nopie, NULL, &o);
        check_file(exec_nopie, &o, true);
}

static void test_shared_library(void **state) {
        Offsets o;

        target_offsets(pie, lib, &o);
        check_file(lib, &o, true);
        target_offsets(pie, lib_stripped, &o);
        check_file(lib_stripped, &o, false);
}

/* A second lookup in a file does not read it again; other files are loaded once each. */
static void test_cache(void **state) {
        _cleanup_(symbolizer_freep) Symbolizer *s = NULL;
        SymbolizedFrame a = {}, b = {};
        SymbolizerStats st;
        Offsets o, ol;

        target_offsets(pie, NULL, &o);
        target_offsets(pie, lib, &ol);
        assert_int_equal(symbolizer_new(&(SymbolizerConfig) { .max_files = 8 }, &s), 0);
        assert_int_equal(lookup_path(s, pie, o.alpha + 1, &a), 0);
        assert_int_equal(lookup_path(s, pie, o.alpha + 1, &b), 0);
        assert_string_equal(a.symbol, "ts_target_alpha");
        assert_string_equal(a.symbol, b.symbol);
        assert_int_equal(a.offset, 1);
        assert_int_equal(b.offset, 1);
        free(a.symbol);
        free(b.symbol);
        symbolizer_get_stats(s, &st);
        assert_int_equal(st.loads, 1);
        assert_int_equal(st.hits, 1);
        assert_int_equal(st.files, 1);
        assert_true(st.bytes > 0);

        assert_symbol(s, pie, o.beta, "ts_target_beta", 0);
        assert_symbol(s, lib, ol.beta, "ts_target_beta", 0);
        assert_symbol(s, lib, ol.alpha, "ts_target_alpha", 0);
        /* A miss in a cached file is no reload either. */
        assert_no_symbol(s, lib, UINT64_MAX, -ENOENT);
        symbolizer_get_stats(s, &st);
        assert_int_equal(st.loads, 2);
        assert_int_equal(st.hits, 3);
        assert_int_equal(st.files, 2);
        assert_int_equal(st.evictions, 0);
}

/* Past max_files or max_bytes, the least recently used file goes. */
static void test_cache_limits(void **state) {
        _cleanup_(symbolizer_freep) Symbolizer *s = NULL;
        SymbolizerStats st;
        uint64_t pie_bytes, lib_bytes;
        Offsets o, ol;

        target_offsets(pie, NULL, &o);
        target_offsets(pie, lib, &ol);
        assert_int_equal(symbolizer_new(&(SymbolizerConfig) { .max_files = 1 }, &s), 0);
        assert_symbol(s, pie, o.alpha, "ts_target_alpha", 0);
        symbolizer_get_stats(s, &st);
        pie_bytes = st.bytes;
        assert_symbol(s, lib, ol.alpha, "ts_target_alpha", 0);
        assert_symbol(s, pie, o.alpha, "ts_target_alpha", 0);
        symbolizer_get_stats(s, &st);
        assert_int_equal(st.loads, 3);
        assert_int_equal(st.hits, 0);
        assert_int_equal(st.evictions, 2);
        assert_int_equal(st.files, 1);
        assert_int_equal(st.bytes, pie_bytes);
        s = symbolizer_free(s);

        /* Room for either file but not both: pie, lib, lib (a hit), pie (lib goes). */
        assert_int_equal(symbolizer_new(NULL, &s), 0);
        assert_symbol(s, lib, ol.alpha, "ts_target_alpha", 0);
        symbolizer_get_stats(s, &st);
        lib_bytes = st.bytes;
        s = symbolizer_free(s);
        assert_int_equal(symbolizer_new(&(SymbolizerConfig) { .max_bytes = MAX(pie_bytes, lib_bytes) + 1,
                                                              .max_read_bytes = UINT64_MAX },
                                        &s),
                         0);
        assert_symbol(s, pie, o.alpha, "ts_target_alpha", 0);
        assert_symbol(s, lib, ol.alpha, "ts_target_alpha", 0);
        assert_symbol(s, lib, ol.beta, "ts_target_beta", 0);
        assert_symbol(s, pie, o.beta, "ts_target_beta", 0);
        symbolizer_get_stats(s, &st);
        assert_int_equal(st.loads, 3);
        assert_int_equal(st.hits, 1);
        assert_int_equal(st.evictions, 2);
        assert_int_equal(st.files, 1);
        assert_int_equal(st.bytes, pie_bytes);
        s = symbolizer_free(s);

        /* A table larger than the whole budget is not symbolized, nor kept. */
        assert_int_equal(symbolizer_new(&(SymbolizerConfig) { .max_bytes = 256 }, &s), 0);
        assert_no_symbol(s, pie, o.alpha, -E2BIG);
        symbolizer_get_stats(s, &st);
        assert_int_equal(st.files, 0);
        assert_int_equal(st.bytes, 0);
        s = symbolizer_free(s);

        assert_int_equal(symbolizer_new(&(SymbolizerConfig) { .max_file_size = 4096 }, &s), 0);
        assert_no_symbol(s, pie, o.alpha, -EFBIG);
}

/* Until the clock that stamps files (the coarse one, before multigrain timestamps in 6.13) has
 * passed path's change time: a rewrite then gets a new one, as a rewrite a moment later would.
 * Within one tick of that clock (4 ms at HZ 250) a rewrite in place keeps the change time, and a
 * file with the same build id passes as the one before (key_equal() in symbolize.c); seen on
 * arm64's 6.1. */
static void await_later_ctime(const char *path) {
        struct timespec now;
        struct stat st;

        if (stat(path, &st) < 0)
                return;
        for (;;) {
                assert_int_equal(clock_gettime(CLOCK_REALTIME_COARSE, &now), 0);
                if (now.tv_sec > st.st_ctim.tv_sec ||
                    (now.tv_sec == st.st_ctim.tv_sec && now.tv_nsec > st.st_ctim.tv_nsec))
                        return;
                (void) usleep(1000);
        }
}

static void copy_file(const char *from, const char *to, bool in_place) {
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        int in, out;

        in = open(from, O_RDONLY | O_CLOEXEC);
        assert_true(in >= 0);
        assert_int_equal(fstat(in, &st), 0);
        buf = malloc(st.st_size);
        assert_non_null(buf);
        assert_int_equal(read(in, buf, st.st_size), st.st_size);
        close(in);
        if (!in_place)
                (void) unlink(to);
        else
                await_later_ctime(to);
        /* O_TRUNC keeps the inode: a file rewritten in place. */
        out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
        assert_true(out >= 0);
        assert_int_equal(write(out, buf, st.st_size), st.st_size);
        close(out);
}

/* The same inode with other contents is loaded again: by the change time, and the build id when
 * the file has one, else size and modification time. */
static void test_rewritten_in_place(void **state) {
        _cleanup_(symbolizer_freep) Symbolizer *s = NULL;
        char path[PATH];
        SymbolizerStats st;
        struct stat before, after;
        Offsets o, ol, ox;

        target_offsets(pie, NULL, &o);
        target_offsets(pie, lib, &ol);
        target_offsets(exec_nopie, NULL, &ox);
        snprintf(path, sizeof(path), "%s/rewritten", tmpdir);
        assert_int_equal(symbolizer_new(NULL, &s), 0);

        /* exec has no build id; pie has one. */
        copy_file(exec_nopie, path, false);
        assert_int_equal(stat(path, &before), 0);
        assert_symbol(s, path, ox.hidden, "ts_target_hidden", 0);
        copy_file(pie, path, true);
        assert_int_equal(stat(path, &after), 0);
        assert_int_equal(before.st_ino, after.st_ino);
        assert_symbol(s, path, o.hidden, "ts_target_hidden", 0);
        symbolizer_get_stats(s, &st);
        assert_int_equal(st.loads, 2);

        /* lib and lib-stripped share a build id, but the inode changed (its change time): the
         * stripped file is read again and has no local symbols, so a file on a reused inode
         * number that claims the build id of the one before never gets its symbols. */
        copy_file(lib, path, true);
        assert_symbol(s, path, ol.hidden, "ts_target_hidden", 0);
        assert_symbol(s, path, ol.hidden + 1, "ts_target_hidden", 1);
        copy_file(lib_stripped, path, true);
        assert_no_symbol(s, path, ol.hidden + 1, -ENOENT);
        symbolizer_get_stats(s, &st);
        assert_int_equal(st.loads, 4);
        assert_int_equal(st.hits, 1);
}

/* A new file at path each time, not the old one rewritten: the symbolizer knows a file by its
 * inode, size and times, and a file rewritten at its size within one tick of a kernel's coarse
 * clock (before multigrain timestamps, 6.13: Debian 12's 6.1) keeps all of them. Seen on arm64,
 * where test_damaged's variants came in quicker than that tick. */
static void write_file(const char *path, const void *data, size_t size) {
        int fd;

        assert_true(unlink(path) == 0 || errno == ENOENT);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, size), (ssize_t) size);
        close(fd);
}

static void test_not_readable(void **state) {
        _cleanup_(symbolizer_freep) Symbolizer *s = NULL;
        char path[PATH];

        assert_int_equal(symbolizer_new(NULL, &s), 0);
        snprintf(path, sizeof(path), "%s/missing", tmpdir);
        assert_no_symbol(s, path, 0, -ENOENT);
        assert_no_symbol(s, tmpdir, 0, -EISDIR);
        assert_no_symbol(s, "/dev/null", 0, -EBADFD);

        /* A FIFO without a writer: no hang. */
        snprintf(path, sizeof(path), "%s/fifo", tmpdir);
        assert_int_equal(mkfifo(path, 0600), 0);
        assert_no_symbol(s, path, 0, -EBADFD);

        snprintf(path, sizeof(path), "%s/text", tmpdir);
        write_file(path, "int main(void) { return 0; }\n", 29);
        assert_no_symbol(s, path, 0, -ENOEXEC);
        write_file(path, "", 0);
        assert_no_symbol(s, path, 0, -ENOEXEC);

        /* Unreadable: root reads anyway. */
        if (geteuid() != 0) {
                copy_file(pie, path, false);
                assert_int_equal(chmod(path, 0), 0);
                assert_no_symbol(s, path, 0, -EACCES);
        }
}

/* Reads a copy of path into a buffer the test then damages. */
static char *slurp(const char *path, size_t *ret_size) {
        struct stat st;
        char *buf;
        int fd;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(fstat(fd, &st), 0);
        buf = malloc(st.st_size);
        assert_non_null(buf);
        assert_int_equal(read(fd, buf, st.st_size), st.st_size);
        close(fd);
        *ret_size = st.st_size;
        return buf;
}

/* The section header of the first section of that type, in a 64-bit little-endian file. */
static Elf64_Shdr *find_section(char *buf, size_t size, uint32_t type) {
        Elf64_Ehdr *eh = (Elf64_Ehdr *) buf;

        assert_true(size >= sizeof(*eh) && eh->e_ident[EI_CLASS] == ELFCLASS64);
        for (size_t i = 0; i < eh->e_shnum; i++) {
                Elf64_Shdr *sh = (Elf64_Shdr *) (buf + eh->e_shoff + i * eh->e_shentsize);

                assert_true(eh->e_shoff + (i + 1) * eh->e_shentsize <= size);
                if (sh->sh_type == type)
                        return sh;
        }
        fail_msg("no section of type %u", type);
        return NULL;
}

static void test_damaged(void **state) {
        _cleanup_(symbolizer_freep) Symbolizer *s = NULL;
        _cleanup_free_ char *buf = NULL, *copy = NULL;
        char path[PATH];
        Elf64_Ehdr *eh;
        Elf64_Shdr *sh;
        size_t size;
        Offsets ol;

        target_offsets(pie, lib, &ol);
        assert_int_equal(symbolizer_new(NULL, &s), 0);
        buf = slurp(lib, &size);
        copy = malloc(size);
        assert_non_null(copy);
        snprintf(path, sizeof(path), "%s/damaged", tmpdir);

        /* Cut in half: the section headers (at the end) are gone. */
        write_file(path, buf, size / 2);
        assert_no_symbol(s, path, ol.alpha, -ENOEXEC);
        /* Cut inside the ELF header. */
        write_file(path, buf, 20);
        assert_no_symbol(s, path, ol.alpha, -ENOEXEC);

        /* Section headers past the end. */
        memcpy(copy, buf, size);
        eh = (Elf64_Ehdr *) copy;
        eh->e_shoff = size + 4096;
        write_file(path, copy, size);
        assert_no_symbol(s, path, ol.alpha, -ENOEXEC);
        /* Program headers past the end. */
        memcpy(copy, buf, size);
        eh->e_phoff = size - 8;
        write_file(path, copy, size);
        assert_no_symbol(s, path, ol.alpha, -ENOEXEC);
        /* A relocatable object: no loadable segments to map offsets with. */
        memcpy(copy, buf, size);
        eh->e_type = ET_REL;
        write_file(path, copy, size);
        assert_no_symbol(s, path, ol.alpha, -ENOEXEC);

        /* .symtab's data past the end: .dynsym still names the exported functions. */
        memcpy(copy, buf, size);
        sh = find_section(copy, size, SHT_SYMTAB);
        sh->sh_offset = size + 4096;
        write_file(path, copy, size);
        assert_symbol(s, path, ol.alpha + 5, "ts_target_alpha", 5);
        assert_no_symbol(s, path, ol.hidden, -ENOENT);
        s = symbolizer_free(s);
        assert_int_equal(symbolizer_new(NULL, &s), 0);

        /* .symtab's string table link pointing at itself, then far out of range. */
        memcpy(copy, buf, size);
        sh = find_section(copy, size, SHT_SYMTAB);
        sh->sh_link = (uint32_t) (((char *) sh - (copy + eh->e_shoff)) / eh->e_shentsize);
        write_file(path, copy, size);
        assert_symbol(s, path, ol.alpha, "ts_target_alpha", 0);
        s = symbolizer_free(s);
        assert_int_equal(symbolizer_new(NULL, &s), 0);
        sh->sh_link = 0xffff;
        write_file(path, copy, size);
        assert_symbol(s, path, ol.beta, "ts_target_beta", 0);
        s = symbolizer_free(s);
        assert_int_equal(symbolizer_new(NULL, &s), 0);

        /* A symbol table claiming more entries than the file has bytes. */
        memcpy(copy, buf, size);
        sh = find_section(copy, size, SHT_DYNSYM);
        sh->sh_size = UINT64_C(1) << 40;
        write_file(path, copy, size);
        assert_symbol(s, path, ol.hidden, "ts_target_hidden", 0);
}

static uint64_t rng_state = 0x2545f4914f6cdd1dULL;

static uint64_t rng(void) {
        /* xorshift64: the same bytes on every run, so a failure can be replayed. */
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        return rng_state;
}

/* Random bytes, and the library with random bytes of its headers, tables and code changed:
 * any answer but a crash (the ASan build checks every read). */
static void test_hostile(void **state) {
        _cleanup_free_ char *buf = NULL, *copy = NULL;
        char path[PATH];
        size_t size;
        Offsets ol;

        target_offsets(pie, lib, &ol);
        buf = slurp(lib, &size);
        copy = malloc(size);
        assert_non_null(copy);
        snprintf(path, sizeof(path), "%s/hostile", tmpdir);

        for (size_t i = 0; i < size; i++)
                copy[i] = (char) rng();
        write_file(path, copy, size);
        {
                _cleanup_(symbolizer_freep) Symbolizer *s = NULL;

                assert_int_equal(symbolizer_new(NULL, &s), 0);
                assert_no_symbol(s, path, ol.alpha, -ENOEXEC);
                /* Random bytes behind an ELF64 header's magic. */
                memcpy(copy, buf, 8);
                write_file(path, copy, size);
                assert_true(lookup_path(s, path, ol.alpha, &(SymbolizedFrame) {}) < 0);
        }

        for (int round = 0; round < 3000; round++) {
                _cleanup_(symbolizer_freep) Symbolizer *s = NULL;
                SymbolizedFrame f = {};
                size_t n = 1 + rng() % 16, cut = size;
                int r;

                memcpy(copy, buf, size);
                for (size_t k = 0; k < n; k++) {
                        /* Mostly the ELF header, program and section headers (start and end of
                         * the file), sometimes anywhere. */
                        size_t at = rng() % 4 == 0 ? rng() % size : rng() % 2 ? rng() % 1024 : size - 1 - rng() % 2048;

                        copy[at] = (char) (rng() % 3 == 0 ? 0xff : rng());
                }
                if (rng() % 8 == 0)
                        cut = rng() % size;
                write_file(path, copy, cut);
                assert_int_equal(symbolizer_new(NULL, &s), 0);
                for (int k = 0; k < 4; k++) {
                        uint64_t off = k == 0 ? ol.alpha : k == 1 ? ol.hidden : rng() % (size + 64);

                        r = lookup_path(s, path, off, &f);
                        if (r == 0) {
                                assert_non_null(f.symbol);
                                assert_true(strlen(f.symbol) < SYMBOLIZER_NAME_MAX);
                                free(f.symbol);
                        } else
                                assert_true(r == -ENOENT || r == -ENOEXEC || r == -E2BIG);
                }
        }
}

/* The bytes a load of path reads: its symbol tables and their string tables, by the section
 * headers (as the symbolizer checks them before reading). */
static uint64_t tables_size(const char *path) {
        _cleanup_free_ char *buf = NULL;
        Elf64_Ehdr *eh;
        uint64_t total = 0;
        size_t size;

        buf = slurp(path, &size);
        eh = (Elf64_Ehdr *) buf;
        for (size_t i = 0; i < eh->e_shnum; i++) {
                Elf64_Shdr *sh = (Elf64_Shdr *) (buf + eh->e_shoff + i * eh->e_shentsize);

                if (sh->sh_type != SHT_SYMTAB && sh->sh_type != SHT_DYNSYM)
                        continue;
                total += sh->sh_size;
                total += ((Elf64_Shdr *) (buf + eh->e_shoff + sh->sh_link * eh->e_shentsize))->sh_size;
        }
        return total;
}

static void assert_symbol_fd(Symbolizer *s, int fd, uint64_t offset, SymbolizerBudget *budget, const char *symbol) {
        SymbolizedFrame f = {};

        assert_int_equal(symbolizer_lookup_fd(s, fd, offset, budget, &f), 0);
        assert_string_equal(f.symbol, symbol);
        free(f.symbol);
}

/* A file is read only when the descriptor is the file the caller names: never through a symlink,
 * never another file that took the path, never a FIFO or a directory, never past the size. */
static void test_open_by_identity(void **state) {
        _cleanup_(symbolizer_freep) Symbolizer *s = NULL;
        char path[PATH], link[PATH], fifo[PATH], other[PATH];
        struct stat st;
        struct timespec later;
        Offsets ol;
        int fd = -1;

        target_offsets(pie, lib, &ol);
        assert_int_equal(symbolizer_new(NULL, &s), 0);
        snprintf(path, sizeof(path), "%s/ident", tmpdir);
        copy_file(lib, path, false);
        assert_int_equal(stat(path, &st), 0);

        assert_int_equal(symbolizer_open(path, st.st_dev, st.st_ino, &st.st_ctim, UINT64_MAX, &fd), 0);
        assert_symbol_fd(s, fd, ol.alpha, NULL, "ts_target_alpha");
        close(fd);
        /* Another inode, device or change time is another file (or another version of it). */
        assert_int_equal(symbolizer_open(path, st.st_dev, st.st_ino + 1, NULL, UINT64_MAX, &fd), -ESTALE);
        assert_int_equal(symbolizer_open(path, st.st_dev + 1, st.st_ino, NULL, UINT64_MAX, &fd), -ESTALE);
        later = (struct timespec) { .tv_sec = st.st_ctim.tv_sec, .tv_nsec = (st.st_ctim.tv_nsec + 1) % 1000000000 };
        assert_int_equal(symbolizer_open(path, st.st_dev, st.st_ino, &later, UINT64_MAX, &fd), -ESTALE);
        assert_int_equal(symbolizer_open(path, st.st_dev, st.st_ino, &st.st_ctim, 4096, &fd), -EFBIG);
        /* The same proof of a descriptor opened otherwise (a process's mapping). */
        fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(symbolizer_check_fd(fd, st.st_dev, st.st_ino, &st.st_ctim, UINT64_MAX), 0);
        assert_int_equal(symbolizer_check_fd(fd, st.st_dev, st.st_ino, NULL, UINT64_MAX), 0);
        assert_int_equal(symbolizer_check_fd(fd, st.st_dev, st.st_ino + 1, NULL, UINT64_MAX), -ESTALE);
        assert_int_equal(symbolizer_check_fd(fd, st.st_dev, st.st_ino, &later, UINT64_MAX), -ESTALE);
        assert_int_equal(symbolizer_check_fd(fd, st.st_dev, st.st_ino, NULL, 4096), -EFBIG);
        close(fd);

        /* A symlink to the very file is refused all the same: the last component is never followed. */
        snprintf(link, sizeof(link), "%s/ident-link", tmpdir);
        assert_int_equal(symlink(path, link), 0);
        assert_int_equal(symbolizer_open(link, st.st_dev, st.st_ino, NULL, UINT64_MAX, &fd), -ELOOP);

        /* Another file renamed over the path: the old identity does not open it. */
        snprintf(other, sizeof(other), "%s/ident-other", tmpdir);
        copy_file(pie, other, false);
        assert_int_equal(rename(other, path), 0);
        assert_int_equal(symbolizer_open(path, st.st_dev, st.st_ino, NULL, UINT64_MAX, &fd), -ESTALE);

        /* A FIFO without a writer: no hang; a directory. */
        snprintf(fifo, sizeof(fifo), "%s/ident-fifo", tmpdir);
        assert_int_equal(mkfifo(fifo, 0600), 0);
        assert_int_equal(stat(fifo, &st), 0);
        assert_int_equal(symbolizer_open(fifo, st.st_dev, st.st_ino, NULL, UINT64_MAX, &fd), -EBADFD);
        assert_int_equal(stat(tmpdir, &st), 0);
        assert_int_equal(symbolizer_open(tmpdir, st.st_dev, st.st_ino, NULL, UINT64_MAX, &fd), -EISDIR);
}

/* Tables over max_read_bytes are refused from the section headers, before anything of them is
 * read, and the file is then answered from memory; so are files that are not ELF, until they
 * change. */
static void test_outcomes_remembered(void **state) {
        _cleanup_(symbolizer_freep) Symbolizer *s = NULL;
        uint64_t tables = tables_size(lib);
        char path[PATH];
        SymbolizerStats st;
        Offsets ol;

        target_offsets(pie, lib, &ol);
        assert_int_equal(symbolizer_new(&(SymbolizerConfig) { .max_read_bytes = tables - 1 }, &s), 0);
        assert_no_symbol(s, lib, ol.alpha, -E2BIG);
        assert_no_symbol(s, lib, ol.beta, -E2BIG);
        symbolizer_get_stats(s, &st);
        assert_int_equal(st.loads, 0);
        assert_int_equal(st.remembered, 1);
        s = symbolizer_free(s);
        assert_int_equal(symbolizer_new(&(SymbolizerConfig) { .max_read_bytes = tables }, &s), 0);
        assert_symbol(s, lib, ol.alpha, "ts_target_alpha", 0);

        snprintf(path, sizeof(path), "%s/outcome", tmpdir);
        write_file(path, "#!/bin/sh\n", 10);
        assert_no_symbol(s, path, 0, -ENOEXEC);
        assert_no_symbol(s, path, 0, -ENOEXEC);
        symbolizer_get_stats(s, &st);
        assert_int_equal(st.remembered, 1);
        /* Rewritten in place (same inode): another size, modification and change time. */
        copy_file(lib, path, true);
        assert_symbol(s, path, ol.alpha, "ts_target_alpha", 0);
        symbolizer_get_stats(s, &st);
        assert_int_equal(st.remembered, 1);
}

/* A load takes one file and its tables' bytes from the budget; past it -EDQUOT, nothing read
 * and nothing remembered; cached tables are free. */
static void test_budget(void **state) {
        _cleanup_(symbolizer_freep) Symbolizer *s = NULL;
        SymbolizerBudget budget = { .files = 1, .bytes = UINT64_MAX };
        _cleanup_close_ int fd_pie = -1, fd_lib = -1;
        SymbolizedFrame f = {};
        SymbolizerStats st;
        Offsets o, ol;

        target_offsets(pie, NULL, &o);
        target_offsets(pie, lib, &ol);
        fd_pie = open(pie, O_RDONLY | O_CLOEXEC);
        fd_lib = open(lib, O_RDONLY | O_CLOEXEC);
        assert_true(fd_pie >= 0 && fd_lib >= 0);
        assert_int_equal(symbolizer_new(NULL, &s), 0);

        assert_symbol_fd(s, fd_pie, o.alpha, &budget, "ts_target_alpha");
        assert_int_equal(budget.files, 0);
        assert_int_equal(budget.bytes, UINT64_MAX - tables_size(pie));
        assert_symbol_fd(s, fd_pie, o.beta, &budget, "ts_target_beta");
        assert_int_equal(symbolizer_lookup_fd(s, fd_lib, ol.alpha, &budget, &f), -EDQUOT);
        symbolizer_get_stats(s, &st);
        assert_int_equal(st.loads, 1);
        assert_int_equal(st.hits, 1);
        assert_int_equal(st.remembered, 0);

        /* Bytes: one short of the tables. */
        budget = (SymbolizerBudget) { .files = 1, .bytes = tables_size(lib) - 1 };
        assert_int_equal(symbolizer_lookup_fd(s, fd_lib, ol.alpha, &budget, &f), -EDQUOT);
        assert_int_equal(budget.files, 1);
        budget.bytes++;
        assert_symbol_fd(s, fd_lib, ol.alpha, &budget, "ts_target_alpha");
        assert_int_equal(budget.bytes, 0);
        assert_int_equal(budget.files, 0);
}

/* The worker opens absolute paths only (a relative one is a name BPF cut short): path made
 * absolute into buf. */
static SymbolRequest worker_request(const char *path, uint32_t uid, uint64_t offset, char buf[static PATH_MAX]) {
        struct stat st;

        assert_non_null(realpath(path, buf));
        assert_int_equal(stat(buf, &st), 0);
        return (SymbolRequest) { .uid = uid, .dev = st.st_dev, .ino = st.st_ino, .ctime = st.st_ctim,
                                 .offset = offset, .path = buf };
}

/* The worker's answers to the first n requests, taken as the collector takes them (at each drain)
 * until all n are in; a minute at most. */
static void take_results(SymbolWorker *w, size_t n, SymbolResult **ret) {
        SymbolResult *all = NULL;
        size_t n_all = 0;
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + 60 * USEC_PER_SEC;

        while (n_all < n) {
                SymbolResult *some;
                size_t n_some;

                symbol_worker_take(w, &some, &n_some);
                if (n_some > 0) {
                        all = reallocarray(all, n_all + n_some, sizeof(SymbolResult));
                        assert_non_null(all);
                        memcpy(all + n_all, some, n_some * sizeof(SymbolResult));
                        n_all += n_some;
                }
                free(some);
                if (n_all < n) {
                        assert_true(now_usec(CLOCK_MONOTONIC) < deadline);
                        (void) usleep(1000);
                }
        }
        assert_int_equal(n_all, n);
        *ret = all;
}

/* The worker answers on its own thread, each uid within its own share of files. */
static void test_worker(void **state) {
        _cleanup_(symbol_worker_freep) SymbolWorker *w = NULL;
        SymbolResult *results = NULL;
        char copy[PATH], buf[PATH_MAX];
        SymbolRequest q;
        size_t n = 0;
        Offsets o, ol;

        target_offsets(pie, NULL, &o);
        target_offsets(pie, lib, &ol);
        snprintf(copy, sizeof(copy), "%s/worker-lib", tmpdir);
        copy_file(lib, copy, false);
        assert_int_equal(symbol_worker_new(&(SymbolWorkerConfig) { .files_per_minute = 1, .proc_fd = -1 }, &w), 0);

        q = worker_request(pie, 1000, o.alpha, buf);
        assert_int_equal(symbol_worker_submit(w, &q), 0);
        q = worker_request(lib, 1000, ol.alpha, buf);
        assert_int_equal(symbol_worker_submit(w, &q), 0);
        q = worker_request(lib, 1001, ol.beta, buf);
        assert_int_equal(symbol_worker_submit(w, &q), 0);
        /* Not the version named: changed since. */
        q = worker_request(copy, 1002, ol.alpha, buf);
        q.ctime.tv_sec--;
        assert_int_equal(symbol_worker_submit(w, &q), 0);
        /* A relative path (a name BPF cut short) is not opened at all: no answer about a file. */
        q = worker_request(pie, 1003, o.alpha, buf);
        q.path = (char *) "symbolize-target-pie";
        assert_int_equal(symbol_worker_submit(w, &q), 0);
        n = 5;
        take_results(w, n, &results);
        assert_int_equal(results[0].error, 0);
        assert_string_equal(results[0].symbol, "ts_target_alpha");
        assert_int_equal(results[1].error, -EDQUOT);
        assert_null(results[1].symbol);
        assert_int_equal(results[2].error, 0);
        assert_string_equal(results[2].symbol, "ts_target_beta");
        assert_int_equal(results[3].error, -ESTALE);
        assert_true(results[3].unreadable);
        assert_int_equal(results[4].error, -ENOENT);
        assert_true(results[4].unreadable);
        assert_int_equal(results[4].mapping_error, -ENODATA);
        assert_false(results[0].unreadable || results[1].unreadable || results[2].unreadable);
        assert_int_equal(symbol_worker_refused(w), 1);
        assert_int_equal(symbol_worker_unreadable(w), 2);
        symbol_results_free(results, n);
        symbol_worker_take(w, &results, &n);
        assert_int_equal(n, 0);
        free(results);
}

/* A request for the file of this process's mapping of a library deleted since it was mapped: read
 * through the mapping where the kernel lets this process open map_files (root), else not read at
 * all, as by path (gone); never, either way, another file mapped at the address given. */
static void test_worker_mapping(void **state) {
        _cleanup_(symbol_worker_freep) SymbolWorker *w = NULL;
        uint64_t tick_ns = NSEC_PER_SEC / (uint64_t) sysconf(_SC_CLK_TCK), page = (uint64_t) sysconf(_SC_PAGESIZE);
        int real = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd;
        bool root = geteuid() == 0;
        SymbolResult *results = NULL;
        SymbolRequest q, bare, elsewhere;
        char path[PATH], buf[PATH_MAX];
        struct stat st;
        ProcStat ps;
        size_t n = 0;
        void *map;
        Offsets ol;

        target_offsets(pie, lib, &ol);
        snprintf(path, sizeof(path), "%s/mapped-lib", tmpdir);
        copy_file(lib, path, false);
        q = worker_request(path, 1000, ol.alpha, buf);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(fstat(fd, &st), 0);
        map = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        assert_true(map != MAP_FAILED);
        close(fd);
        assert_int_equal(unlink(path), 0);
        assert_true(real >= 0);
        assert_int_equal(proc_read_stat(real, (uint32_t) getpid(), &ps), 0);
        q.pid = (uint32_t) getpid();
        q.start_time = ps.start_ticks * tick_ns;
        q.map_start = (uintptr_t) map;
        q.map_end = q.map_start + ((uint64_t) st.st_size + page - 1) / page * page;
        bare = q;
        bare.map_start = bare.map_end = 0;
        /* The first page of this process's heap: mapped, but not the library. */
        elsewhere = q;
        elsewhere.map_start = (uintptr_t) sbrk(0) & ~(page - 1);
        elsewhere.map_end = elsewhere.map_start + page;

        assert_int_equal(symbol_worker_new(&(SymbolWorkerConfig) { .proc_fd = real }, &w), 0);
        assert_int_equal(symbol_worker_submit(w, &q), 0);
        assert_int_equal(symbol_worker_submit(w, &bare), 0);
        assert_int_equal(symbol_worker_submit(w, &elsewhere), 0);
        n = 3;
        take_results(w, n, &results);
        if (root) {
                assert_int_equal(results[0].mapping_error, 0);
                assert_int_equal(results[0].error, 0);
                assert_false(results[0].unreadable);
                assert_string_equal(results[0].symbol, "ts_target_alpha");
        } else {
                assert_int_equal(results[0].mapping_error, -EPERM);
                assert_int_equal(results[0].error, -ENOENT);
                assert_true(results[0].unreadable);
        }
        assert_int_equal(results[1].mapping_error, -ENODATA);
        assert_int_equal(results[1].error, -ENOENT);
        assert_true(results[1].unreadable);
        /* The heap is no file: map_files has no entry for it (the lookup says so before it asks
         * for the privilege). */
        assert_int_equal(results[2].mapping_error, -ENOENT);
        assert_int_equal(results[2].error, -ENOENT);
        assert_true(results[2].unreadable);
        assert_null(results[2].symbol);
        assert_int_equal(symbol_worker_unreadable(w), root ? 2 : 3);
        symbol_results_free(results, n);
        assert_int_equal(munmap(map, (size_t) st.st_size), 0);
        close(real);
}

int main(int argc, char *argv[]) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pie),
                cmocka_unit_test(test_exec),
                cmocka_unit_test(test_shared_library),
                cmocka_unit_test(test_cache),
                cmocka_unit_test(test_cache_limits),
                cmocka_unit_test(test_rewritten_in_place),
                cmocka_unit_test(test_not_readable),
                cmocka_unit_test(test_damaged),
                cmocka_unit_test(test_hostile),
                cmocka_unit_test(test_open_by_identity),
                cmocka_unit_test(test_outcomes_remembered),
                cmocka_unit_test(test_budget),
                cmocka_unit_test(test_worker),
                cmocka_unit_test(test_worker_mapping),
        };

        if (argc != 6) {
                fprintf(stderr, "usage: test-symbolize PIE PIE-STRIPPED EXEC LIBRARY LIBRARY-STRIPPED\n");
                return 2;
        }
        pie = argv[1];
        pie_stripped = argv[2];
        exec_nopie = argv[3];
        lib = argv[4];
        lib_stripped = argv[5];
        return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
