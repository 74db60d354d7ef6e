"""Loading, matching and arithmetic for benchmain result files.

A result file is the JSON document `benchmark:benchmain --result_file=FILE`
writes, format "h2rpc-benchmain/1" (docs/benchmark_results.md). This module
reads and validates it, matches the runs of two files by their features and
computes before/after changes, groups the runs of repeated files by
client→server pairing (group_pairings, pooled_latency_cdf), and matches the
pairings of two sets of repeated files, before and after a change
(match_repetitions). It does no formatting and no output.
"""

import collections
import dataclasses
import json
import math
import statistics

FORMAT = "h2rpc-benchmain/1"

# Features that describe how long a run lasted, not what it measured: two
# runs that differ only here are the same benchmark.
IGNORED_FEATURES = frozenset({"benchtime_s"})

# Features that tell the pairings of one run configuration apart: the two
# stacks, and the process layout, which benchmain's --process=auto chooses
# per pairing (two processes for grpcpp→grpcpp only).
PAIRING_FEATURES = frozenset({"client_stack", "server_stack", "process"})

# The (client, server) pairings of the side-by-side table, in row order;
# any other pairing follows them in the order the files give it. Server
# stack "h2rpc_sync" is h2rpc's server with synchronous handlers, a server
# stack of its own: its rows follow those of the callback server ("h2rpc")
# with the same client; "h2rpc_coro" is h2rpc's coroutine client and server,
# whose pairing follows.
PAIRING_ORDER = (("h2rpc", "h2rpc"), ("h2rpc", "h2rpc_sync"),
                 ("h2rpc_coro", "h2rpc_coro"),
                 ("grpcpp", "grpcpp"), ("h2rpc", "grpcpp"),
                 ("grpcpp", "h2rpc"), ("grpcpp", "h2rpc_sync"))

# Kinds of metric, which decide how a value is formatted.
COUNT = "count"            # an integer number of operations
PER_OP = "per_op"          # allocations or bytes per operation
RATE = "rate"              # operations per second
BITS_PER_SECOND = "bps"    # payload throughput
NANOSECONDS = "ns"         # a latency or a CPU time


@dataclasses.dataclass(frozen=True)
class Metric:
    """One row of a comparison: a title and where its value lives in a run.

    `path` is the chain of keys from the run object to the number, e.g.
    ("client", "allocs_per_op").
    """
    title: str
    path: tuple
    kind: str


# The rows of a before/after table, in grpc-go's benchresult order, then
# the figures grpc-go lacks (QPS, because matching ignores benchtime_s and
# TotalOps then depends on it; CPU time per op for each side).
COMPARISON_METRICS = (
    Metric("TotalOps", ("total_ops",), COUNT),
    Metric("SendOps", ("send_ops",), COUNT),
    Metric("RecvOps", ("recv_ops",), COUNT),
    Metric("Bytes/op (client)", ("client", "bytes_per_op"), PER_OP),
    Metric("Bytes/op (server)", ("server", "bytes_per_op"), PER_OP),
    Metric("Allocs/op (client)", ("client", "allocs_per_op"), PER_OP),
    Metric("Allocs/op (server)", ("server", "allocs_per_op"), PER_OP),
    Metric("ReqT/op", ("req_throughput_bps",), BITS_PER_SECOND),
    Metric("RespT/op", ("resp_throughput_bps",), BITS_PER_SECOND),
    Metric("50th-Lat", ("latency_ns", "p50"), NANOSECONDS),
    Metric("90th-Lat", ("latency_ns", "p90"), NANOSECONDS),
    Metric("99th-Lat", ("latency_ns", "p99"), NANOSECONDS),
    Metric("Avg-Lat", ("latency_ns", "avg"), NANOSECONDS),
    Metric("QPS", ("qps",), RATE),
    Metric("CPU/op (client)", ("client", "cpu_ns_per_op"), NANOSECONDS),
    Metric("CPU/op (server)", ("server", "cpu_ns_per_op"), NANOSECONDS),
)

# Every number a run may carry, checked on load.
_NUMBER_PATHS = (
    ("duration_s",), ("total_ops",), ("send_ops",), ("recv_ops",), ("qps",),
    ("req_throughput_bps",), ("resp_throughput_bps",),
    ("latency_ns", "p50"), ("latency_ns", "p90"), ("latency_ns", "p99"),
    ("latency_ns", "p999"), ("latency_ns", "avg"), ("latency_ns", "max"),
) + tuple((side, field) for side in ("client", "server")
          for field in ("allocs_per_op", "bytes_per_op", "cpu_ns_per_op"))

# Optional objects of a run; any of them may be null or absent.
_OBJECT_FIELDS = ("latency_ns", "latency_histogram", "client", "server")


class InputError(Exception):
    """A result file that cannot be read or does not follow the format."""


@dataclasses.dataclass
class Run:
    """One run of a result file: its features and its measurements.

    `index` is the run's position in the file's "runs" array; `data` is the
    run's JSON object as loaded (validated).
    """
    index: int
    features: dict
    data: dict

    def value(self, path):
        """Returns the number at `path`, or None if it or a parent is null."""
        node = self.data
        for key in path:
            if not isinstance(node, dict):
                return None
            node = node.get(key)
        return node

    def backend_requests(self):
        """Returns the requests each backend served, in target order.

        A list of numbers from the run's "backends", or None when the run
        has none (a remote server, or a file without "backends").
        """
        backends = self.data.get("backends")
        if not backends:
            return None
        return [backend["requests"] for backend in backends]

    def key(self):
        """Returns the features that identify this run, as a hashable key.

        Every feature takes part except IGNORED_FEATURES.
        """
        return tuple(sorted((name, value)
                            for name, value in self.features.items()
                            if name not in IGNORED_FEATURES))


@dataclasses.dataclass
class ResultFile:
    """A loaded result file: where it came from, its metadata, its runs."""
    path: str
    started: str
    command: str
    versions: dict
    runs: list


@dataclasses.dataclass
class Comparison:
    """Runs of two files paired by features, and those left unpaired.

    `matched` holds (before, after) pairs in the order of the new file;
    `only_old` and `only_new` keep each file's order.
    """
    matched: list
    only_old: list
    only_new: list


@dataclasses.dataclass(frozen=True)
class Change:
    """One compared figure: before, after (either may be None) and percent.

    `percent` is None when it has no meaning (see percent_change).
    """
    metric: Metric
    before: object
    after: object
    percent: object


@dataclasses.dataclass
class Pairing:
    """One client→server pairing of a configuration, over repeated files.

    `runs_per_file` holds, per file in the order given, that file's runs of
    this pairing: usually one, none when the file lacks it.
    """
    client: str
    server: str
    process: object
    runs_per_file: list

    def values(self, path):
        """Returns the non-null numbers at `path` of every run, file order."""
        values = (run.value(path) for runs in self.runs_per_file
                  for run in runs)
        return [value for value in values if value is not None]

    def median(self, path):
        """Returns median(values(path)), or None when there is no value."""
        values = self.values(path)
        return statistics.median(values) if values else None

    def runs(self):
        """Returns every run of this pairing, in file order."""
        return [run for runs in self.runs_per_file for run in runs]

    def median_run(self):
        """Returns a Run standing for this pairing's runs as a whole.

        Its features are those of the first run; every number a run may
        carry is the median over the runs (null when no run has it); its
        latency_histogram pools the runs' histograms (pooled_histogram).
        """
        runs = self.runs()
        data = {"latency_histogram": pooled_histogram(runs)}
        for path in _NUMBER_PATHS:
            node = data
            for key in path[:-1]:
                node = node.setdefault(key, {})
            node[path[-1]] = self.median(path)
        features = dict(runs[0].features) if runs else {}
        return Run(index=-1, features=features, data=data)


@dataclasses.dataclass
class PairingGroup:
    """The pairings of one run configuration.

    `features` are the runs' features without PAIRING_FEATURES and
    IGNORED_FEATURES; `pairings` are in PAIRING_ORDER.
    """
    features: dict
    pairings: list

    def find(self, client, server):
        """Returns the first Pairing client→server, or None."""
        return next((pairing for pairing in self.pairings
                     if (pairing.client, pairing.server) == (client, server)),
                    None)

    def h2rpc_pairing(self):
        """h2rpc→h2rpc, else h2rpc→h2rpc_sync, else None."""
        return self.find("h2rpc", "h2rpc") or self.find("h2rpc", "h2rpc_sync")

    def _ratio(self, path, top, bottom):
        """Ratio of the median at `path` of two Pairings (None if absent)."""
        if top is None or bottom is None:
            return None
        return ratio(top.median(path), bottom.median(path))

    def qps_ratio(self):
        """Median QPS of h2rpc's pairing over grpcpp→grpcpp, or None.

        h2rpc's pairing is h2rpc→h2rpc, or h2rpc→h2rpc_sync in a group
        without it (h2rpc_pairing).
        """
        return self._ratio(("qps",), self.h2rpc_pairing(),
                           self.find("grpcpp", "grpcpp"))

    def coro_qps_ratio(self):
        """Median QPS of h2rpc_coro→h2rpc_coro over h2rpc→h2rpc, or None."""
        return self._ratio(("qps",), self.find("h2rpc_coro", "h2rpc_coro"),
                           self.find("h2rpc", "h2rpc"))

    def coro_p50_ratio(self):
        """Median p50 of h2rpc→h2rpc over h2rpc_coro→h2rpc_coro, or None."""
        return self._ratio(("latency_ns", "p50"), self.find("h2rpc", "h2rpc"),
                           self.find("h2rpc_coro", "h2rpc_coro"))

    def p50_ratio(self):
        """Median p50 of grpcpp→grpcpp over h2rpc's pairing, or None.

        How many times lower h2rpc's median latency is.
        """
        return self._ratio(("latency_ns", "p50"),
                           self.find("grpcpp", "grpcpp"),
                           self.h2rpc_pairing())


@dataclasses.dataclass
class BeforeAfter:
    """One client→server pairing of a configuration, before and after.

    `before` is the Pairing over the files before the change, `after` the
    one over the files after it; either is None when no file of that side
    has a run of this pairing.
    """
    before: object
    after: object

    def pairing(self):
        """Returns the side that is not None, `after` when both are."""
        return self.after or self.before

    def qps_change(self):
        """percent_change() from the median QPS before to that after."""
        if self.before is None or self.after is None:
            return None
        return percent_change(self.before.median(("qps",)),
                              self.after.median(("qps",)))


@dataclasses.dataclass
class BeforeAfterGroup:
    """The pairings of one run configuration, before and after a change.

    `features` are as PairingGroup's; `pairings` are BeforeAfters in
    PAIRING_ORDER.
    """
    features: dict
    pairings: list

    def matched(self):
        """The BeforeAfters with runs on both sides."""
        return [p for p in self.pairings
                if p.before is not None and p.after is not None]

    def only_before(self):
        """The BeforeAfters with runs in the before files only."""
        return [p for p in self.pairings if p.after is None]

    def only_after(self):
        """The BeforeAfters with runs in the after files only."""
        return [p for p in self.pairings if p.before is None]


def load(path):
    """Reads and validates the result file at `path`.

    Returns a ResultFile. Raises InputError, naming the file and the
    offending field, when the file is missing, is not JSON, has another
    "format", or a field has the wrong type.
    """
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text: {e.reason} at byte "
                         f"{e.start}") from None
    return parse(text, path)


def parse(text, path="<string>"):
    """Parses and validates a result file's text; `path` names it in errors.

    Returns a ResultFile; raises InputError like load().
    """
    try:
        document = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: invalid JSON at line {e.lineno} column "
                         f"{e.colno}: {e.msg}") from None
    except ValueError as e:
        raise InputError(f"{path}: invalid JSON: {e}") from None
    if not isinstance(document, dict):
        raise InputError(f"{path}: the top level is not a JSON object")
    _check_format(document, path)
    runs = document.get("runs")
    if not isinstance(runs, list):
        raise InputError(f'{path}: "runs" is missing or not an array')
    return ResultFile(
        path=path,
        started=_optional_string(document, "started", path),
        command=_optional_string(document, "command", path),
        versions=_versions(document, path),
        runs=[_run(index, run, path) for index, run in enumerate(runs)],
    )


def _reject_constant(name):
    """json.loads hook: NaN and Infinity are not JSON numbers."""
    raise ValueError(f"{name} is not a JSON number")


def _check_format(document, path):
    """Raises InputError unless the document's "format" is FORMAT."""
    if "format" not in document:
        raise InputError(f'{path}: no "format" field; expected "{FORMAT}"')
    if document["format"] != FORMAT:
        found = json.dumps(document["format"])
        raise InputError(f'{path}: "format" is {found}, expected "{FORMAT}"')


def _optional_string(document, name, path):
    """Returns document[name] ("" if absent); InputError if not a string."""
    value = document.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError(f'{path}: "{name}" is not a string')
    return value


def _versions(document, path):
    """Returns the "versions" object as {name: str}; InputError if wrong."""
    versions = document.get("versions")
    if versions is None:
        return {}
    if not isinstance(versions, dict):
        raise InputError(f'{path}: "versions" is not an object')
    return {name: str(value) for name, value in versions.items()}


def _run(index, run, path):
    """Validates the index-th element of "runs" and returns it as a Run."""
    where = f"{path}: runs[{index}]"
    if not isinstance(run, dict):
        raise InputError(f"{where} is not an object")
    features = run.get("features")
    if not isinstance(features, dict):
        raise InputError(f'{where}: "features" is missing or not an object')
    for name, value in features.items():
        if isinstance(value, (dict, list)):
            raise InputError(f'{where}: feature "{name}" is not a scalar')
    for name in _OBJECT_FIELDS:
        if run.get(name) is not None and not isinstance(run[name], dict):
            raise InputError(f'{where}: "{name}" is not an object or null')
    # A feature a file lacks has the default of benchmain's flag: plaintext
    # (--secure), one server (--servers) with pick_first (--lb_policy), no
    # interceptors (--interceptors), no busy polling (--busy_poll_us), no
    # call metrics (--metrics), no tracing (--tracing). Such runs pair with
    # runs that say so.
    features.setdefault("secure", False)
    features.setdefault("servers", 1)
    features.setdefault("lb_policy", "pick_first")
    features.setdefault("interceptors", 0)
    features.setdefault("busy_poll_us", 0)
    features.setdefault("metrics", False)
    features.setdefault("tracing", False)
    result = Run(index=index, features=features, data=run)
    for number_path in _NUMBER_PATHS:
        value = result.value(number_path)
        if value is not None and not _is_number(value):
            raise InputError(f'{where}: "{".".join(number_path)}" is '
                             f"{json.dumps(value)}, expected a number or null")
    _check_histogram(run.get("latency_histogram"), where)
    _check_backends(run.get("backends"), where)
    return result


def _is_number(value):
    """True for a finite JSON number (bool is not a number here)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def _check_histogram(histogram, where):
    """Raises InputError unless `histogram` is null or a valid histogram."""
    if histogram is None:
        return
    growth = histogram.get("growth")
    first_upper = histogram.get("first_upper_ns")
    counts = histogram.get("counts")
    if not _is_number(growth) or growth <= 1:
        raise InputError(f'{where}: "latency_histogram.growth" must be a '
                         "number above 1")
    if not _is_number(first_upper) or first_upper <= 0:
        raise InputError(f'{where}: "latency_histogram.first_upper_ns" must '
                         "be a positive number")
    if not isinstance(counts, list) or not all(
            isinstance(pair, list) and len(pair) == 2
            and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                    for n in pair)
            for pair in counts):
        raise InputError(f'{where}: "latency_histogram.counts" must be a list '
                         "of [bucket index, count] pairs of whole numbers")


def _check_backends(backends, where):
    """Raises InputError unless `backends` is null or a valid backend list."""
    if backends is None:
        return
    if not isinstance(backends, list) or not all(
            isinstance(backend, dict)
            and isinstance(backend.get("address"), str)
            and isinstance(backend.get("requests"), int)
            and not isinstance(backend.get("requests"), bool)
            and backend["requests"] >= 0
            for backend in backends):
        raise InputError(f'{where}: "backends" must be null or a list of '
                         '{"address": string, "requests": whole number}')


def match(old, new):
    """Pairs the runs of two ResultFiles by Run.key(); returns a Comparison.

    Runs with the same key within one file pair up in file order; those
    left over are reported as present in one file only.
    """
    unpaired_old = collections.defaultdict(collections.deque)
    for run in old.runs:
        unpaired_old[run.key()].append(run)
    matched, only_new = [], []
    for run in new.runs:
        candidates = unpaired_old.get(run.key())
        if candidates:
            matched.append((candidates.popleft(), run))
        else:
            only_new.append(run)
    paired_old = {id(before) for before, _ in matched}
    only_old = [run for run in old.runs if id(run) not in paired_old]
    return Comparison(matched=matched, only_old=only_old, only_new=only_new)


def percent_change(before, after):
    """Returns (after - before) / before * 100 as a float, or None.

    0.0 when both are equal (0 -> 0 included); None when either side is
    None or `before` is 0 with a different `after`, so the result is never
    NaN or infinite. Computed in floating point: 3 -> 2 gives -33.333...,
    not grpc-go's integer-truncated -33.
    """
    if before is None or after is None:
        return None
    if before == after:
        return 0.0
    if before == 0:
        return None
    return (float(after) - float(before)) / float(before) * 100.0


def compare_runs(before, after, metrics=COMPARISON_METRICS):
    """Returns one Change per metric for a matched pair of Runs."""
    changes = []
    for metric in metrics:
        old_value = before.value(metric.path)
        new_value = after.value(metric.path)
        changes.append(Change(metric, old_value, new_value,
                              percent_change(old_value, new_value)))
    return changes


def latency_cdf(run):
    """Returns the run's latency CDF as [(upper_ns, fraction), ...].

    One point per non-empty bucket of latency_histogram, in increasing
    latency: the fraction of ops at or below the bucket's upper bound
    (first_upper_ns * growth**index), preceded by (lower edge of the first
    non-empty bucket, 0.0). Empty when the run has no histogram or no
    samples.
    """
    histogram = run.data.get("latency_histogram")
    if not histogram:
        return []
    buckets = sorted((index, count) for index, count in histogram["counts"]
                     if count > 0)
    total = sum(count for _, count in buckets)
    if total == 0:
        return []
    growth = histogram["growth"]
    first_upper = histogram["first_upper_ns"]
    points = [(first_upper * growth ** (buckets[0][0] - 1), 0.0)]
    seen = 0
    for index, count in buckets:
        seen += count
        points.append((first_upper * growth ** index, seen / total))
    return points


def pooled_latency_cdf(runs):
    """Returns the latency CDF of several runs' samples pooled together.

    As latency_cdf(), over pooled_histogram(runs).
    """
    pooled = pooled_histogram(runs)
    if pooled is None:
        return []
    return latency_cdf(Run(-1, {}, {"latency_histogram": pooled}))


def pooled_histogram(runs):
    """Returns the sum of the runs' latency_histograms, or None.

    The counts are added bucket by bucket. Runs without a histogram, and
    runs whose histogram has another growth or first_upper_ns than the
    first one found, are left out; None when no run has a histogram.
    """
    histograms = [run.data.get("latency_histogram") for run in runs]
    histograms = [h for h in histograms if h]
    if not histograms:
        return None
    first = histograms[0]
    counts = collections.Counter()
    for histogram in histograms:
        if (histogram["growth"], histogram["first_upper_ns"]) != (
                first["growth"], first["first_upper_ns"]):
            continue
        for index, count in histogram["counts"]:
            counts[index] += count
    return {"growth": first["growth"],
            "first_upper_ns": first["first_upper_ns"],
            "counts": [[index, count] for index, count in counts.items()]}


def ratio(numerator, denominator):
    """Returns numerator / denominator as a float, or None.

    None when either is None or 0, so a missing or empty measurement never
    gives 0x, an infinite or a NaN ratio.
    """
    if not numerator or not denominator:
        return None
    return float(numerator) / float(denominator)


def group_pairings(results):
    """Groups the runs of ResultFiles that repeat one command by pairing.

    Returns PairingGroups, one per configuration (features without
    PAIRING_FEATURES and IGNORED_FEATURES), ordered by workload in order of
    first appearance, then max_concurrent_calls ascending, then first
    appearance. Runs with the same features in several files are
    repetitions of one Pairing.
    """
    configs, pairings = {}, collections.defaultdict(dict)
    for file_index, result in enumerate(results):
        for run in result.runs:
            config = {name: value for name, value in run.features.items()
                      if name not in PAIRING_FEATURES
                      and name not in IGNORED_FEATURES}
            key = tuple(sorted(config.items()))
            configs.setdefault(key, config)
            stacks = (run.features.get("client_stack", "?"),
                      run.features.get("server_stack", "?"),
                      run.features.get("process"))
            pairing = pairings[key].setdefault(
                stacks, Pairing(*stacks, [[] for _ in results]))
            pairing.runs_per_file[file_index].append(run)
    workloads = {}
    for config in configs.values():
        workloads.setdefault(config.get("workload"), len(workloads))
    groups = [PairingGroup(config, sorted(pairings[key].values(),
                                          key=_pairing_rank))
              for key, config in configs.items()]
    return sorted(groups, key=lambda group: (
        workloads[group.features.get("workload")],
        _number_first(group.features.get("max_concurrent_calls"))))


def match_repetitions(before, after):
    """Matches the pairings of two sets of repeated ResultFiles.

    `before` and `after` each repeat one command (the two commands may
    differ). Runs match as match() pairs them: by every feature except
    IGNORED_FEATURES, i.e. by configuration and client→server pairing.
    Returns BeforeAfterGroups in group_pairings() order (configurations of
    the before files first); a configuration or pairing found on one side
    only is kept, with None for the other side.
    """
    split = len(before)
    groups = []
    for group in group_pairings(list(before) + list(after)):
        groups.append(BeforeAfterGroup(group.features, [
            BeforeAfter(_side(pairing, pairing.runs_per_file[:split]),
                        _side(pairing, pairing.runs_per_file[split:]))
            for pairing in group.pairings]))
    return groups


def _side(pairing, runs_per_file):
    """The Pairing of `pairing` over some of its files, None if no run."""
    if not any(runs_per_file):
        return None
    return Pairing(pairing.client, pairing.server, pairing.process,
                   runs_per_file)


def _pairing_rank(pairing):
    """Sort key of a Pairing: its place in PAIRING_ORDER, others last."""
    stacks = (pairing.client, pairing.server)
    if stacks in PAIRING_ORDER:
        return PAIRING_ORDER.index(stacks)
    return len(PAIRING_ORDER)


def _number_first(value):
    """Sort key putting numbers first, ascending, then anything else."""
    if _is_number(value):
        return (0, value, "")
    return (1, 0, str(value))
