/* The reconnection schedule (fed/backoff.h) as a pure function and as a
 * client's state: windows double from 1 s to the 30 s cap, every delay lies
 * in [floor, floor + window), a server's retry_after is a floor used once,
 * a success starts over, the same seed gives the same delays, and 10,000
 * clients who lost the server at once come back spread over the window
 * (no 100 ms slot holds more than twice its share), also behind a floor. */
#include <string.h>

#include "check.h"
#include "fed/backoff.h"

static void test_windows(void) {
    static const int64_t want[] = {1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000};
    int ok = 1;
    for (int a = 0; a < 8; a++) ok &= sdfed_backoff_window_ms(a) == want[a];
    CHECK(ok, "windows 1, 2, 4, 8, 16 s, then the 30 s cap");
    CHECK(sdfed_backoff_window_ms(1000000) == SDFED_BACKOFF_CAP_MS, "a huge attempt count stays at the cap");
    CHECK(sdfed_backoff_delay_ms(0, 0.0, 0) == 0 && sdfed_backoff_delay_ms(0, 0.999999, 0) == 999 &&
              sdfed_backoff_delay_ms(3, 0.5, 0) == 4000 && sdfed_backoff_delay_ms(9, 0.999999, 0) == 29999,
          "delay = floor(u x window): from 0 to just under the window");
    CHECK(sdfed_backoff_delay_ms(2, 0.25, 5000) == 6000 && sdfed_backoff_delay_ms(0, 0.0, 5000) == 5000,
          "a server's retry_after is a floor under the jittered delay");
    CHECK(sdfed_backoff_delay_ms(1, 0.5, -3) == 1000, "a negative floor counts as none");
}

static void test_client(void) {
    sdfed_backoff b, again;
    sdfed_backoff_init(&b, 7);
    sdfed_backoff_init(&again, 7);
    int in_window = 1, same = 1;
    for (int a = 0; a < 12; a++) {
        int64_t d = sdfed_backoff_next_ms(&b);
        in_window &= d >= 0 && d < sdfed_backoff_window_ms(a);
        same &= d == sdfed_backoff_next_ms(&again);
    }
    CHECK(in_window, "each try's delay lies in its window");
    CHECK(same, "the same seed gives the same delays");
    sdfed_backoff_server_asked(&b, 4000);
    sdfed_backoff_server_asked(&b, 2500);
    int64_t floored = sdfed_backoff_next_ms(&b), after = sdfed_backoff_next_ms(&b);
    CHECK(floored >= 4000 && floored < 4000 + SDFED_BACKOFF_CAP_MS, "the largest retry_after asked is the floor (%lld)",
          (long long)floored);
    CHECK(after < SDFED_BACKOFF_CAP_MS, "the floor is used once");
    sdfed_backoff_reset(&b);
    CHECK(b.attempt == 0 && sdfed_backoff_next_ms(&b) < SDFED_BACKOFF_BASE_MS,
          "a success starts from the first window");
}

/* delays of 10,000 clients (seeds 0..9999) at one attempt behind one floor:
 * every 100 ms slot of the window holds at most twice its share, and the
 * first and last slots are used */
static void test_spread(int attempt, int64_t floor_ms) {
    enum { CLIENTS = 10000 };
    int64_t window = sdfed_backoff_window_ms(attempt);
    int slots = (int)(window / 100), count[300] = {0}, bounded = 1;
    for (int c = 0; c < CLIENTS; c++) {
        sdfed_backoff b;
        sdfed_backoff_init(&b, (uint64_t)c);
        for (int a = 0; a < attempt; a++) sdfed_backoff_next_ms(&b);
        sdfed_backoff_server_asked(&b, floor_ms);
        int64_t d = sdfed_backoff_next_ms(&b) - floor_ms;
        bounded &= d >= 0 && d < window;
        if (d >= 0 && d < window) count[d / 100]++;
    }
    int most = 0;
    for (int s = 0; s < slots; s++) most = count[s] > most ? count[s] : most;
    CHECK(bounded, "attempt %d, floor %lld: every delay in [floor, floor + window)", attempt, (long long)floor_ms);
    CHECK(most <= 2 * CLIENTS / slots && count[0] > 0 && count[slots - 1] > 0,
          "attempt %d, floor %lld: 10,000 clients spread over %lld ms (busiest 100 ms: %d, fair share %d)", attempt,
          (long long)floor_ms, (long long)window, most, CLIENTS / slots);
}

int main(void) {
    test_windows();
    test_client();
    test_spread(0, 0);
    test_spread(3, 0);
    test_spread(6, 5000);
    return check_report("test_backoff");
}
