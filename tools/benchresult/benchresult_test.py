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

testdata/pairings_{1,2,3}.json repeat one command (--pairings): unary c=120
with all four pairings (h2rpc→grpcpp missing from the third file,
grpcpp→grpcpp in two processes with its server side null in the second
file), unary c=1 without grpcpp→grpcpp, and streaming c=8 whose
grpcpp→grpcpp has 0 QPS and null latency and sides. The files list c=120
before c=1 and grpcpp→h2rpc before h2rpc→grpcpp. They carry no latency
histograms; the --pairings --html tests add some to copies
(with_histograms).

The --before/--after tests write their files (repetitions_file): three
before and three after files of unary c=120 (h2rpc→h2rpc on both sides,
grpcpp→grpcpp in two processes after only, h2rpc→grpcpp before only),
unary c=1 (h2rpc→h2rpc on both sides, in two of the after files) and
streaming c=8 (before only). SyncServerStackTest writes one file with the
server stack h2rpc_sync (synchronous handlers) beside the others.
"""

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

import benchresult
import benchresult_lib as lib
import html_report
import text_report

HERE = os.path.dirname(os.path.abspath(__file__))
OLD = os.path.join(HERE, "testdata", "old.json")
NEW = os.path.join(HERE, "testdata", "new.json")
PAIRINGS = [os.path.join(HERE, "testdata", f"pairings_{n}.json")
            for n in (1, 2, 3)]


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
        features.update(servers=3, lb_policy="round_robin")
        self.assertEqual(text_report.describe_features(features),
                         "unary h2rpc→grpcpp c=120 req=1KiB resp=100B "
                         "comp=gzip proc=two servers=3 round_robin extra=7")
        features.update(servers=1, lb_policy="pick_first")
        self.assertNotIn("servers", text_report.describe_features(features))
        self.assertNotIn("pick_first",
                         text_report.describe_features(features))
        features.update(interceptors=3, busy_poll_us=50)
        self.assertEqual(text_report.describe_features(features),
                         "unary h2rpc→grpcpp c=120 req=1KiB resp=100B "
                         "comp=gzip proc=two interceptors=3 busy_poll=50µs "
                         "extra=7")
        features.update(interceptors=0, busy_poll_us=0, metrics=True)
        self.assertEqual(text_report.describe_features(features),
                         "unary h2rpc→grpcpp c=120 req=1KiB resp=100B "
                         "comp=gzip proc=two metrics extra=7")
        features.update(metrics=False, tracing=0.01)
        self.assertEqual(text_report.describe_features(features),
                         "unary h2rpc→grpcpp c=120 req=1KiB resp=100B "
                         "comp=gzip proc=two tracing=0.01 extra=7")
        features.update(tracing=0)  # a probability, not "off"
        self.assertIn("tracing=0", text_report.describe_features(features))
        features.update(tracing=False)
        self.assertNotIn("busy_poll", text_report.describe_features(features))
        self.assertNotIn("metrics", text_report.describe_features(features))
        self.assertNotIn("tracing", text_report.describe_features(features))


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


class PairingsTest(unittest.TestCase):
    """--pairings: medians over repeated files, ratios, order, Markdown."""

    def setUp(self):
        self.groups = lib.group_pairings([lib.load(p) for p in PAIRINGS])

    def pairing(self, concurrency, client, server, groups=None):
        """The unary Pairing client→server at `concurrency` calls."""
        group = next(g for g in groups or self.groups
                     if g.features["workload"] == "unary"
                     and g.features["max_concurrent_calls"] == concurrency)
        return group.find(client, server)

    def test_median(self):
        h2rpc = self.pairing(120, "h2rpc", "h2rpc")
        self.assertEqual(h2rpc.median(("qps",)), 102311)       # odd count
        mixed = self.pairing(120, "h2rpc", "grpcpp")           # 2 of 3 files
        self.assertEqual(mixed.median(("qps",)), 60500)
        self.assertEqual(mixed.median(("client", "allocs_per_op")), 3.5)
        grpcpp = self.pairing(120, "grpcpp", "grpcpp")         # a null side
        self.assertEqual(grpcpp.median(("server", "allocs_per_op")), 30.5)
        self.assertIsNone(self.pairing(1, "h2rpc", "grpcpp").median(
            ("server", "allocs_per_op")))
        two = lib.group_pairings([lib.load(p) for p in PAIRINGS[:2]])
        self.assertEqual(self.pairing(120, "h2rpc", "h2rpc", two).median(
            ("qps",)), 100157.5)                               # even count

    def test_ratio(self):
        for numerator, denominator, expected in (
                (102311, 30000, "3.41x"), (2436000, 812000, "3.00x"),
                (1, 3, "0.33x"), (5, 0, "n/a"), (0, 5, "n/a"),
                (None, 5, "n/a"), (5, None, "n/a"), (0.0, 0.0, "n/a")):
            with self.subTest(numerator=numerator, denominator=denominator):
                self.assertEqual(text_report.format_ratio(
                    lib.ratio(numerator, denominator)), expected)

    def test_group_ratios(self):
        ratios = [(g.features["workload"], g.features["max_concurrent_calls"],
                   text_report.format_ratio(g.qps_ratio()),
                   text_report.format_ratio(g.p50_ratio()))
                  for g in self.groups]
        self.assertEqual(ratios, [
            ("unary", 1, "n/a", "n/a"),          # no grpcpp→grpcpp
            ("unary", 120, "3.41x", "3.00x"),
            ("streaming", 8, "n/a", "n/a")])     # 0 QPS, null latency

    def test_order(self):
        order = [(g.features["workload"], g.features["max_concurrent_calls"],
                  [f"{p.client}→{p.server}" for p in g.pairings])
                 for g in self.groups]
        self.assertEqual(order, [
            ("unary", 1, ["h2rpc→h2rpc", "h2rpc→grpcpp"]),
            ("unary", 120, ["h2rpc→h2rpc", "grpcpp→grpcpp", "h2rpc→grpcpp",
                            "grpcpp→h2rpc"]),
            ("streaming", 8, ["h2rpc→h2rpc", "grpcpp→grpcpp"])])

    def test_table(self):
        status, out, err = run_main(["--pairings"] + PAIRINGS)
        self.assertEqual((status, err), (0, ""))
        lines = out.splitlines()
        self.assertEqual(lines[0], (
            "| workload | calls in flight | pairing | median QPS | "
            "QPS (runs) | median p50 | median p99 | client allocs/op | "
            "server allocs/op | client CPU us/op | server CPU us/op |"))
        self.assertEqual(lines[1], "| --- " * 11 + "|")
        # 8 pairings + the ratio rows of the 2 groups with grpcpp→grpcpp.
        self.assertEqual(len(lines), 2 + 10)
        lead = "| unary req=1KiB resp=1KiB comp=off | 120 | "
        for line in (
                "h2rpc→h2rpc | 102,311 | 102,311 / 98,004 / 104,500 | "
                "812 us | 1.45 ms | 3.00 | 6.00 | 6.10 | 5.90 |",
                "grpcpp→grpcpp proc=two | 30,000 | 30,000 / 30,010 / 29,990 "
                "| 2.44 ms | 4 ms | 20.50 | 30.50 | 15.00 | 14.10 |",
                "h2rpc→grpcpp | 60,500 | 60,000 / 61,000 / - | 1.55 ms | "
                "3.05 ms | 3.50 | 20.50 | 6.05 | 12.05 |",
                "h2rpc/grpcpp | 3.41x |  | 3.00x |  |  |  |  |  |"):
            self.assertIn(lead + line + "\n", out)
        self.assertIn("| 8 | grpcpp→grpcpp proc=two | 0 | 0 / 0 / 0 | n/a | "
                      "n/a | n/a | n/a | n/a | n/a |\n", out)
        self.assertIn("| 1 | h2rpc→grpcpp | 15,000 | 15,000 / 15,100 / "
                      "14,900 | 60 us | 150 us | 3.00 | n/a | 45.00 | n/a |",
                      out)

    def test_durations(self):
        for ns, expected in ((812000, "812 us"), (1450000, "1.45 ms"),
                             (46000, "46 us"), (500, "500 ns"),
                             (2.5e9, "2.5 s")):
            with self.subTest(ns=ns):
                self.assertEqual(text_report.format_duration_markdown(ns),
                                 expected)

    def test_one_file_and_no_runs(self):
        status, out, _ = run_main(["--pairings", PAIRINGS[2]])
        self.assertEqual(status, 0)
        self.assertIn("| grpcpp→h2rpc | 70,000 | 70,000 | 1.2 ms |", out)
        self.assertNotIn("h2rpc→grpcpp | 60", out)
        self.assertEqual(text_report.pairings_table([]), "(no runs)\n")


def with_histograms(path, directory):
    """Copies the result file at `path` into `directory`, adding to every
    run with a p50 a latency_histogram whose samples lie around it."""
    with open(path, encoding="utf-8") as f:
        document = json.load(f)
    for run in document["runs"]:
        p50 = (run.get("latency_ns") or {}).get("p50")
        if p50:
            # growth 2 from 1 µs: bucket i holds latencies up to 2**i µs.
            middle = max(1, round(p50 / 1000).bit_length())
            run["latency_histogram"] = {
                "growth": 2.0, "first_upper_ns": 1000,
                "counts": [[middle - 1, 10], [middle, 80], [middle + 1, 10]]}
    copy = os.path.join(directory, os.path.basename(path))
    with open(copy, "w", encoding="utf-8") as f:
        json.dump(document, f)
    return copy


class PairingsHtmlTest(unittest.TestCase):
    """--pairings --html: one section per configuration, all pairings."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def report(self, files):
        """Runs --pairings --html on `files`; returns (stdout, document)."""
        path = os.path.join(self.tmp.name, "pairings.html")
        status, out, err = run_main(["--pairings"] + files +
                                    ["--html", path])
        self.assertEqual(status, 0, err)
        self.assertIn("wrote", err)
        with open(path, encoding="utf-8") as f:
            return out, f.read()

    def test_one_section_per_configuration(self):
        files = [with_histograms(p, self.tmp.name) for p in PAIRINGS]
        out, document = self.report(files)
        # The text table is printed as without --html.
        _, text, _ = run_main(["--pairings"] + PAIRINGS)
        self.assertEqual(out, text)
        self.assertTrue(document.startswith("<!DOCTYPE html>"))
        self.assertTrue(document.rstrip().endswith("</html>"))
        self.assertEqual(document.count("<body>"), 1)
        self.assertEqual(document.count("</body>"), 1)
        for forbidden in ("http://", "https://", "<script", "src=", "href=",
                          "@import", "url("):
            self.assertNotIn(forbidden, document.lower())
        sections = document.split('<section class="config">')[1:]
        self.assertEqual(len(sections), 3)  # unary c=1, c=120; streaming c=8
        self.assertEqual(document.count("</section>"), 3)
        self.assertNotIn('<section class="run">', document)
        c1, c120, streaming = sections
        self.assertIn("unary", c120)
        self.assertIn("c=120", c120)
        self.assertIn("c=1 ", c1)
        self.assertIn("streaming", streaming)
        # One CDF per pairing on one chart; each pairing a table row.
        self.assertEqual(c120.count("<svg"), 1)
        self.assertEqual(c120.count("<polyline"), 4)
        self.assertEqual(c120.count("<tr>"), 1 + 4)
        for label in ("h2rpc→h2rpc", "grpcpp→grpcpp proc=two",
                      "h2rpc→grpcpp", "grpcpp→h2rpc"):
            self.assertIn(f"{label}</td>", c120)
        self.assertEqual(c1.count("<polyline"), 2)
        self.assertEqual(c1.count("<tr>"), 1 + 2)
        # streaming grpcpp→grpcpp has no latency: one curve, two rows.
        self.assertEqual(streaming.count("<polyline"), 1)
        self.assertEqual(streaming.count("<tr>"), 1 + 2)
        # The distinct colours of the four pairings.
        colours = {line.split('stroke="')[1].split('"')[0]
                   for line in c120.splitlines() if "<polyline" in line}
        self.assertEqual(len(colours), 4)
        # The ratio, as the text table computes it, prominently.
        self.assertIn('<p class="ratio">h2rpc/gRPC C++ QPS: 3.41x', c120)
        self.assertIn("3.41x", text)
        self.assertIn('<p class="ratio">h2rpc/gRPC C++ QPS: n/a', c1)
        self.assertIn('<p class="ratio">h2rpc/gRPC C++ QPS: n/a', streaming)
        # Medians over the files, as in the text table.
        self.assertIn("<td>102,311</td>", c120)
        self.assertIn("<td>812µs</td>", c120)

    def test_pooled_cdf(self):
        files = [with_histograms(p, self.tmp.name) for p in PAIRINGS]
        results = [lib.load(p) for p in files]
        pairing = self.pooled_pairing(results)
        runs = [run for runs in pairing.runs_per_file for run in runs]
        self.assertEqual(len(runs), 3)
        points = lib.pooled_latency_cdf(runs)
        self.assertEqual(points[-1][1], 1.0)
        # Three runs of 100 samples each: 30 of 300 in the first bucket.
        self.assertAlmostEqual(points[1][1], 0.1)
        self.assertEqual(lib.pooled_latency_cdf(runs[:1]),
                         lib.latency_cdf(runs[0]))
        self.assertEqual(lib.pooled_latency_cdf([]), [])
        # A histogram with other buckets than the first one is left out.
        odd = lib.Run(0, {}, {"latency_histogram": dict(
            runs[2].data["latency_histogram"], growth=3.0)})
        self.assertEqual(lib.pooled_latency_cdf(runs[:2] + [odd]),
                         lib.pooled_latency_cdf(runs[:2]))

    @staticmethod
    def pooled_pairing(results):
        group = next(g for g in lib.group_pairings(results)
                     if g.features["max_concurrent_calls"] == 120)
        return group.find("h2rpc", "h2rpc")

    def test_no_histograms(self):
        _, document = self.report(PAIRINGS)
        self.assertEqual(document.count('<section class="config">'), 3)
        self.assertNotIn("<polyline", document)
        self.assertEqual(document.count("no latency histogram"), 3)

    def test_names_escaped(self):
        with open(PAIRINGS[0], encoding="utf-8") as f:
            document = json.load(f)
        for run in document["runs"]:
            if run["features"]["client_stack"] == "grpcpp":
                run["features"]["client_stack"] = "<b>x&y</b>"
            run["features"]["workload"] += '<i class="w">'
        path = os.path.join(self.tmp.name, "evil.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(document, f)
        _, report = self.report([path])
        self.assertNotIn("<b>", report)
        self.assertNotIn("<i ", report)
        self.assertIn("&lt;b&gt;x&amp;y&lt;/b&gt;→grpcpp", report)
        self.assertIn("&lt;i class=&quot;w&quot;&gt;", report)

    def test_no_runs(self):
        path = os.path.join(self.tmp.name, "empty.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"format": lib.FORMAT, "runs": []}, f)
        out, document = self.report([path])
        self.assertEqual(out, "(no runs)\n")
        self.assertIn("<p>No runs.</p>", document)
        self.assertTrue(document.rstrip().endswith("</html>"))


def backends_file(runs):
    """A result file's text with these runs: (features, backends) pairs."""
    return json.dumps({"format": lib.FORMAT, "runs": [
        {"features": dict(workload="unary", client_stack="h2rpc",
                          server_stack="h2rpc", max_concurrent_calls=64,
                          **features),
         "qps": 1000.0, "backends": backends}
        for features, backends in runs]})


class BackendsTest(unittest.TestCase):
    """Runs over several servers (benchmain --servers, --lb_policy)."""

    def test_old_files_match_one_pick_first_server(self):
        old = lib.parse(backends_file([({}, None)]))
        new = lib.parse(backends_file([
            ({"servers": 3, "lb_policy": "round_robin"}, None),
            ({"servers": 1, "lb_policy": "pick_first"}, None)]))
        comparison = lib.match(old, new)
        self.assertEqual([(b.index, a.index)
                          for b, a in comparison.matched], [(0, 1)])
        self.assertEqual([r.index for r in comparison.only_new], [0])

    def test_requests_per_backend_column(self):
        result = lib.parse(backends_file([
            ({"servers": 2, "lb_policy": "round_robin"},
             [{"address": "127.0.0.1:1", "requests": 7443},
              {"address": "127.0.0.1:2", "requests": 7444}]),
            ({}, [{"address": "127.0.0.1:3", "requests": 9000}]),
            ({}, None)]))
        self.assertEqual(result.runs[0].backend_requests(), [7443, 7444])
        self.assertIsNone(result.runs[2].backend_requests())
        lines = text_report.single_table(result).splitlines()
        self.assertRegex(lines[2], r"  requests per backend$")
        self.assertRegex(lines[3], r"^unary h2rpc→h2rpc c=64 servers=2 "
                                   r"round_robin .*  7443 / 7444$")
        self.assertRegex(lines[4], r"  9000$")
        self.assertRegex(lines[5], r"  -$")

    def test_no_column_with_one_backend(self):
        result = lib.parse(backends_file([
            ({}, [{"address": "127.0.0.1:3", "requests": 9000}])]))
        self.assertNotIn("per backend", text_report.single_table(result))


class BusyPollTest(unittest.TestCase):
    """Runs with busy-polling h2rpc loops (benchmain --busy_poll_us)."""

    def test_old_files_match_runs_without_busy_polling(self):
        old = lib.parse(backends_file([({}, None)]))
        new = lib.parse(backends_file([({"busy_poll_us": 50}, None),
                                       ({"busy_poll_us": 0}, None)]))
        comparison = lib.match(old, new)
        self.assertEqual([(b.index, a.index)
                          for b, a in comparison.matched], [(0, 1)])
        self.assertEqual([r.index for r in comparison.only_new], [0])


def repetitions_file(directory, name, runs, benchtime_s):
    """Writes a result file of `runs` into `directory`; returns its path.

    Each run is (workload, calls, client, server, process, figures) where
    figures are (qps, p50_us, p99_us, client allocs/op, server allocs/op,
    client CPU µs/op, server CPU µs/op, histogram counts). The histogram
    has growth 2 from 1 µs.
    """
    document = {"format": lib.FORMAT, "runs": []}
    for workload, calls, client, server, process, figures in runs:
        qps, p50, p99, c_allocs, s_allocs, c_cpu, s_cpu, counts = figures
        document["runs"].append({
            "features": {
                "workload": workload, "client_stack": client,
                "server_stack": server, "max_concurrent_calls": calls,
                "req_size_bytes": 1024, "resp_size_bytes": 1024,
                "compression": "off", "connections": 1,
                "benchtime_s": benchtime_s, "process": process},
            "qps": qps,
            "latency_ns": {"p50": p50 * 1000, "p99": p99 * 1000},
            "latency_histogram": {"growth": 2.0, "first_upper_ns": 1000,
                                  "counts": counts},
            "client": {"allocs_per_op": c_allocs, "cpu_ns_per_op": c_cpu
                       * 1000},
            "server": {"allocs_per_op": s_allocs, "cpu_ns_per_op": s_cpu
                       * 1000}})
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(document, f)
    return path


def h2rpc(calls, *figures):
    return ("unary", calls, "h2rpc", "h2rpc", "one", figures)


# Per file: unary c=120 h2rpc→h2rpc (QPS medians 100,000 before and
# 120,000 after: +20.00%), h2rpc→grpcpp before only, grpcpp→grpcpp after
# only; unary c=1 h2rpc→h2rpc (after: two files, an even count); streaming
# c=8 before only. Files list c=120 first.
BEFORE_RUNS = (
    [h2rpc(120, 90000, 900, 2000, 3, 6, 6.0, 5.0, [[9, 10], [10, 10]]),
     ("unary", 120, "h2rpc", "grpcpp", "one",
      (60000, 1500, 3000, 3, 20, 6.0, 12.0, [[10, 5]])),
     h2rpc(1, 20000, 46, 116, 3, 6, 40.0, 38.0, [[5, 4]]),
     ("streaming", 8, "h2rpc", "h2rpc", "one",
      (40000, 200, 300, 0, 0, 20.0, 21.0, [[7, 1]]))],
    [h2rpc(120, 100000, 800, 1500, 3, 6, 6.2, 5.2, [[9, 20], [10, 5]]),
     ("unary", 120, "h2rpc", "grpcpp", "one",
      (61000, 1600, 3100, 4, 21, 6.1, 12.1, [[10, 5]])),
     h2rpc(1, 21000, 45, 110, 3, 6, 41.0, 38.0, [[5, 4]]),
     ("streaming", 8, "h2rpc", "h2rpc", "one",
      (41000, 200, 300, 0, 0, 20.0, 21.0, [[7, 1]]))],
    [h2rpc(120, 110000, 700, 1400, 4, 6, 5.8, 5.4, [[8, 1], [9, 30]]),
     ("unary", 120, "h2rpc", "grpcpp", "one",
      (59000, 1400, 2900, 3, 19, 5.9, 11.9, [[10, 5]])),
     h2rpc(1, 19000, 47, 120, 3, 6, 39.0, 38.0, [[5, 4]]),
     ("streaming", 8, "h2rpc", "h2rpc", "one",
      (39000, 200, 300, 0, 0, 20.0, 21.0, [[7, 1]]))],
)
AFTER_RUNS = (
    [h2rpc(120, 125000, 650, 1200, 2, 5, 5.0, 4.0, [[8, 40], [9, 10]]),
     ("unary", 120, "grpcpp", "grpcpp", "two",
      (30000, 2400, 4000, 20, 30, 15.0, 14.0, [[11, 10]])),
     h2rpc(1, 22000, 40, 100, 2, 5, 35.0, 30.0, [[5, 4]])],
    [h2rpc(120, 120000, 600, 1100, 2, 5, 5.2, 4.2, [[8, 30], [9, 10]]),
     ("unary", 120, "grpcpp", "grpcpp", "two",
      (31000, 2300, 3900, 21, 31, 15.0, 14.2, [[11, 10]])),
     h2rpc(1, 24000, 38, 90, 2, 5, 33.0, 29.0, [[5, 4]])],
    [h2rpc(120, 115000, 700, 1300, 3, 5, 5.4, 4.4, [[8, 20], [9, 20]]),
     ("unary", 120, "grpcpp", "grpcpp", "two",
      (29000, 2500, 4100, 20, 29, 15.1, 13.8, [[11, 10]]))],
)


class BeforeAfterTest(unittest.TestCase):
    """--before/--after: medians per side, changes, matching, the table."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        # The two sides ran for different times: benchtime_s is ignored.
        self.before = [repetitions_file(self.tmp.name, f"b{i}.json", runs, 5.0)
                       for i, runs in enumerate(BEFORE_RUNS, 1)]
        self.after = [repetitions_file(self.tmp.name, f"a{i}.json", runs, 10.0)
                      for i, runs in enumerate(AFTER_RUNS, 1)]
        self.groups = lib.match_repetitions(
            [lib.load(p) for p in self.before],
            [lib.load(p) for p in self.after])

    def group(self, workload, calls):
        groups = [g for g in self.groups
                  if g.features["workload"] == workload
                  and g.features["max_concurrent_calls"] == calls]
        self.assertEqual(len(groups), 1)
        return groups[0]

    def pair(self, calls, client, server):
        pairs = [p for p in self.group("unary", calls).pairings
                 if (p.pairing().client, p.pairing().server)
                 == (client, server)]
        self.assertEqual(len(pairs), 1)
        return pairs[0]

    def test_matching(self):
        self.assertEqual(
            [(g.features["workload"], g.features["max_concurrent_calls"],
              [(text_report.pairing_label(p.pairing()),
                p.before is not None, p.after is not None)
               for p in g.pairings])
             for g in self.groups],
            [("unary", 1, [("h2rpc→h2rpc", True, True)]),
             ("unary", 120, [("h2rpc→h2rpc", True, True),
                             ("grpcpp→grpcpp proc=two", False, True),
                             ("h2rpc→grpcpp", True, False)]),
             ("streaming", 8, [("h2rpc→h2rpc", True, False)])])
        c120 = self.group("unary", 120)
        self.assertEqual(len(c120.matched()), 1)
        self.assertEqual([p.pairing().client for p in c120.only_after()],
                         ["grpcpp"])
        self.assertEqual([p.pairing().server for p in c120.only_before()],
                         ["grpcpp"])
        self.assertEqual(self.group("streaming", 8).matched(), [])
        # Each side's Pairing holds that side's files only.
        pair = self.pair(1, "h2rpc", "h2rpc")
        self.assertEqual([len(runs) for runs in pair.before.runs_per_file],
                         [1, 1, 1])
        self.assertEqual([len(runs) for runs in pair.after.runs_per_file],
                         [1, 1, 0])

    def test_process_takes_part_in_matching(self):
        moved = [repetitions_file(self.tmp.name, "two.json", [
            ("unary", 120, "h2rpc", "h2rpc", "two",
             (1, 1, 1, 1, 1, 1.0, 1.0, []))], 5.0)]
        groups = lib.match_repetitions([lib.load(self.before[0])],
                                       [lib.load(p) for p in moved])
        c120 = next(g for g in groups
                    if g.features["max_concurrent_calls"] == 120)
        self.assertEqual(c120.matched(), [])
        self.assertEqual(len(c120.only_after()), 1)

    def test_medians_and_change(self):
        pair = self.pair(120, "h2rpc", "h2rpc")
        self.assertEqual(pair.before.median(("qps",)), 100000)
        self.assertEqual(pair.after.median(("qps",)), 120000)
        self.assertEqual(pair.qps_change(), 20.0)
        self.assertEqual(pair.before.median(("latency_ns", "p50")), 800000)
        self.assertEqual(pair.after.median(("latency_ns", "p99")), 1200000)
        self.assertEqual(pair.before.median(("client", "allocs_per_op")), 3)
        self.assertEqual(pair.after.median(("server", "cpu_ns_per_op")),
                         4200)
        small = self.pair(1, "h2rpc", "h2rpc")
        self.assertEqual(small.after.median(("qps",)), 23000)  # even count
        self.assertEqual(small.qps_change(), 15.0)
        self.assertIsNone(self.pair(120, "grpcpp", "grpcpp").qps_change())
        self.assertIsNone(self.pair(120, "h2rpc", "grpcpp").qps_change())

    def test_median_run(self):
        pair = self.pair(120, "h2rpc", "h2rpc")
        run = pair.before.median_run()
        self.assertEqual(run.value(("qps",)), 100000)
        self.assertEqual(run.value(("latency_ns", "p50")), 800000)
        self.assertEqual(run.value(("client", "cpu_ns_per_op")), 6000)
        self.assertIsNone(run.value(("latency_ns", "p90")))  # in no file
        self.assertEqual(run.features["client_stack"], "h2rpc")
        # The histogram pools the three before files' samples.
        self.assertEqual(sorted(run.value(("latency_histogram", "counts"))),
                         [[8, 1], [9, 60], [10, 15]])
        self.assertEqual(lib.latency_cdf(run),
                         lib.pooled_latency_cdf(pair.before.runs()))
        self.assertIsNone(lib.pooled_histogram([lib.Run(0, {}, {})]))

    def test_table(self):
        status, out, err = run_main(["--before"] + self.before +
                                    ["--after"] + self.after)
        self.assertEqual((status, err), (0, ""))
        lines = out.splitlines()
        self.assertEqual(lines[0], (
            "| workload | calls in flight | pairing | side | median QPS | "
            "QPS change | QPS (runs) | median p50 | median p99 | "
            "client allocs/op | server allocs/op | client CPU us/op | "
            "server CPU us/op |"))
        self.assertEqual(lines[1], "| --- " * 13 + "|")
        lead = "| unary req=1KiB resp=1KiB comp=off | "
        self.assertEqual(lines[2:10], [
            lead + "1 | h2rpc→h2rpc | before | 20,000 |  | "
            "20,000 / 21,000 / 19,000 | 46 us | 116 us | 3.00 | 6.00 | "
            "40.00 | 38.00 |",
            lead + "1 | h2rpc→h2rpc | after | 23,000 | +15.00% | "
            "22,000 / 24,000 / - | 39 us | 95 us | 2.00 | 5.00 | 34.00 | "
            "29.50 |",
            lead + "120 | h2rpc→h2rpc | before | 100,000 |  | "
            "90,000 / 100,000 / 110,000 | 800 us | 1.5 ms | 3.00 | 6.00 | "
            "6.00 | 5.20 |",
            lead + "120 | h2rpc→h2rpc | after | 120,000 | +20.00% | "
            "125,000 / 120,000 / 115,000 | 650 us | 1.2 ms | 2.00 | 5.00 | "
            "5.20 | 4.20 |",
            lead + "120 | grpcpp→grpcpp proc=two | after only | 30,000 |  | "
            "30,000 / 31,000 / 29,000 | 2.4 ms | 4 ms | 20.00 | 30.00 | "
            "15.00 | 14.00 |",
            lead + "120 | h2rpc→grpcpp | before only | 60,000 |  | "
            "60,000 / 61,000 / 59,000 | 1.5 ms | 3 ms | 3.00 | 20.00 | "
            "6.00 | 12.00 |",
            "| streaming req=1KiB resp=1KiB comp=off | 8 | h2rpc→h2rpc | "
            "before only | 40,000 |  | 40,000 / 41,000 / 39,000 | 200 us | "
            "300 us | 0.00 | 0.00 | 20.00 | 21.00 |",
            ""])
        self.assertEqual(lines[10:], [
            "Only in the before files (medians above):",
            "- unary h2rpc→grpcpp c=120 req=1KiB resp=1KiB comp=off",
            "- streaming h2rpc→h2rpc c=8 req=1KiB resp=1KiB comp=off",
            "",
            "Only in the after files (medians above):",
            "- unary grpcpp→grpcpp c=120 req=1KiB resp=1KiB comp=off "
            "proc=two"])
        self.assertNotIn("No configuration", out)

    def test_nothing_matched(self):
        other = repetitions_file(self.tmp.name, "other.json", [
            ("unconstrained", 64, "h2rpc", "h2rpc", "one",
             (88000, 700, 900, 1, 2, 9.0, 9.5, []))], 5.0)
        status, out, _ = run_main(["--before", self.before[0],
                                   "--after", other])
        self.assertEqual(status, 0)
        self.assertIn("\n\nNo configuration and pairing appears in both the "
                      "before and the after files.\n", out)
        self.assertNotIn("%", out)
        self.assertEqual(out.count(" | before only | "), 4)
        self.assertIn("| unconstrained req=1KiB resp=1KiB comp=off | 64 | "
                      "h2rpc→h2rpc | after only | 88,000 |  | 88,000 | ",
                      out)
        self.assertIn("Only in the after files (medians above):\n"
                      "- unconstrained h2rpc→h2rpc c=64 req=1KiB "
                      "resp=1KiB comp=off\n", out)
        empty = os.path.join(self.tmp.name, "empty.json")
        with open(empty, "w", encoding="utf-8") as f:
            json.dump({"format": lib.FORMAT, "runs": []}, f)
        self.assertEqual(run_main(["--before", empty, "--after", empty]),
                         (0, "(no runs)\n", ""))

    def test_html(self):
        report = os.path.join(self.tmp.name, "report.html")
        status, out, err = run_main(["--before"] + self.before + ["--after"] +
                                    self.after + ["--html", report])
        self.assertEqual(status, 0, err)
        self.assertIn("wrote", err)
        _, text, _ = run_main(["--before"] + self.before +
                              ["--after"] + self.after)
        self.assertEqual(out, text)
        with open(report, encoding="utf-8") as f:
            document = f.read()
        self.assertTrue(document.startswith("<!DOCTYPE html>"))
        self.assertTrue(document.rstrip().endswith("</html>"))
        for forbidden in ("http://", "https://", "<script", "src=", "href=",
                          "@import", "url("):
            self.assertNotIn(forbidden, document.lower())
        self.assertIn(f"<div>before: {self.before[0]}", document)
        self.assertIn(f"<div>after: {self.after[2]}", document)
        sections = document.split('<section class="run">')[1:]
        self.assertEqual(len(sections), 3)  # unary c=1, c=120; streaming
        c1, c120, streaming = sections
        self.assertIn("<h2>unary c=120 req=1KiB", c120)
        for section in sections:
            self.assertEqual(section.count("Latency CDF</title>"), 1)
        # One curve per pairing and side, in a colour each, on one chart.
        cdf = c120.split("</svg>")[0]
        self.assertIn("Latency CDF", cdf)
        colours = [line.split('stroke="')[1].split('"')[0]
                   for line in cdf.splitlines() if "<polyline" in line]
        self.assertEqual(colours, list(html_report.PAIRING_COLOURS[:4]))
        for colour, label in zip(colours, (
                "h2rpc→h2rpc before", "h2rpc→h2rpc after",
                "grpcpp→grpcpp proc=two after only",
                "h2rpc→grpcpp before only")):
            self.assertIn(f'background:{colour}"></span>{label}<', c120)
        self.assertEqual(c1.count("<polyline"), 2)
        self.assertEqual(streaming.count("<polyline"), 1)
        # The table below the charts: the text table's cells.
        table = c120.split("<pre>")[1].split("</pre>")[0]
        self.assertRegex(table, r"(?m)^h2rpc→h2rpc +after +120,000 +"
                                r"\+20\.00% +125,000 / 120,000 / 115,000 ")
        self.assertRegex(table, r"(?m)^grpcpp→grpcpp proc=two +after only +"
                                r"30,000 +30,000 / ")
        # QPS bars of the medians.
        self.assertIn(">100k</text>", c120)
        self.assertIn(">120k</text>", c120)


def stacks_run(client, server, qps, process="one"):
    """A unary c=64 run client→server of `qps` (repetitions_file form)."""
    return ("unary", 64, client, server, process,
            (qps, 100, 200, 3, 2, 6.0, 5.0, [[7, 10]]))


# One file with h2rpc's server with synchronous handlers (h2rpc_sync)
# beside the others, in an order unlike the table's.
SYNC_RUNS = [stacks_run("grpcpp", "h2rpc_sync", 20000),
             stacks_run("h2rpc", "grpcpp", 40000),
             stacks_run("h2rpc", "h2rpc_sync", 50000),
             stacks_run("grpcpp", "grpcpp", 30000, "two"),
             stacks_run("h2rpc", "h2rpc", 90000)]


class CoroStackTest(unittest.TestCase):
    """Stacks h2rpc_coro: their pairing follows h2rpc's callback ones."""

    def test_order(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = repetitions_file(
                tmp, "coro.json",
                [stacks_run("grpcpp", "grpcpp", 30000, "two"),
                 stacks_run("h2rpc_coro", "h2rpc_coro", 85000),
                 stacks_run("h2rpc", "h2rpc", 90000)], 5.0)
            (group,) = lib.group_pairings([lib.load(path)])
            self.assertEqual([text_report.pairing_label(p)
                              for p in group.pairings],
                             ["h2rpc→h2rpc", "h2rpc_coro→h2rpc_coro",
                              "grpcpp→grpcpp proc=two"])
            status, out, err = run_main(["--pairings", path])
            self.assertEqual((status, err), (0, ""))
            self.assertIn("| 64 | h2rpc_coro→h2rpc_coro | 85,000 | 85,000 | ",
                          out)
            # The coroutine stacks against the callback ones.
            self.assertIn("| 64 | h2rpc_coro/h2rpc | 0.94x |  | 1.00x |", out)


class SyncServerStackTest(unittest.TestCase):
    """Server stack h2rpc_sync: a pairing of its own, after h2rpc's."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.path = repetitions_file(self.tmp.name, "sync.json", SYNC_RUNS,
                                     5.0)

    def test_order_and_ratio(self):
        groups = lib.group_pairings([lib.load(self.path)])
        self.assertEqual(len(groups), 1)
        self.assertEqual([text_report.pairing_label(p)
                          for p in groups[0].pairings],
                         ["h2rpc→h2rpc", "h2rpc→h2rpc_sync",
                          "grpcpp→grpcpp proc=two", "h2rpc→grpcpp",
                          "grpcpp→h2rpc_sync"])
        # The h2rpc/grpcpp ratio stays the callback server's.
        self.assertEqual(text_report.format_ratio(groups[0].qps_ratio()),
                         "3.00x")

    def test_ratio_without_the_callback_server_is_the_sync_one(self):
        path = repetitions_file(self.tmp.name, "sync_only.json",
                                SYNC_RUNS[:4], 5.0)
        (group,) = lib.group_pairings([lib.load(path)])
        self.assertEqual(text_report.format_ratio(group.qps_ratio()),
                         "1.67x")

    def test_table(self):
        status, out, err = run_main(["--pairings", self.path])
        self.assertEqual((status, err), (0, ""))
        self.assertIn("| 64 | h2rpc→h2rpc_sync | 50,000 | 50,000 | ", out)
        self.assertIn("| 64 | grpcpp→h2rpc_sync | 20,000 | 20,000 | ", out)
        status, out, err = run_main([self.path])
        self.assertEqual((status, err), (0, ""))
        self.assertIn("unary h2rpc→h2rpc_sync c=64", out)

    def test_not_matched_with_the_callback_server(self):
        before = repetitions_file(self.tmp.name, "before.json",
                                  [stacks_run("h2rpc", "h2rpc", 90000)], 5.0)
        groups = lib.match_repetitions([lib.load(before)],
                                       [lib.load(self.path)])
        pairs = {text_report.pairing_label(p.pairing()):
                 (p.before is not None, p.after is not None)
                 for p in groups[0].pairings}
        self.assertEqual(pairs["h2rpc→h2rpc"], (True, True))
        self.assertEqual(pairs["h2rpc→h2rpc_sync"], (False, True))

    def test_html(self):
        html = os.path.join(self.tmp.name, "sync.html")
        status, _, err = run_main(["--pairings", self.path, "--html", html])
        self.assertEqual(status, 0, err)
        with open(html, encoding="utf-8") as f:
            document = f.read()
        self.assertIn("h2rpc→h2rpc_sync</td>", document)
        self.assertIn("grpcpp→h2rpc_sync</td>", document)
        # One curve per pairing, each in a colour of its own.
        colours = {line.split('stroke="')[1].split('"')[0]
                   for line in document.splitlines() if "<polyline" in line}
        self.assertEqual(len(colours), 5)


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
                 '"client": 3}]}', '"client" is not an object or null'),
                ('{"format": "h2rpc-benchmain/1", "runs": [{"features": {}, '
                 '"backends": [{"address": "a", "requests": -1}]}]}',
                 '"backends" must be null or a list'),
                ('{"format": "h2rpc-benchmain/1", "runs": [{"features": {}, '
                 '"backends": {"requests": 1}}]}',
                 '"backends" must be null or a list')):
            with self.subTest(body=body):
                self.assert_rejected([self.write("x.json", body)], message)

    def test_usage(self):
        status, _, err = run_main([OLD, NEW, OLD])
        self.assertEqual(status, 2)
        self.assertIn("expected one or two result files", err)
        status, out, err = run_main([OLD, NEW, "--pairings", "--bogus"])
        self.assertEqual((status, out), (2, ""))
        self.assertIn("unrecognized arguments: --bogus", err)

    def test_before_after_usage(self):
        for args, message in (
                (["--before", OLD], "--before needs --after"),
                (["--before", OLD, NEW], "--before needs --after"),
                (["--after", NEW], "--after needs --before"),
                (["--pairings", "--before", OLD, "--after", NEW],
                 "--before/--after cannot be combined with --pairings"),
                (["--before", OLD, "--pairings", PAIRINGS[0]],
                 "--before/--after cannot be combined with --pairings"),
                ([OLD, "--before", OLD, "--after", NEW],
                 "every result file follows one of them; also given: "
                 f"{OLD}"),
                (["--before", "--after", NEW], "expected at least one"),
                ([], "expected one or two result files")):
            with self.subTest(args=args):
                self.assert_rejected(args, message)
        missing = os.path.join(self.tmp.name, "missing.json")
        self.assert_rejected(["--before", OLD, "--after", NEW, missing],
                             f"{missing}: cannot read")

    def test_pairings(self):
        missing = os.path.join(self.tmp.name, "missing.json")
        self.assert_rejected(["--pairings", PAIRINGS[0], missing],
                             f"{missing}: cannot read")
        path = self.write("bad.json", '{"format": "h2rpc-benchmain/1"}')
        self.assert_rejected(["--pairings"] + PAIRINGS + [path],
                             f'{path}: "runs" is missing')

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
