"""perfdoc: the figures of README.md and docs/*.md, from benchmark/results/.

  tools/bazel run //tools/perfdoc              refreshes every generated block
  tools/bazel run //tools/perfdoc -- --check   exit status 1 when a block is
                                               stale or the prose quotes a
                                               figure no result file holds

A generated block is the text between a marker line and `<!-- /perfdoc -->`:

  <!-- perfdoc pairings unary_1.json unary_2.json unary_3.json -->
      benchresult's pairings table of those files (medians, h2rpc/grpcpp
      ratios), after the command and where and when it ran
  <!-- perfdoc main_job main_job.json -->
      the README's short table of one main-job run
  <!-- perfdoc wan wan_uncapped.json -->
      benchmark/wan_bench.py's table of a wide-area run
  <!-- perfdoc proxy proxy.json -->
      benchmark/proxy_bench.py's table: h2rpc_proxy, HAProxy and nginx
  <!-- perfdoc feature_cost metrics metrics_off_1.json metrics_on_1.json ... -->
      what a boolean feature of the runs (here "metrics") costs: medians of
      the runs without and with it, side by side, per calls in flight
  <!-- perfdoc h2load h2load_1.json h2load_2.json h2load_3.json -->
      the raw HTTP/2 reference (benchmark/results/record.sh's h2load
      topic), with h2rpc→h2rpc unary QPS from unary_*.json beside it
  <!-- perfdoc gbench core_microbenchmarks.json -->
      a Google Benchmark JSON file: time per iteration and counters
  <!-- perfdoc memory memory.json -->
      server memory per idle connection and per open stream
      (//test/abuse:attack_report's idle_connections and open_streams)
  <!-- perfdoc attacks attacks.json ATTACK... -->
      attack_report's result for each named attack, both servers
  <!-- perfdoc soak soak.json -->
      a run of the soak under faults (tools/soak --result_file): calls by
      kind and status per channel, faults, probes, RSS trends, descriptors
      and threads at the quiet points

File names are relative to benchmark/results/. Outside the blocks, a
figure that compares or measures (figures.FIGURE_PATTERNS) must be one that the
result files hold, within the rounding the text uses: a ratio of two
pairings' median QPS or p50, a QPS, a CPU time or an allocation count per
op, or a wide-area figure.
"""

import argparse
import glob
import os
import sys

import blocks
import figures


def render(root, text, path="<text>"):
    """Returns `text` with every generated block rendered anew."""
    out, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        match = blocks.BEGIN.match(line)
        if not match:
            continue
        kind, names = match.group(1), match.group(2).split()
        if kind not in blocks.BLOCKS:
            raise ValueError(f"{path}: unknown perfdoc block '{kind}'")
        end = next((j for j in range(i, len(lines)) if lines[j] == blocks.END), None)
        if end is None:
            raise ValueError(f"{path}: '{line}' has no '{blocks.END}'")
        out.append("")
        out.extend(blocks.BLOCKS[kind](root, names).rstrip("\n").split("\n"))
        out.append("")
        out.append(blocks.END)
        i = end + 1
    return "\n".join(out)


def documents(root):
    """README.md and docs/*.md, relative to `root`."""
    return ["README.md"] + sorted(
        os.path.relpath(p, root)
        for p in glob.glob(os.path.join(root, "docs", "*.md")))


def check(root):
    """Messages for every stale block and unsupported figure."""
    problems, found = [], figures.collect_figures(root)
    for path in documents(root):
        with open(os.path.join(root, path), encoding="utf-8") as f:
            text = f.read()
        if render(root, text, path) != text:
            problems.append(f"{path}: a generated block is stale: run "
                            f"tools/bazel run //tools/perfdoc")
        problems.extend(figures.unsupported_figures(text, found, path))
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--root", default=os.environ.get(
        "BUILD_WORKSPACE_DIRECTORY", "."))
    args = parser.parse_args(argv)
    if args.check:
        problems = check(args.root)
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1 if problems else 0
    for path in documents(args.root):
        full = os.path.join(args.root, path)
        with open(full, encoding="utf-8") as f:
            text = f.read()
        rendered = render(args.root, text, path)
        if rendered != text:
            with open(full, "w", encoding="utf-8") as f:
                f.write(rendered)
            print(f"refreshed {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
