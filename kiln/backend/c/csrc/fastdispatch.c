/* The rest of kiln_fastcall: Dispatcher (a hybridized block's whole call), BlockCall
   (HybridBlock.__call__ in C) and the module's init function; fastdispatch.py explains
   them. Included at the end of fastcall.c, whose Caller, run_core and KILN_TYPE it uses. */
#include <structmember.h>

/* ---- Dispatcher: a hybridized block's whole call, kiln arrays in, a kiln array out ---- */

#define MAX_ARGS 16
#define MAX_FRESH 16

typedef struct {
  PyObject_HEAD
  PyObject *array_type;   /* kiln.ndarray: arguments must be exactly this type */
  PyObject *state;        /* kiln._core.autograd._state, a threading.local: its attributes
                             are the calling thread's recording and training flags */
  PyObject *fresh;        /* ndarray._FRESH: (slot name, value) of a just-made array */
  PyObject *entries;      /* list of (Caller, list of Parameters, training flag) */
  Py_ssize_t data_offset;               /* of ndarray._data, or -1 */
  Py_ssize_t fresh_offsets[MAX_FRESH];  /* of each _FRESH slot; all >= 0, or fresh_fast 0 */
  int fresh_fast;
} Dispatcher;

static PyObject *s_data, *s_recording, *s_training, *s_dict;

/* the offset of `name`, a plain object slot of `type`, or -1 */
static Py_ssize_t slot_offset(PyObject *type, PyObject *name) {
  PyObject *d = PyObject_GetAttr(type, name);
  if (d == NULL) { PyErr_Clear(); return -1; }
  Py_ssize_t offset = -1;
  if (Py_TYPE(d) == &PyMemberDescr_Type) {
    PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
    if (m->type == T_OBJECT_EX && !(m->flags & READONLY)) offset = m->offset;
  }
  Py_DECREF(d);
  return offset;
}

static int Dispatcher_init(Dispatcher *self, PyObject *args, PyObject *Py_UNUSED(kw)) {
  if (!PyArg_ParseTuple(args, "O!OO!", &PyType_Type, &self->array_type, &self->state,
                        &PyTuple_Type, &self->fresh)) return -1;
  Py_INCREF(self->array_type); Py_INCREF(self->state); Py_INCREF(self->fresh);
  self->data_offset = slot_offset(self->array_type, s_data);
  Py_ssize_t n = PyTuple_GET_SIZE(self->fresh);
  self->fresh_fast = self->data_offset >= 0 && n <= MAX_FRESH;
  for (Py_ssize_t k = 0; k < n && self->fresh_fast; k++) {
    PyObject *pair = PyTuple_GET_ITEM(self->fresh, k);
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
      PyErr_SetString(PyExc_TypeError, "Dispatcher: fresh slots must be (name, value) pairs");
      return -1;
    }
    self->fresh_offsets[k] = slot_offset(self->array_type, PyTuple_GET_ITEM(pair, 0));
    if (self->fresh_offsets[k] < 0) self->fresh_fast = 0;
  }
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

/* A new reference to the calling thread's attribute dict of a threading.local, or NULL (no
   error set). Each attribute read on a threading.local looks the thread up again (~25 ns),
   so the hot paths look it up once and read the dict. */
static PyObject *thread_dict(PyObject *local) {
  PyObject *d = PyObject_GetAttr(local, s_dict);
  if (d == NULL) { PyErr_Clear(); return NULL; }
  if (!PyDict_Check(d)) { Py_DECREF(d); return NULL; }
  return d;
}

/* the truth of dict[key]: 1, 0, or -1 when the key is missing (or on an error, cleared) */
static int truth(PyObject *dict, PyObject *key) {
  PyObject *v = PyDict_GetItemWithError(dict, key);
  if (v == NULL) { PyErr_Clear(); return -1; }
  int t = PyObject_IsTrue(v);
  if (t < 0) PyErr_Clear();
  return t;
}

/* the calling thread's training flag when it is not recording, else -1 */
static int training_if_not_recording(Dispatcher *self) {
  PyObject *d = thread_dict(self->state);
  if (d == NULL) return -1;
  int training = truth(d, s_recording) == 0 ? truth(d, s_training) : -1;
  Py_DECREF(d);
  return training;
}

/* a new reference to a kiln array's NumPy array, or NULL (no error set) */
static PyObject *array_data(Dispatcher *self, PyObject *a) {
  if ((PyObject *)Py_TYPE(a) == self->array_type && self->data_offset >= 0) {
    PyObject *d = *(PyObject **)((char *)a + self->data_offset);
    Py_XINCREF(d);
    return d;
  }
  PyObject *d = PyObject_GetAttr(a, s_data);
  if (d == NULL) PyErr_Clear();
  return d;
}

static void set_slot(PyObject *obj, Py_ssize_t offset, PyObject *value) {
  Py_INCREF(value);     /* a just-allocated object: every slot is still empty */
  *(PyObject **)((char *)obj + offset) = value;
}

/* a kiln ndarray holding `data`, made as ndarray._wrap makes one (without its Python frame) */
static PyObject *wrap_array(Dispatcher *self, PyObject *data) {
  PyTypeObject *type = (PyTypeObject *)self->array_type;
  PyObject *obj = type->tp_alloc(type, 0);
  if (obj == NULL) return NULL;
  Py_ssize_t n = PyTuple_GET_SIZE(self->fresh);
  if (self->fresh_fast) {
    set_slot(obj, self->data_offset, data);
    for (Py_ssize_t k = 0; k < n; k++)
      set_slot(obj, self->fresh_offsets[k], PyTuple_GET_ITEM(PyTuple_GET_ITEM(self->fresh, k), 1));
    return obj;
  }
  if (PyObject_SetAttr(obj, s_data, data) < 0) goto fail;
  for (Py_ssize_t k = 0; k < n; k++) {
    PyObject *pair = PyTuple_GET_ITEM(self->fresh, k);
    if (PyObject_SetAttr(obj, PyTuple_GET_ITEM(pair, 0), PyTuple_GET_ITEM(pair, 1)) < 0)
      goto fail;
  }
  return obj;
fail:
  Py_DECREF(obj);
  return NULL;
}

/* the wrapped single output, NotImplemented when no entry serves these arguments */
static PyObject *dispatch_arrays(Dispatcher *self, PyObject *const *args, Py_ssize_t n) {
  if (n > MAX_ARGS) Py_RETURN_NOTIMPLEMENTED;
  int training = training_if_not_recording(self);
  if (training < 0) Py_RETURN_NOTIMPLEMENTED;
  PyObject *ins[MAX_ARGS];
  Py_ssize_t got = 0;
  PyObject *result = Py_NotImplemented;
  for (; got < n; got++) {
    PyObject *a = args[got];
    if ((PyObject *)Py_TYPE(a) != self->array_type) goto done;
    ins[got] = array_data(self, a);
    if (ins[got] == NULL) goto done;
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
      if (d == NULL) PyErr_Clear();
      pars[bound] = d ? array_data(self, d) : NULL;
      Py_XDECREF(d);
      if (pars[bound] == NULL) break;
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

static PyObject *Dispatcher_call(Dispatcher *self, PyObject *args, PyObject *kw) {
  if (kw != NULL && PyDict_GET_SIZE(kw)) Py_RETURN_NOTIMPLEMENTED;
  return dispatch_arrays(self, &PyTuple_GET_ITEM(args, 0), PyTuple_GET_SIZE(args));
}

static PyMethodDef Dispatcher_methods[] = {
  {"add", (PyCFunction)Dispatcher_add, METH_VARARGS, "add(caller, params, training)"},
  {NULL}
};

KILN_TYPE(Dispatcher, Dispatcher_methods);

/* ---- BlockCall: HybridBlock.__call__ ---- */

typedef struct {
  PyObject_HEAD
  /* kiln._core.trace._local, a threading.local: the calling thread's `stack` of traces (a
     block called while tracing is traced) and `bodies`, the ids of the blocks whose own
     code hybridize runs on that thread (their calls go to forward) */
  PyObject *traces;
} BlockCall;

static PyObject *s_cached, *s_active, *s_pre_hooks, *s_hooks, *s_dispatch, *s_undispatched,
                *s_stack, *s_bodies;

static int BlockCall_init(BlockCall *self, PyObject *args, PyObject *Py_UNUSED(kw)) {
  PyObject *traces;
  if (!PyArg_ParseTuple(args, "O", &traces)) return -1;
  Py_INCREF(traces);
  Py_XSETREF(self->traces, traces);
  return 0;
}

static void BlockCall_dealloc(BlockCall *self) {
  Py_XDECREF(self->traces);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* 1 when the block's compiled programs may serve the calling thread: it traces nothing,
   and hybridize is not running the block's own code on it (trace.body_of); else 0 */
static int compiled_may_serve(BlockCall *self, PyObject *block) {
  PyObject *d = self->traces ? thread_dict(self->traces) : NULL;
  if (d == NULL) return 0;
  PyObject *stack = PyDict_GetItemWithError(d, s_stack);     /* borrowed */
  PyObject *bodies = PyDict_GetItemWithError(d, s_bodies);
  PyErr_Clear();
  int may = stack != NULL && PyList_Check(stack) && PyList_GET_SIZE(stack) == 0
            && bodies != NULL && PyAnySet_Check(bodies);
  if (may && PySet_GET_SIZE(bodies)) {     /* a parent run eagerly: its children still may */
    PyObject *key = PyLong_FromVoidPtr(block);
    may = key != NULL && PySet_Contains(bodies, key) == 0;
    Py_XDECREF(key);
    PyErr_Clear();
  }
  Py_DECREF(d);
  return may;
}

/* HybridBlock.__call__'s fast path: the output, or NotImplemented to take the others */
static PyObject *block_dispatch(BlockCall *self, PyObject *block, PyObject *const *args,
                                Py_ssize_t n, PyObject *kw) {
  if ((kw != NULL && PyDict_GET_SIZE(kw)) || !compiled_may_serve(self, block))
    Py_RETURN_NOTIMPLEMENTED;
  PyObject *dict = PyObject_GenericGetDict(block, NULL);
  if (dict == NULL) { PyErr_Clear(); Py_RETURN_NOTIMPLEMENTED; }
  PyObject *result = NULL;
  /* new references throughout: the program releases the GIL, and another thread may
     hybridize the block anew meanwhile */
  PyObject *cached = PyDict_GetItemWithError(dict, s_cached), *dispatcher = NULL;
  Py_XINCREF(cached);
  if (cached != NULL && cached != Py_None && truth(dict, s_active) == 1
      && truth(dict, s_pre_hooks) == 0 && truth(dict, s_hooks) == 0)
    dispatcher = PyObject_GetAttr(cached, s_dispatch);
  PyErr_Clear();
  if (dispatcher != NULL && Py_TYPE(dispatcher) == &DispatcherType)
    result = dispatch_arrays((Dispatcher *)dispatcher, args, n);
  else
    result = Py_NewRef(Py_NotImplemented);
  Py_XDECREF(dispatcher);
  Py_XDECREF(cached);
  Py_DECREF(dict);
  return result;
}

static PyObject *BlockCall_call(BlockCall *self, PyObject *args, PyObject *kw) {
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  if (n < 1) {
    PyErr_SetString(PyExc_TypeError, "HybridBlock.__call__ takes the block first");
    return NULL;
  }
  PyObject *block = PyTuple_GET_ITEM(args, 0);
  PyObject *out = block_dispatch(self, block, &PyTuple_GET_ITEM(args, 1), n - 1, kw);
  if (out != Py_NotImplemented) return out;
  Py_DECREF(out);
  PyObject *rest = PyTuple_GetSlice(args, 1, n);
  if (rest == NULL) return NULL;
  /* looked up on the block, as the Python version does: a subclass may override it */
  out = PyObject_CallMethodObjArgs(block, s_undispatched, rest, kw ? kw : Py_None, NULL);
  Py_DECREF(rest);
  return out;
}

KILN_TYPE(BlockCall, NULL);

static PyObject *as_method(PyObject *Py_UNUSED(module), PyObject *func) {
  return PyInstanceMethod_New(func);
}

static PyMethodDef module_functions[] = {
  {"as_method", (PyCFunction)as_method, METH_O,
   "as_method(callable): a class attribute that binds like a Python function"},
  {NULL}
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, .m_name = "kiln_fastcall",
                                    .m_size = -1, .m_methods = module_functions};

static int add_type(PyObject *m, PyTypeObject *type, const char *name) {
  Py_INCREF(type);
  if (PyModule_AddObject(m, name, (PyObject *)type) < 0) { Py_DECREF(type); return -1; }
  return 0;
}

PyMODINIT_FUNC PyInit_kiln_fastcall(void) {
  import_array();
  if (PyType_Ready(&CallerType) < 0 || PyType_Ready(&DispatcherType) < 0
      || PyType_Ready(&BlockCallType) < 0) return NULL;
  const char *names[] = {"_data", "recording", "training", "_kiln_cached", "_hybrid_active",
                         "_forward_pre_hooks", "_forward_hooks", "dispatch",
                         "_call_undispatched", "stack", "bodies", "__dict__"};
  PyObject **strings[] = {&s_data, &s_recording, &s_training, &s_cached, &s_active,
                          &s_pre_hooks, &s_hooks, &s_dispatch, &s_undispatched, &s_stack,
                          &s_bodies, &s_dict};
  for (int k = 0; k < 12; k++)
    if ((*strings[k] = PyUnicode_InternFromString(names[k])) == NULL) return NULL;
  PyObject *m = PyModule_Create(&module);
  if (m == NULL) return NULL;
  if (add_type(m, &CallerType, "Caller") < 0 || add_type(m, &DispatcherType, "Dispatcher") < 0
      || add_type(m, &BlockCallType, "BlockCall") < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
