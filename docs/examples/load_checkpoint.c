/* load_checkpoint.c — load a safetensors checkpoint into host memory with
 * rootspan's C API, read every component through a shared claim, and show
 * the error an exclusive claim on a read-only (zero-copy) root gets.
 *
 * Build (from the repository root, after `meson setup build && ninja -C build`):
 *   cc docs/examples/load_checkpoint.c -I abi -L build -lrootspan -o load_checkpoint
 * Run:
 *   LD_LIBRARY_PATH=build ./load_checkpoint build/tools/example-checkpoint [mmap|read]
 *
 * Exit status: 0 done, 1 a rootspan call failed (its message is printed),
 * 2 usage. */
#include <stdio.h>
#include <string.h>

#include "rootspan/weights.h"

/* Prints a failed call's error, frees it, and returns 1; returns 0 on success. */
static int failed(rootspan_status status, rootspan_error *error, const char *what) {
  if (status == ROOTSPAN_OK) return 0;
  fprintf(stderr, "%s failed: %s: %s\n", what, rootspan_status_name(status), rootspan_error_message(error));
  rootspan_error_free(error); /* NULL (when the error could not be allocated) is fine */
  return 1;
}

/* Reads a whole component through a shared claim and a mapping in the
 * root's own element type, and returns a simple checksum of its bytes (so the
 * bytes are really touched). */
static int read_component(rootspan_root *root, rootspan_dtype dtype, uint64_t length, uint32_t *checksum) {
  rootspan_claim *claim = NULL;
  rootspan_mapping *mapping = NULL;
  rootspan_error *error = NULL;
  rootspan_status status = ROOTSPAN_OK;
  const unsigned char *bytes = NULL;
  uint64_t i = 0;
  uint32_t sum = 0;

  /* Call first, then look at the error: *error is only set by the call. */
  status = rootspan_claim_acquire(root, 0, length, ROOTSPAN_CLAIM_SHARED, &claim, &error);
  if (failed(status, error, "claim_acquire")) return 1;
  status = rootspan_map_read(claim, dtype, 0, length, &mapping, &error);
  if (failed(status, error, "map_read")) {
    rootspan_claim_release(claim, NULL);
    return 1;
  }
  bytes = (const unsigned char *)rootspan_mapping_data(mapping); /* valid until rootspan_unmap */
  for (i = 0; i < rootspan_mapping_length(mapping); ++i) sum = sum * 31u + bytes[i];
  *checksum = sum;
  rootspan_unmap(mapping);             /* a mapping before its claim */
  rootspan_claim_release(claim, NULL); /* a claim before its root */
  return 0;
}

int main(int argc, char **argv) {
  rootspan_context *context = NULL;
  rootspan_weights *weights = NULL;
  rootspan_error *error = NULL;
  rootspan_load_options options;
  rootspan_status called = ROOTSPAN_OK;
  size_t count = 0;
  size_t i = 0;
  uint64_t live = 0;
  int status = 0;
  int refusal_shown = 0;

  if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "mmap") != 0 && strcmp(argv[2], "read") != 0)) {
    fprintf(stderr, "usage: %s CHECKPOINT [mmap|read]\n", argv[0]);
    return 2;
  }

  /* NULL options: the compiled-in host provider only, no manifest discovery. */
  called = rootspan_context_create(NULL, &context, &error);
  if (failed(called, error, "context_create")) return 1;

  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options; /* always: the library reads only what you set */
  options.schema_path = NULL;           /* one dense component per tensor */
  options.provider = "host";
  options.device = 0;
  options.strategy = argc == 3 && strcmp(argv[2], "read") == 0 ? ROOTSPAN_LOAD_READ : ROOTSPAN_LOAD_MMAP;
  called = rootspan_weights_load(context, argv[1], &options, &weights, &error);
  if (failed(called, error, "weights_load")) {
    rootspan_context_destroy(context, NULL);
    return 1;
  }

  rootspan_weights_component_count(weights, &count);
  printf("loaded %u components into provider %s\n", (unsigned)count, rootspan_weights_provider(weights));
  for (i = 0; i < count && status == 0; ++i) {
    rootspan_component_info component;
    rootspan_root_info root;
    uint32_t checksum = 0;

    memset(&component, 0, sizeof component);
    component.struct_size = sizeof component;
    rootspan_weights_component(weights, i, &component); /* component.id and .root live as long as weights */
    memset(&root, 0, sizeof root);
    root.struct_size = sizeof root;
    rootspan_root_get_info(component.root, &root);
    status = read_component(component.root, root.dtype, component.byte_length, &checksum);
    if (status == 0) {
      printf("%-40s %-5s %8llu bytes  %-9s  key (%llu,%llu)  checksum %08x\n", component.id,
             rootspan_dtype_name(root.dtype), (unsigned long long)component.byte_length,
             component.zero_copy ? "zero-copy" : "copied", (unsigned long long)root.key.domain,
             (unsigned long long)root.key.local, checksum);
    }

    /* A zero-copy root is the read-only file mapping: writing is refused.
     * Shown once, on the first such component. */
    if (status == 0 && component.zero_copy && root.read_only && !refusal_shown) {
      refusal_shown = 1;
      rootspan_claim *claim = NULL;
      const rootspan_status refused =
          rootspan_claim_acquire(component.root, 0, component.byte_length, ROOTSPAN_CLAIM_EXCLUSIVE, &claim, &error);
      if (refused == ROOTSPAN_ERR_READ_ONLY) {
        printf("  exclusive claim refused as expected: %s (operation %s)\n", rootspan_error_cause(error),
               rootspan_error_operation(error));
      } else {
        fprintf(stderr, "expected ReadOnly, got %s\n", rootspan_status_name(refused));
        if (claim != NULL) rootspan_claim_release(claim, NULL);
        status = 1;
      }
      rootspan_error_free(error);
      error = NULL;
    }
  }

  /* Frees every component's root; fails with Busy if one were still claimed. */
  called = rootspan_weights_free(weights, &error);
  if (failed(called, error, "weights_free")) status = 1;
  rootspan_context_destroy(context, &live);
  if (live != 0) {
    fprintf(stderr, "%llu roots were still live at context destroy\n", (unsigned long long)live);
    status = 1;
  }
  return status;
}
