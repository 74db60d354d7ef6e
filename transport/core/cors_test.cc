#include "transport/core/cors.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace h2rpc::transport {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;
using Fields = std::vector<std::pair<std::string, std::string>>;

Fields FieldsOf(const HeaderList& list) {
  Fields out;
  for (const nghttp2_nv& nv : list.fields()) {
    out.emplace_back(
        std::string(reinterpret_cast<char*>(nv.name), nv.namelen),
        std::string(reinterpret_cast<char*>(nv.value), nv.valuelen));
  }
  return out;
}

TEST(CorsPolicyTest, AllowsTheListedOriginsExactly) {
  const CorsPolicy policy({"https://app.example.com", "http://127.0.0.1:8080"},
                          60);
  EXPECT_TRUE(policy.Allows("https://app.example.com"));
  EXPECT_TRUE(policy.Allows("http://127.0.0.1:8080"));
  EXPECT_FALSE(policy.Allows("http://app.example.com"));
  EXPECT_FALSE(policy.Allows("https://app.example.com:443"));
  EXPECT_FALSE(policy.Allows("https://evil.example.com"));
  EXPECT_FALSE(policy.Allows(""));
  EXPECT_FALSE(policy.Allows("null"));

  const CorsPolicy any({"*"}, 60);
  EXPECT_TRUE(any.Allows("https://anything.test"));
  EXPECT_FALSE(any.Allows(""));
  EXPECT_FALSE(CorsPolicy({}, 60).Allows("https://app.example.com"));
}

TEST(CorsPolicyTest, ExposesTheProtocolsFieldsAndTheApplications) {
  EXPECT_EQ(CorsPolicy({"*"}, 60).exposed_headers(),
            CorsPolicy::kExposedHeaders);
  EXPECT_EQ(
      CorsPolicy({"*"}, 60, false, {"x-a", "trailer-x-b"}).exposed_headers(),
      absl::StrCat(CorsPolicy::kExposedHeaders, ", x-a, trailer-x-b"));
}

TEST(CorsPolicyTest, PreflightAnswer) {
  const CorsPolicy policy({"*"}, 600);
  HeaderList headers;
  {
    std::string origin = "https://app.example.com";
    std::string asked = "content-type,x-grpc-web";
    policy.BuildPreflightAnswer(origin, asked, &headers);
    origin.assign(origin.size(), 'x');  // copied: the list does not change
    asked.assign(asked.size(), 'x');
  }
  EXPECT_THAT(
      FieldsOf(headers),
      ElementsAre(
          Pair(":status", "204"),
          Pair("access-control-allow-origin", "https://app.example.com"),
          Pair("access-control-allow-methods", "POST"),
          Pair("access-control-allow-headers", "content-type,x-grpc-web"),
          Pair("access-control-max-age", "600"),
          Pair("vary",
               "origin, access-control-request-method, "
               "access-control-request-headers")));
  policy.BuildPreflightAnswer("https://a.test", "", &headers);
  EXPECT_EQ(FieldsOf(headers).size(), 5u);  // no allow-headers
}

TEST(CorsPolicyTest, GetIsAllowedWhenAsked) {
  const CorsPolicy policy({"*"}, 600, /*allow_get=*/true);
  HeaderList headers;
  policy.BuildPreflightAnswer("https://a.test", "", &headers);
  EXPECT_THAT(
      FieldsOf(headers),
      ::testing::Contains(Pair("access-control-allow-methods", "GET, POST")));
}

}  // namespace
}  // namespace h2rpc::transport
