"""A CPython extension that makes the per-call path of a compiled program one C call.

For a batch-1 model the generated code runs in about 10 µs, and the Python around it
(checking inputs, binding parameters, the ctypes call, copying outputs, finding the entry
for the arguments, wrapping the result) cost about as much again.

`Caller` serves one CProgram: it checks each input and parameter against the planned
shape, dtype and layout, copies small inputs into their fixed buffers, rebinds a parameter
only when its array object changed, releases the GIL while the generated code runs, and
returns fresh output arrays. Anything it does not handle (a wrong or non-contiguous input,
another array type) makes it return None, and CProgram takes its Python path, which
converts or raises the clear error. A Caller is also the program's lock (`with caller:`),
shared by both paths: the table and buffers belong to one call at a time.

`Dispatcher` serves a hybridized function: given kiln arrays, it finds the compiled entry
whose Caller accepts them (not while recording; same training mode), reads the current
parameter arrays, runs it and wraps the single output. Entries that need Python around the
program (guards, pre-call hooks, state written back, several outputs) are never added, and
anything it declines returns NotImplemented for the Python path.

Building it needs the Python and NumPy headers; without them kiln keeps its Python paths.
"""
import importlib.machinery
import importlib.util
import os
import sysconfig
import threading

from . import build

MODULE = "kiln_fastcall"

_SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <pthread.h>
#include <string.h>

int kiln_abi_version(void) { return 1; }

typedef int (*run_fn)(void **);

typedef struct {
  Py_ssize_t slot;
  int ndim, typenum;
  int writeable;         /* the program writes this parameter in place */
  npy_intp dims[NPY_MAXDIMS];
  char *fixed;           /* inputs: the fixed buffer, or NULL; outputs: the planned buffer */
  npy_intp nbytes;
} spec_t;

typedef struct {
  PyObject_HEAD
  run_fn run;
  void **table;
  Py_ssize_t n_in, n_par, n_out;
  spec_t *specs;         /* inputs, then parameters, then outputs */
  PyObject **seen;       /* strong references to the parameter arrays bound in the table */
  uint64_t *writes;      /* the runtime's write count (kiln/writes.py), or NULL */
  pthread_mutex_t mutex;
} Caller;

static int parse_spec(PyObject *t, spec_t *s) {
  PyObject *shape;
  unsigned long long fixed;
  Py_ssize_t itemsize;
  if (!PyArg_ParseTuple(t, "nOinKi", &s->slot, &shape, &s->typenum, &itemsize, &fixed,
                        &s->writeable))
    return -1;
  if (!PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) > NPY_MAXDIMS) {
    PyErr_SetString(PyExc_ValueError, "shape must be a tuple of at most NPY_MAXDIMS ints");
    return -1;
  }
  s->ndim = (int)PyTuple_GET_SIZE(shape);
  npy_intp n = 1;
  for (int d = 0; d < s->ndim; d++) {
    s->dims[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, d));
    if (s->dims[d] < 0) { if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "dim"); return -1; }
    n *= s->dims[d];
  }
  s->nbytes = n * itemsize;
  s->fixed = (char *)(uintptr_t)fixed;
  return 0;
}

static int Caller_init(Caller *self, PyObject *args, PyObject *kw) {
  unsigned long long run, table, writes = 0;
  PyObject *ins, *pars, *outs;
  if (!PyArg_ParseTuple(args, "KKO!O!O!|K", &run, &table, &PyTuple_Type, &ins, &PyTuple_Type,
                        &pars, &PyTuple_Type, &outs, &writes)) return -1;
  self->writes = (uint64_t *)(uintptr_t)writes;
  self->run = (run_fn)(uintptr_t)run;
  self->table = (void **)(uintptr_t)table;
  self->n_in = PyTuple_GET_SIZE(ins);
  self->n_par = PyTuple_GET_SIZE(pars);
  self->n_out = PyTuple_GET_SIZE(outs);
  Py_ssize_t total = self->n_in + self->n_par + self->n_out;
  self->specs = PyMem_Calloc(total ? total : 1, sizeof(spec_t));
  self->seen = PyMem_Calloc(self->n_par ? self->n_par : 1, sizeof(PyObject *));
  if (!self->specs || !self->seen) { PyErr_NoMemory(); return -1; }
  for (Py_ssize_t k = 0; k < total; k++) {
    PyObject *t = k < self->n_in ? PyTuple_GET_ITEM(ins, k)
                : k < self->n_in + self->n_par ? PyTuple_GET_ITEM(pars, k - self->n_in)
                : PyTuple_GET_ITEM(outs, k - self->n_in - self->n_par);
    if (parse_spec(t, &self->specs[k]) < 0) return -1;
  }
  pthread_mutex_init(&self->mutex, NULL);
  return 0;
}

static void forget(Caller *self) {
  for (Py_ssize_t k = 0; k < self->n_par; k++) Py_CLEAR(self->seen[k]);
}

static void Caller_dealloc(Caller *self) {
  if (self->seen) { forget(self); PyMem_Free(self->seen); }
  PyMem_Free(self->specs);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* the array as planned: an exact ndarray of this shape and dtype, C-contiguous, aligned */
static int matches(PyObject *obj, const spec_t *s) {
  if (!PyArray_CheckExact(obj)) return 0;
  PyArrayObject *a = (PyArrayObject *)obj;
  if (PyArray_NDIM(a) != s->ndim || PyArray_TYPE(a) != s->typenum) return 0;
  if (!PyArray_ISNOTSWAPPED(a) || !PyArray_ISCARRAY_RO(a)) return 0;
  if (s->writeable && !PyArray_ISWRITEABLE(a)) return 0;
  npy_intp *dims = PyArray_DIMS(a);
  for (int d = 0; d < s->ndim; d++) if (dims[d] != s->dims[d]) return 0;
  return 1;
}

static void lock(Caller *self) {
  if (pthread_mutex_trylock(&self->mutex) == 0) return;
  Py_BEGIN_ALLOW_THREADS      /* never wait for the mutex while holding the GIL */
  pthread_mutex_lock(&self->mutex);
  Py_END_ALLOW_THREADS
}

/* run with these input and parameter arrays (borrowed): a new list of outputs, a new
   reference to None when an array is not as planned, or NULL with an error set */
static PyObject *run_core(Caller *self, PyObject *const *inputs, PyObject *const *params) {
  spec_t *S = self->specs;
  for (Py_ssize_t k = 0; k < self->n_in; k++)
    if (!matches(inputs[k], &S[k])) Py_RETURN_NONE;
  for (Py_ssize_t k = 0; k < self->n_par; k++) {
    PyObject *p = params[k];
    if (p != self->seen[k] && !matches(p, &S[self->n_in + k])) Py_RETURN_NONE;
  }
  PyObject *out = PyList_New(self->n_out);
  if (out == NULL) return NULL;
  for (Py_ssize_t k = 0; k < self->n_out; k++) {
    spec_t *s = &S[self->n_in + self->n_par + k];
    if (s->typenum < 0) {      /* written into its parameter by the program */
      Py_INCREF(Py_None);
      PyList_SET_ITEM(out, k, Py_None);
      continue;
    }
    PyObject *a = PyArray_SimpleNew(s->ndim, s->dims, s->typenum);
    if (a == NULL) { Py_DECREF(out); return NULL; }
    PyList_SET_ITEM(out, k, a);
  }
  lock(self);
  for (Py_ssize_t k = 0; k < self->n_in; k++) {
    PyArrayObject *a = (PyArrayObject *)inputs[k];
    if (S[k].fixed) memcpy(S[k].fixed, PyArray_DATA(a), S[k].nbytes);
    else self->table[S[k].slot] = S[k].nbytes ? PyArray_DATA(a) : NULL;
  }
  for (Py_ssize_t k = 0; k < self->n_par; k++) {
    PyObject *p = params[k];
    if (p == self->seen[k]) continue;
    /* copies the runtime kept of the old parameter (packed.py) must not serve this one */
    if (self->writes) __atomic_fetch_add(self->writes, 1, __ATOMIC_RELAXED);
    spec_t *s = &S[self->n_in + k];
    self->table[s->slot] = s->nbytes ? PyArray_DATA((PyArrayObject *)p) : NULL;
    Py_INCREF(p);
    Py_XSETREF(self->seen[k], p);   /* the reference keeps the bound pointer valid */
  }
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = self->run(self->table);
  Py_END_ALLOW_THREADS
  for (Py_ssize_t k = 0; k < self->n_out; k++) {
    spec_t *s = &S[self->n_in + self->n_par + k];
    if (s->typenum >= 0 && s->nbytes)
      memcpy(PyArray_DATA((PyArrayObject *)PyList_GET_ITEM(out, k)), s->fixed, s->nbytes);
  }
  pthread_mutex_unlock(&self->mutex);
  if (rc != 0) {
    Py_DECREF(out);
    PyErr_Format(PyExc_RuntimeError, "C backend: generated code returned %d", rc);
    return NULL;
  }
  return out;
}

static PyObject *Caller_call(Caller *self, PyObject *args, PyObject *kw) {
  PyObject *inputs, *params;
  if (!PyArg_ParseTuple(args, "OO", &inputs, &params)) return NULL;
  if (!PyList_CheckExact(inputs) || !PyList_CheckExact(params)
      || PyList_GET_SIZE(inputs) != self->n_in || PyList_GET_SIZE(params) != self->n_par)
    Py_RETURN_NONE;
  return run_core(self, &PyList_GET_ITEM(inputs, 0), &PyList_GET_ITEM(params, 0));
}

static PyObject *Caller_enter(Caller *self, PyObject *unused) {
  lock(self);
  forget(self);         /* the Python path rebinds parameters on its own */
  Py_RETURN_NONE;
}

static PyObject *Caller_exit(Caller *self, PyObject *args) {
  pthread_mutex_unlock(&self->mutex);
  Py_RETURN_FALSE;
}

static PyMethodDef Caller_methods[] = {
  {"__enter__", (PyCFunction)Caller_enter, METH_NOARGS, "hold the program's lock"},
  {"__exit__", (PyCFunction)Caller_exit, METH_VARARGS, "release the program's lock"},
  {NULL}
};

static PyTypeObject CallerType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "kiln_fastcall.Caller",
  .tp_basicsize = sizeof(Caller),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_new = PyType_GenericNew,
  .tp_init = (initproc)Caller_init,
  .tp_dealloc = (destructor)Caller_dealloc,
  .tp_call = (ternaryfunc)Caller_call,
  .tp_methods = Caller_methods,
};

/* ---- Dispatcher: a hybridized block's whole call, kiln arrays in, a kiln array out ---- */

#define MAX_ARGS 16

typedef struct {
  PyObject_HEAD
  PyObject *array_type;   /* kiln.ndarray: arguments must be exactly this type */
  PyObject *state;        /* kiln.autograd._state: no recording, and the training flag */
  PyObject *fresh;        /* ndarray._FRESH: (slot name, value) of a just-made array */
  PyObject *entries;      /* list of (Caller, list of Parameters, training flag) */
} Dispatcher;

static PyObject *s_data, *s_recording, *s_training;

static int Dispatcher_init(Dispatcher *self, PyObject *args, PyObject *kw) {
  if (!PyArg_ParseTuple(args, "O!OO!", &PyType_Type, &self->array_type, &self->state,
                        &PyTuple_Type, &self->fresh)) return -1;
  Py_INCREF(self->array_type); Py_INCREF(self->state); Py_INCREF(self->fresh);
  self->entries = PyList_New(0);
  return self->entries ? 0 : -1;
}

static void Dispatcher_dealloc(Dispatcher *self) {
  Py_XDECREF(self->array_type); Py_XDECREF(self->state); Py_XDECREF(self->fresh);
  Py_XDECREF(self->entries);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Dispatcher_add(Dispatcher *self, PyObject *args) {
  PyObject *caller, *params, *training;
  if (!PyArg_ParseTuple(args, "O!O!O", &CallerType, &caller, &PyList_Type, &params, &training))
    return NULL;
  PyObject *entry = PyTuple_Pack(3, caller, params, PyObject_IsTrue(training) ? Py_True : Py_False);
  if (entry == NULL || PyList_Append(self->entries, entry) < 0) { Py_XDECREF(entry); return NULL; }
  Py_DECREF(entry);
  Py_RETURN_NONE;
}

static int flag(PyObject *obj, PyObject *name) {
  PyObject *v = PyObject_GetAttr(obj, name);
  if (v == NULL) { PyErr_Clear(); return -1; }
  int t = PyObject_IsTrue(v);
  Py_DECREF(v);
  if (t < 0) PyErr_Clear();
  return t;
}

/* a kiln ndarray holding `data`, made as ndarray._wrap makes one (without its Python frame) */
static PyObject *wrap_array(Dispatcher *self, PyObject *data) {
  PyTypeObject *type = (PyTypeObject *)self->array_type;
  PyObject *obj = type->tp_alloc(type, 0);
  if (obj == NULL) return NULL;
  if (PyObject_SetAttr(obj, s_data, data) < 0) goto fail;
  for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(self->fresh); k++) {
    PyObject *pair = PyTuple_GET_ITEM(self->fresh, k);
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
      PyErr_SetString(PyExc_TypeError, "Dispatcher: fresh slots must be (name, value) pairs");
      goto fail;
    }
    if (PyObject_SetAttr(obj, PyTuple_GET_ITEM(pair, 0), PyTuple_GET_ITEM(pair, 1)) < 0)
      goto fail;
  }
  return obj;
fail:
  Py_DECREF(obj);
  return NULL;
}

/* the wrapped single output, NotImplemented when no entry serves these arguments */
static PyObject *Dispatcher_call(Dispatcher *self, PyObject *args, PyObject *kw) {
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  if (kw != NULL || n > MAX_ARGS || flag(self->state, s_recording) != 0)
    Py_RETURN_NOTIMPLEMENTED;
  int training = flag(self->state, s_training);
  if (training < 0) Py_RETURN_NOTIMPLEMENTED;
  PyObject *ins[MAX_ARGS];
  Py_ssize_t got = 0;
  PyObject *result = Py_NotImplemented;
  for (; got < n; got++) {
    PyObject *a = PyTuple_GET_ITEM(args, got);
    if ((PyObject *)Py_TYPE(a) != self->array_type) goto done;
    ins[got] = PyObject_GetAttr(a, s_data);
    if (ins[got] == NULL) { PyErr_Clear(); goto done; }
  }
  for (Py_ssize_t e = 0; e < PyList_GET_SIZE(self->entries); e++) {
    PyObject *entry = PyList_GET_ITEM(self->entries, e);
    Caller *caller = (Caller *)PyTuple_GET_ITEM(entry, 0);
    PyObject *params = PyTuple_GET_ITEM(entry, 1);
    if ((PyTuple_GET_ITEM(entry, 2) == Py_True) != training || caller->n_in != n
        || PyList_GET_SIZE(params) != caller->n_par) continue;
    Py_ssize_t np_ = caller->n_par, bound = 0;
    PyObject **pars = PyMem_Malloc((np_ ? np_ : 1) * sizeof(PyObject *));
    if (pars == NULL) { result = PyErr_NoMemory(); goto done; }
    for (; bound < np_; bound++) {        /* Parameter._data._data: the NumPy array */
      PyObject *d = PyObject_GetAttr(PyList_GET_ITEM(params, bound), s_data);
      pars[bound] = d ? PyObject_GetAttr(d, s_data) : NULL;
      Py_XDECREF(d);
      if (pars[bound] == NULL) { PyErr_Clear(); break; }
    }
    PyObject *out = bound == np_ ? run_core(caller, ins, pars) : (Py_INCREF(Py_None), Py_None);
    for (Py_ssize_t k = 0; k < bound; k++) Py_DECREF(pars[k]);
    PyMem_Free(pars);
    if (out == NULL) { result = NULL; goto done; }
    if (out == Py_None) { Py_DECREF(out); continue; }
    result = wrap_array(self, PyList_GET_ITEM(out, 0));
    Py_DECREF(out);
    goto done;
  }
done:
  for (Py_ssize_t k = 0; k < got; k++) Py_DECREF(ins[k]);
  if (result == Py_NotImplemented) Py_INCREF(result);
  return result;
}

static PyMethodDef Dispatcher_methods[] = {
  {"add", (PyCFunction)Dispatcher_add, METH_VARARGS, "add(caller, params, training)"},
  {NULL}
};

static PyTypeObject DispatcherType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "kiln_fastcall.Dispatcher",
  .tp_basicsize = sizeof(Dispatcher),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_new = PyType_GenericNew,
  .tp_init = (initproc)Dispatcher_init,
  .tp_dealloc = (destructor)Dispatcher_dealloc,
  .tp_call = (ternaryfunc)Dispatcher_call,
  .tp_methods = Dispatcher_methods,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "kiln_fastcall", NULL, -1, NULL};

PyMODINIT_FUNC PyInit_kiln_fastcall(void) {
  import_array();
  if (PyType_Ready(&CallerType) < 0 || PyType_Ready(&DispatcherType) < 0) return NULL;
  s_data = PyUnicode_InternFromString("_data");
  s_recording = PyUnicode_InternFromString("recording");
  s_training = PyUnicode_InternFromString("training");
  if (!s_data || !s_recording || !s_training) return NULL;
  PyObject *m = PyModule_Create(&module);
  if (m == NULL) return NULL;
  Py_INCREF(&CallerType);
  if (PyModule_AddObject(m, "Caller", (PyObject *)&CallerType) < 0) {
    Py_DECREF(&CallerType); Py_DECREF(m); return NULL;
  }
  Py_INCREF(&DispatcherType);
  if (PyModule_AddObject(m, "Dispatcher", (PyObject *)&DispatcherType) < 0) {
    Py_DECREF(&DispatcherType); Py_DECREF(m); return NULL;
  }
  return m;
}
"""

_module = None
_lock = threading.Lock()


def _get():
    global _module
    with _lock:
        if _module is None:
            _module = _build() or False
        return _module or None


def caller_type():
    """kiln_fastcall.Caller, or None when the extension cannot be built here."""
    module = _get()
    return module.Caller if module else None


def dispatcher():
    """A new kiln_fastcall.Dispatcher for one hybridized function, or None."""
    module = _get()
    if not module:
        return None
    from ... import autograd
    from ...ndarray import ndarray
    return module.Dispatcher(ndarray, autograd._state, ndarray._FRESH)


def _build():
    if os.environ.get("KILN_NO_FASTCALL"):
        return None
    try:
        import numpy
        include = sysconfig.get_paths()["include"]
        if not os.path.exists(os.path.join(include, "Python.h")):
            return None
        # -O2: glue code, and -O3 -funroll-loops added a third to its 0.5 s compile, which
        # a cold first call waits for
        lib = build.load(_SOURCE, extra_flags=("-pthread", f"-I{include}",
                                               f"-I{numpy.get_include()}"), opt=("-O2",))
        loader = importlib.machinery.ExtensionFileLoader(MODULE, lib._name)
        spec = importlib.util.spec_from_file_location(MODULE, lib._name, loader=loader)
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
        return module
    except Exception:    # no headers, a compiler error, a NumPy without its C API: keep Python
        return None
