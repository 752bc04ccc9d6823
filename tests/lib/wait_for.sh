# Bounded polling for the shell tests, sourced after they define bad():
#   wait_for WHAT SECONDS COMMAND...
# runs COMMAND every 0.1 s until it succeeds, for at most SECONDS; if it never
# does, reports "timed out after SECONDS s waiting for WHAT" through bad and
# returns 1.
wait_for() {
  local what=$1 seconds=$2
  shift 2
  for _ in $(seq 1 $((seconds * 10))); do "$@" && return 0; sleep 0.1; done
  bad "timed out after $seconds s waiting for $what"
  return 1
}
