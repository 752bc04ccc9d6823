/* A socket's IP address as 16 bytes (address.h). */
#include "address.h"

#include <netinet/in.h>
#include <string.h>

static const unsigned char ipv4_mapped[12] = {[10] = 0xff, [11] = 0xff};

int agg_address_bytes(const struct sockaddr *sa, unsigned char out[16]) {
    memset(out, 0, 16);
    if (sa->sa_family == AF_INET) {
        memcpy(out, ipv4_mapped, sizeof ipv4_mapped);
        memcpy(out + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        return 1;
    }
    if (sa->sa_family == AF_INET6) {
        memcpy(out, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
        return 1;
    }
    return 0;
}

int agg_address_is_ipv4(const unsigned char bytes[16]) { return memcmp(bytes, ipv4_mapped, sizeof ipv4_mapped) == 0; }
