/* SPDX-License-Identifier: MIT */
#pragma once

/* The io.trapstat methods (methods.c), answered for the Manager that registers them. */

#include "manager.h"

struct VarlinkServer;

/* Registers io.trapstat on the server. */
int methods_register(struct VarlinkServer *server, Manager *m);
