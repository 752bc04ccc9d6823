/* Files written whole (native/paths.h) where the path is not a plain file:
 *  - a regular file: replaced by the new text, no temporary file left;
 *  - a symbolic link to a file (or to a link to it): the file at the end
 *    gets the text and the links stay links (the rename had put a regular
 *    file in the link's place and left the file it named as it was);
 *  - a pipe (as /dev/null or /dev/stdout's terminal are no regular files):
 *    written in place and still a pipe (`sdfed task init DIR --out
 *    /dev/null` had replaced the device with a regular file);
 *  - a folder: an error that says so, and the folder as it was.
 * Usage: test_whole_file DIR (made if missing; emptied of what it writes) */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "native/paths.h"

#define TEXT "{\"name\": \"whole\"}\n"

/* Whether path holds exactly text. */
static int holds(const char *path, const char *text) {
    char buf[256] = {0};
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    return f && n == strlen(text) && memcmp(buf, text, n) == 0;
}

/* How many entries of dir end in ".tmp". */
static int temporaries(const char *dir) {
    int n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        n += len > 4 && strcmp(e->d_name + len - 4, ".tmp") == 0;
    }
    if (d) closedir(d);
    return n;
}

static void test_regular_and_link(const char *dir) {
    char file[1024], link[1024];
    sdfed_error err = {0};
    snprintf(file, sizeof file, "%s/task.json", dir);
    snprintf(link, sizeof link, "%s/link.json", dir);
    remove(file);
    remove(link);
    CHECK(native_write_file(file, "old\n", &err) == SDFED_OK && holds(file, "old\n"), "a new file: %s", err.message);
    CHECK(native_write_file(file, TEXT, &err) == SDFED_OK && holds(file, TEXT), "a file replaced: %s", err.message);
    CHECK(symlink("task.json", link) == 0, "making %s", link);
    CHECK(native_write_file(link, "new\n", &err) == SDFED_OK, "through a link: %s", err.message);
    struct stat st;
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode), "%s is still a link", link);
    CHECK(holds(file, "new\n") && holds(link, "new\n"), "the file the link names holds the new text");
    char chain[1024];
    snprintf(chain, sizeof chain, "%s/chain.json", dir);
    remove(chain);
    CHECK(symlink("link.json", chain) == 0, "making %s", chain);
    CHECK(native_write_file(chain, TEXT, &err) == SDFED_OK, "through a link to a link: %s", err.message);
    CHECK(lstat(chain, &st) == 0 && S_ISLNK(st.st_mode) && lstat(link, &st) == 0 && S_ISLNK(st.st_mode) &&
              holds(file, TEXT),
          "both links stay links, and the file at their end holds the text");
    CHECK(temporaries(dir) == 0, "no temporary file left");
    remove(file);
    remove(link);
    remove(chain);
}

static void test_pipe(const char *dir) {
    char fifo[1024];
    sdfed_error err = {0};
    snprintf(fifo, sizeof fifo, "%s/pipe", dir);
    remove(fifo);
    CHECK(mkfifo(fifo, 0600) == 0, "making %s", fifo);
    int reader = open(fifo, O_RDONLY | O_NONBLOCK); /* so that opening it to write does not wait */
    CHECK(reader >= 0, "opening %s to read", fifo);
    CHECK(native_write_file(fifo, TEXT, &err) == SDFED_OK, "a pipe: %s", err.message);
    char buf[256] = {0};
    ssize_t n = reader >= 0 ? read(reader, buf, sizeof buf - 1) : -1;
    CHECK(n == (ssize_t)strlen(TEXT) && strcmp(buf, TEXT) == 0, "the pipe carried the text (%zd bytes)", n);
    if (reader >= 0) close(reader);
    struct stat st;
    CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode), "%s is still a pipe", fifo);
    CHECK(temporaries(dir) == 0, "no temporary file left");
    remove(fifo);
}

static void test_folder(const char *dir) {
    char sub[1024];
    sdfed_error err = {0};
    snprintf(sub, sizeof sub, "%s/folder.json", dir);
    rmdir(sub);
    CHECK(mkdir(sub, 0755) == 0, "making %s", sub);
    CHECK(native_write_file(sub, TEXT, &err) == SDFED_ERR_IO && strstr(err.message, "is a folder"),
          "a folder is refused as such: %s", err.message);
    struct stat st;
    CHECK(stat(sub, &st) == 0 && S_ISDIR(st.st_mode) && temporaries(dir) == 0, "the folder is as it was");
    rmdir(sub);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    sdfed_error err = {0};
    CHECK(native_make_dirs(argv[1], &err) == SDFED_OK, "%s", err.message);
    test_regular_and_link(argv[1]);
    test_pipe(argv[1]);
    test_folder(argv[1]);
    return check_report("test_whole_file");
}
