/* SPDX-License-Identifier: MIT */
#pragma once

/* What the store's unit tests share. After cmocka.h. */

#include <stdbool.h>

#include "store.h"
#include "traps.h"

/* Runs maintenance as the daemon would, step after step, until it reports no more work. */
static inline void maintain_until_done(Store *s, uint64_t now, const StoreRetention *r) {
        bool more = true;

        for (int i = 0; more; i++) {
                assert_true(i < 10000);
                assert_int_equal(store_maintain(s, now, r, &more), 0);
        }
}

/* The store's queries read in the one snapshot their caller began (store.h): in the daemon the
 * query pool's, one per call; here one per query, with this. Evaluates to the query's value, or
 * to the error that kept the snapshot from beginning (as the pool's, it begins under the
 * progress handler, which may stop it already). */
#define IN_SNAPSHOT(s, query)                                                                      \
        ({                                                                                         \
                Store *_snapshot_store = (s);                                                      \
                int _snapshot_r = store_snapshot_begin(_snapshot_store);                           \
                if (_snapshot_r >= 0) {                                                            \
                        _snapshot_r = (query);                                                     \
                        store_snapshot_end(_snapshot_store);                                       \
                }                                                                                  \
                _snapshot_r;                                                                       \
        })

/* UnitHistory and ContainerHistory as their method reads them (daemon/methods.c), in one
 * snapshot: the group's processes, then their samples at resolution_usec. *ret to
 * store_group_history_done(). */
static inline int group_history(Store *s, const StoreGroup *group, int64_t uid, uint64_t since, uint64_t until,
                                uint64_t resolution_usec, StoreGroupHistory *ret) {
        StoreGroupHistory h;
        int r;

        assert_int_equal(store_snapshot_begin(s), 0);
        r = store_group_history_find(s, group, uid, since, until, &h);
        if (r >= 0) {
                r = store_group_history_read(s, &h, since, until, resolution_usec);
                if (r < 0)
                        store_group_history_done(&h);
        }
        store_snapshot_end(s);
        if (r >= 0)
                *ret = h;
        return r;
}

static inline int unit_history(Store *s, const char *unit_glob, int64_t uid, uint64_t since, uint64_t until,
                               uint64_t resolution_usec, StoreGroupHistory *ret) {
        return group_history(s, &(StoreGroup) { .unit_glob = unit_glob }, uid, since, until, resolution_usec, ret);
}

/* The user faults of the newest process with pid, summed over its history at resolution, in
 * the snapshot the caller began; its traps in *ret_traps when not NULL. */
static inline uint64_t history_user_read(Store *s, uint32_t pid, uint64_t resolution, uint64_t *ret_traps) {
        StoreHistoryRow *hist;
        ProcessInfo found;
        uint64_t user = 0, traps = 0;
        int64_t id;
        size_t n;

        assert_int_equal(store_find_process(s, pid, 0, &id, &found), 0);
        process_info_done(&found);
        assert_int_equal(store_history(s, id, 0, UINT64_MAX, resolution, &hist, &n), 0);
        for (size_t i = 0; i < n; i++) {
                assert_int_equal(hist[i].time_usec % resolution, 0);
                user += hist[i].faults.user;
                traps += hist[i].traps ? traps_total(hist[i].traps) : 0;
        }
        store_history_rows_free(hist, n);
        if (ret_traps)
                *ret_traps = traps;
        return user;
}

/* The same in a snapshot of its own. */
static inline uint64_t history_user(Store *s, uint32_t pid, uint64_t resolution, uint64_t *ret_traps) {
        uint64_t user;

        assert_int_equal(store_snapshot_begin(s), 0);
        user = history_user_read(s, pid, resolution, ret_traps);
        store_snapshot_end(s);
        return user;
}
