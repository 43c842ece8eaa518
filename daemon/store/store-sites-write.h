/* SPDX-License-Identifier: MIT */
#pragma once

/* Writing a tick's sites (store-sites-write.c): the site kind's raw rows and the dictionaries
 * `object` and `site` they name. Internal to the store; store_sites_fill() is in store.h. */

#include "store-util.h"

/* Adds the sites to the raw bucket of the site kind, creating the dictionary entries they name;
 * in the caller's transaction. -EINVAL for a site without object, or with a kind, a memory kind
 * or a period out of range. */
int store_sites_add(Store *s, int64_t process_id, uint64_t bucket_usec, const SiteCount *sites, size_t n);
/* Forgets the ids of dictionary entries: when a transaction that may have created them rolled
 * back, and when maintenance deleted entries. */
void store_site_ids_clear(Store *s);
/* s->site_writer: the dictionaries' statements and the cache of ids; at close, their end. */
int store_sites_prepare(Store *s);
void store_sites_done(Store *s);
