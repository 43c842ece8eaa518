/* SPDX-License-Identifier: MIT */
/* Runs a fuzz target over saved inputs without libFuzzer: the seed corpus and minimized crash
 * reproducers become regression tests in the ordinary build (and under ASan+UBSan).
 *
 *   replay [--mutate N --seed S --seconds T --dict FILE --save-last FILE] FILE|DIRECTORY...
 *
 * A directory stands for the regular files in it, in name order. Fails when there is nothing to
 * replay, so that a wrong path cannot make the test pass vacuously.
 *
 * With --mutate, after the replay, N inputs more, each a replayed one mutated (mutate.h), in at
 * most T seconds (0: no limit): a bounded fuzzing run for CI, where libFuzzer is not built. The
 * same seed gives the same inputs; --save-last writes each to FILE before it runs, so that the
 * one that crashed is left there to replay. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fuzz.h"
#include "macro.h"
#include "mutate.h"

/* libFuzzer's default -max_len. */
#define MUTATE_MAX_SIZE 4096U

/* The inputs replayed, kept for --mutate. */
typedef struct Input {
        uint8_t *data;
        size_t size;
} Input;

static Input *inputs;
static size_t n_inputs;
static bool keep_inputs;

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
        if (keep_inputs) {
                Input *grown = realloc(inputs, (n_inputs + 1) * sizeof(*grown));

                if (!grown)
                        return -ENOMEM;
                inputs = grown;
                inputs[n_inputs++] = (Input) { .data = TAKE_PTR(data), .size = size };
        }
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

static int write_file(const char *path, const uint8_t *data, size_t size) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        if (fd < 0)
                return -errno;
        for (size_t done = 0; done < size;) {
                ssize_t n = write(fd, data + done, size - done);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                done += (size_t) n;
        }
        return 0;
}

/* n mutated inputs, or as many as fit in seconds. */
static int mutate(unsigned long n, uint64_t seed, unsigned long seconds, const char *dict, const char *save_last) {
        struct timespec start, now;
        Mutator *m;
        unsigned long i;
        int r;

        r = mutator_new(seed, dict, &m);
        if (r < 0) {
                fprintf(stderr, "Failed to load dictionary %s: %s\n", dict ?: "-", strerror(-r));
                return r;
        }
        clock_gettime(CLOCK_MONOTONIC, &start);
        for (i = 0; i < n; i++) {
                const Input *a = &inputs[i % n_inputs], *b = &inputs[(i * 7 + 3) % n_inputs];
                _cleanup_free_ uint8_t *data = NULL;
                size_t size;

                clock_gettime(CLOCK_MONOTONIC, &now);
                if (seconds > 0 && (unsigned long) (now.tv_sec - start.tv_sec) >= seconds)
                        break;
                r = mutator_run(m, a->data, a->size, b->data, b->size, MUTATE_MAX_SIZE, &data, &size);
                if (r < 0)
                        break;
                if (save_last && (r = write_file(save_last, data, size)) < 0) {
                        fprintf(stderr, "Failed to write %s: %s\n", save_last, strerror(-r));
                        break;
                }
                LLVMFuzzerTestOneInput(data, size);
        }
        mutator_free(m);
        clock_gettime(CLOCK_MONOTONIC, &now);
        printf("%lu mutated inputs (seed %llu) in %.1f s\n", i, (unsigned long long) seed,
               (double) (now.tv_sec - start.tv_sec) + (double) (now.tv_nsec - start.tv_nsec) / 1e9);
        return r < 0 ? r : 0;
}

int main(int argc, char *argv[]) {
        const char *dict = NULL, *save_last = NULL;
        unsigned long n_mutations = 0, seconds = 0;
        unsigned long long seed = 1;
        size_t n = 0;
        int i;

        for (i = 1; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
                if (strcmp(argv[i], "--mutate") == 0)
                        n_mutations = strtoul(argv[i + 1], NULL, 10);
                else if (strcmp(argv[i], "--seed") == 0)
                        seed = strtoull(argv[i + 1], NULL, 10);
                else if (strcmp(argv[i], "--seconds") == 0)
                        seconds = strtoul(argv[i + 1], NULL, 10);
                else if (strcmp(argv[i], "--dict") == 0)
                        dict = argv[i + 1];
                else if (strcmp(argv[i], "--save-last") == 0)
                        save_last = argv[i + 1];
                else {
                        fprintf(stderr, "Unknown option %s\n", argv[i]);
                        return EXIT_FAILURE;
                }
        }
        keep_inputs = n_mutations > 0;

        for (; i < argc; i++) {
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
        if (n_mutations > 0 && mutate(n_mutations, seed, seconds, dict, save_last) < 0)
                return EXIT_FAILURE;
        for (size_t k = 0; k < n_inputs; k++)
                free(inputs[k].data);
        free(inputs);
        return EXIT_SUCCESS;
}
