"""Build macros shared by the project's BUILD files."""

def h2rpc_cc_test(name, srcs, deps = [], **kwargs):
    """A gtest unit test (with gtest_main) linked against the allocation counter."""
    native.cc_test(
        name = name,
        srcs = srcs,
        deps = deps + [
            "//test/util:allocation_counter",
            "@system//:gtest_main",
        ],
        **kwargs
    )

def h2rpc_fuzz_test(name, srcs, deps = [], corpus = None):
    """A libFuzzer target, runnable two ways.

    `name` is a cc_test that replays the checked-in corpus and a fixed number of
    deterministic pseudo-random inputs through LLVMFuzzerTestOneInput, so every
    `bazel test` (and --config=asan) exercises the target.
    `name_libfuzzer` is the real coverage-guided fuzzer; build it with
    `tools/bazel build --config=fuzz //test/fuzz:NAME_libfuzzer` (clang).
    """
    data = native.glob([corpus + "/**"]) if corpus else []
    args = [native.package_name() + "/" + corpus] if corpus else []
    native.cc_test(
        name = name,
        srcs = srcs,
        deps = deps + ["//test/fuzz:replay_main"],
        data = data,
        args = args,
    )
    native.cc_binary(
        name = name + "_libfuzzer",
        srcs = srcs,
        deps = deps,
        linkopts = ["-fsanitize=fuzzer"],
        tags = ["manual"],
    )

def h2rpc_proto_library(name, srcs, deps = [], grpc = False, h2rpc = False, visibility = None):
    """C++ code for .proto files, generated with Debian's protoc.

    Gives a cc_library `name` with the .pb.h/.pb.cc of `srcs`. With h2rpc = True
    it also runs //tools/protoc-gen-h2rpc, which adds <file>.h2rpc.pb.h/.cc
    (per service: a Stub, and Service / CallbackService base classes; see
    docs/codegen.md), and links //rpc. With grpc = True it also runs
    grpc_cpp_plugin (the gRPC C++ peer in interop tests) and links libgrpc++.
    `deps` are other h2rpc_proto_library targets whose .proto files `srcs`
    import. Imports are relative to the workspace root.
    """
    outs = []
    for src in srcs:
        base = src[:-len(".proto")]
        outs += [base + ".pb.h", base + ".pb.cc"]
        if grpc:
            outs += [base + ".grpc.pb.h", base + ".grpc.pb.cc"]
        if h2rpc:
            outs += [base + ".h2rpc.pb.h", base + ".h2rpc.pb.cc"]
    plugin = ""
    tools = []
    if grpc:
        plugin += ("--plugin=protoc-gen-grpc=/usr/bin/grpc_cpp_plugin " +
                   "--grpc_out=$(GENDIR) ")
    if h2rpc:
        plugin += ("--plugin=protoc-gen-h2rpc=$(execpath //tools/protoc-gen-h2rpc) " +
                   "--h2rpc_out=$(GENDIR) ")
        tools = ["//tools/protoc-gen-h2rpc"]
    native.filegroup(
        name = name + "_protos",
        srcs = srcs + [d + "_protos" for d in deps],
    )
    native.genrule(
        name = name + "_codegen",
        srcs = srcs + [d + "_protos" for d in deps],
        outs = outs,
        tools = tools,
        cmd = ("protoc -I. --cpp_out=$(GENDIR) " + plugin +
               " ".join(["$(execpath %s)" % s for s in srcs])),
    )
    native.cc_library(
        name = name,
        srcs = [o for o in outs if o.endswith(".cc")],
        hdrs = [o for o in outs if o.endswith(".h")],
        deps = deps + ["@system//:protobuf"] +
               (["@system//:grpcpp"] if grpc else []) +
               (["//rpc", "@system//:absl"] if h2rpc else []),
        visibility = visibility,
    )
