/* The self-test's struct of the project's own kind (tests/style_lint.py --self-test). */
typedef struct sdfed_point {
    int x, y;
} sdfed_point;
