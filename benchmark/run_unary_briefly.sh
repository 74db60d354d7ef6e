#!/usr/bin/env bash
# Runs the unary benchmark for a moment; fails unless every run completed
# calls without errors.
set -euo pipefail
out=$("$1" --max_concurrent_calls=1,8 --benchtime=300ms --warmup=100ms \
      --server_cpu=-1 --client_cpu=-1)
echo "$out"
# Data rows: concurrency, QPS > 0, ..., errors == 0.
rows=$(awk '$1 ~ /^[0-9]+$/ && $2 > 0 && $NF == 0' <<<"$out" | wc -l)
[[ $rows -eq 2 ]]
