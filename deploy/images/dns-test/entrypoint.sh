#!/bin/sh
set -eu
conf=/etc/bind/named.conf
cat > $conf <<CONF
options {
  directory "/var/cache/bind";
  listen-on { any; };
  listen-on-v6 { none; };
  recursion no;
  allow-query { any; };
  dnssec-validation no;
};
CONF
for zone in ${ZONES:-example.test}; do
  file=/var/lib/bind/$zone.zone
  cat > "$file" <<ZONE
\$TTL 1
@ IN SOA ns.$zone. admin.$zone. 1 60 60 3600 1
@ IN NS ns.$zone.
ns IN A 127.0.0.1
ZONE
  echo "zone \"$zone\" { type master; file \"$file\"; allow-update { any; }; };" >> $conf
done
chown -R bind:bind /var/lib/bind /var/cache/bind
exec named -g -u bind -c $conf
