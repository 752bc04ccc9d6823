/* What every rule of tests/style_lint.py accepts (its self-test: no finding here). */
#include <stdlib.h>

#include "structs.h"

#define SQUARE(v) ((v) * (v))
#define FIELDS {1, 2}

static const int primes[] = {2, 3, 5, 7};
static sdfed_point origin = {0};
static const sdfed_point corners[] = {{.x = 0, .y = 0}, {.x = 1, .y = 1}};

static int sign(int v) {
    if (v < 0) return -1;
    return v > 0 ? 1 : 0;
}

int walk(int n, char **argv) {
    int total = 0, steps = 0;
    for (int i = 0, j = n; i < j; i++, j--) total += sign(i - j);
    sdfed_point p = {.x = n, .y = steps};
    sdfed_point q = (sdfed_point){.x = SQUARE(p.x), .y = primes[0]};
    const char *text = n > 1 ? argv[1] : "none";
    long value = strtol(text, NULL, 10);
    struct {
        int a, b;
    } pair = {.a = 1, .b = 2};
    switch (n) {
    case 1: total += 1; break;
    default: break;
    }
    return total + q.y + (int)value + origin.x + corners[1].x + pair.a + (sign(n) ? 1 : 2) + (sign(-n) ? 3 : 4);
}
