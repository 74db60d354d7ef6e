#!/usr/bin/env python3
"""Measures gRPC through a reverse proxy: h2rpc_proxy, nginx and HAProxy.

One backend per stack (benchmain --server_only: h2rpc, and gRPC C++) on
--backend_cpus, each behind one proxy of every kind on --proxy_cpus (the
proxy alone there), and benchmain --target clients of the same stack on
--client_cpus. For every repetition, row and stack the paths run back to
back (direct to the backend, then through each proxy, in an order that
rotates), so each comparison is measured under the same conditions. Records
every run's benchmain result, with the proxy's CPU time over the measured
time (benchmain --proxy_pids), and prints a Markdown table: median QPS,
latency, latency the proxy adds to the direct path's (same repetition),
proxy CPU per call, calls per proxy CPU-second, and that against HAProxy and
nginx.

Debian's nginx and HAProxy are installed by benchmark/proxies/install.sh
(without starting their services); each runs with the configuration of
benchmark/proxies/*.in in a temporary directory, on 127.0.0.1 only.

  benchmark/proxy_bench.py --out=benchmark/results/proxy.json
  benchmark/proxy_bench.py --table_from=benchmark/results/proxy.json
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The "format" of what --out writes.
FORMAT = "h2rpc-proxy/1"

# name -> benchmain flags
ROWS = {
    "unary_1KiB_c1": ["--workloads=unary", "--max_concurrent_calls=1"],
    "unary_1KiB_c64": ["--workloads=unary", "--max_concurrent_calls=64"],
    "unary_1KiB_c120": ["--workloads=unary", "--max_concurrent_calls=120"],
    "pingpong_1KiB_s1": ["--workloads=streaming", "--max_concurrent_calls=1"],
    "pingpong_1KiB_s64": ["--workloads=streaming",
                          "--max_concurrent_calls=64"],
    "unary_1MiB_c1": ["--workloads=unary", "--max_concurrent_calls=1",
                      "--req_size_bytes=1048576",
                      "--resp_size_bytes=1048576"],
    "unary_1MiB_c8": ["--workloads=unary", "--max_concurrent_calls=8",
                      "--req_size_bytes=1048576",
                      "--resp_size_bytes=1048576"],
}

STACKS = ["h2rpc", "grpcpp"]
PROXIES = ["h2rpc_proxy", "haproxy", "nginx"]
PATHS = ["direct"] + PROXIES


def Build():
    subprocess.run([os.path.join(ROOT, "tools/bazel"), "build", "-c", "opt",
                    "//benchmark:benchmain", "//tools/h2rpc_proxy"],
                   check=True, cwd=ROOT)
    return subprocess.run(
        [os.path.join(ROOT, "tools/bazel"), "info", "-c", "opt", "bazel-bin"],
        check=True, cwd=ROOT, capture_output=True, text=True).stdout.strip()


def FreePort():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def WaitForPort(port, process, timeout_s=30):
    """Waits until 127.0.0.1:port accepts connections (or fails)."""
    give_up = time.monotonic() + timeout_s
    while time.monotonic() < give_up:
        if process.poll() is not None:
            raise RuntimeError("%s exited with %d" % (process.args[0],
                                                      process.returncode))
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("%s: nothing listens on port %d" % (process.args[0],
                                                          port))


def StartAndReadPort(command, stdin=None):
    """Starts `command`; returns (process, the port of its first line)."""
    process = subprocess.Popen(command, stdin=stdin, stdout=subprocess.PIPE,
                               text=True)
    prefix = "listening on port "
    for line in process.stdout:
        if line.startswith(prefix):
            return process, int(line[len(prefix):].strip())
    raise RuntimeError("%s ended without printing %r" % (command[0], prefix))


def Stop(process):
    if process.stdin:
        process.stdin.close()
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def Render(template, directory, **values):
    text = open(os.path.join(ROOT, "benchmark/proxies", template)).read()
    for key, value in values.items():
        text = text.replace("{" + key + "}", str(value))
    path = os.path.join(directory, template[:-len(".in")])
    with open(path, "w") as out:
        out.write(text)
    return path


def StartProxy(kind, bin_dir, backend_port, cpus, directory):
    """Starts one proxy in front of backend_port; returns (process, port)."""
    pin = ["taskset", "-c", cpus]
    if kind == "h2rpc_proxy":
        return StartAndReadPort(
            pin + [os.path.join(bin_dir, "tools/h2rpc_proxy/h2rpc_proxy"),
                   "--listen=127.0.0.1:0",
                   "--target=127.0.0.1:%d" % backend_port])
    port = FreePort()
    own = tempfile.mkdtemp(prefix=kind + "-", dir=directory)
    if kind == "nginx":
        config = Render("nginx.conf.in", own, dir=own, port=port,
                        backend_port=backend_port)
        process = subprocess.Popen(
            pin + ["nginx", "-p", own, "-e", os.path.join(own, "error.log"),
                   "-c", config])
    else:
        config = Render("haproxy.cfg.in", own, port=port,
                        backend_port=backend_port)
        process = subprocess.Popen(pin + ["haproxy", "-db", "-f", config])
    WaitForPort(port, process)
    return process, port


def Version(command):
    result = subprocess.run(command, capture_output=True, text=True)
    return (result.stdout + result.stderr).strip().splitlines()[0]


def RunClient(bin_dir, stack, port, row, proxy_pid, args):
    """benchmain's result of the run, or None if it did not end in time."""
    with tempfile.NamedTemporaryFile(suffix=".json") as result:
        command = [os.path.join(bin_dir, "benchmark/benchmain"),
                   "--target=127.0.0.1:%d" % port,
                   "--client_stack=" + stack,
                   "--client_cpus=" + args.client_cpus,
                   "--benchtime=" + args.benchtime, "--warmup=" + args.warmup
                   ] + ROWS[row] + ["--result_file=" + result.name]
        if proxy_pid is not None:
            command.append("--proxy_pids=%d" % proxy_pid)
        try:
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL,
                           timeout=args.client_timeout_s)
        except subprocess.TimeoutExpired:
            return None
        return json.load(open(result.name))["runs"][0]


def Median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def Summarize(result):
    """One dict per (row, stack, path) with runs, in table order: medians
    over the repetitions of QPS, p50 and p99 (µs), latency added to the
    direct path's of the same repetition (µs), proxy CPU per call (µs),
    calls per proxy CPU-second, and that over HAProxy's and nginx's."""
    runs = [r for r in result["runs"] if "qps" in r]
    by_key = {}
    for run in runs:
        p = run["proxy_bench"]
        by_key.setdefault((p["row"], p["stack"], p["path"]), []).append(run)
    direct = {(r["proxy_bench"]["row"], r["proxy_bench"]["stack"],
               r["proxy_bench"]["repetition"]): r
              for r in runs if r["proxy_bench"]["path"] == "direct"}

    def Added(run, percentile):
        p = run["proxy_bench"]
        base = direct.get((p["row"], p["stack"], p["repetition"]))
        if base is None:
            return None
        return (run["latency_ns"][percentile] -
                base["latency_ns"][percentile]) / 1e3

    def PerCall(run):
        proxy = run.get("proxy")
        return proxy["cpu_ns_per_op"] / 1e3 if proxy else None

    summary = []
    for row in ROWS:
        for stack in STACKS:
            per_cpu_second = {}
            for path in PROXIES:
                cpu = Median([PerCall(r)
                              for r in by_key.get((row, stack, path), [])])
                per_cpu_second[path] = 1e6 / cpu if cpu else None
            for path in PATHS:
                group = by_key.get((row, stack, path))
                if not group:
                    continue
                entry = {
                    "row": row, "stack": stack, "path": path,
                    "runs": len(group),
                    "qps": Median([r["qps"] for r in group]),
                    "p50_us": Median([r["latency_ns"]["p50"]
                                      for r in group]) / 1e3,
                    "p99_us": Median([r["latency_ns"]["p99"]
                                      for r in group]) / 1e3,
                }
                if path != "direct":
                    entry["added_p50_us"] = Median([Added(r, "p50")
                                                    for r in group])
                    entry["added_p99_us"] = Median([Added(r, "p99")
                                                    for r in group])
                    entry["cpu_us_per_call"] = Median([PerCall(r)
                                                       for r in group])
                    entry["calls_per_cpu_second"] = per_cpu_second[path]
                    for other in ("haproxy", "nginx"):
                        mine, theirs = (per_cpu_second[path],
                                        per_cpu_second[other])
                        entry["vs_" + other] = (
                            mine / theirs
                            if mine and theirs and path != other else None)
                summary.append(entry)
    return summary


def PrintTable(result):
    """The Markdown table of a result (what --out wrote)."""
    def Cell(value, form):
        return form % value if value is not None else ""

    header = ["row", "stack", "path", "QPS", "p50", "p99", "added p50",
              "added p99", "proxy CPU per call", "calls per proxy CPU-s",
              "vs HAProxy", "vs nginx"]
    print("| " + " | ".join(header) + " |")
    print("|" + " --- |" * len(header))
    for e in Summarize(result):
        cells = [e["row"], e["stack"], e["path"],
                 "%.0f (%d runs)" % (e["qps"], e["runs"]),
                 "%.0f µs" % e["p50_us"], "%.0f µs" % e["p99_us"],
                 Cell(e.get("added_p50_us"), "%.0f µs"),
                 Cell(e.get("added_p99_us"), "%.0f µs"),
                 Cell(e.get("cpu_us_per_call"), "%.1f µs"),
                 Cell(e.get("calls_per_cpu_second"), "%.0f"),
                 Cell(e.get("vs_haproxy"), "%.2fx"),
                 Cell(e.get("vs_nginx"), "%.2fx")]
        print("| " + " | ".join(cells) + " |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default=",".join(ROWS))
    parser.add_argument("--stacks", default=",".join(STACKS))
    parser.add_argument("--paths", default=",".join(PATHS))
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--benchtime", default="5s")
    parser.add_argument("--warmup", default="1s")
    parser.add_argument("--backend_cpus", default="0")
    parser.add_argument("--client_cpus", default="0")
    parser.add_argument("--proxy_cpus", default="1")
    parser.add_argument("--client_timeout_s", type=float, default=90,
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
    rows = args.rows.split(",")
    stacks = args.stacks.split(",")
    paths = args.paths.split(",")

    if "nginx" in paths or "haproxy" in paths:
        subprocess.run([os.path.join(ROOT, "benchmark/proxies/install.sh")],
                       check=True)
    bin_dir = Build()
    directory = tempfile.mkdtemp(prefix="proxy_bench-")
    commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"],
                            cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    if subprocess.run(["git", "status", "--porcelain", "--", "rpc",
                       "transport", "tools/h2rpc_proxy", "benchmark"],
                      cwd=ROOT, capture_output=True, text=True).stdout:
        commit += "-dirty"
    result = {"format": FORMAT, "argv": sys.argv,
              "versions": {"commit": commit}, "runs": []}
    if "nginx" in paths:
        result["versions"]["nginx"] = Version(["nginx", "-v"])
    if "haproxy" in paths:
        result["versions"]["haproxy"] = Version(["haproxy", "-v"])
    backends = {}
    proxies = {}
    try:
        for stack in stacks:
            backends[stack] = StartAndReadPort(
                ["taskset", "-c", args.backend_cpus,
                 os.path.join(bin_dir, "benchmark/benchmain"),
                 "--server_only", "--server_stack=" + stack,
                 "--server_cpus=" + args.backend_cpus],
                stdin=subprocess.PIPE)
            for path in paths:
                if path != "direct":
                    proxies[(stack, path)] = StartProxy(
                        path, bin_dir, backends[stack][1], args.proxy_cpus,
                        directory)
        for repetition in range(args.repetitions):
            for i, row in enumerate(rows):
                for stack in stacks:
                    # The paths' order rotates with the row and repetition.
                    shift = (i + repetition) % len(paths)
                    for path in paths[shift:] + paths[:shift]:
                        if path == "direct":
                            port, pid = backends[stack][1], None
                        else:
                            process, port = proxies[(stack, path)]
                            pid = process.pid
                        run = RunClient(bin_dir, stack, port, row, pid,
                                        args) or {}
                        # The table takes percentiles; the histogram's
                        # buckets would make the file ten times larger.
                        run.pop("latency_histogram", None)
                        run["proxy_bench"] = {"row": row, "stack": stack,
                                              "path": path,
                                              "repetition": repetition}
                        result["runs"].append(run)
                        print("%d %-18s %-7s %-12s %s" % (
                            repetition, row, stack, path,
                            "%.0f/s" % run["qps"] if "qps" in run
                            else "no end (killed)"), file=sys.stderr)
    finally:
        for process, _ in proxies.values():
            Stop(process)
        for process, _ in backends.values():
            Stop(process)
        shutil.rmtree(directory, ignore_errors=True)
    if args.out:
        with open(args.out, "w") as out:
            json.dump(result, out, indent=1)
    PrintTable(result)


if __name__ == "__main__":
    main()
