#!/bin/sh
# Runs on the host against a fresh debootstrap rootfs ($1) before `docker import`.
# Everything that shapes pier/debian-base lives here, so its hash decides when the base
# (and with it every image) is rebuilt.
set -eu
root=$1

# Package postinsts must not start services while an image is being built.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"

# postgresql-common would otherwise create and start a "main" cluster at install time;
# our entrypoint runs initdb at container start so the POSTGRES_* env vars apply.
mkdir -p "$root/etc/postgresql-common"
echo 'create_main_cluster = false' >"$root/etc/postgresql-common/createcluster.conf"

# Smaller, quieter images: no recommends, no docs/man pages, no apt caches left behind.
cat >"$root/etc/apt/apt.conf.d/90pier" <<'CONF'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Acquire::Languages "none";
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };
CONF
cat >"$root/etc/dpkg/dpkg.cfg.d/90pier-nodoc" <<'CONF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
CONF

rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb

# Answer debconf questions with their defaults during builds (e.g. ucf keeping the
# createcluster.conf above) instead of trying a terminal that is not there. Set in
# debconf rather than as ENV DEBIAN_FRONTEND so it does not leak into containers' env.
echo 'debconf debconf/frontend select Noninteractive' | chroot "$root" debconf-set-selections
