// The struct_size contract of every versioned struct of the public headers,
// through the C API functions that take or fill it, over the shared library:
// every size from 0 to past the newest is tried. A size is accepted when it is
// the end of a published version, that end rounded up to the struct's
// alignment (its sizeof), or at least the newest size (bytes past the newest
// are garbage and never read); any other size is refused with
// ROOTSPAN_ERR_INVALID_ARGUMENT naming the struct and the expected and actual
// sizes, and nothing is written. An output struct is never written past the
// fields of the version its size names; a refused host import never calls the
// deleter.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "rootspan/rootspan.h"
#include "rootspan/weights.h"

namespace {

constexpr unsigned char kGarbage = 0xA5;    // input bytes past the caller's size
constexpr unsigned char kUntouched = 0x5A;  // output bytes before the call
constexpr std::size_t kPastNewest = 64;     // bytes tried past the newest size
constexpr std::size_t kBuffer = 512;

// What one call returned: its status and, for functions with an error out
// parameter, the error's cause.
struct Outcome {
  rootspan_status status = ROOTSPAN_OK;
  bool has_error_out = false;
  std::string cause;
};

// One versioned struct and the call that takes or fills it.
struct Contract {
  const char *name;
  std::size_t newest;
  std::vector<std::size_t> published;  // the end of each version's last field, oldest first
  std::size_t alignment;
  bool output;
  std::function<void(void *)> fill;  // a valid newest struct (inputs)
  std::function<Outcome(void *)> call;
  rootspan_status accepted_status = ROOTSPAN_OK;
};

std::size_t round_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }

// The end of the fields a size names, or 0 when it names no version.
std::size_t known_end(const Contract &c, std::size_t size) {
  if (size >= c.newest) return c.newest;
  for (std::size_t end : c.published) {
    if (size == end || size == round_up(end, c.alignment)) return end;
  }
  return 0;
}

std::string case_kind(const Contract &c, std::size_t size) {
  if (size == 0) return "0";
  if (size == 1) return "1";
  // Below the first version a size ends inside a field or at the end of one
  // that the version's last field follows: refused either way.
  if (size < c.published.front()) return "below first version";
  if (size == c.newest) return "newest";
  for (std::size_t end : c.published) {
    if (size == end) return "older version end";
    if (size == round_up(end, c.alignment)) return end == c.newest ? "newest sizeof" : "older version sizeof";
  }
  if (size > c.newest) return "past newest, garbage after";
  return "between versions";
}

class Error {
 public:
  Error() = default;
  Error(const Error &) = delete;
  Error &operator=(const Error &) = delete;
  ~Error() { rootspan_error_free(e_); }
  rootspan_error **out() {
    rootspan_error_free(e_);
    e_ = nullptr;
    return &e_;
  }
  rootspan_error *get() const { return e_; }
  Outcome outcome(rootspan_status s) const { return {s, true, e_ == nullptr ? "" : rootspan_error_cause(e_)}; }

 private:
  rootspan_error *e_ = nullptr;
};

Outcome plain(rootspan_status s) { return {s, false, ""}; }

template <class T>
T &as(void *p) {
  return *static_cast<T *>(p);
}

std::string checkpoint_path() {
  const char *p = std::getenv("ROOTSPAN_EXAMPLE_CHECKPOINT");
  return p == nullptr ? "" : p;
}

class StructSizeContract : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(checkpoint_path().empty()) << "ROOTSPAN_EXAMPLE_CHECKPOINT is not set";
    Error e;
    ASSERT_EQ(rootspan_context_create(nullptr, &context_, e.out()), ROOTSPAN_OK);
    rootspan_allocate_options o{};
    o.struct_size = ROOTSPAN_ALLOCATE_OPTIONS_STRUCT_SIZE;
    o.provider = "host";
    o.byte_length = 64;
    o.alignment = 64;
    ASSERT_EQ(rootspan_root_allocate(context_, &o, &root_, e.out()), ROOTSPAN_OK);
    ASSERT_EQ(rootspan_claim_acquire(root_, 0, 64, ROOTSPAN_CLAIM_EXCLUSIVE, &claim_, e.out()), ROOTSPAN_OK);
    // Any error carries a requested description; this one names the root.
    ASSERT_EQ(rootspan_span_derive(root_, 0, 1024, &span_, failed_.out()), ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT);
    rootspan_load_options lo{};
    lo.struct_size = ROOTSPAN_LOAD_OPTIONS_STRUCT_SIZE;
    lo.provider = "host";
    ASSERT_EQ(rootspan_weights_load(context_, checkpoint_path().c_str(), &lo, &weights_, e.out()), ROOTSPAN_OK)
        << (e.get() ? rootspan_error_message(e.get()) : "");
  }
  void TearDown() override {
    if (weights_ != nullptr) rootspan_weights_free(weights_, nullptr);
    if (claim_ != nullptr) rootspan_claim_release(claim_, nullptr);
    if (root_ != nullptr) rootspan_root_release(root_, nullptr);
    if (context_ != nullptr) rootspan_context_destroy(context_, nullptr);
  }

  std::vector<Contract> contracts();

  rootspan_context *context_ = nullptr;
  rootspan_root *root_ = nullptr;
  rootspan_claim *claim_ = nullptr;
  rootspan_weights *weights_ = nullptr;
  rootspan_span span_{ROOTSPAN_SPAN_STRUCT_SIZE, 0, 0, 0, 0};
  Error failed_;
  int deleted_ = 0;
};

#define STRUCT(type, NAME) #type, ROOTSPAN_##NAME##_STRUCT_SIZE
#define END(type, field) ROOTSPAN_STRUCT_END(type, field)

std::vector<Contract> StructSizeContract::contracts() {
  alignas(64) static unsigned char imported[64];
  rootspan_root_info info{};
  info.struct_size = ROOTSPAN_ROOT_INFO_STRUCT_SIZE;
  rootspan_root_get_info(root_, &info);
  const rootspan_key key = info.key;
  const std::string path = checkpoint_path();
  return {
      {STRUCT(rootspan_context_options, CONTEXT_OPTIONS),
       {END(rootspan_context_options, discover_manifests)},
       alignof(rootspan_context_options),
       false,
       [](void *p) {
         as<rootspan_context_options>(p) = {ROOTSPAN_CONTEXT_OPTIONS_STRUCT_SIZE, 0, nullptr, 0, 0};
       },
       [](void *p) {
         Error e;
         rootspan_context *c = nullptr;
         const Outcome o = e.outcome(rootspan_context_create(&as<rootspan_context_options>(p), &c, e.out()));
         if (c != nullptr) rootspan_context_destroy(c, nullptr);
         return o;
       }},
      {STRUCT(rootspan_allocate_options, ALLOCATE_OPTIONS),
       {END(rootspan_allocate_options, dtype)},
       alignof(rootspan_allocate_options),
       false,
       [](void *p) {
         rootspan_allocate_options o{};
         o.struct_size = ROOTSPAN_ALLOCATE_OPTIONS_STRUCT_SIZE;
         o.provider = "host";
         o.byte_length = 64;
         o.alignment = 64;
         as<rootspan_allocate_options>(p) = o;
       },
       [this](void *p) {
         Error e;
         rootspan_root *r = nullptr;
         const Outcome o = e.outcome(rootspan_root_allocate(context_, &as<rootspan_allocate_options>(p), &r, e.out()));
         if (r != nullptr) rootspan_root_release(r, nullptr);
         return o;
       }},
      {STRUCT(rootspan_host_import, HOST_IMPORT),
       {END(rootspan_host_import, deleter_context)},
       alignof(rootspan_host_import),
       false,
       [this](void *p) {
         rootspan_host_import i{};
         i.struct_size = ROOTSPAN_HOST_IMPORT_STRUCT_SIZE;
         i.provider = "host";
         i.data = imported;
         i.byte_length = sizeof imported;
         i.alignment = 64;
         i.deleter = [](void *counter, void *) { ++*static_cast<int *>(counter); };
         i.deleter_context = &deleted_;
         as<rootspan_host_import>(p) = i;
       },
       [this](void *p) {
         Error e;
         rootspan_root *r = nullptr;
         deleted_ = 0;
         const Outcome o = e.outcome(rootspan_root_import_host(context_, &as<rootspan_host_import>(p), &r, e.out()));
         if (o.status != ROOTSPAN_OK) {
           EXPECT_EQ(deleted_, 0) << "a refused import never calls the deleter";
         } else {
           rootspan_root_release(r, nullptr);
           EXPECT_EQ(deleted_, 1) << "an accepted import's deleter runs once, at release";
         }
         return o;
       }},
      {STRUCT(rootspan_device_access_request, DEVICE_ACCESS_REQUEST),
       {END(rootspan_device_access_request, strides)},
       alignof(rootspan_device_access_request),
       false,
       [key](void *p) {
         rootspan_device_access_request r{};
         r.struct_size = ROOTSPAN_DEVICE_ACCESS_REQUEST_STRUCT_SIZE;
         r.key = key;
         r.byte_length = 64;
         r.element_size = 1;
         as<rootspan_device_access_request>(p) = r;
       },
       [this](void *p) {
         Error e;
         rootspan_device_access a{};
         a.struct_size = ROOTSPAN_DEVICE_ACCESS_STRUCT_SIZE;
         const Outcome o =
             e.outcome(rootspan_device_access_prepare(claim_, &as<rootspan_device_access_request>(p), &a, e.out()));
         if (o.status == ROOTSPAN_OK) rootspan_device_access_release(claim_, &a);
         return o;
       },
       ROOTSPAN_ERR_UNSUPPORTED},
      {STRUCT(rootspan_load_options, LOAD_OPTIONS),
       {END(rootspan_load_options, progress_context), END(rootspan_load_options, revision),
        END(rootspan_load_options, split_rule_count), END(rootspan_load_options, staging_buffer_count),
        END(rootspan_load_options, copy_on_write), END(rootspan_load_options, digests_path),
        END(rootspan_load_options, populate), END(rootspan_load_options, source_digests),
        END(rootspan_load_options, ignore_unsigned_files), END(rootspan_load_options, populate_when_cold)},
       alignof(rootspan_load_options),
       false,
       [](void *p) {
         rootspan_load_options o{};
         o.struct_size = ROOTSPAN_LOAD_OPTIONS_STRUCT_SIZE;
         o.provider = "host";
         as<rootspan_load_options>(p) = o;
       },
       [this, path](void *p) {
         Error e;
         rootspan_weights *w = nullptr;
         const Outcome o =
             e.outcome(rootspan_weights_load(context_, path.c_str(), &as<rootspan_load_options>(p), &w, e.out()));
         if (w != nullptr) rootspan_weights_free(w, nullptr);
         return o;
       }},
      {STRUCT(rootspan_inspect_options, INSPECT_OPTIONS),
       {END(rootspan_inspect_options, revision)},
       alignof(rootspan_inspect_options),
       false,
       [](void *p) {
         as<rootspan_inspect_options>(p) = {ROOTSPAN_INSPECT_OPTIONS_STRUCT_SIZE, nullptr, nullptr};
       },
       [path](void *p) {
         Error e;
         char *json = nullptr;
         const Outcome o = e.outcome(
             rootspan_checkpoint_inspect_with_options(path.c_str(), &as<rootspan_inspect_options>(p), &json, e.out()));
         rootspan_string_free(json);
         return o;
       }},
      {STRUCT(rootspan_sign_options, SIGN_OPTIONS),
       {END(rootspan_sign_options, revision)},
       alignof(rootspan_sign_options),
       false,
       [](void *p) {
         rootspan_sign_options o{};
         o.struct_size = ROOTSPAN_SIGN_OPTIONS_STRUCT_SIZE;
         o.private_key_path = "/nonexistent/rootspan-test-key.pem";  // an accepted size fails reading it: Io
         as<rootspan_sign_options>(p) = o;
       },
       [path](void *p) {
         Error e;
         char *json = nullptr;
         const Outcome o = e.outcome(rootspan_model_sign(path.c_str(), &as<rootspan_sign_options>(p), &json, e.out()));
         rootspan_string_free(json);
         return o;
       },
       ROOTSPAN_ERR_IO},
      // Outputs: the library fills them.
      {STRUCT(rootspan_requested, REQUESTED),
       {END(rootspan_requested, length)},
       alignof(rootspan_requested),
       true,
       {},
       [this](void *p) { return plain(rootspan_error_requested(failed_.get(), &as<rootspan_requested>(p))); }},
      {STRUCT(rootspan_span, SPAN),
       {END(rootspan_span, alignment)},
       alignof(rootspan_span),
       true,
       {},
       [this](void *p) {
         Error e;
         return e.outcome(rootspan_span_derive(root_, 0, 8, &as<rootspan_span>(p), e.out()));
       }},
      {STRUCT(rootspan_provider_report, PROVIDER_REPORT),
       {END(rootspan_provider_report, code), END(rootspan_provider_report, note)},
       alignof(rootspan_provider_report),
       true,
       {},
       [this](void *p) { return plain(rootspan_provider_report_get(context_, 0, &as<rootspan_provider_report>(p))); }},
      {STRUCT(rootspan_root_info, ROOT_INFO),
       {END(rootspan_root_info, provider)},
       alignof(rootspan_root_info),
       true,
       {},
       [this](void *p) { return plain(rootspan_root_get_info(root_, &as<rootspan_root_info>(p))); }},
      {STRUCT(rootspan_device_info, DEVICE_INFO),
       {END(rootspan_device_info, free_memory_bytes)},
       alignof(rootspan_device_info),
       true,
       {},
       [this](void *p) {
         Error e;
         return e.outcome(rootspan_provider_device_info(context_, "host", 0, &as<rootspan_device_info>(p), e.out()));
       }},
      {STRUCT(rootspan_device_access, DEVICE_ACCESS),
       {END(rootspan_device_access, provider_token)},
       alignof(rootspan_device_access),
       true,
       {},
       [this, key](void *p) {
         Error e;
         rootspan_device_access_request r{};
         r.struct_size = ROOTSPAN_DEVICE_ACCESS_REQUEST_STRUCT_SIZE;
         r.key = key;
         r.byte_length = 64;
         r.element_size = 1;
         const Outcome o =
             e.outcome(rootspan_device_access_prepare(claim_, &r, &as<rootspan_device_access>(p), e.out()));
         if (o.status == ROOTSPAN_OK) rootspan_device_access_release(claim_, &as<rootspan_device_access>(p));
         return o;
       },
       ROOTSPAN_ERR_UNSUPPORTED},
      {STRUCT(rootspan_component_info, COMPONENT_INFO),
       {END(rootspan_component_info, zero_copy), END(rootspan_component_info, shape),
        END(rootspan_component_info, source_name), END(rootspan_component_info, gguf_type),
        END(rootspan_component_info, source_contiguous)},
       alignof(rootspan_component_info),
       true,
       {},
       [this](void *p) { return plain(rootspan_weights_component(weights_, 0, &as<rootspan_component_info>(p))); }},
  };
}

TEST_F(StructSizeContract, EverySizeOfEveryVersionedStruct) {
  std::map<std::string, std::map<std::string, int>> counts;
  for (const Contract &c : contracts()) {
    ASSERT_EQ(c.published.back(), c.newest) << c.name << ": the newest size is the last published one";
    for (std::size_t size = 0; size <= c.newest + kPastNewest; ++size) {
      SCOPED_TRACE(std::string(c.name) + " struct_size " + std::to_string(size) + " (" + case_kind(c, size) + ")");
      alignas(64) unsigned char buffer[kBuffer];
      ASSERT_LE(c.newest + kPastNewest, sizeof buffer);
      const std::size_t known = known_end(c, size);
      if (c.output) {
        std::memset(buffer, kUntouched, sizeof buffer);
      } else {
        // Garbage in every byte the callee must not read: past the fields of
        // the version the size names (inside the caller's struct when it is
        // newer or padded), or past the size when it is refused.
        std::memset(buffer, 0, sizeof buffer);
        c.fill(buffer);
        const std::size_t from = std::max(known != 0 ? known : size, sizeof(std::size_t));
        std::memset(buffer + from, kGarbage, sizeof buffer - from);
      }
      std::memcpy(buffer, &size, sizeof size);
      unsigned char before[kBuffer];
      std::memcpy(before, buffer, sizeof buffer);

      const Outcome o = c.call(buffer);
      ++counts[c.name][case_kind(c, size)];
      if (known != 0) {
        EXPECT_EQ(o.status, c.accepted_status) << rootspan_status_name(o.status) << " " << o.cause;
        // Nothing is written past the fields the caller's version has.
        const std::size_t from = std::max(known, sizeof(std::size_t));
        EXPECT_EQ(std::memcmp(buffer + from, before + from, sizeof buffer - from), 0)
            << "bytes past " << from << " were written";
        EXPECT_EQ(std::memcmp(buffer, before, sizeof(std::size_t)), 0) << "struct_size was changed";
        if (c.output && c.accepted_status == ROOTSPAN_OK && known > sizeof(std::size_t)) {
          EXPECT_NE(
              std::memcmp(buffer + sizeof(std::size_t), before + sizeof(std::size_t), known - sizeof(std::size_t)), 0)
              << "an accepted output struct was not filled";
        }
      } else {
        EXPECT_EQ(o.status, ROOTSPAN_ERR_INVALID_ARGUMENT) << rootspan_status_name(o.status) << " " << o.cause;
        EXPECT_EQ(std::memcmp(buffer, before, sizeof buffer), 0) << "a refused struct was written";
        if (o.has_error_out) {
          const std::string want =
              std::string(c.name) + ": expected " + std::to_string(c.newest) + ", actual " + std::to_string(size);
          EXPECT_NE(o.cause.find(want), std::string::npos) << o.cause;
        }
      }
    }
  }
  // The table of cases, for the record.
  for (const auto &[name, kinds] : counts) {
    std::string line = name + ":";
    for (const auto &[kind, n] : kinds) line += " " + kind + "=" + std::to_string(n);
    std::printf("%s\n", line.c_str());
  }
}

}  // namespace
