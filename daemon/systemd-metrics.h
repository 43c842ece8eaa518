/* SPDX-License-Identifier: MIT */
#pragma once

/* io.systemd.Metrics on the report socket (systemd-metrics.c), answered for the Manager that
 * registers it; what it reports is systemd-metrics-util.h's. */

#include "manager.h"

struct VarlinkServer;

/* Registers io.systemd.Metrics on the report server. */
int metrics_register(struct VarlinkServer *server, Manager *m);
