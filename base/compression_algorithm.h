#ifndef H2RPC_BASE_COMPRESSION_ALGORITHM_H_
#define H2RPC_BASE_COMPRESSION_ALGORITHM_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/optional.h"

namespace h2rpc {

// The message compression algorithms of gRPC's `grpc-encoding` and
// `grpc-accept-encoding` headers. "deflate" is the zlib format (RFC 1950),
// "gzip" the gzip format (RFC 1952); each message is compressed on its own.
enum class CompressionAlgorithm : uint8_t {
  kIdentity = 0,
  kDeflate = 1,
  kGzip = 2
};

inline constexpr int kNumCompressionAlgorithms = 3;

// "identity", "deflate" or "gzip" (a static string).
absl::string_view CompressionAlgorithmName(CompressionAlgorithm algorithm);

// The algorithm named exactly (lower case, no whitespace) `name`, or nullopt.
absl::optional<CompressionAlgorithm> ParseCompressionAlgorithm(
    absl::string_view name);

// A set of algorithms in one byte; never allocates.
class CompressionAlgorithmSet {
 public:
  constexpr CompressionAlgorithmSet() = default;

  // identity, deflate and gzip.
  static constexpr CompressionAlgorithmSet All() {
    return CompressionAlgorithmSet((1u << kNumCompressionAlgorithms) - 1);
  }

  constexpr bool Contains(CompressionAlgorithm algorithm) const {
    return (bits_ & Bit(algorithm)) != 0;
  }
  constexpr void Add(CompressionAlgorithm algorithm) {
    bits_ = static_cast<uint8_t>(bits_ | Bit(algorithm));
  }
  constexpr void Remove(CompressionAlgorithm algorithm) {
    bits_ = static_cast<uint8_t>(bits_ & ~Bit(algorithm));
  }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr uint8_t bits() const { return bits_; }

  friend constexpr bool operator==(CompressionAlgorithmSet a,
                                   CompressionAlgorithmSet b) {
    return a.bits_ == b.bits_;
  }
  friend constexpr bool operator!=(CompressionAlgorithmSet a,
                                   CompressionAlgorithmSet b) {
    return a.bits_ != b.bits_;
  }

 private:
  explicit constexpr CompressionAlgorithmSet(unsigned bits)
      : bits_(static_cast<uint8_t>(bits)) {}
  static constexpr uint8_t Bit(CompressionAlgorithm algorithm) {
    return static_cast<uint8_t>(1u << static_cast<unsigned>(algorithm));
  }

  uint8_t bits_ = 0;
};

// Parses a `grpc-accept-encoding` value: names separated by commas, with
// optional spaces and tabs around each. Names are matched exactly (lower
// case); unknown names, empty elements and elements with parameters
// ("gzip;q=1") are ignored. Never allocates.
CompressionAlgorithmSet ParseAcceptEncoding(absl::string_view value);

// Longest formatted set: "identity,deflate,gzip".
inline constexpr size_t kMaxFormattedAlgorithmSetSize = 21;

// Formats `set` as a `grpc-accept-encoding` value, in enum order
// ("identity,deflate,gzip"; empty set: ""). Writes into `buffer` only if the
// result fits in `buffer_size` bytes (no NUL is written) and returns the
// length of the result either way, like snprintf.
size_t FormatCompressionAlgorithmSet(CompressionAlgorithmSet set, char* buffer,
                                     size_t buffer_size);
std::string FormatCompressionAlgorithmSet(CompressionAlgorithmSet set);

}  // namespace h2rpc

#endif  // H2RPC_BASE_COMPRESSION_ALGORITHM_H_
