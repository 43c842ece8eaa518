/* SPDX-License-Identifier: MIT */
#pragma once

/* Running totals per systemd unit since the daemon started (io.trapstat.UnitTotals, the
 * io.systemd.Metrics report): fed every tick's samples, kept in memory, never decreasing while
 * the daemon runs. Pure: no BPF, no store, no event loop; unit-tested on its own. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "counters.h"
#include "traps.h"

/* What the units beyond the bound are summed into. systemd unit names always have a type
 * suffix (".service", ".scope", ...), so no real unit is named this. */
#define UNIT_TOTALS_OTHER "other"

typedef struct UnitTotals UnitTotals;

/* max_units: distinct unit names kept (the processes in no unit are one more, always kept); a
 * newer unit beyond them counts into UNIT_TOTALS_OTHER for good, so every series stays
 * monotonic. -EINVAL for 0; -ENOMEM. */
int unit_totals_new(size_t max_units, UnitTotals **ret);
UnitTotals *unit_totals_free(UnitTotals *t);

/* Adds one tick's samples. A process (pid, start time) counts once per unit and uid it is seen
 * in; it is forgotten when it exits (ProcessInfo.exited), its counts stay. -ENOMEM: the samples
 * from the failing one on are not counted. */
int unit_totals_add(UnitTotals *t, const ProcessSample *samples, size_t n);

/* Whether newer unit names go to UNIT_TOTALS_OTHER already. Only test-unit-totals.c asks: the
 * flag is the UnitTotals' private state; replies say it as the "other" row. */
bool unit_totals_overflowed(const UnitTotals *t);

typedef struct UnitTotalsRow {
        const char *unit; /* NULL: processes in no unit; UNIT_TOTALS_OTHER; borrowed from t */
        uint64_t processes;
        Faults faults;
        FaultTime fault_time;
        Stall stall; /* what the kernel's delay accounting grew by (zero while it keeps none) */
        Traps traps;
} UnitTotalsRow;

/* page faults (user + kernel) and traps: what rows are ordered by. */
uint64_t unit_totals_row_events(const UnitTotalsRow *row);

/* The units as one user may see them: uid < 0 every process's, else only those of uid. One row
 * per unit (the uids summed), most events first, then by name (no unit first). *ret_rows to
 * free(); valid until the next unit_totals_add(). */
int unit_totals_query(const UnitTotals *t, int64_t uid, UnitTotalsRow **ret_rows, size_t *ret_n);

/* The io.trapstat.UnitTotals reply (pure; unit-tested): the first limit rows of
 * unit_totals_query(t, uid), otherUnits the rows left out, total over all of them, and
 * sinceUsec; counters as counters_to_json(..., faults_known). NULL on allocation failure. */
json_t *unit_totals_reply_build(const UnitTotals *t, int64_t uid, size_t limit, uint64_t since_usec, FaultsKnown faults_known);
