#ifndef H2RPC_RPC_INTERNAL_CONFIG_JSON_DOCUMENT_H_
#define H2RPC_RPC_INTERNAL_CONFIG_JSON_DOCUMENT_H_

#include <cstddef>
#include <map>
#include <string>

#include "absl/strings/string_view.h"
#include "base/status.h"
#include "nlohmann/json.hpp"

namespace h2rpc::internal {

// A JSON text (RFC 8259) parsed strictly into an nlohmann::json tree, the way
// gRPC's JSON reader takes a service config: on top of nlohmann's own checks
// (syntax, UTF-8, number overflow, no comments), a key repeated in one
// object, nesting deeper than a limit and a NUL byte are errors. It also
// keeps the source text of every floating-point number that is an object
// member, for fields whose decimal digits matter: a double loses them.
//
// Not copyable (the texts are keyed by node address). Parse() is not
// thread-safe; the const methods may run on any number of threads at once.
class JsonDocument {
 public:
  JsonDocument() = default;
  JsonDocument(const JsonDocument&) = delete;
  JsonDocument& operator=(const JsonDocument&) = delete;

  // Parses `text`, replacing any earlier document. `max_depth` is the
  // deepest nesting of arrays and objects accepted, the top-level value
  // being depth 1. Returns OK, or INVALID_ARGUMENT (the document left null)
  // whose message says what is wrong and where, for the caller to prefix
  // with what the text is: "invalid JSON: parse error at line 1, column 9:
  // ...", "methodConfig[0]: key \"timeout\" appears twice in one object".
  // Allocates the tree.
  Status Parse(absl::string_view text, size_t max_depth);

  // The top-level value; null before a successful Parse().
  const nlohmann::json& root() const { return root_; }

  // The source text of `value`, a node of root(), if it is a floating-point
  // number that is an object member ("0.10", "1e-3"); else null.
  const std::string* NumberText(const nlohmann::json& value) const;

 private:
  class Builder;  // nlohmann's SAX handler, filling the two members below

  nlohmann::json root_;
  // Keyed by the address of a number inside its object's std::map node,
  // which never moves.
  std::map<const nlohmann::json*, std::string> number_texts_;
};

// Paths of values, as gRPC's messages write them
// ("methodConfig[1].retryPolicy"): member `key` of the value at `path`
// ("a.b", or "a[\"x y\"]" for a key that is not a plain identifier), and
// element `index` of the array at `path` ("a[3]"). "" is the top level.
std::string JsonMemberPath(absl::string_view path, absl::string_view key);
std::string JsonElementPath(absl::string_view path, size_t index);

// `text` quoted and C-escaped for a message, cut after 64 bytes:
// "\"a\\x01b\"", "\"xxx...x\"...".
std::string QuoteForMessage(absl::string_view text);

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CONFIG_JSON_DOCUMENT_H_
