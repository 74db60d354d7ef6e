#include "rpc/tracing.h"

#include <pthread.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "rpc/internal/common/misuse.h"
#include "transport/io/monotonic_time.h"

namespace h2rpc {
namespace {

using transport::io::MonotonicTime;

void ReportBadOption(absl::string_view field, absl::string_view value,
                     absl::string_view rule) {
  internal::ReportMisuse(absl::StrCat("TracerOptions::", field, " is ", value,
                                      "; it must be ", rule));
}

// `options` with every field out of range reported as misuse and replaced
// by a usable value, as the header documents.
TracerOptions Validated(TracerOptions options) {
  const TracerOptions defaults;
  if (options.exporter == nullptr) {
    internal::ReportMisuse(
        "TracerOptions::exporter is null; every span will be counted as "
        "failed");
  }
  const double probability = options.sampling_probability;
  if (!(probability >= 0 && probability <= 1)) {  // NaN included
    ReportBadOption("sampling_probability", absl::StrCat(probability),
                    "from 0 to 1");
    options.sampling_probability = probability > 1 ? 1 : 0;
  }
  if (options.max_queue_size == 0) {
    ReportBadOption("max_queue_size", "0", "more than zero");
    options.max_queue_size = defaults.max_queue_size;
  }
  if (options.max_export_batch_size == 0) {
    ReportBadOption("max_export_batch_size", "0", "more than zero");
    options.max_export_batch_size =
        std::min(defaults.max_export_batch_size, options.max_queue_size);
  } else if (options.max_export_batch_size > options.max_queue_size) {
    ReportBadOption(
        "max_export_batch_size", absl::StrCat(options.max_export_batch_size),
        absl::StrCat("at most max_queue_size (", options.max_queue_size, ")"));
    options.max_export_batch_size = options.max_queue_size;
  }
  if (options.schedule_delay <= absl::ZeroDuration()) {
    ReportBadOption("schedule_delay",
                    absl::FormatDuration(options.schedule_delay),
                    "more than zero");
    options.schedule_delay = defaults.schedule_delay;
  }
  if (options.export_timeout <= absl::ZeroDuration()) {
    ReportBadOption("export_timeout",
                    absl::FormatDuration(options.export_timeout),
                    "more than zero");
    options.export_timeout = defaults.export_timeout;
  }
  return options;
}

}  // namespace

// OpenTelemetry's BatchSpanProcessor: the queue of finished spans and the
// thread that hands them to the exporter. Without an exporter (misuse) it
// has no thread and counts every span as failed.
class Tracer::Exporting {
 public:
  // `options` (validated) must outlive this object.
  explicit Exporting(const TracerOptions& options);
  // Exports what is queued, starting no export once export_timeout has
  // passed (spans left then are counted as dropped), and joins the thread.
  ~Exporting();
  Exporting(const Exporting&) = delete;
  Exporting& operator=(const Exporting&) = delete;

  void Submit(SpanData span);
  bool ForceFlush(absl::Time deadline);
  Stats stats() const;

 private:
  // The export thread.
  void Run();
  // Whether the export thread has a batch to export now (before the
  // schedule delay has passed).
  bool ExportDue() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Exports the next batch of the queue (not empty) through `batch` (empty;
  // left empty), releasing mu_ during the export.
  void ExportBatch(std::vector<SpanData>& batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const TracerOptions& options_;
  mutable Mutex mu_;
  // Signalled for the export thread: the queue holds a full batch, a flush
  // is requested, or the destructor runs.
  CondVar work_;
  // Signalled for ForceFlush: an export returned (done_ grew).
  CondVar exported_;
  std::deque<SpanData> queue_ ABSL_GUARDED_BY(mu_);
  // Spans queued since construction, and how many of the first of them
  // have left the queue and had their export return (or been dropped by
  // the destructor): the queue holds spans queued_ - done_ minus the batch
  // being exported.
  uint64_t queued_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t done_ ABSL_GUARDED_BY(mu_) = 0;
  // A ForceFlush waits for done_ to reach it: the export thread exports
  // without waiting for a full batch or the schedule delay until it does.
  uint64_t flush_to_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Once stopping_: no export starts after this.
  MonotonicTime stop_deadline_ ABSL_GUARDED_BY(mu_);
  Stats stats_ ABSL_GUARDED_BY(mu_);
  // Last: started once the members above are. Not joinable without an
  // exporter.
  std::thread thread_;
};

Tracer::Exporting::Exporting(const TracerOptions& options)
    : options_(options),
      thread_(options.exporter == nullptr
                  ? std::thread()
                  : std::thread(&Exporting::Run, this)) {}

Tracer::Exporting::~Exporting() {
  if (!thread_.joinable()) return;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    stop_deadline_ = MonotonicTime::Now() + options_.export_timeout;
    work_.Signal();
  }
  thread_.join();
}

void Tracer::Exporting::Submit(SpanData span) {
  // A span not queued is destroyed when this returns, after the unlock.
  MutexLock lock(&mu_);
  ++stats_.ended;
  if (options_.exporter == nullptr) {
    ++stats_.failed;
    return;
  }
  if (stopping_ || queue_.size() >= options_.max_queue_size) {
    ++stats_.dropped;
    return;
  }
  queue_.push_back(std::move(span));
  ++queued_;
  // Only on reaching a full batch: while the thread exports, it finds a
  // full queue again before waiting.
  if (queue_.size() == options_.max_export_batch_size) work_.Signal();
}

bool Tracer::Exporting::ForceFlush(absl::Time deadline) {
  // From the exporter's Export: waiting would hold up the export it waits
  // for.
  if (std::this_thread::get_id() == thread_.get_id()) return false;
  const MonotonicTime give_up = transport::io::MonotonicFromWall(deadline);
  MutexLock lock(&mu_);
  const uint64_t target = queued_;
  if (done_ >= target) return true;
  if (flush_to_ < target) {
    flush_to_ = target;
    work_.Signal();
  }
  while (done_ < target) {
    const absl::Duration left = give_up - MonotonicTime::Now();
    if (left <= absl::ZeroDuration()) return false;
    exported_.WaitWithTimeout(&mu_, left);
  }
  return true;
}

Tracer::Stats Tracer::Exporting::stats() const {
  MutexLock lock(&mu_);
  return stats_;
}

bool Tracer::Exporting::ExportDue() const {
  return queue_.size() >= options_.max_export_batch_size || flush_to_ > done_;
}

void Tracer::Exporting::ExportBatch(std::vector<SpanData>& batch) {
  const size_t size = std::min(queue_.size(), options_.max_export_batch_size);
  for (size_t i = 0; i < size; ++i) {
    batch.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  mu_.Unlock();
  const MonotonicTime start = MonotonicTime::Now();
  const Status status = options_.exporter->Export(batch);
  // A late batch counts as failed, as if cancelled at export_timeout.
  const bool in_time = MonotonicTime::Now() - start <= options_.export_timeout;
  batch.clear();
  mu_.Lock();
  if (status.ok() && in_time) {
    stats_.exported += size;
  } else {
    stats_.failed += size;
  }
  done_ += size;
  exported_.SignalAll();
}

void Tracer::Exporting::Run() {
  pthread_setname_np(pthread_self(), "h2rpc-tracer");
  std::vector<SpanData> batch;
  MutexLock lock(&mu_);
  MonotonicTime next_export = MonotonicTime::Now() + options_.schedule_delay;
  while (true) {
    while (!stopping_ && !ExportDue()) {
      const absl::Duration left = next_export - MonotonicTime::Now();
      if (left <= absl::ZeroDuration()) break;
      work_.WaitWithTimeout(&mu_, left);
    }
    if (stopping_) break;
    // A full batch, a flush, or the schedule delay passed.
    if (!queue_.empty()) ExportBatch(batch);
    next_export = MonotonicTime::Now() + options_.schedule_delay;
  }
  while (!queue_.empty() && MonotonicTime::Now() < stop_deadline_) {
    ExportBatch(batch);
  }
  stats_.dropped += queue_.size();
  done_ += queue_.size();
  queue_.clear();
  exported_.SignalAll();
}

Tracer::Tracer(TracerOptions options)
    : options_(Validated(std::move(options))),
      exporting_(std::make_unique<Exporting>(options_)) {}

Tracer::~Tracer() = default;

bool Tracer::ForceFlush(absl::Time deadline) {
  return exporting_->ForceFlush(deadline);
}

Tracer::Stats Tracer::stats() const { return exporting_->stats(); }

void Tracer::Submit(SpanData span) { exporting_->Submit(std::move(span)); }

}  // namespace h2rpc
