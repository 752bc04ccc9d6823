/* SHA-256 against the FIPS 180-4 example vectors and sha256sum. */
#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"
#include "check.h"

int main(void) {
    char hex[65];
    sdfed_sha256_hex("", 0, hex);
    CHECK(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"), "empty: %s", hex);
    sdfed_sha256_hex("abc", 3, hex);
    CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"), "abc: %s", hex);
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sdfed_sha256_hex(two, strlen(two), hex);
    CHECK(!strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"), "448 bits: %s", hex);
    /* a million 'a's, fed in uneven pieces */
    char *a = malloc(1000000);
    memset(a, 'a', 1000000);
    sdfed_sha256 h;
    unsigned char d[32];
    sdfed_sha256_init(&h);
    for (size_t at = 0, step = 1; at < 1000000; at += step, step = step * 3 % 1000 + 1)
        sdfed_sha256_update(&h, a + at, at + step > 1000000 ? 1000000 - at : step);
    sdfed_sha256_final(&h, d);
    static const unsigned char want[32] = {0xcd, 0xc7, 0x6e, 0x5c, 0x99, 0x14, 0xfb, 0x92, 0x81, 0xa1, 0xc7,
                                           0xe2, 0x84, 0xd7, 0x3e, 0x67, 0xf1, 0x80, 0x9a, 0x48, 0xa4, 0x97,
                                           0x20, 0x0e, 0x04, 0x6d, 0x39, 0xcc, 0xc7, 0x11, 0x2c, 0xd0};
    CHECK(!memcmp(d, want, 32), "a million 'a' in pieces");
    free(a);
    return check_report("test_sha256");
}
