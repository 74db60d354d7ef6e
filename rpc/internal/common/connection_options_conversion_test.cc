#include "rpc/internal/common/connection_options_conversion.h"

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "rpc/compression.h"
#include "rpc/connection_options.h"
#include "rpc/server_options.h"
#include "transport/http2/session.h"

namespace h2rpc::internal {
namespace {

using TransportOptions = transport::http2::ConnectionOptions;

// The same fields of the same types in the same order, then the transport's
// keepalive settings (set from ChannelOptions or ServerOptions) and its
// web protocols (from ServerOptions::web): a field added to one struct and
// not the other changes its size (unless it fits in padding, which none
// has today).
static_assert(sizeof(ConnectionOptions) +
                      sizeof(transport::http2::KeepaliveOptions) +
                      sizeof(transport::http2::WebOptions) ==
                  sizeof(TransportOptions),
              "h2rpc::ConnectionOptions and transport::http2::"
              "ConnectionOptions have drifted apart");

using TransportKeepalive = transport::http2::KeepaliveOptions;

void ExpectSameKeepalive(const TransportKeepalive& got,
                         const TransportKeepalive& want) {
  EXPECT_EQ(got.time, want.time);
  EXPECT_EQ(got.timeout, want.timeout);
  EXPECT_EQ(got.permit_without_calls, want.permit_without_calls);
  EXPECT_EQ(got.min_time, want.min_time);
  EXPECT_EQ(got.permit_pings_without_calls, want.permit_pings_without_calls);
  EXPECT_EQ(got.max_ping_strikes, want.max_ping_strikes);
  EXPECT_EQ(got.max_connection_age, want.max_connection_age);
  EXPECT_EQ(got.max_connection_age_grace, want.max_connection_age_grace);
  EXPECT_EQ(got.max_connection_idle, want.max_connection_idle);
}

void ExpectSame(const TransportOptions& got, const TransportOptions& want) {
  EXPECT_EQ(got.max_concurrent_streams, want.max_concurrent_streams);
  EXPECT_EQ(got.initial_stream_window, want.initial_stream_window);
  EXPECT_EQ(got.connection_window, want.connection_window);
  EXPECT_EQ(got.bdp_probe, want.bdp_probe);
  EXPECT_EQ(got.max_receive_window, want.max_receive_window);
  EXPECT_EQ(got.max_frame_size, want.max_frame_size);
  EXPECT_EQ(got.max_header_list_size, want.max_header_list_size);
  EXPECT_EQ(got.max_receive_message_size, want.max_receive_message_size);
  EXPECT_EQ(got.memory_quota_share, want.memory_quota_share);
  EXPECT_EQ(got.max_send_message_size, want.max_send_message_size);
  EXPECT_EQ(got.write_buffer_limit, want.write_buffer_limit);
  EXPECT_EQ(got.accepted_compression, want.accepted_compression);
  EXPECT_EQ(got.handshake_timeout, want.handshake_timeout);
  EXPECT_EQ(got.close_linger, want.close_linger);
}

TEST(ConnectionOptionsConversionTest, DefaultsAreTheTransportDefaults) {
  ExpectSame(ToTransportOptions(ConnectionOptions()), TransportOptions());
}

TEST(ConnectionOptionsConversionTest, EveryFieldCarriesOver) {
  ConnectionOptions options;
  options.max_concurrent_streams = 7;
  options.initial_stream_window = 70001;
  options.connection_window = 70002;
  options.bdp_probe = false;
  options.max_receive_window = 70003;
  options.max_frame_size = 20000;
  options.max_header_list_size = 9000;
  options.max_receive_message_size = 12345;
  options.memory_quota_share = 23456;
  options.max_send_message_size = 34567;
  options.write_buffer_limit = 45678;
  CompressionAlgorithmSet gzip_only;
  gzip_only.Add(CompressionAlgorithm::kGzip);
  options.accepted_compression = gzip_only;
  options.handshake_timeout = absl::Milliseconds(11);
  options.close_linger = absl::Milliseconds(13);

  TransportOptions want;
  want.max_concurrent_streams = 7;
  want.initial_stream_window = 70001;
  want.connection_window = 70002;
  want.bdp_probe = false;
  want.max_receive_window = 70003;
  want.max_frame_size = 20000;
  want.max_header_list_size = 9000;
  want.max_receive_message_size = 12345;
  want.memory_quota_share = 23456;
  want.max_send_message_size = 34567;
  want.write_buffer_limit = 45678;
  want.accepted_compression = gzip_only;
  want.handshake_timeout = absl::Milliseconds(11);
  want.close_linger = absl::Milliseconds(13);
  // Every value differs from its default, so a field left out would show.
  const TransportOptions defaults;
  EXPECT_NE(want.max_concurrent_streams, defaults.max_concurrent_streams);
  EXPECT_NE(want.initial_stream_window, defaults.initial_stream_window);
  EXPECT_NE(want.connection_window, defaults.connection_window);
  EXPECT_NE(want.bdp_probe, defaults.bdp_probe);
  EXPECT_NE(want.max_receive_window, defaults.max_receive_window);
  EXPECT_NE(want.max_frame_size, defaults.max_frame_size);
  EXPECT_NE(want.max_header_list_size, defaults.max_header_list_size);
  EXPECT_NE(want.max_receive_message_size, defaults.max_receive_message_size);
  EXPECT_NE(want.memory_quota_share, defaults.memory_quota_share);
  EXPECT_NE(want.max_send_message_size, defaults.max_send_message_size);
  EXPECT_NE(want.write_buffer_limit, defaults.write_buffer_limit);
  EXPECT_NE(want.accepted_compression, defaults.accepted_compression);
  EXPECT_NE(want.handshake_timeout, defaults.handshake_timeout);
  EXPECT_NE(want.close_linger, defaults.close_linger);

  ExpectSame(ToTransportOptions(options), want);
}

TEST(ConnectionOptionsConversionTest, KeepaliveStaysOffOutsideServers) {
  ExpectSameKeepalive(ToTransportOptions(ConnectionOptions()).keepalive,
                      TransportKeepalive());
}

TEST(ConnectionOptionsConversionTest, ServerDefaultsAreGrpcs) {
  const TransportOptions got = ToServerTransportOptions(ServerOptions());
  ExpectSame(got, TransportOptions());
  TransportKeepalive want;
  want.time = absl::Hours(2);
  want.timeout = absl::Seconds(20);
  want.permit_without_calls = false;
  want.min_time = absl::Minutes(5);
  want.permit_pings_without_calls = false;
  want.max_ping_strikes = 2;
  want.max_connection_age = absl::InfiniteDuration();
  want.max_connection_age_grace = absl::InfiniteDuration();
  want.max_connection_idle = absl::InfiniteDuration();
  ExpectSameKeepalive(got.keepalive, want);
  EXPECT_FALSE(got.web.grpc_web);
  EXPECT_FALSE(got.web.connect);
  EXPECT_EQ(got.web.connect_codec, nullptr);
  EXPECT_EQ(got.web.cors, nullptr);
}

TEST(ConnectionOptionsConversionTest, EveryServerFieldCarriesOver) {
  ServerOptions options;
  options.connection.max_concurrent_streams = 7;
  options.keepalive_time = absl::Seconds(1);
  options.keepalive_timeout = absl::Seconds(2);
  options.keepalive_permit_without_calls = true;
  options.keepalive_min_time = absl::Seconds(3);
  options.max_ping_strikes = 4;
  options.max_connection_idle = absl::Seconds(5);
  options.max_connection_age = absl::Seconds(6);
  options.max_connection_age_grace = absl::Seconds(7);
  options.web.grpc_web = true;
  options.web.connect = true;
  options.web.cors_allowed_origins = {"https://a.test"};
  options.web.http1_idle_timeout = absl::Seconds(8);
  options.web.http1_header_timeout = absl::Seconds(9);
  options.web.http1_max_requests_per_connection = 10;
  options.web.http1_max_target_bytes = 11;
  options.web.http1_max_buffered_input_bytes = 12;
  options.connection.max_header_list_size = 13;
  const TransportOptions got = ToServerTransportOptions(options);
  EXPECT_EQ(got.web.http1.idle_timeout, absl::Seconds(8));
  EXPECT_EQ(got.web.http1.header_timeout, absl::Seconds(9));
  EXPECT_EQ(got.web.http1.max_requests_per_connection, 10u);
  EXPECT_EQ(got.web.http1.max_target_bytes, 11u);
  EXPECT_EQ(got.web.http1.max_buffered_input, 12u);
  EXPECT_EQ(got.web.http1.max_header_bytes, 13u);
  EXPECT_TRUE(got.web.grpc_web);
  EXPECT_TRUE(got.web.connect);
  ASSERT_NE(got.web.connect_codec, nullptr);
  EXPECT_TRUE(got.web.connect_codec->HasNoSideEffects(
      "/grpc.testing.TestService/CacheableUnaryCall"));
  ASSERT_NE(got.web.cors, nullptr);
  EXPECT_TRUE(got.web.cors->Allows("https://a.test"));
  EXPECT_FALSE(got.web.cors->Allows("https://b.test"));
  EXPECT_EQ(got.max_concurrent_streams, 7u);
  TransportKeepalive want;
  want.time = absl::Seconds(1);
  want.timeout = absl::Seconds(2);
  want.permit_without_calls = true;
  want.min_time = absl::Seconds(3);
  want.permit_pings_without_calls = true;
  want.max_ping_strikes = 4;
  want.max_connection_idle = absl::Seconds(5);
  want.max_connection_age = absl::Seconds(6);
  want.max_connection_age_grace = absl::Seconds(7);
  ExpectSameKeepalive(got.keepalive, want);
}

}  // namespace
}  // namespace h2rpc::internal
