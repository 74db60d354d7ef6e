// Measures one hostile-peer attack against an interop server running as a child
// process, and prints one result line: whether the server survived, its peak
// memory and thread count, the CPU it used, and what the attacker saw.
// docs/security.md tabulates these lines for h2rpc and for gRPC C++.
//
//   attack_report --server=h2rpc|grpcpp --attack=NAME [--server_binary=PATH]
//                 [--format=line|json]
//   attack_report --attack=list
//
// --server picks //test/interop:h2rpc_interop_server or
// //test/interop:grpcpp_interop_server from this binary's runfiles (or
// --server_binary, any server printing "listening on port N" for --port=0
// and serving grpc.testing.TestService). The server runs with its default
// options; only the "emfile" attack changes its environment (RLIMIT_NOFILE,
// set in the child before exec).
//
// The result line is key=value pairs (with --format=json, one JSON object
// with the same keys in the same order: the numbers below as JSON numbers,
// null where the line has "?", everything else as strings):
//   attack, server
//   survived   "yes" when the child still runs and answers a fresh UnaryCall
//              on a new connection within 10 s after the attack; otherwise
//              how it ended or what the call got, and whether it serves
//              again within 30 s more
//   during     a fresh UnaryCall made while the attack holds its resources
//              (attacks that hold something), else "-"
//   peak_rss_mib  the child's VmHWM after the attack (its lifetime peak;
//              the most VmRSS sampled during the attack if it died)
//   base_rss_mib  its VmRSS just before the attack (after one warm call),
//              to the KiB (four decimals)
//   after_rss_mib its VmRSS once the survival call was answered
//   held, wanted, rss_start_mib, rss_held_mib, per_unit_kib
//              only from the attacks measuring memory per unit:
//              idle_connections (per connection that completed the HTTP/2
//              handshake) and open_streams (per FullDuplexCall stream open
//              on one connection). held is the units open when rss_held_mib
//              was sampled, wanted the units the attack set out to open
//              (--connections for idle_connections); rss_start_mib is the
//              child's VmRSS just before the first unit was opened (for
//              idle_connections nothing was done since base_rss_mib;
//              open_streams has made its one connection, so its cost is left
//              out), rss_held_mib its VmRSS with all of them held, each once it
//              has not changed for 300 ms (at most 5 s), to the KiB;
//              per_unit_kib = (rss_held - rss_start) / held in KiB. VmRSS is
//              the process's own memory: the kernel's socket buffers are not in
//              it.
//   threads    base/most seen (the child's Threads: sampled every 5 ms)
//   cpu_s      user + system CPU the child used during the attack
//   wall_s     the attack's duration
//   log_lines  lines the child wrote to stderr during the attack (the last
//              one in log_last)
//   attacker   what the attacker saw: statuses, RST_STREAM / GOAWAY codes,
//              closes
// Progress notes go to stderr. Exit code 0 when the attack ran (whatever
// the server did), 2 for bad flags, 1 when the server could not be started.
#include <fcntl.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "nlohmann/json.hpp"
#include "proto/grpc/testing/messages.pb.h"
#include "test/util/child_process.h"
#include "test/util/loopback_socket.h"
#include "test/util/raw_frames.h"
#include "test/util/raw_h2_client.h"

ABSL_FLAG(std::string, server, "h2rpc",
          "Server under attack: h2rpc or grpcpp (the interop servers).");
ABSL_FLAG(std::string, attack, "",
          "The attack to run; --attack=list prints the names.");
ABSL_FLAG(std::string, server_binary, "",
          "Server binary to run instead of the one --server names.");
ABSL_FLAG(int, connections, 1000,
          "idle_connections: the connections to hold (this process raises "
          "its RLIMIT_NOFILE, which the server inherits, to fit them when "
          "it may).");
ABSL_FLAG(std::string, format, "line",
          "line: the result as one line of key=value pairs; json: as one "
          "JSON object with the same keys.");

namespace h2rpc::testing {
namespace {

using grpc::testing::SimpleRequest;

constexpr char kUnaryCall[] = "/grpc.testing.TestService/UnaryCall";
constexpr char kFullDuplexCall[] = "/grpc.testing.TestService/FullDuplexCall";
// A fresh UnaryCall must be answered within this to count as served.
constexpr absl::Duration kSurvivalDeadline = absl::Seconds(10);
constexpr double kMiB = 1024.0 * 1024.0;

// ---------------------------------------------------------------------------
// Formatting

// Name of a gRPC status code on the wire.
std::string StatusName(absl::string_view code) {
  static const char* const kNames[] = {
      "OK",
      "CANCELLED",
      "UNKNOWN",
      "INVALID_ARGUMENT",
      "DEADLINE_EXCEEDED",
      "NOT_FOUND",
      "ALREADY_EXISTS",
      "PERMISSION_DENIED",
      "RESOURCE_EXHAUSTED",
      "FAILED_PRECONDITION",
      "ABORTED",
      "OUT_OF_RANGE",
      "UNIMPLEMENTED",
      "INTERNAL",
      "UNAVAILABLE",
      "DATA_LOSS",
      "UNAUTHENTICATED",
  };
  int value = -1;
  if (absl::SimpleAtoi(code, &value) && value >= 0 && value <= 16) {
    return kNames[value];
  }
  return absl::StrCat("status ", code);
}

std::string H2ErrorName(uint32_t code) { return nghttp2_http2_strerror(code); }

// `text` cut to `limit` characters, with quotes and control bytes replaced
// so that it fits in a quoted value of the result line.
std::string Clip(absl::string_view text, size_t limit = 160) {
  std::string out;
  for (char c : text.substr(0, limit)) {
    out.push_back(c == '"' ? '\'' : (c < 0x20 || c == 0x7f ? ' ' : c));
  }
  if (text.size() > limit) out += "...";
  return out;
}

// "grpc-status 8 RESOURCE_EXHAUSTED", plus " 'message'" when `message` is
// given.
std::string StatusText(absl::string_view status,
                       const absl::optional<std::string>& message) {
  std::string text =
      absl::StrCat("grpc-status ", status, " ", StatusName(status));
  if (message.has_value()) {
    absl::StrAppend(&text, " '", Clip(PercentDecode(*message)), "'");
  }
  return text;
}

// What one stream got, in a few words; without the grpc-message when
// `with_message` is false (to group streams by outcome).
std::string Describe(const RawResponse& response, bool with_message = true) {
  if (absl::optional<std::string> status = response.Trailer("grpc-status")) {
    return StatusText(*status, with_message ? response.Trailer("grpc-message")
                                            : absl::nullopt);
  }
  if (response.rst_received) {
    return absl::StrCat("RST_STREAM ", H2ErrorName(response.rst_error_code));
  }
  if (response.goaway_received) {
    return absl::StrCat("GOAWAY ", H2ErrorName(response.goaway_error_code),
                        " then ",
                        response.connection_closed ? "close" : "no answer");
  }
  if (response.connection_closed) {
    return absl::StrCat("connection closed (", Clip(response.error), ")");
  }
  if (response.timed_out) return "no answer";
  if (!response.header_blocks.empty()) {
    return absl::StrCat(":status ", response.Header(":status").value_or("?"),
                        ", ", response.body.size(), " body bytes, not ended");
  }
  return absl::StrCat("nothing (", Clip(response.error), ")");
}

// Outcomes counted by kind, each with the first full description seen.
class Tally {
 public:
  void Add(const std::string& kind, const std::string& example) {
    auto [it, inserted] = kinds_.try_emplace(kind, 0, example);
    ++it->second.first;
    ++total_;
  }
  int total() const { return total_; }
  // "3 x KIND (first: EXAMPLE); ..." (the example only when it says more).
  std::string ToString() const {
    std::vector<std::string> parts;
    for (const auto& [kind, entry] : kinds_) {
      const auto& [count, example] = entry;
      parts.push_back(absl::StrCat(
          count, " x ",
          example == kind ? kind : absl::StrCat("[", example, "]")));
    }
    return absl::StrJoin(parts, "; ");
  }

 private:
  std::map<std::string, std::pair<int, std::string>> kinds_;
  int total_ = 0;
};

std::string Seconds(absl::Duration d) {
  return absl::StrFormat("%.2f s", absl::ToDoubleSeconds(d));
}

// `bytes` in MiB with one decimal; "?" when unknown (negative).
std::string Mib(int64_t bytes) {
  return bytes < 0 ? "?" : absl::StrFormat("%.1f", bytes / kMiB);
}

// `bytes` in MiB to the KiB (four decimals); "?" when unknown (negative).
std::string MibToKib(int64_t bytes) {
  return bytes < 0 ? "?" : absl::StrFormat("%.4f", bytes / kMiB);
}

// One key of the result.
struct ResultField {
  enum Kind {
    kString,  // quoted on the line; a JSON string
    kNumber,  // bare on the line; a JSON number, null when "?" (unknown)
    kWord,    // bare on the line; a JSON string
  };
  std::string key;
  std::string value;  // as on the line
  Kind kind;
};

// attack=idle_streams server=h2rpc survived="yes" ...
std::string ResultLine(const std::vector<ResultField>& fields) {
  std::vector<std::string> parts;
  for (const ResultField& field : fields) {
    parts.push_back(field.kind == ResultField::kString
                        ? absl::StrCat(field.key, "=\"", field.value, "\"")
                        : absl::StrCat(field.key, "=", field.value));
  }
  return absl::StrJoin(parts, " ");
}

// {"attack":"idle_streams","server":"h2rpc","survived":"yes",...}, keys in
// the line's order; bytes that are not UTF-8 become U+FFFD.
std::string ResultJson(const std::vector<ResultField>& fields) {
  nlohmann::ordered_json object = nlohmann::ordered_json::object();
  for (const ResultField& field : fields) {
    double number = 0;
    if (field.kind != ResultField::kNumber) {
      object[field.key] = field.value;
    } else if (field.value.find('.') != std::string::npos &&
               absl::SimpleAtod(field.value, &number)) {
      object[field.key] = number;
    } else if (int64_t integer = 0; absl::SimpleAtoi(field.value, &integer)) {
      object[field.key] = integer;
    } else {
      object[field.key] = nullptr;  // "?"
    }
  }
  return object.dump(-1, ' ', false,
                     nlohmann::ordered_json::error_handler_t::replace);
}

// A big-endian 32-bit value: the first 4 bytes of `bytes` (at least 4).
uint32_t BigEndian32(absl::string_view bytes) {
  return (uint32_t{static_cast<uint8_t>(bytes[0])} << 24) |
         (uint32_t{static_cast<uint8_t>(bytes[1])} << 16) |
         (uint32_t{static_cast<uint8_t>(bytes[2])} << 8) |
         uint32_t{static_cast<uint8_t>(bytes[3])};
}

// The client preface, an empty SETTINGS frame and an ACK of the server's
// SETTINGS (sent before reading them; every server sends SETTINGS first).
std::string Handshake() {
  return absl::StrCat(kClientPreface, EncodeFrame(NGHTTP2_SETTINGS, 0, 0, ""),
                      EncodeFrame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, ""));
}

std::string SimpleRequestFrame(int32_t response_size) {
  SimpleRequest request;
  request.set_response_size(response_size);
  return GrpcFrame(request.SerializeAsString());
}

// ---------------------------------------------------------------------------
// The child process

// VmRSS, VmHWM (bytes) and Threads from /proc/<pid>/status; -1 when absent.
struct ProcStatus {
  int64_t rss = -1;
  int64_t hwm = -1;
  int threads = -1;
};

ProcStatus ReadProcStatus(pid_t pid) {
  ProcStatus result;
  std::ifstream file(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(file, line)) {
    absl::string_view rest = line;
    int64_t value = 0;
    if (absl::ConsumePrefix(&rest, "VmRSS:")) {
      if (absl::SimpleAtoi(absl::StripSuffix(rest, " kB"), &value)) {
        result.rss = value * 1024;
      }
    } else if (absl::ConsumePrefix(&rest, "VmHWM:")) {
      if (absl::SimpleAtoi(absl::StripSuffix(rest, " kB"), &value)) {
        result.hwm = value * 1024;
      }
    } else if (absl::ConsumePrefix(&rest, "Threads:")) {
      if (absl::SimpleAtoi(rest, &value))
        result.threads = static_cast<int>(value);
    }
  }
  return result;
}

// User plus system CPU time of `pid`; zero if it cannot be read.
absl::Duration CpuTime(pid_t pid) {
  absl::Duration cpu = absl::ZeroDuration();
  ProcessCpuTime(pid, &cpu);
  return cpu;
}

// An interop server running as a child of this process: stdout on a pipe
// (for its "listening on port N" line), stderr into a log file. Used from
// one thread; stopped with SIGTERM (then SIGKILL) by its own process id.
class ServerProcess {
 public:
  // Starts `binary --port=0`, with the soft RLIMIT_NOFILE set to
  // `rlimit_nofile` when it is positive, and waits up to `timeout` for its
  // port. Null with `*error` on failure.
  static std::unique_ptr<ServerProcess> Start(const std::string& binary,
                                              long rlimit_nofile,
                                              absl::Duration timeout,
                                              std::string* error) {
    std::unique_ptr<ServerProcess> process(new ServerProcess);
    const char* tmp = std::getenv("TMPDIR");
    process->log_path_ = absl::StrCat(tmp != nullptr ? tmp : "/tmp",
                                      "/attack_report_server.XXXXXX");
    const int log_fd = mkstemp(process->log_path_.data());
    if (log_fd < 0) {
      *error = absl::StrCat("mkstemp: ", std::strerror(errno));
      return nullptr;
    }
    const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int out[2];
    if (null_fd < 0 || pipe2(out, O_CLOEXEC) != 0) {
      *error = absl::StrCat("pipe2: ", std::strerror(errno));
      close(log_fd);
      if (null_fd >= 0) close(null_fd);
      return nullptr;
    }
    std::string port_flag = "--port=0";
    std::string path = binary;
    char* argv[] = {path.data(), port_flag.data(), nullptr};
    const pid_t pid = fork();
    if (pid == 0) {
      // The child: only async-signal-safe calls until exec.
      if (rlimit_nofile > 0) {
        rlimit limit;
        if (getrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(126);
        limit.rlim_cur = static_cast<rlim_t>(rlimit_nofile);
        if (setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(126);
      }
      if (dup2(null_fd, 0) < 0 || dup2(out[1], 1) < 0 || dup2(log_fd, 2) < 0) {
        _exit(126);
      }
      closefrom(3);
      execv(argv[0], argv);
      _exit(127);
    }
    close(null_fd);
    close(out[1]);
    close(log_fd);
    if (pid < 0) {
      close(out[0]);
      *error = absl::StrCat("fork: ", std::strerror(errno));
      return nullptr;
    }
    process->pid_ = pid;
    process->stdout_fd_ = out[0];

    // The first stdout line: "listening on port N".
    const absl::Time deadline = absl::Now() + timeout;
    std::string text;
    for (;;) {
      if (text.find('\n') != std::string::npos) break;
      pollfd p = {process->stdout_fd_, POLLIN, 0};
      const int r = poll(&p, 1, MillisUntil(deadline));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      char buffer[256];
      const ssize_t n = read(process->stdout_fd_, buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      text.append(buffer, static_cast<size_t>(n));
    }
    absl::string_view line = text;
    line = line.substr(0, line.find('\n'));
    int port = 0;
    if (!absl::ConsumePrefix(&line, "listening on port ") ||
        !absl::SimpleAtoi(line, &port) || port <= 0 || port > 65535) {
      std::string how;
      process->Running(&how);
      *error = absl::StrCat(binary, " did not print 'listening on port N' (",
                            how.empty() ? "still running" : how, "); stdout: '",
                            Clip(text), "', last log line: '",
                            process->LastLogLine(), "'");
      return nullptr;
    }
    process->port_ = port;
    return process;
  }

  ~ServerProcess() {
    Stop();
    if (stdout_fd_ >= 0) close(stdout_fd_);
    unlink(log_path_.c_str());
  }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  pid_t pid() const { return pid_; }
  int port() const { return port_; }

  // True while the child runs; once it has ended, false with `*how`.
  bool Running(std::string* how) {
    if (!ended_) {
      int status = 0;
      pid_t r;
      do {
        r = waitpid(pid_, &status, WNOHANG);
      } while (r < 0 && errno == EINTR);
      if (r == pid_) {
        ended_ = true;
        end_how_ = DescribeWaitStatus(status);
      } else if (r < 0) {
        ended_ = true;
        end_how_ = absl::StrCat("waitpid: ", std::strerror(errno));
      }
    }
    *how = end_how_;
    return !ended_;
  }

  // Lines the child has written to stderr so far.
  int LogLines() const {
    std::ifstream file(log_path_);
    std::string line;
    int lines = 0;
    while (std::getline(file, line)) ++lines;
    return lines;
  }

  // The last non-empty line the child wrote to stderr (clipped).
  std::string LastLogLine() const {
    std::ifstream file(log_path_, std::ios::ate);
    const std::streamoff size = file.tellg();
    if (size <= 0) return "";
    const std::streamoff tail = std::min<std::streamoff>(size, 8192);
    file.seekg(size - tail);
    std::string text(static_cast<size_t>(tail), '\0');
    file.read(text.data(), tail);
    std::vector<absl::string_view> lines =
        absl::StrSplit(text, '\n', absl::SkipWhitespace());
    return lines.empty() ? "" : Clip(lines.back());
  }

  // SIGTERM, up to 10 s to exit, then SIGKILL. Idempotent.
  void Stop() {
    std::string how;
    if (!Running(&how)) return;
    kill(pid_, SIGTERM);
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (Running(&how) && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(5));  // waitpid has no timeout
    }
    if (Running(&how)) {
      kill(pid_, SIGKILL);
      int status = 0;
      while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      ended_ = true;
      end_how_ = "killed after not exiting within 10 s of SIGTERM";
    }
  }

 private:
  ServerProcess() = default;

  pid_t pid_ = -1;
  int port_ = 0;
  int stdout_fd_ = -1;
  std::string log_path_;
  bool ended_ = false;
  std::string end_how_;
};

// Samples the child's VmRSS and thread count every 5 ms on a thread of its
// own, keeping the largest values, until destroyed.
class PeakSampler {
 public:
  explicit PeakSampler(pid_t pid)
      : thread_([this, pid] {
          while (!stop_.load(std::memory_order_relaxed)) {
            const ProcStatus status = ReadProcStatus(pid);
            Raise(&max_rss_, status.rss);
            Raise(&max_threads_, int64_t{status.threads});
            absl::SleepFor(absl::Milliseconds(5));  // the sampling period
          }
        }) {}
  ~PeakSampler() {
    stop_.store(true, std::memory_order_relaxed);
    thread_.join();
  }
  PeakSampler(const PeakSampler&) = delete;
  PeakSampler& operator=(const PeakSampler&) = delete;

  int64_t max_rss() const { return max_rss_.load(); }
  int max_threads() const { return static_cast<int>(max_threads_.load()); }

 private:
  static void Raise(std::atomic<int64_t>* max, int64_t value) {
    int64_t seen = max->load();
    while (value > seen && !max->compare_exchange_weak(seen, value)) {
    }
  }

  std::atomic<bool> stop_{false};
  std::atomic<int64_t> max_rss_{-1};
  std::atomic<int64_t> max_threads_{-1};
  std::thread thread_;  // last: started once the members above exist
};

// Samples `sample` after each `wait()` until its value has not changed for
// `quiet`, or until `limit` has passed; returns the last value, with
// `*steady` (when non-null) saying whether it held still for `quiet`.
int64_t WaitUntilSteady(const std::function<int64_t()>& sample,
                        const std::function<void()>& wait, absl::Duration quiet,
                        absl::Duration limit, bool* steady = nullptr) {
  int64_t value = sample();
  absl::Time changed = absl::Now();
  const absl::Time give_up = absl::Now() + limit;
  while (absl::Now() - changed < quiet && absl::Now() < give_up) {
    wait();
    const int64_t now = sample();
    if (now != value) {
      value = now;
      changed = absl::Now();
    }
  }
  if (steady != nullptr) *steady = absl::Now() - changed >= quiet;
  return value;
}

// Once the handlers of new streams have started: the child's thread count
// has not changed for 500 ms (sampled every 20 ms; at most 10 s).
void WaitForThreadsToSettle(pid_t pid) {
  WaitUntilSteady(
      [pid] { return int64_t{ReadProcStatus(pid).threads}; },
      [] { absl::SleepFor(absl::Milliseconds(20)); },  // the sampling period
      absl::Milliseconds(500), absl::Seconds(10));
}

// The default pause between samples of SettledRss.
void SleepBetweenRssSamples() { absl::SleepFor(absl::Milliseconds(10)); }

// The child's VmRSS once it has not changed for 300 ms (sampled after each
// `wait()`), or after 5 s; `*settled` says which.
int64_t SettledRss(pid_t pid, bool* settled,
                   const std::function<void()>& wait = SleepBetweenRssSamples) {
  return WaitUntilSteady([pid] { return ReadProcStatus(pid).rss; }, wait,
                         absl::Milliseconds(300), absl::Seconds(5), settled);
}

// ---------------------------------------------------------------------------
// Attacker helpers

// A UnaryCall (response_size 1) on a new connection, bounded by `deadline`
// in total. Sets `*took`.
RawResponse FreshUnaryCall(int port, absl::Duration deadline,
                           absl::Duration* took) {
  const absl::Time start = absl::Now();
  std::string error;
  std::unique_ptr<RawH2Client> client =
      RawH2Client::Connect(port, &error, deadline);
  RawResponse response;
  if (client == nullptr) {
    response.connection_closed = true;
    response.error = absl::StrCat("cannot connect: ", error);
  } else {
    RawRequest request;
    request.headers = GrpcRequestHeaders(kUnaryCall, port);
    request.body = SimpleRequestFrame(1);
    response = client->Call(request, deadline - (absl::Now() - start));
  }
  *took = absl::Now() - start;
  return response;
}

// "answered in 3 ms (grpc-status 0 OK)" or "not answered: ...".
std::string DescribeFreshCall(const RawResponse& response, absl::Duration took,
                              absl::Duration deadline) {
  if (response.Trailer("grpc-status") == std::string("0")) {
    return absl::StrCat("answered OK in ", absl::FormatDuration(absl::Trunc(
                                               took, absl::Milliseconds(1))));
  }
  if (response.timed_out) {
    return absl::StrCat("not answered within ", absl::FormatDuration(deadline),
                        " (", Describe(response), ")");
  }
  return absl::StrCat(
      "failed after ",
      absl::FormatDuration(absl::Trunc(took, absl::Milliseconds(1))), ": ",
      Describe(response));
}

// A socket the attacker holds and reads without waiting.
struct HeldSocket {
  int fd = -1;
  std::string received;
  bool closed = false;  // EOF or an error: the server ended it
  bool reset = false;   // the error was a reset
  absl::Duration closed_after;

  // Appends what the server has sent; notes a close.
  void ReadAvailable(absl::Time since) {
    if (closed) return;
    char buffer[64 * 1024];
    for (;;) {
      const ssize_t n = recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT);
      if (n > 0) {
        received.append(buffer, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      closed = true;
      reset = n < 0;
      closed_after = absl::Now() - since;
      return;
    }
  }
};

void CloseAll(std::vector<HeldSocket>* sockets) {
  for (HeldSocket& socket : *sockets) {
    if (socket.fd >= 0) close(socket.fd);
    socket.fd = -1;
  }
}

// The frames of the server's first SETTINGS, read on a connection of its
// own; empty if none arrived within 10 s.
std::vector<RawFrame> ServerSettings(int port) {
  const RawBytesResult result =
      SendRawBytes(port, Handshake(), absl::Seconds(10),
                   [](const std::vector<RawFrame>& frames) {
                     for (const RawFrame& frame : frames) {
                       if (frame.type == NGHTTP2_SETTINGS &&
                           !(frame.flags & NGHTTP2_FLAG_ACK)) {
                         return true;
                       }
                     }
                     return false;
                   });
  return result.frames;
}

std::string DescribeSetting(const std::vector<RawFrame>& settings,
                            uint16_t id) {
  const absl::optional<uint32_t> value = SettingValue(settings, id);
  return value.has_value() ? absl::StrCat(*value) : "not advertised";
}

// The GOAWAY in `frames` as "GOAWAY CODE 'debug data'".
std::string DescribeGoAway(const std::vector<RawFrame>& frames) {
  for (const RawFrame& frame : frames) {
    if (frame.type != NGHTTP2_GOAWAY || frame.payload.size() < 8) continue;
    std::string text =
        absl::StrCat("GOAWAY ", H2ErrorName(GoAwayErrorCode(frames).value()));
    if (frame.payload.size() > 8) {
      absl::StrAppend(&text, " '",
                      Clip(absl::string_view(frame.payload).substr(8), 80),
                      "'");
    }
    return text;
  }
  return "no GOAWAY";
}

// ---------------------------------------------------------------------------
// The attacks

struct AttackOutcome {
  std::string attacker;  // what the attacker saw
  std::string during = "-";
  // The attacks measuring memory per unit (idle_connections, open_streams):
  // the units open when `rss_held` was sampled, and the child's settled
  // VmRSS just before the first unit was opened and with all of them held
  // (bytes). held < 0: not such an attack.
  int held = -1;
  int wanted = -1;  // the units the attack set out to open
  int64_t rss_start = -1;
  int64_t rss_held = -1;
};

struct Attack {
  const char* name;
  const char* summary;
  std::function<AttackOutcome(ServerProcess*)> run;
  long rlimit_nofile = 0;  // > 0: the child's soft RLIMIT_NOFILE
};

// 1. A 6-byte SimpleRequest asking for a 2147483647-byte response.
AttackOutcome HugeResponse(ServerProcess* server) {
  AttackOutcome outcome;
  std::string error;
  std::unique_ptr<RawH2Client> client =
      RawH2Client::Connect(server->port(), &error);
  if (client == nullptr) {
    outcome.attacker = absl::StrCat("cannot connect: ", error);
    return outcome;
  }
  RawRequest request;
  request.headers = GrpcRequestHeaders(kUnaryCall, server->port());
  request.body = SimpleRequestFrame(INT_MAX);
  const absl::Time start = absl::Now();
  const RawResponse response = client->Call(request, absl::Seconds(90));
  outcome.attacker =
      absl::StrCat(Describe(response), " after ", Seconds(absl::Now() - start),
                   "; ", response.body.size(), " body bytes");
  return outcome;
}

// Starts `count` FullDuplexCall streams on `client` that send their headers
// and nothing more; their ids (fewer when the client could not start one).
std::vector<int32_t> StartIdleStreams(RawH2Client* client, int count) {
  std::vector<int32_t> ids;
  for (int i = 0; i < count; ++i) {
    RawRequest request;
    request.headers = GrpcRequestHeaders(kFullDuplexCall, client->port());
    request.end_stream = false;
    const int32_t id = client->Start(request);
    if (id < 0) break;
    ids.push_back(id);
  }
  return ids;
}

// Of the streams `ids`, those neither closed nor reset, nor on a closed
// connection; the others' ends tallied in `ends` (when non-null).
int OpenStreamCount(const RawH2Client& client, const std::vector<int32_t>& ids,
                    Tally* ends = nullptr) {
  int open = 0;
  for (int32_t id : ids) {
    const RawResponse response = client.Response(id);
    if (response.stream_closed || response.rst_received ||
        response.connection_closed) {
      if (ends != nullptr) {
        ends->Add(Describe(response, false), Describe(response));
      }
    } else {
      ++open;
    }
  }
  return open;
}

// "64 streams opened (headers only); 64 still open", plus how the others
// ended and whether the PING sent after their HEADERS was answered.
std::string DescribeIdleStreams(const RawH2Client& client,
                                const std::vector<int32_t>& ids, bool pinged) {
  Tally ends;
  const int open = OpenStreamCount(client, ids, &ends);
  return absl::StrCat(ids.size(), " streams opened (headers only)",
                      pinged ? "" : ", PING not answered", "; ", open,
                      " still open",
                      ends.total() == 0 ? "" : "; ended: ", ends.ToString());
}

// 2. 64 FullDuplexCall streams that send their headers and nothing more,
// then a UnaryCall on another connection, given 5 s.
AttackOutcome IdleStreams(ServerProcess* server) {
  constexpr int kStreams = 64;
  constexpr absl::Duration kCallDeadline = absl::Seconds(5);
  AttackOutcome outcome;
  std::string error;
  std::unique_ptr<RawH2Client> attacker =
      RawH2Client::Connect(server->port(), &error);
  if (attacker == nullptr) {
    outcome.attacker = absl::StrCat("cannot connect: ", error);
    return outcome;
  }
  const std::vector<int32_t> ids = StartIdleStreams(attacker.get(), kStreams);
  // The PING's ACK comes after the server has read every HEADERS frame.
  const bool pinged = attacker->Ping();
  WaitForThreadsToSettle(server->pid());  // the handlers start
  absl::Duration took;
  const RawResponse fresh =
      FreshUnaryCall(server->port(), kCallDeadline, &took);
  outcome.during = DescribeFreshCall(fresh, took, kCallDeadline);
  // What the idle streams got meanwhile.
  attacker->RunUntil([] { return false; }, absl::Milliseconds(200));
  outcome.attacker = DescribeIdleStreams(*attacker, ids, pinged);
  return outcome;
}

// 3. RLIMIT_NOFILE 64 in the server; 100 connections that send the client
// handshake and stay, held 3 s, then closed.
AttackOutcome DescriptorExhaustion(ServerProcess* server) {
  constexpr int kConnections = 100;
  constexpr absl::Duration kHold = absl::Seconds(3);
  AttackOutcome outcome;
  std::vector<HeldSocket> sockets;
  int failed = 0;
  const std::string handshake =
      absl::StrCat(kClientPreface, EncodeFrame(NGHTTP2_SETTINGS, 0, 0, ""));
  for (int i = 0; i < kConnections; ++i) {
    HeldSocket socket;
    socket.fd = ConnectToLoopback(server->port());
    if (socket.fd < 0 || !WriteAll(socket.fd, handshake)) {
      if (socket.fd >= 0) close(socket.fd);
      ++failed;
      continue;
    }
    sockets.push_back(std::move(socket));
  }
  const absl::Time hold_start = absl::Now();
  const absl::Duration cpu_before = CpuTime(server->pid());
  const int log_before = server->LogLines();
  absl::Duration took;
  const RawResponse fresh =
      FreshUnaryCall(server->port(), absl::Seconds(2), &took);
  outcome.during = DescribeFreshCall(fresh, took, absl::Seconds(2));
  absl::SleepFor(kHold - (absl::Now() - hold_start));  // the measuring window
  const absl::Duration cpu_used = CpuTime(server->pid()) - cpu_before;
  const int logged = server->LogLines() - log_before;
  int accepted = 0;
  int closed = 0;
  for (HeldSocket& socket : sockets) {
    socket.ReadAvailable(hold_start);
    bool got_settings = false;
    for (const RawFrame& frame : ParseFrames(socket.received)) {
      if (frame.type == NGHTTP2_SETTINGS) got_settings = true;
    }
    if (got_settings) ++accepted;
    if (socket.closed) ++closed;
  }
  CloseAll(&sockets);
  outcome.attacker = absl::StrFormat(
      "%d connections held %s against RLIMIT_NOFILE 64 (%d failed to "
      "connect): %d got the server's SETTINGS, %d were closed by the server; "
      "server CPU during the hold %.0f%% of a core, %d log lines",
      kConnections, absl::FormatDuration(kHold), failed, accepted, closed,
      100 * absl::ToDoubleSeconds(cpu_used) / absl::ToDoubleSeconds(kHold),
      logged);
  return outcome;
}

// 4. One connection, 100 UnaryCall streams, each declaring a 4 MiB message
// and sending all of it but its last byte, never ending.
AttackOutcome PartialMessages(ServerProcess* server) {
  constexpr int kStreams = 100;
  constexpr uint32_t kDeclared = 4 << 20;
  AttackOutcome outcome;
  std::string error;
  std::unique_ptr<RawH2Client> attacker =
      RawH2Client::Connect(server->port(), &error);
  if (attacker == nullptr) {
    outcome.attacker = absl::StrCat("cannot connect: ", error);
    return outcome;
  }
  auto body = std::make_shared<std::string>(GrpcPrefix(0, kDeclared));
  body->append(kDeclared - 1, 'x');
  const size_t full = body->size();
  std::vector<int32_t> ids;
  for (int i = 0; i < kStreams; ++i) {
    RawRequest request;
    request.headers = GrpcRequestHeaders(kUnaryCall, server->port());
    request.shared_body = body;
    request.end_stream = false;
    const int32_t id = attacker->Start(request);
    if (id < 0) break;
    ids.push_back(id);
  }
  auto total_sent = [&] {
    size_t sent = 0;
    for (int32_t id : ids) sent += attacker->Response(id).request_bytes_sent;
    return sent;
  };
  // Send until everything is sent or nothing moved for 2 s (at most 60 s).
  size_t last_sent = 0;
  absl::Time last_progress = absl::Now();
  const absl::Time start = absl::Now();
  const bool settled = attacker->RunUntil(
      [&] {
        const size_t sent = total_sent();
        if (sent != last_sent) {
          last_sent = sent;
          last_progress = absl::Now();
        }
        return sent == full * ids.size() ||
               absl::Now() - last_progress >= absl::Seconds(2);
      },
      absl::Seconds(60));
  const absl::Duration sending = last_progress - start;
  absl::Duration took;
  const RawResponse fresh =
      FreshUnaryCall(server->port(), kSurvivalDeadline, &took);
  outcome.during = DescribeFreshCall(fresh, took, kSurvivalDeadline);
  int stalled = 0;
  Tally ends;
  for (int32_t id : ids) {
    const RawResponse response = attacker->Response(id);
    if (response.stream_closed || response.rst_received ||
        response.end_stream_received || response.connection_closed) {
      ends.Add(Describe(response, false), Describe(response));
    } else if (response.request_bytes_sent < full) {
      ++stalled;
    }
  }
  outcome.attacker = absl::StrFormat(
      "%d streams x (4 MiB - 1 byte) of a 4 MiB message: sent %.1f of %.1f "
      "MiB in %s%s; %d streams open with bytes unsent (flow control), %d open "
      "with all sent, %d ended%s%s",
      static_cast<int>(ids.size()), static_cast<double>(total_sent()) / kMiB,
      static_cast<double>(full * ids.size()) / kMiB, Seconds(sending),
      settled ? "" : " (still sending after 60 s)", stalled,
      static_cast<int>(ids.size()) - stalled - ends.total(), ends.total(),
      ends.total() == 0 ? "" : ": ", ends.ToString());
  return outcome;
}

// 5. 64 connections, each asking for a 16 MiB UnaryCall response and never
// granting flow-control window beyond the initial 65535 bytes.
AttackOutcome SlowReaders(ServerProcess* server) {
  constexpr int kClients = 64;
  constexpr int32_t kResponseSize = 16 << 20;
  AttackOutcome outcome;
  const std::string request_bytes =
      absl::StrCat(Handshake(),
                   EncodeFrame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1,
                               EncodeLiteralHeaderBlock(GrpcRequestHeaders(
                                   kUnaryCall, server->port()))),
                   EncodeFrame(NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, 1,
                               SimpleRequestFrame(kResponseSize)));
  std::vector<HeldSocket> sockets;
  for (int i = 0; i < kClients; ++i) {
    HeldSocket socket;
    socket.fd = ConnectToLoopback(server->port());
    if (socket.fd < 0) continue;
    if (!WriteAll(socket.fd, request_bytes)) socket.closed = true;
    sockets.push_back(std::move(socket));
  }
  // Wait until every client has an answer's headers, a reset or a close
  // (at most 60 s).
  const absl::Time start = absl::Now();
  std::vector<absl::optional<RawHeaders>> answers(sockets.size());
  for (;;) {
    size_t decided = 0;
    for (size_t i = 0; i < sockets.size(); ++i) {
      sockets[i].ReadAvailable(start);
      const std::vector<RawFrame> frames = ParseFrames(sockets[i].received);
      std::map<uint32_t, std::vector<RawHeaders>> blocks;
      if (DecodeHeaderBlocks(frames, &blocks) && !blocks[1].empty()) {
        answers[i] = blocks[1].front();
      }
      if (answers[i].has_value() || sockets[i].closed ||
          RstStreamErrorCode(frames, 1).has_value()) {
        ++decided;
      }
    }
    if (decided == sockets.size() || absl::Now() - start >= absl::Seconds(60)) {
      break;
    }
    absl::SleepFor(absl::Milliseconds(5));  // the sockets' polling period
  }
  absl::Duration took;
  const RawResponse fresh =
      FreshUnaryCall(server->port(), kSurvivalDeadline, &took);
  outcome.during = DescribeFreshCall(fresh, took, kSurvivalDeadline);
  int streaming = 0;
  size_t body_bytes = 0;
  Tally other;
  for (size_t i = 0; i < sockets.size(); ++i) {
    const std::vector<RawFrame> frames = ParseFrames(sockets[i].received);
    for (const RawFrame& frame : frames) {
      if (frame.type == NGHTTP2_DATA) body_bytes += frame.payload.size();
    }
    if (answers[i].has_value()) {
      const absl::optional<std::string> status =
          FindHeader(*answers[i], "grpc-status");
      if (!status.has_value()) {
        ++streaming;
        continue;
      }
      other.Add(StatusText(*status, absl::nullopt),
                StatusText(*status, FindHeader(*answers[i], "grpc-message")));
    } else if (absl::optional<uint32_t> rst = RstStreamErrorCode(frames, 1)) {
      const std::string what = absl::StrCat("RST_STREAM ", H2ErrorName(*rst));
      other.Add(what, what);
    } else if (sockets[i].closed) {
      const std::string what =
          absl::StrCat("connection closed, ", DescribeGoAway(frames));
      other.Add(what, what);
    } else {
      other.Add("no answer within 60 s", "no answer within 60 s");
    }
  }
  CloseAll(&sockets);
  outcome.attacker = absl::StrFormat(
      "%d clients asked for 16 MiB each, reading nothing beyond the 64 KiB "
      "window: %d responses started (%.1f MiB of DATA received in all)%s%s",
      static_cast<int>(sockets.size()), streaming,
      static_cast<double>(body_bytes) / kMiB, other.total() == 0 ? "" : "; ",
      other.ToString());
  return outcome;
}

// 6. 500 TCP connections that send nothing, held 10 s.
AttackOutcome SilentConnections(ServerProcess* server) {
  constexpr int kConnections = 500;
  constexpr absl::Duration kHold = absl::Seconds(10);
  AttackOutcome outcome;
  std::vector<HeldSocket> sockets;
  int failed = 0;
  for (int i = 0; i < kConnections; ++i) {
    HeldSocket socket;
    socket.fd = ConnectToLoopback(server->port());
    if (socket.fd < 0) {
      ++failed;
      continue;
    }
    sockets.push_back(std::move(socket));
  }
  const absl::Time start = absl::Now();
  // A fresh call meanwhile, on its own thread so that closes are timed.
  std::string during;
  std::thread caller([&] {
    absl::Duration took;
    const RawResponse fresh =
        FreshUnaryCall(server->port(), kSurvivalDeadline, &took);
    during = DescribeFreshCall(fresh, took, kSurvivalDeadline);
  });
  while (absl::Now() - start < kHold) {
    std::vector<pollfd> fds;
    std::vector<size_t> index;
    for (size_t i = 0; i < sockets.size(); ++i) {
      if (sockets[i].closed) continue;
      fds.push_back({sockets[i].fd, POLLIN, 0});
      index.push_back(i);
    }
    if (fds.empty()) break;
    const int ready = poll(fds.data(), fds.size(), MillisUntil(start + kHold));
    if (ready <= 0) continue;
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents != 0) sockets[index[k]].ReadAvailable(start);
    }
  }
  caller.join();
  outcome.during = during;
  int closed = 0;
  int reset = 0;
  std::map<std::string, int> goaways;
  absl::Duration first = absl::InfiniteDuration();
  absl::Duration last = absl::ZeroDuration();
  for (HeldSocket& socket : sockets) {
    socket.ReadAvailable(start);
    if (!socket.closed) continue;
    ++closed;
    if (socket.reset) ++reset;
    ++goaways[DescribeGoAway(ParseFrames(socket.received))];
    first = std::min(first, socket.closed_after);
    last = std::max(last, socket.closed_after);
  }
  CloseAll(&sockets);
  std::vector<std::string> parts;
  for (const auto& [what, count] : goaways) {
    parts.push_back(absl::StrCat(count, " with ", what));
  }
  outcome.attacker =
      absl::StrCat(sockets.size(), " connections (", failed,
                   " failed to connect) sent nothing, held up to ",
                   absl::FormatDuration(kHold), ": ", sockets.size() - closed,
                   " still open at the end, ", closed, " closed by the server");
  if (closed > 0) {
    absl::StrAppend(&outcome.attacker, " (", reset, " by reset) between ",
                    Seconds(first), " and ", Seconds(last), " (",
                    absl::StrJoin(parts, ", "), ")");
  }
  return outcome;
}

// 7. A UnaryCall whose request header list is 20480 bytes (RFC 9113 size:
// name + value + 32 per field).
AttackOutcome LargeHeaderList(ServerProcess* server) {
  constexpr size_t kListSize = 20480;
  AttackOutcome outcome;
  const std::vector<RawFrame> settings = ServerSettings(server->port());
  RawRequest request;
  request.headers = GrpcRequestHeaders(kUnaryCall, server->port());
  request.body = SimpleRequestFrame(1);
  size_t size = 0;
  for (const auto& [name, value] : request.headers) {
    size += name.size() + value.size() + 32;
  }
  // The interop servers echo this header as response metadata, which shows
  // whether the handler saw all of it.
  const std::string name = "x-grpc-test-echo-initial";
  request.headers.emplace_back(
      name, std::string(kListSize - size - 32 - name.size(), 'a'));
  std::string error;
  std::unique_ptr<RawH2Client> client =
      RawH2Client::Connect(server->port(), &error);
  if (client == nullptr) {
    outcome.attacker = absl::StrCat("cannot connect: ", error);
    return outcome;
  }
  const RawResponse response = client->Call(request, absl::Seconds(20));
  const bool usable = !client->closed() && client->Ping();
  const absl::optional<std::string> echoed = response.Header(name);
  outcome.attacker = absl::StrCat(
      "SETTINGS_MAX_HEADER_LIST_SIZE ",
      DescribeSetting(settings, NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE), "; a ",
      kListSize, "-byte header list (one ",
      request.headers.back().second.size(), "-byte value) got ",
      Describe(response), response.IsTrailersOnly() ? " (Trailers-Only)" : "",
      echoed.has_value()
          ? absl::StrCat(
                ", the value echoed back whole: ",
                *echoed == request.headers.back().second ? "yes" : "no")
          : "",
      "; connection ", usable ? "still usable" : "not usable");
  return outcome;
}

// What a flood of raw bytes did: written without reading anything back
// (as a flooding client does), then read until the server closes.
struct FloodResult {
  size_t written = 0;
  bool write_stalled = false;  // no progress for 3 s: the server stopped
                               // reading
  bool closed = false;
  bool reset = false;
  absl::Duration closed_after;
  std::vector<RawFrame> frames;
};

FloodResult Flood(int port, absl::string_view bytes) {
  FloodResult result;
  HeldSocket socket;
  socket.fd = ConnectToLoopback(port);
  if (socket.fd < 0) {
    result.closed = true;
    return result;
  }
  const absl::Time start = absl::Now();
  absl::Time progress = start;
  while (result.written < bytes.size()) {
    pollfd p = {socket.fd, POLLOUT, 0};
    const int ready = poll(&p, 1, 100);
    if (ready < 0 && errno != EINTR) break;
    if (ready > 0 && (p.revents & POLLOUT)) {
      const ssize_t n =
          send(socket.fd, bytes.data() + result.written,
               bytes.size() - result.written, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        result.written += static_cast<size_t>(n);
        progress = absl::Now();
        continue;
      }
      if (n < 0 && errno != EAGAIN && errno != EINTR) break;  // closed
    } else if (ready > 0) {
      break;  // POLLHUP / POLLERR: the server has gone
    }
    if (absl::Now() - progress >= absl::Seconds(3)) {
      result.write_stalled = true;
      break;
    }
  }
  // Read until the server closes, at most 10 s more.
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (!socket.closed && absl::Now() < give_up) {
    pollfd p = {socket.fd, POLLIN, 0};
    if (poll(&p, 1, MillisUntil(give_up)) > 0) socket.ReadAvailable(start);
  }
  result.closed = socket.closed;
  result.reset = socket.reset;
  result.closed_after = socket.closed_after;
  result.frames = ParseFrames(socket.received);
  close(socket.fd);
  return result;
}

std::string DescribeFlood(const FloodResult& result, size_t total) {
  int ping_acks = 0;
  int settings_acks = 0;
  for (const RawFrame& frame : result.frames) {
    if (!(frame.flags & NGHTTP2_FLAG_ACK)) continue;
    if (frame.type == NGHTTP2_PING) ++ping_acks;
    if (frame.type == NGHTTP2_SETTINGS) ++settings_acks;
  }
  std::string text = absl::StrFormat(
      "wrote %.2f of %.2f MB%s; received %s, %d PING ACKs, %d SETTINGS ACKs; ",
      result.written / 1e6, total / 1e6,
      result.write_stalled ? " (writes stalled: the server stopped reading)"
                           : "",
      DescribeGoAway(result.frames), ping_acks, settings_acks);
  if (result.closed) {
    absl::StrAppend(&text, result.reset ? "reset" : "closed (FIN)", " after ",
                    Seconds(result.closed_after));
  } else {
    absl::StrAppend(&text, "connection still open 10 s after the flood");
  }
  return text;
}

// 8a. 100000 PING frames.
AttackOutcome PingFlood(ServerProcess* server) {
  std::string bytes = Handshake();
  const std::string ping = EncodeFrame(NGHTTP2_PING, 0, 0, "pingpong");
  for (int i = 0; i < 100000; ++i) bytes += ping;
  AttackOutcome outcome;
  outcome.attacker =
      absl::StrCat("100000 PINGs: ",
                   DescribeFlood(Flood(server->port(), bytes), bytes.size()));
  return outcome;
}

// 8b. 100000 empty SETTINGS frames.
AttackOutcome SettingsFlood(ServerProcess* server) {
  std::string bytes = Handshake();
  const std::string settings = EncodeFrame(NGHTTP2_SETTINGS, 0, 0, "");
  for (int i = 0; i < 100000; ++i) bytes += settings;
  AttackOutcome outcome;
  outcome.attacker =
      absl::StrCat("100000 SETTINGS: ",
                   DescribeFlood(Flood(server->port(), bytes), bytes.size()));
  return outcome;
}

// 8c. A HEADERS frame without END_HEADERS, then 2048 full (16 KiB)
// CONTINUATION frames of a header block that never ends (32 MiB of
// literal fields of 4 KB each).
AttackOutcome ContinuationFlood(ServerProcess* server) {
  constexpr int kFrames = 2048;
  constexpr size_t kFragment = 16384;
  RawHeaders headers = GrpcRequestHeaders(kUnaryCall, server->port());
  std::string block = EncodeLiteralHeaderBlock(headers);
  const std::string field =
      EncodeLiteralHeaderBlock({{"x-pad", std::string(4000, 'c')}});
  while (block.size() < (kFrames + 1) * kFragment) block += field;
  std::string bytes = Handshake();
  for (int i = 0; i <= kFrames; ++i) {
    bytes +=
        EncodeFrame(i == 0 ? NGHTTP2_HEADERS : NGHTTP2_CONTINUATION, 0, 1,
                    absl::string_view(block).substr(i * kFragment, kFragment));
  }
  AttackOutcome outcome;
  outcome.attacker = absl::StrCat(
      "HEADERS + ", kFrames, " CONTINUATIONs of 16 KiB, no END_HEADERS: ",
      DescribeFlood(Flood(server->port(), bytes), bytes.size()));
  return outcome;
}

// The server's SETTINGS_MAX_CONCURRENT_STREAMS, read on a connection of its
// own, into `*limit` (nullopt when not advertised). False, with
// `outcome->attacker` saying so, when no SETTINGS came within 10 s.
bool ReadStreamLimit(int port, absl::optional<uint32_t>* limit,
                     AttackOutcome* outcome) {
  const std::vector<RawFrame> settings = ServerSettings(port);
  if (settings.empty()) {
    outcome->attacker = "no SETTINGS from the server within 10 s";
    return false;
  }
  *limit = SettingValue(settings, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
  return true;
}

// 9. SETTINGS_MAX_CONCURRENT_STREAMS + 1 UnaryCall streams opened at once on
// one connection (HEADERS without END_STREAM), then the first N send their
// request and end. With no limit advertised, 1025 streams, all completed.
AttackOutcome StreamsPastTheLimit(ServerProcess* server) {
  constexpr uint32_t kUnadvertisedStreams = 1025;
  AttackOutcome outcome;
  absl::optional<uint32_t> limit;
  if (!ReadStreamLimit(server->port(), &limit, &outcome)) return outcome;
  if (limit.has_value() && *limit > 100000) {
    outcome.attacker = absl::StrCat("MAX_CONCURRENT_STREAMS ", *limit,
                                    ": too many streams to open");
    return outcome;
  }
  const uint32_t streams =
      limit.has_value() ? *limit + 1 : kUnadvertisedStreams;
  // Without a limit every stream is an ordinary call and sends its request.
  const uint32_t with_body = limit.has_value() ? *limit : streams;
  const uint32_t extra_id = 2 * streams - 1;
  const std::string headers =
      EncodeLiteralHeaderBlock(GrpcRequestHeaders(kUnaryCall, server->port()));
  const std::string body = SimpleRequestFrame(1);
  std::string bytes = Handshake();
  for (uint32_t i = 0; i < streams; ++i) {
    bytes += EncodeFrame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 2 * i + 1,
                         headers);
  }
  for (uint32_t i = 0; i < with_body; ++i) {
    bytes +=
        EncodeFrame(NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, 2 * i + 1, body);
  }
  // Until every stream has ended (trailers or RST_STREAM) or the connection
  // ends; at most 30 s.
  auto ended_streams = [](const std::vector<RawFrame>& frames) {
    std::map<uint32_t, bool> ended;
    for (const RawFrame& frame : frames) {
      if (frame.type == NGHTTP2_RST_STREAM ||
          (frame.type == NGHTTP2_HEADERS &&
           (frame.flags & NGHTTP2_FLAG_END_STREAM))) {
        ended[frame.stream_id] = true;
      }
    }
    return ended.size();
  };
  const RawBytesResult result =
      SendRawBytes(server->port(), bytes, absl::Seconds(30),
                   [&](const std::vector<RawFrame>& frames) {
                     return ended_streams(frames) == streams;
                   });
  std::map<uint32_t, std::vector<RawHeaders>> blocks;
  const bool decoded = DecodeHeaderBlocks(result.frames, &blocks);
  std::map<std::string, int> others;
  for (uint32_t i = 0; i < with_body; ++i) {
    const uint32_t id = 2 * i + 1;
    if (id == extra_id) continue;
    const absl::optional<uint32_t> rst = RstStreamErrorCode(result.frames, id);
    absl::optional<std::string> status;
    if (decoded && !blocks[id].empty()) {
      status = FindHeader(blocks[id].back(), "grpc-status");
    }
    if (status.has_value()) {
      ++others[StatusText(*status, absl::nullopt)];
    } else if (rst.has_value()) {
      ++others[absl::StrCat("RST_STREAM ", H2ErrorName(*rst))];
    } else {
      ++others["no answer"];
    }
  }
  std::string extra;
  if (const absl::optional<uint32_t> rst =
          RstStreamErrorCode(result.frames, extra_id)) {
    extra = absl::StrCat("RST_STREAM ", H2ErrorName(*rst));
  } else if (decoded && !blocks[extra_id].empty()) {
    const absl::optional<std::string> status =
        FindHeader(blocks[extra_id].back(), "grpc-status");
    extra = status.has_value() ? StatusText(*status, absl::nullopt)
                               : "response headers, no status";
  } else {
    extra = "nothing";
  }
  std::vector<std::string> parts;
  for (const auto& [what, count] : others) {
    parts.push_back(absl::StrCat(count, " ", what));
  }
  outcome.attacker = absl::StrCat(
      "MAX_CONCURRENT_STREAMS ",
      limit.has_value() ? absl::StrCat(*limit) : "not advertised", "; ",
      streams, " streams opened at once: stream ", extra_id, " (the last) got ",
      extra, "; the other ", with_body - (with_body == streams ? 1 : 0),
      " got ", absl::StrJoin(parts, ", "), "; connection ",
      result.closed_by_peer || result.reset_by_peer
          ? absl::StrCat("closed (", DescribeGoAway(result.frames), ")")
          : (result.timed_out ? "open, not every stream ended within 30 s"
                              : "open"));
  return outcome;
}

// 10. 4 connections x 16 FullDuplexCall streams whose handlers are blocked
// writing (each asked for 4 responses of 256 KiB; the client's
// SETTINGS_INITIAL_WINDOW_SIZE is 0 and it never grants window), then
// zero-length messages (5 bytes each) on every stream for 8 s, as fast as
// the server's flow control lets them through.

// One connection of the zero-length flood, driven by hand: the server's
// SETTINGS and PINGs are acknowledged and its WINDOW_UPDATEs spent at once,
// but the server is never granted any window.
class WindowlessConnection {
 public:
  // Largest DATA payload: whole 5-byte messages within the default
  // SETTINGS_MAX_FRAME_SIZE.
  static constexpr int64_t kMaxPayload = 16380;

  // Connects and writes the preface and SETTINGS_INITIAL_WINDOW_SIZE 0.
  explicit WindowlessConnection(int port) : port_(port) {
    socket_.fd = ConnectToLoopback(port);
    if (socket_.fd < 0) {
      socket_.closed = true;
      return;
    }
    std::string settings(6, '\0');
    settings[1] = NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE;  // big-endian id 4
    out_ = absl::StrCat(kClientPreface,
                        EncodeFrame(NGHTTP2_SETTINGS, 0, 0, settings));
  }
  ~WindowlessConnection() {
    if (socket_.fd >= 0) close(socket_.fd);
  }
  WindowlessConnection(const WindowlessConnection&) = delete;
  WindowlessConnection& operator=(const WindowlessConnection&) = delete;

  int fd() const { return socket_.fd; }
  bool closed() const { return socket_.closed; }
  bool got_settings() const { return got_settings_; }
  bool wants_to_write() const { return !out_.empty() && !socket_.closed; }
  // Bytes written to the socket; DATA payload bytes (messages) written.
  size_t written() const { return written_; }
  size_t message_bytes() const {
    // All but the last frames queued were written; those are DATA frames
    // but for a few acknowledgements (an error below 0.5%).
    return payload_queued_ > out_.size() ? payload_queued_ - out_.size() : 0;
  }
  // Window credit the server granted beyond the initial windows.
  int64_t credit() const { return credit_; }
  const std::vector<RawFrame>& kept() const { return kept_; }
  absl::optional<uint32_t> goaway_code() const { return goaway_code_; }

  // Queues HEADERS and the request of `streams` new FullDuplexCall streams,
  // spending window on the requests.
  void StartStreams(int streams, absl::string_view request) {
    const std::string headers =
        EncodeLiteralHeaderBlock(GrpcRequestHeaders(kFullDuplexCall, port_));
    for (int i = 0; i < streams; ++i) {
      const uint32_t id = next_id_;
      next_id_ += 2;
      out_ +=
          EncodeFrame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, id, headers);
      out_ += EncodeFrame(NGHTTP2_DATA, 0, id, request);
      windows_[id] = initial_window_ - static_cast<int64_t>(request.size());
      connection_window_ -= static_cast<int64_t>(request.size());
    }
  }

  // Queues zero-length messages while window is left, round-robin over the
  // open streams, until `limit` bytes wait to be written.
  void Fill(size_t limit) {
    while (out_.size() < limit && !goaway_code_.has_value() &&
           !socket_.closed) {
      bool queued = false;
      for (auto& [id, window] : windows_) {
        if (out_.size() >= limit) break;
        const int64_t n =
            std::min({window, connection_window_, kMaxPayload}) / 5 * 5;
        if (n <= 0) continue;
        out_ +=
            EncodeFrameHeader(static_cast<uint32_t>(n), NGHTTP2_DATA, 0, id);
        out_.append(static_cast<size_t>(n), '\0');
        window -= n;
        connection_window_ -= n;
        payload_queued_ += static_cast<size_t>(n);
        queued = true;
      }
      if (!queued) break;
    }
  }

  // Writes what the socket takes without waiting.
  void Write(absl::Time since) {
    while (!out_.empty() && !socket_.closed) {
      const ssize_t n = send(socket_.fd, out_.data(), out_.size(),
                             MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        out_.erase(0, static_cast<size_t>(n));
        written_ += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      socket_.closed = true;
      socket_.reset = true;
      socket_.closed_after = absl::Now() - since;
      return;
    }
  }

  // Reads what the server has sent and obeys it. `since` dates the events
  // (first RST_STREAM, close).
  void Read(absl::Time since) {
    socket_.ReadAvailable(since);
    const std::vector<RawFrame> frames = ParseFrames(socket_.received);
    size_t consumed = 0;
    for (const RawFrame& frame : frames) {
      consumed += 9 + frame.payload.size();
      Obey(frame, since);
    }
    socket_.received.erase(0, consumed);
  }

  // When the first RST_STREAM arrived, counted from `since` of Read().
  absl::optional<absl::Duration> first_rst_after() const {
    return first_rst_after_;
  }

 private:
  void Obey(const RawFrame& frame, absl::Time since) {
    const bool ack = (frame.flags & NGHTTP2_FLAG_ACK) != 0;
    switch (frame.type) {
      case NGHTTP2_SETTINGS:
        if (ack) break;
        for (size_t i = 0; i + 6 <= frame.payload.size(); i += 6) {
          const uint16_t id = static_cast<uint16_t>(
              (static_cast<uint8_t>(frame.payload[i]) << 8) |
              static_cast<uint8_t>(frame.payload[i + 1]));
          if (id != NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE) continue;
          const int64_t value = BigEndian32(frame.payload.substr(i + 2, 4));
          for (auto& [stream, window] : windows_) {
            window += value - initial_window_;
          }
          initial_window_ = value;
        }
        got_settings_ = true;
        out_ += EncodeFrame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, "");
        break;
      case NGHTTP2_PING:
        if (!ack) {
          out_ += EncodeFrame(NGHTTP2_PING, NGHTTP2_FLAG_ACK, 0, frame.payload);
        }
        break;
      case NGHTTP2_WINDOW_UPDATE: {
        if (frame.payload.size() < 4) break;
        const int64_t increment = BigEndian32(frame.payload) & 0x7fffffff;
        if (frame.stream_id == 0) {
          connection_window_ += increment;
          credit_ += increment;
        } else if (auto it = windows_.find(frame.stream_id);
                   it != windows_.end()) {
          it->second += increment;
          credit_ += increment;
        }
        break;
      }
      case NGHTTP2_RST_STREAM:
        windows_.erase(frame.stream_id);
        if (!first_rst_after_.has_value()) {
          first_rst_after_ = absl::Now() - since;
        }
        kept_.push_back(frame);
        break;
      case NGHTTP2_GOAWAY:
        if (!goaway_code_.has_value() && frame.payload.size() >= 8) {
          goaway_code_ =
              BigEndian32(absl::string_view(frame.payload).substr(4));
        }
        kept_.push_back(frame);
        break;
      case NGHTTP2_HEADERS:
        if (frame.flags & NGHTTP2_FLAG_END_STREAM) {
          windows_.erase(frame.stream_id);
        }
        kept_.push_back(frame);
        break;
      case NGHTTP2_CONTINUATION:
        kept_.push_back(frame);
        break;
      default:  // DATA cannot come (no window); others need no answer
        break;
    }
  }

  const int port_;
  HeldSocket socket_;
  std::string out_;
  size_t written_ = 0;
  size_t payload_queued_ = 0;
  uint32_t next_id_ = 1;
  bool got_settings_ = false;
  int64_t initial_window_ = 65535;     // the server's, for our sending
  int64_t connection_window_ = 65535;  // ours to spend
  int64_t credit_ = 0;
  std::map<uint32_t, int64_t> windows_;  // open streams' send windows
  std::vector<RawFrame> kept_;  // HEADERS, CONTINUATION, RST_STREAM, GOAWAY
  absl::optional<uint32_t> goaway_code_;
  absl::optional<absl::Duration> first_rst_after_;
};

// Polls `connections` for up to `wait` (reading, and writing what waits),
// refilling them with messages up to `fill` queued bytes when `fill` > 0.
void DriveWindowless(
    const std::vector<std::unique_ptr<WindowlessConnection>>& connections,
    absl::Time since, absl::Duration wait, size_t fill) {
  std::vector<pollfd> fds;
  std::vector<WindowlessConnection*> polled;
  for (const auto& connection : connections) {
    if (fill > 0) connection->Fill(fill);
    if (connection->closed()) continue;
    fds.push_back({connection->fd(),
                   static_cast<short>(
                       POLLIN | (connection->wants_to_write() ? POLLOUT : 0)),
                   0});
    polled.push_back(connection.get());
  }
  if (fds.empty()) {
    absl::SleepFor(wait);  // nothing left to drive
    return;
  }
  const int ready = poll(fds.data(), fds.size(),
                         static_cast<int>(absl::ToInt64Milliseconds(
                             absl::Ceil(wait, absl::Milliseconds(1)))));
  if (ready <= 0) return;
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) polled[i]->Read(since);
    if (fill > 0) polled[i]->Fill(fill);
    polled[i]->Write(since);
  }
}

AttackOutcome ZeroLengthFlood(ServerProcess* server) {
  constexpr int kConnections = 4;
  constexpr int kStreamsPerConnection = 16;
  constexpr int kStreams = kConnections * kStreamsPerConnection;
  constexpr int kResponses = 4;
  constexpr int32_t kResponseSize = 256 << 10;
  constexpr absl::Duration kFlood = absl::Seconds(8);
  constexpr size_t kQueued = 256 << 10;  // written ahead per connection
  AttackOutcome outcome;
  grpc::testing::StreamingOutputCallRequest request;
  for (int i = 0; i < kResponses; ++i) {
    request.add_response_parameters()->set_size(kResponseSize);
  }
  const std::string request_frame = GrpcFrame(request.SerializeAsString());

  const absl::Time start = absl::Now();
  std::vector<std::unique_ptr<WindowlessConnection>> connections;
  for (int i = 0; i < kConnections; ++i) {
    connections.push_back(
        std::make_unique<WindowlessConnection>(server->port()));
  }
  // The server's SETTINGS first (at most 10 s), then the streams.
  auto all = [&](const std::function<bool(const WindowlessConnection&)>& f) {
    for (const auto& connection : connections) {
      if (!f(*connection)) return false;
    }
    return true;
  };
  const absl::Time settings_deadline = absl::Now() + absl::Seconds(10);
  while (!all([](const WindowlessConnection& c) {
    return c.got_settings() || c.closed();
  }) && absl::Now() < settings_deadline) {
    DriveWindowless(connections, start, absl::Milliseconds(10), 0);
  }
  for (const auto& connection : connections) {
    connection->StartStreams(kStreamsPerConnection, request_frame);
  }
  // Until every handler has written its response headers (it is then
  // blocked in its first Write) or ended, at most 10 s; then 300 ms more.
  auto count_headers = [&](int* writing, Tally* ended) {
    *writing = 0;
    for (const auto& connection : connections) {
      std::map<uint32_t, std::vector<RawHeaders>> blocks;
      DecodeHeaderBlocks(connection->kept(), &blocks);
      for (const auto& [id, list] : blocks) {
        if (list.empty()) continue;
        const absl::optional<std::string> status =
            FindHeader(list.back(), "grpc-status");
        if (status.has_value()) {
          if (ended != nullptr) {
            ended->Add(
                StatusText(*status, absl::nullopt),
                StatusText(*status, FindHeader(list.back(), "grpc-message")));
          }
        } else {
          ++*writing;
        }
      }
      if (ended == nullptr) continue;
      for (const RawFrame& frame : connection->kept()) {
        if (frame.type != NGHTTP2_RST_STREAM || frame.payload.size() < 4) {
          continue;
        }
        const std::string what = absl::StrCat(
            "RST_STREAM ", H2ErrorName(BigEndian32(frame.payload)));
        ended->Add(what, what);
      }
    }
  };
  int writing = 0;
  const absl::Time blocked_deadline = absl::Now() + absl::Seconds(10);
  for (;;) {
    DriveWindowless(connections, start, absl::Milliseconds(20), 0);
    count_headers(&writing, nullptr);
    if (writing == kStreams || absl::Now() >= blocked_deadline ||
        all([](const WindowlessConnection& c) { return c.closed(); })) {
      break;
    }
  }
  const absl::Time settle = absl::Now() + absl::Milliseconds(300);
  while (absl::Now() < settle) {
    DriveWindowless(connections, start,
                    std::min(absl::Milliseconds(20), settle - absl::Now()), 0);
  }
  count_headers(&writing, nullptr);
  const absl::Duration setup = absl::Now() - start;
  const ProcStatus before_flood = ReadProcStatus(server->pid());
  size_t written_before = 0;
  for (const auto& connection : connections) {
    written_before += connection->written();
  }

  // The flood.
  const absl::Time flood_start = absl::Now();
  const absl::Time flood_end = flood_start + kFlood;
  while (absl::Now() < flood_end) {
    DriveWindowless(connections, flood_start,
                    std::min(absl::Milliseconds(50), flood_end - absl::Now()),
                    kQueued);
  }
  const ProcStatus after_flood = ReadProcStatus(server->pid());
  // What the server says next, for 1 s (nothing more is sent).
  const absl::Time drain_end = absl::Now() + absl::Seconds(1);
  while (absl::Now() < drain_end) {
    DriveWindowless(connections, flood_start,
                    std::min(absl::Milliseconds(50), drain_end - absl::Now()),
                    0);
  }
  absl::Duration took;
  const RawResponse fresh =
      FreshUnaryCall(server->port(), kSurvivalDeadline, &took);
  outcome.during = DescribeFreshCall(fresh, took, kSurvivalDeadline);

  size_t written = 0;
  size_t message_bytes = 0;
  int64_t credit = 0;
  int closed = 0;
  std::map<std::string, int> goaways;
  absl::optional<absl::Duration> first_rst;
  for (const auto& connection : connections) {
    written += connection->written();
    message_bytes += connection->message_bytes();
    credit += connection->credit();
    if (connection->closed()) ++closed;
    ++goaways[DescribeGoAway(connection->kept())];
    if (const auto after = connection->first_rst_after()) {
      first_rst = first_rst.has_value() ? std::min(*first_rst, *after) : after;
    }
  }
  Tally ended;
  int still_writing = 0;
  count_headers(&still_writing, &ended);
  std::vector<std::string> goaway_parts;
  for (const auto& [what, count] : goaways) {
    goaway_parts.push_back(absl::StrCat(count, " x ", what));
  }
  const double growth_mib = before_flood.rss < 0 || after_flood.rss < 0
                                ? 0
                                : (after_flood.rss - before_flood.rss) / kMiB;
  outcome.attacker = absl::StrFormat(
      "%d x %d FullDuplexCall streams (%d x %d KiB asked, window 0): %d "
      "handlers blocked writing after %s; flood of 8 s: wrote %.1f MB "
      "(%.2f million zero-length messages; the server granted %.1f MB of "
      "window); server RSS %s -> %s MiB (%+.1f MiB) over the flood; "
      "received: %s; streams ended: %s%s; %d connections closed by the "
      "server",
      kConnections, kStreamsPerConnection, kResponses, kResponseSize >> 10,
      writing, Seconds(setup), (written - written_before) / 1e6,
      message_bytes / 5 / 1e6, credit / 1e6, Mib(before_flood.rss),
      Mib(after_flood.rss), growth_mib, absl::StrJoin(goaway_parts, ", "),
      ended.total() == 0 ? "none" : ended.ToString(),
      first_rst.has_value()
          ? absl::StrCat(" (first RST_STREAM ", Seconds(*first_rst),
                         " into the flood)")
          : "",
      closed);
  return outcome;
}

// 11. One connection: 1024 open-ended FullDuplexCall streams, then HEADERS
// for 400,000 more (HPACK-indexed, about 15 bytes each), never reading
// (SO_RCVBUF 4096, so the server's answers back up soon); with the server's
// SETTINGS acknowledged right after the preface, or never.

// HEADERS frames of FullDuplexCall requests on consecutive odd stream ids.
// The first block adds :path, :authority, content-type and te to the HPACK
// dynamic table (:method POST and :scheme http are in the static one);
// every later block is six indexed fields, 15 bytes with the frame header.
// (nghttp2's deflater never indexes :path, which would make each about 45.)
class IndexedRequestEncoder {
 public:
  explicit IndexedRequestEncoder(int port)
      : authority_(absl::StrCat("127.0.0.1:", port)) {}

  // Appends the HEADERS of the next stream (open-ended: no END_STREAM).
  void Next(std::string* out) {
    std::string block;
    if (next_id_ == 1) {
      // Static :method POST (index 3) and :scheme http (6), then
      // literals with incremental indexing, by static name index where
      // there is one (:path 4, :authority 1, content-type 31).
      block = "\x83\x86";
      AppendIndexedLiteral(&block, 4, "", kFullDuplexCall);
      AppendIndexedLiteral(&block, 1, "", authority_);
      AppendIndexedLiteral(&block, 31, "", "application/grpc");
      AppendIndexedLiteral(&block, 0, "te", "trailers");
    } else {
      // The dynamic table, newest first from 62: te, content-type,
      // :authority, :path.
      block = "\x83\x86\xc1\xc0\xbf\xbe";
    }
    out->append(EncodeFrame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, next_id_,
                            block));
    next_id_ += 2;
  }

 private:
  // A literal field with incremental indexing (RFC 7541 section 6.2.1):
  // the name by static index `name_index`, or `name` itself when it is 0;
  // strings without Huffman coding (all shorter than 127 bytes here).
  static void AppendIndexedLiteral(std::string* block, int name_index,
                                   absl::string_view name,
                                   absl::string_view value) {
    block->push_back(static_cast<char>(0x40 | name_index));
    if (name_index == 0) {
      block->push_back(static_cast<char>(name.size()));
      block->append(name.data(), name.size());
    }
    block->push_back(static_cast<char>(value.size()));
    block->append(value.data(), value.size());
  }

  const std::string authority_;
  uint32_t next_id_ = 1;
};

AttackOutcome RefusedStreamFlood(ServerProcess* server, bool ack) {
  constexpr int kOpenStreams = 1024;
  constexpr int kExcessStreams = 400000;
  constexpr int kFrames = kOpenStreams + kExcessStreams;
  // The server has taken nothing for this long: it stopped reading.
  constexpr absl::Duration kStall = absl::Seconds(3);
  constexpr absl::Duration kFloodTimeout = absl::Seconds(120);
  // Safety limits for this machine: the flood stops when the server passes
  // either.
  constexpr int64_t kRssCap = int64_t{8} << 30;
  constexpr int kThreadCap = 60000;
  AttackOutcome outcome;
  HeldSocket socket;
  socket.fd = ConnectToLoopback(server->port(), /*receive_buffer=*/4096);
  if (socket.fd < 0) {
    outcome.attacker = absl::StrCat("cannot connect: ", std::strerror(errno));
    return outcome;
  }
  IndexedRequestEncoder encoder(server->port());
  std::string pending = absl::StrCat(
      kClientPreface, EncodeFrame(NGHTTP2_SETTINGS, 0, 0, ""),
      ack ? EncodeFrame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, "") : "");
  uint64_t queued = pending.size();  // bytes queued in all
  uint64_t written = 0;
  std::deque<uint64_t> frame_ends;  // of HEADERS queued, not yet written
  int encoded = 0;
  int sent = 0;
  std::string ended;  // how the flood ended
  const absl::Time start = absl::Now();
  absl::Time progress = start;
  absl::Time sampled = start;
  ProcStatus last;
  while (ended.empty()) {
    while (pending.size() < (64 << 10) && encoded < kFrames) {
      encoder.Next(&pending);
      ++encoded;
      queued = written + pending.size();
      frame_ends.push_back(queued);
    }
    if (pending.empty()) {
      ended = "all sent";
      break;
    }
    const absl::Time now = absl::Now();
    if (now - sampled >= absl::Milliseconds(100)) {
      sampled = now;
      last = ReadProcStatus(server->pid());
      if (last.rss > kRssCap || last.threads > kThreadCap) {
        ended = absl::StrFormat(
            "stopped by the attacker's safety limit (server RSS %s MiB, %d "
            "threads)",
            Mib(last.rss), last.threads);
        break;
      }
    }
    if (now - start >= kFloodTimeout) {
      ended = absl::StrCat("still taking frames after ",
                           absl::FormatDuration(kFloodTimeout));
      break;
    }
    if (now - progress >= kStall) {
      ended = absl::StrCat("writes stalled (nothing taken for ",
                           absl::FormatDuration(kStall), ")");
      break;
    }
    pollfd p = {socket.fd, POLLOUT, 0};
    const int ready = poll(&p, 1, 100);
    if (ready < 0 && errno != EINTR) {
      ended = absl::StrCat("poll: ", std::strerror(errno));
      break;
    }
    if (ready <= 0) continue;
    if (!(p.revents & POLLOUT)) {
      ended = "the server closed the connection";  // POLLHUP / POLLERR
      break;
    }
    const ssize_t n = send(socket.fd, pending.data(), pending.size(),
                           MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
      ended = absl::StrCat("the server closed the connection (send: ",
                           std::strerror(errno), ")");
      break;
    }
    pending.erase(0, static_cast<size_t>(n));
    written += static_cast<uint64_t>(n);
    progress = absl::Now();
    while (!frame_ends.empty() && frame_ends.front() <= written) {
      frame_ends.pop_front();
      ++sent;
    }
  }
  const absl::Duration flood = absl::Now() - start;
  const ProcStatus at_end = ReadProcStatus(server->pid());

  // A fresh call while the connection is held, unread.
  absl::Duration took;
  const RawResponse fresh =
      FreshUnaryCall(server->port(), kSurvivalDeadline, &took);
  outcome.during = DescribeFreshCall(fresh, took, kSurvivalDeadline);

  // Then read what the server sent: until it closes or 2 s pass without a
  // byte, at most 10 s.
  const absl::Time read_start = absl::Now();
  const absl::Time give_up = read_start + absl::Seconds(10);
  absl::Time last_byte = read_start;
  while (!socket.closed && absl::Now() < give_up &&
         absl::Now() - last_byte < absl::Seconds(2)) {
    pollfd p = {socket.fd, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      const size_t before = socket.received.size();
      socket.ReadAvailable(read_start);
      if (socket.received.size() != before) last_byte = absl::Now();
    }
  }
  const std::vector<RawFrame> frames = ParseFrames(socket.received);
  std::map<std::string, int> rsts;
  int headers = 0;
  for (const RawFrame& frame : frames) {
    if (frame.type == NGHTTP2_HEADERS) ++headers;
    if (frame.type != NGHTTP2_RST_STREAM || frame.payload.size() < 4) continue;
    ++rsts[H2ErrorName(BigEndian32(frame.payload))];
  }
  std::vector<std::string> rst_parts;
  for (const auto& [what, count] : rsts) {
    rst_parts.push_back(absl::StrCat(count, " ", what));
  }
  close(socket.fd);
  outcome.attacker = absl::StrFormat(
      "server SETTINGS %s; %d of %d HEADERS sent (%.2f MB) in %s: %s; server "
      "then at RSS %s MiB, %d threads; reading afterwards: %.2f MB, %s, "
      "%d HEADERS, RST_STREAM: %s; connection %s",
      ack ? "acknowledged" : "never acknowledged", sent, kFrames, written / 1e6,
      Seconds(flood), ended, Mib(at_end.rss), at_end.threads,
      socket.received.size() / 1e6, DescribeGoAway(frames), headers,
      rst_parts.empty() ? "none" : absl::StrJoin(rst_parts, ", "),
      socket.closed ? absl::StrCat(socket.reset ? "reset" : "closed (FIN)",
                                   " by the server")
                    : "still open");
  return outcome;
}

// 12. Memory per idle connection: 1000 connections (fewer if RLIMIT_NOFILE
// is low) that complete the HTTP/2 handshake and then stay idle, held
// while the child's RSS settles; then a UnaryCall on another connection.

// A connection making the HTTP/2 handshake by hand and then idling: it
// sends the preface and an empty SETTINGS, acknowledges the server's
// SETTINGS once they arrive (and answers PINGs), and sends nothing else.
struct IdleConnection {
  HeldSocket socket;
  bool got_settings = false;  // the server's SETTINGS arrived (ACK sent)
  bool got_ack = false;       // the server acknowledged ours
  std::vector<RawFrame> goaways;

  bool established() const { return got_settings && got_ack && !socket.closed; }

  // Reads what the server has sent and answers it.
  void Service(absl::Time since) {
    socket.ReadAvailable(since);
    const std::vector<RawFrame> frames = ParseFrames(socket.received);
    size_t consumed = 0;
    std::string reply;
    for (const RawFrame& frame : frames) {
      consumed += 9 + frame.payload.size();
      const bool ack = (frame.flags & NGHTTP2_FLAG_ACK) != 0;
      if (frame.type == NGHTTP2_SETTINGS && ack) {
        got_ack = true;
      } else if (frame.type == NGHTTP2_SETTINGS) {
        got_settings = true;
        reply += EncodeFrame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, "");
      } else if (frame.type == NGHTTP2_PING && !ack) {
        reply += EncodeFrame(NGHTTP2_PING, NGHTTP2_FLAG_ACK, 0, frame.payload);
      } else if (frame.type == NGHTTP2_GOAWAY) {
        goaways.push_back(frame);
      }
    }
    socket.received.erase(0, consumed);
    if (!reply.empty() && !socket.closed && !WriteAll(socket.fd, reply)) {
      socket.closed = true;
      socket.reset = true;
      socket.closed_after = absl::Now() - since;
    }
  }
};

// Waits up to `wait` for any of `connections` to have something to read,
// and services those that do.
void ServiceIdleConnections(std::vector<IdleConnection>* connections,
                            absl::Time since, absl::Duration wait) {
  std::vector<pollfd> fds;
  std::vector<IdleConnection*> polled;
  for (IdleConnection& connection : *connections) {
    if (connection.socket.closed) continue;
    fds.push_back({connection.socket.fd, POLLIN, 0});
    polled.push_back(&connection);
  }
  if (fds.empty()) {
    absl::SleepFor(wait);  // nothing left to watch
    return;
  }
  const int ready = poll(fds.data(), fds.size(),
                         static_cast<int>(absl::ToInt64Milliseconds(
                             absl::Ceil(wait, absl::Milliseconds(1)))));
  if (ready <= 0) return;
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents != 0) polled[i]->Service(since);
  }
}

// Raises this process's RLIMIT_NOFILE (soft, and hard if it may) to
// `wanted` descriptors; children started afterwards inherit it.
void RaiseDescriptorLimit(rlim_t wanted) {
  rlimit files;
  if (getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur >= wanted) {
    return;
  }
  rlimit raised = files;
  raised.rlim_cur = wanted;
  raised.rlim_max = std::max(files.rlim_max, wanted);
  if (setrlimit(RLIMIT_NOFILE, &raised) == 0) return;
  raised.rlim_cur = std::min(wanted, files.rlim_max);
  raised.rlim_max = files.rlim_max;
  static_cast<void>(setrlimit(RLIMIT_NOFILE, &raised));
}

AttackOutcome IdleConnections(ServerProcess* server) {
  const int kWanted = std::max(1, absl::GetFlag(FLAGS_connections));
  constexpr absl::Duration kHandshakeDeadline = absl::Seconds(60);
  // Descriptors kept free of the held connections, in this process and in
  // the child (which inherits this process's RLIMIT_NOFILE): the listener,
  // the fresh calls' connections, the child's own files.
  constexpr rlim_t kSpareDescriptors = 64;
  AttackOutcome outcome;
  outcome.wanted = kWanted;
  int wanted = kWanted;
  rlimit files;
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 &&
      files.rlim_cur < kWanted + kSpareDescriptors) {
    wanted = static_cast<int>(files.rlim_cur > kSpareDescriptors
                                  ? files.rlim_cur - kSpareDescriptors
                                  : 0);
  }
  bool start_settled = false;
  outcome.rss_start = SettledRss(server->pid(), &start_settled);

  const absl::Time start = absl::Now();
  const std::string handshake =
      absl::StrCat(kClientPreface, EncodeFrame(NGHTTP2_SETTINGS, 0, 0, ""));
  std::vector<IdleConnection> connections;
  connections.reserve(static_cast<size_t>(wanted));
  int failed = 0;
  for (int i = 0; i < wanted; ++i) {
    IdleConnection connection;
    connection.socket.fd = ConnectToLoopback(server->port());
    if (connection.socket.fd < 0 ||
        !WriteAll(connection.socket.fd, handshake)) {
      if (connection.socket.fd >= 0) close(connection.socket.fd);
      ++failed;
      continue;
    }
    connections.push_back(std::move(connection));
  }
  // Until every connection has the server's SETTINGS and the ACK of ours,
  // or has been closed; at most kHandshakeDeadline.
  auto count = [&connections](bool (*pred)(const IdleConnection&)) {
    return static_cast<int>(
        std::count_if(connections.begin(), connections.end(), pred));
  };
  auto settled_handshake = [](const IdleConnection& c) {
    return c.established() || c.socket.closed;
  };
  const absl::Time handshake_deadline = start + kHandshakeDeadline;
  while (count(settled_handshake) < static_cast<int>(connections.size()) &&
         absl::Now() < handshake_deadline) {
    ServiceIdleConnections(
        &connections, start,
        std::min(absl::Milliseconds(50), handshake_deadline - absl::Now()));
  }
  const absl::Duration handshakes = absl::Now() - start;
  const int established =
      count([](const IdleConnection& c) { return c.established(); });

  // Held idle (still answering the server) while the RSS settles.
  bool held_settled = false;
  outcome.rss_held = SettledRss(server->pid(), &held_settled, [&] {
    ServiceIdleConnections(&connections, start, absl::Milliseconds(10));
  });
  ServiceIdleConnections(&connections, start, absl::ZeroDuration());
  outcome.held = count([](const IdleConnection& c) { return c.established(); });

  absl::Duration took;
  const RawResponse fresh =
      FreshUnaryCall(server->port(), kSurvivalDeadline, &took);
  outcome.during = DescribeFreshCall(fresh, took, kSurvivalDeadline);
  ServiceIdleConnections(&connections, start, absl::ZeroDuration());
  const int open_after_call =
      count([](const IdleConnection& c) { return !c.socket.closed; });
  int closed = 0;
  std::map<std::string, int> goaways;
  for (IdleConnection& connection : connections) {
    if (!connection.socket.closed) continue;
    ++closed;
    ++goaways[DescribeGoAway(connection.goaways)];
  }
  std::vector<std::string> goaway_parts;
  for (const auto& [what, n] : goaways) {
    goaway_parts.push_back(absl::StrCat(n, " with ", what));
  }
  for (IdleConnection& connection : connections) {
    close(connection.socket.fd);
  }
  outcome.attacker = absl::StrCat(
      connections.size(), " of ", wanted, " connections made (", failed,
      " failed to connect)",
      wanted < kWanted ? ", fewer for RLIMIT_NOFILE" : "", "; ", established,
      " completed the handshake (the server's SETTINGS received and "
      "acknowledged, ours acknowledged) in ",
      Seconds(handshakes), "; RSS ",
      held_settled ? "settled" : "still changing after 5 s", " with ",
      outcome.held, " held idle",
      start_settled ? "" : " (RSS before them still changing after 5 s)", "; ",
      open_after_call, " still open after the UnaryCall, ", closed,
      " closed by the server",
      closed == 0 ? ""
                  : absl::StrCat(" (", absl::StrJoin(goaway_parts, ", "), ")"));
  return outcome;
}

// 13. Memory per open stream: one connection, then 100 FullDuplexCall
// streams (fewer if the server's SETTINGS_MAX_CONCURRENT_STREAMS is lower)
// that send their headers and nothing more, held while the child's RSS
// settles; then a UnaryCall on another connection. The connection is made
// and settled first, so the figure per stream leaves out its cost.
AttackOutcome OpenStreams(ServerProcess* server) {
  constexpr uint32_t kWanted = 100;
  AttackOutcome outcome;
  outcome.wanted = kWanted;
  absl::optional<uint32_t> limit;
  if (!ReadStreamLimit(server->port(), &limit, &outcome)) return outcome;
  const int streams =
      static_cast<int>(limit.has_value() ? std::min(kWanted, *limit) : kWanted);
  std::string error;
  std::unique_ptr<RawH2Client> attacker =
      RawH2Client::Connect(server->port(), &error);
  if (attacker == nullptr) {
    outcome.attacker = absl::StrCat("cannot connect: ", error);
    return outcome;
  }
  // Its ACK comes once the server has the connection set up.
  if (!attacker->Ping()) {
    outcome.attacker =
        absl::StrCat("the connection's first PING was not answered: ",
                     Clip(attacker->error()));
    return outcome;
  }
  bool start_settled = false;
  outcome.rss_start = SettledRss(server->pid(), &start_settled);

  const std::vector<int32_t> ids = StartIdleStreams(attacker.get(), streams);
  // The PING's ACK comes after the server has read every HEADERS frame.
  const bool pinged = attacker->Ping();
  WaitForThreadsToSettle(server->pid());  // the handlers start
  bool held_settled = false;
  outcome.rss_held = SettledRss(server->pid(), &held_settled);
  attacker->Ping();  // reads what the server sent meanwhile
  outcome.held = OpenStreamCount(*attacker, ids);

  absl::Duration took;
  const RawResponse fresh =
      FreshUnaryCall(server->port(), kSurvivalDeadline, &took);
  outcome.during = DescribeFreshCall(fresh, took, kSurvivalDeadline);
  // What the idle streams got meanwhile.
  attacker->RunUntil([] { return false; }, absl::Milliseconds(200));
  outcome.attacker = absl::StrCat(
      "MAX_CONCURRENT_STREAMS ",
      limit.has_value() ? absl::StrCat(*limit) : "not advertised", ", so ",
      streams, " streams on one connection: ",
      DescribeIdleStreams(*attacker, ids, pinged), "; RSS ",
      held_settled ? "settled" : "still changing after 5 s", " with ",
      outcome.held, " held open",
      start_settled ? "" : " (RSS before them still changing after 5 s)");
  return outcome;
}

const std::vector<Attack>& Attacks() {
  static const auto* const attacks = new std::vector<Attack>{
      {"unary_2g", "UnaryCall with response_size 2147483647", HugeResponse},
      {"idle_streams", "64 idle FullDuplexCall streams, then a UnaryCall",
       IdleStreams},
      {"emfile", "100 connections against RLIMIT_NOFILE 64",
       DescriptorExhaustion, 64},
      {"partial_messages", "100 streams x (4 MiB - 1) of a 4 MiB message",
       PartialMessages},
      {"slow_readers", "64 unread 16 MiB responses", SlowReaders},
      {"silent_connections", "500 connections without a preface, 10 s",
       SilentConnections},
      {"big_headers", "a 20 KB request header list", LargeHeaderList},
      {"ping_flood", "100000 PINGs, replies unread", PingFlood},
      {"settings_flood", "100000 SETTINGS, replies unread", SettingsFlood},
      {"continuation_flood", "32 MiB of CONTINUATION, no END_HEADERS",
       ContinuationFlood},
      {"max_streams", "MAX_CONCURRENT_STREAMS + 1 streams at once",
       StreamsPastTheLimit},
      {"zero_length_flood",
       "64 streams blocked writing, zero-length messages for 8 s",
       ZeroLengthFlood},
      {"refused_stream_flood",
       "1024 streams + 400000 HEADERS unread, SETTINGS acknowledged",
       [](ServerProcess* server) { return RefusedStreamFlood(server, true); }},
      {"refused_stream_flood_noack",
       "1024 streams + 400000 HEADERS unread, SETTINGS never acknowledged",
       [](ServerProcess* server) { return RefusedStreamFlood(server, false); }},
      {"idle_connections",
       "--connections (1000) idle connections after the handshake: RSS per "
       "connection",
       IdleConnections},
      {"open_streams",
       "100 idle FullDuplexCall streams on one connection: RSS per stream",
       OpenStreams},
  };
  return *attacks;
}

// The server binary in this binary's runfiles (or --server_binary).
std::string ServerBinary(const std::string& server, const char* argv0) {
  const std::string chosen = absl::GetFlag(FLAGS_server_binary);
  if (!chosen.empty()) return chosen;
  const std::string relative =
      absl::StrCat("test/interop/", server, "_interop_server");
  std::vector<std::string> candidates;
  if (const char* dir = std::getenv("RUNFILES_DIR")) {
    candidates.push_back(absl::StrCat(dir, "/h2rpc/", relative));
  }
  candidates.push_back(absl::StrCat(argv0, ".runfiles/h2rpc/", relative));
  candidates.push_back(relative);  // `bazel run` starts in the runfiles
  for (const std::string& path : candidates) {
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return candidates.back();
}

// After a failed survival check: whether the server serves again within
// 30 more seconds (a call every second).
std::string RecoveryAfterFailedCheck(ServerProcess* server) {
  constexpr absl::Duration kPatience = absl::Seconds(30);
  const absl::Time start = absl::Now();
  std::string how;
  while (absl::Now() - start < kPatience && server->Running(&how)) {
    const absl::Time attempt = absl::Now();
    absl::Duration took;
    const RawResponse response =
        FreshUnaryCall(server->port(), absl::Seconds(1), &took);
    if (response.Trailer("grpc-status") == std::string("0")) {
      return absl::StrCat("serving again ", Seconds(absl::Now() - start),
                          " later");
    }
    absl::SleepFor(absl::Seconds(1) - (absl::Now() - attempt));
  }
  if (!server->Running(&how)) return how;
  return absl::StrCat("still not serving ", absl::FormatDuration(kPatience),
                      " later");
}

int Run(const char* argv0) {
  const std::string server_name = absl::GetFlag(FLAGS_server);
  const std::string attack_name = absl::GetFlag(FLAGS_attack);
  const std::string format = absl::GetFlag(FLAGS_format);
  if (format != "line" && format != "json") {
    std::fprintf(stderr,
                 "attack_report: --format must be line or json (got %s)\n",
                 format.c_str());
    return 2;
  }
  if (attack_name == "list") {
    for (const Attack& attack : Attacks()) {
      std::printf("%-20s %s\n", attack.name, attack.summary);
    }
    return 0;
  }
  const Attack* attack = nullptr;
  for (const Attack& a : Attacks()) {
    if (attack_name == a.name) attack = &a;
  }
  if (attack == nullptr ||
      (server_name != "h2rpc" && server_name != "grpcpp")) {
    std::fprintf(stderr,
                 "attack_report: --server must be h2rpc or grpcpp and "
                 "--attack one of --attack=list (got --server=%s "
                 "--attack=%s)\n",
                 server_name.c_str(), attack_name.c_str());
    return 2;
  }
  // The attacks hold hundreds of sockets; idle_connections as many as
  // --connections asks, in this process and in the server.
  RaiseDescriptorLimit(std::max<rlim_t>(
      4096, static_cast<rlim_t>(std::max(0, absl::GetFlag(FLAGS_connections))) +
                256));

  const std::string binary = ServerBinary(server_name, argv0);
  std::string error;
  std::unique_ptr<ServerProcess> server = ServerProcess::Start(
      binary, attack->rlimit_nofile, absl::Seconds(60), &error);
  if (server == nullptr) {
    std::fprintf(stderr, "attack_report: %s\n", error.c_str());
    return 1;
  }
  std::fprintf(stderr, "attack_report: %s (pid %d) on port %d: %s\n",
               binary.c_str(), static_cast<int>(server->pid()), server->port(),
               attack->summary);

  // One ordinary call first, so the baseline includes a warm server.
  absl::Duration took;
  const RawResponse warm =
      FreshUnaryCall(server->port(), kSurvivalDeadline, &took);
  if (warm.Trailer("grpc-status") != std::string("0")) {
    std::fprintf(stderr, "attack_report: the warm-up call failed: %s\n",
                 Describe(warm).c_str());
    return 1;
  }
  const ProcStatus base = ReadProcStatus(server->pid());
  const int log_before = server->LogLines();
  const absl::Duration cpu_before = CpuTime(server->pid());
  const absl::Time start = absl::Now();
  AttackOutcome outcome;
  int max_threads = 0;
  int64_t max_rss = -1;
  {
    PeakSampler sampler(server->pid());
    outcome = attack->run(server.get());
    max_threads = sampler.max_threads();
    max_rss = sampler.max_rss();
  }
  const absl::Duration wall = absl::Now() - start;
  const absl::Duration cpu = CpuTime(server->pid()) - cpu_before;
  const int logged = server->LogLines() - log_before;
  const std::string last_log = logged > 0 ? server->LastLogLine() : "";

  std::string survived;
  std::string how;
  ProcStatus peak;
  ProcStatus after;
  if (server->Running(&how)) {
    peak = ReadProcStatus(server->pid());
    const RawResponse check =
        FreshUnaryCall(server->port(), kSurvivalDeadline, &took);
    after = ReadProcStatus(server->pid());
    if (check.Trailer("grpc-status") == std::string("0")) {
      survived = "yes";
    } else if (!server->Running(&how)) {
      survived = absl::StrCat("no: ", how);
    } else {
      survived = absl::StrCat(
          "no: ", DescribeFreshCall(check, took, kSurvivalDeadline), "; ",
          RecoveryAfterFailedCheck(server.get()));
    }
  } else {
    survived = absl::StrCat("no: ", how);
  }
  const bool per_unit = outcome.held >= 0;
  std::vector<ResultField> fields = {
      {"attack", attack->name, ResultField::kWord},
      {"server", server_name, ResultField::kWord},
      {"survived", survived, ResultField::kString},
      {"during", outcome.during, ResultField::kString},
      {"peak_rss_mib", Mib(std::max(peak.hwm, max_rss)), ResultField::kNumber},
      {"base_rss_mib", MibToKib(base.rss), ResultField::kNumber},
      {"after_rss_mib", Mib(after.rss), ResultField::kNumber},
  };
  if (per_unit) {
    const bool known =
        outcome.held > 0 && outcome.rss_start >= 0 && outcome.rss_held >= 0;
    fields.insert(
        fields.end(),
        {{"held", absl::StrCat(outcome.held), ResultField::kNumber},
         {"wanted", absl::StrCat(outcome.wanted), ResultField::kNumber},
         {"rss_start_mib", MibToKib(outcome.rss_start), ResultField::kNumber},
         {"rss_held_mib", MibToKib(outcome.rss_held), ResultField::kNumber},
         {"per_unit_kib",
          known
              ? absl::StrFormat("%.1f", (outcome.rss_held - outcome.rss_start) /
                                            1024.0 / outcome.held)
              : "?",
          ResultField::kNumber}});
  }
  fields.insert(
      fields.end(),
      {{"threads", absl::StrCat(base.threads, "/", max_threads),
        ResultField::kWord},
       {"cpu_s", absl::StrFormat("%.2f", absl::ToDoubleSeconds(cpu)),
        ResultField::kNumber},
       {"wall_s", absl::StrFormat("%.1f", absl::ToDoubleSeconds(wall)),
        ResultField::kNumber},
       {"log_lines", absl::StrCat(logged), ResultField::kNumber},
       {"log_last", last_log, ResultField::kString},
       {"attacker", outcome.attacker, ResultField::kString}});
  const std::string result =
      format == "json" ? ResultJson(fields) : ResultLine(fields);
  std::printf("%s\n", result.c_str());
  std::fflush(stdout);
  return 0;
}

}  // namespace
}  // namespace h2rpc::testing

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  // A peer closing a socket must not end the attacker.
  signal(SIGPIPE, SIG_IGN);
  return h2rpc::testing::Run(argv[0]);
}
