"""Tests of benchresult on two recorded result files (testdata/).

testdata/old.json and testdata/new.json follow docs/benchmark_results.md:
 - unary h2rpc→h2rpc c=1: TotalOps 1000 → 1250, client allocs 3 → 2,
   server allocs and bytes 0 → 1 and 0 → 64 (before 0: "n/a");
 - unary h2rpc→grpcpp c=120 proc=two: benchtime 10 s → 5 s (still
   matched), server side null in both (a remote peer);
 - streaming h2rpc→h2rpc c=8 gzip in both;
 - unconstrained c=64 only in old.json;
 - the unary c=1 run with connections=2 only in new.json (every feature
   but benchtime_s takes part in matching).
"""

import contextlib
import io
import os
import subprocess
import sys
import tempfile
import unittest

import benchresult
import benchresult_lib as lib
import text_report

HERE = os.path.dirname(os.path.abspath(__file__))
OLD = os.path.join(HERE, "testdata", "old.json")
NEW = os.path.join(HERE, "testdata", "new.json")


def run_main(args):
    """Runs benchresult.main in-process; returns (status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = benchresult.main(args)
        except SystemExit as e:  # argparse usage errors
            status = e.code
    return status, out.getvalue(), err.getvalue()


def cells(before, after):
    """{title: (before, after, percentage)} as printed for a matched pair."""
    return {change.metric.title: (
        text_report.format_value(change.metric.kind, change.before),
        text_report.format_value(change.metric.kind, change.after),
        text_report.format_percent(change.percent))
        for change in lib.compare_runs(before, after)}


class PercentChangeTest(unittest.TestCase):
    """The comparison arithmetic, as a table."""

    CASES = (
        # before, after, printed percentage
        (1000, 1250, "+25.00%"),
        (3, 2, "-33.33%"),     # grpc-go's integer arithmetic gives -33.00%
        (3, 4, "+33.33%"),
        (100, 97, "-3.00%"),
        (1, 0, "-100.00%"),
        (2.5, 2.5, "0.00%"),
        (0, 0, "0.00%"),       # equal: no change, even from 0
        (0, 1, "n/a"),         # before 0: no meaningful ratio
        (0.0, 64.0, "n/a"),
        (None, 1, "n/a"),      # a null side
        (1, None, "n/a"),
        (None, None, "n/a"),
        (812000, 760400, "-6.35%"),
        (1, 1.0001, "+0.01%"),
    )

    def test_table(self):
        for before, after, expected in self.CASES:
            with self.subTest(before=before, after=after):
                self.assertEqual(text_report.format_percent(
                    lib.percent_change(before, after)), expected)

    def test_floating_point_not_truncated(self):
        self.assertAlmostEqual(lib.percent_change(3, 2), -100.0 / 3)
        self.assertEqual(lib.percent_change(1000, 1250), 25.0)

    def test_never_nan_or_infinite(self):
        for before, after in ((0, 0), (0, 5), (0.0, -1.0), (None, 0)):
            percent = lib.percent_change(before, after)
            self.assertTrue(percent is None or percent == 0.0)


class FormatTest(unittest.TestCase):
    """Cell formatting: latencies, throughputs, sizes, nulls."""

    def test_durations(self):
        for ns, expected in ((812000, "812µs"), (1450000, "1.45ms"),
                             (845123, "845µs"), (46605, "46.6µs"),
                             (999999, "1ms"), (500, "500ns"), (0, "0ns"),
                             (2.5e9, "2.5s")):
            with self.subTest(ns=ns):
                self.assertEqual(text_report.format_duration_ns(ns), expected)

    def test_bit_rates(self):
        for bps, expected in ((1146652864, "1.15Gbps"), (8192000, "8.19Mbps"),
                              (328e6, "328Mbps"), (1500, "1.5Kbps"),
                              (12, "12bps")):
            with self.subTest(bps=bps):
                self.assertEqual(text_report.format_bits_per_second(bps),
                                 expected)

    def test_values(self):
        self.assertEqual(text_report.format_value(lib.COUNT, 1400000),
                         "1400000")
        self.assertEqual(text_report.format_value(lib.PER_OP, 2), "2.00")
        self.assertEqual(text_report.format_value(lib.NANOSECONDS, None), "-")

    def test_features(self):
        features = {"workload": "unary", "client_stack": "h2rpc",
                    "server_stack": "grpcpp", "max_concurrent_calls": 120,
                    "req_size_bytes": 1024, "resp_size_bytes": 100,
                    "compression": "gzip", "connections": 1,
                    "benchtime_s": 10.0, "process": "two", "extra": 7}
        self.assertEqual(text_report.describe_features(features),
                         "unary h2rpc→grpcpp c=120 req=1KiB resp=100B "
                         "comp=gzip proc=two extra=7")


class ComparisonTest(unittest.TestCase):
    """Matching by features and the Before/After/Percentage cells."""

    def setUp(self):
        self.old = lib.load(OLD)
        self.new = lib.load(NEW)
        self.comparison = lib.match(self.old, self.new)

    def matched(self, **features):
        """The matched (before, after) pair whose features include these."""
        pairs = [(before, after) for before, after in self.comparison.matched
                 if all(after.features[k] == v for k, v in features.items())]
        self.assertEqual(len(pairs), 1, features)
        return pairs[0]

    def test_matching_by_features(self):
        matched = [(b.index, a.index) for b, a in self.comparison.matched]
        self.assertEqual(matched, [(0, 0), (1, 1), (2, 2)])
        before, after = self.matched(process="two")
        self.assertEqual((before.features["benchtime_s"],
                          after.features["benchtime_s"]), (10.0, 5.0))

    def test_only_in_one_file(self):
        self.assertEqual([r.features["workload"]
                          for r in self.comparison.only_old],
                         ["unconstrained"])
        self.assertEqual([(r.features["workload"], r.features["connections"])
                          for r in self.comparison.only_new], [("unary", 2)])

    def test_cells(self):
        table = cells(*self.matched(workload="unary", process="one"))
        self.assertEqual(table["TotalOps"], ("1000", "1250", "+25.00%"))
        self.assertEqual(table["Allocs/op (client)"],
                         ("3.00", "2.00", "-33.33%"))
        self.assertEqual(table["Allocs/op (server)"], ("0.00", "1.00", "n/a"))
        self.assertEqual(table["Bytes/op (server)"], ("0.00", "64.00", "n/a"))
        self.assertEqual(table["Bytes/op (client)"],
                         ("2048.00", "2048.00", "0.00%"))
        self.assertEqual(table["ReqT/op"], ("8.19Mbps", "10.2Mbps", "+25.00%"))
        self.assertEqual(table["50th-Lat"], ("46.6µs", "37.5µs", "-19.57%"))

    def test_null_side(self):
        table = cells(*self.matched(process="two"))
        self.assertEqual(table["Allocs/op (server)"], ("-", "-", "n/a"))
        self.assertEqual(table["CPU/op (server)"], ("-", "-", "n/a"))
        self.assertEqual(table["Allocs/op (client)"],
                         ("3.00", "2.00", "-33.33%"))
        self.assertEqual(table["99th-Lat"], ("1.3ms", "1.18ms", "-9.43%"))

    def test_rows_in_grpc_go_order(self):
        titles = [m.title for m in lib.COMPARISON_METRICS]
        self.assertEqual(titles[:13], [
            "TotalOps", "SendOps", "RecvOps", "Bytes/op (client)",
            "Bytes/op (server)", "Allocs/op (client)", "Allocs/op (server)",
            "ReqT/op", "RespT/op", "50th-Lat", "90th-Lat", "99th-Lat",
            "Avg-Lat"])

    def test_printed_report(self):
        status, out, err = run_main([OLD, NEW])
        self.assertEqual((status, err), (0, ""))
        self.assertRegex(out, r"(?m)^Title +Before +After +Percentage$")
        self.assertRegex(out, r"(?m)^TotalOps +1000 +1250 +\+25\.00%$")
        self.assertRegex(out, r"(?m)^Allocs/op \(client\) +3\.00 +2\.00 "
                              r"+-33\.33%$")
        self.assertRegex(out, r"(?m)^Allocs/op \(server\) +0\.00 +1\.00 "
                              r"+n/a$")
        self.assertIn("[benchtime 10s → 5s]", out)
        self.assertIn(f"only in {OLD}: unconstrained h2rpc→h2rpc c=64 "
                      "req=1KiB resp=1KiB comp=off\n", out)
        self.assertIn(f"only in {NEW}: unary h2rpc→h2rpc c=1 req=1KiB "
                      "resp=1KiB comp=off conns=2\n", out)
        self.assertEqual(out.count("\nTitle "), 3)
        self.assertNotIn("nan", out.lower())
        self.assertNotIn("inf", out.lower())


class RoundTripTest(unittest.TestCase):
    """A recorded file printed as a single-file table."""

    def test_each_run_printed_with_its_qps(self):
        for path in (OLD, NEW):
            result = lib.load(path)
            status, out, err = run_main([path])
            self.assertEqual((status, err), (0, ""))
            lines = out.splitlines()
            self.assertRegex(lines[2], r"^run +QPS +p50 µs +p99 µs ")
            self.assertEqual(len(lines), 3 + len(result.runs))
            for run, line in zip(result.runs, lines[3:]):
                with self.subTest(path=path, run=run.index):
                    self.assertTrue(line.startswith(
                        text_report.describe_features(run.features)))
                    self.assertIn(f"  {run.value(('qps',)):.1f}  ", line)

    def test_null_side_prints_dash(self):
        _, out, _ = run_main([NEW])
        line = next(x for x in out.splitlines() if "proc=two" in x)
        # cli/srv allocs/op, cli/srv B/op, cli/srv CPU µs/op: server null.
        self.assertEqual(line.split()[-6:],
                         ["2.00", "-", "2080.0", "-", "5.60", "-"])

    def test_latency_cdf(self):
        run = lib.load(OLD).runs[0]
        points = lib.latency_cdf(run)
        self.assertEqual(points[0][1], 0.0)
        self.assertEqual(points[-1][1], 1.0)
        self.assertTrue(all(a[0] < b[0] and a[1] <= b[1]
                            for a, b in zip(points, points[1:])))
        # p50 is the upper bound of the bucket where the CDF reaches 50 %.
        p50 = next(ns for ns, fraction in points if fraction >= 0.5)
        self.assertEqual(round(p50), run.value(("latency_ns", "p50")))
        self.assertEqual(lib.latency_cdf(lib.load(OLD).runs[3]), [])


class HtmlTest(unittest.TestCase):
    """The HTML report: one section with SVG per run, self-contained."""

    def check_report(self, args, expected_runs):
        with tempfile.TemporaryDirectory() as tmp:
            report = os.path.join(tmp, "report.html")
            status, _, err = run_main(args + ["--html", report])
            self.assertEqual(status, 0, err)
            with open(report, encoding="utf-8") as f:
                document = f.read()
        sections = document.split('<section class="run">')[1:]
        self.assertEqual(len(sections), expected_runs)
        for section in sections:
            self.assertIn("<svg", section)
            self.assertIn("Latency CDF", section)
        self.assertTrue(document.startswith("<!DOCTYPE html>"))
        self.assertTrue(document.rstrip().endswith("</html>"))
        for forbidden in ("http://", "https://", "<script", "src=", "href=",
                          "@import", "url("):
            self.assertNotIn(forbidden, document.lower())
        return sections

    def test_comparison(self):
        sections = self.check_report([OLD, NEW], 5)
        # Matched runs overlay two CDFs; runs in one file draw one.
        self.assertEqual(sections[0].count("<polyline"), 2)
        self.assertEqual(sections[4].count("<polyline"), 1)
        self.assertIn("+25.00%", sections[0])

    def test_single_file(self):
        sections = self.check_report([OLD], 4)
        self.assertIn("no latency histogram", sections[3])


class BadInputTest(unittest.TestCase):
    """Bad input: a message on stderr, exit status 2, no traceback."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, text):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def assert_rejected(self, args, message):
        status, out, err = run_main(args)
        self.assertEqual(status, 2)
        self.assertEqual(out, "")
        self.assertIn(message, err)
        self.assertNotIn("Traceback", err)

    def test_invalid_json(self):
        path = self.write("bad.json", '{"format": "h2rpc-benchmain/1", ')
        self.assert_rejected([path], f"{path}: invalid JSON at line 1")
        self.assert_rejected([OLD, path], "invalid JSON")

    def test_wrong_format(self):
        path = self.write("other.json", '{"format": "grpc-go/1", "runs": []}')
        self.assert_rejected(
            [path], f'{path}: "format" is "grpc-go/1", expected '
                    f'"h2rpc-benchmain/1"')
        path = self.write("none.json", '{"runs": []}')
        self.assert_rejected([path], 'no "format" field')

    def test_missing_file(self):
        path = os.path.join(self.tmp.name, "missing.json")
        self.assert_rejected([path], f"{path}: cannot read")

    def test_bad_fields(self):
        for body, message in (
                ('[]', "not a JSON object"),
                ('{"format": "h2rpc-benchmain/1"}', '"runs" is missing'),
                ('{"format": "h2rpc-benchmain/1", "runs": [{}]}',
                 'runs[0]: "features" is missing'),
                ('{"format": "h2rpc-benchmain/1", "runs": [{"features": {}, '
                 '"qps": "fast"}]}', '"qps" is "fast", expected a number'),
                ('{"format": "h2rpc-benchmain/1", "runs": [{"features": {}, '
                 '"qps": NaN}]}', "NaN is not a JSON number"),
                ('{"format": "h2rpc-benchmain/1", "runs": [{"features": {}, '
                 '"client": 3}]}', '"client" is not an object or null')):
            with self.subTest(body=body):
                self.assert_rejected([self.write("x.json", body)], message)

    def test_usage(self):
        status, _, err = run_main([OLD, NEW, OLD])
        self.assertEqual(status, 2)
        self.assertIn("expected one or two result files", err)

    def test_as_a_program(self):
        path = self.write("bad.json", "not json")
        process = subprocess.run(
            [sys.executable, os.path.join(HERE, "benchresult.py"), path],
            capture_output=True, check=False)
        stderr = process.stderr.decode("utf-8")
        self.assertEqual(process.returncode, 2, stderr)
        self.assertRegex(stderr, r"^benchresult: .*bad\.json: invalid JSON")
        self.assertNotIn("Traceback", stderr)


if __name__ == "__main__":
    unittest.main()
