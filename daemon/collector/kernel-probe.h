/* SPDX-License-Identifier: MIT */
#pragma once

/* Probes the running kernel for each capability of kernel-caps.h: map types created, helpers
 * and instructions offered to a tracepoint program that is loaded and closed at once, the
 * kernel's BTF read. Needs what loading BPF needs (root, or CAP_BPF and CAP_PERFMON); without it
 * every load probe says absent. Loads and attaches nothing else. */

#include "kernel-caps.h"

void kernel_probe(KernelCaps *ret);
