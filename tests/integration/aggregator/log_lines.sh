#!/usr/bin/env bash
# The aggregator's log is JSON, one object a line, whatever the text it
# carries: a task and a state in a folder whose name holds a quote, a
# backslash and a tab, which the "listening" line names. Every line of
# stderr must parse, each with its "ts" and "event", and the listening
# line must give the paths back as they are.
#   log_lines.sh BUILD_DIR MODEL.gguf WORK_DIR
set -u
build=$1 model=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
python=/usr/bin/python3
. "$here/../../../tools/port_file.sh"
rm -rf "$work" && mkdir -p "$work"
. "$here/../../lib/tally.sh" log-lines

folder="$work/a \"quoted\" \\ back"$'\t'"slash"
mkdir -p "$folder"
"$python" - "$here/../../../tasks/fmnist-pathological.json" "$model" >"$folder/task.json" <<'PY'
import json, sys
task = json.load(open(sys.argv[1]))
task["model"] = sys.argv[2]
print(json.dumps(task))
PY

"$build/sdfed-aggregator" --task "$folder/task.json" --state "$folder/state" --port 0 --host 127.0.0.1 \
  --port-file "$work/port" 2>"$work/aggregator.log" &
pid=$!
port_file "$work/port" "$pid" >/dev/null || bad "the aggregator did not start: $(tail -n 3 "$work/aggregator.log")"
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null

"$python" - "$work/aggregator.log" "$folder" >"$work/parsed.txt" <<'PY'
import json, sys
log, folder = sys.argv[1], sys.argv[2]
events = []
for number, line in enumerate(open(log, encoding="utf-8"), 1):
    try:
        entry = json.loads(line)
    except ValueError as e:
        print(f"line {number} is not JSON ({e}): {line.rstrip()}")
        continue
    if not isinstance(entry.get("ts"), float) or not isinstance(entry.get("event"), str):
        print(f"line {number} has no ts or event: {line.rstrip()}")
    events.append(entry)
listening = [e for e in events if e.get("event") == "listening"]
if len(listening) != 1:
    print(f"{len(listening)} listening lines parsed, not 1")
else:
    if listening[0].get("task") != folder + "/task.json":
        print(f"the listening line's task: {listening[0].get('task')!r}")
    if listening[0].get("state") != folder + "/state":
        print(f"the listening line's state: {listening[0].get('state')!r}")
if not any(e.get("event") == "stopping" for e in events):
    print("no stopping line parsed")
PY
[ -s "$work/aggregator.log" ] && [ ! -s "$work/parsed.txt" ] && ok ||
  bad "the log is not JSON a line: $(cat "$work/parsed.txt")"

summary
[ "$failed" -eq 0 ]
