#include "transport/compression/message_codec.h"

#include "absl/strings/str_cat.h"

namespace h2rpc::transport::compression {

Status DecompressedSizeExceeded(size_t max_output) {
  return Status(StatusCode::kResourceExhausted,
                absl::StrCat("decompressed message exceeds the limit of ",
                             max_output, " bytes (max_receive_message_size)"));
}

}  // namespace h2rpc::transport::compression
