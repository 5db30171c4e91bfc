/* rootspan._describe.tensor_capsule: a tensor over memory the package holds, handed to torch as a DLPack
 * capsule made in C (issue 33).
 *
 * A writable component that is not a view of its file's mapping (a copied one, strategy read or direct; a
 * mapped one asked for alone) reaches torch as a tensor over its own lease's memory. Through numpy that took
 * a numpy array made from an __array_interface__ dict, then torch.from_numpy: some 1.3 us a tensor, where
 * this call and torch's from_dlpack take 0.6. The capsule is the legacy one ("dltensor", a DLManagedTensor):
 * every torch this package supports (1.13 on) takes it; it carries no read-only flag, so the package hands
 * only writable memory this way.
 *
 * Ownership: the capsule holds a reference to `owner` (the package's lease, which keeps the memory mapped)
 * from the moment it is made. A consumer that takes the tensor renames the capsule "used_dltensor" and later
 * calls the deleter exactly once, from any thread: the deleter takes the GIL, drops the reference (the lease
 * may then unmap) and frees the DLManagedTensor. A capsule no one takes does the same when it is garbage.
 * Once Python's finalization has begun the reference is left, not dropped (the process is ending; the
 * limited API has no way to take the GIL safely then): a thread other than Python's that lets go of a tensor
 * while finalization starts is the one case it cannot cover, as for every C extension of this API.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>  // the limited API (Py_LIMITED_API) where meson sets it
#include <dlpack/dlpack.h>
#include <stdint.h>
#include <stdlib.h>

#include "_capsule.h"

enum { MAX_RANK = 64 };  // far above any tensor's; a bound for the one allocation below

static const char LEGACY_NAME[] = "dltensor";

/* The DLManagedTensor and its shape and strides, in one allocation (freed by release_tensor). */
typedef struct {
  DLManagedTensor managed;
  int64_t dims[];  // shape[rank], then strides[rank], in elements
} managed_tensor;

/* The deleter a consumer calls once it is done with the tensor, on any thread. */
static void release_tensor(DLManagedTensor *self) {
  if (self == NULL) {
    return;
  }
  PyObject *owner = (PyObject *)self->manager_ctx;
  free(self);
  if (owner == NULL || !Py_IsInitialized()) {
    return;
  }
  PyGILState_STATE gil = PyGILState_Ensure();
  Py_DECREF(owner);
  PyGILState_Release(gil);
}

/* A capsule no consumer took (its name unchanged): the tensor is released with it. */
static void release_capsule(PyObject *capsule) {
  if (!PyCapsule_IsValid(capsule, LEGACY_NAME)) {
    return;  // taken: the consumer calls the deleter
  }
  DLManagedTensor *managed = PyCapsule_GetPointer(capsule, LEGACY_NAME);
  if (managed != NULL && managed->deleter != NULL) {
    managed->deleter(managed);
  }
}

/* Reads shape, a tuple of non-negative ints, into dims[0..rank) and row-major strides into dims[rank..2 rank);
 * the element count in *elements. 0 with an exception set when shape is not such a tuple, or when its extents
 * (each counted as at least 1, as strides count them) multiply past INT64_MAX: then no stride can overflow. */
static int read_shape(PyObject *shape, Py_ssize_t rank, int64_t *dims, uint64_t *elements) {
  uint64_t count = 1;
  int64_t span = 1;  // the product of max(extent, 1): the largest stride times its extent
  for (Py_ssize_t d = 0; d < rank; ++d) {
    long long extent = PyLong_AsLongLong(PyTuple_GetItem(shape, d));
    if (extent == -1 && PyErr_Occurred()) {
      return 0;
    }
    if (extent < 0) {
      PyErr_Format(PyExc_ValueError, "tensor_capsule: dimension %zd of the shape is %lld, expected at least 0", d,
                   extent);
      return 0;
    }
    const int64_t counted = extent > 1 ? extent : 1;
    if (span > INT64_MAX / counted) {
      PyErr_Format(PyExc_ValueError, "tensor_capsule: the shape's extents multiply past 2^63 at dimension %zd", d);
      return 0;
    }
    span *= counted;
    dims[d] = extent;
    count *= (uint64_t)extent;  // at most span
  }
  int64_t stride = 1;
  for (Py_ssize_t d = rank - 1; d >= 0; --d) {
    dims[rank + d] = stride;
    stride *= dims[d] > 1 ? dims[d] : 1;
  }
  *elements = count;
  return 1;
}

/* An O& converter: a Python int of 0 to 2^64 - 1 into *(unsigned long long *)out (OverflowError, TypeError
 * otherwise; never a value wrapped modulo 2^64 as the K format would). */
static int unsigned_argument(PyObject *value, void *out) {
  const unsigned long long converted = PyLong_AsUnsignedLongLong(value);
  if (converted == (unsigned long long)-1 && PyErr_Occurred()) {
    return 0;
  }
  *(unsigned long long *)out = converted;
  return 1;
}

PyObject *rootspan_tensor_capsule(PyObject *module, PyObject *args) {
  (void)module;
  PyObject *owner = NULL;
  unsigned long long address = 0;
  unsigned long long nbytes = 0;
  PyObject *shape = NULL;
  int code = 0;
  int bits = 0;
  if (!PyArg_ParseTuple(args, "OO&O&O!ii:tensor_capsule", &owner, unsigned_argument, &address, unsigned_argument,
                        &nbytes, &PyTuple_Type, &shape, &code, &bits)) {
    return NULL;
  }
  if (bits <= 0 || bits % 8 != 0 || bits > 128 || code < 0 || code > UINT8_MAX) {
    return PyErr_Format(PyExc_ValueError,
                        "tensor_capsule: expected a DLPack type code of 0-255 and a whole number of bytes of "
                        "at most 128 bits, got code %d, %d bits",
                        code, bits);
  }
  const Py_ssize_t rank = PyTuple_Size(shape);
  if (rank > MAX_RANK) {
    return PyErr_Format(PyExc_ValueError, "tensor_capsule: expected a rank of at most %d, got %zd", MAX_RANK, rank);
  }
  if (address == 0 && nbytes != 0) {
    return PyErr_Format(PyExc_ValueError, "tensor_capsule: %llu bytes at address 0", nbytes);
  }
  managed_tensor *tensor = malloc(sizeof *tensor + 2 * (size_t)(rank > 0 ? rank : 1) * sizeof(int64_t));
  if (tensor == NULL) {
    return PyErr_NoMemory();
  }
  uint64_t elements = 0;
  if (!read_shape(shape, rank, tensor->dims, &elements)) {
    free(tensor);
    return NULL;
  }
  const uint64_t element_bytes = (uint64_t)bits / 8;
  if (elements > nbytes / element_bytes) {  // never a tensor past the memory the owner holds
    free(tensor);
    return PyErr_Format(PyExc_ValueError,
                        "tensor_capsule: the shape holds %llu elements of %d bits, but the memory holds %llu bytes, "
                        "room for %llu",
                        (unsigned long long)elements, bits, nbytes, nbytes / element_bytes);
  }
  DLTensor *t = &tensor->managed.dl_tensor;
  t->data = (void *)(uintptr_t)address;
  t->device.device_type = kDLCPU;
  t->device.device_id = 0;
  t->ndim = (int)rank;
  t->dtype.code = (uint8_t)code;
  t->dtype.bits = (uint8_t)bits;
  t->dtype.lanes = 1;
  t->shape = tensor->dims;
  t->strides = tensor->dims + rank;  // always set (DLPack 1.2 asks producers to)
  t->byte_offset = 0;
  tensor->managed.manager_ctx = NULL;
  tensor->managed.deleter = release_tensor;
  PyObject *capsule = PyCapsule_New(&tensor->managed, LEGACY_NAME, release_capsule);
  if (capsule == NULL) {
    free(tensor);
    return NULL;
  }
  Py_INCREF(owner);  // only now: from here the capsule (or its consumer) drops it
  tensor->managed.manager_ctx = owner;
  return capsule;
}
