/* SPDX-License-Identifier: MIT */
/* Runs a fuzz target over saved inputs without libFuzzer: the seed corpus and minimized crash
 * reproducers become regression tests in the ordinary build (and under ASan+UBSan).
 *
 *   replay FILE|DIRECTORY...
 *
 * A directory stands for the regular files in it, in name order. Fails when there is nothing to
 * replay, so that a wrong path cannot make the test pass vacuously. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "macro.h"

/* Reads the whole file into a buffer of exactly its size, so that ASan sees any read past it. */
static int read_file(const char *path, uint8_t **ret, size_t *ret_size) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        _cleanup_free_ uint8_t *buf = NULL;
        struct stat st;
        size_t done = 0;

        if (fd < 0 || fstat(fd, &st) < 0)
                return -errno;
        buf = malloc(st.st_size > 0 ? (size_t) st.st_size : 1);
        if (!buf)
                return -ENOMEM;
        while (done < (size_t) st.st_size) {
                ssize_t n = read(fd, buf + done, (size_t) st.st_size - done);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return -EIO; /* shrank while we read it */
                done += (size_t) n;
        }

        *ret = TAKE_PTR(buf);
        *ret_size = done;
        return 0;
}

static int replay_file(const char *path) {
        _cleanup_free_ uint8_t *data = NULL;
        size_t size = 0;
        int r;

        r = read_file(path, &data, &size);
        if (r < 0) {
                fprintf(stderr, "Failed to read %s: %s\n", path, strerror(-r));
                return r;
        }
        /* Named before it runs: a crash is then attributed to its input. */
        fprintf(stderr, "replaying %s (%zu bytes)\n", path, size);
        LLVMFuzzerTestOneInput(data, size);
        return 0;
}

static int only_regular(const struct dirent *d) {
        return d->d_type == DT_REG || d->d_type == DT_UNKNOWN;
}

static int replay_directory(const char *dir, size_t *n) {
        struct dirent **entries;
        int k, r = 0;

        k = scandir(dir, &entries, only_regular, alphasort);
        if (k < 0) {
                r = -errno;
                fprintf(stderr, "Failed to list %s: %s\n", dir, strerror(-r));
                return r;
        }
        for (int i = 0; i < k; i++) {
                _cleanup_free_ char *path = NULL;

                if (r == 0 && asprintf(&path, "%s/%s", dir, entries[i]->d_name) < 0)
                        r = -ENOMEM;
                if (r == 0)
                        r = replay_file(path);
                if (r == 0)
                        (*n)++;
                free(entries[i]);
        }
        free(entries);
        return r;
}

int main(int argc, char *argv[]) {
        size_t n = 0;

        for (int i = 1; i < argc; i++) {
                struct stat st;
                int r;

                if (stat(argv[i], &st) < 0) {
                        fprintf(stderr, "Failed to stat %s: %s\n", argv[i], strerror(errno));
                        return EXIT_FAILURE;
                }
                if (S_ISDIR(st.st_mode))
                        r = replay_directory(argv[i], &n);
                else {
                        r = replay_file(argv[i]);
                        n += r == 0;
                }
                if (r < 0)
                        return EXIT_FAILURE;
        }

        if (n == 0) {
                fprintf(stderr, "No inputs to replay.\n");
                return EXIT_FAILURE;
        }
        printf("%zu inputs replayed\n", n);
        return EXIT_SUCCESS;
}
