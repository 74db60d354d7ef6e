#include "transport/http1/request_parser.h"

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace h2rpc::transport::http1 {
namespace {

// What HTTP/2 counts per field besides its name and value.
constexpr size_t kFieldOverhead = 32;

// RFC 9110 §5.6.2's tchar: what a field name is made of. http_parser
// built without its strict mode also lets a space through.
bool IsTokenChar(char c) {
  return absl::ascii_isalnum(c) || (c != 0 && strchr("!#$%&'*+-.^_`|~", c));
}

RequestParser* Self(http_parser* parser) {
  return static_cast<RequestParser*>(parser->data);
}

}  // namespace

RequestParser::RequestParser(Handler* handler, const Http1Options& options)
    : handler_(handler),
      max_target_bytes_(options.max_target_bytes),
      max_header_bytes_(options.max_header_bytes) {
  http_parser_init(&parser_, HTTP_REQUEST);
  parser_.data = this;
  http_parser_settings_init(&settings_);
  settings_.on_message_begin = &OnMessageBegin;
  settings_.on_url = &OnUrl;
  settings_.on_header_field = &OnHeaderField;
  settings_.on_header_value = &OnHeaderValue;
  settings_.on_headers_complete = &OnHeadersComplete;
  settings_.on_body = &OnBody;
  settings_.on_message_complete = &OnMessageComplete;
}

size_t RequestParser::Parse(absl::string_view bytes) {
  if (failed() || bytes.empty()) return 0;
  const size_t parsed =
      http_parser_execute(&parser_, &settings_, bytes.data(), bytes.size());
  const http_errno error = HTTP_PARSER_ERRNO(&parser_);
  if (error == HPE_OK || error == HPE_PAUSED || failed()) return parsed;
  if (error == HPE_HEADER_OVERFLOW) {
    Fail(431, "the request's header section is too large");
  } else {
    Fail(400, absl::StrCat("malformed HTTP/1.1 request: ",
                           http_errno_description(error)));
  }
  return parsed;
}

void RequestParser::Resume() { http_parser_pause(&parser_, 0); }

bool RequestParser::keep_alive() const {
  return http_should_keep_alive(&parser_) != 0;
}

int RequestParser::Fail(int status, absl::string_view message) {
  if (error_status_ == 0) {
    error_status_ = status;
    error_message_.assign(message.data(), message.size());
  }
  return -1;
}

bool RequestParser::HeaderBytesExceeded() const {
  return storage_.size() + kFieldOverhead * offsets_.size() >
         target_size_ + max_header_bytes_;
}

int RequestParser::OnMessageBegin(http_parser* parser) {
  RequestParser* self = Self(parser);
  self->storage_.clear();
  self->target_size_ = 0;
  self->offsets_.clear();
  self->value_in_progress_ = false;
  self->head_.fields.clear();
  self->in_request_ = true;
  self->head_complete_ = false;
  return 0;
}

int RequestParser::OnUrl(http_parser* parser, const char* at, size_t size) {
  RequestParser* self = Self(parser);
  self->target_size_ += size;
  if (self->target_size_ > self->max_target_bytes_) {
    return self->Fail(414, "the request target is too long");
  }
  self->storage_.append(at, size);
  return 0;
}

int RequestParser::OnHeaderField(http_parser* parser, const char* at,
                                 size_t size) {
  RequestParser* self = Self(parser);
  if (self->offsets_.empty() || self->value_in_progress_) {
    self->offsets_.push_back({self->storage_.size(), 0, 0, 0});
    self->value_in_progress_ = false;
  }
  FieldOffsets& field = self->offsets_.back();
  for (size_t i = 0; i < size; ++i) {
    if (!IsTokenChar(at[i])) {
      return self->Fail(400, "malformed HTTP/1.1 request: invalid field name");
    }
  }
  const size_t begin = self->storage_.size();
  self->storage_.append(at, size);
  for (size_t i = begin; i < self->storage_.size(); ++i) {
    self->storage_[i] = absl::ascii_tolower(self->storage_[i]);
  }
  field.name_size += size;
  if (self->HeaderBytesExceeded()) {
    return self->Fail(431, "the request's header section is too large");
  }
  return 0;
}

int RequestParser::OnHeaderValue(http_parser* parser, const char* at,
                                 size_t size) {
  RequestParser* self = Self(parser);
  FieldOffsets& field = self->offsets_.back();
  if (!self->value_in_progress_) {
    field.value_begin = self->storage_.size();
    self->value_in_progress_ = true;
  }
  self->storage_.append(at, size);
  field.value_size += size;
  if (self->HeaderBytesExceeded()) {
    return self->Fail(431, "the request's header section is too large");
  }
  return 0;
}

int RequestParser::OnHeadersComplete(http_parser* parser) {
  RequestParser* self = Self(parser);
  if (parser->http_major != 1) {
    return self->Fail(505, "only HTTP/1.0 and HTTP/1.1 are served");
  }
  // A protocol upgrade (Upgrade with Connection: upgrade, or CONNECT) is
  // not taken: the request is served as any other (RFC 9110 §7.8 lets a
  // server ignore Upgrade), so the parser keeps reading HTTP/1.1.
  parser->upgrade = 0;
  RequestHead& head = self->head_;
  // The strings are complete: views into them are stable from here on.
  const char* base = self->storage_.data();
  head.method = http_method_str(static_cast<http_method>(parser->method));
  head.target = absl::string_view(base, self->target_size_);
  head.version_minor = parser->http_minor;
  head.fields.reserve(self->offsets_.size());
  for (const FieldOffsets& field : self->offsets_) {
    head.fields.push_back(
        {absl::string_view(base + field.name_begin, field.name_size),
         absl::string_view(base + field.value_begin, field.value_size)});
  }
  head.has_content_length = (parser->flags & F_CONTENTLENGTH) != 0;
  head.content_length = head.has_content_length ? parser->content_length : 0;
  head.has_body = (parser->flags & F_CHUNKED) != 0 ||
                  (head.has_content_length && head.content_length > 0);
  self->head_complete_ = true;
  self->handler_->OnRequestHead(head);
  return 0;
}

int RequestParser::OnBody(http_parser* parser, const char* at, size_t size) {
  Self(parser)->handler_->OnRequestBody(absl::string_view(at, size));
  return 0;
}

int RequestParser::OnMessageComplete(http_parser* parser) {
  RequestParser* self = Self(parser);
  self->in_request_ = false;
  self->head_complete_ = false;
  http_parser_pause(parser, 1);
  self->handler_->OnRequestComplete();
  return 0;
}

}  // namespace h2rpc::transport::http1
