/* The project's struct filled by position: tests/style_lint.py must find each. */
#include "structs.h"

sdfed_point one = {1, 2}; /* found */
static const sdfed_point many[] = {{1, 2}, {.x = 3, .y = 4}}; /* found */

sdfed_point twice(int v) { return (sdfed_point){v, v}; } /* found */
