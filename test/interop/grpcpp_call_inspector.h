// Per-message compression facts of a gRPC C++ call, for the interop peers.
//
// The interop compression cases need to know whether the last message
// received on a call arrived with the compressed flag set, which the public
// gRPC C++ API does not expose. gRPC's own interop client and server read it
// through test-only core functions (src/core/lib/surface/call_test_only.h),
// which Debian's libgrpc 1.51 exports but does not install a header for; this
// file declares them. They have C++ linkage, and the flag values below are
// those of gRPC core (src/core/lib/transport/transport.h), unchanged since
// 2016. Only the interop test peers may use this.
#ifndef H2RPC_TEST_INTEROP_GRPCPP_CALL_INSPECTOR_H_
#define H2RPC_TEST_INTEROP_GRPCPP_CALL_INSPECTOR_H_

#include <grpc/grpc.h>

#include <cstdint>

// Declared by gRPC core in src/core/lib/surface/call_test_only.h.
grpc_compression_algorithm grpc_call_test_only_get_compression_algorithm(
    grpc_call* call);
uint32_t grpc_call_test_only_get_message_flags(grpc_call* call);

namespace h2rpc::testing {

// Set by the transport on a received message whose compressed flag was 1.
inline constexpr uint32_t kGrpcInternalCompressFlag = 0x80000000u;
// Set by the decompression filter after it inflated such a message.
inline constexpr uint32_t kGrpcInternalWasCompressedFlag = 0x40000000u;

// True when the last message received on `call` had its compressed flag set
// (whether or not gRPC has decompressed it since). `call` must have received
// at least one message.
inline bool LastReceivedMessageWasCompressed(grpc_call* call) {
  const uint32_t flags = grpc_call_test_only_get_message_flags(call);
  return (flags &
          (kGrpcInternalCompressFlag | kGrpcInternalWasCompressedFlag)) != 0;
}

// The message encoding the peer announced for `call` (its grpc-encoding
// header); GRPC_COMPRESS_NONE when it announced none.
inline grpc_compression_algorithm IncomingCompressionAlgorithm(
    grpc_call* call) {
  return grpc_call_test_only_get_compression_algorithm(call);
}

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_INTEROP_GRPCPP_CALL_INSPECTOR_H_
