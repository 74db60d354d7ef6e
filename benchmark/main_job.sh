#!/usr/bin/env bash
# The README's main job: h2rpc and gRPC C++ side by side under benchmain
# (matched pairings: h2rpc→h2rpc and gRPC C++→gRPC C++, the two run one after
# the other for each number of calls in flight; 1 KiB unary calls at 1 and
# 120 in flight on one connection; server threads on CPU 0, client threads on
# CPU 1; 1 s warm-up and 10 s measured per run), then benchresult's table of
# the pairings with the h2rpc/gRPC C++ ratio.
#
#   tools/bazel run -c opt //benchmark:main_job [-- benchmain flags]
#
# Flags after `--` go to benchmain and override the defaults above (e.g.
# --benchtime=3s, --max_concurrent_calls=1,8,64,120, --secure). The result
# file is written to --result_file when given (relative to the directory
# Bazel was run in), else to a temporary file whose path is printed.
# Arguments from the BUILD rule: benchmain, then benchresult.
set -euo pipefail
benchmain=$(realpath "$1")
benchresult=$(realpath "$2")
shift 2
if [[ -n "${BUILD_WORKING_DIRECTORY:-}" ]]; then
  cd "$BUILD_WORKING_DIRECTORY"
fi

result=""
for arg in "$@"; do
  case $arg in
    --result_file=*) result=${arg#--result_file=} ;;
  esac
done
extra=()
if [[ -z $result ]]; then
  result=$(mktemp --tmpdir h2rpc-main-job.XXXXXX.json)
  extra=(--result_file="$result")
fi

"$benchmain" --workloads=unary --client_stack=h2rpc,grpcpp \
  --server_stack=h2rpc,grpcpp --pairings=matched --max_concurrent_calls=1,120 \
  --benchtime=10s "${extra[@]}" "$@"
echo
echo "benchresult --pairings $result"
"$benchresult" --pairings "$result"
