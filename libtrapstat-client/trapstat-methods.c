/* SPDX-License-Identifier: MIT */
/* The typed calls of io.trapstat: each builds its parameters from the request (only what the
 * request sets, so that the daemon's defaults apply to the rest), makes the call on the
 * connection it is given, and reads the reply's members into the reply struct. */
#include "trapstat-methods.h"

#include <errno.h>
#include <stdlib.h>

#include "json-util.h"
#include "macro.h"

/* A member set only when the request sets it; false on ENOMEM. */
static bool set_u64(json_t *o, const char *name, uint64_t v) {
        return v == 0 || json_object_set_new(o, name, json_integer_u64(v)) == 0;
}

static bool set_string(json_t *o, const char *name, const char *v) {
        return !v || json_object_set_new(o, name, json_string(v)) == 0;
}

static uint64_t member_u64(json_t *reply, const char *name) {
        json_int_t v = json_integer_value(json_object_get(reply, name));

        return v > 0 ? (uint64_t) v : 0;
}

/* -1 when the member is absent (an older daemon) or not an integer. */
static int64_t member_optional(json_t *reply, const char *name) {
        json_t *v = json_object_get(reply, name);

        return json_is_integer(v) ? (int64_t) json_integer_value(v) : -1;
}

/* Makes the call of method with the parameters built (and stolen) into *ret_json. */
static int call_method(TrapstatClient *c, const char *method, int r, json_t *parameters, json_t **ret_json,
                       TrapstatError *ret_error) {
        _cleanup_json_ json_t *p = parameters;

        if (r < 0)
                return r;
        if (!c)
                return -EINVAL;
        return trapstat_client_call(c, method, p, ret_json, ret_error);
}

/* ---- GetStatus ---- */

int trapstat_get_status(TrapstatClient *c, TrapstatStatusReply *ret, TrapstatError *ret_error) {
        json_t *json = NULL;
        int r;

        if (!ret)
                return -EINVAL;
        r = call_method(c, "io.trapstat.GetStatus", 0, NULL, &json, ret_error);
        if (r < 0)
                return r;
        *ret = (TrapstatStatusReply) {
                .json = json,
                .version = json_string_value(json_object_get(json, "version")),
                .arch = json_string_value(json_object_get(json, "arch")),
                .tick_usec = member_u64(json, "tickUsec"),
                .processes_tracked = member_u64(json, "processesTracked"),
                .drops = member_u64(json, "drops"),
                .fault_sample_period = member_u64(json, "faultSamplePeriod"),
        };
        return 0;
}

void trapstat_status_reply_done(TrapstatStatusReply *r) {
        if (r) {
                json_decref(r->json);
                *r = (TrapstatStatusReply) {};
        }
}

/* ---- Top ---- */

int trapstat_top_parameters(const TrapstatTopRequest *q, json_t **ret) {
        _cleanup_json_ json_t *p = NULL;

        if (!q || !ret)
                return -EINVAL;
        p = json_object();
        if (!p || !set_u64(p, "windowSec", q->window_sec) || !set_string(p, "sortBy", q->sort_by) ||
            !set_u64(p, "limit", q->limit) || trapstat_filter_parameters(p, q->filter) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(p);
        return 0;
}

int trapstat_top(TrapstatClient *c, const TrapstatTopRequest *q, TrapstatTopReply *ret, TrapstatError *ret_error) {
        json_t *p = NULL, *json = NULL;
        int r;

        if (!ret)
                return -EINVAL;
        r = trapstat_top_parameters(q, &p);
        r = call_method(c, "io.trapstat.Top", r, p, &json, ret_error);
        if (r < 0)
                return r;
        *ret = (TrapstatTopReply) {
                .json = json,
                .rows = json_object_get(json, "rows"),
                .other_processes = member_optional(json, "otherProcesses"),
        };
        return 0;
}

void trapstat_top_reply_done(TrapstatTopReply *r) {
        if (r) {
                json_decref(r->json);
                *r = (TrapstatTopReply) {};
        }
}

/* ---- History ---- */

int trapstat_history_parameters(const TrapstatHistoryRequest *q, json_t **ret) {
        _cleanup_json_ json_t *p = NULL;

        if (!q || !ret || q->pid == 0)
                return -EINVAL;
        p = json_pack("{s:I}", "pid", (json_int_t) q->pid);
        if (!p || (q->start_time >= 0 && json_object_set_new(p, "startTime", json_integer(q->start_time)) < 0) ||
            !set_u64(p, "sinceUsec", q->since_usec) || !set_u64(p, "untilUsec", q->until_usec) ||
            !set_u64(p, "resolutionSec", q->resolution_sec))
                return -ENOMEM;
        *ret = TAKE_PTR(p);
        return 0;
}

int trapstat_history(TrapstatClient *c, const TrapstatHistoryRequest *q, TrapstatHistoryReply *ret,
                     TrapstatError *ret_error) {
        json_t *p = NULL, *json = NULL;
        int r;

        if (!ret)
                return -EINVAL;
        r = trapstat_history_parameters(q, &p);
        r = call_method(c, "io.trapstat.History", r, p, &json, ret_error);
        if (r < 0)
                return r;
        *ret = (TrapstatHistoryReply) {
                .json = json,
                .process = json_object_get(json, "process"),
                .total = json_object_get(json, "total"),
                .samples = json_object_get(json, "samples"),
        };
        ret->start_time = member_u64(ret->process, "startTime");
        return 0;
}

void trapstat_history_reply_done(TrapstatHistoryReply *r) {
        if (r) {
                json_decref(r->json);
                *r = (TrapstatHistoryReply) {};
        }
}

/* ---- UnitHistory ---- */

int trapstat_unit_history_parameters(const TrapstatUnitHistoryRequest *q, json_t **ret) {
        _cleanup_json_ json_t *p = NULL;

        if (!q || !ret || !q->unit)
                return -EINVAL;
        p = json_object();
        if (!p || !set_u64(p, "sinceUsec", q->since_usec) || !set_u64(p, "untilUsec", q->until_usec) ||
            !set_u64(p, "resolutionSec", q->resolution_sec) || !set_string(p, "unit", q->unit))
                return -ENOMEM;
        *ret = TAKE_PTR(p);
        return 0;
}

int trapstat_unit_history(TrapstatClient *c, const TrapstatUnitHistoryRequest *q, TrapstatUnitHistoryReply *ret,
                          TrapstatError *ret_error) {
        json_t *p = NULL, *json = NULL;
        int r;

        if (!ret)
                return -EINVAL;
        r = trapstat_unit_history_parameters(q, &p);
        r = call_method(c, "io.trapstat.UnitHistory", r, p, &json, ret_error);
        if (r < 0)
                return r;
        *ret = (TrapstatUnitHistoryReply) {
                .json = json,
                .units = json_object_get(json, "units"),
                .total = json_object_get(json, "total"),
                .samples = json_object_get(json, "samples"),
                .processes = member_u64(json, "processes"),
                .running = member_u64(json, "running"),
        };
        return 0;
}

void trapstat_unit_history_reply_done(TrapstatUnitHistoryReply *r) {
        if (r) {
                json_decref(r->json);
                *r = (TrapstatUnitHistoryReply) {};
        }
}

/* ---- ContainerHistory ---- */

int trapstat_container_history_parameters(const TrapstatContainerHistoryRequest *q, json_t **ret) {
        _cleanup_json_ json_t *p = NULL;

        if (!q || !ret || !q->container)
                return -EINVAL;
        p = json_object();
        if (!p || !set_string(p, "container", q->container) || !set_u64(p, "sinceUsec", q->since_usec) ||
            !set_u64(p, "untilUsec", q->until_usec) || !set_u64(p, "resolutionSec", q->resolution_sec))
                return -ENOMEM;
        *ret = TAKE_PTR(p);
        return 0;
}

int trapstat_container_history(TrapstatClient *c, const TrapstatContainerHistoryRequest *q,
                               TrapstatContainerHistoryReply *ret, TrapstatError *ret_error) {
        json_t *p = NULL, *json = NULL;
        int r;

        if (!ret)
                return -EINVAL;
        r = trapstat_container_history_parameters(q, &p);
        r = call_method(c, "io.trapstat.ContainerHistory", r, p, &json, ret_error);
        if (r < 0)
                return r;
        *ret = (TrapstatContainerHistoryReply) {
                .json = json,
                .containers = json_object_get(json, "containers"),
                .total = json_object_get(json, "total"),
                .samples = json_object_get(json, "samples"),
                .processes = member_u64(json, "processes"),
                .running = member_u64(json, "running"),
        };
        return 0;
}

void trapstat_container_history_reply_done(TrapstatContainerHistoryReply *r) {
        if (r) {
                json_decref(r->json);
                *r = (TrapstatContainerHistoryReply) {};
        }
}

/* ---- UnitTotals ---- */

int trapstat_unit_totals_parameters(const TrapstatUnitTotalsRequest *q, json_t **ret) {
        _cleanup_json_ json_t *p = NULL;

        if (!q || !ret)
                return -EINVAL;
        p = json_object();
        if (!p || !set_u64(p, "limit", q->limit))
                return -ENOMEM;
        *ret = TAKE_PTR(p);
        return 0;
}

int trapstat_unit_totals(TrapstatClient *c, const TrapstatUnitTotalsRequest *q, TrapstatUnitTotalsReply *ret,
                         TrapstatError *ret_error) {
        json_t *p = NULL, *json = NULL;
        int r;

        if (!ret)
                return -EINVAL;
        r = trapstat_unit_totals_parameters(q, &p);
        r = call_method(c, "io.trapstat.UnitTotals", r, p, &json, ret_error);
        if (r < 0)
                return r;
        *ret = (TrapstatUnitTotalsReply) {
                .json = json,
                .units = json_object_get(json, "units"),
                .total = json_object_get(json, "total"),
                .since_usec = member_u64(json, "sinceUsec"),
                .other_units = member_u64(json, "otherUnits"),
                .has_since = json_is_integer(json_object_get(json, "sinceUsec")),
        };
        return 0;
}

void trapstat_unit_totals_reply_done(TrapstatUnitTotalsReply *r) {
        if (r) {
                json_decref(r->json);
                *r = (TrapstatUnitTotalsReply) {};
        }
}

/* ---- Sites ---- */

int trapstat_sites_parameters(const TrapstatSitesQuery *q, json_t **ret) {
        _cleanup_json_ json_t *p = NULL;
        const char *kind = NULL;

        if (!q || !ret || q->pid == 0 || (q->kind >= 0 && !(kind = site_kind_name((SiteKind) q->kind))))
                return -EINVAL;
        p = json_pack("{s:I}", "pid", (json_int_t) q->pid);
        if (!p || !set_u64(p, "startTime", q->start_time) || !set_u64(p, "sinceUsec", q->since_usec) ||
            !set_u64(p, "untilUsec", q->until_usec) || !set_string(p, "kind", kind) || !set_u64(p, "limit", q->limit))
                return -ENOMEM;
        *ret = TAKE_PTR(p);
        return 0;
}

int trapstat_sites_from_reply(json_t *reply, SiteCount **ret, size_t *ret_n) {
        json_t *array = json_object_get(reply, "sites"), *site;
        SiteCount *sites = NULL;
        size_t i, n = json_array_size(array);
        int r;

        if (!json_is_array(array))
                return -EBADMSG;
        if (n > 0 && !(sites = calloc(n, sizeof(*sites))))
                return -ENOMEM;
        json_array_foreach (array, i, site) {
                r = site_count_from_json(site, &sites[i]);
                if (r < 0) {
                        site_counts_free(sites, i);
                        return r;
                }
        }
        *ret = sites;
        *ret_n = n;
        return 0;
}

int trapstat_sites(TrapstatClient *c, const TrapstatSitesQuery *q, TrapstatSitesReply *ret, TrapstatError *ret_error) {
        _cleanup_json_ json_t *json = NULL;
        json_t *p = NULL;
        SiteCount *sites = NULL;
        size_t n = 0;
        int r;

        if (!ret)
                return -EINVAL;
        r = trapstat_sites_parameters(q, &p);
        r = call_method(c, "io.trapstat.Sites", r, p, &json, ret_error);
        if (r < 0)
                return r;
        r = trapstat_sites_from_reply(json, &sites, &n);
        if (r < 0)
                return r;
        *ret = (TrapstatSitesReply) {
                .process = json_object_get(json, "process"),
                .sites = sites,
                .n_sites = n,
                .other_sites = member_optional(json, "otherSites"),
        };
        ret->json = TAKE_PTR(json);
        return 0;
}

void trapstat_sites_reply_done(TrapstatSitesReply *r) {
        if (r) {
                site_counts_free(r->sites, r->n_sites);
                json_decref(r->json);
                *r = (TrapstatSitesReply) {};
        }
}

/* ---- ListProcesses ---- */

int trapstat_list_processes_parameters(const TrapstatListProcessesRequest *q, json_t **ret) {
        _cleanup_json_ json_t *p = NULL;

        if (!q || !ret)
                return -EINVAL;
        p = json_object();
        if (!p || (q->include_exited && json_object_set_new(p, "includeExited", json_true()) < 0) ||
            !set_string(p, "comm", q->comm) || !set_string(p, "unit", q->unit) ||
            !set_string(p, "container", q->container) || !set_u64(p, "pid", q->pid) ||
            !set_u64(p, "limit", q->limit) || !set_string(p, "after", q->after))
                return -ENOMEM;
        *ret = TAKE_PTR(p);
        return 0;
}

int trapstat_list_processes(TrapstatClient *c, const TrapstatListProcessesRequest *q, TrapstatListProcessesReply *ret,
                            TrapstatError *ret_error) {
        json_t *p = NULL, *json = NULL;
        int r;

        if (!ret)
                return -EINVAL;
        r = trapstat_list_processes_parameters(q, &p);
        r = call_method(c, "io.trapstat.ListProcesses", r, p, &json, ret_error);
        if (r < 0)
                return r;
        *ret = (TrapstatListProcessesReply) {
                .json = json,
                .processes = json_object_get(json, "processes"),
                .other_processes = member_optional(json, "otherProcesses"),
                .next = json_string_value(json_object_get(json, "next")),
        };
        return 0;
}

void trapstat_list_processes_reply_done(TrapstatListProcessesReply *r) {
        if (r) {
                json_decref(r->json);
                *r = (TrapstatListProcessesReply) {};
        }
}

/* ---- Watch ---- */

int trapstat_watch_parameters(const TrapstatWatchRequest *q, json_t **ret) {
        _cleanup_json_ json_t *p = NULL;

        if (!q || !ret || !q->sort_by)
                return -EINVAL;
        p = json_pack("{s:s}", "sortBy", q->sort_by);
        if (!p || !set_u64(p, "limit", q->limit) || trapstat_filter_parameters(p, q->filter) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(p);
        return 0;
}

int trapstat_watch(TrapstatClient *c, const TrapstatWatchRequest *q) {
        _cleanup_json_ json_t *p = NULL;
        int r;

        r = trapstat_watch_parameters(q, &p);
        if (r < 0)
                return r;
        return trapstat_client_start(c, "io.trapstat.Watch", p, true);
}

int trapstat_watch_read(TrapstatClient *c, TrapstatWatchReply *ret, TrapstatError *ret_error) {
        json_t *json = NULL;
        bool continues = false;
        int r;

        if (!ret)
                return -EINVAL;
        r = trapstat_client_read(c, &json, &continues, ret_error);
        if (r < 0)
                return r;
        *ret = (TrapstatWatchReply) {
                .json = json,
                .time_usec = member_u64(json, "timeUsec"),
                .interval_usec = member_u64(json, "intervalUsec"),
                .continues = continues,
        };
        return 0;
}

void trapstat_watch_reply_done(TrapstatWatchReply *r) {
        if (r) {
                json_decref(r->json);
                *r = (TrapstatWatchReply) {};
        }
}

/* ---- Traps ---- */

int trapstat_traps_parameters(const TrapstatTrapsRequest *q, json_t **ret) {
        _cleanup_json_ json_t *p = NULL;

        if (!q || !ret)
                return -EINVAL;
        p = json_object();
        if (!p || !set_u64(p, "windowSec", q->window_sec))
                return -ENOMEM;
        *ret = TAKE_PTR(p);
        return 0;
}

int trapstat_traps(TrapstatClient *c, const TrapstatTrapsRequest *q, TrapstatTrapsReply *ret, TrapstatError *ret_error) {
        json_t *p = NULL, *json = NULL;
        int r;

        if (!ret)
                return -EINVAL;
        r = trapstat_traps_parameters(q, &p);
        r = call_method(c, "io.trapstat.Traps", r, p, &json, ret_error);
        if (r < 0)
                return r;
        *ret = (TrapstatTrapsReply) {
                .json = json,
                .traps = json_object_get(json, "traps"),
                .signals = json_object_get(json, "signals"),
                .signal_codes = json_object_get(json, "signalCodes"),
                .processes = member_u64(json, "processes"),
        };
        return 0;
}

void trapstat_traps_reply_done(TrapstatTrapsReply *r) {
        if (r) {
                json_decref(r->json);
                *r = (TrapstatTrapsReply) {};
        }
}

/* ---- every method ---- */

#define METHOD(name, fn) { name, (void (*)(void)) (fn) }

const TrapstatClientMethod trapstat_client_methods[] = {
        METHOD("GetStatus", trapstat_get_status),
        METHOD("Top", trapstat_top),
        METHOD("History", trapstat_history),
        METHOD("UnitHistory", trapstat_unit_history),
        METHOD("ContainerHistory", trapstat_container_history),
        METHOD("UnitTotals", trapstat_unit_totals),
        METHOD("Sites", trapstat_sites),
        METHOD("ListProcesses", trapstat_list_processes),
        METHOD("Watch", trapstat_watch),
        METHOD("Traps", trapstat_traps),
};

const size_t trapstat_client_n_methods = ELEMENTSOF(trapstat_client_methods);
