/* SPDX-License-Identifier: MIT */
/* The io.trapstat methods: parameters in, store/collector queries, replies out.
 *
 * The policy of the calls that read the history lives here, not in the store: who may see what
 * (visible_uid(); the store filters by the uid it is given, and History and Sites answer
 * PermissionDenied here, find_process()) and what an absent parameter means (the step of History
 * and UnitHistory, history_step_usec()). The store reads what it is asked, in the one snapshot
 * the query pool begins for the call (query-pool.c). */
#include "methods.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "argv-util.h"
#include "defaults.h"
#include "embedded.h"
#include "filter.h"
#include "json-util.h"
#include "log.h"
#include "loop-turn.h"
#include "manager.h"
#include "peer-scope.h"
#include "query-pool.h"
#include "sites.h"
#include "tier-util.h"
#include "time-util.h"
#include "traps.h"
#include "unit-totals.h"
#include "varlink.h"
#include "watch.h"


/* Every call was checked against the IDL before its handler runs (varlink_server_add_interface):
 * each member is known and of its type, the required ones are present, enums (sortBy) hold one
 * of their values. These read members as the IDL declared them; null is absent. What handlers
 * still check are the bounds the IDL cannot state. */
static int64_t param_int(json_t *parameters, const char *name, int64_t absent) {
        json_t *v = json_object_get(parameters, name);

        return json_is_integer(v) ? json_integer_value(v) : absent;
}

static bool param_present(json_t *parameters, const char *name) {
        json_t *v = json_object_get(parameters, name);

        return v && !json_is_null(v);
}

static const char *param_string(json_t *parameters, const char *name) {
        return json_string_value(json_object_get(parameters, name)); /* NULL when absent */
}

static bool param_bool(json_t *parameters, const char *name) {
        return json_is_true(json_object_get(parameters, name));
}

/* sortBy (an IDL enum of the SortKey names), "user" when absent. */
static SortKey param_sort_key(json_t *parameters) {
        SortKey k;

        if (sort_key_from_name(param_string(parameters, "sortBy") ?: "user", &k) < 0)
                (void) sort_key_from_name("user", &k); /* the IDL and SortKey disagree: a bug */
        return k;
}

static bool in_range(int64_t v, int64_t min, int64_t max) {
        return v >= min && v <= max;
}

/* root and members of group trapstat see every process; everyone else only their own. Returns
 * the uid to filter by, or -1 for no filter. */
static int64_t visible_uid(VarlinkCall *call) {
        return varlink_call_peer_privileged(call) ? -1 : (int64_t) varlink_call_peer_uid(call);
}

/* The pid namespace the caller sees (peer-scope.h): its inode number, 0 for every namespace. */
static uint32_t visible_pidns(VarlinkCall *call) {
        PeerScope scope = peer_scope_decode(varlink_call_peer_label(call));

        return scope.kind == PEER_SCOPE_NS ? scope.ns : 0;
}

/* First in every method: a caller whose pid namespace could not be told is refused every call. */
#define REFUSE_UNKNOWN_SCOPE(call)                                                                       \
        do {                                                                                             \
                if (peer_scope_decode(varlink_call_peer_label(call)).kind == PEER_SCOPE_UNKNOWN)         \
                        return varlink_call_error((call), "io.trapstat.NamespaceUnknown", NULL);         \
        } while (0)

/* A process as a caller in pid namespace pidns (0: every one) knows it: by its pid there. */
static json_t *process_json(uint32_t pidns, const ProcessInfo *p) {
        uint32_t pid = p->pid;

        if (pidns)
                (void) process_info_pid_in(p, pidns, &pid);
        return process_info_to_json_as(p, pid);
}

/* Reads the members Top and Watch filter processes by (pids, uid, unit, comm, container) into *ret, to
 * process_filter_done(). Returns 0; -EINVAL and the member out of bounds in *ret_bad; -ENOMEM.
 * An empty pids is out of bounds: "only these" with none would be everything. */
static int process_filter_read(json_t *parameters, ProcessFilter *ret, const char **ret_bad) {
        json_t *pids = json_object_get(parameters, "pids"), *v;
        const char *unit = param_string(parameters, "unit"), *comm = param_string(parameters, "comm"),
                   *container = param_string(parameters, "container");
        int64_t uid = param_int(parameters, "uid", -1);
        ProcessFilter f = PROCESS_FILTER_NONE;
        size_t i;

        *ret_bad = "pids";
        if (json_is_array(pids) && !in_range((int64_t) json_array_size(pids), 1, MAX_FILTER_PIDS))
                return -EINVAL;
        json_array_foreach (pids, i, v) {
                if (!in_range(json_integer_value(v), 1, INT32_MAX))
                        return -EINVAL;
                f.pids[f.n_pids++] = (uint32_t) json_integer_value(v);
        }
        *ret_bad = "uid";
        if (param_present(parameters, "uid") && !in_range(uid, 0, UINT32_MAX))
                return -EINVAL;
        /* Also the bound SQLite's GLOB is given (store.c): Top's query could take no longer. */
        *ret_bad = "unit";
        if (unit && strlen(unit) > MAX_UNIT_NAME)
                return -EINVAL;
        *ret_bad = "comm";
        if (comm && strlen(comm) > MAX_UNIT_NAME)
                return -EINVAL;
        *ret_bad = "container";
        if (container && !container_query_valid(container))
                return -EINVAL;
        *ret_bad = NULL;

        f.uid = uid;
        if ((unit && !(f.unit = strdup(unit))) || (comm && !(f.comm = strdup(comm))) ||
            (container && !(f.container = strdup(container)))) {
                process_filter_done(&f);
                return -ENOMEM;
        }
        *ret = f;
        return 0;
}

/* A query's failure, as the reply a worker sends. -ECANCELED (the query was stopped) is passed
 * on: the pool answers it. */
static int database_error(Store *store, int error, VarlinkReply **ret) {
        char message[512];

        if (error == -ECANCELED)
                return error;
        snprintf(message, sizeof(message), "%s (%s)", store_errmsg(store), strerror(abs(error)));
        return varlink_reply_new_error("io.trapstat.DatabaseError", json_pack("{s:s}", "message", message), ret);
}

/* The history needs the database; while it cannot be opened, say so (live Watch still works). */
static bool need_store(VarlinkCall *call, Manager *m, int *ret) {
        char message[512];
        bool available = writer_stats(manager_writer(m)).available;

        if (!available) {
                snprintf(message, sizeof(message), "database %s is not available; only live counts (Watch) are",
                         manager_database_path(m));
                *ret = varlink_call_error(call, "io.trapstat.DatabaseError", json_pack("{s:s}", "message", message));
        }
        return available;
}

/* now - window_sec, or 0 when the window reaches back before the epoch (no overflow for any
 * positive int64 window). */
static uint64_t window_start_usec(int64_t window_sec) {
        uint64_t now = now_usec(CLOCK_REALTIME);

        window_sec = MIN(window_sec, MAX_WINDOW_SEC);
        return (uint64_t) window_sec >= now / USEC_PER_SEC ? 0 : now - (uint64_t) window_sec * USEC_PER_SEC;
}

/* Hands the call to a worker. Top, History and UnitHistory read the samples: the worker waits
 * until the writer has committed every tick drained before the call came (writer_sync()); the
 * event loop does not wait. */
static int submit(VarlinkCall *call, Manager *m, bool samples, QueryRunFn run, void *args, void (*free_args)(void *)) {
        uint64_t seq = samples ? writer_seq(manager_writer(m)) : 0;
        int r;

        r = query_pool_submit(manager_query_pool(m), call, varlink_call_peer_uid(call), seq, run, args, free_args);
        /* -EINVAL: the call is oneway, which varlink_call_keep() refuses (it cannot have been
         * answered yet). Nobody waits for the answer, so the query is not run; returned, the error
         * would close the connection, with the calls behind it unanswered. */
        return r == -EINVAL ? 0 : r;
}

/* GetStatus's dropsByUser: every user's, or only uid's when uid >= 0. NULL when memory ran out. */
static json_t *user_drops_build(Collector *c, int64_t uid) {
        _cleanup_free_ CollectorUserDrops *users = NULL;
        _cleanup_json_ json_t *list = json_array();
        size_t n;

        if (!list || collector_user_drops(c, uid, &users, &n) < 0)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                json_t *kinds = json_array();
                uint64_t sum = 0;

                for (unsigned k = 0; kinds && k < COLLECTOR_BPF_DROP_KINDS; k++) {
                        CollectorDropKind kind = collector_drop_kind(k);

                        if (users[i].count[k] == 0)
                                continue;
                        sum += users[i].count[k];
                        if (json_array_append_new(kinds, json_pack("{s:s, s:I, s:s}", "kind", kind.name, "count",
                                                                   (json_int_t) users[i].count[k], "lost",
                                                                   kind.lost)) < 0) {
                                json_decref(kinds);
                                return NULL;
                        }
                }
                if (!kinds || json_array_append_new(list, json_pack("{s:I, s:I, s:o}", "uid", (json_int_t) users[i].uid,
                                                                    "drops", (json_int_t) sum, "dropsByKind",
                                                                    kinds)) < 0)
                        return NULL;
        }
        return TAKE_PTR(list);
}

/* GetStatus's loopTurns. NULL when memory ran out. */
static json_t *loop_turns_build(void) {
        _cleanup_json_ json_t *list = json_array();
        const LoopTurnSite *sites;
        size_t n = loop_turn_sites(&sites);

        for (size_t i = 0; list && i < n; i++)
                if (json_array_append_new(
                            list, json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "where", sites[i].where, "turns",
                                            (json_int_t) sites[i].turns, "slowTurns", (json_int_t) sites[i].slow,
                                            "longestUsec", (json_int_t) sites[i].longest_usec, "longestCpuUsec",
                                            (json_int_t) sites[i].longest.cpu_usec, "longestBlocked",
                                            (json_int_t) sites[i].longest.blocked, "longestPreempted",
                                            (json_int_t) sites[i].longest.preempted)) < 0)
                        return NULL;
        return TAKE_PTR(list);
}

/* Sources or features as GetStatus's Source: name, active, reason. */
static json_t *sources_to_json(const CollectorSource *sources, size_t n) {
        json_t *list = json_array();

        for (size_t i = 0; i < n; i++)
                json_array_append_new(list, json_pack("{s:s, s:b, s:o}", "name", sources[i].name, "active",
                                                      sources[i].active, "reason",
                                                      sources[i].reason ? json_string(sources[i].reason) : json_null()));
        return list;
}

static int method_get_status(VarlinkCall *call, json_t *parameters _unused_, void *userdata) {
        REFUSE_UNKNOWN_SCOPE(call);

        Manager *m = userdata;
        Collector *c = manager_collector(m);
        CollectorDrop drops[MANAGER_DROP_KINDS];
        WriterStats stats = writer_stats(manager_writer(m));
        CollectorCapability caps[COLLECTOR_CAPABILITIES];
        const CollectorSource *sources, *features;
        uint64_t total_drops = 0;
        json_t *list, *feature_list, *caps_list, *drop_list, *users, *turns;
        int64_t uid = visible_uid(call);
        uint32_t pidns = visible_pidns(call);
        struct utsname u;
        const char *arch;
        size_t n;

        /* The machine's architecture as uname -m names it ("x86_64"): only on x86 do traps have a
         * vector (bpf/arch/). */
        if (uname(&u) < 0) {
                snprintf(u.machine, sizeof(u.machine), "unknown");
                snprintf(u.release, sizeof(u.release), "unknown");
        }
        arch = u.machine;

        sources = collector_sources(c, &n);
        list = sources_to_json(sources, n);
        features = collector_features(c, &n);
        feature_list = sources_to_json(features, n);
        caps_list = json_array();
        for (size_t i = 0, k = collector_capabilities(c, caps); i < k; i++)
                json_array_append_new(caps_list, json_pack("{s:s, s:b, s:s}", "name", caps[i].name, "present",
                                                           caps[i].present, "since", caps[i].since));
        drop_list = json_array();
        for (size_t i = 0, k = manager_drops(m, drops); i < k; i++) {
                json_array_append_new(drop_list, json_pack("{s:s, s:I, s:s}", "kind", drops[i].kind.name, "count",
                                                           (json_int_t) drops[i].count, "lost", drops[i].kind.lost));
                total_drops += drops[i].count;
        }
        /* Drops are kept per user, not per namespace: a caller in a namespace is told its total
         * only (the machine's, as the sources it counts with), no user's. */
        users = pidns ? json_array() : user_drops_build(c, uid);
        turns = users ? loop_turns_build() : NULL;
        if (!turns) {
                json_decref(users);
                json_decref(list);
                json_decref(feature_list);
                json_decref(caps_list);
                json_decref(drop_list);
                return -ENOMEM;
        }
        return varlink_call_reply(call,
                                  json_pack("{s:o, s:o, s:I, s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:I, s:s, s:I, s:I, s:I, s:o, s:I, "
                                            "s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "loopTurns", turns, "dropsByUser", users,
                                            "unsavedSamples",
                                            (json_int_t) stats.unsaved_samples, "version", TRAPSTAT_VERSION,
                                            "arch", arch, "kernel", u.release, "bpfObject", collector_bpf_object(c),
                                            "sources", list, "features", feature_list, "capabilities", caps_list, "tickUsec", (json_int_t) manager_tick_usec(m),
                                            "databasePath", manager_database_path(m), "databaseBytes",
                                            (json_int_t) stats.database_bytes,
                                            "processesTracked",
                                            (json_int_t) (uid < 0 && !pidns
                                                                  ? collector_n_tracked(c)
                                                                  : collector_n_tracked_visible(c, uid, pidns)),
                                            "drops",
                                            (json_int_t) total_drops, "dropsByKind", drop_list, "faultSamplePeriod",
                                            (json_int_t) collector_fault_sample_period(c), "loopLongestTurnUsec",
                                            (json_int_t) loop_turn_longest_usec(), "loopSlowTurns",
                                            (json_int_t) loop_turn_slow(), "tickRecordsRead",
                                            (json_int_t) collector_tick_records(c), "slotsTaken",
                                            (json_int_t) collector_slots_taken(c), "writerQueuedTicks",
                                            (json_int_t) stats.queued, "writerWriteUsec", (json_int_t) stats.write_usec,
                                            "writerMaintainUsec", (json_int_t) stats.maintain_usec,
                                            "writerLongestStepUsec", (json_int_t) stats.longest_step_usec),
                                  false);
}

/* Ends a reply built row by row, whose last step returned r, with the other members, and hands
 * it out; or frees it. */
static int reply_finish(VarlinkReply *reply, int r, json_t *members, VarlinkReply **ret) {
        if (r >= 0)
                r = varlink_reply_finish(reply, members);
        else
                json_decref(members);
        if (r < 0) {
                varlink_reply_free(reply);
                return r;
        }
        *ret = reply;
        return 0;
}

typedef struct TopArgs {
        uint64_t since_usec;
        const char *sort;
        size_t limit;
        int64_t uid;
        ProcessFilter filter;
        FaultsKnown faults_known; /* collector_faults_known(), taken on the loop */
} TopArgs;

static void top_args_free(void *userdata) {
        TopArgs *a = userdata;

        if (a) {
                process_filter_done(&a->filter);
                free(a);
        }
}

/* In a worker: the rows go into the reply one at a time, never as one JSON tree. */
static int run_top(Store *reader, void *userdata, VarlinkReply **ret) {
        const TopArgs *a = userdata;
        VarlinkReply *reply = NULL;
        StoreRow *rows;
        uint64_t other;
        json_t *members;
        size_t n;
        int r;

        r = store_top(reader, a->since_usec, a->sort, a->limit, a->uid, &a->filter, &rows, &n, &other);
        if (r < 0)
                return database_error(reader, r, ret);

        r = varlink_reply_new_array("rows", &reply);
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = varlink_reply_append(reply, json_pack("{s:o, s:o}", "process",
                                                          process_json(a->filter.pidns, &rows[i].process),
                                                          "counters",
                                                          counters_to_json(&rows[i].faults, &rows[i].fault_time,
                                                                           &rows[i].stall, &rows[i].traps,
                                                                           a->faults_known)));
        store_rows_free(rows, n);
        members = json_pack("{s:I}", "otherProcesses", (json_int_t) other);
        return reply_finish(reply, members ? r : -ENOMEM, members, ret);
}

static int method_top(VarlinkCall *call, json_t *parameters, void *userdata) {
        REFUSE_UNKNOWN_SCOPE(call);

        Manager *m = userdata;
        int64_t window = param_int(parameters, "windowSec", TOP_DEFAULT_WINDOW_SEC);
        int64_t limit = param_int(parameters, "limit", TOP_DEFAULT_LIMIT);
        _cleanup_(process_filter_done) ProcessFilter filter = PROCESS_FILTER_NONE;
        const char *bad;
        TopArgs *args;
        int r;

        if (window < 1)
                return varlink_call_error_invalid_parameter(call, "windowSec");
        if (!in_range(limit, 1, TOP_MAX_LIMIT))
                return varlink_call_error_invalid_parameter(call, "limit");
        r = process_filter_read(parameters, &filter, &bad);
        if (r == -EINVAL)
                return varlink_call_error_invalid_parameter(call, bad);
        if (r < 0)
                return r;
        filter.pidns = visible_pidns(call);
        if (!need_store(call, m, &r))
                return r;

        args = malloc(sizeof(*args));
        if (!args)
                return -ENOMEM;
        /* The sort name from static storage: the parameters are gone when the worker runs. */
        *args = (TopArgs) { .since_usec = window_start_usec(window),
                            .sort = param_sort_key(parameters).name,
                            .limit = (size_t) limit,
                            .uid = visible_uid(call),
                            .filter = filter,
                            .faults_known = collector_faults_known(manager_collector(m)) };
        filter = PROCESS_FILTER_NONE; /* the worker's now */
        return submit(call, m, true, run_top, args, top_args_free);
}

/* What a call about one process over a stretch of time (History, Sites) names, and who asks. */
typedef struct ProcessRange {
        uint32_t pid;
        uint64_t start_time; /* 0: the newest incarnation */
        uint64_t since_usec, until_usec;
        int64_t uid;         /* >= 0: the caller sees only this user's processes */
        uint32_t pidns;      /* not 0: the caller sees only this pid namespace's, pid is its pid there */
} ProcessRange;

/* Reads sinceUsec and untilUsec (History, UnitHistory, Sites); the member out of bounds, or NULL. */
static const char *time_range_read(json_t *parameters, uint64_t *ret_since, uint64_t *ret_until) {
        int64_t since = param_int(parameters, "sinceUsec", 0), until = param_int(parameters, "untilUsec", INT64_MAX);

        if (since < 0)
                return "sinceUsec";
        if (until < 0)
                return "untilUsec";
        /* An empty range is a mistake to point out, not a question with an empty answer. */
        if (since > until)
                return "untilUsec";
        *ret_since = (uint64_t) since;
        *ret_until = (uint64_t) until;
        return NULL;
}

/* Reads resolutionSec (History, UnitHistory) into *ret, 0 when absent (the default then depends
 * on what the history covers); the member out of bounds, or NULL. */
static const char *resolution_read(json_t *parameters, int64_t *ret) {
        int64_t resolution = param_int(parameters, "resolutionSec", 0);

        if (!param_present(parameters, "resolutionSec")) {
                *ret = 0;
                return NULL;
        }
        if (resolution < 1 || (uint64_t) resolution > UINT64_MAX / USEC_PER_SEC ||
            ((uint64_t) resolution * USEC_PER_SEC) % STORE_RAW_BUCKET_USEC != 0)
                return "resolutionSec";
        *ret = resolution;
        return NULL;
}

/* Reads pid, startTime, sinceUsec and untilUsec into *ret; the member out of bounds, or NULL. */
static const char *process_range_read(VarlinkCall *call, json_t *parameters, ProcessRange *ret) {
        int64_t pid = param_int(parameters, "pid", 0), start_time = param_int(parameters, "startTime", 0);
        uint64_t since, until;
        const char *bad;

        if (!in_range(pid, 1, UINT32_MAX))
                return "pid";
        if (start_time < 0)
                return "startTime";
        bad = time_range_read(parameters, &since, &until);
        if (bad)
                return bad;
        *ret = (ProcessRange) { .pid = (uint32_t) pid,
                                .start_time = (uint64_t) start_time,
                                .since_usec = since,
                                .until_usec = until,
                                .uid = visible_uid(call),
                                .pidns = visible_pidns(call) };
        return NULL;
}

/* In a worker: the process a History or Sites call names, if the caller may see it. Returns 1
 * and the process; or 0 and the reply to send instead (NoSuchProcess, PermissionDenied,
 * DatabaseError) in *ret; or a negative errno. */
static int find_process(Store *reader, const ProcessRange *range, int64_t *ret_id, ProcessInfo *ret_process,
                        VarlinkReply **ret) {
        ProcessInfo process;
        int64_t id;
        int r;

        /* A caller in a pid namespace names processes by their pids there: a process outside it has
         * none, as one that never was. */
        r = range->pidns ? store_find_process_in_ns(reader, range->pidns, range->pid, range->start_time, &id, &process)
                         : store_find_process(reader, range->pid, range->start_time, &id, &process);
        if (r == -ENOENT)
                return varlink_reply_new_error("io.trapstat.NoSuchProcess",
                                               json_pack("{s:I}", "pid", (json_int_t) range->pid), ret);
        if (r < 0)
                return database_error(reader, r, ret);
        if (range->uid >= 0 && process.uid != range->uid) {
                process_info_done(&process);
                return varlink_reply_new_error("org.varlink.service.PermissionDenied", NULL, ret);
        }
        *ret_id = id;
        *ret_process = process;
        return 1;
}

/* One sample of History or UnitHistory: {"timeUsec": ..., "counters": ...}. Written as text
 * where it has no traps (nearly always): a day at 60 s is 1440 of them, and building and dumping
 * a json_t for each was most of the call's time. */
static int append_sample(VarlinkReply *reply, const StoreHistoryRow *row, FaultsKnown faults_known) {
        static const Traps none = {};
        const Traps *traps = row->traps ?: &none;
        char counters[COUNTERS_JSON_MAX], element[COUNTERS_JSON_MAX + 64];
        int n;

        if (counters_format_json(&row->faults, &row->fault_time, &row->stall, traps, faults_known, counters) < 0)
                return varlink_reply_append(reply,
                                            json_pack("{s:I, s:o}", "timeUsec", (json_int_t) row->time_usec, "counters",
                                                      counters_to_json(&row->faults, &row->fault_time, &row->stall,
                                                                       traps, faults_known)));
        n = snprintf(element, sizeof(element), "{\"timeUsec\":%" PRId64 ",\"counters\":%s}", (int64_t) row->time_usec,
                     counters);
        if (n < 0 || (size_t) n >= sizeof(element))
                return -ENOBUFS;
        return varlink_reply_append_text(reply, element, (size_t) n);
}

/* The step of a History or UnitHistory in usec: the one asked for (resolutionSec), or without
 * one the default for the part of [since, until) the processes lived, first_seen to last_seen
 * (tier_default_resolution_sec()). */
static uint64_t history_step_usec(int64_t asked_sec, uint64_t first_seen, uint64_t last_seen, uint64_t since,
                                  uint64_t until) {
        if (asked_sec > 0)
                return (uint64_t) asked_sec * USEC_PER_SEC;
        return tier_default_resolution_sec(first_seen, last_seen, since, until) * USEC_PER_SEC;
}

typedef struct HistoryArgs {
        ProcessRange range;
        int64_t resolution_sec; /* 0: chosen by the process's lifetime */
        FaultsKnown faults_known;      /* collector_faults_known(), taken on the loop */
} HistoryArgs;

static int run_history(Store *reader, void *userdata, VarlinkReply **ret) {
        const HistoryArgs *a = userdata;
        VarlinkReply *reply = NULL;
        StoreHistoryRow *rows;
        ProcessInfo process;
        Faults total = {};
        FaultTime total_time = {};
        Stall total_stall = {};
        Traps total_traps = {};
        json_t *members;
        int64_t id;
        size_t n;
        int r;

        r = find_process(reader, &a->range, &id, &process, ret);
        if (r <= 0)
                return r;

        r = store_history(reader, id, a->range.since_usec, a->range.until_usec,
                          history_step_usec(a->resolution_sec, process.first_seen_usec, process.last_seen_usec,
                                            a->range.since_usec, a->range.until_usec),
                          &rows, &n);
        if (r < 0) {
                process_info_done(&process);
                return database_error(reader, r, ret);
        }

        /* The samples go into the reply one at a time; the process and the totals after them. */
        r = varlink_reply_new_array("samples", &reply);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                faults_add(&total, &rows[i].faults);
                fault_time_add(&total_time, &rows[i].fault_time);
                stall_add(&total_stall, &rows[i].stall);
                if (rows[i].traps)
                        traps_add(&total_traps, rows[i].traps);
                r = append_sample(reply, &rows[i], a->faults_known);
        }
        store_history_rows_free(rows, n);
        members = json_pack("{s:o, s:o}", "process", process_json(a->range.pidns, &process), "total",
                            counters_to_json(&total, &total_time, &total_stall, &total_traps, a->faults_known));
        process_info_done(&process);
        return reply_finish(reply, members ? r : -ENOMEM, members, ret);
}

static int method_history(VarlinkCall *call, json_t *parameters, void *userdata) {
        REFUSE_UNKNOWN_SCOPE(call);

        Manager *m = userdata;
        int64_t resolution;
        ProcessRange range;
        const char *bad;
        HistoryArgs *args;
        int r;

        bad = process_range_read(call, parameters, &range) ?: resolution_read(parameters, &resolution);
        if (bad)
                return varlink_call_error_invalid_parameter(call, bad);
        if (!need_store(call, m, &r))
                return r;

        args = malloc(sizeof(*args));
        if (!args)
                return -ENOMEM;
        *args = (HistoryArgs) { .range = range,
                                .resolution_sec = resolution,
                                .faults_known = collector_faults_known(manager_collector(m)) };
        return submit(call, m, true, run_history, args, free);
}

typedef struct GroupHistoryArgs {
        uint64_t since_usec, until_usec;
        int64_t resolution_sec; /* 0: chosen by the span of the group's processes */
        int64_t uid;            /* >= 0: the caller sees only this user's processes */
        FaultsKnown faults_known;      /* collector_faults_known(), taken on the loop */
        bool container;         /* name is a container's (ContainerHistory), not a unit glob (UnitHistory) */
        uint32_t pidns;         /* not 0: the caller sees only this pid namespace's processes */
        char name[];
} GroupHistoryArgs;

/* The "units" or "containers" member of the reply: names of processes, untrusted text. */
static int group_names_add(const GroupHistoryArgs *a, const StoreGroupHistory *h, json_t *members) {
        json_t *names = json_array();

        for (size_t i = 0; names && i < (a->container ? h->n_containers : h->n_units); i++)
                if (json_array_append_new(names, a->container ? container_to_json(&h->containers[i])
                                                              : text_to_json(h->units[i])) < 0)
                        names = (json_decref(names), NULL);
        if (!names || json_object_set_new(members, a->container ? "containers" : "units", names) < 0)
                return -ENOMEM;
        return 0;
}

static int run_group_history(Store *reader, void *userdata, VarlinkReply **ret) {
        const GroupHistoryArgs *a = userdata;
        StoreGroup group = { .unit_glob = a->container ? NULL : a->name,
                             .container = a->container ? a->name : NULL,
                             .pidns = a->pidns };
        VarlinkReply *reply = NULL;
        StoreGroupHistory h;
        Faults total = {};
        FaultTime total_time = {};
        Stall total_stall = {};
        Traps total_traps = {};
        json_t *members;
        int r;

        r = store_group_history_find(reader, &group, a->uid, a->since_usec, a->until_usec, &h);
        if (r == -ENOENT && a->container)
                return varlink_reply_new_error("io.trapstat.NoSuchContainer", json_pack("{s:o}", "container",
                                                                                       text_to_json(a->name)), ret);
        if (r == -ENOENT)
                return varlink_reply_new_error("io.trapstat.NoSuchUnit", json_pack("{s:s}", "unit", a->name), ret);
        if (r < 0)
                return database_error(reader, r, ret);
        /* As History's default, over the span of all the group's processes (those still running
         * reach to now). */
        r = store_group_history_read(reader, &h, a->since_usec, a->until_usec,
                                     history_step_usec(a->resolution_sec, h.first_seen_usec, now_usec(CLOCK_REALTIME),
                                                       a->since_usec, a->until_usec));
        if (r < 0) {
                store_group_history_done(&h);
                return database_error(reader, r, ret);
        }

        /* The samples go into the reply one at a time, as History's; the rest after them. */
        r = varlink_reply_new_array("samples", &reply);
        for (size_t i = 0; r >= 0 && i < h.n_rows; i++) {
                faults_add(&total, &h.rows[i].faults);
                fault_time_add(&total_time, &h.rows[i].fault_time);
                stall_add(&total_stall, &h.rows[i].stall);
                if (h.rows[i].traps)
                        traps_add(&total_traps, h.rows[i].traps);
                r = append_sample(reply, &h.rows[i], a->faults_known);
        }
        members = json_pack("{s:I, s:I, s:o}", "processes", (json_int_t) h.processes, "running",
                            (json_int_t) h.running, "total",
                            counters_to_json(&total, &total_time, &total_stall, &total_traps, a->faults_known));
        if (members && group_names_add(a, &h, members) < 0)
                members = (json_decref(members), NULL);
        store_group_history_done(&h);
        return reply_finish(reply, members ? r : -ENOMEM, members, ret);
}

/* UnitHistory and ContainerHistory, name being the unit glob or the container. */
static int group_history_submit(VarlinkCall *call, json_t *parameters, Manager *m, const char *name, bool container) {
        GroupHistoryArgs *args;
        uint64_t since, until;
        int64_t resolution;
        const char *bad;
        size_t size;
        int r;

        bad = time_range_read(parameters, &since, &until) ?: resolution_read(parameters, &resolution);
        if (bad)
                return varlink_call_error_invalid_parameter(call, bad);
        if (!need_store(call, m, &r))
                return r;

        size = strlen(name) + 1;
        args = malloc(sizeof(*args) + size);
        if (!args)
                return -ENOMEM;
        *args = (GroupHistoryArgs) { .since_usec = since,
                                     .until_usec = until,
                                     .resolution_sec = resolution,
                                     .uid = visible_uid(call),
                                     .faults_known = collector_faults_known(manager_collector(m)),
                                     .container = container,
                                     .pidns = visible_pidns(call) };
        memcpy(args->name, name, size);
        return submit(call, m, true, run_group_history, args, free);
}

static int method_unit_history(VarlinkCall *call, json_t *parameters, void *userdata) {
        REFUSE_UNKNOWN_SCOPE(call);

        const char *unit = param_string(parameters, "unit");

        /* At most what a Top filter takes, which is what SQLite's GLOB takes (store.c). */
        if (!unit || strlen(unit) > MAX_UNIT_NAME)
                return varlink_call_error_invalid_parameter(call, "unit");
        return group_history_submit(call, parameters, userdata, unit, false);
}

static int method_container_history(VarlinkCall *call, json_t *parameters, void *userdata) {
        REFUSE_UNKNOWN_SCOPE(call);

        const char *container = param_string(parameters, "container");

        if (!container_query_valid(container))
                return varlink_call_error_invalid_parameter(call, "container");
        return group_history_submit(call, parameters, userdata, container, true);
}

typedef struct SitesArgs {
        ProcessRange range;
        int kind; /* a SiteKind, or -1 for both */
        size_t limit;
} SitesArgs;

static int run_sites(Store *reader, void *userdata, VarlinkReply **ret) {
        const SitesArgs *a = userdata;
        VarlinkReply *reply = NULL;
        SiteCount *sites;
        ProcessInfo process;
        json_t *members;
        uint64_t other;
        int64_t id;
        size_t n;
        int r;

        r = find_process(reader, &a->range, &id, &process, ret);
        if (r <= 0)
                return r;
        r = store_sites(reader, id, a->range.since_usec, a->range.until_usec, a->kind, a->limit, &sites, &n, &other);
        if (r < 0) {
                process_info_done(&process);
                return database_error(reader, r, ret);
        }

        /* The sites go into the reply one at a time, the process after them. */
        r = varlink_reply_new_array("sites", &reply);
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = varlink_reply_append(reply, site_count_to_json(&sites[i]));
        site_counts_free(sites, n);
        members = json_pack("{s:o, s:I}", "process", process_json(a->range.pidns, &process), "otherSites",
                            (json_int_t) other);
        process_info_done(&process);
        return reply_finish(reply, members ? r : -ENOMEM, members, ret);
}

static int method_sites(VarlinkCall *call, json_t *parameters, void *userdata) {
        REFUSE_UNKNOWN_SCOPE(call);

        Manager *m = userdata;
        int64_t limit = param_int(parameters, "limit", SITES_DEFAULT_LIMIT);
        const char *kind_name = param_string(parameters, "kind");
        SiteKind kind = SITE_TRAP;
        ProcessRange range;
        const char *bad;
        SitesArgs *args;
        int r;

        bad = process_range_read(call, parameters, &range);
        if (bad)
                return varlink_call_error_invalid_parameter(call, bad);
        /* The IDL's enum SiteKind let only its names through: a failure here is a bug. */
        if (kind_name && site_kind_from_name(kind_name, &kind) < 0)
                return varlink_call_error_invalid_parameter(call, "kind");
        if (!in_range(limit, 1, SITES_MAX_LIMIT))
                return varlink_call_error_invalid_parameter(call, "limit");
        if (!need_store(call, m, &r))
                return r;

        args = malloc(sizeof(*args));
        if (!args)
                return -ENOMEM;
        *args = (SitesArgs) { .range = range, .kind = kind_name ? (int) kind : -1, .limit = (size_t) limit };
        /* Sites are written to the raw tier at once, never pending (store_flush()): nothing to
         * settle first. */
        return submit(call, m, false, run_sites, args, free);
}

static int method_watch(VarlinkCall *call, json_t *parameters, void *userdata) {
        REFUSE_UNKNOWN_SCOPE(call);

        Manager *m = userdata;
        int64_t limit = param_int(parameters, "limit", TOP_DEFAULT_LIMIT), pid = param_int(parameters, "pid", 0);
        _cleanup_(process_filter_done) ProcessFilter filter = PROCESS_FILTER_NONE;
        const char *bad;
        int r;

        if (!in_range(limit, 1, TOP_MAX_LIMIT))
                return varlink_call_error_invalid_parameter(call, "limit");
        if (param_present(parameters, "pid") && !in_range(pid, 1, UINT32_MAX))
                return varlink_call_error_invalid_parameter(call, "pid");
        r = process_filter_read(parameters, &filter, &bad);
        if (r == -EINVAL)
                return varlink_call_error_invalid_parameter(call, bad);
        if (r < 0)
                return r;
        filter.pidns = visible_pidns(call);
        /* A oneway Watch would be a stream nobody reads. */
        if (!varlink_call_more(call))
                return 0;

        return watch_set_add(manager_watch_set(m), call,
                             &(WatchFilter) { .sort = param_sort_key(parameters),
                                              .limit = (size_t) limit,
                                              .pid = (uint32_t) pid,
                                              .uid = visible_uid(call),
                                              .process = filter });
}

typedef struct TrapsArgs {
        uint64_t since_usec;
        int64_t uid;
        uint32_t pidns;
} TrapsArgs;

static int run_traps(Store *reader, void *userdata, VarlinkReply **ret) {
        const TrapsArgs *a = userdata;
        _cleanup_json_ json_t *reply = NULL;
        uint64_t processes;
        Traps traps;
        int r;

        r = store_traps(reader, a->since_usec, a->uid, a->pidns, &traps, &processes);
        if (r < 0)
                return database_error(reader, r, ret);

        reply = json_pack("{s:I}", "processes", (json_int_t) processes);
        if (!reply || traps_to_json(&traps, reply) < 0)
                return -ENOMEM;
        return varlink_reply_new(TAKE_PTR(reply), ret);
}

static int method_traps(VarlinkCall *call, json_t *parameters, void *userdata) {
        REFUSE_UNKNOWN_SCOPE(call);

        Manager *m = userdata;
        int64_t window = param_int(parameters, "windowSec", TRAPS_DEFAULT_WINDOW_SEC);
        TrapsArgs *args;
        int r;

        if (window < 1)
                return varlink_call_error_invalid_parameter(call, "windowSec");
        if (!need_store(call, m, &r))
                return r;

        args = malloc(sizeof(*args));
        if (!args)
                return -ENOMEM;
        *args = (TrapsArgs) { .since_usec = window_start_usec(window),
                              .uid = visible_uid(call),
                              .pidns = visible_pidns(call) };
        return submit(call, m, false, run_traps, args, free);
}

typedef struct ListArgs {
        StoreProcessFilter filter; /* comm_glob, unit, container and after point into the members below */
        char *comm, *unit, *container;
        StoreListCursor after;
} ListArgs;

/* Where a page of ListProcesses ends, as its reply's next and a later call's after:
 * "FIRSTSEEN.ID", the last process's first sighting and its row, in decimal. Callers treat it
 * as opaque. */
#define LIST_CURSOR_MAX 41 /* 19 digits, a dot, 19 digits, the NUL, and one to tell it too long */

static int list_cursor_parse(const char *s, StoreListCursor *ret) {
        char buf[LIST_CURSOR_MAX], *dot;
        uint64_t seen, id;

        if (strlen(s) >= sizeof(buf))
                return -EINVAL;
        strcpy(buf, s);
        dot = strchr(buf, '.');
        if (!dot)
                return -EINVAL;
        *dot = '\0';
        if (parse_integer(buf, 0, INT64_MAX, 0, &seen) < 0 || parse_integer(dot + 1, 1, INT64_MAX, 0, &id) < 0)
                return -EINVAL;
        *ret = (StoreListCursor) { .first_seen_usec = seen, .id = (int64_t) id };
        return 0;
}

static void list_args_free(void *userdata) {
        ListArgs *a = userdata;

        if (a) {
                free(a->comm);
                free(a->unit);
                free(a->container);
                free(a);
        }
}

static int run_list_processes(Store *reader, void *userdata, VarlinkReply **ret) {
        const ListArgs *a = userdata;
        VarlinkReply *reply = NULL;
        ProcessInfo *list;
        StoreListCursor next;
        char cursor[LIST_CURSOR_MAX];
        uint64_t total;
        json_t *members;
        size_t n;
        int r;

        r = store_list_processes(reader, &a->filter, &list, &n, &total, &next);
        if (r < 0)
                return database_error(reader, r, ret);
        r = varlink_reply_new_array("processes", &reply);
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = varlink_reply_append(reply, process_json(a->filter.pidns, &list[i]));
        process_infos_free(list, n);
        members = json_pack("{s:I}", "otherProcesses", (json_int_t) (total - n));
        /* Where the next page begins, when there is one. */
        snprintf(cursor, sizeof(cursor), "%" PRIu64 ".%" PRId64, next.first_seen_usec, next.id);
        if (members && total > n && json_object_set_new(members, "next", json_string(cursor)) < 0)
                members = (json_decref(members), NULL);
        return reply_finish(reply, members ? r : -ENOMEM, members, ret);
}

static int method_list_processes(VarlinkCall *call, json_t *parameters, void *userdata) {
        REFUSE_UNKNOWN_SCOPE(call);

        Manager *m = userdata;
        int64_t pid = param_int(parameters, "pid", 0), limit = param_int(parameters, "limit", LIST_DEFAULT_LIMIT);
        bool include_exited = param_bool(parameters, "includeExited");
        const char *comm = param_string(parameters, "comm"), *unit = param_string(parameters, "unit"),
                   *container = param_string(parameters, "container"), *after = param_string(parameters, "after");
        StoreListCursor cursor = {};
        ListArgs *args;
        int r;

        if (param_present(parameters, "pid") && !in_range(pid, 1, UINT32_MAX))
                return varlink_call_error_invalid_parameter(call, "pid");
        if (after && list_cursor_parse(after, &cursor) < 0)
                return varlink_call_error_invalid_parameter(call, "after");
        if (!in_range(limit, 1, LIST_MAX_LIMIT))
                return varlink_call_error_invalid_parameter(call, "limit");
        if (comm && strlen(comm) > STORE_MAX_GLOB)
                return varlink_call_error_invalid_parameter(call, "comm");
        if (unit && strlen(unit) > MAX_UNIT_NAME)
                return varlink_call_error_invalid_parameter(call, "unit");
        if (container && !container_query_valid(container))
                return varlink_call_error_invalid_parameter(call, "container");
        if (!need_store(call, m, &r))
                return r;

        args = calloc(1, sizeof(*args));
        if (!args || (comm && !(args->comm = strdup(comm))) || (unit && !(args->unit = strdup(unit))) ||
            (container && !(args->container = strdup(container)))) {
                list_args_free(args);
                return -ENOMEM;
        }
        args->filter = (StoreProcessFilter) { .pid = (uint32_t) pid,
                                              .include_exited = include_exited,
                                              .uid = visible_uid(call),
                                              .comm_glob = args->comm,
                                              .unit = args->unit,
                                              .container = args->container,
                                              .pidns = visible_pidns(call),
                                              .limit = (size_t) limit };
        if (after) {
                args->after = cursor;
                args->filter.after = &args->after;
        }
        return submit(call, m, false, run_list_processes, args, list_args_free);
}

/* In memory: answered on the loop, no worker. */
static int method_unit_totals(VarlinkCall *call, json_t *parameters, void *userdata) {
        REFUSE_UNKNOWN_SCOPE(call);

        Manager *m = userdata;
        int64_t limit = param_int(parameters, "limit", UNIT_TOTALS_DEFAULT_LIMIT);
        json_t *reply;

        if (!in_range(limit, 1, UNIT_TOTALS_MAX_LIMIT))
                return varlink_call_error_invalid_parameter(call, "limit");
        /* The running totals are kept per unit and user, not per pid namespace: a caller in a
         * namespace is given none (a uid no process has: rows of nobody). */
        reply = unit_totals_reply_build(manager_unit_totals(m), visible_pidns(call) ? INT64_MAX : visible_uid(call),
                                        (size_t) limit,
                                        manager_start_usec(m), collector_faults_known(manager_collector(m)));
        if (!reply)
                return -ENOMEM;
        return varlink_call_reply(call, reply, false);
}

static const VarlinkMethod methods[] = {
        { "GetStatus", method_get_status },
        { "Top", method_top },
        { "History", method_history },
        { "UnitHistory", method_unit_history },
        { "ContainerHistory", method_container_history },
        { "Sites", method_sites },
        { "ListProcesses", method_list_processes },
        { "Watch", method_watch, VARLINK_METHOD_MORE },
        { "Traps", method_traps },
        { "UnitTotals", method_unit_totals },
        {},
};

int methods_register(VarlinkServer *server, Manager *m) {
        return varlink_server_add_interface(server, "io.trapstat", embedded_varlink[0].text, methods, m);
}
