#!/usr/bin/env bash
# Runs every workload in all four pairings (and with gzip, and unary,
# streaming and handshake over TLS) for a moment, then reads the result files
# back with benchresult; then unary and streaming against h2rpc's server with
# synchronous handlers (h2rpc_sync), in one and in two processes; then unary
# over two server processes (round_robin and pick_first) and against servers
# on unix-domain sockets (every server stack). Fails if a run
# had errors or no ops (benchmain's exit status), a result file does not
# round-trip, or the backends did not serve as the policy says.
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
"$benchmain" --workloads=unconstrained,streaming_from_server \
  --client_stack=$both --server_stack=$both --compression=off --max_concurrent_calls=2 \
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

# Rows: uncompressed, 4 workloads x 4 pairings; gzip, 2 workloads x 4
# pairings plus 2 unconstrained (under TSan 2 x 1 plus 1); plaintext
# handshake, 4 pairings; TLS, 3 workloads x 4 pairings (under TSan x 1).
expected=$((4 * 4 + 2 * 4 + 2 + 4 + 3 * tls_pairings))
[[ $gzip_stacks == h2rpc ]] && expected=$((4 * 4 + 2 * 1 + 1 + 4 + 3 * 1))
rows=$(grep -cE \
  '^(unary|streaming|unconstrained|streaming_from_server|handshake) ' "$table")
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

# h2rpc's server with synchronous handlers (server stack h2rpc_sync): unary
# and ping-pong from the h2rpc client, with the server in this process and
# in a child --server_only process. Each run has nonzero QPS in the result
# file, which records the server stack, and benchresult shows it as a
# pairing of its own.
sync_result="$TEST_TMPDIR/benchmain_sync.json"
"$benchmain" --workloads=unary,streaming --client_stack=h2rpc \
  --server_stack=h2rpc,h2rpc_sync "${brief[@]}" \
  --result_file="$sync_result" | tee "$TEST_TMPDIR/sync.txt"
sync_two_result="$TEST_TMPDIR/benchmain_sync_two.json"
"$benchmain" --workloads=unary,streaming --client_stack=h2rpc \
  --server_stack=h2rpc_sync --process=two "${brief[@]}" \
  --result_file="$sync_two_result" | tee -a "$TEST_TMPDIR/sync.txt"
[[ $(grep -cE '^(unary|streaming) h2rpc->h2rpc_sync ' \
      "$TEST_TMPDIR/sync.txt") -eq 4 ]] ||
  { echo "expected 4 h2rpc->h2rpc_sync rows"; exit 1; }
python3 - "$sync_result" "$sync_two_result" <<'PY'
import json, sys
seen = []
for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as f:
        for run in json.load(f)["runs"]:
            features = run["features"]
            if features["server_stack"] != "h2rpc_sync":
                continue
            key = (features["workload"], features["process"])
            if not run["qps"] > 0:
                sys.exit(f"h2rpc->h2rpc_sync {key}: QPS {run['qps']}")
            if run["server"] is None:
                sys.exit(f"h2rpc->h2rpc_sync {key}: no server figures")
            seen.append(key)
expected = [(w, p) for p in ("one", "two") for w in ("unary", "streaming")]
if sorted(seen) != sorted(expected):
    sys.exit(f"h2rpc_sync runs {seen}, expected {expected}")
PY
"$benchresult" --pairings "$sync_result" | tee "$TEST_TMPDIR/sync_pairings.txt"
[[ $(grep -cF '| h2rpc→h2rpc_sync |' "$TEST_TMPDIR/sync_pairings.txt") \
    -eq 2 ]] || { echo "benchresult lost h2rpc→h2rpc_sync"; exit 1; }

# The coroutine stacks (h2rpc_coro) beside the callback ones, each client
# with the server of its own name (--pairings=same): every workload but the
# handshake runs with ops, and benchresult adds the h2rpc_coro/h2rpc ratio.
coro_result="$TEST_TMPDIR/benchmain_coro.json"
"$benchmain" --workloads=unary,streaming,unconstrained,streaming_from_server \
  --client_stack=h2rpc,h2rpc_coro --server_stack=h2rpc,h2rpc_coro \
  --pairings=same "${brief[@]}" --result_file="$coro_result" |
  tee "$TEST_TMPDIR/coro.txt"
[[ $(grep -cE '^[a-z_]+ h2rpc_coro->h2rpc_coro ' "$TEST_TMPDIR/coro.txt") \
    -eq 4 ]] || { echo "expected 4 h2rpc_coro->h2rpc_coro rows"; exit 1; }
[[ $(grep -cE '^[a-z_]+ h2rpc->h2rpc ' "$TEST_TMPDIR/coro.txt") -eq 4 ]] ||
  { echo "expected 4 h2rpc->h2rpc rows"; exit 1; }
"$benchresult" --pairings "$coro_result" | tee "$TEST_TMPDIR/coro_pairings.txt"
[[ $(grep -cF '| h2rpc_coro/h2rpc |' "$TEST_TMPDIR/coro_pairings.txt") \
    -eq 4 ]] || { echo "benchresult lost h2rpc_coro/h2rpc"; exit 1; }
if "$benchmain" --workloads=handshake --client_stack=h2rpc_coro \
    "${brief[@]}" > "$TEST_TMPDIR/coro_handshake.txt" 2>&1; then
  echo "expected the coroutine client to refuse the handshake workload"
  exit 1
fi
grep -q 'h2rpc_coro does not run the handshake workload' \
  "$TEST_TMPDIR/coro_handshake.txt" ||
  { cat "$TEST_TMPDIR/coro_handshake.txt"; exit 1; }

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

# --servers: two server processes behind one target, every client connection
# (two per client here) balancing over both. round_robin: both backends
# serve requests, in the table and through benchresult; pick_first: the
# first address gets them all. round_robin sends only to connected backends:
# the warm-up leaves the second connection time to be ready before the
# measured calls start, under sanitizers too.
lb=(--servers=2 --workloads=unary --connections=2 --benchtime=200ms
    --warmup=1s --client_cpus= --server_cpus= --max_concurrent_calls=4)
lb_result="${TEST_TMPDIR:-/tmp}/benchmain_lb.json"
"$benchmain" --lb_policy=round_robin --client_stack=$both \
  --server_stack=$both "${lb[@]}" --result_file="$lb_result" |
  tee "$TEST_TMPDIR/rr.txt"
"$benchmain" --lb_policy=pick_first --client_stack=$both \
  --server_stack=h2rpc "${lb[@]}" | tee "$TEST_TMPDIR/pf.txt"
# "  backends (requests): 127.0.0.1:P1 N1 (x%), 127.0.0.1:P2 N2 (y%)" ->
# "N1 N2", one line per run.
served() {
  grep '^  backends (requests): ' "$1" |
    sed -E 's/ \([0-9.]+%\)//g; s/[^ ]*127\.0\.0\.1:[0-9]+ //g;
            s/^ *backends \(requests\): //; s/,//g'
}
[[ $(served "$TEST_TMPDIR/rr.txt" | grep -cE '^[1-9][0-9]* [1-9][0-9]*$') \
    -eq 4 ]] ||
  { echo "round_robin: expected 4 runs with both backends serving"; exit 1; }
[[ $(served "$TEST_TMPDIR/pf.txt" | grep -cE '^[1-9][0-9]* 0$') -eq 2 ]] ||
  { echo "pick_first: expected 2 runs served by the first backend only"
    exit 1; }
# The load-balancing knobs (benchmark/lb_policies.sh): weighted_round_robin
# over servers sending load reports, both serving; a server failing every
# call, its errors expected (exit 0) and shown; and the knobs refused where
# they do not apply.
"$benchmain" --lb_policy=weighted_round_robin --orca --server_work_us=10 \
  --client_stack=h2rpc --server_stack=h2rpc "${lb[@]}" |
  tee "$TEST_TMPDIR/wrr.txt"
[[ $(served "$TEST_TMPDIR/wrr.txt" | grep -cE '^[1-9][0-9]* [1-9][0-9]*$') \
    -eq 1 ]] ||
  { echo "weighted_round_robin: expected both backends serving"; exit 1; }
"$benchmain" --lb_policy=round_robin --server_fail_percent=0,100 \
  --client_stack=h2rpc --server_stack=h2rpc "${lb[@]}" |
  tee "$TEST_TMPDIR/failing.txt"
grep -qE 'servers=2 round_robin .* [1-9][0-9]*$' "$TEST_TMPDIR/failing.txt" ||
  { echo "--server_fail_percent: expected errors in the table"; exit 1; }
for refused in "--orca --server_stack=grpcpp" \
    "--server_fail_percent=5 --server_stack=grpcpp" \
    "--lb_policy=weighted_round_robin --client_stack=grpcpp" \
    "--server_fail_percent=101"; do
  # shellcheck disable=SC2086
  if "$benchmain" $refused "${lb[@]}" >/dev/null 2>&1; then
    echo "benchmain $refused: expected a refusal"; exit 1
  fi
done
[[ $(grep -c '"servers": 2, "lb_policy": "round_robin"' "$lb_result") \
    -eq 4 ]] || { echo "$lb_result lacks the servers/lb_policy features"
                  exit 1; }
"$benchresult" "$lb_result" | tee "$TEST_TMPDIR/lb_table.txt"
[[ $(grep -cE 'servers=2 round_robin .* [1-9][0-9]* / [1-9][0-9]*$' \
      "$TEST_TMPDIR/lb_table.txt") -eq 4 ]] ||
  { echo "benchresult lost the requests per backend"; exit 1; }

# --target takes gRPC's naming syntax: a --server_only server of each stack
# (h2rpc, h2rpc_sync, grpcpp) on an abstract unix-domain socket, driven by
# both clients.
for stack in h2rpc h2rpc_sync grpcpp; do
  name="h2rpc-benchmain-smoke-$$-$stack"
  coproc server { exec "$benchmain" --server_only --server_stack=$stack \
                    --server_address="unix-abstract:$name" --server_cpus=; }
  read -r -t 60 line <&"${server[0]}" ||
    { echo "no answer from the $stack server on unix-abstract:$name"; exit 1; }
  [[ $line == "listening on port 0" ]] || { echo "$stack: '$line'"; exit 1; }
  "$benchmain" --target="unix-abstract:$name" --client_stack=$both \
    "${brief[@]}" | tee -a "$TEST_TMPDIR/targets.txt"
  exec {server[1]}>&-
  wait "$server_PID"
done
[[ $(grep -cE '^unary (h2rpc|grpcpp)->remote ' "$TEST_TMPDIR/targets.txt") \
    -eq 6 ]] || { echo "expected 6 runs on unix-abstract targets"; exit 1; }

# Bad load-balancing flags are refused, naming the flag.
for flags in "--servers=0" "--lb_policy=random" \
             "--servers=2 --target=127.0.0.1:1" "--servers=2 --process=one"; do
  # shellcheck disable=SC2086  # word splitting intended
  if "$benchmain" $flags > "$TEST_TMPDIR/bad_lb.txt" 2>&1; then
    echo "expected $flags to be refused"; exit 1
  fi
  grep -q -- "${flags%% *}" "$TEST_TMPDIR/bad_lb.txt" ||
    { cat "$TEST_TMPDIR/bad_lb.txt"; exit 1; }
done
