#include "rpc/interceptors/logging_interceptor.h"

#include <errno.h>
#include <unistd.h>

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace h2rpc {
namespace {

// Appends `text` between double quotes, C-escaped (\", \\, \n, \r, \t, and
// \xHH for other bytes outside 0x20-0x7E), cut after `max_bytes` bytes of
// it with "..." after the closing quote.
void AppendQuoted(absl::string_view text, size_t max_bytes, std::string* out) {
  constexpr char kHex[] = "0123456789abcdef";
  const bool cut = text.size() > max_bytes;
  if (cut) text = text.substr(0, max_bytes);
  out->push_back('"');
  for (const char c : text) {
    const unsigned char byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (byte < 0x20 || byte > 0x7e) {
          const char escaped[] = {'\\', 'x', kHex[byte >> 4], kHex[byte & 15]};
          out->append(escaped, sizeof(escaped));
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
  if (cut) out->append("...");
}

// True for a non-empty `text` of printable ASCII with no space, quote or
// backslash: one that can stand unquoted in a line of key=value fields.
bool IsBare(absl::string_view text) {
  if (text.empty()) return false;
  for (const char c : text) {
    if (c <= ' ' || c > '~' || c == '"' || c == '\\') return false;
  }
  return true;
}

// Writes all of `data` to stderr; gives up on an error other than EINTR
// (there is nowhere left to report it).
void WriteToStderr(absl::string_view data) {
  while (!data.empty()) {
    const ssize_t written = ::write(STDERR_FILENO, data.data(), data.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      return;
    }
    data.remove_prefix(static_cast<size_t>(written));
  }
}

}  // namespace

LoggingInterceptor::Sink LoggingInterceptor::StderrSink() {
  return [](absl::string_view line) {
    thread_local std::string buffer;
    buffer.assign(line.data(), line.size());
    buffer.push_back('\n');
    WriteToStderr(buffer);
  };
}

LoggingInterceptor::LoggingInterceptor(Sink sink, const Options& options)
    : options_(options),
      sink_(sink != nullptr ? std::move(sink) : StderrSink()) {}

void LoggingInterceptor::Begin(const void* call) {
  MutexLock lock(&calls_mu_);
  if (free_nodes_.empty()) {
    calls_[call] = Bytes();
    return;
  }
  CallMap::node_type node = std::move(free_nodes_.back());
  free_nodes_.pop_back();
  node.key() = call;
  node.mapped() = Bytes();
  // A context reused for a later call replaces what is left of the last.
  auto result = calls_.insert(std::move(node));
  if (!result.inserted) {
    result.position->second = Bytes();
    free_nodes_.push_back(std::move(result.node));
  }
}

void LoggingInterceptor::Count(const void* call, uint64_t sent,
                               uint64_t received) {
  MutexLock lock(&calls_mu_);
  const auto it = calls_.find(call);
  if (it == calls_.end()) return;
  it->second.sent += sent;
  it->second.received += received;
}

LoggingInterceptor::Bytes LoggingInterceptor::End(const void* call) {
  MutexLock lock(&calls_mu_);
  const auto it = calls_.find(call);
  if (it == calls_.end()) return Bytes();
  const Bytes bytes = it->second;
  free_nodes_.push_back(calls_.extract(it));
  return bytes;
}

void LoggingInterceptor::Log(absl::string_view side, absl::string_view method,
                             const Status& status, absl::Duration elapsed,
                             const Bytes& bytes) {
  // Reused call after call: no allocation once it has held a long line.
  thread_local std::string line;
  line.clear();
  absl::StrAppend(&line, "side=", side, " method=");
  if (IsBare(method)) {
    line.append(method.data(), method.size());
  } else {
    AppendQuoted(method, method.size(), &line);
  }
  absl::StrAppend(&line, " code=", StatusCodeName(status.code()),
                  " elapsed=", absl::FormatDuration(elapsed),
                  " sent_bytes=", bytes.sent,
                  " received_bytes=", bytes.received, " message=");
  AppendQuoted(status.message(), options_.max_message_bytes, &line);
  MutexLock lock(&sink_mu_);
  sink_(line);
}

Status LoggingInterceptor::OnStart(const ClientCallInfo& call) {
  Begin(call.context);
  return Status();
}

void LoggingInterceptor::OnSendMessage(const ClientCallInfo& call,
                                       size_t bytes) {
  Count(call.context, bytes, 0);
}

void LoggingInterceptor::OnReceiveMessage(const ClientCallInfo& call,
                                          size_t bytes) {
  Count(call.context, 0, bytes);
}

void LoggingInterceptor::OnFinish(const ClientCallInfo& call,
                                  const Status& status,
                                  const Metadata& trailing,
                                  absl::Duration elapsed) {
  Log("client", call.method, status, elapsed, End(call.context));
}

Status LoggingInterceptor::OnStart(const ServerCallInfo& call) {
  Begin(call.context);
  return Status();
}

void LoggingInterceptor::OnReceiveMessage(const ServerCallInfo& call,
                                          size_t bytes) {
  Count(call.context, 0, bytes);
}

void LoggingInterceptor::OnSendMessage(const ServerCallInfo& call,
                                       size_t bytes) {
  Count(call.context, bytes, 0);
}

void LoggingInterceptor::OnFinish(const ServerCallInfo& call,
                                  const Status& status,
                                  absl::Duration elapsed) {
  Log("server", call.method, status, elapsed, End(call.context));
}

}  // namespace h2rpc
