// The gRPC interop test client (doc/interop-test-descriptions.md upstream)
// on h2rpc over plaintext HTTP/2: the unary test cases only, as h2rpc has no
// streaming calls yet.
//
//   h2rpc_interop_client --server_host=127.0.0.1 --server_port=N
//       --test_case=large_unary
//
// Runs one test case and exits 0 when every assertion of the description
// held, 1 (with the reason on stderr) when one did not, 2 for a bad command
// line or a test case it does not implement. Every RPC carries a deadline
// (--deadline_ms, 20 s by default), so a hung server cannot hang the client.
//
// Cases: empty_unary, large_unary, custom_metadata, status_code_and_message,
// special_status_message, unimplemented_method, unimplemented_service.
// custom_metadata and status_code_and_message run only their UnaryCall half;
// the FullDuplexCall half waits for streaming support. Every other case of
// the description (the streaming ones, timeout_on_sleeping_server, which needs
// FullDuplexCall, and the compression ones) is unsupported: exit 2.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/grpc/testing/empty.pb.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/client_context.h"
#include "rpc/metadata.h"
#include "rpc/status.h"
#include "test/interop/interop_peer_util.h"

ABSL_FLAG(std::string, server_host, "localhost", "Server host to connect to.");
ABSL_FLAG(int, server_port, 0, "Server port to connect to.");
ABSL_FLAG(std::string, test_case, "", "Name of the test case to run.");
ABSL_FLAG(int, deadline_ms, 20000, "Deadline of every RPC, in milliseconds.");

namespace h2rpc::testing {
namespace {

using grpc::testing::Empty;
using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;

constexpr char kEmptyCall[] = "/grpc.testing.TestService/EmptyCall";
constexpr char kUnaryCall[] = "/grpc.testing.TestService/UnaryCall";
constexpr char kUnimplementedCall[] =
    "/grpc.testing.TestService/UnimplementedCall";
constexpr char kUnimplementedServiceCall[] =
    "/grpc.testing.UnimplementedService/UnimplementedCall";

constexpr int kLargeRequestSize = 271828;
constexpr int kLargeResponseSize = 314159;

constexpr char kEchoInitialMetadataKey[] = "x-grpc-test-echo-initial";
constexpr char kEchoInitialMetadataValue[] = "test_initial_metadata_value";
constexpr char kEchoTrailingBinMetadataKey[] = "x-grpc-test-echo-trailing-bin";
constexpr absl::string_view kEchoTrailingBinMetadataValue = "\xab\xab\xab";

std::string Describe(const Status& status) {
  return absl::StrCat(StatusCodeName(status.code()), " (",
                      static_cast<int>(status.code()), ") \"", status.message(),
                      "\"");
}

// Reports a failed assertion on stderr; always returns false.
bool Fail(const std::string& what) {
  std::fprintf(stderr, "FAILED: %s\n", what.c_str());
  return false;
}

// Checks that `status` has code `want`; `what` names the call.
bool ExpectCode(const Status& status, StatusCode want,
                const std::string& what) {
  if (status.code() == want) return true;
  return Fail(absl::StrCat(what, ": expected status ", StatusCodeName(want),
                           ", got ", Describe(status)));
}

bool ExpectOk(const Status& status, const std::string& what) {
  return ExpectCode(status, StatusCode::kOk, what);
}

bool ExpectStatus(const Status& status, StatusCode code,
                  const std::string& message, const std::string& what) {
  if (!ExpectCode(status, code, what)) return false;
  if (status.message() != message) {
    return Fail(absl::StrCat(what, ": status message \"", status.message(),
                             "\", expected \"", message, "\""));
  }
  return true;
}

// Checks that `body` is `size` zero bytes.
bool ExpectZeros(const std::string& body, size_t size,
                 const std::string& what) {
  if (body.size() != size) {
    return Fail(absl::StrCat(what, ": payload body is ", body.size(),
                             " bytes, expected ", size));
  }
  if (body.find_first_not_of('\0') != std::string::npos) {
    return Fail(absl::StrCat(what, ": payload body of ", size,
                             " bytes is not all zeros"));
  }
  return true;
}

// Checks that `metadata` holds `key` exactly once, with `value`.
bool ExpectMetadata(const Metadata& metadata, absl::string_view key,
                    absl::string_view value, const std::string& where) {
  int count = 0;
  for (const Metadata::Entry entry : metadata) {
    if (entry.key != key) continue;
    ++count;
    if (entry.value != value) {
      return Fail(absl::StrCat(where, ": metadata \"", key,
                               "\" has the wrong value (", entry.value.size(),
                               " bytes, expected ", value.size(), ")"));
    }
  }
  if (count == 0) {
    return Fail(absl::StrCat(where, ": metadata \"", key, "\" missing"));
  }
  if (count != 1) {
    return Fail(absl::StrCat(where, ": metadata \"", key, "\" received ", count,
                             " times, expected once"));
  }
  return true;
}

class InteropClient {
 public:
  explicit InteropClient(const std::string& target) : channel_(target) {}

  bool EmptyUnary() {
    ClientContext context;
    SetDeadline(&context);
    Empty request;
    Empty response;
    if (!ExpectOk(channel_.UnaryCall(&context, kEmptyCall, request, &response),
                  "EmptyCall")) {
      return false;
    }
    if (response.ByteSizeLong() != 0) {
      return Fail("EmptyCall: response is not an empty message");
    }
    return true;
  }

  bool LargeUnary() {
    ClientContext context;
    SetDeadline(&context);
    const SimpleRequest request = LargeUnaryRequest();
    SimpleResponse response;
    if (!ExpectOk(channel_.UnaryCall(&context, kUnaryCall, request, &response),
                  "UnaryCall")) {
      return false;
    }
    return ExpectZeros(response.payload().body(), kLargeResponseSize,
                       "UnaryCall response");
  }

  // The UnaryCall half of custom_metadata; the FullDuplexCall half waits for
  // streaming support in h2rpc.
  bool CustomMetadata() {
    ClientContext context;
    SetDeadline(&context);
    context.AddMetadata(kEchoInitialMetadataKey, kEchoInitialMetadataValue);
    context.AddMetadata(kEchoTrailingBinMetadataKey,
                        kEchoTrailingBinMetadataValue);
    const SimpleRequest request = LargeUnaryRequest();
    SimpleResponse response;
    return ExpectOk(
               channel_.UnaryCall(&context, kUnaryCall, request, &response),
               "UnaryCall with custom metadata") &&
           ExpectZeros(response.payload().body(), kLargeResponseSize,
                       "UnaryCall response") &&
           ExpectMetadata(context.GetServerInitialMetadata(),
                          kEchoInitialMetadataKey, kEchoInitialMetadataValue,
                          "UnaryCall initial metadata") &&
           ExpectMetadata(
               context.GetServerTrailingMetadata(), kEchoTrailingBinMetadataKey,
               kEchoTrailingBinMetadataValue, "UnaryCall trailing metadata");
  }

  // The UnaryCall half of status_code_and_message; the FullDuplexCall half
  // waits for streaming support in h2rpc.
  bool StatusCodeAndMessage() { return EchoStatus("test status message"); }

  bool SpecialStatusMessage() {
    return EchoStatus(
        "\t\ntest with whitespace\r\nand Unicode BMP \u263A and non-BMP "
        "\U0001F608\t\n");
  }

  bool UnimplementedMethod() {
    ClientContext context;
    SetDeadline(&context);
    Empty request;
    Empty response;
    return ExpectCode(
        channel_.UnaryCall(&context, kUnimplementedCall, request, &response),
        StatusCode::kUnimplemented, "TestService/UnimplementedCall");
  }

  bool UnimplementedService() {
    ClientContext context;
    SetDeadline(&context);
    Empty request;
    Empty response;
    return ExpectCode(channel_.UnaryCall(&context, kUnimplementedServiceCall,
                                         request, &response),
                      StatusCode::kUnimplemented,
                      "UnimplementedService/UnimplementedCall");
  }

 private:
  static void SetDeadline(ClientContext* context) {
    context->set_timeout(absl::Milliseconds(absl::GetFlag(FLAGS_deadline_ms)));
  }

  static SimpleRequest LargeUnaryRequest() {
    SimpleRequest request;
    request.set_response_size(kLargeResponseSize);
    request.mutable_payload()->set_body(std::string(kLargeRequestSize, '\0'));
    return request;
  }

  // UnaryCall asking for status UNKNOWN with `message`.
  bool EchoStatus(const std::string& message) {
    ClientContext context;
    SetDeadline(&context);
    SimpleRequest request;
    request.mutable_response_status()->set_code(2);
    request.mutable_response_status()->set_message(message);
    SimpleResponse response;
    return ExpectStatus(
        channel_.UnaryCall(&context, kUnaryCall, request, &response),
        StatusCode::kUnknown, message, "UnaryCall");
  }

  Channel channel_;
};

using TestCase = bool (InteropClient::*)();

const std::map<std::string, TestCase>& TestCases() {
  static const auto* cases = new std::map<std::string, TestCase>{
      {"empty_unary", &InteropClient::EmptyUnary},
      {"large_unary", &InteropClient::LargeUnary},
      {"custom_metadata", &InteropClient::CustomMetadata},
      {"status_code_and_message", &InteropClient::StatusCodeAndMessage},
      {"special_status_message", &InteropClient::SpecialStatusMessage},
      {"unimplemented_method", &InteropClient::UnimplementedMethod},
      {"unimplemented_service", &InteropClient::UnimplementedService},
  };
  return *cases;
}

int Run() {
  const std::string test_case = absl::GetFlag(FLAGS_test_case);
  const auto& cases = TestCases();
  auto it = cases.find(test_case);
  if (it == cases.end()) {
    std::vector<std::string> names;
    for (const auto& entry : cases) names.push_back(entry.first);
    std::fprintf(stderr,
                 "unsupported --test_case=\"%s\"; this client implements: %s\n",
                 test_case.c_str(), absl::StrJoin(names, ", ").c_str());
    return 2;
  }
  std::string target;
  if (const int bad = CheckClientFlags(
          absl::GetFlag(FLAGS_server_host), absl::GetFlag(FLAGS_server_port),
          absl::GetFlag(FLAGS_deadline_ms), &target)) {
    return bad;
  }

  bool passed;
  {
    InteropClient client(target);
    passed = (client.*(it->second))();
  }
  std::fprintf(stderr, "%s: %s against %s\n", test_case.c_str(),
               passed ? "PASSED" : "FAILED", target.c_str());
  return passed ? 0 : 1;
}

}  // namespace
}  // namespace h2rpc::testing

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return h2rpc::testing::Run();
}
