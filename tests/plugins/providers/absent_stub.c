/* Linked into needs_absent.c at build time only. Built as
 * librootspan-test-absent-stub.so with the SONAME librootspan-test-absent.so
 * (the last -soname on the link line wins), so the plugin's DT_NEEDED names a
 * file that exists nowhere. */
int rootspan_test_absent_function(void) { return 1; }
