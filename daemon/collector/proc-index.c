/* SPDX-License-Identifier: MIT */
#include "proc-index.h"

#include <errno.h>
#include <stdlib.h>

#include "array-util.h"
#include "hash-util.h"

/* At most this many entries in 8 slots: past it, the table doubles. */
#define LOAD_EIGHTHS 5
#define MIN_CAPACITY 64

/* pids come in sequence and start times in nanoseconds: mixed (the splitmix64 finalizer) so that
 * neighbours spread over the table. */
static size_t slot_of(const ProcIndex *x, uint32_t pid, uint64_t start_time) {
        return (size_t) hash_mix64(start_time ^ ((uint64_t) pid << 32 | pid)) & (x->capacity - 1);
}

static size_t find(const ProcIndex *x, uint32_t pid, uint64_t start_time) {
        size_t i = slot_of(x, pid, start_time);

        while (x->entries[i].value && (x->entries[i].pid != pid || x->entries[i].start_time != start_time))
                i = (i + 1) & (x->capacity - 1);
        return i;
}

void proc_index_done(ProcIndex *x) {
        free(x->entries);
        *x = (ProcIndex) {};
}

void *proc_index_get(const ProcIndex *x, uint32_t pid, uint64_t start_time) {
        if (x->n == 0)
                return NULL;
        return x->entries[find(x, pid, start_time)].value;
}

static int grow(ProcIndex *x) {
        ProcIndex bigger = { .capacity = x->capacity ? x->capacity * 2 : MIN_CAPACITY };

        bigger.entries = calloc(bigger.capacity, sizeof(ProcIndexEntry));
        if (!bigger.entries)
                return -ENOMEM;
        for (size_t i = 0; i < x->capacity; i++)
                if (x->entries[i].value)
                        bigger.entries[find(&bigger, x->entries[i].pid, x->entries[i].start_time)] = x->entries[i];
        bigger.n = x->n;
        free(x->entries);
        *x = bigger;
        return 0;
}

int proc_index_put(ProcIndex *x, uint32_t pid, uint64_t start_time, void *value) {
        size_t i;
        int r;

        if ((x->n + 1) * 8 > x->capacity * LOAD_EIGHTHS && (r = grow(x)) < 0)
                return r;
        i = find(x, pid, start_time);
        if (x->entries[i].value)
                return -EEXIST;
        x->entries[i] = (ProcIndexEntry) { .start_time = start_time, .pid = pid, .value = value };
        x->n++;
        return 0;
}

void *proc_index_remove(ProcIndex *x, uint32_t pid, uint64_t start_time) {
        size_t mask = x->capacity - 1, i, j;
        void *value;

        if (x->n == 0)
                return NULL;
        i = find(x, pid, start_time);
        value = x->entries[i].value;
        if (!value)
                return NULL;
        /* The entries after it that probed past i move back into the hole (Knuth's algorithm R),
         * so that every entry stays reachable from its home slot without tombstones. */
        for (j = (i + 1) & mask; x->entries[j].value; j = (j + 1) & mask) {
                size_t home = slot_of(x, x->entries[j].pid, x->entries[j].start_time);

                /* Stays when its home lies cyclically in (i, j]. */
                if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
                        continue;
                x->entries[i] = x->entries[j];
                i = j;
        }
        x->entries[i] = (ProcIndexEntry) {};
        x->n--;
        return value;
}

int proc_keys_add(ProcKeys *s, uint32_t pid, uint64_t start_time) {
        ProcKey key = { .pid = pid, .start_time = start_time };

        s->sorted = false;
        return array_append((void **) &s->keys, &s->n, &s->capacity, sizeof(key), &key);
}

static int proc_key_compare(const void *a, const void *b) {
        const ProcKey *x = a, *y = b;

        if (x->pid != y->pid)
                return x->pid < y->pid ? -1 : 1;
        return x->start_time < y->start_time ? -1 : x->start_time > y->start_time;
}

bool proc_keys_contain(ProcKeys *s, uint32_t pid, uint64_t start_time) {
        ProcKey key = { .pid = pid, .start_time = start_time };

        if (s->n == 0)
                return false;
        if (!s->sorted) {
                qsort(s->keys, s->n, sizeof(ProcKey), proc_key_compare);
                s->sorted = true;
        }
        return bsearch(&key, s->keys, s->n, sizeof(ProcKey), proc_key_compare) != NULL;
}

void proc_keys_clear(ProcKeys *s) {
        s->n = 0;
        s->sorted = true;
}

void proc_keys_done(ProcKeys *s) {
        free(s->keys);
        *s = (ProcKeys) {};
}
