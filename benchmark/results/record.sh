#!/usr/bin/env bash
# Records the result files behind docs/performance.md and the README's
# main-job table, from this checkout (tools/perfdoc renders them):
#
#   benchmark/results/record.sh [topic ...]
#
# Topics (default: all):
#   main_job         one run of the README's main job
#   microbenchmarks  one run of //benchmark:core_microbenchmarks
#   memory           //test/abuse:attack_report's idle_connections (2,000
#                    and 20,000 connections) and open_streams against
#                    h2rpc's and gRPC C++'s interop servers, three runs each
#                    (memory.json)
#   attacks          every other attack of //test/abuse:attack_report
#                    against both servers, once (attacks.json;
#                    docs/security.md's tables)
#   unary, streaming, large, tls, sync, h2load, scaling
#                    three repetitions each, written as <topic>_1.json ..
#                    <topic>_3.json (scaling: scaling_s<N>_<repetition>.json
#                    for 1, 2 and 3 server processes); the repetitions of
#                    the topics interleave, so a slow minute of the machine
#                    does not fall on one topic only
#   metrics          h2rpc→h2rpc unary 1 KiB at 1 and 120 calls in flight
#                    without and with --metrics (CallMetrics on both
#                    sides), three repetitions of off, on, on, off:
#                    metrics_{off,on}_<repetition>{,b}.json; not in the
#                    default topics
#   tracing          h2rpc→h2rpc unary 1 KiB at 1 and 120 calls in flight
#                    without --tracing, and with 1% and 100% of traces
#                    sampled (a Tracer on both sides exporting over OTLP to
#                    a discarding collector process), three repetitions of
#                    off, 1%, 100%, 100%, 1%, off:
#                    tracing_{off,1pct,all}_<repetition>{,b}.json; not in
#                    the default topics
#   proxy            benchmark/proxy_bench.py: h2rpc_proxy, HAProxy and
#                    nginx between each stack's client and server, three
#                    repetitions (proxy.json); installs Debian's nginx and
#                    haproxy (benchmark/proxies/install.sh); not in the
#                    default topics
#   coro             the coroutine stacks beside the callback ones
#                    (--pairings=same), unary, ping-pong and unconstrained
#                    at 1 and 64 in flight, seven repetitions of 3 s runs
#                    (coro_1.json .. coro_7.json); not in the default topics
#   soak             the soak under faults for 30 minutes (soak.json,
#                    docs/security.md's soak figures): tools/soak
#                    --duration=30m --result_file=benchmark/results/soak.json;
#                    not in the default topics
# Every run puts the server on CPU 0 and the client on CPU 1 (benchmain's
# default on a machine with 2 or more CPUs). h2load is the raw HTTP/2
# reference: nghttp2's h2load against nghttpd serving a 1 KiB file to 1 KiB
# POSTs on one connection, at 1 and 120 requests in flight, pinned like
# benchmain (Debian's nghttp2-server and nghttp2-client, installed here when
# missing). The wide-area files (wan_*.json) come from
# benchmark/wan_bench.py. The default topics take about 25 minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=benchmark/results
topics=("$@")
if ((${#topics[@]} == 0)); then
  topics=(main_job microbenchmarks memory attacks unary streaming large tls
          sync h2load scaling)
fi
if [[ " ${topics[*]} " == *" h2load "* ]] &&
   ! { command -v h2load && command -v nghttpd; } >/dev/null; then
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq \
    --no-install-recommends nghttp2-server nghttp2-client
fi

tools/bazel build -c opt //benchmark:benchmain //benchmark:core_microbenchmarks \
  //test/abuse:attack_report //tools/benchresult
bin=$(tools/bazel info -c opt bazel-bin 2>/dev/null)
benchmain=$bin/benchmark/benchmain
commit=$(git rev-parse --short=12 HEAD)
if [[ -n $(git status --porcelain -- rpc transport benchmark proto) ]]; then
  commit+="-dirty"
fi
both=(--client_stack=h2rpc,grpcpp --server_stack=h2rpc,grpcpp)
common=(--source_commit="$commit" --benchtime=5s)

# attack_report's JSON lines for `servers` x `attacks`, `runs` times each
# (servers alternating), as one file (format h2rpc-attacks/1). Where the
# cgroup v1 pids controller can be written, each attack runs in a cgroup of
# at most 30000 tasks: gRPC C++'s server starts a thread per stream under
# refused_stream_flood, and would otherwise take every pid of the machine
# (pid_max is 32768 here), leaving none for anything else.
pids_cgroup=/sys/fs/cgroup/pids/h2rpc-attacks
run_attacks() {
  local file=$1 runs=$2 attacks=("${@:3}") lines=() attack server i
  local confine=()
  if mkdir -p "$pids_cgroup" 2>/dev/null &&
     echo 30000 >"$pids_cgroup/pids.max" 2>/dev/null; then
    confine=(bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$pids_cgroup")
  fi
  # An attack may carry attack_report flags: name:--flag=value.
  local spec flags
  for spec in "${attacks[@]}"; do
    attack=${spec%%:*}
    flags=()
    [[ $spec == *:* ]] && flags=("${spec#*:}")
    for ((i = 0; i < runs; ++i)); do
      for server in h2rpc grpcpp; do
        echo "== attack_report --server=$server --attack=$attack ${flags[*]}" >&2
        lines+=("$("${confine[@]}" "$bin/test/abuse/attack_report" \
          --server="$server" --attack="$attack" "${flags[@]}" --format=json)")
      done
    done
  done
  local IFS=,
  printf '{"format": "h2rpc-attacks/1", "started": "%s", "commit": "%s", "runs": [%s]}\n' \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$commit" "${lines[*]}" >"$file"
}

# One repetition of the raw HTTP/2 reference, as JSON (format
# h2rpc-h2load/1): h2load's req/s at 1 and 120 requests in flight.
run_h2load() {
  local file=$1 dir port=18080 runs=() line
  dir=$(mktemp -d)
  head -c 1024 /dev/zero | tr '\0' x >"$dir/resp1k"
  head -c 1024 /dev/zero | tr '\0' y >"$dir/req1k"
  taskset -c 0 nghttpd --no-tls -d "$dir" "$port" &
  local server=$!
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
  done
  for m in 1 120; do
    local n=$((m == 1 ? 50000 : 1000000))
    line=$(taskset -c 1 h2load -n "$n" -c 1 -m "$m" -t 1 -d "$dir/req1k" \
      "http://127.0.0.1:$port/resp1k" | grep -E '^finished in')
    runs+=("{\"requests_in_flight\": $m, \"req_per_s\": $(
      sed -E 's/.*, ([0-9.]+) req\/s.*/\1/' <<<"$line")}")
  done
  kill "$server"
  wait "$server" 2>/dev/null || true
  rm -rf "$dir"
  local IFS=,
  printf '{"format": "h2rpc-h2load/1", "started": "%s", "commit": "%s", "command": "h2load -c 1 -m M -t 1 -d req1k http://127.0.0.1:%s/resp1k (nghttpd --no-tls, 1 KiB file)", "version": "%s", "runs": [%s]}\n' \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$commit" "$port" \
    "$(h2load --version | head -1)" "${runs[*]}" >"$file"
}

# One repetition of a topic: its benchmain command.
run_topic() {
  local topic=$1 file=$2
  case $topic in
    unary)
      "$benchmain" "${common[@]}" "${both[@]}" --workloads=unary \
        --max_concurrent_calls=1,8,64,120 --result_file="$file" ;;
    streaming)
      "$benchmain" "${common[@]}" "${both[@]}" --pairings=matched \
        --workloads=streaming --max_concurrent_calls=1,64 \
        --result_file="$file" ;;
    large)
      "$benchmain" "${common[@]}" "${both[@]}" --pairings=matched \
        --workloads=unary --req_size_bytes=1048576 \
        --resp_size_bytes=1048576 --max_concurrent_calls=1,8 \
        --result_file="$file" ;;
    tls)
      "$benchmain" "${common[@]}" "${both[@]}" --pairings=matched --secure \
        --workloads=unary --max_concurrent_calls=1,64 \
        --result_file="$file" ;;
    sync)
      "$benchmain" "${common[@]}" --client_stack=h2rpc,grpcpp \
        --server_stack=h2rpc_sync,grpcpp --pairings=matched \
        --workloads=unary --max_concurrent_calls=1,64 \
        --result_file="$file" ;;
    h2load) run_h2load "$file" ;;
    metrics)
      # Off, on, on, off: whatever the machine's speed does during a
      # repetition weighs on both alike. The second run of each is *b.json.
      local runs=(off on on off) i name
      for i in 0 1 2 3; do
        name=${file/metrics_/metrics_${runs[i]}_}
        if ((i >= 2)); then name=${name%.json}b.json; fi
        "$benchmain" "${common[@]}" --client_stack=h2rpc --server_stack=h2rpc \
          --workloads=unary --max_concurrent_calls=1,120 \
          --metrics="$([[ ${runs[i]} == on ]] && echo true || echo false)" \
          --result_file="$name"
      done ;;
    tracing)
      local settings=(off 1pct all all 1pct off) i name tracing
      for i in 0 1 2 3 4 5; do
        name=${file/tracing_/tracing_${settings[i]}_}
        if ((i >= 3)); then name=${name%.json}b.json; fi
        case ${settings[i]} in
          off) tracing=-1 ;;
          1pct) tracing=0.01 ;;
          all) tracing=1 ;;
        esac
        "$benchmain" "${common[@]}" --client_stack=h2rpc --server_stack=h2rpc \
          --workloads=unary --max_concurrent_calls=1,120 \
          --tracing="$tracing" --result_file="$name"
      done ;;
    *)
      echo "unknown topic '$topic'" >&2
      return 2 ;;
  esac
}

for topic in "${topics[@]}"; do
  if [[ $topic == microbenchmarks ]]; then
    # Google Benchmark's JSON, one run.
    "$bin/benchmark/core_microbenchmarks" --benchmark_min_time=0.2 \
      --benchmark_out="$out/core_microbenchmarks.json" \
      --benchmark_out_format=json >/dev/null
  fi
  if [[ $topic == memory ]]; then
    run_attacks "$out/memory.json" 3 idle_connections:--connections=2000 \
      idle_connections:--connections=20000 open_streams
  fi
  if [[ $topic == attacks ]]; then
    mapfile -t all < <("$bin/test/abuse/attack_report" --attack=list |
      awk '$1 != "idle_connections" && $1 != "open_streams" {print $1}')
    run_attacks "$out/attacks.json" 1 "${all[@]}"
  fi
  if [[ $topic == soak ]]; then
    tools/soak --duration=30m --result_file="$out/soak.json"
  fi
  if [[ $topic == proxy ]]; then
    benchmark/proxy_bench.py --out="$out/proxy.json" >/dev/null
  fi
  if [[ $topic == coro ]]; then
    # Each file runs both pairings of a configuration back to back.
    for i in 1 2 3 4 5 6 7; do
      "$benchmain" --source_commit="$commit" --benchtime=3s --warmup=1s \
        --client_stack=h2rpc,h2rpc_coro --server_stack=h2rpc,h2rpc_coro \
        --pairings=same --workloads=unary,streaming,unconstrained \
        --max_concurrent_calls=1,64 --result_file="$out/coro_$i.json"
    done
  fi
  if [[ $topic == main_job ]]; then
    # The README's command, as README gives it.
    tools/bazel run -c opt //benchmark:main_job -- \
      --source_commit="$commit" --result_file="$out/main_job.json"
  fi
done
for i in 1 2 3; do
  for topic in "${topics[@]}"; do
    case $topic in
      main_job | microbenchmarks | memory | attacks | soak | proxy | coro)
        continue ;;
    esac
    echo "== $topic, repetition $i"
    run_topic "$topic" "$out/${topic}_$i.json"
  done
done
