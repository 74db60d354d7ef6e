"""benchresult: prints or compares benchmain result files.

  benchresult new.json                 one row per run
  benchresult old.json new.json        per matched run, Before/After/Percentage
  benchresult [old.json] new.json --html report.html
                                       also writes a self-contained HTML report
  benchresult --pairings r1.json [r2.json ...] [--html report.html]
                                       files repeating one command: a Markdown
                                       table of each client→server pairing
                                       (medians over the files, h2rpc/grpcpp
                                       ratios) for docs/performance.md; with
                                       --html also a report with one section
                                       per configuration: the pairings'
                                       latency CDFs on one chart, their
                                       medians side by side, the QPS ratio
  benchresult --before b1.json [b2.json ...] --after a1.json [a2.json ...]
              [--html report.html]
                                       each side's files repeat one command
                                       (the two commands may differ): a
                                       Markdown table of each configuration
                                       and client→server pairing found in
                                       both, medians before and after (QPS
                                       and its change in percent, p50, p99,
                                       allocations and CPU per op of each
                                       side), with the pairings found on one
                                       side only (a gRPC C++ reference run
                                       after) shown with their medians and
                                       listed; with --html also one section
                                       per configuration: the before and
                                       after latency CDFs (samples pooled
                                       over the files) on one chart, QPS and
                                       allocation bars, the same table

Under `bazel run`, relative paths are taken from the directory bazel was run
in. The file format is docs/benchmark_results.md. Exit status: 0 on
success, 2 on bad usage or a bad input file, 1 when the HTML report cannot
be written.
"""

import argparse
import os
import sys

import benchresult_lib as lib
import html_report
import text_report

EXIT_OK, EXIT_OUTPUT_ERROR, EXIT_BAD_INPUT = 0, 1, 2


def parse_args(argv):
    """Parses the command line; exits with status 2 on bad usage."""
    parser = argparse.ArgumentParser(
        prog="benchresult",
        description="Print one benchmain result file as a table, or compare "
                    "two (old, then new) run by run, or print the "
                    "pairings of repeated files side by side, or compare "
                    "repeated files before and after a change.")
    parser.add_argument("files", nargs="*", metavar="result.json",
                        help="one result file, or two: old then new; with "
                             "--pairings, any number")
    parser.add_argument("--html", metavar="report.html",
                        help="also write a self-contained HTML report here")
    parser.add_argument("--pairings", action="store_true",
                        help="the files are repetitions of one command: "
                             "print a Markdown table of each client→server "
                             "pairing, medians over the files (with "
                             "--html, also one HTML section per "
                             "configuration with all its pairings)")
    parser.add_argument("--before", nargs="+", metavar="before.json",
                        help="repetitions of one command before a change; "
                             "needs --after: print each configuration and "
                             "pairing's medians before and after (with "
                             "--html, also one HTML section per "
                             "configuration)")
    parser.add_argument("--after", nargs="+", metavar="after.json",
                        help="repetitions of one command after the change "
                             "(see --before)")
    args = parser.parse_args(argv)
    if args.before is not None or args.after is not None:
        if args.pairings:
            parser.error("--before/--after cannot be combined with "
                         "--pairings")
        if args.after is None:
            parser.error("--before needs --after (the files after the "
                         "change)")
        if args.before is None:
            parser.error("--after needs --before (the files before the "
                         "change)")
        if args.files:
            parser.error(f"with --before and --after, every result file "
                         f"follows one of them; also given: "
                         f"{' '.join(args.files)}")
    elif not args.files:
        parser.error("expected one or two result files (or --pairings, or "
                     "--before and --after)")
    elif not args.pairings and len(args.files) > 2:
        parser.error(f"expected one or two result files, got "
                     f"{len(args.files)} (use --pairings for repetitions)")
    return args


def resolve(path):
    """Makes a relative path relative to where `bazel run` was invoked."""
    base = os.environ.get("BUILD_WORKING_DIRECTORY")
    if base and not os.path.isabs(path):
        return os.path.join(base, path)
    return path


def load(path):
    """Loads a result file given on the command line, named as given."""
    result = lib.load(resolve(path))
    result.path = path
    return result


def render(results):
    """Returns (text, html) for one or two loaded ResultFiles."""
    if len(results) == 1:
        return (text_report.single_table(results[0]),
                html_report.single_report(results[0]))
    old, new = results
    comparison = lib.match(old, new)
    return (text_report.comparison_report(old, new, comparison),
            html_report.comparison_report(old, new, comparison))


def write_html(path, document):
    """Writes the HTML report; returns an error message or None."""
    try:
        with open(resolve(path), "w", encoding="utf-8") as f:
            f.write(document)
    except OSError as e:
        return f"cannot write {path}: {e.strerror or e}"
    return None


def main(argv=None):
    """Runs benchresult; returns the exit status."""
    args = parse_args(argv)
    try:
        results = [load(path) for path in args.files]
        before = [load(path) for path in args.before or []]
        after = [load(path) for path in args.after or []]
    except lib.InputError as e:
        print(f"benchresult: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.before:
        groups = lib.match_repetitions(before, after)
        text = text_report.before_after_table(groups)
        document = html_report.before_after_report(before, after, groups)
    elif args.pairings:
        groups = lib.group_pairings(results)
        text = text_report.pairings_table(groups)
        document = html_report.pairings_report(results, groups)
    else:
        text, document = render(results)
    sys.stdout.write(text)
    sys.stdout.flush()
    if args.html:
        error = write_html(args.html, document)
        if error:
            print(f"benchresult: {error}", file=sys.stderr)
            return EXIT_OUTPUT_ERROR
        print(f"benchresult: wrote {args.html}", file=sys.stderr)
    return EXIT_OK


def _run_as_program():
    """Entry point: µ and → never fail to print, nor does a closed pipe."""
    sys.stdout.reconfigure(errors="replace")
    try:
        status = main()
    except BrokenPipeError:
        # `benchresult ... | head`: stop quietly, as other tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        status = EXIT_OUTPUT_ERROR
    sys.exit(status)


if __name__ == "__main__":
    _run_as_program()
