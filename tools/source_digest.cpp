#include "source_digest.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

namespace rootspan::cli {

namespace {

struct FileCloser {
  int fd;
  ~FileCloser() {
    if (fd >= 0) close(fd);
  }
};

struct DigestContextDeleter {
  void operator()(EVP_MD_CTX *context) const { EVP_MD_CTX_free(context); }
};

constexpr std::size_t kChunk = 4u << 20;

// The folder the plan's file names are relative to.
bool checkpoint_folder(const std::string &path, const rootspan_load_options &options, std::string &folder,
                       ErrorPtr &error) {
  rootspan_inspect_options inspect{};
  inspect.struct_size = sizeof inspect;
  inspect.revision = options.revision;
  char *text = nullptr;
  rootspan_error *raw_error = nullptr;
  if (rootspan_checkpoint_inspect_with_options(path.c_str(), &inspect, &text, &raw_error) != ROOTSPAN_OK) {
    error.reset(raw_error);
    return false;
  }
  folder = nlohmann::json::parse(text)["folder"].get<std::string>();
  rootspan_string_free(text);
  return true;
}

// Feeds `rows` rows of `row_length` bytes of `file`, the first at `first`,
// each `stride` bytes after the last, to the digest.
std::string digest_rows(const std::string &file, std::uint64_t first, std::uint64_t row_length, std::uint64_t rows,
                        std::uint64_t stride, EVP_MD_CTX *context, std::vector<unsigned char> &buffer) {
  const FileCloser closer{open(file.c_str(), O_RDONLY | O_CLOEXEC)};
  if (closer.fd < 0) return "cannot open \"" + file + "\": " + std::strerror(errno);
  for (std::uint64_t row = 0; row < rows; ++row) {
    std::uint64_t offset = first + row * stride, length = row_length;
    while (length > 0) {
      const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(length, buffer.size()));
      const ssize_t got = pread(closer.fd, buffer.data(), want, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0)
        return "cannot read \"" + file + "\" at offset " + std::to_string(offset) + ": " + std::strerror(errno);
      if (got == 0) return "\"" + file + "\" ends before offset " + std::to_string(offset + length);
      EVP_DigestUpdate(context, buffer.data(), static_cast<std::size_t>(got));
      offset += static_cast<std::uint64_t>(got);
      length -= static_cast<std::uint64_t>(got);
    }
  }
  return "";
}

}  // namespace

bool digest_sources(const std::string &path, const rootspan_load_options &options, SourceDigests &out, ErrorPtr &error,
                    std::string &problem) {
  rootspan_load_options plan_options = options;
  if (plan_options.world_size == 0) {
    // One rank of one, no split rule: every component whole.
    plan_options.rank = 0;
    plan_options.world_size = 1;
    plan_options.split_rules = nullptr;
    plan_options.split_rule_count = 0;
  }
  plan_options.progress = nullptr;
  char *text = nullptr;
  rootspan_error *raw_error = nullptr;
  if (rootspan_checkpoint_read_plan(path.c_str(), &plan_options, &text, &raw_error) != ROOTSPAN_OK) {
    error.reset(raw_error);
    return false;
  }
  const nlohmann::json plan = nlohmann::json::parse(text);
  rootspan_string_free(text);
  std::string folder;
  if (!checkpoint_folder(path, options, folder, error)) return false;

  std::vector<unsigned char> buffer(kChunk);
  const std::unique_ptr<EVP_MD_CTX, DigestContextDeleter> context(EVP_MD_CTX_new());
  for (const auto &component : plan["components"]) {
    const std::string id = component["id"].get<std::string>();
    // The reads in the order their bytes lie in the component.
    std::vector<nlohmann::json> reads(component["reads"].begin(), component["reads"].end());
    std::sort(reads.begin(), reads.end(), [](const nlohmann::json &a, const nlohmann::json &b) {
      return a["destination_offset"].get<std::uint64_t>() < b["destination_offset"].get<std::uint64_t>();
    });
    EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr);
    std::uint64_t next = 0;
    for (const auto &read : reads) {
      if (read["destination_offset"].get<std::uint64_t>() != next) {
        problem = "component \"" + id + "\": its read plan leaves a gap at byte " + std::to_string(next);
        return false;
      }
      // A strided read: `rows` rows of `length` bytes, `stride` apart.
      const std::uint64_t length = read["length"].get<std::uint64_t>();
      const std::uint64_t rows = read["rows"].get<std::uint64_t>(), stride = read["stride"].get<std::uint64_t>();
      problem = digest_rows(folder + "/" + read["file"].get<std::string>(), read["file_offset"].get<std::uint64_t>(),
                            length, rows, stride, context.get(), buffer);
      if (!problem.empty()) return false;
      next += rows * length;
    }
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int digest_length = 0;
    EVP_DigestFinal_ex(context.get(), digest, &digest_length);
    std::string hex;
    static const char *const kDigits = "0123456789abcdef";
    for (unsigned int i = 0; i < digest_length; ++i) {
      hex += kDigits[digest[i] >> 4];
      hex += kDigits[digest[i] & 15];
    }
    out.by_component[id] = hex;
  }
  return true;
}

}  // namespace rootspan::cli
