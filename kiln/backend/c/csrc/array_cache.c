/* A data allocator for NumPy that keeps freed blocks of min_bytes and more for the next
   request of the same size; array_cache.py explains why, compiles this file on its own and
   installs it (kac_configure, then kac_malloc/kac_calloc/kac_realloc/kac_free). */
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
