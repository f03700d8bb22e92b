# Shared by the entrypoint and the pier-* commands of a Pier-managed PostgreSQL container.
# pgBackRest's configuration is written from the container's environment every time it is
# used, so it always matches what the databases service asked for:
#   PIER_BACKUP_REPO   `volume` (the repository is a named volume at /var/lib/pgbackrest)
#                      or `s3` (a bucket of an S3-compatible store), or `none` (no
#                      archive at all: a cluster with no store, where there are no backups)
#   PIER_BACKUP_PATH   this database's own place in the repository (a per-database path:
#                      every managed cluster starts from one template, so they all share
#                      one system identifier and must never share an archive)
#   PIER_S3_HOST, PIER_S3_PORT, PIER_S3_BUCKET, PIER_S3_REGION, PIER_S3_KEY,
#   PIER_S3_SECRET, PIER_S3_VERIFY_TLS (y|n), PIER_S3_CA_B64 (PEM, base64)   s3 only
#   PIER_RESTORE_PATH  a restore's source repository (read-only)
data=/var/lib/postgresql/data
export PGDATA=$data/pgdata
CONF=/etc/pgbackrest/pgbackrest.conf
SOURCE_CONF=/etc/pgbackrest/source.conf

# Started as root (docker), the scripts step down to postgres; started as postgres already (a
# kubernetes pod under the restricted Pod Security Standard), they are it, and own nothing.
if [[ $(id -u) == 0 ]]; then
  as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
  own() { chown "$@"; }
else
  as_postgres() { "$@"; }
  own() { :; }
fi
psql_local() { as_postgres psql -X -q -v ON_ERROR_STOP=1 -h /var/run/postgresql -d postgres -tA "$@"; }
pgbackrest_cmd() { as_postgres pgbackrest --config="$CONF" --stanza=db "$@"; }

# write_pgbackrest_conf FILE REPO_PATH
# Written whole and renamed into place: pgBackRest processes of a running backup (its local
# workers re-read the file) may start while `pier-backup list` writes it again.
write_pgbackrest_conf() {
  local file=$1 path=$2 tmp
  mkdir -p /etc/pgbackrest /tmp/pgbackrest
  tmp=$(mktemp "$file.XXXXXX")
  {
    echo '[global]'
    if [[ ${PIER_BACKUP_REPO:-volume} == s3 ]]; then
      echo 'repo1-type=s3'
      echo "repo1-s3-endpoint=${PIER_S3_HOST:?}"
      echo "repo1-storage-port=${PIER_S3_PORT:-443}"
      echo "repo1-s3-bucket=${PIER_S3_BUCKET:?}"
      echo "repo1-s3-region=${PIER_S3_REGION:-us-east-1}"
      echo "repo1-s3-key=${PIER_S3_KEY:?}"
      echo "repo1-s3-key-secret=${PIER_S3_SECRET:?}"
      echo 'repo1-s3-uri-style=path'
      echo "repo1-storage-verify-tls=${PIER_S3_VERIFY_TLS:-y}"
      if [[ -n ${PIER_S3_CA_B64:-} ]]; then
        printf '%s' "$PIER_S3_CA_B64" | base64 -d >/etc/pgbackrest/s3-ca.pem.$$ && mv -f /etc/pgbackrest/s3-ca.pem.$$ /etc/pgbackrest/s3-ca.pem
        echo 'repo1-storage-ca-file=/etc/pgbackrest/s3-ca.pem'
      fi
    fi
    echo "repo1-path=$path"
    # Pier decides which backups to keep (its retention, its DELETE); pgBackRest never
    # expires one on its own.
    echo 'repo1-retention-full-type=count'
    echo 'repo1-retention-full=9999999'
    echo 'compress-type=lz4'
    echo 'process-max=2'
    echo 'start-fast=y'
    echo 'lock-path=/tmp/pgbackrest'
    echo 'log-level-console=warn'
    echo 'log-level-stderr=warn'
    echo 'log-level-file=off'
    echo '[db]'
    echo "pg1-path=$PGDATA"
    echo 'pg1-socket-path=/var/run/postgresql'
  } >"$tmp"
  own postgres:postgres "$tmp"
  chmod 600 "$tmp"
  mv -f "$tmp" "$file"
  own -R postgres:postgres /etc/pgbackrest /tmp/pgbackrest
}

backup_conf() { write_pgbackrest_conf "$CONF" "${PIER_BACKUP_PATH:-/var/lib/pgbackrest}"; }
source_conf() { write_pgbackrest_conf "$SOURCE_CONF" "${PIER_RESTORE_PATH:?}"; }

# The archive command postgres runs for every WAL segment, as server options (so a
# database made before backups existed archives too, without touching its config file).
archive_options() {
  if [[ ${PIER_BACKUP_REPO:-volume} == none ]]; then return; fi
  printf '%s\n' -c archive_mode=on -c "archive_command=pgbackrest --config=$CONF --stanza=db archive-push %p" -c archive_timeout=60
}
