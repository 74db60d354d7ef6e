#!/usr/bin/env bash
# h2rpc_proxy as a program: --help describes it, flags it cannot use exit 2
# naming the problem, and a started proxy announces its port, then drains
# and exits 0 on SIGTERM with its report on stderr; --metrics_port serves a
# Prometheus scrape. (Forwarding is tested
# by //test/e2e:proxy_test and the interop pairings through the proxy.)
set -euo pipefail
proxy=$1
dir="${TEST_TMPDIR:-/tmp}"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# --help: Abseil prints the usage message and the flags, and exits.
"$proxy" --help >"$dir/help.txt" 2>&1 || true
grep -q -- "--listen=HOST:PORT --target=TARGET" "$dir/help.txt" ||
  fail "--help does not show the usage: $(head -5 "$dir/help.txt")"
grep -q -- "--target_tls" "$dir/help.txt" || fail "--help lists no flags"

expect_bad_flags() {
  local want=$1
  shift
  local rc=0
  "$proxy" "$@" >/dev/null 2>"$dir/err.txt" || rc=$?
  [[ $rc -eq 2 ]] || fail "$* exited $rc, not 2"
  grep -q -- "$want" "$dir/err.txt" ||
    fail "$* said '$(cat "$dir/err.txt")', not '$want'"
}
expect_bad_flags "--listen and --target are required"
expect_bad_flags "--listen and --target are required" --listen=127.0.0.1:0
expect_bad_flags "--lb_policy must be" --listen=127.0.0.1:0 --target=x:1 \
  --lb_policy=random
expect_bad_flags "--loops must be" --listen=127.0.0.1:0 --target=x:1 --loops=0
expect_bad_flags "cannot read --tls_cert_file" --listen=127.0.0.1:0 \
  --target=x:1 --tls_cert_file="$dir/missing.pem"

# Start, announce, SIGTERM, exit 0 with the report.
fifo="$dir/proxy_stdout"
rm -f "$fifo"
mkfifo "$fifo"
"$proxy" --listen=127.0.0.1:0 --target=127.0.0.1:1 --metrics_port=0 \
  >"$fifo" 2>"$dir/proxy_err.txt" &
pid=$!
exec 3<"$fifo"
read -r -t 30 line <&3 || fail "no line on stdout within 30 s"
[[ $line =~ ^listening\ on\ port\ [0-9]+$ ]] || fail "first line: '$line'"
read -r -t 30 line <&3 || fail "no metrics line on stdout within 30 s"
[[ $line =~ ^metrics\ on\ port\ ([0-9]+)$ ]] || fail "second line: '$line'"
# The metrics endpoint answers a scrape.
exec 4<>"/dev/tcp/127.0.0.1/${BASH_REMATCH[1]}"
printf 'GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&4
scrape=$(cat <&4)
exec 4<&-
[[ $scrape == "HTTP/1.1 200"* ]] || fail "scrape answered '${scrape:0:80}'"
[[ $scrape == *"text/plain; version=0.0.4"* ]] ||
  fail "scrape is not Prometheus text: '${scrape:0:200}'"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
[[ $rc -eq 0 ]] || fail "exited $rc after SIGTERM"
grep -q "h2rpc_proxy: calls 0" "$dir/proxy_err.txt" ||
  fail "no report at exit: $(cat "$dir/proxy_err.txt")"
echo PASS
