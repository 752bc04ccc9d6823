/* A primitive's own constants: tests/style_lint.py must find them. */
#include <stdint.h>

static const uint32_t first_round[2] = {0x428A2F98u, 0x71374491}; /* found */
static const uint64_t sha512_state = 0x6a09e667f3bcc908ULL;       /* found */
static const char sigma[] = "expand 32-byte k";                   /* found */
static const int a24 = 121665;                                    /* found */

uint64_t mixed(void) { return first_round[0] + sha512_state + (uint64_t)sigma[0] + (uint64_t)a24; }
