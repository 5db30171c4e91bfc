// Handles a caller may free on one thread while another thread still calls
// with them (rootspan.h: every function is safe from any thread). The live
// ones are listed here, each owned by a shared_ptr: a call looks its handle
// up under one short lock and holds it to the end of the call, so a free on
// another thread only unlists it, and the object goes with the last call
// using it. A handle not listed (freed, or never made) is refused by the
// call, never read.
#pragma once

#include <memory>
#include <mutex>
#include <unordered_map>

namespace rootspan {

template <class T>
class LiveHandles {
 public:
  // Lists `object` under its own address, the handle the caller gets.
  T *add(std::shared_ptr<T> object) {
    T *handle = object.get();
    const std::lock_guard lock(mutex_);
    live_.emplace(handle, std::move(object));
    return handle;
  }

  // The object of a listed handle, held for the caller; nullptr when not listed.
  std::shared_ptr<T> find(const T *handle) const {
    const std::lock_guard lock(mutex_);
    const auto found = live_.find(handle);
    return found == live_.end() ? nullptr : found->second;
  }

  // Unlists `handle`; calls that hold its object keep it until they return.
  void remove(const T *handle) {
    std::shared_ptr<T> last;  // dropped after the lock, should this be the last holder
    const std::lock_guard lock(mutex_);
    const auto found = live_.find(handle);
    if (found == live_.end()) return;
    last = std::move(found->second);
    live_.erase(found);
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<const T *, std::shared_ptr<T>> live_;
};

}  // namespace rootspan
