// The options that check a load against a model signature
// (docs/signed-models.md): --signature FILE with --public-key PEM or
// --certificate-chain PEM, and --ignore-unsigned-files.
#include <CLI/CLI.hpp>

#include "command.hpp"

namespace rootspan::cli {

void add_signature_options(CLI::App &app, SignatureArgs &signature) {
  CLI::Option *bundle =
      app.add_option("--signature", signature.signature,
                     "an OpenSSF model signature (a Sigstore bundle, as `rootspan sign` or `model_signing sign` "
                     "writes it) over the checkpoint's folder: its signature is checked before anything is read, and "
                     "every file it names is hashed from where the load placed its bytes (exit 3 unless all match)")
          ->type_name("FILE")
          ->check(non_empty("a file"));
  app.add_option("--public-key", signature.public_key,
                 "the PEM public key (ECDSA P-256, P-384 or P-521) a key-signed --signature is checked with")
      ->type_name("PEM")
      ->check(non_empty("a file"))
      ->needs(bundle);
  app.add_option("--certificate-chain", signature.certificate_chain,
                 "a PEM file of certificates to trust (repeatable) for a --signature made with a certificate: the "
                 "bundle's chain must lead to one of them; checked offline")
      ->type_name("PEM")
      ->allow_extra_args(false)
      ->needs(bundle);
  app.add_flag("--ignore-unsigned-files", signature.ignore_unsigned_files,
               "load even when the folder holds files the --signature does not name (they are not checked)")
      ->needs(bundle);
}

std::string check_signature_args(const SignatureArgs &signature) {
  if (signature.signature.empty() || !signature.public_key.empty() || !signature.certificate_chain.empty()) return "";
  return "--signature needs the key it was signed with (--public-key PEM) or the certificates to trust "
         "(--certificate-chain PEM)";
}

void apply_signature_args(const SignatureArgs &signature, std::vector<const char *> &chain,
                          rootspan_load_options &options) {
  chain = c_strings(signature.certificate_chain);
  options.signature_path = signature.signature.empty() ? nullptr : signature.signature.c_str();
  options.public_key_path = signature.public_key.empty() ? nullptr : signature.public_key.c_str();
  options.certificate_chain_paths = chain.data();
  options.certificate_chain_count = chain.size();
  options.ignore_unsigned_files = signature.ignore_unsigned_files ? 1 : 0;
}

}  // namespace rootspan::cli
