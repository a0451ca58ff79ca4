/* The transcendental functions of the elementwise loops, vectorized: glibc's libmvec when
   vector_math.py found it (KILN_LIBMVEC defined, -lmvec linked), plain libm otherwise.
   Included by program_prelude.h.

   kiln_vm_expf and its kin are declared `omp declare simd`, so GCC vectorizes a loop that
   calls them, calling a vector variant for whole vectors and, for the rest of a row, a
   narrower variant or the scalar function. Each variant here calls the SAME libmvec kernel
   (the widest the machine has: AVX-512's, else AVX2's), the narrower ones on a
   zero-padded vector and the scalar one on a broadcast, so an element's result never
   depends on its position in the loop. libmvec's own variants differ in the last bit on
   many inputs (erff's AVX2 and AVX-512 kernels on half of all floats), and equal inputs
   coming out unequal by position once broke a tie in a later max (fuzz seed 5, #1254).

   Accuracy (libmvec documents at most 4 ulp; measured over all 2^32 floats on AVX-512):
   expf 2.6, erff 4.0, tanhf 1.4 ulp; float exp and log go through the double kernels
   (below), within 1 ulp. tests/backend/test_vector_math.py checks 4 ulp against NumPy
   over the float range, subnormals, infinities and NaN included. */

#if defined(KILN_LIBMVEC) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#define KILN_VM_HIDDEN __attribute__((visibility("hidden")))
#define KILN_VM_DECLARE(T, name) \
  _Pragma("omp declare simd notinbranch") \
  KILN_VM_HIDDEN __attribute__((const)) T kiln_vm_##name(T);
#define KILN_VM_DECLARE2(T, name) \
  _Pragma("omp declare simd notinbranch") \
  KILN_VM_HIDDEN __attribute__((const)) T kiln_vm_##name(T, T);

#ifdef __AVX512F__
/* one kernel per machine: AVX-512's, 16 floats or 8 doubles */
#define KILN_VM_F(name) \
  __attribute__((const)) __m512 _ZGVeN16v_##name(__m512); \
  KILN_VM_DECLARE(float, name) \
  KILN_VM_HIDDEN float kiln_vm_s_##name(float x) __asm__("kiln_vm_" #name); \
  float kiln_vm_s_##name(float x) { return _mm512_cvtss_f32(_ZGVeN16v_##name(_mm512_set1_ps(x))); } \
  KILN_VM_HIDDEN __m128 kiln_vm_b_##name(__m128 x) __asm__("_ZGVbN4v_kiln_vm_" #name); \
  __m128 kiln_vm_b_##name(__m128 x) { \
    return _mm512_castps512_ps128(_ZGVeN16v_##name(_mm512_zextps128_ps512(x))); } \
  KILN_VM_HIDDEN __m256 kiln_vm_c_##name(__m256 x) __asm__("_ZGVcN8v_kiln_vm_" #name); \
  __m256 kiln_vm_c_##name(__m256 x) { \
    return _mm512_castps512_ps256(_ZGVeN16v_##name(_mm512_zextps256_ps512(x))); } \
  KILN_VM_HIDDEN __m256 kiln_vm_d_##name(__m256 x) __asm__("_ZGVdN8v_kiln_vm_" #name); \
  __m256 kiln_vm_d_##name(__m256 x) { \
    return _mm512_castps512_ps256(_ZGVeN16v_##name(_mm512_zextps256_ps512(x))); } \
  KILN_VM_HIDDEN __m512 kiln_vm_e_##name(__m512 x) __asm__("_ZGVeN16v_kiln_vm_" #name); \
  __m512 kiln_vm_e_##name(__m512 x) { return _ZGVeN16v_##name(x); }

#define KILN_VM_F2(name) \
  __attribute__((const)) __m512 _ZGVeN16vv_##name(__m512, __m512); \
  KILN_VM_DECLARE2(float, name) \
  KILN_VM_HIDDEN float kiln_vm_s_##name(float x, float y) __asm__("kiln_vm_" #name); \
  float kiln_vm_s_##name(float x, float y) { \
    return _mm512_cvtss_f32(_ZGVeN16vv_##name(_mm512_set1_ps(x), _mm512_set1_ps(y))); } \
  KILN_VM_HIDDEN __m128 kiln_vm_b_##name(__m128 x, __m128 y) __asm__("_ZGVbN4vv_kiln_vm_" #name); \
  __m128 kiln_vm_b_##name(__m128 x, __m128 y) { return _mm512_castps512_ps128( \
    _ZGVeN16vv_##name(_mm512_zextps128_ps512(x), _mm512_zextps128_ps512(y))); } \
  KILN_VM_HIDDEN __m256 kiln_vm_c_##name(__m256 x, __m256 y) __asm__("_ZGVcN8vv_kiln_vm_" #name); \
  __m256 kiln_vm_c_##name(__m256 x, __m256 y) { return _mm512_castps512_ps256( \
    _ZGVeN16vv_##name(_mm512_zextps256_ps512(x), _mm512_zextps256_ps512(y))); } \
  KILN_VM_HIDDEN __m256 kiln_vm_d_##name(__m256 x, __m256 y) __asm__("_ZGVdN8vv_kiln_vm_" #name); \
  __m256 kiln_vm_d_##name(__m256 x, __m256 y) { return _mm512_castps512_ps256( \
    _ZGVeN16vv_##name(_mm512_zextps256_ps512(x), _mm512_zextps256_ps512(y))); } \
  KILN_VM_HIDDEN __m512 kiln_vm_e_##name(__m512 x, __m512 y) __asm__("_ZGVeN16vv_kiln_vm_" #name); \
  __m512 kiln_vm_e_##name(__m512 x, __m512 y) { return _ZGVeN16vv_##name(x, y); }

#define KILN_VM_D(name) \
  __attribute__((const)) __m512d _ZGVeN8v_##name(__m512d); \
  KILN_VM_DECLARE(double, name) \
  KILN_VM_HIDDEN double kiln_vm_s_##name(double x) __asm__("kiln_vm_" #name); \
  double kiln_vm_s_##name(double x) { return _mm512_cvtsd_f64(_ZGVeN8v_##name(_mm512_set1_pd(x))); } \
  KILN_VM_HIDDEN __m128d kiln_vm_b_##name(__m128d x) __asm__("_ZGVbN2v_kiln_vm_" #name); \
  __m128d kiln_vm_b_##name(__m128d x) { \
    return _mm512_castpd512_pd128(_ZGVeN8v_##name(_mm512_zextpd128_pd512(x))); } \
  KILN_VM_HIDDEN __m256d kiln_vm_c_##name(__m256d x) __asm__("_ZGVcN4v_kiln_vm_" #name); \
  __m256d kiln_vm_c_##name(__m256d x) { \
    return _mm512_castpd512_pd256(_ZGVeN8v_##name(_mm512_zextpd256_pd512(x))); } \
  KILN_VM_HIDDEN __m256d kiln_vm_d_##name(__m256d x) __asm__("_ZGVdN4v_kiln_vm_" #name); \
  __m256d kiln_vm_d_##name(__m256d x) { \
    return _mm512_castpd512_pd256(_ZGVeN8v_##name(_mm512_zextpd256_pd512(x))); } \
  KILN_VM_HIDDEN __m512d kiln_vm_e_##name(__m512d x) __asm__("_ZGVeN8v_kiln_vm_" #name); \
  __m512d kiln_vm_e_##name(__m512d x) { return _ZGVeN8v_##name(x); }

#define KILN_VM_D2(name) \
  __attribute__((const)) __m512d _ZGVeN8vv_##name(__m512d, __m512d); \
  KILN_VM_DECLARE2(double, name) \
  KILN_VM_HIDDEN double kiln_vm_s_##name(double x, double y) __asm__("kiln_vm_" #name); \
  double kiln_vm_s_##name(double x, double y) { \
    return _mm512_cvtsd_f64(_ZGVeN8vv_##name(_mm512_set1_pd(x), _mm512_set1_pd(y))); } \
  KILN_VM_HIDDEN __m128d kiln_vm_b_##name(__m128d x, __m128d y) __asm__("_ZGVbN2vv_kiln_vm_" #name); \
  __m128d kiln_vm_b_##name(__m128d x, __m128d y) { return _mm512_castpd512_pd128( \
    _ZGVeN8vv_##name(_mm512_zextpd128_pd512(x), _mm512_zextpd128_pd512(y))); } \
  KILN_VM_HIDDEN __m256d kiln_vm_c_##name(__m256d x, __m256d y) __asm__("_ZGVcN4vv_kiln_vm_" #name); \
  __m256d kiln_vm_c_##name(__m256d x, __m256d y) { return _mm512_castpd512_pd256( \
    _ZGVeN8vv_##name(_mm512_zextpd256_pd512(x), _mm512_zextpd256_pd512(y))); } \
  KILN_VM_HIDDEN __m256d kiln_vm_d_##name(__m256d x, __m256d y) __asm__("_ZGVdN4vv_kiln_vm_" #name); \
  __m256d kiln_vm_d_##name(__m256d x, __m256d y) { return _mm512_castpd512_pd256( \
    _ZGVeN8vv_##name(_mm512_zextpd256_pd512(x), _mm512_zextpd256_pd512(y))); } \
  KILN_VM_HIDDEN __m512d kiln_vm_e_##name(__m512d x, __m512d y) __asm__("_ZGVeN8vv_kiln_vm_" #name); \
  __m512d kiln_vm_e_##name(__m512d x, __m512d y) { return _ZGVeN8vv_##name(x, y); }

#else
/* AVX2: its kernel, 8 floats or 4 doubles; GCC here never calls an AVX-512 variant */
#define KILN_VM_F(name) \
  __attribute__((const)) __m256 _ZGVdN8v_##name(__m256); \
  KILN_VM_DECLARE(float, name) \
  KILN_VM_HIDDEN float kiln_vm_s_##name(float x) __asm__("kiln_vm_" #name); \
  float kiln_vm_s_##name(float x) { return _mm256_cvtss_f32(_ZGVdN8v_##name(_mm256_set1_ps(x))); } \
  KILN_VM_HIDDEN __m128 kiln_vm_b_##name(__m128 x) __asm__("_ZGVbN4v_kiln_vm_" #name); \
  __m128 kiln_vm_b_##name(__m128 x) { \
    return _mm256_castps256_ps128(_ZGVdN8v_##name(_mm256_zextps128_ps256(x))); } \
  KILN_VM_HIDDEN __m256 kiln_vm_c_##name(__m256 x) __asm__("_ZGVcN8v_kiln_vm_" #name); \
  __m256 kiln_vm_c_##name(__m256 x) { return _ZGVdN8v_##name(x); } \
  KILN_VM_HIDDEN __m256 kiln_vm_d_##name(__m256 x) __asm__("_ZGVdN8v_kiln_vm_" #name); \
  __m256 kiln_vm_d_##name(__m256 x) { return _ZGVdN8v_##name(x); }

#define KILN_VM_F2(name) \
  __attribute__((const)) __m256 _ZGVdN8vv_##name(__m256, __m256); \
  KILN_VM_DECLARE2(float, name) \
  KILN_VM_HIDDEN float kiln_vm_s_##name(float x, float y) __asm__("kiln_vm_" #name); \
  float kiln_vm_s_##name(float x, float y) { \
    return _mm256_cvtss_f32(_ZGVdN8vv_##name(_mm256_set1_ps(x), _mm256_set1_ps(y))); } \
  KILN_VM_HIDDEN __m128 kiln_vm_b_##name(__m128 x, __m128 y) __asm__("_ZGVbN4vv_kiln_vm_" #name); \
  __m128 kiln_vm_b_##name(__m128 x, __m128 y) { return _mm256_castps256_ps128( \
    _ZGVdN8vv_##name(_mm256_zextps128_ps256(x), _mm256_zextps128_ps256(y))); } \
  KILN_VM_HIDDEN __m256 kiln_vm_c_##name(__m256 x, __m256 y) __asm__("_ZGVcN8vv_kiln_vm_" #name); \
  __m256 kiln_vm_c_##name(__m256 x, __m256 y) { return _ZGVdN8vv_##name(x, y); } \
  KILN_VM_HIDDEN __m256 kiln_vm_d_##name(__m256 x, __m256 y) __asm__("_ZGVdN8vv_kiln_vm_" #name); \
  __m256 kiln_vm_d_##name(__m256 x, __m256 y) { return _ZGVdN8vv_##name(x, y); }

#define KILN_VM_D(name) \
  __attribute__((const)) __m256d _ZGVdN4v_##name(__m256d); \
  KILN_VM_DECLARE(double, name) \
  KILN_VM_HIDDEN double kiln_vm_s_##name(double x) __asm__("kiln_vm_" #name); \
  double kiln_vm_s_##name(double x) { return _mm256_cvtsd_f64(_ZGVdN4v_##name(_mm256_set1_pd(x))); } \
  KILN_VM_HIDDEN __m128d kiln_vm_b_##name(__m128d x) __asm__("_ZGVbN2v_kiln_vm_" #name); \
  __m128d kiln_vm_b_##name(__m128d x) { \
    return _mm256_castpd256_pd128(_ZGVdN4v_##name(_mm256_zextpd128_pd256(x))); } \
  KILN_VM_HIDDEN __m256d kiln_vm_c_##name(__m256d x) __asm__("_ZGVcN4v_kiln_vm_" #name); \
  __m256d kiln_vm_c_##name(__m256d x) { return _ZGVdN4v_##name(x); } \
  KILN_VM_HIDDEN __m256d kiln_vm_d_##name(__m256d x) __asm__("_ZGVdN4v_kiln_vm_" #name); \
  __m256d kiln_vm_d_##name(__m256d x) { return _ZGVdN4v_##name(x); }
#define KILN_VM_D2(name) \
  __attribute__((const)) __m256d _ZGVdN4vv_##name(__m256d, __m256d); \
  KILN_VM_DECLARE2(double, name) \
  KILN_VM_HIDDEN double kiln_vm_s_##name(double x, double y) __asm__("kiln_vm_" #name); \
  double kiln_vm_s_##name(double x, double y) { \
    return _mm256_cvtsd_f64(_ZGVdN4vv_##name(_mm256_set1_pd(x), _mm256_set1_pd(y))); } \
  KILN_VM_HIDDEN __m128d kiln_vm_b_##name(__m128d x, __m128d y) __asm__("_ZGVbN2vv_kiln_vm_" #name); \
  __m128d kiln_vm_b_##name(__m128d x, __m128d y) { return _mm256_castpd256_pd128( \
    _ZGVdN4vv_##name(_mm256_zextpd128_pd256(x), _mm256_zextpd128_pd256(y))); } \
  KILN_VM_HIDDEN __m256d kiln_vm_c_##name(__m256d x, __m256d y) __asm__("_ZGVcN4vv_kiln_vm_" #name); \
  __m256d kiln_vm_c_##name(__m256d x, __m256d y) { return _ZGVdN4vv_##name(x, y); } \
  KILN_VM_HIDDEN __m256d kiln_vm_d_##name(__m256d x, __m256d y) __asm__("_ZGVdN4vv_kiln_vm_" #name); \
  __m256d kiln_vm_d_##name(__m256d x, __m256d y) { return _ZGVdN4vv_##name(x, y); }
#endif

KILN_VM_F(expf) KILN_VM_F(erff) KILN_VM_F(tanhf)
KILN_VM_F(sinf) KILN_VM_F(cosf) KILN_VM_F2(powf)
KILN_VM_D(exp) KILN_VM_D(log) KILN_VM_D(erf) KILN_VM_D(tanh) KILN_VM_D(sin) KILN_VM_D(cos)
KILN_VM_D2(pow)

#else
/* no vector library: libm, one element at a time */
#define kiln_vm_expf expf
#define kiln_vm_erff erff
#define kiln_vm_tanhf tanhf
#define kiln_vm_sinf sinf
#define kiln_vm_cosf cosf
#define kiln_vm_powf powf
#define kiln_vm_exp exp
#define kiln_vm_log log
#define kiln_vm_erf erf
#define kiln_vm_tanh tanh
#define kiln_vm_sin sin
#define kiln_vm_cos cos
#define kiln_vm_pow pow
#endif

/* exp and log of a float on the double kernels, rounded once: within 1 ulp. libmvec's
   float kernels are 2.6 and 3.9 ulp off, and a softmax cross-entropy training loop
   compiled with them drifted from eager twice as fast as with libm (the float expf stays
   for sigmoid, where the error does not feed a logarithm) */
static inline float kiln_vm_exp_f(float x) { return (float)kiln_vm_exp((double)x); }
static inline float kiln_vm_log_f(float x) { return (float)kiln_vm_log((double)x); }
