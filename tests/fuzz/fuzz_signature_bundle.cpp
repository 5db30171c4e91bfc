// libFuzzer target for the model signature parser (docs/signed-models.md):
// any bytes, read as a Sigstore bundle and as the in-toto statement it
// carries, must give a value or a ROOTSPAN_ERR_SIGNATURE_INVALID Diagnostic,
// never a crash, hang or exception. A statement that parses is written back
// with signed_statement_json and must parse again to the same statement.
// Seed corpus: tests/fuzz/corpus/signature_bundle/ (bundles made by
// `rootspan sign` and the reference's model_signing).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "weights/signing/model_signature.hpp"

namespace {

using rootspan::weights::SignedStatement;
using rootspan::weights::SigningMethod;

void check_error(const rootspan::Diagnostic &error) {
  if (error.code != ROOTSPAN_ERR_SIGNATURE_INVALID || error.operation != "verify_signature") std::abort();
  if (error.cause.find("fuzz") == std::string::npos) std::abort();  // names the subject
}

bool same(const SignedStatement &a, const SignedStatement &b) {
  if (a.model_name != b.model_name || a.method != b.method || a.shard_size != b.shard_size ||
      a.allow_symlinks != b.allow_symlinks || a.ignore_paths != b.ignore_paths ||
      a.resources.size() != b.resources.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.resources.size(); ++i) {
    const auto &x = a.resources[i], &y = b.resources[i];
    if (x.path != y.path || x.start != y.start || x.end != y.end || x.sha256 != y.sha256) return false;
  }
  return true;
}

void statement(std::string_view payload) {
  auto parsed = rootspan::weights::parse_signed_statement(payload, "fuzz.sig");
  if (!parsed) {
    check_error(parsed.error());
    return;
  }
  const SignedStatement &s = parsed.value();
  if (s.method == SigningMethod::kShards && s.shard_size == 0) std::abort();
  for (const auto &r : s.resources) {
    if (r.path.empty() || r.path.front() == '/' || r.sha256.size() != 64) std::abort();
    if (s.method == SigningMethod::kShards &&
        (r.start >= r.end || r.start % s.shard_size != 0 || r.end - r.start > s.shard_size)) {
      std::abort();
    }
  }
  auto again = rootspan::weights::parse_signed_statement(rootspan::weights::signed_statement_json(s), "fuzz.sig");
  if (!again || !same(s, again.value())) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  auto bundle = rootspan::weights::parse_signature_bundle(text, "fuzz.sig");
  if (bundle) {
    if (bundle.value().signature.empty()) std::abort();
    statement(bundle.value().payload);
  } else {
    check_error(bundle.error());
  }
  statement(text);
  return 0;
}
