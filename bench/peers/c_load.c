/* c_load.c — the C API path of bench/peers/run.py: load a checkpoint with
 * rootspan_weights_load (host provider, copy-on-write as Python loads), then
 * read one byte of every page of every component through a shared claim and
 * a mapping, so that mapped memory is resident. Prints one JSON line:
 * {"load_s", "touch_s", "rss_peak", "rss_base", "tensors", "bytes"}.
 *
 * Build: cc -O2 bench/peers/c_load.c -I abi -L build -lrootspan -o c_load
 * Run:   LD_LIBRARY_PATH=build ./c_load CHECKPOINT [auto|mmap|read|direct] */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "rootspan/weights.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static long peak_rss(void) {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss * 1024L;
}

static int failed(rootspan_status status, rootspan_error *error, const char *what) {
  if (status == ROOTSPAN_OK) return 0;
  fprintf(stderr, "%s failed: %s: %s\n", what, rootspan_status_name(status), rootspan_error_message(error));
  rootspan_error_free(error);
  return 1;
}

int main(int argc, char **argv) {
  rootspan_context *context = NULL;
  rootspan_weights *weights = NULL;
  rootspan_error *error = NULL;
  rootspan_load_options options;
  size_t count = 0, i = 0;
  uint64_t total = 0, sum = 0;
  const long page = sysconf(_SC_PAGESIZE);
  const char *strategy = argc > 2 ? argv[2] : "auto";
  double start, loaded, touched;
  long base;

  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s CHECKPOINT [auto|mmap|read|direct]\n", argv[0]);
    return 2;
  }
  base = peak_rss();
  start = now();
  if (failed(rootspan_context_create(NULL, &context, &error), error, "context_create")) return 1;
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.provider = "host";
  options.copy_on_write = 1; /* as Python and the drop-in load */
  options.strategy = strcmp(strategy, "mmap") == 0     ? ROOTSPAN_LOAD_MMAP
                     : strcmp(strategy, "read") == 0   ? ROOTSPAN_LOAD_READ
                     : strcmp(strategy, "direct") == 0 ? ROOTSPAN_LOAD_DIRECT
                                                       : ROOTSPAN_LOAD_AUTO;
  if (failed(rootspan_weights_load(context, argv[1], &options, &weights, &error), error, "weights_load")) return 1;
  loaded = now();
  rootspan_weights_component_count(weights, &count);
  for (i = 0; i < count; ++i) {
    rootspan_component_info component;
    rootspan_root_info root;
    rootspan_claim *claim = NULL;
    rootspan_mapping *mapping = NULL;
    const volatile unsigned char *bytes = NULL;
    uint64_t length = 0, at = 0;

    memset(&component, 0, sizeof component);
    component.struct_size = sizeof component;
    if (rootspan_weights_component(weights, i, &component) != ROOTSPAN_OK) return 1;
    if (component.byte_length == 0) continue;
    if (failed(rootspan_claim_acquire(component.root, 0, component.byte_length, ROOTSPAN_CLAIM_SHARED, &claim, &error),
               error, "claim_acquire"))
      return 1;
    memset(&root, 0, sizeof root);
    root.struct_size = sizeof root;
    rootspan_root_get_info(component.root, &root);
    if (failed(rootspan_map_read(claim, root.dtype, 0, component.byte_length, &mapping, &error), error, "map_read"))
      return 1;
    bytes = (const volatile unsigned char *)rootspan_mapping_data(mapping);
    length = rootspan_mapping_length(mapping);
    for (at = 0; at < length; at += (uint64_t)page) sum += bytes[at];
    sum += bytes[length - 1];
    total += length;
    rootspan_unmap(mapping);
    rootspan_claim_release(claim, NULL);
  }
  touched = now();
  printf(
      "{\"load_s\": %.6f, \"touch_s\": %.6f, \"rss_peak\": %ld, \"rss_base\": %ld, \"tensors\": %zu, "
      "\"bytes\": %llu, \"checksum\": %llu}\n",
      loaded - start, touched - loaded, peak_rss(), base, count, (unsigned long long)total, (unsigned long long)sum);
  rootspan_weights_free(weights, NULL);
  rootspan_context_destroy(context, NULL);
  return 0;
}
