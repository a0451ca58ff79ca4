/* The start of every generated program (codegen.generate puts it first): the C headers,
   the ABI version build.py checks, and the scalar functions that the elementwise
   expressions of loops.py and the gathers call. Ends with special_functions.h. */
#include <stdint.h>
#include <string.h>
#include <math.h>

int kiln_abi_version(void) { return 1; }


/* bfloat16 is stored as the top 16 bits of a float32 (uint16_t in C): widening is exact;
   narrowing rounds to nearest even, as ml_dtypes and PyTorch do, and keeps NaN a NaN */
static inline float kiln_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline uint16_t kiln_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}


/* e^x for x <= 0, written so that a loop of it vectorizes (sigmoid's exp): Cephes' expf,
   range reduction by ln 2, a degree-6 polynomial, the power of two put in by bit
   arithmetic in two halves, so results below 2^-126 come out subnormal and e^-inf is 0,
   as libm gives: a floor at e^-87 made sigmoid(-inf) 1e-38 where eager gives 0, and a
   gradient of inf * 0 then came out -inf instead of NaN (fuzz seed 5, #1254). Within 2
   ulp of expf */
static inline float kiln_exp_nonpos_f(float x) {
  x = x < -110.0f ? -110.0f : x;
  float k = rintf(x * 1.44269504088896341f);
  float r = (x - k * 0.693359375f) - k * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t half = (int32_t)k / 2;
  int32_t bits = (half + 127) << 23, rest = ((int32_t)k - half + 127) << 23;
  float scale, scale_rest;
  memcpy(&scale, &bits, sizeof scale);
  memcpy(&scale_rest, &rest, sizeof scale_rest);
  return p * scale * scale_rest;
}
/* tanh from arithmetic only (Cephes' tanhf: an odd polynomial below 0.625, else through
   e^-2|x|; within 1.5 ulp). Not libm's or libmvec's: a vectorized loop calls the vector
   version for whole blocks and the scalar one for the remainder, and the two differ in the
   last bit, so equal inputs came out unequal by position (a tie in a later max then sent
   its gradient to one element only). Plain arithmetic (no contraction under -std=c99) is
   the same in both. The double version stays libm's scalar call, vectorized nowhere */
static inline float kiln_tanhf(float x) {
  float a = fabsf(x), z = x * x;
  float small = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z
                  + 1.33314422036e-1f) * z - 3.33332819422e-1f) * z * x + x;
  float t = kiln_exp_nonpos_f(-2.0f * a);
  float big = (1.0f - t) / (1.0f + t);
  return copysignf(a < 0.625f ? fabsf(small) : big, x);
}
static inline double kiln_tanh(double x) { return tanh(x); }
/* the two-sided form never overflows exp; a select, not a branch, so a loop of it
   vectorizes */
static inline float kiln_sigmoidf(float x) {
  float e = kiln_exp_nonpos_f(-fabsf(x)), r = 1.0f / (1.0f + e);
  return x >= 0 ? r : e * r;
}
static inline double kiln_sigmoid(double x) {
  double e = exp(-fabs(x)), r = 1.0 / (1.0 + e);
  return x >= 0 ? r : e * r;
}
/* NumPy's maximum/minimum propagate NaN from either side */
static inline float kiln_max_float(float a, float b) { return (a != a || a > b) ? a : b; }
static inline float kiln_min_float(float a, float b) { return (a != a || a < b) ? a : b; }
static inline double kiln_max_double(double a, double b) { return (a != a || a > b) ? a : b; }
static inline double kiln_min_double(double a, double b) { return (a != a || a < b) ? a : b; }
/* NumPy's mod takes the sign of the divisor, a zero result too (-1.5 % 1.5 is +0.0, so
   its reciprocal is +inf); integer mod by zero gives 0 */
static inline float kiln_mod_float(float a, float b) {
  float r = fmodf(a, b);
  if (r == 0) return copysignf(0.0f, b);
  if ((r < 0) != (b < 0) && r == r) r += b;
  return r;
}
static inline double kiln_mod_double(double a, double b) {
  double r = fmod(a, b);
  if (r == 0) return copysign(0.0, b);
  if ((r < 0) != (b < 0) && r == r) r += b;
  return r;
}
static inline int32_t kiln_mod_int32(int32_t a, int32_t b) {
  if (b == 0 || b == -1) return 0;   /* INT_MIN % -1 traps on x86 */
  int32_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
static inline int64_t kiln_mod_int64(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
/* integer power; a negative exponent follows kiln's eager kernel (float power, truncated) */
static inline int64_t kiln_ipow_int64(int64_t a, int64_t b) {
  if (b < 0) return (int64_t)powf((float)a, (float)b);
  int64_t r = 1; while (b) { if (b & 1) r *= a; a *= a; b >>= 1; } return r; }
static inline int32_t kiln_ipow_int32(int32_t a, int32_t b) {
  if (b < 0) return (int32_t)powf((float)a, (float)b);
  int32_t r = 1; while (b) { if (b & 1) r *= a; a *= a; b >>= 1; } return r; }
static inline int64_t kiln_clip_index(int64_t j, int64_t n) {
  return j < 0 ? 0 : (j >= n ? n - 1 : j); }
static inline int64_t kiln_wrap_index(int64_t j, int64_t n) {
  int64_t r = j % n; return r < 0 ? r + n : r; }
#include "special_functions.h"
