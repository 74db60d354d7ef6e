#ifndef H2RPC_TEST_UTIL_ZLIB_REFERENCE_H_
#define H2RPC_TEST_UTIL_ZLIB_REFERENCE_H_

// zlib used directly, independent of h2rpc's codecs, so tests can check what
// h2rpc sends and feed it what other gRPC peers would. Failures of zlib
// itself are reported as gtest failures.

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace h2rpc::testing {

// `data` compressed in the gzip (RFC 1952) or zlib (RFC 1950, gRPC's
// "deflate") format.
std::string ZlibCompress(absl::string_view data, bool gzip);

// `size` zero bytes compressed in one stream, fed a chunk at a time so the
// input never sits in memory: a decompression bomb of any size.
std::string ZlibCompressZeros(uint64_t size, bool gzip);

// `data` (one whole gzip or zlib stream) inflated; expects at most
// `max_size` bytes and no trailing input.
std::string ZlibInflate(absl::string_view data, bool gzip, size_t max_size);

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_UTIL_ZLIB_REFERENCE_H_
