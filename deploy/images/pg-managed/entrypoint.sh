#!/bin/bash
# Entrypoint of a Pier-managed PostgreSQL container. Two roles, chosen by the argument:
#
#   postgres  the database server. Env (all set by the databases service):
#     PIER_DB_NAME           database created at init (the database's short id)
#     PIER_APP_USER          owner of that database; the user customers connect as
#     PIER_APP_PASSWORD      its password
#     PIER_CONSOLE_PASSWORD  password of `pier_console`, the role the control plane uses
#                            for the SQL console, schema inspector and slow queries
#     PIER_HBA_B64           initial pg_hba.conf (base64), written on first start only;
#                            later changes arrive through `pier-access`
#   pgbouncer the pooler, in its own container. Env: PIER_POOLER_TARGET (host of the
#             server), PIER_APP_USER, PIER_APP_PASSWORD, PIER_POOL_SIZE.
set -Eeuo pipefail

data=/var/lib/postgresql/data
export PGDATA=$data/pgdata
hba=$data/pier/pg_hba.conf

run_as_postgres() {
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$@"
}

start_pgbouncer() {
  local conf=/etc/pgbouncer/pier
  mkdir -p "$conf"
  # PgBouncer answers SCRAM itself from the plain password in its auth file, then logs
  # in to the server with the same credentials.
  printf '"%s" "%s"\n' "$PIER_APP_USER" "$PIER_APP_PASSWORD" >"$conf/userlist.txt"
  cat >"$conf/pgbouncer.ini" <<INI
[databases]
* = host=$PIER_POOLER_TARGET port=5432
[pgbouncer]
listen_addr = *
listen_port = 5432
unix_socket_dir =
auth_type = scram-sha-256
auth_file = $conf/userlist.txt
pool_mode = transaction
max_client_conn = 500
default_pool_size = ${PIER_POOL_SIZE:-20}
ignore_startup_parameters = extra_float_digits,options
; the server container gets a new address when it is recreated (external access toggled)
dns_max_ttl = 1
logfile =
INI
  chown -R postgres:postgres "$conf"
  chmod 600 "$conf/userlist.txt"
  run_as_postgres pgbouncer "$conf/pgbouncer.ini"
}

init_cluster() {
  : "${PIER_DB_NAME:?}" "${PIER_APP_USER:?}" "${PIER_APP_PASSWORD:?}" "${PIER_CONSOLE_PASSWORD:?}"
  cp -a /var/lib/postgresql/template/pgdata "$PGDATA"
  # Single-user mode needs no socket and no temporary server, so nothing can connect
  # (or be reported healthy) before the roles and the database exist. Nothing is
  # fsynced file by file; one syncfs of the volume makes it all durable before start.
  local q="'"
  postgres --single -D "$PGDATA" -c fsync=off postgres >/dev/null <<SQL
CREATE ROLE "$PIER_APP_USER" LOGIN PASSWORD $q$PIER_APP_PASSWORD$q
CREATE DATABASE "$PIER_DB_NAME" OWNER "$PIER_APP_USER"
CREATE ROLE pier_console LOGIN PASSWORD $q$PIER_CONSOLE_PASSWORD$q IN ROLE pg_read_all_stats
GRANT "$PIER_APP_USER" TO pier_console
SQL
  sync -f "$PGDATA"
  echo "initialised database $PIER_DB_NAME"
}

# The container's env is the source of truth for the two passwords: a container
# recreated around an existing volume (new settings, or lost) brings its own.
sync_passwords() {
  local want have q="'"
  want=$(printf '%s' "$PIER_APP_PASSWORD:$PIER_CONSOLE_PASSWORD" | sha256sum | cut -c1-64)
  have=$(cat "$data/pier/credentials.sha256" 2>/dev/null || true)
  [[ $want == "$have" ]] && return
  postgres --single -D "$PGDATA" postgres >/dev/null <<SQL
ALTER ROLE "$PIER_APP_USER" PASSWORD $q$PIER_APP_PASSWORD$q
ALTER ROLE pier_console PASSWORD $q$PIER_CONSOLE_PASSWORD$q
SQL
  echo "passwords updated from the environment"
}

role=${1:-postgres}
case $role in
  pgbouncer) start_pgbouncer ;;
  postgres) ;;
  *) exec "$@" ;;
esac

if [[ $(id -u) == 0 ]]; then
  mkdir -p "$data/pier" /var/run/postgresql
  if [[ ! -s $hba ]]; then
    printf '%s' "${PIER_HBA_B64:?PIER_HBA_B64 is required on first start}" | base64 -d >"$hba"
  fi
  # A fresh named volume belongs to root; postgres refuses a foreign data directory.
  chown postgres:postgres "$data" "$data/pier" "$hba"
  chmod 600 "$hba"
  if [[ -d $PGDATA ]]; then find "$PGDATA" \! -user postgres -exec chown postgres:postgres '{}' +; fi
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [[ ! -s $PGDATA/PG_VERSION ]]; then
  init_cluster
else
  sync_passwords
fi
printf '%s' "$PIER_APP_PASSWORD:$PIER_CONSOLE_PASSWORD" | sha256sum | cut -c1-64 >"$data/pier/credentials.sha256"
exec postgres
