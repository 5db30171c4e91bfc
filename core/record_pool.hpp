// RecordPool: records allocated once and reused, so that after warm-up taking
// and giving back a record allocates nothing (the claim and mapping records
// of the hot path, claims.hpp).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace rootspan {

template <class T>
class RecordPool {
 public:
  // A record as it was given back (or value-initialized, when new).
  T *take() {
    if (free_.empty()) [[unlikely]] {
      ready(1);
    }
    T *record = free_.back();
    free_.pop_back();
    return record;
  }

  // Never allocates: the free list's capacity already holds every record.
  void give_back(T *record) noexcept { free_.push_back(record); }

  // Makes sure `count` records can be taken without allocating; on
  // bad_alloc the pool only has fewer spare records than asked.
  void ready(std::size_t count) {
    while (free_.size() < count) {
      storage_.push_back(std::make_unique<T>());
      free_.reserve(storage_.size());
      free_.push_back(storage_.back().get());
    }
  }

  // Every record, taken or not.
  const std::vector<std::unique_ptr<T>> &all() const { return storage_; }

 private:
  std::vector<std::unique_ptr<T>> storage_;
  std::vector<T *> free_;
};

}  // namespace rootspan
