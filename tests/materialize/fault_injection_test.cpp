// Fault injection through rootspan_weights_load: a provider wrapper fails one
// kind of hook (allocate/import, map, copy, release) at its k-th call, for
// every k until a load runs clean, under both strategies and through the
// upload path. Every failed load must name the fault, leave no root, release
// every allocation exactly once and unmap every mapping.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/c_api_support.hpp"  // rootspan_context -> Context, for live_roots()
#include "core/loader/static_providers.hpp"
#include "materialize_support.hpp"
#include "tests/support/upload_provider.hpp"

namespace rootspan::testing {
namespace {

enum class Hook { kAllocate, kMap, kCopy, kRelease };
constexpr std::array kHooks = {Hook::kAllocate, Hook::kMap, Hook::kCopy, Hook::kRelease};
const char *hook_name(Hook h) {
  switch (h) {
    case Hook::kAllocate:
      return "allocate";
    case Hook::kMap:
      return "map";
    case Hook::kCopy:
      return "copy";
    case Hook::kRelease:
      return "release";
  }
  return "?";
}

// The wrapper's state: one wrapped provider per context at a time.
struct FaultState {
  const rootspan_provider_table *inner = nullptr;
  const rootspan_core_services *services = nullptr;
  Hook fail_hook = Hook::kAllocate;
  int fail_at = 0;  // the k-th call of fail_hook fails; 0: never
  std::array<int, 4> calls{};
  int injected = 0;
  rootspan_status injected_status = ROOTSPAN_OK;           // what the last injected fault returned
  std::mutex mutex;                                        // guards live and mappings
  std::set<std::pair<std::uint64_t, std::uint64_t>> live;  // (domain, local) of allocations not yet released
  int double_release = 0;
  int live_mappings = 0;
};

FaultState &fault() {
  static FaultState *s = new FaultState();  // never destroyed: hooks may run at exit
  return *s;
}

void fault_reset(Hook hook, int at) {
  FaultState &s = fault();
  std::lock_guard lock(s.mutex);
  s.fail_hook = hook;
  s.fail_at = at;
  s.calls = {};
  s.injected = 0;
  s.injected_status = ROOTSPAN_OK;
  s.live.clear();
  s.double_release = 0;
  s.live_mappings = 0;
}

// Counts a call of `hook`; true when this call is the one to fail.
bool should_fail(Hook hook) {
  FaultState &s = fault();
  std::lock_guard lock(s.mutex);
  const int call = ++s.calls[static_cast<int>(hook)];
  if (s.fail_hook != hook || call != s.fail_at) return false;
  ++s.injected;
  return true;
}

rootspan_status inject(rootspan_provider_message *message, rootspan_status status, Hook hook) {
  std::snprintf(message->data, message->capacity, "injected fault: %s call #%d", hook_name(hook), fault().fail_at);
  fault().injected_status = status;
  return status;
}

void track_allocation(const rootspan_provider_allocation *a) {
  std::lock_guard lock(fault().mutex);
  fault().live.insert({a->key.domain, a->key.local});
}

rootspan_status f_init(const rootspan_core_services *services, const char *options,
                       rootspan_provider_instance **instance, rootspan_provider_message *message) {
  fault().services = services;
  return fault().inner->init(services, options, instance, message);
}
void f_shutdown(rootspan_provider_instance *i) { fault().inner->shutdown(i); }
rootspan_status f_device_count(rootspan_provider_instance *i, std::uint32_t *n, rootspan_provider_message *m) {
  return fault().inner->device_count(i, n, m);
}
rootspan_status f_device_info(rootspan_provider_instance *i, std::uint32_t o, rootspan_device_info *info,
                              rootspan_provider_message *m) {
  return fault().inner->device_info(i, o, info, m);
}
rootspan_status f_allocate(rootspan_provider_instance *i, const rootspan_allocation_request *r,
                           rootspan_provider_allocation *a, rootspan_provider_message *m) {
  if (should_fail(Hook::kAllocate)) return inject(m, ROOTSPAN_ERR_OUT_OF_MEMORY, Hook::kAllocate);
  const rootspan_status status = fault().inner->allocate(i, r, a, m);
  if (status == ROOTSPAN_OK) track_allocation(a);
  return status;
}
rootspan_status f_import(rootspan_provider_instance *i, const rootspan_host_memory *memory,
                         rootspan_provider_allocation *a, rootspan_provider_message *m) {
  // An import makes an allocation: it counts as an allocate call. On failure
  // the provider has taken nothing (the core calls the deleter).
  if (should_fail(Hook::kAllocate)) return inject(m, ROOTSPAN_ERR_PROVIDER_FAILURE, Hook::kAllocate);
  const rootspan_status status = fault().inner->import_host_memory(i, memory, a, m);
  if (status == ROOTSPAN_OK) track_allocation(a);
  return status;
}
void f_release(rootspan_provider_instance *i, const rootspan_provider_allocation *a) {
  FaultState &s = fault();
  {
    std::lock_guard lock(s.mutex);
    if (s.live.erase({a->key.domain, a->key.local}) == 0) ++s.double_release;
  }
  // release returns nothing: a provider that fails to free reports it through
  // the core's log, and the allocation is gone for the core all the same.
  fault().inner->release(i, a);
  if (should_fail(Hook::kRelease)) {
    char line[96];
    std::snprintf(line, sizeof line, "injected fault: release call #%d", s.fail_at);
    s.services->log(s.services->log_context, ROOTSPAN_LOG_ERROR, line);
  }
}
rootspan_status f_map(bool write, rootspan_provider_instance *i, const rootspan_provider_allocation *a,
                      std::uint64_t offset, std::uint64_t length, rootspan_provider_mapping *mapping,
                      rootspan_provider_message *m) {
  if (should_fail(Hook::kMap)) return inject(m, ROOTSPAN_ERR_PROVIDER_FAILURE, Hook::kMap);
  const auto hook = write ? fault().inner->map_write : fault().inner->map_read;
  const rootspan_status status = hook(i, a, offset, length, mapping, m);
  if (status == ROOTSPAN_OK) {
    std::lock_guard lock(fault().mutex);
    ++fault().live_mappings;
  }
  return status;
}
rootspan_status f_map_read(rootspan_provider_instance *i, const rootspan_provider_allocation *a, std::uint64_t o,
                           std::uint64_t n, rootspan_provider_mapping *mp, rootspan_provider_message *m) {
  return f_map(false, i, a, o, n, mp, m);
}
rootspan_status f_map_write(rootspan_provider_instance *i, const rootspan_provider_allocation *a, std::uint64_t o,
                            std::uint64_t n, rootspan_provider_mapping *mp, rootspan_provider_message *m) {
  return f_map(true, i, a, o, n, mp, m);
}
void f_unmap(rootspan_provider_instance *i, const rootspan_provider_allocation *a,
             const rootspan_provider_mapping *mp) {
  {
    std::lock_guard lock(fault().mutex);
    --fault().live_mappings;
  }
  fault().inner->unmap(i, a, mp);
}
rootspan_status f_copy_from(rootspan_provider_instance *i, const rootspan_provider_allocation *a, std::uint64_t o,
                            const void *src, std::uint64_t n, rootspan_provider_event **e,
                            rootspan_provider_message *m) {
  if (e != nullptr) *e = nullptr;
  if (should_fail(Hook::kCopy)) return inject(m, ROOTSPAN_ERR_PROVIDER_FAILURE, Hook::kCopy);
  return fault().inner->copy_from_host(i, a, o, src, n, e, m);
}
rootspan_status f_copy_to(rootspan_provider_instance *i, const rootspan_provider_allocation *a, std::uint64_t o,
                          void *dst, std::uint64_t n, rootspan_provider_event **e, rootspan_provider_message *m) {
  if (e != nullptr) *e = nullptr;
  if (should_fail(Hook::kCopy)) return inject(m, ROOTSPAN_ERR_PROVIDER_FAILURE, Hook::kCopy);
  return fault().inner->copy_to_host(i, a, o, dst, n, e, m);
}

// The wrapper's table: the inner provider's hooks, each present only where the
// inner one has it, under the name "faulty".
const rootspan_provider_table *wrap(const rootspan_provider_table *inner) {
  fault().inner = inner;
  static rootspan_provider_table t;
  t = rootspan_provider_table{};
  t.struct_size = sizeof t;
  t.abi_major = ROOTSPAN_PROVIDER_ABI_MAJOR;
  t.abi_minor = ROOTSPAN_PROVIDER_ABI_MINOR;
  t.name = "faulty";
  t.kind = inner->kind;
  t.init = f_init;
  t.shutdown = f_shutdown;
  t.device_count = f_device_count;
  t.device_info = f_device_info;
  t.allocate = f_allocate;
  t.release = f_release;
  if (inner->map_read != nullptr) t.map_read = f_map_read;
  if (inner->map_write != nullptr) t.map_write = f_map_write;
  if (inner->unmap != nullptr) t.unmap = f_unmap;
  if (inner->copy_from_host != nullptr) t.copy_from_host = f_copy_from;
  if (inner->copy_to_host != nullptr) t.copy_to_host = f_copy_to;
  if (inner->import_host_memory != nullptr) t.import_host_memory = f_import;
  return &t;
}

const rootspan_provider_table *faulty_host_entry(std::uint32_t major, std::uint32_t minor) {
  for (rootspan_provider_entry_fn entry : rootspan::static_provider_entries()) {
    const rootspan_provider_table *table = entry(major, minor);
    if (table != nullptr && std::string(table->name) == "host") return wrap(table);
  }
  return nullptr;
}
const rootspan_provider_table *faulty_upload_entry(std::uint32_t major, std::uint32_t minor) {
  return wrap(upload_entry(major, minor));
}

struct Path {
  const char *label;
  rootspan_provider_entry_fn entry;
  rootspan_load_strategy strategy;
  std::array<bool, 4> applies;  // which hook kinds this path calls during a load and free
};

// 12 components over two shards: shard a's data is 64-byte aligned (its
// single-source components are zero-copy under mmap), shard b's starts 2 bytes
// off, misaligned for F32 (its components are copied), and two packed
// components take one source from each shard.
TEST(FaultInjection, EveryFaultOfEveryHookFailsCleanly) {
  TempDir dir;
  std::vector<TensorSpec> a_tensors, b_tensors;
  for (int i = 0; i < 8; ++i) a_tensors.push_back({"a" + std::to_string(i), "F32", {16}});
  for (int i = 0; i < 6; ++i) b_tensors.push_back({"b" + std::to_string(i), "F32", {16}});
  const WrittenFile a = write_safetensors(dir, "a.safetensors", a_tensors, 1, 64, 0);
  const WrittenFile b = write_safetensors(dir, "b.safetensors", b_tensors, 2, 64, 2);
  write_index(dir, {{"a.safetensors", &a}, {"b.safetensors", &b}});
  std::vector<std::string> components;
  for (int i = 0; i < 6; ++i)
    components.push_back(dense_component("ca" + std::to_string(i), "values", {"a" + std::to_string(i)}, {16}, "F32"));
  for (int i = 0; i < 4; ++i)
    components.push_back(dense_component("cb" + std::to_string(i), "values", {"b" + std::to_string(i)}, {16}, "F32"));
  components.push_back(dense_component("p0", "packed_values", {"a6", "b4"}, {2, 16}, "F32"));
  components.push_back(dense_component("p1", "packed_values", {"b5", "a7"}, {2, 16}, "F32"));
  const fs::path schema = dir.write_text("schema.json", schema_json(components));

  const std::array<Path, 4> paths = {{
      {"host/mmap", faulty_host_entry, ROOTSPAN_LOAD_MMAP, {true, true, false, true}},
      {"host/read", faulty_host_entry, ROOTSPAN_LOAD_READ, {true, true, false, true}},
      {"upload/mmap", faulty_upload_entry, ROOTSPAN_LOAD_MMAP, {true, false, true, true}},
      {"upload/read", faulty_upload_entry, ROOTSPAN_LOAD_READ, {true, false, true, true}},
  }};
  for (const Path &path : paths) {
    std::array<int, 4> faults{};
    for (Hook hook : kHooks) {
      const int h = static_cast<int>(hook);
      for (int k = 1;; ++k) {
        SCOPED_TRACE(std::string(path.label) + " " + hook_name(hook) + " k=" + std::to_string(k));
        ASSERT_LT(k, 1000) << "no clean load after 1000 faults";
        upload_reset();
        fault_reset(hook, k);
        rootspan_context *context = nullptr;
        rootspan_error *raw = nullptr;
        ASSERT_EQ(rootspan_context_create(nullptr, &context, &raw), ROOTSPAN_OK) << describe(raw);
        ASSERT_EQ(rootspan_context_add_provider(context, path.entry, nullptr, &raw), ROOTSPAN_OK) << describe(raw);

        rootspan_load_options o{};
        o.struct_size = sizeof o;
        o.schema_path = schema.c_str();
        o.provider = "faulty";
        o.strategy = path.strategy;
        rootspan_weights *weights = nullptr;
        ::testing::internal::CaptureStderr();
        const rootspan_status status = rootspan_weights_load(context, dir.path().c_str(), &o, &weights, &raw);
        ErrorPtr error(raw);
        const int injected_in_load = fault().injected;
        if (status == ROOTSPAN_OK) {
          std::size_t n = 0;
          EXPECT_EQ(rootspan_weights_component_count(weights, &n), ROOTSPAN_OK);
          EXPECT_EQ(n, 12u);
          raw = nullptr;
          // Releasing cannot fail: a release fault is only logged.
          EXPECT_EQ(rootspan_weights_free(weights, &raw), ROOTSPAN_OK) << describe(raw);
          rootspan_error_free(raw);
        }
        const std::string log = ::testing::internal::GetCapturedStderr();
        EXPECT_EQ(context->context->live_roots(), 0u);
        std::uint64_t live = 0;
        EXPECT_EQ(rootspan_context_destroy(context, &live), ROOTSPAN_OK);
        EXPECT_EQ(live, 0u);
        {
          std::lock_guard lock(fault().mutex);
          EXPECT_TRUE(fault().live.empty()) << fault().live.size() << " allocations never released";
          EXPECT_EQ(fault().double_release, 0);
          EXPECT_EQ(fault().live_mappings, 0) << "mappings never unmapped";
        }
        EXPECT_EQ(upload_live_blocks(), 0);
        EXPECT_EQ(upload_counters().double_release.load(), 0);

        const bool hit = fault().injected > 0;
        faults[h] += fault().injected;
        if (hook == Hook::kRelease) {
          if (hit) {
            EXPECT_NE(log.find("provider faulty: injected fault: release call #" + std::to_string(k)),
                      std::string::npos)
                << log;
          }
          if (status != ROOTSPAN_OK) {
            // A release fault inside a failed load cannot be the cause.
            ADD_FAILURE() << "load failed under a release fault: " << describe(error.get());
          }
        } else if (injected_in_load > 0) {
          ASSERT_NE(status, ROOTSPAN_OK) << "a " << hook_name(hook) << " fault was swallowed";
          EXPECT_EQ(weights, nullptr);
          EXPECT_TRUE(status == ROOTSPAN_ERR_PROVIDER_FAILURE || status == fault().injected_status)
              << describe(error.get());
          const std::string message = rootspan_error_message(error.get());
          EXPECT_NE(message.find("provider 'faulty'"), std::string::npos) << message;
          EXPECT_NE(message.find(std::string("injected fault: ") + hook_name(hook) + " call #" + std::to_string(k)),
                    std::string::npos)
              << message;
        } else {
          EXPECT_EQ(status, ROOTSPAN_OK) << describe(error.get());
        }
        if (!hit) break;                           // k passed the last call of this hook: the load ran clean
        if (::testing::Test::HasFailure()) break;  // one failing k is enough to report
      }
      EXPECT_EQ(faults[h] > 0, path.applies[h]) << path.label << ": " << hook_name(hook) << " faults " << faults[h];
    }
    std::printf("fault injection %s: allocate %d, map %d, copy %d, release %d faults injected\n", path.label, faults[0],
                faults[1], faults[2], faults[3]);
  }
}

}  // namespace
}  // namespace rootspan::testing
