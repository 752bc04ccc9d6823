/* The project's struct filled by position: tests/style_lint.py must find each. */
#include "structs.h"

point one = {1, 2}; /* found */
static const point many[] = {{1, 2}, {.x = 3, .y = 4}}; /* found */

point twice(int v) { return (point){v, v}; } /* found */
