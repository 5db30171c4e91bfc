// libFuzzer target for the C API itself (docs/troubleshooting.md): the input
// bytes are decoded into a sequence of calls through the public headers only
// (contexts, providers, roots, claims, splits, mappings, device access,
// copies, weights loads of small generated files), with random arguments,
// random struct_size values and NULLs, over the in-process test providers of
// the core suites, which the input makes misbehave on chosen calls (failing,
// throwing, reporting bogus extents or mappings). After every call the
// harness checks what the API promises and traps with a message when one
// breaks:
// - a failing call returns a valid status, and its error (when asked for)
//   carries the same code and a non-empty message and operation; a call
//   that succeeds leaves the error slot NULL;
// - a NULL handle, or a struct_size that names no published version of its
//   struct, is refused with InvalidArgument;
// - no two conflicting claims are granted on one root (tracked here), a
//   refused claim conflicts with one the harness knows, split children are
//   disjoint and inside their parent;
// - release of a claim or root with nothing attached succeeds, and with
//   something attached answers Busy;
// - the test providers' live allocations equal the live roots made from them,
//   nothing is released twice, and after context destroy nothing is left;
//   an import's deleter runs at most once, and exactly once when it must.
// Seed corpus: tests/fuzz/corpus/c_api/ (tests/fuzz/make_c_api_corpus.py).
#include <fuzzer/FuzzedDataProvider.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "rootspan/rootspan.h"
#include "rootspan/weights.h"
#include "tests/support/embedded_providers.hpp"
#include "tests/support/test_providers.hpp"

namespace {

[[noreturn]] void broken(const char *what, const std::string &detail = "") {
  std::fprintf(stderr, "fuzz_c_api: invariant broken: %s%s%s\n", what, detail.empty() ? "" : ": ", detail.c_str());
  std::fflush(stderr);
  __builtin_trap();
}

#define CHECK(condition, ...)              \
  do {                                     \
    if (!(condition)) broken(__VA_ARGS__); \
  } while (0)

std::string s(std::uint64_t v) { return std::to_string(v); }

// ROOTSPAN_FUZZ_TRACE=1 prints every call the harness makes (to replay a crash).
bool g_trace = false;
#define TRACE(...)                                       \
  do {                                                   \
    if (g_trace) std::fprintf(stderr, "  " __VA_ARGS__); \
  } while (0)

// ---- generated checkpoint files ------------------------------------------------

std::filesystem::path g_dir;
std::vector<std::string> g_paths;  // checkpoints, good and broken, plus paths that are no file

void write_file(const std::filesystem::path &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) broken("cannot write a generated checkpoint", path.string());
}

// A safetensors file: 8-byte little-endian header length, the JSON header
// padded with spaces to `pad`, then the data.
std::string safetensors(std::string header, const std::string &data, std::size_t pad = 8) {
  while (header.size() % pad != 0) header += ' ';
  std::string out(8, '\0');
  std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string bytes_of(std::size_t n, unsigned char seed) {
  std::string b(n, '\0');
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<char>(seed + i * 7);
  return b;
}

void remove_generated() {
  std::error_code ignored;
  if (!g_dir.empty()) std::filesystem::remove_all(g_dir, ignored);
}

void generate_checkpoints() {
  char pattern[] = "/tmp/rootspan-fuzz-c-api-XXXXXX";
  if (mkdtemp(pattern) == nullptr) broken("mkdtemp failed");
  g_dir = pattern;
  std::atexit(remove_generated);
  auto add = [](const char *name, const std::string &bytes) {
    write_file(g_dir / name, bytes);
    g_paths.push_back((g_dir / name).string());
  };
  // Valid: one tensor; three tensors of different types; a file whose data
  // offsets are not aligned (copied, never zero-copy); a scalar and an empty tensor.
  add("one.safetensors", safetensors(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})", bytes_of(16, 1)));
  add("three.safetensors",
      safetensors(R"({"__metadata__":{"format":"pt"},"a":{"dtype":"U8","shape":[5],"data_offsets":[0,5]},)"
                  R"("b":{"dtype":"BF16","shape":[3],"data_offsets":[5,11]},)"
                  R"("c":{"dtype":"I64","shape":[1],"data_offsets":[11,19]}})",
                  bytes_of(19, 3)));
  add("odd-header.safetensors",
      safetensors(R"({"x":{"dtype":"F16","shape":[3],"data_offsets":[0,6]}})", bytes_of(6, 5), 3));
  add("scalar.safetensors",
      safetensors(R"({"s":{"dtype":"F64","shape":[],"data_offsets":[0,8]},"e":{"dtype":"F32","shape":[0],)"
                  R"("data_offsets":[8,8]}})",
                  bytes_of(8, 9)));
  // Slightly broken: truncated data, a header longer than the file, a header
  // that is not JSON, an overlap, a wrong size for the shape, an empty file.
  add("truncated.safetensors",
      safetensors(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", bytes_of(9, 1)));
  {
    std::string long_header = safetensors(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", "x");
    long_header[0] = static_cast<char>(0x7f);
    add("header-too-long.safetensors", long_header);
  }
  add("not-json.safetensors", safetensors("{not json", bytes_of(4, 2)));
  add("overlap.safetensors", safetensors(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                                         R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})",
                                         bytes_of(6, 4)));
  add("wrong-size.safetensors",
      safetensors(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", bytes_of(8, 6)));
  add("empty.safetensors", "");
  // Nothing to load: no tensors, only metadata, only empty tensors.
  add("no-tensors.safetensors", safetensors("{}", ""));
  add("metadata-only.safetensors", safetensors(R"({"__metadata__":{"format":"pt"}})", ""));
  add("empty-tensors.safetensors", safetensors(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},)"
                                               R"("b":{"dtype":"BF16","shape":[2,0],"data_offsets":[0,0]}})",
                                               ""));
  // A digest manifest that names one.safetensors with a wrong digest, and
  // one that is not a manifest.
  write_file(g_dir / "wrong.digests.json",
             R"({"format_version":1,"algorithm":"sha256","files":{"one.safetensors":{"bytes":104,"sha256":")" +
                 std::string(64, '0') + R"("}}})");
  write_file(g_dir / "broken.digests.json", "{");
  // No file at all, and a folder without an index.
  g_paths.push_back((g_dir / "missing.safetensors").string());
  std::filesystem::create_directory(g_dir / "folder");
  g_paths.push_back((g_dir / "folder").string());
}

// ---- checked calls -------------------------------------------------------------

bool valid_status(rootspan_status status) { return status >= ROOTSPAN_OK && status <= ROOTSPAN_ERR_DIGEST_MISMATCH; }

// An error slot the input may or may not pass.
struct ErrorSlot {
  rootspan_error *error = nullptr;
  bool passed = false;
  rootspan_error **out() {
    error = nullptr;
    return passed ? &error : nullptr;
  }
};

// Checks the status and error of a call that takes an error slot, then frees the error.
rootspan_status checked(const char *call, rootspan_status status, ErrorSlot &slot) {
  TRACE("%s -> %s%s%s\n", call, rootspan_status_name(status), slot.error != nullptr ? ": " : "",
        slot.error != nullptr ? rootspan_error_message(slot.error) : "");
  CHECK(valid_status(status), call, "returned status " + s(static_cast<std::uint64_t>(status)) + ", not a status");
  if (status == ROOTSPAN_OK) {
    CHECK(slot.error == nullptr, call, "succeeded but wrote an error");
    return status;
  }
  if (slot.passed) {
    CHECK(slot.error != nullptr, call,
          std::string("failed with ") + rootspan_status_name(status) + " but gave no error");
    CHECK(rootspan_error_code(slot.error) == status, call, "its error's code differs from its status");
    const char *message = rootspan_error_message(slot.error);
    const char *operation = rootspan_error_operation(slot.error);
    CHECK(message != nullptr && message[0] != '\0', call, "its error has an empty message");
    CHECK(operation != nullptr && operation[0] != '\0', call, "its error has an empty operation");
    CHECK(rootspan_error_cause(slot.error) != nullptr && rootspan_error_policy(slot.error) != nullptr, call,
          "its error has a NULL cause or policy");
    rootspan_requested r{};
    r.struct_size = ROOTSPAN_REQUESTED_STRUCT_SIZE;
    CHECK(rootspan_error_requested(slot.error, &r) == ROOTSPAN_OK, call, "rootspan_error_requested failed");
    rootspan_error_free(slot.error);
    slot.error = nullptr;
  }
  return status;
}

rootspan_status checked_plain(const char *call, rootspan_status status) {
  CHECK(valid_status(status), call, "returned status " + s(static_cast<std::uint64_t>(status)) + ", not a status");
  return status;
}

void expect_invalid(const char *call, rootspan_status status, const char *why) {
  CHECK(status == ROOTSPAN_ERR_INVALID_ARGUMENT, call,
        std::string(why) + ": expected InvalidArgument, got " + rootspan_status_name(status));
}

// A struct_size for a struct whose published versions end at `ends` (the
// newest last): the newest size most of the time, otherwise an older
// version, its sizeof, 0, one that ends inside a field, or a huge one.
std::size_t choose_size(FuzzedDataProvider &in, std::size_t full, std::size_t sizeof_full,
                        std::initializer_list<std::size_t> older = {}) {
  switch (in.ConsumeIntegralInRange<int>(0, 15)) {
    case 0:
      return 0;
    case 1:
      return sizeof(std::size_t);
    case 2:
      return full - 1 - in.ConsumeIntegralInRange<std::size_t>(0, full - sizeof(std::size_t) - 2);
    case 3:
      return older.size() != 0 ? *(older.begin() + in.ConsumeIntegralInRange<std::size_t>(0, older.size() - 1)) : full;
    case 4:
      return full + in.ConsumeIntegralInRange<std::size_t>(1, 4096);
    case 5:
      return SIZE_MAX - in.ConsumeIntegralInRange<std::size_t>(0, 8);
    case 6:
      return sizeof_full;
    default:
      return full;
  }
}

// Whether the core must accept a struct_size: one of the published ends, or
// that end rounded up to the struct's alignment, or at least the newest size.
bool accepted_size(std::size_t size, std::size_t full, std::size_t alignment,
                   std::initializer_list<std::size_t> older = {}) {
  if (size >= full) return true;
  auto matches = [&](std::size_t end) { return size == end || size == (end + alignment - 1) / alignment * alignment; };
  if (matches(full)) return true;
  for (std::size_t end : older) {
    if (matches(end)) return true;
  }
  return false;
}

// ---- the harness's model of what is live ---------------------------------------

struct ImportRecord {
  std::unique_ptr<unsigned char[]> buffer;
  int deleted = 0;
};

void count_delete(void *context, void *) {
  auto *record = static_cast<ImportRecord *>(context);
  ++record->deleted;
  CHECK(record->deleted == 1, "an import's deleter ran twice");
}

struct RootRec {
  rootspan_root *handle;
  std::uint64_t length;
  bool test_provider;  // its memory comes from one of the rootspan::testing providers
  bool read_only;
  rootspan_dtype dtype;
  ImportRecord *import;  // the deleter that must run when it is released, or nullptr
  bool owned_by_weights;
};

struct ClaimRec {
  rootspan_claim *handle;
  rootspan_root *root;
  std::uint64_t begin, end;  // relative to the root
  rootspan_claim_mode mode;
  rootspan_claim *parent;  // nullptr for a top-level claim
  int children = 0, mappings = 0, accesses = 0;
};

struct MappingRec {
  rootspan_mapping *handle;
  rootspan_claim *claim;
  std::uint64_t bytes;
  bool write;
};

struct AccessRec {
  rootspan_claim *claim;
  rootspan_device_access access;
};

struct WeightsRec {
  rootspan_weights *handle;
  std::vector<rootspan_root *> roots;
  bool source_digests = false;  // loaded with source_digests set (inside its struct_size)
};

struct Harness {
  rootspan_context *context = nullptr;
  std::vector<RootRec> roots;
  std::vector<ClaimRec> claims;
  std::vector<MappingRec> mappings;
  std::vector<AccessRec> accesses;
  std::vector<WeightsRec> weights;
  std::vector<std::unique_ptr<ImportRecord>> imports;
  rootspan::testing::Behaviour steady;  // what the test providers do when no fault is injected

  RootRec *root(rootspan_root *h) {
    for (RootRec &r : roots) {
      if (r.handle == h) return &r;
    }
    return nullptr;
  }
  ClaimRec *claim(rootspan_claim *h) {
    for (ClaimRec &c : claims) {
      if (c.handle == h) return &c;
    }
    return nullptr;
  }
  int claims_on(rootspan_root *h) const {
    return static_cast<int>(
        std::count_if(claims.begin(), claims.end(), [&](const ClaimRec &c) { return c.root == h; }));
  }
  int test_roots() const {
    return static_cast<int>(
        std::count_if(roots.begin(), roots.end(), [](const RootRec &r) { return r.test_provider; }));
  }
};

// Every invariant that must hold between calls.
void check_between_calls(const Harness &h, const char *after) {
  CHECK(rootspan::testing::counters().double_release.load() == 0, after,
        "a test-provider allocation was released twice");
  CHECK(rootspan::testing::live_blocks() == h.test_roots(), after,
        "test-provider allocations live: " + s(rootspan::testing::live_blocks()) +
            ", live roots made from them: " + s(h.test_roots()));
  for (std::size_t i = 0; i < h.claims.size(); ++i) {
    for (std::size_t j = i + 1; j < h.claims.size(); ++j) {
      const ClaimRec &a = h.claims[i];
      const ClaimRec &b = h.claims[j];
      // Empty ranges overlap nothing.
      if (a.root != b.root || a.begin == a.end || b.begin == b.end || a.begin >= b.end || b.begin >= a.end) continue;
      // A child overlaps its ancestors by design.
      auto ancestor = [&](const ClaimRec &x, const ClaimRec &y) {
        for (rootspan_claim *p = y.parent; p != nullptr;) {
          if (p == x.handle) return true;
          const ClaimRec *up = nullptr;
          for (const ClaimRec &c : h.claims) {
            if (c.handle == p) up = &c;
          }
          p = up != nullptr ? up->parent : nullptr;
        }
        return false;
      };
      if (ancestor(a, b) || ancestor(b, a)) continue;
      if (a.mode == ROOTSPAN_CLAIM_EXCLUSIVE || b.mode == ROOTSPAN_CLAIM_EXCLUSIVE) {
        broken(after, "two conflicting claims are live on one root: [" + s(a.begin) + "," + s(a.end) + ") and [" +
                          s(b.begin) + "," + s(b.end) + ")");
      }
    }
  }
}

// ---- inputs to calls -----------------------------------------------------------

template <class T>
T *pick(FuzzedDataProvider &in, std::vector<T> &items) {
  if (items.empty()) return nullptr;
  return &items[in.ConsumeIntegralInRange<std::size_t>(0, items.size() - 1)];
}

const char *provider_name(FuzzedDataProvider &in) {
  static const char *const names[] = {"host", "test", "device-sim", "nomap", "named-0", "test2", nullptr, "nope", ""};
  return names[in.ConsumeIntegralInRange<std::size_t>(0, std::size(names) - 1)];
}

bool is_test_provider(const char *name) {
  const std::string n = name == nullptr ? "" : name;
  return n == "test" || n == "test2" || n == "device-sim" || n == "nomap";
}

rootspan_dtype dtype(FuzzedDataProvider &in) {
  if (in.ConsumeIntegralInRange<int>(0, 9) == 0) return in.ConsumeIntegral<std::int32_t>();
  return in.ConsumeIntegralInRange<rootspan_dtype>(ROOTSPAN_DTYPE_NONE, ROOTSPAN_DTYPE_F8_E5M2FNUZ);
}

std::uint64_t small_or_wild(FuzzedDataProvider &in, std::uint64_t small_max) {
  switch (in.ConsumeIntegralInRange<int>(0, 15)) {
    case 0:
      return in.ConsumeIntegral<std::uint64_t>();
    case 1:
      return UINT64_MAX - in.ConsumeIntegralInRange<std::uint64_t>(0, 64);
    default:
      return in.ConsumeIntegralInRange<std::uint64_t>(0, small_max);
  }
}

// Sets what the test providers do wrong during the next call (the steady
// behaviour otherwise).
void inject_fault(FuzzedDataProvider &in, Harness &h) {
  rootspan::testing::Behaviour &b = rootspan::testing::behaviour();
  b = h.steady;
  const int fault = in.ConsumeIntegralInRange<int>(0, 31);
  if (fault <= 16) TRACE("fault %d\n", fault);
  switch (fault) {
    case 0:
      b.allocate_status = in.ConsumeIntegralInRange<rootspan_status>(-3, 40);
      b.allocate_message = in.ConsumeBool() ? "" : "injected allocate failure";
      break;
    case 1:
      b.allocate_throws = true;
      break;
    case 2:
      b.allocate_throws_nonstd = true;
      break;
    case 3:
      b.domain = in.ConsumeBool() ? 0 : in.ConsumeIntegral<std::uint64_t>();
      break;
    case 4:
      b.local = in.ConsumeIntegralInRange<std::uint64_t>(0, 3);  // 0, or a key another root may hold
      break;
    // Lengths and offsets the test providers still back with memory, or
    // offsets whose end overflows (the core must refuse those).
    case 5:
      b.byte_offset = in.ConsumeBool() ? in.ConsumeIntegralInRange<std::uint64_t>(0, 8192)
                                       : UINT64_MAX - in.ConsumeIntegralInRange<std::uint64_t>(0, 64);
      break;
    case 6:
      b.byte_length = in.ConsumeIntegralInRange<std::uint64_t>(0, 1 << 17);
      break;
    case 7:
      b.alignment =
          in.ConsumeBool() ? in.ConsumeIntegral<std::uint64_t>() : std::uint64_t{1} << in.ConsumeIntegralInRange(0, 63);
      break;
    case 8:
      b.host_shift = in.ConsumeIntegralInRange<std::uint64_t>(0, 4096);
      break;
    case 9:
      b.release_throws = true;
      break;
    case 10:
      b.map_throws = true;
      break;
    case 11:
      b.map_status = in.ConsumeIntegralInRange<rootspan_status>(-3, 40);
      b.map_message = "injected map failure";
      break;
    case 12:
      b.map_length_delta = in.ConsumeIntegralInRange<std::int64_t>(-64, 64);
      break;
    case 13:
      b.map_pointer_shift = in.ConsumeIntegralInRange<std::uint64_t>(1, 1 << 20);
      break;
    case 14:
      b.map_null = true;
      break;
    case 15:
      b.prepare_null_pointer = true;
      break;
    case 16:
      b.copy_status = in.ConsumeIntegralInRange<rootspan_status>(-3, 40);
      b.copy_message = "injected copy failure";
      break;
    default:
      break;  // no fault
  }
}

// ---- the calls -----------------------------------------------------------------

void record_root(Harness &h, rootspan_root *root, ImportRecord *import, bool owned_by_weights) {
  rootspan_root_info info{};
  info.struct_size = ROOTSPAN_ROOT_INFO_STRUCT_SIZE;
  CHECK(rootspan_root_get_info(root, &info) == ROOTSPAN_OK, "root_get_info of a live root failed");
  CHECK(info.root_id != 0, "a live root has id 0");
  CHECK(info.key.domain != 0 && info.key.local != 0, "a live root has a key with a zero part");
  CHECK(info.alignment != 0 && (info.alignment & (info.alignment - 1)) == 0, "a live root has a bad alignment",
        s(info.alignment));
  CHECK(info.provider != nullptr && info.provider[0] != '\0', "a live root has no provider name");
  for (const RootRec &r : h.roots) CHECK(r.handle != root, "a new root handle equals a live one");
  TRACE("root %llu: provider %s offset %llu length %llu alignment %llu dtype %d read_only %d host %d\n",
        (unsigned long long)info.root_id, info.provider, (unsigned long long)info.byte_offset,
        (unsigned long long)info.byte_length, (unsigned long long)info.alignment, info.dtype, info.read_only,
        info.host_accessible);
  h.roots.push_back({root, info.byte_length, is_test_provider(info.provider), info.read_only != 0, info.dtype, import,
                     owned_by_weights});
}

void forget_root(Harness &h, rootspan_root *root) {
  RootRec *r = h.root(root);
  if (r->import != nullptr) CHECK(r->import->deleted == 1, "a released imported root's deleter did not run");
  h.roots.erase(h.roots.begin() + (r - h.roots.data()));
}

void op_context_create(FuzzedDataProvider &in, Harness &h) {
  rootspan_context_options o{};
  const bool with_options = in.ConsumeBool();
  o.struct_size = choose_size(in, ROOTSPAN_CONTEXT_OPTIONS_STRUCT_SIZE, sizeof o);
  o.no_static_providers = in.ConsumeIntegralInRange<int>(0, 3) == 0;
  const std::string missing = (g_dir / "missing-manifest.json").string();
  const std::string folder = g_dir.string();
  const char *paths[] = {missing.c_str(), nullptr, folder.c_str()};
  switch (in.ConsumeIntegralInRange<int>(0, 4)) {
    case 0:
      o.manifests = nullptr;
      o.manifest_count = in.ConsumeIntegralInRange<std::size_t>(1, 5);  // NULL with a count
      break;
    case 1:
      o.manifests = paths;
      o.manifest_count = in.ConsumeIntegralInRange<std::size_t>(1, 3);
      break;
    default:
      break;
  }
  const bool size_ok =
      accepted_size(o.struct_size, ROOTSPAN_CONTEXT_OPTIONS_STRUCT_SIZE, alignof(rootspan_context_options));
  const bool out_null = in.ConsumeIntegralInRange<int>(0, 7) == 0;
  ErrorSlot e{nullptr, in.ConsumeBool()};
  rootspan_context *made = nullptr;
  const rootspan_status status = checked(
      "context_create", rootspan_context_create(with_options ? &o : nullptr, out_null ? nullptr : &made, e.out()), e);
  if (out_null) expect_invalid("context_create", status, "context is NULL");
  if (with_options && !size_ok) expect_invalid("context_create", status, "options.struct_size names no version");
  if (with_options && size_ok && o.manifests == nullptr && o.manifest_count != 0) {
    expect_invalid("context_create", status, "manifests NULL with a count");
  }
  if (with_options && size_ok && o.manifests == paths && o.manifest_count >= 2) {
    expect_invalid("context_create", status, "a NULL manifest path");
  }
  if (status != ROOTSPAN_OK) {
    CHECK(made == nullptr, "context_create failed but handed out a context");
    return;
  }
  CHECK(made != nullptr, "context_create succeeded without a context");
  if (h.context == nullptr) {
    h.context = made;
  } else {
    std::uint64_t live = 1;
    CHECK(rootspan_context_destroy(made, &live) == ROOTSPAN_OK && live == 0, "destroying a fresh context");
  }
}

// Frees every weights object first (the API wants it before its context),
// then destroys the context with whatever else is still live.
void op_context_destroy(Harness &h) {
  if (h.context == nullptr) {
    CHECK(rootspan_context_destroy(nullptr, nullptr) == ROOTSPAN_ERR_INVALID_ARGUMENT, "context_destroy(NULL)");
    return;
  }
  while (!h.weights.empty()) {
    WeightsRec &w = h.weights.back();
    // Release what holds its roots: mappings, accesses, then claims, children first.
    for (rootspan_root *root : w.roots) {
      for (std::size_t i = h.mappings.size(); i-- > 0;) {
        ClaimRec *c = h.claim(h.mappings[i].claim);
        if (c->root != root) continue;
        CHECK(rootspan_unmap(h.mappings[i].handle) == ROOTSPAN_OK, "unmap before weights_free");
        --c->mappings;
        h.mappings.erase(h.mappings.begin() + static_cast<std::ptrdiff_t>(i));
      }
      for (std::size_t i = h.accesses.size(); i-- > 0;) {
        ClaimRec *c = h.claim(h.accesses[i].claim);
        if (c->root != root) continue;
        CHECK(rootspan_device_access_release(c->handle, &h.accesses[i].access) == ROOTSPAN_OK,
              "device_access_release before weights_free");
        --c->accesses;
        h.accesses.erase(h.accesses.begin() + static_cast<std::ptrdiff_t>(i));
      }
      for (std::size_t i = h.claims.size(); i-- > 0;) {
        if (h.claims[i].root != root) continue;
        CHECK(rootspan_claim_release(h.claims[i].handle, nullptr) == ROOTSPAN_OK, "claim release before weights_free");
        if (h.claims[i].parent != nullptr) --h.claim(h.claims[i].parent)->children;
        h.claims.erase(h.claims.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
    ErrorSlot e{nullptr, true};
    CHECK(checked("weights_free", rootspan_weights_free(w.handle, e.out()), e) == ROOTSPAN_OK,
          "weights_free with nothing claimed failed");
    for (rootspan_root *root : w.roots) forget_root(h, root);
    h.weights.pop_back();
  }
  std::uint64_t live = UINT64_MAX;
  CHECK(rootspan_context_destroy(h.context, &live) == ROOTSPAN_OK, "context_destroy failed");
  CHECK(live == h.roots.size(), "context_destroy's live root count",
        "reported " + s(live) + ", the harness holds " + s(h.roots.size()));
  h.context = nullptr;
  for (RootRec &r : h.roots) {
    if (r.import != nullptr) CHECK(r.import->deleted == 1, "context_destroy did not run an imported root's deleter");
  }
  h.roots.clear();
  h.claims.clear();
  h.mappings.clear();
  h.accesses.clear();
  CHECK(rootspan::testing::live_blocks() == 0, "test-provider allocations left after context_destroy",
        s(rootspan::testing::live_blocks()));
  CHECK(rootspan::testing::counters().init.load() == rootspan::testing::counters().shutdown.load(),
        "a started test provider was not shut down by context_destroy");
}

void op_add_provider(FuzzedDataProvider &in, Harness &h) {
  rootspan::testing::TableConfig config;
  rootspan_provider_entry_fn entry = nullptr;
  switch (in.ConsumeIntegralInRange<int>(0, 6)) {
    case 0:
    case 1:
      entry = rootspan::testing::test_provider_entry;
      config.name = in.ConsumeBool() ? "test" : "test2";
      config.host_access = in.ConsumeIntegralInRange<int>(0, 3) != 0;
      config.map_hooks = in.ConsumeIntegralInRange<int>(0, 3) != 0;
      config.device_hooks = in.ConsumeBool();
      config.copy_hooks = in.ConsumeBool();
      config.null_init = in.ConsumeIntegralInRange<int>(0, 15) == 0;
      if (in.ConsumeIntegralInRange<int>(0, 15) == 0) config.abi_major = in.ConsumeIntegral<std::uint32_t>();
      if (in.ConsumeIntegralInRange<int>(0, 15) == 0) config.abi_minor = in.ConsumeIntegralInRange<std::uint32_t>(0, 9);
      h.steady.table = config;
      h.steady.device_count = in.ConsumeIntegralInRange<std::uint32_t>(0, 3);
      rootspan::testing::behaviour().table = h.steady.table;
      rootspan::testing::behaviour().device_count = h.steady.device_count;
      break;
    case 2:
      entry = rootspan::testing::device_sim_entry;
      break;
    case 3:
      entry = rootspan::testing::nomap_entry;
      break;
    case 4:
      entry = rootspan::testing::null_entry;
      break;
    case 5:
      entry = rootspan::testing::named_provider_entry(in.ConsumeIntegralInRange<std::size_t>(0, 3));
      break;
    default:
      entry = nullptr;
      break;
  }
  static const char *const options[] = {nullptr, "{}", "not json", "[1,2]", "{\"a\":1}"};
  const char *json = options[in.ConsumeIntegralInRange<std::size_t>(0, std::size(options) - 1)];
  rootspan_context *context = in.ConsumeIntegralInRange<int>(0, 15) == 0 ? nullptr : h.context;
  ErrorSlot e{nullptr, in.ConsumeBool()};
  const rootspan_status status =
      checked("add_provider", rootspan_context_add_provider(context, entry, json, e.out()), e);
  if (context == nullptr || entry == nullptr) expect_invalid("add_provider", status, "context or entry is NULL");
  // Every report is readable, with its strings.
  if (h.context != nullptr) {
    std::size_t count = 0;
    CHECK(rootspan_provider_report_count(h.context, &count) == ROOTSPAN_OK, "provider_report_count");
    for (std::size_t i = 0; i < count; ++i) {
      rootspan_provider_report r{};
      r.struct_size = ROOTSPAN_PROVIDER_REPORT_STRUCT_SIZE;
      CHECK(rootspan_provider_report_get(h.context, i, &r) == ROOTSPAN_OK, "provider_report_get", s(i));
      CHECK(r.name != nullptr && r.kind != nullptr, "a provider report without a name or kind");
      CHECK(r.state >= ROOTSPAN_PROVIDER_LOADED && r.state <= ROOTSPAN_PROVIDER_NO_DEVICE, "a report's state",
            s(r.state));
      CHECK(valid_status(r.code), "a report's code", s(static_cast<std::uint64_t>(r.code)));
      CHECK(std::strlen(r.name) + std::strlen(r.kind) < 4096, "a report's strings");
    }
    rootspan_provider_report r{};
    r.struct_size = ROOTSPAN_PROVIDER_REPORT_STRUCT_SIZE;
    CHECK(rootspan_provider_report_get(h.context, count, &r) == ROOTSPAN_ERR_NOT_FOUND, "report past the end");
  }
}

void op_allocate(FuzzedDataProvider &in, Harness &h) {
  rootspan_allocate_options o{};
  o.struct_size = choose_size(in, ROOTSPAN_ALLOCATE_OPTIONS_STRUCT_SIZE, sizeof o);
  o.provider = provider_name(in);
  o.device = in.ConsumeIntegralInRange<int>(0, 7) == 0 ? in.ConsumeIntegral<std::uint32_t>()
                                                       : in.ConsumeIntegralInRange<std::uint32_t>(0, 1);
  o.memory_kind = in.ConsumeIntegralInRange<rootspan_memory_kind>(-1, 3);
  // Only the test provider without a buffer may get a wild length: the others
  // really allocate it.
  // (and only without copy or device hooks, which would write to it).
  const bool wild_ok = o.provider != nullptr && std::string(o.provider) == "test" && !h.steady.table.copy_hooks &&
                       !h.steady.table.device_hooks;
  o.byte_length = wild_ok ? small_or_wild(in, 1 << 16) : in.ConsumeIntegralInRange<std::uint64_t>(0, 1 << 16);
  o.alignment = in.ConsumeBool() ? std::uint64_t{1} << in.ConsumeIntegralInRange(0, 12) : small_or_wild(in, 4096);
  if (!wild_ok && o.alignment > (1u << 20)) o.alignment = 64;
  o.dtype = dtype(in);
  const bool size_ok =
      accepted_size(o.struct_size, ROOTSPAN_ALLOCATE_OPTIONS_STRUCT_SIZE, alignof(rootspan_allocate_options));
  const int nulls = in.ConsumeIntegralInRange<int>(0, 15);
  rootspan_context *context = nulls == 0 ? nullptr : h.context;
  rootspan_root *root = nullptr;
  ErrorSlot e{nullptr, in.ConsumeBool()};
  inject_fault(in, h);
  const rootspan_status status =
      checked("root_allocate",
              rootspan_root_allocate(context, nulls == 1 ? nullptr : &o, nulls == 2 ? nullptr : &root, e.out()), e);
  if (context == nullptr || nulls == 1 || nulls == 2) expect_invalid("root_allocate", status, "a NULL argument");
  if (!size_ok) expect_invalid("root_allocate", status, "options.struct_size names no version");
  if (status != ROOTSPAN_OK) {
    CHECK(root == nullptr, "root_allocate failed but handed out a root");
    return;
  }
  record_root(h, root, nullptr, false);
}

void op_import(FuzzedDataProvider &in, Harness &h) {
  auto record = std::make_unique<ImportRecord>();
  const std::size_t length = in.ConsumeIntegralInRange<std::size_t>(0, 4096);
  record->buffer.reset(new unsigned char[length + 64]);
  std::memset(record->buffer.get(), 0x5a, length + 64);
  rootspan_host_import i{};
  i.struct_size = choose_size(in, ROOTSPAN_HOST_IMPORT_STRUCT_SIZE, sizeof i);
  i.provider = in.ConsumeIntegralInRange<int>(0, 3) == 0 ? provider_name(in) : nullptr;
  const std::size_t shift = in.ConsumeIntegralInRange<std::size_t>(0, 63);
  i.data = in.ConsumeIntegralInRange<int>(0, 15) == 0 ? nullptr : record->buffer.get() + shift;
  // The caller's memory holds `length` bytes; a length that would run past
  // the end of the address space must be refused.
  i.byte_length = in.ConsumeIntegralInRange<int>(0, 15) == 0
                      ? UINT64_MAX - in.ConsumeIntegralInRange<std::uint64_t>(0, 4096)
                      : length;
  const auto address = reinterpret_cast<std::uintptr_t>(i.data);
  const std::uint64_t true_alignment = address == 0 ? 4096 : (address & (~address + 1));
  i.alignment =
      in.ConsumeIntegralInRange<int>(0, 7) == 0 ? small_or_wild(in, 4096) : std::min<std::uint64_t>(true_alignment, 64);
  i.dtype = dtype(in);
  i.read_only = in.ConsumeBool();
  const bool with_deleter = in.ConsumeIntegralInRange<int>(0, 3) != 0;
  i.deleter = with_deleter ? count_delete : nullptr;
  i.deleter_context = record.get();
  // The deleter is part of the call only when struct_size reaches it.
  const bool size_ok = accepted_size(i.struct_size, ROOTSPAN_HOST_IMPORT_STRUCT_SIZE, alignof(rootspan_host_import));
  const bool deleter_seen = with_deleter && size_ok;
  const int nulls = in.ConsumeIntegralInRange<int>(0, 15);
  rootspan_context *context = nulls == 0 ? nullptr : h.context;
  rootspan_root *root = nullptr;
  ErrorSlot e{nullptr, in.ConsumeBool()};
  inject_fault(in, h);
  ImportRecord *raw = record.get();
  h.imports.push_back(std::move(record));  // lives until the end of the input: the root may point at it
  const rootspan_status status =
      checked("root_import_host",
              rootspan_root_import_host(context, nulls == 1 ? nullptr : &i, nulls == 2 ? nullptr : &root, e.out()), e);
  if (context == nullptr || nulls == 1 || nulls == 2) expect_invalid("root_import_host", status, "a NULL argument");
  if (!size_ok) expect_invalid("root_import_host", status, "import.struct_size names no version");
  if (status != ROOTSPAN_OK) {
    CHECK(root == nullptr, "root_import_host failed but handed out a root");
    if (deleter_seen && nulls != 1) CHECK(raw->deleted == 1, "a failed import did not run its deleter exactly once");
    if (!deleter_seen) CHECK(raw->deleted == 0, "an import ran a deleter it was not given");
    return;
  }
  CHECK(raw->deleted == 0, "a successful import ran its deleter");
  record_root(h, root, deleter_seen ? raw : nullptr, false);
}

void op_root_release(FuzzedDataProvider &in, Harness &h) {
  std::vector<RootRec *> mine;
  for (RootRec &r : h.roots) {
    if (!r.owned_by_weights) mine.push_back(&r);
  }
  ErrorSlot e{nullptr, in.ConsumeBool()};
  if (mine.empty() || in.ConsumeIntegralInRange<int>(0, 15) == 0) {
    expect_invalid("root_release", checked("root_release", rootspan_root_release(nullptr, e.out()), e), "root is NULL");
    return;
  }
  RootRec *r = mine[in.ConsumeIntegralInRange<std::size_t>(0, mine.size() - 1)];
  const int claims = h.claims_on(r->handle);
  inject_fault(in, h);
  const rootspan_status status = checked("root_release", rootspan_root_release(r->handle, e.out()), e);
  if (claims != 0) {
    CHECK(status == ROOTSPAN_ERR_BUSY, "root_release with live claims", rootspan_status_name(status));
    return;
  }
  // A provider whose release throws has still released: the root is gone either way.
  CHECK(status == ROOTSPAN_OK || status == ROOTSPAN_ERR_PROVIDER_FAILURE, "root_release without claims",
        rootspan_status_name(status));
  forget_root(h, r->handle);
}

void op_claim(FuzzedDataProvider &in, Harness &h) {
  RootRec *r = pick(in, h.roots);
  const bool null_root = r == nullptr || in.ConsumeIntegralInRange<int>(0, 31) == 0;
  const std::uint64_t length = r == nullptr ? 0 : r->length;
  std::uint64_t offset = 0, size = 0;
  if (in.ConsumeIntegralInRange<int>(0, 7) == 0 || length == 0) {
    offset = small_or_wild(in, 1 << 16);
    size = small_or_wild(in, 1 << 16);
  } else {
    const std::uint64_t cap = std::min<std::uint64_t>(length, 1 << 20);
    offset = in.ConsumeIntegralInRange<std::uint64_t>(0, cap);
    size = in.ConsumeIntegralInRange<std::uint64_t>(0, cap - offset);
  }
  rootspan_claim_mode mode = in.ConsumeBool() ? ROOTSPAN_CLAIM_EXCLUSIVE : ROOTSPAN_CLAIM_SHARED;
  if (in.ConsumeIntegralInRange<int>(0, 31) == 0) mode = in.ConsumeIntegral<std::int32_t>();
  const bool null_out = in.ConsumeIntegralInRange<int>(0, 31) == 0;
  rootspan_claim *claim = nullptr;
  ErrorSlot e{nullptr, in.ConsumeBool()};
  const rootspan_status status = checked(
      "claim_acquire",
      rootspan_claim_acquire(null_root ? nullptr : r->handle, offset, size, mode, null_out ? nullptr : &claim, e.out()),
      e);
  if (null_root || null_out) {
    expect_invalid("claim_acquire", status, "a NULL argument");
    return;
  }
  if (mode != ROOTSPAN_CLAIM_SHARED && mode != ROOTSPAN_CLAIM_EXCLUSIVE) {
    expect_invalid("claim_acquire", status, "a bad mode");
    return;
  }
  const bool fits = offset <= length && size <= length - offset;
  bool conflicts = false;
  for (const ClaimRec &c : h.claims) {
    if (c.root == r->handle && c.parent == nullptr && size != 0 && c.begin != c.end && offset < c.end &&
        c.begin < offset + size && (mode == ROOTSPAN_CLAIM_EXCLUSIVE || c.mode == ROOTSPAN_CLAIM_EXCLUSIVE)) {
      conflicts = true;
    }
  }
  if (status == ROOTSPAN_ERR_CONFLICT) {
    CHECK(conflicts, "claim_acquire answered Conflict with no conflicting claim live",
          "[" + s(offset) + "," + s(offset + size) + ")");
  }
  if (status != ROOTSPAN_OK) {
    CHECK(claim == nullptr, "claim_acquire failed but handed out a claim");
    if (fits && !conflicts && !(mode == ROOTSPAN_CLAIM_EXCLUSIVE && r->read_only)) {
      // Nothing in the request is wrong: only a dtype/alignment rule may refuse it.
      CHECK(status == ROOTSPAN_ERR_DTYPE_MISMATCH || status == ROOTSPAN_ERR_MISALIGNED_OFFSET ||
                status == ROOTSPAN_ERR_MISALIGNED,
            "claim_acquire refused a claim that fits and conflicts with nothing", rootspan_status_name(status));
    }
    return;
  }
  CHECK(fits, "claim_acquire granted a claim outside its root");
  CHECK(!conflicts, "claim_acquire granted a claim that conflicts with a live one");
  rootspan_span span{};
  span.struct_size = ROOTSPAN_SPAN_STRUCT_SIZE;
  rootspan_claim_mode got = -1;
  CHECK(rootspan_claim_get_span(claim, &span, &got) == ROOTSPAN_OK && got == mode && span.length == size,
        "claim_get_span disagrees with the claim");
  h.claims.push_back({claim, r->handle, offset, offset + size, mode, nullptr});
}

void op_split(FuzzedDataProvider &in, Harness &h) {
  ClaimRec *parent = pick(in, h.claims);
  const std::size_t count = in.ConsumeIntegralInRange<std::size_t>(0, 4);
  std::vector<rootspan_range> ranges(count);
  const std::uint64_t length = parent == nullptr ? 0 : parent->end - parent->begin;
  std::uint64_t cursor = 0;
  for (rootspan_range &range : ranges) {
    if (in.ConsumeIntegralInRange<int>(0, 7) == 0 || length == 0) {
      range = {small_or_wild(in, 256), small_or_wild(in, 256)};
    } else {
      range.offset = std::min(length, cursor + in.ConsumeIntegralInRange<std::uint64_t>(0, 16));
      range.length = in.ConsumeIntegralInRange<std::uint64_t>(0, length - range.offset);
      if (in.ConsumeIntegralInRange<int>(0, 3) != 0) cursor = range.offset + range.length;  // else: may overlap
    }
  }
  std::vector<rootspan_claim *> children(count + 1, nullptr);
  const int nulls = in.ConsumeIntegralInRange<int>(0, 15);
  ErrorSlot e{nullptr, in.ConsumeBool()};
  const bool null_parent = parent == nullptr || nulls == 0;
  const rootspan_status status =
      checked("claim_split",
              rootspan_claim_split(null_parent ? nullptr : parent->handle, nulls == 1 ? nullptr : ranges.data(), count,
                                   nulls == 2 ? nullptr : children.data(), e.out()),
              e);
  if (null_parent || (count != 0 && (nulls == 1 || nulls == 2))) {
    expect_invalid("claim_split", status, "a NULL argument");
    return;
  }
  if (status != ROOTSPAN_OK) {
    for (rootspan_claim *child : children) CHECK(child == nullptr, "claim_split failed but made a child");
    return;
  }
  CHECK(parent->mode == ROOTSPAN_CLAIM_EXCLUSIVE, "claim_split split a shared claim");
  CHECK(children[count] == nullptr, "claim_split wrote past its children");
  for (std::size_t i = 0; i < count; ++i) {
    const rootspan_range &a = ranges[i];
    CHECK(a.offset <= length && a.length <= length - a.offset, "claim_split made a child outside its parent");
    for (std::size_t j = i + 1; j < count; ++j) {
      const rootspan_range &b = ranges[j];
      CHECK(a.length == 0 || b.length == 0 || a.offset >= b.offset + b.length || b.offset >= a.offset + a.length,
            "claim_split made overlapping children");
    }
  }
  rootspan_claim *parent_handle = parent->handle;
  rootspan_root *root = parent->root;
  const std::uint64_t base = parent->begin;
  parent->children += static_cast<int>(count);
  for (std::size_t i = 0; i < count; ++i) {
    CHECK(children[i] != nullptr, "claim_split succeeded without a child", s(i));
    h.claims.push_back({children[i], root, base + ranges[i].offset, base + ranges[i].offset + ranges[i].length,
                        ROOTSPAN_CLAIM_EXCLUSIVE, parent_handle});
  }
}

void op_claim_release(FuzzedDataProvider &in, Harness &h) {
  ErrorSlot e{nullptr, in.ConsumeBool()};
  ClaimRec *c = pick(in, h.claims);
  if (c == nullptr || in.ConsumeIntegralInRange<int>(0, 31) == 0) {
    expect_invalid("claim_release", checked("claim_release", rootspan_claim_release(nullptr, e.out()), e), "NULL");
    return;
  }
  const bool attached = c->children + c->mappings + c->accesses != 0;
  const rootspan_status status = checked("claim_release", rootspan_claim_release(c->handle, e.out()), e);
  if (attached) {
    CHECK(status == ROOTSPAN_ERR_BUSY, "claim_release with children, mappings or accesses",
          rootspan_status_name(status));
    return;
  }
  CHECK(status == ROOTSPAN_OK, "claim_release of a claim with nothing attached", rootspan_status_name(status));
  if (c->parent != nullptr) --h.claim(c->parent)->children;
  h.claims.erase(h.claims.begin() + (c - h.claims.data()));
}

void op_map(FuzzedDataProvider &in, Harness &h) {
  ClaimRec *c = pick(in, h.claims);
  const bool write = in.ConsumeBool();
  // Mostly the root's own element type, which a mapping of whole elements accepts.
  const RootRec *owner = c == nullptr ? nullptr : h.root(c->root);
  const rootspan_dtype type = in.ConsumeIntegralInRange<int>(0, 3) == 0 || owner == nullptr ? dtype(in) : owner->dtype;
  const std::uint64_t length = c == nullptr ? 0 : c->end - c->begin;
  std::uint64_t offset = 0, size = 0;
  if (in.ConsumeIntegralInRange<int>(0, 7) == 0 || length == 0) {
    offset = small_or_wild(in, 256);
    size = small_or_wild(in, 256);
  } else {
    offset = in.ConsumeIntegralInRange<std::uint64_t>(0, length);
    size = in.ConsumeIntegralInRange<std::uint64_t>(0, length - offset);
  }
  const bool null_claim = c == nullptr || in.ConsumeIntegralInRange<int>(0, 31) == 0;
  const bool null_out = in.ConsumeIntegralInRange<int>(0, 31) == 0;
  rootspan_mapping *mapping = nullptr;
  ErrorSlot e{nullptr, in.ConsumeBool()};
  inject_fault(in, h);
  auto call = write ? rootspan_map_write : rootspan_map_read;
  const rootspan_status status =
      checked(write ? "map_write" : "map_read",
              call(null_claim ? nullptr : c->handle, type, offset, size, null_out ? nullptr : &mapping, e.out()), e);
  if (null_claim || null_out) {
    expect_invalid("map", status, "a NULL argument");
    return;
  }
  if (status != ROOTSPAN_OK) {
    CHECK(mapping == nullptr, "map failed but handed out a mapping");
    return;
  }
  CHECK(c->children == 0, "a claim with children was mapped");
  CHECK(!write || c->mode == ROOTSPAN_CLAIM_EXCLUSIVE, "map_write on a shared claim");
  const std::uint64_t bytes = rootspan_mapping_length(mapping);
  auto *data = static_cast<volatile unsigned char *>(rootspan_mapping_data(mapping));
  CHECK(bytes <= length, "a mapping longer than its claim", s(bytes) + " > " + s(length));
  // Touch the ends of the mapped bytes: a mapping the core let through from a
  // lying provider shows up here under AddressSanitizer.
  if (bytes != 0) {
    CHECK(data != nullptr, "a non-empty mapping with a NULL pointer");
    const unsigned char first = data[0];
    const unsigned char last = data[bytes - 1];
    if (write) {
      data[0] = first;
      data[bytes - 1] = last;
    }
  }
  ++c->mappings;
  h.mappings.push_back({mapping, c->handle, bytes, write});
}

void op_unmap(FuzzedDataProvider &in, Harness &h) {
  MappingRec *m = pick(in, h.mappings);
  if (m == nullptr || in.ConsumeIntegralInRange<int>(0, 15) == 0) {
    CHECK(rootspan_unmap(nullptr) == ROOTSPAN_ERR_INVALID_ARGUMENT, "unmap(NULL)");
    CHECK(rootspan_mapping_data(nullptr) == nullptr && rootspan_mapping_length(nullptr) == 0, "NULL mapping's data");
    return;
  }
  CHECK(checked_plain("unmap", rootspan_unmap(m->handle)) == ROOTSPAN_OK, "unmap of a live mapping failed");
  --h.claim(m->claim)->mappings;
  h.mappings.erase(h.mappings.begin() + (m - h.mappings.data()));
}

void op_device_access(FuzzedDataProvider &in, Harness &h) {
  ClaimRec *c = pick(in, h.claims);
  rootspan_device_access_request request{};
  request.struct_size = choose_size(in, ROOTSPAN_DEVICE_ACCESS_REQUEST_STRUCT_SIZE, sizeof request);
  rootspan_root_info info{};
  info.struct_size = ROOTSPAN_ROOT_INFO_STRUCT_SIZE;
  if (c != nullptr) rootspan_root_get_info(c->root, &info);
  request.key =
      in.ConsumeIntegralInRange<int>(0, 7) == 0 ? rootspan_key{in.ConsumeIntegral<std::uint64_t>(), 1} : info.key;
  request.byte_length = in.ConsumeBool() ? (c == nullptr ? 0 : c->end - c->begin) : small_or_wild(in, 4096);
  request.element_size = in.ConsumeIntegralInRange<int>(0, 7) == 0
                             ? small_or_wild(in, 16)
                             : std::uint64_t{1} << in.ConsumeIntegralInRange(0, 3);
  request.element_offset = in.ConsumeBool() ? 0 : small_or_wild(in, 64);
  std::uint64_t shape[3];
  std::int64_t strides[3];
  request.rank = in.ConsumeIntegralInRange<std::uint32_t>(0, 3);
  for (std::uint32_t i = 0; i < 3; ++i) {
    shape[i] = small_or_wild(in, 16);
    strides[i] = in.ConsumeIntegralInRange<int>(0, 7) == 0 ? in.ConsumeIntegral<std::int64_t>()
                                                           : in.ConsumeIntegralInRange<std::int64_t>(-4, 16);
    if (in.ConsumeBool()) {  // a dense layout, which fits more often
      shape[i] = in.ConsumeIntegralInRange<std::uint64_t>(1, 4);
      std::int64_t stride = 1;
      if (i != 0 && __builtin_mul_overflow(static_cast<std::int64_t>(shape[i - 1] & 0xffff), strides[i - 1], &stride)) {
        stride = 1;
      }
      strides[i] = stride;
    }
  }
  request.shape = in.ConsumeIntegralInRange<int>(0, 15) == 0 ? nullptr : shape;
  request.strides = in.ConsumeIntegralInRange<int>(0, 15) == 0 ? nullptr : strides;
  rootspan_device_access access{};
  access.struct_size = choose_size(in, ROOTSPAN_DEVICE_ACCESS_STRUCT_SIZE, sizeof access);
  const bool sizes_ok =
      accepted_size(request.struct_size, ROOTSPAN_DEVICE_ACCESS_REQUEST_STRUCT_SIZE,
                    alignof(rootspan_device_access_request)) &&
      accepted_size(access.struct_size, ROOTSPAN_DEVICE_ACCESS_STRUCT_SIZE, alignof(rootspan_device_access));
  const bool null_claim = c == nullptr || in.ConsumeIntegralInRange<int>(0, 31) == 0;
  ErrorSlot e{nullptr, in.ConsumeBool()};
  inject_fault(in, h);
  const rootspan_status status =
      checked("device_access_prepare",
              rootspan_device_access_prepare(null_claim ? nullptr : c->handle, &request, &access, e.out()), e);
  if (null_claim) {
    expect_invalid("device_access_prepare", status, "claim is NULL");
    CHECK(rootspan_device_access_release(nullptr, &access) == ROOTSPAN_ERR_INVALID_ARGUMENT, "access_release(NULL)");
    return;
  }
  if (!sizes_ok) expect_invalid("device_access_prepare", status, "a struct_size names no version");
  if (status != ROOTSPAN_OK) return;
  ++c->accesses;
  h.accesses.push_back({c->handle, access});
}

void op_device_access_release(FuzzedDataProvider &in, Harness &h) {
  AccessRec *a = pick(in, h.accesses);
  if (a == nullptr) return;
  CHECK(checked_plain("device_access_release", rootspan_device_access_release(a->claim, &a->access)) == ROOTSPAN_OK,
        "device_access_release of a live access failed");
  --h.claim(a->claim)->accesses;
  h.accesses.erase(h.accesses.begin() + (a - h.accesses.data()));
}

void op_copy(FuzzedDataProvider &in, Harness &h) {
  ClaimRec *c = pick(in, h.claims);
  const bool from_host = in.ConsumeBool();
  const std::uint64_t length = c == nullptr ? 0 : c->end - c->begin;
  std::uint64_t offset = 0, size = 0;
  if (in.ConsumeIntegralInRange<int>(0, 7) == 0 || length == 0) {
    offset = small_or_wild(in, 256);
    size = in.ConsumeIntegralInRange<std::uint64_t>(0, 512);  // the host buffer below holds it
  } else {
    offset = in.ConsumeIntegralInRange<std::uint64_t>(0, length);
    size = in.ConsumeIntegralInRange<std::uint64_t>(0, std::min<std::uint64_t>(length - offset, 1 << 16));
  }
  std::vector<unsigned char> buffer(size + 1, 0xa5);
  if (c != nullptr) {
    TRACE("copy %s claim [%llu,%llu) mode %d, offset %llu size %llu\n", from_host ? "from host" : "to host",
          (unsigned long long)c->begin, (unsigned long long)c->end, c->mode, (unsigned long long)offset,
          (unsigned long long)size);
  }
  const bool null_claim = c == nullptr || in.ConsumeIntegralInRange<int>(0, 31) == 0;
  const bool null_buffer = in.ConsumeIntegralInRange<int>(0, 15) == 0;
  ErrorSlot e{nullptr, in.ConsumeBool()};
  inject_fault(in, h);
  rootspan_status status;
  if (from_host) {
    status = checked("copy_from_host",
                     rootspan_copy_from_host(null_claim ? nullptr : c->handle, offset,
                                             null_buffer ? nullptr : buffer.data(), size, e.out()),
                     e);
  } else {
    status = checked("copy_to_host",
                     rootspan_copy_to_host(null_claim ? nullptr : c->handle, offset,
                                           null_buffer ? nullptr : buffer.data(), size, e.out()),
                     e);
  }
  if (null_claim || (null_buffer && size != 0)) {
    expect_invalid("copy", status, "a NULL argument");
    return;
  }
  if (status == ROOTSPAN_OK) {
    CHECK(offset <= length && size <= length - offset, "a copy outside its claim succeeded");
    CHECK(!from_host || c->mode == ROOTSPAN_CLAIM_EXCLUSIVE, "copy_from_host into a shared claim");
  }
}

void op_weights_load(FuzzedDataProvider &in, Harness &h) {
  if (g_paths.empty()) return;
  const std::string path = g_paths[in.ConsumeIntegralInRange<std::size_t>(0, g_paths.size() - 1)];
  rootspan_load_options o{};
  // Every published size, as weights.h lists them.
  const std::initializer_list<std::size_t> older = {ROOTSPAN_LOAD_OPTIONS_PUBLISHED_SIZES};
  o.struct_size = choose_size(in, ROOTSPAN_LOAD_OPTIONS_STRUCT_SIZE, sizeof o, older);
  o.provider = in.ConsumeBool() ? nullptr : provider_name(in);
  o.device = in.ConsumeIntegralInRange<int>(0, 7) == 0 ? 1 : 0;
  o.strategy = in.ConsumeIntegralInRange<rootspan_load_strategy>(-1, 4);  // -1 and 4 name no strategy
  static const char *const patterns[] = {"*", "a", "w", "b*", "nothing-matches", ""};
  const char *chosen[2] = {patterns[in.ConsumeIntegralInRange<std::size_t>(0, std::size(patterns) - 1)], nullptr};
  switch (in.ConsumeIntegralInRange<int>(0, 5)) {
    case 0:
      o.tensors = chosen;
      o.tensor_count = 1;
      break;
    case 1:
      o.tensors = chosen;
      o.tensor_count = 2;  // the second is NULL
      break;
    case 2:
      o.tensors = nullptr;
      o.tensor_count = 3;
      break;
    default:
      break;
  }
  if (in.ConsumeIntegralInRange<int>(0, 7) == 0) o.revision = "main";
  o.source_digests = in.ConsumeBool() ? 1 : 0;
  o.populate = in.ConsumeIntegralInRange<int>(0, 3) == 0 ? 1 : 0;
  o.copy_on_write = in.ConsumeIntegralInRange<int>(0, 3) == 0 ? 1 : 0;
  o.check_digests = in.ConsumeIntegralInRange<int>(0, 3) == 0 ? 1 : 0;
  const std::string wrong_digests = (g_dir / "wrong.digests.json").string();
  const std::string broken_digests = (g_dir / "broken.digests.json").string();
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
    case 0:
      o.digests_path = wrong_digests.c_str();
      break;
    case 1:
      o.digests_path = broken_digests.c_str();
      break;
    default:
      break;
  }
  // A progress callback that goes on or cancels at once, and checks what it
  // is handed (never a NULL component, even with none to name).
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0:
      o.progress = [](void *, const rootspan_load_progress *p) {
        CHECK(p != nullptr && p->component != nullptr && p->bytes_done <= p->bytes_total, "load progress",
              "a NULL component or more done than the total");
        return 0;
      };
      break;
    case 1:
      o.progress = [](void *, const rootspan_load_progress *) { return 1; };
      break;
    default:
      break;
  }
  // Two rules laid out as a caller's compiler lays out the version the first
  // one's struct_size names: that size, rounded up to the struct's alignment,
  // apart (a newer, longer struct), where the library reads them; sizeof
  // apart where it names a size no version has (the library refuses those
  // after reading only the first size, or reads the array at a shorter
  // stride, inside it). The buffer holds two rules of the longest size the
  // library takes (1,024 bytes).
  constexpr std::size_t kLongestRule = 1024;
  alignas(rootspan_split_rule) std::byte rule_bytes[2 * kLongestRule + sizeof(rootspan_split_rule)]{};
  std::size_t rule_stride = sizeof(rootspan_split_rule);
  for (std::size_t i = 0; i < 2; ++i) {
    rootspan_split_rule rule{};
    rule.struct_size = choose_size(in, ROOTSPAN_SPLIT_RULE_STRUCT_SIZE, sizeof rule);
    rule.pattern = in.ConsumeIntegralInRange<int>(0, 7) == 0 ? nullptr : chosen[0];
    rule.dimension = in.ConsumeIntegralInRange<std::int32_t>(-2, 2);
    if (i == 0 && rule.struct_size > sizeof rule && rule.struct_size <= kLongestRule) {
      rule_stride = (rule.struct_size + alignof(rootspan_split_rule) - 1) / alignof(rootspan_split_rule) *
                    alignof(rootspan_split_rule);
    }
    std::memcpy(rule_bytes + i * rule_stride, &rule, sizeof rule);
  }
  const auto *rules = reinterpret_cast<const rootspan_split_rule *>(rule_bytes);
  constexpr std::size_t kRuleCount = 2;
  if (in.ConsumeIntegralInRange<int>(0, 3) == 0) {
    o.world_size = in.ConsumeIntegralInRange<std::uint32_t>(0, 3);
    o.rank = in.ConsumeIntegralInRange<std::uint32_t>(0, 3);
    o.split_rules = in.ConsumeBool() ? rules : nullptr;
    o.split_rule_count = in.ConsumeIntegralInRange<std::size_t>(0, kRuleCount);  // NULL rules with a count
  }
  const bool size_ok =
      accepted_size(o.struct_size, ROOTSPAN_LOAD_OPTIONS_STRUCT_SIZE, alignof(rootspan_load_options), older);
  const bool null_options = in.ConsumeIntegralInRange<int>(0, 7) == 0;
  const bool null_out = in.ConsumeIntegralInRange<int>(0, 31) == 0;
  rootspan_context *context = in.ConsumeIntegralInRange<int>(0, 31) == 0 ? nullptr : h.context;
  rootspan_weights *weights = nullptr;
  ErrorSlot e{nullptr, in.ConsumeBool()};
  inject_fault(in, h);
  const rootspan_status status = checked(
      "weights_load",
      rootspan_weights_load(context, path.c_str(), null_options ? nullptr : &o, null_out ? nullptr : &weights, e.out()),
      e);
  if (context == nullptr || null_out) expect_invalid("weights_load", status, "a NULL argument");
  if (!null_options && !size_ok) expect_invalid("weights_load", status, "options.struct_size names no version");
  if (!null_options && size_ok && (o.strategy < ROOTSPAN_LOAD_MMAP || o.strategy > ROOTSPAN_LOAD_AUTO)) {
    expect_invalid("weights_load", status, "an unknown strategy");
  }
  if (status != ROOTSPAN_OK) {
    CHECK(weights == nullptr, "weights_load failed but handed out weights");
    return;
  }
  WeightsRec w{weights,
               {},
               !null_options && o.source_digests != 0 &&
                   o.struct_size >= ROOTSPAN_STRUCT_END(rootspan_load_options, source_digests)};
  std::size_t count = 0;
  CHECK(rootspan_weights_component_count(weights, &count) == ROOTSPAN_OK, "weights_component_count");
  CHECK(rootspan_weights_provider(weights) != nullptr, "weights_provider is NULL");
  for (std::size_t i = 0; i < count; ++i) {
    rootspan_component_info info{};
    info.struct_size = ROOTSPAN_COMPONENT_INFO_STRUCT_SIZE;
    CHECK(rootspan_weights_component(weights, i, &info) == ROOTSPAN_OK, "weights_component", s(i));
    CHECK(info.id != nullptr && info.root != nullptr, "a component without id or root");
    std::size_t found = SIZE_MAX;
    CHECK(rootspan_weights_find(weights, info.id, &found) == ROOTSPAN_OK && found == i, "weights_find", info.id);
    // A lookup agrees with find; a miss comes with an error naming the call.
    const std::string near = std::string(info.id) + "~";
    rootspan_error *missed = nullptr;
    const rootspan_status looked = rootspan_weights_lookup(weights, near.c_str(), &found, &missed);
    CHECK(looked == ROOTSPAN_ERR_NOT_FOUND && missed != nullptr &&
              std::string_view(rootspan_error_operation(missed)) == "weights_lookup",
          "weights_lookup", near);
    rootspan_error_free(missed);
    record_root(h, info.root, nullptr, true);
    w.roots.push_back(info.root);
  }
  std::size_t skipped = 0;
  CHECK(rootspan_weights_skipped_count(weights, &skipped) == ROOTSPAN_OK, "weights_skipped_count");
  h.weights.push_back(std::move(w));
}

void op_weights_free(FuzzedDataProvider &in, Harness &h) {
  ErrorSlot e{nullptr, in.ConsumeBool()};
  WeightsRec *w = pick(in, h.weights);
  if (w == nullptr) {
    CHECK(checked("weights_free", rootspan_weights_free(nullptr, e.out()), e) == ROOTSPAN_OK, "weights_free(NULL)");
    return;
  }
  int claims = 0;
  for (rootspan_root *root : w->roots) claims += h.claims_on(root);
  inject_fault(in, h);
  const rootspan_status status = checked("weights_free", rootspan_weights_free(w->handle, e.out()), e);
  if (claims != 0) {
    CHECK(status == ROOTSPAN_ERR_BUSY, "weights_free with a claimed component", rootspan_status_name(status));
    return;
  }
  CHECK(status == ROOTSPAN_OK, "weights_free with nothing claimed", rootspan_status_name(status));
  for (rootspan_root *root : w->roots) forget_root(h, root);
  h.weights.erase(h.weights.begin() + (w - h.weights.data()));
}

void op_weights_sha256(FuzzedDataProvider &in, Harness &h) {
  WeightsRec *w = pick(in, h.weights);
  if (w == nullptr) return;
  std::size_t count = 0;
  rootspan_weights_component_count(w->handle, &count);
  const std::size_t index = in.ConsumeIntegralInRange<std::size_t>(0, count + 1);
  char hex[65];
  std::memset(hex, 'x', sizeof hex);
  ErrorSlot e{nullptr, in.ConsumeBool()};
  inject_fault(in, h);
  const rootspan_status status =
      checked("weights_component_sha256", rootspan_weights_component_sha256(w->handle, index, hex, e.out()), e);
  if (index >= count) CHECK(status != ROOTSPAN_OK, "sha256 of a component past the end succeeded");
  if (status == ROOTSPAN_OK) CHECK(std::strlen(hex) == 64, "a SHA-256 that is not 64 hex digits");
  // The digest of the bytes the load read: only when it was asked for.
  std::memset(hex, 'x', sizeof hex);
  const rootspan_status source =
      checked("weights_source_sha256", rootspan_weights_source_sha256(w->handle, index, hex, e.out()), e);
  if (index >= count) expect_invalid("weights_source_sha256", source, "an index past the end");
  if (index < count && !w->source_digests) {
    CHECK(source == ROOTSPAN_ERR_NOT_FOUND || source == ROOTSPAN_ERR_OUT_OF_MEMORY,
          "weights_source_sha256 without source_digests", rootspan_status_name(source));
  }
  if (source == ROOTSPAN_OK) CHECK(std::strlen(hex) == 64, "a source SHA-256 that is not 64 hex digits");
  // An older caller's component info, or one that ends inside a field.
  rootspan_component_info info{};
  info.struct_size =
      choose_size(in, ROOTSPAN_COMPONENT_INFO_STRUCT_SIZE, sizeof info, {ROOTSPAN_COMPONENT_INFO_PUBLISHED_SIZES});
  const bool size_ok = accepted_size(info.struct_size, ROOTSPAN_COMPONENT_INFO_STRUCT_SIZE,
                                     alignof(rootspan_component_info), {ROOTSPAN_COMPONENT_INFO_PUBLISHED_SIZES});
  const rootspan_status got = checked_plain("weights_component", rootspan_weights_component(w->handle, index, &info));
  if (!size_ok) expect_invalid("weights_component", got, "info.struct_size names no version");
}

// Read-only calls with random struct sizes: none may fail a size it accepts,
// and none may write past the size it was given (the canary after it).
void op_queries(FuzzedDataProvider &in, Harness &h) {
  RootRec *r = pick(in, h.roots);
  struct {
    rootspan_root_info info;
    unsigned char canary[64];
  } box;
  std::memset(&box, 0xcd, sizeof box);
  box.info.struct_size = choose_size(in, ROOTSPAN_ROOT_INFO_STRUCT_SIZE, sizeof box.info);
  const std::size_t size = box.info.struct_size;
  const rootspan_status status =
      checked_plain("root_get_info", rootspan_root_get_info(r == nullptr ? nullptr : r->handle, &box.info));
  if (r == nullptr) expect_invalid("root_get_info", status, "root is NULL");
  if (!accepted_size(size, ROOTSPAN_ROOT_INFO_STRUCT_SIZE, alignof(rootspan_root_info))) {
    expect_invalid("root_get_info", status, "info.struct_size names no version");
  }
  CHECK(box.info.struct_size == size, "root_get_info changed struct_size");
  const auto *bytes = reinterpret_cast<const unsigned char *>(&box);
  const std::size_t written = std::max(sizeof(std::size_t), std::min(size, ROOTSPAN_ROOT_INFO_STRUCT_SIZE));
  for (std::size_t i = written; i < sizeof box; ++i) {
    CHECK(bytes[i] == 0xcd, "root_get_info wrote past the struct_size it was given", s(i));
  }
  if (r != nullptr) {
    rootspan_span span{};
    span.struct_size = choose_size(in, ROOTSPAN_SPAN_STRUCT_SIZE, sizeof span);
    const bool span_ok = accepted_size(span.struct_size, ROOTSPAN_SPAN_STRUCT_SIZE, alignof(rootspan_span));
    ErrorSlot e{nullptr, in.ConsumeBool()};
    const rootspan_status derived = checked(
        "span_derive",
        rootspan_span_derive(r->handle, small_or_wild(in, r->length), small_or_wild(in, r->length), &span, e.out()), e);
    if (!span_ok) expect_invalid("span_derive", derived, "span.struct_size names no version");
  }
  if (h.context != nullptr) {
    rootspan_device_info device{};
    device.struct_size = choose_size(in, ROOTSPAN_DEVICE_INFO_STRUCT_SIZE, sizeof device);
    const bool device_ok =
        accepted_size(device.struct_size, ROOTSPAN_DEVICE_INFO_STRUCT_SIZE, alignof(rootspan_device_info));
    ErrorSlot e{nullptr, in.ConsumeBool()};
    const char *name = provider_name(in);
    const rootspan_status got =
        checked("provider_device_info",
                rootspan_provider_device_info(h.context, name, in.ConsumeIntegralInRange<std::uint32_t>(0, 2), &device,
                                              e.out()),
                e);
    if (name == nullptr) expect_invalid("provider_device_info", got, "provider is NULL");
    if (!device_ok && name != nullptr) expect_invalid("provider_device_info", got, "info.struct_size names no version");
    if (got == ROOTSPAN_OK) CHECK(std::memchr(device.name, 0, sizeof device.name) != nullptr, "an unterminated name");
    rootspan_provider_choice *choice = nullptr;
    ErrorSlot c{nullptr, in.ConsumeBool()};
    const rootspan_status chose =
        checked("provider_choose",
                rootspan_provider_choose(h.context, provider_name(in), in.ConsumeIntegralInRange<std::uint32_t>(0, 2),
                                         &choice, c.out()),
                c);
    if (chose == ROOTSPAN_OK) {
      CHECK(rootspan_provider_choice_name(choice) != nullptr && rootspan_provider_choice_explanation(choice) != nullptr,
            "a provider choice without a name or explanation");
    } else {
      CHECK(choice == nullptr, "provider_choose failed but handed out a choice");
    }
    rootspan_provider_choice_free(choice);
  }
}

enum Op {
  kContextCreate,
  kContextDestroy,
  kAddProvider,
  kAllocate,
  kImport,
  kRootRelease,
  kClaim,
  kSplit,
  kClaimRelease,
  kMap,
  kUnmap,
  kDeviceAccess,
  kDeviceAccessRelease,
  kCopy,
  kWeightsLoad,
  kWeightsFree,
  kWeightsSha256,
  kQueries,
  kOpCount
};

const char *const kOpNames[] = {"context_create",
                                "context_destroy",
                                "add_provider",
                                "root_allocate",
                                "root_import_host",
                                "root_release",
                                "claim_acquire",
                                "claim_split",
                                "claim_release",
                                "map",
                                "unmap",
                                "device_access_prepare",
                                "device_access_release",
                                "copy",
                                "weights_load",
                                "weights_free",
                                "weights_sha256",
                                "queries"};
static_assert(std::size(kOpNames) == kOpCount);

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  g_trace = std::getenv("ROOTSPAN_FUZZ_TRACE") != nullptr;
  generate_checkpoints();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  rootspan::testing::reset();
  Harness h;
  h.steady = rootspan::testing::behaviour();
  // Most inputs start with a context that has the test providers; the input
  // may also start without one and make it itself.
  if (in.ConsumeIntegralInRange<int>(0, 7) != 0) {
    CHECK(rootspan_context_create(nullptr, &h.context, nullptr) == ROOTSPAN_OK, "context_create(NULL options)");
    CHECK(rootspan_context_add_provider(h.context, rootspan::testing::test_provider_entry, nullptr, nullptr) ==
              ROOTSPAN_OK,
          "adding the test provider");
    CHECK(
        rootspan_context_add_provider(h.context, rootspan::testing::device_sim_entry, nullptr, nullptr) == ROOTSPAN_OK,
        "adding device-sim");
  }
  for (int step = 0; step < 256 && in.remaining_bytes() != 0; ++step) {
    const Op op = static_cast<Op>(in.ConsumeIntegralInRange<int>(0, kOpCount - 1));
    TRACE("step %d: %s\n", step, kOpNames[op]);
    switch (op) {
      case kContextCreate:
        op_context_create(in, h);
        break;
      case kContextDestroy:
        op_context_destroy(h);
        break;
      case kAddProvider:
        op_add_provider(in, h);
        break;
      case kAllocate:
        op_allocate(in, h);
        break;
      case kImport:
        op_import(in, h);
        break;
      case kRootRelease:
        op_root_release(in, h);
        break;
      case kClaim:
        op_claim(in, h);
        break;
      case kSplit:
        op_split(in, h);
        break;
      case kClaimRelease:
        op_claim_release(in, h);
        break;
      case kMap:
        op_map(in, h);
        break;
      case kUnmap:
        op_unmap(in, h);
        break;
      case kDeviceAccess:
        op_device_access(in, h);
        break;
      case kDeviceAccessRelease:
        op_device_access_release(in, h);
        break;
      case kCopy:
        op_copy(in, h);
        break;
      case kWeightsLoad:
        op_weights_load(in, h);
        break;
      case kWeightsFree:
        op_weights_free(in, h);
        break;
      case kWeightsSha256:
        op_weights_sha256(in, h);
        break;
      case kQueries:
        op_queries(in, h);
        break;
      case kOpCount:
        break;
    }
    rootspan::testing::behaviour() = h.steady;  // faults last one call
    check_between_calls(h, kOpNames[op]);
  }
  op_context_destroy(h);
  return 0;
}
