#include "tools/protoc-gen-h2rpc/layout.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace h2rpc::codegen {
namespace {

int Width(absl::string_view text) { return static_cast<int>(text.size()); }

bool Fits(absl::string_view line) { return Width(line) <= kColumnLimit; }

// Whether text[i] opens or closes a bracket; the '>' of "->" does neither.
bool Opens(absl::string_view text, size_t i) {
  return text[i] == '<' || text[i] == '(' || text[i] == '[';
}
bool Closes(absl::string_view text, size_t i) {
  if (text[i] == '>') return i == 0 || text[i - 1] != '-';
  return text[i] == ')' || text[i] == ']';
}

// The index of the bracket closing the one opened at `open`, or npos.
size_t MatchingClose(absl::string_view text, size_t open) {
  int depth = 0;
  for (size_t i = open; i < text.size(); ++i) {
    if (Opens(text, i)) ++depth;
    if (Closes(text, i) && --depth == 0) return i;
  }
  return absl::string_view::npos;
}

// `text` split at the commas outside any bracket, each piece trimmed.
std::vector<absl::string_view> SplitTopLevel(absl::string_view text) {
  std::vector<absl::string_view> pieces;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (Opens(text, i)) ++depth;
    if (Closes(text, i)) --depth;
    if (text[i] == ',' && depth == 0) {
      pieces.push_back(
          absl::StripAsciiWhitespace(text.substr(start, i - start)));
      start = i + 1;
    }
  }
  pieces.push_back(absl::StripAsciiWhitespace(text.substr(start)));
  return pieces;
}

std::vector<std::string> AlignTemplateArguments(absl::string_view text,
                                                int column);

// How Pack treats a piece that does not fit on a line of its own.
enum class Wrap {
  kNever,     // the layout fails
  kIfItFits,  // AlignTemplateArguments, if all its lines fit; else fails
  kAlways,    // WrapPiece, leaving lines long if it must
};

// Appends `pieces` to `*lines`, bin-packed: as many per line as fit, the
// first one after the text already on the last line, the others on lines
// starting at column `align`. A piece that does not fit on a line of its own
// is broken as `wrap` says. Returns false when the layout does not fit.
bool Pack(const std::vector<std::string>& pieces, int align, Wrap wrap,
          std::vector<std::string>* lines) {
  const std::string indentation(align, ' ');
  // Whether the last line holds a piece already (else it ends in '(' or is
  // about to be started).
  bool line_has_piece = false;
  for (const std::string& piece : pieces) {
    std::string& line = lines->back();
    if (!line_has_piece && Fits(line + piece)) {
      line += piece;
      line_has_piece = true;
      continue;
    }
    if (line_has_piece && Fits(absl::StrCat(line, " ", piece))) {
      absl::StrAppend(&line, " ", piece);
      continue;
    }
    // A new line, unless the last one is still empty.
    if (line_has_piece || Width(line) > align) {
      lines->push_back(indentation);
    }
    if (Fits(indentation + piece)) {
      lines->back() += piece;
      line_has_piece = true;
      continue;
    }
    if (wrap == Wrap::kNever) return false;
    std::vector<std::string> wrapped =
        wrap == Wrap::kIfItFits ? AlignTemplateArguments(piece, align)
                                : WrapPiece(piece, align);
    if (wrap == Wrap::kIfItFits) {
      if (!Fits(lines->back() + wrapped[0])) return false;
      for (size_t i = 1; i < wrapped.size(); ++i) {
        if (!Fits(wrapped[i])) return false;
      }
    }
    lines->back() += wrapped[0];
    for (size_t i = 1; i < wrapped.size(); ++i) lines->push_back(wrapped[i]);
    // The next piece starts a line of its own.
    lines->push_back(indentation);
    line_has_piece = false;
  }
  if (!line_has_piece && Width(lines->back()) == align && lines->size() > 1) {
    lines->pop_back();  // never left empty: the last piece is on a line
  }
  return true;
}

// `pieces`: the arguments with their commas, the last one with ")" + tail.
std::vector<std::string> Pieces(const CallLayout& call) {
  std::vector<std::string> pieces;
  for (size_t i = 0; i < call.args.size(); ++i) {
    pieces.push_back(i + 1 < call.args.size()
                         ? absl::StrCat(call.args[i], ",")
                         : absl::StrCat(call.args[i], ")", call.tail));
  }
  return pieces;
}

std::string JoinLines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) absl::StrAppend(&out, line, "\n");
  return out;
}

// WrapPiece's first way: `text` broken after the commas of its first
// template argument list with several arguments, aligned after its '<'; or
// `text` unchanged when it has no such list.
std::vector<std::string> AlignTemplateArguments(absl::string_view text,
                                                int column) {
  for (size_t open = text.find('<'); open != absl::string_view::npos;
       open = text.find('<', open + 1)) {
    const size_t close = MatchingClose(text, open);
    if (close == absl::string_view::npos) break;
    std::vector<absl::string_view> args =
        SplitTopLevel(text.substr(open + 1, close - open - 1));
    if (args.size() < 2) continue;
    std::vector<std::string> pieces;
    for (size_t i = 0; i < args.size(); ++i) {
      pieces.push_back(i + 1 < args.size()
                           ? absl::StrCat(args[i], ",")
                           : absl::StrCat(args[i], text.substr(close)));
    }
    // Pack works on whole lines: give the first one its indentation, then
    // take it off again.
    std::vector<std::string> lines = {
        absl::StrCat(std::string(column, ' '), text.substr(0, open + 1))};
    Pack(pieces, column + static_cast<int>(open) + 1, Wrap::kAlways, &lines);
    lines[0].erase(0, column);
    return lines;
  }
  return {std::string(text)};
}

// Whether WrapPiece's `lines` fit, the first starting at `column`.
bool AllFit(const std::vector<std::string>& lines, int column) {
  if (column + Width(lines[0]) > kColumnLimit) return false;
  for (size_t i = 1; i < lines.size(); ++i) {
    if (!Fits(lines[i])) return false;
  }
  return true;
}

bool IsIdentifierStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

// The index of the space between the type and the name of a parameter
// ("const Foo<Bar>& name),", "Foo* /*name*/) {"), or npos.
size_t NameSpace(absl::string_view text) {
  size_t found = absl::string_view::npos;
  int depth = 0;
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    if (Opens(text, i)) ++depth;
    if (Closes(text, i)) --depth;
    if (text[i] == ' ' && depth == 0 && i > 0 &&
        (IsIdentifierStart(text[i + 1]) || text.substr(i + 1, 2) == "/*") &&
        (text[i - 1] == '*' || text[i - 1] == '&' || text[i - 1] == '>' ||
         IsIdentifierStart(text[i - 1]) ||
         (text[i - 1] >= '0' && text[i - 1] <= '9'))) {
      found = i;
    }
  }
  return found;
}

}  // namespace

std::vector<std::string> WrapPiece(absl::string_view text, int column) {
  if (column + Width(text) <= kColumnLimit) return {std::string(text)};
  // 1. Template arguments aligned after '<'.
  std::vector<std::string> aligned = AlignTemplateArguments(text, column);
  if (AllFit(aligned, column)) return aligned;
  // 2. A parameter's name on a line of its own, indented by 4.
  const size_t space = NameSpace(text);
  if (space != absl::string_view::npos) {
    std::vector<std::string> lines = WrapPiece(text.substr(0, space), column);
    lines.push_back(
        absl::StrCat(std::string(column + 4, ' '), text.substr(space + 1)));
    if (AllFit(lines, column)) return lines;
  }
  // 3. Broken after the first '<', its arguments indented by 4.
  const size_t open = text.find('<');
  const size_t close = open == absl::string_view::npos
                           ? absl::string_view::npos
                           : MatchingClose(text, open);
  if (close != absl::string_view::npos) {
    std::vector<absl::string_view> args =
        SplitTopLevel(text.substr(open + 1, close - open - 1));
    std::vector<std::string> pieces;
    for (size_t i = 0; i < args.size(); ++i) {
      pieces.push_back(i + 1 < args.size()
                           ? absl::StrCat(args[i], ",")
                           : absl::StrCat(args[i], text.substr(close)));
    }
    std::vector<std::string> lines = {std::string(text.substr(0, open + 1)),
                                      std::string(column + 4, ' ')};
    Pack(pieces, column + 4, Wrap::kAlways, &lines);
    if (AllFit(lines, column)) return lines;
  }
  return aligned;
}

bool LayOutCallAligned(int indent, const CallLayout& call, std::string* out) {
  const std::string head = call.return_type.empty()
                               ? call.head
                               : absl::StrCat(call.return_type, " ", call.head);
  const std::string open = absl::StrCat(std::string(indent, ' '), head, "(");
  // 1. On one line.
  const std::string flat =
      absl::StrCat(open, absl::StrJoin(call.args, ", "), ")", call.tail);
  if (Fits(flat)) {
    *out = flat + "\n";
    return true;
  }
  if (call.args.empty()) return false;
  // 2. Aligned after '(' (a template argument list broken if need be).
  std::vector<std::string> lines = {open};
  if (!Pack(Pieces(call), Width(open), Wrap::kIfItFits, &lines)) return false;
  *out = JoinLines(lines);
  return true;
}

std::string LayOutCall(int indent, const CallLayout& call) {
  std::string out;
  if (LayOutCallAligned(indent, call, &out)) return out;
  const std::string indentation(indent, ' ');
  const std::string head = call.return_type.empty()
                               ? call.head
                               : absl::StrCat(call.return_type, " ", call.head);
  const std::string open = absl::StrCat(indentation, head, "(");
  const std::vector<std::string> pieces = Pieces(call);
  // 3. Broken after '(', indented by 4.
  if (!call.args.empty() && Fits(open)) {
    std::vector<std::string> lines = {open, std::string(indent + 4, ' ')};
    Pack(pieces, indent + 4, Wrap::kAlways, &lines);
    return JoinLines(lines);
  }
  // 4. The return type on its own line(s).
  if (!call.return_type.empty()) {
    std::vector<std::string> lines = WrapPiece(call.return_type, indent);
    lines[0].insert(0, indentation);
    CallLayout rest = call;
    rest.return_type.clear();
    return JoinLines(lines) + LayOutCall(indent, rest);
  }
  // 5. A head too long by itself (a call with template arguments): break its
  // template arguments, then the arguments after '(' indented by 4.
  std::vector<std::string> lines = WrapPiece(head + "(", indent);
  lines[0].insert(0, indentation);
  if (call.args.empty()) {
    absl::StrAppend(&lines.back(), ")", call.tail);
    return JoinLines(lines);
  }
  lines.push_back(std::string(indent + 4, ' '));
  Pack(pieces, indent + 4, Wrap::kAlways, &lines);
  return JoinLines(lines);
}

std::string LayOutAssignment(int indent, absl::string_view lhs,
                             absl::string_view rhs) {
  const std::string indentation(indent, ' ');
  const std::string head = absl::StrCat(indentation, lhs, " = ");
  const std::string flat = absl::StrCat(head, rhs, ";");
  if (Fits(flat)) return flat + "\n";
  // The right-hand side's template arguments aligned, if that fits.
  const std::string rhs_end = absl::StrCat(rhs, ";");
  std::vector<std::string> lines = AlignTemplateArguments(rhs_end, Width(head));
  if (AllFit(lines, Width(head))) {
    lines[0].insert(0, head);
    return JoinLines(lines);
  }
  // Else broken after '='.
  lines = WrapPiece(rhs_end, indent + 4);
  lines[0].insert(0, absl::StrCat(indentation, "    "));
  return absl::StrCat(indentation, lhs, " =\n", JoinLines(lines));
}

std::string WrapComment(int indent, absl::string_view text, int hanging) {
  const std::string first = absl::StrCat(std::string(indent, ' '), "//");
  const std::string next = absl::StrCat(first, std::string(hanging, ' '));
  std::vector<std::string> lines = {first};
  bool line_has_word = false;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    const std::string candidate = absl::StrCat(lines.back(), " ", word);
    if (line_has_word && !Fits(candidate)) {
      lines.push_back(absl::StrCat(next, " ", word));
    } else {
      lines.back() = candidate;
    }
    line_has_word = true;
  }
  return JoinLines(lines);
}

}  // namespace h2rpc::codegen
