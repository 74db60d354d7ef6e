"""The figures the result files of benchmark/results/ hold, and the figures
the prose of a document quotes (outside its generated blocks): a quoted
figure must be one a result file holds, within the rounding the text uses.
"""

import dataclasses
import glob
import os
import re

import benchresult_lib as lib
import blocks
import proxy_bench
import wan_bench


@dataclasses.dataclass
class Figures:
    """What the result files hold, by kind of figure."""
    ratios: set = dataclasses.field(default_factory=set)
    qps: set = dataclasses.field(default_factory=set)
    cpu_us: set = dataclasses.field(default_factory=set)
    allocs: set = dataclasses.field(default_factory=set)


def collect_figures(root):
    """Every figure the files of benchmark/results/ hold."""
    figures = Figures()
    by_stem, h2load = {}, []
    for path in sorted(glob.glob(os.path.join(root, blocks.RESULTS_DIR, "*.json"))):
        name = os.path.basename(path)
        document = blocks.load_json(root, name)
        if document.get("format") == lib.FORMAT:
            by_stem.setdefault(re.sub(r"_\d+\.json$", "", name), []).append(
                name)
        elif document.get("format") == wan_bench.FORMAT:
            _wan_figures(document, figures)
        elif document.get("format") == proxy_bench.FORMAT:
            _proxy_figures(document, figures)
        elif document.get("format") == blocks.H2LOAD_FORMAT:
            h2load.append(name)
    if h2load:
        for _, values, median, h2rpc in blocks.h2load_rows(root, h2load)[1]:
            figures.qps.update(values + [median])
            if h2rpc:
                figures.ratios.add(h2rpc / median)
    for names in by_stem.values():
        groups = lib.group_pairings([blocks.load_benchmain(root, n)[0] for n in names])
        for group in groups:
            for ratio in (group.qps_ratio(), group.p50_ratio()):
                if ratio is not None:
                    figures.ratios.add(ratio)
            for pairing in group.pairings:
                for run in [pairing.median_run()] + pairing.runs():
                    _run_figures(run, figures)
    return figures


def _run_figures(run, figures):
    if run.value(("qps",)) is not None:
        figures.qps.add(run.value(("qps",)))
    for side in ("client", "server"):
        cpu = run.value((side, "cpu_ns_per_op"))
        if cpu is not None:
            figures.cpu_us.add(cpu / 1000)
        allocs = run.value((side, "allocs_per_op"))
        if allocs is not None:
            figures.allocs.add(allocs)


def _wan_figures(document, figures):
    by_key = {}
    for run in document["runs"]:
        wan = run["wan"]
        kind = wan_bench.ROWS[wan["row"]][1]
        value = wan_bench.Figure(run, kind)
        by_key[(wan["rate_mbit"], wan["delay_ms"], wan["row"],
                wan["stack"])] = value
    for (rate, delay, row, stack), value in by_key.items():
        other = by_key.get((rate, delay, row, "grpcpp"))
        if stack == "h2rpc" and value and other:
            figures.ratios.add(value / other)
            figures.ratios.add(other / value)


def _proxy_figures(document, figures):
    for entry in proxy_bench.Summarize(document):
        figures.qps.add(entry["qps"])
        if entry.get("cpu_us_per_call") is not None:
            figures.cpu_us.add(entry["cpu_us_per_call"])
        for other in ("haproxy", "nginx"):
            ratio = entry.get("vs_" + other)
            if ratio is not None:
                figures.ratios.add(ratio)
                figures.ratios.add(1 / ratio)


# A figure in prose: (kind, pattern with the number as group 1, and whether
# a "k" suffix multiplies by 1000 (group 2)).
FIGURE_PATTERNS = (
    ("ratios", re.compile(
        r"(?<![\w.])(\d+(?:\.\d+)?)x\b(?=[^.\n]{0,60}"
        r"(?:gRPC C\+\+|grpcpp|h2load|nghttpd|HAProxy|nginx))")),
    ("qps", re.compile(
        r"(?<![\w.,])(\d[\d,]*(?:\.\d+)?)(k?) (?:calls|QPS|req|ops)(?:/s| per "
        r"second)\b")),
    ("cpu_us", re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)() (?:us|µs) (?:of )?CPU")),
    ("allocs", re.compile(
        r"(?<![\w.])(\d+(?:\.\d+)?)() (?:heap )?allocations? per "
        r"(?:call|RPC|op)\b")),
)


def _matches(number, decimals, values):
    return any(round(value, decimals) == round(number, decimals)
               for value in values)


def prose_figures(text):
    """(line number, kind, figure as written, value) outside the blocks."""
    found, inside = [], False
    for number, line in enumerate(text.split("\n"), 1):
        if blocks.BEGIN.match(line):
            inside = True
        elif line == blocks.END:
            inside = False
        if inside:
            continue
        for kind, pattern in FIGURE_PATTERNS:
            for match in pattern.finditer(line):
                written = match.group(1).replace(",", "")
                value = float(written)
                if match.lastindex >= 2 and match.group(2) == "k":
                    value *= 1000
                found.append((number, kind, match.group(0), value,
                              written))
    return found


def unsupported_figures(text, held, path):
    """Messages for the prose figures of `text` (the document at `path`)
    that `held` (collect_figures) does not hold."""
    problems = []
    for number, kind, shown, value, written in prose_figures(text):
        decimals = len(written.split(".")[1]) if "." in written else 0
        if kind == "qps" and shown.split()[0].endswith("k"):
            decimals -= 3
        if not _matches(value, decimals, getattr(held, kind)):
            problems.append(f"{path}:{number}: '{shown}' ({kind}) is in no "
                            f"file of benchmark/results/")
    return problems
