/* SPDX-License-Identifier: MIT */
#pragma once

/* Data files compiled into the binaries by schema/embed.py. */

#include <stddef.h>

typedef struct EmbeddedFile {
        const char *name; /* base name, e.g. "0001-init.sql" */
        const char *text; /* NUL-terminated contents */
        size_t size;
} EmbeddedFile;

/* schema/io.trapstat.varlink */
extern const EmbeddedFile embedded_varlink[];
extern const size_t embedded_varlink_count;

/* schema/io.systemd.Metrics.varlink: trapstatd's report socket. */
extern const EmbeddedFile embedded_varlink_metrics[];
extern const size_t embedded_varlink_metrics_count;

/* schema/org.varlink.service.varlink: served by every varlink server; in libcommon. */
extern const EmbeddedFile embedded_varlink_service[];
extern const size_t embedded_varlink_service_count;

/* schema/sql/NNNN-*.sql, in order; migration N is embedded_migrations[N - 1]. */
extern const EmbeddedFile embedded_migrations[];
extern const size_t embedded_migrations_count;
