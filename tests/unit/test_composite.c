/* Alpha composited onto a background (clip/image_composite.h), on every
 * target (the browser's wasm composites with this code):
 *  - every (colour, alpha, background) triple gives the integer nearest to
 *    the exact blend c·a/255 + bg·(255 − a)/255 (16.7 million of them);
 *    opaque pixels keep their colour, transparent ones become the background;
 *  - the layouts: grey+alpha stays grey over a grey background and becomes
 *    RGB (the grey replicated) over a colour; RGBA becomes RGB; grey and
 *    RGB are copied;
 *  - in place (RGBA narrowing to RGB, grey+alpha widening to RGB) gives
 *    what a separate output gets. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "clip/image_composite.h"

static void test_every_value(void) {
    long wrong = 0, not_kept = 0;
    for (int bg = 0; bg < 256; bg++) {
        uint8_t background[3] = {(uint8_t)bg, (uint8_t)bg, (uint8_t)bg};
        for (int a = 0; a < 256; a++) {
            uint8_t in[256 * 2], out[256];
            for (int c = 0; c < 256; c++) {
                in[2 * c] = (uint8_t)c;
                in[2 * c + 1] = (uint8_t)a;
            }
            sdfed_composite(in, 2, 256, background, out);
            for (int c = 0; c < 256; c++) {
                long exact255 = (long)c * a + (long)bg * (255 - a); /* 255 x the exact blend */
                if (2 * labs(255L * out[c] - exact255) >= 255) wrong++;
                if ((a == 255 && out[c] != c) || (a == 0 && out[c] != bg)) not_kept++;
            }
        }
    }
    CHECK(wrong == 0, "%ld composited values are not the nearest integer to the exact blend", wrong);
    CHECK(not_kept == 0, "%ld opaque or transparent values changed", not_kept);
}

static void test_layouts(void) {
    const uint8_t white[3] = {255, 255, 255}, blue[3] = {48, 128, 192}, grey[3] = {64, 64, 64};
    CHECK(sdfed_composite_channels(1, blue) == 1 && sdfed_composite_channels(3, blue) == 3 &&
              sdfed_composite_channels(4, grey) == 3 && sdfed_composite_channels(2, white) == 1 &&
              sdfed_composite_channels(2, grey) == 1 && sdfed_composite_channels(2, blue) == 3,
          "channels: grey+alpha is grey over grey only, RGBA is RGB");
    /* grey+alpha: opaque, transparent, half */
    const uint8_t ga[6] = {10, 255, 10, 0, 200, 128};
    uint8_t out[9];
    sdfed_composite(ga, 2, 3, grey, out);
    CHECK(out[0] == 10 && out[1] == 64 && out[2] == (200 * 128 + 64 * 127 + 127) / 255, "grey+alpha over grey");
    sdfed_composite(ga, 2, 3, blue, out);
    CHECK(out[0] == 10 && out[1] == 10 && out[2] == 10 && out[3] == 48 && out[4] == 128 && out[5] == 192 &&
              out[6] == (200 * 128 + 48 * 127 + 127) / 255 && out[8] == (200 * 128 + 192 * 127 + 127) / 255,
          "grey+alpha over blue: RGB, grey replicated");
    const uint8_t rgba[8] = {1, 2, 3, 255, 100, 150, 200, 0};
    sdfed_composite(rgba, 4, 2, blue, out);
    CHECK(!memcmp(out, (const uint8_t[6]){1, 2, 3, 48, 128, 192}, 6), "RGBA: opaque kept, transparent is blue");
    const uint8_t rgb[6] = {9, 8, 7, 6, 5, 4};
    sdfed_composite(rgb, 3, 2, blue, out);
    CHECK(!memcmp(out, rgb, 6), "RGB is copied");
    sdfed_composite(rgb, 1, 6, blue, out);
    CHECK(!memcmp(out, rgb, 6), "grey is copied");
}

static void test_in_place(void) {
    enum { N = 1000 };
    const uint8_t blue[3] = {48, 128, 192};
    uint8_t *in = malloc(N * 4), *apart = malloc(N * 3), *buf = malloc(N * 4);
    uint32_t seed = 7;
    for (int i = 0; i < N * 4; i++) {
        seed = seed * 1664525u + 1013904223u;
        in[i] = (uint8_t)(seed >> 24);
    }
    sdfed_composite(in, 4, N, blue, apart);
    memcpy(buf, in, N * 4);
    sdfed_composite(buf, 4, N, blue, buf);
    CHECK(!memcmp(buf, apart, N * 3), "RGBA to RGB in place");
    sdfed_composite(in, 2, N, blue, apart);
    memcpy(buf, in, N * 2);
    sdfed_composite(buf, 2, N, blue, buf);
    CHECK(!memcmp(buf, apart, N * 3), "grey+alpha to RGB in place");
    free(in);
    free(apart);
    free(buf);
}

int main(void) {
    test_every_value();
    test_layouts();
    test_in_place();
    return check_report("test_composite");
}
