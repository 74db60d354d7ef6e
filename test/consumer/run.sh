#!/usr/bin/env bash
# Consumer tests: h2rpc used as a dependency, out of tree, the three ways
# docs/getting-started.md shows. Each project generates code from its own
# helloworld.proto (test/consumer/helloworld.proto) with protoc-gen-h2rpc,
# serves helloworld.Greeter and calls it (test/consumer/greeter.cc), and
# calls a gRPC C++ server of the same service and serves its client
# (test/consumer/grpc, built first with Debian's libgrpc++).
#
#   test/consumer/run.sh [--install-deb] [--fresh-root] [-- CMAKE_ARGS...]
#     Builds h2rpc with CMake for the prefix /usr (tools/cmake-build: ctest
#     runs the unit tests and benchmain's smoke run; benchmain must build),
#     installs it to a temporary prefix, checks the installed headers (only
#     the public ones; test/api/public_headers_test.sh on the installed
#     tree), then builds and runs, each with the gRPC C++ greeter, (a) a
#     CMake project (find_package(h2rpc), h2rpc_generate), linking the
#     shared library and then h2rpc::h2rpc_static, (b) a Makefile using
#     pkg-config, shared and then `--static` with libh2rpc.a, (c) a Bazel
#     workspace with local_repository(name = "h2rpc") and
#     h2rpc_proto_library; then (d) makes the Debian packages from the same
#     build (cpack -G DEB: libh2rpc<SOVERSION>, the shared library alone, and
#     libh2rpc-dev). With --install-deb it installs both on this machine
#     (apt-get install ./*.deb), builds and runs (a) against them, and
#     removes those that were not installed before. With --fresh-root it
#     makes a minimal Debian 12 root (mmdebstrap, from deb.debian.org),
#     installs both packages there with apt, builds (a) in it and runs it,
#     then removes libh2rpc-dev and the build tools and runs it again.
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
fresh_root=0
cmake_args=()
while (($#)); do
  case "$1" in
    --system) system=1 ;;
    --install-deb) install_deb=1 ;;
    --fresh-root) fresh_root=1 ;;
    --) shift; cmake_args=("$@"); break ;;
    *)
      echo "usage: $0 [--system | [--install-deb] [--fresh-root]]" \
        "[-- CMAKE_ARGS...]" >&2
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

# expect_static PROGRAM: fails if PROGRAM loads libh2rpc.so.
expect_static() {
  if ldd "$1" | grep libh2rpc; then
    echo "FAIL: $1 loads libh2rpc.so; it should hold libh2rpc.a's code"
    return 1
  fi
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

step "(a) CMake project linking h2rpc::h2rpc_static"
dir="$(project cmake-static)"
sed 's/h2rpc::h2rpc)/h2rpc::h2rpc_static)/' "$here/cmake/CMakeLists.txt" \
  >"$dir/CMakeLists.txt"
grep -q 'h2rpc::h2rpc_static)' "$dir/CMakeLists.txt"
(
  cd "$dir"
  cmake -B build -DCMAKE_PREFIX_PATH="$prefix"
  cmake --build build
  expect_static build/greeter
  run_greeter build/greeter
)

step "(b) Makefile with pkg-config"
dir="$(project make "$here/make/Makefile")"
pc_dir="$(dirname "$(find "$prefix" -name h2rpc.pc)")"
(
  cd "$dir"
  PKG_CONFIG_PATH="$pc_dir" make
  run_greeter ./greeter
  # libh2rpc.a with what `pkg-config --static` says it needs.
  make clean
  static_libs="$(PKG_CONFIG_PATH="$pc_dir" pkg-config --static --libs h2rpc)"
  PKG_CONFIG_PATH="$pc_dir" make LDLIBS="${static_libs/-lh2rpc/-l:libh2rpc.a}"
  expect_static ./greeter
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

step "(d) Debian packages: tools/make-deb (cpack -G DEB) from the same build"
"$src/tools/make-deb" --build-dir "$build" "$work/deb"
debs=("$work"/deb/libh2rpc*.deb)
if ((${#debs[@]} != 2)); then
  echo "FAIL: expected the runtime and the -dev package, got ${debs[*]}"
  exit 1
fi
for deb in "${debs[@]}"; do
  dpkg-deb --info "$deb"
  dpkg-deb --contents "$deb"
done
# The runtime package holds the shared library and nothing to build with.
runtime_deb="$(ls "$work"/deb/libh2rpc[0-9]*.deb)"
runtime_files="$(dpkg-deb --contents "$runtime_deb")"
if grep -E '\.(h|a|pc|cmake)$|/bin/' <<<"$runtime_files"; then
  echo "FAIL: $runtime_deb holds files for building"
  exit 1
fi
grep 'libh2rpc\.so\.[0-9.]*$' <<<"$runtime_files"

if ((install_deb)); then
  step "(d) apt-get install ${debs[*]}; (a) against the system install"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  packages=()
  for deb in "${debs[@]}"; do
    package="$(dpkg-deb --field "$deb" Package)"
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null |
      grep -q "ok installed"; then
      packages+=("$package")  # removed again at the end
    fi
  done
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y \
    --no-install-recommends "${debs[@]}"
  rc=0
  # Its own process (set -e applies inside), with the gRPC C++ greeter.
  H2RPC_CONSUMER_GRPC_GREETER="$grpc_greeter" "$0" --system || rc=$?
  if ((${#packages[@]})); then
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get remove -y \
      "${packages[@]}"
  fi
  if ((rc != 0)); then exit "$rc"; fi
fi

if ((fresh_root)); then
  step "(e) a fresh Debian 12 root: apt-get install ./libh2rpc*.deb, then (a)"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  if ! command -v mmdebstrap >/dev/null; then
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y \
      --no-install-recommends mmdebstrap
  fi
  dir="$(project fresh-root "$here/cmake/CMakeLists.txt")"
  # A minimal bookworm (apt and what it needs) with the greeter's build
  # tools; apt in it installs the packages from their files and pulls their
  # dependencies from Debian. The greeter is built with getting-started's
  # CMake commands and runs; then libh2rpc-dev goes, with everything
  # installed for it and the build tools, and the greeter runs again with
  # the runtime package alone. Nothing is kept (the root goes to
  # /dev/null).
  "${sudo_cmd[@]}" mmdebstrap --variant=apt --include=cmake,g++,make \
    --customize-hook="copy-in $work/deb $dir /tmp" \
    --customize-hook='chroot "$1" sh -exc "
      cd /tmp/deb && apt-get install -y --no-install-recommends ./libh2rpc*.deb
      cd /tmp/fresh-root && cmake -B build && cmake --build build
      build/greeter
      apt-get purge -y --autoremove libh2rpc-dev cmake g++ make
      test ! -e /usr/include/h2rpc
      build/greeter"' \
    bookworm /dev/null \
    "deb http://deb.debian.org/debian bookworm main" \
    "deb http://deb.debian.org/debian bookworm-updates main" \
    "deb http://deb.debian.org/debian-security bookworm-security main"
fi

print_times "consumer tests"
echo "consumer tests: passed"
