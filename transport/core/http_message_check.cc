#include "transport/core/http_message_check.h"

#include <array>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace h2rpc::transport {
namespace {

// The byte classes of RFC 9110 and RFC 9113 nghttp2 checks against, one
// bit each.
enum CharClass : uint8_t {
  kNameChar = 1,       // a lowercase token character (field names)
  kValueChar = 2,      // field values: HTAB, visible ASCII, space, obs-text
  kMethodChar = 4,     // a token character (methods)
  kPathChar = 8,       // visible ASCII and obs-text
  kAuthorityChar = 16  // what an authority may hold
};

constexpr bool InRange(int c, int low, int high) {
  return c >= low && c <= high;
}

constexpr uint8_t ClassesOf(int c) {
  const bool token_symbol = c == '!' || InRange(c, '#', '\'') || c == '*' ||
                            c == '+' || c == '-' || c == '.' ||
                            InRange(c, '^', '`') || c == '|' || c == '~';
  const bool digit = InRange(c, '0', '9');
  const bool lower = InRange(c, 'a', 'z');
  const bool upper = InRange(c, 'A', 'Z');
  uint8_t classes = 0;
  if (token_symbol || digit || lower) classes |= kNameChar;
  if (c == '\t' || InRange(c, 0x20, 0x7E) || c >= 0x80) classes |= kValueChar;
  if (token_symbol || digit || lower || upper) classes |= kMethodChar;
  if (InRange(c, 0x21, 0x7E) || c >= 0x80) classes |= kPathChar;
  if (c == '!' || InRange(c, '$', '.') || InRange(c, '0', ';') || c == '=' ||
      InRange(c, '@', '[') || c == ']' || c == '_' || lower || c == '~') {
    classes |= kAuthorityChar;
  }
  return classes;
}

constexpr std::array<uint8_t, 256> MakeClassTable() {
  std::array<uint8_t, 256> table{};
  for (int c = 0; c < 256; ++c) table[c] = ClassesOf(c);
  return table;
}

constexpr std::array<uint8_t, 256> kClasses = MakeClassTable();

bool AllOf(absl::string_view s, CharClass cls) {
  for (char c : s) {
    if ((kClasses[static_cast<unsigned char>(c)] & cls) == 0) return false;
  }
  return true;
}

// Eight bytes at a time: whether any byte of `word` is below `limit` (at
// most 0x80), or equal to `byte`.
constexpr uint64_t kOnes = 0x0101010101010101;
constexpr uint64_t kHighBits = 0x8080808080808080;
bool HasByteBelow(uint64_t word, uint8_t limit) {
  return ((word - kOnes * limit) & ~word & kHighBits) != 0;
}
bool HasByte(uint64_t word, uint8_t byte) {
  const uint64_t zeroed = word ^ (kOnes * byte);
  return ((zeroed - kOnes) & ~zeroed & kHighBits) != 0;
}

// AllOf(s, cls) for a class that holds every byte from `limit` up but DEL
// (0x7F): whole words of such bytes are passed without a table lookup (the
// last word overlapping the one before it).
bool AllOfVisible(absl::string_view s, CharClass cls, uint8_t limit) {
  if (s.size() < 8) return AllOf(s, cls);
  auto word_passes = [&](size_t at) {
    uint64_t word;
    std::memcpy(&word, s.data() + at, 8);
    return (!HasByteBelow(word, limit) && !HasByte(word, 0x7F)) ||
           AllOf(s.substr(at, 8), cls);
  };
  for (size_t at = 0; at + 8 < s.size(); at += 8) {
    if (!word_passes(at)) return false;
  }
  return word_passes(s.size() - 8);
}

// A field name: a lowercase token, after the ':' of a pseudo-header.
bool IsValidName(absl::string_view name) {
  if (name.empty()) return false;
  if (name[0] == ':') name.remove_prefix(1);
  return !name.empty() && AllOf(name, kNameChar);
}

// A field value without surrounding whitespace (RFC 9113 section 8.2.1).
bool IsValidValue(absl::string_view value) {
  if (value.empty()) return true;
  const char first = value.front();
  const char last = value.back();
  if (first == ' ' || first == '\t' || last == ' ' || last == '\t') {
    return false;
  }
  return AllOfVisible(value, kValueChar, 0x20);
}

// RFC 3986's scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
bool IsValidScheme(absl::string_view scheme) {
  if (scheme.empty() || !absl::ascii_isalpha(scheme[0])) return false;
  for (char c : scheme.substr(1)) {
    if (!absl::ascii_isalnum(c) && c != '+' && c != '-' && c != '.') {
      return false;
    }
  }
  return true;
}

bool HasUppercase(absl::string_view name) {
  for (char c : name) {
    if (absl::ascii_isupper(c)) return true;
  }
  return false;
}

// A non-negative decimal number, or -1.
int64_t ParseNumber(absl::string_view digits) {
  if (digits.empty()) return -1;
  int64_t n = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return -1;
    if (n > (INT64_MAX - (c - '0')) / 10) return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

// The names HTTP's rules single out, and kValid for other names known to be
// valid (those gRPC sends), whose characters need no check.
enum Token {
  kOther,
  kValid,
  kAuthority,
  kMethod,
  kPath,
  kScheme,
  kStatus,
  kProtocol,
  kHost,
  kContentLength,
  kConnectionSpecific,
  kTe,
};

Token TokenOf(absl::string_view name) {
  switch (name.size()) {
    case 2:
      if (name == "te") return kTe;
      break;
    case 4:
      if (name == "host") return kHost;
      break;
    case 5:
      if (name == ":path") return kPath;
      break;
    case 7:
      if (name == ":method") return kMethod;
      if (name == ":scheme") return kScheme;
      if (name == ":status") return kStatus;
      if (name == "upgrade") return kConnectionSpecific;
      break;
    case 9:
      if (name == ":protocol") return kProtocol;
      break;
    case 10:
      if (name == ":authority") return kAuthority;
      if (name == "user-agent") return kValid;
      if (name == "connection" || name == "keep-alive") {
        return kConnectionSpecific;
      }
      break;
    case 11:
      if (name == "grpc-status" || name == "traceparent") return kValid;
      break;
    case 12:
      if (name == "content-type" || name == "grpc-timeout" ||
          name == "grpc-message") {
        return kValid;
      }
      break;
    case 13:
      if (name == "grpc-encoding") return kValid;
      break;
    case 14:
      if (name == "content-length") return kContentLength;
      break;
    case 16:
      if (name == "proxy-connection") return kConnectionSpecific;
      break;
    case 17:
      if (name == "transfer-encoding") return kConnectionSpecific;
      break;
    case 20:
      if (name == "grpc-accept-encoding") return kValid;
      break;
  }
  return kOther;
}

enum Flag : uint32_t {
  kSeenAuthority = 1u << 0,
  kSeenMethod = 1u << 1,
  kSeenPath = 1u << 2,
  kSeenScheme = 1u << 3,
  kSeenStatus = 1u << 4,
  kSeenHost = 1u << 5,
  // A regular field was seen: no pseudo-header may follow.
  kPseudoHeaderDisallowed = 1u << 6,
  kMethodConnect = 1u << 7,
  kMethodOptions = 1u << 8,
  kPathRegular = 1u << 9,    // starts with '/'
  kPathAsterisk = 1u << 10,  // "*"
  kSchemeHttp = 1u << 11,    // http or https
  // Responses: an interim (1xx) response arrived; the final one follows.
  kExpectFinalResponse = 1u << 12,
};

}  // namespace

void HttpMessageCheck::Reset() {
  flags_ = 0;
  blocks_ = 0;
  status_code_ = -1;
  content_length_ = -1;
  received_ = 0;
  error_ = "";
}

void HttpMessageCheck::BeginHeaders() { ++blocks_; }

HttpMessageCheck::Verdict HttpMessageCheck::OnField(absl::string_view name,
                                                    absl::string_view value) {
  const bool pseudo = !name.empty() && name[0] == ':';
  const Token token = TokenOf(name);
  if (token == kOther && !IsValidName(name)) {
    if (pseudo) return Malformed("invalid pseudo-header name");
    if (HasUppercase(name)) return Malformed("uppercase header field name");
    return Malformed("invalid header field name");
  }
  bool valid_value;
  switch (token) {
    case kMethod:
      valid_value = !value.empty() && AllOf(value, kMethodChar);
      break;
    case kPath:
      valid_value = AllOfVisible(value, kPathChar, 0x21);
      break;
    case kAuthority:
    case kHost:
      valid_value = role_ == Role::kRequest ? AllOf(value, kAuthorityChar)
                                            : IsValidValue(value);
      break;
    case kScheme:
      valid_value = IsValidScheme(value);
      break;
    default:
      valid_value = IsValidValue(value);
      break;
  }
  if (!valid_value) {
    return Malformed(pseudo ? "invalid pseudo-header value"
                            : "invalid header field value");
  }
  if (pseudo) {
    if (blocks_ > 1 && (flags_ & kExpectFinalResponse) == 0) {
      return Malformed("pseudo-header in trailers");
    }
    if ((flags_ & kPseudoHeaderDisallowed) != 0) {
      return Malformed("pseudo-header after a regular field");
    }
  }
  Verdict verdict;
  if (!(role_ == Role::kRequest ? RequestOnlyField(token, value, &verdict)
                                : ResponseOnlyField(token, value, &verdict))) {
    verdict = SharedField(token, pseudo, value);
  }
  if (verdict == Verdict::kKeep && !pseudo) flags_ |= kPseudoHeaderDisallowed;
  return verdict;
}

bool HttpMessageCheck::FirstPseudoHeader(uint32_t flag,
                                         absl::string_view value) {
  if ((flags_ & flag) != 0 || value.empty()) return false;
  flags_ |= flag;
  return true;
}

bool HttpMessageCheck::RequestOnlyField(int token, absl::string_view value,
                                        Verdict* verdict) {
  *verdict = Verdict::kKeep;
  switch (token) {
    case kAuthority:
      if (!FirstPseudoHeader(kSeenAuthority, value)) {
        *verdict = Malformed(":authority repeated or empty");
      }
      return true;
    case kMethod:
      if (!FirstPseudoHeader(kSeenMethod, value)) {
        *verdict = Malformed(":method repeated or empty");
      } else if (value == "CONNECT") {
        flags_ |= kMethodConnect;
      } else if (value == "OPTIONS") {
        flags_ |= kMethodOptions;
      }
      return true;
    case kPath:
      if (!FirstPseudoHeader(kSeenPath, value)) {
        *verdict = Malformed(":path repeated or empty");
      } else if (value[0] == '/') {
        flags_ |= kPathRegular;
      } else if (value == "*") {
        flags_ |= kPathAsterisk;
      }
      return true;
    case kScheme:
      if (!FirstPseudoHeader(kSeenScheme, value)) {
        *verdict = Malformed(":scheme repeated or empty");
      } else if (value == "http" || value == "https" ||
                 absl::EqualsIgnoreCase(value, "http") ||
                 absl::EqualsIgnoreCase(value, "https")) {
        flags_ |= kSchemeHttp;
      }
      return true;
    case kProtocol:
      *verdict = Malformed(":protocol without extended CONNECT");
      return true;
    case kHost:
      if (!FirstPseudoHeader(kSeenHost, value)) {
        *verdict = Malformed("host repeated or empty");
      }
      return true;
    default:
      return false;
  }
}

bool HttpMessageCheck::ResponseOnlyField(int token, absl::string_view value,
                                         Verdict* verdict) {
  *verdict = Verdict::kKeep;
  if (token == kStatus) {
    if (!FirstPseudoHeader(kSeenStatus, value)) {
      *verdict = Malformed(":status repeated or empty");
      return true;
    }
    status_code_ =
        value.size() == 3 ? static_cast<int>(ParseNumber(value)) : -1;
    if (status_code_ == -1) {
      *verdict = Malformed(":status not three digits");
    } else if (status_code_ == 101) {
      *verdict = Malformed(":status 101 in HTTP/2");
    }
    return true;
  }
  if (token != kContentLength) return false;
  if (status_code_ == 204) {
    // RFC 9110 forbids it, widely used servers send "0": dropped.
    if (content_length_ != -1) {
      *verdict = Malformed("content-length repeated");
    } else if (value != "0") {
      *verdict = Malformed("content-length in a 204 response");
    } else {
      content_length_ = 0;
      *verdict = Verdict::kIgnore;
    }
    return true;
  }
  if (status_code_ / 100 == 1) {
    *verdict = Malformed("content-length in an interim response");
    return true;
  }
  return false;
}

HttpMessageCheck::Verdict HttpMessageCheck::SharedField(
    int token, bool pseudo, absl::string_view value) {
  switch (token) {
    case kContentLength:
      if (content_length_ != -1) return Malformed("content-length repeated");
      content_length_ = ParseNumber(value);
      if (content_length_ == -1) {
        return Malformed("content-length is not a number");
      }
      return Verdict::kKeep;
    case kConnectionSpecific:
      return Malformed("connection-specific header field");
    case kTe:
      if (value != "trailers" && !absl::EqualsIgnoreCase(value, "trailers")) {
        return Malformed("te other than \"trailers\"");
      }
      return Verdict::kKeep;
    default:
      return pseudo ? Malformed("unknown pseudo-header") : Verdict::kKeep;
  }
}

bool HttpMessageCheck::EndHeaders(bool end_stream) {
  if (role_ == Role::kRequest) {
    if (blocks_ == 1) {
      if ((flags_ & kMethodConnect) != 0) {
        if ((flags_ & (kSeenScheme | kSeenPath)) != 0 ||
            (flags_ & kSeenAuthority) == 0) {
          return Fails(
              "CONNECT request with :scheme or :path, or without "
              ":authority");
        }
        content_length_ = -1;
      } else {
        constexpr uint32_t kRequired = kSeenMethod | kSeenScheme | kSeenPath;
        if ((flags_ & kRequired) != kRequired ||
            (flags_ & (kSeenAuthority | kSeenHost)) == 0) {
          return Fails(
              "request without :method, :scheme, :path, or "
              ":authority and host");
        }
        if ((flags_ & kSchemeHttp) != 0 && (flags_ & kPathRegular) == 0 &&
            (flags_ & (kMethodOptions | kPathAsterisk)) !=
                (kMethodOptions | kPathAsterisk)) {
          return Fails(":path neither absolute nor \"*\" for OPTIONS");
        }
      }
    } else if (!end_stream) {
      return Fails("trailers without END_STREAM");
    }
  } else if (blocks_ == 1 || (flags_ & kExpectFinalResponse) != 0) {
    if ((flags_ & kSeenStatus) == 0) return Fails("response without :status");
    if (status_code_ / 100 == 1) {
      flags_ = kExpectFinalResponse;
      status_code_ = -1;
      content_length_ = -1;
    } else {
      flags_ &= ~kExpectFinalResponse;
      if (status_code_ == 204 || status_code_ == 304) content_length_ = 0;
    }
  } else if (!end_stream) {
    return Fails("trailers without END_STREAM");
  }
  return !end_stream || EndOfStream();
}

bool HttpMessageCheck::OnData(size_t bytes) {
  received_ += static_cast<int64_t>(bytes);
  if ((flags_ & kExpectFinalResponse) != 0) {
    return Fails("DATA before the final response");
  }
  if (content_length_ != -1 && received_ > content_length_) {
    return Fails("DATA beyond content-length");
  }
  return true;
}

bool HttpMessageCheck::OnEndStream() { return EndOfStream(); }

bool HttpMessageCheck::EndOfStream() {
  if ((flags_ & kExpectFinalResponse) != 0) {
    return Fails("the stream ended after an interim response");
  }
  if (content_length_ != -1 && content_length_ != received_) {
    return Fails("DATA different from content-length");
  }
  return true;
}

}  // namespace h2rpc::transport
