#include "rpc/internal/config/json_document.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/status.h"
#include "base/status_code.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace h2rpc::internal {
namespace {

constexpr size_t kDepth = 255;

// The message of the error parsing `text`, or "OK".
std::string ErrorOf(absl::string_view text, size_t max_depth = kDepth) {
  JsonDocument document;
  const Status status = document.Parse(text, max_depth);
  if (status.ok()) return "OK";
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(document.root().is_null());
  return status.message();
}

TEST(JsonDocumentTest, ParsesValues) {
  JsonDocument document;
  ASSERT_TRUE(document
                  .Parse(R"({"a": [1, -2, 1.5, "x\u00e9", true, null, {}],
                             "b": {"c": 18446744073709551615}})",
                         kDepth)
                  .ok());
  const nlohmann::json& root = document.root();
  EXPECT_EQ(root["a"][0], 1);
  EXPECT_EQ(root["a"][1], -2);
  EXPECT_EQ(root["a"][2], 1.5);
  EXPECT_EQ(root["a"][3], "x\xc3\xa9");
  EXPECT_EQ(root["a"][4], true);
  EXPECT_TRUE(root["a"][5].is_null());
  EXPECT_TRUE(root["a"][6].is_object());
  EXPECT_EQ(root["b"]["c"].get<uint64_t>(), 18446744073709551615u);
}

TEST(JsonDocumentTest, KeepsTheTextOfFloatMembers) {
  JsonDocument document;
  ASSERT_TRUE(document
                  .Parse(R"({"ratio": 1.0010, "small": 1e-3, "int": 5,
                             "list": [0.5], "deep": {"x": 100000000000000000000}})",
                         kDepth)
                  .ok());
  const nlohmann::json& root = document.root();
  ASSERT_NE(document.NumberText(root["ratio"]), nullptr);
  EXPECT_EQ(*document.NumberText(root["ratio"]), "1.0010");
  ASSERT_NE(document.NumberText(root["small"]), nullptr);
  EXPECT_EQ(*document.NumberText(root["small"]), "1e-3");
  // An integer too large for 64 bits is a double with its digits kept.
  ASSERT_NE(document.NumberText(root["deep"]["x"]), nullptr);
  EXPECT_EQ(*document.NumberText(root["deep"]["x"]), "100000000000000000000");
  // Integers, array elements and the top level keep none.
  EXPECT_EQ(document.NumberText(root["int"]), nullptr);
  EXPECT_EQ(document.NumberText(root["list"][0]), nullptr);
  ASSERT_TRUE(document.Parse("2.50", kDepth).ok());
  EXPECT_EQ(document.NumberText(document.root()), nullptr);
}

TEST(JsonDocumentTest, ParseReplacesTheDocument) {
  JsonDocument document;
  ASSERT_TRUE(document.Parse(R"({"a": 0.5})", kDepth).ok());
  const nlohmann::json* old_member = &document.root()["a"];
  ASSERT_TRUE(document.Parse(R"({"b": 1})", kDepth).ok());
  EXPECT_FALSE(document.root().contains("a"));
  EXPECT_EQ(document.NumberText(*old_member), nullptr);
  EXPECT_FALSE(document.Parse("{", kDepth).ok());
  EXPECT_TRUE(document.root().is_null());
}

TEST(JsonDocumentTest, SyntaxErrorsSayWhere) {
  for (const char* text :
       {"", "{", R"({"a": 1,})", "{'a': 1}", "// comment\n{}", "/* c */ {}",
        R"({"a": 1} x)", R"({"a": tru})", "{\"a\": \"\x01\"}",
        R"({"a": "\ud800"})", R"({"a": 01})", R"({"a": NaN})", "[1,]"}) {
    SCOPED_TRACE(text);
    const std::string error = ErrorOf(text);
    EXPECT_EQ(error.rfind("invalid JSON: parse error at line ", 0), 0u)
        << error;
  }
  EXPECT_EQ(ErrorOf("{\n  \"a\": x}"),
            "invalid JSON: parse error at line 2, column 8: syntax error "
            "while parsing value - invalid literal; last read: '\"a\": x'");
}

TEST(JsonDocumentTest, MessagesEscapeAndCutTheInput) {
  EXPECT_EQ(ErrorOf("{\"a\": \"\x80\"}"),
            "invalid JSON: parse error at line 1, column 8: syntax error "
            "while parsing value - invalid string: ill-formed UTF-8 byte; "
            "last read: '\"\\x80'");
  const std::string long_token =
      ErrorOf(absl::StrCat("{\"a\": \"", std::string(10000, 'x'), "\x01\"}"));
  EXPECT_LE(long_token.size(), 300u);
  EXPECT_EQ(long_token.substr(long_token.size() - 3), "...");
}

TEST(JsonDocumentTest, NumberOverflowSaysWhichByte) {
  EXPECT_EQ(ErrorOf(R"({"a": 1e999})"),
            "invalid JSON: number overflow parsing '1e999' at byte 11");
}

TEST(JsonDocumentTest, NulIsAnError) {
  // nlohmann alone would stop at the NUL and accept "{}".
  EXPECT_EQ(ErrorOf(absl::string_view("{}\0{", 4)),
            "invalid JSON: NUL at byte 2");
  EXPECT_EQ(ErrorOf(absl::string_view("{\"a\0\": 1}", 9)),
            "invalid JSON: NUL at byte 3");
}

TEST(JsonDocumentTest, RepeatedKeyIsAnError) {
  EXPECT_EQ(ErrorOf(R"({"a": 1, "b": 2, "a": 3})"),
            R"(key "a" appears twice in one object)");
  EXPECT_EQ(ErrorOf(R"({"m": [{}, {"t": "1s", "t": "1s"}]})"),
            R"(m[1]: key "t" appears twice in one object)");
  EXPECT_EQ(ErrorOf(R"({"x y": {"k\n": [], "k\n": []}})"),
            R"(["x y"]: key "k\n" appears twice in one object)");
  // The same key in different objects is fine.
  EXPECT_EQ(ErrorOf(R"({"a": {"a": {"a": 1}}, "b": [{"a": 1}, {"a": 2}]})"),
            "OK");
}

TEST(JsonDocumentTest, NestingLimit) {
  const auto nested = [](int depth) {
    return absl::StrCat(std::string(depth, '['), std::string(depth, ']'));
  };
  EXPECT_EQ(ErrorOf(nested(255)), "OK");
  EXPECT_EQ(ErrorOf(nested(256)).substr(0, 12), "[0][0][0][0]");
  EXPECT_NE(ErrorOf(nested(256))
                .find(": nested deeper than 255 levels (max_nesting_depth)"),
            std::string::npos);
  EXPECT_EQ(ErrorOf(R"({"a": [[1]]})", 3), "OK");
  EXPECT_EQ(ErrorOf(R"({"a": [[{}]]})", 3),
            "a[0][0]: nested deeper than 3 levels (max_nesting_depth)");
  EXPECT_EQ(ErrorOf(R"({"a": {"b": {}}})", 2),
            "a.b: nested deeper than 2 levels (max_nesting_depth)");
  EXPECT_EQ(ErrorOf("[]", 0),
            "nested deeper than 0 levels (max_nesting_depth)");
  EXPECT_EQ(ErrorOf("1", 0), "OK");
}

TEST(JsonDocumentTest, Paths) {
  EXPECT_EQ(JsonMemberPath("", "a"), "a");
  EXPECT_EQ(JsonMemberPath("a", "b_2"), "a.b_2");
  EXPECT_EQ(JsonMemberPath("", "x y"), R"(["x y"])");
  EXPECT_EQ(JsonMemberPath("a", ""), R"(a[""])");
  EXPECT_EQ(JsonMemberPath("a", "\"\x01"), R"(a["\"\x01"])");
  EXPECT_EQ(JsonElementPath("a", 3), "a[3]");
  EXPECT_EQ(JsonElementPath("", 0), "[0]");
  EXPECT_EQ(QuoteForMessage("ok"), R"("ok")");
  EXPECT_EQ(QuoteForMessage(std::string(65, 'x')),
            absl::StrCat("\"", std::string(64, 'x'), "\"..."));
}

}  // namespace
}  // namespace h2rpc::internal
