/* SPDX-License-Identifier: MIT */
#include "tick-batch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array-util.h"
#include "macro.h"

static int entry_compare(const TickEntry *a, const TickEntry *b) {
        return process_identity_compare(a->process.pid, a->process.start_time, b->process.pid, b->process.start_time);
}

static int entry_init(TickEntry *e, const ProcessSample *s);

/* qsort_r()'s: two indices into the entries. */
static int index_compare(const void *a, const void *b, void *entries) {
        const TickEntry *e = entries;

        return entry_compare(&e[*(const uint32_t *) a], &e[*(const uint32_t *) b]);
}

/* The entry of s's process among the first n of the order, or NULL. */
static TickEntry *batch_find(const TickBatch *b, size_t n, const ProcessSample *s) {
        TickEntry key = { .process = *s->process };
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = entry_compare(&b->entries[b->order[mid]], &key);

                if (c == 0)
                        return &b->entries[b->order[mid]];
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

/* Sorts the indices order[n_old..n_entries) of the entries appended last and merges them into
 * the sorted order[0..n_old), from the back: O(new log new + all), with 4-byte moves. */
static void order_merge(TickBatch *b, size_t n_old) {
        uint32_t *o = b->order;
        size_t n_new = b->n_entries - n_old, i = n_old, j = b->n_entries;
        _cleanup_free_ uint32_t *fresh = NULL;

        if (n_new == 0)
                return;
        qsort_r(o + n_old, n_new, sizeof(*o), index_compare, b->entries);
        if (n_old == 0 || index_compare(&o[n_old - 1], &o[n_old], b->entries) < 0)
                return; /* already in order: all new ones after the old */
        fresh = malloc(n_new * sizeof(*o));
        if (!fresh) {
                /* No room for the merge: sort the whole order (in place). */
                qsort_r(o, b->n_entries, sizeof(*o), index_compare, b->entries);
                return;
        }
        memcpy(fresh, o + n_old, n_new * sizeof(*o));
        for (size_t k = n_new; k > 0;) {
                if (i > 0 && index_compare(&o[i - 1], &fresh[k - 1], b->entries) > 0)
                        o[--j] = o[--i];
                else
                        o[--j] = fresh[--k];
        }
}

/* Room for n more entries and their indices. */
static int batch_grow(TickBatch *b, size_t n) {
        int r;

        if (b->n_entries + n > UINT32_MAX)
                return -E2BIG;
        r = array_grow((void **) &b->entries, &b->entries_capacity, b->n_entries, n, sizeof(TickEntry));
        if (r >= 0)
                r = array_grow((void **) &b->order, &b->order_capacity, b->n_entries, n, sizeof(uint32_t));
        return r;
}

/* Appends a new entry for s. */
static int batch_append(TickBatch *b, const ProcessSample *s) {
        int r = entry_init(&b->entries[b->n_entries], s);

        b->order[b->n_entries] = (uint32_t) b->n_entries;
        b->n_entries++;
        return r;
}

static void entry_done(TickEntry *e) {
        process_info_done(&e->process);
        free(e->traps);
        site_counts_free(e->sites, e->n_sites);
}

/* Appends copies of n sites to *array of *n_array. */
static int sites_append(SiteCount **array, size_t *n_array, const SiteCount *sites, size_t n) {
        SiteCount *a;

        if (n == 0)
                return 0;
        a = reallocarray(*array, *n_array + n, sizeof(SiteCount));
        if (!a)
                return -ENOMEM;
        *array = a;
        for (size_t i = 0; i < n; i++) {
                int r = site_count_copy(&sites[i], &a[*n_array]);

                if (r < 0)
                        return r;
                (*n_array)++;
        }
        return 0;
}

/* Adds a sample's traps and sites to e. */
static int entry_add(TickEntry *e, const ProcessSample *s) {
        faults_add(&e->delta, &s->delta);
        fault_time_add(&e->fault_time, &s->fault_time);
        stall_add(&e->stall, &s->stall);
        if (s->traps) {
                if (!e->traps && !(e->traps = calloc(1, sizeof(Traps))))
                        return -ENOMEM;
                traps_add(e->traps, s->traps);
        }
        return sites_append(&e->sites, &e->n_sites, s->sites, s->n_sites);
}

static int entry_init(TickEntry *e, const ProcessSample *s) {
        *e = (TickEntry) {};
        if (process_info_copy(s->process, &e->process) < 0)
                return -ENOMEM;
        return entry_add(e, s);
}

/* The newer tick's process, but seen first when the older said and exited once either said. */
static int entry_update(TickEntry *e, const ProcessSample *s) {
        ProcessInfo p;

        if (process_info_copy(s->process, &p) < 0)
                return -ENOMEM;
        p.first_seen_usec = MIN(p.first_seen_usec, e->process.first_seen_usec);
        p.exited = p.exited || e->process.exited;
        process_info_done(&e->process);
        e->process = p;
        return entry_add(e, s);
}

int tick_batch_new(uint64_t seq, uint64_t now_usec, const ProcessSample *samples, size_t n, const SiteCount *fills,
                   size_t n_fills, TickBatch **ret) {
        TickBatch *b;
        int r;

        b = calloc(1, sizeof(*b));
        if (!b)
                return -ENOMEM;
        b->seq = seq;
        b->now_usec = now_usec;
        /* Exactly the tick's processes: most batches are never merged into. */
        r = batch_grow(b, MAX(n, (size_t) 1));
        for (size_t i = 0; i < n && r >= 0; i++)
                r = batch_append(b, &samples[i]);
        if (r >= 0) {
                order_merge(b, 0);
                r = sites_append(&b->fills, &b->n_fills, fills, n_fills);
        }
        if (r < 0) {
                tick_batch_free(b);
                return r;
        }
        *ret = b;
        return 0;
}

int tick_batch_merge(TickBatch *b, uint64_t seq, uint64_t now_usec, const ProcessSample *samples, size_t n,
                     const SiteCount *fills, size_t n_fills) {
        size_t n_old = b->n_entries;
        int r;

        /* Room for every process being new, so that entries found below stay where they are. */
        r = batch_grow(b, n);
        if (r < 0)
                return r;
        free(b->samples);
        b->samples = NULL;
        for (size_t i = 0; i < n && r >= 0; i++) {
                TickEntry *e = batch_find(b, n_old, &samples[i]);

                r = e ? entry_update(e, &samples[i]) : batch_append(b, &samples[i]);
        }
        order_merge(b, n_old);
        if (r >= 0)
                r = sites_append(&b->fills, &b->n_fills, fills, n_fills);
        b->seq = seq;
        b->now_usec = now_usec;
        b->merged++;
        return r;
}

int tick_batch_samples(TickBatch *b, const ProcessSample **ret, size_t *ret_n) {
        if (!b->samples) {
                b->samples = calloc(MAX(b->n_entries, (size_t) 1), sizeof(ProcessSample));
                if (!b->samples)
                        return -ENOMEM;
                for (size_t i = 0; i < b->n_entries; i++) {
                        const TickEntry *e = &b->entries[b->order[i]];

                        b->samples[i] = (ProcessSample) { .process = &e->process, .delta = e->delta,
                                                          .fault_time = e->fault_time, .stall = e->stall,
                                                          .traps = e->traps,
                                                          .sites = e->sites, .n_sites = e->n_sites };
                }
        }
        *ret = b->samples;
        *ret_n = b->n_entries;
        return 0;
}

TickBatch *tick_batch_free(TickBatch *b) {
        if (!b)
                return NULL;
        for (size_t i = 0; i < b->n_entries; i++)
                entry_done(&b->entries[i]);
        free(b->entries);
        free(b->order);
        site_counts_free(b->fills, b->n_fills);
        free(b->samples);
        free(b);
        return NULL;
}
