#!/usr/bin/env bash
# docs/scaling-out.md's load-balancing measurements, with benchmain's
# --servers=3 (h2rpc client and servers, unary 1 KiB, 64 calls in flight),
# each pair of runs alternated `ROUNDS` times (default 2) in one sitting:
#   1. one server twice as slow (--server_work_us=200,200,400: a call holds
#      its server's loop for 200 or 400 us) under round_robin and under
#      weighted_round_robin, the servers sending ORCA load reports (--orca;
#      A58's default 10 s blackout passes during a 12 s warmup);
#   2. one server failing half its calls (--server_fail_percent=0,0,50)
#      under round_robin and under outlier_detection_experimental over
#      round_robin (the errors column counts the warmup's too).
#   benchmark/lb_policies.sh [ROUNDS] > benchmark/results/lb_policies.txt
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
tools/bazel build -c opt //benchmark:benchmain >&2
bench=bazel-bin/benchmark/benchmain
common=(--servers=3 --max_concurrent_calls=64 --benchtime=5s
  --client_stack=h2rpc --server_stack=h2rpc)
outlier_detection='{"loadBalancingConfig": [{"outlier_detection_experimental":
  {"interval": "1s", "baseEjectionTime": "30s", "maxEjectionPercent": 34,
   "failurePercentageEjection": {"threshold": 30, "requestVolume": 100,
                                 "minimumHosts": 3},
   "childPolicy": [{"round_robin": {}}]}}]}'

# Prints the result lines of one run (its table row, backends and errors).
run() {
  echo "# $*"
  "$bench" "${common[@]}" "$@" 2>&1 | grep -E '^unary|backends' || true
}

for ((i = 1; i <= rounds; i++)); do
  echo "## round $i: one server twice as slow"
  for policy in round_robin weighted_round_robin; do
    run --lb_policy=$policy --orca --server_work_us=200,200,400 --warmup=12s
  done
  echo "## round $i: one server failing half its calls"
  run --lb_policy=round_robin --server_fail_percent=0,0,50 --warmup=2s
  run --server_fail_percent=0,0,50 --warmup=2s \
    --service_config="$outlier_detection"
done
