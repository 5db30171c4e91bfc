// Plugin library loading, policies L5 and L8 (docs/loader-policies.md), and the lookup of the
// provider entry symbol.
//   L5  A checked file (L4) is loaded with RTLD_NOW | RTLD_LOCAL through its
//       open descriptor ("/proc/self/fd/N"), so the bytes checked are the bytes
//       loaded. A failure is reported with the dynamic loader's own text, so a
//       missing dependency names the missing library
//       ("libfoo.so: cannot open shared object file: No such file or directory").
//   L8  The library stays loaded while any LoadedLibrary copy of it (or any
//       shared_ptr taken from it, e.g. by a root) is alive. It is never
//       unloaded during process teardown, and ROOTSPAN_NO_UNLOAD=1 keeps every
//       library loaded for good (for leak sanitizers, which need the code of a
//       leaking plugin to symbolize its stacks).
// The entry symbol: a library that loads but does not define
// ROOTSPAN_PROVIDER_ENTRY_SYMBOL itself, as a function, is refused citing L6:
// it loaded fine (L5 holds) but does not speak the provider ABI, which is what
// L6 negotiates. Every failure is ROOTSPAN_ERR_PLUGIN_REJECTED, operation
// "load_plugin".
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include <boost/dll/shared_library.hpp>

#include "core/diagnostic.hpp"
#include "core/loader/plugin_file_check.hpp"
#include "rootspan/provider.h"

namespace rootspan {

struct LoadedLibrary {
  // The loaded library. Its deleter unloads it, unless unloading is off (see
  // unloading_allowed); the file's descriptor stays open as long as it is
  // loaded (the dynamic loader knows the library by the name /proc/self/fd/N).
  std::shared_ptr<boost::dll::shared_library> library;
  std::filesystem::path path;  // the file that was checked and loaded
  std::string requested;       // the path or bare name as asked for
  std::string loaded_name;     // "/proc/self/fd/N", the dynamic loader's name for it
  rootspan_provider_entry_fn entry = nullptr;
};

// Loads a file that passed check_plugin_file and finds its entry symbol.
Result<LoadedLibrary> load_plugin_library(CheckedLibrary &&checked);

// False once the process has begun to exit: from then on a library whose last
// reference goes away is kept loaded instead of unloaded. (ROOTSPAN_NO_UNLOAD=1,
// read at each load, instead keeps one reference to that library for good.)
bool unloading_allowed();

}  // namespace rootspan
