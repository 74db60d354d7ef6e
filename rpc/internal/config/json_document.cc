#include "rpc/internal/config/json_document.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "base/status_code.h"

namespace h2rpc::internal {
namespace {

using Json = nlohmann::json;

Status Invalid(absl::string_view path, absl::string_view what) {
  return Status(
      StatusCode::kInvalidArgument,
      path.empty() ? std::string(what) : absl::StrCat(path, ": ", what));
}

// `text` for a message: bytes outside printable ASCII as \xNN, cut after
// `max_bytes` of input.
std::string Printable(absl::string_view text, size_t max_bytes) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < max_bytes; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      absl::StrAppend(&out, "\\x", absl::Hex(c, absl::kZeroPad2));
    }
  }
  if (text.size() > max_bytes) out += "...";
  return out;
}

// The path segment of member `key` under its object: ".key", or
// "[\"x y\"]".
std::string MemberSegment(absl::string_view key) {
  const bool plain = !key.empty() && key.size() <= 64 &&
                     std::all_of(key.begin(), key.end(), [](char c) {
                       return absl::ascii_isalnum(c) || c == '_';
                     });
  return plain ? absl::StrCat(".", key)
               : absl::StrCat("[", QuoteForMessage(key), "]");
}

// `path` followed by `segment`; a path does not start with '.'.
std::string JoinPath(absl::string_view path, absl::string_view segment) {
  if (path.empty()) absl::ConsumePrefix(&segment, ".");
  return absl::StrCat(path, segment);
}

}  // namespace

// Builds the tree from nlohmann's SAX events (Json::sax_parse), refusing
// repeated keys and deep nesting as they come. Each event returns false to
// stop the parse, leaving the reason in error().
class JsonDocument::Builder {
 public:
  Builder(size_t max_depth, Json* root,
          std::map<const Json*, std::string>* number_texts)
      : max_depth_(max_depth), root_(*root), number_texts_(*number_texts) {}

  const Status& error() const { return error_; }

  bool null() { return Add(Json(nullptr)) != nullptr; }
  bool boolean(bool value) { return Add(Json(value)) != nullptr; }
  bool number_integer(Json::number_integer_t value) {
    return Add(Json(value)) != nullptr;
  }
  bool number_unsigned(Json::number_unsigned_t value) {
    return Add(Json(value)) != nullptr;
  }
  bool number_float(Json::number_float_t value, const std::string& text) {
    const bool in_object = !open_.empty() && open_.back()->is_object();
    const Json* added = Add(Json(value));
    if (in_object) number_texts_[added] = text;
    return true;
  }
  bool string(std::string& value) {
    return Add(Json(std::move(value))) != nullptr;
  }
  bool binary(Json::binary_t& /*value*/) {
    error_ = Invalid(Path(), "binary values are not JSON");
    return false;
  }
  bool start_object(size_t /*elements*/) { return Open(Json::value_t::object); }
  bool key(std::string& key) {
    if (open_.back()->contains(key)) {
      error_ = Invalid(Path(), absl::StrCat("key ", QuoteForMessage(key),
                                            " appears twice in one object"));
      return false;
    }
    key_ = std::move(key);
    return true;
  }
  bool end_object() { return Close(); }
  bool start_array(size_t /*elements*/) { return Open(Json::value_t::array); }
  bool end_array() { return Close(); }
  bool parse_error(size_t position, const std::string& /*last_token*/,
                   const Json::exception& e) {
    // what() is "[json.exception.parse_error.101] parse error at line 1,
    // column 2: ...".
    absl::string_view what = e.what();
    const size_t bracket = what.find("] ");
    if (bracket != absl::string_view::npos) what.remove_prefix(bracket + 2);
    // Parse errors say where; the others (number overflow) do not. Both
    // quote the input they stopped in, which may be long or not text.
    error_ =
        Invalid("", absl::StrCat("invalid JSON: ", Printable(what, 256),
                                 absl::StartsWith(what, "parse error")
                                     ? ""
                                     : absl::StrCat(" at byte ", position)));
    return false;
  }

 private:
  // Adds `value` where the parse is: the root, the end of the open array, or
  // the open object under the last key. Returns where it went.
  Json* Add(Json value) {
    if (open_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Json& parent = *open_.back();
    if (parent.is_array()) {
      Json::array_t& array = parent.get_ref<Json::array_t&>();
      array.push_back(std::move(value));
      return &array.back();
    }
    Json::object_t& object = parent.get_ref<Json::object_t&>();
    return &object.emplace(std::move(key_), std::move(value)).first->second;
  }

  // A container starts. It stays where Add() put it while it is open: an
  // array grows only at its end, which is this container until it closes.
  bool Open(Json::value_t type) {
    std::string segment;
    if (!open_.empty()) {
      const Json& parent = *open_.back();
      segment = parent.is_array() ? JsonElementPath("", parent.size())
                                  : MemberSegment(key_);
    }
    if (open_.size() >= max_depth_) {
      error_ = Invalid(JoinPath(Path(), segment),
                       absl::StrCat("nested deeper than ", max_depth_,
                                    " levels (max_nesting_depth)"));
      return false;
    }
    open_.push_back(Add(Json(type)));
    path_.push_back(std::move(segment));
    return true;
  }

  bool Close() {
    open_.pop_back();
    path_.pop_back();
    return true;
  }

  // The path of the innermost open container ("" for the top level).
  std::string Path() const { return JoinPath("", absl::StrJoin(path_, "")); }

  const size_t max_depth_;
  Json& root_;
  std::map<const Json*, std::string>& number_texts_;
  // The arrays and objects being filled, innermost last, and the path
  // segment (".key", "[\"odd key\"]" or "[3]") of each under its parent.
  std::vector<Json*> open_;
  std::vector<std::string> path_;
  std::string key_;  // the key of the next member of the open object
  Status error_;
};

Status JsonDocument::Parse(absl::string_view text, size_t max_depth) {
  root_ = nullptr;
  number_texts_.clear();
  // nlohmann's lexer takes a NUL outside a string for the end of the input,
  // which would ignore whatever follows it.
  const size_t nul = text.find('\0');
  if (nul != absl::string_view::npos) {
    return Invalid("", absl::StrCat("invalid JSON: NUL at byte ", nul));
  }
  Builder builder(max_depth, &root_, &number_texts_);
  const bool parsed =
      Json::sax_parse(text.data(), text.data() + text.size(), &builder);
  if (parsed && builder.error().ok()) return Status();
  root_ = nullptr;
  number_texts_.clear();
  if (!builder.error().ok()) return builder.error();
  return Invalid("", "invalid JSON");
}

const std::string* JsonDocument::NumberText(const Json& value) const {
  auto it = number_texts_.find(&value);
  return it == number_texts_.end() ? nullptr : &it->second;
}

std::string JsonMemberPath(absl::string_view path, absl::string_view key) {
  return JoinPath(path, MemberSegment(key));
}

std::string JsonElementPath(absl::string_view path, size_t index) {
  return absl::StrCat(path, "[", index, "]");
}

std::string QuoteForMessage(absl::string_view text) {
  constexpr size_t kMaxShown = 64;
  if (text.size() > kMaxShown) {
    return absl::StrCat("\"", absl::CHexEscape(text.substr(0, kMaxShown)),
                        "\"...");
  }
  return absl::StrCat("\"", absl::CHexEscape(text), "\"");
}

}  // namespace h2rpc::internal
