/*
 * tf_ref_values.c - the values of the reference helpers (see tf_ref.h):
 * tf_scalar per dtype, loading and storing typed memory, random values, and
 * the tolerance-aware comparison.
 *
 * A complex value travels in one tf_scalar too: its real part in `f` and the
 * bits of its imaginary part (a double) in `i` (tfr_c, tfr_im), so every
 * helper that moves tf_scalar values (strided views, packing, reading back)
 * works for complex dtypes unchanged.
 */
#include "tf_ref.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- values ---- */

tf_scalar tfr_f(double f)
{
    tf_scalar v = {f, 0};
    return v;
}

tf_scalar tfr_i(int64_t i)
{
    tf_scalar v = {0.0, i};
    return v;
}

tf_scalar tfr_c(double re, double im)
{
    tf_scalar v = {re, 0};
    memcpy(&v.i, &im, sizeof im);
    return v;
}

double tfr_im(tf_scalar v)
{
    double im;
    memcpy(&im, &v.i, sizeof im);
    return im;
}

tf_scalar tfr_norm(tf_dtype dtype, tf_scalar v)
{
    switch (dtype) {
    case TF_F32: return tfr_f((double)(float)v.f);
    case TF_F64: return tfr_f(v.f);
    case TF_I32: return tfr_i((int64_t)(int32_t)(uint32_t)(uint64_t)v.i);
    case TF_I64: return tfr_i(v.i);
    case TF_BOOL: return tfr_i(v.i != 0);
    case TF_C64: return tfr_c((double)(float)v.f, (double)(float)tfr_im(v));
    case TF_C128: return v;
    }
    return v;
}

tf_scalar tfr_load(tf_dtype dtype, const void *base, int64_t elem)
{
    switch (dtype) {
    case TF_F32: return tfr_f(((const float *)base)[elem]);
    case TF_F64: return tfr_f(((const double *)base)[elem]);
    case TF_I32: return tfr_i(((const int32_t *)base)[elem]);
    case TF_I64: return tfr_i(((const int64_t *)base)[elem]);
    case TF_BOOL: return tfr_i(((const uint8_t *)base)[elem]);
    case TF_C64: {
        const float *p = (const float *)base + 2 * elem;
        return tfr_c(p[0], p[1]);
    }
    case TF_C128: {
        const double *p = (const double *)base + 2 * elem;
        return tfr_c(p[0], p[1]);
    }
    }
    return tfr_i(0);
}

void tfr_store(tf_dtype dtype, void *base, int64_t elem, tf_scalar v)
{
    v = tfr_norm(dtype, v);
    switch (dtype) {
    case TF_F32: ((float *)base)[elem] = (float)v.f; break;
    case TF_F64: ((double *)base)[elem] = v.f; break;
    case TF_I32: ((int32_t *)base)[elem] = (int32_t)v.i; break;
    case TF_I64: ((int64_t *)base)[elem] = v.i; break;
    case TF_BOOL: ((uint8_t *)base)[elem] = (uint8_t)v.i; break;
    case TF_C64: {
        float *p = (float *)base + 2 * elem;
        p[0] = (float)v.f;
        p[1] = (float)tfr_im(v);
        break;
    }
    case TF_C128: {
        double *p = (double *)base + 2 * elem;
        p[0] = v.f;
        p[1] = tfr_im(v);
        break;
    }
    }
}

double tfr_as_double(tf_dtype dtype, tf_scalar v)
{
    return tf_dtype_is_inexact(dtype) ? v.f : (double)v.i;
}

int64_t tfr_int_min(tf_dtype dtype)
{
    return dtype == TF_I32 ? INT32_MIN : dtype == TF_I64 ? INT64_MIN : 0;
}

int64_t tfr_int_max(tf_dtype dtype)
{
    return dtype == TF_I32 ? INT32_MAX : dtype == TF_I64 ? INT64_MAX : 1;
}

static int64_t clamp_i64(double x, tf_dtype dtype)
{
    double lo = (double)tfr_int_min(dtype), hi = (double)tfr_int_max(dtype);
    if (x <= lo)
        return tfr_int_min(dtype);
    if (x >= hi)
        return tfr_int_max(dtype);
    return (int64_t)x;
}

static tf_scalar random_special(tfr_rng *rng, tf_dtype dtype)
{
    if (tf_dtype_is_float(dtype)) {
        static const double specials[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0};
        return tfr_f(specials[tfr_rng_int(rng, 0, 4)]);
    }
    int64_t edges[] = {0, 1, -1, tfr_int_min(dtype), tfr_int_max(dtype)};
    return tfr_norm(dtype, tfr_i(edges[tfr_rng_int(rng, 0, 4)]));
}

tf_scalar tfr_random_value(tfr_rng *rng, tf_dtype dtype, const tfr_gen *gen)
{
    if (dtype == TF_BOOL)
        return tfr_i(tfr_rng_int(rng, 0, 1));
    if (tf_dtype_is_complex(dtype)) { /* each part drawn as a value of the part's dtype */
        tf_dtype part = tf_dtype_real_of(dtype);
        double re = tfr_random_value(rng, part, gen).f;
        return tfr_c(re, tfr_random_value(rng, part, gen).f);
    }
    switch (gen->dist) {
    case TFR_UNIFORM:
        if (tf_dtype_is_float(dtype))
            return tfr_norm(dtype, tfr_f(tfr_rng_real(rng, gen->lo, gen->hi)));
        return tfr_i(tfr_rng_int(rng, clamp_i64(gen->lo, dtype), clamp_i64(gen->hi, dtype)));
    case TFR_INTEGRAL: {
        int64_t x = tfr_rng_int(rng, clamp_i64(gen->lo, dtype), clamp_i64(gen->hi, dtype));
        return tf_dtype_is_float(dtype) ? tfr_f((double)x) : tfr_i(x);
    }
    case TFR_WIDE:
        if (tf_dtype_is_float(dtype)) {
            double mag = pow(10.0, tfr_rng_real(rng, -3.0, 3.0));
            return tfr_norm(dtype, tfr_f(tfr_rng_chance(rng, 50) ? mag : -mag));
        }
        if (tfr_rng_chance(rng, 10))
            return random_special(rng, dtype);
        return tfr_norm(dtype, tfr_i((int64_t)tfr_rng_u64(rng)));
    case TFR_SPECIAL:
        if (tfr_rng_chance(rng, 25))
            return random_special(rng, dtype);
        return tfr_random_value(rng, dtype, &(tfr_gen){TFR_UNIFORM, gen->lo, gen->hi});
    case TFR_INTEGRAL_SPECIAL:
        if (tfr_rng_chance(rng, 25))
            return random_special(rng, dtype);
        return tfr_random_value(rng, dtype, &(tfr_gen){TFR_INTEGRAL, gen->lo, gen->hi});
    }
    return tfr_i(0);
}

tf_scalar tfr_sentinel(tf_dtype dtype)
{
    switch (dtype) {
    case TF_F32:
    case TF_F64: return tfr_f(-7654.25);
    case TF_I32:
    case TF_I64: return tfr_i(-7654321);
    case TF_BOOL: return tfr_i(1);
    case TF_C64:
    case TF_C128: return tfr_c(-7654.25, 4321.5);
    }
    return tfr_i(0);
}

/* ---- comparison ---- */

tfr_tol tfr_tol_default(tf_dtype dtype)
{
    tf_dtype part = tf_dtype_real_of(dtype);
    if (part == TF_F32)
        return (tfr_tol){1e-5, 1e-6};
    if (part == TF_F64)
        return (tfr_tol){1e-12, 1e-14};
    return (tfr_tol){0.0, 0.0};
}

static int close_real(double got, double want, double extra, tfr_tol tol)
{
    if (isnan(got) || isnan(want))
        return isnan(got) && isnan(want);
    if (isinf(got) || isinf(want))
        return got == want;
    return fabs(got - want) <= tol.rtol * fabs(want) + tol.atol + extra;
}

int tfr_close(tf_dtype dtype, tf_scalar got, tf_scalar want, double extra, tfr_tol tol)
{
    if (tf_dtype_is_complex(dtype)) { /* each part, relative to the modulus */
        double scale = hypot(want.f, tfr_im(want));
        tfr_tol t = {0.0, tol.atol + tol.rtol * (isfinite(scale) ? scale : 0.0)};
        return close_real(got.f, want.f, extra, t) &&
               close_real(tfr_im(got), tfr_im(want), extra, t);
    }
    if (!tf_dtype_is_float(dtype))
        return got.i == want.i;
    return close_real(got.f, want.f, extra, tol);
}

void tfr_check_(const char *file, int line, const char *what, tf_dtype dtype, size_t n,
                const tf_scalar *got, const tf_scalar *want, const double *extra, tfr_tol tol)
{
    for (size_t i = 0; i < n; i++) {
        if (tfr_close(dtype, got[i], want[i], extra ? extra[i] : 0.0, tol))
            continue;
        if (tf_dtype_is_complex(dtype))
            print_error("%s (%s): element %zu of %zu: got %.17g%+.17gi, want %.17g%+.17gi\n",
                        what, tf_dtype_name(dtype), i, n, got[i].f, tfr_im(got[i]), want[i].f,
                        tfr_im(want[i]));
        else if (tf_dtype_is_float(dtype))
            print_error("%s (%s): element %zu of %zu: got %.17g, want %.17g (tol %g)\n", what,
                        tf_dtype_name(dtype), i, n, got[i].f, want[i].f,
                        tol.rtol * fabs(want[i].f) + tol.atol + (extra ? extra[i] : 0.0));
        else
            print_error("%s (%s): element %zu of %zu: got %lld, want %lld\n", what,
                        tf_dtype_name(dtype), i, n, (long long)got[i].i, (long long)want[i].i);
        _fail(file, line);
    }
}
