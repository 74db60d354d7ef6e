#!/usr/bin/env bash
# Consumer tests: h2rpc used as a dependency, out of tree, the three ways
# docs/getting-started.md shows. Each project generates code from its own
# helloworld.proto (test/consumer/helloworld.proto) with protoc-gen-h2rpc,
# serves helloworld.Greeter and calls it (test/consumer/greeter.cc).
#
#   test/consumer/run.sh [--install-deb] [-- CMAKE_ARGS...]
#     Builds h2rpc with CMake for the prefix /usr (tools/cmake-build: ctest
#     runs too), installs it to a temporary prefix, checks the installed
#     headers (only the public ones; test/api/public_headers_test.sh on the
#     installed tree), then builds and runs (a) a CMake project
#     (find_package(h2rpc), h2rpc_generate), (b) a Makefile using
#     pkg-config, (c) a Bazel workspace with local_repository(name =
#     "h2rpc") and h2rpc_proto_library; (d) runs the greeter against a gRPC
#     C++ server and client (test/consumer/grpc); then (e) makes the Debian
#     package from the same build (cpack -G DEB). With --install-deb it
#     installs the package on this machine (apt-get install ./*.deb),
#     builds and runs (a) against it, and removes it again if it was not
#     installed before.
#   test/consumer/run.sh --system
#     Only (a), against h2rpc installed in the system.
#
# Every step that fails fails the script; the tools it needs are installed
# by tools/cmake-build (cmake, the compilers, the -dev packages) and
# tools/bazel (Bazel).
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
cleanup() {
  if [[ -d $work/bazel ]]; then
    (cd "$work/bazel" && bazel --output_user_root="$bazel_root" shutdown) \
      >/dev/null 2>&1 || true
  fi
  chmod -R u+w "$work" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n== %s\n' "$*"; }

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

# Runs the greeter in one process, then as a server and a separate client.
run_greeter() {
  "$1"
  serve_and_call "$1" "$1"
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
  step "(a) CMake project against the system's h2rpc"
  "$src/tools/cmake-build" --packages-only
  cmake_consumer cmake-system
  echo "consumer test (system): passed"
  exit 0
fi

prefix="$work/prefix"
step "h2rpc: CMake build, ctest, install to $prefix"
build="$work/h2rpc-build"
"$src/tools/cmake-build" --test --install "$prefix" "$build" \
  -- -DCMAKE_INSTALL_PREFIX=/usr "${cmake_args[@]}"

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
  bazel --output_user_root="$bazel_root" build //:greeter
  run_greeter bazel-bin/greeter
)

step "(d) gRPC C++: the greeter calls a gRPC C++ server, serves a gRPC C++ client"
# libgrpc++-dev and grpc_cpp_plugin come with tools/bazel's packages.
grpc_dir="$(project grpc "$here/grpc/greeter_grpc.cc" "$here/grpc/Makefile")"
(cd "$grpc_dir" && make)
serve_and_call "$grpc_dir/greeter_grpc" "$work/cmake/build/greeter"
serve_and_call "$work/cmake/build/greeter" "$grpc_dir/greeter_grpc"

step "(e) Debian package: tools/make-deb (cpack -G DEB) from the same build"
"$src/tools/make-deb" --build-dir "$build" "$work/deb"
deb="$(echo "$work"/deb/libh2rpc-dev_*.deb)"
dpkg-deb --info "$deb"
dpkg-deb --contents "$deb"

if ((install_deb)); then
  step "(e) apt-get install $deb; (a) against the system install"
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
  "$0" --system || rc=$?  # its own process: set -e applies inside
  if ((!was_installed)); then
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get remove -y \
      libh2rpc-dev
  fi
  if ((rc != 0)); then exit "$rc"; fi
fi

echo
echo "consumer tests: passed"
