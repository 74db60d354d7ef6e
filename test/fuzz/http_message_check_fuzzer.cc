// Fuzzes HttpMessageCheck against nghttp2's own HTTP messaging checks: the
// input describes one message a stream receives, which both judge; a
// different verdict, or different fields kept from a valid message, aborts.
//
// Input: byte 0's low bit is the role (0: a request to a server, 1: a
// response to a client); then items, each a tag byte:
//   0, name length, name, value length, value   one field of the block
//   1, DATA bytes, end                          ends the block, then that
//                                               much DATA (0: none); END_STREAM
//                                               when `end` is odd (the last
//                                               item then)
// A block left open at the end of the input is ended with END_STREAM.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "transport/core/http_message_check.h"
#include "transport/core/testing/http_message_oracle.h"

namespace {

using h2rpc::transport::HttpMessageCheck;
using h2rpc::transport::testing::CheckVerdict;
using h2rpc::transport::testing::HttpMessage;
using h2rpc::transport::testing::Nghttp2Verdict;

// Reads one length-prefixed string; false at the end of the input.
bool ReadString(const uint8_t*& data, const uint8_t* end, std::string* out) {
  if (data == end) return false;
  const size_t length = *data++;
  if (static_cast<size_t>(end - data) < length) return false;
  out->assign(reinterpret_cast<const char*>(data), length);
  data += length;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t* const end = data + size;
  HttpMessage message;
  message.role = (*data++ & 1) == 0 ? HttpMessageCheck::Role::kRequest
                                    : HttpMessageCheck::Role::kResponse;
  HttpMessage::Block block;
  bool open = false;
  while (data != end && message.blocks.size() < 4) {
    const uint8_t tag = *data++;
    if (tag == 0) {
      std::string name, value;
      if (!ReadString(data, end, &name) || !ReadString(data, end, &value)) {
        break;
      }
      block.fields.emplace_back(std::move(name), std::move(value));
      open = true;
    } else if (tag == 1) {
      if (end - data < 2) break;
      block.data = data[0];
      block.end_stream = (data[1] & 1) != 0;
      data += 2;
      message.blocks.push_back(std::move(block));
      block = HttpMessage::Block();
      open = false;
      if (message.blocks.back().end_stream) break;
    } else {
      break;
    }
  }
  if (open && message.blocks.size() < 4) {
    block.end_stream = true;
    message.blocks.push_back(std::move(block));
  }
  if (!(CheckVerdict(message) == Nghttp2Verdict(message))) std::abort();
  return 0;
}
