/* Conditionals inside conditionals: tests/style_lint.py must find them. */
int clamp(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; } /* found */
int order(int a, int b) { return (a < b ? 1 : 0) ? -1 : 1; } /* found */
