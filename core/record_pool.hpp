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
    if (spare() == 0) [[unlikely]] {
      ready(1);
    }
    T *record = more_->free.back();
    more_->free.pop_back();
    return record;
  }

  // Never allocates: a record past the first came from more_, whose free
  // list's capacity already holds every record.
  void give_back(T *record) noexcept {
    if (record == &inline_) {
      inline_free_ = true;
    } else {
      more_->free.push_back(record);
    }
  }

  // Makes sure `count` records can be taken without allocating; on
  // bad_alloc the pool only has fewer spare records than asked.
  void ready(std::size_t count) {
    while ((inline_free_ ? 1 : 0) + spare() < count) {
      if (!more_) more_ = std::make_unique<More>();
      more_->storage.push_back(std::make_unique<T>());
      more_->free.reserve(more_->storage.size());
      more_->free.push_back(more_->storage.back().get());
    }
  }

  // Calls f(record) for every record, taken or not.
  template <class F>
  void for_each(F &&f) {
    f(inline_);
    if (!more_) return;
    for (const std::unique_ptr<T> &record : more_->storage) f(*record);
  }

 private:
  // The records past the first, and of them those given back: made at the
  // second record taken, which most pools never take (one pointer in the
  // pool, not two vectors, in each of a load's thousands of roots).
  struct More {
    std::vector<std::unique_ptr<T>> storage;
    std::vector<T *> free;
  };

  std::size_t spare() const { return more_ ? more_->free.size() : 0; }

  T inline_{};
  bool inline_free_ = true;
  std::unique_ptr<More> more_;
};

}  // namespace rootspan
