"""A real Prometheus scrapes an h2rpc server's call metrics.

Starts h2rpc_interop_server with --metrics_port, runs h2rpc's interop client
against it (3 empty_unary and 2 large_unary calls), then starts Debian's
prometheus on 127.0.0.1 with a scrape config pointing at the server's
/metrics, waits until it has scraped them, and asks its HTTP API for:

  * the call counts by method (grpc_server_call_started_total), which must
    be the calls made;
  * the OK calls' count from the duration histogram
    (grpc_server_call_duration_seconds_count);
  * histogram_quantile(0.5, ...) of the UnaryCall durations and of its
    received sizes, which must equal the quantile computed here, by
    Prometheus's documented rule, from the buckets the endpoint serves.

Every wait polls an observable condition with a deadline.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

RUNFILES = os.environ.get("TEST_SRCDIR", "")
WORKSPACE = os.environ.get("TEST_WORKSPACE", "h2rpc")
DEADLINE_S = 60
EMPTY_CALL = "/grpc.testing.TestService/EmptyCall"
UNARY_CALL = "/grpc.testing.TestService/UnaryCall"


def runfile(path):
    return os.path.join(RUNFILES, WORKSPACE, path)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(condition, what):
    """Polls condition() until it returns a true value, or fails."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def http_get(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def parse_series(text, name):
    """{labels (sorted tuple of pairs): value} of metric `name` in `text`."""
    series = {}
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        labels_text, value = line[len(name) + 1:].rsplit("} ", 1)
        labels = []
        for pair in labels_text.split('",'):
            key, _, raw = pair.partition('="')
            labels.append((key, raw.rstrip('"')))
        series[tuple(sorted(labels))] = float(value)
    return series


def quantile(q, buckets):
    """Prometheus's histogram_quantile over [(le, cumulative count)]."""
    buckets = sorted(buckets)
    total = buckets[-1][1]
    rank = q * total
    previous_bound, previous_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if bound == float("inf"):
                return previous_bound
            if bound <= 0 and previous_count == 0:
                return bound
            return previous_bound + (bound - previous_bound) * (
                (rank - previous_count) / (count - previous_count))
        previous_bound, previous_count = bound, count
    return previous_bound


def buckets_of(text, name, method):
    """[(le, cumulative)] of histogram `name`'s OK series of `method`."""
    result = []
    for labels, value in parse_series(text, name + "_bucket").items():
        labels = dict(labels)
        if labels["grpc_method"] == method and labels["grpc_status"] == "OK":
            result.append((float(labels["le"]), value))
    return result


class PrometheusScrapeTest(unittest.TestCase):

    def setUp(self):
        if shutil.which("prometheus") is None:
            self.fail("Debian's prometheus is not installed (tools/bazel "
                      "installs it)")
        self.tmp = tempfile.mkdtemp()
        self.processes = []

    def tearDown(self):
        for process in reversed(self.processes):
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def start(self, args, **kwargs):
        process = subprocess.Popen(args, **kwargs)
        self.processes.append(process)
        return process

    def test_prometheus_scrapes_the_call_counts_and_histograms(self):
        server = self.start(
            [runfile("test/interop/h2rpc_interop_server"), "--port=0",
             "--metrics_port=0"],
            stdout=subprocess.PIPE, text=True, cwd=os.path.join(RUNFILES,
                                                                 WORKSPACE))
        ports = {}
        while len(ports) < 2:
            line = server.stdout.readline()
            self.assertTrue(line, "the server exited before listening")
            words = line.split()
            if line.startswith("metrics on port"):
                ports["metrics"] = int(words[-1])
            elif line.startswith("listening on port"):
                ports["grpc"] = int(words[-1])
        client = runfile("test/interop/h2rpc_interop_client")
        for test_case in ["empty_unary"] * 3 + ["large_unary"] * 2:
            subprocess.run(
                [client, f"--server_port={ports['grpc']}",
                 f"--test_case={test_case}"],
                check=True, cwd=os.path.join(RUNFILES, WORKSPACE),
                stdout=subprocess.DEVNULL)

        # What the endpoint serves now (no call is left running).
        served = http_get(f"http://127.0.0.1:{ports['metrics']}/metrics")
        started = parse_series(served, "grpc_server_call_started_total")
        self.assertEqual(started[(("grpc_method", EMPTY_CALL),)], 3)
        self.assertEqual(started[(("grpc_method", UNARY_CALL),)], 2)

        prometheus_port = free_port()
        config = os.path.join(self.tmp, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n"
                    "scrape_configs:\n  - job_name: h2rpc\n"
                    "    static_configs:\n"
                    f"      - targets: ['127.0.0.1:{ports['metrics']}']\n")
        self.start(
            ["prometheus", f"--config.file={config}",
             f"--storage.tsdb.path={os.path.join(self.tmp, 'data')}",
             f"--web.listen-address=127.0.0.1:{prometheus_port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        api = f"http://127.0.0.1:{prometheus_port}/api/v1/query?query="

        def query(expression):
            try:
                answer = json.loads(
                    http_get(api + urllib.parse.quote(expression)))
            except OSError:
                return None  # not up yet
            if answer.get("status") != "success":
                return None
            return answer["data"]["result"]

        def values(expression):
            result = query(expression) or []
            return {r["metric"].get("grpc_method"): float(r["value"][1])
                    for r in result}

        counts = wait_for(
            lambda: values("grpc_server_call_started_total") or None,
            "Prometheus to scrape the server")
        self.assertEqual(counts, {EMPTY_CALL: 3, UNARY_CALL: 2})
        # The scrape's own health, as Prometheus records it.
        self.assertEqual(
            values('up{job="h2rpc"}'), {None: 1})
        self.assertEqual(
            values('sum by (grpc_method) (grpc_server_call_duration_seconds_'
                   'count{grpc_status="OK"})'),
            {EMPTY_CALL: 3, UNARY_CALL: 2})

        for name, method in [
                ("grpc_server_call_duration_seconds", UNARY_CALL),
                ("grpc_server_call_rcvd_total_compressed_message_size_bytes",
                 UNARY_CALL),
                ("grpc_server_call_duration_seconds", EMPTY_CALL)]:
            expected = quantile(0.5, buckets_of(served, name, method))
            answer = values(
                f'histogram_quantile(0.5, sum by (le) ({name}_bucket'
                f'{{grpc_method="{method}",grpc_status="OK"}}))')
            self.assertAlmostEqual(answer[None], expected, places=9,
                                   msg=f"{name} of {method}")
        # large_unary's request (271828 payload bytes) lies in (262144,
        # 1048576]: the median of two such is that bucket's middle.
        self.assertAlmostEqual(
            quantile(0.5, buckets_of(
                served,
                "grpc_server_call_rcvd_total_compressed_message_size_bytes",
                UNARY_CALL)), (262144 + 1048576) / 2)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
