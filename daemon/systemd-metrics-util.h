/* SPDX-License-Identifier: MIT */
#pragma once

/* The io.systemd.Metrics report (pure; unit-tested): the metric families trapstatd describes
 * and the metrics it lists, from the running totals per unit (unit-totals.h) and the drops.
 *
 * Per unit (object: the unit; "none" for processes in no unit; "other" for the units summed
 * together), the series that are not zero:
 *   io.trapstat.Traps        counter  fields {"vector": "UD"}, one per vector
 *   io.trapstat.PageFaults   counter  fields {"mode": "user", "access": "read"|"write"|"exec"}
 *                                     and {"mode": "kernel"}: the four add up to every page fault
 *   io.trapstat.MinorFaults  counter  the kernel's min_flt accounting
 *   io.trapstat.MajorFaults  counter  the kernel's maj_flt accounting
 *   io.trapstat.MajorFaultsByCause counter  fields {"cause": "file"|"anon"|"shmem"}: major faults
 *                                     by what the address mapped, at most MajorFaults together
 *   io.trapstat.PageFaultTimeNs counter  fields {"kind": "minor"|"major"|"kernel"}: nanoseconds
 *                                     spent in page faults (UnitTotalsRow.fault_time)
 *   io.trapstat.MajorFaultTimeNsByCause counter  fields {"cause": ...}: nanoseconds of the major
 *                                     faults by cause, a part of kinds major and kernel above
 *   io.trapstat.MemoryStallNs counter  fields {"cause": "swapin"|"thrashing"|"reclaim"|"compact"}:
 *                                     nanoseconds waited on memory (UnitTotalsRow.stall, the
 *                                     kernel's delay accounting)
 *   io.trapstat.MemoryStalls counter  fields {"cause": ...}: those waits
 *   io.trapstat.BlockIoDelayNs counter  nanoseconds waited for block I/O (stall's blkio)
 *   io.trapstat.BlockIoDelays counter  those waits
 *   io.trapstat.Processes    counter  processes counted under the unit
 * A part of Faults the daemon does not count (FaultsKnown: the access kind, the major causes) has
 * no series at all, and neither has the stall while the kernel keeps no delay accounting
 * (FAULTS_KNOWN_STALL).
 * System-wide (no object), always:
 *   io.trapstat.Drops            counter  fields {"kind": ...}, one per drop kind
 *   io.trapstat.UnitsNotReported gauge    units summed into "other" by the bound below */

#include <jansson.h>
#include <stddef.h>

#include "manager.h"
#include "unit-totals.h"

#define METRICS_OBJECT_NONE "none"
#define METRICS_OBJECT_OTHER UNIT_TOTALS_OTHER

/* Series one object can have at most: every vector, four page fault kinds, minor, major, three
 * major causes, three kinds of fault time, three causes' time, four memory stall causes' time and
 * waits, block I/O's time and waits, processes. */
#define METRICS_MAX_SERIES_PER_OBJECT (TRAP_VECTORS + 1 + 4 + 2 + 3 + 3 + 3 + 4 + 4 + 2 + 1)
/* The system-wide ones besides the totals: drops by kind (every kind GetStatus has), units not
 * reported. */
#define METRICS_SYSTEM_SERIES (MANAGER_DROP_KINDS + 1)
/* The smallest --report-max-metrics: the system-wide series, the system-wide totals (the
 * series of an object, without one) and "other" always fit. */
#define METRICS_MIN_MAX (METRICS_SYSTEM_SERIES + 2 * METRICS_MAX_SERIES_PER_OBJECT)

typedef struct MetricFamily {
        const char *name, *description, *type;
} MetricFamily;

extern const MetricFamily metric_families[];
extern const size_t n_metric_families;

/* The List replies, as a JSON array of {name, value, object?, fields?}: the system-wide series
 * first (drops, units not reported, and the totals over every unit, without an object), then
 * the units in the order of rows (unit_totals_query(): most events first), each
 * unit whole, as long as it and "other" still fit in max replies; the rest of the units (and a
 * row "other" of the totals themselves) summed into the object "other". So at most max replies
 * (max >= METRICS_MIN_MAX), no unit split, and every unit with more events than another
 * reported unit is reported too. known: the parts of Faults the daemon counts, and whether it
 * has the stall (collector_faults_known()). NULL on allocation failure. */
json_t *metrics_list_build(const UnitTotalsRow *rows, size_t n, const CollectorDrop *drops, size_t n_drops,
                           FaultsKnown known, size_t max);
