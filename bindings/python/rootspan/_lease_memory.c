/* rootspan._describe.lease_memory: memory a lease holds, as a Python buffer.
 *
 * numpy.ndarray(shape, dtype, buffer=lease_memory(...)) is a numpy array over that memory in one call, where an
 * array interface took a Python owner object, a dict of the interface, and numpy's reading of it: some 0.5 us of
 * the 1.3 us a Component.numpy() took (issue 33: Context.load's callers make one for each of thousands of
 * components). The array's base is the object made here, which holds the lease (its .lease) and nothing else:
 *   - the memory stays mapped for as long as any array over it lives, as the lease's other holders keep it;
 *   - read-only memory is exported read-only only: a writable request is refused (BufferError), so neither
 *     numpy's flags.writeable = True nor a new buffer over the array's base can write to it;
 *   - it says no address of its own, and it refers to nothing that could refer back to it, so the collector
 *     does not track it (one object fewer per export to walk).
 * Private to the package: a wrong address is a crash, as it would be through ctypes.
 */
#define PY_SSIZE_T_CLEAN
#include "_lease_memory.h"

#ifdef ROOTSPAN_HAVE_LEASE_MEMORY

#include <stdint.h>

typedef struct {
  PyObject ob_base;  /* what PyObject_HEAD declares */
  PyObject *lease;   /* kept alive while the memory is exported */
  void *address;     /* the first byte */
  Py_ssize_t nbytes; /* how many */
  int readonly;      /* exported read-only only */
} LeaseMemory;

static PyTypeObject *lease_memory_type; /* made by rootspan_lease_memory_ready, kept for the process */

static int get_buffer(PyObject *self, Py_buffer *view, int flags) {
  const LeaseMemory *memory = (const LeaseMemory *)self;
  /* Fills a one-dimensional "B" buffer, or raises BufferError for a writable request of read-only memory. */
  return PyBuffer_FillInfo(view, self, memory->address, memory->nbytes, memory->readonly, flags);
}

static void dealloc(PyObject *self) {
  PyTypeObject *type = Py_TYPE(self);
  Py_CLEAR(((LeaseMemory *)self)->lease);
  PyObject_Free(self); /* what PyType_GenericAlloc took it from, for a type the collector does not track */
  Py_DECREF(type);     /* an instance of a heap type holds its type */
}

static PyObject *lease_of(PyObject *self, void *closure) {
  (void)closure;
  PyObject *lease = ((LeaseMemory *)self)->lease;
  Py_INCREF(lease);
  return lease;
}

/* Only lease_memory makes one: calling the type is refused, on every Python (Py_TPFLAGS_DISALLOW_INSTANTIATION
 * is 3.10's). */
static PyObject *refuse_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  (void)type;
  (void)args;
  (void)kwargs;
  return PyErr_Format(PyExc_TypeError, "rootspan._describe.LeaseMemory objects are made by lease_memory() only");
}

static PyGetSetDef attributes[] = {
    {"lease", lease_of, NULL, "The lease that holds this memory.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* The functions are set by rootspan_lease_memory_ready, each by its slot's id: ISO C has no constant conversion
 * of a function's address to the void * a slot holds. */
static PyType_Slot slots[] = {
    {Py_bf_getbuffer, NULL},
    {Py_tp_dealloc, NULL},
    {Py_tp_new, NULL},
    {Py_tp_getset, attributes},
    {Py_tp_doc, "Memory a lease holds, exported as a buffer (rootspan._describe.lease_memory)."},
    {0, NULL},
};

/* No Py_TPFLAGS_BASETYPE: nothing derives from it; no Py_TPFLAGS_HAVE_GC (above). */
static PyType_Spec spec = {
    .name = "rootspan._describe.LeaseMemory",
    .basicsize = sizeof(LeaseMemory),
    .itemsize = 0,
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = slots,
};

int rootspan_lease_memory_ready(void) {
  if (lease_memory_type != NULL) { /* made at an earlier import of the module */
    return 0;
  }
  for (PyType_Slot *slot = slots; slot->slot != 0; ++slot) {
    if (slot->slot == Py_bf_getbuffer) {
      slot->pfunc = (void *)(uintptr_t)get_buffer;
    } else if (slot->slot == Py_tp_dealloc) {
      slot->pfunc = (void *)(uintptr_t)dealloc;
    } else if (slot->slot == Py_tp_new) {
      slot->pfunc = (void *)(uintptr_t)refuse_new;
    }
  }
  lease_memory_type = (PyTypeObject *)PyType_FromSpec(&spec);
  return lease_memory_type != NULL ? 0 : -1;
}

PyObject *rootspan_lease_memory(PyObject *module, PyObject *args) {
  (void)module;
  PyObject *lease = NULL;
  PyObject *address_object = NULL;
  Py_ssize_t nbytes = 0;
  int readonly = 0;
  if (!PyArg_ParseTuple(args, "OOnp:lease_memory", &lease, &address_object, &nbytes, &readonly)) {
    return NULL;
  }
  if (!PyLong_Check(address_object)) {
    return PyErr_Format(PyExc_TypeError, "lease_memory: expected the address as an int, got %R",
                        (PyObject *)Py_TYPE(address_object));
  }
  /* OverflowError for a negative int or one past 64 bits: no address ("K" would take -1 as 2^64 - 1) */
  const unsigned long long address = PyLong_AsUnsignedLongLong(address_object);
  if (PyErr_Occurred()) {
    return NULL;
  }
  if (nbytes < 0) {
    return PyErr_Format(PyExc_ValueError, "lease_memory: expected nbytes of at least 0, got %zd", nbytes);
  }
  if (address == 0 && nbytes > 0) {
    return PyErr_Format(PyExc_ValueError, "lease_memory: expected the address of %zd bytes, got 0", nbytes);
  }
  LeaseMemory *memory = (LeaseMemory *)PyType_GenericAlloc(lease_memory_type, 0);
  if (memory == NULL) {
    return NULL;
  }
  Py_INCREF(lease);
  memory->lease = lease;
  memory->address = (void *)(uintptr_t)address;
  memory->nbytes = nbytes;
  memory->readonly = readonly;
  return (PyObject *)memory;
}

#else
typedef int rootspan_lease_memory_absent; /* a translation unit declares something */
#endif
