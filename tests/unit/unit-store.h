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

/* The user faults of the newest process with pid, summed over its history at resolution; its
 * traps in *ret_traps when not NULL. */
static inline uint64_t history_user(Store *s, uint32_t pid, uint64_t resolution, uint64_t *ret_traps) {
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
