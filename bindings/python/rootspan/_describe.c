/* rootspan._describe: every component of a load described in one call, one
 * component claimed and mapped for its export in one (map_component), a
 * safetensors header's table built as the library walks it (safetensors_table),
 * memory a lease holds as a buffer numpy makes an array of in one call
 * (_lease_memory.c, lease_memory, where the API built for has buffers), and
 * (where dlpack/dlpack.h was found at build time) copied tensors handed to
 * torch as DLPack capsules made in C (_capsule.c, tensor_capsule).
 *
 * The package is ctypes over librootspan.so; this is its one compiled module,
 * and it is optional. Describing a component through ctypes reads its
 * rootspan_component_info field by field, one ctypes read each, which cost
 * more than the load itself did per component; here C reads the structs and
 * hands Python one tuple a component. Without this module (no compiler or no
 * Python headers at build time, another Python than the one it was built for,
 * or ROOTSPAN_PYTHON_EXTENSION=off) rootspan/weights.py makes the same tuples
 * through ctypes; the tests compare the two.
 *
 * It links nothing: the caller passes the addresses of the library functions
 * it calls (from ctypes), so the module serves whichever librootspan.so the
 * package opened. Private to the package: a wrong address
 * is a crash, as it would be through ctypes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>  // the limited API (Py_LIMITED_API) where meson sets it: one wheel for every later Python
#include <stdlib.h>
#include <string.h>

#include "rootspan/weights.h"
#ifdef ROOTSPAN_HAVE_DLPACK_H
#include "_capsule.h"
#endif
#include "_lease_memory.h"

typedef rootspan_status (*component_function)(const rootspan_weights *weights, size_t index,
                                              rootspan_component_info *info);

/* A C string the library returned as str, bad UTF-8 replaced (as _abi.text); None for NULL. New reference. */
static PyObject *text(const char *value) {
  if (value == NULL) {
    Py_RETURN_NONE;
  }
  return PyUnicode_DecodeUTF8(value, (Py_ssize_t)strlen(value), "replace");
}

static PyObject *new_reference(PyObject *object) {
  Py_INCREF(object);
  return object;
}

static PyObject *flag(int32_t value) { return PyBool_FromLong(value != 0); }

/* (extent, ...) of a shape the library gave: a new tuple, or NULL with an exception set. */
static PyObject *extents(const uint64_t *shape, uint32_t rank) {
  PyObject *tuple = PyTuple_New(rank);
  if (tuple == NULL) {
    return NULL;
  }
  for (uint32_t d = 0; d < rank; ++d) {
    PyObject *extent = PyLong_FromUnsignedLongLong(shape[d]);
    if (extent == NULL || PyTuple_SetItem(tuple, d, extent) < 0) {  // SetItem takes extent either way
      Py_DECREF(tuple);
      return NULL;
    }
  }
  return tuple;
}

static PyObject *shape_of(const rootspan_component_info *info) {
  if (info->rank > 0 && info->shape == NULL) {  // the library promises a shape for every rank above 0
    return PyErr_Format(PyExc_ValueError, "component %s: rank %u but no shape", info->id ? info->id : "(no id)",
                        (unsigned)info->rank);
  }
  return extents(info->shape, info->rank);
}

/* source_file as str: the previous component's str when it names the same file (a load's components lie in
 * a few files). New reference, or NULL with an exception set. */
static PyObject *source_file_of(const rootspan_component_info *info, const char **last_file,
                                PyObject **last_file_text) {
  if (info->source_file != NULL && *last_file != NULL && strcmp(info->source_file, *last_file) == 0) {
    return new_reference(*last_file_text);
  }
  PyObject *source_file = text(info->source_file);
  if (source_file != NULL && info->source_file != NULL) {
    Py_XDECREF(*last_file_text);
    *last_file_text = new_reference(source_file);
    *last_file = info->source_file;
  }
  return source_file;
}

/* value as str: `same_text` itself where value spells `same` (a default load's source name is its id). New
 * reference, or NULL with an exception set. */
static PyObject *text_or_same(const char *value, const char *same, PyObject *same_text) {
  if (value != NULL && same != NULL && same_text != NULL && strcmp(value, same) == 0) {
    return new_reference(same_text);
  }
  return text(value);
}

/* Puts item (a new reference, or NULL after a failed call) at values[at]; 0 when item is NULL or cannot be
 * put (PyTuple_SetItem takes the item either way). */
static int put(PyObject *values, Py_ssize_t at, PyObject *item) {
  return item != NULL && PyTuple_SetItem(values, at, item) == 0;
}

enum { VALUE_COUNT = 18 };

/* The tuple weights.py's Component is made from, in the order weights._component_values names. New
 * reference, or NULL with an exception set; each value is made only after the one before it succeeded. */
static PyObject *values_of(const rootspan_component_info *info, const char **last_file, PyObject **last_file_text) {
  PyObject *values = PyTuple_New(VALUE_COUNT);
  if (values == NULL) {
    return NULL;
  }
  Py_ssize_t at = 0;
  const int made = put(values, at++, text(info->id)) &&
                   put(values, at++, text_or_same(info->source_name, info->id, PyTuple_GetItem(values, 0))) &&
                   put(values, at++, info->root != NULL ? PyLong_FromVoidPtr(info->root) : new_reference(Py_None)) &&
                   put(values, at++, PyLong_FromUnsignedLongLong(info->byte_length)) &&
                   put(values, at++, PyLong_FromUnsignedLongLong(info->segments)) &&
                   put(values, at++, flag(info->zero_copy)) && put(values, at++, flag(info->read_only)) &&
                   put(values, at++, PyLong_FromLong(info->dtype)) && put(values, at++, PyLong_FromLong(info->role)) &&
                   put(values, at++, PyLong_FromLong(info->encoding)) && put(values, at++, text(info->format_id)) &&
                   put(values, at++, PyLong_FromUnsignedLongLong(info->values_per_block)) &&
                   put(values, at++, PyLong_FromUnsignedLongLong(info->bytes_per_block)) &&
                   put(values, at++, shape_of(info)) && put(values, at++, PyLong_FromLong(info->gguf_type)) &&
                   put(values, at++, source_file_of(info, last_file, last_file_text)) &&
                   put(values, at++, PyLong_FromUnsignedLongLong(info->source_offset)) &&
                   put(values, at++, flag(info->source_contiguous));
  if (!made) {
    Py_DECREF(values);  // the slots not filled are NULL, which a tuple's release skips
    return NULL;
  }
  return values;
}

/* components(function, weights, count) -> (list, status)
 *
 * function: the address of rootspan_weights_component; weights: a rootspan_weights handle's address; count:
 * its components (rootspan_weights_component_count). Calls the function for indexes 0, 1, ... without
 * holding the GIL, and stops at the first status that is not ROOTSPAN_OK: the list holds one tuple for each
 * component described before it, and status is that call's (ROOTSPAN_OK when all were). */
static PyObject *components(PyObject *module, PyObject *args) {
  (void)module;
  unsigned long long function_address = 0;
  unsigned long long weights_address = 0;
  Py_ssize_t count = 0;
  if (!PyArg_ParseTuple(args, "KKn:components", &function_address, &weights_address, &count)) {
    return NULL;
  }
  if (function_address == 0 || weights_address == 0) {
    return PyErr_Format(PyExc_ValueError,
                        "components: expected the addresses of rootspan_weights_component and "
                        "of a weights handle, got 0");
  }
  if (count < 0) {
    return PyErr_Format(PyExc_ValueError, "components: expected a count of at least 0, got %zd", count);
  }
  rootspan_component_info *infos = calloc(count > 0 ? (size_t)count : 1, sizeof *infos);
  if (infos == NULL) {
    return PyErr_NoMemory();
  }
  const component_function describe = (component_function)(uintptr_t)function_address;
  const rootspan_weights *weights = (const rootspan_weights *)(uintptr_t)weights_address;
  rootspan_status status = ROOTSPAN_OK;
  Py_ssize_t described = 0;
  Py_BEGIN_ALLOW_THREADS;
  for (; described < count; ++described) {
    infos[described].struct_size = ROOTSPAN_COMPONENT_INFO_STRUCT_SIZE;
    status = describe(weights, (size_t)described, &infos[described]);
    if (status != ROOTSPAN_OK) {
      break;
    }
  }
  Py_END_ALLOW_THREADS;
  PyObject *list = PyList_New(described);
  const char *last_file = NULL;
  PyObject *last_file_text = NULL;
  for (Py_ssize_t i = 0; list != NULL && i < described; ++i) {
    PyObject *values = values_of(&infos[i], &last_file, &last_file_text);
    if (values == NULL || PyList_SetItem(list, i, values) < 0) {  // SetItem takes values either way
      Py_CLEAR(list);
      break;
    }
  }
  Py_XDECREF(last_file_text);
  free(infos);
  if (list == NULL) {
    return NULL;
  }
  return Py_BuildValue("(Ni)", list, (int)status);
}

typedef rootspan_status (*map_function)(rootspan_weights *weights, size_t first, size_t count,
                                        rootspan_component_mapping *mappings, rootspan_error **error);
typedef rootspan_status (*unmap_function)(rootspan_component_mapping *mappings, size_t count, rootspan_error **error);

/* map_component(map, unmap, weights, index) -> (claim, mapping, data, byte_length), or None
 *
 * map, unmap: the addresses of rootspan_weights_map_components and rootspan_weights_unmap_components;
 * weights: a rootspan_weights handle's address. Claims and maps component `index` whole in one call, as a
 * component's export does (weights.py, holding the context's lock): the claim and the mapping, as
 * addresses, are the caller's to end. None when the call failed: it is all or nothing, so nothing was claimed
 * or mapped, and the caller takes the steps one by one to say why. Where ctypes took some 1.9 us (an array
 * of one struct, the call, the struct read back), this takes a fraction of that; Context.load + numpy() does
 * it for every component (issue 33). Should the tuple not be made (no memory), the claim and mapping are
 * ended before the error is raised. */
static PyObject *map_component(PyObject *module, PyObject *args) {
  (void)module;
  unsigned long long map_address = 0;
  unsigned long long unmap_address = 0;
  unsigned long long weights_address = 0;
  Py_ssize_t index = 0;
  if (!PyArg_ParseTuple(args, "KKKn:map_component", &map_address, &unmap_address, &weights_address, &index)) {
    return NULL;
  }
  if (map_address == 0 || unmap_address == 0 || weights_address == 0) {
    return PyErr_Format(PyExc_ValueError,
                        "map_component: expected the addresses of rootspan_weights_map_components, "
                        "rootspan_weights_unmap_components and a weights handle, got 0");
  }
  if (index < 0) {
    return PyErr_Format(PyExc_ValueError, "map_component: expected an index of at least 0, got %zd", index);
  }
  rootspan_component_mapping mapping;
  memset(&mapping, 0, sizeof mapping);
  mapping.struct_size = ROOTSPAN_COMPONENT_MAPPING_STRUCT_SIZE;
  const map_function map = (map_function)(uintptr_t)map_address;
  if (map((rootspan_weights *)(uintptr_t)weights_address, (size_t)index, 1, &mapping, NULL) != ROOTSPAN_OK) {
    Py_RETURN_NONE;
  }
  PyObject *mapped = PyTuple_New(4);
  const int made = mapped != NULL && put(mapped, 0, PyLong_FromVoidPtr(mapping.claim)) &&
                   put(mapped, 1, PyLong_FromVoidPtr(mapping.mapping)) &&
                   put(mapped, 2, PyLong_FromVoidPtr(mapping.data)) &&
                   put(mapped, 3, PyLong_FromUnsignedLongLong(mapping.byte_length));
  if (!made) {
    Py_XDECREF(mapped);  // the slots not filled are NULL, which a tuple's release skips
    ((unmap_function)(uintptr_t)unmap_address)(&mapping, 1, NULL);
    return NULL;
  }
  return mapped;
}

typedef rootspan_status (*each_tensor_function)(const char *path, rootspan_safetensors_tensor_fn each, void *context,
                                                char **metadata_json, rootspan_error **error);
typedef void (*string_free_function)(char *text);

/* What safetensors_table builds as the library walks a file's tensors. */
struct tensor_table {
  PyObject *tensors;      /* name -> (dtype, (shape), offset, byte_length), in file order */
  const char *last_dtype; /* the library's static name of the dtype before, and its str: a file has few types */
  PyObject *last_dtype_text;
};

/* The walk's function: one tensor into the table. 0, or 1 to stop the walk with a Python exception set. */
static int add_tensor(void *context, const rootspan_safetensors_tensor *tensor) {
  struct tensor_table *table = context;
  if (tensor->struct_size < ROOTSPAN_SAFETENSORS_TENSOR_STRUCT_SIZE) {
    PyErr_Format(PyExc_ValueError, "safetensors_table: the library's tensor struct is %zu bytes, expected at least %zu",
                 tensor->struct_size, (size_t)ROOTSPAN_SAFETENSORS_TENSOR_STRUCT_SIZE);
    return 1;
  }
  if (tensor->rank > 0 && tensor->shape == NULL) {  // the library promises a shape for every rank above 0
    PyErr_Format(PyExc_ValueError, "safetensors_table: tensor %s has rank %u but no shape",
                 tensor->name ? tensor->name : "(no name)", (unsigned)tensor->rank);
    return 1;
  }
  if (table->last_dtype_text == NULL || tensor->dtype != table->last_dtype) {
    PyObject *dtype = text(tensor->dtype);
    if (dtype == NULL) {
      return 1;
    }
    Py_XDECREF(table->last_dtype_text);
    table->last_dtype_text = dtype;
    table->last_dtype = tensor->dtype;
  }
  PyObject *shape = extents(tensor->shape, tensor->rank);
  PyObject *entry = shape != NULL ? PyTuple_New(4) : NULL;
  if (entry == NULL) {
    Py_XDECREF(shape);
    return 1;
  }
  const int made = put(entry, 1, shape) && put(entry, 0, new_reference(table->last_dtype_text)) &&  // shape first:
                   put(entry, 2, PyLong_FromUnsignedLongLong(tensor->offset)) &&  // the tuple takes it
                   put(entry, 3, PyLong_FromUnsignedLongLong(tensor->byte_length));
  PyObject *name = made ? text(tensor->name) : NULL;
  const int added = name != NULL && PyDict_SetItem(table->tensors, name, entry) == 0;
  Py_XDECREF(name);
  Py_XDECREF(entry);
  return added ? 0 : 1;
}

/* safetensors_table(each_tensor, string_free, path) -> (metadata JSON text, {name: (dtype, (shape), offset,
 * byte_length)}), or None
 *
 * each_tensor, string_free: the addresses of rootspan_safetensors_each_tensor and rootspan_string_free; path:
 * bytes. The header of one safetensors file as the drop-in's safe_open keeps it, in file order, built as the
 * library walks the tensors: no JSON to write and read back (some 4 ms of 10,000 tensors' open). None when the
 * library refused the file: the caller asks again through rootspan_safetensors_describe_file, whose error says
 * why. The GIL is held throughout, the file's read and check included: the walk makes Python objects. (The JSON
 * way held it as long: json.loads and the table took as much as this whole call does.) */
static PyObject *safetensors_table(PyObject *module, PyObject *args) {
  (void)module;
  unsigned long long each_address = 0;
  unsigned long long free_address = 0;
  const char *path = NULL;
  if (!PyArg_ParseTuple(args, "KKy:safetensors_table", &each_address, &free_address, &path)) {
    return NULL;
  }
  if (each_address == 0 || free_address == 0) {
    return PyErr_Format(PyExc_ValueError,
                        "safetensors_table: expected the addresses of rootspan_safetensors_each_tensor and "
                        "rootspan_string_free, got 0");
  }
  struct tensor_table table = {PyDict_New(), NULL, NULL};
  if (table.tensors == NULL) {
    return NULL;
  }
  char *metadata = NULL;
  const rootspan_status status =
      ((each_tensor_function)(uintptr_t)each_address)(path, add_tensor, &table, &metadata, NULL);
  Py_XDECREF(table.last_dtype_text);
  PyObject *metadata_text = NULL;
  if (status == ROOTSPAN_OK && !PyErr_Occurred()) {
    metadata_text = text(metadata);
  }
  if (metadata != NULL) {
    ((string_free_function)(uintptr_t)free_address)(metadata);
  }
  if (PyErr_Occurred()) {  // from add_tensor, or making the metadata's str
    Py_XDECREF(metadata_text);
    Py_DECREF(table.tensors);
    return NULL;
  }
  if (status != ROOTSPAN_OK) {
    Py_DECREF(table.tensors);
    Py_RETURN_NONE;
  }
  PyObject *answer = PyTuple_New(2);
  if (answer == NULL) {
    Py_DECREF(metadata_text);
    Py_DECREF(table.tensors);
    return NULL;
  }
  PyTuple_SetItem(answer, 0, metadata_text);  // a new tuple of two: each call takes its item, and cannot fail
  PyTuple_SetItem(answer, 1, table.tensors);
  return answer;
}

static PyMethodDef methods[] = {
    {"components", components, METH_VARARGS,
     "components(function, weights, count) -> (list of one tuple per component, status of the call that "
     "stopped, ROOTSPAN_OK when none did)"},
    {"safetensors_table", safetensors_table, METH_VARARGS,
     "safetensors_table(each_tensor, string_free, path) -> (metadata JSON text, {name: (dtype, (shape), offset, "
     "byte_length)}) of one safetensors file, or None when the library refused it"},
    {"map_component", map_component, METH_VARARGS,
     "map_component(map, unmap, weights, index) -> (claim, mapping, data, byte_length) of one component claimed "
     "and mapped whole, or None when that failed (nothing claimed)"},
#ifdef ROOTSPAN_HAVE_LEASE_MEMORY
    {"lease_memory", rootspan_lease_memory, METH_VARARGS,
     "lease_memory(lease, address, nbytes, readonly) -> an object exporting nbytes bytes at address as a buffer, "
     "read-only where readonly, that keeps lease alive (_lease_memory.c)"},
#endif
#ifdef ROOTSPAN_HAVE_DLPACK_H
    {"tensor_capsule", rootspan_tensor_capsule, METH_VARARGS,
     "tensor_capsule(owner, address, nbytes, shape, code, bits) -> a DLPack capsule of a writable CPU tensor "
     "over memory owner keeps alive (_capsule.c)"},
#endif
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT,
    "rootspan._describe",
    "Every component of a load described in one call, one mapped for its export in one, a safetensors header's "
    "table built as the library walks it, and (built with DLPack's header) copied tensors as DLPack capsules.",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

/* What this module's functions take and give, as rootspan/_compiled.py expects it: raised whenever one of them
 * changes, so that a module built from another copy of this file is not used (a source tree run against an
 * older build folder). */
#define INTERFACE_VERSION 1

PyMODINIT_FUNC PyInit__describe(void) {
#ifdef ROOTSPAN_HAVE_LEASE_MEMORY
  if (rootspan_lease_memory_ready() < 0) {
    return NULL;
  }
#endif
  PyObject *module = PyModule_Create(&module_definition);
  if (module != NULL && PyModule_AddIntConstant(module, "INTERFACE_VERSION", INTERFACE_VERSION) < 0) {
    Py_DECREF(module);
    return NULL;
  }
  return module;
}
