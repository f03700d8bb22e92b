#!/bin/bash
# Starts docker-registry on HTTPS (5000) with a certificate made now for the container's
# address (and REGISTRY_HOSTNAME if set); the PEM is at /certs/cert.pem for clients to
# trust. Pushes and pulls need REGISTRY_USER / REGISTRY_PASSWORD (htpasswd, bcrypt); with
# REGISTRY_ANONYMOUS=1 instead (the test cluster's registry) anyone may push and pull.
set -Eeuo pipefail
ip=$(hostname -i | awk '{print $1}')
san="IP:$ip,IP:127.0.0.1,DNS:localhost${REGISTRY_HOSTNAME:+,DNS:$REGISTRY_HOSTNAME}"
mkdir -p /certs /auth /var/lib/registry
openssl req -x509 -newkey rsa:2048 -nodes -days 30 -keyout /certs/key.pem -out /certs/cert.pem \
  -subj "/CN=$ip" -addext "subjectAltName=$san" 2>/dev/null
auth="auth:
  htpasswd:
    realm: pier-test
    path: /auth/htpasswd"
if [[ ${REGISTRY_ANONYMOUS:-} == 1 ]]; then
  auth=
else
  htpasswd -Bbc /auth/htpasswd "${REGISTRY_USER:?}" "${REGISTRY_PASSWORD:?}" 2>/dev/null
fi
cat >/etc/docker/registry/config.yml <<CONF
version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: /var/lib/registry
  delete:
    enabled: true
http:
  addr: :5000
  tls:
    certificate: /certs/cert.pem
    key: /certs/key.pem
$auth
CONF
exec docker-registry serve /etc/docker/registry/config.yml
