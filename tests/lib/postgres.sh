# A PostgreSQL server of a test's own, for the tests of the store's
# PostgreSQL back end; source it. The server is Debian's postgresql-15
# (initdb, pg_ctl), never a system service: its data and its Unix socket
# live in a new folder under /tmp (short, as socket paths must be), it
# listens on no TCP address, and it takes passwords (user sdfed). As root
# the server runs as the postgres user, since PostgreSQL refuses root.
#   postgres_start || exit 1      # sets postgres_dir (the folder and socket directory)
#   trap postgres_stop EXIT       # stops the server and removes the folder
#   postgres_createdb NAME
#   uri=$(postgres_uri NAME)      # postgresql://sdfed:PASSWORD@/NAME?host=SOCKET_DIR
#   postgres_psql NAME -c 'SELECT ...'
postgres_bin=${POSTGRES_BIN:-/usr/lib/postgresql/15/bin}
postgres_user=sdfed postgres_password=sdfed-test-password
postgres_dir=

postgres_as_owner() { # runs a server command as the folder's owner
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

postgres_start() {
  if [ ! -x "$postgres_bin/initdb" ] || [ ! -x "$postgres_bin/pg_ctl" ]; then
    echo "FAIL: no PostgreSQL server in $postgres_bin: install Debian's postgresql-15 (bash tools/install-deps.sh)" >&2
    return 1
  fi
  postgres_dir=$(mktemp -d /tmp/sdfed-pg.XXXXXX) || return 1
  printf '%s\n' "$postgres_password" >"$postgres_dir/password"
  [ "$(id -u)" -eq 0 ] && chown -R postgres: "$postgres_dir"
  postgres_as_owner "$postgres_bin/initdb" -D "$postgres_dir/data" -U "$postgres_user" --auth=scram-sha-256 \
    --pwfile="$postgres_dir/password" --no-locale -E UTF8 --no-sync >"$postgres_dir/initdb.log" 2>&1 || {
    echo "FAIL: initdb: $(tail -n 3 "$postgres_dir/initdb.log")" >&2
    return 1
  }
  printf "listen_addresses = ''\nunix_socket_directories = '%s'\n" "$postgres_dir" >>"$postgres_dir/data/postgresql.conf"
  postgres_resume
}

postgres_resume() { # starts the server again after postgres_pause
  postgres_as_owner "$postgres_bin/pg_ctl" -D "$postgres_dir/data" -l "$postgres_dir/server.log" -w start \
    >/dev/null 2>&1 || {
    echo "FAIL: pg_ctl start: $(tail -n 3 "$postgres_dir/server.log")" >&2
    return 1
  }
}

postgres_pause() { # stops the server, keeping its data; postgres_pause immediate: as a crash (no session finishes)
  postgres_as_owner "$postgres_bin/pg_ctl" -D "$postgres_dir/data" -m "${1:-fast}" -w stop >/dev/null 2>&1
}

postgres_stop() {
  [ -n "$postgres_dir" ] || return 0
  [ -f "$postgres_dir/data/postmaster.pid" ] &&
    postgres_as_owner "$postgres_bin/pg_ctl" -D "$postgres_dir/data" -m immediate -w stop >/dev/null 2>&1
  rm -rf "$postgres_dir"
  postgres_dir=
}

postgres_uri() { echo "postgresql://$postgres_user:$postgres_password@/$1?host=$postgres_dir"; }

postgres_psql() { # postgres_psql DATABASE ARGS...: psql on the test's server, unaligned, no headers
  local db=$1
  shift
  "$postgres_bin/psql" -X -q -At -v ON_ERROR_STOP=1 "$(postgres_uri "$db")" "$@"
}

postgres_createdb() { postgres_psql postgres -c "CREATE DATABASE $1"; }
