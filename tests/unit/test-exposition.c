/* SPDX-License-Identifier: MIT */
/* Tests for trapstat-exporter's formatting (exporter/exposition.c): whole expositions compared byte
 * for byte in both formats, label values escaped, the "other" series as total minus the listed
 * units, and the bounds on units and processes also when a reply holds more than asked for; the
 * fault time as seconds by kind and as a histogram (cumulative buckets at the daemon's edges,
 * +Inf equal to _count, _sum, "other" bucket by bucket, a unit with nothing timed); major faults
 * and their time by cause, with cause "" the rest, and only cause "" where the daemon does not
 * tell causes or is older than them; the kernel's delay accounting (memory stalls by cause, block
 * I/O delays) as seconds and waits, none where it is null or missing, malformed ones refused. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cmocka.h needs these first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fault-time.h"
#include "macro.h"
#include "exposition.h"
#include "traps.h"

/* Faults as a daemon from before major causes sends them (no majorByCause). */
#define FAULTS_OLD(u, k, mi, ma, r, w, x)                                                          \
        "{\"user\":" #u ",\"kernel\":" #k ",\"minor\":" #mi ",\"major\":" #ma ",\"read\":" #r      \
        ",\"write\":" #w ",\"exec\":" #x ",\"protection\":0}"
/* And with the major faults by cause: file, anon, shmem. */
#define FAULTS_C(u, k, mi, ma, r, w, x, file, anon, shmem)                                         \
        "{\"user\":" #u ",\"kernel\":" #k ",\"minor\":" #mi ",\"major\":" #ma ",\"read\":" #r      \
        ",\"write\":" #w ",\"exec\":" #x ",\"protection\":0,\"majorByCause\":{\"file\":" #file      \
        ",\"anon\":" #anon ",\"shmem\":" #shmem "}}"
#define FAULTS(u, k, mi, ma, r, w, x) FAULTS_C(u, k, mi, ma, r, w, x, 0, 0, 0)
/* FaultTime: nanoseconds minor, major, kernel, the longest, and the 24 buckets (as a daemon from
 * before major causes sends it); with the major ones' nanoseconds by cause. */
#define FAULT_TIME_OLD(mi, ma, k, max, histogram)                                                  \
        "{\"minorNs\":" #mi ",\"majorNs\":" #ma ",\"kernelNs\":" #k ",\"maxNs\":" #max ",\"histogram\":" histogram "}"
#define FAULT_TIME_C(mi, ma, k, max, histogram, file, anon, shmem)                                 \
        "{\"minorNs\":" #mi ",\"majorNs\":" #ma ",\"kernelNs\":" #k ",\"maxNs\":" #max ",\"histogram\":" histogram \
        ",\"majorNsByCause\":{\"file\":" #file ",\"anon\":" #anon ",\"shmem\":" #shmem "}}"
#define FAULT_TIME(mi, ma, k, max, histogram) FAULT_TIME_C(mi, ma, k, max, histogram, 0, 0, 0)
#define NO_BUCKETS "[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]"
#define COUNTERS_T(faults, time, traps)                                                            \
        "{\"faults\":" faults ",\"faultTime\":" time ",\"traps\":" traps ",\"signals\":{},\"signalCodes\":{}}"
/* Nothing timed. */
#define COUNTERS(faults, traps) COUNTERS_T(faults, FAULT_TIME(0, 0, 0, 0, NO_BUCKETS), traps)
/* Stall: nanoseconds and waits of swapin, thrashing, reclaim, compact and blkio. */
#define STALL(sw, swc, th, thc, re, rec, co, coc, bl, blc)                                        \
        "{\"swapinNs\":" #sw ",\"swapinCount\":" #swc ",\"thrashingNs\":" #th ",\"thrashingCount\":" #thc \
        ",\"reclaimNs\":" #re ",\"reclaimCount\":" #rec ",\"compactNs\":" #co ",\"compactCount\":" #coc     \
        ",\"blkioNs\":" #bl ",\"blkioCount\":" #blc "}"
/* Timed, with a stall. */
#define COUNTERS_TS(faults, time, stall, traps)                                                    \
        "{\"faults\":" faults ",\"faultTime\":" time ",\"stall\":" stall ",\"traps\":" traps                \
        ",\"signals\":{},\"signalCodes\":{}}"
/* Nothing timed, with a stall (a STALL(), or null). */
#define COUNTERS_S(faults, stall, traps)                                                           \
        "{\"faults\":" faults ",\"faultTime\":" FAULT_TIME(0, 0, 0, 0, NO_BUCKETS) ",\"stall\":" stall    \
        ",\"traps\":" traps ",\"signals\":{},\"signalCodes\":{}}"

/* Two units, processes in no unit, the daemon's "other", and two units beyond limit (in total).
 * Fault time: a.service a kernel fault of 250 ns (bucket 0), a minor one of 1.5 us (1) and a
 * major one of 2 s (21); nothing timed in no unit; the daemon's "other" 100 us (7); the two
 * left out 3 us (2) and 5 s (23, past the last edge). Major faults: a.service 3, one of a file
 * (the 2 s one), one of shared memory and one of no cause told (not timed); the two left out
 * one, of anonymous memory (the 5 s one). */
static const char *totals_json =
        "{\"sinceUsec\":1000000,\"otherUnits\":2,\"units\":["
        "{\"unit\":\"a.service\",\"processes\":2,\"counters\":" COUNTERS_T(FAULTS_C(10, 3, 12, 3, 4, 5, 1, 1, 0, 1),
                FAULT_TIME_C(1500, 2000000000, 250, 2000000000, "[1,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1,0,0]",
                             2000000000, 0, 0),
                "{\"UD\":7,\"BP\":2}") "},"
        "{\"unit\":null,\"processes\":1,\"counters\":" COUNTERS(FAULTS(5, 0, 5, 0, 5, 0, 0), "{}") "},"
        "{\"unit\":\"other\",\"processes\":9,\"counters\":" COUNTERS_T(FAULTS(1, 1, 2, 0, 1, 0, 0),
                FAULT_TIME(100000, 0, 0, 100000, "[0,0,0,0,0,0,0,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]"), "{\"UD\":1}") "}"
        "],\"total\":" COUNTERS_T(FAULTS_C(20, 6, 24, 4, 12, 6, 1, 1, 1, 1),
                FAULT_TIME_C(104500, 7000000000, 250, 5000000000, "[1,1,1,0,0,0,0,1,0,0,0,0,0,0,0,0,0,0,0,0,0,1,0,1]",
                             2000000000, 5000000000, 0),
                "{\"UD\":9,\"BP\":2,\"GP\":4}") "}";

static const char *status_json =
        "{\"dropsByKind\":[{\"kind\":\"fault_map_full\",\"count\":3,\"lost\":\"x\"},"
        "{\"kind\":\"trap_map_full\",\"count\":0,\"lost\":\"y\"}]}";

#define MAJOR_FAULTS_HELP                                                                          \
        "# HELP trapstat_major_faults_total Major page faults (the kernel's maj_flt) since trapstatd started, by "  \
        "cause and systemd unit: cause file for faults on a file mapping, anon and shmem for anonymous and "   \
        "shared memory read back from swap, an empty cause for the rest (all of them where trapstatd does not " \
        "tell causes); a unit's series sum to its major faults.\n"                                            \
        "# TYPE trapstat_major_faults_total counter\n"

static char *render(const char *totals, const char *status, const char *top, unsigned unit_limit,
                    unsigned process_series, MetricsFormat format) {
        json_t *t = totals ? json_loads(totals, 0, NULL) : NULL, *s = status ? json_loads(status, 0, NULL) : NULL;
        json_t *p = top ? json_loads(top, 0, NULL) : NULL;
        assert_true(!totals || t);
        assert_true(!status || s);
        assert_true(!top || p);
        MetricsInput in = { .unit_totals = t, .status = s, .top = p, .unit_limit = unit_limit,
                            .process_series = process_series, .scrape_seconds = -1 };
        char *out = NULL;
        size_t size = 0;
        assert_int_equal(metrics_render(&in, format, &out, &size), 0);
        assert_int_equal(strlen(out), size);
        json_decref(t);
        json_decref(s);
        json_decref(p);
        return out;
}

static void test_prometheus(void **state) {
        _cleanup_free_ char *out = render(totals_json, status_json, NULL, 0, 0, METRICS_PROMETHEUS);
        /* other = total - a.service - no unit: the daemon's "other" and the two left out. */
        const char *expected =
                "# HELP trapstat_up 1 when trapstatd answered this scrape, else 0 (and no other series).\n"
                "# TYPE trapstat_up gauge\n"
                "trapstat_up 1\n"
                "# HELP trapstat_traps_total CPU exceptions turned into signals since trapstatd started, by x86 vector and systemd unit.\n"
                "# TYPE trapstat_traps_total counter\n"
                "trapstat_traps_total{vector=\"UD\",unit=\"a.service\"} 7\n"
                "trapstat_traps_total{vector=\"BP\",unit=\"a.service\"} 2\n"
                "trapstat_traps_total{vector=\"UD\",unit=\"other\"} 2\n"
                "trapstat_traps_total{vector=\"BP\",unit=\"other\"} 0\n"
                "trapstat_traps_total{vector=\"GP\",unit=\"other\"} 4\n"
                "# HELP trapstat_page_faults_total Page faults since trapstatd started by mode, access (user mode only) and systemd unit; a unit's series sum to its user plus kernel faults.\n"
                "# TYPE trapstat_page_faults_total counter\n"
                "trapstat_page_faults_total{mode=\"user\",access=\"read\",unit=\"a.service\"} 4\n"
                "trapstat_page_faults_total{mode=\"user\",access=\"write\",unit=\"a.service\"} 5\n"
                "trapstat_page_faults_total{mode=\"user\",access=\"exec\",unit=\"a.service\"} 1\n"
                "trapstat_page_faults_total{mode=\"user\",access=\"\",unit=\"a.service\"} 0\n"
                "trapstat_page_faults_total{mode=\"kernel\",access=\"\",unit=\"a.service\"} 3\n"
                "trapstat_page_faults_total{mode=\"user\",access=\"read\",unit=\"\"} 5\n"
                "trapstat_page_faults_total{mode=\"user\",access=\"write\",unit=\"\"} 0\n"
                "trapstat_page_faults_total{mode=\"user\",access=\"exec\",unit=\"\"} 0\n"
                "trapstat_page_faults_total{mode=\"user\",access=\"\",unit=\"\"} 0\n"
                "trapstat_page_faults_total{mode=\"kernel\",access=\"\",unit=\"\"} 0\n"
                "trapstat_page_faults_total{mode=\"user\",access=\"read\",unit=\"other\"} 3\n"
                "trapstat_page_faults_total{mode=\"user\",access=\"write\",unit=\"other\"} 1\n"
                "trapstat_page_faults_total{mode=\"user\",access=\"exec\",unit=\"other\"} 0\n"
                "trapstat_page_faults_total{mode=\"user\",access=\"\",unit=\"other\"} 1\n"
                "trapstat_page_faults_total{mode=\"kernel\",access=\"\",unit=\"other\"} 3\n"
                "# HELP trapstat_minor_faults_total Minor page faults (the kernel's min_flt) since trapstatd started, by systemd unit.\n"
                "# TYPE trapstat_minor_faults_total counter\n"
                "trapstat_minor_faults_total{unit=\"a.service\"} 12\n"
                "trapstat_minor_faults_total{unit=\"\"} 5\n"
                "trapstat_minor_faults_total{unit=\"other\"} 7\n"
                MAJOR_FAULTS_HELP
                "trapstat_major_faults_total{cause=\"file\",unit=\"a.service\"} 1\n"
                "trapstat_major_faults_total{cause=\"anon\",unit=\"a.service\"} 0\n"
                "trapstat_major_faults_total{cause=\"shmem\",unit=\"a.service\"} 1\n"
                "trapstat_major_faults_total{cause=\"\",unit=\"a.service\"} 1\n"
                "trapstat_major_faults_total{cause=\"file\",unit=\"\"} 0\n"
                "trapstat_major_faults_total{cause=\"anon\",unit=\"\"} 0\n"
                "trapstat_major_faults_total{cause=\"shmem\",unit=\"\"} 0\n"
                "trapstat_major_faults_total{cause=\"\",unit=\"\"} 0\n"
                /* other: the total's causes less a.service's and no unit's, as the other members. */
                "trapstat_major_faults_total{cause=\"file\",unit=\"other\"} 0\n"
                "trapstat_major_faults_total{cause=\"anon\",unit=\"other\"} 1\n"
                "trapstat_major_faults_total{cause=\"shmem\",unit=\"other\"} 0\n"
                "trapstat_major_faults_total{cause=\"\",unit=\"other\"} 0\n"
                /* other: the total less a.service's and no unit's, bucket by bucket. */
                "# HELP trapstat_page_fault_seconds_total Time spent in page faults since trapstatd started, seconds, by kind and systemd unit: kind minor and major for faults taken in user mode as the kernel accounted them, kernel for faults taken in kernel mode for the process.\n"
                "# TYPE trapstat_page_fault_seconds_total counter\n"
                "trapstat_page_fault_seconds_total{kind=\"minor\",unit=\"a.service\"} 0.0000015\n"
                "trapstat_page_fault_seconds_total{kind=\"major\",unit=\"a.service\"} 2\n"
                "trapstat_page_fault_seconds_total{kind=\"kernel\",unit=\"a.service\"} 0.00000025\n"
                "trapstat_page_fault_seconds_total{kind=\"minor\",unit=\"\"} 0\n"
                "trapstat_page_fault_seconds_total{kind=\"major\",unit=\"\"} 0\n"
                "trapstat_page_fault_seconds_total{kind=\"kernel\",unit=\"\"} 0\n"
                "trapstat_page_fault_seconds_total{kind=\"minor\",unit=\"other\"} 0.000103\n"
                "trapstat_page_fault_seconds_total{kind=\"major\",unit=\"other\"} 5\n"
                "trapstat_page_fault_seconds_total{kind=\"kernel\",unit=\"other\"} 0\n"
                "# HELP trapstat_major_fault_seconds_total Time spent in major page faults since trapstatd started, seconds, by cause (file, anon, shmem, as trapstat_major_faults_total) and systemd unit: faults taken in user or kernel mode, a part of kinds major and kernel of trapstat_page_fault_seconds_total.\n"
                "# TYPE trapstat_major_fault_seconds_total counter\n"
                "trapstat_major_fault_seconds_total{cause=\"file\",unit=\"a.service\"} 2\n"
                "trapstat_major_fault_seconds_total{cause=\"anon\",unit=\"a.service\"} 0\n"
                "trapstat_major_fault_seconds_total{cause=\"shmem\",unit=\"a.service\"} 0\n"
                "trapstat_major_fault_seconds_total{cause=\"file\",unit=\"\"} 0\n"
                "trapstat_major_fault_seconds_total{cause=\"anon\",unit=\"\"} 0\n"
                "trapstat_major_fault_seconds_total{cause=\"shmem\",unit=\"\"} 0\n"
                "trapstat_major_fault_seconds_total{cause=\"file\",unit=\"other\"} 0\n"
                "trapstat_major_fault_seconds_total{cause=\"anon\",unit=\"other\"} 5\n"
                "trapstat_major_fault_seconds_total{cause=\"shmem\",unit=\"other\"} 0\n"
                "# HELP trapstat_page_fault_duration_seconds How long page faults took since trapstatd started, seconds, by systemd unit: every fault timed from its entry to its completion; le is an exclusive upper edge.\n"
                "# TYPE trapstat_page_fault_duration_seconds histogram\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"a.service\",le=\"1e-06\"} 1\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"a.service\",le=\"2e-06\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"a.service\",le=\"4e-06\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"a.service\",le=\"8e-06\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"a.service\",le=\"1.6e-05\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"a.service\",le=\"3.2e-05\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"a.service\",le=\"6.4e-05\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"a.service\",le=\"0.000128\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"a.service\",le=\"0.000256\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"a.service\",le=\"0.000512\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"a.service\",le=\"0.001024\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"a.service\",le=\"0.002048\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"a.service\",le=\"0.004096\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"a.service\",le=\"0.008192\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"a.service\",le=\"0.016384\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"a.service\",le=\"0.032768\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"a.service\",le=\"0.065536\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"a.service\",le=\"0.131072\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"a.service\",le=\"0.262144\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"a.service\",le=\"0.524288\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"a.service\",le=\"1.048576\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"a.service\",le=\"2.097152\"} 3\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"a.service\",le=\"4.194304\"} 3\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"a.service\",le=\"+Inf\"} 3\n"
                "trapstat_page_fault_duration_seconds_sum{unit=\"a.service\"} 2.00000175\n"
                "trapstat_page_fault_duration_seconds_count{unit=\"a.service\"} 3\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"\",le=\"1e-06\"} 0\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"\",le=\"2e-06\"} 0\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"\",le=\"4e-06\"} 0\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"\",le=\"8e-06\"} 0\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"\",le=\"1.6e-05\"} 0\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"\",le=\"3.2e-05\"} 0\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"\",le=\"6.4e-05\"} 0\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"\",le=\"0.000128\"} 0\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"\",le=\"0.000256\"} 0\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"\",le=\"0.000512\"} 0\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"\",le=\"0.001024\"} 0\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"\",le=\"0.002048\"} 0\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"\",le=\"0.004096\"} 0\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"\",le=\"0.008192\"} 0\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"\",le=\"0.016384\"} 0\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"\",le=\"0.032768\"} 0\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"\",le=\"0.065536\"} 0\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"\",le=\"0.131072\"} 0\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"\",le=\"0.262144\"} 0\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"\",le=\"0.524288\"} 0\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"\",le=\"1.048576\"} 0\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"\",le=\"2.097152\"} 0\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"\",le=\"4.194304\"} 0\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"\",le=\"+Inf\"} 0\n"
                "trapstat_page_fault_duration_seconds_sum{unit=\"\"} 0\n"
                "trapstat_page_fault_duration_seconds_count{unit=\"\"} 0\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"other\",le=\"1e-06\"} 0\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"other\",le=\"2e-06\"} 0\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"other\",le=\"4e-06\"} 1\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"other\",le=\"8e-06\"} 1\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"other\",le=\"1.6e-05\"} 1\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"other\",le=\"3.2e-05\"} 1\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"other\",le=\"6.4e-05\"} 1\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"other\",le=\"0.000128\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"other\",le=\"0.000256\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"other\",le=\"0.000512\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"other\",le=\"0.001024\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"other\",le=\"0.002048\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"other\",le=\"0.004096\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"other\",le=\"0.008192\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"other\",le=\"0.016384\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"other\",le=\"0.032768\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"other\",le=\"0.065536\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"other\",le=\"0.131072\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"other\",le=\"0.262144\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"other\",le=\"0.524288\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"other\",le=\"1.048576\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"other\",le=\"2.097152\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"other\",le=\"4.194304\"} 2\n"
                "trapstat_page_fault_duration_seconds_bucket{unit=\"other\",le=\"+Inf\"} 3\n"
                "trapstat_page_fault_duration_seconds_sum{unit=\"other\"} 5.000103\n"
                "trapstat_page_fault_duration_seconds_count{unit=\"other\"} 3\n"
                "# HELP trapstat_drops_total Events trapstatd could not count since it started, by kind.\n"
                "# TYPE trapstat_drops_total counter\n"
                "trapstat_drops_total{kind=\"fault_map_full\"} 3\n"
                "trapstat_drops_total{kind=\"trap_map_full\"} 0\n";
        assert_string_equal(out, expected);
}

static void test_openmetrics(void **state) {
        _cleanup_free_ char *out = render(totals_json, NULL, NULL, 0, 0, METRICS_OPENMETRICS);
        /* Families without _total, samples with it, # EOF last; no drops without a status. */
        assert_non_null(strstr(out, "# HELP trapstat_up 1 when"));
        assert_non_null(strstr(out, "# TYPE trapstat_traps counter\ntrapstat_traps_total{vector=\"UD\",unit=\"a.service\"} 7\n"));
        assert_non_null(strstr(out, "# TYPE trapstat_page_faults counter\n"));
        assert_non_null(strstr(out, "# TYPE trapstat_minor_faults counter\n"));
        assert_non_null(strstr(out, "# TYPE trapstat_major_faults counter\n"
                                    "trapstat_major_faults_total{cause=\"file\",unit=\"a.service\"} 1\n"));
        assert_non_null(strstr(out, "# TYPE trapstat_major_fault_seconds counter\n"
                                    "trapstat_major_fault_seconds_total{cause=\"file\",unit=\"a.service\"} 2\n"));
        assert_non_null(strstr(out, "# TYPE trapstat_page_fault_seconds counter\n"
                                    "trapstat_page_fault_seconds_total{kind=\"minor\",unit=\"a.service\"} 0.0000015\n"));
        /* A histogram's family is its name in both formats. */
        assert_non_null(strstr(out, "# TYPE trapstat_page_fault_duration_seconds histogram\n"
                                    "trapstat_page_fault_duration_seconds_bucket{unit=\"a.service\",le=\"1e-06\"} 1\n"));
        assert_null(strstr(out, "_total counter"));
        assert_null(strstr(out, "trapstat_drops"));
        size_t n = strlen(out);
        assert_true(n > 6);
        assert_string_equal(out + n - 6, "# EOF\n");
        assert_ptr_equal(strstr(out, "# EOF"), out + n - 6);
}

static void test_down(void **state) {
        _cleanup_free_ char *p = render(NULL, status_json, NULL, 0, 5, METRICS_PROMETHEUS);
        assert_string_equal(p, "# HELP trapstat_up 1 when trapstatd answered this scrape, else 0 (and no other series).\n"
                               "# TYPE trapstat_up gauge\ntrapstat_up 0\n");
        _cleanup_free_ char *o = render(NULL, NULL, NULL, 0, 0, METRICS_OPENMETRICS);
        assert_string_equal(o, "# HELP trapstat_up 1 when trapstatd answered this scrape, else 0 (and no other series).\n"
                               "# TYPE trapstat_up gauge\ntrapstat_up 0\n# EOF\n");
}

static size_t count_lines(const char *s, const char *prefix);

static void test_escaping(void **state) {
        /* A unit name is text a process chose (a transient unit's name): quote, backslash and
         * newline escaped, nothing else touched. */
#define EVIL_FAULT_TIME FAULT_TIME(0, 0, 7000, 7000, "[0,0,0,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]")
        const char *totals =
                "{\"sinceUsec\":1,\"otherUnits\":0,\"units\":["
                "{\"unit\":\"a\\\"b\\\\c\\nd}{=,\\u00e9.service\",\"processes\":1,\"counters\":" COUNTERS_T(FAULTS(0, 0, 0, 0, 0, 0, 0), EVIL_FAULT_TIME, "{\"UD\":1}") "}"
                "],\"total\":" COUNTERS_T(FAULTS(0, 0, 0, 0, 0, 0, 0), EVIL_FAULT_TIME, "{\"UD\":1}") "}";
        _cleanup_free_ char *out = render(totals, NULL, NULL, 0, 0, METRICS_PROMETHEUS);
        assert_non_null(strstr(out, "trapstat_traps_total{vector=\"UD\",unit=\"a\\\"b\\\\c\\nd}{=,\xc3\xa9.service\"} 1\n"));
        /* The same escaping in the fault time's series, le after the unit. */
        assert_non_null(strstr(out, "trapstat_page_fault_seconds_total{kind=\"kernel\",unit=\"a\\\"b\\\\c\\nd}{=,\xc3\xa9.service\"} 0.000007\n"));
        assert_non_null(strstr(out, "trapstat_page_fault_duration_seconds_bucket{unit=\"a\\\"b\\\\c\\nd}{=,\xc3\xa9.service\",le=\"8e-06\"} 1\n"));
        assert_non_null(strstr(out, "trapstat_page_fault_duration_seconds_bucket{unit=\"a\\\"b\\\\c\\nd}{=,\xc3\xa9.service\",le=\"+Inf\"} 1\n"));
        assert_non_null(strstr(out, "trapstat_page_fault_duration_seconds_sum{unit=\"a\\\"b\\\\c\\nd}{=,\xc3\xa9.service\"} 0.000007\n"));
        assert_non_null(strstr(out, "trapstat_page_fault_duration_seconds_count{unit=\"a\\\"b\\\\c\\nd}{=,\xc3\xa9.service\"} 1\n"));
        /* Every sample line of the unit has its name escaped: no raw newline inside one. */
        assert_int_equal(count_lines(out, "d}{=,"), 0);
        /* No units left out, no daemon "other": no "other" series. */
        assert_null(strstr(out, "\"other\""));
}

static void test_malformed(void **state) {
        const char *bad[] = {
                "{}",
                "{\"sinceUsec\":1,\"otherUnits\":0,\"units\":[],\"total\":{}}",
                "{\"sinceUsec\":1,\"otherUnits\":0,\"units\":[{\"unit\":3,\"counters\":" COUNTERS(FAULTS(0, 0, 0, 0, 0, 0, 0), "{}") "}],"
                "\"total\":" COUNTERS(FAULTS(0, 0, 0, 0, 0, 0, 0), "{}") "}",
                "{\"sinceUsec\":1,\"otherUnits\":0,\"units\":[],\"total\":" COUNTERS(FAULTS(0, 0, 0, 0, 0, 0, 0), "{\"UD\":-1}") "}",
                /* Fault time: in the total but not in a unit's row, 23 buckets, a negative count, a
                 * member the schema does not have. */
                "{\"sinceUsec\":1,\"otherUnits\":0,\"units\":[{\"unit\":\"a.service\",\"counters\":{\"faults\":"
                FAULTS(0, 0, 0, 0, 0, 0, 0) ",\"traps\":{},\"signals\":{},\"signalCodes\":{}}}],"
                "\"total\":" COUNTERS(FAULTS(0, 0, 0, 0, 0, 0, 0), "{}") "}",
                "{\"sinceUsec\":1,\"otherUnits\":0,\"units\":[],\"total\":" COUNTERS_T(FAULTS(0, 0, 0, 0, 0, 0, 0),
                FAULT_TIME(0, 0, 0, 0, "[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]"), "{}") "}",
                "{\"sinceUsec\":1,\"otherUnits\":0,\"units\":[],\"total\":" COUNTERS_T(FAULTS(0, 0, 0, 0, 0, 0, 0),
                FAULT_TIME(0, 0, 0, 0, "[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,-1]"), "{}") "}",
                "{\"sinceUsec\":1,\"otherUnits\":0,\"units\":[],\"total\":" COUNTERS_T(FAULTS(0, 0, 0, 0, 0, 0, 0),
                "{\"minorNs\":0,\"majorNs\":0,\"kernelNs\":0,\"maxNs\":0,\"minNs\":0,\"histogram\":" NO_BUCKETS "}", "{}") "}",
                /* Stall: a negative count, a member missing, one the schema does not have, not an
                 * object; in a unit's row as in the total. */
                "{\"sinceUsec\":1,\"otherUnits\":0,\"units\":[],\"total\":" COUNTERS_S(FAULTS(0, 0, 0, 0, 0, 0, 0),
                STALL(0, 0, 0, 0, 0, -1, 0, 0, 0, 0), "{}") "}",
                "{\"sinceUsec\":1,\"otherUnits\":0,\"units\":[],\"total\":" COUNTERS_S(FAULTS(0, 0, 0, 0, 0, 0, 0),
                "{\"swapinNs\":0,\"swapinCount\":0}", "{}") "}",
                "{\"sinceUsec\":1,\"otherUnits\":0,\"units\":[],\"total\":" COUNTERS_S(FAULTS(0, 0, 0, 0, 0, 0, 0),
                "{\"swapinNs\":0,\"swapinCount\":0,\"thrashingNs\":0,\"thrashingCount\":0,\"reclaimNs\":0,"
                "\"reclaimCount\":0,\"compactNs\":0,\"compactCount\":0,\"blkioNs\":0,\"blkioCount\":0,\"irqNs\":0}",
                "{}") "}",
                "{\"sinceUsec\":1,\"otherUnits\":0,\"units\":[{\"unit\":\"a.service\",\"counters\":"
                COUNTERS_S(FAULTS(0, 0, 0, 0, 0, 0, 0), "[]", "{}") "}],\"total\":" COUNTERS_S(FAULTS(0, 0, 0, 0, 0, 0, 0),
                STALL(0, 0, 0, 0, 0, 0, 0, 0, 0, 0), "{}") "}",
                "{\"sinceUsec\":1,\"otherUnits\":0,\"units\":[{\"unit\":\"a.service\",\"counters\":"
                COUNTERS_S(FAULTS(0, 0, 0, 0, 0, 0, 0), STALL(0, 0, 0, 0, 0, 0, 0, 0, 1.5, 0), "{}") "}],\"total\":"
                COUNTERS_S(FAULTS(0, 0, 0, 0, 0, 0, 0), STALL(0, 0, 0, 0, 0, 0, 0, 0, 0, 0), "{}") "}",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                json_t *t = json_loads(bad[i], 0, NULL);
                assert_non_null(t);
                MetricsInput in = { .unit_totals = t, .scrape_seconds = -1 };
                char *out = NULL;
                size_t size;
                assert_int_equal(metrics_render(&in, METRICS_PROMETHEUS, &out, &size), -EBADMSG);
                assert_null(out);
                json_decref(t);
        }
}

static size_t count_lines(const char *s, const char *prefix) {
        size_t n = 0;
        for (const char *l = s; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
                n += strncmp(l, prefix, strlen(prefix)) == 0;
        return n;
}

/* A daemon older than fault time (an exporter upgraded first): its counts are exported, the
 * fault-time families are left out rather than written as zeros or failing the scrape. It is older
 * than major causes too (no majorByCause): its major faults are all cause "". */
static void test_older_daemon(void **state) {
        (void) state;
        char *out = render("{\"sinceUsec\":1,\"otherUnits\":0,\"units\":[{\"unit\":\"a.service\",\"counters\":"
                           "{\"faults\":" FAULTS_OLD(7, 1, 8, 2, 3, 4, 0) ",\"traps\":{\"UD\":2},\"signals\":{},"
                           "\"signalCodes\":{}}}],\"total\":{\"faults\":" FAULTS_OLD(7, 1, 8, 2, 3, 4, 0)
                           ",\"traps\":{\"UD\":2},\"signals\":{},\"signalCodes\":{}}}",
                           NULL, NULL, 0, 0, METRICS_PROMETHEUS);
        assert_non_null(strstr(out, "trapstat_up 1\n"));
        assert_non_null(strstr(out, "trapstat_traps_total{vector=\"UD\",unit=\"a.service\"} 2\n"));
        assert_non_null(strstr(out, "trapstat_page_faults_total{mode=\"user\",access=\"write\",unit=\"a.service\"} 4\n"));
        assert_non_null(strstr(out, "trapstat_minor_faults_total{unit=\"a.service\"} 8\n"));
        assert_non_null(strstr(out, MAJOR_FAULTS_HELP "trapstat_major_faults_total{cause=\"\",unit=\"a.service\"} 2\n"));
        assert_int_equal(count_lines(out, "trapstat_major_faults_total{"), 1);
        assert_int_equal(count_lines(out, "trapstat_page_fault_seconds"), 0);
        assert_int_equal(count_lines(out, "trapstat_major_fault_seconds"), 0);
        assert_int_equal(count_lines(out, "trapstat_page_fault_duration_seconds"), 0);
        assert_int_equal(count_lines(out, "# HELP trapstat_page_fault_"), 0);
        free(out);

        /* One with fault time, from before major causes (no majorByCause, no majorNsByCause):
         * the fault-time families, but no time by cause, not even zeros. */
        out = render("{\"sinceUsec\":1,\"otherUnits\":0,\"units\":[{\"unit\":\"a.service\",\"counters\":"
                     COUNTERS_T(FAULTS_OLD(7, 1, 8, 2, 3, 4, 0), FAULT_TIME_OLD(10, 20, 30, 20, NO_BUCKETS), "{}")
                     "}],\"total\":" COUNTERS_T(FAULTS_OLD(7, 1, 8, 2, 3, 4, 0),
                     FAULT_TIME_OLD(10, 20, 30, 20, NO_BUCKETS), "{}") "}",
                     NULL, NULL, 0, 0, METRICS_PROMETHEUS);
        assert_non_null(strstr(out, "trapstat_page_fault_seconds_total{kind=\"major\",unit=\"a.service\"} 0.00000002\n"));
        assert_non_null(strstr(out, "trapstat_major_faults_total{cause=\"\",unit=\"a.service\"} 2\n"));
        assert_int_equal(count_lines(out, "trapstat_major_faults_total{"), 1);
        assert_int_equal(count_lines(out, "trapstat_major_fault_seconds"), 0);
        assert_int_equal(count_lines(out, "# HELP trapstat_major_fault_seconds"), 0);
        free(out);
}

#define STALL_HELP                                                                                 \
        "# HELP trapstat_memory_stall_seconds_total Time waited on memory since trapstatd started, seconds, as the " \
        "kernel's delay accounting says, by cause and systemd unit: swapin for pages read back from swap, "      \
        "thrashing for pages of the working set read again after their eviction, reclaim for direct reclaim, "  \
        "compact for direct compaction.\n"                                                         \
        "# TYPE trapstat_memory_stall_seconds_total counter\n"
#define STALLS_HELP                                                                                \
        "# HELP trapstat_memory_stalls_total Waits on memory since trapstatd started, as the kernel's delay "  \
        "accounting counts them, by cause (as trapstat_memory_stall_seconds_total) and systemd unit.\n"        \
        "# TYPE trapstat_memory_stalls_total counter\n"
#define BLOCK_IO_HELP                                                                              \
        "# HELP trapstat_block_io_delay_seconds_total Time waited for block I/O since trapstatd started, "     \
        "seconds, as the kernel's delay accounting says, by systemd unit.\n"                       \
        "# TYPE trapstat_block_io_delay_seconds_total counter\n"
#define BLOCK_IOS_HELP                                                                             \
        "# HELP trapstat_block_io_delays_total Waits for block I/O since trapstatd started, as the kernel's "  \
        "delay accounting counts them, by systemd unit.\n"                                         \
        "# TYPE trapstat_block_io_delays_total counter\n"

/* a.service and no unit listed, the daemon's "other" (its own row is not used: other is the total
 * less the listed units). other = total - a - none: swapin 2000 ns in 2 waits, thrashing 7 ns
 * in 1, reclaim none, compact 1 ms in 2, blkio 10 ns in 2. */
static const char *stall_json =
        "{\"sinceUsec\":1,\"otherUnits\":1,\"units\":["
        "{\"unit\":\"a.service\",\"processes\":1,\"counters\":" COUNTERS_S(FAULTS(1, 0, 1, 0, 1, 0, 0),
                STALL(1500000000, 3, 0, 0, 250, 1, 0, 0, 2000000000, 7), "{}") "},"
        "{\"unit\":null,\"processes\":1,\"counters\":" COUNTERS_S(FAULTS(0, 0, 0, 0, 0, 0, 0),
                STALL(0, 0, 0, 0, 0, 0, 0, 0, 0, 0), "{}") "},"
        "{\"unit\":\"other\",\"processes\":4,\"counters\":" COUNTERS_S(FAULTS(0, 0, 0, 0, 0, 0, 0),
                STALL(1000, 1, 0, 0, 0, 0, 0, 0, 5, 1), "{}") "}"
        "],\"total\":" COUNTERS_S(FAULTS(1, 0, 1, 0, 1, 0, 0),
                STALL(1500002000, 5, 7, 1, 250, 1, 1000000, 2, 2000000010, 9), "{}") "}";

/* The kernel's delay accounting of each unit, byte for byte: seconds as the fault time's are
 * written (exact decimals of the nanoseconds), waits as counts; memory by cause, block I/O a
 * family of its own without a cause; the families last before the drops, and written whether
 * or not the daemon times faults. */
static void test_stall(void **state) {
        (void) state;
        static const char *expected =
                STALL_HELP
                "trapstat_memory_stall_seconds_total{cause=\"swapin\",unit=\"a.service\"} 1.5\n"
                "trapstat_memory_stall_seconds_total{cause=\"thrashing\",unit=\"a.service\"} 0\n"
                "trapstat_memory_stall_seconds_total{cause=\"reclaim\",unit=\"a.service\"} 0.00000025\n"
                "trapstat_memory_stall_seconds_total{cause=\"compact\",unit=\"a.service\"} 0\n"
                "trapstat_memory_stall_seconds_total{cause=\"swapin\",unit=\"\"} 0\n"
                "trapstat_memory_stall_seconds_total{cause=\"thrashing\",unit=\"\"} 0\n"
                "trapstat_memory_stall_seconds_total{cause=\"reclaim\",unit=\"\"} 0\n"
                "trapstat_memory_stall_seconds_total{cause=\"compact\",unit=\"\"} 0\n"
                "trapstat_memory_stall_seconds_total{cause=\"swapin\",unit=\"other\"} 0.000002\n"
                "trapstat_memory_stall_seconds_total{cause=\"thrashing\",unit=\"other\"} 0.000000007\n"
                "trapstat_memory_stall_seconds_total{cause=\"reclaim\",unit=\"other\"} 0\n"
                "trapstat_memory_stall_seconds_total{cause=\"compact\",unit=\"other\"} 0.001\n"
                STALLS_HELP
                "trapstat_memory_stalls_total{cause=\"swapin\",unit=\"a.service\"} 3\n"
                "trapstat_memory_stalls_total{cause=\"thrashing\",unit=\"a.service\"} 0\n"
                "trapstat_memory_stalls_total{cause=\"reclaim\",unit=\"a.service\"} 1\n"
                "trapstat_memory_stalls_total{cause=\"compact\",unit=\"a.service\"} 0\n"
                "trapstat_memory_stalls_total{cause=\"swapin\",unit=\"\"} 0\n"
                "trapstat_memory_stalls_total{cause=\"thrashing\",unit=\"\"} 0\n"
                "trapstat_memory_stalls_total{cause=\"reclaim\",unit=\"\"} 0\n"
                "trapstat_memory_stalls_total{cause=\"compact\",unit=\"\"} 0\n"
                "trapstat_memory_stalls_total{cause=\"swapin\",unit=\"other\"} 2\n"
                "trapstat_memory_stalls_total{cause=\"thrashing\",unit=\"other\"} 1\n"
                "trapstat_memory_stalls_total{cause=\"reclaim\",unit=\"other\"} 0\n"
                "trapstat_memory_stalls_total{cause=\"compact\",unit=\"other\"} 2\n"
                BLOCK_IO_HELP
                "trapstat_block_io_delay_seconds_total{unit=\"a.service\"} 2\n"
                "trapstat_block_io_delay_seconds_total{unit=\"\"} 0\n"
                "trapstat_block_io_delay_seconds_total{unit=\"other\"} 0.00000001\n"
                BLOCK_IOS_HELP
                "trapstat_block_io_delays_total{unit=\"a.service\"} 7\n"
                "trapstat_block_io_delays_total{unit=\"\"} 0\n"
                "trapstat_block_io_delays_total{unit=\"other\"} 2\n";
        static const char *off = "{\"dropsByKind\":[{\"kind\":\"fault_map_full\",\"count\":3,\"lost\":\"x\"}],"
                                 "\"sources\":[{\"name\":\"fault_time\",\"active\":false,\"reason\":\"off\"}]}";
        char *out = render(stall_json, NULL, NULL, 0, 0, METRICS_PROMETHEUS);
        const char *at = strstr(out, "# HELP trapstat_memory_stall_seconds_total");

        assert_non_null(at);
        assert_string_equal(at, expected);
        free(out);

        /* Fault time off: no fault time, the stall all the same, then the drops. */
        out = render(stall_json, off, NULL, 0, 0, METRICS_PROMETHEUS);
        assert_int_equal(count_lines(out, "trapstat_page_fault_seconds"), 0);
        at = strstr(out, "# HELP trapstat_memory_stall_seconds_total");
        assert_non_null(at);
        assert_int_equal(strncmp(at, expected, strlen(expected)), 0);
        assert_string_equal(at + strlen(expected), "# HELP trapstat_drops_total Events trapstatd could not count "
                                                   "since it started, by kind.\n# TYPE trapstat_drops_total counter\n"
                                                   "trapstat_drops_total{kind=\"fault_map_full\"} 3\n");
        free(out);

        /* OpenMetrics: the families without _total, the samples with it. */
        out = render(stall_json, NULL, NULL, 0, 0, METRICS_OPENMETRICS);
        assert_non_null(strstr(out, "# TYPE trapstat_memory_stall_seconds counter\n"
                                    "trapstat_memory_stall_seconds_total{cause=\"swapin\",unit=\"a.service\"} 1.5\n"));
        assert_non_null(strstr(out, "# TYPE trapstat_memory_stalls counter\n"
                                    "trapstat_memory_stalls_total{cause=\"swapin\",unit=\"a.service\"} 3\n"));
        assert_non_null(strstr(out, "# TYPE trapstat_block_io_delay_seconds counter\n"
                                    "trapstat_block_io_delay_seconds_total{unit=\"a.service\"} 2\n"));
        assert_non_null(strstr(out, "# TYPE trapstat_block_io_delays counter\n"
                                    "trapstat_block_io_delays_total{unit=\"a.service\"} 7\n"));
        free(out);
}

/* No delay accounting: stall null (the daemon's kernel keeps none) or missing (a daemon older
 * than it): no series and no family, rather than zeros. */
static void test_stall_not_known(void **state) {
        (void) state;
        const char *replies[] = {
                "{\"sinceUsec\":1,\"otherUnits\":1,\"units\":[{\"unit\":\"a.service\",\"processes\":1,\"counters\":"
                COUNTERS_S(FAULTS(1, 0, 1, 0, 1, 0, 0), "null", "{}") "}],\"total\":"
                COUNTERS_S(FAULTS(2, 0, 2, 0, 2, 0, 0), "null", "{}") "}",
                "{\"sinceUsec\":1,\"otherUnits\":1,\"units\":[{\"unit\":\"a.service\",\"processes\":1,\"counters\":"
                COUNTERS(FAULTS(1, 0, 1, 0, 1, 0, 0), "{}") "}],\"total\":" COUNTERS(FAULTS(2, 0, 2, 0, 2, 0, 0), "{}") "}",
        };

        for (size_t i = 0; i < ELEMENTSOF(replies); i++) {
                _cleanup_free_ char *out = render(replies[i], NULL, NULL, 0, 0, METRICS_PROMETHEUS);

                assert_non_null(strstr(out, "trapstat_minor_faults_total{unit=\"other\"} 1\n"));
                assert_null(strstr(out, "stall"));
                assert_null(strstr(out, "block_io"));
        }
}

/* The total known, one unit's stall not (an inconsistent reply, or a daemon that summed rows of
 * both): that unit has no series, and neither has "other", whose remainder would hold its
 * unknown part; the other unit's are written. */
static void test_stall_one_unit_known(void **state) {
        (void) state;
        _cleanup_free_ char *out = render(
                "{\"sinceUsec\":1,\"otherUnits\":1,\"units\":["
                "{\"unit\":\"a.service\",\"processes\":1,\"counters\":" COUNTERS_S(FAULTS(1, 0, 1, 0, 1, 0, 0),
                        STALL(3000000000, 2, 0, 0, 0, 0, 0, 0, 40, 1), "{}") "},"
                "{\"unit\":\"b.service\",\"processes\":1,\"counters\":" COUNTERS_S(FAULTS(1, 0, 1, 0, 1, 0, 0),
                        "null", "{}") "}"
                "],\"total\":" COUNTERS_S(FAULTS(3, 0, 3, 0, 3, 0, 0),
                        STALL(3000000001, 3, 0, 0, 0, 0, 0, 0, 50, 2), "{}") "}",
                NULL, NULL, 0, 0, METRICS_PROMETHEUS);
        const char *expected =
                STALL_HELP
                "trapstat_memory_stall_seconds_total{cause=\"swapin\",unit=\"a.service\"} 3\n"
                "trapstat_memory_stall_seconds_total{cause=\"thrashing\",unit=\"a.service\"} 0\n"
                "trapstat_memory_stall_seconds_total{cause=\"reclaim\",unit=\"a.service\"} 0\n"
                "trapstat_memory_stall_seconds_total{cause=\"compact\",unit=\"a.service\"} 0\n"
                STALLS_HELP
                "trapstat_memory_stalls_total{cause=\"swapin\",unit=\"a.service\"} 2\n"
                "trapstat_memory_stalls_total{cause=\"thrashing\",unit=\"a.service\"} 0\n"
                "trapstat_memory_stalls_total{cause=\"reclaim\",unit=\"a.service\"} 0\n"
                "trapstat_memory_stalls_total{cause=\"compact\",unit=\"a.service\"} 0\n"
                BLOCK_IO_HELP
                "trapstat_block_io_delay_seconds_total{unit=\"a.service\"} 0.00000004\n"
                BLOCK_IOS_HELP
                "trapstat_block_io_delays_total{unit=\"a.service\"} 1\n";
        const char *at = strstr(out, "# HELP trapstat_memory_stall_seconds_total");

        /* b.service and "other" are there in the other families. */
        assert_non_null(strstr(out, "trapstat_minor_faults_total{unit=\"b.service\"} 1\n"));
        assert_non_null(strstr(out, "trapstat_minor_faults_total{unit=\"other\"} 1\n"));
        assert_non_null(at);
        assert_string_equal(at, expected);
}

/* A daemon that cannot tell major faults' causes (Linux before 5.17, --disable-source
 * major_cause): majorByCause null, every major fault is cause "", in "other" too (no series says
 * 0 swap-ins that were never counted), and there is no time by cause. */
static void test_major_cause_not_counted(void **state) {
        (void) state;
#define NO_CAUSE(ma)                                                                               \
        "{\"user\":3,\"kernel\":0,\"minor\":3,\"major\":" #ma ",\"read\":3,\"write\":0,\"exec\":0,"           \
        "\"protection\":0,\"majorByCause\":null}"
        _cleanup_free_ char *out = render(
                "{\"sinceUsec\":1,\"otherUnits\":1,\"units\":[{\"unit\":\"a.service\",\"processes\":1,\"counters\":"
                COUNTERS_T(NO_CAUSE(2), FAULT_TIME(0, 9000, 0, 9000, NO_BUCKETS), "{}") "}],\"total\":"
                COUNTERS_T(NO_CAUSE(5), FAULT_TIME(0, 20000, 0, 9000, NO_BUCKETS), "{}") "}",
                NULL, NULL, 0, 0, METRICS_PROMETHEUS);
#undef NO_CAUSE
        const char *expected = MAJOR_FAULTS_HELP
                "trapstat_major_faults_total{cause=\"\",unit=\"a.service\"} 2\n"
                "trapstat_major_faults_total{cause=\"\",unit=\"other\"} 3\n"
                "# HELP trapstat_page_fault_seconds_total ";

        assert_non_null(strstr(out, expected));
        assert_int_equal(count_lines(out, "trapstat_major_faults_total{"), 2);
        assert_non_null(strstr(out, "trapstat_page_fault_seconds_total{kind=\"major\",unit=\"a.service\"} 0.000009\n"));
        /* The family is not there at all: no HELP without a sample. */
        assert_null(strstr(out, "trapstat_major_fault_seconds"));
}

/* A daemon that does not count the access kind (arm64): its read / write / exec are null, and
 * every user fault is access "" — no series says 0 reads that were never counted. */
static void test_access_not_counted(void **state) {
        (void) state;
#define UNKNOWN_ACCESS(u, k, mi)                                                                   \
        "{\"user\":" #u ",\"kernel\":" #k ",\"minor\":" #mi ",\"major\":0,\"read\":null,\"write\":null," \
        "\"exec\":null,\"protection\":null}"
        char *out = render("{\"sinceUsec\":1,\"otherUnits\":1,\"units\":[{\"unit\":\"a.service\",\"processes\":1,"
                           "\"counters\":" COUNTERS(UNKNOWN_ACCESS(7, 1, 8), "{}") "}],\"total\":"
                           COUNTERS(UNKNOWN_ACCESS(9, 1, 10), "{}") "}",
                           NULL, NULL, 0, 0, METRICS_PROMETHEUS);
#undef UNKNOWN_ACCESS
        assert_non_null(strstr(out, "trapstat_page_faults_total{mode=\"user\",access=\"\",unit=\"a.service\"} 7\n"));
        assert_non_null(strstr(out, "trapstat_page_faults_total{mode=\"kernel\",access=\"\",unit=\"a.service\"} 1\n"));
        /* The rest of the total, also of unknown access. */
        assert_non_null(strstr(out, "trapstat_page_faults_total{mode=\"user\",access=\"\",unit=\"other\"} 2\n"));
        assert_null(strstr(out, "access=\"read\""));
        assert_null(strstr(out, "access=\"write\""));
        assert_null(strstr(out, "access=\"exec\""));
        assert_non_null(strstr(out, "trapstat_minor_faults_total{unit=\"a.service\"} 8\n"));
        free(out);
}

/* A daemon that does not time faults (fault time is off by default): its FaultTime is all zero and
 * no measurement, so the families are left out; they are there when the source is active. */
static void test_fault_time_off(void **state) {
        (void) state;
        static const char *off = "{\"dropsByKind\":[],\"sources\":[{\"name\":\"page_fault_user\",\"active\":true},"
                                 "{\"name\":\"fault_time\",\"active\":false,\"reason\":\"off by default\"}]}";
        static const char *on = "{\"dropsByKind\":[],\"sources\":[{\"name\":\"fault_time\",\"active\":true}]}";
        char *out = render(totals_json, off, NULL, 0, 0, METRICS_PROMETHEUS);

        assert_non_null(strstr(out, "trapstat_minor_faults_total{unit=\"a.service\"} 12\n"));
        assert_int_equal(count_lines(out, "trapstat_page_fault_seconds"), 0);
        assert_int_equal(count_lines(out, "trapstat_page_fault_duration_seconds"), 0);
        assert_int_equal(count_lines(out, "# HELP trapstat_page_fault_"), 0);
        free(out);
        out = render(totals_json, on, NULL, 0, 0, METRICS_PROMETHEUS);
        assert_true(count_lines(out, "trapstat_page_fault_seconds_total{") > 0);
        assert_true(count_lines(out, "trapstat_page_fault_duration_seconds_bucket{") > 0);
        free(out);
}

static void test_unit_bound(void **state) {
        /* 50 units where 10 were asked for: 10 series per family and one "other" of the rest. */
        _cleanup_free_ char *units = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&units, &size);
        assert_non_null(f);
        fputs("{\"sinceUsec\":1,\"otherUnits\":0,\"units\":[", f);
        for (int i = 0; i < 50; i++)
                fprintf(f, "%s{\"unit\":\"u%d.service\",\"processes\":1,\"counters\":" COUNTERS_TS(FAULTS_C(2, 0, 2, 1, 2, 0, 0, 0, 1, 0),
                        FAULT_TIME(3000, 0, 0, 2000, "[0,1,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]"),
                        STALL(1000, 1, 0, 0, 0, 0, 0, 0, 7, 1), "{\"UD\":1}") "}",
                        i ? "," : "", i);
        fputs("],\"total\":" COUNTERS_TS(FAULTS_C(100, 0, 100, 50, 100, 0, 0, 0, 50, 0),
              FAULT_TIME(150000, 0, 0, 2000, "[0,50,50,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]"),
              STALL(50000, 50, 0, 0, 0, 0, 0, 0, 350, 50), "{\"UD\":50}") "}", f);
        assert_int_equal(fclose(f), 0);

        _cleanup_free_ char *out = render(units, NULL, NULL, 10, 0, METRICS_PROMETHEUS);
        assert_int_equal(count_lines(out, "trapstat_traps_total{"), 11);
        assert_int_equal(count_lines(out, "trapstat_minor_faults_total{"), 11);
        assert_int_equal(count_lines(out, "trapstat_page_faults_total{"), 11 * 5);
        assert_int_equal(count_lines(out, "trapstat_major_faults_total{"), 11 * 4);
        assert_int_equal(count_lines(out, "trapstat_major_fault_seconds_total{"), 11 * 3);
        assert_int_equal(count_lines(out, "trapstat_memory_stall_seconds_total{"), 11 * 4);
        assert_int_equal(count_lines(out, "trapstat_memory_stalls_total{"), 11 * 4);
        assert_int_equal(count_lines(out, "trapstat_block_io_delay_seconds_total{"), 11);
        assert_int_equal(count_lines(out, "trapstat_block_io_delays_total{"), 11);
        assert_non_null(strstr(out, "trapstat_memory_stall_seconds_total{cause=\"swapin\",unit=\"other\"} 0.00004\n"));
        assert_non_null(strstr(out, "trapstat_memory_stalls_total{cause=\"swapin\",unit=\"other\"} 40\n"));
        assert_non_null(strstr(out, "trapstat_block_io_delay_seconds_total{unit=\"other\"} 0.00000028\n"));
        assert_non_null(strstr(out, "trapstat_block_io_delays_total{unit=\"other\"} 40\n"));
        assert_non_null(strstr(out, "trapstat_traps_total{vector=\"UD\",unit=\"other\"} 40\n"));
        assert_non_null(strstr(out, "trapstat_minor_faults_total{unit=\"other\"} 80\n"));
        assert_non_null(strstr(out, "trapstat_major_faults_total{cause=\"anon\",unit=\"other\"} 40\n"));
        assert_non_null(strstr(out, "trapstat_major_faults_total{cause=\"\",unit=\"other\"} 0\n"));
        assert_int_equal(count_lines(out, "trapstat_page_fault_seconds_total{"), 11 * 3);
        assert_int_equal(count_lines(out, "trapstat_page_fault_duration_seconds_bucket{"), 11 * 24);
        assert_int_equal(count_lines(out, "trapstat_page_fault_duration_seconds_sum{"), 11);
        assert_int_equal(count_lines(out, "trapstat_page_fault_duration_seconds_count{"), 11);
        assert_non_null(strstr(out, "trapstat_page_fault_seconds_total{kind=\"minor\",unit=\"other\"} 0.00012\n"));
        assert_non_null(strstr(out, "trapstat_page_fault_duration_seconds_bucket{unit=\"other\",le=\"2e-06\"} 40\n"));
        assert_non_null(strstr(out, "trapstat_page_fault_duration_seconds_bucket{unit=\"other\",le=\"4e-06\"} 80\n"));
        assert_non_null(strstr(out, "trapstat_page_fault_duration_seconds_bucket{unit=\"other\",le=\"+Inf\"} 80\n"));
        assert_non_null(strstr(out, "trapstat_page_fault_duration_seconds_count{unit=\"other\"} 80\n"));
        assert_null(strstr(out, "u10.service"));
}

static void test_process_series(void **state) {
        const char *top =
                "{\"rows\":["
                "{\"process\":{\"pid\":10,\"startTime\":5,\"comm\":\"a\\\"x\",\"cmdline\":null,\"uid\":0,\"unit\":\"a.service\","
                "\"firstSeenUsec\":1,\"lastSeenUsec\":2,\"exited\":false,\"container\":{\"runtime\":\"machined\","
                "\"id\":\"web-1\",\"name\":\"web-1\",\"pod\":null,\"user\":null}},\"counters\":" COUNTERS(FAULTS(8, 1, 9, 0, 8, 0, 0), "{\"UD\":3,\"BP\":1}") "},"
                "{\"process\":{\"pid\":11,\"startTime\":6,\"comm\":\"b\",\"cmdline\":null,\"uid\":0,\"unit\":null,"
                "\"firstSeenUsec\":1,\"lastSeenUsec\":2,\"exited\":true,\"container\":{\"runtime\":\"docker\","
                "\"id\":\"0123abcd\",\"name\":null,\"pod\":null,\"user\":null}},\"counters\":" COUNTERS(FAULTS(4, 0, 4, 0, 4, 0, 0), "{}") "},"
                "{\"process\":{\"pid\":12,\"startTime\":7,\"comm\":\"c\",\"cmdline\":null,\"uid\":0,\"unit\":null,"
                "\"firstSeenUsec\":1,\"lastSeenUsec\":2,\"exited\":true},\"counters\":" COUNTERS(FAULTS(1, 0, 1, 0, 1, 0, 0), "{}") "}"
                "]}";
        /* Two of the three rows: the third is in "other" (totals: 26 faults, 15 traps). */
        _cleanup_free_ char *out = render(totals_json, NULL, top, 0, 2, METRICS_OPENMETRICS);
        const char *expected =
                "# HELP trapstat_process_traps Traps of the processes with the most page faults since trapstatd started; pid=other: every other process.\n"
                "# TYPE trapstat_process_traps counter\n"
                "trapstat_process_traps_total{pid=\"10\",start_time=\"5\",comm=\"a\\\"x\",unit=\"a.service\","
                "container=\"web-1\"} 4\n"
                "trapstat_process_traps_total{pid=\"11\",start_time=\"6\",comm=\"b\",unit=\"\",container=\"0123abcd\"} 0\n"
                "trapstat_process_traps_total{pid=\"other\",start_time=\"\",comm=\"\",unit=\"\",container=\"\"} 11\n"
                "# HELP trapstat_process_page_faults User and kernel page faults of the same processes; pid=other: every other process.\n"
                "# TYPE trapstat_process_page_faults counter\n"
                "trapstat_process_page_faults_total{pid=\"10\",start_time=\"5\",comm=\"a\\\"x\",unit=\"a.service\","
                "container=\"web-1\"} 9\n"
                "trapstat_process_page_faults_total{pid=\"11\",start_time=\"6\",comm=\"b\",unit=\"\",container=\"0123abcd\"} 4\n"
                "trapstat_process_page_faults_total{pid=\"other\",start_time=\"\",comm=\"\",unit=\"\",container=\"\"} 13\n"
                "# EOF\n";
        const char *at = strstr(out, "# HELP trapstat_process_traps");
        assert_non_null(at);
        assert_string_equal(at, expected);
        /* HELP text is written as is: a double quote would need escaping in OpenMetrics and
         * mean a backslash in 0.0.4, a backslash differs too. None in any family's. */
        for (const char *l = out; l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
                if (strncmp(l, "# HELP ", 7) == 0) {
                        size_t n = strcspn(l, "\n");
                        assert_null(memchr(l, '"', n));
                        assert_null(memchr(l, '\\', n));
                }
}

/* The histogram of every unit of the exposition: 24 buckets in order of le, cumulative (never
 * lower than the one before), the last +Inf and equal to _count; _sum is the three kinds'
 * seconds added. Read back from the text, as a Prometheus server would. */
static void test_histogram_shape(void **state) {
        static const char *edges[] = { "1e-06",    "2e-06",    "4e-06",    "8e-06",    "1.6e-05",  "3.2e-05",
                                       "6.4e-05",  "0.000128", "0.000256", "0.000512", "0.001024", "0.002048",
                                       "0.004096", "0.008192", "0.016384", "0.032768", "0.065536", "0.131072",
                                       "0.262144", "0.524288", "1.048576", "2.097152", "4.194304", "+Inf" };
        _cleanup_free_ char *out = render(totals_json, NULL, NULL, 0, 0, METRICS_PROMETHEUS);
        const char *units[] = { "a.service", "", "other" };
        /* a.service 3 timed (250 ns + 1.5 us + 2 s), none nothing, other 3 (3 us, 100 us, 5 s). */
        const unsigned long long counts[] = { 3, 0, 3 };
        const double sums[] = { 2.00000175, 0, 5.000103 };

        for (size_t u = 0; u < ELEMENTSOF(units); u++) {
                unsigned long long last = 0, n;
                char prefix[128];
                const char *at = out;
                for (size_t b = 0; b < ELEMENTSOF(edges); b++) {
                        snprintf(prefix, sizeof prefix, "\ntrapstat_page_fault_duration_seconds_bucket{unit=\"%s\",le=\"%s\"} ",
                                 units[u], edges[b]);
                        /* In order: each edge after the one before. */
                        at = strstr(at, prefix);
                        assert_non_null(at);
                        at += strlen(prefix);
                        assert_int_equal(sscanf(at, "%llu", &n), 1);
                        assert_true(n >= last);
                        last = n;
                }
                assert_int_equal(last, counts[u]);
                snprintf(prefix, sizeof prefix, "\ntrapstat_page_fault_duration_seconds_count{unit=\"%s\"} ", units[u]);
                assert_non_null(strstr(out, prefix));
                assert_int_equal(sscanf(strstr(out, prefix) + strlen(prefix), "%llu", &n), 1);
                assert_int_equal(n, last);
                snprintf(prefix, sizeof prefix, "\ntrapstat_page_fault_duration_seconds_sum{unit=\"%s\"} ", units[u]);
                assert_non_null(strstr(out, prefix));
                assert_true(strtod(strstr(out, prefix) + strlen(prefix), NULL) == sums[u]);
        }
        /* The edges are the daemon's buckets' upper ones. */
        for (unsigned b = 0; b + 1 < FAULT_TIME_BUCKETS; b++) {
                char le[METRICS_SECONDS_MAX];
                metrics_format_le(fault_time_bucket_high_ns(b), le);
                assert_string_equal(le, edges[b]);
        }
}

static void test_seconds(void **state) {
        struct {
                uint64_t ns;
                const char *text;
        } cases[] = {
                { 0, "0" },
                { 1, "0.000000001" },
                { 1000, "0.000001" },
                { 250, "0.00000025" },
                { 1000000000, "1" },
                { 1500000001, "1.500000001" },
                { 60000000000, "60" },
                { UINT64_MAX, "18446744073.709551615" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char buf[METRICS_SECONDS_MAX];
                metrics_format_seconds(cases[i].ns, buf);
                assert_string_equal(buf, cases[i].text);
                /* Read back, it is the double nearest ns / 1e9 (exact below 2^53 ns). */
                if (cases[i].ns < (UINT64_C(1) << 53))
                        assert_true(strtod(buf, NULL) == (double) cases[i].ns / 1e9);
        }
}

static void test_accept(void **state) {
        assert_int_equal(metrics_format_from_accept(NULL), METRICS_PROMETHEUS);
        assert_int_equal(metrics_format_from_accept("*/*"), METRICS_PROMETHEUS);
        assert_int_equal(metrics_format_from_accept("text/plain;version=0.0.4;q=0.3,*/*;q=0.2"), METRICS_PROMETHEUS);
        assert_int_equal(metrics_format_from_accept("application/openmetrics-text;version=1.0.0,application/"
                                                    "openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5"),
                         METRICS_OPENMETRICS);
        assert_string_equal(metrics_content_type(METRICS_OPENMETRICS),
                            "application/openmetrics-text; version=1.0.0; charset=utf-8");
        assert_string_equal(metrics_content_type(METRICS_PROMETHEUS), "text/plain; version=0.0.4; charset=utf-8");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_prometheus),   cmocka_unit_test(test_openmetrics),
                cmocka_unit_test(test_down),         cmocka_unit_test(test_escaping),
                cmocka_unit_test(test_malformed),    cmocka_unit_test(test_unit_bound),
                cmocka_unit_test(test_process_series), cmocka_unit_test(test_accept),
                cmocka_unit_test(test_histogram_shape), cmocka_unit_test(test_seconds),
                cmocka_unit_test(test_older_daemon),
                cmocka_unit_test(test_fault_time_off),
                cmocka_unit_test(test_access_not_counted),
                cmocka_unit_test(test_major_cause_not_counted),
                cmocka_unit_test(test_stall),
                cmocka_unit_test(test_stall_not_known),
                cmocka_unit_test(test_stall_one_unit_known),
        };
        /* Written with x86's trap names, whatever the machine (common/traps.h). */
        trap_arch = TRAP_ARCH_X86;
        return cmocka_run_group_tests(tests, NULL, NULL);
}
