#!/bin/bash
# Entrypoint of a Pier-managed MariaDB container (engine `mysql`). Env, set by the
# databases service:
#   PIER_ACCESS_B64   initial access SQL (base64): database, accounts and grants. It is
#                     kept in the volume as the server's --init-file, so it is re-applied
#                     on every start; later changes arrive through `pier-access`.
# root logs in over the socket inside the container only (unix_socket authentication).
set -Eeuo pipefail
[[ ${1:-} == mariadbd ]] || exec "$@"

datadir=/var/lib/mysql
access=$datadir/pier-access.sql
mkdir -p /run/mysqld
chown mysql:mysql "$datadir" /run/mysqld

if [[ ! -d $datadir/mysql ]]; then
  cp -a /var/lib/mysql-template/. "$datadir/"
  echo "initialised $datadir"
fi
if [[ ! -s $access ]]; then
  printf '%s' "${PIER_ACCESS_B64:?PIER_ACCESS_B64 is required on first start}" | base64 -d >"$access"
fi
chown mysql:mysql "$access"
chmod 600 "$access"

# skip-name-resolve: accounts are matched by client IP, as the allowlist means them.
exec mariadbd --user=mysql --datadir="$datadir" --bind-address=0.0.0.0 --port=3306 \
  --skip-name-resolve --init-file="$access" \
  --performance-schema=ON --performance-schema-consumer-statements-digest=ON \
  --character-set-server=utf8mb4 --collation-server=utf8mb4_unicode_ci \
  --log-error= "${@:2}"
