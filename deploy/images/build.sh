#!/usr/bin/env bash
# Builds Pier's local images. No container registry is reachable, so everything starts
# from a Debian rootfs made with debootstrap and imported as pier/debian-base:bookworm;
# every deploy/images/<name>/Dockerfile is then built FROM it. The tag comes from the
# Dockerfile's `# image: <repo>:<tag>` comment; adding an image = adding a folder.
#
# Each image carries a label with the hash of its build inputs; an image whose label
# matches is skipped, so a rerun costs a `docker image inspect` (~0.2 s in all).
#
# Usage: deploy/images/build.sh [name...]   (default: all images)
# Env:   PIER_IMAGES_REBUILD=1 ignores the hashes; PIER_LOG_DIR (default .pier/logs).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
log_dir=${PIER_LOG_DIR:-$repo/.pier/logs}
base_tag=pier/debian-base:bookworm
suite=bookworm
label=pier.build-hash
export DOCKER_BUILDKIT=0 # the 28.x CLI here has no buildx; the legacy builder works

say() { printf '  %-26s %s\n' "$1" "$2"; }
die() { printf 'build.sh: %s\n' "$*" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }
hash_of() { sha256sum | cut -c1-16; }

# Id and hash label of every tag, from one `docker image inspect` (each docker call costs
# ~0.1 s, and a rerun is mostly these). Refreshed after the base is rebuilt.
declare -A ids hashes
inspect_all() {
  local id h tags t
  ids=() hashes=()
  while read -r id h tags; do
    for t in ${tags//,/ }; do ids[$t]=$id hashes[$t]=$h; done
  done < <(docker image inspect -f "{{.Id}} {{index .Config.Labels \"$label\"}} {{range .RepoTags}}{{.}},{{end}}" "$@" 2>/dev/null || true)
}
current_hash() { echo "${hashes[$1]:-}"; }

# The machine's own Debian mirror: only `URIs:` lines (the comments in debian.sources
# carry addresses that do not resolve everywhere), never a host written in the repo.
debian_mirror() {
  local f=/etc/apt/sources.list.d/debian.sources uri
  if [[ -r $f ]]; then
    for uri in $(sed -n 's/^URIs:[[:space:]]*//p' "$f"); do
      [[ $uri == *-security* ]] || { echo "$uri"; return; }
    done
  fi
  if [[ -r /etc/apt/sources.list ]]; then
    uri=$(awk '$1=="deb" { for (i=2;i<=NF;i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' /etc/apt/sources.list)
    [[ -n $uri ]] && { echo "$uri"; return; }
  fi
  die "no Debian mirror found in /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list"
}

# The image keeps the host's apt sources (security + updates included), minus comments.
host_sources() {
  if [[ -r /etc/apt/sources.list.d/debian.sources ]]; then
    grep -v '^[[:space:]]*#' /etc/apt/sources.list.d/debian.sources
  fi
}

ensure_debootstrap() {
  command -v debootstrap >/dev/null && return
  if [[ $(id -u) == 0 && -r /etc/debian_version ]]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  else
    die "debootstrap is missing: run 'apt-get install debootstrap' as root (Debian/Ubuntu)"
  fi
}

# debootstrap may leave proc/sys (or a bind-mounted /dev) mounted when it fails:
# unmount first so rm never walks into the host's filesystems.
remove_rootfs() {
  { grep -o " $1/[^ ]*" /proc/mounts || true; } | sort -r | xargs -r -n1 umount -l
  rm -rf --one-file-system "$1"
}

build_base() {
  local mirror hash rootfs t log
  mirror=$(debian_mirror)
  hash=$( { echo "$suite minbase $mirror"; host_sources; cat "$here/base/setup-rootfs.sh"; } | hash_of)
  if [[ -z ${PIER_IMAGES_REBUILD:-} && $(current_hash "$base_tag") == "$hash" ]]; then
    say "$base_tag" "up to date"; return
  fi
  [[ $(id -u) == 0 ]] || die "building $base_tag needs root (debootstrap)"
  ensure_debootstrap
  t=$(now); log=$log_dir/debian-base.log
  rootfs=$(mktemp -d /var/tmp/pier-rootfs.XXXXXX)
  trap "remove_rootfs '$rootfs'" EXIT
  say "$base_tag" "debootstrap from $mirror (log: ${log#"$repo"/})"
  debootstrap --variant=minbase "$suite" "$rootfs" "$mirror" >"$log" 2>&1 \
    || { tail -n 30 "$log" >&2; die "debootstrap failed"; }
  if [[ -n $(host_sources) ]]; then
    host_sources >"$rootfs/etc/apt/sources.list.d/debian.sources"
    rm -f "$rootfs/etc/apt/sources.list"
  fi
  sh "$here/base/setup-rootfs.sh" "$rootfs"
  tar -C "$rootfs" --numeric-owner -c . | docker import \
    --change "LABEL $label=$hash" --change 'ENV LANG=C.UTF-8' --change 'CMD ["bash"]' \
    - "$base_tag" >>"$log"
  say "$base_tag" "built in $(since "$t")"
}

# `# image: pier/postgres:15` on a Dockerfile's first lines names the tag.
image_tag() {
  sed -n 's/^#[[:space:]]*image:[[:space:]]*\([^[:space:]]*\).*/\1/p' "$1/Dockerfile" | head -n1
}

build_image() {
  local dir=$here/$1 tag hash t log old
  [[ -f $dir/Dockerfile ]] || die "no Dockerfile in $dir"
  tag=$(image_tag "$dir")
  [[ -n $tag ]] || die "$dir/Dockerfile lacks a '# image: <repo>:<tag>' line"
  # Inputs: every file of the folder (name, mode, content) and the base it builds on;
  # not what prepare.sh produces (.prepared/), which prepare.sh itself pins.
  # An image made of files outside its folder (the platform image: Pier's own sources)
  # names them with `prepare.sh --inputs`, when its prepare.sh says it can (a line
  # `# inputs: prepare.sh --inputs`); they count too, so a source change rebuilds it.
  hash=$( { echo "${ids[$base_tag]:-}";
            cd "$dir" && find . -path ./.prepared -prune -o -type f -printf '%m %p\n' | sort &&
              find . -path ./.prepared -prune -o -type f -print0 | sort -z | xargs -0 cat &&
              if grep -q '^# inputs: prepare.sh --inputs' prepare.sh 2>/dev/null; then ./prepare.sh --inputs; fi; } | hash_of)
  if [[ -z ${PIER_IMAGES_REBUILD:-} && $(current_hash "$tag") == "$hash" ]]; then
    say "$tag" "up to date"; return
  fi
  t=$(now); log=$log_dir/image-$1.log
  old=${ids[$tag]:-}
  # An image whose inputs are not all files of its folder (a binary built from the Go
  # module proxy, say) gets them from its prepare.sh, run in the folder first.
  if [[ -x $dir/prepare.sh ]]; then
    (cd "$dir" && ./prepare.sh) >"$log" 2>&1 || { tail -n 20 "$log" >&2; die "preparing $tag failed (full log: $log)"; }
  fi
  if ! docker build --label "$label=$hash" -t "$tag" "$dir" >>"$log" 2>&1; then
    tail -n 40 "$log" >&2; die "building $tag failed (full log: $log)"
  fi
  # Drop the replaced image (fails harmlessly while a container still uses it).
  [[ -z $old ]] || docker image rm "$old" >/dev/null 2>&1 || true
  say "$tag" "built in $(since "$t")"
}

command -v docker >/dev/null || die "docker CLI not found"
docker info >/dev/null 2>&1 || die "docker engine not reachable (is dockerd running?)"
mkdir -p "$log_dir"
# Several people (and test runs) share one engine: build one at a time.
exec 9>"$log_dir/.build.lock"
flock 9

if (($#)); then names=("$@"); else
  names=(); for d in "$here"/*/Dockerfile; do names+=("$(basename "$(dirname "$d")")"); done
fi
tags=(); for n in "${names[@]}"; do tags+=("$(image_tag "$here/$n")"); done

inspect_all "$base_tag" "${tags[@]}"
old_base=${ids[$base_tag]:-}
build_base # (not in an `if`: that would switch off set -e inside it)
[[ $(docker image inspect -f '{{.Id}}' "$base_tag") == "$old_base" ]] || inspect_all "$base_tag" "${tags[@]}"
for n in "${names[@]}"; do build_image "$n"; done
