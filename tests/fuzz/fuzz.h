/* SPDX-License-Identifier: MIT */
#pragma once

/* The libFuzzer entry point every target defines. Built with -fsanitize=fuzzer it is driven by
 * libFuzzer; otherwise replay.c calls it once per corpus file (the `fuzz` test suite). */

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
