#!/bin/bash
# Compiles what an h2rpc user compiles (every public header, the code
# generated for a service, and test/api/user_code.cc) with only the public
# headers on the include path, and fails if any of them reaches a transport
# header (not in the tree) or a socket, epoll or nghttp2 header (poisoned).
#
# Usage: public_headers_test.sh CC --tree FILE... --user FILE
#   --tree: the public headers (rpc/*.h, the allowlisted vocabulary headers)
#           and the generated code, by their paths from the workspace root.
#   --user: the application source to compile.
set -euo pipefail

cc="$1"
shift
tree=()
user=""
mode=""
while (($#)); do
  case "$1" in
    --tree | --user) mode="$1" ;;
    *)
      case "$mode" in
        --tree) tree+=("$1") ;;
        --user) user="$1" ;;
        *) echo "unexpected argument: $1" >&2; exit 2 ;;
      esac
      ;;
  esac
  shift
done

tmp="${TEST_TMPDIR:-$(mktemp -d)}"
public="$tmp/public"
poison="$tmp/poison"
rm -rf "$public" "$poison"
mkdir -p "$public" "$poison"

# 1. The public tree, and the poisoned system headers. -I directories come
# before the system ones, so these shadow the real headers.
for file in "${tree[@]}"; do
  mkdir -p "$public/$(dirname "$file")"
  cp "$file" "$public/$file"
done
for header in nghttp2/nghttp2.h sys/socket.h sys/epoll.h netinet/in.h; do
  mkdir -p "$poison/$(dirname "$header")"
  printf '#error "h2rpc public API leak: %s reached from a public header"\n' \
    "$header" >"$poison/$header"
done

# 2. Only the two directories above, plus the compiler's system ones
# (libstdc++, Abseil, protobuf).
compile() {
  "$cc" -std=c++17 -fsyntax-only -I"$poison" -I"$public" -x c++ "$1"
}

failed=0
expect_compiles() {
  local what="$1" source="$2" log="$tmp/compile.log"
  if compile "$source" >"$log" 2>&1; then
    echo "ok: $what"
  else
    echo "FAIL: $what does not compile with the public headers alone:"
    cat "$log"
    failed=1
  fi
}
# Negative controls: proves that the include path holds only the public tree
# and that the poison shadows the system headers.
expect_fails() {
  local what="$1" include="$2" message="$3" log="$tmp/compile.log"
  printf '#include %s\n' "$include" >"$tmp/control.cc"
  if compile "$tmp/control.cc" >"$log" 2>&1; then
    echo "FAIL: control '$what' compiled; the test cannot see a leak"
    failed=1
  elif grep -qE "$message" "$log"; then
    echo "ok: control '$what' fails with \"$message\""
  else
    echo "FAIL: control '$what' failed without \"$message\":"
    cat "$log"
    failed=1
  fi
}

# 3. (i) Every public rpc header; (ii) the generated code; (iii) user code.
all="$tmp/all_public_headers.cc"
: >"$all"
for file in "${tree[@]}"; do
  case "$file" in
    rpc/internal/*) ;;
    rpc/*.h) echo "#include \"$file\"" >>"$all" ;;
  esac
done
if ! grep -q '"rpc/channel.h"' "$all"; then
  echo "FAIL: rpc/channel.h is not among the public headers given"
  failed=1
fi
expect_compiles "every public rpc header" "$all"
for file in "${tree[@]}"; do
  case "$file" in
    *.h2rpc.pb.cc) expect_compiles "generated $file" "$public/$file" ;;
  esac
done
expect_compiles "user code $user" "$user"

# 4. Negative controls.
# gcc says "No such file or directory", clang "file not found".
expect_fails "transport header" '"transport/io/event_loop.h"' \
  "No such file or directory|file not found"
expect_fails "nghttp2" '<nghttp2/nghttp2.h>' "h2rpc public API leak"

exit "$failed"
