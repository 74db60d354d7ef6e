"""gRPC-Web over HTTP/2 and HTTP/1.1 from a real client, none written here.

@connectrpc/connect-node's gRPC-Web transport (npm; test/web/node, installed
by test/web/install_npm_modules.sh) calls grpc.testing.TestService on
h2rpc_interop_server --grpc_web over HTTP/2 and HTTP/1.1 (binary messages): unary,
server streaming, an error status, the client's deadline and a deadline the
server alone enforces.
Its gRPC transport runs the same cases on the same server, unaffected, and
gRPC C++'s interop client runs its cases on the same port while the
gRPC-Web client runs.

Usage (from Bazel): connect_node_grpc_web_test.py --server=PATH
  --client_dir=DIR --proto_root=DIR --lock=FILE --grpcpp_client=PATH
"""
import subprocess
import sys
import unittest

import web_test_util

ARGS = None
CASES = "unary,server_streaming,error,deadline,server_deadline"
GRPCPP_CASES = ("large_unary", "server_streaming", "ping_pong",
                "status_code_and_message", "timeout_on_sleeping_server")


class ConnectNodeGrpcWebTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.dir = web_test_util.node_client_dir(ARGS)
        cls.server, cls.port = web_test_util.start_server(
            ARGS.server, ["--grpc_web"])

    @classmethod
    def tearDownClass(cls):
        web_test_util.stop_server(cls.server)

    def client_argv(self, protocol, http_version="2"):
        return web_test_util.node_client_argv(self.dir, self.port, protocol,
                                              CASES, http_version=http_version)

    def check_client(self, protocol, returncode, stdout, stderr):
        self.assertEqual(returncode, 0,
                         "%s failed:\n%s%s" % (protocol, stdout, stderr))
        # One result line per case, each ok.
        self.assertEqual(stdout.count('"ok":true'), len(CASES.split(",")),
                         stdout)

    def run_client(self, protocol, http_version="2"):
        result = subprocess.run(self.client_argv(protocol, http_version),
                                capture_output=True, text=True, timeout=120)
        self.check_client(protocol, result.returncode, result.stdout,
                          result.stderr)

    def test_grpc_web_over_http2(self):
        self.run_client("grpc-web")

    def test_grpc_web_over_http1(self):
        self.run_client("grpc-web", http_version="1.1")

    def test_grpc_on_the_same_server(self):
        self.run_client("grpc")

    def test_grpcpp_interop_client_alongside(self):
        web = subprocess.Popen(self.client_argv("grpc-web"),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
        try:
            for case in GRPCPP_CASES:
                result = subprocess.run(
                    [ARGS.grpcpp_client, "--server_host=127.0.0.1",
                     "--server_port=%d" % self.port, "--test_case=" + case],
                    capture_output=True, text=True, timeout=120)
                self.assertEqual(result.returncode, 0, "%s:\n%s%s" % (
                    case, result.stdout, result.stderr))
        finally:
            stdout, stderr = web.communicate(timeout=120)
        self.check_client("grpc-web", web.returncode, stdout, stderr)


if __name__ == "__main__":
    web_test_util.main(sys.modules[__name__])
