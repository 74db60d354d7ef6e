// ThreadSanitizer suppressions for the gRPC C++ interop peers.
//
// Under --config=tsan the peers are instrumented but Debian's libgrpc,
// libgrpc++, libgpr and Abseil are not: TSan then sees only half of their
// synchronisation and reports races inside them, and in gRPC's inline header
// code, that are not there. The peers are reference implementations, not
// code under test, so races with a gRPC or Abseil library frame are
// suppressed here (TSan asks every binary for these through this hook).
// Races elsewhere, including in any h2rpc binary paired with these peers,
// are still reported.
extern "C" const char* __tsan_default_suppressions() {
  return "race:libgrpc.so\n"
         "race:libgrpc++.so\n"
         "race:libgpr.so\n"
         "race:libabsl_\n";
}
