/* SPDX-License-Identifier: MIT */
#pragma once

/* The size cap by shares (store-share.c), one step at a time, for store_maintain(). Internal
 * to the store; store_over_cap(), store_used_bytes() and store_cap_target() are in store.h. */

#include "store-util.h"

/* One step of the size cap: when the pages in use are over store_cap_target(), a transaction
 * deleting the oldest processes' rows of the user holding the most (then those processes, if
 * they exited or were not seen for 10 s), at most batch_rows rows; *more set when still
 * over. */
int store_cap_step(Store *s, const StoreRetention *ret, uint64_t now_usec, bool *more);
