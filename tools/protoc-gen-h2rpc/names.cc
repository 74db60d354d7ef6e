#include "tools/protoc-gen-h2rpc/names.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace h2rpc::codegen {
namespace {

// Sorted, for binary search.
constexpr absl::string_view kKeywords[] = {
    "EOF",
    "NULL",
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "assert",
    "auto",
    "bitand",
    "bitor",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "char16_t",
    "char32_t",
    "char8_t",
    "class",
    "co_await",
    "co_return",
    "co_yield",
    "compl",
    "concept",
    "const",
    "const_cast",
    "consteval",
    "constexpr",
    "constinit",
    "continue",
    "decltype",
    "default",
    "delete",
    "do",
    "double",
    "dynamic_cast",
    "else",
    "enum",
    "errno",
    "explicit",
    "export",
    "extern",
    "false",
    "float",
    "for",
    "friend",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "offsetof",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "requires",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "static_cast",
    "stderr",
    "stdin",
    "stdout",
    "struct",
    "switch",
    "template",
    "this",
    "thread_local",
    "throw",
    "true",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "while",
    "xor",
    "xor_eq",
};

}  // namespace

bool IsCppKeyword(absl::string_view name) {
  return std::binary_search(std::begin(kKeywords), std::end(kKeywords), name);
}

std::string EscapeIdentifier(absl::string_view name,
                             absl::Span<const absl::string_view> reserved) {
  if (IsCppKeyword(name) ||
      std::find(reserved.begin(), reserved.end(), name) != reserved.end()) {
    return absl::StrCat(name, "_");
  }
  return std::string(name);
}

std::vector<std::string> PackageNamespaces(absl::string_view package) {
  if (package.empty()) return {};
  return absl::StrSplit(package, '.');
}

std::string JoinNamespaces(absl::Span<const std::string> namespaces) {
  return absl::StrJoin(namespaces, "::");
}

std::string IncludeGuard(absl::string_view header_path) {
  std::string guard;
  if (!header_path.empty() && absl::ascii_isdigit(header_path[0])) {
    guard = "H2RPC_";
  }
  for (char c : header_path) {
    guard += absl::ascii_isalnum(c) ? absl::ascii_toupper(c) : '_';
  }
  guard += '_';
  return guard;
}

std::string CommentLines(absl::string_view comment, int indent) {
  comment = absl::StripSuffix(comment, "\n");
  if (absl::StripAsciiWhitespace(comment).empty()) return "";
  const std::string prefix(indent, ' ');
  std::string out;
  for (absl::string_view line : absl::StrSplit(comment, '\n')) {
    line = absl::StripTrailingAsciiWhitespace(line);
    while (absl::ConsumeSuffix(&line, "\\")) {
      line = absl::StripTrailingAsciiWhitespace(line);
    }
    absl::StrAppend(&out, prefix, "//", line, "\n");
  }
  return out;
}

}  // namespace h2rpc::codegen
