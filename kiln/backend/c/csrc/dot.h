/* Dot products on 16-float vectors for kiln's own small matmuls, on AVX-512 machines only
   (dot.py explains why). kernels.gemm_prelude puts it in every generated program, before
   the matmul loops, which call it where KILN_HAVE_DOT4 is defined. */
#include <stdint.h>
#if defined(__AVX512F__)
#define KILN_HAVE_DOT4 1
typedef float kiln_v16 __attribute__((vector_size(64)));
typedef float kiln_v16u __attribute__((vector_size(64), aligned(4), __may_alias__));
#if defined(__GNUC__) && !defined(__clang__)
#define KILN_FUSED __attribute__((optimize("fp-contract=fast")))   /* ISO C mode turns it off */
#else
#define KILN_FUSED
#endif

static inline kiln_v16 kiln_load16(const float *p) { return *(const kiln_v16u *)p; }

static inline float kiln_sum16(kiln_v16 v) {
  float s = 0;
  for (int i = 0; i < 16; i++) s += v[i];
  return s;
}

/* s[r] = a . b[r * ldb + 0:K] for r < 4 */
KILN_FUSED static void kiln_dot4_float(int64_t K, const float *a, const float *b, int64_t ldb,
                                       float *s) {
  const float *b0 = b, *b1 = b + ldb, *b2 = b + 2 * ldb, *b3 = b + 3 * ldb;
  kiln_v16 s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0}, t0 = {0}, t1 = {0}, t2 = {0}, t3 = {0};
  int64_t k = 0;
  for (; k + 32 <= K; k += 32) {
    kiln_v16 x0 = kiln_load16(a + k), x1 = kiln_load16(a + k + 16);
    s0 += x0 * kiln_load16(b0 + k); t0 += x1 * kiln_load16(b0 + k + 16);
    s1 += x0 * kiln_load16(b1 + k); t1 += x1 * kiln_load16(b1 + k + 16);
    s2 += x0 * kiln_load16(b2 + k); t2 += x1 * kiln_load16(b2 + k + 16);
    s3 += x0 * kiln_load16(b3 + k); t3 += x1 * kiln_load16(b3 + k + 16);
  }
  for (; k + 16 <= K; k += 16) {
    kiln_v16 x0 = kiln_load16(a + k);
    s0 += x0 * kiln_load16(b0 + k); s1 += x0 * kiln_load16(b1 + k);
    s2 += x0 * kiln_load16(b2 + k); s3 += x0 * kiln_load16(b3 + k);
  }
  float r0 = kiln_sum16(s0 + t0), r1 = kiln_sum16(s1 + t1);
  float r2 = kiln_sum16(s2 + t2), r3 = kiln_sum16(s3 + t3);
  for (; k < K; k++) {
    r0 += a[k] * b0[k]; r1 += a[k] * b1[k]; r2 += a[k] * b2[k]; r3 += a[k] * b3[k];
  }
  s[0] = r0; s[1] = r1; s[2] = r2; s[3] = r3;
}

KILN_FUSED static float kiln_dot1_float(int64_t K, const float *a, const float *b) {
  kiln_v16 s = {0};
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) s += kiln_load16(a + k) * kiln_load16(b + k);
  float r = kiln_sum16(s);
  for (; k < K; k++) r += a[k] * b[k];
  return r;
}
#endif
