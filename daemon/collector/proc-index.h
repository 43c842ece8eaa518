/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Processes by identity, (pid, start time), in a hash table: a lookup, an insert and a removal
 * cost the same at 100 processes as at 100000 (open addressing, linear probing, removal by
 * moving the entries after it back, so no tombstones pile up in a storm of births and deaths).
 * The values are the caller's; the index never frees them. */
typedef struct ProcIndexEntry {
        uint64_t start_time;
        uint32_t pid;
        void *value; /* NULL: an empty entry */
} ProcIndexEntry;

typedef struct ProcIndex {
        ProcIndexEntry *entries;
        size_t capacity; /* a power of two, or 0 */
        size_t n;
} ProcIndex;

void proc_index_done(ProcIndex *x);
/* NULL when absent. */
void *proc_index_get(const ProcIndex *x, uint32_t pid, uint64_t start_time);
/* value must not be NULL. -EEXIST if the identity is there already, -ENOMEM. */
int proc_index_put(ProcIndex *x, uint32_t pid, uint64_t start_time, void *value);
/* The value removed, NULL when absent. */
void *proc_index_remove(ProcIndex *x, uint32_t pid, uint64_t start_time);
/* A set of identities, gathered in a tick and looked up (sorted at the first lookup after an
 * add); emptied with proc_keys_clear(), which keeps the memory for the next tick. */
typedef struct ProcKey {
        uint32_t pid;
        uint64_t start_time;
} ProcKey;

typedef struct ProcKeys {
        ProcKey *keys;
        size_t n, capacity;
        bool sorted;
} ProcKeys;

int proc_keys_add(ProcKeys *s, uint32_t pid, uint64_t start_time);
bool proc_keys_contain(ProcKeys *s, uint32_t pid, uint64_t start_time);
void proc_keys_clear(ProcKeys *s);
void proc_keys_done(ProcKeys *s);

/* Every value once, in no particular order; the index must not change meanwhile. */
#define PROC_INDEX_FOREACH(x, v)                                                                 \
        for (size_t proc_index_i_ = 0; proc_index_i_ < (x)->capacity; proc_index_i_++)           \
                if (((v) = (x)->entries[proc_index_i_].value) != NULL)
