"""A cache of large NumPy data blocks, as MXNet's pooled storage keeps its CPU memory.

Eager CNN code makes and drops arrays of the same few large sizes on every step (a
convolution's output, its ReLU, their gradients: 75 MB each for 128 x 64 x 48 x 48
float32). glibc serves every block above 32 MB from a fresh mmap and unmaps it on free, so
each such array is paid again in page faults: on this machine np.maximum(x, 0) over 75 MB
took 7 ms of user and 9 ms of system time with a fresh output, and no system time writing
into an existing one. This module gives NumPy a data allocator (NumPy's
PyDataMem_SetHandler, in the calling context) that keeps freed blocks of at least
MIN_BYTES, up to a total of LIMIT_BYTES (the oldest go back first), and hands one back
for a request of the same size. A large request it cannot serve first returns at least
its size of cached blocks to the system, so the process's peak memory stays what it was
without the cache. Smaller blocks go straight to the system allocator. It is
on from `import kiln`; KILN_ARRAY_CACHE=0 leaves NumPy's allocator alone.

Each block carries its true size in a header written by this allocator, so a cached
block is never handed out for a larger request, whatever size NumPy passes to free.
After a fork (DataLoader workers) the child starts with an unlocked mutex.
"""
import ctypes
import threading

import numpy as _np

MIN_BYTES = 4 << 20


def _limit_bytes():
    """An eighth of physical memory, from 256 MB to 4 GB: the cache holds two of VGG's
    largest activations at batch 128 (1.6 GB each) on the 24 GB development machine."""
    import os
    try:
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        physical = 8 << 30
    return max(256 << 20, min(4 << 30, physical // 8))


LIMIT_BYTES = _limit_bytes()

SOURCE = r"""
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HEADER 64
#define SLOTS 256

int kiln_abi_version(void) { return 1; }

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *blocks[SLOTS];      /* cached blocks (their headers), oldest first */
static size_t sizes[SLOTS];
static int count = 0;
static size_t cached = 0, min_bytes = 0, limit = 0;
static int64_t hits = 0, misses = 0;

static void child_after_fork(void) { pthread_mutex_init(&lock, 0); }

void kac_configure(size_t min_b, size_t limit_b) {
  static int registered = 0;
  if (!registered) { pthread_atfork(0, 0, child_after_fork); registered = 1; }
  min_bytes = min_b; limit = limit_b;
}

/* The block's size sits in the 8 bytes before the data; the size says which header it
   has: 64 bytes (64-byte aligned data) for a cacheable block, 16 (malloc's alignment, as
   NumPy's own allocator gives) for a small one. */
static size_t header_of(size_t n) { return n >= min_bytes ? HEADER : 16; }

static void *fresh(size_t n) {
  void *p = 0;
  size_t h = header_of(n);
  if (h == HEADER) { if (posix_memalign(&p, 64, n + h)) return 0; }
  else if (!(p = malloc(n + h))) return 0;
  *(size_t *)((char *)p + h - 8) = n;
  return (char *)p + h;
}

static size_t size_of(void *ptr) { return *(size_t *)((char *)ptr - 8); }

static void *take(size_t n) {
  void *p = 0;
  pthread_mutex_lock(&lock);
  for (int i = count - 1; i >= 0; i--) {
    if (sizes[i] == n) {
      p = blocks[i];
      cached -= n;
      memmove(blocks + i, blocks + i + 1, (count - i - 1) * sizeof *blocks);
      memmove(sizes + i, sizes + i + 1, (count - i - 1) * sizeof *sizes);
      count--;
      break;
    }
  }
  void *evict[SLOTS];
  int n_evict = 0;
  size_t evicted = 0;
  if (p) hits++;
  else {
    /* a size the cache does not hold: give back at least as much (the oldest first)
       before the system is asked for more, so the cache never raises the peak */
    misses++;
    while (count > 0 && evicted < n) {
      evict[n_evict++] = blocks[0];
      evicted += sizes[0];
      cached -= sizes[0];
      memmove(blocks, blocks + 1, (count - 1) * sizeof *blocks);
      memmove(sizes, sizes + 1, (count - 1) * sizeof *sizes);
      count--;
    }
  }
  pthread_mutex_unlock(&lock);
  for (int i = 0; i < n_evict; i++) free(evict[i]);
  return p ? (char *)p + HEADER : 0;
}

void *kac_malloc(void *ctx, size_t n) {
  (void)ctx;
  if (n >= min_bytes) {
    void *p = take(n);
    if (p) return p;
  }
  return fresh(n);
}

void *kac_calloc(void *ctx, size_t k, size_t n) {
  if (n && k > SIZE_MAX / n) return 0;
  void *p = kac_malloc(ctx, k * n);
  if (p) memset(p, 0, k * n);
  return p;
}

void kac_free(void *ctx, void *ptr, size_t ignored) {
  (void)ctx; (void)ignored;
  if (!ptr) return;
  size_t n = size_of(ptr);
  void *base = (char *)ptr - header_of(n);
  if (n >= min_bytes && n <= limit) {
    void *evict[SLOTS];
    int n_evict = 0;
    pthread_mutex_lock(&lock);
    while (count > 0 && (count == SLOTS || cached + n > limit)) {
      evict[n_evict++] = blocks[0];      /* the oldest goes back to the system */
      cached -= sizes[0];
      memmove(blocks, blocks + 1, (count - 1) * sizeof *blocks);
      memmove(sizes, sizes + 1, (count - 1) * sizeof *sizes);
      count--;
    }
    blocks[count] = base; sizes[count] = n; count++;
    cached += n;
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < n_evict; i++) free(evict[i]);
    return;
  }
  free(base);
}

void *kac_realloc(void *ctx, void *ptr, size_t n) {
  if (!ptr) return kac_malloc(ctx, n);
  size_t old = size_of(ptr);
  void *p = kac_malloc(ctx, n);
  if (!p) return 0;
  memcpy(p, ptr, old < n ? old : n);
  kac_free(ctx, ptr, old);
  return p;
}

void kac_release(void) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < count; i++) free(blocks[i]);
  count = 0; cached = 0;
  pthread_mutex_unlock(&lock);
}

void kac_stats(int64_t *out) {
  pthread_mutex_lock(&lock);
  out[0] = hits; out[1] = misses; out[2] = (int64_t)cached; out[3] = count;
  pthread_mutex_unlock(&lock);
}
"""


class _Allocator(ctypes.Structure):
    _fields_ = [("ctx", ctypes.c_void_p), ("malloc", ctypes.c_void_p),
                ("calloc", ctypes.c_void_p), ("realloc", ctypes.c_void_p),
                ("free", ctypes.c_void_p)]


class _Handler(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 127), ("version", ctypes.c_uint8),
                ("allocator", _Allocator)]


_SET_HANDLER = 304      # PyDataMem_SetHandler's index in NumPy's C-API table (NumPy >= 1.22)
_state = {}
_lock = threading.Lock()


def _library():
    from .build import load
    lib = load(SOURCE)
    lib.kac_configure.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
    lib.kac_stats.argtypes = [ctypes.POINTER(ctypes.c_int64)]
    return lib


def _numpy_core():
    return getattr(_np, "_core", None) or _np.core


def _set_handler(capsule):
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    table = get_pointer(_numpy_core()._multiarray_umath._ARRAY_API, None)
    set_handler = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object)(
        ctypes.c_void_p.from_address(table + _SET_HANDLER * ctypes.sizeof(ctypes.c_void_p)).value)
    return set_handler(capsule)


def install():
    """Make NumPy allocate array data through the cache in the calling thread's context
    (and the threads started from it later take the default again: NumPy keeps the
    handler in a context variable). Returns False where it cannot (no C compiler, or a
    NumPy without memory handlers)."""
    with _lock:
        try:
            return _install()
        except Exception:   # noqa: BLE001 - a cache is an optimization, never required
            return False


def _install():
    if "capsule" not in _state:
        from .build import available
        if not available() or not hasattr(_numpy_core().multiarray, "get_handler_name"):
            return False
        lib = _library()
        lib.kac_configure(MIN_BYTES, LIMIT_BYTES)
        handler = _Handler()
        handler.name = b"kiln_array_cache"
        handler.version = 1
        handler.allocator = _Allocator(None, *(ctypes.cast(getattr(lib, f"kac_{f}"),
                                                           ctypes.c_void_p).value
                                               for f in ("malloc", "calloc", "realloc",
                                                         "free")))
        new_capsule = ctypes.pythonapi.PyCapsule_New
        new_capsule.restype = ctypes.py_object
        new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        # the handler and the library live as long as the process: arrays keep a
        # reference to the capsule, and their blocks come back to kac_free
        _state.update(lib=lib, handler=handler, name=ctypes.c_char_p(b"mem_handler"))
        _state["capsule"] = new_capsule(ctypes.addressof(handler), _state["name"], None)
    _set_handler(_state["capsule"])
    return True


def stats():
    """{'hits', 'misses', 'cached_bytes', 'blocks'} of the cache (zeros before install)."""
    values = (ctypes.c_int64 * 4)()
    if "lib" in _state:
        _state["lib"].kac_stats(values)
    return dict(zip(("hits", "misses", "cached_bytes", "blocks"), values))


def release():
    """Give every cached block back to the system."""
    if "lib" in _state:
        _state["lib"].kac_release()
