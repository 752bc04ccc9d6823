#!/usr/bin/env bash
# The layers of the core: every .c/.h under shared/ (or under ROOT) lives in
# one layer folder, and includes only from its own layer and the layers before
# it, naming the folder ("clip/text_encoder.h"). Prints each include that goes
# up (a later layer), is bare ("tokenizer.h"), or names an unknown folder or a
# missing core header, as `file:line: include  (why)`, and fails if there is
# one. A file outside the layer folders is reported too.
#   bash tests/layering.sh [ROOT]      (ROOT defaults to this repository's shared/)
set -u
LAYERS=(base kernels format text clip prompt method data fed) # lowest first

if [ $# -gt 1 ]; then
  echo "usage: $0 [ROOT]" >&2
  exit 2
fi
if [ $# -eq 1 ]; then
  root=${1%/}
  label=$root
else
  root="$(cd "$(dirname "$0")/.." && pwd)/shared"
  label=shared
fi
if [ ! -d "$root" ]; then
  echo "layering: $root is not a folder" >&2
  exit 2
fi

# one awk pass over every file: the layer of each file from its folder, and
# each #include line ("name" always, <name> when it names a core header)
mapfile -d '' paths < <(find "$root" -type f \( -name '*.c' -o -name '*.h' \) -print0 | sort -z)
files=${#paths[@]}
if [ "$files" -eq 0 ]; then
  echo "layering: no .c or .h files under $root" >&2
  exit 2
fi
result=$(awk -v root="$root" -v label="$label" -v layers="${LAYERS[*]}" -v q="'" '
  function report(file, line, text, why) { printf "%s/%s:%d: %s  (%s)\n", label, file, line, text, why; bad++ }
  BEGIN {
    n = split(layers, order, " ")
    for (i = 1; i <= n; i++) rank[order[i]] = i
    for (i = 1; i < ARGC; i++) { rel = substr(ARGV[i], length(root) + 2); core[rel] = 1 }
  }
  FNR == 1 {
    rel = substr(FILENAME, length(root) + 2)
    split(rel, part, "/")
    own = (rel ~ /^[^\/]+\/[^\/]+$/ && part[1] in rank) ? rank[part[1]] : 0
    layer = part[1]
    if (!own) report(rel, 1, "(the file itself)", "not directly in a layer folder: " layers)
  }
  own && /^[ \t]*#[ \t]*include[ \t]*["<]/ {
    text = $0
    sub(/^[ \t]+/, "", text); sub(/[ \t]+$/, "", text)
    name = text
    sub(/^#[ \t]*include[ \t]*["<]/, "", name)
    sub(/[">].*$/, "", name)
    if (text ~ /^#[ \t]*include[ \t]*</ && !(name in core)) next # a system header
    includes++
    if (name !~ /\//) { report(rel, FNR, text, "bare name: an include names its layer folder"); next }
    target = name; sub(/\/.*$/, "", target)
    if (!(target in rank) || name !~ /^[^\/]+\/[^\/]+$/)
      report(rel, FNR, text, "unknown layer " q target q ": the layers are " layers)
    else if (!(name in core)) report(rel, FNR, text, "no such core header")
    else if (rank[target] > own) report(rel, FNR, text, layer " may not include " target ", a later layer")
  }
  END { printf "%d %d\n", bad, includes }
' "${paths[@]}")
summary=${result##*$'\n'}
[ "$summary" = "$result" ] || printf '%s\n' "${result%$'\n'*}"
read -r bad includes <<<"$summary"

if [ "$bad" -gt 0 ]; then
  echo "layering: $bad include(s) break the layers (${LAYERS[*]}, lowest first)"
  exit 1
fi
echo "layering: $files files, $includes core includes, all down or within a layer (${LAYERS[*]})"
