/* SPDX-License-Identifier: MIT */
/* Loads one reference hot path of bench/reference.bpf.c, prints "attached", and on SIGINT or
 * SIGTERM prints what it counted: "total N" (floor) or one "PID N" line per process (hash).
 *
 * usage: reference floor|hash */

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reference.skel.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
        (void) sig;
        stop = 1;
}

static unsigned long long sum_cpus(int fd, const void *key, int n_cpus) {
        unsigned long long values[n_cpus], total = 0;

        if (bpf_map_lookup_elem(fd, key, values) < 0)
                return 0;
        for (int i = 0; i < n_cpus; i++)
                total += values[i];
        return total;
}

int main(int argc, char *argv[]) {
        bool floor_mode = argc == 2 && strcmp(argv[1], "floor") == 0;
        int n_cpus = libbpf_num_possible_cpus();
        struct reference_bpf *skel;
        struct bpf_link *link;

        if (argc != 2 || (!floor_mode && strcmp(argv[1], "hash") != 0)) {
                fprintf(stderr, "usage: reference floor|hash\n");
                return 2;
        }
        skel = reference_bpf__open();
        if (!skel)
                return 1;
        bpf_program__set_autoload(floor_mode ? skel->progs.count_hash : skel->progs.count_floor, false);
        if (reference_bpf__load(skel) < 0) {
                fprintf(stderr, "reference: failed to load\n");
                return 1;
        }
        link = bpf_program__attach(floor_mode ? skel->progs.count_floor : skel->progs.count_hash);
        if (!link) {
                fprintf(stderr, "reference: failed to attach\n");
                return 1;
        }
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        printf("attached\n");
        fflush(stdout);
        while (!stop)
                pause();

        if (floor_mode) {
                unsigned int zero = 0;
                printf("total %llu\n", sum_cpus(bpf_map__fd(skel->maps.floor_count), &zero, n_cpus));
        } else {
                int fd = bpf_map__fd(skel->maps.hash_count);
                unsigned int key, next, *prev = NULL;

                while (bpf_map_get_next_key(fd, prev, &next) == 0) {
                        key = next;
                        printf("%u %llu\n", key, sum_cpus(fd, &key, n_cpus));
                        prev = &key;
                }
        }
        bpf_link__destroy(link);
        reference_bpf__destroy(skel);
        return 0;
}
