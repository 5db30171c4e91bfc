// A library thread that starts with every signal blocked but the ones a
// fault of its own raises, so that the embedding program's handlers (a Ctrl-C
// handler, Python's) never run on it. A fault (SIGBUS from a truncated mapped
// file, SIGSEGV) still reaches its handler on the thread that faulted: the
// library's recovery from a SIGBUS in a copy (core/mapped_read.hpp), or the
// default action; blocked, the kernel would end the process without either.
// Throws std::system_error, as std::thread does, when no thread can be had.
// And a pool of them that works with the threads it could start.
#pragma once

#include <pthread.h>
#include <signal.h>

#include <cstddef>
#include <thread>
#include <utility>
#include <vector>

namespace rootspan {

template <class Body>
std::thread start_masked_thread(Body &&body) {
  sigset_t all;
  sigset_t caller;
  ::sigfillset(&all);
  for (const int fault : {SIGBUS, SIGSEGV, SIGFPE, SIGILL, SIGTRAP}) ::sigdelset(&all, fault);
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
// shared queue; only a pool that could start none throws (std::system_error,
// or std::bad_alloc).
// A pool is never left half built: a std::thread destroyed while it runs ends
// the process (std::terminate).
template <class Body>
void start_masked_threads(std::vector<std::thread> &threads, std::size_t count, const Body &body) {
  threads.reserve(count);  // the push_backs below then never throw
  for (std::size_t i = 0; i < count; ++i) {
    try {
      threads.push_back(start_masked_thread(Body(body)));
    } catch (...) {  // std::system_error, or std::bad_alloc for the thread's own state
      if (threads.empty()) throw;
      return;
    }
  }
}

}  // namespace rootspan
