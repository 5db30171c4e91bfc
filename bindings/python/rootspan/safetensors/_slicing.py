"""PySafeSlice: what get_slice returns, and the reference's indexing rules for numpy.

A slice keeps its tensor's loaded memory (so it keeps working after its
file handle is closed) and makes a new tensor of just the elements an index
selects. With torch the index is torch's own and the result a view of the
loaded memory, as the reference's; with numpy it follows the reference's
indexer: ints (negative ones counted from the end), slices with a positive
step and non-negative bounds, one Ellipsis, () for everything and [] for
nothing, each out-of-range value refused with the reference's message.

Where the slice itself reads the memory (numpy's copy, get_strided_slice's
concatenation), it reads through the library's protected copy of the rows
the index reaches (rootspan._memory.copy_out): a file truncated since it
was loaded is an IoError, never a SIGBUS or the zeros past its new end.
"""
import numbers

from rootspan import _memory, _tensors
from rootspan.safetensors import _dtypes
from rootspan.safetensors._errors import SafetensorError, shown

_I32_MAX = 2 ** 31 - 1


class PySafeSlice:
    """A tensor of an open file, not yet read: get_shape(), get_dtype(), and view[index] for part of it."""

    def __init__(self, handle, name, code, shape, component, view=None, lease=None):
        """view and lease: the component's bytes among its file's (rootspan.weights.map_file_views) and the
        lease to copy them through (rootspan.weights.lease_of_view), where the handle loaded them that way."""
        self._name = name
        self._code = code
        self._shape = list(shape)
        self._torch = handle._framework == "pytorch"
        self._device = handle._device
        self._component = component
        self._nbytes = 0 if component is None else component.nbytes
        name = _dtypes.BY_CODE[code].rootspan
        if self._torch:
            self._full = _tensors.to_torch(component, name, shape, SafetensorError) if view is None else \
                _tensors.tensor_of_view(view, component, SafetensorError)  # torch indexes views of it
            self._rows_shape = list(self._full.shape)
        else:
            self._dtype = _tensors.numpy_dtype(name)
            self._rows_shape = list(shape)
        # The lease every export of the component shares: it keeps the memory, the slices copy out of it.
        if lease is None and component is not None:
            lease = component._export_lease()
        self._lease = lease

    def get_shape(self):
        return list(self._shape)

    def get_dtype(self):
        return self._code

    def __getitem__(self, index):
        if self._torch:
            return _tensors.to_device(self._full[index], self._device, self._component)
        import numpy
        resolved = _numpy_index(index, self._shape)
        if self._row_bytes() is None:
            begin, end, moved = 0, 1, resolved  # the whole of it
        else:
            begin, end, moved = _rows_reached(resolved, self._shape)
        part = self._copy_rows(begin, end)
        got = numpy.ascontiguousarray(part[moved])
        return got if got.size == part.size else got.copy()  # its own memory, not a view keeping every row

    def _intervals(self, dim, intervals):
        """The intervals [(begin, end), ...] of dimension dim, concatenated in the order given."""
        rank = len(self._shape)
        if isinstance(dim, bool) or not isinstance(dim, int) or not 0 <= dim < rank:
            raise SafetensorError(f"dim {dim!r} is out of range for tensor {shown(self._name)} of shape "
                                  f"{self._shape}")
        intervals = list(intervals)
        if not intervals:
            raise SafetensorError("intervals is empty: give at least one (begin, end) pair")
        size = self._shape[dim]
        for begin, end in intervals:
            if not (0 <= begin < end <= size):
                raise SafetensorError(f"interval ({begin}, {end}) of dimension {dim} is not within [0, {size}) "
                                      "with begin < end")
        # One protected copy of the rows the intervals reach, then the intervals out of it.
        if dim == 0 and self._row_bytes() is not None:
            first, last = min(b for b, _ in intervals), max(e for _, e in intervals)
        else:
            first, last = 0, self._rows_shape[0]
        rows = self._copy_rows(first, last)
        shift = first if dim == 0 else 0
        parts = [rows[(slice(None),) * dim + (slice(begin - shift, end - shift),)] for begin, end in intervals]
        if self._torch:
            import torch
            return torch.cat(parts, dim=dim).to(self._device)  # a copy already made: no more file to read
        import numpy
        return numpy.concatenate(parts, axis=dim)

    def _row_bytes(self):
        """The bytes of one row (one index of dimension 0), or None where rows are not whole bytes apart (a
        scalar, packed sub-byte values): then the copies are of the whole tensor."""
        shape = self._rows_shape
        if not shape:
            return None
        row_bytes = self._nbytes // shape[0] if shape[0] else 0
        return row_bytes if row_bytes * shape[0] == self._nbytes else None

    def _copy_rows(self, begin, end):
        """A new tensor of rows [begin, end) (dimension 0) of the loaded memory, copied through the library
        (IoError where the file it maps was truncated); without whole rows, of the whole tensor."""
        shape = self._rows_shape
        row_bytes = self._row_bytes()
        if row_bytes is None:
            nbytes, begin, rows_shape = self._nbytes, 0, shape
        else:
            nbytes, rows_shape = (end - begin) * row_bytes, [end - begin] + shape[1:]
        if self._torch:
            import torch
            out = torch.empty(nbytes, dtype=torch.uint8)
            address = out.data_ptr()
        else:
            import numpy
            out = numpy.empty(nbytes, numpy.uint8)
            address = out.ctypes.data
        if nbytes:
            _memory.copy_out(self._lease, begin * (row_bytes or 0), nbytes, address)
        if self._torch:
            return out.view(self._full.dtype).reshape(rows_shape)
        return out.view(self._dtype).reshape(rows_shape)


def _rows_reached(resolved, shape):
    """(begin, end, index): the rows of dimension 0 a resolved index reaches, and the index moved into them."""
    if not resolved:
        return 0, shape[0], resolved
    first = resolved[0]
    if isinstance(first, slice):
        begin, end, step = first.indices(shape[0])
        if end <= begin:
            return begin, begin, (slice(0, 0),) + resolved[1:]
        last = begin + (end - 1 - begin) // step * step
        return begin, last + 1, (slice(0, last + 1 - begin, step),) + resolved[1:]
    return first, first + 1, (0,) + resolved[1:]


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
