#include "rpc/auth_context.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace h2rpc {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(AuthContextTest, PlaintextIsInsecureWithNoIdentity) {
  AuthContext context(nullptr);
  EXPECT_FALSE(context.IsPeerAuthenticated());
  EXPECT_THAT(context.GetPeerIdentity(), IsEmpty());
  EXPECT_THAT(context.FindPropertyValues("transport_security_type"),
              ElementsAre("insecure"));
  EXPECT_THAT(context.FindPropertyValues("security_level"),
              ElementsAre("TSI_SECURITY_NONE"));
}

TEST(AuthContextTest, AVerifiedCertificatesNamesAreTheIdentity) {
  PeerIdentity identity;
  identity.certificate_verified = true;
  identity.subject = "CN=svc,O=Example";
  identity.common_name = "svc";
  identity.dns_names = {"svc.example"};
  identity.uris = {"spiffe://example/svc"};
  identity.ip_addresses = {"10.0.0.1"};
  identity.emails = {"svc@example"};
  AuthContext context(&identity);
  EXPECT_TRUE(context.IsPeerAuthenticated());
  EXPECT_EQ(context.GetPeerIdentityPropertyName(),
            "x509_subject_alternative_name");
  EXPECT_THAT(context.GetPeerIdentity(),
              ElementsAre("svc.example", "spiffe://example/svc", "10.0.0.1",
                          "svc@example"));
  EXPECT_THAT(context.FindPropertyValues("peer_ip"), ElementsAre("10.0.0.1"));
  EXPECT_THAT(context.FindPropertyValues("peer_email"),
              ElementsAre("svc@example"));
  EXPECT_THAT(context.FindPropertyValues("x509_subject"),
              ElementsAre("CN=svc,O=Example"));

  // Without names, the common name.
  identity.dns_names.clear();
  identity.uris.clear();
  identity.ip_addresses.clear();
  identity.emails.clear();
  AuthContext common_name_only(&identity);
  EXPECT_EQ(common_name_only.GetPeerIdentityPropertyName(), "x509_common_name");
  EXPECT_THAT(common_name_only.GetPeerIdentity(), ElementsAre("svc"));

  // Unverified: the properties, but no identity.
  identity.certificate_verified = false;
  AuthContext unverified(&identity);
  EXPECT_FALSE(unverified.IsPeerAuthenticated());
  EXPECT_THAT(unverified.FindPropertyValues("x509_common_name"),
              ElementsAre("svc"));
}

TEST(AuthContextTest, PropertiesAddedCanNameTheIdentity) {
  AuthContext context(nullptr);
  EXPECT_FALSE(context.SetPeerIdentityPropertyName("user"));
  context.AddProperty("user", "alice");
  context.AddProperty("user", "admin-alice");
  EXPECT_TRUE(context.SetPeerIdentityPropertyName("user"));
  EXPECT_THAT(context.GetPeerIdentity(), ElementsAre("alice", "admin-alice"));
  EXPECT_EQ(context.properties().back(),
            (std::pair<std::string, std::string>("user", "admin-alice")));
}

}  // namespace
}  // namespace h2rpc
