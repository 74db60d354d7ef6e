#include "rpc/etcd/etcd_naming.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace h2rpc::etcd_internal {
namespace {

using ::testing::HasSubstr;

TEST(EtcdNamingTest, PrefixAndItsRangeEnd) {
  EXPECT_EQ(EndpointPrefix("greeter"), "greeter/");
  EXPECT_EQ(PrefixEnd("greeter/"), "greeter0");
  EXPECT_EQ(PrefixEnd(std::string("a\xff\xff", 3)), "b");
  EXPECT_EQ(PrefixEnd(std::string("\xff", 1)), std::string(1, '\0'));
}

TEST(EtcdNamingTest, ValuesAreWhatEtcdsEndpointsPackageWrites) {
  EXPECT_EQ(EndpointValue("10.0.0.1:50051", ""),
            R"({"Addr":"10.0.0.1:50051","Metadata":null,"Op":0})");
  EXPECT_EQ(EndpointValue("10.0.0.1:50051", R"({"zone": "a"})"),
            R"({"Addr":"10.0.0.1:50051","Metadata":{"zone":"a"},"Op":0})");
}

TEST(EtcdNamingTest, ParsesValuesOfGoProgramsAndItsOwn) {
  std::string address, metadata;
  // As Go's encoding/json writes etcd's internal.Update.
  ASSERT_TRUE(ParseEndpointValue(
      R"({"Op":0,"Addr":"10.0.0.1:50051","Metadata":{"weight":3}})", &address,
      &metadata));
  EXPECT_EQ(address, "10.0.0.1:50051");
  EXPECT_EQ(metadata, R"({"weight":3})");
  // etcd's documentation's etcdctl example: no Op.
  ASSERT_TRUE(ParseEndpointValue(R"({"Addr":"1.2.3.4:80","Metadata":"..."})",
                                 &address, &metadata));
  EXPECT_EQ(address, "1.2.3.4:80");
  EXPECT_EQ(metadata, R"("...")");
  ASSERT_TRUE(
      ParseEndpointValue(EndpointValue("[::1]:1", ""), &address, &metadata));
  EXPECT_EQ(address, "[::1]:1");
  EXPECT_EQ(metadata, "");
}

TEST(EtcdNamingTest, RefusesValuesThatNameNoEndpoint) {
  for (const char* value :
       {"", "not json", "[]", R"({"Addr":""})", R"({"Addr":3})", R"({})",
        R"({"Op":1,"Addr":"1.2.3.4:80"})", R"({"Op":"0","Addr":"1.2.3.4:80"})",
        R"({"Addr":"1.2.3.4:80")"}) {
    std::string address = "untouched", metadata;
    EXPECT_FALSE(ParseEndpointValue(value, &address, &metadata)) << value;
    EXPECT_EQ(address, "untouched");
  }
}

TEST(EtcdNamingTest, ChannelTargets) {
  std::string target;
  ASSERT_TRUE(EtcdChannelTarget("etcd.internal:2379", &target).ok());
  EXPECT_EQ(target, "dns:///etcd.internal:2379");
  ASSERT_TRUE(EtcdChannelTarget("10.0.0.1:2379,10.0.0.2:2379", &target).ok());
  EXPECT_EQ(target, "ipv4:10.0.0.1:2379,10.0.0.2:2379");
  ASSERT_TRUE(EtcdChannelTarget("[::1]:2379,[::2]:2379", &target).ok());
  EXPECT_EQ(target, "ipv6:[::1]:2379,[::2]:2379");
  for (const char* bad : {"", "a:1,", "host-a:1,host-b:2",
                          "10.0.0.1:2379,[::1]:2379", "10.0.0.1,10.0.0.2"}) {
    const Status status = EtcdChannelTarget(bad, &target);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_THAT(EtcdChannelTarget("host-a:1,host-b:2", &target).message(),
              HasSubstr("numeric"));
}

}  // namespace
}  // namespace h2rpc::etcd_internal
