#include "rpc/internal/common/protobuf_json_codec.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "proto/grpc/testing/test.pb.h"

namespace h2rpc::internal {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::testing::HasSubstr;

constexpr char kUnaryCall[] = "/grpc.testing.TestService/UnaryCall";

TEST(ProtobufJsonCodecTest, RequestsFromJsonWithTheMethodsInputType) {
  ProtobufJsonCodec codec;
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

TEST(ProtobufJsonCodecTest, ResponsesToJsonWithTheMethodsOutputType) {
  ProtobufJsonCodec codec;
  SimpleResponse response;
  response.mutable_payload()->set_body("hi");
  response.set_username("me");
  std::string json;
  ASSERT_TRUE(
      codec.ResponseToJson(kUnaryCall, response.SerializeAsString(), &json)
          .ok());
  EXPECT_EQ(json, R"({"payload":{"body":"aGk="},"username":"me"})");
}

TEST(ProtobufJsonCodecTest, BadJsonIsAnInvalidArgument) {
  ProtobufJsonCodec codec;
  std::string binary;
  for (const char* bad :
       {"{", R"({"responseSize": "many"})", "[1]", R"({"payload": 7})"}) {
    const Status status = codec.RequestFromJson(kUnaryCall, bad, &binary);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(status.message(), HasSubstr("grpc.testing.SimpleRequest"))
        << bad;
  }
}

TEST(ProtobufJsonCodecTest, MethodsWithoutDescriptorsAreUnimplemented) {
  ProtobufJsonCodec codec;
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

}  // namespace
}  // namespace h2rpc::internal
