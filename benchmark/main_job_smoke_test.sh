#!/usr/bin/env bash
# Runs the README's main job (benchmark/main_job.sh) for a moment: fails
# unless both matched pairings ran without errors and benchresult printed the
# h2rpc/grpcpp ratio row for each number of calls in flight.
set -euo pipefail
main_job=$1
benchmain=$2
benchresult=$3
result="${TEST_TMPDIR:-/tmp}/main_job.json"
out="${TEST_TMPDIR:-/tmp}/main_job.txt"
"$main_job" "$benchmain" "$benchresult" --benchtime=300ms \
  --warmup=100ms --client_cpus= --server_cpus= --result_file="$result" |
  tee "$out"
for pairing in 'h2rpc→h2rpc' 'grpcpp→grpcpp'; do
  [[ $(grep -c "^| unary .* | $pairing " "$out") -eq 2 ]] || {
    echo "expected two rows of $pairing" >&2
    exit 1
  }
done
[[ $(grep -cE '^\| unary .* \| h2rpc/grpcpp \| [0-9.]+x \|' "$out") -eq 2 ]] || {
  echo "expected two h2rpc/grpcpp ratio rows" >&2
  exit 1
}
! grep -q 'h2rpc→grpcpp\|grpcpp→h2rpc' "$out" || {
  echo "a mixed pairing ran" >&2
  exit 1
}
