/* Declarations without the core's prefix (the self-test reads its files as the core's): tests/style_lint.py must
 * find each. */
typedef struct sdfed_pair {
    int a, b;
} pair; /* found */
int unprefixed(int x); /* found */
int sdfed_prefixed(int x);
typedef void (*callback)(int); /* found */
extern int unprefixed_count; /* found */
static inline int sdfed_twice(int x) { return 2 * x; }
static inline int thrice(int x) { return 3 * x; } /* found */
