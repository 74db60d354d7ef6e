#include "base/compression_algorithm.h"

#include <cstring>

namespace h2rpc {
namespace {

constexpr CompressionAlgorithm kAllAlgorithms[] = {
    CompressionAlgorithm::kIdentity,
    CompressionAlgorithm::kDeflate,
    CompressionAlgorithm::kGzip,
};

bool IsOptionalWhitespace(char c) { return c == ' ' || c == '\t'; }

absl::string_view TrimOptionalWhitespace(absl::string_view s) {
  while (!s.empty() && IsOptionalWhitespace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsOptionalWhitespace(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

absl::string_view CompressionAlgorithmName(CompressionAlgorithm algorithm) {
  switch (algorithm) {
    case CompressionAlgorithm::kIdentity:
      return "identity";
    case CompressionAlgorithm::kDeflate:
      return "deflate";
    case CompressionAlgorithm::kGzip:
      return "gzip";
  }
  return "unknown";
}

absl::optional<CompressionAlgorithm> ParseCompressionAlgorithm(
    absl::string_view name) {
  for (CompressionAlgorithm algorithm : kAllAlgorithms) {
    if (name == CompressionAlgorithmName(algorithm)) return algorithm;
  }
  return absl::nullopt;
}

CompressionAlgorithmSet ParseAcceptEncoding(absl::string_view value) {
  CompressionAlgorithmSet set;
  while (true) {
    const size_t comma = value.find(',');
    const absl::string_view element = TrimOptionalWhitespace(
        comma == absl::string_view::npos ? value : value.substr(0, comma));
    if (absl::optional<CompressionAlgorithm> algorithm =
            ParseCompressionAlgorithm(element)) {
      set.Add(*algorithm);
    }
    if (comma == absl::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return set;
}

size_t FormatCompressionAlgorithmSet(CompressionAlgorithmSet set, char* buffer,
                                     size_t buffer_size) {
  char scratch[kMaxFormattedAlgorithmSetSize];
  size_t length = 0;
  for (CompressionAlgorithm algorithm : kAllAlgorithms) {
    if (!set.Contains(algorithm)) continue;
    if (length != 0) scratch[length++] = ',';
    const absl::string_view name = CompressionAlgorithmName(algorithm);
    std::memcpy(scratch + length, name.data(), name.size());
    length += name.size();
  }
  if (length <= buffer_size && length != 0) {
    std::memcpy(buffer, scratch, length);
  }
  return length;
}

std::string FormatCompressionAlgorithmSet(CompressionAlgorithmSet set) {
  char buffer[kMaxFormattedAlgorithmSetSize];
  const size_t length =
      FormatCompressionAlgorithmSet(set, buffer, sizeof(buffer));
  return std::string(buffer, length);
}

}  // namespace h2rpc
