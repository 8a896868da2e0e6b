/*
 * cpu_vmath.c - the transcendental UNARY rows (exp, log, expm1, log1p, sin,
 * cos, tanh, erf for f32 and f64), vectorised through glibc's libmvec.
 *
 * libm's scalar functions cost 10 to 40 ns an element, which makes them, not
 * memory, the bottleneck of eager elementwise work. glibc ships SIMD versions
 * of the same functions (libmvec: SSE, AVX2 and AVX-512 variants, vector
 * function ABI names such as _ZGVdN4v_exp). Declaring the functions
 * "declare simd" lets the compiler call those variants from the contiguous
 * loops below, and target_clones builds each row for AVX-512, AVX2 and the
 * baseline, chosen once by the dynamic loader for the running processor.
 *
 * Accuracy: libmvec's functions are within 4 ulp of the correctly rounded
 * result (glibc's manual), where libm's are within 1 or 2; special values
 * (NaN, infinities, overflow to infinity, underflow to zero) are the same
 * as libm's, which the variants hand to the scalar code. Builds where CMake
 * found no libmvec (TF_CPU_HAVE_LIBMVEC unset) use the scalar functions.
 *
 * This file alone is compiled with -fno-math-errno (no errno writes, which
 * a vector call cannot make) and -fopenmp-simd (the pragmas, no OpenMP
 * runtime).
 */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "cpu_internal.h"

#if defined(TF_CPU_HAVE_LIBMVEC)
#pragma omp declare simd notinbranch
extern double exp(double);
#pragma omp declare simd notinbranch
extern double log(double);
#pragma omp declare simd notinbranch
extern double expm1(double);
#pragma omp declare simd notinbranch
extern double log1p(double);
#pragma omp declare simd notinbranch
extern double sin(double);
#pragma omp declare simd notinbranch
extern double cos(double);
#pragma omp declare simd notinbranch
extern double tanh(double);
#pragma omp declare simd notinbranch
extern double erf(double);
#pragma omp declare simd notinbranch
extern float expf(float);
#pragma omp declare simd notinbranch
extern float logf(float);
#pragma omp declare simd notinbranch
extern float expm1f(float);
#pragma omp declare simd notinbranch
extern float log1pf(float);
#pragma omp declare simd notinbranch
extern float sinf(float);
#pragma omp declare simd notinbranch
extern float cosf(float);
#pragma omp declare simd notinbranch
extern float tanhf(float);
#pragma omp declare simd notinbranch
extern float erff(float);
#define VMATH_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#define VMATH_SIMD _Pragma("omp simd")
#else
#define VMATH_CLONES
#define VMATH_SIMD
#endif

/*
 * Each element goes through the same vector function whatever its place in the row
 * and the row's strides: libmvec's variants (and libm) round differently (an
 * element computed in a loop's scalar remainder would differ from the same value
 * in its vector body), and results must not depend on how an iteration cut its
 * rows: TF_PRIM_FUSED promises the values of the separate UNARY calls bit for bit,
 * and a thread count should not change a result. So a row runs in blocks of
 * CPU_VMATH_BLOCK elements, a loop of constant trip count that compiles to whole
 * vector calls only; a strided block or the short tail goes through a padded
 * copy on the stack.
 */
#define VMATH_ROW(NAME, T, FN)                                                                     \
    VMATH_CLONES int NAME(const void *ctx, int64_t n, char *const *p, const int64_t *s,            \
                          cpu_err *err)                                                            \
    {                                                                                              \
        T *o = (T *)(void *)p[0];                                                                  \
        const T *x = (const T *)(const void *)p[1];                                                \
        (void)ctx;                                                                                 \
        (void)err;                                                                                 \
        int64_t i = 0;                                                                             \
        if (s[0] == 1 && s[1] == 1) { /* dense: whole blocks in a loop of their own */             \
            for (const int64_t whole = n - n % CPU_VMATH_BLOCK; i < whole;                         \
                 i += CPU_VMATH_BLOCK) {                                                           \
                T *restrict ob = o + i;                                                            \
                const T *restrict xb = x + i;                                                      \
                VMATH_SIMD                                                                         \
                for (int j = 0; j < CPU_VMATH_BLOCK; j++) {                                        \
                    ob[j] = FN(xb[j]);                                                             \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        for (; i < n; i += CPU_VMATH_BLOCK) { /* strided blocks, and the tail */                   \
            const int64_t m = n - i < CPU_VMATH_BLOCK ? n - i : CPU_VMATH_BLOCK;                   \
            T in[CPU_VMATH_BLOCK] = {0}, res[CPU_VMATH_BLOCK];                                     \
            for (int64_t j = 0; j < m; j++) {                                                      \
                in[j] = x[(i + j) * s[1]];                                                         \
            }                                                                                      \
            VMATH_SIMD                                                                             \
            for (int j = 0; j < CPU_VMATH_BLOCK; j++) {                                            \
                res[j] = FN(in[j]);                                                                \
            }                                                                                      \
            for (int64_t j = 0; j < m; j++) {                                                      \
                o[(i + j) * s[0]] = res[j];                                                        \
            }                                                                                      \
        }                                                                                          \
        return 0;                                                                                  \
    }

VMATH_ROW(tf__cpu_exp_f32, float, expf)
VMATH_ROW(tf__cpu_log_f32, float, logf)
VMATH_ROW(tf__cpu_expm1_f32, float, expm1f)
VMATH_ROW(tf__cpu_log1p_f32, float, log1pf)
VMATH_ROW(tf__cpu_sin_f32, float, sinf)
VMATH_ROW(tf__cpu_cos_f32, float, cosf)
VMATH_ROW(tf__cpu_tanh_f32, float, tanhf)
VMATH_ROW(tf__cpu_erf_f32, float, erff)

VMATH_ROW(tf__cpu_exp_f64, double, exp)
VMATH_ROW(tf__cpu_log_f64, double, log)
VMATH_ROW(tf__cpu_expm1_f64, double, expm1)
VMATH_ROW(tf__cpu_log1p_f64, double, log1p)
VMATH_ROW(tf__cpu_sin_f64, double, sin)
VMATH_ROW(tf__cpu_cos_f64, double, cos)
VMATH_ROW(tf__cpu_tanh_f64, double, tanh)
VMATH_ROW(tf__cpu_erf_f64, double, erf)

#if defined(TF_CPU_HAVE_LIBMVEC)
/*
 * Whether the rows really call libmvec: a build without optimisation or with the
 * sanitizers' instrumentation does not vectorise their loops, and they then call
 * libm's scalar functions, as the compiled programs would not. The exp rows (every row
 * is the same loop) against scalar exp and expf, called through a pointer so that no
 * loop vectorises them, on 256 values of each dtype: libmvec's results are within
 * 4 ulp, libm's within 1, and they differ on some of these (tens of them, where
 * measured). If none differs the rows are taken as scalar: then nothing is inlined,
 * which costs speed, never bits.
 */
static int rows_call_libmvec(void)
{
    enum { N = 256 };
    double x[N], y[N];
    float xf[N], yf[N];
    for (int i = 0; i < N; i++) {
        x[i] = -20.0 + 40.0 * (i + 0.37) / N;
        xf[i] = (float)x[i];
    }
    const int64_t s[2] = {1, 1};
    char *p[2] = {(char *)y, (char *)x}, *pf[2] = {(char *)yf, (char *)xf};
    cpu_err err;
    if (tf__cpu_exp_f64(NULL, N, p, s, &err) != 0 || tf__cpu_exp_f32(NULL, N, pf, s, &err) != 0) {
        return 0;
    }
    double (*volatile scalar)(double) = exp;
    float (*volatile scalarf)(float) = expf;
    int differs = 0;
    for (int i = 0; i < N; i++) {
        const double r = scalar(x[i]);
        const float rf = scalarf(xf[i]);
        differs |= memcmp(&r, &y[i], sizeof r) != 0 || memcmp(&rf, &yf[i], sizeof rf) != 0;
    }
    return differs;
}
#endif

int tf__cpu_vmath_isa(void)
{
#if defined(TF_CPU_HAVE_LIBMVEC)
    static _Atomic int known = -1; /* the answer, once computed (any thread: the same) */
    int isa = atomic_load_explicit(&known, memory_order_relaxed);
    if (isa >= 0) {
        return isa;
    }
    /* the order in which the resolvers of VMATH_CLONES pick a clone */
    __builtin_cpu_init();
    isa = !rows_call_libmvec()                   ? 0
          : __builtin_cpu_supports("avx512f") ? 'e'
          : __builtin_cpu_supports("avx2")    ? 'd'
                                              : 'b';
    atomic_store_explicit(&known, isa, memory_order_relaxed);
    return isa;
#else
    return 0;
#endif
}

#if defined(TF_CPU_HAVE_LIBMVEC) && defined(__GNUC__) && !defined(__clang__)
const int tf__cpu_vmath_gcc = __GNUC__;
#else
const int tf__cpu_vmath_gcc = 0;
#endif
