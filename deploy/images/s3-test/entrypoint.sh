#!/bin/bash
# A real S3-compatible server for the tests: versitygw over a directory, on HTTPS (443)
# with a certificate made at start for S3_HOSTNAME (default `s3`) and 127.0.0.1. An IPv4
# S3_HOSTNAME goes in as both an IP and a DNS entry: pgBackRest matches names only. The
# PEM is at /certs/cert.pem for clients to trust. Buckets named in S3_BUCKETS are created.
# Object metadata (multipart part tags included) lives in a sidecar directory, so the
# store needs no extended attributes. Env: S3_ACCESS_KEY, S3_SECRET_KEY.
set -Eeuo pipefail
host=${S3_HOSTNAME:-s3}
mkdir -p /certs /data /meta
if [[ $host =~ ^[0-9]+(\.[0-9]+){3}$ ]]; then san="IP:$host,DNS:$host"; else san="DNS:$host"; fi
openssl req -x509 -newkey rsa:2048 -nodes -days 30 -keyout /certs/key.pem -out /certs/cert.pem \
  -subj "/CN=$host" -addext "subjectAltName=$san,DNS:localhost,IP:127.0.0.1" 2>/dev/null
for b in ${S3_BUCKETS:-}; do mkdir -p "/data/$b"; done
exec versitygw --access "${S3_ACCESS_KEY:?}" --secret "${S3_SECRET_KEY:?}" --cert /certs/cert.pem --key /certs/key.pem --port :443 \
  posix --sidecar /meta /data
