#!/usr/bin/env bash
# docs/performance.md's web protocol figures: gRPC-Web unary (binary and
# text) and Connect unary (binary and JSON) over HTTP/2, and gRPC-Web and
# Connect (binary and JSON) over HTTP/1.1 (h2load --h1; in flight means
# pipelined there), against gRPC unary over HTTP/2 on one h2rpc server
# (h2rpc_interop_server --grpc_web --connect, -c opt, on CPU 0), driven by
# h2load (Debian's nghttp2-client, on CPU 1) on one connection: a 1 KiB
# request asking for a 1 KiB response (grpc.testing.TestService/UnaryCall),
# at 64 and 1 in flight, the protocols alternated `ROUNDS` times (default
# 5) in one sitting. Prints one line per run: requests per second, and the
# HTTP statuses (all must be 2xx).
#   benchmark/web_protocols.sh [ROUNDS] > benchmark/results/web_protocols.txt
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
if ! command -v h2load > /dev/null; then
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq \
    --no-install-recommends nghttp2-client >&2
fi
tools/bazel build -c opt //test/interop:h2rpc_interop_server >&2
work=$(mktemp -d)
python3 - "$work" <<'PY'
import base64, struct, sys
def varint(n):
    out = b""
    while True:
        byte, n = n & 0x7F, n >> 7
        if not n:
            return out + bytes([byte])
        out += bytes([byte | 0x80])
body = bytes(1024)
payload = b"\x12" + varint(len(body)) + body              # Payload.body
request = (b"\x10" + varint(1024)                          # response_size
           + b"\x1a" + varint(len(payload)) + payload)    # payload
out = sys.argv[1]
framed = b"\0" + struct.pack(">I", len(request)) + request
open(out + "/grpc.bin", "wb").write(framed)
open(out + "/grpc-web-text.bin", "wb").write(base64.b64encode(framed))
open(out + "/proto.bin", "wb").write(request)
open(out + "/json.bin", "w").write('{"responseSize": 1024, "payload": {"body": "%s"}}'
                                   % base64.b64encode(body).decode())
PY
taskset -c 0 bazel-bin/test/interop/h2rpc_interop_server --port=0 --grpc_web --connect \
  > "$work/server.out" &
server=$!
trap 'kill $server; rm -rf "$work"' EXIT
for _ in $(seq 100); do
  grep -q "listening on port" "$work/server.out" && break
  sleep 0.1
done
port=$(grep -o "listening on port [0-9]*" "$work/server.out" | grep -o "[0-9]*$")
url=http://127.0.0.1:$port/grpc.testing.TestService/UnaryCall

run() {  # protocol[/1.1] in_flight requests
  local args=()
  if [[ $1 == */1.1 ]]; then args=(--h1); fi
  case ${1%/1.1} in
    grpc) args+=(-H "content-type: application/grpc" -H "te: trailers"
                -d "$work/grpc.bin") ;;
    grpc-web) args+=(-H "content-type: application/grpc-web+proto"
                    -H "x-grpc-web: 1" -d "$work/grpc.bin") ;;
    grpc-web-text) args+=(-H "content-type: application/grpc-web-text"
                         -H "x-grpc-web: 1" -d "$work/grpc-web-text.bin") ;;
    connect-proto) args+=(-H "content-type: application/proto"
                         -H "connect-protocol-version: 1" -d "$work/proto.bin") ;;
    connect-json) args+=(-H "content-type: application/json"
                        -H "connect-protocol-version: 1" -d "$work/json.bin") ;;
  esac
  taskset -c 1 h2load -n "$3" -c 1 -t 1 -m "$2" "${args[@]}" "$url" |
    awk -v p="$1" -v m="$2" '/finished in/ {rps = $4} /status codes/ {codes = $3 " 2xx, " $9 " 5xx"}
      END {printf "%-18s in flight %-3s %10s req/s  (%s)\n", p, m, rps, codes}'
}

for ((round = 1; round <= rounds; ++round)); do
  for m in 64 1; do
    for protocol in grpc grpc-web grpc-web-text connect-proto connect-json \
        grpc-web/1.1 connect-proto/1.1 connect-json/1.1; do
      # HTTP/1.1 answers one request at a time: pipelined ones wait.
      n=300000
      if ((m == 1)); then n=30000; elif [[ $protocol == */1.1 ]]; then n=60000; fi
      run "$protocol" "$m" "$n"
    done
  done
done
