/* Scaled dot-product attention (kiln/ops/attention.py) in blocks, the flash-attention way:
   for a block of query rows, the keys are taken a block at a time, and each row keeps its
   running maximum m, its running sum l and its output accumulator, rescaled by
   exp(m_old - m_new) when the maximum grows; a block of scores is all that exists of the
   score matrix. attention.py puts this file in a program that has an attention node and
   runs one task per matrix on the runtime's pool: its keys transposed once, then its query
   rows KILN_ATTN_BQ at a time.

   Special values follow the composite (s = scores, where the mask, exp(s - max), sum,
   divide, matmul): a NaN score makes its row NaN, as the composite's NaN maximum does;
   +inf scores give inf - inf = NaN; a row whose scores are all -inf gives NaN unless the
   masked probabilities are zeroed (zero_masked), then zeros with a floor, else NaN. The
   running maximum skips NaN (the row is NaN anyway), and a maximum that did not change
   rescales by exactly 1, so -inf - -inf never enters through the rescaling. */

#include <stdint.h>
#include <stdlib.h>
#include <math.h>

#define KILN_ATTN_BQ 32        /* query rows per task */
/* the register blocks: MR rows times 4 vectors of keys (scores) or of value columns
   (outputs): 16 accumulators of AVX-512's 32 registers, 8 of AVX2's 16 */
#if defined(__AVX512F__)
#define KILN_ATTN_VBYTES 64
#define KILN_ATTN_MR 4
#define KILN_ATTN_IF4(...) __VA_ARGS__
#else
#define KILN_ATTN_VBYTES 32
#define KILN_ATTN_MR 2
#define KILN_ATTN_IF4(...)
#endif

#if defined(__GNUC__) && !defined(__clang__)
#define KILN_ATTN_FUSED __attribute__((optimize("fp-contract=fast")))   /* ISO C turns it off */
#else
#define KILN_ATTN_FUSED
#endif

#define KILN_ATTENTION(T, EXP)                                                               \
typedef T kiln_attn_v_##T __attribute__((vector_size(KILN_ATTN_VBYTES)));                    \
typedef T kiln_attn_u_##T __attribute__((vector_size(KILN_ATTN_VBYTES), aligned(sizeof(T)),  \
                                         __may_alias__));                                    \
enum { kiln_attn_lanes_##T = KILN_ATTN_VBYTES / sizeof(T),                                   \
       kiln_attn_bk_##T = 4 * (KILN_ATTN_VBYTES / sizeof(T)) };                              \
typedef struct {                                                                             \
  const T *q, *k, *v; const uint8_t *mask; T *out;                                           \
  int64_t Tq, Tk, d, dv;                                                                     \
  T scale, fill, floor; int divide, zero_masked;                                             \
  int64_t mask_row, mask_col;  /* the mask's strides over (Tq, Tk): 0 where broadcast */     \
  int nlead; int64_t lead[8], mask_lead[8];  /* the leading dims, the mask's strides */      \
  int *failed;                /* set when a task cannot allocate its scratch */              \
} kiln_attention_##T;                                                                        \
                                                                                             \
/* S[r][0:BK] = q_r . Kt[:, 0:BK] for r < rows <= MR; q's rows d apart, Kt's ldk. The   \
   accumulators are named one by one (an array of them ends up on the stack) */             \
KILN_ATTN_FUSED static inline void kiln_attn_scores_##T(int64_t rows, int64_t d, const T *q,  \
    const T *Kt, int64_t ldk, T *S) {                                                        \
  typedef kiln_attn_v_##T V;                                                                 \
  typedef kiln_attn_u_##T U;                                                                 \
  enum { L = kiln_attn_lanes_##T, BK = kiln_attn_bk_##T };                                   \
  const T *q0 = q, *q1 = q + (rows > 1) * d;                                                 \
  KILN_ATTN_IF4(const T *q2 = q + (rows > 2 ? 2 : 0) * d; const T *q3 = q + (rows > 3 ? 3 : 0) * d;) \
  V s00 = {0}, s01 = {0}, s02 = {0}, s03 = {0}, s10 = {0}, s11 = {0}, s12 = {0}, s13 = {0};  \
  KILN_ATTN_IF4(V s20 = {0}, s21 = {0}, s22 = {0}, s23 = {0};                                \
                V s30 = {0}, s31 = {0}, s32 = {0}, s33 = {0};)                               \
  for (int64_t c = 0; c < d; c++) {                                                          \
    const T *kc = Kt + c * ldk;                                                              \
    const V k0 = *(const U *)kc, k1 = *(const U *)(kc + L);                                  \
    const V k2 = *(const U *)(kc + 2 * L), k3 = *(const U *)(kc + 3 * L);                    \
    V b = q0[c] - (V){0};                                                                    \
    s00 += b * k0; s01 += b * k1; s02 += b * k2; s03 += b * k3;                              \
    b = q1[c] - (V){0};                                                                      \
    s10 += b * k0; s11 += b * k1; s12 += b * k2; s13 += b * k3;                              \
    KILN_ATTN_IF4(b = q2[c] - (V){0};                                                        \
                  s20 += b * k0; s21 += b * k1; s22 += b * k2; s23 += b * k3;                \
                  b = q3[c] - (V){0};                                                        \
                  s30 += b * k0; s31 += b * k1; s32 += b * k2; s33 += b * k3;)               \
  }                                                                                          \
  U *o = (U *)S;                                                                             \
  o[0] = s00; o[1] = s01; o[2] = s02; o[3] = s03;                                            \
  if (rows > 1) { o[4] = s10; o[5] = s11; o[6] = s12; o[7] = s13; }                          \
  KILN_ATTN_IF4(if (rows > 2) { o[8] = s20; o[9] = s21; o[10] = s22; o[11] = s23; }          \
                if (rows > 3) { o[12] = s30; o[13] = s31; o[14] = s32; o[15] = s33; })       \
}                                                                                            \
                                                                                             \
/* O[r][c0:c0 + 4L] += P[r][0:nb] . V[0:nb][c0:c0 + 4L] for r < rows <= MR; P's rows BK     \
   apart, V's and O's dv */                                                                  \
KILN_ATTN_FUSED static inline void kiln_attn_values_##T(int64_t rows, int64_t nb,            \
    const T *P, const T *v, int64_t dv, T *O, int64_t c0) {                                  \
  typedef kiln_attn_v_##T V;                                                                 \
  typedef kiln_attn_u_##T U;                                                                 \
  enum { L = kiln_attn_lanes_##T, BK = kiln_attn_bk_##T };                                   \
  const T *p0 = P, *p1 = P + (rows > 1) * BK;                                                \
  KILN_ATTN_IF4(const T *p2 = P + (rows > 2 ? 2 : 0) * BK; const T *p3 = P + (rows > 3 ? 3 : 0) * BK;) \
  V o00 = {0}, o01 = {0}, o02 = {0}, o03 = {0}, o10 = {0}, o11 = {0}, o12 = {0}, o13 = {0};  \
  KILN_ATTN_IF4(V o20 = {0}, o21 = {0}, o22 = {0}, o23 = {0};                                \
                V o30 = {0}, o31 = {0}, o32 = {0}, o33 = {0};)                               \
  for (int64_t j = 0; j < nb; j++) {                                                         \
    const T *vj = v + j * dv + c0;                                                           \
    const V v0 = *(const U *)vj, v1 = *(const U *)(vj + L);                                  \
    const V v2 = *(const U *)(vj + 2 * L), v3 = *(const U *)(vj + 3 * L);                    \
    V b = p0[j] - (V){0};                                                                    \
    o00 += b * v0; o01 += b * v1; o02 += b * v2; o03 += b * v3;                              \
    b = p1[j] - (V){0};                                                                      \
    o10 += b * v0; o11 += b * v1; o12 += b * v2; o13 += b * v3;                              \
    KILN_ATTN_IF4(b = p2[j] - (V){0};                                                        \
                  o20 += b * v0; o21 += b * v1; o22 += b * v2; o23 += b * v3;                \
                  b = p3[j] - (V){0};                                                        \
                  o30 += b * v0; o31 += b * v1; o32 += b * v2; o33 += b * v3;)               \
  }                                                                                          \
  U *r0 = (U *)(O + c0);                                                                     \
  r0[0] += o00; r0[1] += o01; r0[2] += o02; r0[3] += o03;                                    \
  if (rows > 1) {                                                                            \
    U *r1 = (U *)(O + dv + c0); r1[0] += o10; r1[1] += o11; r1[2] += o12; r1[3] += o13;      \
  }                                                                                          \
  KILN_ATTN_IF4(if (rows > 2) {                                                              \
    U *r2 = (U *)(O + 2 * dv + c0); r2[0] += o20; r2[1] += o21; r2[2] += o22; r2[3] += o23;  \
  }                                                                                          \
  if (rows > 3) {                                                                            \
    U *r3 = (U *)(O + 3 * dv + c0); r3[0] += o30; r3[1] += o31; r3[2] += o32; r3[3] += o33;  \
  })                                                                                         \
}                                                                                            \
                                                                                             \
/* rows [i0, i0 + rows) of matrix bh, the keys transposed in Kt (d x Tk rounded up to   \
   whole blocks, zeros past the end), S and acc its scratch */                              \
KILN_ATTN_FUSED static void kiln_attention_rows_##T(const kiln_attention_##T *a, int64_t bh, \
    int64_t i0, int64_t rows, const T *Kt, int64_t ldk, T *S, T *acc) {                     \
  enum { BK = kiln_attn_bk_##T, CHUNK = kiln_attn_bk_##T };                                  \
  const int64_t d = a->d, dv = a->dv, Tk = a->Tk, whole = dv / CHUNK * CHUNK;                \
  const T *q = a->q + (bh * a->Tq + i0) * d, *v = a->v + bh * Tk * dv;                       \
  T *out = a->out + (bh * a->Tq + i0) * dv;                                                  \
  const uint8_t *mask = a->mask;                                                             \
  if (mask) {            /* this matrix's mask, through the broadcast leading dims */        \
    int64_t rest = bh, off = 0;                                                              \
    for (int l = a->nlead - 1; l >= 0; l--) {                                                \
      off += rest % a->lead[l] * a->mask_lead[l]; rest /= a->lead[l];                        \
    }                                                                                        \
    mask += off + i0 * a->mask_row;                                                          \
  }                                                                                          \
  T m[KILN_ATTN_BQ], l[KILN_ATTN_BQ];                                                        \
  int64_t kept[KILN_ATTN_BQ];  /* unmasked scores per row */                                 \
  for (int64_t r = 0; r < rows; r++) {                                                       \
    m[r] = -INFINITY; l[r] = 0; kept[r] = mask ? 0 : Tk;                                     \
    for (int64_t c = 0; c < dv; c++) acc[r * dv + c] = 0;                                    \
  }                                                                                          \
  for (int64_t j0 = 0; j0 < Tk; j0 += BK) {                                                  \
    const int64_t nb = Tk - j0 < BK ? Tk - j0 : BK;                                          \
    for (int64_t r0 = 0; r0 < rows; r0 += KILN_ATTN_MR)                                      \
      kiln_attn_scores_##T(rows - r0 < KILN_ATTN_MR ? rows - r0 : KILN_ATTN_MR, d,           \
                           q + r0 * d, Kt + j0, ldk, S + r0 * BK);                           \
    for (int64_t r = 0; r < rows; r++) {                                                     \
      T *s = S + r * BK;                                                                     \
      if (a->divide) for (int64_t j = 0; j < nb; j++) s[j] = s[j] / a->scale;                \
      else for (int64_t j = 0; j < nb; j++) s[j] = s[j] * a->scale;                          \
      const uint8_t *mr = mask ? mask + r * a->mask_row + j0 * a->mask_col : 0;              \
      if (mask)                                                                              \
        for (int64_t j = 0; j < nb; j++) {                                                   \
          kept[r] += mr[j * a->mask_col] != 0;                                               \
          s[j] = mr[j * a->mask_col] ? s[j] : a->fill;                                       \
        }                                                                                    \
      T top = m[r];                                                                          \
      _Pragma("omp simd reduction(max:top)")                                                 \
      for (int64_t j = 0; j < nb; j++) top = s[j] > top ? s[j] : top;                        \
      /* nothing above -inf yet: these probabilities are 0 against the row's final       \
         maximum (or the row is NaN, see the end) */                                        \
      const T shift = top == -INFINITY ? (T)INFINITY : top;                                  \
      const T alpha = top == m[r] ? (T)1 : EXP(m[r] - top);                                  \
      for (int64_t j = 0; j < nb; j++) s[j] = EXP(s[j] - shift);                             \
      if (mask && a->zero_masked)                                                            \
        for (int64_t j = 0; j < nb; j++) s[j] = mr[j * a->mask_col] ? s[j] : (T)0;           \
      for (int64_t j = nb; j < BK; j++) s[j] = 0;                                            \
      T total = 0;                                                                           \
      _Pragma("omp simd reduction(+:total)")                                                 \
      for (int64_t j = 0; j < nb; j++) total += s[j];                                        \
      l[r] = l[r] * alpha + total;                                                           \
      m[r] = top;                                                                            \
      if (alpha != 1) for (int64_t c = 0; c < dv; c++) acc[r * dv + c] *= alpha;            \
    }                                                                                        \
    for (int64_t r0 = 0; r0 < rows; r0 += KILN_ATTN_MR) {                                    \
      const int64_t mr = rows - r0 < KILN_ATTN_MR ? rows - r0 : KILN_ATTN_MR;                \
      for (int64_t c0 = 0; c0 < whole; c0 += CHUNK)                                          \
        kiln_attn_values_##T(mr, nb, S + r0 * BK, v + j0 * dv, dv, acc + r0 * dv, c0);       \
    }                                                                                        \
    for (int64_t r = 0; r < rows && whole < dv; r++)   /* columns past the whole chunks */  \
      for (int64_t j = 0; j < nb; j++) {                                                     \
        const T p = S[r * BK + j]; const T *vj = v + (j0 + j) * dv;                          \
        for (int64_t c = whole; c < dv; c++) acc[r * dv + c] += p * vj[c];                   \
      }                                                                                      \
  }                                                                                          \
  for (int64_t r = 0; r < rows; r++) {                                                       \
    T t = l[r];                                                                              \
    /* every score -inf: the composite's exp(-inf - -inf) is NaN, except where the masked  \
       ones are zeroed and nothing is left unmasked: then 0 / max(0, floor) */             \
    if (m[r] == -INFINITY && (!(mask && a->zero_masked) || kept[r] > 0)) t = NAN;          \
    if (a->floor > 0) t = t > a->floor || t != t ? t : a->floor;                             \
    if (Tk == 0) t = 1;       /* no keys: p v is an empty sum, zeros, as the composite */    \
    for (int64_t c = 0; c < dv; c++) out[r * dv + c] = acc[r * dv + c] / t;                  \
  }                                                                                          \
}                                                                                            \
                                                                                             \
/* matrix `task`: its keys transposed once, then its query rows a block at a time */        \
static void kiln_attention_task_##T(void *ctx, int64_t task) {                               \
  enum { BK = kiln_attn_bk_##T };                                                            \
  const kiln_attention_##T *a = ctx;                                                         \
  const int64_t d = a->d, Tk = a->Tk, ldk = (Tk + BK - 1) / BK * BK;                         \
  T *Kt = malloc(sizeof(T) * (d * ldk + KILN_ATTN_BQ * BK + KILN_ATTN_BQ * a->dv));           \
  if (!Kt) { a->failed[0] = 1; return; }                                                     \
  T *S = Kt + d * ldk, *acc = S + KILN_ATTN_BQ * BK;                                         \
  const T *k = a->k + task * Tk * d;                                                         \
  for (int64_t j = 0; j < Tk; j++)                                                           \
    for (int64_t c = 0; c < d; c++) Kt[c * ldk + j] = k[j * d + c];                          \
  for (int64_t c = 0; c < d; c++)                                                            \
    for (int64_t j = Tk; j < ldk; j++) Kt[c * ldk + j] = 0;                                  \
  for (int64_t i0 = 0; i0 < a->Tq; i0 += KILN_ATTN_BQ)                                       \
    kiln_attention_rows_##T(a, task, i0, a->Tq - i0 < KILN_ATTN_BQ ? a->Tq - i0 : KILN_ATTN_BQ, \
                            Kt, ldk, S, acc);                                                \
  free(Kt);                                                                                  \
}

KILN_ATTENTION(float, kiln_vm_expf)
KILN_ATTENTION(double, kiln_vm_exp)
