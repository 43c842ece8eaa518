/* SPDX-License-Identifier: MIT */
#pragma once

/* A small mutator for replay.c's --mutate: builds without libFuzzer (gcc, CI) and, like
 * libFuzzer's own with a dictionary, knows nothing but bytes and tokens. It is tuned for text
 * calls: it swaps JSON numbers and strings for edge values, a value for one of another type,
 * inserts dictionary tokens (member names, enum values) and members, splices two inputs, and
 * flips, inserts and erases bytes. Deterministic: the same seed gives the same inputs. */

#include <stddef.h>
#include <stdint.h>

typedef struct Mutator Mutator;

/* dict_path: a libFuzzer dictionary ("token" per line, # comments), or NULL. -errno. */
int mutator_new(uint64_t seed, const char *dict_path, Mutator **ret);
Mutator *mutator_free(Mutator *m);

/* A new input (malloc'd, *ret_size bytes, at most max_size) from data, mutated one to four
 * times, sometimes spliced with other (may be NULL). -ENOMEM. */
int mutator_run(Mutator *m, const uint8_t *data, size_t size, const uint8_t *other, size_t other_size,
                size_t max_size, uint8_t **ret, size_t *ret_size);
