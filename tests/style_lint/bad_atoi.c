/* Numbers read without an error: tests/style_lint.py must find them. */
#include <stdlib.h>

int port(const char *text) { return atoi(text) + (int)atof(text); } /* found */
