#ifndef H2RPC_RPC_COMPRESSION_H_
#define H2RPC_RPC_COMPRESSION_H_

#include "base/compression_algorithm.h"  // IWYU pragma: export

namespace h2rpc {

// Message compression, as gRPC negotiates it: a call's messages are
// compressed with the algorithm named in its grpc-encoding header, each
// message on its own, and each side lists what it can decompress in
// grpc-accept-encoding.
//
// Choosing: ChannelOptions::default_compression or
// ClientContext::set_compression_algorithm for requests;
// ServerOptions::default_compression or
// ServerContext::set_compression_algorithm for responses (used only when the
// client accepts it). A message that compression would not make smaller is
// sent as is; WriteOptions::set_no_compression sends one message of a
// stream uncompressed.
//
// Accepting: ConnectionOptions::accepted_compression (rpc/connection_options.h;
// default: all).
//
// CompressionAlgorithm and CompressionAlgorithmSet:
// base/compression_algorithm.h.

// Per-message options of a streaming write.
class WriteOptions {
 public:
  // Sends this message uncompressed even though the call compresses
  // (gRPC's WriteOptions::set_no_compression).
  WriteOptions& set_no_compression() {
    no_compression_ = true;
    return *this;
  }
  bool no_compression() const { return no_compression_; }

 private:
  bool no_compression_ = false;
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_COMPRESSION_H_
