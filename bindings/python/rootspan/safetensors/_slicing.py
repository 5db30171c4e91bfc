"""PySafeSlice: what get_slice returns, and the reference's indexing rules for numpy.

A slice holds a zero-copy view of its whole tensor (so it keeps working
after its file handle is closed) and makes a new tensor of just the
elements an index selects. With torch the index is torch's own (as the
reference does); with numpy it follows the reference's indexer: ints
(negative ones counted from the end), slices with a positive step and
non-negative bounds, one Ellipsis, () for everything and [] for nothing,
each out-of-range value refused with the reference's message.
"""
import numbers

from rootspan.safetensors import _frameworks
from rootspan.safetensors._errors import SafetensorError

_I32_MAX = 2 ** 31 - 1


class PySafeSlice:
    """A tensor of an open file, not yet read: get_shape(), get_dtype(), and view[index] for part of it."""

    def __init__(self, handle, name, code, shape, component):
        self._name = name
        self._code = code
        self._shape = list(shape)
        self._torch = handle._framework == "pytorch"
        self._to_device = handle._to_device
        if self._torch:
            self._full = _frameworks.to_torch(component, code, shape)
        else:
            self._full = _frameworks.to_numpy(component, code, shape)

    def get_shape(self):
        return list(self._shape)

    def get_dtype(self):
        return self._code

    def __getitem__(self, index):
        if self._torch:
            return self._to_device(self._full[index])
        import numpy
        return numpy.ascontiguousarray(self._full[_numpy_index(index, self._shape)]).copy()

    def _intervals(self, dim, intervals):
        """The intervals [(begin, end), ...] of dimension dim, concatenated in the order given."""
        rank = len(self._shape)
        if isinstance(dim, bool) or not isinstance(dim, int) or not 0 <= dim < rank:
            raise SafetensorError(f"dim {dim!r} is out of range for tensor {self._name} of shape {self._shape}")
        intervals = list(intervals)
        if not intervals:
            raise SafetensorError("intervals is empty: give at least one (begin, end) pair")
        size = self._shape[dim]
        parts = []
        for begin, end in intervals:
            if not (0 <= begin < end <= size):
                raise SafetensorError(f"interval ({begin}, {end}) of dimension {dim} is not within [0, {size}) "
                                      "with begin < end")
            parts.append(self._full[(slice(None),) * dim + (slice(begin, end),)])
        if self._torch:
            import torch
            return self._to_device(torch.cat(parts, dim=dim))
        import numpy
        return numpy.concatenate(parts, axis=dim)


def _display(items):
    out = []
    for item in items:
        if isinstance(item, slice):
            text = ("" if item.start is None else str(item.start)) + ":" + ("" if item.stop is None else str(item.stop))
            if item.step not in (None, 1):
                text += f":{item.step}"
            out.append(text)
        else:
            out.append(str(item))
    return "[" + ", ".join(out) + "]"


def _numpy_index(index, shape):
    """index checked as the reference checks it, as a tuple numpy applies to the whole tensor."""
    if isinstance(index, list):
        if index:
            raise SafetensorError("Non empty lists are not implemented")
        return (slice(0, 0),) if shape else ()
    items = list(index) if isinstance(index, tuple) else [index]
    for position, item in enumerate(items):
        if item is Ellipsis or isinstance(item, slice):
            continue
        if isinstance(item, numbers.Integral) and -_I32_MAX - 1 <= int(item) <= _I32_MAX:
            continue
        raise SafetensorError(f"Unsupported slice index at position {position}: expected slice, int, or ellipsis")
    if items.count(Ellipsis) > 1:
        raise SafetensorError("Only one ellipsis (...) is allowed in slice index")
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items[at:at + 1] = [slice(None)] * max(len(shape) - len(items) + 1, 0)
    resolved = []
    for dim, item in enumerate(items):
        if isinstance(item, slice):
            for bound in (item.start, item.stop):
                if bound is not None and bound < 0:
                    raise OverflowError("can't convert negative int to unsigned")
            if item.step is not None and item.step <= 0:
                raise SafetensorError(f"Slice step must be a positive integer, got {item.step}")
            resolved.append(item)
        else:
            value = int(item)
            size = shape[dim] if dim < len(shape) else 0
            if value < 0:
                if value + size < 0 or dim >= len(shape):
                    raise SafetensorError(f"Invalid index {value} for dimension {dim} of size {size}")
                value += size
            resolved.append(value)
    if len(resolved) > len(shape):
        raise SafetensorError(f"Error during slicing {_display(resolved)} with shape {list(shape)}: more slicing "
                              "indexes than dimensions in tensor")
    for dim, item in enumerate(resolved):
        size = shape[dim]
        if isinstance(item, slice):
            begin = 0 if item.start is None else item.start
            end = size if item.stop is None else item.stop
            bad = begin if begin >= size else (end - 1 if end > size else None)
        else:
            bad = item if item >= size else None
        if bad is not None:
            raise SafetensorError(f"Error during slicing {_display(resolved)} with shape {list(shape)}: index {bad} "
                                  f"out of bounds for tensor dimension #{dim} of size {size}")
    return tuple(resolved)
