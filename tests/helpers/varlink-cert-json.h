/* SPDX-License-Identifier: MIT */
#pragma once

/* JSON comparison shared by the certification helpers, varlink-cert-server.c and
 * varlink-cert-client.c. */

#include <jansson.h>
#include <stdbool.h>

/* Structural equality, except that numbers compare by value (1 == 1.0: Go sends the float 1.0 as
 * 1) and an object member that is null counts as absent (varlink's optional fields). */
bool json_equivalent(const json_t *a, const json_t *b);
