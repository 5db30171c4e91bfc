"""SafetensorError, and the reference library's words for what rootspan refuses.

rootspan's core validates every header (one home for those rules); this
module only words its refusals as the reference library does, so that code
matching on the reference's messages keeps working: "Error while
deserializing header: header too large", "... invalid offset for tensor
`w`", and so on. The core's own error, which names the file, the tensor and
the expected and actual values, stays attached as __cause__.

Where rootspan is stricter than the reference (a duplicate key, an unknown
field in a tensor entry, a byte-order mark before the header, more
than 64 dimensions or 2**20 tensors, a NUL byte in a tensor name), the
message says so. Names in messages have their control characters escaped.
"""
import re


class SafetensorError(Exception):
    """Custom Python Exception for Safetensor errors."""


class SafetensorTypeError(SafetensorError, TypeError):
    """A serialize() argument of the wrong shape: the reference raises SafetensorError in some releases and
    TypeError in others, so this is both."""


DESERIALIZING_HEADER = "Error while deserializing header: "
DESERIALIZING = "Error while deserializing: "
SERIALIZING = "Error while serializing: "

# (pattern over the core's cause, the reference's words); the first match wins.
# The patterns follow the causes of weights/formats/safetensors.cpp and
# core/text/strict_json.cpp; tests/python/test_safetensors_parity.py breaks
# when one of them stops matching.
_REFERENCE_WORDS = (
    (r"shorter than the 8-byte header length", "header too small"),
    (r"header length \d+ exceeds the limit", "header too large"),
    (r"header length \d+ runs past the end of the file", "invalid header length"),
    (r"not valid UTF-8|invalid UTF-8", "invalid UTF-8 in header: {cause}"),
    (r"trailing bytes|past the end of the data section", "incomplete metadata, file not fully covered"),
    (r"tensor \"((?:[^\"\\]|\\.)*)\": (?:begins at \d+ but .*(?:a hole|an overlap)|data_offsets \[\d+, \d+\) end "
     r"before they begin)", "invalid offset for tensor `{name}`"),
    (r"more (?:elements|bits) than 64 bits can count", "overflow computing buffer size from shape and/or element type"),
    (r"not a whole number of bytes", "The slice is slicing for subbytes dtypes, and the slice does not end up at a "
                                     "byte boundary, this is invalid."),
    (r"data_offsets \[\d+, \d+\) hold \d+ bytes, but", "invalid shape, data type, or offset for tensor"),
    (r"duplicate key|unknown field|byte-order mark|has at most|at most \d+ (?:dimensions|entries)|holds a NUL byte",
     "rootspan refuses what the reference library accepts ({cause})"),
)


def _unescape(name):
    """A name as the core quoted it, less the quoting of '"' and '\\': control characters stay escaped."""
    return re.sub(r'\\(["\\])', r"\1", name)


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def shown(name):
    """A tensor name for a message: control characters escaped (\\n, \\t, \\x00), so that a name from a file
    cannot cut, break or forge the message; any other name as it is, as the reference shows it."""
    text = name if isinstance(name, str) else str(name)
    return _CONTROL.sub(lambda m: _ESCAPES.get(m.group(), f"\\x{ord(m.group()):02x}"), text)


def reference_words(cause):
    """The reference's text for a header the core refused, from the core's cause."""
    for pattern, words in _REFERENCE_WORDS:
        found = re.search(pattern, cause)
        if found:
            name = _unescape(found.group(1)) if found.groups() else ""
            return words.format(cause=cause, name=name)
    return f"invalid JSON in header: {cause}"


def from_core(error, prefix=DESERIALIZING_HEADER):
    """A SafetensorError worded as the reference words it, for a rootspan Error (chain it: raise ... from error)."""
    return SafetensorError(prefix + reference_words(getattr(error, "cause", "") or str(error)))
