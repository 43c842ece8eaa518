/* SPDX-License-Identifier: MIT */
#pragma once

/* What the store's unit tests share. After cmocka.h. */

#include <stdbool.h>

#include "store.h"

/* Runs maintenance as the daemon would, step after step, until it reports no more work. */
static inline void maintain_until_done(Store *s, uint64_t now, const StoreRetention *r) {
        bool more = true;

        for (int i = 0; more; i++) {
                assert_true(i < 10000);
                assert_int_equal(store_maintain(s, now, r, &more), 0);
        }
}
