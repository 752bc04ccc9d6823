/* Pace steering's rule (fed/pace.h) as pure decisions: two misses cost
 * nothing, the third sits out one round, each further miss doubles the
 * rounds out up to the cap, a report forgets them, and a client that never
 * missed is never out. */
#include "check.h"
#include "fed/pace.h"

static void test_misses(void) {
    sdfed_pace p = {0};
    CHECK(sdfed_pace_rounds_out(&p, 0) == 0, "a new client is never out");
    sdfed_pace_missed(&p, 4);
    sdfed_pace_missed(&p, 5);
    CHECK(sdfed_pace_rounds_out(&p, 6) == 0, "two misses in a row: still sampled");
    sdfed_pace_missed(&p, 6);
    CHECK(sdfed_pace_rounds_out(&p, 7) == 1 && sdfed_pace_rounds_out(&p, 8) == 0,
          "the third miss in a row (round 6): round 7 sat out, back for round 8");
    sdfed_pace_missed(&p, 8);
    CHECK(sdfed_pace_rounds_out(&p, 9) == 2 && sdfed_pace_rounds_out(&p, 10) == 1 && sdfed_pace_rounds_out(&p, 11) == 0,
          "a fourth miss (round 8): rounds 9 and 10 sat out");
    sdfed_pace_missed(&p, 11);
    CHECK(sdfed_pace_rounds_out(&p, 12) == 4 && sdfed_pace_rounds_out(&p, 16) == 0, "a fifth: 4 rounds out");
    for (int r = 16; r < 40; r++) sdfed_pace_missed(&p, r);
    CHECK(sdfed_pace_rounds_out(&p, 40) == SDFED_PACE_MOST_OUT, "the rounds out stop doubling at %d",
          SDFED_PACE_MOST_OUT);
    sdfed_pace_reported(&p);
    CHECK(sdfed_pace_rounds_out(&p, 40) == 0 && p.misses == 0, "an update reported forgets the misses");
    sdfed_pace_missed(&p, 50);
    sdfed_pace_missed(&p, 51);
    CHECK(sdfed_pace_rounds_out(&p, 52) == 0, "after a report, two misses cost nothing again");
}

static void test_interrupted(void) {
    sdfed_pace p = {0};
    sdfed_pace_missed(&p, 0);
    sdfed_pace_missed(&p, 1);
    sdfed_pace_reported(&p);
    sdfed_pace_missed(&p, 3);
    CHECK(sdfed_pace_rounds_out(&p, 4) == 0, "misses not in a row (a report between) do not add up");
}

int main(void) {
    test_misses();
    test_interrupted();
    return check_report("test_pace");
}
