// The services struct a provider gets at init stays valid until its shutdown
// returns (provider.h): a provider that keeps the pointer and logs from a
// later hook must reach the core's log, even after the stack the init call
// ran on has been reused.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "rootspan/rootspan.h"

namespace {

const rootspan_core_services *g_kept = nullptr;
bool g_kept_was_intact = false;

rootspan_status keeper_init(const rootspan_core_services *services, const char *, rootspan_provider_instance **,
                            rootspan_provider_message *) {
  g_kept = services;
  return ROOTSPAN_OK;
}
void keeper_shutdown(rootspan_provider_instance *) { g_kept = nullptr; }
rootspan_status keeper_device_count(rootspan_provider_instance *, std::uint32_t *count, rootspan_provider_message *) {
  *count = 1;
  return ROOTSPAN_OK;
}
rootspan_status keeper_device_info(rootspan_provider_instance *, std::uint32_t, rootspan_device_info *,
                                   rootspan_provider_message *) {
  return ROOTSPAN_OK;
}
// Logs through the kept services, then refuses: the test looks at the log.
rootspan_status keeper_allocate(rootspan_provider_instance *, const rootspan_allocation_request *,
                                rootspan_provider_allocation *, rootspan_provider_message *message) {
  g_kept_was_intact = g_kept != nullptr && g_kept->struct_size == sizeof(rootspan_core_services) &&
                      g_kept->core_abi_major == ROOTSPAN_PROVIDER_ABI_MAJOR && g_kept->log != nullptr;
  if (!g_kept_was_intact) {
    std::snprintf(message->data, message->capacity, "the kept services struct was overwritten");
    return ROOTSPAN_ERR_PROVIDER_FAILURE;
  }
  g_kept->log(g_kept->log_context, ROOTSPAN_LOG_WARN, "logged from allocate through the kept services");
  std::snprintf(message->data, message->capacity, "this provider allocates nothing");
  return ROOTSPAN_ERR_UNSUPPORTED;
}
void keeper_release(rootspan_provider_instance *, const rootspan_provider_allocation *) {}

const rootspan_provider_table *keeper_entry(std::uint32_t, std::uint32_t) {
  static const rootspan_provider_table table = [] {
    rootspan_provider_table t{};
    t.struct_size = ROOTSPAN_PROVIDER_TABLE_STRUCT_SIZE;
    t.abi_major = ROOTSPAN_PROVIDER_ABI_MAJOR;
    t.abi_minor = ROOTSPAN_PROVIDER_ABI_MINOR;
    t.name = "keeper";
    t.kind = "test";
    t.init = keeper_init;
    t.shutdown = keeper_shutdown;
    t.device_count = keeper_device_count;
    t.device_info = keeper_device_info;
    t.allocate = keeper_allocate;
    t.release = keeper_release;
    return t;
  }();
  return &table;
}

// Overwrites the stack below the caller, where the init call's frames were.
__attribute__((noinline)) void scribble_stack() {
  volatile unsigned char junk[64 * 1024];
  for (std::size_t i = 0; i < sizeof junk; ++i) junk[i] = 0xA5;
}

TEST(ServicesLifetime, AProviderKeepsItsServicesAndLogsFromALaterHook) {
  rootspan_context *context = nullptr;
  ASSERT_EQ(rootspan_context_create(nullptr, &context, nullptr), ROOTSPAN_OK);
  ASSERT_EQ(rootspan_context_add_provider(context, keeper_entry, nullptr, nullptr), ROOTSPAN_OK);
  ASSERT_NE(g_kept, nullptr);
  scribble_stack();

  rootspan_allocate_options options{};
  options.struct_size = ROOTSPAN_ALLOCATE_OPTIONS_STRUCT_SIZE;
  options.provider = "keeper";
  options.byte_length = 64;
  rootspan_root *root = nullptr;
  rootspan_error *error = nullptr;
  testing::internal::CaptureStderr();
  const rootspan_status status = rootspan_root_allocate(context, &options, &root, &error);
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(g_kept_was_intact) << rootspan_error_message(error);
  EXPECT_EQ(status, ROOTSPAN_ERR_UNSUPPORTED) << rootspan_error_message(error);
  EXPECT_NE(log.find("rootspan: provider keeper: logged from allocate through the kept services"), std::string::npos)
      << "stderr was: " << log;
  rootspan_error_free(error);
  EXPECT_EQ(rootspan_context_destroy(context, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(g_kept, nullptr) << "shutdown was not called";
}

}  // namespace
