/*
 * cpu_convert.c - CONVERT between every pair of dtypes, unchecked or checked.
 *
 * Unchecked conversions are plain rows, one per (source, target) pair:
 * float to integer truncates toward zero and saturates, NaN gives 0 (done by
 * hand: a C cast of such values is undefined); integer to float and f64 to
 * f32 round to nearest (the C conversions under the default rounding mode,
 * one rounding only); anything to bool is x != 0; bool reads as 0 or 1.
 * i64 to i32, which the ABI leaves open for the unchecked case, keeps the
 * low 32 bits (two's complement wrap), like a C cast. Complex (ABI 1.4):
 * anything becomes x + 0i converted to the part dtype, complex to complex
 * converts each part, complex to a real or integer dtype takes the real part
 * (then as from a float), complex to bool is z != 0.
 *
 * A checked conversion first scans the row for the first element whose value
 * would change and fails with TF_ERR_OUT_OF_RANGE naming it, then runs the
 * unchecked row (which is exact for every value that passed).
 */
#include <complex.h>
#include <math.h>
#include <stdio.h>

#include "cpu_internal.h"

#define CONVERT_GRAIN (32 * 1024)

static inline int32_t sat_i32(double v)
{
    if (v != v) {
        return 0;
    }
    if (v >= 2147483647.0) {
        return INT32_MAX;
    }
    if (v <= -2147483648.0) {
        return INT32_MIN;
    }
    return (int32_t)v;
}

static inline int64_t sat_i64(double v)
{
    if (v != v) {
        return 0;
    }
    if (v >= 9223372036854775808.0) {
        return INT64_MAX;
    }
    if (v <= -9223372036854775808.0) {
        return INT64_MIN;
    }
    return (int64_t)v;
}

#define CONVERT_ROW(NAME, ST, DT, EXPR)                                                           \
    static int NAME(const void *ctx, int64_t n, char *const *p, const int64_t *s, cpu_err *err)   \
    {                                                                                             \
        DT *restrict o = (DT *)(void *)p[0];                                                      \
        const ST *restrict x = (const ST *)(const void *)p[1];                                    \
        (void)ctx;                                                                                \
        (void)err;                                                                                \
        if (s[0] == 1 && s[1] == 1) {                                                             \
            for (int64_t i = 0; i < n; i++) {                                                     \
                const ST a = x[i];                                                                \
                o[i] = (EXPR);                                                                    \
            }                                                                                     \
        } else {                                                                                  \
            for (int64_t i = 0; i < n; i++) {                                                     \
                const ST a = x[i * s[1]];                                                         \
                o[i * s[0]] = (EXPR);                                                             \
            }                                                                                     \
        }                                                                                         \
        return 0;                                                                                 \
    }

CONVERT_ROW(f32_f32, float, float, a)
CONVERT_ROW(f32_f64, float, double, (double)a)
CONVERT_ROW(f32_i32, float, int32_t, sat_i32(a))
CONVERT_ROW(f32_i64, float, int64_t, sat_i64(a))
CONVERT_ROW(f32_bool, float, uint8_t, (uint8_t)(a != 0))

CONVERT_ROW(f64_f32, double, float, (float)a)
CONVERT_ROW(f64_f64, double, double, a)
CONVERT_ROW(f64_i32, double, int32_t, sat_i32(a))
CONVERT_ROW(f64_i64, double, int64_t, sat_i64(a))
CONVERT_ROW(f64_bool, double, uint8_t, (uint8_t)(a != 0))

CONVERT_ROW(i32_f32, int32_t, float, (float)a)
CONVERT_ROW(i32_f64, int32_t, double, (double)a)
CONVERT_ROW(i32_i32, int32_t, int32_t, a)
CONVERT_ROW(i32_i64, int32_t, int64_t, (int64_t)a)
CONVERT_ROW(i32_bool, int32_t, uint8_t, (uint8_t)(a != 0))

CONVERT_ROW(i64_f32, int64_t, float, (float)a)
CONVERT_ROW(i64_f64, int64_t, double, (double)a)
CONVERT_ROW(i64_i32, int64_t, int32_t, (int32_t)(uint32_t)(uint64_t)a)
CONVERT_ROW(i64_i64, int64_t, int64_t, a)
CONVERT_ROW(i64_bool, int64_t, uint8_t, (uint8_t)(a != 0))

CONVERT_ROW(bool_f32, uint8_t, float, (float)(a != 0))
CONVERT_ROW(bool_f64, uint8_t, double, (double)(a != 0))
CONVERT_ROW(bool_i32, uint8_t, int32_t, (int32_t)(a != 0))
CONVERT_ROW(bool_i64, uint8_t, int64_t, (int64_t)(a != 0))
CONVERT_ROW(bool_bool, uint8_t, uint8_t, (uint8_t)(a != 0))

typedef float _Complex cf32;
typedef double _Complex cf64;

CONVERT_ROW(f32_c64, float, cf32, CMPLXF(a, 0.0f))
CONVERT_ROW(f32_c128, float, cf64, CMPLX((double)a, 0.0))
CONVERT_ROW(f64_c64, double, cf32, CMPLXF((float)a, 0.0f))
CONVERT_ROW(f64_c128, double, cf64, CMPLX(a, 0.0))
CONVERT_ROW(i32_c64, int32_t, cf32, CMPLXF((float)a, 0.0f))
CONVERT_ROW(i32_c128, int32_t, cf64, CMPLX((double)a, 0.0))
CONVERT_ROW(i64_c64, int64_t, cf32, CMPLXF((float)a, 0.0f))
CONVERT_ROW(i64_c128, int64_t, cf64, CMPLX((double)a, 0.0))
CONVERT_ROW(bool_c64, uint8_t, cf32, CMPLXF((float)(a != 0), 0.0f))
CONVERT_ROW(bool_c128, uint8_t, cf64, CMPLX((double)(a != 0), 0.0))

CONVERT_ROW(c64_f32, cf32, float, crealf(a))
CONVERT_ROW(c64_f64, cf32, double, (double)crealf(a))
CONVERT_ROW(c64_i32, cf32, int32_t, sat_i32(crealf(a)))
CONVERT_ROW(c64_i64, cf32, int64_t, sat_i64(crealf(a)))
CONVERT_ROW(c64_bool, cf32, uint8_t, (uint8_t)(a != 0))
CONVERT_ROW(c64_c64, cf32, cf32, a)
CONVERT_ROW(c64_c128, cf32, cf64, CMPLX((double)crealf(a), (double)cimagf(a)))
CONVERT_ROW(c128_f32, cf64, float, (float)creal(a))
CONVERT_ROW(c128_f64, cf64, double, creal(a))
CONVERT_ROW(c128_i32, cf64, int32_t, sat_i32(creal(a)))
CONVERT_ROW(c128_i64, cf64, int64_t, sat_i64(creal(a)))
CONVERT_ROW(c128_bool, cf64, uint8_t, (uint8_t)(a != 0))
CONVERT_ROW(c128_c64, cf64, cf32, CMPLXF((float)creal(a), (float)cimag(a)))
CONVERT_ROW(c128_c128, cf64, cf64, a)

/* [source][target] */
static const cpu_row_fn convert_table[TF_DTYPE_COUNT][TF_DTYPE_COUNT] = {
    [TF_F32] = {f32_f32, f32_f64, f32_i32, f32_i64, f32_bool, f32_c64, f32_c128},
    [TF_F64] = {f64_f32, f64_f64, f64_i32, f64_i64, f64_bool, f64_c64, f64_c128},
    [TF_I32] = {i32_f32, i32_f64, i32_i32, i32_i64, i32_bool, i32_c64, i32_c128},
    [TF_I64] = {i64_f32, i64_f64, i64_i32, i64_i64, i64_bool, i64_c64, i64_c128},
    [TF_BOOL] = {bool_f32, bool_f64, bool_i32, bool_i64, bool_bool, bool_c64, bool_c128},
    [TF_C64] = {c64_f32, c64_f64, c64_i32, c64_i64, c64_bool, c64_c64, c64_c128},
    [TF_C128] = {c128_f32, c128_f64, c128_i32, c128_i64, c128_bool, c128_c64, c128_c128},
};

/* ---- checks -------------------------------------------------------------- */

/* Non-zero when the float value v converts to `target` without changing. */
static int float_fits(double v, uint32_t target)
{
    switch ((tf_dtype)target) {
    case TF_F32: return !(isfinite(v) && isinf((float)v));
    case TF_F64: return 1;
    case TF_I32: return v == trunc(v) && v >= -2147483648.0 && v <= 2147483647.0;
    case TF_I64: return v == trunc(v) && v >= -9223372036854775808.0 && v < 9223372036854775808.0;
    case TF_BOOL: return v == 0 || v == 1;
    case TF_C64: return float_fits(v, TF_F32); /* as to the part dtype */
    case TF_C128: return 1;
    }
    return 0;
}

/* Non-zero when the integer value v converts to `target` without changing. */
static int int_fits(int64_t v, uint32_t target)
{
    switch ((tf_dtype)target) {
    case TF_F32: {
        float f = (float)v; /* in [-2^63, 2^63]: the cast back is defined below 2^63 */
        return f < 9223372036854775808.0f && (int64_t)f == v;
    }
    case TF_F64: {
        double d = (double)v;
        return d < 9223372036854775808.0 && (int64_t)d == v;
    }
    case TF_I32: return v >= INT32_MIN && v <= INT32_MAX;
    case TF_I64: return 1;
    case TF_BOOL: return v == 0 || v == 1;
    case TF_C64: return int_fits(v, TF_F32); /* as to the part dtype */
    case TF_C128: return int_fits(v, TF_F64);
    }
    return 0;
}

typedef struct convert_job {
    uint32_t source;
    uint32_t target;
    cpu_row_fn row;
} convert_job;

static int out_of_range(cpu_err *err, const convert_job *job, const char *value)
{
    return tf__cpu_fail(err, TF_ERR_OUT_OF_RANGE,
                        "cpu: CONVERT %s -> %s (checked): value %s is not representable exactly",
                        tf__cpu_dtype_name(job->source), tf__cpu_dtype_name(job->target), value);
}

#define CHECK_FLOAT_ROW(NAME, ST)                                                                 \
    static int NAME(const convert_job *job, int64_t n, const char *p, int64_t s, cpu_err *err)    \
    {                                                                                             \
        const ST *x = (const ST *)(const void *)p;                                                \
        for (int64_t i = 0; i < n; i++) {                                                         \
            double v = (double)x[i * s];                                                          \
            if (!float_fits(v, job->target)) {                                                    \
                char text[48];                                                                    \
                snprintf(text, sizeof text, "%.17g", v);                                          \
                return out_of_range(err, job, text);                                              \
            }                                                                                     \
        }                                                                                         \
        return 0;                                                                                 \
    }

#define CHECK_INT_ROW(NAME, ST)                                                                   \
    static int NAME(const convert_job *job, int64_t n, const char *p, int64_t s, cpu_err *err)    \
    {                                                                                             \
        const ST *x = (const ST *)(const void *)p;                                                \
        for (int64_t i = 0; i < n; i++) {                                                         \
            int64_t v = (int64_t)x[i * s];                                                        \
            if (!int_fits(v, job->target)) {                                                      \
                char text[32];                                                                    \
                snprintf(text, sizeof text, "%lld", (long long)v);                                \
                return out_of_range(err, job, text);                                              \
            }                                                                                     \
        }                                                                                         \
        return 0;                                                                                 \
    }

CHECK_FLOAT_ROW(check_f32, float)
CHECK_FLOAT_ROW(check_f64, double)
CHECK_INT_ROW(check_i32, int32_t)
CHECK_INT_ROW(check_i64, int64_t)

/* A complex source: each part must fit a complex target's part; a real or integer
   target has no checked conversion (the host refuses the call; this is for a host
   that does not validate). */
#define CHECK_COMPLEX_ROW(NAME, PT)                                                               \
    static int NAME(const convert_job *job, int64_t n, const char *p, int64_t s, cpu_err *err)    \
    {                                                                                             \
        const PT *x = (const PT *)(const void *)p;                                                \
        if (!tf_dtype_is_complex((tf_dtype)job->target)) {                                        \
            return tf__cpu_fail(err, TF_ERR_VALIDATION,                                           \
                                "cpu: CONVERT %s -> %s (checked) is not defined: the unchecked "  \
                                "cast takes the real part",                                       \
                                tf__cpu_dtype_name(job->source), tf__cpu_dtype_name(job->target)); \
        }                                                                                         \
        for (int64_t i = 0; i < 2 * n; i++) {                                                     \
            double v = (double)x[(i / 2) * 2 * s + i % 2];                                        \
            if (!float_fits(v, job->target)) {                                                    \
                char text[80];                                                                    \
                snprintf(text, sizeof text, "%.17g (a real or imaginary part)", v);               \
                return out_of_range(err, job, text);                                              \
            }                                                                                     \
        }                                                                                         \
        return 0;                                                                                 \
    }

CHECK_COMPLEX_ROW(check_c64, float)
CHECK_COMPLEX_ROW(check_c128, double)

static int checked_row(const void *ctx, int64_t n, char *const *p, const int64_t *s,
                       cpu_err *err)
{
    const convert_job *job = ctx;
    int bad = 0;
    switch ((tf_dtype)job->source) {
    case TF_F32: bad = check_f32(job, n, p[1], s[1], err); break;
    case TF_F64: bad = check_f64(job, n, p[1], s[1], err); break;
    case TF_I32: bad = check_i32(job, n, p[1], s[1], err); break;
    case TF_I64: bad = check_i64(job, n, p[1], s[1], err); break;
    case TF_BOOL: break; /* 0 or 1: fits every dtype */
    case TF_C64: bad = check_c64(job, n, p[1], s[1], err); break;
    case TF_C128: bad = check_c128(job, n, p[1], s[1], err); break;
    }
    return bad ? 1 : job->row(NULL, n, p, s, err);
}

int tf__cpu_exec_convert(const cpu_engine *e, const tf_exec *x, cpu_err *err)
{
    const tf_convert_params *cp = x->params;
    cpu_view v[2];
    const cpu_view *pv[2] = {&v[0], &v[1]};
    tf__cpu_view_from_operand(&v[0], x->outputs[0]);
    tf__cpu_view_from_operand(&v[1], x->inputs[0]);

    convert_job job = {v[1].dtype, v[0].dtype, convert_table[v[1].dtype][v[0].dtype]};
    cpu_iter it;
    tf__cpu_iter_init(&it, 2, pv, 0);
    if (cp->checked) {
        return tf__cpu_iter_run(e, &it, CONVERT_GRAIN, checked_row, &job, err);
    }
    return tf__cpu_iter_run(e, &it, CONVERT_GRAIN, job.row, NULL, err);
}
