/* Reports on a dataset's classes and unused files (see dataset_report.h). */
#include "dataset_report.h"

#include <stdio.h>
#include <string.h>

#include "native/progress.h"

/* the other files' names shown per reason */
#define OTHERS_SHOWN 5
/* the class names' column, in characters */
#define NAME_WIDTH 24

/* The characters of UTF-8 text: its bytes but the continuation bytes. */
static int characters(const char *text) {
    int n = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) n += (*p & 0xc0) != 0x80;
    return n;
}

void report_classes(const char *const *names, int C, const uint8_t *train, int n_train, const uint8_t *test,
                    int n_test) {
    native_progress_end();
    printf("%d class%s:\n", C, C == 1 ? "" : "es");
    for (int c = 0; c < C; c++) {
        int a = 0, b = 0;
        for (int i = 0; i < n_train; i++) a += train[i] == c;
        for (int i = 0; test && i < n_test; i++) b += test[i] == c;
        int pad = characters(names[c]) < NAME_WIDTH ? NAME_WIDTH - characters(names[c]) : 0;
        if (test)
            printf("  %s%*s %6d training, %5d test images\n", names[c], pad, "", a, b);
        else
            printf("  %s%*s %6d images\n", names[c], pad, "", a);
    }
}

/* path below root, when it is there */
static const char *shown(const char *path, const char *root) {
    size_t n = strlen(root);
    return n && !strncmp(path, root, n) && path[n] == '/' ? path + n + 1 : path;
}

int report_skipped(const native_image_folder_skips *skipped, const char *root) {
    native_progress_end();
    int pictures = 0;
    for (int i = 0; skipped && i < skipped->n; i++) pictures += skipped->items[i].image;
    if (pictures) printf("%d image%s not used:\n", pictures, pictures > 1 ? "s" : "");
    for (int i = 0; skipped && i < skipped->n; i++)
        if (skipped->items[i].image)
            printf("  %s: %s\n", shown(skipped->items[i].path, root), skipped->items[i].reason);
    /* the rest by reason, in the order the reasons first appear */
    for (int i = 0; skipped && i < skipped->n; i++) {
        const native_image_folder_skip *first = &skipped->items[i];
        int seen_before = first->image;
        for (int j = 0; j < i && !seen_before; j++)
            seen_before = !skipped->items[j].image && !strcmp(skipped->items[j].reason, first->reason);
        if (seen_before) continue;
        int count = 0;
        for (int j = i; j < skipped->n; j++)
            count += !skipped->items[j].image && !strcmp(skipped->items[j].reason, first->reason);
        printf("%d file%s not used (%s):", count, count > 1 ? "s" : "", first->reason);
        for (int j = i, listed = 0; j < skipped->n && listed < OTHERS_SHOWN; j++)
            if (!skipped->items[j].image && !strcmp(skipped->items[j].reason, first->reason))
                printf("%s %s", listed++ ? "," : "", shown(skipped->items[j].path, root));
        printf("%s\n", count > OTHERS_SHOWN ? ", ..." : "");
    }
    return pictures;
}
