/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdint.h>

#include "macro.h"

/* jansson >= 2.9 provides json_decrefp() for exactly this. */
#define _cleanup_json_ _cleanup_(json_decrefp)

/* JSON integers are signed 64-bit in jansson; counters never reach 2^63. */
static inline json_t *json_integer_u64(uint64_t v) {
        return json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t) v);
}
