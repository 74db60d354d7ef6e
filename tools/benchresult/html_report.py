"""A self-contained HTML report of one result file or of a comparison.

single_report() and comparison_report(), per run: the latency CDF from
latency_histogram (before and after overlaid in two colours when
comparing), bars for QPS, and bars for allocations per op on the client and
on the server. pairings_report(), per configuration of repeated files
(--pairings): the latency CDFs of all its client→server pairings overlaid
in one colour each, a table of their medians (QPS, p50/p99, allocations and
CPU per op per side) and the h2rpc/gRPC C++ QPS ratio. before_after_report(),
per configuration of two sets of repeated files (--before, --after): the
latency CDFs of each pairing before and after overlaid, bars of their median
QPS and allocations per op, and the before/after table of text_report.
Everything is inline (CSS, SVG); the page has no scripts and loads nothing
from the network.
"""

import dataclasses
import html
import math

import benchresult_lib as lib
import text_report

BEFORE_COLOUR = "#4c72b0"  # blue: the old file, or the only file
AFTER_COLOUR = "#dd8452"   # orange: the new file
# One colour per pairing of a configuration, in PAIRING_ORDER, then cycled.
PAIRING_COLOURS = (BEFORE_COLOUR, AFTER_COLOUR, "#55a868", "#c44e52",
                   "#8172b3", "#937860", "#da8bc3", "#8c8c8c")

_CSS = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; }
h2 { font-size: 1.05em; margin-bottom: 0.3em; }
section.run { border-top: 1px solid #ccc; padding: 0.8em 0; }
.charts { display: flex; flex-wrap: wrap; gap: 1em; align-items: flex-end; }
span.swatch { display: inline-block; width: 0.8em; height: 0.8em;
  margin: 0 0.3em 0 1em; vertical-align: middle; }
.files { font-size: 0.9em; color: #555; }
pre { font-size: 0.85em; background: #f6f6f6; padding: 0.5em;
  display: inline-block; }
section.config { border-top: 1px solid #ccc; padding: 0.8em 0; }
.ratio { font-size: 1.25em; font-weight: bold; margin: 0.2em 0 0.5em; }
.ratio .note { font-size: 0.7em; font-weight: normal; color: #555; }
table.pairings { border-collapse: collapse; font-size: 0.85em; }
table.pairings th, table.pairings td { padding: 0.2em 0.5em;
  border-bottom: 1px solid #e3e3e3; text-align: right; }
table.pairings th:first-child, table.pairings td:first-child {
  text-align: left; }
svg text { font-family: sans-serif; font-size: 11px; fill: #222; }
svg .grid { stroke: #e3e3e3; }
svg .axis { stroke: #444; }
"""

# Plot margins inside every chart, in pixels.
_LEFT, _RIGHT, _TOP, _BOTTOM = 58, 16, 34, 46


@dataclasses.dataclass(frozen=True)
class Series:
    """One series of a chart: a legend label, a colour and the Run drawn.

    The Run is a file's, or a Pairing.median_run() of repeated files.
    """
    label: str
    colour: str
    run: lib.Run


@dataclasses.dataclass(frozen=True)
class _Frame:
    """The plotting area of a chart: left/top corner and size, in pixels."""
    left: float
    top: float
    width: float
    height: float

    @property
    def bottom(self):
        """The y coordinate of the x axis."""
        return self.top + self.height


def single_report(result):
    """Returns the HTML report of one ResultFile."""
    sections = [_section(text_report.describe_features(run.features),
                         [Series(result.path, BEFORE_COLOUR, run)])
                for run in result.runs]
    return _page(f"benchresult: {result.path}", [result], sections)


def comparison_report(old, new, comparison):
    """Returns the HTML report comparing two ResultFiles."""
    sections = []
    for before, after in comparison.matched:
        sections.append(_section(
            text_report.describe_features(after.features),
            [Series(old.path, BEFORE_COLOUR, before),
             Series(new.path, AFTER_COLOUR, after)],
            text_report.change_table(lib.compare_runs(before, after))))
    for result, colour, runs in ((old, BEFORE_COLOUR, comparison.only_old),
                                 (new, AFTER_COLOUR, comparison.only_new)):
        for run in runs:
            heading = (text_report.describe_features(run.features) +
                       f" (only in {result.path})")
            sections.append(_section(heading,
                                     [Series(result.path, colour, run)]))
    return _page(f"benchresult: {old.path} vs {new.path}", [old, new],
                 sections)


def pairings_report(results, groups):
    """Returns the HTML report of lib.group_pairings() PairingGroups.

    One section per configuration: the pairings' latency CDFs overlaid (the
    samples of every file pooled, lib.pooled_latency_cdf), a table of their
    medians over the files, and the h2rpc/gRPC C++ QPS ratio.
    """
    sections = [_pairings_section(group) for group in groups]
    return _page(f"benchresult: pairings of {len(results)} files", results,
                 sections)


def before_after_report(before, after, groups):
    """Returns the HTML report of lib.match_repetitions() groups.

    `before` and `after` are the ResultFiles of each side. One _section
    per configuration, with a Series per pairing and side: a Run of the
    side's medians whose histogram pools its files' (Pairing.median_run),
    so the CDF chart overlays the pooled before and after curves; below,
    text_report.before_after_text().
    """
    sections = []
    for group in groups:
        series = []
        for pair in group.pairings:
            label = text_report.pairing_label(pair.pairing())
            for side, pairing in text_report.sides(pair):
                colour = PAIRING_COLOURS[len(series) % len(PAIRING_COLOURS)]
                series.append(Series(f"{label} {side}", colour,
                                     pairing.median_run()))
        sections.append(_section(
            text_report.describe_features(group.features), series,
            text_report.before_after_text(group)))
    sides = ["before"] * len(before) + ["after"] * len(after)
    return _page(f"benchresult: {len(before)} files before, {len(after)} "
                 "after", list(before) + list(after), sections, sides)


# Columns of the pairings table: (header, path in the run, formatter).
_PAIRINGS_COLUMNS = (
    ("median QPS", ("qps",), "{:,.0f}".format),
    ("p50", ("latency_ns", "p50"), text_report.format_duration_ns),
    ("p99", ("latency_ns", "p99"), text_report.format_duration_ns),
    ("client allocs/op", ("client", "allocs_per_op"), "{:.2f}".format),
    ("server allocs/op", ("server", "allocs_per_op"), "{:.2f}".format),
    ("client CPU µs/op", ("client", "cpu_ns_per_op"),
     lambda ns: f"{ns / 1000:.2f}"),
    ("server CPU µs/op", ("server", "cpu_ns_per_op"),
     lambda ns: f"{ns / 1000:.2f}"),
)


def _swatch(colour):
    """A small square of `colour` for legends and table rows."""
    return f'<span class="swatch" style="background:{colour}"></span>'


def _pairings_section(group):
    """One configuration: ratio, overlaid CDFs and the medians table."""
    colours = [PAIRING_COLOURS[i % len(PAIRING_COLOURS)]
               for i in range(len(group.pairings))]
    labels = [text_report.pairing_label(p) for p in group.pairings]
    legend = "".join(f"{_swatch(colour)}{_text(label)}"
                     for colour, label in zip(colours, labels))
    chart = curves_svg([
        (colour, lib.pooled_latency_cdf(
            [run for runs in pairing.runs_per_file for run in runs]))
        for colour, pairing in zip(colours, group.pairings)])
    header = "".join(f"<th>{_text(title)}</th>"
                     for title in ("pairing",) + tuple(
                         c[0] for c in _PAIRINGS_COLUMNS))
    rows = []
    for colour, label, pairing in zip(colours, labels, group.pairings):
        cells = []
        for _, path, formatter in _PAIRINGS_COLUMNS:
            value = pairing.median(path)
            cells.append(text_report.NOT_APPLICABLE if value is None
                         else formatter(value))
        rows.append(f"<tr><td>{_swatch(colour)}{_text(label)}</td>" +
                    "".join(f"<td>{_text(cell)}</td>" for cell in cells) +
                    "</tr>\n")
    ratio = (f'<p class="ratio">h2rpc/gRPC C++ QPS: '
             f"{_text(text_report.format_ratio(group.qps_ratio()))}"
             "<span class=\"note\"> (median QPS of h2rpc→h2rpc over "
             "grpcpp→grpcpp; p50 grpcpp/h2rpc: "
             f"{_text(text_report.format_ratio(group.p50_ratio()))})"
             "</span></p>\n")
    table = (f'<table class="pairings">\n<tr>{header}</tr>\n'
             f'{"".join(rows)}</table>\n')
    return (f'<section class="config">\n'
            f"<h2>{_text(text_report.describe_features(group.features))}"
            f"</h2>\n{ratio}"
            f'<div class="legend">{legend}</div>\n'
            f'<div class="charts">\n{chart}<div>{table}</div>\n</div>\n'
            "</section>\n")


def _page(title, results, sections, sides=None):
    """Wraps the sections in a complete HTML document.

    `sides`, when given, holds a word per result ("before") that prefixes
    its line in the list of files.
    """
    prefixes = [f"{side}: " for side in sides] if sides else [""] * len(
        results)
    files = "".join(
        f"<div>{_text(prefix + text_report.describe_file(result))}</div>"
        for prefix, result in zip(prefixes, results))
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
            "<meta charset=\"utf-8\">\n"
            f"<title>{_text(title)}</title>\n<style>{_CSS}</style>\n"
            "</head>\n<body>\n"
            f"<h1>{_text(title)}</h1>\n<div class=\"files\">{files}</div>\n"
            + "".join(sections) +
            ("" if sections else "<p>No runs.</p>\n") +
            "</body>\n</html>\n")


def _section(heading, series, table=None):
    """One run: heading, legend, CDF, QPS and allocation bars, table."""
    legend = "".join(f'<span class="swatch" style="background:{s.colour}">'
                     f"</span>{_text(s.label)}" for s in series)
    charts = [
        cdf_svg(series),
        bars_svg("QPS", "ops per second",
                 [("QPS", [s.run.value(("qps",)) for s in series])], series),
        bars_svg("Heap allocations per op", "allocations",
                 [(side, [s.run.value((side, "allocs_per_op"))
                          for s in series])
                  for side in ("client", "server")], series),
    ]
    body = f"<pre>{_text(table)}</pre>\n" if table else ""
    return (f'<section class="run">\n<h2>{_text(heading)}</h2>\n'
            f'<div class="legend">{legend}</div>\n'
            f'<div class="charts">\n{"".join(charts)}</div>\n{body}'
            "</section>\n")


def _text(value):
    """Escapes text for HTML content and attributes."""
    return html.escape(str(value), quote=True)


def _svg_open(width, height, label):
    """Opens an inline <svg> (no xmlns needed inside HTML) with a title."""
    return (f'<svg width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" '
            f'aria-label="{_text(label)}">\n<title>{_text(label)}</title>\n'
            f'<text x="{_LEFT}" y="18" font-weight="bold">{_text(label)}'
            "</text>\n")


def _label(x, y, text, anchor="middle", extra=""):
    """An SVG text element at (x, y)."""
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{extra}>'
            f"{_text(text)}</text>\n")


def _line(x1, y1, x2, y2, css_class):
    """An SVG line with a CSS class ("grid" or "axis")."""
    return (f'<line class="{css_class}" x1="{x1:.1f}" y1="{y1:.1f}" '
            f'x2="{x2:.1f}" y2="{y2:.1f}"/>\n')


def _axis_titles(frame, x_title, y_title):
    """The two axis lines and their titles."""
    y_middle = frame.top + frame.height / 2
    return (_line(frame.left, frame.top, frame.left, frame.bottom, "axis") +
            _line(frame.left, frame.bottom, frame.left + frame.width,
                  frame.bottom, "axis") +
            _label(frame.left + frame.width / 2, frame.bottom + 36, x_title) +
            _label(14, y_middle, y_title,
                   extra=f' transform="rotate(-90 14 {y_middle:.1f})"'))


def log_ticks(low, high):
    """Returns tick values for a log axis from `low` to `high` (> 0).

    1-2-5 steps per decade, only powers of ten over wide ranges, every
    digit over narrow ones, and the two ends if nothing else fits.
    """
    def ticks_with(multipliers):
        first = math.floor(math.log10(low))
        last = math.ceil(math.log10(high))
        return [m * 10.0 ** k for k in range(first, last + 1)
                for m in multipliers if low <= m * 10.0 ** k <= high]

    ticks = ticks_with((1, 2, 5))
    if len(ticks) > 10:
        ticks = ticks_with((1,))
    elif len(ticks) < 3:
        ticks = ticks_with(range(1, 10))
    return ticks if len(ticks) >= 2 else [low, high]


def cdf_svg(series, width=480, height=300):
    """The latency CDFs of the series, overlaid, on a log latency axis."""
    return curves_svg([(s.colour, lib.latency_cdf(s.run)) for s in series],
                      width, height)


def curves_svg(curves, width=480, height=300):
    """Latency CDFs overlaid on a log latency axis.

    `curves` is [(colour, [(upper_ns, fraction), ...]), ...] as
    lib.latency_cdf() returns them; one <polyline> per non-empty curve.
    """
    title = "Latency CDF"
    curves = [(colour, points) for colour, points in curves if points]
    frame = _Frame(_LEFT, _TOP, width - _LEFT - _RIGHT,
                   height - _TOP - _BOTTOM)
    out = [_svg_open(width, height, title)]
    if not curves:
        out.append(_label(frame.left + frame.width / 2,
                          frame.top + frame.height / 2,
                          "no latency histogram in this run"))
        return "".join(out) + "</svg>\n"
    low = min(points[0][0] for _, points in curves)
    high = max(points[-1][0] for _, points in curves)
    span = math.log(high / low)

    def x_of(ns):
        return frame.left + math.log(ns / low) / span * frame.width

    def y_of(fraction):
        return frame.bottom - fraction * frame.height

    for percent in (0, 25, 50, 75, 100):
        y = y_of(percent / 100)
        out.append(_line(frame.left, y, frame.left + frame.width, y, "grid"))
        out.append(_label(frame.left - 6, y + 4, f"{percent}%", "end"))
    last_x = -math.inf
    for tick in log_ticks(low, high):
        x = x_of(tick)
        if x - last_x < 40:  # keep labels from overlapping
            continue
        last_x = x
        out.append(_line(x, frame.top, x, frame.bottom, "grid"))
        out.append(_label(x, frame.bottom + 16,
                          text_report.format_duration_ns(tick)))
    for colour, points in curves:
        coords = " ".join(f"{x_of(ns):.1f},{y_of(f):.1f}" for ns, f in points)
        out.append(f'<polyline fill="none" stroke="{colour}" '
                   f'stroke-width="2" points="{coords}"/>\n')
    out.append(_axis_titles(frame, "latency per op (log scale)",
                            "ops at or below"))
    return "".join(out) + "</svg>\n"


def nice_axis(maximum):
    """Returns (top, step) for a linear axis from 0 covering `maximum`.

    The step is 1, 2, 2.5 or 5 times a power of ten, four or five steps up.
    """
    if maximum is None or maximum <= 0:
        return 1.0, 0.25
    raw = maximum / 4
    magnitude = 10.0 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10)
                if m * magnitude * 4 >= maximum)
    return step * math.ceil(maximum / step - 1e-9), step


def bars_svg(title, y_title, groups, series, height=300):
    """Grouped bars: one group per (label, [value per series]) in `groups`.

    Bars take their series' colour; a null value shows "-" in place of a
    bar. Each bar carries its value.
    """
    bar, gap, group_gap = 40, 4, 26
    group_width = len(series) * bar + (len(series) - 1) * gap
    plot_width = len(groups) * (group_width + group_gap) + group_gap
    width = max(_LEFT + plot_width + _RIGHT, 220)
    frame = _Frame(_LEFT, _TOP, plot_width, height - _TOP - _BOTTOM)
    values = [v for _, group in groups for v in group if v is not None]
    # A little headroom, so the tallest bar's value stays below the title.
    top, step = nice_axis(max(values, default=0) * 1.08)
    out = [_svg_open(width, height, title)]
    for i in range(round(top / step) + 1):
        y = frame.bottom - i * step / top * frame.height
        out.append(_line(frame.left, y, frame.left + frame.width, y, "grid"))
        out.append(_label(frame.left - 6, y + 4,
                          text_report.format_compact(i * step), "end"))
    for g, (group_label, group) in enumerate(groups):
        x0 = frame.left + group_gap + g * (group_width + group_gap)
        out.append(_label(x0 + group_width / 2, frame.bottom + 16,
                          group_label))
        for s, (one_series, value) in enumerate(zip(series, group)):
            x = x0 + s * (bar + gap)
            out.append(_bar(frame, x, bar, value, top, one_series.colour))
    out.append(_axis_titles(frame, "", y_title))
    return "".join(out) + "</svg>\n"


def _bar(frame, x, width, value, top, colour):
    """One bar of bars_svg with its value above it, or "-" when null."""
    if value is None:
        return _label(x + width / 2, frame.bottom - 4, text_report.MISSING)
    bar_height = value / top * frame.height
    y = frame.bottom - bar_height
    return (f'<rect x="{x:.1f}" y="{y:.1f}" width="{width}" '
            f'height="{bar_height:.1f}" fill="{colour}"/>\n' +
            _label(x + width / 2, y - 4, text_report.format_compact(value)))
