// Runs protoc with protoc-gen-h2rpc (from the test's runfiles) on .proto
// files written to the test's temporary directory: inputs that would make
// clashing C++ identifiers must fail with the plugin's message, and a good
// input must give the files the build expects, with comments carried over
// and every line within 80 columns.
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace h2rpc::codegen {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct ProtocResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

// The plugin, from the runfiles (the test runs in the workspace's runfiles
// directory).
std::string PluginPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const std::string relative = "tools/protoc-gen-h2rpc/protoc-gen-h2rpc";
  if (srcdir == nullptr) return relative;
  return absl::StrCat(srcdir, "/h2rpc/", relative);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool Exists(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0;
}

class PluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* test =
        ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = absl::StrCat(TempDir(), "/", test->name());
    out_ = dir_ + "/out";
    ASSERT_EQ(std::system(absl::StrCat("mkdir -p ", out_).c_str()), 0);
  }

  // Writes `proto` as `name` in the test's directory and runs protoc on it
  // with the plugin.
  ProtocResult RunProtoc(const std::string& name, const std::string& proto,
                         const std::string& out_flag = "") {
    std::ofstream(dir_ + "/" + name) << proto;
    const std::string command = absl::StrCat(
        "protoc -I", dir_, " --plugin=protoc-gen-h2rpc=", PluginPath(), " ",
        out_flag.empty() ? absl::StrCat("--h2rpc_out=", out_) : out_flag, " ",
        dir_, "/", name, " 2>&1");
    ProtocResult result;
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) return result;
    char buffer[4096];
    size_t n;
    while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) {
      result.output.append(buffer, n);
    }
    const int status = pclose(pipe);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
  }

  std::string dir_;
  std::string out_;
};

TEST_F(PluginTest, GoodInputGivesBothFiles) {
  const ProtocResult result = RunProtoc("greeter.proto", R"(
syntax = "proto3";
package demo.v1;

message HelloRequest { string name = 1; }
message HelloReply {
  message Detail { string text = 1; }
  Detail detail = 1;
}

// Says hello, in every way.
service Greeter {
  // Greets once.
  // Second line of the comment.
  rpc SayHello(HelloRequest) returns (HelloReply);
  /* A block comment. */
  rpc delete(stream HelloRequest) returns (stream HelloReply.Detail);
  rpc AddTo(HelloRequest) returns (stream HelloReply);
}
)");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::string header = ReadFile(out_ + "/greeter.h2rpc.pb.h");
  const std::string source = ReadFile(out_ + "/greeter.h2rpc.pb.cc");
  ASSERT_FALSE(header.empty());
  ASSERT_FALSE(source.empty());

  EXPECT_THAT(header, HasSubstr("#ifndef GREETER_H2RPC_PB_H_\n"));
  EXPECT_THAT(header, HasSubstr("#include \"greeter.pb.h\"\n"));
  EXPECT_THAT(header, HasSubstr("namespace demo::v1 {\n"));
  EXPECT_THAT(source, HasSubstr("#include \"greeter.h2rpc.pb.h\"\n"));
  // Comments, on the service and (in the three classes) on the methods.
  EXPECT_THAT(header, HasSubstr("// Says hello, in every way.\n//\n"
                                "// Generated for service demo.v1.Greeter"));
  EXPECT_THAT(header, HasSubstr("  // Greets once.\n"
                                "  // Second line of the comment.\n"
                                "  ::h2rpc::Status SayHello("));
  EXPECT_THAT(header, HasSubstr("  // Greets once.\n"
                                "  // Second line of the comment.\n"
                                "  virtual void SayHello("));
  EXPECT_THAT(header, HasSubstr("  // A block comment.\n"));
  // Paths and names from the descriptors.
  EXPECT_THAT(header, HasSubstr("kServiceName[] = \"demo.v1.Greeter\";"));
  EXPECT_THAT(header,
              HasSubstr("kSayHelloPath[] = \"/demo.v1.Greeter/SayHello\";"));
  EXPECT_THAT(header,
              HasSubstr("kdeletePath[] = \"/demo.v1.Greeter/delete\";"));
  // Escaped names: a keyword and a generated member's name.
  EXPECT_THAT(header, HasSubstr(" delete_("));
  EXPECT_THAT(header, HasSubstr(" AddTo_("));
  EXPECT_THAT(header, HasSubstr(" Asyncdelete("));
  EXPECT_THAT(header, Not(HasSubstr(" delete(")));
  // The nested message's C++ name.
  EXPECT_THAT(header, HasSubstr("::demo::v1::HelloReply_Detail"));

  for (const std::string* text : {&header, &source}) {
    for (absl::string_view line : absl::StrSplit(*text, '\n')) {
      EXPECT_LE(line.size(), 80u) << line;
    }
  }
}

TEST_F(PluginTest, FileWithoutServicesGivesBothFiles) {
  const ProtocResult result = RunProtoc("messages.proto", R"(
syntax = "proto3";
package demo;
message Only { int32 x = 1; }
)");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(ReadFile(out_ + "/messages.h2rpc.pb.h"),
              HasSubstr("messages.proto defines no services."));
  EXPECT_TRUE(Exists(out_ + "/messages.h2rpc.pb.cc"));
}

TEST_F(PluginTest, MethodClashingWithAnotherMethodsAsyncForm) {
  const ProtocResult result = RunProtoc("clash.proto", R"(
syntax = "proto3";
package demo;
message M {}
service Clash {
  rpc Foo(M) returns (M);
  rpc AsyncFoo(M) returns (M);
}
)");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output,
              HasSubstr("--h2rpc_out: clash.proto: service demo.Clash: the "
                        "callback form of method \"Foo\" (AsyncFoo) and "
                        "method \"AsyncFoo\" would both be the C++ identifier "
                        "AsyncFoo; rename one of them"));
  EXPECT_FALSE(Exists(out_ + "/clash.h2rpc.pb.h"));
}

TEST_F(PluginTest, KeywordEscapeMergingTwoMethods) {
  const ProtocResult result = RunProtoc("merge.proto", R"(
syntax = "proto3";
package demo;
message M {}
service Merge {
  rpc class(M) returns (M);
  rpc class_(M) returns (M);
}
)");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(
      result.output,
      HasSubstr(
          "--h2rpc_out: merge.proto: service demo.Merge: method \"class\" "
          "(escaped to class_) and method \"class_\" would "
          "both be the C++ identifier class_"));
  EXPECT_FALSE(Exists(out_ + "/merge.h2rpc.pb.h"));
}

TEST_F(PluginTest, ReservedNameEscapeMergingTwoMethods) {
  const ProtocResult result = RunProtoc("reserved.proto", R"(
syntax = "proto3";
package demo;
message M {}
service Reserved {
  rpc Stub_(M) returns (M);
  rpc Stub(M) returns (M);
}
)");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output,
              HasSubstr("method \"Stub_\" and method \"Stub\" (escaped to "
                        "Stub_) would both be the C++ identifier Stub_"));
}

TEST_F(PluginTest, MethodClashingWithAPathConstant) {
  const ProtocResult result = RunProtoc("constant.proto", R"(
syntax = "proto3";
package demo;
message M {}
service Constant {
  rpc Foo(M) returns (M);
  rpc kFooPath(M) returns (M);
}
)");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output,
              HasSubstr("the path constant of method \"Foo\" (kFooPath) and "
                        "method \"kFooPath\" would both be the C++ "
                        "identifier kFooPath"));
}

TEST_F(PluginTest, ServiceClashingWithANestedMessage) {
  const ProtocResult result = RunProtoc("nested.proto", R"(
syntax = "proto3";
package demo;
message Foo { message Bar {} }
service Foo_Bar {}
)");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output,
              HasSubstr("--h2rpc_out: nested.proto: package demo: message "
                        "demo.Foo.Bar (nested.proto) and service demo.Foo_Bar "
                        "(nested.proto) would both be the C++ identifier "
                        "Foo_Bar; rename one of them"));
}

TEST_F(PluginTest, MessageNamedLikeAHelperOutsideAPackage) {
  const ProtocResult result = RunProtoc("helper.proto", R"(
syntax = "proto3";
message UnimplementedStatus {}
service S { rpc Get(UnimplementedStatus) returns (UnimplementedStatus); }
)");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output,
              HasSubstr("--h2rpc_out: helper.proto: no package: message "
                        "UnimplementedStatus (helper.proto) and a helper of "
                        "the generated helper.h2rpc.pb.cc would both be the "
                        "C++ identifier UnimplementedStatus"));
}

TEST_F(PluginTest, KeywordInThePackage) {
  const ProtocResult result = RunProtoc("package.proto", R"(
syntax = "proto3";
package demo.class.v1;
message M {}
service S { rpc Get(M) returns (M); }
)");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output,
              HasSubstr("--h2rpc_out: package.proto: package demo.class.v1: "
                        "\"class\" is a C++ keyword"));
}

TEST_F(PluginTest, UnknownParametersAreRefused) {
  const ProtocResult result =
      RunProtoc("params.proto", "syntax = \"proto3\";\npackage demo;\n",
                absl::StrCat("--h2rpc_out=lite:", out_));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output,
              HasSubstr("protoc-gen-h2rpc takes one parameter, "
                        "services_namespace=NAME; got \"lite\""));
}

constexpr char kGreeterProto[] = R"(
syntax = "proto3";
package demo.v1;
message Hello {}
service Greeter { rpc Greet(Hello) returns (Hello); }
)";

TEST_F(PluginTest, ServicesNamespaceNestsTheServiceClasses) {
  const ProtocResult result =
      RunProtoc("greeter.proto", kGreeterProto,
                absl::StrCat("--h2rpc_out=services_namespace=h2rpc:", out_));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(ReadFile(out_ + "/greeter.h2rpc.pb.h"),
              HasSubstr("namespace demo::v1::h2rpc {"));
  EXPECT_THAT(ReadFile(out_ + "/greeter.h2rpc.pb.cc"),
              HasSubstr("namespace demo::v1::h2rpc {"));
}

TEST_F(PluginTest, ServicesNamespaceMustBeAFreeIdentifier) {
  for (const char* name : {"class", "9lives", "a-b", "Hello"}) {
    const ProtocResult result = RunProtoc(
        "greeter.proto", kGreeterProto,
        absl::StrCat("--h2rpc_out=services_namespace=", name, ":", out_));
    EXPECT_NE(result.exit_code, 0) << name;
    EXPECT_THAT(result.output,
                HasSubstr(absl::StrCat("services_namespace=", name)))
        << name;
  }
}

}  // namespace
}  // namespace h2rpc::codegen
