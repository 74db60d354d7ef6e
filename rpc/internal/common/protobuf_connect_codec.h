#ifndef H2RPC_RPC_INTERNAL_COMMON_PROTOBUF_CONNECT_CODEC_H_
#define H2RPC_RPC_INTERNAL_COMMON_PROTOBUF_CONNECT_CODEC_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "base/status.h"
#include "transport/core/connect_protocol.h"

namespace google::protobuf::util {
class TypeResolver;
}  // namespace google::protobuf::util

namespace h2rpc::internal {

// Protobuf's own JSON mapping (google::protobuf::util) for the methods of
// the services compiled into the program (the generated descriptor pool):
// what a Connect JSON request and response carry. Unknown JSON fields are
// ignored, as Connect servers do; fields with default values are left out
// of responses, names are lowerCamelCase. Error details are read as
// google.rpc.Status's wire form (field 3: repeated google.protobuf.Any).
// Thread-safe; each conversion allocates.
class ProtobufConnectCodec final : public transport::ConnectCodec {
 public:
  ProtobufConnectCodec();
  ~ProtobufConnectCodec() override;

  Status RequestFromJson(absl::string_view method, absl::string_view json,
                         std::string* binary) const override;
  Status ResponseToJson(absl::string_view method, absl::string_view binary,
                        std::string* json) const override;
  void ReadErrorDetails(
      absl::string_view status_details,
      std::vector<transport::ConnectErrorDetail>* out) const override;
  bool HasNoSideEffects(absl::string_view method) const override;

 private:
  const std::unique_ptr<google::protobuf::util::TypeResolver> resolver_;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_COMMON_PROTOBUF_CONNECT_CODEC_H_
