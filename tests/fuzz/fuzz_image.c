/* libFuzzer target for the image decoder (native/image_decode.h): a host's
 * folder holds broken, truncated and odd files (phones' photos with EXIF,
 * transparency, palettes, interlacing), and each must decode or fail with
 * a message naming the file, never crash. The pixel budget is kept small
 * so that large declared sides take the reduction path too. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "native/image_decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    native_image_decode_options options = native_image_decode_defaults(NULL);
    options.max_pixels = (size_t)1 << 14;
    uint8_t *pixels = NULL;
    int width = 0, height = 0, channels = 0;
    sdfed_error err = {0};
    if (native_image_decode_memory(data, size, "input", &options, &pixels, &width, &height, &channels, &err) ==
        SDFED_OK) {
        if (!pixels || width < 1 || height < 1 || (size_t)width * (size_t)height > options.max_pixels ||
            (channels != 1 && channels != 3))
            abort();
        /* every byte written: ASan and MSan-like reads of the whole result */
        unsigned sum = 0;
        for (size_t i = 0; i < (size_t)width * (size_t)height * (size_t)channels; i++) sum += pixels[i];
        (void)sum;
        free(pixels);
    } else if (pixels || !err.message[0]) {
        abort();
    }
    return 0;
}
