// The rootspan program (docs/cli.md): one subcommand per file.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "command.hpp"

namespace {

// On stdout when asked for, on stderr when the command line was wrong.
void print_help(std::FILE *out) {
  std::fputs(
      "usage: rootspan <command> [options]\n"
      "\n"
      "commands:\n"
      "  version                     the library and provider ABI versions\n"
      "  providers                   the providers found, loaded or skipped, and why\n"
      "  inspect PATH [--schema FILE] [--revision REV]\n"
      "                              a checkpoint's shards, tensors and validation verdict (of the schema too)\n"
      "  load PATH [--schema FILE] [--tensors PATTERN]... [--revision REV] [--provider NAME|auto] [--device N]\n"
      "       [--strategy mmap|read] [--verify] [--rank R --world W --split PATTERN=DIM...]\n"
      "                              load every component (or those whose id matches a PATTERN) into provider\n"
      "                              memory (with --world, only rank R's slice; reports the bytes read)\n"
      "  plan PATH --rank R --world W [--split PATTERN=DIM]... [--schema FILE] [--tensors PATTERN]...\n"
      "                              the byte ranges rank R of W reads for each component, reading no tensor\n"
      "                              data; DIM -1 replicates; a component no PATTERN matches is replicated;\n"
      "                              uneven splits give the first n % W ranks one more (torch.tensor_split)\n"
      "\n"
      "PATH is a .safetensors or .gguf file (a split GGUF by any of its parts), a folder, an index file\n"
      "(model.safetensors.index.json), or a Hugging Face cache repository folder (models--org--name;\n"
      "--revision picks a snapshot, default refs/main).\n"
      "PATTERN is a shell-style glob over component ids ('*' matches '.' and '/' too).\n"
      "\n"
      "options of every command (also as --opt=value):\n"
      "  --json                      one JSON document on stdout; errors as JSON on stderr\n"
      "  --manifest FILE             read this manifest (repeatable; replaces discovery)\n"
      "  --no-static                 leave out the compiled-in providers\n"
      "\n"
      "exit status: 0 done, 2 usage, 3 invalid input, 4 provider or system failure\n",
      out);
}

}  // namespace

int main(int argc, char **argv) {
  using namespace rootspan::cli;
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    print_help(argc < 2 ? stderr : stdout);
    return argc < 2 ? kUsage : kDone;
  }
  const std::string command = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "version") return run_version(std::move(args));
  if (command == "providers") return run_providers(std::move(args));
  if (command == "inspect") return run_inspect(std::move(args));
  if (command == "load") return run_load(std::move(args));
  if (command == "plan") return run_plan(std::move(args));
  std::fprintf(stderr, "rootspan: unknown command '%s' (see rootspan --help)\n", command.c_str());
  return kUsage;
}
