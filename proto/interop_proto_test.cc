// Checks that proto/grpc/testing/messages.proto is wire-compatible with the
// upstream gRPC interop protos: every message is compared against bytes worked
// out by hand from the published field numbers and types, so a wrong number,
// wire type or package shows up here rather than as a confused interop peer.

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>

#include "proto/grpc/testing/messages.pb.h"

namespace h2rpc {
namespace {

using ::grpc::testing::BoolValue;
using ::grpc::testing::EchoStatus;
using ::grpc::testing::GRPCLB_ROUTE_TYPE_BACKEND;
using ::grpc::testing::Payload;
using ::grpc::testing::ReconnectInfo;
using ::grpc::testing::ReconnectParams;
using ::grpc::testing::ResponseParameters;
using ::grpc::testing::SimpleRequest;
using ::grpc::testing::SimpleResponse;
using ::grpc::testing::StreamingInputCallRequest;
using ::grpc::testing::StreamingInputCallResponse;
using ::grpc::testing::StreamingOutputCallRequest;
using ::grpc::testing::StreamingOutputCallResponse;

std::string Bytes(std::initializer_list<uint8_t> b) {
  return std::string(b.begin(), b.end());
}

// Renders bytes as hex so a mismatch is readable in the failure message.
std::string Hex(const std::string& s) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += kDigits[c >> 4];
    out += kDigits[c & 0xf];
    out += ' ';
  }
  return out;
}

TEST(InteropProtoTest, PackageAndNames) {
  EXPECT_EQ(SimpleRequest::descriptor()->full_name(),
            "grpc.testing.SimpleRequest");
  EXPECT_EQ(StreamingOutputCallRequest::descriptor()->full_name(),
            "grpc.testing.StreamingOutputCallRequest");
  EXPECT_EQ(ReconnectInfo::descriptor()->full_name(),
            "grpc.testing.ReconnectInfo");
}

// The interop "large_unary" request: response_size 314159 and a 271828-byte
// zero payload. Lengths and varints span several bytes.
TEST(InteropProtoTest, LargeUnarySimpleRequestBytes) {
  constexpr int kBody = 271828;
  SimpleRequest req;
  req.set_response_size(314159);
  req.mutable_payload()->set_body(std::string(kBody, '\0'));

  // 0x10 = field 2 varint; 314159 = af 96 13.
  // 0x1a = field 3 length-delimited; 271832 = d8 cb 10 (1 + 3 + kBody).
  // 0x12 = Payload field 2 (body); 271828 = d4 cb 10. type=0 is omitted.
  std::string want = Bytes({0x10, 0xaf, 0x96, 0x13, 0x1a, 0xd8, 0xcb, 0x10,
                            0x12, 0xd4, 0xcb, 0x10}) +
                     std::string(kBody, '\0');
  std::string got = req.SerializeAsString();
  ASSERT_EQ(got.size(), 271840u);
  EXPECT_EQ(Hex(got.substr(0, 12)), Hex(want.substr(0, 12)));
  EXPECT_EQ(got, want);

  SimpleRequest back;
  ASSERT_TRUE(back.ParseFromString(want));
  EXPECT_EQ(back.response_size(), 314159);
  EXPECT_EQ(back.payload().body().size(), static_cast<size_t>(kBody));
}

TEST(InteropProtoTest, SmallSimpleRequestBytes) {
  SimpleRequest req;
  req.set_response_size(1);
  req.mutable_payload()->set_body("abc");
  EXPECT_EQ(Hex(req.SerializeAsString()),
            Hex(Bytes({0x10, 0x01, 0x1a, 0x05, 0x12, 0x03, 'a', 'b', 'c'})));
}

// Every SimpleRequest field set once, in field-number order.
TEST(InteropProtoTest, SimpleRequestAllFieldsBytes) {
  SimpleRequest req;
  req.set_response_size(2);
  req.mutable_payload()->set_body("p");
  req.set_fill_username(true);
  req.set_fill_oauth_scope(true);
  req.mutable_response_compressed()->set_value(true);
  req.mutable_response_status()->set_code(2);
  req.mutable_response_status()->set_message("x");
  req.mutable_expect_compressed()->set_value(true);
  req.set_fill_server_id(true);
  req.set_fill_grpclb_route_type(true);
  req.mutable_orca_per_query_report()->set_cpu_utilization(0.5);
  (*req.mutable_orca_per_query_report()->mutable_request_cost())["q"] = 0.5;

  const std::string want = Bytes({
      0x10, 0x02,                               // 2 response_size
      0x1a, 0x03, 0x12, 0x01, 'p',              // 3 payload{body}
      0x20, 0x01,                               // 4 fill_username
      0x28, 0x01,                               // 5 fill_oauth_scope
      0x32, 0x02, 0x08, 0x01,                   // 6 response_compressed
      0x3a, 0x05, 0x08, 0x02, 0x12, 0x01, 'x',  // 7 response_status
      0x42, 0x02, 0x08, 0x01,                   // 8 expect_compressed
      0x48, 0x01,                               // 9 fill_server_id
      0x50, 0x01,                               // 10 fill_grpclb_route_type
      0x5a, 0x17,                               // 11 orca_per_query_report
      0x09, 0,    0,    0,    0,    0,    0,
      0xe0, 0x3f,       //   1 cpu_utilization 0.5
      0x1a, 0x0c,       //   3 request_cost entry
      0x0a, 0x01, 'q',  //     key
      0x11, 0,    0,    0,    0,    0,    0,
      0xe0, 0x3f,  //     value 0.5
  });
  EXPECT_EQ(Hex(req.SerializeAsString()), Hex(want));

  SimpleRequest back;
  ASSERT_TRUE(back.ParseFromString(want));
  EXPECT_TRUE(back.fill_username());
  EXPECT_TRUE(back.fill_oauth_scope());
  EXPECT_TRUE(back.response_compressed().value());
  EXPECT_EQ(back.response_status().code(), 2);
  EXPECT_TRUE(back.expect_compressed().value());
  EXPECT_TRUE(back.fill_server_id());
  EXPECT_TRUE(back.fill_grpclb_route_type());
  EXPECT_EQ(back.orca_per_query_report().request_cost().at("q"), 0.5);
}

TEST(InteropProtoTest, SimpleResponseBytes) {
  SimpleResponse resp;
  resp.mutable_payload()->set_body("b");
  resp.set_username("u");
  resp.set_oauth_scope("o");
  resp.set_server_id("s");
  resp.set_grpclb_route_type(GRPCLB_ROUTE_TYPE_BACKEND);
  resp.set_hostname("h");
  EXPECT_EQ(Hex(resp.SerializeAsString()),
            Hex(Bytes({
                0x0a, 0x03, 0x12, 0x01, 'b',  // 1 payload{body}
                0x12, 0x01, 'u',              // 2 username
                0x1a, 0x01, 'o',              // 3 oauth_scope
                0x22, 0x01, 's',              // 4 server_id
                0x28, 0x02,                   // 5 grpclb_route_type BACKEND
                0x32, 0x01, 'h',              // 6 hostname
            })));
}

TEST(InteropProtoTest, EchoStatusRoundTrip) {
  EchoStatus status;
  status.set_code(2);
  status.set_message("test status message");
  const std::string wire = status.SerializeAsString();
  EXPECT_EQ(Hex(wire.substr(0, 4)), Hex(Bytes({0x08, 0x02, 0x12, 19})));
  EXPECT_EQ(wire.substr(4), "test status message");

  EchoStatus back;
  ASSERT_TRUE(back.ParseFromString(wire));
  EXPECT_EQ(back.code(), 2);
  EXPECT_EQ(back.message(), "test status message");
}

TEST(InteropProtoTest, ResponseParametersRoundTrip) {
  ResponseParameters params;
  params.set_size(31415);
  params.set_interval_us(1000);
  params.mutable_compressed()->set_value(true);
  const std::string want = Bytes({
      0x08, 0xb7, 0xf5, 0x01,  // 1 size 31415
      0x10, 0xe8, 0x07,        // 2 interval_us 1000
      0x1a, 0x02, 0x08, 0x01,  // 3 compressed{true}
  });
  EXPECT_EQ(Hex(params.SerializeAsString()), Hex(want));

  ResponseParameters back;
  ASSERT_TRUE(back.ParseFromString(want));
  EXPECT_EQ(back.size(), 31415);
  EXPECT_EQ(back.interval_us(), 1000);
  ASSERT_TRUE(back.has_compressed());
  EXPECT_TRUE(back.compressed().value());
}

TEST(InteropProtoTest, StreamingOutputCallRequestBytes) {
  StreamingOutputCallRequest req;
  req.add_response_parameters()->set_size(1);
  req.add_response_parameters()->set_size(2);
  req.mutable_payload()->set_body("z");
  req.mutable_response_status()->set_code(13);
  req.mutable_orca_oob_report()->set_memory_utilization(0.5);
  EXPECT_EQ(
      Hex(req.SerializeAsString()),
      Hex(Bytes({
          0x12, 0x02, 0x08, 0x01,       // 2 response_parameters
          0x12, 0x02, 0x08, 0x02,       // 2 response_parameters
          0x1a, 0x03, 0x12, 0x01, 'z',  // 3 payload{body}
          0x3a, 0x02, 0x08, 0x0d,       // 7 response_status{code 13}
          0x42, 0x09,                   // 8 orca_oob_report
          0x11, 0,    0,    0,    0,   0, 0, 0xe0, 0x3f,  // 2 memory_util 0.5
      })));

  StreamingOutputCallResponse resp;
  resp.mutable_payload()->set_body("r");
  EXPECT_EQ(Hex(resp.SerializeAsString()),
            Hex(Bytes({0x0a, 0x03, 0x12, 0x01, 'r'})));
}

TEST(InteropProtoTest, StreamingInputCallBytes) {
  StreamingInputCallRequest req;
  req.mutable_payload()->set_body("i");
  req.mutable_expect_compressed()->set_value(true);
  EXPECT_EQ(Hex(req.SerializeAsString()),
            Hex(Bytes({0x0a, 0x03, 0x12, 0x01, 'i',  // 1 payload
                       0x12, 0x02, 0x08, 0x01})));   // 2 expect_compressed

  // The interop client_streaming total: 27182 + 8 + 1828 + 45904 = 74922.
  StreamingInputCallResponse resp;
  resp.set_aggregated_payload_size(74922);
  EXPECT_EQ(Hex(resp.SerializeAsString()),
            Hex(Bytes({0x08, 0xaa, 0xc9, 0x04})));
}

TEST(InteropProtoTest, ReconnectMessagesBytes) {
  ReconnectParams params;
  params.set_max_reconnect_backoff_ms(1000);
  EXPECT_EQ(Hex(params.SerializeAsString()), Hex(Bytes({0x08, 0xe8, 0x07})));

  ReconnectInfo info;
  info.set_passed(true);
  info.add_backoff_ms(1);
  info.add_backoff_ms(2);
  info.add_backoff_ms(300);
  // proto3 packs repeated int32: field 2, length 4, varints 01 02 ac02.
  const std::string want =
      Bytes({0x08, 0x01, 0x12, 0x04, 0x01, 0x02, 0xac, 0x02});
  EXPECT_EQ(Hex(info.SerializeAsString()), Hex(want));

  // Unpacked encoding (field 2 as separate varints) must parse too.
  ReconnectInfo back;
  ASSERT_TRUE(back.ParseFromString(
      Bytes({0x08, 0x01, 0x10, 0x01, 0x10, 0x02, 0x10, 0xac, 0x02})));
  EXPECT_TRUE(back.passed());
  ASSERT_EQ(back.backoff_ms_size(), 3);
  EXPECT_EQ(back.backoff_ms(2), 300);
}

TEST(InteropProtoTest, BoolValueAndPayloadType) {
  BoolValue v;
  v.set_value(true);
  EXPECT_EQ(Hex(v.SerializeAsString()), Hex(Bytes({0x08, 0x01})));
  Payload p;
  p.set_type(::grpc::testing::COMPRESSABLE);
  EXPECT_EQ(p.ByteSizeLong(), 0u);  // enum value 0 is the proto3 default
}

}  // namespace
}  // namespace h2rpc
