#!/usr/bin/env bash
# Runs every workload in all four pairings (and with gzip) for a moment, then
# reads the result file back with benchresult. Fails if a run had errors or
# no ops (benchmain's exit status), or the result file does not round-trip.
set -euo pipefail
benchmain=$1
benchresult=$2
result="${TEST_TMPDIR:-/tmp}/benchmain_smoke.json"

common=(--connections=1 --benchtime=300ms --warmup=100ms --client_cpus=
        --server_cpus=)
both=h2rpc,grpcpp
# Under ThreadSanitizer (.bazelrc's tsan config sets TSAN_OPTIONS), gRPC
# C++'s compression runs zlib, which TSan sees, on buffers whose hand-off
# through the uninstrumented gRPC it does not see: compressed runs there are
# h2rpc's only.
gzip_stacks=$both
[[ -n "${TSAN_OPTIONS:-}" ]] && gzip_stacks=h2rpc

table="$TEST_TMPDIR/table.txt"
"$benchmain" --workloads=unary,streaming --client_stack=$both \
  --server_stack=$both --compression=off --max_concurrent_calls=2 \
  "${common[@]}" --result_file="$result" | tee "$table"
"$benchmain" --workloads=unary,streaming --client_stack=$gzip_stacks \
  --server_stack=$gzip_stacks --compression=gzip --max_concurrent_calls=2 \
  "${common[@]}" | tee -a "$table"
"$benchmain" --workloads=unconstrained --client_stack=$both \
  --server_stack=$both --compression=off --max_concurrent_calls=2 \
  "${common[@]}" | tee -a "$table"
# gRPC C++ 1.51 livelocks on compressed unconstrained streams (benchmain
# refuses that run, checked below), so only h2rpc's client runs them.
"$benchmain" --workloads=unconstrained --client_stack=h2rpc \
  --server_stack=$gzip_stacks --compression=gzip --max_concurrent_calls=2 \
  "${common[@]}" | tee -a "$table"

# Uncompressed: 3 workloads x 4 pairings; gzip: 2 workloads x 4 pairings
# plus 2 unconstrained (1 and 1 under TSan).
expected=22
[[ $gzip_stacks == h2rpc ]] && expected=15
rows=$(grep -cE '^(unary|streaming|unconstrained) ' "$table")
[[ $rows -eq $expected ]] ||
  { echo "expected $expected rows, got $rows"; exit 1; }

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

# Bad flags are refused with a message naming the flag.
if "$benchmain" --client_cpus=one > "$TEST_TMPDIR/bad.txt" 2>&1; then
  echo "expected --client_cpus=one to be refused"; exit 1
fi
grep -q "bad --client_cpus entry 'one'" "$TEST_TMPDIR/bad.txt" ||
  { cat "$TEST_TMPDIR/bad.txt"; exit 1; }
