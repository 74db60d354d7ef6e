#ifndef H2RPC_TOOLS_PROTOC_GEN_H2RPC_NAMES_H_
#define H2RPC_TOOLS_PROTOC_GEN_H2RPC_NAMES_H_

// C++ names for the code protoc-gen-h2rpc generates: keyword escaping,
// namespaces, include guards, comments. Pure string functions.

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace h2rpc::codegen {

// True for the C++ keywords (C++20's included, and the alternative tokens
// such as `and`) and for the standard macros a generated declaration would
// expand (NULL, assert, errno, EOF, stdin, stdout, stderr, offsetof).
bool IsCppKeyword(absl::string_view name);

// `name` followed by an underscore when it is a C++ keyword or one of
// `reserved`, else `name` (protobuf escapes keyword message names the same
// way). "delete" -> "delete_", "Stub" with reserved {"Stub"} -> "Stub_".
std::string EscapeIdentifier(absl::string_view name,
                             absl::Span<const absl::string_view> reserved = {});

// The C++ namespaces of a proto package, outermost first: "a.b.c" ->
// {"a", "b", "c"}; "" -> {}.
std::vector<std::string> PackageNamespaces(absl::string_view package);

// "a::b::c" for {"a", "b", "c"}; "" for none.
std::string JoinNamespaces(absl::Span<const std::string> namespaces);

// The include guard of a generated header, from its path:
// "docs/examples/route_guide.h2rpc.pb.h" ->
// "DOCS_EXAMPLES_ROUTE_GUIDE_H2RPC_PB_H_". Characters other than letters and
// digits become '_'; a leading digit gets an "H2RPC_" prefix.
std::string IncludeGuard(absl::string_view header_path);

// A comment from a .proto (protobuf's SourceLocation::leading_comments:
// lines ending in '\n', usually starting with a space) as C++ `//` lines,
// each prefixed with `indent` spaces and ending in '\n'. Trailing blanks and
// a trailing backslash (which would continue the comment onto the next line)
// are dropped. "" for an empty comment.
std::string CommentLines(absl::string_view comment, int indent);

}  // namespace h2rpc::codegen

#endif  // H2RPC_TOOLS_PROTOC_GEN_H2RPC_NAMES_H_
