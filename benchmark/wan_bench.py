#!/usr/bin/env python3
"""Runs benchmain's client and server through a delay relay: a WAN on loopback.

For every one-way delay and rate cap, one relay (benchmark/delay_relay) sits
between one benchmain --server_only per stack (on --server_cpus) and
benchmain --target clients (on --client_cpus); for every row the stacks run
back to back (h2rpc client to h2rpc server, gRPC C++ to gRPC C++), so each
pair is measured under the same conditions. Prints a Markdown table with p50
latency (unary) or throughput (streaming), and for unary rows the ideal: the
relay's round trip plus the time the same transfer takes through the relay
without delay (the best stack's p50 at 0 ms, with the same cap: the relay's
throughput for that size, measured), and for streaming rows with a cap the
share of the cap.
Writes every run's benchmain result to --out as JSON; --table_from prints
the table of such a file again.

  benchmark/wan_bench.py --delays_ms=0,10,25,50 --rates_mbit=0,100,1000
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The "format" of what --out writes.
FORMAT = "h2rpc-wan/1"

# name -> (benchmain flags, what the table shows)
ROWS = {
    "unary_64KiB": (["--workloads=unary", "--max_concurrent_calls=1",
                     "--resp_size_bytes=65536"], "p50"),
    "unary_2MiB": (["--workloads=unary", "--max_concurrent_calls=1",
                    "--resp_size_bytes=2097152"], "p50"),
    "unary_16MiB": (["--workloads=unary", "--max_concurrent_calls=1",
                     "--resp_size_bytes=16777216"], "p50"),
    # One server-streaming call on which the server writes 64 KiB messages
    # back to back: MB/s received.
    "stream_64KiB": (["--workloads=streaming_from_server",
                      "--max_concurrent_calls=1", "--resp_size_bytes=65536"],
                     "MB/s"),
    "unary_1KiB_c64": (["--workloads=unary", "--max_concurrent_calls=64",
                        "--resp_size_bytes=1024"], "qps"),
}


# name -> (benchmain stack, extra flags for its client and server)
STACKS = {
    "h2rpc": ("h2rpc", []),
    "h2rpc_fixed": ("h2rpc", ["--bdp_probe=false"]),
    "grpcpp": ("grpcpp", []),
}


def Build():
    subprocess.run([os.path.join(ROOT, "tools/bazel"), "build", "-c", "opt",
                    "//benchmark:benchmain", "//benchmark:delay_relay"],
                   check=True, cwd=ROOT)
    return subprocess.run(
        [os.path.join(ROOT, "tools/bazel"), "info", "-c", "opt", "bazel-bin"],
        check=True, cwd=ROOT, capture_output=True, text=True).stdout.strip()


def StartAndReadPort(command, prefix, stdin=None):
    """Starts `command`; returns (process, the port it prints after prefix)."""
    process = subprocess.Popen(command, stdin=stdin, stdout=subprocess.PIPE,
                               text=True)
    for line in process.stdout:
        if line.startswith(prefix):
            return process, int(line[len(prefix):].strip().split(":")[-1])
    raise RuntimeError("%s ended without printing %r" % (command[0], prefix))


def Stop(process):
    if process.stdin:
        process.stdin.close()
    process.terminate()
    process.wait()


def RunClient(bin_dir, stack, port, row_flags, args):
    """benchmain's result of the run, or None if it did not end in time."""
    benchmain_stack, stack_flags = STACKS[stack]
    with tempfile.NamedTemporaryFile(suffix=".json") as result:
        try:
            subprocess.run(
                [os.path.join(bin_dir, "benchmark/benchmain"),
                 "--target=127.0.0.1:%d" % port,
                 "--client_stack=" + benchmain_stack] + stack_flags +
                ["--client_cpus=" + args.client_cpus,
                 "--benchtime=" + args.benchtime, "--warmup=" + args.warmup,
                 "--req_size_bytes=1024"] + row_flags +
                ["--result_file=" + result.name],
                check=True, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, timeout=args.client_timeout_s)
        except subprocess.TimeoutExpired:
            return None
        return json.load(open(result.name))["runs"][0]


def Figure(run, kind):
    """The row's figure, or None for a run that was killed."""
    if "qps" not in run:
        return None
    if kind == "p50":
        return run["latency_ns"]["p50"] / 1e6
    if kind == "MB/s":
        return run["resp_throughput_bps"] / 8 / 1e6
    return run["qps"]


def Format(value, kind):
    if value is None:
        return "no end (killed)"
    if kind == "p50":
        return "%.1f ms" % value
    if kind == "MB/s":
        return "%.1f MB/s" % value
    return "%.0f/s" % value


def PrintTable(result):
    """The Markdown table of a result (what --out wrote)."""
    runs = result["runs"]

    def Ordered(key):
        seen = []
        for run in runs:
            if run["wan"][key] not in seen:
                seen.append(run["wan"][key])
        return seen

    stacks, rows = Ordered("stack"), Ordered("row")
    table = {}
    for run in runs:
        wan = run["wan"]
        table[(wan["rate_mbit"], wan["delay_ms"], wan["row"], wan["stack"])] = \
            Figure(run, ROWS[wan["row"]][1])
    header = ["row", "one-way delay", "cap"] + stacks
    both = "h2rpc" in stacks and "grpcpp" in stacks
    if both:
        header.append("h2rpc / gRPC C++")
    header.append("ideal (unary) or share of the cap (streaming)")
    print("| " + " | ".join(header) + " |")
    print("|" + " --- |" * len(header))
    for rate in Ordered("rate_mbit"):
        for delay in Ordered("delay_ms"):
            for row in rows:
                kind = ROWS[row][1]
                values = {s: table[(rate, delay, row, s)] for s in stacks}
                cells = [row, "%d ms" % delay,
                         "%g Mbit/s" % rate if rate else "none"]
                cells += [Format(values[s], kind) for s in stacks]
                if both:
                    # A time ratio for p50 (below 1: h2rpc faster), a speed
                    # ratio for MB/s and qps (above 1: h2rpc faster).
                    measured = None not in (values["h2rpc"], values["grpcpp"])
                    cells.append("%.2f" % (values["h2rpc"] / values["grpcpp"])
                                 if measured else "")
                undelayed = [table.get((rate, 0, row, s)) for s in stacks]
                undelayed = [t for t in undelayed if t is not None]
                if kind == "p50" and undelayed:
                    cells.append(Format(2 * delay + min(undelayed), kind))
                elif kind == "MB/s" and rate:
                    cells.append(", ".join(
                        "%s %.0f%%" % (s, values[s] / (rate / 8) * 100)
                        for s in stacks if values[s] is not None))
                else:
                    cells.append("")
                print("| " + " | ".join(cells) + " |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--delays_ms", default="0,10,25,50")
    parser.add_argument("--rates_mbit", default="0",
                        help="Link caps in Mbit/s per direction; 0: none.")
    parser.add_argument("--stacks", default="h2rpc,grpcpp",
                        help="Of " + ", ".join(STACKS) + " (h2rpc_fixed: "
                        "h2rpc with --bdp_probe=false).")
    parser.add_argument("--rows", default=",".join(ROWS))
    parser.add_argument("--benchtime", default="5s")
    parser.add_argument("--warmup", default="1s")
    parser.add_argument("--server_cpus", default="0")
    parser.add_argument("--client_cpus", default="1")
    parser.add_argument("--client_timeout_s", type=float, default=60,
                        help="A client run that has not ended by then (warm-up "
                        "and benchtime included) is killed and reported so.")
    parser.add_argument("--out", default="",
                        help="Writes every run's result here (JSON).")
    parser.add_argument("--table_from", default="",
                        help="Only prints the table of this --out file.")
    args = parser.parse_args()
    if args.table_from:
        PrintTable(json.load(open(args.table_from)))
        return
    stacks = args.stacks.split(",")
    rows = args.rows.split(",")
    delays = [int(d) for d in args.delays_ms.split(",")]
    rates = [float(r) for r in args.rates_mbit.split(",")]

    bin_dir = Build()
    servers = {}
    for stack in stacks:
        benchmain_stack, stack_flags = STACKS[stack]
        servers[stack] = StartAndReadPort(
            [os.path.join(bin_dir, "benchmark/benchmain"), "--server_only",
             "--server_stack=" + benchmain_stack,
             "--server_cpus=" + args.server_cpus] + stack_flags,
            "listening on port ", stdin=subprocess.PIPE)
    result = {"format": FORMAT, "argv": sys.argv, "runs": []}
    try:
        for rate in rates:
            for delay in delays:
                relays = {}
                for stack in stacks:
                    relays[stack] = StartAndReadPort(
                        [os.path.join(bin_dir, "benchmark/delay_relay"),
                         "--target_port=%d" % servers[stack][1],
                         "--delay=%dms" % delay, "--rate_mbit=%g" % rate],
                        "delay_relay: listening on ")
                try:
                    for row in rows:
                        flags, kind = ROWS[row]
                        for stack in stacks:
                            run = RunClient(bin_dir, stack, relays[stack][1],
                                            flags, args)
                            run = run or {}
                            run["wan"] = {"delay_ms": delay,
                                          "rate_mbit": rate, "row": row,
                                          "stack": stack}
                            result["runs"].append(run)
                            print("%-18s %4d ms %6g Mbit/s %-11s %s" % (
                                row, delay, rate, stack,
                                Format(Figure(run, kind), kind)),
                                file=sys.stderr)
                finally:
                    for relay in relays.values():
                        Stop(relay[0])
    finally:
        for server in servers.values():
            Stop(server[0])
    if args.out:
        with open(args.out, "w") as out:
            json.dump(result, out, indent=1)
    PrintTable(result)


if __name__ == "__main__":
    main()
