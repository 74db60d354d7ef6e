"""h2rpc's Connect client against a real Connect server, none written here
but its service: @connectrpc/connect-node (npm; test/web/node/server.mjs)
serves grpc.testing.TestService over h2c, and h2rpc_interop_client
--connect_unary (ChannelOptions::connect_unary) runs the interop test cases
made of unary calls against it, with binary messages and with JSON
(--connect_json, ChannelOptions::connect_json), over HTTP/2 and over
HTTP/1.1 (--connect_http1, ChannelOptions::connect_http1, against the
server on HTTP/1.1 only): empty_unary, large_unary,
special_status_message, unimplemented_method and unimplemented_service (an
unknown service is an HTTP 404 without a Connect error there).

Usage (from Bazel): connect_client_test.py --client_dir=DIR
  --proto_root=DIR --lock=FILE --h2rpc_client=PATH (and --server, the
  h2rpc server the other web tests use, unused here)
"""
import json
import os
import re
import subprocess
import sys
import unittest

import web_test_util

ARGS = None
CASES = ("empty_unary", "large_unary", "special_status_message",
         "unimplemented_method", "unimplemented_service")


class ConnectClientTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.dir = web_test_util.client_dir(
            [os.path.join(ARGS.client_dir, name)
             for name in ("server.mjs", "descriptors.mjs")],
            ARGS.lock, ARGS.proto_root)

    def start_server(self, flags):
        self.server = subprocess.Popen(
            ["node", os.path.join(self.dir, "server.mjs"),
             "--descriptor_set=" + os.path.join(self.dir, "testing.binpb"),
             "--port=0"] + flags,
            stdout=subprocess.PIPE, text=True)
        for line in self.server.stdout:
            match = re.search(r"listening on port (\d+)", line)
            if match:
                self.port = int(match.group(1))
                break
        else:
            raise RuntimeError("server.mjs did not say its port")

    def tearDown(self):
        web_test_util.stop_server(self.server)

    def run_cases(self, flags, content_type, server_flags=()):
        """Runs CASES with h2rpc_interop_client --connect_unary `flags`
        against server.mjs `server_flags`; checks that every call the server
        served came in the Connect protocol with `content_type` (the
        unknown method and service never reach a handler)."""
        self.start_server(list(server_flags))
        for case in CASES:
            result = subprocess.run(
                [ARGS.h2rpc_client, "--server_host=127.0.0.1",
                 "--server_port=%d" % self.port, "--connect_unary",
                 "--test_case=" + case] + flags,
                capture_output=True, text=True, timeout=120)
            self.assertEqual(result.returncode, 0, "%s:\n%s%s" % (
                case, result.stdout, result.stderr))
        web_test_util.stop_server(self.server)
        calls = [json.loads(line) for line in self.server.stdout]
        self.assertEqual(
            sorted(call["method"] for call in calls),
            ["EmptyCall", "UnaryCall", "UnaryCall"], calls)
        for call in calls:
            self.assertEqual(call["protocol"], "connect", calls)
            self.assertEqual(call["content_type"], content_type, calls)

    def test_unary_interop_cases(self):
        self.run_cases([], "application/proto")

    def test_unary_interop_cases_in_json(self):
        self.run_cases(["--connect_json"], "application/json")

    def test_unary_interop_cases_over_http1(self):
        # The server speaks HTTP/1.1 only.
        self.run_cases(["--connect_http1"], "application/proto", ["--http1"])
        self.run_cases(["--connect_http1", "--connect_json"],
                       "application/json", ["--http1"])


if __name__ == "__main__":
    web_test_util.main(sys.modules[__name__])
