// Stress under threads (CI runs it under ThreadSanitizer, .ci/run): N threads
// (ROOTSPAN_STRESS_THREADS, 8 by default) each run a bounded number
// (ROOTSPAN_STRESS_ITERATIONS) of random calls over a pool of roots they
// share: claims (shared and exclusive, overlapping), splits, mappings, copies,
// device accesses, releases, root release and replacement by allocation or
// import, rootspan_context_add_provider, and weights loads and frees. Each
// thread has its own RNG, seeded from ROOTSPAN_STRESS_SEED (printed, so a
// failing run can be repeated). Checked throughout: no two conflicting claims
// are ever granted at once (a mutex-protected table of granted ranges per
// root), every failing call returns a valid status whose error has the same
// code and a message, and releases with nothing attached succeed; checked at
// the end: every root the test made is released once, every test-provider
// allocation was released exactly once, every import's deleter ran once.
#include <unistd.h>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "rootspan/weights.h"
#include "test_support.hpp"
#include "tests/support/embedded_providers.hpp"

namespace {

using namespace rootspan::testing;

std::uint64_t env_or(const char *name, std::uint64_t fallback) {
  const char *value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  return std::strtoull(value, nullptr, 10);
}

// One root of the shared pool. Threads use the root under `use` held shared
// (every claim they take is released before they let go); replacing the root
// takes `use` exclusively, so no thread ever touches a released handle.
struct Slot {
  std::shared_mutex use;
  rootspan_root *root = nullptr;  // guarded by `use`
  std::uint64_t length = 0;

  struct Granted {
    std::uint64_t begin, end;
    rootspan_claim_mode mode;
  };
  std::mutex table_mutex;
  std::vector<Granted> granted;  // claims the core granted and has not yet been asked to release
};

struct Totals {
  std::atomic<std::uint64_t> steps{0};
  std::atomic<std::uint64_t> claims{0};
  std::atomic<std::uint64_t> conflicts{0};
  std::atomic<std::uint64_t> mappings{0};
  std::atomic<std::uint64_t> replaced{0};
  std::atomic<std::uint64_t> loads{0};
  std::atomic<int> imported{0};
  std::atomic<int> deleted{0};
  std::atomic<int> violations{0};
  std::mutex first_mutex;
  std::string first;  // the first violation, for the failure message

  void violation(const std::string &what) {
    if (violations.fetch_add(1) == 0) {
      std::lock_guard lock(first_mutex);
      first = what;
    }
  }
};

void count_deleted(void *context, void *data) {
  ++static_cast<Totals *>(context)->deleted;
  std::free(data);
}

// Checks a call's status and error; returns the status.
rootspan_status checked(Totals &totals, const char *call, rootspan_status status, rootspan_error *&error) {
  if (status < ROOTSPAN_OK || status > ROOTSPAN_ERR_CANCELLED) {
    totals.violation(std::string(call) + " returned " + std::to_string(status) + ", not a status");
  } else if (status == ROOTSPAN_OK && error != nullptr) {
    totals.violation(std::string(call) + " succeeded but wrote an error");
  } else if (status != ROOTSPAN_OK) {
    if (error == nullptr) {
      totals.violation(std::string(call) + " failed without an error");
    } else if (rootspan_error_code(error) != status || rootspan_error_message(error)[0] == '\0') {
      totals.violation(std::string(call) + ": the error's code or message is wrong: " + rootspan_error_message(error));
    }
  }
  rootspan_error_free(error);
  error = nullptr;
  return status;
}

// A small safetensors checkpoint of three tensors.
std::filesystem::path write_checkpoint() {
  const auto dir = std::filesystem::temp_directory_path() / ("rootspan-stress-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string header = R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                       R"("b":{"dtype":"U8","shape":[8],"data_offsets":[16,24]},)"
                       R"("c":{"dtype":"I64","shape":[2],"data_offsets":[24,40]}})";
  while (header.size() % 8 != 0) header += ' ';
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  file += header;
  for (int i = 0; i < 40; ++i) file += static_cast<char>(i);
  const auto path = dir / "model.safetensors";
  std::ofstream(path, std::ios::binary) << file;
  return path;
}

const char *const kProviders[] = {"host", "test", "device-sim", "named-0", "named-1"};

class Stress : public CoreTest {
 protected:
  // Makes a new root for a slot: an allocation from a random provider, or a
  // host import of malloc'd memory with a deleter.
  rootspan_root *make_root(std::mt19937_64 &rng, Totals &totals, std::uint64_t *length) {
    *length = 64 * (1 + rng() % 16);
    rootspan_error *error = nullptr;
    rootspan_root *root = nullptr;
    if (rng() % 3 == 0) {
      void *data = std::aligned_alloc(64, *length);
      rootspan_host_import i = host_import(data, *length, 64);
      i.deleter = count_deleted;
      i.deleter_context = &totals;
      if (checked(totals, "root_import_host", rootspan_root_import_host(context_, &i, &root, &error), error) ==
          ROOTSPAN_OK) {
        ++totals.imported;
      } else {
        totals.violation("a host import failed");
      }
      return root;
    }
    const char *provider = kProviders[rng() % std::size(kProviders)];
    rootspan_allocate_options o = allocate_options(provider, *length, 64);
    const rootspan_status s =
        checked(totals, "root_allocate", rootspan_root_allocate(context_, &o, &root, &error), error);
    // named-* may not have been added yet.
    if (s != ROOTSPAN_OK && !(s == ROOTSPAN_ERR_NOT_FOUND && std::strncmp(provider, "named-", 6) == 0)) {
      totals.violation(std::string("root_allocate from ") + provider + " failed: " + rootspan_status_name(s));
    }
    return root;
  }

  // Claims a random range of the slot's root and does random work through
  // the claim, then releases everything it made. The slot is held shared.
  void session(std::mt19937_64 &rng, Slot &slot, Totals &totals) {
    rootspan_error *error = nullptr;
    const std::uint64_t begin = rng() % slot.length;
    const std::uint64_t end = begin + 1 + rng() % (slot.length - begin);
    const rootspan_claim_mode mode = rng() % 2 == 0 ? ROOTSPAN_CLAIM_EXCLUSIVE : ROOTSPAN_CLAIM_SHARED;
    rootspan_claim *claim = nullptr;
    const rootspan_status s = checked(
        totals, "claim_acquire", rootspan_claim_acquire(slot.root, begin, end - begin, mode, &claim, &error), error);
    if (s == ROOTSPAN_ERR_CONFLICT) {
      ++totals.conflicts;
      return;
    }
    if (s != ROOTSPAN_OK) {
      totals.violation(std::string("claim_acquire failed: ") + rootspan_status_name(s));
      return;
    }
    ++totals.claims;
    {
      std::lock_guard lock(slot.table_mutex);
      for (const Slot::Granted &g : slot.granted) {
        if (begin < g.end && g.begin < end &&
            (mode == ROOTSPAN_CLAIM_EXCLUSIVE || g.mode == ROOTSPAN_CLAIM_EXCLUSIVE)) {
          totals.violation("two conflicting claims granted at once: [" + std::to_string(begin) + "," +
                           std::to_string(end) + ") and [" + std::to_string(g.begin) + "," + std::to_string(g.end) +
                           ")");
        }
      }
      slot.granted.push_back({begin, end, mode});
    }
    // With a live claim the root cannot go.
    if (rng() % 8 == 0 &&
        checked(totals, "root_release", rootspan_root_release(slot.root, &error), error) != ROOTSPAN_ERR_BUSY) {
      totals.violation("root_release with a live claim did not answer Busy");
    }
    std::vector<rootspan_claim *> children;
    if (mode == ROOTSPAN_CLAIM_EXCLUSIVE && end - begin >= 2 && rng() % 3 == 0) {
      const std::uint64_t half = (end - begin) / 2;
      const rootspan_range ranges[2] = {{0, half}, {half, end - begin - half}};
      children.resize(2);
      if (checked(totals, "claim_split", rootspan_claim_split(claim, ranges, 2, children.data(), &error), error) !=
          ROOTSPAN_OK) {
        totals.violation("claim_split into two halves failed");
        children.clear();
      }
    }
    // Work through a child, or the claim itself.
    rootspan_claim *target = children.empty() ? claim : children[rng() % children.size()];
    rootspan_span span{};
    span.struct_size = ROOTSPAN_SPAN_STRUCT_SIZE;
    rootspan_claim_get_span(target, &span, nullptr);
    switch (rng() % 4) {
      case 0: {
        rootspan_mapping *mapping = nullptr;
        const bool write = mode == ROOTSPAN_CLAIM_EXCLUSIVE && rng() % 2 == 0;
        const rootspan_status m = checked(totals, "map",
                                          (write ? rootspan_map_write : rootspan_map_read)(
                                              target, ROOTSPAN_DTYPE_NONE, 0, span.length, &mapping, &error),
                                          error);
        if (m == ROOTSPAN_OK) {
          ++totals.mappings;
          auto *bytes = static_cast<volatile unsigned char *>(rootspan_mapping_data(mapping));
          if (span.length != 0 && write) bytes[0] = static_cast<unsigned char>(rng());
          if (span.length != 0) (void)bytes[span.length - 1];
          if (checked(totals, "claim_release", rootspan_claim_release(target, &error), error) != ROOTSPAN_ERR_BUSY) {
            totals.violation("claim_release with a live mapping did not answer Busy");
          }
          rootspan_unmap(mapping);
        } else if (m != ROOTSPAN_ERR_UNSUPPORTED) {  // device-sim has no host access
          totals.violation(std::string("map failed: ") + rootspan_status_name(m));
        }
        break;
      }
      case 1: {
        std::vector<unsigned char> host(span.length, static_cast<unsigned char>(rng()));
        const bool to_root = mode == ROOTSPAN_CLAIM_EXCLUSIVE && rng() % 2 == 0;
        const rootspan_status c =
            to_root ? checked(totals, "copy_from_host",
                              rootspan_copy_from_host(target, 0, host.data(), host.size(), &error), error)
                    : checked(totals, "copy_to_host",
                              rootspan_copy_to_host(target, 0, host.data(), host.size(), &error), error);
        if (c != ROOTSPAN_OK) totals.violation(std::string("copy failed: ") + rootspan_status_name(c));
        break;
      }
      case 2: {
        rootspan_root_info info = {};
        info.struct_size = ROOTSPAN_ROOT_INFO_STRUCT_SIZE;
        rootspan_root_get_info(slot.root, &info);
        rootspan_device_access_request request{};
        request.struct_size = ROOTSPAN_DEVICE_ACCESS_REQUEST_STRUCT_SIZE;
        request.key = info.key;
        request.byte_length = span.length;
        request.element_size = 1;
        const std::uint64_t shape[1] = {span.length};
        const std::int64_t strides[1] = {1};
        request.rank = 1;
        request.shape = shape;
        request.strides = strides;
        rootspan_device_access access{};
        access.struct_size = ROOTSPAN_DEVICE_ACCESS_STRUCT_SIZE;
        const rootspan_status a = checked(totals, "device_access_prepare",
                                          rootspan_device_access_prepare(target, &request, &access, &error), error);
        if (a == ROOTSPAN_OK) {
          if (rootspan_device_access_release(target, &access) != ROOTSPAN_OK) {
            totals.violation("device_access_release failed");
          }
        } else if (a != ROOTSPAN_ERR_UNSUPPORTED) {  // only device-sim has device access
          totals.violation(std::string("device_access_prepare failed: ") + rootspan_status_name(a));
        }
        break;
      }
      default:
        break;
    }
    for (rootspan_claim *child : children) {
      if (checked(totals, "claim_release", rootspan_claim_release(child, &error), error) != ROOTSPAN_OK) {
        totals.violation("releasing a child claim failed");
      }
    }
    {
      std::lock_guard lock(slot.table_mutex);
      for (auto it = slot.granted.begin(); it != slot.granted.end(); ++it) {
        if (it->begin == begin && it->end == end && it->mode == mode) {
          slot.granted.erase(it);
          break;
        }
      }
    }
    if (checked(totals, "claim_release", rootspan_claim_release(claim, &error), error) != ROOTSPAN_OK) {
      totals.violation("releasing a claim with nothing attached failed");
    }
  }

  // Releases the slot's root and makes another. The slot is held exclusively.
  void replace(std::mt19937_64 &rng, Slot &slot, Totals &totals) {
    rootspan_error *error = nullptr;
    if (slot.root != nullptr &&
        checked(totals, "root_release", rootspan_root_release(slot.root, &error), error) != ROOTSPAN_OK) {
      totals.violation("root_release with no claim failed");
    }
    slot.root = make_root(rng, totals, &slot.length);
    ++totals.replaced;
  }

  void load_and_free(std::mt19937_64 &rng, const std::string &checkpoint, Totals &totals) {
    rootspan_error *error = nullptr;
    rootspan_load_options o{};
    o.struct_size = ROOTSPAN_LOAD_OPTIONS_STRUCT_SIZE;
    o.provider = rng() % 2 == 0 ? "host" : "test";
    o.strategy = rng() % 2 == 0 ? ROOTSPAN_LOAD_MMAP : ROOTSPAN_LOAD_READ;
    rootspan_weights *weights = nullptr;
    if (checked(totals, "weights_load", rootspan_weights_load(context_, checkpoint.c_str(), &o, &weights, &error),
                error) != ROOTSPAN_OK) {
      totals.violation("weights_load of a good checkpoint failed");
      return;
    }
    ++totals.loads;
    rootspan_component_info info{};
    info.struct_size = ROOTSPAN_COMPONENT_INFO_STRUCT_SIZE;
    rootspan_weights_component(weights, rng() % 3, &info);
    rootspan_claim *claim = nullptr;
    if (checked(totals, "claim_acquire",
                rootspan_claim_acquire(info.root, 0, info.byte_length, ROOTSPAN_CLAIM_SHARED, &claim, &error),
                error) != ROOTSPAN_OK) {
      totals.violation("a shared claim on a fresh component failed");
    } else {
      if (checked(totals, "weights_free", rootspan_weights_free(weights, &error), error) != ROOTSPAN_ERR_BUSY) {
        totals.violation("weights_free with a claimed component did not answer Busy");
      }
      rootspan_claim_release(claim, nullptr);
    }
    char hex[65];
    if (checked(totals, "weights_component_sha256", rootspan_weights_component_sha256(weights, 0, hex, &error),
                error) != ROOTSPAN_OK) {
      totals.violation("weights_component_sha256 failed");
    }
    if (checked(totals, "weights_free", rootspan_weights_free(weights, &error), error) != ROOTSPAN_OK) {
      totals.violation("weights_free with nothing claimed failed");
    }
  }

  void add_named(std::mt19937_64 &rng, Totals &totals) {
    rootspan_error *error = nullptr;
    const std::size_t index = rng() % 4;
    const rootspan_status s =
        checked(totals, "add_provider",
                rootspan_context_add_provider(context_, named_provider_entry(index), nullptr, &error), error);
    // The first add of a name wins; later ones are refused.
    if (s != ROOTSPAN_OK && s != ROOTSPAN_ERR_PLUGIN_REJECTED && s != ROOTSPAN_ERR_INVALID_MANIFEST) {
      totals.violation(std::string("add_provider answered ") + rootspan_status_name(s));
    }
    std::size_t count = 0;
    rootspan_provider_report_count(context_, &count);
    rootspan_provider_report report{};
    report.struct_size = ROOTSPAN_PROVIDER_REPORT_STRUCT_SIZE;
    if (count == 0 || rootspan_provider_report_get(context_, rng() % count, &report) != ROOTSPAN_OK ||
        report.name == nullptr || report.name[0] == '\0') {
      totals.violation("a provider report could not be read");
    }
  }
};

TEST_F(Stress, RandomCallsOverSharedRootsKeepEveryInvariant) {
  const auto threads = static_cast<int>(env_or("ROOTSPAN_STRESS_THREADS", 8));
  const std::uint64_t iterations = env_or("ROOTSPAN_STRESS_ITERATIONS", 3000);
  const std::uint64_t seed = env_or("ROOTSPAN_STRESS_SEED", std::random_device{}());
  std::cout << "stress: " << threads << " threads x " << iterations << " iterations, ROOTSPAN_STRESS_SEED=" << seed
            << std::endl;
  RecordProperty("seed", std::to_string(seed));
  ASSERT_GT(threads, 0);
  add(test_provider_entry);
  add(device_sim_entry);
  const std::filesystem::path checkpoint = write_checkpoint();

  Totals totals;
  std::vector<Slot> slots(6);
  std::mt19937_64 setup(seed);
  for (Slot &slot : slots) slot.root = make_root(setup, totals, &slot.length);
  ASSERT_EQ(totals.violations.load(), 0) << totals.first;

  const auto started = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937_64 rng(seed + 0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(t + 1));
      for (std::uint64_t i = 0; i < iterations; ++i) {
        ++totals.steps;
        Slot &slot = slots[rng() % slots.size()];
        const unsigned op = rng() % 16;
        if (op < 11) {
          std::shared_lock use(slot.use);
          if (slot.root != nullptr) session(rng, slot, totals);
        } else if (op < 13) {
          std::unique_lock use(slot.use, std::try_to_lock);
          if (use.owns_lock()) replace(rng, slot, totals);
        } else if (op < 14) {
          add_named(rng, totals);
        } else {
          load_and_free(rng, checkpoint.string(), totals);
        }
      }
    });
  }
  for (std::thread &w : workers) w.join();
  const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << "stress: " << totals.steps << " steps in " << seconds << " s: " << totals.claims << " claims ("
            << totals.conflicts << " conflicts), " << totals.mappings << " mappings, " << totals.replaced
            << " roots replaced, " << totals.loads << " loads" << std::endl;
  EXPECT_EQ(totals.violations.load(), 0) << totals.first << " (ROOTSPAN_STRESS_SEED=" << seed << ")";
  EXPECT_EQ(totals.steps.load(), static_cast<std::uint64_t>(threads) * iterations);
  EXPECT_GT(totals.claims.load(), 0u);

  // Every root the pool still holds is released once; nothing else is live.
  for (Slot &slot : slots) {
    if (slot.root != nullptr) release(slot.root);
  }
  EXPECT_EQ(destroy_context(), 0u) << "roots left live after the pool was released";
  EXPECT_EQ(totals.deleted.load(), totals.imported.load()) << "an import's deleter did not run exactly once";
  std::error_code ignored;
  std::filesystem::remove_all(checkpoint.parent_path(), ignored);
  // CoreTest::TearDown checks that every test-provider allocation was released exactly once.
}

}  // namespace
