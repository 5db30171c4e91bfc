// RecordPool: records allocated once and reused, so that after warm-up taking
// and giving back a record allocates nothing (the claim and mapping records
// of the hot path, claims.hpp). The first record lies inside the pool itself:
// a root claimed and mapped once, as each of a load's thousands of components
// is, allocates no record at all.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace rootspan {

template <class T>
class RecordPool {
 public:
  RecordPool() = default;
  RecordPool(const RecordPool &) = delete;  // records are handed out by address
  RecordPool &operator=(const RecordPool &) = delete;

  // A record as it was given back (or value-initialized, when new).
  T *take() {
    if (inline_free_) {
      inline_free_ = false;
      return &inline_;
    }
    if (free_.empty()) [[unlikely]] {
      ready(1);
    }
    T *record = free_.back();
    free_.pop_back();
    return record;
  }

  // Never allocates: the free list's capacity already holds every record.
  void give_back(T *record) noexcept {
    if (record == &inline_) {
      inline_free_ = true;
    } else {
      free_.push_back(record);
    }
  }

  // Makes sure `count` records can be taken without allocating; on
  // bad_alloc the pool only has fewer spare records than asked.
  void ready(std::size_t count) {
    while ((inline_free_ ? 1 : 0) + free_.size() < count) {
      storage_.push_back(std::make_unique<T>());
      free_.reserve(storage_.size());
      free_.push_back(storage_.back().get());
    }
  }

  // Calls f(record) for every record, taken or not.
  template <class F>
  void for_each(F &&f) {
    f(inline_);
    for (const std::unique_ptr<T> &record : storage_) f(*record);
  }

 private:
  T inline_{};
  bool inline_free_ = true;
  std::vector<std::unique_ptr<T>> storage_;  // the records past the first
  std::vector<T *> free_;                    // of them, those given back
};

}  // namespace rootspan
