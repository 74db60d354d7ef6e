// Runs protoc with protoc-gen-h2rpc (from the test's runfiles) on .proto
// files written to the test's temporary directory: inputs that would make
// clashing C++ identifiers must fail with the plugin's message, and a good
// input must give the files the build expects (the coroutine header too with
// the `coroutines` parameter), with comments carried over and every line
// within 80 columns; parameters other than the plugin's are refused.
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
  // Without `coroutines`: no coroutine header, but its classes are declared
  // (for it to define when generated).
  EXPECT_FALSE(Exists(out_ + "/greeter.h2rpc_coro.pb.h"));
  EXPECT_THAT(header, HasSubstr("  class CoroStub;\n  class CoroService;\n"));
  EXPECT_THAT(header, Not(HasSubstr("coro/")));
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

TEST_F(PluginTest, CoroutineClassNamesAreReserved) {
  const ProtocResult result =
      RunProtoc("coro_names.proto", R"(
syntax = "proto3";
package demo;
message M {}
service CoroStub {
  rpc CoroService(M) returns (M);
  rpc CoroStub(M) returns (stream M);
}
service CoroService {}
)",
                absl::StrCat("--h2rpc_out=coroutines:", out_));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::string header = ReadFile(out_ + "/coro_names.h2rpc.pb.h");
  const std::string coro = ReadFile(out_ + "/coro_names.h2rpc_coro.pb.h");
  EXPECT_THAT(header, HasSubstr("class CoroStub_ final {"));
  EXPECT_THAT(header, HasSubstr("class CoroService_ final {"));
  EXPECT_THAT(header, HasSubstr(" CoroService_("));
  EXPECT_THAT(header, HasSubstr(" CoroStub_("));
  EXPECT_THAT(coro, HasSubstr("class CoroStub_::CoroStub {"));
  EXPECT_THAT(coro, HasSubstr("class CoroService_::CoroService {"));
  EXPECT_THAT(coro, HasSubstr(" CoroService_("));
  EXPECT_THAT(coro, HasSubstr(" CoroStub_("));
}

TEST_F(PluginTest, CoroutineNameEscapeMergingTwoMethods) {
  const ProtocResult result = RunProtoc("coro_reserved.proto", R"(
syntax = "proto3";
package demo;
message M {}
service Reserved {
  rpc CoroStub(M) returns (M);
  rpc CoroStub_(M) returns (M);
}
)");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output,
              HasSubstr("method \"CoroStub\" (escaped to CoroStub_) and "
                        "method \"CoroStub_\" would both be the C++ "
                        "identifier CoroStub_"));
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
              HasSubstr("--h2rpc_out: params.proto: protoc-gen-h2rpc takes a "
                        "comma-separated list of the parameters "
                        "services_namespace=NAME and coroutines; got "
                        "\"lite\"\n"));
}

TEST_F(PluginTest, UnknownParameterAmongKnownOnesIsRefused) {
  const struct {
    const char* parameter;
    const char* error;
  } cases[] = {
      {"coroutines,lite",
       "services_namespace=NAME and coroutines; got \"lite\" in "
       "\"coroutines,lite\""},
      {"services_namespace=x,coroutine",
       "; got \"coroutine\" in \"services_namespace=x,coroutine\""},
      // An empty item.
      {"coroutines,", "; got \"\" in \"coroutines,\""},
      {"coroutines=1", "; got \"coroutines=1\""},
      {"coroutines,coroutines",
       "protoc-gen-h2rpc takes each parameter once; got coroutines twice in "
       "\"coroutines,coroutines\""},
      {"services_namespace=a,coroutines,services_namespace=b",
       "got services_namespace twice"},
      {"services_namespace=",
       "services_namespace= is not a C++ identifier that can name a "
       "namespace"},
  };
  for (const auto& c : cases) {
    const ProtocResult result =
        RunProtoc("params.proto", "syntax = \"proto3\";\npackage demo;\n",
                  absl::StrCat("--h2rpc_out=", c.parameter, ":", out_));
    EXPECT_NE(result.exit_code, 0) << c.parameter;
    EXPECT_THAT(result.output, HasSubstr(c.error)) << c.parameter;
    EXPECT_FALSE(Exists(out_ + "/params.h2rpc.pb.h")) << c.parameter;
  }
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

// Both parameters, in either order, or given with --h2rpc_opt (which protoc
// joins with commas).
TEST_F(PluginTest, ParametersCombineInAnyOrder) {
  for (const std::string& flags :
       {absl::StrCat("--h2rpc_out=coroutines,services_namespace=h2rpc:", out_),
        absl::StrCat("--h2rpc_out=services_namespace=h2rpc,coroutines:", out_),
        absl::StrCat("--h2rpc_opt=coroutines "
                     "--h2rpc_opt=services_namespace=h2rpc --h2rpc_out=",
                     out_)}) {
    ASSERT_EQ(std::system(absl::StrCat("rm -f ", out_, "/*").c_str()), 0);
    const ProtocResult result =
        RunProtoc("greeter.proto", kGreeterProto, flags);
    ASSERT_EQ(result.exit_code, 0) << flags << "\n" << result.output;
    for (const char* file : {"greeter.h2rpc.pb.h", "greeter.h2rpc.pb.cc",
                             "greeter.h2rpc_coro.pb.h"}) {
      EXPECT_THAT(ReadFile(absl::StrCat(out_, "/", file)),
                  HasSubstr("namespace demo::v1::h2rpc {"))
          << flags << ": " << file;
    }
  }
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

TEST_F(PluginTest, CoroutinesGiveTheCoroutineHeader) {
  const ProtocResult result =
      RunProtoc("chat.proto", R"(
syntax = "proto3";
package demo.v1;

message Note { string text = 1; }

// Notes, in every kind of call.
service Chat {
  // Posts one note.
  rpc Post(Note) returns (Note);
  // Lists the notes.
  rpc List(Note) returns (stream Note);
  rpc Upload(stream Note) returns (Note);
  rpc Talk(stream Note) returns (stream Note);
  rpc delete(Note) returns (Note);
}

service Quiet {}
)",
                absl::StrCat("--h2rpc_out=coroutines:", out_));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::string coro = ReadFile(out_ + "/chat.h2rpc_coro.pb.h");
  ASSERT_FALSE(coro.empty());
  // The other two files are those of a run without `coroutines`.
  const std::string header = ReadFile(out_ + "/chat.h2rpc.pb.h");
  const std::string source = ReadFile(out_ + "/chat.h2rpc.pb.cc");
  EXPECT_THAT(header, HasSubstr("  class CoroStub;\n  class CoroService;\n"));
  EXPECT_THAT(header, Not(HasSubstr("coro/")));
  EXPECT_THAT(source, Not(HasSubstr("Coro")));

  EXPECT_THAT(coro, HasSubstr("#ifndef CHAT_H2RPC_CORO_PB_H_\n"
                              "#define CHAT_H2RPC_CORO_PB_H_\n"));
  EXPECT_THAT(coro, HasSubstr("#endif  // CHAT_H2RPC_CORO_PB_H_\n"));
  for (const char* include :
       {"<memory>", "<utility>", "\"chat.h2rpc.pb.h\"", "\"rpc/channel.h\"",
        "\"rpc/client_context.h\"", "\"rpc/coro/client.h\"",
        "\"rpc/coro/server.h\"", "\"rpc/coro/task.h\"", "\"rpc/server.h\"",
        "\"rpc/server_context.h\"", "\"rpc/status.h\""}) {
    EXPECT_THAT(coro, HasSubstr(absl::StrCat("#include ", include, "\n")));
  }
  EXPECT_THAT(coro, HasSubstr("namespace demo::v1 {\n"));
  EXPECT_THAT(coro, HasSubstr("class Chat::CoroStub {\n"));
  EXPECT_THAT(coro, HasSubstr("class Chat::CoroService {\n"));
  EXPECT_THAT(coro, HasSubstr("class Quiet::CoroStub {\n"));
  EXPECT_THAT(coro, HasSubstr("class Quiet::CoroService {\n"));
  // The stub: one call into rpc/coro/client.h per method.
  EXPECT_THAT(
      coro, HasSubstr("  ::h2rpc::coro::UnaryCall Post(::h2rpc::ClientContext* "
                      "context,\n"
                      "                                const ::demo::v1::Note& "
                      "request,\n"
                      "                                ::demo::v1::Note* "
                      "response) {\n"
                      "    return ::h2rpc::coro::UnaryCall(*channel_, context, "
                      "kPostPath, request,\n"
                      "                                    response);\n"
                      "  }\n"));
  // (A parameter's template arguments aligned after its '<' when they do not
  // fit on one line.)
  EXPECT_THAT(coro,
              HasSubstr("  void List(::h2rpc::coro::ServerStreamingCall<"
                        "::demo::v1::Note,\n"
                        "                                               "
                        "::demo::v1::Note>* call,\n"
                        "            const ::demo::v1::Note& request) {\n"
                        "    call->Start(*channel_, kListPath, request);\n"
                        "  }\n"));
  EXPECT_THAT(coro,
              HasSubstr("  void Upload(::h2rpc::coro::ClientStreamingCall<"
                        "::demo::v1::Note,\n"
                        "                                                 "
                        "::demo::v1::Note>* call) {\n"
                        "    call->Start(*channel_, kUploadPath);\n"));
  EXPECT_THAT(coro, HasSubstr("  void Talk(::h2rpc::coro::BidiStreamingCall<"
                              "::demo::v1::Note,\n"
                              "                                             "
                              "::demo::v1::Note>* call) {\n"
                              "    call->Start(*channel_, kTalkPath);\n"));
  EXPECT_THAT(coro, HasSubstr(" delete_("));
  EXPECT_THAT(coro, Not(HasSubstr(" delete(")));
  EXPECT_THAT(coro, HasSubstr("  [[maybe_unused]] const std::shared_ptr<"
                              "::h2rpc::Channel> channel_;\n"));
  // The service: AddTo registers a lambda per method with coro::Register*.
  EXPECT_THAT(coro, HasSubstr("  ::h2rpc::Server::Builder& AddTo("
                              "::h2rpc::Server::Builder& builder) {\n"));
  for (const char* registration :
       {"::h2rpc::coro::RegisterUnary<::demo::v1::Note, ::demo::v1::Note>(\n"
        "        builder, kPostPath,\n",
        "::h2rpc::coro::RegisterServerStreaming<::demo::v1::Note, "
        "::demo::v1::Note>(\n        builder, kListPath,\n",
        "::h2rpc::coro::RegisterClientStreaming<::demo::v1::Note, "
        "::demo::v1::Note>(\n        builder, kUploadPath,\n",
        "::h2rpc::coro::RegisterBidiStreaming<::demo::v1::Note, "
        "::demo::v1::Note>(\n        builder, kTalkPath,\n"}) {
    EXPECT_THAT(coro, HasSubstr(registration));
  }
  EXPECT_THAT(coro,
              HasSubstr("return this->Post(context, request, response);"));
  EXPECT_THAT(coro, HasSubstr("return this->Talk(context, stream);"));
  EXPECT_THAT(coro, HasSubstr("    return builder;\n  }\n"));
  // The handlers: virtual coroutines answering UNIMPLEMENTED.
  EXPECT_THAT(
      coro, HasSubstr("  virtual ::h2rpc::coro::Task<::h2rpc::Status> Post(\n"
                      "      ::h2rpc::ServerContext* /*context*/, const "
                      "::demo::v1::Note* /*request*/,\n"
                      "      ::demo::v1::Note* /*response*/) {\n"
                      "    co_return ::h2rpc::Status(::h2rpc::StatusCode::"
                      "kUnimplemented,\n"
                      "                              std::string(kPostPath) + "
                      "\" is not implemented\");\n"
                      "  }\n"));
  EXPECT_THAT(coro, HasSubstr("::h2rpc::coro::ServerWriter<::demo::v1::Note>* "
                              "/*writer*/"));
  EXPECT_THAT(coro, HasSubstr("::h2rpc::coro::ServerReader<::demo::v1::Note>* "
                              "/*reader*/"));
  EXPECT_THAT(coro, HasSubstr("::h2rpc::coro::ServerReaderWriter<"
                              "::demo::v1::Note,\n"
                              "                                        "
                              "::demo::v1::Note>* /*stream*/"));
  EXPECT_THAT(coro, HasSubstr("  virtual ~CoroService() = default;\n"));
  EXPECT_THAT(coro, HasSubstr("  CoroService(const CoroService&) = delete;\n"));
  // Comments: the contract, and the .proto's in both classes.
  EXPECT_THAT(coro, HasSubstr("// Calls Chat's methods from C++20 coroutines"));
  EXPECT_THAT(coro, HasSubstr("// The C++20 coroutine server side of Chat"));
  EXPECT_THAT(coro, HasSubstr("  // Posts one note.\n"
                              "  ::h2rpc::coro::UnaryCall Post("));
  EXPECT_THAT(coro, HasSubstr("  // Posts one note.\n"
                              "  virtual ::h2rpc::coro::Task<::h2rpc::Status> "
                              "Post("));
  EXPECT_THAT(coro, HasSubstr("  // Lists the notes.\n  void List("));

  for (absl::string_view line : absl::StrSplit(coro, '\n')) {
    EXPECT_LE(line.size(), 80u) << line;
  }
}

TEST_F(PluginTest, CoroutinesGiveTheCoroutineHeaderWithoutServices) {
  const ProtocResult result = RunProtoc(
      "messages.proto", "syntax = \"proto3\";\npackage demo;\nmessage M {}\n",
      absl::StrCat("--h2rpc_out=coroutines:", out_));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::string coro = ReadFile(out_ + "/messages.h2rpc_coro.pb.h");
  EXPECT_THAT(coro, HasSubstr("#include \"messages.h2rpc.pb.h\"\n"));
  EXPECT_THAT(coro, HasSubstr("messages.proto defines no services."));
  EXPECT_THAT(coro, Not(HasSubstr("#include \"rpc/")));
  EXPECT_TRUE(Exists(out_ + "/messages.h2rpc.pb.h"));
  EXPECT_TRUE(Exists(out_ + "/messages.h2rpc.pb.cc"));
}

}  // namespace
}  // namespace h2rpc::codegen
