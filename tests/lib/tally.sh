# The count of an integration script's checks, sourced with the name its
# summary line carries (`. tests/lib/tally.sh NAME`): ok after a check that
# held, bad MESSAGE after one that failed (printed as "FAIL: MESSAGE"), and
# summary at the end, "NAME: P passed, F failed", the line ctest's logs show
# and the script's last line follows with [ "$failed" -eq 0 ].
tally_name=$1
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
summary() { echo "$tally_name: $passed passed, $failed failed"; }
