// `rootspan sign PATH --private-key PEM [--certificate PEM
// [--certificate-chain PEM...]] [--shards [--shard-size N]]
// [--allow-symlinks] [--ignore PATH...] -o FILE`: an OpenSSF model signature
// (OMS v1.0, a Sigstore bundle) over every file of a model folder, which
// `load --signature` and the reference `model_signing verify` accept
// (docs/signed-models.md). The bundle is written as a new file renamed over
// FILE (replacing_write.hpp): a link planted at FILE is replaced, never
// written through.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "command.hpp"
#include "replacing_write.hpp"
#include "rootspan/weights.h"
#include "terminal_text.hpp"
#include "text_table.hpp"

namespace rootspan::cli {

namespace {

struct SignArgs {
  std::string path;
  std::string revision;
  std::string private_key;
  std::string certificate;
  std::vector<std::string> certificate_chain;
  bool shards = false;
  std::uint64_t shard_size = 0;
  bool allow_symlinks = false;
  std::vector<std::string> ignore;
  std::string output;
};

int run_sign(const SignArgs &args, const CommonOptions &options) {
  if (args.shard_size != 0 && !args.shards) return print_usage_error(options, "--shard-size goes with --shards");
  const std::vector<const char *> chain = c_strings(args.certificate_chain);
  const std::vector<const char *> ignore = c_strings(args.ignore);
  rootspan_sign_options opts{};
  opts.struct_size = sizeof opts;
  opts.private_key_path = args.private_key.c_str();
  opts.certificate_path = args.certificate.empty() ? nullptr : args.certificate.c_str();
  opts.certificate_chain_paths = chain.data();
  opts.certificate_chain_count = chain.size();
  opts.shards = args.shards ? 1 : 0;
  opts.shard_size = args.shard_size;
  opts.allow_symlinks = args.allow_symlinks ? 1 : 0;
  opts.ignore_paths = ignore.data();
  opts.ignore_path_count = ignore.size();
  opts.signature_path = args.output.c_str();
  opts.revision = args.revision.empty() ? nullptr : args.revision.c_str();

  char *bundle = nullptr;
  rootspan_error *raw_error = nullptr;
  if (rootspan_model_sign(args.path.c_str(), &opts, &bundle, &raw_error) != ROOTSPAN_OK) {
    const ErrorPtr error(raw_error);
    return print_error(options, error.get());
  }
  const std::string text = std::string(bundle) + "\n";
  rootspan_string_free(bundle);
  if (const std::string failure = write_replacing(args.output, text); !failure.empty()) {
    return print_program_error(
        options, kInvalidInput, "Io", "sign_model",
        "cannot write the signature to \"" + terminal_safe(args.output) + "\": " + terminal_safe(failure));
  }
  if (options.json) {
    print_json({{"signature", args.output}, {"method", args.shards ? "shards" : "files"}});
  } else {
    print_wrapped("wrote " + terminal_safe(args.output) + ": a model signature (" + (args.shards ? "shards" : "files") +
                      ", " + (args.certificate.empty() ? "key" : "certificate chain") + ") of " +
                      terminal_safe(args.path),
                  output_width());
  }
  return kDone;
}

}  // namespace

Runner add_sign_command(CLI::App &rootspan, CommonOptions &common) {
  CLI::App *app = rootspan.add_subcommand(
      "sign",
      "sign a model folder: an OpenSSF model signature (a Sigstore bundle) listing the SHA-256 of every file, for "
      "load --signature and model_signing verify");
  auto args = std::make_shared<SignArgs>();
  app->add_option("PATH", args->path, "the model folder, or a Hugging Face cache repository folder")->required();
  app->add_option("--revision", args->revision, "the ref or snapshot of a Hugging Face cache repository")
      ->type_name("REV")
      ->check(non_empty("a branch, tag or commit"));
  app->add_option("--private-key", args->private_key, "the PEM private key to sign with (ECDSA P-256, P-384, P-521)")
      ->type_name("PEM")
      ->required()
      ->check(non_empty("a file"));
  CLI::Option *certificate =
      app->add_option("--certificate", args->certificate,
                      "the key's PEM certificate: sign with a certificate chain instead of naming the public key")
          ->type_name("PEM")
          ->check(non_empty("a file"));
  app->add_option("--certificate-chain", args->certificate_chain,
                  "PEM certificates above --certificate, put in the bundle (repeatable)")
      ->type_name("PEM")
      ->allow_extra_args(false)
      ->needs(certificate);
  app->add_flag("--shards", args->shards, "a digest per --shard-size bytes of each file instead of one per file");
  app->add_option("--shard-size", args->shard_size, "bytes per shard (default 1000000000)")
      ->type_name("N")
      ->check(CLI::Range(std::uint64_t{1}, UINT64_MAX));
  app->add_flag("--allow-symlinks", args->allow_symlinks,
                "follow links in the folder (a Hugging Face cache snapshot) instead of refusing them");
  app->add_option("--ignore", args->ignore,
                  "a path relative to the folder to leave out (repeatable; .git, .gitattributes, .github and "
                  ".gitignore always are)")
      ->type_name("PATH")
      ->allow_extra_args(false);
  app->add_option("--output,-o", args->output, "where to write the signature (inside the folder, it is left out)")
      ->type_name("FILE")
      ->required()
      ->check(non_empty("a file"));
  add_common_options(*app, common);
  return [args, &common] { return run_sign(*args, common); };
}

}  // namespace rootspan::cli
