#!/usr/bin/env bash
# No include cycles among a folder's own headers: every `#include "x.h"` (or
# "FOLDER/x.h") of a .c or .h file that names a file of the same folder is an
# edge, and tsort must order them all. Prints the files of a cycle and fails
# when there is one. --self-test checks that a two-header cycle is caught.
#   bash tests/include_cycles.sh DIR...
#   bash tests/include_cycles.sh --self-test
set -u
if [ $# -eq 0 ]; then
  echo "usage: $0 DIR... | --self-test" >&2
  exit 2
fi
if [ "$1" = --self-test ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  mkdir "$work/folder"
  printf '#include "b.h"\n' >"$work/folder/a.h"
  printf '#include "folder/a.h"\n' >"$work/folder/b.h"
  printf '#include "a.h"\n' >"$work/folder/c.c"
  if out=$(bash "$0" "$work/folder") || ! grep -q "a.h" <<<"$out" || ! grep -q "b.h" <<<"$out"; then
    echo "include_cycles: the cycle a.h -> b.h -> a.h was not caught:"
    echo "$out"
    exit 1
  fi
  echo "include_cycles: a two-header cycle is caught"
  exit 0
fi
status=0
for dir in "$@"; do
  if [ ! -d "$dir" ]; then
    echo "include_cycles: $dir is not a folder" >&2
    exit 2
  fi
  folder=$(basename "$dir")
  edges=$(cd "$dir" && for f in *.c *.h; do
    [ -f "$f" ] || continue
    echo "$f $f" # every file is a node
    sed -n "s/^[ \t]*#[ \t]*include[ \t]*\"\(${folder}\/\)\{0,1\}\([^\"/]*\)\".*/\2/p" "$f" | while read -r inc; do
      [ -f "$inc" ] && echo "$f $inc"
    done
  done)
  if ! out=$(printf '%s\n' "$edges" | tsort 2>&1 >/dev/null) || [ -n "$out" ]; then
    echo "include_cycles: $dir has an include cycle:"
    printf '%s\n' "$out" | sed 's/^/  /'
    status=1
  else
    echo "include_cycles: $dir: $(printf '%s\n' "$edges" | awk '$1 != $2' | wc -l) includes, no cycle"
  fi
done
exit $status
