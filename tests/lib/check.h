/* A minimal assertion harness for the C tests: each CHECK counts as one
 * assertion, failures print where and why, and check_report prints the
 * "name: N passed, M failed" line and gives the exit status.
 *
 * Named cases: a test's main runs each case under a name,
 *     if (check_case("rng")) test_rng();
 * and with TEST_FILTER=word in the environment only the cases whose name
 * contains the word run (every case when it is unset or empty); a failure
 * names its case, and the report says how many cases ran:
 *     TEST_FILTER=rng build/tests/test_partition
 *     test_partition: 120 passed, 0 failed; 1 of 7 cases (TEST_FILTER=rng) */
#ifndef SDFED_TESTS_CHECK_H
#define SDFED_TESTS_CHECK_H

/* the core's assert()s are part of what a test runs (CMakeLists.txt keeps
 * them on in every build type) */
#ifdef NDEBUG
#error "NDEBUG is defined: assert() would check nothing in this tree"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_passed, check_failed;
static int check_cases, check_cases_run;
static const char *check_case_name;       /* the case running, for failures ("" before the first) */
static const char *check_case_names[256]; /* every case's name, listed when the filter matches none */

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (cond) {                                                                                                    \
            check_passed++;                                                                                            \
        } else {                                                                                                       \
            check_failed++;                                                                                            \
            fprintf(stderr, "FAIL %s%s%s%s:%d: (%s) ", check_case_name ? "[" : "",                                     \
                    check_case_name ? check_case_name : "", check_case_name ? "] " : "", __FILE__, __LINE__, #cond);   \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fprintf(stderr, "\n");                                                                                     \
        }                                                                                                              \
    } while (0)

static inline const char *check_filter(void) {
    const char *filter = getenv("TEST_FILTER");
    return filter && *filter ? filter : NULL;
}

/* 1 when the case NAME is to run (its name contains TEST_FILTER, or there is none), 0 when it is left out */
static inline int check_case(const char *name) {
    const char *filter = check_filter();
    if (check_cases < (int)(sizeof check_case_names / sizeof check_case_names[0])) check_case_names[check_cases] = name;
    check_cases++;
    if (filter && !strstr(name, filter)) return 0;
    check_cases_run++;
    check_case_name = name;
    return 1;
}

static inline int check_report(const char *name) {
    const char *filter = check_filter();
    if (check_cases == 0) {
        printf("%s: %d passed, %d failed\n", name, check_passed, check_failed);
    } else if (!filter) {
        printf("%s: %d passed, %d failed; %d of %d cases\n", name, check_passed, check_failed, check_cases_run,
               check_cases);
    } else {
        printf("%s: %d passed, %d failed; %d of %d cases (TEST_FILTER=%s)\n", name, check_passed, check_failed,
               check_cases_run, check_cases, filter);
        if (check_cases_run == 0) {
            printf("%s: no case's name contains \"%s\"; the cases:", name, filter);
            for (int i = 0; i < check_cases && i < (int)(sizeof check_case_names / sizeof check_case_names[0]); i++)
                printf(" %s", check_case_names[i]);
            printf("\n");
        }
    }
    return check_failed == 0 && check_passed > 0 ? 0 : 1;
}

#endif
