/*
 * cpu_complex.c - the elementwise kernels of the complex dtypes (c64, c128):
 * UNARY, BINARY and COMPARE (eq, ne) rows (SELECT's are cpu_elementwise.c's), and the lookups the
 * kernel tables of cpu_elementwise.c take them from.
 *
 * Elements are C99 `float complex` / `double complex`; the libm functions
 * (cexp, clog, csqrt, csin, ccos, ctanh, carg, cabs) give the branch cuts and
 * special values engine_abi.h states (C11 Annex G). Products and quotients
 * are C's, which keep infinities infinite (Annex G's recovery of NaN + NaN i
 * results). POW, SIGN and RSQRT are defined here on top of them.
 *
 * Every row is one strided loop: a complex operation is several real ones,
 * and the compiler does not vectorise C's complex multiply, so a dense branch
 * would buy nothing.
 */
#include <complex.h>
#include <math.h>

#include "cpu_internal.h"

typedef float _Complex cf32;
typedef double _Complex cf64;

/* out (OT) = EXPR(a) with a of type T: UNARY, and the complex-to-real parts. */
#define Z_UNARY(NAME, OT, T, EXPR)                                                               \
    static int NAME(const void *ctx, int64_t n, char *const *p, const int64_t *s, cpu_err *err)  \
    {                                                                                            \
        OT *o = (OT *)(void *)p[0];                                                              \
        const T *x = (const T *)(const void *)p[1];                                              \
        (void)ctx;                                                                               \
        (void)err;                                                                               \
        for (int64_t i = 0; i < n; i++) {                                                        \
            const T a = x[i * s[1]];                                                             \
            o[i * s[0]] = (EXPR);                                                                \
        }                                                                                        \
        return 0;                                                                                \
    }

/* out (OT) = EXPR(a, b) with a, b of type T. In place, out is exactly in[0]: each element
   is read before it is written, so no restrict here. */
#define Z_BINARY(NAME, OT, T, EXPR)                                                              \
    static int NAME(const void *ctx, int64_t n, char *const *p, const int64_t *s, cpu_err *err)  \
    {                                                                                            \
        OT *o = (OT *)(void *)p[0];                                                              \
        const T *xa = (const T *)(const void *)p[1];                                             \
        const T *xb = (const T *)(const void *)p[2];                                             \
        (void)ctx;                                                                               \
        (void)err;                                                                               \
        for (int64_t i = 0; i < n; i++) {                                                        \
            const T a = xa[i * s[1]], b = xb[i * s[2]];                                          \
            o[i * s[0]] = (EXPR);                                                                \
        }                                                                                        \
        return 0;                                                                                \
    }

/* ---- scalar helpers ------------------------------------------------------ */

/*
 * z / |z|, 0 for 0 and NaN for NaN; an infinite part counts as +-1 and a
 * finite one beside it as 0 (so sign(inf + 1i) = 1 and sign(inf + inf i) =
 * (1 + i) / sqrt(2)), where the plain quotient would give NaN.
 */
static inline cf64 sign_c(double re, double im)
{
    if (isinf(re) || isinf(im)) {
        re = isinf(re) ? copysign(1.0, re) : copysign(0.0, re);
        im = isinf(im) ? copysign(1.0, im) : copysign(0.0, im);
    }
    double m = hypot(re, im);
    if (m == 0) {
        return CMPLX(0.0, 0.0);
    }
    return CMPLX(re / m, im / m);
}

/*
 * x^y = exp(y log x) on the principal branch, with x^0 = 1 for every x (NaN
 * included, as C's pow) and 0^y = 0 for Re(y) > 0 (where log 0 = -inf would
 * give NaN).
 */
static inline cf64 pow_c(cf64 x, cf64 y)
{
    if (y == 0) {
        return CMPLX(1.0, 0.0);
    }
    if (x == 0 && creal(y) > 0) {
        return CMPLX(0.0, 0.0);
    }
    return cexp(y * clog(x));
}

static inline cf32 pow_cf(cf32 x, cf32 y)
{
    if (y == 0) {
        return CMPLXF(1.0f, 0.0f);
    }
    if (x == 0 && crealf(y) > 0) {
        return CMPLXF(0.0f, 0.0f);
    }
    return cexpf(y * clogf(x));
}

/* ---- UNARY rows ------------------------------------------------------------ */

Z_UNARY(neg_c64, cf32, cf32, -a)
Z_UNARY(conj_c64, cf32, cf32, conjf(a))
Z_UNARY(sign_c64, cf32, cf32, (cf32)sign_c(crealf(a), cimagf(a)))
Z_UNARY(exp_c64, cf32, cf32, cexpf(a))
Z_UNARY(log_c64, cf32, cf32, clogf(a))
Z_UNARY(sin_c64, cf32, cf32, csinf(a))
Z_UNARY(cos_c64, cf32, cf32, ccosf(a))
Z_UNARY(tanh_c64, cf32, cf32, ctanhf(a))
Z_UNARY(sqrt_c64, cf32, cf32, csqrtf(a))
Z_UNARY(rsqrt_c64, cf32, cf32, 1.0f / csqrtf(a))
Z_UNARY(recip_c64, cf32, cf32, 1.0f / a)
Z_UNARY(square_c64, cf32, cf32, a *a)
Z_UNARY(abs_c64, float, cf32, cabsf(a))
Z_UNARY(real_c64, float, cf32, crealf(a))
Z_UNARY(imag_c64, float, cf32, cimagf(a))
Z_UNARY(angle_c64, float, cf32, cargf(a))

Z_UNARY(neg_c128, cf64, cf64, -a)
Z_UNARY(conj_c128, cf64, cf64, conj(a))
Z_UNARY(sign_c128, cf64, cf64, sign_c(creal(a), cimag(a)))
Z_UNARY(exp_c128, cf64, cf64, cexp(a))
Z_UNARY(log_c128, cf64, cf64, clog(a))
Z_UNARY(sin_c128, cf64, cf64, csin(a))
Z_UNARY(cos_c128, cf64, cf64, ccos(a))
Z_UNARY(tanh_c128, cf64, cf64, ctanh(a))
Z_UNARY(sqrt_c128, cf64, cf64, csqrt(a))
Z_UNARY(rsqrt_c128, cf64, cf64, 1.0 / csqrt(a))
Z_UNARY(recip_c128, cf64, cf64, 1.0 / a)
Z_UNARY(square_c128, cf64, cf64, a *a)
Z_UNARY(abs_c128, double, cf64, cabs(a))
Z_UNARY(real_c128, double, cf64, creal(a))
Z_UNARY(imag_c128, double, cf64, cimag(a))
Z_UNARY(angle_c128, double, cf64, carg(a))

#define Z_UNARY_ENTRY(SUF)                                                                       \
    {                                                                                            \
        [TF_UNARY_NEG] = neg_##SUF, [TF_UNARY_CONJ] = conj_##SUF, [TF_UNARY_SIGN] = sign_##SUF,  \
        [TF_UNARY_EXP] = exp_##SUF, [TF_UNARY_LOG] = log_##SUF, [TF_UNARY_SIN] = sin_##SUF,      \
        [TF_UNARY_COS] = cos_##SUF, [TF_UNARY_TANH] = tanh_##SUF, [TF_UNARY_SQRT] = sqrt_##SUF,  \
        [TF_UNARY_RSQRT] = rsqrt_##SUF, [TF_UNARY_RECIPROCAL] = recip_##SUF,                     \
        [TF_UNARY_SQUARE] = square_##SUF, [TF_UNARY_ABS] = abs_##SUF,                            \
        [TF_UNARY_REAL] = real_##SUF, [TF_UNARY_IMAG] = imag_##SUF,                              \
        [TF_UNARY_ANGLE] = angle_##SUF,                                                          \
    }

/* [0: c64, 1: c128][op] */
static const cpu_row_fn unary_rows[2][TF_UNARY_COUNT_] = {Z_UNARY_ENTRY(c64),
                                                          Z_UNARY_ENTRY(c128)};

/* ---- BINARY and COMPARE rows ------------------------------------------------- */

Z_BINARY(add_c64, cf32, cf32, a + b)
Z_BINARY(sub_c64, cf32, cf32, a - b)
Z_BINARY(mul_c64, cf32, cf32, a *b)
Z_BINARY(div_c64, cf32, cf32, a / b)
Z_BINARY(pow_c64, cf32, cf32, pow_cf(a, b))
Z_BINARY(add_c128, cf64, cf64, a + b)
Z_BINARY(sub_c128, cf64, cf64, a - b)
Z_BINARY(mul_c128, cf64, cf64, a *b)
Z_BINARY(div_c128, cf64, cf64, a / b)
Z_BINARY(pow_c128, cf64, cf64, pow_c(a, b))
/* COMPLEX: real parts in, complex out (keeps every bit of both, signed zeros included) */
Z_BINARY(complex_c64, cf32, float, CMPLXF(a, b))
Z_BINARY(complex_c128, cf64, double, CMPLX(a, b))

#define Z_BINARY_ENTRY(SUF)                                                                      \
    {                                                                                            \
        [TF_BINARY_ADD] = add_##SUF, [TF_BINARY_SUB] = sub_##SUF, [TF_BINARY_MUL] = mul_##SUF,   \
        [TF_BINARY_DIV] = div_##SUF, [TF_BINARY_POW] = pow_##SUF,                                \
        [TF_BINARY_COMPLEX] = complex_##SUF,                                                     \
    }

static const cpu_row_fn binary_rows[2][TF_BINARY_COUNT_] = {Z_BINARY_ENTRY(c64),
                                                            Z_BINARY_ENTRY(c128)};

/* Both parts compared: NaN in either part makes the elements unequal. */
Z_BINARY(eq_c64, uint8_t, cf32, (uint8_t)(a == b))
Z_BINARY(ne_c64, uint8_t, cf32, (uint8_t)(a != b))
Z_BINARY(eq_c128, uint8_t, cf64, (uint8_t)(a == b))
Z_BINARY(ne_c128, uint8_t, cf64, (uint8_t)(a != b))

static const cpu_row_fn compare_rows[2][TF_COMPARE_COUNT_] = {
    {[TF_COMPARE_EQ] = eq_c64, [TF_COMPARE_NE] = ne_c64},
    {[TF_COMPARE_EQ] = eq_c128, [TF_COMPARE_NE] = ne_c128},
};


/* ---- lookups ---------------------------------------------------------------- */

/* 0 for c64, 1 for c128, -1 for the other dtypes. */
static int slot(uint32_t dtype)
{
    return dtype == TF_C64 ? 0 : dtype == TF_C128 ? 1 : -1;
}

cpu_row_fn tf__cpu_complex_unary_row(uint32_t dtype, uint32_t op)
{
    int k = slot(dtype);
    return k >= 0 && op < TF_UNARY_COUNT_ ? unary_rows[k][op] : NULL;
}

cpu_row_fn tf__cpu_complex_binary_row(uint32_t dtype, uint32_t op)
{
    int k = slot(dtype);
    return k >= 0 && op < TF_BINARY_COUNT_ ? binary_rows[k][op] : NULL;
}

cpu_row_fn tf__cpu_complex_compare_row(uint32_t dtype, uint32_t op)
{
    int k = slot(dtype);
    return k >= 0 && op < TF_COMPARE_COUNT_ ? compare_rows[k][op] : NULL;
}

int tf__cpu_complex_unary_is_cheap(uint32_t op)
{
    return op == TF_UNARY_NEG || op == TF_UNARY_CONJ || op == TF_UNARY_REAL ||
           op == TF_UNARY_IMAG || op == TF_UNARY_SQUARE;
}
