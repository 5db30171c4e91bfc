// Library threads (core/masked_thread.hpp): a thread blocks the embedding
// program's signals but not the faults it raises itself, and a pool that
// cannot start every thread works with those it started, while one that can
// start none throws. A thread start is made to fail here by a body whose copy
// fails, as std::thread's own start fails (std::bad_alloc, std::system_error).
#include "core/masked_thread.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <new>

namespace rootspan {
namespace {

TEST(MaskedThread, BlocksTheProgramsSignalsButNotTheFaultsItRaises) {
  sigset_t seen;
  ::sigemptyset(&seen);
  std::thread thread = start_masked_thread([&] { ::pthread_sigmask(SIG_BLOCK, nullptr, &seen); });
  thread.join();
  for (const int blocked : {SIGINT, SIGTERM, SIGCHLD, SIGUSR1, SIGPIPE}) {
    EXPECT_EQ(::sigismember(&seen, blocked), 1) << "signal " << blocked;
  }
  for (const int fault : {SIGBUS, SIGSEGV, SIGFPE, SIGILL, SIGTRAP}) {
    EXPECT_EQ(::sigismember(&seen, fault), 0) << "signal " << fault;
  }
}

// Counts the threads that ran it; the copy a thread start makes of it fails
// from the `fail_from`-th copy on (moves, which std::thread also makes, are
// not counted).
struct FailingBody {
  std::atomic<int> *ran;
  int *copies;
  int fail_from;
  FailingBody(std::atomic<int> *ran_in, int *copies_in, int fail_from_in)
      : ran(ran_in), copies(copies_in), fail_from(fail_from_in) {}
  FailingBody(const FailingBody &other) : ran(other.ran), copies(other.copies), fail_from(other.fail_from) {
    if (++*copies >= fail_from) throw std::bad_alloc();
  }
  FailingBody(FailingBody &&) noexcept = default;
  void operator()() const { ran->fetch_add(1); }
};

TEST(MaskedThreads, APoolThatCannotStartEveryThreadWorksWithThoseItStarted) {
  std::atomic<int> ran{0};
  int copies = 0;
  std::vector<std::thread> threads;
  start_masked_threads(threads, 8, FailingBody(&ran, &copies, 3));  // the third start fails
  ASSERT_EQ(threads.size(), 2u);
  for (std::thread &thread : threads) thread.join();
  EXPECT_EQ(ran.load(), 2);
}

TEST(MaskedThreads, APoolThatCanStartNoneThrows) {
  std::atomic<int> ran{0};
  int copies = 0;
  std::vector<std::thread> threads;
  EXPECT_THROW(start_masked_threads(threads, 4, FailingBody(&ran, &copies, 1)), std::bad_alloc);
  EXPECT_TRUE(threads.empty());
  EXPECT_EQ(ran.load(), 0);
}

TEST(MaskedThreads, APoolStartsEveryThreadItCan) {
  std::atomic<int> ran{0};
  std::vector<std::thread> threads;
  start_masked_threads(threads, 5, [&] { ran.fetch_add(1); });
  ASSERT_EQ(threads.size(), 5u);
  for (std::thread &thread : threads) thread.join();
  EXPECT_EQ(ran.load(), 5);
}

}  // namespace
}  // namespace rootspan
