/* A comma statement in each place one hides: tests/style_lint.py must find them. */
int swap(int *a, int *b) {
    int t = *a;
    *a = *b, *b = t; /* found */
    if (t) t = 1, *a = 2; /* found */
    while (t > 0) t--, *b += 1; /* found */
    return t, *a; /* found */
}
