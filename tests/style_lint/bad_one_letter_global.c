/* Globals named by one letter: tests/style_lint.py must find them. */
static int N; /* found */
static struct {
    int count;
} S; /* found */
