/* SPDX-License-Identifier: MIT */
#include "fault-time.h"

#include <errno.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"

static uint64_t add_sat(uint64_t a, uint64_t b) {
        return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void fault_time_add(FaultTime *a, const FaultTime *b) {
        a->minor_ns = add_sat(a->minor_ns, b->minor_ns);
        a->major_ns = add_sat(a->major_ns, b->major_ns);
        a->kernel_ns = add_sat(a->kernel_ns, b->kernel_ns);
        a->max_ns = MAX(a->max_ns, b->max_ns);
        for (size_t i = 0; i < FAULT_TIME_BUCKETS; i++)
                a->histogram[i] = add_sat(a->histogram[i], b->histogram[i]);
        a->major_file_ns = add_sat(a->major_file_ns, b->major_file_ns);
        a->major_anon_ns = add_sat(a->major_anon_ns, b->major_anon_ns);
        a->major_shmem_ns = add_sat(a->major_shmem_ns, b->major_shmem_ns);
}

bool fault_time_is_zero(const FaultTime *f) {
        static const FaultTime zero;

        return memcmp(f, &zero, sizeof(zero)) == 0;
}

uint64_t fault_time_count(const FaultTime *f) {
        uint64_t n = 0;

        for (size_t i = 0; i < FAULT_TIME_BUCKETS; i++)
                n = add_sat(n, f->histogram[i]);
        return n;
}

uint64_t fault_time_total_ns(const FaultTime *f) {
        return add_sat(add_sat(f->minor_ns, f->major_ns), f->kernel_ns);
}

uint64_t fault_time_bucket_low_ns(unsigned bucket) {
        if (bucket == 0)
                return 0;
        if (bucket >= FAULT_TIME_BUCKETS)
                return UINT64_MAX;
        return (UINT64_C(1) << (bucket - 1)) * 1000;
}

uint64_t fault_time_bucket_high_ns(unsigned bucket) {
        if (bucket >= FAULT_TIME_BUCKETS - 1)
                return UINT64_MAX;
        return (UINT64_C(1) << bucket) * 1000;
}

unsigned fault_time_bucket_of(uint64_t ns) {
        uint64_t us = ns / 1000;

        if (us == 0)
                return 0;
        if (us >= UINT64_C(1) << (FAULT_TIME_BUCKETS - 2))
                return FAULT_TIME_BUCKETS - 1;
        return 64 - (unsigned) __builtin_clzll(us);
}

int fault_time_quantile_bucket(const FaultTime *f, double q) {
        uint64_t n = fault_time_count(f), want, seen = 0;

        if (n == 0)
                return -ENOENT;
        if (!(q > 0))
                q = 0;
        if (q > 1)
                q = 1;
        want = (uint64_t) (q * (double) n);
        if ((double) want < q * (double) n)
                want++;
        if (want == 0)
                want = 1;
        for (unsigned i = 0; i < FAULT_TIME_BUCKETS; i++) {
                seen = add_sat(seen, f->histogram[i]);
                if (seen >= want)
                        return (int) i;
        }
        return FAULT_TIME_BUCKETS - 1;
}

json_t *fault_time_to_json(const FaultTime *f) {
        json_t *h = json_array();

        for (size_t i = 0; h && i < FAULT_TIME_BUCKETS; i++)
                if (json_array_append_new(h, json_integer_u64(f->histogram[i])) < 0) {
                        json_decref(h);
                        return NULL;
                }
        if (!h)
                return NULL;
        return json_pack("{s:o, s:o, s:o, s:o, s:o, s:{s:o, s:o, s:o}}", "minorNs", json_integer_u64(f->minor_ns),
                         "majorNs", json_integer_u64(f->major_ns), "kernelNs", json_integer_u64(f->kernel_ns), "maxNs",
                         json_integer_u64(f->max_ns), "histogram", h, "majorNsByCause", "file",
                         json_integer_u64(f->major_file_ns), "anon", json_integer_u64(f->major_anon_ns), "shmem",
                         json_integer_u64(f->major_shmem_ns));
}

static int u64_from_json(json_t *v, uint64_t *ret) {
        if (!json_is_integer(v) || json_integer_value(v) < 0)
                return -EBADMSG;
        *ret = (uint64_t) json_integer_value(v);
        return 0;
}

int fault_time_from_json(json_t *j, FaultTime *ret) {
        json_t *minor, *major, *kernel, *max, *h, *cause = NULL, *file, *anon, *shmem;
        FaultTime f = {};

        if (json_unpack(j, "{s:o, s:o, s:o, s:o, s:o, s?o !}", "minorNs", &minor, "majorNs", &major, "kernelNs",
                        &kernel, "maxNs", &max, "histogram", &h, "majorNsByCause", &cause) < 0)
                return -EBADMSG;
        if (cause && (json_unpack(cause, "{s:o, s:o, s:o !}", "file", &file, "anon", &anon, "shmem", &shmem) < 0 ||
                      u64_from_json(file, &f.major_file_ns) < 0 || u64_from_json(anon, &f.major_anon_ns) < 0 ||
                      u64_from_json(shmem, &f.major_shmem_ns) < 0))
                return -EBADMSG;
        if (u64_from_json(minor, &f.minor_ns) < 0 || u64_from_json(major, &f.major_ns) < 0 ||
            u64_from_json(kernel, &f.kernel_ns) < 0 || u64_from_json(max, &f.max_ns) < 0 || !json_is_array(h) ||
            json_array_size(h) != FAULT_TIME_BUCKETS)
                return -EBADMSG;
        for (size_t i = 0; i < FAULT_TIME_BUCKETS; i++)
                if (u64_from_json(json_array_get(h, i), &f.histogram[i]) < 0)
                        return -EBADMSG;
        *ret = f;
        return 0;
}
