// A library thread that starts with every signal blocked, so that the
// embedding program's handlers (a Ctrl-C handler, Python's) never run on it.
// Throws std::system_error, as std::thread does, when no thread can be had.
// And a pool of them that works with the threads it could start.
#pragma once

#include <pthread.h>
#include <signal.h>

#include <cstddef>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace rootspan {

template <class Body>
std::thread start_masked_thread(Body &&body) {
  sigset_t all;
  sigset_t caller;
  ::sigfillset(&all);
  const bool masked = ::pthread_sigmask(SIG_SETMASK, &all, &caller) == 0;
  struct Restore {
    bool masked;
    sigset_t *caller;
    ~Restore() {
      if (masked) ::pthread_sigmask(SIG_SETMASK, caller, nullptr);
    }
  } restore{masked, &caller};
  return std::thread(std::forward<Body>(body));
}

// Starts up to `count` masked threads, each running a copy of `body`, into
// the empty `threads`. Where one cannot be started (a thread limit reached),
// the pool works with those already running, which take their work from a
// shared queue; only a pool that could start none throws (std::system_error).
// A pool is never left half built: a std::thread destroyed while it runs ends
// the process (std::terminate).
template <class Body>
void start_masked_threads(std::vector<std::thread> &threads, std::size_t count, const Body &body) {
  threads.reserve(count);  // the push_backs below then never throw
  for (std::size_t i = 0; i < count; ++i) {
    try {
      threads.push_back(start_masked_thread(Body(body)));
    } catch (const std::system_error &) {
      if (threads.empty()) throw;
      return;
    }
  }
}

}  // namespace rootspan
