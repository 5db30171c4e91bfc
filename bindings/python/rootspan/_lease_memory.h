/* What _lease_memory.c gives rootspan._describe: lease_memory, built where the buffer protocol is in the API
 * the module is built for (the full API, or the limited API of Python 3.11 and later). */
#ifndef ROOTSPAN_PYTHON_LEASE_MEMORY_H
#define ROOTSPAN_PYTHON_LEASE_MEMORY_H

#include <Python.h>

#if !defined(Py_LIMITED_API) || Py_LIMITED_API + 0 >= 0x030B0000
#define ROOTSPAN_HAVE_LEASE_MEMORY 1

/* lease_memory(lease, address, nbytes, readonly) -> an object that exports the nbytes bytes at address as a
 * buffer (format "B", one dimension), read-only only where readonly, and keeps lease alive (its .lease).
 * ValueError for a negative nbytes, or address 0 with bytes. */
PyObject *rootspan_lease_memory(PyObject *module, PyObject *args);

/* Makes the type lease_memory returns; once, at the module's import. 0, or -1 with an exception set. */
int rootspan_lease_memory_ready(void);
#endif

#endif
