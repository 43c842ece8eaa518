/* SPDX-License-Identifier: MIT */
#include "counters.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"
#include "utf8-util.h"

#define FIELD(n) { #n, NULL, #n, #n, #n, offsetof(Faults, n), 0 }
#define ACCESS(n) { #n, NULL, #n, #n, #n, offsetof(Faults, n), FAULTS_KNOWN_ACCESS }
#define CAUSE(n, m) { #n, "majorByCause", #m, "major_" #m, "majorByCause." #m, offsetof(Faults, major_##m), FAULTS_KNOWN_MAJOR_CAUSE }
const FaultField fault_fields[] = {
        FIELD(user),      FIELD(kernel),     FIELD(minor),          FIELD(major),
        ACCESS(read),     ACCESS(write),     ACCESS(exec),          ACCESS(protection),
        CAUSE(majorFile, file), CAUSE(majorAnon, anon), CAUSE(majorShmem, shmem),
};
#undef FIELD
#undef ACCESS
#undef CAUSE
_Static_assert(ELEMENTSOF(fault_fields) <= 64, "faults_from_json() marks the members in 64 bits");
const size_t n_fault_fields = ELEMENTSOF(fault_fields);

const FaultField *fault_field_by_name(const char *name) {
        for (size_t i = 0; i < n_fault_fields; i++)
                if (strcmp(fault_fields[i].name, name) == 0)
                        return &fault_fields[i];
        return NULL;
}

int sort_key_from_name(const char *name, SortKey *ret) {
        const FaultField *field;

        if (!name)
                return -EINVAL;
        if (strcmp(name, SORT_KEY_TRAPS_NAME) == 0) {
                *ret = (SortKey) { .name = SORT_KEY_TRAPS_NAME, .what = SORT_TRAPS };
                return 0;
        }
        if (strcmp(name, SORT_KEY_FAULT_TIME_NAME) == 0) {
                *ret = (SortKey) { .name = SORT_KEY_FAULT_TIME_NAME, .what = SORT_FAULT_TIME };
                return 0;
        }
        if (strcmp(name, SORT_KEY_STALL_NAME) == 0) {
                *ret = (SortKey) { .name = SORT_KEY_STALL_NAME, .what = SORT_STALL };
                return 0;
        }
        field = fault_field_by_name(name);
        if (!field)
                return -EINVAL;
        *ret = (SortKey) { .name = field->name, .what = SORT_FAULTS, .field = field };
        return 0;
}

void faults_add(Faults *a, const Faults *b) {
        for (size_t i = 0; i < n_fault_fields; i++)
                *faults_field(a, &fault_fields[i]) += faults_get(b, &fault_fields[i]);
        a->unknown |= b->unknown;
}

bool faults_is_zero(const Faults *f) {
        for (size_t i = 0; i < n_fault_fields; i++)
                if (faults_get(f, &fault_fields[i]) != 0)
                        return false;
        return true;
}

json_t *faults_to_json(const Faults *f, FaultsKnown known) {
        json_t *o = json_object(), *group = NULL;

        if (!o)
                return NULL;
        for (size_t i = 0; i < n_fault_fields; i++) {
                const FaultField *field = &fault_fields[i];
                bool first_of_group = fault_field_opens_group(i);
                json_t *parent = field->group ? group : o;

                /* A group is null as a whole when its part is not known. */
                if (first_of_group) {
                        bool null = !faults_field_known(f, field, known);

                        group = null ? json_null() : json_object();
                        if (!group || json_object_set_new(o, field->group, group) < 0)
                                goto fail;
                        parent = group;
                }
                if (json_is_null(parent))
                        continue;
                if (json_object_set_new(parent, field->member,
                                        faults_field_known(f, field, known) ? json_integer_u64(faults_get(f, field))
                                                                            : json_null()) < 0)
                        goto fail;
        }
        return o;
fail:
        json_decref(o);
        return NULL;
}

/* The members of one object of Faults (group NULL: Faults itself, whose groups are read by
 * recursion). Marks each member read in *seen (bit i: fault_fields[i]). */
static int faults_members_from_json(json_t *j, const char *group, Faults *f, uint64_t *seen) {
        const char *key;
        json_t *v;

        if (!json_is_object(j))
                return -EBADMSG;
        json_object_foreach (j, key, v) {
                size_t i;

                for (i = 0; i < n_fault_fields; i++)
                        if (group ? fault_fields[i].group && strcmp(fault_fields[i].group, group) == 0 &&
                                            strcmp(fault_fields[i].member, key) == 0
                                  : strcmp(fault_fields[i].group ?: fault_fields[i].member, key) == 0)
                                break;
                if (i == n_fault_fields)
                        return -EBADMSG;
                if (!group && fault_fields[i].group) { /* a group: an object, or null when not counted */
                        int r = json_is_null(v) ? 0 : faults_members_from_json(v, key, f, seen);

                        if (r < 0)
                                return r;
                        continue;
                }
                *seen |= UINT64_C(1) << i;
                if (json_is_null(v) && fault_fields[i].part) {
                        f->unknown |= fault_fields[i].part;
                        continue;
                }
                if (!json_is_integer(v) || json_integer_value(v) < 0)
                        return -EBADMSG;
                *faults_field(f, &fault_fields[i]) = (uint64_t) json_integer_value(v);
        }
        return 0;
}

int faults_from_json(json_t *j, Faults *ret) {
        Faults f = {};
        uint64_t seen = 0;
        int r = faults_members_from_json(j, NULL, &f, &seen);

        if (r < 0)
                return r;
        for (size_t i = 0; i < n_fault_fields; i++) {
                const FaultField *field = &fault_fields[i];

                if (seen & (UINT64_C(1) << i))
                        continue;
                /* A member that may be unknown may be missing (varlink omits a null, an older
                 * daemon knows no majorByCause): not counted. Of a group given, none may be. */
                if (!field->part || (field->group && json_is_object(json_object_get(j, field->group))))
                        return -EBADMSG;
                f.unknown |= field->part;
        }
        *ret = f;
        return 0;
}

void process_info_done(ProcessInfo *p) {
        free(p->cmdline);
        free(p->unit);
        free(p->container);
        p->cmdline = p->unit = NULL;
        p->container = NULL;
}

int process_identity_compare(uint32_t pid_a, uint64_t start_a, uint32_t pid_b, uint64_t start_b) {
        if (pid_a != pid_b)
                return pid_a < pid_b ? -1 : 1;
        return start_a < start_b ? -1 : start_a > start_b;
}

static Container *container_dup(const Container *c) {
        Container *d = malloc(sizeof(*d));

        if (d)
                *d = *c;
        return d;
}

int process_info_copy(const ProcessInfo *p, ProcessInfo *ret) {
        ProcessInfo c = *p;

        c.cmdline = p->cmdline ? strdup(p->cmdline) : NULL;
        c.unit = p->unit ? strdup(p->unit) : NULL;
        c.container = p->container ? container_dup(p->container) : NULL;
        if ((p->cmdline && !c.cmdline) || (p->unit && !c.unit) || (p->container && !c.container)) {
                process_info_done(&c);
                return -ENOMEM;
        }
        *ret = c;
        return 0;
}

json_t *text_to_json(const char *s) {
        _cleanup_free_ char *valid = NULL;
        json_t *j;

        if (!s)
                return json_null();
        j = json_string(s);
        if (j || utf8_replace_invalid(s, &valid) < 0)
                return j;
        return json_string(valid);
}

const PidNsPid *process_info_ns(const ProcessInfo *p) {
        return p->n_pidns > 0 && p->n_pidns <= PIDNS_LEVELS ? &p->pidns[p->n_pidns - 1] : NULL;
}

json_t *container_to_json(const Container *c) {
        if (!c)
                return json_null();
        return json_pack("{s:s, s:o, s:o, s:o, s:o}", "runtime", c->runtime, "id", text_to_json(c->id),
                         "name", c->name[0] ? text_to_json(c->name) : json_null(),
                         "pod", c->pod[0] ? json_string(c->pod) : json_null(),
                         "user", c->user != UINT32_MAX ? json_integer(c->user) : json_null());
}

bool process_info_pid_in(const ProcessInfo *p, uint32_t ns, uint32_t *ret_pid) {
        for (uint32_t i = 0; i < p->n_pidns && i < PIDNS_LEVELS; i++)
                if (p->pidns[i].ns == ns) {
                        *ret_pid = p->pidns[i].pid;
                        return true;
                }
        return false;
}

json_t *process_info_to_json(const ProcessInfo *p) {
        return process_info_to_json_as(p, p->pid);
}

json_t *process_info_to_json_as(const ProcessInfo *p, uint32_t pid) {
        const PidNsPid *ns = process_info_ns(p);

        return json_pack("{s:I, s:I, s:o, s:o, s:I, s:o, s:I, s:I, s:b, s:o, s:o, s:o}",
                         "pid", (json_int_t) pid,
                         "startTime", (json_int_t) p->start_time,
                         "comm", text_to_json(p->comm),
                         "cmdline", text_to_json(p->cmdline),
                         "uid", (json_int_t) p->uid,
                         "unit", text_to_json(p->unit),
                         "firstSeenUsec", (json_int_t) p->first_seen_usec,
                         "lastSeenUsec", (json_int_t) p->last_seen_usec,
                         "exited", p->exited,
                         "nsPid", ns ? json_integer(ns->pid) : json_null(),
                         "pidNamespace", ns ? json_integer(ns->ns) : json_null(),
                         "container", container_to_json(p->container));
}

