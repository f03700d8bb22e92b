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
#     PIER_BACKUP_*, PIER_S3_*  where its WAL archive and backups go (pier-pg-lib.sh)
#     PIER_RESTORE_SOURCE_DB    set on a database made from a backup (restore, fork): the
#                               source's short id; with PIER_RESTORE_PATH (its repository),
#                               PIER_RESTORE_TYPE (`time` with PIER_RESTORE_TARGET and
#                               optionally PIER_RESTORE_SET, or `immediate` with
#                               PIER_RESTORE_SET, a backup label)
#   replica   a streaming read replica of PIER_PRIMARY_HOST, cloned with pg_basebackup
#             as pier_replicator (PIER_REPLICATION_PASSWORD) into slot PIER_REPLICA_SLOT.
#   pgbouncer the pooler, in its own container. Env: PIER_POOLER_TARGET (host of the
#             server), PIER_APP_USER, PIER_APP_PASSWORD, PIER_POOL_SIZE.
set -Eeuo pipefail
source /usr/local/lib/pier-pg-lib.sh

hba=$data/pier/pg_hba.conf
# TLS for every server and replica: a key of its own, made on first start and kept in the
# volume (never in the image, which every database shares). Clients outside reach it
# through Pier's SNI listener, which passes TLS through untouched (sslmode=require).
tls=$data/pier/tls
tls_options=(-c ssl=on -c "ssl_cert_file=$tls/server.crt" -c "ssl_key_file=$tls/server.key")

make_tls_key() {
  [[ -s $tls/server.key && -s $tls/server.crt ]] && return
  mkdir -p "$tls"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
    -subj "/CN=${PIER_DB_NAME:-pier-database}" -keyout "$tls/server.key" -out "$tls/server.crt" 2>/dev/null
  own -R postgres:postgres "$tls"
  chmod 600 "$tls/server.key"
}

run_as_postgres() {
  if [[ $(id -u) == 0 ]]; then exec setpriv --reuid=postgres --regid=postgres --init-groups "$@"; fi
  exec "$@"
}

# A restore or a replica clone that fails leaves its reason here and the container up
# (so `docker ps` keeps it unhealthy rather than restart-looping): pier-health prints it.
fail() {
  echo "$*" >&2
  printf '%s\n' "$*" >"$data/pier/start-error"
  exec sleep infinity
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
  own -R postgres:postgres "$conf"
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

# A temporary server on the socket only, for work between a restore or clone and the
# real start.
start_local() {
  # Archiving on: the new timeline's first segments (and its history file) belong in this
  # database's own archive.
  local archiving="-c archive_mode=on -c archive_command='pgbackrest --config=$CONF --stanza=db archive-push %p'"
  if [[ ${PIER_BACKUP_REPO:-volume} == none ]]; then archiving=; fi
  pg_ctl -D "$PGDATA" -w -t 3600 -l "$data/pier/startup.log" \
    -o "-c listen_addresses='' $archiving" start >/dev/null ||
    fail "the restored server did not start: $(server_errors)"
}
# The lines of the temporary server's log that say why it stopped (FATAL or PANIC), else its tail.
server_errors() {
  { grep -E 'FATAL|PANIC' "$data/pier/startup.log" || tail -n 3 "$data/pier/startup.log"; } | tail -n 2 | tr '\n' ' '
}
stop_local() { pg_ctl -D "$PGDATA" -w -t 600 -m fast stop >/dev/null; }
sql() { psql -X -q -v ON_ERROR_STOP=1 -h /var/run/postgresql -d postgres -tA "$@"; }

# A new database from a backup of another: pgBackRest restores the source's data (to a
# point in time, or the end of one backup), the server replays the source's archive and
# promotes, and the copy becomes this database: its own name, owner and passwords.
restore_cluster() {
  : "${PIER_DB_NAME:?}" "${PIER_APP_USER:?}" "${PIER_APP_PASSWORD:?}" "${PIER_CONSOLE_PASSWORD:?}"
  local src=$PIER_RESTORE_SOURCE_DB target q="'"
  if [[ ${PIER_RESTORE_TYPE:?} == time ]]; then
    # A named backup (PIER_RESTORE_SET) is the base; without one pgBackRest takes the newest
    # backup that ended before the target.
    target=(--type=time "--target=${PIER_RESTORE_TARGET:?}" ${PIER_RESTORE_SET:+"--set=$PIER_RESTORE_SET"})
  else
    target=(--type=immediate "--set=${PIER_RESTORE_SET:?}")
  fi
  rm -rf "$PGDATA"
  pgbackrest --config="$SOURCE_CONF" --stanza=db --pg1-path="$PGDATA" "${target[@]}" --target-action=promote \
    "--recovery-option=restore_command=pgbackrest --config=$SOURCE_CONF --stanza=db archive-get %f \"%p\"" restore \
    >"$data/pier/restore.log" 2>&1 || fail "restore from the backup failed: $(tail -n 3 "$data/pier/restore.log" | tr '\n' ' ')"
  pgbackrest --config="$CONF" --stanza=db --no-online stanza-create >/dev/null 2>&1 || true
  start_local
  for _ in $(seq 1 36000); do
    [[ $(sql -c 'SELECT pg_is_in_recovery()' 2>/dev/null) == f ]] && break
    pg_ctl -D "$PGDATA" status >/dev/null || fail "recovery stopped: $(server_errors)"
    sleep 0.1
  done
  sql <<SQL
ALTER DATABASE "$src" RENAME TO "$PIER_DB_NAME";
ALTER ROLE "app_$src" RENAME TO "$PIER_APP_USER";
ALTER ROLE "$PIER_APP_USER" PASSWORD $q$PIER_APP_PASSWORD$q;
ALTER ROLE pier_console PASSWORD $q$PIER_CONSOLE_PASSWORD$q;
ALTER SYSTEM RESET ALL;
SQL
  stop_local
  echo "restored database $src as $PIER_DB_NAME"
}

# A read replica: a copy of the primary by pg_basebackup (which writes standby.signal and
# primary_conninfo), following it over a replication slot of its own.
clone_replica() {
  rm -rf "$PGDATA"
  # A replica may start with its primary (kubernetes starts both at once): it waits until
  # the primary takes the replication login, rather than fail and be restarted with backoff.
  for _ in $(seq 1 300); do
    PGPASSWORD=$PIER_REPLICATION_PASSWORD psql -X -q "host=${PIER_PRIMARY_HOST:?} user=pier_replicator dbname=postgres replication=true connect_timeout=3" \
      -c IDENTIFY_SYSTEM >/dev/null 2>&1 && break
    sleep 1
  done
  PGPASSWORD=${PIER_REPLICATION_PASSWORD:?} pg_basebackup -h "${PIER_PRIMARY_HOST:?}" -U pier_replicator -D "$PGDATA" \
    -X stream -R -C -S "${PIER_REPLICA_SLOT:?}" >"$data/pier/clone.log" 2>&1 ||
    fail "cloning the primary failed: $(tail -n 3 "$data/pier/clone.log" | tr '\n' ' ')"
  echo "cloned $PIER_PRIMARY_HOST into slot $PIER_REPLICA_SLOT"
}

role=${1:-postgres}
case $role in
  pgbouncer) start_pgbouncer ;;
  postgres | replica) ;;
  *) exec "$@" ;;
esac

# Once per start, before the server: as root (docker) it then steps down to postgres and
# runs this script again; as postgres already (a restricted pod, its volume given to the
# group by fsGroup) it goes on.
if [[ -z ${PIER_PREPARED:-} ]]; then
  mkdir -p "$data/pier" /var/run/postgresql
  if [[ ! -s $hba ]]; then
    printf '%s' "${PIER_HBA_B64:?PIER_HBA_B64 is required on first start}" | base64 -d >"$hba"
  fi
  # A fresh named volume belongs to root; postgres refuses a foreign data directory.
  own postgres:postgres "$data" "$data/pier" "$hba"
  chmod 600 "$hba"
  if [[ -d $PGDATA && $(id -u) == 0 ]]; then find "$PGDATA" \! -user postgres -exec chown postgres:postgres '{}' +; fi
  rm -f "$data/pier/start-error"
  make_tls_key
  date -u +%s >"$data/pier/booted-at"
  # Its own repository (a named volume is root's when new), and the configurations.
  if [[ ${PIER_BACKUP_REPO:-volume} == volume && -d /var/lib/pgbackrest ]]; then own postgres:postgres /var/lib/pgbackrest; fi
  backup_conf
  if [[ -n ${PIER_RESTORE_SOURCE_DB:-} ]]; then source_conf; fi
  export PIER_PREPARED=1
  if [[ $(id -u) == 0 ]]; then exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"; fi
fi

if [[ $role == replica ]]; then
  # Done once: a clone that finished has standby.signal; one interrupted is redone.
  [[ -e $PGDATA/standby.signal ]] || clone_replica
  exec postgres "${tls_options[@]}"
fi

if [[ ! -s $PGDATA/PG_VERSION || -e $data/pier/restoring ]]; then
  if [[ -n ${PIER_RESTORE_SOURCE_DB:-} ]]; then
    # The marker makes a restore interrupted by a crash start over rather than run half a copy.
    touch "$data/pier/restoring"
    restore_cluster
    rm -f "$data/pier/restoring"
  else
    init_cluster
  fi
else
  sync_passwords
fi
printf '%s' "$PIER_APP_PASSWORD:$PIER_CONSOLE_PASSWORD" | sha256sum | cut -c1-64 >"$data/pier/credentials.sha256"
# Its own stanza in its own repository (offline: the server is not up yet). A repository
# out of reach must not keep the database down: the archiver retries, and a backup
# reports the error.
[[ ${PIER_BACKUP_REPO:-volume} == none ]] || pgbackrest --config="$CONF" --stanza=db --no-online stanza-create >/dev/null 2>&1 || echo "pgBackRest stanza not created yet (repository unreachable?)" >&2
# kubernetes' built-in mode (PIER_REPLICATION_AT_START=1): the replication login, once the
# server is up, since replicas start beside it (the databases service sets it again when it
# adds replicas, and drops the slots of replicas it removed). On docker the service sets it
# itself, right after the start: the two at once would race for the one role.
if [[ -n ${PIER_REPLICATION_PASSWORD:-} && ${PIER_REPLICATION_AT_START:-} == 1 ]]; then
  setsid nohup pier-replication-role "$(printf '%s' "$PIER_REPLICATION_PASSWORD" | base64 -w0)" >/dev/null 2>&1 </dev/null &
fi
mapfile -t archiving < <(archive_options)
exec postgres "${archiving[@]}" "${tls_options[@]}"
