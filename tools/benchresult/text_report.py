"""Plain-text tables for benchmain result files.

single_table() prints one row per run of one file; comparison_report()
prints, per run matched between two files, a grpc-go benchresult style
table (Title / Before / After / Percentage) and then the runs found in one
file only; pairings_table() prints the runs of repeated files side by side
per client→server pairing as a Markdown table; before_after_table() prints
the medians of two sets of repeated files, before and after a change, per
configuration and pairing as a Markdown table. The cell formatters are
public so the HTML report and the tests use the same text.
"""

import re

import benchresult_lib as lib

MISSING = "-"  # a value that is null in the file
NOT_APPLICABLE = "n/a"  # a percentage with no meaning (see percent_change)

_DURATION_UNITS = ((1.0, "ns"), (1e3, "µs"), (1e6, "ms"), (1e9, "s"))
_BIT_RATE_UNITS = ((1.0, "bps"), (1e3, "Kbps"), (1e6, "Mbps"), (1e9, "Gbps"),
                   (1e12, "Tbps"))
_COMPACT_UNITS = ((1.0, ""), (1e3, "k"), (1e6, "M"), (1e9, "G"))

# Features shown in a run's description by describe_features(), in order;
# other features are appended as name=value.
_DESCRIBED_FEATURES = frozenset({
    "workload", "client_stack", "server_stack", "max_concurrent_calls",
    "req_size_bytes", "resp_size_bytes", "compression", "connections",
    "process", "benchtime_s", "secure", "servers", "lb_policy",
    "interceptors", "busy_poll_us", "metrics", "tracing"})


def format_percent(percent):
    """Formats a percent_change() result: "+12.34%", "-3.00%", "0.00%", "n/a".

    Two decimals and an explicit sign; exactly 0 prints as "0.00%".
    """
    if percent is None:
        return NOT_APPLICABLE
    if percent == 0:
        return "0.00%"
    return f"{percent:+.2f}%"


def _three_digits(number):
    """Formats a number in [0, 1000) with three significant digits.

    Trailing zeros after the decimal point are dropped: 812.0 -> "812",
    1.450 -> "1.45", 2.3 -> "2.3".
    """
    if number >= 100:
        text = f"{number:.0f}"
    elif number >= 10:
        text = f"{number:.1f}"
    else:
        text = f"{number:.2f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _scaled(value, units):
    """Formats `value` in the largest of `units` that keeps it below 1000.

    `units` is ((factor, suffix), ...) in increasing factor order. Rounding
    that reaches 1000 moves to the next unit ("1ms", not "1000µs").
    """
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    chosen = 0
    for i, (factor, _) in enumerate(units):
        if magnitude >= factor:
            chosen = i
    while True:
        factor, suffix = units[chosen]
        text = _three_digits(magnitude / factor)
        if float(text) < 1000 or chosen == len(units) - 1:
            return f"{sign}{text}{suffix}"
        chosen += 1


def format_duration_ns(nanoseconds):
    """Formats nanoseconds readably: 812000 -> "812µs", 1450000 -> "1.45ms"."""
    return _scaled(nanoseconds, _DURATION_UNITS)


def format_bits_per_second(bps):
    """Formats a bit rate in decimal units: 1146652864 -> "1.15Gbps"."""
    return _scaled(bps, _BIT_RATE_UNITS)


def format_compact(number):
    """Formats a number for an axis label: 150000 -> "150k", 0.5 -> "0.5"."""
    return _scaled(number, _COMPACT_UNITS)


def format_bytes(size):
    """Formats a size: 1024 -> "1KiB", 1048576 -> "1MiB", 10 -> "10B"."""
    for factor, suffix in ((1 << 20, "MiB"), (1 << 10, "KiB")):
        if size and size % factor == 0:
            return f"{size // factor}{suffix}"
    return f"{size}B"


def format_value(kind, value):
    """Formats one cell of a comparison table for a metric of `kind`."""
    if value is None:
        return MISSING
    if kind == lib.COUNT:
        return str(int(value)) if float(value).is_integer() else f"{value:.2f}"
    if kind == lib.PER_OP:
        return f"{value:.2f}"
    if kind == lib.RATE:
        return f"{value:.1f}"
    if kind == lib.BITS_PER_SECOND:
        return format_bits_per_second(value)
    if kind == lib.NANOSECONDS:
        return format_duration_ns(value)
    raise ValueError(f"unknown metric kind {kind!r}")


def describe_features(features):
    """Describes a run's features on one line.

    "unary h2rpc→grpcpp c=120 req=1KiB resp=1KiB comp=off", then "tls"
    when secure, "conns=N", "proc=two", "servers=N", the lb_policy
    ("round_robin"), "interceptors=N", "busy_poll=Nµs", "metrics" and
    "tracing=P" when not the defaults (1, "one", 1, "pick_first", 0, 0,
    false, false), then
    any feature this tool does not know as name=value. benchtime_s is left
    out: it does not identify a run.
    """
    parts = []
    if "workload" in features:
        parts.append(str(features["workload"]))
    if "client_stack" in features or "server_stack" in features:
        parts.append(f'{features.get("client_stack", "?")}→'
                     f'{features.get("server_stack", "?")}')
    for name, label in (("max_concurrent_calls", "c"),
                        ("req_size_bytes", "req"),
                        ("resp_size_bytes", "resp")):
        if name in features:
            value = features[name]
            if label != "c" and isinstance(value, int):
                value = format_bytes(value)
            parts.append(f"{label}={value}")
    if "compression" in features:
        parts.append(f'comp={features["compression"]}')
    if features.get("secure"):
        parts.append("tls")
    if features.get("connections", 1) != 1:
        parts.append(f'conns={features["connections"]}')
    if features.get("process", "one") != "one":
        parts.append(f'proc={features["process"]}')
    if features.get("servers", 1) != 1:
        parts.append(f'servers={features["servers"]}')
    if features.get("lb_policy", "pick_first") != "pick_first":
        parts.append(str(features["lb_policy"]))
    if features.get("interceptors", 0) != 0:
        parts.append(f'interceptors={features["interceptors"]}')
    if features.get("busy_poll_us", 0) != 0:
        parts.append(f'busy_poll={features["busy_poll_us"]}µs')
    if features.get("metrics"):
        parts.append("metrics")
    tracing = features.get("tracing", False)
    if tracing is not False and tracing is not None:  # 0 is a probability
        parts.append(f"tracing={tracing}")
    parts.extend(f"{name}={value}" for name, value in sorted(features.items())
                 if name not in _DESCRIBED_FEATURES)
    return " ".join(parts)


def describe_file(result):
    """One line naming a file, when it was run, and its versions."""
    started = f" ({result.started})" if result.started else ""
    versions = ", ".join(f"{name} {value}"
                         for name, value in result.versions.items())
    return f"{result.path}{started}: {versions or 'no versions recorded'}"


def align(rows, left_columns=1):
    """Lays out rows of cells in columns two spaces apart.

    The first `left_columns` columns are left-aligned, the others right-
    aligned. Returns the lines, without trailing spaces.
    """
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [cell.ljust(width) if i < left_columns else cell.rjust(width)
                 for i, (cell, width) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
    return lines


def _microseconds(decimals):
    """Returns a formatter of nanoseconds as microseconds, no unit."""
    return lambda ns: f"{ns / 1000:.{decimals}f}"


# Columns of the single-file table: (header, path in the run, formatter).
_SINGLE_COLUMNS = (
    ("QPS", ("qps",), "{:.1f}".format),
    ("p50 µs", ("latency_ns", "p50"), _microseconds(1)),
    ("p99 µs", ("latency_ns", "p99"), _microseconds(1)),
    ("cli allocs/op", ("client", "allocs_per_op"), "{:.2f}".format),
    ("srv allocs/op", ("server", "allocs_per_op"), "{:.2f}".format),
    ("cli B/op", ("client", "bytes_per_op"), "{:.1f}".format),
    ("srv B/op", ("server", "bytes_per_op"), "{:.1f}".format),
    ("cli CPU µs/op", ("client", "cpu_ns_per_op"), _microseconds(2)),
    ("srv CPU µs/op", ("server", "cpu_ns_per_op"), _microseconds(2)),
)


def _single_cell(run, path, formatter):
    """Formats one cell of the single-file table ("-" when null)."""
    value = run.value(path)
    return MISSING if value is None else formatter(value)


def _backends_cell(run):
    """"7443 / 7444": the requests each backend served ("-" if unknown)."""
    requests = run.backend_requests()
    if requests is None:
        return MISSING
    return " / ".join(str(n) for n in requests)


def single_table(result):
    """Returns the text table of one result file: one row per run.

    When a run had more than one backend (benchmain --servers), a last
    column gives the requests each backend served.
    """
    per_backend = any(len(run.backend_requests() or []) > 1
                      for run in result.runs)
    header = ["run"] + [title for title, _, _ in _SINGLE_COLUMNS]
    if per_backend:
        header.append("requests per backend")
    rows = [header]
    for run in result.runs:
        row = [describe_features(run.features)] + [
            _single_cell(run, path, formatter)
            for _, path, formatter in _SINGLE_COLUMNS]
        if per_backend:
            row.append(_backends_cell(run))
        rows.append(row)
    lines = [describe_file(result), ""] + align(rows)
    if not result.runs:
        lines.append("(no runs)")
    return "\n".join(lines) + "\n"


def _benchtime_note(before, after):
    """" [benchtime 10s → 5s]" when the matched runs' benchtimes differ."""
    old = before.features.get("benchtime_s")
    new = after.features.get("benchtime_s")
    if old == new:
        return ""

    def seconds(value):
        return f"{value:g}s" if isinstance(value, (int, float)) else "?"

    return f"  [benchtime {seconds(old)} → {seconds(new)}]"


def change_table(changes):
    """Returns the Title / Before / After / Percentage rows for Changes."""
    rows = [["Title", "Before", "After", "Percentage"]]
    for change in changes:
        kind = change.metric.kind
        rows.append([change.metric.title,
                     format_value(kind, change.before),
                     format_value(kind, change.after),
                     format_percent(change.percent)])
    return "\n".join(align(rows)) + "\n"


def run_comparison(before, after):
    """Returns the title line and table for one matched pair of runs."""
    title = describe_features(after.features) + _benchtime_note(before, after)
    return title + "\n" + change_table(lib.compare_runs(before, after))


def comparison_report(old, new, comparison):
    """Returns the text comparing two ResultFiles, given their Comparison."""
    parts = [describe_file(old) + "\n" + describe_file(new) + "\n"]
    for before, after in comparison.matched:
        parts.append(run_comparison(before, after))
    if not comparison.matched:
        parts.append("no run appears in both files\n")
    only = [f"only in {old.path}: {describe_features(run.features)}"
            for run in comparison.only_old]
    only += [f"only in {new.path}: {describe_features(run.features)}"
             for run in comparison.only_new]
    if only:
        parts.append("\n".join(only) + "\n")
    return "\n".join(parts)


# Columns of the pairings table, after which each row's cells follow.
_PAIRINGS_HEADER = (
    "workload", "calls in flight", "pairing", "median QPS", "QPS (runs)",
    "median p50", "median p99", "client allocs/op", "server allocs/op",
    "client CPU us/op", "server CPU us/op")


def format_duration_markdown(nanoseconds):
    """format_duration_ns() as docs/performance.md writes it: "812 us"."""
    number, unit = re.fullmatch(r"(-?[0-9.]+)(\D+)",
                                format_duration_ns(nanoseconds)).groups()
    return f"{number} {unit.replace('µ', 'u')}"


def format_ratio(ratio):
    """Formats a lib.ratio() result: "3.41x", or "n/a" for None."""
    return NOT_APPLICABLE if ratio is None else f"{ratio:.2f}x"


def _qps(value):
    """Formats QPS as a whole number with thousands separators."""
    return f"{value:,.0f}"


def _median_cell(pairing, path, formatter):
    """Formats a Pairing's median at `path`; "n/a" when there is none."""
    value = pairing.median(path)
    return NOT_APPLICABLE if value is None else formatter(value)


def _qps_per_file(pairing):
    """"102,311 / 98,004 / -": each file's QPS, "-" for a file without it."""
    cells = []
    for runs in pairing.runs_per_file:
        values = [run.value(("qps",)) for run in runs] or [None]
        cells.extend(MISSING if value is None else _qps(value)
                     for value in values)
    return " / ".join(cells)


def pairing_label(pairing):
    """"h2rpc→grpcpp", plus " proc=two" for a two-process run."""
    label = f"{pairing.client}→{pairing.server}"
    if pairing.process not in (None, "one"):
        label += f" proc={pairing.process}"
    return label


def _markdown_row(cells):
    """One row of a GitHub pipe table; "|" in a cell is escaped."""
    escaped = (cell.replace("|", r"\|") for cell in cells)
    return "| " + " | ".join(escaped) + " |"


def _group_lead(features):
    """The workload and calls-in-flight cells of a configuration."""
    config = {name: value for name, value in features.items()
              if name != "max_concurrent_calls"}
    return [describe_features(config),
            str(features.get("max_concurrent_calls", "?"))]


def _median_cells(pairing):
    """A Pairing's cells from "median QPS" to "server CPU us/op"."""
    return [
        _median_cell(pairing, ("qps",), _qps),
        _qps_per_file(pairing),
        _median_cell(pairing, ("latency_ns", "p50"), format_duration_markdown),
        _median_cell(pairing, ("latency_ns", "p99"), format_duration_markdown),
        _median_cell(pairing, ("client", "allocs_per_op"), "{:.2f}".format),
        _median_cell(pairing, ("server", "allocs_per_op"), "{:.2f}".format),
        _median_cell(pairing, ("client", "cpu_ns_per_op"), _microseconds(2)),
        _median_cell(pairing, ("server", "cpu_ns_per_op"), _microseconds(2))]


def pairings_table(groups):
    """Returns the Markdown table of lib.group_pairings() PairingGroups.

    Per group, one row per pairing with medians over the files, then, with
    grpcpp→grpcpp among them, an "h2rpc/grpcpp" row: the QPS ratio of
    h2rpc→h2rpc to grpcpp→grpcpp and the p50 ratio of grpcpp→grpcpp to
    h2rpc→h2rpc; with h2rpc_coro→h2rpc_coro and h2rpc→h2rpc, an
    "h2rpc_coro/h2rpc" row: the coroutine stacks' QPS over the callback
    ones' and the callback p50 over theirs.
    """
    if not groups:
        return "(no runs)\n"
    lines = [_markdown_row(_PAIRINGS_HEADER),
             _markdown_row(["---"] * len(_PAIRINGS_HEADER))]
    for group in groups:
        lead = _group_lead(group.features)
        for pairing in group.pairings:
            lines.append(_markdown_row(
                lead + [pairing_label(pairing)] + _median_cells(pairing)))
        if group.find("grpcpp", "grpcpp") is not None:
            lines.append(_markdown_row(lead + [
                "h2rpc/grpcpp", format_ratio(group.qps_ratio()), "",
                format_ratio(group.p50_ratio())] + [""] * 5))
        if group.coro_qps_ratio() is not None:
            lines.append(_markdown_row(lead + [
                "h2rpc_coro/h2rpc", format_ratio(group.coro_qps_ratio()), "",
                format_ratio(group.coro_p50_ratio())] + [""] * 5))
    return "\n".join(lines) + "\n"


# Columns of the before/after table of one configuration.
BEFORE_AFTER_HEADER = (
    "pairing", "side", "median QPS", "QPS change", "QPS (runs)",
    "median p50", "median p99", "client allocs/op", "server allocs/op",
    "client CPU us/op", "server CPU us/op")


def sides(pair):
    """[(side, Pairing)] of a lib.BeforeAfter: its sides that have runs.

    The side is "before" and "after", or "before only" or "after only"
    for a pairing found on one side only.
    """
    present = [(side, pairing) for side, pairing in (("before", pair.before),
                                                     ("after", pair.after))
               if pairing is not None]
    if len(present) == 1:
        return [(present[0][0] + " only", present[0][1])]
    return present


def before_after_rows(group):
    """The rows of one lib.BeforeAfterGroup, cells as BEFORE_AFTER_HEADER.

    Per pairing, a "before" row and an "after" row of medians over that
    side's files, the after row with the change of the median QPS; a
    pairing found on one side only has one row, "before only" or "after
    only", and no change.
    """
    rows = []
    for pair in group.pairings:
        label = pairing_label(pair.pairing())
        for side, pairing in sides(pair):
            change = (format_percent(pair.qps_change()) if side == "after"
                      else "")
            cells = _median_cells(pairing)
            rows.append([label, side, cells[0], change] + cells[1:])
    return rows


def before_after_text(group):
    """before_after_rows() of one group as an aligned plain-text table."""
    return "\n".join(align([list(BEFORE_AFTER_HEADER)] +
                           before_after_rows(group), left_columns=2)) + "\n"


def before_after_table(groups):
    """Returns the Markdown report of lib.match_repetitions() groups.

    One table: per configuration (workload and calls in flight first), the
    rows of before_after_rows(). Then the configuration+pairings found on
    one side only, listed.
    """
    if not groups:
        return "(no runs)\n"
    header = ["workload", "calls in flight"] + list(BEFORE_AFTER_HEADER)
    lines = [_markdown_row(header), _markdown_row(["---"] * len(header))]
    for group in groups:
        lead = _group_lead(group.features)
        lines.extend(_markdown_row(lead + row)
                     for row in before_after_rows(group))
    if not any(group.matched() for group in groups):
        lines += ["", "No configuration and pairing appears in both the "
                      "before and the after files."]
    for side, only in (
            ("before", [p for g in groups for p in g.only_before()]),
            ("after", [p for g in groups for p in g.only_after()])):
        if only:
            lines += ["", f"Only in the {side} files (medians above):"]
            lines += [f"- {describe_features(p.pairing().runs()[0].features)}"
                      for p in only]
    return "\n".join(lines) + "\n"
