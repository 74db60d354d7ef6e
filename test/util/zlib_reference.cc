#include "test/util/zlib_reference.h"

#include <zlib.h>

#include "gtest/gtest.h"

namespace h2rpc::testing {
namespace {

int WindowBits(bool gzip) { return gzip ? 16 + MAX_WBITS : MAX_WBITS; }

Bytef* Bytes(const char* data) {
  return reinterpret_cast<Bytef*>(const_cast<char*>(data));
}

// Feeds `next` (which returns the next input piece, empty at the end) to one
// deflate stream.
template <class Next>
std::string Deflate(bool gzip, Next next) {
  z_stream strm{};
  EXPECT_EQ(deflateInit2(&strm, Z_BEST_COMPRESSION, Z_DEFLATED,
                         WindowBits(gzip), 8, Z_DEFAULT_STRATEGY),
            Z_OK);
  std::string out;
  char buffer[64 * 1024];
  int flush = Z_NO_FLUSH;
  while (flush != Z_FINISH) {
    const absl::string_view piece = next();
    flush = piece.empty() ? Z_FINISH : Z_NO_FLUSH;
    strm.next_in = Bytes(piece.data());
    strm.avail_in = static_cast<uInt>(piece.size());
    do {
      strm.next_out = reinterpret_cast<Bytef*>(buffer);
      strm.avail_out = sizeof(buffer);
      const int result = deflate(&strm, flush);
      EXPECT_NE(result, Z_STREAM_ERROR);
      out.append(buffer, sizeof(buffer) - strm.avail_out);
    } while (strm.avail_out == 0);
  }
  deflateEnd(&strm);
  return out;
}

}  // namespace

std::string ZlibCompress(absl::string_view data, bool gzip) {
  constexpr size_t kPiece = 1 << 20;
  return Deflate(gzip, [&data] {
    const absl::string_view piece = data.substr(0, kPiece);
    data.remove_prefix(piece.size());
    return piece;
  });
}

std::string ZlibCompressZeros(uint64_t size, bool gzip) {
  const std::string zeros(1 << 20, '\0');
  return Deflate(gzip, [&] {
    const size_t n = size < zeros.size() ? size : zeros.size();
    size -= n;
    return absl::string_view(zeros.data(), n);
  });
}

std::string ZlibInflate(absl::string_view data, bool gzip, size_t max_size) {
  z_stream strm{};
  EXPECT_EQ(inflateInit2(&strm, WindowBits(gzip)), Z_OK);
  std::string out(max_size + 1, '\0');
  strm.next_in = Bytes(data.data());
  strm.avail_in = static_cast<uInt>(data.size());
  strm.next_out = reinterpret_cast<Bytef*>(out.data());
  strm.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&strm, Z_FINISH), Z_STREAM_END);
  EXPECT_EQ(strm.avail_in, 0u);
  out.resize(strm.total_out);
  inflateEnd(&strm);
  return out;
}

}  // namespace h2rpc::testing
