/* SPDX-License-Identifier: MIT */
/* The store's maintenance: roll-up into the coarser tiers, retention by age, the size cap (its
 * shares are in store-share.c), and deleting exited processes and the site kind's dictionary entries left without rows. Every part
 * works on all kinds of store-kind.h. */
#include "store-util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "store-known.h"
#include "store-pending.h"
#include "store-share.h"
#include "store-sweep.h"
#include "time-util.h"

/* Runs SQL made by store-kind.c; NULL: it was out of memory. */
static int exec_made(Store *s, char *sql) {
        _cleanup_free_ char *p = sql;

        return p ? sql_exec(s->db, p) : -ENOMEM;
}

/* Sums the finer tier's rows in [from, to) of every kind into tier, and moves its mark, in one
 * transaction: a crash leaves either all or none. */
static int roll_up(Store *s, int tier, uint64_t from, uint64_t to, size_t *ret_rows) {
        size_t rows = 0;
        int r;

        r = sql_exec(s->db, "BEGIN IMMEDIATE");
        if (r < 0)
                return r;
        for (int k = 0; r >= 0 && k < _STORE_KIND_MAX; k++) {
                r = exec_made(s, store_kind_roll_up(&store_kinds[k], tier, from, to));
                rows += r >= 0 ? (size_t) sqlite3_changes(s->db) : 0;
        }
        if (ret_rows)
                *ret_rows = rows;
        if (r >= 0)
                r = sql_exec_fmt(s->db, "UPDATE tier SET rolled_until_usec = %" PRId64 " WHERE name = '%s'",
                                 clamp_i64(to), tier_name(tier));
        if (r >= 0)
                r = sql_exec(s->db, "COMMIT");
        if (r < 0)
                store_rollback(s);
        return r;
}

/* Between two parts of a step: whether the writer has something more urgent to do (a tick, a
 * query waiting for one). The step then ends early and says more is pending. */
static bool yield(Store *s, bool *more) {
        if (!s->maintain_yield || !s->maintain_yield(s->maintain_yield_userdata))
                return false;
        *more = true;
        return true;
}

/* How long one roll_step() goes on rolling, transaction after transaction. */
#define ROLL_SLICE_USEC (10 * USEC_PER_MSEC)
/* A transaction quicker than this, with fewer than half of batch_rows rows, doubles the span of
 * the next one (up to ROLL_SPAN_MAX finer intervals); one slower than ROLL_SLICE_USEC, or with
 * more than batch_rows rows, halves it. */
#define ROLL_GROW_USEC (2 * USEC_PER_MSEC)
#define ROLL_SPAN_MAX 64U

/* Rolls the complete stretch of the finer tier into tier, a span of the finer tier's intervals
 * per transaction, for at most ROLL_SLICE_USEC or until something more urgent waits (*more set
 * when some is left). The span adapts: one finer interval (about a row per live process and
 * kind) where the rows are many, up to ROLL_SPAN_MAX of them over empty or sparse stretches
 * (catching up after the daemon was stopped), so that a transaction stays short however many
 * processes live and however far behind the roll-up is. The mark may then stop inside one of
 * tier's intervals: that interval's row has the finer rows before the mark, the finer tier the
 * rest, and a query reading tier before the mark and the finer tier after it (tier-util.h)
 * counts each exactly once. Returns 1 when it wrote anything, 0 when there was nothing to roll
 * up. */
static int roll_step(Store *s, const TierState *tiers, int tier, uint64_t complete_until, size_t batch,
                     bool *more) {
        uint64_t w = tier_width_usec[tier], step = tier_width_usec[tier - 1],
                 from = tiers[tier].rolled_until, deadline = now_usec(CLOCK_MONOTONIC) + ROLL_SLICE_USEC;
        unsigned *span = &s->roll_span[tier];
        int64_t oldest;
        int r;

        complete_until -= complete_until % w;
        if (from == 0) {
                char *sql = NULL;
                size_t size = 0;
                FILE *f;

                /* First roll-up: start at the finer tier's oldest row of any kind (a site may have
                 * no sample beside it). Once per database: later ones start at the mark. */
                f = open_memstream(&sql, &size);
                if (!f)
                        return -ENOMEM;
                fputs("SELECT MIN(t) FROM (", f);
                for (int k = 0; k < _STORE_KIND_MAX; k++)
                        fprintf(f, "%sSELECT MIN(time_usec) AS t FROM %s", k ? " UNION ALL " : "",
                                store_kinds[k].tables[tier - 1]);
                fputs(")", f);
                if (!memstream_done(f, &sql))
                        return -ENOMEM;
                r = sql_query_int(s->db, sql, 0, &oldest);
                free(sql);
                if (r < 0)
                        return r;
                from = oldest == INT64_MIN ? complete_until : (uint64_t) oldest - (uint64_t) oldest % w;
        }
        if (from >= complete_until) {
                if (from == tiers[tier].rolled_until)
                        return 0;
                r = roll_up(s, tier, from, from, NULL);
                return r < 0 ? r : 1;
        }
        /* A mark written by an older trapstatd is on tier's own width, which is a multiple of
         * step: from is on step's width either way. */
        for (;;) {
                unsigned n = MAX(*span, 1U);
                uint64_t to = MIN(from - from % step + n * step, complete_until), started, took;
                size_t rows;

                started = now_usec(CLOCK_MONOTONIC);
                r = roll_up(s, tier, from, to, &rows);
                if (r < 0)
                        return r;
                took = now_usec(CLOCK_MONOTONIC) - started;
                if (rows * 2 < batch && took < ROLL_GROW_USEC)
                        *span = MIN(n * 2, ROLL_SPAN_MAX);
                else if (rows > batch || took > ROLL_SLICE_USEC)
                        *span = MAX(n / 2, 1U);
                from = to;
                if (from >= complete_until)
                        return 1;
                if (now_usec(CLOCK_MONOTONIC) >= deadline) {
                        *more = true;
                        return 1;
                }
                if (yield(s, more))
                        return 1;
        }
}

/* Deletes at most batch rows of the kind's table of tier older than cutoff; first moves the
 * tier's kept_from, so no query reads a half-deleted stretch from this tier. Returns the rows
 * deleted. */
static int delete_older(Store *s, int tier, const StoreKind *kind, uint64_t cutoff, size_t batch) {
        int r;

        r = sql_exec(s->db, "BEGIN IMMEDIATE");
        if (r < 0)
                return r;
        r = sql_exec_fmt(s->db, "UPDATE tier SET kept_from_usec = max(kept_from_usec, %" PRId64 ") WHERE name = '%s'",
                         clamp_i64(cutoff), tier_name(tier));
        if (r >= 0)
                r = exec_made(s, store_kind_expire(kind, tier, cutoff, batch));
        if (r >= 0) {
                int c;

                r = sqlite3_changes(s->db);
                c = sql_exec(s->db, "COMMIT");
                if (c < 0)
                        r = c;
        }
        if (r < 0)
                store_rollback(s);
        return r;
}

/* Whether deleting rows of the site kind from tier may take the last reference to a dictionary
 * entry: when the oldest of them is of a stretch no coarser tier keeps any more. What a tier
 * deletes has been rolled up into the next (with the same ids), which keeps it until its own
 * retention: with the usual retention only the hour tier's rows are the last of their stretch,
 * and a sweep is due once an hour, not at every step. A process goes only without rows of any
 * kind, so cascades take no last reference. tiers: the marks of the coarser tiers as they are. */
static int sites_may_lose_last(Store *s, const TierState tiers[_TIER_MAX], int tier, bool *ret) {
        _cleanup_free_ char *sql = NULL;
        int64_t oldest;
        int r;

        if (asprintf(&sql, "SELECT MIN(time_usec) FROM %s", store_kinds[STORE_KIND_SITE].tables[tier]) < 0)
                return -ENOMEM;
        r = sql_query_int(s->db, sql, 0, &oldest);
        if (r < 0)
                return r;
        *ret = oldest != INT64_MIN;
        for (int u = tier + 1; *ret && u < _TIER_MAX; u++)
                if ((uint64_t) oldest >= tiers[u].kept_from)
                        *ret = false;
        return 0;
}

/* Deletes a batch of every kind's rows of tier older than cutoff. tiers: as loaded before this
 * part of maintenance, which changes no coarser tier's marks. */
static int expire_tier(Store *s, const TierState tiers[_TIER_MAX], int tier, uint64_t cutoff, size_t batch,
                       bool *more) {
        bool behind = false;

        for (int k = 0; k < _STORE_KIND_MAX; k++) {
                bool sweep = false;
                int r;

                if (k == STORE_KIND_SITE) {
                        r = sites_may_lose_last(s, tiers, tier, &sweep);
                        if (r < 0)
                                return r;
                }
                r = delete_older(s, tier, &store_kinds[k], cutoff, batch);
                if (r < 0)
                        return r;
                if ((size_t) r >= batch)
                        *more = true;
                /* What finer tiers delete has been rolled up: a process loses its last rows
                 * when the coarsest tier deletes; or when a finer one does that was behind (its
                 * last step stopped at a batch): catching up, it may reach a process only after
                 * the coarsest tier took that process's last rows there (the minute and hour
                 * tiers delete a process at a time). */
                if (r > 0 && (tier == _TIER_MAX - 1 || (s->expire_behind & (1U << tier))))
                        s->gone_due = true;
                if ((size_t) r >= batch)
                        behind = true;
                if (sweep && r > 0)
                        store_sweep_start(s);
        }
        if (behind)
                s->expire_behind |= 1U << tier;
        else
                s->expire_behind &= ~(1U << tier);
        return 0;
}

/* How often exited processes without rows are looked for when the coarsest tier deleted none:
 * for those that never had any. */
#define GONE_CHECK_USEC (3600 * UINT64_C(1000000))

/* Exited processes whose rows have all aged out: none in any tier of any kind (each a seek on
 * the primary key, which starts with process_id). The sample kind's first, which rules out
 * nearly every process that still has rows. That is a dozen seeks per exited process, some ms
 * with a thousand of them, on the event loop: so only when the coarsest tier has deleted rows
 * (the finer tiers' rows are rolled up before they go, so only then does a process lose its
 * last ones), when the last search stopped at its batch, and once an hour for the processes
 * that exited without any row. */
static int delete_gone_processes(Store *s, uint64_t now_usec, size_t batch, bool *more) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f;
        int r;

        if (!s->gone_due && s->gone_checked_usec != 0 && now_usec >= s->gone_checked_usec &&
            now_usec - s->gone_checked_usec < GONE_CHECK_USEC)
                return 0;
        /* An exited process whose last ticks are still pending has no rows yet: fold them. */
        r = store_pending_settle(s);
        if (r < 0)
                return r;

        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        fputs("DELETE FROM process WHERE id IN (SELECT id FROM process p WHERE exited", f);
        for (int k = 0; k < _STORE_KIND_MAX; k++)
                for (int t = TIER_RAW; t < _TIER_MAX; t++)
                        fprintf(f, " AND NOT EXISTS (SELECT 1 FROM %s WHERE process_id = p.id)",
                                store_kinds[k].tables[t]);
        fprintf(f, " LIMIT %zu)", batch);
        if (!memstream_done(f, &buf))
                return -ENOMEM;
        r = exec_made(s, buf);
        if (r < 0)
                return r;
        s->gone_checked_usec = now_usec;
        s->gone_due = (size_t) sqlite3_changes(s->db) >= batch;
        if (s->gone_due)
                *more = true;
        return 0;
}

int store_maintain(Store *s, uint64_t now_usec, const StoreRetention *ret, bool *ret_more) {
        TierState tiers[_TIER_MAX];
        bool more = false, folded;
        int r;

        /* Nothing is rolled up from a raw bucket with ticks still pending. Those of the current
         * minute the roll-up does not reach (it stops there): they are folded when a tick or a
         * step falls into a later minute. Those of an earlier minute are folded first, a slice a
         * step beside the ticks' own (store_pending_fold_slice()); the roll-ups wait for the
         * last slice. */
        r = store_pending_fold_step(s, now_usec, ROLL_SLICE_USEC, &folded);
        if (r < 0)
                return r;
        if (!folded) {
                more = true;
                goto expire;
        }

        /* Roll-ups: raw buckets before the current minute never change again. A span of finer
         * intervals per transaction (roll_step()), for at most ROLL_SLICE_USEC a step: a step
         * runs on the writer's thread, and a query waiting for a tick waits for the transaction
         * that runs. Catching up after the daemon was stopped takes more steps, 100 ms apart. */
        r = store_load_tiers(s, tiers);
        if (r < 0)
                return r;
        r = roll_step(s, tiers, TIER_MINUTE, now_usec, ret->batch_rows, &more);
        if (r < 0 || (r > 0 && yield(s, &more)))
                goto done;
        r = store_load_tiers(s, tiers);
        if (r < 0)
                return r;
        r = roll_step(s, tiers, TIER_HOUR, tiers[TIER_MINUTE].rolled_until, ret->batch_rows, &more);
        if (r < 0 || (r > 0 && yield(s, &more)))
                goto done;
expire:
        r = store_load_tiers(s, tiers);
        if (r < 0)
                return r;

        /* Retention by age, never past what the next coarser tier has rolled up. */
        for (int t = TIER_RAW; t < _TIER_MAX; t++) {
                uint64_t keep = t == TIER_RAW ? ret->raw_usec : t == TIER_MINUTE ? ret->minute_usec : ret->hour_usec;
                uint64_t cutoff = now_usec > keep ? now_usec - keep : 0;

                if (t + 1 < _TIER_MAX && cutoff > tiers[t + 1].rolled_until)
                        cutoff = tiers[t + 1].rolled_until;
                cutoff = tier_floor(t, cutoff);
                /* Also when kept_from is there already: an earlier step may have stopped at a
                 * batch. Nothing left to delete is one index seek. */
                if (cutoff > 0 && cutoff >= tiers[t].kept_from) {
                        r = expire_tier(s, tiers, t, cutoff, ret->batch_rows, &more);
                        if (r < 0 || yield(s, &more))
                                goto done;
                }
        }

        /* The size cap, by shares (store-share.c). */
        r = store_cap_step(s, ret, now_usec, &more);
        if (r < 0 || yield(s, &more))
                goto done;

        r = delete_gone_processes(s, now_usec, ret->batch_rows, &more);
        if (r < 0 || yield(s, &more))
                goto done;

        r = store_sweep_step(s, ret->batch_rows, &more);
done:
        if (r < 0)
                return r;
        *ret_more = more;
        return 0;
}

int store_mark_gone(Store *s, bool (*alive)(uint32_t pid, uint64_t start_time, void *userdata), void *userdata,
                    size_t *ret_n) {
        _cleanup_finalize_ sqlite3_stmt *list = NULL, *mark = NULL;
        size_t n = 0;
        int rc, r;

        /* Rows marked exited here may be deleted by maintenance: no entry may point at them. */
        store_known_reset(s);
        r = sql_prepare(s->db, &list, "SELECT id, pid, start_time FROM process WHERE boot_id = ?1 AND NOT exited");
        if (r >= 0)
                r = sql_prepare(s->db, &mark, "UPDATE process SET exited = 1 WHERE id = ?1");
        if (r < 0)
                return r;
        sqlite3_bind_text(list, 1, s->boot_id, -1, SQLITE_STATIC);

        r = sql_exec(s->db, "BEGIN");
        if (r < 0)
                return r;
        while ((rc = sqlite3_step(list)) == SQLITE_ROW) {
                if (alive((uint32_t) sqlite3_column_int64(list, 1), (uint64_t) sqlite3_column_int64(list, 2), userdata))
                        continue;
                sqlite3_bind_int64(mark, 1, sqlite3_column_int64(list, 0));
                r = sql_step_done(mark);
                sqlite3_reset(mark);
                if (r < 0)
                        goto rollback;
                n++;
        }
        if (rc != SQLITE_DONE) {
                r = sqlite_to_errno(rc) ?: -EIO;
                goto rollback;
        }
        r = sql_exec(s->db, "COMMIT");
        if (r < 0)
                goto rollback;
        *ret_n = n;
        return 0;
rollback:
        store_rollback(s);
        return r;
}
