#!/bin/bash
# Env contract (a subset of the official postgres image's):
#   POSTGRES_PASSWORD          superuser password; required unless the auth method is trust
#   POSTGRES_USER              superuser name (default postgres)
#   POSTGRES_DB                database created at init (default: $POSTGRES_USER)
#   POSTGRES_HOST_AUTH_METHOD  auth for TCP connections (default scram-sha-256)
#   POSTGRES_INITDB_ARGS       extra initdb arguments
#   PGDATA                     data directory (default /var/lib/postgresql/data)
# Arguments starting with '-' are passed to postgres (`-c shared_preload_libraries=...`).
# Not supported: /docker-entrypoint-initdb.d scripts, *_FILE variables.
set -Eeuo pipefail

if [[ ${1:-} == -* ]]; then set -- postgres "$@"; fi
[[ ${1:-} == postgres ]] || exec "$@"

if [[ $(id -u) == 0 ]]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  # A mounted volume may belong to someone else; postgres refuses a foreign data dir.
  find "$PGDATA" \! -user postgres -exec chown postgres:postgres '{}' +
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [[ ! -s $PGDATA/PG_VERSION ]]; then
  : "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}"
  : "${POSTGRES_HOST_AUTH_METHOD:=scram-sha-256}"
  # --no-sync (and fsync=off below): init runs in every fresh container and the flushes
  # cost seconds on a busy disk; the price is that a host crash within the first seconds
  # can leave this fresh data dir unusable.
  args=(--username="$POSTGRES_USER" --encoding=UTF8 --locale=C.UTF-8 --no-sync --auth-local=trust
        --auth-host="$POSTGRES_HOST_AUTH_METHOD")
  if [[ -n ${POSTGRES_PASSWORD:-} ]]; then
    # A file, not <(...): a process substitution's fd closes before initdb runs.
    pwfile=$(umask 077 && mktemp) && printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
    args+=(--pwfile="$pwfile")
  elif [[ $POSTGRES_HOST_AUTH_METHOD != trust ]]; then
    echo >&2 'error: POSTGRES_PASSWORD is not set (or set POSTGRES_HOST_AUTH_METHOD=trust)'
    exit 1
  fi
  read -ra extra <<<"${POSTGRES_INITDB_ARGS:-}"
  # Initialising here rather than at build time costs about a second but lets the env
  # vars apply.
  initdb "${args[@]}" "${extra[@]}" >/dev/null
  rm -f "${pwfile:-}"
  printf "\nlisten_addresses = '*'\n" >>"$PGDATA/postgresql.conf"
  printf 'host all all all %s\n' "$POSTGRES_HOST_AUTH_METHOD" >>"$PGDATA/pg_hba.conf"
  if [[ $POSTGRES_DB != postgres ]]; then
    # Single-user mode needs no socket and no temporary server, so "ready to accept
    # connections" is logged once, by the real server. It exits 0 even when the
    # statement fails, hence the check of what it printed.
    err=$(printf 'CREATE DATABASE "%s"\n' "${POSTGRES_DB//\"/\"\"}" \
      | postgres --single -c fsync=off -D "$PGDATA" postgres 2>&1 >/dev/null)
    if [[ $err == *ERROR:* && $err != *'already exists'* ]]; then echo >&2 "$err"; exit 1; fi
  fi
  echo "initialised $PGDATA (user $POSTGRES_USER, database $POSTGRES_DB)"
fi

exec "$@"
