/* Linked into needs_missing_plugin.c at build time only. It is built as
 * librootspan-test-missing-dep-stub.so but carries the SONAME
 * librootspan-test-missing-dep.so, so the plugin's DT_NEEDED names a file that
 * exists nowhere and loading the plugin fails on the missing dependency. */
int rootspan_test_missing_dep_function(void) { return 7; }
