#!/usr/bin/env bash
# Installs the npm packages of the web tests' real clients (test/web/node:
# Connect-ES, grpc-web, esbuild, playwright-core) into a directory named by the hash
# of their package-lock.json, where the tests find them:
#   /var/tmp/h2rpc-npm/<sha256 of package-lock.json>/node_modules
# Installs Debian's nodejs and npm first when node or npm is missing. Does
# nothing when that directory is complete. Called by tools/bazel.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
lock="$here/node/package-lock.json"
hash="$(sha256sum "$lock" | cut -c1-16)"
dest="/var/tmp/h2rpc-npm/$hash"
[[ -f $dest/.complete ]] && exit 0

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "install_npm_modules.sh: installing nodejs npm" >&2
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq \
    --no-install-recommends nodejs npm >&2
fi

echo "install_npm_modules.sh: npm ci into $dest" >&2
mkdir -p "$dest"
chmod 1777 /var/tmp/h2rpc-npm 2>/dev/null || true
cp "$here/node/package.json" "$lock" "$dest/"
(cd "$dest" && npm ci --no-audit --no-fund --loglevel=error >&2)
touch "$dest/.complete"
