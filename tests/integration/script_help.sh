#!/usr/bin/env bash
# --help on every command: each program of the build folder and each script
# a user runs (tools/**/*.sh but those that say they are sourced,
# tools/**/*.py, tools/**/*.mjs that read their arguments), given --help,
# must exit 0 at once, print what it does (a program and a Python script
# "usage: NAME ...", a shell or Node script its first comment, whose first
# line comes first) and start nothing: a script that ignored --help ran its
# job (make run's aggregator, a PostgreSQL cluster, a benchmark). Each runs
# in a process group of its own, killed after it (after 20 s at most). Run by
# tests/browser/run.sh, after the npm install that the Node scripts' imports
# need.
#   script_help.sh WORK_DIR BUILD_DIR
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$1 build=$2
mkdir -p "$work"
passed=0 failed=0

# help_of OUT COMMAND...: COMMAND --help's status (124: still running after 20 s)
help_of() {
  local out=$1 pid status
  shift
  setsid "$@" --help </dev/null >"$out" 2>&1 &
  pid=$!
  for ((tick = 0; tick < 200; tick++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    status=124
  else
    wait "$pid"
    status=$?
  fi
  kill -KILL -- -"$pid" 2>/dev/null # whatever it started
  wait "$pid" 2>/dev/null
  return "$status"
}

# check N FILE START COMMAND...: --help exits 0, its first line starting
# with START; the verdict in $work/verdict.N ("ok", or what failed)
check() {
  local n=$1 file=$2 first=$3 status line
  shift 3
  help_of "$work/out.$n" "$@"
  status=$?
  line=$(head -n 1 "$work/out.$n")
  if [ "$status" -eq 0 ] && [ -n "$first" ] && [ "${line:0:${#first}}" = "$first" ]; then
    echo ok >"$work/verdict.$n"
  else
    { echo "FAIL: $file --help: status $status, want 0 and a first line starting \"$first\":"
      head -n 5 "$work/out.$n" | sed 's/^/  | /'; } >"$work/verdict.$n"
  fi
}

# the commands, each "FILE START COMMAND..." (fields apart by the unit separator)
commands=()
add() {
  local IFS=$'\x1f'
  commands+=("$*")
}
while IFS= read -r f; do
  add "$f" "usage: $(basename "$f") " "$f"
done < <(find "$build" -maxdepth 1 -type f -executable | sort)
while IFS= read -r f; do
  head -n 12 "$f" | grep -qiE 'source it|sourced' && continue
  add "$f" "$(sed -n '2s/^# \{0,1\}//p' "$f")" bash "$f"
done < <(find "$root/tools" -name node_modules -prune -o -name '*.sh' -print | sort)
while IFS= read -r f; do
  add "$f" "usage: $(basename "$f") " /usr/bin/python3 "$f"
done < <(find "$root/tools" -name node_modules -prune -o -name '*.py' -print | sort)
while IFS= read -r f; do
  grep -q 'process\.argv' "$f" && [ "$f" != "$root/tools/help.mjs" ] || continue
  add "$f" "$(sed -n '1s/^\/\/ \{0,1\}//p' "$f")" node "$f"
done < <(find "$root/tools" -name node_modules -prune -o -name '*.mjs' -print | sort)

# two at a time (a Python script may take seconds to import torch before its argparse answers)
rm -f "$work"/verdict.*
running=0
for n in "${!commands[@]}"; do
  IFS=$'\x1f' read -r -a fields <<<"${commands[$n]}"
  check "$n" "${fields[@]}" &
  running=$((running + 1))
  if [ "$running" -ge 2 ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait
for n in "${!commands[@]}"; do
  if [ "$(cat "$work/verdict.$n" 2>/dev/null)" = ok ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    cat "$work/verdict.$n" 2>/dev/null || echo "FAIL: ${commands[$n]%%$'\x1f'*}: no verdict"
  fi
done
echo "script help: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
