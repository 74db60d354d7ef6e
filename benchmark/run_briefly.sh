#!/usr/bin/env bash
# Runs a Google Benchmark binary with a tiny time budget; fails if it fails
# or reports no benchmark.
set -euo pipefail
out=$("$1" --benchmark_min_time=0.001 --benchmark_format=json)
echo "$out"
[[ $(grep -c '"name": "BM_' <<<"$out") -gt 0 ]]
