/* SPDX-License-Identifier: MIT */
#include "tick-batch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array-util.h"
#include "macro.h"

static int entry_compare(const void *a, const void *b) {
        const ProcessInfo *x = &((const TickEntry *) a)->process, *y = &((const TickEntry *) b)->process;

        return process_identity_compare(x->pid, x->start_time, y->pid, y->start_time);
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
        b->entries = calloc(MAX(n, (size_t) 1), sizeof(TickEntry));
        if (!b->entries) {
                tick_batch_free(b);
                return -ENOMEM;
        }
        b->entries_capacity = MAX(n, (size_t) 1);
        for (size_t i = 0; i < n; i++) {
                r = entry_init(&b->entries[b->n_entries], &samples[i]);
                b->n_entries++;
                if (r < 0) {
                        tick_batch_free(b);
                        return r;
                }
        }
        qsort(b->entries, b->n_entries, sizeof(TickEntry), entry_compare);
        r = sites_append(&b->fills, &b->n_fills, fills, n_fills);
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
        r = array_grow((void **) &b->entries, &b->entries_capacity, n_old, n, sizeof(TickEntry));
        if (r < 0)
                return r;
        free(b->samples);
        b->samples = NULL;
        for (size_t i = 0; i < n && r >= 0; i++) {
                TickEntry key = { .process = *samples[i].process };
                TickEntry *e = bsearch(&key, b->entries, n_old, sizeof(TickEntry), entry_compare);

                if (e)
                        r = entry_update(e, &samples[i]);
                else {
                        r = entry_init(&b->entries[b->n_entries], &samples[i]);
                        b->n_entries++;
                }
        }
        qsort(b->entries, b->n_entries, sizeof(TickEntry), entry_compare);
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
                        const TickEntry *e = &b->entries[i];

                        b->samples[i] = (ProcessSample) { .process = &e->process, .delta = e->delta,
                                                          .fault_time = e->fault_time, .traps = e->traps,
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
        site_counts_free(b->fills, b->n_fills);
        free(b->samples);
        free(b);
        return NULL;
}
