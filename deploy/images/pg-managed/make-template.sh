#!/bin/bash
# Builds the template cluster every managed database starts from (run at image build,
# as postgres). Roles, passwords and the customer database are made per database at
# first start (entrypoint.sh). Consequence: every database shares the template's
# system identifier — harmless for a database on its own; WAL archives must be kept
# per database (never pooled by system identifier).
set -Eeuo pipefail
template=/var/lib/postgresql/template
mkdir -p "$template"
# The superuser has no password: it logs in over the socket inside the container only.
initdb -D "$template/pgdata" --username=postgres --encoding=UTF8 --locale=C.UTF-8 \
  --auth-local=peer --auth-host=reject --no-sync >/dev/null
cat >>"$template/pgdata/postgresql.conf" <<'CONF'

# --- Pier ---
listen_addresses = '*'
hba_file = '/var/lib/postgresql/data/pier/pg_hba.conf'
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = top
pg_stat_statements.max = 5000
password_encryption = scram-sha-256
CONF
# In template1, so every database created from it has the slow-query view; members of
# pg_read_all_stats (the control plane's pier_console) may reset it, and may switch WAL
# segments (sealing the archive before a point-in-time restore).
postgres --single -D "$template/pgdata" -c fsync=off template1 >/dev/null <<'SQL'
CREATE EXTENSION pg_stat_statements
GRANT EXECUTE ON FUNCTION pg_stat_statements_reset(oid, oid, bigint) TO pg_read_all_stats
GRANT EXECUTE ON FUNCTION pg_switch_wal() TO pg_read_all_stats
SQL
