/* Arrays that grow by doubling, for the lists the programs keep (batches,
 * registrations): room for one more item. */
#ifndef SDFED_BASE_GROW_H
#define SDFED_BASE_GROW_H

#include <stddef.h>

/* items (holding n of *cap items of item_size bytes) as it is when n <
 * *cap, else moved to twice the room (64 items at first) and *cap updated;
 * NULL when memory ran out, items and *cap then unchanged. */
void *sdfed_grow(void *items, int *cap, int n, size_t item_size);

#endif
