#include "tools/protoc-gen-h2rpc/names.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace h2rpc::codegen {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(IsCppKeywordTest, EveryKeywordIsOne) {
  // C++20's keywords and alternative tokens, listed independently of
  // names.cc (whose table must be sorted for its binary search).
  const char* keywords[] = {
      "alignas",       "alignof",     "and",
      "and_eq",        "asm",         "auto",
      "bitand",        "bitor",       "bool",
      "break",         "case",        "catch",
      "char",          "char8_t",     "char16_t",
      "char32_t",      "class",       "compl",
      "concept",       "const",       "consteval",
      "constexpr",     "constinit",   "const_cast",
      "continue",      "co_await",    "co_return",
      "co_yield",      "decltype",    "default",
      "delete",        "do",          "double",
      "dynamic_cast",  "else",        "enum",
      "explicit",      "export",      "extern",
      "false",         "float",       "for",
      "friend",        "goto",        "if",
      "inline",        "int",         "long",
      "mutable",       "namespace",   "new",
      "noexcept",      "not",         "not_eq",
      "nullptr",       "operator",    "or",
      "or_eq",         "private",     "protected",
      "public",        "register",    "reinterpret_cast",
      "requires",      "return",      "short",
      "signed",        "sizeof",      "static",
      "static_assert", "static_cast", "struct",
      "switch",        "template",    "this",
      "thread_local",  "throw",       "true",
      "try",           "typedef",     "typeid",
      "typename",      "union",       "unsigned",
      "using",         "virtual",     "void",
      "volatile",      "wchar_t",     "while",
      "xor",           "xor_eq",
  };
  for (const char* keyword : keywords) {
    EXPECT_TRUE(IsCppKeyword(keyword)) << keyword;
  }
}

TEST(IsCppKeywordTest, StandardMacrosCount) {
  for (const char* macro : {"NULL", "assert", "errno", "EOF", "stdin", "stdout",
                            "stderr", "offsetof"}) {
    EXPECT_TRUE(IsCppKeyword(macro)) << macro;
  }
}

TEST(IsCppKeywordTest, OtherNamesAreNot) {
  for (const char* name :
       {"", "Class", "DELETE", "delete_", "foo", "GetFeature", "std",
        "override", "final", "import", "module"}) {
    EXPECT_FALSE(IsCppKeyword(name)) << name;
  }
}

TEST(EscapeIdentifierTest, KeywordsGetATrailingUnderscore) {
  EXPECT_EQ(EscapeIdentifier("delete"), "delete_");
  EXPECT_EQ(EscapeIdentifier("co_await"), "co_await_");
  EXPECT_EQ(EscapeIdentifier("GetFeature"), "GetFeature");
  // Which is why "delete" and "delete_" would clash (the model rejects it).
  EXPECT_EQ(EscapeIdentifier("delete_"), "delete_");
}

TEST(EscapeIdentifierTest, ReservedNamesToo) {
  constexpr absl::string_view kReserved[] = {"Stub", "AddTo"};
  EXPECT_EQ(EscapeIdentifier("Stub", kReserved), "Stub_");
  EXPECT_EQ(EscapeIdentifier("AddTo", kReserved), "AddTo_");
  EXPECT_EQ(EscapeIdentifier("stub", kReserved), "stub");
  EXPECT_EQ(EscapeIdentifier("Service", kReserved), "Service");
}

TEST(PackageNamespacesTest, OnePerComponent) {
  EXPECT_THAT(PackageNamespaces("a.b.c"), ElementsAre("a", "b", "c"));
  EXPECT_THAT(PackageNamespaces("routeguide"), ElementsAre("routeguide"));
  EXPECT_THAT(PackageNamespaces(""), IsEmpty());
}

TEST(JoinNamespacesTest, WithColons) {
  EXPECT_EQ(JoinNamespaces(std::vector<std::string>{"a", "b", "c"}), "a::b::c");
  EXPECT_EQ(JoinNamespaces(std::vector<std::string>{}), "");
}

TEST(IncludeGuardTest, FromThePath) {
  EXPECT_EQ(IncludeGuard("docs/examples/route_guide.h2rpc.pb.h"),
            "DOCS_EXAMPLES_ROUTE_GUIDE_H2RPC_PB_H_");
  EXPECT_EQ(IncludeGuard("tools/protoc-gen-h2rpc/x.h2rpc.pb.h"),
            "TOOLS_PROTOC_GEN_H2RPC_X_H2RPC_PB_H_");
  // An identifier cannot start with a digit.
  EXPECT_EQ(IncludeGuard("1x.h2rpc.pb.h"), "H2RPC_1X_H2RPC_PB_H_");
}

TEST(CommentLinesTest, EachLineACommentLine) {
  EXPECT_EQ(CommentLines(" Obtains a feature.\n\n Or an empty one.\n", 2),
            "  // Obtains a feature.\n"
            "  //\n"
            "  // Or an empty one.\n");
  EXPECT_EQ(CommentLines("No space\n", 0), "//No space\n");
}

TEST(CommentLinesTest, NoCommentNoLines) {
  EXPECT_EQ(CommentLines("", 2), "");
  EXPECT_EQ(CommentLines("\n", 2), "");
  EXPECT_EQ(CommentLines("  \n \n", 0), "");
}

TEST(CommentLinesTest, TrailingBlanksAndBackslashesDropped) {
  // A trailing backslash would splice the next line (code) into the comment.
  EXPECT_EQ(CommentLines(" Path C:\\dir\\ \\\n Next  \n", 0),
            "// Path C:\\dir\n"
            "// Next\n");
}

}  // namespace
}  // namespace h2rpc::codegen
