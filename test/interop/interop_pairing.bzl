"""Interop pairings: one interop client binary against one interop server."""

# Every test case the interop clients implement (grpcpp_interop_client.cc and
# h2rpc_interop_client.cc) and the interop servers serve; every pairing in
# BUILD.bazel runs them all. A pairing may run a subset (`cases`).
ALL_INTEROP_CASES = [
    "empty_unary",
    "large_unary",
    "client_streaming",
    "server_streaming",
    "ping_pong",
    "empty_stream",
    "cancel_after_begin",
    "cancel_after_first_response",
    "timeout_on_sleeping_server",
    "custom_metadata",
    "status_code_and_message",
    "special_status_message",
    "unimplemented_method",
    "unimplemented_service",
    "client_compressed_unary",
    "server_compressed_unary",
    "client_compressed_streaming",
    "server_compressed_streaming",
    "half_duplex",
]

def interop_pairing_test(
        name,
        server,
        client,
        cases = ALL_INTEROP_CASES,
        tls = False,
        server_args = [],
        client_args = [],
        server_data = [],
        **kwargs):
    """A cc_test running `cases` with `client` against `server`.

    `server` and `client` are cc_binary labels that follow the interop
    command lines (server: --port=0 and the "listening on port N" line;
    client: --server_host, --server_port, --test_case). Each case is one gtest
    test; see //test/interop:interop_pairing_test.cc for the driver.

    `tls = True` runs the cases over TLS with gRPC's interop test credentials
    (//test/interop/testdata, found by the peers at their default
    --tls_testdata_dir under the runfiles root): the peers get gRPC's interop
    TLS flags (--use_tls, --use_test_ca, --server_host_override), and three
    more tests check that the server refuses a plaintext client and the client
    rejects an untrusted CA and a wrong host name.

    `server_data` are more files the server needs at run time (binaries it
    starts, named in `server_args` with $(location)).
    """
    native.cc_test(
        name = name,
        deps = ["//test/interop:interop_pairing_driver"],
        data = [server, client] + server_data + (
            ["//test/interop/testdata:interop_testdata"] if tls else []
        ),
        args = [
            "--server=$(location %s)" % server,
            "--client=$(location %s)" % client,
            "--cases=" + ",".join(cases),
        ] + (["--tls"] if tls else []) + [
            "--server_arg=" + a
            for a in server_args
        ] + [
            "--client_arg=" + a
            for a in client_args
        ],
        size = kwargs.pop("size", "medium"),
        **kwargs
    )
