/* kiln_fastcall, a CPython extension. This part is the Caller type, which runs one
   compiled program for Python in a single C call (fastcall.py explains it); fastdispatch.c,
   included at the end, adds the Dispatcher, BlockCall and the module's init function.
   fastcall.py compiles it with the Python and NumPy headers. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <pthread.h>
#include <string.h>

int kiln_abi_version(void) { return 1; }

typedef int (*run_fn)(void **);

/* symbols of a program with run-time sizes (sized_program.py) one Caller serves */
#define MAX_SYMBOLS 16

typedef struct {
  Py_ssize_t slot;
  int ndim, typenum;
  int writeable;         /* the program writes this parameter in place */
  int symbolic;          /* some dims are symbols: -1 - k is the program's size k */
  npy_intp dims[NPY_MAXDIMS];
  char *fixed;           /* outputs: the planned buffer, or NULL: the one table[slot] holds */
  npy_intp nbytes, itemsize;
} spec_t;

typedef struct {
  PyObject_HEAD
  run_fn run;
  void **table;
  Py_ssize_t n_in, n_par, n_out;
  spec_t *specs;         /* inputs, then parameters, then outputs */
  PyObject **seen;       /* strong references to the parameter arrays bound in the table */
  uint64_t *writes;      /* the runtime's write count (kiln/_core/writes.py), or NULL */
  PyObject *owner;       /* a weak reference to the CProgram owning the table and buffers */
  pthread_mutex_t mutex;
  pthread_mutex_t *held; /* the lock taken for a call: `mutex`, or the one of `sharer` */
  PyObject *sharer;      /* the Caller whose lock this one shares (buffers in common), or NULL */
  int n_sym;             /* run-time sizes: bound from the inputs' dims, written to sizes[] */
  int64_t *sizes;        /*   (the table's sizes entry) when each k lies in               */
  const int64_t *limits; /*   [limits[n_sym + k], limits[k]]: the sizes the buffers hold  */
                         /*   and the program serves (sized_program.py)                  */
} Caller;

static int parse_spec(PyObject *t, spec_t *s, int n_sym) {
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
    if (s->dims[d] < -n_sym || PyErr_Occurred()) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "dim");
      return -1;
    }
    if (s->dims[d] < 0) s->symbolic = 1;
    else n *= s->dims[d];
  }
  s->itemsize = itemsize;
  s->nbytes = n * itemsize;
  s->fixed = (char *)(uintptr_t)fixed;
  return 0;
}

static int Caller_init(Caller *self, PyObject *args, PyObject *Py_UNUSED(kw)) {
  unsigned long long run, table, writes, sizes = 0, limits = 0;
  PyObject *ins, *pars, *outs, *owner, *sharer = Py_None;
  int n_sym = 0;
  if (!PyArg_ParseTuple(args, "KKO!O!O!KO!|OiKK", &run, &table, &PyTuple_Type, &ins,
                        &PyTuple_Type, &pars, &PyTuple_Type, &outs, &writes,
                        &_PyWeakref_RefType, &owner, &sharer, &n_sym, &sizes, &limits))
    return -1;
  if (sharer != Py_None && Py_TYPE(sharer) != Py_TYPE(self)) {
    PyErr_SetString(PyExc_TypeError, "Caller: the lock to share must be another Caller's");
    return -1;
  }
  if (n_sym < 0 || n_sym > MAX_SYMBOLS || (n_sym && (!sizes || !limits))) {
    PyErr_SetString(PyExc_ValueError, "Caller: run-time sizes need their arrays");
    return -1;
  }
  self->n_sym = n_sym;
  self->sizes = (int64_t *)(uintptr_t)sizes;
  self->limits = (const int64_t *)(uintptr_t)limits;
  Py_INCREF(owner);
  Py_XSETREF(self->owner, owner);
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
    if (parse_spec(t, &self->specs[k], k < self->n_in || k >= self->n_in + self->n_par
                                       ? n_sym : 0) < 0) return -1;
  }
  pthread_mutex_init(&self->mutex, NULL);
  self->held = &self->mutex;
  if (sharer != Py_None) {
    Py_INCREF(sharer);
    Py_XSETREF(self->sharer, sharer);
    self->held = ((Caller *)sharer)->held;
  }
  return 0;
}

static void forget(Caller *self) {
  for (Py_ssize_t k = 0; k < self->n_par; k++) Py_CLEAR(self->seen[k]);
}

static void Caller_dealloc(Caller *self) {
  Py_XDECREF(self->owner);
  Py_XDECREF(self->sharer);
  if (self->seen) { forget(self); PyMem_Free(self->seen); }
  PyMem_Free(self->specs);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* the array as planned: an exact ndarray of this shape and dtype, C-contiguous, aligned;
   a symbolic dim takes its size from the array (bound[k], -1 until then) */
static int matches(PyObject *obj, const spec_t *s, int64_t *bound) {
  if (!PyArray_CheckExact(obj)) return 0;
  PyArrayObject *a = (PyArrayObject *)obj;
  if (PyArray_NDIM(a) != s->ndim || PyArray_TYPE(a) != s->typenum) return 0;
  if (!PyArray_ISNOTSWAPPED(a) || !PyArray_ISCARRAY_RO(a)) return 0;
  if (s->writeable && !PyArray_ISWRITEABLE(a)) return 0;
  npy_intp *dims = PyArray_DIMS(a);
  for (int d = 0; d < s->ndim; d++) {
    npy_intp want = s->dims[d];
    if (want < 0) {
      int64_t *b = &bound[-1 - want];
      if (*b < 0) *b = dims[d];
      else if (*b != dims[d]) return 0;
    } else if (dims[d] != want) return 0;
  }
  return 1;
}

static void lock(Caller *self) {
  if (pthread_mutex_trylock(self->held) == 0) return;
  Py_BEGIN_ALLOW_THREADS      /* never wait for the mutex while holding the GIL */
  pthread_mutex_lock(self->held);
  Py_END_ALLOW_THREADS
}

static PyObject *run_held(Caller *self, PyObject *const *inputs, PyObject *const *params);

/* run with these input and parameter arrays (borrowed): a new list of outputs, a new
   reference to None when an array is not as planned or the program is gone, or NULL with
   an error set. The CProgram owns the table and buffers the generated code uses, and is
   held for the call: the GIL is released while the code runs, and another thread may
   drop the last other reference to the program meanwhile. */
static PyObject *run_core(Caller *self, PyObject *const *inputs, PyObject *const *params) {
  PyObject *owner = PyWeakref_GetObject(self->owner);
  if (owner == NULL) return NULL;
  if (owner == Py_None) Py_RETURN_NONE;
  Py_INCREF(owner);
  PyObject *out = run_held(self, inputs, params);
  Py_DECREF(owner);
  return out;
}

static PyObject *run_held(Caller *self, PyObject *const *inputs, PyObject *const *params) {
  spec_t *S = self->specs;
  int64_t bound[MAX_SYMBOLS];
  for (int k = 0; k < self->n_sym; k++) bound[k] = -1;
  for (Py_ssize_t k = 0; k < self->n_in; k++)
    if (!matches(inputs[k], &S[k], bound)) Py_RETURN_NONE;
  for (Py_ssize_t k = 0; k < self->n_par; k++) {
    PyObject *p = params[k];
    if (p != self->seen[k] && !matches(p, &S[self->n_in + k], bound)) Py_RETURN_NONE;
  }
  PyObject *out = PyList_New(self->n_out);
  if (out == NULL) return NULL;
  npy_intp nbytes[self->n_out ? self->n_out : 1];
  for (Py_ssize_t k = 0; k < self->n_out; k++) {
    spec_t *s = &S[self->n_in + self->n_par + k];
    if (s->typenum < 0) {      /* written into its parameter by the program */
      Py_INCREF(Py_None);
      PyList_SET_ITEM(out, k, Py_None);
      continue;
    }
    npy_intp dims[NPY_MAXDIMS];
    nbytes[k] = s->nbytes;
    for (int d = 0; d < s->ndim; d++) {
      dims[d] = s->dims[d] >= 0 ? s->dims[d] : bound[-1 - s->dims[d]];
      if (s->dims[d] < 0) nbytes[k] *= dims[d];
    }
    PyObject *a = PyArray_SimpleNew(s->ndim, dims, s->typenum);
    if (a == NULL) { Py_DECREF(out); return NULL; }
    PyList_SET_ITEM(out, k, a);
  }
  lock(self);
  /* the buffers hold the sizes within limits[] (read under the lock: they grow under it) */
  for (int k = 0; k < self->n_sym; k++) {
    if (bound[k] < self->limits[self->n_sym + k] || bound[k] > self->limits[k]) {
      pthread_mutex_unlock(self->held);
      Py_DECREF(out);
      Py_RETURN_NONE;
    }
    self->sizes[k] = bound[k];
  }
  for (Py_ssize_t k = 0; k < self->n_in; k++) {
    PyArrayObject *a = (PyArrayObject *)inputs[k];
    self->table[S[k].slot] = S[k].nbytes ? PyArray_DATA(a) : NULL;
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
    if (s->typenum >= 0 && nbytes[k])
      memcpy(PyArray_DATA((PyArrayObject *)PyList_GET_ITEM(out, k)),
             s->fixed ? s->fixed : (char *)self->table[s->slot], nbytes[k]);
  }
  pthread_mutex_unlock(self->held);
  if (rc != 0) {
    Py_DECREF(out);
    PyErr_Format(PyExc_RuntimeError, "C backend: generated code returned %d", rc);
    return NULL;
  }
  return out;
}

static PyObject *Caller_call(Caller *self, PyObject *args, PyObject *Py_UNUSED(kw)) {
  PyObject *inputs, *params;
  if (!PyArg_ParseTuple(args, "OO", &inputs, &params)) return NULL;
  if (!PyList_CheckExact(inputs) || !PyList_CheckExact(params)
      || PyList_GET_SIZE(inputs) != self->n_in || PyList_GET_SIZE(params) != self->n_par)
    Py_RETURN_NONE;
  /* the GIL may be released (waiting for the lock, running the program): tuples hold the
     arrays even if another thread empties the lists meanwhile */
  PyObject *held_in = PyList_AsTuple(inputs), *held_par = PyList_AsTuple(params);
  PyObject *out = held_in && held_par ? run_core(self, &PyTuple_GET_ITEM(held_in, 0),
                                                 &PyTuple_GET_ITEM(held_par, 0)) : NULL;
  Py_XDECREF(held_in);
  Py_XDECREF(held_par);
  return out;
}

static PyObject *Caller_enter(Caller *self, PyObject *Py_UNUSED(unused)) {
  lock(self);
  forget(self);         /* the Python path rebinds parameters on its own */
  Py_RETURN_NONE;
}

static PyObject *Caller_exit(Caller *self, PyObject *Py_UNUSED(args)) {
  pthread_mutex_unlock(self->held);
  Py_RETURN_FALSE;
}

static PyObject *Caller_forget(Caller *self, PyObject *Py_UNUSED(unused)) {
  forget(self);         /* the caller holds the lock: another Caller sharing it rebound */
  Py_RETURN_NONE;
}

static PyMethodDef Caller_methods[] = {
  {"forget", (PyCFunction)Caller_forget, METH_NOARGS,
   "forget the bound parameters (call with the shared lock held)"},
  {"__enter__", (PyCFunction)Caller_enter, METH_NOARGS, "hold the program's lock"},
  {"__exit__", (PyCFunction)Caller_exit, METH_VARARGS, "release the program's lock"},
  {NULL}
};

/* each of the module's types: made from Python, set up by Name_init, called by Name_call */
#define KILN_TYPE(Name, methods) static PyTypeObject Name##Type = {                  \
  PyVarObject_HEAD_INIT(NULL, 0)                                                      \
  .tp_name = "kiln_fastcall." #Name, .tp_basicsize = sizeof(Name),                    \
  .tp_flags = Py_TPFLAGS_DEFAULT, .tp_new = PyType_GenericNew,                        \
  .tp_init = (initproc)Name##_init, .tp_dealloc = (destructor)Name##_dealloc,         \
  .tp_call = (ternaryfunc)Name##_call, .tp_methods = methods}

KILN_TYPE(Caller, Caller_methods);

#include "fastdispatch.c"
