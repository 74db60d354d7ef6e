#!/usr/bin/env bash
# Consumer tests: h2rpc used as a dependency, out of tree, the three ways
# docs/getting-started.md shows. Each project generates code from its own
# helloworld.proto (test/consumer/helloworld.proto) with protoc-gen-h2rpc,
# serves helloworld.Greeter and calls it (test/consumer/greeter.cc), and
# calls a gRPC C++ server of the same service and serves its client
# (test/consumer/grpc, built first with Debian's libgrpc++).
#
#   test/consumer/run.sh [--install-deb] [-- CMAKE_ARGS...]
#     Builds h2rpc with CMake for the prefix /usr (tools/cmake-build: ctest
#     runs the unit tests and benchmain's smoke run; benchmain must build),
#     installs it to a temporary prefix, checks the installed headers (only
#     the public ones; test/api/public_headers_test.sh on the installed
#     tree), then builds and runs, each with the gRPC C++ greeter, (a) a
#     CMake project (find_package(h2rpc), h2rpc_generate), (b) a Makefile
#     using pkg-config, (c) a Bazel workspace with local_repository(name =
#     "h2rpc") and h2rpc_proto_library; then (d) makes the Debian package
#     from the same build (cpack -G DEB). With --install-deb it installs the
#     package on this machine (apt-get install ./*.deb), builds and runs (a)
#     against it, and removes it again if it was not installed before.
#   test/consumer/run.sh --system
#     Only (a), against h2rpc installed in the system.
#
# Every step that fails fails the script; the tools it needs are installed
# by tools/cmake-build (cmake, the compilers, ccache, the -dev packages) and
# tools/bazel (Bazel). Each step's time is printed after it, and all of
# them at the end. Two caches outlive a run, so that a rerun compiles only
# what changed: ccache's (tools/cmake-build compiles through it; here with
# CCACHE_BASEDIR, so the temporary build directory's name does not matter,
# while the source tree's path does: reruns from one checkout hit) and
# Bazel's disk cache for the Bazel workspace (CONSUMER_CACHE below).
# Both are keyed by the compiler's inputs, so a hit is the same object a
# clean build makes.
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
here="$src/test/consumer"

system=0
install_deb=0
cmake_args=()
while (($#)); do
  case "$1" in
    --system) system=1 ;;
    --install-deb) install_deb=1 ;;
    --) shift; cmake_args=("$@"); break ;;
    *)
      echo "usage: $0 [--system | --install-deb] [-- CMAKE_ARGS...]" >&2
      exit 2
      ;;
  esac
  shift
done

work="$(mktemp -d /tmp/h2rpc-consumer.XXXXXX)"
bazel_root="$work/bazel-root"
cache="${CONSUMER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/h2rpc-consumer}"
export CCACHE_BASEDIR="$work" CCACHE_NOHASHDIR=true

# step NAME: starts a step, ending the one before; print_times lists them.
step_names=()
step_seconds=()
step_start=$SECONDS
end_step() {
  if ((${#step_names[@]} > ${#step_seconds[@]})); then
    step_seconds+=($((SECONDS - step_start)))
    printf '[%ds] %s\n' "${step_seconds[-1]}" "${step_names[-1]}"
  fi
}
step() {
  end_step
  step_names+=("$*")
  step_start=$SECONDS
  printf '\n== %s\n' "$*"
}
print_times() {
  end_step
  printf '\nTime per step (%s):\n' "${1:-}"
  local i
  for i in "${!step_seconds[@]}"; do
    printf '%6ds  %s\n' "${step_seconds[i]}" "${step_names[i]}"
  done
  printf '%6ds  total\n' "$SECONDS"
}

cleanup() {
  local rc=$?
  if ((rc != 0)); then print_times "failed"; fi
  if [[ -d $work/bazel ]]; then
    (cd "$work/bazel" && bazel --output_user_root="$bazel_root" shutdown) \
      >/dev/null 2>&1 || true
  fi
  chmod -R u+w "$work" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# A project directory: the greeter's proto and source, plus build files.
project() {
  local dir="$work/$1"
  shift
  mkdir -p "$dir"
  cp "$here/helloworld.proto" "$here/greeter.cc" "$@" "$dir/"
  echo "$dir"
}

# serve_and_call SERVER CLIENT: `SERVER serve ADDRESS` on a free port of
# 127.0.0.1, then `CLIENT call ADDRESS` (retried while the server starts).
serve_and_call() {
  local server_program="$1" client_program="$2" port log="$work/call.log"
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  "$server_program" serve "127.0.0.1:$port" &
  local server=$!
  local rc=1
  for _ in $(seq 50); do
    if "$client_program" call "127.0.0.1:$port" >"$log" 2>&1; then
      rc=0
      break
    fi
    sleep 0.1
  done
  cat "$log"
  kill "$server"
  wait "$server" 2>/dev/null || true
  if ((rc != 0)); then
    echo "FAIL: $client_program did not get its reply from $server_program"
  fi
  return "$rc"
}

# Runs the greeter in one process, then as a server and a separate client,
# then as the client of the gRPC C++ server and the server of its client.
run_greeter() {
  "$1"
  serve_and_call "$1" "$1"
  serve_and_call "$grpc_greeter" "$1"
  serve_and_call "$1" "$grpc_greeter"
}

# The gRPC C++ greeter (test/consumer/grpc): the path in
# H2RPC_CONSUMER_GRPC_GREETER (--install-deb's own run with --system reuses
# the one built before), else built here, through ccache. libgrpc++-dev and
# grpc_cpp_plugin come with tools/cmake-build's packages.
build_grpc_greeter() {
  grpc_greeter="${H2RPC_CONSUMER_GRPC_GREETER:-}"
  if [[ -z $grpc_greeter ]]; then
    step "gRPC C++ greeter (test/consumer/grpc)"
    local dir
    dir="$(project grpc "$here/grpc/greeter_grpc.cc" "$here/grpc/Makefile")"
    (cd "$dir" && make CXX="ccache ${CXX:-g++}")
    grpc_greeter="$dir/greeter_grpc"
  fi
}

# cmake_consumer DIR_NAME [CMAKE_ARGS...]: docs/getting-started.md's
# commands (the arguments added to its `cmake -B build`).
cmake_consumer() {
  local dir
  dir="$(project "$1" "$here/cmake/CMakeLists.txt")"
  shift
  (
    cd "$dir"
    cmake -B build "$@"
    cmake --build build
    run_greeter build/greeter
  )
}

step "docs/getting-started.md shows the files built here"
python3 - "$src" <<'PY'
import re, sys
root = sys.argv[1]
doc = open(f"{root}/docs/getting-started.md").read()
blocks = re.findall(r"<!-- file: (\S+) -->\n```[a-z+]*\n(.*?)```\n", doc, re.S)
expected = {"test/consumer/" + f for f in (
    "helloworld.proto", "greeter.cc", "cmake/CMakeLists.txt",
    "make/Makefile", "bazel/WORKSPACE", "bazel/.bazelrc",
    "bazel/BUILD.bazel")}
shown = {path for path, _ in blocks}
bad = sorted(expected - shown)
for path, text in blocks:
    if open(f"{root}/{path}").read() != text:
        bad.append(path)
if bad:
    sys.exit("FAIL: docs/getting-started.md does not show as they are: " +
             ", ".join(bad))
print(f"ok: {len(blocks)} files")
PY

if ((system)); then
  "$src/tools/cmake-build" --packages-only
  build_grpc_greeter
  step "(a) CMake project against the system's h2rpc"
  cmake_consumer cmake-system
  print_times "--system"
  echo "consumer test (system): passed"
  exit 0
fi

prefix="$work/prefix"
step "h2rpc: CMake build (benchmain too), ctest, install to $prefix"
build="$work/h2rpc-build"
"$src/tools/cmake-build" --packages-only  # ccache among them
ccache --zero-stats >/dev/null
"$src/tools/cmake-build" --test --install "$prefix" "$build" \
  -- -DCMAKE_INSTALL_PREFIX=/usr -DH2RPC_BUILD_BENCHMAIN=ON \
  "${cmake_args[@]}"
ccache --show-stats | grep -iE '^ *(hits|misses)|^cacheable' || true

step "installed headers: exactly the public ones"
expected="$(sed -n '/^set(H2RPC_PUBLIC_HEADERS$/,/^)$/p' \
  "$src/cmake/sources.cmake" | sed '1d;$d;s/^ *//'; echo rpc/version.h)"
installed="$(cd "$prefix/include/h2rpc" && find . -type f | sed 's|^\./||')"
if ! diff <(sort <<<"$expected") <(sort <<<"$installed"); then
  echo "FAIL: installed headers differ from the public ones (< expected)"
  exit 1
fi
echo "ok: $(wc -l <<<"$installed") headers"

step "installed headers: test/api/public_headers_test.sh on the installed tree"
stage="$work/api"
mkdir -p "$stage"
cp -r "$prefix/include/h2rpc/." "$stage/"
protoc -I"$src" --cpp_out="$stage" \
  --plugin=protoc-gen-h2rpc="$prefix/bin/protoc-gen-h2rpc" \
  --h2rpc_out="$stage" "$src/test/api/api_user.proto"
mapfile -t tree < <(cd "$stage" && find . -type f | sed 's|^\./||' | sort)
(cd "$stage" && TEST_TMPDIR="$work/api-tmp" \
  bash "$src/test/api/public_headers_test.sh" c++ --tree "${tree[@]}" \
  --user "$src/test/api/user_code.cc")

build_grpc_greeter

step "(a) CMake project: find_package(h2rpc), h2rpc_generate"
cmake_consumer cmake -DCMAKE_PREFIX_PATH="$prefix"

step "(b) Makefile with pkg-config"
dir="$(project make "$here/make/Makefile")"
pc_dir="$(dirname "$(find "$prefix" -name h2rpc.pc)")"
(
  cd "$dir"
  PKG_CONFIG_PATH="$pc_dir" make
  run_greeter ./greeter
)

step "(c) Bazel workspace: local_repository @h2rpc, h2rpc_proto_library"
"$src/tools/bazel" --version  # installs Bazel and the packages
dir="$(project bazel "$here/bazel/BUILD.bazel" "$here/bazel/.bazelrc")"
sed "s|/path/to/h2rpc|$src|" "$here/bazel/WORKSPACE" >"$dir/WORKSPACE"
(
  cd "$dir"
  # --disk_cache (here, not in the workspace's .bazelrc, which is the one
  # docs/getting-started.md shows): h2rpc's objects from the last run.
  bazel --output_user_root="$bazel_root" build \
    --disk_cache="$cache/bazel-disk-cache" //:greeter
  run_greeter bazel-bin/greeter
)

step "(d) Debian package: tools/make-deb (cpack -G DEB) from the same build"
"$src/tools/make-deb" --build-dir "$build" "$work/deb"
deb="$(echo "$work"/deb/libh2rpc-dev_*.deb)"
dpkg-deb --info "$deb"
dpkg-deb --contents "$deb"

if ((install_deb)); then
  step "(d) apt-get install $deb; (a) against the system install"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  was_installed=0
  if dpkg-query -W -f='${Status}' libh2rpc-dev 2>/dev/null |
    grep -q "ok installed"; then
    was_installed=1
  fi
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y \
    --no-install-recommends "$deb"
  rc=0
  # Its own process (set -e applies inside), with the gRPC C++ greeter.
  H2RPC_CONSUMER_GRPC_GREETER="$grpc_greeter" "$0" --system || rc=$?
  if ((!was_installed)); then
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get remove -y \
      libh2rpc-dev
  fi
  if ((rc != 0)); then exit "$rc"; fi
fi

print_times "consumer tests"
echo "consumer tests: passed"
