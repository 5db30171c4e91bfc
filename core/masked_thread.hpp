// A library thread that starts with every signal blocked, so that the
// embedding program's handlers (a Ctrl-C handler, Python's) never run on it.
// Throws std::system_error, as std::thread does, when no thread can be had.
#pragma once

#include <pthread.h>
#include <signal.h>

#include <thread>
#include <utility>

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

}  // namespace rootspan
