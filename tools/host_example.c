/* A small host-memory example of the embedding API, in C99: allocate a typed
 * root, fill it through an exclusive claim, read it back through shared
 * claims, and show the error a conflicting claim gets. */
#include <stdio.h>

#include "rootspan/rootspan.h"

static int check(rootspan_status status, rootspan_error *error, const char *what) {
  if (status == ROOTSPAN_OK) return 0;
  fprintf(stderr, "%s failed: %s\n", what, rootspan_error_message(error));
  rootspan_error_free(error);
  return 1;
}

int main(void) {
  rootspan_context *context = NULL;
  rootspan_root *root = NULL;
  rootspan_claim *writer = NULL;
  rootspan_claim *reader = NULL;
  rootspan_mapping *mapping = NULL;
  rootspan_error *error = NULL;
  rootspan_allocate_options options = {0};
  rootspan_root_info info = {0};
  float *values = NULL;
  const float *read_back = NULL;
  float sum = 0.0f;
  uint64_t live = 0;
  int i = 0;

  if (check(rootspan_context_create(NULL, &context, &error), error, "context_create")) return 1;

  options.struct_size = sizeof options;
  options.provider = "host";
  options.byte_length = 1024 * sizeof(float);
  options.alignment = 64;
  options.dtype = ROOTSPAN_DTYPE_F32;
  if (check(rootspan_root_allocate(context, &options, &root, &error), error, "allocate")) return 1;
  info.struct_size = sizeof info;
  rootspan_root_get_info(root, &info);
  printf("root %llu: key (%llu,%llu), %llu bytes of %s, alignment %llu, provider %s\n",
         (unsigned long long)info.root_id, (unsigned long long)info.key.domain, (unsigned long long)info.key.local,
         (unsigned long long)info.byte_length, rootspan_dtype_name(info.dtype), (unsigned long long)info.alignment,
         info.provider);

  /* Fill the whole root under an exclusive claim. */
  if (check(rootspan_claim_acquire(root, 0, info.byte_length, ROOTSPAN_CLAIM_EXCLUSIVE, &writer, &error), error,
            "exclusive claim"))
    return 1;
  if (check(rootspan_map_write(writer, ROOTSPAN_DTYPE_F32, 0, info.byte_length, &mapping, &error), error, "map_write"))
    return 1;
  values = (float *)rootspan_mapping_data(mapping);
  for (i = 0; i < 1024; ++i) values[i] = (float)i;
  rootspan_unmap(mapping);

  /* A shared claim now conflicts with the exclusive one; the error says so. */
  if (rootspan_claim_acquire(root, 256, 256, ROOTSPAN_CLAIM_SHARED, &reader, &error) != ROOTSPAN_OK) {
    printf("expected refusal: %s\n", rootspan_error_message(error));
    rootspan_error_free(error);
    error = NULL;
  }
  rootspan_claim_release(writer, NULL);

  /* Read the second quarter back through a shared claim. */
  if (check(rootspan_claim_acquire(root, 1024, 1024, ROOTSPAN_CLAIM_SHARED, &reader, &error), error, "shared claim"))
    return 1;
  if (check(rootspan_map_read(reader, ROOTSPAN_DTYPE_F32, 0, 1024, &mapping, &error), error, "map_read")) return 1;
  read_back = (const float *)rootspan_mapping_data(mapping);
  for (i = 0; i < 256; ++i) sum += read_back[i];
  printf("sum of elements 256..511 read back: %.0f (expected %.0f)\n", sum, (256.0f + 511.0f) * 256.0f / 2.0f);
  rootspan_unmap(mapping);
  rootspan_claim_release(reader, NULL);

  if (check(rootspan_root_release(root, &error), error, "release")) return 1;
  rootspan_context_destroy(context, &live);
  printf("context destroyed with %llu live roots\n", (unsigned long long)live);
  return sum == (256.0f + 511.0f) * 256.0f / 2.0f ? 0 : 1;
}
