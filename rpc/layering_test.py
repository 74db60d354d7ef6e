"""Checks that the rpc packages keep their layering (docs/design.md,
"Packages").

Two views of the same rule, both from the tree being tested:
  1. Build edges: for each layer, the //rpc rules its libraries reach
     (a genquery per layer, BUILD.bazel's RPC_LAYERS) must all belong to the
     layers it may depend on: the client never reaches the server or the
     reverse, nothing below the facades reaches //rpc:rpc.
  2. Include edges: over the library sources of rpc/ (tests, benchmarks,
     the interceptors and the services users add left out), no include cycle
     between files, none between units (a .h and the .cc of its stem count
     as one node, so two classes whose .cc files include each other's
     headers are a cycle too), and no file includes a header of a layer it
     may not use.

Usage (from Bazel): layering_test.py --deps LAYER=FILE ... --srcs FILE ...
"""

import argparse
import collections
import re
import sys
import unittest

INCLUDE = re.compile(r'^\s*#\s*include\s+"(rpc/[^"]+)"', re.M)
NOT_LIBRARY = re.compile(r"(_test\.cc|_benchmark\.cc|fake_lb_helper\.h)$|"
                         r"^rpc/interceptors/|"
                         r"^rpc/(channelz|health_check|orca|reflection)_service|"
                         r"^rpc/(admin_services|otlp_exporter)")
FACADE_FILES = {"rpc/channel.h", "rpc/channel.cc", "rpc/server.h",
                "rpc/server.cc", "rpc/internal/channel_core_access.h",
                "rpc/internal/loop_sharing.h", "rpc/internal/loop_sharing.cc"}
# //rpc:value_types's headers.
VALUE_FILES = {"rpc/compression.h", "rpc/connection_options.h",
               "rpc/connectivity_state.h", "rpc/metadata.h",
               "rpc/peer_identity.h", "rpc/status.h"}
PACKAGES = ("common", "config", "lb", "client", "server")

# layer -> the layers it may use: "value" is //rpc:value_types (header-only
# value types), "api" //rpc:api_types (the public types).
ALLOWED = {
    "value": {"value"},
    "api": {"api", "value"},
    "config": {"config"},
    "lb": {"lb", "config", "api", "value"},
    "common": {"common", "api", "value"},
    "client": {"client", "common", "config", "lb", "api", "value"},
    "server": {"server", "common", "config", "api", "value"},
    "facade": {"facade", "client", "server", "common", "api", "value"},
}
# The public types report API misuse through common's misuse reporter, the
# one target of common below them (so every layer that uses the public
# types reaches it).
API_MAY_USE = {"//rpc/internal/common:misuse", "rpc/internal/common/misuse.h"}


def target_layer(label):
    if label == "//rpc:value_types":
        return "value"
    # channelz's registry and tracing's trace context implement public
    # types (rpc/channelz.h, rpc/tracing.h).
    if label in ("//rpc:api_types", "//rpc:version_h") or label.startswith(
            ("//rpc/internal/channelz:", "//rpc/internal/tracing:")):
        return "api"
    for package in PACKAGES:
        if label.startswith("//rpc/internal/%s:" % package):
            return package
    return "facade"


def file_layer(path):
    if path in FACADE_FILES:
        return "facade"
    if path in VALUE_FILES:
        return "value"
    for package in PACKAGES:
        if path.startswith("rpc/internal/%s/" % package):
            return package
    return "api"


def violations_of_deps(layer, reached):
    """The rules of `reached` (labels) that `layer` may not depend on."""
    return sorted(label for label in reached
                  if target_layer(label) not in ALLOWED[layer] and
                  not ("api" in ALLOWED[layer] and label in API_MAY_USE))


def strongly_connected(nodes, edges):
    """Components of more than one node (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    for root in sorted(nodes):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(sorted(edges.get(root, ()))))]
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append(
                        (successor, iter(sorted(edges.get(successor, ())))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
    return out


def include_problems(sources):
    """`sources`: path -> text. Returns one line per problem found."""
    files = {p: t for p, t in sources.items() if not NOT_LIBRARY.search(p)}
    graph = {p: [i for i in INCLUDE.findall(t) if i in files]
             for p, t in files.items()}
    problems = ["file cycle: " + " -> ".join(c)
                for c in strongly_connected(graph, graph)]

    def unit(path):
        return re.sub(r"\.(h|cc)$", "", path)

    unit_edges = collections.defaultdict(set)
    for path, included in graph.items():
        for header in included:
            if unit(header) != unit(path):
                unit_edges[unit(path)].add(unit(header))
    problems += ["unit cycle: " + " -> ".join(c)
                 for c in strongly_connected({unit(p) for p in files},
                                             unit_edges)]
    for path, included in sorted(graph.items()):
        for header in included:
            layer = file_layer(path)
            if (file_layer(header) not in ALLOWED[layer] and
                    not (layer == "api" and header in API_MAY_USE)):
                problems.append("%s (%s) includes %s (%s)" %
                                (path, layer, header, file_layer(header)))
    return problems


class LayeringTest(unittest.TestCase):
    deps = {}     # layer -> labels its libraries reach
    sources = {}  # path -> text

    def test_every_layer_has_a_query(self):
        self.assertEqual(set(self.deps), set(ALLOWED) - {"facade"})

    def test_build_edges_follow_the_layers(self):
        for layer, reached in sorted(self.deps.items()):
            with self.subTest(layer=layer):
                self.assertTrue(reached, "the query of %s is empty" % layer)
                self.assertEqual(violations_of_deps(layer, reached), [])

    def test_include_edges_follow_the_layers_without_cycles(self):
        self.assertIn("rpc/internal/server/server_core.h", self.sources)
        self.assertIn("rpc/internal/client/channel_core.h", self.sources)
        self.assertEqual(include_problems(self.sources), [])

    # The checks themselves, on planted violations.
    def test_a_server_target_reaching_the_client_is_reported(self):
        self.assertEqual(
            violations_of_deps("server", ["//rpc/internal/server:server",
                                          "//rpc/internal/client:retry"]),
            ["//rpc/internal/client:retry"])
        self.assertEqual(violations_of_deps("lb", ["//rpc:rpc"]),
                         ["//rpc:rpc"])

    def test_planted_include_problems_are_reported(self):
        planted = {
            "rpc/internal/server/a.h": "",
            "rpc/internal/server/a.cc":
                '#include "rpc/internal/server/a.h"\n'
                '#include "rpc/internal/server/b.h"\n',
            "rpc/internal/server/b.h": "",
            "rpc/internal/server/b.cc":
                '#include "rpc/internal/server/a.h"\n'
                '#include "rpc/internal/client/c.h"\n',
            "rpc/internal/client/c.h": '#include "rpc/server.h"\n',
            "rpc/server.h": '#include "rpc/internal/client/c.h"\n',
        }
        self.assertEqual(include_problems(planted), [
            "file cycle: rpc/internal/client/c.h -> rpc/server.h",
            "unit cycle: rpc/internal/client/c -> rpc/server",
            "unit cycle: rpc/internal/server/a -> rpc/internal/server/b",
            "rpc/internal/client/c.h (client) includes rpc/server.h (facade)",
            "rpc/internal/server/b.cc (server) includes "
            "rpc/internal/client/c.h (client)",
        ])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--deps", nargs="+", default=[])
    parser.add_argument("--srcs", nargs="+", default=[])
    args, rest = parser.parse_known_args()
    for item in args.deps:
        layer, path = item.split("=", 1)
        with open(path) as f:
            LayeringTest.deps[layer] = f.read().split()
    for path in args.srcs:
        with open(path) as f:
            LayeringTest.sources[path] = f.read()
    unittest.main(argv=[sys.argv[0]] + rest)


if __name__ == "__main__":
    main()
