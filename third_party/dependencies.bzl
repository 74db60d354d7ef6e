"""The repositories h2rpc's BUILD files need, for h2rpc and its users.

A workspace that depends on h2rpc declares it and calls h2rpc_dependencies()
in its WORKSPACE:

    local_repository(name = "h2rpc", path = "/path/to/h2rpc")
    load("@h2rpc//third_party:dependencies.bzl", "h2rpc_dependencies")
    h2rpc_dependencies()

This declares, unless the workspace already has a repository of that name:
`@system`, the Debian libraries through pkg-config (system_libs.bzl), and
the offline stand-ins Debian's Bazel 4.2 needs for `@rules_cc`,
`@rules_java` and `@remote_coverage_tools` (docs/build.md). Users get the
libraries the library and the protoc plugin link; h2rpc's own WORKSPACE
passes `development = True` for the tests' and benchmarks' ones too.
"""

load("//third_party:system_libs.bzl", "system_libs")

# The pkg-config modules of each @system//:<name> the library and the
# protoc plugin link.
SYSTEM_LIBRARIES = {
    "absl": [
        "absl_base",
        "absl_flat_hash_map",
        "absl_str_format",
        "absl_strings",
        "absl_synchronization",
        "absl_time",
    ],
    # The Prometheus endpoint (rpc/metrics/prometheus_endpoint.h).
    "microhttpd": ["libmicrohttpd"],
    "nghttp2": ["libnghttp2"],
    # Header-only: pkg-config checks it is installed and adds no flags.
    "nlohmann_json": ["nlohmann_json"],
    "openssl": ["openssl"],
    "protobuf": ["protobuf"],
    "zlib": ["zlib"],
}

# ...and those of h2rpc's tests and benchmarks.
DEVELOPMENT_LIBRARIES = {
    "absl_flags": ["absl_flags_parse"],
    "benchmark": ["benchmark"],
    "grpcpp": ["grpc++"],
    "gtest": ["gtest", "gmock"],
    "gtest_main": ["gtest_main", "gmock"],
}

def _stand_in_impl(ctx):
    # h2rpc's root, from the path of its WORKSPACE file.
    directory = ctx.path(ctx.attr._workspace).dirname.get_child(
        "third_party",
    ).get_child(ctx.attr.directory)
    for entry in directory.readdir():
        ctx.symlink(entry, entry.basename)

# A repository made of the files of third_party/<directory>.
_stand_in = repository_rule(
    implementation = _stand_in_impl,
    attrs = {
        "directory": attr.string(mandatory = True),
        "_workspace": attr.label(default = Label("//:WORKSPACE")),
    },
    local = True,
)

def h2rpc_dependencies(development = False):
    """Declares @system and the stand-ins that are not declared yet."""
    existing = native.existing_rules()
    for name in ["rules_cc", "rules_java", "remote_coverage_tools"]:
        if name not in existing:
            _stand_in(name = name, directory = name)
    if "system" not in existing:
        libraries = dict(SYSTEM_LIBRARIES)
        if development:
            libraries.update(DEVELOPMENT_LIBRARIES)
        system_libs(
            name = "system",
            libraries = libraries,
            # Debian ships no pkg-config module for libprotoc (protoc
            # plugins) nor for libhttp-parser (HTTP/1.1 requests).
            linked_by_name = {
                "http_parser": ["http_parser"],
                "protoc": ["protoc"],
            },
            linked_by_name_requires = {"protoc": ["protobuf"]},
        )
