/* SPDX-License-Identifier: MIT */
#pragma once

/* What trapstat-exporter serves on /metrics, made from the daemon's replies: pure formatting,
 * no I/O but the string it returns, so that the unit tests check it byte for byte.
 *
 * Every series and what it sums to is in man/trapstat-exporter.1.scd; the bound on their number:
 * per family at most a fixed number of series per unit of UnitTotals' reply (its limit) plus
 * "other" (one; trapstat_page_faults_total five, trapstat_major_faults_total four,
 * trapstat_page_fault_seconds_total and trapstat_major_fault_seconds_total three, the histogram
 * 26, trapstat_memory_stall_seconds_total and trapstat_memory_stalls_total four, the two block
 * I/O families one, traps one per vector), and with process series N processes plus one
 * "other". */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum MetricsFormat {
        METRICS_PROMETHEUS,  /* text format 0.0.4 */
        METRICS_OPENMETRICS, /* OpenMetrics 1.0 text */
} MetricsFormat;

#define METRICS_CONTENT_TYPE_PROMETHEUS "text/plain; version=0.0.4; charset=utf-8"
#define METRICS_CONTENT_TYPE_OPENMETRICS "application/openmetrics-text; version=1.0.0; charset=utf-8"

/* The format an Accept header asks for (NULL: none sent): OpenMetrics only when it names it. */
MetricsFormat metrics_format_from_accept(const char *accept);
const char *metrics_content_type(MetricsFormat format);

/* The replies of one scrape, borrowed. unit_totals NULL: the daemon did not answer, and only
 * trapstat_up 0 is written. status and top may be NULL (that call failed or was not made). */
typedef struct MetricsInput {
        json_t *unit_totals; /* io.trapstat.UnitTotals */
        json_t *status;      /* io.trapstat.GetStatus: dropsByKind */
        json_t *top;         /* io.trapstat.Top over the daemon's life, for process series */
        unsigned unit_limit;     /* at most this many unit series (0: no bound); any beyond, as
                                  * a daemon that ignored the limit might send, go to "other" */
        unsigned process_series; /* at most this many process series (0: none) */
        double scrape_seconds;   /* < 0: not written */
} MetricsInput;

/* Writes the exposition of in as format. Returns 0 and a malloc'd NUL-terminated text;
 * -EBADMSG when a reply lacks what the schema promises (the exporter then says up 0: it serves
 * nothing it cannot vouch for); -ENOMEM. */
int metrics_render(const MetricsInput *in, MetricsFormat format, char **ret, size_t *ret_size);

/* Text of a duration in seconds, room for the longest. */
#define METRICS_SECONDS_MAX 32
/* ns / 1e9 exactly, in decimal: "0", "0.000001", "12.3456789". */
void metrics_format_seconds(uint64_t ns, char buf[static METRICS_SECONDS_MAX]);
/* ns / 1e9 as a histogram's le: the shortest text that reads back as the same double, in %g's
 * form ("1e-06", "0.000128", "4.194304"). */
void metrics_format_le(uint64_t ns, char buf[static METRICS_SECONDS_MAX]);

/* Writes s as a label value, escaped as both formats want it (\\, \", \n). */
void metrics_write_label_value(FILE *f, const char *s);
