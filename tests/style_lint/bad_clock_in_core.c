/* A clock in the core (the self-test reads its files as the core's): tests/style_lint.py must find it. */
#include <time.h> /* found */

long seconds(void) { return (long)time(NULL); } /* found */
