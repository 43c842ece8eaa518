/* SPDX-License-Identifier: MIT */
/* Sites (store-sites.c, written by store-sites-write.c): counts, names, tiers and versions. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "unit-store.h"
#include "unit-tmpdir.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "macro.h"
#include "store.h"
DEFINE_TEST_TMPDIR("test-store-sites");
#include "unit-store-db.h"

/* A trap with its symbol; a sampled fault in a library touching a mapped file; a sampled fault
 * in anonymous code, which has no symbol. */
static const SiteCount trap_site = { .kind = SITE_TRAP, .vector = 6, .period = 1, .object = (char *) "/usr/bin/a",
                                     .dev = 0x800001, .ino = 1234, .offset = 0x1130, .symbol = (char *) "crash_here",
                                     .symbol_offset = 0x10, .memory = MEMORY_NONE };
static const SiteCount fault_site = { .kind = SITE_FAULT, .vector = SITE_FAULT_VECTOR, .period = 64,
                                      .object = (char *) "/usr/lib/libc.so.6", .dev = 0x800001, .ino = 99,
                                      .offset = 0x9a0c0, .symbol = (char *) "memcpy", .symbol_offset = 0x40,
                                      .memory = MEMORY_FILE, .memory_object = (char *) "/var/lib/data.bin",
                                      .memory_dev = 0x800002, .memory_ino = 77 };
static const SiteCount anon_site = { .kind = SITE_FAULT, .vector = SITE_FAULT_VECTOR, .period = 64,
                                     .object = (char *) "[anon]", .offset = 0x7f0000001000, .memory = MEMORY_ANON };

static SiteCount with_count(SiteCount c, uint64_t count) {
        c.count = count;
        return c;
}

/* The entry of sites for this instruction, kind and kind of memory; NULL: none. */
static const SiteCount *find_site(const SiteCount *sites, size_t n, const SiteCount *like) {
        for (size_t i = 0; i < n; i++)
                if (sites[i].kind == like->kind && strcmp(sites[i].object, like->object) == 0 &&
                    sites[i].offset == like->offset && sites[i].memory == like->memory)
                        return &sites[i];
        return NULL;
}

/* The count store_sites() gives the site like `like` of process pid in [since, until); 0 when
 * it has none. */
static uint64_t site_total(Store *s, uint32_t pid, uint64_t since, uint64_t until, const SiteCount *like) {
        const SiteCount *found;
        SiteCount *sites;
        uint64_t v;
        size_t n;

        assert_int_equal(IN_SNAPSHOT(s, store_sites(s, process_id(s, pid), since, until, -1, 100, &sites, &n, NULL)),
                         0);
        found = find_site(sites, n, like);
        v = found ? found->count : 0;
        site_counts_free(sites, n);
        return v;
}

/* Sites of two processes over three buckets: summed per site across ticks, the largest estimate
 * first (count × period), traps first among equals; the kind filter, the limit and the time
 * range; the dictionaries shared; a symbol learned later filled in, never replaced; a reader
 * sees the same. */
static void test_sites(void **state) {
        const uint64_t S = 1000000, t0 = 1700000000000000ULL; /* a bucket boundary */
        ProcessInfo a = { .pid = 900, .start_time = 1, .comm = "a", .first_seen_usec = t0 };
        ProcessInfo b = { .pid = 901, .start_time = 1, .comm = "b", .first_seen_usec = t0 };
        /* b's trap has no symbol at first. */
        SiteCount b_trap = { .kind = SITE_TRAP, .vector = 13, .period = 1, .object = (char *) "/usr/bin/b", .dev = 5,
                             .ino = 6, .offset = 0x2000, .memory = MEMORY_UNMAPPED };
        SiteCount b_fault = fault_site;
        SiteCount *sites;
        char path[256];
        Store *s, *r;
        uint64_t other;
        size_t n;

        b_fault.memory = MEMORY_ANON; /* the same instruction as a's, other memory */
        b_fault.memory_object = NULL;
        b_fault.memory_dev = b_fault.memory_ino = 0;

        snprintf(path, sizeof(path), "%s/sites.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &s), 0);

        /* Six ticks, two in each of three buckets. b's samples have no delta and no traps:
         * their sites are written all the same. b's trap (32 + 32) and its fault (1 × 64) have
         * the same estimate. */
        for (uint64_t i = 0; i < 6; i++) {
                SiteCount a_sites[] = { with_count(trap_site, 3), with_count(fault_site, 2), with_count(anon_site, 1) };
                SiteCount b_sites[] = { with_count(b_trap, 32), with_count(b_fault, i == 0) };
                Traps t = { .vector = { [6] = 3 } };
                ProcessSample samples[] = {
                        { &a, (Faults) { .user = 5 }, &t, a_sites, ELEMENTSOF(a_sites) },
                        { &b, (Faults) {}, NULL, b_sites, i < 2 ? ELEMENTSOF(b_sites) : 0 },
                };

                assert_int_equal(store_flush(s, t0 + i * 5 * S, samples, ELEMENTSOF(samples)), 0);
        }

        /* a: the fault 12 × 64, the anonymous one 6 × 64, the trap 18. */
        assert_int_equal(IN_SNAPSHOT(s, store_sites(s, process_id(s, 900), 0, UINT64_MAX, -1, 10, &sites, &n, NULL)),
                         0);
        assert_int_equal(n, 3);
        assert_site(&sites[0], &fault_site, 12);
        assert_site(&sites[1], &anon_site, 6);
        assert_site(&sites[2], &trap_site, 18);
        site_counts_free(sites, n);

        /* By kind; at most one; the middle bucket only. */
        assert_int_equal(IN_SNAPSHOT(s, store_sites(s, process_id(s, 900), 0, UINT64_MAX, SITE_TRAP, 10, &sites, &n,
                                                    NULL)), 0);
        assert_int_equal(n, 1);
        assert_site(&sites[0], &trap_site, 18);
        site_counts_free(sites, n);
        assert_int_equal(IN_SNAPSHOT(s, store_sites(s, process_id(s, 900), 0, UINT64_MAX, SITE_FAULT, 10, &sites, &n,
                                                    NULL)), 0);
        assert_int_equal(n, 2);
        assert_site(&sites[0], &fault_site, 12);
        assert_site(&sites[1], &anon_site, 6);
        site_counts_free(sites, n);
        assert_int_equal(IN_SNAPSHOT(s, store_sites(s, process_id(s, 900), 0, UINT64_MAX, -1, 1, &sites, &n, &other)),
                         0);
        assert_int_equal(n, 1);
        assert_int_equal(other, 2);
        assert_site(&sites[0], &fault_site, 12);
        site_counts_free(sites, n);
        assert_int_equal(IN_SNAPSHOT(s, store_sites(s, process_id(s, 900), 0, UINT64_MAX, SITE_FAULT, 2, &sites, &n,
                                                    &other)), 0);
        assert_int_equal(n, 2);
        assert_int_equal(other, 0);
        site_counts_free(sites, n);
        assert_int_equal(IN_SNAPSHOT(s, store_sites(s, process_id(s, 900), t0 + 10 * S, t0 + 20 * S, -1, 10, &sites,
                                                    &n, NULL)), 0);
        assert_int_equal(n, 3);
        assert_site(&sites[0], &fault_site, 4);
        assert_site(&sites[1], &anon_site, 2);
        assert_site(&sites[2], &trap_site, 6);
        site_counts_free(sites, n);
        assert_int_equal(IN_SNAPSHOT(s, store_sites(s, process_id(s, 900), t0 + 30 * S, UINT64_MAX, -1, 10, &sites, &n,
                                                    NULL)), 0);
        assert_int_equal(n, 0);
        site_counts_free(sites, n);
        assert_int_equal(IN_SNAPSHOT(s, store_sites(s, process_id(s, 900), 0, UINT64_MAX, _SITE_KIND_MAX, 10, &sites,
                                                    &n, NULL)), -EINVAL);
        assert_int_equal(IN_SNAPSHOT(s, store_sites(s, 123456, 0, UINT64_MAX, -1, 10, &sites, &n, NULL)), 0);
        assert_int_equal(n, 0);
        site_counts_free(sites, n);

        /* b: equal estimates of 64, the trap first; its fault apart from a's (other memory). */
        assert_int_equal(IN_SNAPSHOT(s, store_sites(s, process_id(s, 901), 0, UINT64_MAX, -1, 10, &sites, &n, NULL)),
                         0);
        assert_int_equal(n, 2);
        assert_site(&sites[0], &b_trap, 64);
        assert_site(&sites[1], &b_fault, 1);
        site_counts_free(sites, n);

        /* One row per file and per instruction, whoever used it. */
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM object"), 5);
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM site"), 4);
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM object WHERE name = '[anon]' AND dev = 0 AND ino = 0"),
                         1);

        /* A reader sees the same. */
        assert_int_equal(store_open_reader(path, "boot-1", &r), 0);
        assert_int_equal(IN_SNAPSHOT(r, store_sites(r, process_id(r, 900), 0, UINT64_MAX, -1, 10, &sites, &n, NULL)),
                         0);
        assert_int_equal(n, 3);
        assert_site(&sites[0], &fault_site, 12);
        assert_site(&sites[1], &anon_site, 6);
        assert_site(&sites[2], &trap_site, 18);
        site_counts_free(sites, n);

        /* b's trap with a symbol now: filled in; another one later does not replace it. */
        b_trap.symbol = (char *) "late";
        b_trap.symbol_offset = 8;
        {
                SiteCount one = with_count(b_trap, 1);
                ProcessSample sample = { &b, (Faults) {}, NULL, &one, 1 };
                assert_int_equal(store_flush(s, t0 + 40 * S, &sample, 1), 0);
        }
        b_trap.symbol = (char *) "other";
        b_trap.symbol_offset = 99;
        {
                SiteCount one = with_count(b_trap, 1);
                ProcessSample sample = { &b, (Faults) {}, NULL, &one, 1 };
                assert_int_equal(store_flush(s, t0 + 41 * S, &sample, 1), 0);
        }
        b_trap.symbol = (char *) "late";
        b_trap.symbol_offset = 8;
        assert_int_equal(IN_SNAPSHOT(r, store_sites(r, process_id(r, 901), 0, UINT64_MAX, SITE_TRAP, 10, &sites, &n,
                                                    NULL)), 0);
        assert_int_equal(n, 1);
        assert_site(&sites[0], &b_trap, 66);
        site_counts_free(sites, n);
        /* The query threads' cost bound stops it, and the reader answers the next one. */
        {
                int64_t id = process_id(r, 901);

                store_set_progress_handler(r, 1, stop_at_once, NULL);
                assert_int_equal(IN_SNAPSHOT(r, store_sites(r, id, 0, UINT64_MAX, -1, 10, &sites, &n, NULL)),
                                 -ECANCELED);
                store_set_progress_handler(r, 0, NULL, NULL);
                assert_int_equal(IN_SNAPSHOT(r, store_sites(r, id, 0, UINT64_MAX, -1, 10, &sites, &n, NULL)), 0);
        }
        assert_int_equal(n, 2);
        site_counts_free(sites, n);
        store_free(r);

        /* A tick that fails rolls back the entries it created; the next one creates them again
         * (whatever ids were remembered of the first). Sites of count 0 are not stored. */
        {
                SiteCount x = { .kind = SITE_TRAP, .vector = 3, .period = 1, .object = (char *) "/usr/bin/x",
                                .offset = 0x10, .symbol = (char *) "x_fn", .memory = MEMORY_STACK, .count = 1 };
                SiteCount bad[] = { x, with_count(anon_site, 1) }, zero = with_count(anon_site, 0);
                ProcessSample sample = { &a, (Faults) {}, NULL, bad, 2 };

                bad[1].object = NULL;
                assert_int_equal(store_flush(s, t0 + 50 * S, &sample, 1), -EINVAL);
                bad[1] = with_count(anon_site, 1);
                bad[1].period = 0;
                assert_int_equal(store_flush(s, t0 + 50 * S, &sample, 1), -EINVAL);
                bad[1] = with_count(anon_site, 1);
                bad[1].memory = _MEMORY_KIND_MAX;
                assert_int_equal(store_flush(s, t0 + 50 * S, &sample, 1), -EINVAL);
                bad[1] = with_count(anon_site, 1);
                bad[1].kind = _SITE_KIND_MAX;
                assert_int_equal(store_flush(s, t0 + 50 * S, &sample, 1), -EINVAL);
                assert_int_equal(db_count(path, "SELECT COUNT(*) FROM object WHERE name = '/usr/bin/x'"), 0);

                /* A new site first, so that it would take the id the failed ticks gave x. */
                sample.sites = &zero;
                sample.n_sites = 1;
                assert_int_equal(store_flush(s, t0 + 51 * S, &sample, 1), 0);
                sample.sites = &b_trap;
                b_trap.count = 1;
                b_trap.offset = 0x2001;
                assert_int_equal(store_flush(s, t0 + 52 * S, &sample, 1), 0);
                sample.sites = &x;
                assert_int_equal(store_flush(s, t0 + 53 * S, &sample, 1), 0);
                assert_int_equal(IN_SNAPSHOT(s, store_sites(s, process_id(s, 900), t0 + 50 * S, UINT64_MAX, SITE_TRAP,
                                                            10, &sites, &n, NULL)),
                                 0);
                assert_int_equal(n, 2);
                assert_site(&sites[0], &b_trap, 1);
                assert_site(&sites[1], &x, 1);
                site_counts_free(sites, n);
                /* The zero count wrote no row. */
                assert_int_equal(site_total(s, 900, t0 + 50 * S, UINT64_MAX, &anon_site), 0);
        }
        store_free(s);
}

/* What test_sites_tiers() expects of a range: the counts of a's three sites and b's one. */
typedef struct SiteRange {
        uint64_t since, until, trap, fault, anon, b;
} SiteRange;

static void check_ranges(Store *s, const SiteRange *ranges, size_t n, const SiteCount *b_site) {
        for (size_t i = 0; i < n; i++) {
                const SiteRange *x = &ranges[i];

                assert_int_equal(site_total(s, 910, x->since, x->until, &trap_site), x->trap);
                assert_int_equal(site_total(s, 910, x->since, x->until, &fault_site), x->fault);
                assert_int_equal(site_total(s, 910, x->since, x->until, &anon_site), x->anon);
                assert_int_equal(site_total(s, 911, x->since, x->until, b_site), x->b);
        }
}

/* Two hours of sites, rolled up into minutes and hours: every sum over the whole range and over
 * ranges the finer tiers still hold is what it was in the raw tier (each instant is read from
 * one tier only), on the writer and on a reader. A process with sites only is kept while they
 * are. Once the hour tier lets go of rows, the dictionary entries nothing references any more
 * are deleted, and only those. */
static void test_sites_tiers(void **state) {
        const uint64_t S = 1000000, M = 60 * S, H = 3600 * S, t0 = 1700000000000000ULL - 1700000000000000ULL % H;
        StoreRetention keep = STORE_RETENTION_DEFAULT;
        ProcessInfo a = { .pid = 910, .start_time = 1, .comm = "a", .first_seen_usec = t0 };
        ProcessInfo b = { .pid = 911, .start_time = 1, .comm = "b", .first_seen_usec = t0 };
        ProcessInfo c = { .pid = 912, .start_time = 1, .comm = "c", .first_seen_usec = t0, .exited = true };
        const SiteCount b_site = { .kind = SITE_FAULT, .vector = SITE_FAULT_VECTOR, .period = 64,
                                   .object = (char *) "/usr/bin/b", .dev = 7, .ino = 8, .offset = 0x3000,
                                   .symbol = (char *) "b_fn", .memory = MEMORY_FILE,
                                   .memory_object = (char *) "/var/lib/b.dat", .memory_dev = 7, .memory_ino = 9 };
        const SiteCount c_site = { .kind = SITE_TRAP, .vector = 4, .period = 1, .object = (char *) "/usr/bin/c",
                                   .offset = 0x40, .memory = MEMORY_NONE };
        const SiteRange ranges[] = {
                { 0, UINT64_MAX, 240, 240, 120, 120 },
                { t0 + 30 * M, t0 + 90 * M, 120, 120, 60, 60 },
                { t0 + 90 * M, t0 + 120 * M, 60, 0, 0, 60 },
                { t0 + 61 * M + 30 * S, t0 + 62 * M, 1, 0, 0, 1 },
        };
        char path[256];
        Store *s, *r;

        snprintf(path, sizeof(path), "%s/sites-tiers.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        /* A tick every 30 s for two hours: a traps throughout, faults in the first hour; b faults
         * in the second; c, which has exited, has one trap site and nothing else. */
        for (uint64_t i = 0; i < 240; i++) {
                SiteCount a_sites[] = { with_count(trap_site, 1), with_count(fault_site, 2), with_count(anon_site, 1) };
                SiteCount b_sites[] = { with_count(b_site, 1) }, c_sites[] = { with_count(c_site, 5) };
                ProcessSample samples[] = {
                        { &a, (Faults) { .user = 1 }, NULL, a_sites, i < 120 ? 3 : 1 },
                        { &b, (Faults) { .user = 1 }, NULL, b_sites, i >= 120 },
                        { &c, (Faults) {}, NULL, c_sites, 1 },
                };

                assert_int_equal(store_flush(s, t0 + i * 30 * S, samples, i == 0 ? 3 : 2), 0);
        }

        check_ranges(s, ranges, ELEMENTSOF(ranges), &b_site);
        assert_int_equal(site_total(s, 912, 0, UINT64_MAX, &c_site), 5);

        /* Rolled up, nothing expired: each stretch is in all three tiers, and read from one. */
        maintain_until_done(s, t0 + 3 * H, &keep);
        /* a: its trap in both hours, its two faults in the first; b; c. */
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM site_hour"), 2 + 2 + 1 + 1);
        assert_int_equal(db_count(path, "SELECT SUM(count) FROM site_minute"), 240 + 240 + 120 + 120 + 5);
        assert_int_equal(db_count(path, "SELECT SUM(count) FROM site_raw"), 240 + 240 + 120 + 120 + 5);
        check_ranges(s, ranges, ELEMENTSOF(ranges), &b_site);
        assert_int_equal(store_open_reader(path, "boot-1", &r), 0);
        check_ranges(r, ranges, ELEMENTSOF(ranges), &b_site);
        /* c has exited but still has sites: kept, with them. */
        assert_int_equal(site_total(r, 912, 0, UINT64_MAX, &c_site), 5);

        /* Raw and minutes kept an hour, hours two: only the hour tier has anything, its second
         * hour. The first hour's sites and files are deleted with their last rows; c with its. */
        {
                StoreRetention short_ = { .raw_usec = H, .minute_usec = H, .hour_usec = 2 * H, .batch_rows = 2 };
                ProcessInfo found;
                int64_t id;

                maintain_until_done(s, t0 + 3 * H, &short_);
                assert_int_equal(db_count(path, "SELECT COUNT(*) FROM site_raw"), 0);
                assert_int_equal(db_count(path, "SELECT COUNT(*) FROM site_minute"), 0);
                assert_int_equal(db_count(path, "SELECT COUNT(*) FROM site_hour"), 2);
                assert_int_equal(site_total(s, 910, 0, UINT64_MAX, &trap_site), 120);
                assert_int_equal(site_total(s, 910, 0, UINT64_MAX, &fault_site), 0);
                assert_int_equal(site_total(r, 911, 0, UINT64_MAX, &b_site), 120);
                assert_int_equal(store_find_process(s, 912, 0, &id, &found), -ENOENT);
                assert_int_equal(db_count(path, "SELECT COUNT(*) FROM site"), 2);
                assert_int_equal(db_count(path, "SELECT COUNT(*) FROM object"), 3);
                assert_int_equal(db_count(path, "SELECT COUNT(*) FROM object WHERE name IN "
                                                "('/usr/bin/a', '/usr/bin/b', '/var/lib/b.dat')"),
                                 3);

                /* The fault site again, its entries new (none of the ids remembered of the old
                 * ones is used), in the current minute: in the raw tier only. */
                {
                        SiteCount one = with_count(fault_site, 1);
                        ProcessSample sample = { &a, (Faults) {}, NULL, &one, 1 };
                        SiteCount *sites;
                        size_t n;

                        assert_int_equal(store_flush(s, t0 + 4 * H + 5 * S, &sample, 1), 0);
                        assert_int_equal(
                                IN_SNAPSHOT(s, store_sites(s, process_id(s, 910), t0 + 4 * H, UINT64_MAX, -1, 10,
                                                           &sites, &n, NULL)),
                                0);
                        assert_int_equal(n, 1);
                        assert_site(&sites[0], &fault_site, 1);
                        site_counts_free(sites, n);
                }
                /* The hour tier lets go of the second hour: of the dictionaries, only what the raw
                 * row references stays. */
                maintain_until_done(s, t0 + 4 * H + 10 * S, &short_);
                assert_int_equal(db_count(path, "SELECT COUNT(*) FROM site_hour"), 0);
                assert_int_equal(db_count(path, "SELECT COUNT(*) FROM site_raw"), 1);
                assert_int_equal(db_count(path, "SELECT COUNT(*) FROM site"), 1);
                assert_int_equal(db_count(path, "SELECT COUNT(*) FROM object"), 2);
                assert_int_equal(db_count(path, "SELECT COUNT(*) FROM object WHERE name IN "
                                                "('/usr/lib/libc.so.6', '/var/lib/data.bin')"),
                                 2);
                assert_int_equal(site_total(r, 910, 0, UINT64_MAX, &fault_site), 1);
        }
        store_free(r);
        store_free(s);
}

/* One path, device and inode number, two versions of the file (a binary deleted and another
 * made at its path that got its inode number): two object rows and two site rows, each version's
 * symbol its own, in one tick and across ticks; a symbol learned later fills its own version's
 * row only. */
static void test_site_versions(void **state) {
        const uint64_t S = 1000000, t0 = 1700000000000000ULL; /* a bucket boundary */
        ProcessInfo a = { .pid = 920, .start_time = 1, .comm = "a", .first_seen_usec = t0 };
        ProcessInfo b = { .pid = 921, .start_time = 1, .comm = "b", .first_seen_usec = t0 };
        SiteCount old = fault_site, new = fault_site, old_late, new_late;
        SiteCount *sites;
        char path[256];
        Store *s, *r;
        size_t n;

        old.version = (ObjectVersion) { .ctime_nsec = t0 * 1000, .generation = 11 };
        new.version = (ObjectVersion) { .ctime_nsec = t0 * 1000 + 5, .generation = 12 };
        new.symbol = (char *) "other_fn";
        new.symbol_offset = 4;

        snprintf(path, sizeof(path), "%s/site-versions.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        /* The old one first, alone (its ids remembered), then both in one tick. */
        {
                SiteCount one = with_count(old, 3);
                ProcessSample sample = { &a, (Faults) {}, NULL, &one, 1 };
                assert_int_equal(store_flush(s, t0, &sample, 1), 0);
        }
        {
                SiteCount a_sites[] = { with_count(old, 1) }, b_sites[] = { with_count(new, 2) };
                ProcessSample samples[] = { { &a, (Faults) {}, NULL, a_sites, 1 }, { &b, (Faults) {}, NULL, b_sites, 1 } };
                assert_int_equal(store_flush(s, t0 + S, samples, 2), 0);
        }
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM object WHERE name = '/usr/lib/libc.so.6'"), 2);
        /* The file the faults touched is kept without a version (SiteCount.memory_dev): one row. */
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM object WHERE name = '/var/lib/data.bin'"), 1);
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM object"), 3);
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM site"), 2);
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM object WHERE name = '/usr/lib/libc.so.6' AND "
                                        "ctime_nsec = 1700000000000000005 AND generation = 12"),
                         1);

        /* Each process its own version's site and symbol, on the writer and on a reader. */
        assert_int_equal(store_open_reader(path, "boot-1", &r), 0);
        for (int i = 0; i < 2; i++) {
                Store *q = i == 0 ? s : r;

                assert_int_equal(IN_SNAPSHOT(q, store_sites(q, process_id(q, 920), 0, UINT64_MAX, -1, 10, &sites, &n,
                                                            NULL)), 0);
                assert_int_equal(n, 1);
                assert_site(&sites[0], &old, 4);
                site_counts_free(sites, n);
                assert_int_equal(IN_SNAPSHOT(q, store_sites(q, process_id(q, 921), 0, UINT64_MAX, -1, 10, &sites, &n,
                                                            NULL)), 0);
                assert_int_equal(n, 1);
                assert_site(&sites[0], &new, 2);
                site_counts_free(sites, n);
        }

        /* Another offset, stored without a symbol in both versions; the new one's learned: only
         * its row gets it. */
        old_late = with_count(old, 1);
        new_late = with_count(new, 1);
        old_late.offset = new_late.offset = old.offset + 0x100;
        old_late.symbol = new_late.symbol = NULL;
        {
                ProcessSample samples[] = { { &a, (Faults) {}, NULL, &old_late, 1 },
                                            { &b, (Faults) {}, NULL, &new_late, 1 } };
                assert_int_equal(store_flush(s, t0 + 2 * S, samples, 2), 0);
        }
        new_late.symbol = (char *) "late_fn";
        new_late.symbol_offset = 0x10;
        assert_int_equal(store_sites_fill(s, &new_late, 1), 0);
        assert_int_equal(IN_SNAPSHOT(r, store_sites(r, process_id(r, 921), 0, UINT64_MAX, -1, 10, &sites, &n, NULL)),
                         0);
        assert_int_equal(n, 2);
        assert_site(&sites[0], &new, 2);
        assert_site(&sites[1], &new_late, 1);
        site_counts_free(sites, n);
        assert_int_equal(IN_SNAPSHOT(r, store_sites(r, process_id(r, 920), 0, UINT64_MAX, -1, 10, &sites, &n, NULL)),
                         0);
        assert_int_equal(n, 2);
        assert_site(&sites[0], &old, 4);
        assert_site(&sites[1], &old_late, 1);
        site_counts_free(sites, n);
        store_free(r);
        store_free(s);
        (void) state;
}

/* Major sites (kind 2) beside a fault site of the same instruction and memory: a site of their
 * own, exact (period 1) with their time, apart by the kind filter, also once rolled up. */
static void test_major_sites(void **state) {
        const uint64_t S = 1000000, H = 3600 * S, t0 = 1700000000000000ULL - 1700000000000000ULL % H;
        StoreRetention keep = STORE_RETENTION_DEFAULT;
        ProcessInfo a = { .pid = 920, .start_time = 1, .comm = "a", .first_seen_usec = t0 };
        SiteCount major = fault_site, *sites;
        char path[256];
        Store *s;
        size_t n;

        major.kind = SITE_MAJOR;
        major.period = 1;
        snprintf(path, sizeof(path), "%s/sites-major.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        for (uint64_t i = 0; i < 4; i++) {
                SiteCount both[] = { with_count(fault_site, 1), with_count(major, 3) };
                ProcessSample sample = { &a, (Faults) { .user = 64, .major = 3 }, NULL, both, ELEMENTSOF(both) };

                both[1].time_ns = 1000000;
                assert_int_equal(store_flush(s, t0 + i * 30 * S, &sample, 1), 0);
        }
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM site_raw WHERE kind = 2"), 4); /* a bucket each */

        for (int pass = 0; pass < 2; pass++) {
                assert_int_equal(IN_SNAPSHOT(s, store_sites(s, process_id(s, 920), 0, UINT64_MAX, SITE_MAJOR, 10, &sites,
                                                            &n, NULL)), 0);
                assert_int_equal(n, 1);
                assert_site(&sites[0], &major, 12);
                assert_int_equal(sites[0].time_ns, 4000000);
                site_counts_free(sites, n);
                /* Both kinds: the fault's estimate (4 × 64) first. */
                assert_int_equal(IN_SNAPSHOT(s, store_sites(s, process_id(s, 920), 0, UINT64_MAX, -1, 10, &sites, &n,
                                                            NULL)), 0);
                assert_int_equal(n, 2);
                assert_site(&sites[0], &fault_site, 4);
                assert_site(&sites[1], &major, 12);
                site_counts_free(sites, n);
                /* Rolled up into minutes and hours, the kind kept. */
                maintain_until_done(s, t0 + 3 * H, &keep);
        }
        assert_int_equal(db_count(path, "SELECT SUM(count) FROM site_hour WHERE kind = 2"), 12);
        store_free(s);
        (void) state;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sites),
                cmocka_unit_test(test_sites_tiers),
                cmocka_unit_test(test_site_versions),
                cmocka_unit_test(test_major_sites),
        };
        return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
