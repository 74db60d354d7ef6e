#include "tools/protoc-gen-h2rpc/layout.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace h2rpc::codegen {
namespace {

using ::testing::ElementsAre;

// The expected layouts below are what clang-format (Google style) gives.

TEST(LayOutCallTest, OneLineWhenItFits) {
  EXPECT_EQ(LayOutCall(2, {"void", "Run", {"int a", "int b"}, ";"}),
            "  void Run(int a, int b);\n");
  EXPECT_EQ(LayOutCall(0, {"", "Run", {}, ";"}), "Run();\n");
}

TEST(LayOutCallTest, AlignedAfterTheParenthesis) {
  EXPECT_EQ(LayOutCall(2, {"::h2rpc::Status",
                           "GetFeature",
                           {"::h2rpc::ClientContext* context",
                            "const ::routeguide::Point& request",
                            "::routeguide::Feature* response"},
                           ";"}),
            "  ::h2rpc::Status GetFeature(::h2rpc::ClientContext* context,\n"
            "                             const ::routeguide::Point& request,\n"
            "                             ::routeguide::Feature* response);\n");
}

TEST(LayOutCallTest, BinPacksArguments) {
  EXPECT_EQ(LayOutCall(2, {"",
                           "channel_->AsyncUnaryCall",
                           {"context", "kGetFeaturePath", "request", "response",
                            "std::move(done)"},
                           ";"}),
            "  channel_->AsyncUnaryCall(context, kGetFeaturePath, request, "
            "response,\n"
            "                           std::move(done));\n");
}

TEST(LayOutCallTest, BrokenAfterTheParenthesisWhenAlignedDoesNotFit) {
  EXPECT_EQ(
      LayOutCall(2, {"void",
                     "AsyncListFeatures",
                     {"::h2rpc::ClientContext* context",
                      "const ::routeguide::Rectangle& request",
                      "::h2rpc::ClientReadReactor<::routeguide::Feature>* "
                      "reactor"},
                     ";"}),
      "  void AsyncListFeatures(\n"
      "      ::h2rpc::ClientContext* context, const ::routeguide::Rectangle& "
      "request,\n"
      "      ::h2rpc::ClientReadReactor<::routeguide::Feature>* reactor);\n");
}

TEST(LayOutCallTest, AlignedWithATemplateBrokenWhenThatFits) {
  EXPECT_EQ(
      LayOutCall(6, {"",
                     "[this]",
                     {"::h2rpc::ServerContext* context",
                      "::h2rpc::ServerReaderWriter<::routeguide::"
                      "RouteNote, ::routeguide::RouteNote>* stream"},
                     " {"}),
      "      [this](::h2rpc::ServerContext* context,\n"
      "             ::h2rpc::ServerReaderWriter<::routeguide::RouteNote,\n"
      "                                         ::routeguide::RouteNote>* "
      "stream) {\n");
}

TEST(LayOutCallTest, ReturnTypeOnItsOwnLineWhenTheHeadDoesNotFit) {
  EXPECT_EQ(LayOutCall(2, {"std::unique_ptr<::h2rpc::ClientReaderWriter<"
                           "::routeguide::RouteNote, ::routeguide::RouteNote>>",
                           "RouteChat",
                           {"::h2rpc::ClientContext* context"},
                           ";"}),
            "  std::unique_ptr<::h2rpc::ClientReaderWriter<::routeguide::"
            "RouteNote,\n"
            "                                              ::routeguide::"
            "RouteNote>>\n"
            "  RouteChat(::h2rpc::ClientContext* context);\n");
}

TEST(LayOutCallTest, TemplateHeadOfACallBroken) {
  EXPECT_EQ(LayOutCall(2, {"",
                           "return channel_->ServerStreamingCall<::routeguide::"
                           "Rectangle, ::routeguide::Feature>",
                           {"context", "kListFeaturesPath", "request"},
                           ";"}),
            "  return channel_->ServerStreamingCall<::routeguide::Rectangle,\n"
            "                                       ::routeguide::Feature>(\n"
            "      context, kListFeaturesPath, request);\n");
}

TEST(LayOutCallAlignedTest, FailsRatherThanBreakingAfterTheParenthesis) {
  std::string out = "untouched";
  EXPECT_FALSE(LayOutCallAligned(
      2,
      {"void",
       "AsyncListFeatures",
       {"::h2rpc::ClientContext* context",
        "const ::routeguide::Rectangle& request",
        "::h2rpc::ClientReadReactor<::routeguide::Feature>* reactor"},
       ";"},
      &out));
  EXPECT_EQ(out, "untouched");
  EXPECT_TRUE(LayOutCallAligned(2, {"void", "Run", {"int a"}, ";"}, &out));
  EXPECT_EQ(out, "  void Run(int a);\n");
}

TEST(WrapPieceTest, UnchangedWhenItFits) {
  EXPECT_THAT(WrapPiece("::a::B<C, D>* name", 60),
              ElementsAre("::a::B<C, D>* name"));
}

TEST(WrapPieceTest, TemplateArgumentsAligned) {
  EXPECT_THAT(
      WrapPiece("::h2rpc::ClientBidiReactor<::routeguide::RouteNote, "
                "::routeguide::RouteNote>* reactor);",
                6),
      ElementsAre("::h2rpc::ClientBidiReactor<::routeguide::RouteNote,",
                  "                                 ::routeguide::RouteNote>* "
                  "reactor);"));
}

TEST(WrapPieceTest, NameOnItsOwnLine) {
  EXPECT_THAT(
      WrapPiece("::h2rpc::ClientReadReactor<::h2rpc_test::codegen::v1::Outer_"
                "Inner>* reactor);",
                6),
      ElementsAre(
          "::h2rpc::ClientReadReactor<::h2rpc_test::codegen::v1::Outer_Inner>*",
          "          reactor);"));
}

TEST(WrapPieceTest, BrokenAfterTheFirstAngleBracket) {
  EXPECT_THAT(
      WrapPiece("std::unique_ptr<::h2rpc::ClientReaderWriter<::h2rpc_test::"
                "codegen::v1::Outer_Inner, ::h2rpc_test::codegen::v1::Outer_"
                "Inner>>",
                2),
      ElementsAre(
          "std::unique_ptr<",
          "      ::h2rpc::ClientReaderWriter<::h2rpc_test::codegen::v1::Outer_"
          "Inner,",
          "                                  ::h2rpc_test::codegen::v1::Outer_"
          "Inner>>"));
}

TEST(WrapPieceTest, ArrowIsNotAnAngleBracket) {
  EXPECT_THAT(
      WrapPiece("return channel_->BidiStreamingCall<::routeguide::RouteNote, "
                "::routeguide::RouteNote>(",
                2),
      ElementsAre("return channel_->BidiStreamingCall<::routeguide::RouteNote,",
                  "                                     ::routeguide::"
                  "RouteNote>("));
}

TEST(LayOutAssignmentTest, OneLineThenTemplateThenAfterEquals) {
  EXPECT_EQ(LayOutAssignment(2, "static constexpr char kA[]", "\"/a.B/C\""),
            "  static constexpr char kA[] = \"/a.B/C\";\n");
  EXPECT_EQ(LayOutAssignment(2, "using Reactor",
                             "::h2rpc::ServerBidiReactor<::routeguide::"
                             "RouteNote, ::routeguide::RouteNote>"),
            "  using Reactor = ::h2rpc::ServerBidiReactor<::routeguide::"
            "RouteNote,\n"
            "                                             ::routeguide::"
            "RouteNote>;\n");
  EXPECT_EQ(LayOutAssignment(2, "static constexpr char kListFeaturesPath[]",
                             "\"/routeguide.RouteGuide/ListFeatures\""),
            "  static constexpr char kListFeaturesPath[] =\n"
            "      \"/routeguide.RouteGuide/ListFeatures\";\n");
}

TEST(WrapCommentTest, WordsWrappedAt80Columns) {
  const std::string text =
      "- unary: Foo(context, request, response) blocks until the call is "
      "over; AsyncFoo(context, request, response, done) returns at once";
  EXPECT_EQ(WrapComment(0, text, 2),
            "// - unary: Foo(context, request, response) blocks until the call "
            "is over;\n"
            "//   AsyncFoo(context, request, response, done) returns at "
            "once\n");
  EXPECT_EQ(WrapComment(4, "Short."), "    // Short.\n");
}

// Whatever the lengths of the names, every line fits unless a single name
// is longer than the line.
TEST(LayoutPropertyTest, EveryLineFits) {
  for (int length = 1; length < 40; ++length) {
    const std::string type = absl::StrCat("::pkg::", std::string(length, 'T'));
    const std::string name = std::string(length, 'M');
    for (const std::string& text : {
             LayOutCall(2, {absl::StrCat("std::unique_ptr<::h2rpc::"
                                         "ClientReaderWriter<",
                                         type, ", ", type, ">>"),
                            name,
                            {"::h2rpc::ClientContext* context"},
                            ";"}),
             LayOutCall(2, {"void",
                            absl::StrCat("Async", name),
                            {"::h2rpc::ClientContext* context",
                             absl::StrCat("const ", type, "& request"),
                             absl::StrCat(type, "* response"),
                             "::absl::AnyInvocable<void(const "
                             "::h2rpc::Status&)> done"},
                            ";"}),
             LayOutCall(0, {"void",
                            absl::StrCat("Service::", name),
                            {"::h2rpc::ServerContext* /*context*/",
                             absl::StrCat("::h2rpc::ServerBidiReactor<", type,
                                          ", ", type, ">* /*stream*/")},
                            " {"}),
             LayOutAssignment(2, "using Reactor",
                              absl::StrCat("::h2rpc::ServerBidiReactor<", type,
                                           ", ", type, ">")),
         }) {
      for (absl::string_view line : absl::StrSplit(text, '\n')) {
        EXPECT_LE(line.size(), kColumnLimit) << line << "\nin\n" << text;
      }
    }
  }
}

}  // namespace
}  // namespace h2rpc::codegen
