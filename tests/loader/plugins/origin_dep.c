/* A library a plugin ships beside itself and finds through $ORIGIN: the
 * dependency tests check that this very file is the one loaded. */
#if defined(__GNUC__)
#define EXPORT __attribute__((visibility("default")))
#else
#define EXPORT
#endif

EXPORT const char *rootspan_test_origin_dep_name(void) { return "origin-dep-beside"; }
