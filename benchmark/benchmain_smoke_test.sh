#!/usr/bin/env bash
# Runs every workload in all four pairings (and with gzip, and unary,
# streaming and handshake over TLS) for a moment, then reads the result files
# back with benchresult. Fails if a run had errors or no ops (benchmain's exit
# status), or a result file does not round-trip.
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
# Likewise gRPC C++'s TLS runs OpenSSL on buffers handed between its
# threads: TLS runs there are h2rpc's only (h2rpc's own TLS stays checked).
gzip_stacks=$both
tls_stacks=$both
tls_pairings=4
if [[ -n "${TSAN_OPTIONS:-}" ]]; then
  gzip_stacks=h2rpc
  tls_stacks=h2rpc
  tls_pairings=1
fi

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

# TLS with gRPC's interop test credentials, which benchmain finds in its
# runfiles: unary and ping-pong, then a connection per op (handshake), in
# plaintext and over TLS. Shorter runs: these only have to work.
brief=(--connections=1 --benchtime=200ms --warmup=50ms --client_cpus=
       --server_cpus= --max_concurrent_calls=2)
secure_result="${TEST_TMPDIR:-/tmp}/benchmain_secure.json"
"$benchmain" --workloads=unary,streaming --client_stack=$tls_stacks \
  --server_stack=$tls_stacks --secure "${brief[@]}" \
  --result_file="$secure_result" | tee -a "$table"
"$benchmain" --workloads=handshake --client_stack=$both --server_stack=$both \
  "${brief[@]}" | tee -a "$table"
"$benchmain" --workloads=handshake --client_stack=$tls_stacks \
  --server_stack=$tls_stacks --secure "${brief[@]}" | tee -a "$table"

# Rows: uncompressed, 3 workloads x 4 pairings; gzip, 2 workloads x 4
# pairings plus 2 unconstrained (under TSan 2 x 1 plus 1); plaintext
# handshake, 4 pairings; TLS, 3 workloads x 4 pairings (under TSan x 1).
expected=$((3 * 4 + 2 * 4 + 2 + 4 + 3 * tls_pairings))
[[ $gzip_stacks == h2rpc ]] && expected=$((3 * 4 + 2 * 1 + 1 + 4 + 3 * 1))
rows=$(grep -cE '^(unary|streaming|unconstrained|handshake) ' "$table")
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

# The TLS runs say so: in the table, the result file and benchresult.
tls_rows=$(grep -cE '^(unary|streaming|handshake) .* tls ' "$table")
[[ $tls_rows -eq $((3 * tls_pairings)) ]] ||
  { echo "expected $((3 * tls_pairings)) tls rows, got $tls_rows"; exit 1; }
[[ $(grep -c '"secure": true' "$secure_result") -eq $((2 * tls_pairings)) ]] ||
  { echo "expected $((2 * tls_pairings)) secure runs in $secure_result"; exit 1; }
grep -q '"secure": false' "$result" ||
  { echo "plaintext runs lack \"secure\": false"; exit 1; }
"$benchresult" "$secure_result" | tee "$TEST_TMPDIR/secure.txt"
[[ $(grep -cF 'tls' "$TEST_TMPDIR/secure.txt") -ge $((2 * tls_pairings)) ]] ||
  { echo "benchresult lost the tls feature"; exit 1; }

# Missing credentials: a clear error naming the flag, before any run.
if "$benchmain" --secure --tls_credentials_dir=/nonexistent \
    > "$TEST_TMPDIR/nocreds.txt" 2>&1; then
  echo "expected --secure without credentials to fail"; exit 1
fi
grep -q -- '--tls_credentials_dir=/nonexistent: .*ca.pem' \
  "$TEST_TMPDIR/nocreds.txt" || { cat "$TEST_TMPDIR/nocreds.txt"; exit 1; }

# Bad flags are refused with a message naming the flag.
if "$benchmain" --client_cpus=one > "$TEST_TMPDIR/bad.txt" 2>&1; then
  echo "expected --client_cpus=one to be refused"; exit 1
fi
grep -q "bad --client_cpus entry 'one'" "$TEST_TMPDIR/bad.txt" ||
  { cat "$TEST_TMPDIR/bad.txt"; exit 1; }
