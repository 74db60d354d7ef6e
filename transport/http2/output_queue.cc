#include "transport/http2/output_queue.h"

#include <algorithm>
#include <utility>

#include "transport/core/large_buffer_cache.h"
#include "transport/http2/stream_base.h"

namespace h2rpc::transport::http2 {

OutputQueue::~OutputQueue() { Clear(); }

char* OutputQueue::Append(absl::string_view bytes) {
  const size_t offset = copied_.size();
  // An empty piece would end Front() before the bytes after it.
  if (bytes.empty()) return copied_.data() + offset;
  copied_.append(bytes.data(), bytes.size());
  appended_ += bytes.size();
  pending_ += bytes.size();
  if (!pieces_.empty() && pieces_.back().data == nullptr &&
      pieces_.back().offset + pieces_.back().size == offset) {
    pieces_.back().size += bytes.size();
  } else {
    pieces_.push_back(Piece{nullptr, offset, bytes.size(), nullptr, -1});
  }
  return &copied_[offset];
}

void OutputQueue::AppendLent(OutgoingData* lender, absl::string_view bytes) {
  pieces_.push_back(Piece{bytes.data(), 0, bytes.size(), lender, -1});
  lender->OnLent(this);
  appended_ += bytes.size();
  pending_ += bytes.size();
}

absl::string_view OutputQueue::Front() const {
  if (pending_ == 0) return absl::string_view();
  const Piece& piece = pieces_[front_];
  return absl::string_view(PieceData(piece) + front_written_,
                           piece.size - front_written_);
}

size_t OutputQueue::Peek(iovec* pieces, size_t max) const {
  size_t count = 0;
  size_t skip = front_written_;
  for (size_t i = front_; i < pieces_.size() && count < max; ++i) {
    const Piece& piece = pieces_[i];
    pieces[count].iov_base = const_cast<char*>(PieceData(piece) + skip);
    pieces[count].iov_len = piece.size - skip;
    ++count;
    skip = 0;
  }
  return count;
}

void OutputQueue::Consume(size_t n) {
  n = std::min(n, pending_);
  pending_ -= n;
  while (n > 0) {
    Piece& piece = pieces_[front_];
    const size_t taken = std::min(n, piece.size - front_written_);
    front_written_ += taken;
    n -= taken;
    if (front_written_ < piece.size) break;
    LetGo(&piece);
    ++front_;
    front_written_ = 0;
  }
  if (pending_ == 0) Reset();
}

void OutputQueue::CopyLent(OutgoingData* lender) {
  for (size_t i = front_; i < pieces_.size(); ++i) {
    Piece& piece = pieces_[i];
    if (piece.lender != lender) continue;
    piece.offset = copied_.size();
    copied_.append(piece.data, piece.size);
    piece.data = nullptr;
    piece.lender = nullptr;
  }
  lender->OnAllReturned();
}

void OutputQueue::Adopt(OutgoingData* lender, std::string* body) {
  if (adopted_bytes_ + body->capacity() > max_adopted_bytes_) {
    CopyLent(lender);
    return;
  }
  adopted_bytes_ += body->capacity();
  const int32_t index = static_cast<int32_t>(adopted_.size());
  adopted_.push_back(AdoptedBuffer{std::move(*body), 0});
  body->clear();
  for (size_t i = front_; i < pieces_.size(); ++i) {
    Piece& piece = pieces_[i];
    if (piece.lender != lender) continue;
    // Moving a std::string with heap storage keeps that storage: the
    // piece's bytes did not move.
    piece.lender = nullptr;
    piece.adopted = index;
    ++adopted_.back().pieces;
  }
  lender->OnAllReturned();
}

void OutputQueue::Clear() {
  for (size_t i = front_; i < pieces_.size(); ++i) LetGo(&pieces_[i]);
  pending_ = 0;
  Reset();
}

void OutputQueue::LetGo(Piece* piece) {
  if (piece->lender != nullptr) {
    piece->lender->OnReturned();
    piece->lender = nullptr;
  } else if (piece->adopted >= 0) {
    AdoptedBuffer& adopted = adopted_[static_cast<size_t>(piece->adopted)];
    if (--adopted.pieces == 0) {
      adopted_bytes_ -= adopted.body.capacity();
      LargeBufferCache::Global().Give(&adopted.body);
    }
    piece->adopted = -1;
  }
}

void OutputQueue::Reset() {
  copied_.clear();
  pieces_.clear();
  adopted_.clear();
  adopted_bytes_ = 0;
  front_ = front_written_ = appended_ = 0;
}

}  // namespace h2rpc::transport::http2
