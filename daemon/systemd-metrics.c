/* SPDX-License-Identifier: MIT */
/* io.systemd.Metrics on the report socket (--report-socket): the running totals of every unit,
 * whoever asks. The socket is root's (mode 0600, or what its socket unit sets): the report names
 * every unit on the system and what its processes did. */
#include "systemd-metrics.h"

#include <errno.h>
#include <stdlib.h>

#include "collector.h"
#include "embedded.h"
#include "json-util.h"
#include "macro.h"
#include "manager.h"
#include "systemd-metrics-util.h"
#include "unit-totals.h"
#include "varlink.h"

/* Each element of list as one reply, "continues" on all but the last; NoSuchMetric for none. */
static int stream(VarlinkCall *call, json_t *list) {
        size_t n = json_array_size(list);
        int r;

        /* A oneway call wants no replies; more is required otherwise (VARLINK_METHOD_MORE). */
        if (!varlink_call_more(call))
                return 0;
        if (n == 0)
                return varlink_call_error(call, "io.systemd.Metrics.NoSuchMetric", NULL);
        for (size_t i = 0; i < n; i++) {
                r = varlink_call_reply(call, json_incref(json_array_get(list, i)), i + 1 < n);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int method_list(VarlinkCall *call, json_t *parameters _unused_, void *userdata) {
        Manager *m = userdata;
        CollectorDrop drops[MANAGER_DROP_KINDS];
        _cleanup_free_ UnitTotalsRow *rows = NULL;
        _cleanup_json_ json_t *list = NULL;
        size_t n, n_drops;
        int r;

        r = unit_totals_query(manager_unit_totals(m), -1, &rows, &n);
        if (r < 0)
                return r;
        n_drops = manager_drops(m, drops);
        list = metrics_list_build(rows, n, drops, n_drops, collector_faults_known(manager_collector(m)),
                                  manager_report_max_metrics(m));
        if (!list)
                return -ENOMEM;
        return stream(call, list);
}

static int method_describe(VarlinkCall *call, json_t *parameters _unused_, void *userdata _unused_) {
        _cleanup_json_ json_t *list = json_array();

        for (size_t i = 0; list && i < n_metric_families; i++)
                if (json_array_append_new(list, json_pack("{s:s, s:s, s:s}", "name", metric_families[i].name,
                                                          "description", metric_families[i].description, "type",
                                                          metric_families[i].type)) < 0)
                        return -ENOMEM;
        if (!list)
                return -ENOMEM;
        return stream(call, list);
}

static const VarlinkMethod methods[] = {
        { "List", method_list, VARLINK_METHOD_MORE },
        { "Describe", method_describe, VARLINK_METHOD_MORE },
        {},
};

int metrics_register(VarlinkServer *server, Manager *m) {
        return varlink_server_add_interface(server, "io.systemd.Metrics", embedded_varlink_metrics[0].text, methods, m);
}
