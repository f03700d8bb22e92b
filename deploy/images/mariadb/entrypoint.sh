#!/bin/bash
# Entrypoint of a Pier-managed MariaDB container (engine `mysql`). Two roles:
#
#   mariadbd  the primary. Env, set by the databases service:
#     PIER_ACCESS_B64   initial access SQL (base64): database, accounts and grants. It is
#                       kept in the volume as the server's --init-file, so it is re-applied
#                       on every start; later changes arrive through `pier-access`.
#     PIER_DB_NAME      the database (its short id)
#     PIER_BACKUP_*, PIER_S3_*   the backup repository (pier-mariadb-lib.sh); closed binary
#                       logs are archived there (pier-binlog-archiver)
#     PIER_RESTORE_SOURCE_DB, PIER_RESTORE_PATH, PIER_RESTORE_NAME   set on a database made
#                       from another's backup: the source's short id, its repository and
#                       the backup; the copy is prepared, then moved under this name
#   replica   a read-only member following PIER_PRIMARY_HOST by GTID, seeded from a dump
#             of the primary as pier_replicator (PIER_REPLICATION_PASSWORD).
#     PIER_SERVER_ID    unique in the database's set (the primary is 1)
#
# root logs in over the socket inside the container only (unix_socket authentication).
set -Eeuo pipefail
role=${1:-}
[[ $role == mariadbd || $role == replica ]] || exec "$@"
source /usr/local/lib/pier-mariadb-lib.sh

access=$datadir/pier-access.sql
mkdir -p /run/mysqld
own mysql:mysql "$datadir" /run/mysqld
rm -f "$datadir/pier-start-error"
date -u +%s >/run/mysqld/booted-at
if [[ ${PIER_BACKUP_REPO:-volume} == volume && -d /var/lib/pier-backups ]]; then own mysql:mysql /var/lib/pier-backups; fi

# A restore or a seed that fails leaves its reason (pier-health prints it) and the
# container up, unhealthy, instead of restart-looping over half a copy.
fail() {
  echo "$*" >&2
  printf '%s\n' "$*" >"$datadir/pier-start-error"
  exec sleep infinity
}

server_options=(--datadir="$datadir" --port=3306 --skip-name-resolve
  --performance-schema=ON --performance-schema-consumer-statements-digest=ON
  --character-set-server=utf8mb4 --collation-server=utf8mb4_unicode_ci
  --log-bin="$datadir/binlog" --binlog-format=ROW --gtid-strict-mode=ON --log-slave-updates=ON
  --expire-logs-days=7 --server-id="${PIER_SERVER_ID:-1}" --log-error=
  # With the binary log on, MariaDB would refuse triggers and routines from non-SUPER users
  # (the app user): the log is row-based, so their bodies replay safely.
  --log-bin-trust-function-creators=ON)
# As root (docker) the server steps down to mysql itself; a pod runs as mysql already.
if [[ $(id -u) == 0 ]]; then server_options+=(--user=mysql); fi

# A server on the socket only, for work before the real start.
start_local() {
  mariadbd "${server_options[@]}" --skip-networking --socket=/run/mysqld/mysqld.sock "$@" &
  for _ in $(seq 1 6000); do
    mariadb-admin --protocol=socket -u"$(id -un)" ping >/dev/null 2>&1 && return 0
    kill -0 $! 2>/dev/null || fail "the server did not start for $role preparation"
    sleep 0.1
  done
  fail "the server did not answer within 10 minutes"
}
stop_local() { mariadb-admin --protocol=socket -u"$(id -un)" shutdown; wait; }

write_access() {
  printf '%s' "${PIER_ACCESS_B64:?PIER_ACCESS_B64 is required on first start}" | base64 -d >"$access"
  own mysql:mysql "$access"
  chmod 600 "$access"
}

# A new database from another's backup: the physical copy is prepared, started with this
# database's access SQL, and the source's database moved under this name.
restore_datadir() {
  local src=${PIER_RESTORE_SOURCE_DB:?} name=${PIER_RESTORE_NAME:?}
  # The restoring marker stays: it is what makes a crash start over, and what tells the
  # health check that the server answering on the socket is not ready yet.
  find "$datadir" -mindepth 1 ! -name pier-restoring -delete
  { repo_get "${PIER_RESTORE_PATH:?}" "backups/$name/backup.mbstream.zst" | zstd -q -d | mbstream -x -C "$datadir"; } 2>/tmp/restore.log ||
    fail "fetching backup $name failed: $(tail -n 2 /tmp/restore.log | tr '\n' ' ')"
  mariadb-backup --prepare --target-dir="$datadir" >/tmp/restore.log 2>&1 ||
    fail "preparing backup $name failed: $(grep -i error /tmp/restore.log | tail -n 2 | tr '\n' ' ')"
  # The source's own files came with its data directory.
  find "$datadir" -maxdepth 1 \( -name 'pier-*' -o -name 'binlog.*' \) ! -name pier-restoring -delete
  own -R mysql:mysql "$datadir"
  write_access
  start_local --init-file="$access"
  pier-rename-database "$src" "${PIER_DB_NAME:?}" >/tmp/restore.log 2>&1 || fail "moving the restored database failed: $(tail -n 2 /tmp/restore.log | tr '\n' ' ')"
  for host in $(sqlroot -e "SELECT Host FROM mysql.global_priv WHERE User='app_$src'"); do sqlroot -e "DROP USER 'app_$src'@'$host'"; done
  stop_local
  echo "restored database $src as $PIER_DB_NAME"
}

# A replica: the primary's databases and accounts, then replication from the GTID
# position the dump was taken at.
seed_replica() {
  find "$datadir" -mindepth 1 -delete
  # Its entries, not the directory itself: a volume root may not be ours to set times on.
  cp -a /var/lib/mysql-template/* "$datadir/"
  start_local
  local pw=${PIER_REPLICATION_PASSWORD:?} primary=${PIER_PRIMARY_HOST:?} q="'"
  for _ in $(seq 1 600); do mariadb-admin -h "$primary" -u pier_replicator -p"$pw" ping >/dev/null 2>&1 && break; sleep 0.5; done
  # Not logged here: the replica's binary log must hold no transaction of its own, or the
  # primary's GTID position conflicts with it (gtid_strict_mode).
  { mariadb-dump -h "$primary" -u pier_replicator -p"$pw" --all-databases --single-transaction --gtid --master-data=1 \
    --routines --events --triggers | mariadb --protocol=socket -u"$(id -un)" --init-command="SET sql_log_bin=0"; } 2>/tmp/seed.log ||
    fail "seeding from the primary failed: $(grep -vi warning /tmp/seed.log | tail -n 2 | tr '\n' ' ')"
  sqlroot -e "CHANGE MASTER TO MASTER_HOST=$q$primary$q, MASTER_PORT=3306, MASTER_USER='pier_replicator', MASTER_PASSWORD=$q$pw$q, MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=5"
  stop_local
  touch "$datadir/pier-replica-seeded"
  echo "seeded from $primary"
}

if [[ $role == replica ]]; then
  [[ -e $datadir/pier-replica-seeded ]] || seed_replica
  exec mariadbd "${server_options[@]}" --bind-address=0.0.0.0 --read-only=ON "${@:2}"
fi

if [[ ! -d $datadir/mysql || -e $datadir/pier-restoring ]]; then
  if [[ -n ${PIER_RESTORE_SOURCE_DB:-} ]]; then
    # The marker makes a restore interrupted by a crash start over.
    touch "$datadir/pier-restoring"
    restore_datadir
    rm -f "$datadir/pier-restoring"
  else
    # Its entries, not the directory itself: a volume root may not be ours to set times on.
    cp -a /var/lib/mysql-template/* "$datadir/"
    echo "initialised $datadir"
  fi
fi
[[ -s $access ]] || write_access
own mysql:mysql "$access"
chmod 600 "$access"

if [[ ${PIER_BACKUP_REPO:-volume} != none ]]; then setsid nohup pier-binlog-archiver >/dev/null 2>&1 </dev/null & fi
# skip-name-resolve: accounts are matched by client IP, as the allowlist means them.
exec mariadbd "${server_options[@]}" --bind-address=0.0.0.0 --init-file="$access" "${@:2}"
