/* A program an embedder would write against an installed rootspan: it loads
 * a checkpoint and finds one component by id. The install test compiles it
 * twice, with `pkg-config --cflags --libs rootspan` and with CMake's
 * find_package(rootspan), and checks its output against the file.
 *
 * usage: installed_embed CHECKPOINT COMPONENT_ID [SCHEMA]
 * prints: ID DTYPE [D0,D1,...] BYTE_LENGTH ROLE HEX_OF_THE_FIRST_16_BYTES
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rootspan/rootspan.h>
#include <rootspan/weights.h>

static int fail(const char *what, rootspan_status status, rootspan_error *error) {
  fprintf(stderr, "installed_embed: %s: %s: %s\n", what, rootspan_status_name(status),
          error != NULL ? rootspan_error_message(error) : "(no error object)");
  rootspan_error_free(error);
  return 1;
}

int main(int argc, char **argv) {
  rootspan_context *context = NULL;
  rootspan_weights *weights = NULL;
  rootspan_error *error = NULL;
  rootspan_load_options options;
  rootspan_component_info info;
  rootspan_claim *claim = NULL;
  unsigned char first[16];
  uint64_t n, live = 0;
  size_t index = 0;
  uint32_t d;
  rootspan_status status;
  int result = 1;

  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: installed_embed CHECKPOINT COMPONENT_ID [SCHEMA]\n");
    return 2;
  }
  status = rootspan_context_create(NULL, &context, &error);
  if (status != ROOTSPAN_OK) return fail("rootspan_context_create", status, error);

  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.provider = "host";
  options.strategy = ROOTSPAN_LOAD_MMAP;
  options.schema_path = argc == 4 ? argv[3] : NULL;
  status = rootspan_weights_load(context, argv[1], &options, &weights, &error);
  if (status != ROOTSPAN_OK) {
    result = fail("rootspan_weights_load", status, error);
    goto done;
  }
  status = rootspan_weights_find(weights, argv[2], &index);
  if (status != ROOTSPAN_OK) {
    fprintf(stderr, "installed_embed: no component \"%s\": %s\n", argv[2], rootspan_status_name(status));
    goto done;
  }
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  status = rootspan_weights_component(weights, index, &info);
  if (status != ROOTSPAN_OK) {
    result = fail("rootspan_weights_component", status, NULL);
    goto done;
  }

  n = info.byte_length < sizeof first ? info.byte_length : sizeof first;
  status = rootspan_claim_acquire(info.root, 0, n, ROOTSPAN_CLAIM_SHARED, &claim, &error);
  if (status != ROOTSPAN_OK) {
    result = fail("rootspan_claim_acquire", status, error);
    goto done;
  }
  status = rootspan_copy_to_host(claim, 0, first, n, &error);
  rootspan_claim_release(claim, NULL);
  if (status != ROOTSPAN_OK) {
    result = fail("rootspan_copy_to_host", status, error);
    goto done;
  }

  printf("%s %s [", info.id, rootspan_dtype_name(info.dtype));
  for (d = 0; d < info.rank; ++d) printf(d == 0 ? "%llu" : ",%llu", (unsigned long long)info.shape[d]);
  printf("] %llu %s ", (unsigned long long)info.byte_length, rootspan_role_name(info.role));
  for (d = 0; d < n; ++d) printf("%02x", first[d]);
  printf("\n");
  result = 0;

done:
  if (weights != NULL) {
    error = NULL;
    status = rootspan_weights_free(weights, &error);
    if (status != ROOTSPAN_OK) result = fail("rootspan_weights_free", status, error);
  }
  rootspan_context_destroy(context, &live);
  if (live != 0) {
    fprintf(stderr, "installed_embed: %llu roots were left live\n", (unsigned long long)live);
    result = 1;
  }
  return result;
}
