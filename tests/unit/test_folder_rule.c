/* The folder rule (shared/data/folder_rule.h): what a path below a
 * dataset's root is, and which class a folder name means, on the paths
 * hosts' and volunteers' folders hold. */
#include <string.h>

#include "check.h"
#include "data/folder_rule.h"

static void expect(const char *path, sdfed_folder_kind kind, const char *folder, const char *format) {
    sdfed_folder_entry e = sdfed_folder_classify(path);
    CHECK(e.kind == kind, "%s: kind %d, expected %d", path, e.kind, kind);
    if (folder)
        CHECK(e.class_length == strlen(folder) && !strncmp(path, folder, e.class_length),
              "%s: class folder of %zu bytes, expected '%s'", path, e.class_length, folder);
    if (format)
        CHECK(e.format && !strcmp(e.format, format), "%s: format %s, expected %s", path, e.format ? e.format : "none",
              format);
    else
        CHECK(!e.format, "%s: format %s, expected none", path, e.format);
}

int main(void) {
    /* an image counts at any depth below its class folder */
    expect("cat/a.png", SDFED_FOLDER_IMAGE, "cat", NULL);
    expect("animals/bugs/ant.PNG", SDFED_FOLDER_IMAGE, "animals", NULL);
    expect("animals/birds/deep/down/eagle.jpeg", SDFED_FOLDER_IMAGE, "animals", NULL);
    expect("x/y.JPG", SDFED_FOLDER_IMAGE, "x", NULL);
    expect("x/y.jpe", SDFED_FOLDER_IMAGE, "x", NULL);
    expect("x/y.jfif", SDFED_FOLDER_IMAGE, "x", NULL);
    expect("\xc3\xa9" "cureuil/roux.jpg", SDFED_FOLDER_IMAGE, "\xc3\xa9" "cureuil", NULL); /* UTF-8 */
    /* in no class folder */
    expect("a.png", SDFED_FOLDER_LOOSE, NULL, NULL);
    /* hidden: the file, any folder on its way, macOS's archive folder */
    expect(".DS_Store", SDFED_FOLDER_HIDDEN, NULL, NULL);
    expect("cat/._a.png", SDFED_FOLDER_HIDDEN, NULL, NULL);
    expect("cat/.thumbnails/a.png", SDFED_FOLDER_HIDDEN, NULL, NULL);
    expect(".git/objects/a.png", SDFED_FOLDER_HIDDEN, NULL, NULL);
    expect("__MACOSX/cat/a.png", SDFED_FOLDER_HIDDEN, NULL, NULL);
    /* pictures in other formats, named with their format */
    expect("cat/logo.svg", SDFED_FOLDER_UNSUPPORTED, NULL, "SVG");
    expect("cat/IMG_0001.HEIC", SDFED_FOLDER_UNSUPPORTED, NULL, "HEIC");
    expect("cat/anim.gif", SDFED_FOLDER_UNSUPPORTED, NULL, "GIF");
    expect("cat/photo.webp", SDFED_FOLDER_UNSUPPORTED, NULL, "WebP");
    expect("raw/DSC_1.NEF", SDFED_FOLDER_UNSUPPORTED, NULL, "camera raw");
    /* the rest */
    expect("cat/notes.txt", SDFED_FOLDER_NOT_IMAGE, NULL, NULL);
    expect("cat/a.png.txt", SDFED_FOLDER_NOT_IMAGE, NULL, NULL);
    expect("cat/png", SDFED_FOLDER_NOT_IMAGE, NULL, NULL);
    expect("Thumbs.db", SDFED_FOLDER_NOT_IMAGE, NULL, NULL);
    CHECK(sdfed_folder_kind_reason(SDFED_FOLDER_IMAGE) == NULL, "an image has no reason");
    CHECK(!strcmp(sdfed_folder_kind_reason(SDFED_FOLDER_HIDDEN), "hidden"), "the hidden's reason");
    /* folder names meaning classes: case, '_', '-', '/' and space alike */
    const char *classes[] = {"T-shirt/top", "sea lion", "Cat"};
    CHECK(sdfed_folder_class_of("T-shirt_top", 11, classes, 3) == 0, "T-shirt_top is T-shirt/top");
    CHECK(sdfed_folder_class_of("Sea_Lion", 8, classes, 3) == 1, "Sea_Lion is sea lion");
    CHECK(sdfed_folder_class_of("sea-lion", 8, classes, 3) == 1, "sea-lion is sea lion");
    CHECK(sdfed_folder_class_of("cat", 3, classes, 3) == 2, "cat is Cat");
    CHECK(sdfed_folder_class_of("cats", 4, classes, 3) == -1, "cats is no class");
    CHECK(sdfed_folder_class_of("cat/x.png", 3, classes, 3) == 2, "a path's class folder by its length");
    CHECK(sdfed_folder_name_hidden(".x", 2) && sdfed_folder_name_hidden("__MACOSX", 8) && !sdfed_folder_name_hidden("x", 1),
          "hidden names");
    return check_report("folder-rule");
}
