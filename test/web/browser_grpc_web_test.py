"""gRPC-Web and Connect from a real browser: Debian's headless Chromium
loads a page (test/web/node/page, bundled by esbuild at test time) that
calls grpc.testing.TestService with Connect-ES's gRPC-Web and Connect
transports (@connectrpc/connect-web) and with grpc-web's own client in its
text form (npm's grpc-web) on h2rpc_interop_server over HTTPS, with HTTP/2
and with HTTP/1.1 (Chromium with --disable-http2; its network log shows
which version each response came in), from another origin: the browser's
CORS preflight is answered and the calls (unary, server streaming) succeed
for the allowed origin; from an origin the server does not allow, the
preflight is refused and every call fails.
Screenshots of the pages are saved with the test's outputs.

Usage (from Bazel): browser_grpc_web_test.py --server=PATH
  --client_dir=DIR --proto_root=DIR --lock=FILE
"""
import functools
import http.server
import os
import subprocess
import sys
import threading
import unittest

import web_test_util

ARGS = None


class QuietHandler(http.server.SimpleHTTPRequestHandler):

    def log_message(self, *args):
        pass


class PageServer:
    """Serves `directory` over HTTP on 127.0.0.1, a free port: an origin."""

    def __init__(self, directory):
        handler = functools.partial(QuietHandler, directory=directory)
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.origin = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.thread.join()
        self.httpd.server_close()


class BrowserGrpcWebTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.dir = web_test_util.client_dir(
            [os.path.join(ARGS.client_dir, name)
             for name in ("browser.mjs", "descriptors.mjs", "page")],
            ARGS.lock, ARGS.proto_root)
        page = os.path.join(cls.dir, "page")
        os.rename(os.path.join(cls.dir, "testing.binpb"),
                  os.path.join(page, "testing.binpb"))
        subprocess.run(
            # A native binary or a node script, whichever npm installed.
            [os.path.join(cls.dir, "node_modules/.bin/esbuild"),
             os.path.join(page, "page.mjs"), "--bundle", "--format=esm",
             "--outfile=" + os.path.join(page, "bundle.js"),
             "--log-level=warning"], check=True, timeout=120)
        cls.allowed = PageServer(page)
        cls.other = PageServer(page)
        cls.server, cls.port = web_test_util.start_server(
            ARGS.server, ["--use_tls", "--grpc_web", "--connect",
                          "--cors_allowed_origins=" + cls.allowed.origin])

    @classmethod
    def tearDownClass(cls):
        web_test_util.stop_server(cls.server)
        cls.allowed.stop()
        cls.other.stop()

    def load(self, origin, expect, screenshot, http1=False):
        api = "https://127.0.0.1:%d" % self.port
        url = ("%s/index.html?base_url=%s&expect=%s"
               "&protocols=grpc-web,connect,grpc-web-text"
               % (origin, api, expect))
        argv = ["node", os.path.join(self.dir, "browser.mjs"),
                "--page_url=" + url, "--api_origin=" + api]
        if http1:
            argv.append("--disable_http2=true")
        outputs = os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR")
        if outputs:
            argv.append("--screenshot=" + os.path.join(outputs, screenshot))
        result = subprocess.run(argv, capture_output=True, text=True,
                                timeout=180)
        self.assertEqual(result.returncode, 0,
                         "%s:\n%s%s" % (url, result.stdout, result.stderr))
        self.assertIn('{"api_protocols":["%s"]}' % (
            "http/1.1" if http1 else "h2"), result.stdout)
        return result.stdout

    def test_an_allowed_origin_calls(self):
        results = self.load(self.allowed.origin, "ok", "allowed_origin.png")
        # Two calls per protocol.
        self.assertEqual(results.count('"ok":true'), 6, results)

    def test_an_allowed_origin_calls_over_http1(self):
        results = self.load(self.allowed.origin, "ok",
                            "allowed_origin_http1.png", http1=True)
        self.assertEqual(results.count('"ok":true'), 6, results)

    def test_another_origin_is_refused(self):
        results = self.load(self.other.origin, "refused", "other_origin.png")
        self.assertEqual(results.count('"ok":false'), 6, results)

    def test_another_origin_is_refused_over_http1(self):
        results = self.load(self.other.origin, "refused",
                            "other_origin_http1.png", http1=True)
        self.assertEqual(results.count('"ok":false'), 6, results)


if __name__ == "__main__":
    web_test_util.main(sys.modules[__name__])
