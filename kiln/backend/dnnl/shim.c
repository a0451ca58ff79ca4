/* kiln's kernel layer over oneDNN's C API (see library.py).

   An op is one oneDNN primitive plus everything needed to call it with plain row-major
   arrays: for each argument whose preferred layout differs from the caller's, a second
   buffer and a reorder. Ops are made once per shape and called many times; `kd_run` takes
   the caller's pointers and, per argument, an optional version stamp: an input whose
   pointer and nonzero stamp are unchanged since the last call keeps its reordered copy
   (weights are reordered once, not per call). One mutex per op: a primitive must not run
   on two threads at once.

   Only those kept copies live as long as the op. The other reordered arguments (outputs,
   inputs passed without a stamp) and the op's scratchpad are carved per call out of one
   buffer per calling thread, grown to the largest op it has run: a program of many ops
   (a ResNet's training step) then holds one op's worth of them, not the sum of all. */
#define _POSIX_C_SOURCE 200809L
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

#define KD_MAX_ARGS 8      /* batch norm's backward takes 8 (bnorm.c) */

int kiln_abi_version(void) { return 1; }

static __thread char kd_message[512];
const char *kd_error(void) { return kd_message; }

static dnnl_engine_t kd_engine;
static dnnl_stream_t kd_stream;

#define KD_TRY(call) do { dnnl_status_t s_ = (call); if (s_ != dnnl_success) { \
    snprintf(kd_message, sizeof kd_message, "%s failed (oneDNN status %d)", #call, (int)s_); \
    goto fail; } } while (0)

/* libgomp's, loaded with libdnnl */
extern void omp_set_num_threads(int);
extern int omp_get_max_threads(void);

/* OpenMP threads for kiln's primitives (library.py chooses). The thread count is the
   calling thread's OpenMP setting, which another library in the process may share (PyTorch
   loads a libgomp.so.1 too, and torch.set_num_threads sets it): so it is set around each
   of kiln's calls and restored after. */
static int kd_threads = 0;

int kd_set_threads(int n) {
  if (n > 0) kd_threads = n;
  return kd_threads ? kd_threads : omp_get_max_threads();
}

static int kd_enter(void) {
  int before = omp_get_max_threads();
  if (kd_threads && kd_threads != before) omp_set_num_threads(kd_threads);
  return before;
}

static void kd_leave(int before) {
  if (kd_threads && kd_threads != before) omp_set_num_threads(before);
}

int kd_init(void) {
  if (kd_engine) return 0;
  KD_TRY(dnnl_engine_create(&kd_engine, dnnl_cpu, 0));
  KD_TRY(dnnl_stream_create(&kd_stream, kd_engine, dnnl_stream_default_flags));
  return 0;
fail:
  return -1;
}

typedef struct {
  int arg;                      /* DNNL_ARG_* */
  int output;
  dnnl_memory_t user, lib;      /* lib == 0: the primitive reads the caller's buffer */
  dnnl_primitive_t reorder;
  size_t lib_size;              /* bytes of the reordered copy (64-byte multiple) */
  void *lib_buf;                /* the kept copy of a stamped input, made on first use */
  const void *last_ptr;
  int64_t last_stamp;
} kd_arg;

typedef struct {
  dnnl_primitive_t prim;
  int nargs;
  kd_arg args[KD_MAX_ARGS];
  dnnl_memory_t scratch;        /* its data: the calling thread's buffer (kd_transient) */
  size_t scratch_size;
  int threads;                  /* 0: kiln's policy (kd_threads); else run on this many */
  pthread_mutex_t lock;
} kd_op;

/* bytes held for ops between calls (kept copies, and every thread's transient buffer) */
static int64_t kd_held = 0;
int64_t kd_held_bytes(void) { return __atomic_load_n(&kd_held, __ATOMIC_RELAXED); }

static void *kd_alloc(size_t n) {
  void *p = 0;
  if (posix_memalign(&p, 64, n ? n : 64)) return 0;
  __atomic_add_fetch(&kd_held, (int64_t)(n ? n : 64), __ATOMIC_RELAXED);
  return p;
}

static void kd_release(void *p, size_t n) {
  if (!p) return;
  free(p);
  __atomic_sub_fetch(&kd_held, (int64_t)(n ? n : 64), __ATOMIC_RELAXED);
}

static size_t kd_round(size_t n) { return (n + 63) & ~(size_t)63; }

/* The calling thread's buffer for transient copies and scratchpads; freed when the thread
   ends. It only grows: the ops a thread runs again and again need the same sizes. */
typedef struct { void *buf; size_t size; } kd_arena;
static pthread_key_t kd_arena_key;
static pthread_once_t kd_arena_once = PTHREAD_ONCE_INIT;

static void kd_arena_free(void *p) {
  kd_arena *a = p;
  kd_release(a->buf, a->size);
  free(a);
}

static void kd_arena_init(void) { pthread_key_create(&kd_arena_key, kd_arena_free); }

static char *kd_transient(size_t n) {
  pthread_once(&kd_arena_once, kd_arena_init);
  kd_arena *a = pthread_getspecific(kd_arena_key);
  if (!a) {
    if (!(a = calloc(1, sizeof *a)) || pthread_setspecific(kd_arena_key, a)) {
      free(a);
      return 0;
    }
  }
  if (a->size < n) {
    kd_release(a->buf, a->size);
    a->size = 0;
    if (!(a->buf = kd_alloc(n))) return 0;
    a->size = n;
  }
  return a->buf;
}

static dnnl_memory_desc_t kd_plain_typed(int nd, const int64_t *dims, dnnl_data_type_t dt) {
  dnnl_dims_t d, s;
  int64_t stride = 1;
  for (int i = nd - 1; i >= 0; i--) { d[i] = dims[i]; s[i] = stride; stride *= dims[i]; }
  dnnl_memory_desc_t md = 0;
  if (dnnl_memory_desc_create_with_strides(&md, nd, d, dt, s) != dnnl_success) return 0;
  return md;
}

static dnnl_memory_desc_t kd_plain(int nd, const int64_t *dims) {
  return kd_plain_typed(nd, dims, dnnl_f32);
}

/* An activation (N, C, *S) as the caller stores it: plain, or channels-last (N, *S, C) in
   memory, which oneDNN's convolutions and poolings read and write without a reorder;
   of type dt (bfloat16 for the primitive's side of a bfloat16 convolution). */
static dnnl_memory_desc_t kd_act_typed(int nd, const int64_t *dims, int channels_last,
                                       dnnl_data_type_t dt) {
  if (!channels_last) return kd_plain_typed(nd, dims, dt);
  dnnl_dims_t d, s;
  for (int i = 0; i < nd; i++) d[i] = dims[i];
  int64_t stride = dims[1];
  s[1] = 1;
  for (int i = nd - 1; i >= 2; i--) { s[i] = stride; stride *= dims[i]; }
  s[0] = stride;
  dnnl_memory_desc_t md = 0;
  if (dnnl_memory_desc_create_with_strides(&md, nd, d, dt, s) != dnnl_success) return 0;
  return md;
}

static dnnl_memory_desc_t kd_act(int nd, const int64_t *dims, int channels_last) {
  return kd_act_typed(nd, dims, channels_last, dnnl_f32);
}

static dnnl_memory_desc_t kd_any_typed(int nd, const int64_t *dims, dnnl_data_type_t dt) {
  dnnl_dims_t d;
  for (int i = 0; i < nd; i++) d[i] = dims[i];
  dnnl_memory_desc_t md = 0;
  if (dnnl_memory_desc_create_with_tag(&md, nd, d, dt, dnnl_format_tag_any)
      != dnnl_success) return 0;
  return md;
}

static dnnl_memory_desc_t kd_any(int nd, const int64_t *dims) {
  return kd_any_typed(nd, dims, dnnl_f32);
}

static dnnl_primitive_attr_t kd_attr(void) {
  dnnl_primitive_attr_t attr = 0;
  if (dnnl_primitive_attr_create(&attr) != dnnl_success) return 0;
  dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  return attr;
}

void kd_free(kd_op *op) {
  if (!op) return;
  for (int i = 0; i < op->nargs; i++) {
    kd_arg *a = &op->args[i];
    if (a->reorder) dnnl_primitive_destroy(a->reorder);
    if (a->lib) dnnl_memory_destroy(a->lib);
    if (a->user) dnnl_memory_destroy(a->user);
    kd_release(a->lib_buf, a->lib_size);
  }
  if (op->scratch) dnnl_memory_destroy(op->scratch);
  if (op->prim) dnnl_primitive_destroy(op->prim);
  pthread_mutex_destroy(&op->lock);
  free(op);
}

static __thread char kd_impl[128];
/* the implementation oneDNN chose for the last op made on this thread (tests, probes) */
const char *kd_last_impl(void) { return kd_impl; }

/* Build an op from a primitive descriptor. user[i] is the caller's layout of argument i
   (0: whatever the primitive wants, e.g. a pooling workspace the caller only stores). */
static kd_op *kd_make(dnnl_primitive_desc_t pd, int nargs, const int *args,
                      const int *outputs, dnnl_memory_desc_t *user) {
  kd_op *op = calloc(1, sizeof(kd_op));
  if (!op) { snprintf(kd_message, sizeof kd_message, "out of memory"); goto fail; }
  pthread_mutex_init(&op->lock, 0);
  op->nargs = nargs;
  const char *impl = 0;
  if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success)
    snprintf(kd_impl, sizeof kd_impl, "%s", impl ? impl : "");
  KD_TRY(dnnl_primitive_create(&op->prim, pd));
  const_dnnl_memory_desc_t smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  if (smd && dnnl_memory_desc_get_size(smd)) {
    op->scratch_size = kd_round(dnnl_memory_desc_get_size(smd));
    KD_TRY(dnnl_memory_create(&op->scratch, smd, kd_engine, DNNL_MEMORY_NONE));
  }
  for (int i = 0; i < nargs; i++) {
    kd_arg *a = &op->args[i];
    a->arg = args[i];
    a->output = outputs[i];
    const_dnnl_memory_desc_t want = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md,
                                                                 args[i]);
    const_dnnl_memory_desc_t have = user[i] ? user[i] : want;
    KD_TRY(dnnl_memory_create(&a->user, have, kd_engine, DNNL_MEMORY_NONE));
    if (!dnnl_memory_desc_equal(want, have)) {
      a->lib_size = kd_round(dnnl_memory_desc_get_size(want));
      KD_TRY(dnnl_memory_create(&a->lib, want, kd_engine, DNNL_MEMORY_NONE));
      dnnl_primitive_desc_t rpd = 0;
      if (a->output)
        KD_TRY(dnnl_reorder_primitive_desc_create(&rpd, want, kd_engine, have, kd_engine, 0));
      else
        KD_TRY(dnnl_reorder_primitive_desc_create(&rpd, have, kd_engine, want, kd_engine, 0));
      dnnl_status_t st = dnnl_primitive_create(&a->reorder, rpd);
      dnnl_primitive_desc_destroy(rpd);
      KD_TRY(st);
    }
  }
  for (int i = 0; i < nargs; i++) if (user[i]) dnnl_memory_desc_destroy(user[i]);
  dnnl_primitive_desc_destroy(pd);
  return op;
fail:
  for (int i = 0; i < nargs; i++) if (user[i]) dnnl_memory_desc_destroy(user[i]);
  if (pd) dnnl_primitive_desc_destroy(pd);
  kd_free(op);
  return 0;
}

/* Size in bytes of argument i as the caller stores it. */
int64_t kd_arg_size(kd_op *op, int i) {
  const_dnnl_memory_desc_t md = 0;
  dnnl_memory_get_memory_desc(op->args[i].user, &md);
  return (int64_t)dnnl_memory_desc_get_size(md);
}

static int kd_run_locked(kd_op *op, void *const *ptrs, const int64_t *stamps);

/* The OpenMP thread count for a call of op; returns the caller's, for kd_op_leave.
   An op made for one thread runs on one: some of oneDNN's kernels (gemm:jit) read the
   OpenMP thread count when they run, not when they are made, and in kiln's pool
   blocks they then each started a team (the seed MLP at batch 64: 145-194 us a call
   against 108 us) */
static int kd_op_enter(const kd_op *op) {
  int before = omp_get_max_threads();
  if (op->threads) { if (op->threads != before) omp_set_num_threads(op->threads); }
  else kd_enter();
  return before;
}

static void kd_op_leave(int before) {
  if (omp_get_max_threads() != before) omp_set_num_threads(before);
}

int kd_run(kd_op *op, void *const *ptrs, const int64_t *stamps) {
  int before = kd_op_enter(op);
  pthread_mutex_lock(&op->lock);
  int rc = kd_run_locked(op, ptrs, stamps);
  pthread_mutex_unlock(&op->lock);
  kd_op_leave(before);
  return rc;
}

/* An argument is kept between calls when it is an input passed with a stamp. */
static int kd_kept(const kd_arg *a, const int64_t *stamps, int i) {
  return !a->output && stamps && stamps[i];
}

/* held[i] (held may be 0): the caller's buffer for argument i in the primitive's layout,
   kd_arg_layout (a copy the caller keeps or shares between ops); 0: the op's own. */
static void *kd_held_at(void *const *held, int i) { return held ? held[i] : 0; }

/* Bytes of the calling thread's buffer one call of op takes (its scratchpad and the copies
   it does not keep, nor the caller holds). */
static size_t kd_need(const kd_op *op, const int64_t *stamps, void *const *held) {
  size_t need = op->scratch_size;
  for (int i = 0; i < op->nargs; i++)
    if (op->args[i].lib && !kd_held_at(held, i) && !kd_kept(&op->args[i], stamps, i))
      need += op->args[i].lib_size;
  return need;
}

/* One call of op with its transient copies carved out of `transient` (kd_need bytes).
   An input the caller holds (held[i]) is converted into its buffer when bit i of fill is
   set, and otherwise read from there as it is. */
static int kd_exec(kd_op *op, void *const *ptrs, const int64_t *stamps, void *const *held,
                   int fill, char *transient) {
  dnnl_exec_arg_t exec[KD_MAX_ARGS + 1];
  int n = 0;
  if (op->scratch) {
    KD_TRY(dnnl_memory_set_data_handle(op->scratch, transient));
    transient += op->scratch_size;
  }
  for (int i = 0; i < op->nargs; i++) {
    kd_arg *a = &op->args[i];
    KD_TRY(dnnl_memory_set_data_handle(a->user, ptrs[i]));
    int ready = a->lib && kd_held_at(held, i) && !(fill >> i & 1);
    if (a->lib && kd_held_at(held, i)) {
      KD_TRY(dnnl_memory_set_data_handle(a->lib, held[i]));
      a->last_ptr = 0;
    } else if (a->lib && !kd_kept(a, stamps, i)) {
      KD_TRY(dnnl_memory_set_data_handle(a->lib, transient));
      transient += a->lib_size;
      a->last_ptr = 0;              /* the kept copy, if any, is older than this call */
    } else if (a->lib) {
      if (!a->lib_buf && !(a->lib_buf = kd_alloc(a->lib_size))) {
        snprintf(kd_message, sizeof kd_message, "out of memory (%zu bytes for oneDNN)",
                 a->lib_size);
        return -1;
      }
      KD_TRY(dnnl_memory_set_data_handle(a->lib, a->lib_buf));
    }
    if (a->lib && !a->output && !ready) {
      int64_t stamp = stamps ? stamps[i] : 0;
      if (!(stamp && stamp == a->last_stamp && ptrs[i] == a->last_ptr)) {
        dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, a->user}, {DNNL_ARG_TO, a->lib}};
        KD_TRY(dnnl_primitive_execute(a->reorder, kd_stream, 2, r));
        a->last_ptr = ptrs[i];
        a->last_stamp = stamp;
      }
    }
    exec[n].arg = a->arg;
    exec[n].memory = a->lib ? a->lib : a->user;
    n++;
  }
  if (op->scratch) { exec[n].arg = DNNL_ARG_SCRATCHPAD; exec[n].memory = op->scratch; n++; }
  KD_TRY(dnnl_primitive_execute(op->prim, kd_stream, n, exec));
  for (int i = 0; i < op->nargs; i++) {
    kd_arg *a = &op->args[i];
    if (a->lib && a->output) {
      dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, a->lib}, {DNNL_ARG_TO, a->user}};
      KD_TRY(dnnl_primitive_execute(a->reorder, kd_stream, 2, r));
    }
  }
  KD_TRY(dnnl_stream_wait(kd_stream));
  return 0;
fail:
  return -1;
}

static char *kd_transient_or_fail(size_t need) {
  char *transient = need ? kd_transient(need) : 0;
  if (need && !transient)
    snprintf(kd_message, sizeof kd_message, "out of memory (%zu bytes for oneDNN)", need);
  return transient;
}

static int kd_run_held_locked(kd_op *op, void *const *ptrs, const int64_t *stamps,
                              void *const *held, int fill) {
  size_t need = kd_need(op, stamps, held);
  char *transient = kd_transient_or_fail(need);
  if (need && !transient) return -1;
  return kd_exec(op, ptrs, stamps, held, fill, transient);
}

static int kd_run_locked(kd_op *op, void *const *ptrs, const int64_t *stamps) {
  return kd_run_held_locked(op, ptrs, stamps, 0, 0);
}

static void kd_dims(dnnl_dims_t out, int n, const int64_t *in, int64_t minus) {
  for (int i = 0; i < n; i++) out[i] = in[i] - minus;
}
