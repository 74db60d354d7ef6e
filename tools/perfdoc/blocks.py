"""The generated blocks of README.md and docs/*.md, rendered from the result
files of benchmark/results/ (perfdoc.py's docstring lists the kinds).

Each renderer takes the workspace root and the block's arguments (file
names relative to benchmark/results/, then anything else the kind takes)
and returns Markdown. Loading and formatting only; no output.
"""

import contextlib
import glob
import io
import json
import os
import re
import statistics

import benchresult_lib as lib
import proxy_bench
import text_report
import wan_bench

RESULTS_DIR = os.path.join("benchmark", "results")
H2LOAD_FORMAT = "h2rpc-h2load/1"
ATTACKS_FORMAT = "h2rpc-attacks/1"
SOAK_FORMAT = "h2rpc-soak/1"
SERVER_NAMES = {"h2rpc": "h2rpc", "grpcpp": "gRPC C++"}
# A block: from its marker line to END.
BEGIN = re.compile(r"^<!-- perfdoc (\w+) (.+?) -->$")
END = "<!-- /perfdoc -->"


def load_benchmain(root, name):
    """A benchmain result file of benchmark/results, and its raw JSON."""
    path = os.path.join(root, RESULTS_DIR, name)
    with open(path, encoding="utf-8") as f:
        document = json.load(f)
    result = lib.parse(json.dumps(document), path)
    result.path = name
    return result, document


def _provenance(document, names):
    """Where, when and from what a result file's runs came, in Markdown."""
    versions, machine = document.get("versions", {}), document.get(
        "machine", {})
    command = re.sub(r"^\S*/", "", document.get("command", "?"))
    command = re.sub(r" --(result_file|source_commit)=\S+", "", command)
    started = document.get("started", "?")[:10]
    commit = versions.get("commit", "unrecorded")
    where = f'{machine.get("cpus", "?")} CPUs'
    if machine.get("cpu_model"):
        where += f' ({machine["cpu_model"]})'
    files = ", ".join(f"`{name}`" for name in names)
    return (f"    {command}\n\n"
            f"Recorded {started} from commit `{commit}` (h2rpc "
            f'{versions.get("h2rpc", "?")}, gRPC C++ '
            f'{versions.get("grpcpp", "?")}, nghttp2 '
            f'{versions.get("nghttp2", "?")}, {versions.get("build", "?")} '
            f"build) on {where}; {len(names)} run(s) of the command: "
            f"{files} in benchmark/results/.\n\n")


def _pairings_block(root, names):
    loaded = [load_benchmain(root, name) for name in names]
    groups = lib.group_pairings([result for result, _ in loaded])
    return _provenance(loaded[0][1], names) + text_report.pairings_table(
        groups)


def _before_after_block(root, names):
    """One command's repetitions before and after a change: the result files
    before the word "after", then those after it (benchresult --before
    --after)."""
    if "after" not in names:
        raise ValueError("before_after: no 'after' between the files")
    split = names.index("after")
    before_names, after_names = names[:split], names[split + 1:]
    if not before_names or not after_names:
        raise ValueError("before_after: files needed on both sides")
    before = [load_benchmain(root, name) for name in before_names]
    after = [load_benchmain(root, name) for name in after_names]
    groups = lib.match_repetitions([result for result, _ in before],
                                   [result for result, _ in after])
    return (_provenance(after[0][1], after_names) +
            f"Before: {', '.join(f'`{name}`' for name in before_names)}, "
            f"from commit `{before[0][1].get('versions', {}).get('commit', '?')}`."
            "\n\n" + text_report.before_after_table(groups))


def _main_job_block(root, names):
    """The README's table: one row per pairing, then the ratio."""
    (result, document), = [load_benchmain(root, name) for name in names]
    groups = lib.group_pairings([result])
    rows = ["| calls in flight | pairing | QPS | p50 | p99 | allocs/op "
            "client, server | CPU us/op client, server |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    for group in groups:
        calls = str(group.features.get("max_concurrent_calls", "?"))
        for pairing in group.pairings:
            run = pairing.median_run()

            def cell(*path, fmt):
                value = run.value(path)
                return "n/a" if value is None else fmt(value)
            rows.append("| " + " | ".join([
                calls, f"{pairing.client}→{pairing.server}",
                cell("qps", fmt="{:,.0f}".format),
                cell("latency_ns", "p50",
                     fmt=text_report.format_duration_markdown),
                cell("latency_ns", "p99",
                     fmt=text_report.format_duration_markdown),
                cell("client", "allocs_per_op", fmt="{:.2f}".format) + ", " +
                cell("server", "allocs_per_op", fmt="{:.2f}".format),
                cell("client", "cpu_ns_per_op",
                     fmt=lambda ns: f"{ns / 1000:.2f}") + ", " +
                cell("server", "cpu_ns_per_op",
                     fmt=lambda ns: f"{ns / 1000:.2f}")]) + " |")
        rows.append(f"| {calls} | **h2rpc/gRPC C++** | "
                    f"**{text_report.format_ratio(group.qps_ratio())}** | "
                    f"{text_report.format_ratio(group.p50_ratio())} lower "
                    f"| | | |")
    versions = document.get("versions", {})
    return (f'On {document.get("started", "?")[:10]}, commit '
            f'`{versions.get("commit", "unrecorded")}`, '
            f'{document.get("machine", {}).get("cpus", "?")} CPUs '
            f"(`benchmark/results/{names[0]}`):\n\n" + "\n".join(rows) + "\n")


def _wan_block(root, names):
    (name,) = names
    document = load_json(root, name)
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        wan_bench.PrintTable(document)
    return text.getvalue()


def _proxy_block(root, names):
    (name,) = names
    document = load_json(root, name)
    versions = document.get("versions", {})
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        proxy_bench.PrintTable(document)
    nginx = re.search(r"nginx/(\S+)", versions.get("nginx", ""))
    haproxy = re.search(r"version (\S+)", versions.get("haproxy", ""))
    lead = (f"`benchmark/results/{name}`: commit "
            f'`{versions.get("commit", "unrecorded")}`, nginx '
            f'{nginx.group(1) if nginx else "?"}, HAProxy '
            f'{haproxy.group(1) if haproxy else "?"}.\n\n')
    return lead + text.getvalue()


def _feature_cost_block(root, names):
    """What turning a feature on costs: the runs of `names` (result files
    of the same command without and with the feature, interleaved) grouped
    by calls in flight, the medians of the runs with the feature off and
    on side by side. The first argument is the feature's name in the runs'
    features: on when true or a number ("metrics"; "tracing", its sampling
    probability)."""
    feature, *files = names
    loaded = [load_benchmain(root, name) for name in files]
    by_calls = {}
    for result, _ in loaded:
        for run in result.runs:
            calls = run.features.get("max_concurrent_calls", "?")
            value = run.features.get(feature)
            side = "off" if value is None or value is False else "on"
            by_calls.setdefault(calls, {"off": [], "on": []})[side].append(run)

    def median(runs, *path):
        values = [run.value(path) for run in runs]
        values = [value for value in values if value is not None]
        return statistics.median(values) if values else None

    rows = ["| calls in flight | QPS off | QPS on | QPS change | p50 off | "
            "p50 on | allocs/op client, server: off | on | CPU µs/op client, "
            "server: off | on |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for calls in sorted(by_calls):
        off, on = by_calls[calls]["off"], by_calls[calls]["on"]
        qps_off, qps_on = median(off, "qps"), median(on, "qps")

        def sides(runs, metric, fmt):
            return ", ".join(
                "n/a" if value is None else fmt(value)
                for value in (median(runs, "client", metric),
                              median(runs, "server", metric)))
        allocs = "{:.2f}".format
        micros = lambda ns: f"{ns / 1000:.2f}"  # noqa: E731
        rows.append("| " + " | ".join([
            str(calls), f"{qps_off:,.0f}", f"{qps_on:,.0f}",
            text_report.format_percent(lib.percent_change(qps_off, qps_on)),
            text_report.format_duration_markdown(median(off, "latency_ns",
                                                        "p50")),
            text_report.format_duration_markdown(median(on, "latency_ns",
                                                        "p50")),
            sides(off, "allocs_per_op", allocs),
            sides(on, "allocs_per_op", allocs),
            sides(off, "cpu_ns_per_op", micros),
            sides(on, "cpu_ns_per_op", micros)]) + " |")
    return (_provenance(loaded[0][1], files) + "\n".join(rows) + "\n")


def load_json(root, name):
    with open(os.path.join(root, RESULTS_DIR, name), encoding="utf-8") as f:
        return json.load(f)


def h2load_rows(root, names):
    """(in flight, [req/s per file], median, h2rpc unary median QPS)."""
    documents = [load_json(root, name) for name in names]
    unary = sorted(os.path.basename(p) for p in glob.glob(
        os.path.join(root, RESULTS_DIR, "unary_*.json")))
    groups = lib.group_pairings([load_benchmain(root, n)[0] for n in unary])
    rows = []
    for run in documents[0]["runs"]:
        m = run["requests_in_flight"]
        values = [r["req_per_s"] for d in documents for r in d["runs"]
                  if r["requests_in_flight"] == m]
        h2rpc = next((g.find("h2rpc", "h2rpc").median(("qps",))
                      for g in groups
                      if g.features.get("max_concurrent_calls") == m
                      and g.find("h2rpc", "h2rpc")), None)
        rows.append((m, values, statistics.median(values), h2rpc))
    return documents[0], rows


def _h2load_block(root, names):
    document, rows = h2load_rows(root, names)
    lines = [f'    {document["command"]}\n',
             f'Recorded {document["started"][:10]} from commit '
             f'`{document["commit"]}` ({document["version"]}); '
             f'{len(names)} runs: '
             + ", ".join(f"`{name}`" for name in names)
             + " in benchmark/results/; h2rpc→h2rpc from `unary_*.json`.\n",
             "| requests in flight | h2load req/s (runs) | median | "
             "h2rpc→h2rpc unary QPS (median) | h2rpc / h2load |",
             "| --- | --- | --- | --- | --- |"]
    for m, values, median, h2rpc in rows:
        lines.append(
            f"| {m} | " + " / ".join(f"{v:,.0f}" for v in values) +
            f" | {median:,.0f} | "
            + ("n/a" if h2rpc is None else f"{h2rpc:,.0f}") + " | "
            + text_report.format_ratio(lib.ratio(h2rpc, median)) + " |")
    return "\n".join(lines) + "\n"


def _gbench_block(root, names):
    (name,) = names
    document = load_json(root, name)
    context = document.get("context", {})
    lines = [f'Recorded {context.get("date", "?")[:10]} on '
             f'{context.get("num_cpus", "?")} CPUs '
             f'(`benchmark/results/{name}`, one run).\n',
             "| benchmark | time per iteration | CPU per iteration | "
             "counters |", "| --- | --- | --- | --- |"]
    for bench in document.get("benchmarks", []):
        unit = bench.get("time_unit", "ns")
        counters = ", ".join(
            f"{key} {value:.4g}" for key, value in bench.items()
            if key not in _GBENCH_FIELDS and isinstance(value, (int, float)))
        lines.append(f'| `{bench["name"]}` | {bench["real_time"]:.4g} {unit} '
                     f'| {bench["cpu_time"]:.4g} {unit} | {counters} |')
    return "\n".join(lines) + "\n"


def _attack_lead(document, name):
    return (f'Recorded {document["started"][:10]} from commit '
            f'`{document["commit"]}` (`benchmark/results/{name}`).\n')


def _memory_block(root, names):
    (name,) = names
    document = load_json(root, name)
    lines = [_attack_lead(document, name),
             "| measurement | " + " | ".join(SERVER_NAMES.values()) + " |",
             "| --- |" + " --- |" * len(SERVER_NAMES)]
    # One row per attack and number of units it set out to open (older
    # records have no "wanted": one row per attack).
    rows = []
    for attack, what in (("idle_connections", "per idle connection"),
                         ("open_streams", "per open stream")):
        wanted = sorted({r.get("wanted", 0) for r in document["runs"]
                         if r["attack"] == attack}) or [0]
        rows += [(attack, what, w) for w in wanted]
    for attack, what, wanted in rows:
        cells = []
        for server in SERVER_NAMES:
            runs = [r for r in document["runs"]
                    if r["attack"] == attack and r["server"] == server and
                    r.get("wanted", 0) == wanted]
            values = sorted(r["per_unit_kib"] for r in runs)
            if not values:
                cells.append("n/a")
                continue
            held = runs[0]["held"]
            cells.append(f"{statistics.median(values):.1f} KiB "
                         f"[{values[0]:.1f}–{values[-1]:.1f}], {held} held")
        label = f"{what}, {wanted:,} at once" if wanted else what
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _attacks_block(root, names):
    name, attacks = names[0], names[1:]
    document = load_json(root, name)
    lines = [_attack_lead(document, name),
             "| attack | server | survived | a call during it | peak RSS "
             "(before) | threads (before/most) | CPU | what the attacker saw |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for attack in attacks:
        runs = [r for r in document["runs"] if r["attack"] == attack]
        if not runs:
            raise ValueError(f"{name}: no run of attack '{attack}'")
        for run in runs:
            peak, base = run.get("peak_rss_mib"), run.get("base_rss_mib")
            memory = ("n/a" if peak is None else f"{peak:.1f} MiB") + (
                "" if base is None else f" ({base:.1f})")
            survived = run["survived"]
            if survived == "yes":
                survived = "**yes**"
            if run.get("log_lines"):
                survived += f'; log: "{run["log_last"]}"'
            cells = [attack, SERVER_NAMES.get(run["server"], run["server"]),
                     survived, run.get("during", "-"), memory,
                     str(run.get("threads", "?")),
                     f'{run.get("cpu_s", 0):.2f} s', run.get("attacker", "")]
            lines.append("| " + " | ".join(
                str(cell).replace("|", r"\|").replace("\n", " ")
                for cell in cells) + " |")
    return "\n".join(lines) + "\n"


# The soak's call kinds and processes (test/soak), as the soak block names
# them.
SOAK_KINDS = {"unary": "unary", "unary_wait_for_ready": "unary, wait_for_ready",
              "server_streaming": "server streaming",
              "bidi_streaming": "bidi streaming"}
SOAK_PROCESSES = {"client": "client (channels, proxies, drivers)",
                  "b0": "b0 (never restarted)", "b1": "b1, first process",
                  "b2": "b2, first process"}
SANITIZER_CONFIGS = {"address": "asan", "thread": "tsan"}


def _minutes_and_seconds(seconds):
    minutes, seconds = divmod(round(seconds), 60)
    if not minutes:
        return f"{seconds} s"
    return f"{minutes} min" + (f" {seconds} s" if seconds else "")


def _mib(value):
    return "?" if value is None else f"{value / (1 << 20):.1f} MiB"


def _soak_calls(kind):
    """A calls cell: "8,636,228, all OK" or "837,550: 49 UNAVAILABLE"."""
    if kind is None:
        return "none"
    text = f'{kind["ended"]:,}'
    if kind["started"] != kind["ended"]:
        text = f'{kind["started"]:,} started, {kind["ended"]:,} ended'
    not_ok = [f"{count:,} {code}" for code, count in sorted(
        kind["not_ok"].items(), key=lambda item: -item[1])]
    text += ": " + ", ".join(not_ok) if not_ok else ", all OK"
    if kind["wrong_answers"]:
        text += f'; {kind["wrong_answers"]:,} wrong answers'
    return text


def _soak_windows(windows):
    """ "10–20 min → 20–30 min" (seconds under ten minutes)."""
    if windows[-1][-1] >= 600:
        unit, scale = "min", 60
    else:
        unit, scale = "s", 1
    return " → ".join(f"{round(a / scale)}–{round(b / scale)} {unit}"
                      for a, b in windows)


def _soak_counts(counts):
    """ "client 54 / 13, each backend 12 / 7" (or every backend named)."""
    def pair(sample):
        return " / ".join("?" if sample[key] is None else str(sample[key])
                          for key in ("fds", "threads"))
    if not counts:
        return "not reached"
    backends = {name: pair(sample) for name, sample in counts.items()
                if name != "client"}
    parts = [f'client {pair(counts["client"])}'] if "client" in counts else []
    if len(set(backends.values())) == 1 and len(backends) > 1:
        parts.append(f"each backend {next(iter(backends.values()))}")
    else:
        parts.extend(f"{name} {value}" for name, value in
                     sorted(backends.items()))
    return ", ".join(parts)


def _soak_block(root, names):
    (name,) = names
    document = load_json(root, name)
    if document.get("format") != SOAK_FORMAT:
        raise ValueError(f"{name}: not a {SOAK_FORMAT} file")
    config = SANITIZER_CONFIGS.get(document.get("sanitizer"))
    minutes, seconds = divmod(round(document["requested_duration_s"]), 60)
    duration = (f"{minutes}m" if minutes else "") + (
        f"{seconds}s" if seconds or not minutes else "")
    command = f'    tools/soak --duration={duration} --seed={document["seed"]}'
    if config:
        command += f" --config={config}"
    lines = [command, "",
             f'Recorded {document["started"][:10]}, '
             f'{_minutes_and_seconds(document["duration_s"])} of load, seed '
             f'{document["seed"]}'
             + (f", {config} build" if config else "") + ", "
             + ("passed" if document["passed"] else "**failed**")
             + f" (`benchmark/results/{name}`).", ""]
    for failure in document["failures"]:
        lines.append("- failure: " + failure.replace("\n", " "))
    if document["failures"]:
        lines.append("")

    calls, channels = document["calls"], document["calls"]["channels"]
    lines += ["| calls | plaintext | TLS |", "| --- | --- | --- |"]
    for kind, label in SOAK_KINDS.items():
        lines.append(f"| {label} | "
                     + " | ".join(_soak_calls(channels[channel].get(kind))
                                  for channel in ("plaintext", "tls")) + " |")
    ended = ("every one ended" if calls["ended"] == calls["total"] else
             f'{calls["total"] - calls["ended"]:,} never ended')
    faults, probes = document["faults"], document["probes"]
    started = sum(document["backend_starts"]) - len(
        document["backend_starts"])
    lines += ["", f'{calls["total"]:,} calls, {ended}. Faults: '
              f'{faults["kills"]:,} kills (SIGKILL), '
              f'{faults["graceful_restarts"]:,} graceful restarts (SIGTERM), '
              f'{faults["proxy_resets"]:,} proxy resets, '
              f'{faults["proxy_stalls"]:,} proxy stalls; {started:,} backend '
              f'processes started after the first three. '
              f'{probes["total"]:,} probes:', "",
              "| probe | runs | what the attacker saw the last time |",
              "| --- | --- | --- |"]
    for probe, run in probes["by_kind"].items():
        outcome = run["last_outcome"].replace("|", r"\|").replace("\n", " ")
        lines.append(f'| {probe} | {run["runs"]:,} | {outcome} |')

    rss = document["rss"]
    lines += ["", "| process | median RSS, "
              f'{_soak_windows(rss["windows_s"])} | per hour | peak |',
              "| --- | --- | --- | --- |"]
    for row in rss["processes"]:
        label = SOAK_PROCESSES.get(row["process"], row["process"])
        if row["earlier_median_bytes"] is None or row[
                "later_median_bytes"] is None:
            median, hourly = "not alive through both windows", "-"
        else:
            median = (f'{row["earlier_median_bytes"] / (1 << 20):.1f} → '
                      f'{_mib(row["later_median_bytes"])}')
            hourly = f'{row["growth_per_hour_bytes"] / (1 << 20):+.1f} MiB'
        lines.append(f'| {label} | {median} | {hourly} | '
                     f'{_mib(row["peak_bytes"])} |')
    restarted = rss["restarted_backends"]
    lines.append(f'| {restarted["processes"]:,} backend processes started '
                 f"during the run (those sampled) | | | "
                 + ("none sampled" if restarted["peak_bytes"] is None else
                    f'{_mib(restarted["peak_bytes"])} at most') + " |")

    quiet = document["quiet_points"]
    start, end = _soak_counts(quiet["start"]), _soak_counts(quiet["end"])
    lines += ["", "Descriptors / threads at the quiet points, " + (
        f"start and end alike: {start}." if start == end else
        f"start: {start}; end: {end}.")]
    return "\n".join(lines) + "\n"


# Google Benchmark's own fields of a benchmark entry (the rest: counters).
_GBENCH_FIELDS = frozenset({
    "name", "family_index", "per_family_instance_index", "run_name",
    "run_type", "repetitions", "repetition_index", "threads", "iterations",
    "real_time", "cpu_time", "time_unit"})


BLOCKS = {"pairings": _pairings_block, "main_job": _main_job_block,
          "wan": _wan_block, "proxy": _proxy_block,
          "feature_cost": _feature_cost_block,
          "before_after": _before_after_block,
          "h2load": _h2load_block,
          "gbench": _gbench_block, "memory": _memory_block,
          "attacks": _attacks_block, "soak": _soak_block}
