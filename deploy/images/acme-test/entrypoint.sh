#!/bin/sh
set -eu
ip=$(hostname -i | awk '{print $1}')
mkdir -p /etc/pebble
openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=pebble" \
  -addext "subjectAltName=DNS:pebble,DNS:localhost,IP:127.0.0.1,IP:$ip" \
  -keyout /etc/pebble/listener.key -out /etc/pebble/listener.pem 2>/dev/null
blocked=""
for name in ${PEBBLE_BLOCKLIST:-}; do blocked="${blocked:+$blocked, }\"$name\""; done
cat > /etc/pebble/pebble.json <<JSON
{ "pebble": {
    "listenAddress": "0.0.0.0:14000",
    "managementListenAddress": "0.0.0.0:15000",
    "certificate": "/etc/pebble/listener.pem",
    "privateKey": "/etc/pebble/listener.key",
    "httpPort": ${PEBBLE_HTTP_PORT:-80},
    "tlsPort": 443,
    "ocspResponderURL": "",
    "externalAccountBindingRequired": false,
    "domainBlocklist": [$blocked]
} }
JSON
# No sleeps before validation, no deliberate bad-nonce rejections: tests wait on neither.
export PEBBLE_VA_NOSLEEP=1 PEBBLE_WFE_NONCEREJECT=0
exec pebble -config /etc/pebble/pebble.json ${PEBBLE_DNS:+-dnsserver "$PEBBLE_DNS"}
