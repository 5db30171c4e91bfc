/* touch.c — how bench/peers/run.py's workers make loaded memory resident:
 * one byte of every page of every range read, in one call for all of a
 * load's tensors. In C so that the touch costs what the pages cost, not a
 * Python step per tensor: a loader handing out 10,000 separate small tensors
 * would otherwise pay the harness's loop, one that hands out views of one
 * mapping would not.
 *
 * Build: cc -O2 -shared -fPIC bench/peers/touch.c -o touch.so (run.py does)
 * Call:  touch_ranges(addresses, lengths, count, page) from ctypes. */
#include <stddef.h>
#include <stdint.h>

/* Reads byte 0, `page`, 2 * `page`, ... and the last byte of each of the
 * `count` ranges (addresses[i], lengths[i]); a range of length 0 is skipped.
 * Both arrays are borrowed for the call. Returns the sum of the bytes read,
 * so that no read can be left out. */
uint64_t touch_ranges(const uint64_t *addresses, const uint64_t *lengths, size_t count, uint64_t page) {
  uint64_t sum = 0;
  for (size_t i = 0; i < count; ++i) {
    const volatile uint8_t *bytes = (const volatile uint8_t *)(uintptr_t)addresses[i];
    const uint64_t length = lengths[i];
    if (length == 0) continue;
    for (uint64_t at = 0; at < length; at += page) sum += bytes[at];
    sum += bytes[length - 1];
  }
  return sum;
}
