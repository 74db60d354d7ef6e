// ThreadSanitizer suppressions for the benchmark binaries with a gRPC C++
// stack (compiled into each binary: TSan looks the hook up in the
// executable, not in the shared libraries of a test).
//
// Debian's gRPC C++, its upb and Abseil are not instrumented, so TSan sees
// only part of their synchronisation and reports races inside them that are
// not there (as for the interop peers, see
// test/interop/grpcpp_tsan_suppressions.cc, plus gRPC's libupb). Accesses by
// interceptors called from gRPC (recvmsg into a slice, malloc) are ignored
// too: otherwise every received message's bytes look racy when the polling
// thread parses them, and TSan spends so long matching each report against
// these suppressions that gRPC slows to a few calls per second. Races in this
// project's code are still reported.
extern "C" const char* __tsan_default_suppressions() {
  return "race:libgrpc.so\n"
         "race:libgrpc++.so\n"
         "race:libgpr.so\n"
         "race:libupb.so\n"
         "race:libabsl_\n"
         "called_from_lib:libgrpc.so\n"
         "called_from_lib:libgrpc++.so\n"
         "called_from_lib:libgpr.so\n"
         "called_from_lib:libupb.so\n";
}
