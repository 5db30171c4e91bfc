#include "weights/checkpoints/gguf_checkpoint.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <system_error>
#include <utility>
#include <vector>

#include "core/sha256.hpp"
#include "core/text/quoting.hpp"
#include "weights/checkpoints/checkpoint_file.hpp"
#include "weights/formats/dtype.hpp"
#include "weights/formats/shard_index.hpp"

namespace rootspan::weights {

namespace {

namespace fs = std::filesystem;

constexpr const char *kOperation = "open_checkpoint";
constexpr std::string_view kExtension = ".gguf";
constexpr std::size_t kSplitDigits = 5;

Diagnostic invalid(const std::string &cause) { return make_error(ROOTSPAN_ERR_INVALID_CHECKPOINT, kOperation, cause); }
Diagnostic invalid(const std::string &cause, std::uint64_t expected, std::uint64_t actual) {
  return make_error(ROOTSPAN_ERR_INVALID_CHECKPOINT, kOperation, cause, expected, actual);
}

bool is_regular(const fs::path &path) {
  std::error_code error;
  return fs::is_regular_file(path, error);
}

// Regular *.gguf files of a folder, sorted; nullopt when it cannot be listed.
std::optional<std::vector<fs::path>> gguf_files_in(const fs::path &folder) {
  std::vector<fs::path> found;
  std::error_code error;
  for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
    if (it->path().extension() == kExtension && is_regular(it->path())) found.push_back(it->path());
  }
  if (error) return std::nullopt;
  std::sort(found.begin(), found.end());
  return found;
}

std::optional<std::uint32_t> parse_digits(std::string_view digits) {
  if (digits.size() != kSplitDigits) return std::nullopt;
  std::uint32_t value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

// The tensor table of a GGUF file in the form every checkpoint shard has.
TensorTable tensor_table(const GgufFile &gguf) {
  std::vector<TensorInfo> tensors;
  tensors.reserve(gguf.tensors.size());
  std::uint64_t total = 0;
  for (const GgufTensor &tensor : gguf.tensors) {
    TensorInfo info;
    info.name = tensor.name;
    if (tensor.type->dense) {
      info.dtype = *safetensors_dtype(*tensor.type->dense);
      info.shape = tensor.shape();
    } else {
      info.dtype = *safetensors_dtype(ROOTSPAN_DTYPE_U8);
      info.shape = tensor.byte_shape();
    }
    info.begin = tensor.offset;
    info.end = tensor.offset + tensor.bytes;  // the reader checked it lies inside the file
    total += tensor.bytes;                    // tensors do not overlap, so the sum is at most the file size
    tensors.push_back(std::move(info));
  }
  return TensorTable(std::move(tensors), total);
}

// The SHA-256 of the first `length` bytes of `input`.
Result<std::string> header_digest(const InputFile &input, std::uint64_t length) {
  Sha256 sha;
  std::vector<std::byte> buffer(std::min<std::uint64_t>(length, std::uint64_t{1} << 20));
  for (std::uint64_t done = 0; done < length; done += buffer.size()) {
    const std::uint64_t n = std::min<std::uint64_t>(buffer.size(), length - done);
    BOOST_OUTCOME_TRY(input.read_exact({buffer.data(), n}, done));
    sha.update({buffer.data(), n});
  }
  return sha.hex_digest();
}

// A part of the checkpoint, read from `input`, the one descriptor the load
// reads too.
Result<Shard> open_part(const fs::path &folder, const std::string &name, std::shared_ptr<const InputFile> input) {
  auto gguf = open_gguf(*input);
  if (!gguf) return gguf.error();
  auto shared = std::make_shared<const GgufFile>(std::move(gguf).value());
  // The header's digest, read once more right after the parse (the parser
  // reads it in windows), for a verified load to check it against.
  auto header = header_digest(*input, shared->data_offset);
  if (!header) return header.error();
  return Shard{name,         folder / name, shared->file_size, shared->data_offset,      tensor_table(*shared),
               std::nullopt, shared,        std::move(input),  std::move(header).value()};
}

// An integer metadata value of a part, or an error naming the part and key.
Result<std::optional<std::uint64_t>> split_key(const Shard &part, std::string_view key, bool required) {
  const GgufValue *value = part.gguf->find_value(key);
  if (value == nullptr) {
    if (!required) return std::optional<std::uint64_t>();
    return invalid(quoted_text(part.path.string()) + ": split part has no " + std::string(key) + " key");
  }
  const auto number = value->is_array() ? std::nullopt : value->unsigned_integer();
  if (!number) {
    return invalid(quoted_text(part.path.string()) + ": " + std::string(key) + " is of type " +
                   std::string(gguf_value_type_name(value->is_array() ? GgufValueType::kArray : value->type)) +
                   ", expected a non-negative integer");
  }
  return std::optional<std::uint64_t>(*number);
}

}  // namespace

bool is_gguf_folder(const fs::path &path) {
  std::error_code error;
  if (fs::exists(path / kShardIndexName, error) || is_regular(path / "model.safetensors")) return false;
  bool any_gguf = false;
  for (fs::directory_iterator it(path, error), end; !error && it != end; it.increment(error)) {
    if (it->path().extension() == ".safetensors") return false;
    any_gguf = any_gguf || (it->path().extension() == kExtension && is_regular(it->path()));
  }
  return any_gguf;
}

bool is_gguf_file(std::string_view name, const InputFile &input) {
  if (name.ends_with(kExtension)) return true;
  // Four bytes with one pread, from the descriptor the load reads.
  std::byte magic[4] = {};
  return input.read_exact(magic, 0) && has_gguf_magic(magic);
}

Result<std::string> gguf_file_in(const fs::path &folder) {
  const auto files = gguf_files_in(folder);
  if (!files) return make_error(ROOTSPAN_ERR_IO, kOperation, quoted_text(folder.string()) + ": cannot list the folder");
  if (files->empty()) return invalid(quoted_text(folder.string()) + ": folder has no *.gguf file");
  if (files->size() == 1) return files->front().filename().string();
  const auto first = parse_gguf_split_name(files->front().filename().string());
  bool one_set = first.has_value();
  for (const fs::path &file : *files) {
    const auto split = parse_gguf_split_name(file.filename().string());
    one_set = one_set && split && split->stem == first->stem && split->count == first->count;
  }
  if (one_set) return files->front().filename().string();
  std::string names;
  for (const fs::path &file : *files) names += (names.empty() ? "" : ", ") + quoted_text(file.filename().string());
  return invalid(quoted_text(folder.string()) + ": folder has " + std::to_string(files->size()) + " *.gguf files (" +
                 names + ") that are not the parts of one split file; name the file to load");
}

std::optional<GgufSplitName> parse_gguf_split_name(std::string_view name) {
  // STEM-PPPPP-of-CCCCC.gguf
  constexpr std::size_t kTail = 1 + kSplitDigits + 4 + kSplitDigits + 5;  // "-PPPPP-of-CCCCC.gguf"
  if (name.size() <= kTail || !name.ends_with(kExtension)) return std::nullopt;
  const std::string_view tail = name.substr(name.size() - kTail);
  if (tail[0] != '-' || tail.substr(1 + kSplitDigits, 4) != "-of-") return std::nullopt;
  const auto part = parse_digits(tail.substr(1, kSplitDigits));
  const auto count = parse_digits(tail.substr(1 + kSplitDigits + 4, kSplitDigits));
  if (!part || !count || *part == 0 || *count == 0 || *part > *count) return std::nullopt;
  return GgufSplitName{std::string(name.substr(0, name.size() - kTail)), *part, *count};
}

std::string gguf_split_file_name(std::string_view stem, std::uint32_t part, std::uint32_t count) {
  char tail[32];
  std::snprintf(tail, sizeof tail, "-%05u-of-%05u.gguf", part, count);
  return std::string(stem) + tail;
}

const GgufTensor *gguf_tensor(const TensorRef &tensor) {
  if (!tensor || !tensor.shard->gguf) return nullptr;
  return tensor.shard->gguf->find_tensor(tensor.tensor->name);
}

Result<std::vector<Shard>> open_gguf_parts(const fs::path &folder, const std::string &name,
                                           std::shared_ptr<const InputFile> input, std::span<const fs::path> trusted) {
  const fs::path file = folder / name;
  // Each part opened beneath the trusted folders, `name` only once.
  const auto open_named = [&](const std::string &part_name) -> Result<Shard> {
    if (part_name == name && input) return open_part(folder, part_name, input);
    auto opened = open_checkpoint_file(folder, part_name, trusted, file.string());
    if (!opened) return opened.error();
    return open_part(folder, part_name, std::move(opened).value());
  };
  std::vector<Shard> shards;

  const auto split = parse_gguf_split_name(name);
  if (!split) {
    auto shard = open_named(name);
    if (!shard) return shard.error();
    auto count = split_key(shard.value(), "split.count", false);
    if (!count) return count.error();
    if (count.value() && *count.value() > 1) {
      return invalid(quoted_text(file.string()) + ": split.count is " + std::to_string(*count.value()) +
                         ": this is one part of a split file, but its name does not follow "
                         "NAME-00001-of-NNNNN.gguf, so the other parts cannot be found",
                     1, *count.value());
    }
    shards.push_back(std::move(shard).value());
    return shards;
  }

  // Every part, in order, each saying which part it is.
  std::uint64_t tensor_total = 0;
  for (std::uint32_t part = 1; part <= split->count; ++part) {
    const std::string part_name = gguf_split_file_name(split->stem, part, split->count);
    const fs::path part_path = folder / part_name;
    if (!is_regular(part_path)) {
      return invalid(quoted_text(file.string()) + ": split part " + std::to_string(part) + " of " +
                         std::to_string(split->count) + ", " + quoted_text(part_name) + ", is missing from " +
                         quoted_text(folder.string()),
                     split->count, part - 1);
    }
    auto shard = open_named(part_name);
    if (!shard) return shard.error();
    auto number = split_key(shard.value(), "split.no", true);
    if (!number) return number.error();
    auto count = split_key(shard.value(), "split.count", true);
    if (!count) return count.error();
    if (*count.value() != split->count) {
      return invalid(quoted_text(part_path.string()) + ": split.count is " + std::to_string(*count.value()) +
                         " but the file name says " + std::to_string(split->count) + " parts",
                     split->count, *count.value());
    }
    if (*number.value() != part - 1) {
      return invalid(quoted_text(part_path.string()) + ": split.no is " + std::to_string(*number.value()) +
                         " but the file name says part " + std::to_string(part) + " (split.no " +
                         std::to_string(part - 1) + ")",
                     part - 1, *number.value());
    }
    tensor_total += shard.value().gguf->tensors.size();
    shards.push_back(std::move(shard).value());
  }
  for (const Shard &shard : shards) {
    auto claimed = split_key(shard, "split.tensors.count", false);
    if (!claimed) return claimed.error();
    if (claimed.value() && *claimed.value() != tensor_total) {
      return invalid(quoted_text(shard.path.string()) + ": split.tensors.count is " + std::to_string(*claimed.value()) +
                         " but the " + std::to_string(split->count) + " parts hold " + std::to_string(tensor_total) +
                         " tensors",
                     tensor_total, *claimed.value());
    }
  }
  return shards;
}

}  // namespace rootspan::weights
