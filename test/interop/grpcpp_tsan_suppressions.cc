// ThreadSanitizer suppressions for the gRPC C++ interop peers.
//
// Under --config=tsan the peers are instrumented but Debian's libgrpc,
// libgrpc++, libgpr and Abseil are not: TSan then sees only half of their
// synchronisation and reports races inside them, and in gRPC's inline header
// code, that are not there. The same holds for what gRPC calls from threads
// it synchronises itself: OpenSSL over TLS (reports with only libssl or
// libcrypto frames) and std::string copies (only a libstdc++ frame, as
// basic_string<char>'s code lives in the uninstrumented libstdc++). The
// peers are reference implementations, not code under test, so races with a
// gRPC, Abseil, OpenSSL or libstdc++ frame are suppressed here (TSan asks
// every binary for these through this hook). Accesses by interceptors
// (memcpy, recvmsg, malloc) called from gRPC or OpenSSL are ignored too, as
// in benchmark/grpcpp/tsan_suppressions.cc: otherwise every TLS record
// OpenSSL copies is a report that TSan must match against these
// suppressions, which slows a TLS call of a few hundred KiB to seconds.
// Races elsewhere, including in any h2rpc binary paired with these peers,
// are still reported.
extern "C" const char* __tsan_default_suppressions() {
  return "race:libgrpc.so\n"
         "race:libgrpc++.so\n"
         "race:libgpr.so\n"
         "race:libabsl_\n"
         "race:libssl.so\n"
         "race:libcrypto.so\n"
         "race:libstdc++.so\n"
         "called_from_lib:libgrpc.so\n"
         "called_from_lib:libgrpc++.so\n"
         "called_from_lib:libgpr.so\n"
         "called_from_lib:libssl.so\n"
         "called_from_lib:libcrypto.so\n";
}
