#include "rpc/call_credentials.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/credentials.h"
#include "rpc/internal/call_credentials_access.h"

namespace h2rpc {
namespace {

using internal::CallCredentialsAccess;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

class FixedPlugin : public MetadataCredentialsPlugin {
 public:
  FixedPlugin(std::string value, Status result, bool blocking = true)
      : value_(std::move(value)),
        result_(std::move(result)),
        blocking_(blocking) {}
  bool IsBlocking() const override { return blocking_; }
  Status GetMetadata(const AuthMetadataContext& context,
                     Metadata* metadata) override {
    metadata->Add("x-plugin", value_);
    metadata->Add("x-method", context.method_name);
    return result_;
  }
  std::string DebugString() const override { return "fixed plugin"; }

 private:
  const std::string value_;
  const Status result_;
  const bool blocking_;
};

std::shared_ptr<CallCredentials> Plugin(std::string value,
                                        Status result = Status(),
                                        bool blocking = true) {
  return MetadataCredentialsFromPlugin(std::make_unique<FixedPlugin>(
      std::move(value), std::move(result), blocking));
}

std::vector<std::pair<std::string, std::string>> Entries(
    const Metadata& metadata) {
  std::vector<std::pair<std::string, std::string>> out;
  for (Metadata::Entry entry : metadata) {
    out.emplace_back(std::string(entry.key), std::string(entry.value));
  }
  return out;
}

Status Add(const CallCredentials& credentials, Metadata* metadata) {
  AuthMetadataContext context;
  context.method_name = "Method";
  return CallCredentialsAccess::AddCallMetadata(credentials, context, metadata);
}

TEST(CallCredentialsTest, AnAccessTokenIsFixedMetadata) {
  auto token = AccessTokenCredentials("abc");
  ASSERT_TRUE(token->status().ok());
  EXPECT_FALSE(CallCredentialsAccess::HasPlugins(*token));
  EXPECT_FALSE(CallCredentialsAccess::Blocking(*token));
  EXPECT_THAT(Entries(CallCredentialsAccess::FixedMetadata(*token)),
              ElementsAre(Pair("authorization", "Bearer abc")));
}

TEST(CallCredentialsTest, CompositionKeepsTheOrderAndTheBlockingFlag) {
  auto both = CompositeCallCredentials(
      CompositeCallCredentials(AccessTokenCredentials("one"),
                               Plugin("two", Status(), /*blocking=*/false)),
      AccessTokenCredentials("three"));
  ASSERT_TRUE(both->status().ok());
  EXPECT_TRUE(CallCredentialsAccess::HasPlugins(*both));
  EXPECT_FALSE(CallCredentialsAccess::Blocking(*both));
  Metadata metadata;
  ASSERT_TRUE(Add(*both, &metadata).ok());
  EXPECT_THAT(Entries(metadata),
              ElementsAre(Pair("authorization", "Bearer one"),
                          Pair("x-plugin", "two"), Pair("x-method", "Method"),
                          Pair("authorization", "Bearer three")));
  EXPECT_TRUE(CallCredentialsAccess::Blocking(
      *CompositeCallCredentials(both, Plugin("blocking"))));

  auto tokens = CompositeCallCredentials(AccessTokenCredentials("a"),
                                         AccessTokenCredentials("b"));
  EXPECT_FALSE(CallCredentialsAccess::HasPlugins(*tokens));
  EXPECT_THAT(Entries(CallCredentialsAccess::FixedMetadata(*tokens)),
              ElementsAre(Pair("authorization", "Bearer a"),
                          Pair("authorization", "Bearer b")));
}

TEST(CallCredentialsTest, PluginFailuresBecomeTheCallsStatus) {
  Metadata metadata;
  Status status =
      Add(*Plugin("x", Status(StatusCode::kNotFound, "gone")), &metadata);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(status.message(), "call credentials (fixed plugin) failed: gone");
  status =
      Add(*Plugin("x", Status(StatusCode::kUnauthenticated, "who")), &metadata);
  EXPECT_EQ(status, Status(StatusCode::kUnauthenticated, "who"));
  status =
      Add(*Plugin("x", Status(StatusCode::kPermissionDenied, "no")), &metadata);
  EXPECT_EQ(status, Status(StatusCode::kPermissionDenied, "no"));
  status = Add(*Plugin("bad\x01value"), &metadata);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("cannot be sent"));
}

// A plugin that starts a call of its own from GetMetadata (here: runs
// other credentials' plugins on the same thread) gets both right.
class NestingPlugin : public MetadataCredentialsPlugin {
 public:
  explicit NestingPlugin(std::shared_ptr<CallCredentials> inner)
      : inner_(std::move(inner)) {}
  bool IsBlocking() const override { return false; }
  Status GetMetadata(const AuthMetadataContext& context,
                     Metadata* metadata) override {
    metadata->Add("x-outer", "before");
    Status status = Add(*inner_, &inner_metadata);
    metadata->Add("x-outer", "after");
    return status;
  }
  Metadata inner_metadata;

 private:
  const std::shared_ptr<CallCredentials> inner_;
};

TEST(CallCredentialsTest, APluginMayRunOtherPluginsOnItsThread) {
  auto plugin = std::make_unique<NestingPlugin>(
      Plugin("inner", Status(), /*blocking=*/false));
  NestingPlugin* nesting = plugin.get();
  auto outer = MetadataCredentialsFromPlugin(std::move(plugin));
  Metadata metadata;
  ASSERT_TRUE(Add(*outer, &metadata).ok());
  EXPECT_THAT(Entries(metadata),
              ElementsAre(Pair("x-outer", "before"), Pair("x-outer", "after")));
  EXPECT_THAT(
      Entries(nesting->inner_metadata),
      ElementsAre(Pair("x-plugin", "inner"), Pair("x-method", "Method")));
}

TEST(CallCredentialsTest, UnusableCredentialsSayWhy) {
  EXPECT_EQ(AccessTokenCredentials("a\nb")->status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_THAT(MetadataCredentialsFromPlugin(nullptr)->status().message(),
              HasSubstr("null"));
  auto composite = CompositeCallCredentials(AccessTokenCredentials("ok"),
                                            AccessTokenCredentials("a\rb"));
  EXPECT_THAT(composite->status().message(), HasSubstr("0x20-0x7E"));
  Metadata metadata;
  const Status status = Add(*composite, &metadata);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("unusable call credentials"));
  EXPECT_EQ(CompositeCallCredentials(nullptr, AccessTokenCredentials("x"))
                ->status()
                .code(),
            StatusCode::kInvalidArgument);
}

TEST(CallCredentialsTest, ChannelCompositionAddsToWhatTheChannelHas) {
  auto first = CompositeChannelCredentials(InsecureChannelCredentials(),
                                           AccessTokenCredentials("1"));
  auto second = CompositeChannelCredentials(first, AccessTokenCredentials("2"));
  ASSERT_TRUE(second->status().ok());
  EXPECT_FALSE(second->secure());
  EXPECT_THAT(Entries(CallCredentialsAccess::FixedMetadata(
                  *second->call_credentials())),
              ElementsAre(Pair("authorization", "Bearer 1"),
                          Pair("authorization", "Bearer 2")));
  EXPECT_TRUE(CompositeChannelCredentials(LocalCredentials(),
                                          AccessTokenCredentials("l"))
                  ->local());
  EXPECT_FALSE(CompositeChannelCredentials(nullptr, AccessTokenCredentials("x"))
                   ->status()
                   .ok());
}

}  // namespace
}  // namespace h2rpc
