#!/usr/bin/env bash
# Tests tests/layering.sh itself on temporary copies of shared/: the copy as
# it is passes; with one bad include added (upward, bare, unknown folder,
# missing header) it fails and names that file, line and include.
set -u
here=$(cd "$(dirname "$0")" && pwd)
checker="$here/layering.sh"
src="$here/../shared"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
ok() {
  echo "ok: $1"
  passed=$((passed + 1))
}
not_ok() {
  echo "NOT OK: $1"
  failed=$((failed + 1))
}

fresh() { # a new copy of the core in $work/shared
  rm -rf "$work/shared"
  cp -R "$src" "$work/shared"
}

# expect_caught NAME FILE LINE INCLUDE: adds INCLUDE as line LINE of FILE in a
# fresh copy; the checker must fail and print FILE:LINE and the include
expect_caught() {
  local name=$1 file=$2 line=$3 include=$4 out rc
  fresh
  sed -i "${line}i $include" "$work/shared/$file"
  out=$(bash "$checker" "$work/shared" 2>&1)
  rc=$?
  if [ "$rc" -ne 1 ]; then
    not_ok "$name: exit status $rc, expected 1; output: $out"
  elif ! grep -qF "$work/shared/$file:$line: $include" <<<"$out"; then
    not_ok "$name: the output does not name $file:$line: $include; output: $out"
  elif [ "$(grep -c '^/' <<<"$out")" -ne 1 ]; then
    not_ok "$name: expected exactly one offending line; output: $out"
  else
    ok "$name (${out%%$'\n'*})"
  fi
}

fresh
if out=$(bash "$checker" "$work/shared" 2>&1); then
  ok "the unchanged copy passes"
else
  not_ok "the unchanged copy fails: $out"
fi

expect_caught "upward include" base/arena.c 3 '#include "fed/task.h"'
expect_caught "upward include from a header" clip/layers.h 9 '#include "prompt/losses.h"'
expect_caught "bare include" prompt/sgd.c 3 '#include "arena.h"'
expect_caught "unknown layer" method/fedot.c 3 '#include "tools/cli.h"'
expect_caught "missing core header" text/tokenizer.c 3 '#include "text/nothing.h"'
expect_caught "core header in angle brackets" kernels/kernels.c 3 '#include <clip/clip_model.h>'

# within a layer and downwards are fine
fresh
sed -i '3i #include "base/status.h"' "$work/shared/fed/task.c"
sed -i '3i #include "fed/protocol.h"' "$work/shared/fed/aggregate.c"
if out=$(bash "$checker" "$work/shared" 2>&1); then
  ok "includes down and within a layer pass"
else
  not_ok "includes down and within a layer fail: $out"
fi

# a file outside the layer folders
fresh
printf '/* stray */\n' >"$work/shared/stray.c"
out=$(bash "$checker" "$work/shared" 2>&1)
if [ $? -eq 1 ] && grep -qF "$work/shared/stray.c:1:" <<<"$out"; then
  ok "a file outside the layer folders is reported"
else
  not_ok "a file outside the layer folders: $out"
fi

echo "layering_test: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
