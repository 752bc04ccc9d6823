#!/usr/bin/env bash
# The README's "Run your own federation" section, run as written in a fresh
# copy of the repository alone (its tracked files, with no ../shared beside
# it), on a host's messy folder (tests/lib/messy_folder.py: nested class
# folders, a transparent PNG, a truncated file, files that are no images):
#  - every path the README names in the repository's folders exists in the
#    copy, and the section names nothing outside it;
#  - the section's first code block, line by line, with the folder in place
#    of ~/flowers and a port the kernel chooses in place of 8080 (tests never
#    guess ports): `make deps build web` is this build's binaries copied into
#    the copy's build/ (the build itself is what `make test` has just run);
#    the rest as written. The federation it starts runs: two headless
#    clients join, as volunteers would, and rounds close.
#   readme_host.sh SOURCE_DIR BUILD_DIR EMSCRIPTEN_BUILD_DIR WORK_DIR
set -u
source_dir=$1 build=$2 em=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
python=/usr/bin/python3
. "$source_dir/tools/port_file.sh"
rm -rf "$work" && mkdir -p "$work/copy"
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
export SDFED_CACHE="$work/cache"
repo="$work/copy/sdfed" # nothing beside it: ../shared does not exist here
pids=()
stop() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap stop EXIT

# --- a fresh copy: the repository's tracked files only
mkdir -p "$repo"
(cd "$source_dir" && git ls-files -z | xargs -0 cp --parents -t "$repo") || bad "copying the repository's files"
[ ! -e "$work/copy/shared" ] && ok || bad "../shared exists beside the copy"

# --- the paths the README names exist in the copy; the section names none outside it
section=$(sed -n '/^## Run your own federation/,/^## /p' "$repo/README.md")
missing=$(grep -oE '(^|[ `(])(models|tasks|docs|tools|web|tests)/[A-Za-z0-9_.*/-]*[A-Za-z0-9_*]' "$repo/README.md" |
  sed -E 's/^[ `(]//' | sort -u | while read -r p; do
    case $p in models/random-* | */node_modules*) continue ;; esac # what make random-model and npm write
    compgen -G "$repo/$p" >/dev/null || echo "$p"
  done)
[ -z "$missing" ] && ok || bad "the README names paths the repository does not have: $missing"
! grep -q '\.\./' <<<"$section" && ok || bad "the section names a path outside the repository: $(grep '\.\./' <<<"$section")"

# --- its first code block, as written
block=$(awk '/^```sh$/ { if (on) exit; on = 1; next } /^```$/ { if (on) exit } on' <<<"$section")
[ "$(wc -l <<<"$block")" -ge 4 ] && grep -q '^make deps build web' <<<"$block" && ok ||
  bad "the section's first code block is not what this test runs: $block"
"$python" "$source_dir/tests/lib/messy_folder.py" "$work/flowers" >/dev/null || bad "generating the folder"
mkdir -p "$repo/build/targets/emscripten/wasm-client"
cp "$build/sdfed" "$build/sdfed-aggregator" "$build/sdfed-client" "$repo/build/"
cp "$em"/wasm-client/sdfed-wasm* "$repo/build/targets/emscripten/wasm-client/" 2>/dev/null ||
  echo "note: no browser build in $em (the page's wasm is not served; the federation runs all the same)"
port=
while IFS= read -r line; do
  command=${line%%#*} # the comment after a command
  [ -z "${command// /}" ] && continue
  command=${command//\~\/flowers/$work/flowers}
  echo "\$ $command"
  case $command in
    "make deps build web"*) continue ;; # this build's binaries, copied in above
    *sdfed-aggregator*)
      command=${command/--port 8080/--port 0 --host 127.0.0.1 --port-file $work/port}
      (cd "$repo" && exec bash -c "exec $command") 2>"$work/aggregator.log" &
      pids+=($!)
      port=$(port_file "$work/port" "$!") || bad "the aggregator did not start: $(tail -n 3 "$work/aggregator.log")"
      ;;
    *)
      (cd "$repo" && bash -c "$command") >"$work/step.log" 2>&1 && ok ||
        bad "'$command' failed: $(tail -n 5 "$work/step.log")"
      cat "$work/step.log" >>"$work/steps.log"
      ;;
  esac
done <<<"$block"
grep -q "^3 images not used:" "$work/steps.log" && grep -q "buildings/tall/broken.png: invalid PNG" "$work/steps.log" &&
  ok || bad "the host was not told of the files not used: $(cat "$work/steps.log")"
[ -f "$repo/state/flowers/aggregator.sqlite" ] && ok || bad "no state in state/flowers (its parent made)"

# --- a running federation: two volunteers (headless clients on the host's shards) join and rounds close
status() { curl -s "http://127.0.0.1:$port/status"; }
if [ -n "$port" ]; then
  for k in 0 1; do
    "$repo/build/sdfed-client" --server "ws://127.0.0.1:$port" --client-index $k \
      --host-task "$repo/flowers.json" --token-file "$work/token$k" >"$work/client$k.log" 2>&1 &
    pids+=($!)
  done
  for _ in $(seq 1 600); do
    closed=$(status | "$python" -c 'import json, sys; print(json.load(sys.stdin).get("rounds_closed", 0))' 2>/dev/null)
    [ "${closed:-0}" -ge 2 ] && break
    sleep 0.1
  done
  [ "${closed:-0}" -ge 2 ] && ok || bad "no rounds closed with 2 volunteers: $(status), $(tail -n 3 "$work/aggregator.log")"
  curl -sf "http://127.0.0.1:$port/" | grep -q "<title>sdfed" && ok || bad "the page is not served"
fi

echo "readme-host: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
