/* SPDX-License-Identifier: MIT */
/* A filesystem with one read-only file whose every read waits a known time: a process that maps
 * it and touches its pages takes major faults (each waits for a read), so the fault time trapstatd
 * measures as major must be at least the reads' total wait. FUSE (libfuse 3), in the foreground.
 *
 * usage: slow-file MOUNTPOINT PAGES DELAY_MS COUNT_FILE
 * MOUNTPOINT/data has PAGES pages of bytes (byte i is i % 251). Every read of it sleeps DELAY_MS
 * and then adds one to the number in COUNT_FILE (rewritten whole each time): the reads served,
 * however the kernel's readahead grouped the pages. Unmount (umount MOUNTPOINT) or SIGTERM ends it. */
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static off_t file_size;
static long delay_ms;
static const char *count_path;
static unsigned long reads;

static int sf_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
        (void) fi;
        memset(st, 0, sizeof(*st));
        if (strcmp(path, "/") == 0) {
                st->st_mode = S_IFDIR | 0555;
                st->st_nlink = 2;
                return 0;
        }
        if (strcmp(path, "/data") != 0)
                return -ENOENT;
        st->st_mode = S_IFREG | 0444;
        st->st_nlink = 1;
        st->st_size = file_size;
        return 0;
}

static int sf_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off, struct fuse_file_info *fi,
                      enum fuse_readdir_flags flags) {
        (void) off, (void) fi, (void) flags;
        if (strcmp(path, "/") != 0)
                return -ENOENT;
        fill(buf, ".", NULL, 0, 0);
        fill(buf, "..", NULL, 0, 0);
        fill(buf, "data", NULL, 0, 0);
        return 0;
}

static int sf_open(const char *path, struct fuse_file_info *fi) {
        if (strcmp(path, "/data") != 0)
                return -ENOENT;
        return (fi->flags & O_ACCMODE) == O_RDONLY ? 0 : -EACCES;
}

static void count_read(void) {
        FILE *f = fopen(count_path, "w");

        reads++;
        if (f) {
                fprintf(f, "%lu\n", reads);
                fclose(f);
        }
}

static int sf_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
        struct timespec wait = { delay_ms / 1000, (delay_ms % 1000) * 1000000L };

        (void) path, (void) fi;
        if (off >= file_size)
                return 0;
        if ((off_t) size > file_size - off)
                size = (size_t) (file_size - off);
        while (nanosleep(&wait, &wait) < 0 && errno == EINTR)
                ;
        for (size_t i = 0; i < size; i++)
                buf[i] = (char) ((off + (off_t) i) % 251);
        count_read();
        return (int) size;
}

static const struct fuse_operations ops = {
        .getattr = sf_getattr,
        .readdir = sf_readdir,
        .open = sf_open,
        .read = sf_read,
};

int main(int argc, char *argv[]) {
        long pages;

        if (argc != 5 || (pages = strtol(argv[2], NULL, 10)) <= 0 || (delay_ms = strtol(argv[3], NULL, 10)) < 0) {
                fprintf(stderr, "usage: slow-file MOUNTPOINT PAGES DELAY_MS COUNT_FILE\n");
                return 2;
        }
        file_size = (off_t) pages * sysconf(_SC_PAGESIZE);
        count_path = argv[4];
        FILE *f = fopen(count_path, "w"); /* 0 before the mount */
        if (!f || fprintf(f, "0\n") < 0 || fclose(f) != 0) {
                perror(count_path);
                return 1;
        }
        /* Foreground, single-threaded: reads are served one after the other, each waits whole. */
        char *fuse_argv[] = { argv[0], "-f", "-s", "-o", "ro,default_permissions,allow_other", argv[1], NULL };
        return fuse_main(6, fuse_argv, &ops, NULL);
}
