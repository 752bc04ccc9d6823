#!/usr/bin/env bash
# Runs test_store (the store's checks on both back ends) against a
# PostgreSQL server of its own (tests/lib/postgres.sh: a Unix socket in a
# folder under /tmp, no TCP), stopped and removed at the end, also on
# failure; then compares the bytes each back end holds for the same rows.
# Fails, saying what to install, when PostgreSQL's server is missing.
#   test_store.sh TEST_STORE_BINARY WORK_DIR
set -u
binary=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/postgres.sh"
rm -rf "$work" && mkdir -p "$work"
trap postgres_stop EXIT
postgres_start || exit 1
postgres_createdb store_test && postgres_createdb cluster_test || exit 1

server="bash -c '. \"$here/../lib/postgres.sh\" && postgres_dir=$postgres_dir &&"
"$binary" "$work" "$postgres_dir" "$postgres_password" "$server postgres_pause'" "$server postgres_resume'" \
  "$server postgres_psql store_test -c \"\$0\"'" || exit 1

# the same rows, the same bytes: SQLite's BLOBs and PostgreSQL's bytea (both suites, which a TEST_FILTER may leave out)
if [ -n "${TEST_FILTER:-}" ]; then
  echo "test_store.sh: TEST_FILTER=$TEST_FILTER: the back ends' bytes not compared"
  exit 0
fi
from_sqlite=$(sqlite3 "$work/state/aggregator.sqlite" \
  "SELECT round, hex(global) FROM rounds ORDER BY round; SELECT round, client, hex(data) FROM updates ORDER BY round, client")
from_postgres=$(postgres_psql store_test -F '|' \
  -c "SELECT round, upper(encode(global, 'hex')) FROM rounds ORDER BY round" \
  -c "SELECT round, client, upper(encode(data, 'hex')) FROM updates ORDER BY round, client")
if [ -z "$from_sqlite" ] || [ "$from_sqlite" != "$from_postgres" ]; then
  echo "FAIL: SQLite and PostgreSQL hold different bytes for the same rounds and updates"
  diff <(echo "$from_sqlite") <(echo "$from_postgres") | head -n 5
  exit 1
fi
echo "test_store.sh: both back ends hold the same bytes ($(wc -l <<<"$from_sqlite") rows)"
