#include "core/loader/plugin_library.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>
#include <vector>

namespace rootspan {

namespace {

namespace fs = std::filesystem;

constexpr const char *kOperation = "load_plugin";

// ---- L8: never unload during process teardown --------------------------------
//
// exit() runs, in this order: the calling thread's thread_local destructors,
// then the atexit/static-destructor list in reverse order of registration.
// A context held in a static (or destroyed by a static destructor) can
// therefore drop the last reference to a library at any point of the second
// step, and a library unloaded there may still have code that runs later
// (its own atexit handlers, a runtime's teardown). So the "process is
// exiting" flag is raised by the first thing exit() does: the destructor of a
// thread_local sentinel armed on the main thread. An atexit handler, registered
// at the first load, raises it too, for an exit() called from another thread
// (it covers everything registered before that first load).
// Once the flag is up, a released library goes to a process-lifetime list
// instead of being unloaded; the list stays reachable, so leak checkers do not
// report it.

std::atomic<bool> g_exiting{false};

struct ExitSentinel {
  void arm() {}
  ~ExitSentinel() {
    if (::gettid() == ::getpid()) g_exiting.store(true);  // only the main thread's exit means the process's
  }
};
thread_local ExitSentinel t_exit_sentinel;

void arm_exit_detection() {
  if (::gettid() == ::getpid()) t_exit_sentinel.arm();
  static std::once_flag once;
  std::call_once(once, [] { std::atexit([] { g_exiting.store(true); }); });
}

// The program's static initialization runs on the main thread: arm there, so
// that the sentinel's destructor comes first even if the first load happens
// on another thread.
[[maybe_unused]] const bool g_armed_at_start = (arm_exit_detection(), true);

struct Holder;  // below, with the descriptor names

struct KeptLibraries {
  std::mutex mutex;
  std::vector<Holder *> released_at_exit;
  std::vector<std::shared_ptr<Holder>> no_unload;
  std::vector<int> reserved_descriptors;  // open for good (see release_descriptor)
};

KeptLibraries &kept() {
  static auto *libraries = new KeptLibraries;  // never destroyed: must outlive every static destructor
  return *libraries;
}

// ---- descriptor names --------------------------------------------------------
//
// A plugin is loaded as "/proc/self/fd/N", and the dynamic loader knows it by
// that name: dlopen of a name it knows returns the library it knows by it,
// without opening anything. A library can outlive the core's dlclose (linked
// with -z nodelete, or also opened by other code: the loader then adds the
// descriptor name to that object's names). Were N closed and handed out
// again, the next plugin opened on it would get the old library back. So a
// descriptor whose name the loader still knows is never closed, and a
// descriptor whose name the loader knows for another file is never loaded.

std::string descriptor_name(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

// The object the dynamic loader answers to name with (the caller dlcloses
// it), or nullptr. Without a loaded object of that name the loader opens the
// file and answers with an object already loaded from the same file (device
// and inode), adding name to that object's names.
void *known_as(const std::string &name) {
  void *handle = ::dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) ::dlerror();
  return handle;
}

// Closes a descriptor, unless the loader still knows a library by its name:
// that one stays open for the life of the process, so its number is never
// reused.
void release_descriptor(UniqueFd fd) {
  if (!fd) return;
  if (void *known = known_as(descriptor_name(fd.get()))) {
    ::dlclose(known);
    std::lock_guard<std::mutex> lock(kept().mutex);
    kept().reserved_descriptors.push_back(fd.release());
  }
}

// A descriptor of the checked file whose name the loader knows for no other
// file: fd itself, or a duplicate of it. The loader knows a name either from
// a library that outlived its descriptor (a stale name: another file), or
// because this very file is already loaded under another name (matched by
// device and inode). Only in the second case does a second name of the same
// file lead to the same object. A stale name is never tried again.
Result<UniqueFd> descriptor_with_free_name(UniqueFd fd, const std::string &who) {
  constexpr int kAttempts = 8;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    void *known = known_as(descriptor_name(fd.get()));
    if (known == nullptr) return fd;
    UniqueFd other(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0));
    const int err = errno;
    void *again = other ? known_as(descriptor_name(other.get())) : nullptr;
    ::dlclose(known);
    if (again != nullptr) ::dlclose(again);
    if (!other) {
      Diagnostic d = make_error(ROOTSPAN_ERR_PLUGIN_REJECTED, kOperation,
                                who + ": cannot duplicate its descriptor: " + std::strerror(err));
      d.policy = "L5";
      return d;
    }
    if (again == known) {  // this file, loaded elsewhere: fd's name leads to it
      release_descriptor(std::move(other));
      return fd;
    }
    release_descriptor(std::move(fd));  // stale: kept open, never reused
    fd = std::move(other);
  }
  Diagnostic d = make_error(ROOTSPAN_ERR_PLUGIN_REJECTED, kOperation,
                            who + ": the dynamic loader knows another library by each of " + std::to_string(kAttempts) +
                                " descriptor names tried");
  d.policy = "L5";
  return d;
}

// A dependency loaded ahead of its plugin (L4 checked it), through its own
// descriptor, so that the plugin's DT_NEEDED name resolves to it.
struct PreloadedDependency {
  UniqueFd fd;
  void *handle = nullptr;

  PreloadedDependency() = default;
  PreloadedDependency(const PreloadedDependency &) = delete;
  PreloadedDependency &operator=(const PreloadedDependency &) = delete;
  ~PreloadedDependency() {
    if (handle != nullptr) ::dlclose(handle);
    release_descriptor(std::move(fd));
  }
};

// What a LoadedLibrary owns: the library, the descriptor it was loaded from
// and its preloaded dependencies. The library is unloaded first, then its
// dependencies (the last loaded first); each descriptor is then closed, or
// kept open for good when its library outlived the unload
// (release_descriptor).
struct Holder {
  UniqueFd fd;
  std::string name;  // descriptor_name(fd): the loader's name for the library
  std::vector<std::unique_ptr<PreloadedDependency>> dependencies;  // in load order
  boost::dll::shared_library library;

  Holder() = default;
  Holder(const Holder &) = delete;
  Holder &operator=(const Holder &) = delete;
  ~Holder() {
    library.unload();
    while (!dependencies.empty()) dependencies.pop_back();
    release_descriptor(std::move(fd));
  }
};

void release_holder(Holder *holder) {
  if (g_exiting.load()) {
    std::lock_guard<std::mutex> lock(kept().mutex);
    kept().released_at_exit.push_back(holder);
    return;
  }
  delete holder;
}

bool no_unload_requested() {
  const char *value = ::secure_getenv("ROOTSPAN_NO_UNLOAD");
  return value != nullptr && std::string_view(value) == "1";
}

// ---- L5 ---------------------------------------------------------------------

// The dynamic loader names the file by its descriptor path; messages name the file.
std::string rename_in(std::string text, const std::string &from, const std::string &to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

std::string subject(const CheckedLibrary &lib) {
  std::string s = (lib.context.empty() ? "" : lib.context + ": ") + "plugin " + lib.requested;
  if (lib.path.string() != lib.requested) s += " (" + lib.path.string() + ")";
  return s;
}

Diagnostic rejected(const char *policy, const std::string &who, const std::string &cause) {
  Diagnostic d = make_error(ROOTSPAN_ERR_PLUGIN_REJECTED, kOperation, who + ": " + cause);
  d.policy = policy;
  return d;
}

std::string symbol_type_name(unsigned type) {
  switch (type) {
    case STT_NOTYPE:
      return "STT_NOTYPE";
    case STT_OBJECT:
      return "STT_OBJECT (data)";
    case STT_FUNC:
      return "STT_FUNC";
    case STT_GNU_IFUNC:
      return "STT_GNU_IFUNC";
    case STT_TLS:
      return "STT_TLS";
    default:
      return "symbol type " + std::to_string(type);
  }
}

}  // namespace

bool unloading_allowed() { return !g_exiting.load(); }

Result<LoadedLibrary> load_plugin_library(CheckedLibrary &&checked) {
  arm_exit_detection();
  const std::string who = subject(checked);
  const std::string real_name = checked.path.string();
  if (!checked.fd) return rejected("L5", who, "no open descriptor (expected a file checked by L4)");
  auto named = descriptor_with_free_name(std::move(checked.fd), who);
  if (!named) return named.error();
  // From here every way out goes through ~Holder, which unloads the library
  // and then closes (or keeps) the descriptor.
  auto holder = std::make_unique<Holder>();
  holder->fd = std::move(named).value();
  holder->name = descriptor_name(holder->fd.get());
  const std::string &loaded_name = holder->name;

  // The plugin's own dependencies first, each from its checked descriptor
  // (L4): the plugin's DT_NEEDED then resolves to them by soname, instead of
  // to whatever a search from /proc/self/fd (its $ORIGIN here) would find.
  for (CheckedLibrary &dependency : checked.dependencies) {
    const std::string dependency_who =
        who + ": dependency " + dependency.needed_as + " (" + dependency.path.string() + ")";
    auto free_name = descriptor_with_free_name(std::move(dependency.fd), dependency_who);
    if (!free_name) return free_name.error();
    auto preloaded = std::make_unique<PreloadedDependency>();
    preloaded->fd = std::move(free_name).value();
    const std::string name = descriptor_name(preloaded->fd.get());
    ::dlerror();
    preloaded->handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (preloaded->handle == nullptr) {
      const char *text = ::dlerror();
      return rejected("L5", dependency_who,
                      "dlopen(RTLD_NOW | RTLD_LOCAL) failed: " +
                          rename_in(text ? text : "unknown error", name, dependency.path.string()));
    }
    holder->dependencies.push_back(std::move(preloaded));
  }

  // Boost.DLL reports a failed dlopen as "Bad file descriptor". Load once with
  // dlopen itself to keep the loader's text (it names a missing dependency);
  // Boost's load of the same name then only takes another reference.
  ::dlerror();
  void *probe = ::dlopen(loaded_name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (probe == nullptr) {
    const char *text = ::dlerror();
    return rejected(
        "L5", who,
        "dlopen(RTLD_NOW | RTLD_LOCAL) failed: " + rename_in(text ? text : "unknown error", loaded_name, real_name));
  }
  std::error_code ec;
  holder->library.load(loaded_name, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, ec);
  const char *text = ec ? ::dlerror() : nullptr;
  const std::string boost_text = text ? rename_in(text, loaded_name, real_name) : ec.message();
  ::dlclose(probe);  // while the descriptor is open (see release_descriptor)
  if (ec || !holder->library.is_loaded()) {
    return rejected("L5", who, "loading with Boost.DLL failed: " + boost_text);
  }

  // The entry symbol, defined by this library itself (dlsym also searches its
  // dependencies), as a function.
  void *handle = holder->library.native();
  ::dlerror();
  void *symbol = ::dlsym(handle, ROOTSPAN_PROVIDER_ENTRY_SYMBOL);
  if (symbol == nullptr) {
    const char *text = ::dlerror();
    return rejected(
        "L6", who,
        std::string("does not export the provider entry symbol (expected ") + ROOTSPAN_PROVIDER_ENTRY_SYMBOL +
            ", actual: " + (text ? rename_in(text, loaded_name, real_name) : std::string("symbol is NULL")) + ")");
  }
  Dl_info info{};
  link_map *owner = nullptr;
  void *symbol_entry = nullptr;
  if (::dladdr1(symbol, &info, reinterpret_cast<void **>(&owner), RTLD_DL_LINKMAP) == 0 ||
      ::dladdr1(symbol, &info, &symbol_entry, RTLD_DL_SYMENT) == 0) {
    return rejected("L6", who,
                    std::string("the address of ") + ROOTSPAN_PROVIDER_ENTRY_SYMBOL + " lies in no loaded object");
  }
  // In glibc a dlopen handle is the library's link_map.
  if (owner != static_cast<link_map *>(handle)) {
    return rejected("L6", who,
                    std::string(ROOTSPAN_PROVIDER_ENTRY_SYMBOL) + " is defined by a dependency (expected " + real_name +
                        ", actual " + (owner && owner->l_name ? owner->l_name : "?") + ")");
  }
  // ST_TYPE is the low nibble of st_info in both ELF classes.
  const auto *entry_symbol = static_cast<const ElfW(Sym) *>(symbol_entry);
  if (entry_symbol != nullptr && ELF64_ST_TYPE(entry_symbol->st_info) != STT_FUNC) {
    return rejected("L6", who,
                    std::string(ROOTSPAN_PROVIDER_ENTRY_SYMBOL) + " is not a function (expected STT_FUNC, actual " +
                        symbol_type_name(ELF64_ST_TYPE(entry_symbol->st_info)) + ")");
  }

  LoadedLibrary loaded;
  loaded.path = checked.path;
  loaded.requested = checked.requested;
  loaded.loaded_name = loaded_name;
  loaded.entry = reinterpret_cast<rootspan_provider_entry_fn>(symbol);
  std::shared_ptr<Holder> owned(holder.release(), release_holder);
  if (no_unload_requested()) {
    std::lock_guard<std::mutex> lock(kept().mutex);
    kept().no_unload.push_back(owned);
  }
  loaded.library = std::shared_ptr<boost::dll::shared_library>(owned, &owned->library);
  return loaded;
}

}  // namespace rootspan
