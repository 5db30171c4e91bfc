// docs/concepts.md under threads: many threads claiming overlapping spans of
// ONE root, shared and exclusive, never hold two conflicting claims at once
// (checked against a shadow table and through the bytes themselves: an
// exclusive holder's writes stay as written, a shared holder's bytes do not
// change); threads on DISJOINT roots never fail; root ids stay unique when
// roots are made from many threads. Each test is time-bounded (< ~1 s).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace {

using namespace rootspan::testing;
using Clock = std::chrono::steady_clock;

constexpr int kThreads = 8;

struct Live {
  std::uint64_t begin, end;
  rootspan_claim_mode mode;
  int thread;
};

class Concurrency : public CoreTest {};

TEST_F(Concurrency, OverlappingClaimsOnOneRootNeverConflict) {
  constexpr std::uint64_t kLength = 1024;
  rootspan_root *root = allocate("host", kLength);
  ASSERT_NE(root, nullptr);

  std::mutex shadow_mutex;
  std::vector<Live> shadow;  // claims the core has granted and not yet been asked to release
  std::atomic<int> violations{0}, corruptions{0}, unexpected{0};
  std::atomic<int> exclusive_ok{0}, shared_ok{0}, conflicts{0};
  std::atomic<bool> go{false};
  const auto deadline_after = std::chrono::milliseconds(600);

  auto worker = [&](int id) {
    std::mt19937_64 rng(0x9e3779b9u * (id + 1));
    while (!go.load()) std::this_thread::yield();
    const auto deadline = Clock::now() + deadline_after;
    const auto tag = static_cast<unsigned char>(id + 1);
    std::vector<unsigned char> snapshot;
    int iterations = 0;
    while (Clock::now() < deadline || iterations < 200) {
      ++iterations;
      const std::uint64_t offset = rng() % (kLength - 8);
      const std::uint64_t length = 1 + rng() % std::min<std::uint64_t>(256, kLength - offset);
      const rootspan_claim_mode mode = rng() % 5 < 2 ? ROOTSPAN_CLAIM_EXCLUSIVE : ROOTSPAN_CLAIM_SHARED;
      rootspan_claim *c = nullptr;
      rootspan_error *error = nullptr;
      const rootspan_status s = rootspan_claim_acquire(root, offset, length, mode, &c, &error);
      if (s == ROOTSPAN_ERR_CONFLICT) {
        ++conflicts;
        if (std::strncmp(rootspan_error_cause(error), "conflict with ", 14) != 0) ++unexpected;
        rootspan_error_free(error);
        continue;
      }
      rootspan_error_free(error);
      if (s != ROOTSPAN_OK) {
        ++unexpected;
        continue;
      }
      {
        std::lock_guard lock(shadow_mutex);
        for (const Live &other : shadow) {
          const bool overlap = offset < other.end && other.begin < offset + length;
          if (overlap && (mode == ROOTSPAN_CLAIM_EXCLUSIVE || other.mode == ROOTSPAN_CLAIM_EXCLUSIVE)) ++violations;
        }
        shadow.push_back({offset, offset + length, mode, id});
      }
      rootspan_mapping *m = nullptr;
      if (mode == ROOTSPAN_CLAIM_EXCLUSIVE) {
        if (rootspan_map_write(c, ROOTSPAN_DTYPE_NONE, 0, length, &m, nullptr) != ROOTSPAN_OK) {
          ++unexpected;
        } else {
          auto *bytes = static_cast<unsigned char *>(rootspan_mapping_data(m));
          std::memset(bytes, tag, length);
          std::this_thread::yield();
          for (std::uint64_t i = 0; i < length; ++i) {
            if (bytes[i] != tag) {
              ++corruptions;
              break;
            }
          }
          rootspan_unmap(m);
          ++exclusive_ok;
        }
      } else {
        if (rootspan_map_read(c, ROOTSPAN_DTYPE_NONE, 0, length, &m, nullptr) != ROOTSPAN_OK) {
          ++unexpected;
        } else {
          const auto *bytes = static_cast<const unsigned char *>(rootspan_mapping_data(m));
          snapshot.assign(bytes, bytes + length);
          std::this_thread::yield();
          if (std::memcmp(snapshot.data(), bytes, length) != 0) ++corruptions;
          rootspan_unmap(m);
          ++shared_ok;
        }
      }
      {
        std::lock_guard lock(shadow_mutex);
        for (auto it = shadow.begin(); it != shadow.end(); ++it) {
          if (it->thread == id) {
            shadow.erase(it);
            break;
          }
        }
      }
      if (rootspan_claim_release(c, nullptr) != ROOTSPAN_OK) ++unexpected;
    }
  };

  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back(worker, i);
  go = true;
  for (auto &t : threads) t.join();

  EXPECT_EQ(violations.load(), 0) << "two conflicting claims were live at once";
  EXPECT_EQ(corruptions.load(), 0) << "bytes changed under a claim";
  EXPECT_EQ(unexpected.load(), 0);
  EXPECT_GT(exclusive_ok.load(), 0);
  EXPECT_GT(shared_ok.load(), 0);
  EXPECT_GT(conflicts.load(), 0) << "the test never made claims contend";
  // Every claim was released: the root releases.
  release(root);
}

TEST_F(Concurrency, SplitChildrenAreExclusiveAcrossThreads) {
  // One thread holds an exclusive claim over the whole root and splits it;
  // each worker writes its own child while others try (and fail) to claim
  // any part of the root.
  constexpr std::uint64_t kChild = 128;
  rootspan_root *root = allocate("host", kChild * kThreads);
  rootspan_claim *parent = claim(root, 0, kChild * kThreads, ROOTSPAN_CLAIM_EXCLUSIVE);
  std::vector<rootspan_range> ranges;
  for (int i = 0; i < kThreads; ++i) ranges.push_back({kChild * i, kChild});
  std::vector<rootspan_claim *> children(kThreads);
  Err e;
  ASSERT_EQ(rootspan_claim_split(parent, ranges.data(), ranges.size(), children.data(), e.out()), ROOTSPAN_OK)
      << e.message();
  std::atomic<int> failures{0}, intruders{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      const auto deadline = Clock::now() + std::chrono::milliseconds(200);
      while (Clock::now() < deadline) {
        rootspan_mapping *m = nullptr;
        if (rootspan_map_write(children[i], ROOTSPAN_DTYPE_U64, 0, kChild, &m, nullptr) != ROOTSPAN_OK) {
          ++failures;
          break;
        }
        auto *words = static_cast<std::uint64_t *>(rootspan_mapping_data(m));
        for (std::uint64_t w = 0; w < kChild / 8; ++w) words[w] = static_cast<std::uint64_t>(i);
        for (std::uint64_t w = 0; w < kChild / 8; ++w) {
          if (words[w] != static_cast<std::uint64_t>(i)) ++failures;
        }
        rootspan_unmap(m);
        rootspan_claim *other = nullptr;
        const std::uint64_t neighbour = kChild * ((i + 1) % kThreads);
        if (rootspan_claim_acquire(root, neighbour, 8, ROOTSPAN_CLAIM_SHARED, &other, nullptr) !=
            ROOTSPAN_ERR_CONFLICT) {
          ++intruders;
          if (other != nullptr) rootspan_claim_release(other, nullptr);
        }
      }
    });
  }
  for (auto &t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(intruders.load(), 0);
  for (rootspan_claim *c : children) release(c);
  release(parent);
  release(root);
}

TEST_F(Concurrency, ThreadsOnDisjointRootsNeverFail) {
  std::atomic<int> failures{0};
  std::atomic<long> cycles{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      rootspan_allocate_options o = allocate_options("host", 4096);
      rootspan_root *root = nullptr;
      if (rootspan_root_allocate(context_, &o, &root, nullptr) != ROOTSPAN_OK) {
        ++failures;
        return;
      }
      while (!go.load()) std::this_thread::yield();
      const auto deadline = Clock::now() + std::chrono::milliseconds(400);
      long n = 0;
      while (Clock::now() < deadline || n < 1000) {
        const std::uint64_t offset = (static_cast<std::uint64_t>(n) * 64) % 4032;
        rootspan_claim *c = nullptr;
        rootspan_mapping *m = nullptr;
        bool ok = rootspan_claim_acquire(root, offset, 64, ROOTSPAN_CLAIM_EXCLUSIVE, &c, nullptr) == ROOTSPAN_OK;
        ok = ok && rootspan_map_write(c, ROOTSPAN_DTYPE_U32, 0, 64, &m, nullptr) == ROOTSPAN_OK;
        if (ok) {
          auto *words = static_cast<std::uint32_t *>(rootspan_mapping_data(m));
          for (int w = 0; w < 16; ++w) words[w] = static_cast<std::uint32_t>(i * 1000003 + n);
          ok = rootspan_unmap(m) == ROOTSPAN_OK;
        }
        ok = ok && rootspan_claim_release(c, nullptr) == ROOTSPAN_OK;
        // Read it back under a shared claim.
        ok = ok && rootspan_claim_acquire(root, offset, 64, ROOTSPAN_CLAIM_SHARED, &c, nullptr) == ROOTSPAN_OK;
        ok = ok && rootspan_map_read(c, ROOTSPAN_DTYPE_U32, 0, 64, &m, nullptr) == ROOTSPAN_OK;
        if (ok) {
          const auto *words = static_cast<const std::uint32_t *>(rootspan_mapping_data(m));
          ok = words[15] == static_cast<std::uint32_t>(i * 1000003 + n);
          rootspan_unmap(m);
        }
        ok = ok && rootspan_claim_release(c, nullptr) == ROOTSPAN_OK;
        if (!ok) {
          ++failures;
          break;
        }
        // Now and then, make and drop another root: the context's table is shared.
        if (n % 64 == 0) {
          rootspan_allocate_options t = allocate_options("host", 64);
          rootspan_root *tmp = nullptr;
          if (rootspan_root_allocate(context_, &t, &tmp, nullptr) != ROOTSPAN_OK ||
              rootspan_root_release(tmp, nullptr) != ROOTSPAN_OK) {
            ++failures;
          }
        }
        ++n;
      }
      cycles += n;
      if (rootspan_root_release(root, nullptr) != ROOTSPAN_OK) ++failures;
    });
  }
  go = true;
  for (auto &t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GE(cycles.load(), static_cast<long>(kThreads) * 1000);
}

TEST_F(Concurrency, AHookBlockedOnOneRootDoesNotHoldUpAnotherRoot) {
  // docs/concepts.md: claims on one root never take a lock that another root's
  // claims need. A provider's map hook on root A blocks until a second
  // thread has claimed, mapped and released on root B (and on another part of
  // the context: a fresh root). If anything on that path shared a lock with
  // A's mapping, B would wait for A and A for B; the hook gives up after 2 s.
  add(test_provider_entry);
  rootspan_root *a = allocate("test", 64);
  rootspan_root *b = allocate("host", 64);
  ASSERT_TRUE(a && b);
  std::mutex m;
  std::condition_variable cv;
  bool in_hook = false, b_done = false, timed_out = false;
  behaviour().map_callback = [&] {
    std::unique_lock lock(m);
    in_hook = true;
    cv.notify_all();
    if (!cv.wait_for(lock, std::chrono::seconds(2), [&] { return b_done; })) timed_out = true;
  };
  rootspan_claim *ca = claim(a, 0, 64, ROOTSPAN_CLAIM_EXCLUSIVE);
  std::thread blocked([&] {
    rootspan_mapping *mapping = nullptr;
    if (rootspan_map_write(ca, ROOTSPAN_DTYPE_NONE, 0, 64, &mapping, nullptr) == ROOTSPAN_OK) rootspan_unmap(mapping);
  });
  {
    std::unique_lock lock(m);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(2), [&] { return in_hook; }));
  }
  bool ok = true;
  rootspan_claim *cb = nullptr;
  rootspan_mapping *mb = nullptr;
  ok = ok && rootspan_claim_acquire(b, 0, 64, ROOTSPAN_CLAIM_EXCLUSIVE, &cb, nullptr) == ROOTSPAN_OK;
  ok = ok && rootspan_map_write(cb, ROOTSPAN_DTYPE_NONE, 0, 64, &mb, nullptr) == ROOTSPAN_OK;
  ok = ok && rootspan_unmap(mb) == ROOTSPAN_OK;
  ok = ok && rootspan_claim_release(cb, nullptr) == ROOTSPAN_OK;
  rootspan_allocate_options o = allocate_options("host", 8);
  rootspan_root *fresh = nullptr;
  ok = ok && rootspan_root_allocate(context_, &o, &fresh, nullptr) == ROOTSPAN_OK;
  ok = ok && rootspan_root_release(fresh, nullptr) == ROOTSPAN_OK;
  {
    std::lock_guard lock(m);
    b_done = true;
  }
  cv.notify_all();
  blocked.join();
  behaviour().map_callback = nullptr;
  EXPECT_TRUE(ok);
  EXPECT_FALSE(timed_out) << "work on root B waited for root A's provider hook";
  release(ca);
  release(a);
  release(b);
}

TEST_F(Concurrency, RootIdsStayUniqueAcrossThreadsAndContexts) {
  std::mutex ids_mutex;
  std::set<std::uint64_t> ids;
  std::atomic<int> failures{0}, duplicates{0};
  rootspan_context *other = nullptr;
  Err e;
  ASSERT_EQ(rootspan_context_create(nullptr, &other, e.out()), ROOTSPAN_OK);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      rootspan_context *ctx = i % 2 == 0 ? context_ : other;
      for (int n = 0; n < 300; ++n) {
        rootspan_allocate_options o = allocate_options("host", 16);
        rootspan_root *root = nullptr;
        if (rootspan_root_allocate(ctx, &o, &root, nullptr) != ROOTSPAN_OK) {
          ++failures;
          return;
        }
        const std::uint64_t id = info_of(root).root_id;
        {
          std::lock_guard lock(ids_mutex);
          if (id == 0 || !ids.insert(id).second) ++duplicates;
        }
        if (rootspan_root_release(root, nullptr) != ROOTSPAN_OK) ++failures;
      }
    });
  }
  for (auto &t : threads) t.join();
  EXPECT_EQ(rootspan_context_destroy(other, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(duplicates.load(), 0);
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(kThreads) * 300);
}

}  // namespace
