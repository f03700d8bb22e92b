# Shared by the entrypoint and the pier-* commands of a Pier-managed MariaDB container.
# The backup repository, from the container's environment:
#   PIER_BACKUP_REPO   `volume` (a named volume at /var/lib/pier-backups) or `s3`, or
#                      `none` (no binary-log archive: a cluster with no store, no backups)
#   PIER_BACKUP_PATH   this database's own place in it
#   PIER_S3_HOST, PIER_S3_PORT, PIER_S3_BUCKET, PIER_S3_REGION, PIER_S3_KEY,
#   PIER_S3_SECRET, PIER_S3_VERIFY_TLS (y|n), PIER_S3_CA_B64     s3 only (through rclone)
#   PIER_RESTORE_PATH  a restore's source repository (read-only)
# Layout under a repository path: backups/<name>/backup.mbstream.zst and meta.json,
# binlogs/<file>.
datadir=/var/lib/mysql
states=$datadir # pier-backup-<name>.json files: MariaDB takes only directories for databases

# Started as root (docker), the scripts may hand files to mysql; started as mysql already (a
# kubernetes pod under the restricted Pod Security Standard), they own nothing. Either way
# the server's socket admits the OS user by unix_socket: root, or the image's mysql
# account (both made by mariadb-install-db, with every privilege).
own() { if [[ $(id -u) == 0 ]]; then chown "$@"; fi; }

sqlroot() { mariadb --protocol=socket -u"$(id -un)" -N -B "$@"; }

rclone_env() {
  export RCLONE_CONFIG_REPO_TYPE=s3 RCLONE_CONFIG_REPO_PROVIDER=Other
  export RCLONE_CONFIG_REPO_ENDPOINT="https://${PIER_S3_HOST:?}:${PIER_S3_PORT:-443}"
  export RCLONE_CONFIG_REPO_ACCESS_KEY_ID="${PIER_S3_KEY:?}" RCLONE_CONFIG_REPO_SECRET_ACCESS_KEY="${PIER_S3_SECRET:?}"
  export RCLONE_CONFIG_REPO_REGION="${PIER_S3_REGION:-us-east-1}" RCLONE_CONFIG_REPO_FORCE_PATH_STYLE=true
  # The bucket is the operator's to provision; Pier never tries to create it.
  export RCLONE_CONFIG_REPO_NO_CHECK_BUCKET=true
  RCLONE_FLAGS=(--config /dev/null -q)
  if [[ ${PIER_S3_VERIFY_TLS:-y} == n ]]; then RCLONE_FLAGS+=(--no-check-certificate); fi
  if [[ -n ${PIER_S3_CA_B64:-} ]]; then
    # Renamed into place: a running backup's rclone may be reading it.
    printf '%s' "$PIER_S3_CA_B64" | base64 -d >/tmp/s3-ca.pem.$$ && mv -f /tmp/s3-ca.pem.$$ /tmp/s3-ca.pem
    RCLONE_FLAGS+=(--ca-cert /tmp/s3-ca.pem)
  fi
}

# repo_* ROOT RELPATH: ROOT is a repository path (ours, or a restore's source).
repo_url() { if [[ ${PIER_BACKUP_REPO:-volume} == s3 ]]; then echo "repo:${PIER_S3_BUCKET:?}$1/$2"; else echo "$1/$2"; fi; }
repo_put() { # stdin -> file
  if [[ ${PIER_BACKUP_REPO:-volume} == s3 ]]; then rclone_env; rclone "${RCLONE_FLAGS[@]}" rcat "$(repo_url "$1" "$2")"; else mkdir -p "$(dirname "$1/$2")"; cat >"$1/$2.tmp" && mv "$1/$2.tmp" "$1/$2"; fi
}
repo_get() { # file -> stdout
  if [[ ${PIER_BACKUP_REPO:-volume} == s3 ]]; then rclone_env; rclone "${RCLONE_FLAGS[@]}" cat "$(repo_url "$1" "$2")"; else cat "$1/$2"; fi
}
repo_list() { # the names in a directory, one a line
  # A missing directory is empty; an unreachable store is an error (exit status), never empty.
  if [[ ${PIER_BACKUP_REPO:-volume} == s3 ]]; then rclone_env; rclone "${RCLONE_FLAGS[@]}" lsf "$(repo_url "$1" "$2")" | sed 's#/$##'; elif [[ -d $1/$2 ]]; then ls -1 "$1/$2"; fi
}
repo_size() { # bytes of one file
  if [[ ${PIER_BACKUP_REPO:-volume} == s3 ]]; then rclone_env; rclone "${RCLONE_FLAGS[@]}" size --json "$(repo_url "$1" "$2")" | jq .bytes; else stat -c %s "$1/$2"; fi
}
repo_purge() { # a directory and all below it
  if [[ ${PIER_BACKUP_REPO:-volume} == s3 ]]; then rclone_env; rclone "${RCLONE_FLAGS[@]}" purge "$(repo_url "$1" "$2")" 2>/dev/null || true; else rm -rf "${1:?}/${2:?}"; fi
}

own_repo() { echo "${PIER_BACKUP_PATH:-/var/lib/pier-backups}"; }
