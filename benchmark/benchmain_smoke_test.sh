#!/usr/bin/env bash
# Runs every workload in all four pairings (and with gzip) for a moment, then
# reads the result file back with benchresult. Fails if a run had errors or
# no ops (benchmain's exit status), or the result file does not round-trip.
set -euo pipefail
benchmain=$1
benchresult=$2
result="${TEST_TMPDIR:-/tmp}/benchmain_smoke.json"

common=(--server_stack=h2rpc,grpcpp --connections=1 --benchtime=300ms
        --warmup=100ms --client_cpus= --server_cpus=)
"$benchmain" --workloads=unary,streaming --client_stack=h2rpc,grpcpp \
  --compression=off,gzip --max_concurrent_calls=2 "${common[@]}" \
  --result_file="$result" | tee "$TEST_TMPDIR/table.txt"
"$benchmain" --workloads=unconstrained --client_stack=h2rpc \
  --compression=off,gzip --max_concurrent_calls=2 "${common[@]}" |
  tee -a "$TEST_TMPDIR/table.txt"
# gRPC C++ 1.51 livelocks on compressed unconstrained streams (benchmain
# refuses that run, checked below), so its client runs them uncompressed.
"$benchmain" --workloads=unconstrained --client_stack=grpcpp \
  --compression=off --max_concurrent_calls=2 "${common[@]}" |
  tee -a "$TEST_TMPDIR/table.txt"

# unary + streaming: 2 compressions x 4 pairings; unconstrained: 6.
rows=$(grep -cE '^(unary|streaming|unconstrained) ' "$TEST_TMPDIR/table.txt")
[[ $rows -eq 22 ]] || { echo "expected 22 rows, got $rows"; exit 1; }

# The refused combination fails with a clear error, not zero operations.
if "$benchmain" --workloads=unconstrained --client_stack=grpcpp \
    --server_stack=h2rpc --compression=gzip --max_concurrent_calls=1 \
    --benchtime=100ms --warmup=0s --client_cpus= --server_cpus= \
    > "$TEST_TMPDIR/refused.txt" 2>&1; then
  echo "expected the compressed unconstrained gRPC C++ run to fail"; exit 1
fi
grep -q 'livelocks' "$TEST_TMPDIR/refused.txt" ||
  { cat "$TEST_TMPDIR/refused.txt"; exit 1; }

"$benchresult" "$result" | tee "$TEST_TMPDIR/one.txt"
for pairing in 'h2rpc→h2rpc' 'h2rpc→grpcpp' 'grpcpp→h2rpc' \
               'grpcpp→grpcpp'; do
  grep -qF "$pairing" "$TEST_TMPDIR/one.txt" ||
    { echo "benchresult lost $pairing"; exit 1; }
done
"$benchresult" "$result" "$result" > "$TEST_TMPDIR/two.txt"
grep -q 'TotalOps' "$TEST_TMPDIR/two.txt"
