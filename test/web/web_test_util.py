"""What the web tests share: the npm packages installed by
install_npm_modules.sh, a working directory for the JavaScript clients, and
h2rpc_interop_server started on a free port."""
import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest


def node_modules(lock):
    """The node_modules directory install_npm_modules.sh made for `lock`."""
    with open(lock, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    path = os.path.join("/var/tmp/h2rpc-npm", digest)
    if not os.path.exists(os.path.join(path, ".complete")):
        raise RuntimeError(
            "%s is missing: tools/bazel installs it "
            "(test/web/install_npm_modules.sh)" % path)
    return os.path.join(path, "node_modules")


def client_dir(sources, lock, proto_root):
    """A fresh directory holding copies of `sources` (paths), node_modules
    (ES modules find their packages beside them, not through NODE_PATH) and
    testing.binpb, the interop protos' FileDescriptorSet."""
    out = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    for source in sources:
        if os.path.isdir(source):
            shutil.copytree(source, os.path.join(out, os.path.basename(source)))
        else:
            shutil.copy(source, out)
    os.symlink(node_modules(lock), os.path.join(out, "node_modules"))
    subprocess.run(
        ["protoc", "-I", proto_root, "--include_imports",
         "--descriptor_set_out=" + os.path.join(out, "testing.binpb"),
         "proto/grpc/testing/test.proto"], check=True, timeout=60)
    return out


def node_client_dir(args):
    """client_dir holding client.mjs and descriptors.mjs, from the flags
    main() parsed."""
    return client_dir([os.path.join(args.client_dir, name)
                       for name in ("client.mjs", "descriptors.mjs")],
                      args.lock, args.proto_root)


def node_client_argv(directory, port, protocol, cases, json_messages=False,
                     http_version="2"):
    """client.mjs in `directory` (node_client_dir) running `cases` with
    `protocol` against 127.0.0.1:`port` over `http_version`: "2" (h2c) or
    "1.1"."""
    return ["node", os.path.join(directory, "client.mjs"),
            "--descriptor_set=" + os.path.join(directory, "testing.binpb"),
            "--base_url=http://127.0.0.1:%d" % port,
            "--protocol=" + protocol, "--http_version=" + http_version,
            "--json=" + ("true" if json_messages else "false"),
            "--case=" + cases]


def start_server(path, args):
    """Starts h2rpc_interop_server with `args` and --port=0; returns the
    process and the port it announced."""
    server = subprocess.Popen([path, "--port=0"] + args,
                              stdout=subprocess.PIPE, text=True)
    for line in server.stdout:
        match = re.search(r"listening on port (\d+)", line)
        if match:
            return server, int(match.group(1))
    server.kill()
    raise RuntimeError("%s did not say its port" % path)


def stop_server(server):
    server.terminate()
    server.wait(timeout=30)


def main(test_module):
    """Parses the web tests' flags into test_module.ARGS (--server, the
    interop server; --client_dir, the JavaScript clients; --proto_root;
    --lock, their package-lock.json; --grpcpp_client and --h2rpc_client,
    gRPC C++'s and h2rpc's interop clients, for the tests that run them),
    then runs the module's tests."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--client_dir", required=True)
    parser.add_argument("--proto_root", required=True)
    parser.add_argument("--lock", required=True)
    parser.add_argument("--grpcpp_client")
    parser.add_argument("--h2rpc_client")
    test_module.ARGS, rest = parser.parse_known_args()
    unittest.main(module=test_module, argv=[sys.argv[0]] + rest)
