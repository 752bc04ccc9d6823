/* A macro that is a comma expression: tests/style_lint.py must find it. */
#define NEXT(i) ((i)++, (i)) /* found */
