/* A shared library that loads fine but exports no provider entry symbol. */
#if defined(__GNUC__)
#define EXPORT __attribute__((visibility("default")))
#else
#define EXPORT
#endif

EXPORT int rootspan_test_not_a_provider(void) { return 1; }
