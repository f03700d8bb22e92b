#!/usr/bin/env bash
# Puts into .prepared/ what the platform image is built from (the build context is this
# folder, and Pier's sources live elsewhere in the repository):
#   node  the host's own node binary: Pier needs Node >= 20.19, Debian bookworm has 18, no
#         registry is reachable; the node that runs ./pier is there by definition. Only a
#         binary that needs nothing but glibc and libstdc++ (as nodejs.org's and
#         NodeSource's builds) is taken; a Debian-built one linked to libnode is refused.
#   app   the five services, kit, proto/ and deploy/platform/ (their tests left out), and the
#         web console built (packages/console/dist, where the gateway looks by default), in a
#         workspace of their own whose root depends only on them, tsx and pg, installed with
#         `pnpm install --prod` (node-linker=hoisted: one plain node_modules; install
#         scripts off: nothing Pier uses needs a compiled add-on; typings, maps and docs
#         removed), and each service bundled into app/dist/<service>.mjs
#         (deploy/platform/bundle.ts, with the repository's esbuild), which pier-platform
#         runs with plain node: compute idle takes ~110 MB less than under tsx.
#
# `prepare.sh --inputs` prints what the image is made of outside this folder; build.sh adds
# it to the image's hash (so a change in a service's source rebuilds the image) because of:
# inputs: prepare.sh --inputs
set -euo pipefail
here=$(pwd)
repo=$(cd ../../.. && pwd)
packages=(packages/kit services/auth services/compute services/databases services/gateway services/secrets services/events)

node_bin=$(readlink -f "$(command -v node)")

inputs() {
  cd "$repo"
  "$node_bin" --version
  sha256sum "$node_bin" | cut -c1-16
  { for p in "${packages[@]}"; do echo "$p/package.json"; find "$p/src" -type f; done
    find proto deploy/platform packages/console/src packages/console/public packages/console/scripts packages/sdk/src -type f
    echo packages/console/index.html; echo packages/console/package.json; echo package.json; echo pnpm-lock.yaml; } | LC_ALL=C sort | xargs sha256sum
}
if [[ ${1:-} == --inputs ]]; then inputs; exit 0; fi

"$node_bin" -e 'const [a, b] = process.versions.node.split(".").map(Number); if (a < 20 || (a === 20 && b < 19)) { console.error(`node ${process.version}: Pier needs >= 20.19`); process.exit(1); }'
extra=$(ldd "$node_bin" | awk '{print $1}' | grep -Ev '^(linux-vdso|libc|libm|libdl|libpthread|libstdc\+\+|libgcc_s|librt)\.|^/lib64/ld-linux' || true)
if [[ -n $extra ]]; then
  echo "$node_bin needs shared libraries the image lacks ($(echo $extra)); use a node from nodejs.org or NodeSource" >&2
  exit 1
fi

rm -rf .prepared
mkdir -p .prepared/app
cp "$node_bin" .prepared/node
for p in "${packages[@]}"; do
  mkdir -p ".prepared/app/$p"
  cp -r "$repo/$p/package.json" "$repo/$p/src" ".prepared/app/$p/"
done
# The console: static files only (the gateway serves them), built in the repository, whose
# node_modules has Vite; nothing of the console's build comes into the image.
(cd "$repo" && "$node_bin" --import tsx packages/console/scripts/build.ts --if-needed)
mkdir -p .prepared/app/packages/console
cp -r "$repo/packages/console/dist" .prepared/app/packages/console/
rm -f .prepared/app/packages/console/dist/.inputs
mkdir -p .prepared/app/deploy
cp -r "$repo/proto" .prepared/app/
cp -r "$repo/deploy/platform" .prepared/app/deploy/
cp "$repo/pnpm-lock.yaml" .prepared/app/
printf 'packages:\n  - packages/kit\n  - services/*\n' >.prepared/app/pnpm-workspace.yaml
# The root: the services and what the image runs them with (versions as the repo's root has them).
"$node_bin" -e '
  const root = require(process.argv[1]);
  const dev = root.devDependencies;
  const pkg = { name: "pier-platform", private: true, type: "module", packageManager: root.packageManager,
    dependencies: { tsx: dev.tsx, pg: dev.pg } };
  for (const s of ["auth", "compute", "databases", "gateway", "secrets", "events", "kit"]) pkg.dependencies[`@pier/${s}`] = "workspace:*";
  require("fs").writeFileSync(".prepared/app/package.json", JSON.stringify(pkg, null, 2) + "\n");
' "$repo/package.json"
pnpm=(pnpm)
command -v pnpm >/dev/null || pnpm=(corepack pnpm)
cd .prepared/app
# The repo's lockfile pins every version; only the root importer differs, so --prefer-offline
# resolves nothing anew and takes the packages from the machine's pnpm store.
CI=1 "${pnpm[@]}" install --prod --prefer-offline --no-frozen-lockfile --ignore-scripts \
  --config.node-linker=hoisted --config.confirmModulesPurge=false --reporter=append-only
rm -f pnpm-lock.yaml
# Type declarations, source maps and docs are for editors, not for node: without them the
# image is ~65 MB and ~6,600 files lighter, and the node imports it that much faster.
find node_modules -type f \( -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.map' -o -name '*.md' \) -delete
# Bundled from the image's own tree (its sources, its production dependencies as installed).
(cd "$repo" && "$node_bin" --import tsx deploy/platform/bundle.ts "$here/.prepared/app")
du -sh node_modules
echo "prepared in $here/.prepared"
