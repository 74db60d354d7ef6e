#ifndef H2RPC_TOOLS_PROTOC_GEN_H2RPC_LAYOUT_H_
#define H2RPC_TOOLS_PROTOC_GEN_H2RPC_LAYOUT_H_

// Lays out the long lines of generated code within 80 columns the way
// clang-format's Google style does in the common cases: a declaration or call
// on one line if it fits; else its arguments aligned after '(' (bin-packed);
// else broken after '(' and indented by 4; else the return type on a line of
// its own. A type that still does not fit is broken (WrapPiece). Lines that
// cannot be made to fit (a very long name) are left long rather than broken
// in odd places.

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace h2rpc::codegen {

inline constexpr int kColumnLimit = 80;

// `return_type head(args...)tail`: a function declaration, the head of a
// definition, a lambda introducer ("[this]"), or a call statement.
struct CallLayout {
  // Empty for a call; otherwise goes on its own line when the rest does not
  // fit after it.
  std::string return_type;
  // The name ("Stub::GetFeature", "return channel_->UnaryCall").
  std::string head;
  // Parameters or arguments, without the separating commas.
  std::vector<std::string> args;
  // What follows the ')': ";", " {", " override;".
  std::string tail;
};

// The lines of `call` at `indent` spaces, each ending in '\n'.
std::string LayOutCall(int indent, const CallLayout& call);

// The same, but only on one line or aligned after '(': false (and `*out`
// untouched) when neither fits.
bool LayOutCallAligned(int indent, const CallLayout& call, std::string* out);

// A type, or a parameter ("Type name"), starting at `column`: unchanged if
// it fits; else broken the first of these ways that fits: after the commas
// of a template argument list, aligned after its '<'; before the parameter's
// name (indented by 4); after its first '<' (indented by 4). Returns the
// lines without '\n'; the first one is not indented, the others are.
std::vector<std::string> WrapPiece(absl::string_view text, int column);

// `lhs = rhs;` at `indent`. If it does not fit: the template arguments of
// `rhs` broken after their commas and aligned, if that fits; else broken
// after '=' (indented by 4, `rhs` broken with WrapPiece). Ends in '\n'.
std::string LayOutAssignment(int indent, absl::string_view lhs,
                             absl::string_view rhs);

// `text` as `// ` comment lines at `indent`, its words wrapped at 80
// columns; lines after the first get `hanging` more spaces after "// " (for
// list items). Ends in '\n'.
std::string WrapComment(int indent, absl::string_view text, int hanging = 0);

}  // namespace h2rpc::codegen

#endif  // H2RPC_TOOLS_PROTOC_GEN_H2RPC_LAYOUT_H_
