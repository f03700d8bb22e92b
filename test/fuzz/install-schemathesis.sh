#!/usr/bin/env bash
# Installs the OpenAPI fuzzer `pnpm fuzz` runs (schemathesis, from PyPI, at the version
# pinned in test/fuzz/requirements.txt) into a virtualenv outside the checkout, and prints
# the path of its `schemathesis` command. A venv that already has the pinned version is
# left alone, so a rerun costs one `pip` metadata read.
#
# Env: PIER_FUZZ_VENV (default ${XDG_CACHE_HOME:-~/.cache}/pier/schemathesis-venv).
# Needs python3 with its venv module (Debian: python3-venv); ./pier test installs that.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
requirements=$here/requirements.txt
venv=${PIER_FUZZ_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/pier/schemathesis-venv}
want=$(sed -n 's/^schemathesis==\([^ ]*\).*/\1/p' "$requirements")
[[ -n $want ]] || { echo "install-schemathesis.sh: no schemathesis==<version> in $requirements" >&2; exit 1; }

have=$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("schemathesis"))' 2>/dev/null || true)
if [[ $have != "$want" ]]; then
  command -v python3 >/dev/null || { echo "install-schemathesis.sh: python3 is missing (Debian: apt-get install python3-venv)" >&2; exit 1; }
  echo "installing schemathesis $want into $venv" >&2
  mkdir -p "$(dirname "$venv")"
  [[ -x $venv/bin/pip ]] || python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements" >&2
fi
echo "$venv/bin/schemathesis"
