#include "test/util/google_rpc_status.h"

#include <google/protobuf/any.pb.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cstdint>

namespace h2rpc::testing {

std::string EncodeGoogleRpcStatus(
    int code, const std::vector<std::pair<std::string, std::string>>& details) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.WriteTag(1 << 3);  // code: field 1, varint
    coded.WriteVarint32(static_cast<uint32_t>(code));
    for (const auto& [type_url, value] : details) {
      google::protobuf::Any any;
      any.set_type_url(type_url);
      any.set_value(value);
      const std::string bytes = any.SerializeAsString();
      coded.WriteTag((3 << 3) | 2);  // details: field 3, length-delimited
      coded.WriteVarint32(static_cast<uint32_t>(bytes.size()));
      coded.WriteString(bytes);
    }
  }
  return out;
}

}  // namespace h2rpc::testing
