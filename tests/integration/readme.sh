#!/usr/bin/env bash
# The README's commands, run as written in a fresh copy of the repository
# alone (its tracked files, with no ../shared beside it), so that they cannot
# go stale; and the links of README.md and docs/*.md.
#
# Which commands: every fenced block of README.md opened with ```sh test is
# run, block after block, line by line (a line ending in \ joined to the
# next). A ```sh block without "test" may hold only `make run` and `make
# test`: CI runs `make test` itself (.ci/run), and `make run` is run here
# bounded (below). Any other fence must be ```text (pictures, no commands).
# This test fails on a README that breaks that rule.
#
# What is put in place of what (tests never guess ports, nor run forever):
#  - `make deps build web` (and `make run`'s own prerequisites): this build's
#    binaries copied into the copy's build/ (the build itself is what `make
#    test` has just run);
#  - `make run`: `PORT=0 bash tools/run.sh`, what it runs once those are
#    done: the test waits for the address it prints, fetches the page and
#    /status there, and stops it with TERM (a background job ignores
#    Ctrl-C's INT), which tools/run.sh traps as it traps Ctrl-C: the
#    aggregator must stop (the clients, which may take minutes, are killed);
#  - ~/flowers: a host's messy folder (tests/lib/messy_folder.py: nested
#    class folders, a transparent PNG, a truncated file, files that are not
#    images), a small input;
#  - `sdfed-aggregator ... --port N`: `--port 0 --host 127.0.0.1 --port-file
#    F`, started in the background; starting one stops the one before (and
#    the clients started against it); the page must then be served (over
#    https with the join key, when the line has --cert and --join-key: the
#    copy gets a self-signed fullchain.pem and privkey.pem for localhost,
#    made by openssl, in place of Let's Encrypt's);
#  - localhost:8080 (or any port) in a later line: the port the kernel chose;
#  - a line ending in &: started in the background; when its block ends, two
#    rounds must close on the aggregator running (headless volunteers), and
#    the background lines are then stopped.
# What each command must have done: task init and check name the files not
# used, the aggregator keeps its state in state/flowers, sim writes
# results.json and accuracy.svg and prints its final accuracy.
#
# Also: every path the README names in the repository's folders exists in
# the copy, and it names nothing outside it; every relative link of
# README.md and docs/*.md (and its #anchor, as GitHub makes one from a
# heading) resolves; the option lists docs/aggregator.md and docs/commands.md
# copy from `--help` are the binaries' own; the README's table of the
# methods holds docs/results.md's numbers.
#   readme.sh SOURCE_DIR BUILD_DIR EMSCRIPTEN_BUILD_DIR WORK_DIR
set -u
source_dir=$1 build=$2 em=$3 work=$4
python=/usr/bin/python3
. "$source_dir/tools/port_file.sh"
rm -rf "$work" && mkdir -p "$work/copy"
. "$source_dir/tests/lib/tally.sh" readme
export SDFED_CACHE="$work/cache"
repo="$work/copy/sdfed" # nothing beside it: ../shared does not exist here
pids=() # everything started in the background, stopped at the end
stop() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap stop EXIT

# --- a fresh copy: the repository's tracked files only, and this build's binaries
mkdir -p "$repo"
(cd "$source_dir" && git ls-files -z | xargs -0 cp --parents -t "$repo") || bad "copying the repository's files"
[ ! -e "$work/copy/shared" ] && ok || bad "../shared exists beside the copy"
mkdir -p "$repo/build/targets/emscripten/wasm-client"
cp "$build/sdfed" "$build/sdfed-aggregator" "$build/sdfed-client" "$repo/build/"
cp "$em"/wasm-client/sdfed-wasm* "$repo/build/targets/emscripten/wasm-client/" 2>/dev/null ||
  echo "note: no browser build in $em (the page's wasm is not served; the federation runs all the same)"
readme=$repo/README.md

# --- the paths the README names exist in the copy; it names none outside it
missing=$(grep -oE '(^|[ `(])(models|tasks|docs|tools|web|tests)/[A-Za-z0-9_.*/-]*[A-Za-z0-9_*]' "$readme" |
  sed -E 's/^[ `(]//' | sort -u | while read -r p; do
    case $p in models/random-* | */node_modules*) continue ;; esac # what make random-model and npm write
    compgen -G "$repo/$p" >/dev/null || echo "$p"
  done)
[ -z "$missing" ] && ok || bad "the README names paths the repository does not have: $missing"
! grep -q '\.\./' "$readme" && ok || bad "the README names a path outside the repository: $(grep '\.\./' "$readme")"

# --- every relative link of README.md and docs/*.md resolves, anchors included
links=$("$python" - "$repo" <<'PY'
import os, re, sys
root = sys.argv[1]
def slug(heading):  # GitHub's: lower case, punctuation dropped, spaces to hyphens
    return re.sub(r'[^\w\- ]', '', heading.strip().lower()).replace(' ', '-')
def anchors(path):
    seen, out = {}, set()
    fenced = False
    for line in open(path, encoding='utf-8'):
        if line.startswith('```'): fenced = not fenced
        m = None if fenced else re.match(r'#{1,6} (.*)', line)
        if m:
            s = slug(m.group(1)); n = seen.get(s, 0); seen[s] = n + 1
            out.add(s if n == 0 else f'{s}-{n}')
    return out
pages = [os.path.join(root, 'README.md')] + sorted(
    os.path.join(root, 'docs', f) for f in os.listdir(os.path.join(root, 'docs')) if f.endswith('.md'))
for page in pages:
    text = re.sub(r'```.*?```', '', open(page, encoding='utf-8').read(), flags=re.S)
    for target in re.findall(r'\]\(([^)\s]+)\)', text):
        if re.match(r'[a-z]+:', target): continue  # https:, mailto:
        path, _, anchor = target.partition('#')
        file = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        where = os.path.relpath(page, root)
        if not os.path.exists(file): print(f'{where}: {target} (no such file)')
        elif anchor and file.endswith('.md') and anchor not in anchors(file): print(f'{where}: {target} (no such heading)')
PY
)
[ -z "$links" ] && ok || bad "links that do not resolve: $links"

# --- the README's table of the methods is docs/results.md's (the paper protocol's final accuracies)
table=$("$python" - "$repo" <<'PY'
import re, sys
root = sys.argv[1]
readme = open(f'{root}/README.md', encoding='utf-8').read().split('\n')
results = open(f'{root}/docs/results.md', encoding='utf-8').read()
paper = results[results.index('## The paper protocol'):results.index('## The quick protocol')]
sections = {s.split(':')[0].strip(): s for s in re.split(r'\n### ', paper)[1:]}
where = {'pathological': 'pathological', 'Dirichlet(0.3)': 'Dirichlet', '4 domains': 'domains', 'hetero S_l': 'hetero'}
head = next(i for i, l in enumerate(readme) if l.startswith('| setting | zero-shot |'))
methods = [m.strip().lower().replace('-', '') for m in readme[head].strip('|').split('|')[1:]]
for row in readme[head + 2:]:
    if not row.startswith('|'): break
    cells = [c.strip().strip('*') for c in row.strip('|').split('|')]
    section = sections.get(where.get(cells[0], ''), '')
    for method, value in zip(methods, cells[1:]):
        if not re.search(rf'^\| {method} \| [^|]* \| {re.escape(value)} ±', section, re.M):
            print(f'{cells[0]}, {method}: {value}')
PY
)
[ -z "$table" ] && ok || bad "the README's table of the methods is not docs/results.md's: $table"

# --- the option lists the docs copy from --help are the binaries' own
help_block() { # help_block FILE MARKER: the fenced block after the line holding MARKER
  awk -v m="$2" 'index($0, m) { on = 1; next } on && /^```/ { if (in_block) exit; in_block = 1; next } in_block' "$1"
}
diff <(help_block "$repo/docs/aggregator.md" "build/sdfed-aggregator --help") <("$repo/build/sdfed-aggregator" --help) \
  >"$work/help.diff" && ok || bad "docs/aggregator.md's options are not sdfed-aggregator --help's: $(cat "$work/help.diff")"
diff <(help_block "$repo/docs/commands.md" "build/sdfed --help") \
  <("$repo/build/sdfed" --help | sed -n 's/^  sdfed /sdfed /p') >"$work/help.diff" && ok ||
  bad "docs/commands.md's commands are not sdfed --help's: $(cat "$work/help.diff")"

# --- the README's fences: ```sh test (run below), ```sh with make run / make test only, ```text
fences=$(awk '/^```/ { if (on) { on = 0; next } on = 1; info = substr($0, 4); kind = info
                       if (info == "sh test" || info == "text") kind = "ok"; else if (info != "sh") kind = "bad " info; next }
              on && kind == "sh" && $0 !~ /^make (run|test)( |$)/ { print "an unmarked command: " $0 }
              on && kind ~ /^bad/ { print "a fence that is neither sh nor text: " kind; kind = "reported" }' "$readme")
[ -z "$fences" ] && ok || bad "the README's fences: $fences"
grep -q '^make run ' "$readme" && ok || bad "the README has no make run"

# --- make run, bounded: the page and /status on the port it prints, then TERM
PORT=0 bash "$repo/tools/run.sh" >"$work/make-run.log" 2>&1 & # it goes to its repository itself
run_pid=$!
pids+=($run_pid)
for _ in $(seq 1 600); do
  run_port=$(sed -n 's|.*Volunteers join at *http://localhost:\([0-9]*\)/.*|\1|p' "$work/make-run.log")
  [ -n "$run_port" ] && break
  kill -0 $run_pid 2>/dev/null || break
  sleep 0.05
done
if [ -n "$run_port" ]; then
  curl -sf "http://127.0.0.1:$run_port/" | grep -q "<title>sdfed" && ok || bad "make run: the page is not served"
  curl -sf "http://127.0.0.1:$run_port/status" | grep -q '"rounds_closed"' && ok || bad "make run: no /status"
else
  bad "make run printed no address: $(tail -n 5 "$work/make-run.log")"
fi
kill -TERM $run_pid 2>/dev/null
# it stops the aggregator at once; its headless clients may be computing their data's features, which they finish
# before they stop (a signal cuts short only their rounds' work), minutes under ASan: the test kills them
for _ in $(seq 1 200); do
  grep -q "state kept in state/fmnist-pathological" "$work/make-run.log" && ! curl -s "http://127.0.0.1:$run_port/" >/dev/null &&
    break
  sleep 0.05
done
grep -q "state kept in state/fmnist-pathological" "$work/make-run.log" && ! curl -s "http://127.0.0.1:$run_port/" >/dev/null &&
  ok || bad "make run did not stop as Ctrl-C stops it: $(tail -n 3 "$work/make-run.log")"
for p in $(ps -o pid= --ppid $run_pid); do kill -KILL "$p" 2>/dev/null; done
wait $run_pid 2>/dev/null

# --- the marked blocks, as written
blocks=$(awk '/^```sh test$/ { on = 1; n++; next } /^```/ { on = 0; next } on { print n "\t" $0 }' "$readme" |
  awk -F '\t' '{ line = $2; if (held != "") line = held " " line; sub(/^ +/, "", $2)
                 if (line ~ /\\$/) { sub(/ *\\$/, "", line); held = line; next } held = ""; print $1 "\t" line }')
[ "$(grep -c . <<<"$blocks")" -ge 4 ] && grep -q $'^1\tmake deps build web' <<<"$blocks" && ok ||
  bad "the README's first marked block is not the host's: $blocks"
"$python" "$source_dir/tests/lib/messy_folder.py" "$work/flowers" >/dev/null || bad "generating the folder"
if grep -q 'fullchain.pem' <<<"$blocks"; then
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$repo/privkey.pem" -out "$repo/fullchain.pem" -days 2 \
    -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" 2>/dev/null || bad "making a certificate"
fi
status() { curl -sk "$scheme://127.0.0.1:$port/status$query"; }
closed() { status | "$python" -c 'import json, sys; print(json.load(sys.stdin).get("rounds_closed", 0))' 2>/dev/null; }
aggregator= port= scheme=http query= background=() rounds_before=0
end_block() { # the block's background lines (headless volunteers): rounds close, then they stop
  [ ${#background[@]} -eq 0 ] && return
  local n=
  for _ in $(seq 1 600); do
    n=$(closed)
    [ "${n:-0}" -ge $((rounds_before + 2)) ] && break
    sleep 0.1
  done
  [ "${n:-0}" -ge $((rounds_before + 2)) ] && ok ||
    bad "block $block: no rounds closed with its volunteers: $(status), $(tail -n 3 "$work/aggregator.log")"
  for p in "${background[@]}"; do kill "$p" 2>/dev/null; done
  background=()
}
block=
while IFS=$'\t' read -r n line; do
  [ "$n" != "$block" ] && { end_block; block=$n; }
  command=$(sed -E 's/[[:space:]]+#.*$//' <<<"$line")
  [ -z "${command// /}" ] && continue
  command=${command//\~\/flowers/$work/flowers}
  [ -n "$port" ] && command=$(sed -E "s/localhost:[0-9]+/127.0.0.1:$port/g" <<<"$command")
  echo "\$ $command"
  case $command in
    "make deps build web"*) continue ;; # this build's binaries, copied in above
    *sdfed-aggregator*)
      if [ -n "$aggregator" ]; then # one at a time on one state
        end_block
        kill "$aggregator" 2>/dev/null
        wait "$aggregator" 2>/dev/null
      fi
      rm -f "$work/port"
      command=$(sed -E "s/--port [0-9]+/--port 0 --host 127.0.0.1 --port-file ${work//\//\\/}\/port/" <<<"$command")
      (cd "$repo" && exec bash -c "exec $command") 2>>"$work/aggregator.log" &
      aggregator=$!
      pids+=($!)
      port=$(port_file "$work/port" "$!") || bad "the aggregator did not start: $(tail -n 3 "$work/aggregator.log")"
      scheme=http query=
      case $command in *--cert*) scheme=https ;; esac
      case $command in *--join-key*) query="?key=$(cat "$repo/join-key.txt")" ;; esac
      curl -sfk "$scheme://127.0.0.1:$port/$query" | grep -q "<title>sdfed" && ok || bad "the page is not served: $command"
      if [ -n "$query" ]; then
        code=$(curl -sk -o /dev/null -w '%{http_code}' "$scheme://127.0.0.1:$port/status")
        [ "$code" = 401 ] && ok || bad "/status without the join key answered $code"
        status | grep -q '"rounds_closed"' && ok || bad "/status with the join key: $(status)"
      fi
      rounds_before=$(closed)
      ;;
    *"&")
      (cd "$repo" && exec bash -c "exec ${command%&}") >>"$work/background.log" 2>&1 &
      background+=($!)
      pids+=($!)
      ;;
    *)
      (cd "$repo" && bash -c "$command") >"$work/step.log" 2>&1 && ok ||
        bad "'$command' failed: $(tail -n 5 "$work/step.log")"
      cat "$work/step.log" >>"$work/steps.log"
      case $command in
        *"sdfed sim "*)
          out=$(sed -nE 's/.*--out ([^ ]+).*/\1/p' <<<"$command")
          [ -s "$repo/$out/results.json" ] && [ -s "$repo/$out/accuracy.svg" ] &&
            grep -q "^final accuracy" "$work/step.log" && ok || bad "sim wrote no results in $out"
          ;;
      esac
      ;;
  esac
done <<<"$blocks"
end_block
grep -q "^3 images not used:" "$work/steps.log" && grep -q "buildings/tall/broken.png: invalid PNG" "$work/steps.log" &&
  ok || bad "the host was not told of the files not used: $(cat "$work/steps.log")"
[ -f "$repo/state/flowers/aggregator.sqlite" ] && ok || bad "no state in state/flowers (its parent made)"

summary
[ "$failed" -eq 0 ]
