"""Dot products for kiln's own small matmuls (a batch-1 Dense layer is one per weight row).

A batch-1 layer streams its weights from cache once per call, so its speed is the speed
of that stream. GCC vectorizes the portable loop in kernels.py, but into separate
multiplies and adds with its pointers spilled; written with AVX-512 intrinsics (four rows,
two accumulators per row, fused multiply-adds) the 256 x 512 layer went from 7.3 to 5.7 us
single-threaded here, which is the rate this machine streams 512 KB from L2 at all.

The last partial vector of a row is read with a masked load: masked-off lanes are never
read, so no load goes past the end of a row. Without AVX-512 (the code is compiled with
-march=native) this text is empty and the portable loop runs.
"""

SOURCE = r"""
#if defined(__AVX512F__)
#include <immintrin.h>
#define KILN_HAVE_DOT4 1
static inline __mmask16 kiln_tail_mask(int64_t left) { return (__mmask16)((1u << left) - 1); }

/* s[r] = a . b[r * ldb + 0:K] for r < 4 */
static void kiln_dot4_float(int64_t K, const float *a, const float *b, int64_t ldb, float *s) {
  const float *b0 = b, *b1 = b + ldb, *b2 = b + 2 * ldb, *b3 = b + 3 * ldb;
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  __m512 t0 = s0, t1 = s0, t2 = s0, t3 = s0;
  int64_t k = 0;
  for (; k + 32 <= K; k += 32) {
    __m512 x0 = _mm512_loadu_ps(a + k), x1 = _mm512_loadu_ps(a + k + 16);
    s0 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(b0 + k), s0);
    t0 = _mm512_fmadd_ps(x1, _mm512_loadu_ps(b0 + k + 16), t0);
    s1 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(b1 + k), s1);
    t1 = _mm512_fmadd_ps(x1, _mm512_loadu_ps(b1 + k + 16), t1);
    s2 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(b2 + k), s2);
    t2 = _mm512_fmadd_ps(x1, _mm512_loadu_ps(b2 + k + 16), t2);
    s3 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(b3 + k), s3);
    t3 = _mm512_fmadd_ps(x1, _mm512_loadu_ps(b3 + k + 16), t3);
  }
  for (; k < K; k += 16) {
    __mmask16 m = K - k >= 16 ? (__mmask16)0xffff : kiln_tail_mask(K - k);
    __m512 x0 = _mm512_maskz_loadu_ps(m, a + k);
    s0 = _mm512_fmadd_ps(x0, _mm512_maskz_loadu_ps(m, b0 + k), s0);
    s1 = _mm512_fmadd_ps(x0, _mm512_maskz_loadu_ps(m, b1 + k), s1);
    s2 = _mm512_fmadd_ps(x0, _mm512_maskz_loadu_ps(m, b2 + k), s2);
    s3 = _mm512_fmadd_ps(x0, _mm512_maskz_loadu_ps(m, b3 + k), s3);
  }
  s[0] = _mm512_reduce_add_ps(_mm512_add_ps(s0, t0));
  s[1] = _mm512_reduce_add_ps(_mm512_add_ps(s1, t1));
  s[2] = _mm512_reduce_add_ps(_mm512_add_ps(s2, t2));
  s[3] = _mm512_reduce_add_ps(_mm512_add_ps(s3, t3));
}

static float kiln_dot1_float(int64_t K, const float *a, const float *b) {
  __m512 s = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; k += 16) {
    __mmask16 m = K - k >= 16 ? (__mmask16)0xffff : kiln_tail_mask(K - k);
    s = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + k), _mm512_maskz_loadu_ps(m, b + k), s);
  }
  return _mm512_reduce_add_ps(s);
}
#endif
"""
