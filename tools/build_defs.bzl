"""Build macros shared by the project's BUILD files.

h2rpc_proto_library is also for workspaces that depend on h2rpc
(`load("@h2rpc//tools:build_defs.bzl", "h2rpc_proto_library")`, after
h2rpc_dependencies() in their WORKSPACE; see
third_party/dependencies.bzl): the labels below are Label()s, so they name
h2rpc's targets and the workspace's @system from any workspace.
"""

# protoc-gen-h2rpc, the library its code links, and the system libraries.
_PLUGIN = str(Label("//tools/protoc-gen-h2rpc"))
_RPC = str(Label("//rpc"))
_CORO = str(Label("//rpc/coro"))
_ABSL = str(Label("@system//:absl"))
_PROTOBUF = str(Label("@system//:protobuf"))
_GRPCPP = str(Label("@system//:grpcpp"))

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
        testonly = True,
    )

def h2rpc_proto_library(
        name,
        srcs,
        deps = [],
        grpc = False,
        h2rpc = False,
        messages = None,
        services_namespace = None,
        coroutines = False,
        visibility = None):
    """C++ code for .proto files, generated with Debian's protoc.

    Gives a cc_library `name` with the .pb.h/.pb.cc of `srcs`. With h2rpc = True
    it also runs //tools/protoc-gen-h2rpc, which adds <file>.h2rpc.pb.h/.cc
    (per service: a Stub, and Service / CallbackService base classes; see
    docs/codegen.md), and links h2rpc's //rpc. With grpc = True it runs grpc_cpp_plugin
    instead (the gRPC C++ peers of the interop tests and the benchmark) and
    links libgrpc++. The two cannot be combined: gRPC's and h2rpc's code for a
    service are classes of the same names (pkg::Svc::Stub, pkg::Svc::Service),
    whose vtables and inline members the linker would silently mix.
    `deps` are other h2rpc_proto_library targets whose .proto files `srcs`
    import. Imports are relative to the root of the workspace the .proto
    files are in. A .proto may also be a generated file (a genrule's output
    in the package): it is named and imported by its path relative to the
    root of the output tree, as a source file is relative to the workspace's.

    A .proto's .pb.h/.pb.cc can be generated only once in a package, so its
    message code and its stubs can also be separate targets: with
    `messages = ":x_proto"` (the h2rpc_proto_library of the same `srcs` in
    this package, without grpc or h2rpc), the target generates only the stubs
    of grpc = True or h2rpc = True and links `messages` for the message code;
    imports come from `messages`, so `deps` must be empty. One plain target
    plus a grpc and an h2rpc stub target on top of it keeps libgrpc++ out of
    h2rpc binaries, and h2rpc's stubs out of gRPC's.

    `services_namespace = "x"` (h2rpc = True) puts the h2rpc service classes
    in `<package namespace>::x`, so that one binary can also link gRPC C++'s
    classes of the same service (the benchmark, which drives both).

    `coroutines = True` (h2rpc = True) also generates <file>.h2rpc_coro.pb.h
    (per service: the C++20 coroutine CoroStub and CoroService classes; see
    docs/codegen.md) into a second, header-only cc_library, `name + "_coro"`,
    built as C++20 on //rpc/coro. `name` itself never has these headers, so
    it stays C++17; code including a coroutine header depends on
    `name + "_coro"` and is compiled with -std=c++20 itself.
    """
    where = "h2rpc_proto_library(%s): " % name
    if grpc and h2rpc:
        fail(where + "grpc = True and h2rpc = True generate classes of the " +
             "same names; make two targets sharing a `messages` target")
    if services_namespace and not h2rpc:
        fail(where + "services_namespace needs h2rpc = True")
    if coroutines and not h2rpc:
        fail(where + "coroutines needs h2rpc = True (the coroutine classes " +
             "come with h2rpc's stubs)")
    if messages:
        if not (grpc or h2rpc):
            fail(where + "`messages` needs grpc = True or h2rpc = True " +
                 "(the target generates only stubs)")
        if deps:
            fail(where + "with `messages`, imports come from it; " +
                 "leave `deps` empty")
        protos = srcs + [messages + "_protos"]
        cc_deps = [messages, _PROTOBUF]
    else:
        protos = srcs + [d + "_protos" for d in deps]
        cc_deps = deps + [_PROTOBUF]
    outs = []
    coro_hdrs = []  # C++20: only in the `name + "_coro"` library
    for src in srcs:
        base = src[:-len(".proto")]
        if not messages:
            outs += [base + ".pb.h", base + ".pb.cc"]
        if grpc:
            outs += [base + ".grpc.pb.h", base + ".grpc.pb.cc"]
        if h2rpc:
            outs += [base + ".h2rpc.pb.h", base + ".h2rpc.pb.cc"]
        if coroutines:
            coro_hdrs.append(base + ".h2rpc_coro.pb.h")
    # Imports and generated paths are relative to the root of the
    # repository the .proto files are in (external/<name> when h2rpc's own
    # protos are built from another workspace), in the source tree or, for
    # generated .proto files, in the output tree (gendir). protoc names an
    # input after the first -I that contains it, and `root` "." contains
    # every relative path, so gendir comes first: a generated file is named
    # relative to it, a source file (not under gendir) relative to root.
    repository = native.repository_name()
    root = "." if repository == "@" else "external/" + repository[1:]
    gendir = "$(GENDIR)" if root == "." else "$(GENDIR)/" + root
    out_flags = "" if messages else "--cpp_out=%s " % gendir
    tools = []
    if grpc:
        out_flags += ("--plugin=protoc-gen-grpc=/usr/bin/grpc_cpp_plugin " +
                      "--grpc_out=" + gendir + " ")
        cc_deps += [_GRPCPP]
    if h2rpc:
        # The plugin's parameter: a comma-separated list.
        parameters = []
        if services_namespace:
            parameters.append("services_namespace=" + services_namespace)
        if coroutines:
            parameters.append("coroutines")
        out_flags += ("--plugin=protoc-gen-h2rpc=" +
                      "$(execpath %s) " % _PLUGIN +
                      "--h2rpc_out=" +
                      (",".join(parameters) + ":" if parameters else "") +
                      gendir + " ")
        tools = [_PLUGIN]
        cc_deps += [_RPC, _ABSL]
    native.filegroup(
        name = name + "_protos",
        srcs = protos,
        visibility = visibility,
    )
    native.genrule(
        name = name + "_codegen",
        srcs = protos,
        outs = outs + coro_hdrs,
        tools = tools,
        cmd = ("protoc -I%s -I%s " % (gendir, root) + out_flags +
               " ".join(["$(execpath %s)" % s for s in srcs])),
    )
    native.cc_library(
        name = name,
        srcs = [o for o in outs if o.endswith(".cc")],
        hdrs = [o for o in outs if o.endswith(".h")],
        deps = cc_deps,
        # A .pb.cc registers its file in protobuf's generated pool from a
        # static initializer; a statically linked binary would drop the
        # object of a file no code references (one declaring only services,
        # as test.proto), and server reflection could not describe it.
        alwayslink = not messages,
        visibility = visibility,
    )
    if coroutines:
        native.cc_library(
            name = name + "_coro",
            hdrs = coro_hdrs,
            deps = [":" + name, _CORO],
            copts = ["-std=c++20"],
            visibility = visibility,
        )
