#include "weights/placement/available_memory.hpp"

#include <sys/sysinfo.h>

#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "core/text/quoting.hpp"

namespace rootspan::weights {

std::optional<std::uint64_t> available_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    if (!line.starts_with("MemAvailable:")) continue;
    std::istringstream fields(line.substr(13));
    std::uint64_t kib = 0;
    std::string unit;
    if (fields >> kib >> unit && unit == "kB") return kib * 1024;
  }
  struct sysinfo info {};
  if (::sysinfo(&info) != 0) return std::nullopt;
  return (static_cast<std::uint64_t>(info.freeram) + info.bufferram) * info.mem_unit;
}

Result<void> check_copy_fits(const std::string &file, std::uint64_t bytes, std::uint64_t total, std::uint64_t available,
                             std::string_view strategy, std::string operation) {
  if (total <= available) return BOOST_OUTCOME_V2_NAMESPACE::success();
  const bool mapped = strategy == "mmap";
  return make_error(ROOTSPAN_ERR_OUT_OF_MEMORY, std::move(operation),
                    quoted_text(file) + ": --strategy " + std::string(strategy) + " would copy " +
                        std::to_string(total) + " bytes into memory" +
                        (mapped ? " (the components packed from several tensors or strided, which cannot be mapped "
                                  "in place; "
                                : " (") +
                        std::to_string(bytes) + " of them from this file, its tensors' apparent size), but only " +
                        std::to_string(available) + " bytes are available (MemAvailable); " +
                        (mapped ? "load fewer components (--tensors), or free memory"
                                : "load it with --strategy mmap, or free memory"),
                    available, total);
}

}  // namespace rootspan::weights
