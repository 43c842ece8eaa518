/* SPDX-License-Identifier: MIT */
#pragma once

/* Arrays that grow: a pointer, a count of elements in use and a capacity, kept by the caller. One
 * rule for all of them, so that the size arithmetic and its overflow checks are written once. */

#include <stddef.h>

/* Makes room for at least `more` elements of elem bytes after the first n of *array, which has
 * room for *capacity. The capacity at least doubles when it grows (16 elements at first), so that
 * appending one at a time costs amortized O(1). 0, or -ENOMEM (also when n + more elements would
 * not fit in a size_t) with *array and *capacity untouched: the elements stay where they were. */
int array_grow(void **array, size_t *capacity, size_t n, size_t more, size_t elem);

/* Appends a copy of value (elem bytes) to *array of *n elements, growing it with array_grow(). */
int array_append(void **array, size_t *n, size_t *capacity, size_t elem, const void *value);
