#!/usr/bin/env bash
# Installs Debian's nginx and HAProxy for benchmark/proxy_bench.py, without
# letting their packages start the default services (nginx's would listen
# on 0.0.0.0:80): a policy-rc.d that refuses every start is in place during
# the install. Afterwards it checks that neither runs. Idempotent; a no-op
# when both are installed.
set -euo pipefail
if command -v nginx >/dev/null && command -v haproxy >/dev/null; then
  exit 0
fi
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
policy=/usr/sbin/policy-rc.d
saved=
if [[ -e $policy ]]; then
  saved=$(mktemp)
  "${sudo_cmd[@]}" cp -p "$policy" "$saved"
fi
restore() {
  if [[ -n $saved ]]; then
    "${sudo_cmd[@]}" cp -p "$saved" "$policy"
    rm -f "$saved"
  else
    "${sudo_cmd[@]}" rm -f "$policy"
  fi
}
trap restore EXIT
printf '#!/bin/sh\nexit 101\n' | "${sudo_cmd[@]}" tee "$policy" >/dev/null
"${sudo_cmd[@]}" chmod 755 "$policy"
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq \
  --no-install-recommends nginx haproxy >/dev/null
if pgrep -x nginx >/dev/null || pgrep -x haproxy >/dev/null; then
  echo "install.sh: nginx or haproxy is running after the install" >&2
  exit 1
fi
