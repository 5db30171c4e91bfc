/* The one function of _capsule.c that rootspan._describe's method table names (built where dlpack/dlpack.h is,
 * ROOTSPAN_HAVE_DLPACK_H). */
#ifndef ROOTSPAN_PYTHON_CAPSULE_H
#define ROOTSPAN_PYTHON_CAPSULE_H

#include <Python.h>

/* tensor_capsule(owner, address, nbytes, shape, code, bits) -> a "dltensor" capsule of a writable CPU tensor of
 * shape (a tuple), DLPack type (code, bits), row-major at address, that keeps owner alive until its consumer
 * is done with it. ValueError when the shape needs more than nbytes bytes. */
PyObject *rootspan_tensor_capsule(PyObject *module, PyObject *args);

#endif
