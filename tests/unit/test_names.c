/* The name↔enum helper (base/names.h): lookups both ways on a dense and a
 * sparse table, unknown names and values, and the list that error messages
 * quote; and the core's tables through it. */
#include <string.h>

#include "base/dtype.h"
#include "base/names.h"
#include "check.h"
#include "fed/aggregate.h"
#include "method/methods.h"
#include "prompt/projector.h"

enum { RED, GREEN, BLUE, N_COLOURS };
static const sdfed_name colours[] = {
    [RED] = {.name = "red", .value = RED},
    [GREEN] = {.name = "green", .value = GREEN},
    [BLUE] = {.name = "blue", .value = BLUE},
};
static const sdfed_name sparse[] = {{.name = "one", .value = 1}, {.name = "eight", .value = 8}};

int main(void) {
    CHECK(sdfed_name_value(colours, N_COLOURS, "green") == GREEN, "name to value");
    CHECK(!strcmp(sdfed_name_of(colours, N_COLOURS, BLUE), "blue"), "value to name");
    CHECK(sdfed_name_value(colours, N_COLOURS, "mauve") == -1 && sdfed_name_value(colours, N_COLOURS, NULL) == -1,
          "unknown names");
    CHECK(sdfed_name_of(colours, N_COLOURS, -1) == NULL && sdfed_name_of(colours, N_COLOURS, N_COLOURS) == NULL,
          "unknown values");
    CHECK(sdfed_name_value(sparse, 2, "eight") == 8 && !strcmp(sdfed_name_of(sparse, 2, 1), "one") &&
              sdfed_name_of(sparse, 2, 2) == NULL,
          "a sparse table");
    char list[64];
    CHECK(!strcmp(sdfed_name_list(colours, N_COLOURS, list, sizeof list), "one of \"red\", \"green\", \"blue\""),
          "the list: %s", list);
    CHECK(strlen(sdfed_name_list(colours, N_COLOURS, list, 12)) == 11, "a list truncated to its buffer");

    /* the core's tables, both ways */
    for (int m = 0; m < SDFED_METHOD_COUNT; m++)
        CHECK(sdfed_method_from_name(sdfed_method_name(m)) == m, "method %d", m);
    for (int p = 0; p < SDFED_PROJECTOR_COUNT; p++)
        CHECK(sdfed_projector_from_name(sdfed_projector_name(p)) == p, "projector %d", p);
    for (int r = 0; r < SDFED_AGGREGATE_RULE_COUNT; r++)
        CHECK(sdfed_aggregate_rule_from_name(sdfed_aggregate_rule_name(r)) == r, "rule %d", r);
    CHECK(sdfed_type_from_name("q8_0") == SDFED_TYPE_Q8_0 && !strcmp(sdfed_type_name(SDFED_TYPE_F16), "f16"), "dtypes");
    CHECK(sdfed_method_from_name("fedavg") == -1 && sdfed_projector_name(SDFED_PROJECTOR_COUNT) == NULL, "unknowns");
    return check_report("test_names");
}
