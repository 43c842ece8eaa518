/* SPDX-License-Identifier: MIT */
#include "array-util.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

int array_grow(void **array, size_t *capacity, size_t n, size_t more, size_t elem) {
        size_t need, c;
        void *p;

        if (elem == 0)
                return -EINVAL;
        if (more > SIZE_MAX - n || n + more > SIZE_MAX / elem)
                return -ENOMEM;
        need = n + more;
        if (need <= *capacity)
                return 0;
        c = MAX(need, (size_t) 16);
        if (*capacity <= SIZE_MAX / 2)
                c = MAX(c, *capacity * 2);
        /* Near the limit, exactly what was asked for: that fits, checked above. */
        if (c > SIZE_MAX / elem)
                c = need;
        p = reallocarray(*array, c, elem);
        if (!p)
                return -ENOMEM;
        *array = p;
        *capacity = c;
        return 0;
}

int array_append(void **array, size_t *n, size_t *capacity, size_t elem, const void *value) {
        int r;

        r = array_grow(array, capacity, *n, 1, elem);
        if (r < 0)
                return r;
        memcpy((char *) *array + *n * elem, value, elem);
        (*n)++;
        return 0;
}
