#ifndef H2RPC_RPC_INTERNAL_COMMON_PROTOBUF_CONNECT_CODEC_H_
#define H2RPC_RPC_INTERNAL_COMMON_PROTOBUF_CONNECT_CODEC_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "base/status.h"
#include "transport/core/connect_protocol.h"

namespace google::protobuf {
class Descriptor;
namespace util {
class TypeResolver;
}  // namespace util
}  // namespace google::protobuf

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

  // The client's side of a JSON call: the request message of `method` from
  // binary into JSON (INTERNAL for bytes that are not a request of the
  // method), and the response from JSON into binary (INTERNAL for JSON
  // that is not a response of the method); UNIMPLEMENTED when the
  // method's types are unknown.
  Status RequestToJson(absl::string_view method, absl::string_view binary,
                       std::string* json) const;
  Status ResponseFromJson(absl::string_view method, absl::string_view json,
                          std::string* binary) const;

 private:
  // `binary`, a message of `type`, into JSON; `what` names it in errors.
  Status ToJson(const google::protobuf::Descriptor* type, const char* what,
                absl::string_view binary, std::string* json) const;
  // JSON of a message of `type` into binary, unknown fields ignored; a
  // failure is `code`.
  Status FromJson(const google::protobuf::Descriptor* type, const char* what,
                  StatusCode code, absl::string_view json,
                  std::string* binary) const;

  const std::unique_ptr<google::protobuf::util::TypeResolver> resolver_;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_COMMON_PROTOBUF_CONNECT_CODEC_H_
