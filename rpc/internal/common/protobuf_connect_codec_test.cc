#include "rpc/internal/common/protobuf_connect_codec.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "proto/grpc/testing/test.pb.h"
#include "test/util/google_rpc_status.h"

namespace h2rpc::internal {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::testing::HasSubstr;

constexpr char kUnaryCall[] = "/grpc.testing.TestService/UnaryCall";

TEST(ProtobufConnectCodecTest, RequestsFromJsonWithTheMethodsInputType) {
  ProtobufConnectCodec codec;
  std::string binary;
  ASSERT_TRUE(codec
                  .RequestFromJson(kUnaryCall,
                                   R"({"responseSize": 3, "payload":
                                       {"body": "aGk="}, "unknownField": 1})",
                                   &binary)
                  .ok());
  SimpleRequest request;
  ASSERT_TRUE(request.ParseFromString(binary));
  EXPECT_EQ(request.response_size(), 3);
  EXPECT_EQ(request.payload().body(), "hi");
  // protobuf's field names too.
  ASSERT_TRUE(
      codec.RequestFromJson(kUnaryCall, R"({"response_size": 4})", &binary)
          .ok());
  ASSERT_TRUE(request.ParseFromString(binary));
  EXPECT_EQ(request.response_size(), 4);
}

TEST(ProtobufConnectCodecTest, ResponsesToJsonWithTheMethodsOutputType) {
  ProtobufConnectCodec codec;
  SimpleResponse response;
  response.mutable_payload()->set_body("hi");
  response.set_username("me");
  std::string json;
  ASSERT_TRUE(
      codec.ResponseToJson(kUnaryCall, response.SerializeAsString(), &json)
          .ok());
  EXPECT_EQ(json, R"({"payload":{"body":"aGk="},"username":"me"})");
}

TEST(ProtobufConnectCodecTest, BadJsonIsAnInvalidArgument) {
  ProtobufConnectCodec codec;
  std::string binary;
  for (const char* bad :
       {"{", R"({"responseSize": "many"})", "[1]", R"({"payload": 7})"}) {
    const Status status = codec.RequestFromJson(kUnaryCall, bad, &binary);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(status.message(), HasSubstr("grpc.testing.SimpleRequest"))
        << bad;
  }
}

TEST(ProtobufConnectCodecTest, MethodsWithoutDescriptorsAreUnimplemented) {
  ProtobufConnectCodec codec;
  std::string out;
  for (const char* method : {"/grpc.testing.TestService/Nope",
                             "/no.Such/Method", "nope", "/x", ""}) {
    EXPECT_EQ(codec.RequestFromJson(method, "{}", &out).code(),
              StatusCode::kUnimplemented)
        << method;
    EXPECT_EQ(codec.ResponseToJson(method, "", &out).code(),
              StatusCode::kUnimplemented)
        << method;
  }
}

TEST(ProtobufConnectCodecTest, ErrorDetailsAreTheStatusAnys) {
  ProtobufConnectCodec codec;
  std::vector<transport::ConnectErrorDetail> details;
  codec.ReadErrorDetails(
      ::h2rpc::testing::EncodeGoogleRpcStatus(
          10, {{"type.googleapis.com/google.rpc.ErrorInfo", "ab"},
               {"google.protobuf.StringValue", "\x0a\x01x"}}),
      &details);
  ASSERT_EQ(details.size(), 2u);
  EXPECT_EQ(details[0].type, "google.rpc.ErrorInfo");
  EXPECT_EQ(details[0].value, "ab");
  EXPECT_EQ(details[1].type, "google.protobuf.StringValue");
  EXPECT_EQ(details[1].value, "\x0a\x01x");

  // Bytes that are not a google.rpc.Status give none.
  details.clear();
  codec.ReadErrorDetails("\xff\xff\xff", &details);
  EXPECT_TRUE(details.empty());
}

TEST(ProtobufConnectCodecTest, OnlyMethodsMarkedNoSideEffectsHaveNone) {
  ProtobufConnectCodec codec;
  EXPECT_TRUE(
      codec.HasNoSideEffects("/grpc.testing.TestService/CacheableUnaryCall"));
  EXPECT_FALSE(codec.HasNoSideEffects(kUnaryCall));
  EXPECT_FALSE(codec.HasNoSideEffects("/no.Such/Method"));
}

}  // namespace
}  // namespace h2rpc::internal
