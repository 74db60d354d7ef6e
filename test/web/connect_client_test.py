"""h2rpc's Connect client against a real Connect server, none written here
but its service: @connectrpc/connect-node (npm; test/web/node/server.mjs)
serves grpc.testing.TestService over h2c, and h2rpc_interop_client
--connect_unary (ChannelOptions::connect_unary) runs the interop test cases
made of unary calls against it: empty_unary, large_unary,
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
        cls.server = subprocess.Popen(
            ["node", os.path.join(cls.dir, "server.mjs"),
             "--descriptor_set=" + os.path.join(cls.dir, "testing.binpb"),
             "--port=0"],
            stdout=subprocess.PIPE, text=True)
        for line in cls.server.stdout:
            match = re.search(r"listening on port (\d+)", line)
            if match:
                cls.port = int(match.group(1))
                break
        else:
            raise RuntimeError("server.mjs did not say its port")

    @classmethod
    def tearDownClass(cls):
        web_test_util.stop_server(cls.server)

    def test_unary_interop_cases(self):
        for case in CASES:
            result = subprocess.run(
                [ARGS.h2rpc_client, "--server_host=127.0.0.1",
                 "--server_port=%d" % self.port, "--connect_unary",
                 "--test_case=" + case],
                capture_output=True, text=True, timeout=120)
            self.assertEqual(result.returncode, 0, "%s:\n%s%s" % (
                case, result.stdout, result.stderr))
        # Every call the server served came in the Connect protocol (the
        # unknown method and service never reach a handler).
        web_test_util.stop_server(self.server)
        calls = [json.loads(line) for line in self.server.stdout]
        self.assertEqual(
            sorted(call["method"] for call in calls),
            ["EmptyCall", "UnaryCall", "UnaryCall"], calls)
        self.assertTrue(all(call["protocol"] == "connect" for call in calls),
                        calls)


if __name__ == "__main__":
    web_test_util.main(sys.modules[__name__])
