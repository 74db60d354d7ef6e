"""The Connect protocol over HTTP/2 and HTTP/1.1 from real clients, none
written here.

@connectrpc/connect-node's Connect transport (npm; test/web/node, installed
by test/web/install_npm_modules.sh) calls grpc.testing.TestService on
h2rpc_interop_server --connect over HTTP/2 and over HTTP/1.1, with binary
and with JSON messages: unary (Connect's unary form), server streaming, client streaming
and bidi (its streaming form), an error status, the client's deadline and
a deadline the server alone enforces (connect-timeout-ms). curl (Debian's) posts JSON as a person
would and reads the answers: the response message in protobuf's JSON
mapping, and errors as an HTTP status with a JSON body; and it calls a
method without side effects with Connect's GET form; each over both HTTP
versions.

Usage (from Bazel): connect_protocol_test.py --server=PATH
  --client_dir=DIR --proto_root=DIR --lock=FILE
"""
import json
import subprocess
import sys
import unittest

import web_test_util

ARGS = None
CASES = ("unary,server_streaming,client_streaming,bidi,error,deadline,"
         "server_deadline")
UNARY_CALL = "/grpc.testing.TestService/UnaryCall"


class ConnectProtocolTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.dir = web_test_util.node_client_dir(ARGS)
        cls.server, cls.port = web_test_util.start_server(
            ARGS.server, ["--connect"])

    @classmethod
    def tearDownClass(cls):
        web_test_util.stop_server(cls.server)

    def run_client(self, json_messages, http_version="2"):
        result = subprocess.run(
            web_test_util.node_client_argv(self.dir, self.port, "connect",
                                           CASES, json_messages, http_version),
            capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0,
                         "%s%s" % (result.stdout, result.stderr))
        # One result line per case, each ok.
        self.assertEqual(result.stdout.count('"ok":true'),
                         len(CASES.split(",")), result.stdout)

    def test_connect_node_binary(self):
        self.run_client(json_messages=False)

    def test_connect_node_json(self):
        self.run_client(json_messages=True)

    def test_connect_node_binary_over_http1(self):
        self.run_client(json_messages=False, http_version="1.1")

    def test_connect_node_json_over_http1(self):
        self.run_client(json_messages=True, http_version="1.1")

    def curl(self, body, *extra, http1=False):
        """POSTs `body` as JSON to UnaryCall over HTTP/2 (or HTTP/1.1);
        returns the HTTP status and the response body."""
        result = subprocess.run(
            ["curl", "--silent", "--show-error",
             "--http1.1" if http1 else "--http2-prior-knowledge", "--header", "content-type: application/json",
             "--data-binary", body, "--write-out", "\n%{http_code}"]
            + list(extra) + ["http://127.0.0.1:%d%s" % (self.port, UNARY_CALL)],
            capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        response, _, status = result.stdout.rpartition("\n")
        return int(status), response

    def test_curl_json_call(self):
        for http1 in (False, True):
            status, body = self.curl(
                '{"responseSize": 3, "payload": {"body": "aGk="}}',
                http1=http1)
            self.assertEqual(status, 200, body)
            # Three zero bytes of payload, in protobuf's JSON mapping.
            self.assertEqual(json.loads(body), {"payload": {"body": "AAAA"}})

    def test_curl_error(self):
        for http1 in (False, True):
            status, body = self.curl(
                '{"responseStatus": {"code": 5, "message": "no such thing"}}',
                http1=http1)
            self.assertEqual(status, 404, body)
            self.assertEqual(json.loads(body),
                             {"code": "not_found", "message": "no such thing"})

    def test_curl_bad_json(self):
        status, body = self.curl('{"responseSize": "three"}')
        self.assertEqual(status, 400, body)
        self.assertEqual(json.loads(body)["code"], "invalid_argument")

    def test_curl_get_form(self):
        """Connect's GET form, on CacheableUnaryCall (marked
        NO_SIDE_EFFECTS): curl builds the query."""
        for version in ("--http2-prior-knowledge", "--http1.1"):
            result = subprocess.run(
                ["curl", "--silent", "--show-error", version,
                 "--get", "--data-urlencode", "encoding=json",
                 "--data-urlencode", 'message={"responseSize": 2}',
                 "--write-out", "\n%{http_code}",
                 "http://127.0.0.1:%d/grpc.testing.TestService/"
                 "CacheableUnaryCall" % self.port],
                capture_output=True, text=True, timeout=60)
            self.assertEqual(result.returncode, 0, result.stderr)
            body, _, status = result.stdout.rpartition("\n")
            self.assertEqual(int(status), 200, body)
            self.assertEqual(json.loads(body), {"payload": {"body": "AAA="}})

    def test_curl_deadline_header(self):
        status, body = self.curl("{}", "--header", "connect-timeout-ms: x")
        self.assertEqual(status, 400, body)
        self.assertIn("connect-timeout-ms", json.loads(body)["message"])


if __name__ == "__main__":
    web_test_util.main(sys.modules[__name__])
