/* Arrays that grow by doubling (see grow.h). */
#include "base/grow.h"

#include <stdlib.h>

void *sdfed_grow(void *items, int *cap, int n, size_t item_size) {
    if (n < *cap) return items;
    int more = *cap ? 2 * *cap : 64;
    void *grown = realloc(items, item_size * (size_t)more);
    if (grown) *cap = more;
    return grown;
}
