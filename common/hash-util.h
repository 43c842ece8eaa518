/* SPDX-License-Identifier: MIT */
#pragma once

/* Hashing for the tables of open addressing (the collector's process index, the store's pending
 * sums). */

#include <stdint.h>

/* The splitmix64 finalizer: keys that come in sequence (pids, row ids, start times) spread over
 * a table whose size is a power of two. */
static inline uint64_t hash_mix64(uint64_t h) {
        h ^= h >> 30;
        h *= UINT64_C(0xbf58476d1ce4e5b9);
        h ^= h >> 27;
        h *= UINT64_C(0x94d049bb133111eb);
        h ^= h >> 31;
        return h;
}
