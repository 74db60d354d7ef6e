"""Offline stand-in for @rules_java: re-exports Bazel 4.2's native Java rules.

@bazel_tools//tools/jdk loads this file to register JDK toolchains; h2rpc has
no Java code, but Bazel resolves those toolchains for every build.
"""

java_binary = native.java_binary
java_import = native.java_import
java_library = native.java_library
java_plugin = native.java_plugin
java_runtime = native.java_runtime
java_test = native.java_test
java_toolchain = native.java_toolchain
