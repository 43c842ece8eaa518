/* SPDX-License-Identifier: MIT */
#pragma once

/* Sweeping the site kind's dictionaries of unreferenced entries (store-sweep.c). Internal to
 * the store. */

#include "store-util.h"

/* Rows of the site kind went, or are about to: dictionary entries may lose their last
 * reference. The next steps sweep both dictionaries (again, when a sweep is under way). */
void store_sweep_start(Store *s);
/* One bounded step of the sweep under way, if any; *more set when there is more to do. */
int store_sweep_step(Store *s, size_t batch, bool *more);
