/*
 * test_ops_elementwise.c - the elementwise ops of the eager runtime: the 14
 * unary and 8 binary ops, compare, select, clamp, convert and cast.
 *
 * Every differentiable op is gradient-checked (reverse and forward mode
 * against central finite differences in f64) on rank 0, ranks 1-3, NumPy
 * broadcasting (both operands stretched, rank 0 against anything),
 * zero-size extents and non-contiguous (transposed, reversed, sliced)
 * inputs. Forward values are compared with C math, and the derivatives
 * that finite differences cannot see (ties, x = 0 in pow, zero derivatives
 * of compare and sign, conversions) are checked against hand-computed
 * values.
 */
#include <float.h>
#include <math.h>

#include <tenferro/ops.h>

#include "tf_eager_test.h"
#include "tf_gradcheck.h"

/* ===================================================================== */
/* Helpers                                                                */
/* ===================================================================== */

/* Reads any tensor's elements (column-major) as doubles. */
static void read_values(const tf_tensor *t, double *out, size_t n)
{
    assert_int_equal(tf_tensor_numel(t), n);
    if (n == 0)
        return;
    switch (tf_tensor_dtype(t)) {
    case TF_F64: TF_ASSERT_OK(tf_tensor_copy_to_host(t, TF_F64, out, n)); return;
    case TF_F32: {
        float *b = malloc(n * sizeof *b);
        TF_ASSERT_OK(tf_tensor_copy_to_host(t, TF_F32, b, n));
        for (size_t i = 0; i < n; i++)
            out[i] = b[i];
        free(b);
        return;
    }
    case TF_I32: {
        int32_t *b = malloc(n * sizeof *b);
        TF_ASSERT_OK(tf_tensor_copy_to_host(t, TF_I32, b, n));
        for (size_t i = 0; i < n; i++)
            out[i] = b[i];
        free(b);
        return;
    }
    case TF_I64: {
        int64_t *b = malloc(n * sizeof *b);
        TF_ASSERT_OK(tf_tensor_copy_to_host(t, TF_I64, b, n));
        for (size_t i = 0; i < n; i++)
            out[i] = (double)b[i];
        free(b);
        return;
    }
    case TF_BOOL: {
        uint8_t *b = malloc(n);
        TF_ASSERT_OK(tf_tensor_copy_to_host(t, TF_BOOL, b, n));
        for (size_t i = 0; i < n; i++)
            out[i] = b[i];
        free(b);
        return;
    }
    case TF_C64:
    case TF_C128: break; /* two parts per element: not a double each */
    }
    fail_msg("read_values: %s is not read as doubles", tf_dtype_name(tf_tensor_dtype(t)));
}

/* Asserts x's value has dtype, n elements and exactly the values `want`. */
static void expect_exact(const tf_eager *x, tf_dtype dtype, const double *want, size_t n)
{
    assert_non_null(x);
    const tf_tensor *t = tf_eager_value(x);
    assert_int_equal(tf_tensor_dtype(t), dtype);
    double got[64];
    assert_true(n <= 64);
    read_values(t, got, n);
    for (size_t i = 0; i < n; i++)
        if (!(got[i] == want[i] || (isnan(got[i]) && isnan(want[i]))))
            fail_msg("element %zu: got %.17g, want %.17g", i, got[i], want[i]);
}

static tf_eager *sum_all(tf_session *s, tf_eager *x)
{
    tf_eager *r = NULL;
    TF_ASSERT_OK(tf_session_reduce_sum(s, x, NULL, 0, &r));
    return r;
}

/* ---- input shapes for gradient checks ---- */

static const gc_spec k_unary_specs[] = {
    {0, {0}, GC_PLAIN},         {1, {5}, GC_PLAIN},
    {2, {2, 3}, GC_PLAIN},      {3, {2, 3, 2}, GC_PLAIN},
    {2, {2, 3}, GC_TRANSPOSED}, {2, {2, 3}, GC_REVERSED},
    {2, {2, 2}, GC_SLICED},     {3, {2, 2, 3}, GC_TRANSPOSED},
    {2, {0, 3}, GC_PLAIN},
};
#define N_UNARY_SPECS (sizeof k_unary_specs / sizeof k_unary_specs[0])

/* Operand pairs: equal shapes, [2,3]+[3], [2,3]+[2,1], rank 0 on either side,
   both stretched, views, zero-size. */
static const gc_spec k_binary_specs[][2] = {
    {{2, {2, 3}, GC_PLAIN}, {2, {2, 3}, GC_PLAIN}},
    {{2, {2, 3}, GC_PLAIN}, {1, {3}, GC_PLAIN}},
    {{2, {2, 3}, GC_PLAIN}, {2, {2, 1}, GC_PLAIN}},
    {{0, {0}, GC_PLAIN}, {2, {2, 3}, GC_PLAIN}},
    {{3, {2, 3, 2}, GC_PLAIN}, {0, {0}, GC_PLAIN}},
    {{0, {0}, GC_PLAIN}, {0, {0}, GC_PLAIN}},
    {{2, {2, 1}, GC_PLAIN}, {2, {1, 3}, GC_PLAIN}},
    {{1, {3}, GC_PLAIN}, {2, {2, 1}, GC_PLAIN}},
    {{3, {2, 3, 2}, GC_PLAIN}, {2, {3, 1}, GC_PLAIN}},
    {{2, {2, 3}, GC_TRANSPOSED}, {1, {3}, GC_REVERSED}},
    {{2, {2, 3}, GC_SLICED}, {2, {2, 3}, GC_REVERSED}},
    {{1, {4}, GC_PLAIN}, {2, {3, 4}, GC_TRANSPOSED}},
    {{2, {0, 3}, GC_PLAIN}, {1, {3}, GC_PLAIN}},
};
#define N_BINARY_SPECS (sizeof k_binary_specs / sizeof k_binary_specs[0])

/* ===================================================================== */
/* Unary ops                                                              */
/* ===================================================================== */

typedef tf_status (*unary_fn)(tf_session *, tf_eager *, tf_eager **);

typedef struct unary_case {
    const char *name;
    unary_fn fn;
    double lo, hi; /* gradient-check domain */
    double (*ref)(double);
} unary_case;

static double ref_neg(double x)
{
    return -x;
}
static double ref_sign(double x)
{
    return isnan(x) ? x : (double)((x > 0) - (x < 0));
}
static double ref_rsqrt(double x)
{
    return 1.0 / sqrt(x);
}
static double ref_sigmoid(double x)
{
    /* the accurate form on both sides: no cancellation, no overflow */
    if (x >= 0)
        return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

static const unary_case k_unary[] = {
    {"neg", tf_session_neg, -2, 2, ref_neg},
    {"abs", tf_session_abs, -2, 2, fabs},
    {"sign", tf_session_sign, -2, 2, ref_sign},
    {"exp", tf_session_exp, -2, 2, exp},
    {"log", tf_session_log, 0.5, 2, log},
    {"expm1", tf_session_expm1, -2, 2, expm1},
    {"log1p", tf_session_log1p, -0.5, 2, log1p},
    {"sin", tf_session_sin, -2, 2, sin},
    {"cos", tf_session_cos, -2, 2, cos},
    {"tanh", tf_session_tanh, -2, 2, tanh},
    {"sqrt", tf_session_sqrt, 0.5, 2, sqrt},
    {"rsqrt", tf_session_rsqrt, 0.5, 2, ref_rsqrt},
    {"erf", tf_session_erf, -2, 2, erf},
    {"sigmoid", tf_session_sigmoid, -3, 3, ref_sigmoid},
};
#define N_UNARY (sizeof k_unary / sizeof k_unary[0])

static tf_status call_unary(tf_session *s, tf_eager *const *xs, size_t n, void *user,
                            tf_eager **out)
{
    (void)n;
    return ((const unary_case *)user)->fn(s, xs[0], out);
}

static void test_unary_gradcheck(void **state)
{
    (void)state;
    unsigned seed = 11;
    for (size_t k = 0; k < N_UNARY; k++) {
        const unary_case *c = &k_unary[k];
        for (size_t i = 0; i < N_UNARY_SPECS; i++) {
            tf_tensor *x = gc_random_view(&k_unary_specs[i], c->lo, c->hi, &seed);
            char what[64];
            snprintf(what, sizeof what, "%s, shape case %zu", c->name, i);
            gc_check(what, g_cpu, call_unary, (void *)c, &x, 1, NULL);
            tf_tensor_release(x);
        }
    }
}

/* Second derivatives of every unary op: d/dx of grad(sum f(x)) = f''(x). */
static tf_status call_unary_grad(tf_session *s, tf_eager *const *xs, size_t n, void *user,
                                 tf_eager **out)
{
    (void)n;
    /* the finite-difference side passes constants: capture makes them targets */
    tf_scope sc;
    tf_status st = tf_scope_begin_capture_trace(tf_session_runtime(s), &sc);
    if (st)
        return st;
    tf_eager *y = NULL, *l = NULL;
    st = ((const unary_case *)user)->fn(s, xs[0], &y);
    if (!st)
        st = tf_session_reduce_sum(s, y, NULL, 0, &l);
    if (!st)
        st = tf_runtime_grad(tf_session_runtime(s), tf_session_engine(s), l, xs[0], out);
    tf_scope_end(&sc);
    tf_eager_release(l);
    tf_eager_release(y);
    return st;
}

static void test_unary_second_order(void **state)
{
    (void)state;
    unsigned seed = 5;
    static const gc_spec sp = {2, {2, 2}, GC_PLAIN};
    gc_options o = {1e-5, 1e-5, 3, 0, 0};
    for (size_t k = 0; k < N_UNARY; k++) {
        const unary_case *c = &k_unary[k];
        tf_tensor *x = gc_random_view(&sp, c->lo, c->hi, &seed);
        char what[64];
        snprintf(what, sizeof what, "grad of %s", c->name);
        gc_check(what, g_cpu, call_unary_grad, (void *)c, &x, 1, &o);
        tf_tensor_release(x);
    }
}

static int close_enough(double got, double want, double rel)
{
    if (isnan(want))
        return isnan(got);
    if (isinf(want))
        return got == want;
    if (want == 0)
        return got == 0;
    return fabs(got - want) <= rel * fabs(want);
}

static int in_domain(const char *name, double x)
{
    if (!strcmp(name, "log") || !strcmp(name, "sqrt") || !strcmp(name, "rsqrt"))
        return x >= 0 || isnan(x);
    if (!strcmp(name, "log1p"))
        return x >= -1 || isnan(x);
    return 1;
}

/* Forward values of every unary op in f64 and f32 against C math. */
static void test_unary_values(void **state)
{
    (void)state;
    static const double pts[] = {-800,  -700, -40, -3.5, -1, -1e-10, -0.0, 0,  1e-300,
                                 1e-10, 0.5,  1,   2.5,  40, 700,    800,  NAN};
    enum {
        NP = sizeof pts / sizeof pts[0]
    };
    tft_env f = tft_env_begin();
    for (size_t k = 0; k < N_UNARY; k++) {
        const unary_case *c = &k_unary[k];
        double xs[NP];
        size_t n = 0;
        for (size_t i = 0; i < NP; i++)
            if (in_domain(c->name, pts[i]))
                xs[n++] = pts[i];
        const int64_t shape[] = {(int64_t)n};
        /* f64: within a few ulp */
        tf_eager *x = tft_f64(f.rt, 0, 1, shape, xs, n), *y = NULL;
        TF_ASSERT_OK(c->fn(f.s, x, &y));
        double got[NP];
        read_values(tf_eager_value(y), got, n);
        for (size_t i = 0; i < n; i++)
            if (!close_enough(got[i], c->ref(xs[i]), 4e-15))
                fail_msg("%s(%.17g) in f64: got %.17g, C math %.17g", c->name, xs[i], got[i],
                         c->ref(xs[i]));
        tf_eager_release(y);
        tf_eager_release(x);
        /* f32: against the f64 reference of the f32 input, within 2 ulp of f32 */
        float xf[NP];
        for (size_t i = 0; i < n; i++)
            xf[i] = (float)xs[i];
        x = tft_constant(f.rt, TF_F32, 1, shape, xf, n);
        TF_ASSERT_OK(c->fn(f.s, x, &y));
        read_values(tf_eager_value(y), got, n);
        for (size_t i = 0; i < n; i++) {
            double want = (float)c->ref((double)xf[i]);
            /* below the f32 normal range only an absolute bound is meaningful */
            int ok =
                fabs(want) < 1e-37 ? fabs(got[i] - want) < 1e-37 : close_enough(got[i], want, 5e-7);
            if (!ok)
                fail_msg("%s(%.9g) in f32: got %.9g, C math %.9g", c->name, (double)xf[i], got[i],
                         want);
        }
        tf_eager_release(y);
        tf_eager_release(x);
    }
    tft_env_end(&f);
}

/* Small arguments where the naive formulas lose everything, large ones where
   they overflow. */
static void test_unary_accuracy_edges(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    const int64_t sh[] = {4};
    tf_eager *x = tft_f64(f.rt, 0, 1, sh, (double[]){1e-12, -1e-12, 1e-5, -1e-5}, 4), *y = NULL;
    TF_ASSERT_OK(tf_session_expm1(f.s, x, &y));
    double got[4];
    read_values(tf_eager_value(y), got, 4);
    for (int i = 0; i < 4; i++) {
        double xi = ((double[]){1e-12, -1e-12, 1e-5, -1e-5})[i];
        assert_true(fabs(got[i] - expm1(xi)) <= 1e-15 * fabs(expm1(xi))); /* not exp(x) - 1 */
    }
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_log1p(f.s, x, &y));
    read_values(tf_eager_value(y), got, 4);
    for (int i = 0; i < 4; i++) {
        double xi = ((double[]){1e-12, -1e-12, 1e-5, -1e-5})[i];
        assert_true(fabs(got[i] - log1p(xi)) <= 1e-15 * fabs(log1p(xi)));
    }
    tf_eager_release(y);
    tf_eager_release(x);

    /* sigmoid stays finite and accurate far out; so does its gradient */
    const int64_t s6[] = {6};
    static const double big[] = {-745, -700, -40, 40, 700, 745};
    x = tft_f64(f.rt, 1, 1, s6, big, 6);
    TF_ASSERT_OK(tf_session_sigmoid(f.s, x, &y));
    double sv[6];
    read_values(tf_eager_value(y), sv, 6);
    for (int i = 0; i < 6; i++) {
        assert_true(isfinite(sv[i]));
        double want = ref_sigmoid(big[i]);
        if (want > 1e-300)
            assert_true(fabs(sv[i] - want) <= 1e-14 * want);
        else
            assert_true(sv[i] >= 0 && sv[i] < 1e-300);
    }
    tf_eager *l = sum_all(f.s, y), *g = tft_grad(f.rt, l, x);
    read_values(tf_eager_value(g), sv, 6);
    for (int i = 0; i < 6; i++) {
        double s = ref_sigmoid(big[i]), want = s * (1 - s);
        assert_true(isfinite(sv[i]) && sv[i] >= 0);
        if (want > 1e-300 && fabs(big[i]) < 100)
            assert_true(fabs(sv[i] - want) <= 1e-13 * want);
    }
    tf_eager_release(g);
    tf_eager_release(l);
    tf_eager_release(y);
    tf_eager_release(x);

    /* erf saturates exactly and is odd */
    x = tft_f64(f.rt, 0, 1, sh, (double[]){-10, 10, 0.3, -0.3}, 4);
    TF_ASSERT_OK(tf_session_erf(f.s, x, &y));
    read_values(tf_eager_value(y), got, 4);
    assert_true(got[0] == -1 && got[1] == 1 && got[2] == -got[3]);
    assert_true(fabs(got[2] - erf(0.3)) <= 4e-16);
    tf_eager_release(y);
    tf_eager_release(x);
    tft_env_end(&f);
}

/* neg, abs and sign also take integers (wrapping at the minimum). */
static void test_unary_integers(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    const int64_t sh[] = {4};
    int32_t v[] = {-3, 0, 5, INT32_MIN};
    tf_eager *x = tft_constant(f.rt, TF_I32, 1, sh, v, 4), *y = NULL;
    TF_ASSERT_OK(tf_session_neg(f.s, x, &y));
    expect_exact(y, TF_I32, (double[]){3, 0, -5, INT32_MIN}, 4);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_abs(f.s, x, &y));
    expect_exact(y, TF_I32, (double[]){3, 0, 5, INT32_MIN}, 4);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_sign(f.s, x, &y));
    expect_exact(y, TF_I32, (double[]){-1, 0, 1, -1}, 4);
    assert_false(tf_eager_tracks_grad(y));
    tf_eager_release(y);
    tf_eager_release(x);
    tft_env_end(&f);
}

/* abs and sign at hand-picked points, including 0 and -0. */
static void test_abs_sign_derivatives(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    const int64_t sh[] = {5};
    tf_eager *x = tft_f64(f.rt, 1, 1, sh, (double[]){-2, -0.0, 0, 0.5, 3}, 5), *y = NULL;
    TF_ASSERT_OK(tf_session_abs(f.s, x, &y));
    expect_exact(y, TF_F64, (double[]){2, 0, 0, 0.5, 3}, 5);
    tf_eager *l = sum_all(f.s, y), *g = tft_grad(f.rt, l, x);
    /* d|x|/dx = sign(x), taken as 0 at 0 */
    expect_exact(g, TF_F64, (double[]){-1, 0, 0, 1, 1}, 5);
    tf_eager_release(g);
    tf_eager_release(l);
    tf_eager_release(y);

    TF_ASSERT_OK(tf_session_sign(f.s, x, &y));
    expect_exact(y, TF_F64, (double[]){-1, 0, 0, 1, 1}, 5);
    /* sign is recorded (its result depends on a variable) with a zero derivative */
    assert_true(tf_eager_tracks_grad(y));
    l = sum_all(f.s, y);
    g = tft_grad(f.rt, l, x);
    expect_exact(g, TF_F64, (double[]){0, 0, 0, 0, 0}, 5);
    tf_eager_release(g);
    tf_eager *t = tft_f64(f.rt, 0, 1, sh, (double[]){1, 2, 3, 4, 5}, 5), *jt = NULL;
    TF_ASSERT_OK(tf_runtime_jvp(f.rt, g_cpu, y, x, t, &jt));
    expect_exact(jt, TF_F64, (double[]){0, 0, 0, 0, 0}, 5);
    tf_eager_release(jt);
    /* backward through sign alone: x is reached, its derivative is zero */
    TF_ASSERT_OK(tf_eager_backward(l, g_cpu));
    tf_tensor *slot = NULL;
    TF_ASSERT_OK(tf_eager_grad(x, &slot));
    assert_non_null(slot);
    double v[5];
    read_values(slot, v, 5);
    for (int i = 0; i < 5; i++)
        assert_true(v[i] == 0);
    tf_tensor_release(slot);
    tf_eager_release(t);
    tf_eager_release(l);
    tf_eager_release(y);
    tf_eager_release(x);
    tft_env_end(&f);
}

/* ===================================================================== */
/* Binary ops                                                             */
/* ===================================================================== */

typedef tf_status (*binary_fn)(tf_session *, tf_eager *, tf_eager *, tf_eager **);

typedef struct binary_case {
    const char *name;
    binary_fn fn;
    double xlo, xhi, ylo, yhi;
} binary_case;

static const binary_case k_binary[] = {
    {"add", tf_session_add, -2, 2, -2, 2},         {"sub", tf_session_sub, -2, 2, -2, 2},
    {"mul", tf_session_mul, -2, 2, -2, 2},         {"div", tf_session_div, -2, 2, 0.5, 2},
    {"pow", tf_session_pow, 0.5, 2, -2, 2},        {"maximum", tf_session_maximum, -2, 2, -2, 2},
    {"minimum", tf_session_minimum, -2, 2, -2, 2}, {"rem", tf_session_rem, -3, 3, 0.6, 1.4},
};
#define N_BINARY (sizeof k_binary / sizeof k_binary[0])

static tf_status call_binary(tf_session *s, tf_eager *const *xs, size_t n, void *user,
                             tf_eager **out)
{
    (void)n;
    return ((const binary_case *)user)->fn(s, xs[0], xs[1], out);
}

static void test_binary_gradcheck(void **state)
{
    (void)state;
    unsigned seed = 7;
    for (size_t k = 0; k < N_BINARY; k++) {
        const binary_case *c = &k_binary[k];
        for (size_t i = 0; i < N_BINARY_SPECS; i++) {
            tf_tensor *in[2] = {gc_random_view(&k_binary_specs[i][0], c->xlo, c->xhi, &seed),
                                gc_random_view(&k_binary_specs[i][1], c->ylo, c->yhi, &seed)};
            char what[64];
            snprintf(what, sizeof what, "%s, shape pair %zu", c->name, i);
            gc_check(what, g_cpu, call_binary, (void *)c, in, 2, NULL);
            tf_tensor_release(in[0]);
            tf_tensor_release(in[1]);
        }
    }
}

/* The same input as both operands (x*x, x/x, pow(x, x), ...). */
static tf_status call_binary_self(tf_session *s, tf_eager *const *xs, size_t n, void *user,
                                  tf_eager **out)
{
    (void)n;
    return ((const binary_case *)user)->fn(s, xs[0], xs[0], out);
}

static void test_binary_shared_operand(void **state)
{
    (void)state;
    unsigned seed = 3;
    static const gc_spec sp = {2, {3, 2}, GC_PLAIN};
    for (size_t k = 0; k < N_BINARY; k++) {
        const binary_case *c = &k_binary[k];
        if (!strcmp(c->name, "maximum") || !strcmp(c->name, "minimum") || !strcmp(c->name, "rem"))
            continue; /* ties or kinks everywhere: checked by hand below */
        tf_tensor *x = gc_random_view(&sp, 0.5, 2, &seed);
        gc_check(c->name, g_cpu, call_binary_self, (void *)c, &x, 1, NULL);
        tf_tensor_release(x);
    }
}

static tf_status call_binary_grad(tf_session *s, tf_eager *const *xs, size_t n, void *user,
                                  tf_eager **out)
{
    (void)n;
    tf_runtime *rt = tf_session_runtime(s);
    tf_scope sc; /* constants on the finite-difference side: see call_unary_grad */
    tf_status st = tf_scope_begin_capture_trace(rt, &sc);
    if (st)
        return st;
    tf_eager *y = NULL, *l = NULL, *gx = NULL, *gy = NULL;
    st = ((const binary_case *)user)->fn(s, xs[0], xs[1], &y);
    if (!st)
        st = tf_session_reduce_sum(s, y, NULL, 0, &l);
    if (!st)
        st = tf_runtime_grad(rt, tf_session_engine(s), l, xs[0], &gx);
    if (!st)
        st = tf_runtime_grad(rt, tf_session_engine(s), l, xs[1], &gy);
    /* both first derivatives in one output: their second derivatives all show */
    tf_eager *a = NULL, *b = NULL;
    if (!st)
        st = tf_session_reduce_sum_squares(s, gx, NULL, 0, &a);
    if (!st)
        st = tf_session_reduce_sum_squares(s, gy, NULL, 0, &b);
    if (!st)
        st = tf_session_add(s, a, b, out);
    tf_scope_end(&sc);
    tf_eager_release(a);
    tf_eager_release(b);
    tf_eager_release(gx);
    tf_eager_release(gy);
    tf_eager_release(l);
    tf_eager_release(y);
    return st;
}

static void test_binary_second_order(void **state)
{
    (void)state;
    unsigned seed = 9;
    static const gc_spec sx = {2, {2, 3}, GC_PLAIN}, sy = {1, {3}, GC_PLAIN};
    gc_options o = {1e-5, 1e-5, 2, 0, 0};
    for (size_t k = 0; k < N_BINARY; k++) {
        const binary_case *c = &k_binary[k];
        tf_tensor *in[2] = {gc_random_view(&sx, c->xlo, c->xhi, &seed),
                            gc_random_view(&sy, c->ylo, c->yhi, &seed)};
        char what[64];
        snprintf(what, sizeof what, "second order of %s", c->name);
        gc_check(what, g_cpu, call_binary_grad, (void *)c, in, 2, &o);
        tf_tensor_release(in[0]);
        tf_tensor_release(in[1]);
    }
}

static void test_binary_values(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    const int64_t s2[] = {2, 3}, s1[] = {3};
    /* [2,3] + [3]: the vector is added to every row (x is column-major) */
    tf_eager *x = tft_f64(f.rt, 0, 2, s2, (double[]){1, 2, 3, 4, 5, 6}, 6);
    tf_eager *v = tft_f64(f.rt, 0, 1, s1, (double[]){10, 20, 30}, 3), *y = NULL;
    TF_ASSERT_OK(tf_session_add(f.s, x, v, &y));
    tft_expect_shape(y, 2, s2);
    expect_exact(y, TF_F64, (double[]){11, 12, 23, 24, 35, 36}, 6);
    tf_eager_release(y);
    /* [2,1] * [1,3]: an outer product */
    const int64_t c21[] = {2, 1}, r13[] = {1, 3};
    tf_eager *a = tft_f64(f.rt, 0, 2, c21, (double[]){1, 2}, 2);
    tf_eager *b = tft_f64(f.rt, 0, 2, r13, (double[]){3, 4, 5}, 3);
    TF_ASSERT_OK(tf_session_mul(f.s, a, b, &y));
    tft_expect_shape(y, 2, s2);
    expect_exact(y, TF_F64, (double[]){3, 6, 4, 8, 5, 10}, 6);
    tf_eager_release(y);
    tf_eager_release(a);
    tf_eager_release(b);

    const int64_t s6[] = {6};
    a = tft_f64(f.rt, 0, 1, s6, (double[]){7, -7, 7, -7, 5.5, 1}, 6);
    b = tft_f64(f.rt, 0, 1, s6, (double[]){3, 3, -3, -3, 2, 0}, 6);
    TF_ASSERT_OK(tf_session_rem(f.s, a, b, &y)); /* fmod: the dividend's sign */
    expect_exact(y, TF_F64, (double[]){1, -1, 1, -1, 1.5, fmod(1, 0)}, 6);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_div(f.s, a, b, &y));
    expect_exact(y, TF_F64, (double[]){7.0 / 3, -7.0 / 3, -7.0 / 3, 7.0 / 3, 2.75, INFINITY}, 6);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_pow(f.s, a, b, &y));
    expect_exact(y, TF_F64,
                 (double[]){pow(7, 3), pow(-7, 3), pow(7, -3), pow(-7, -3), pow(5.5, 2), 1}, 6);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_sub(f.s, a, b, &y));
    expect_exact(y, TF_F64, (double[]){4, -10, 10, -4, 3.5, 1}, 6);
    tf_eager_release(y);
    tf_eager_release(a);
    tf_eager_release(b);

    /* maximum/minimum propagate NaN */
    const int64_t s3[] = {3};
    a = tft_f64(f.rt, 0, 1, s3, (double[]){NAN, 1, -2}, 3);
    b = tft_f64(f.rt, 0, 1, s3, (double[]){0, NAN, 5}, 3);
    TF_ASSERT_OK(tf_session_maximum(f.s, a, b, &y));
    expect_exact(y, TF_F64, (double[]){NAN, NAN, 5}, 3);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_minimum(f.s, a, b, &y));
    expect_exact(y, TF_F64, (double[]){NAN, NAN, -2}, 3);
    tf_eager_release(y);
    tf_eager_release(a);
    tf_eager_release(b);
    tf_eager_release(v);
    tf_eager_release(x);
    tft_env_end(&f);
}

/* maximum/minimum split the gradient evenly on ties, in both modes. */
static void test_extremum_ties(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    const int64_t sh[] = {4};
    binary_fn fns[2] = {tf_session_maximum, tf_session_minimum};
    /* x wins max at index 1, y wins max at index 3, ties at 0 and 2 */
    static const double gx_max[] = {0.5, 1, 0.5, 0}, gx_min[] = {0.5, 0, 0.5, 1};
    for (int k = 0; k < 2; k++) {
        tf_eager *x = tft_f64(f.rt, 1, 1, sh, (double[]){1, 2, 3, -1}, 4);
        tf_eager *y = tft_f64(f.rt, 1, 1, sh, (double[]){1, 0, 3, 4}, 4), *z = NULL;
        TF_ASSERT_OK(fns[k](f.s, x, y, &z));
        tf_eager *l = sum_all(f.s, z);
        tf_eager *gx = tft_grad(f.rt, l, x), *gy = tft_grad(f.rt, l, y);
        const double *wx = k ? gx_min : gx_max;
        double wy[4];
        for (int i = 0; i < 4; i++)
            wy[i] = 1 - wx[i];
        expect_exact(gx, TF_F64, wx, 4);
        expect_exact(gy, TF_F64, wy, 4);
        /* forward mode: d z = m dx + (1 - m) dy */
        tf_eager *tx = tft_f64(f.rt, 0, 1, sh, (double[]){2, 4, 6, 8}, 4), *jx = NULL, *jy = NULL;
        TF_ASSERT_OK(tf_runtime_jvp(f.rt, g_cpu, z, x, tx, &jx));
        TF_ASSERT_OK(tf_runtime_jvp(f.rt, g_cpu, z, y, tx, &jy));
        double want_x[4], want_y[4];
        for (int i = 0; i < 4; i++) {
            want_x[i] = wx[i] * 2 * (i + 1);
            want_y[i] = wy[i] * 2 * (i + 1);
        }
        expect_exact(jx, TF_F64, want_x, 4);
        expect_exact(jy, TF_F64, want_y, 4);
        /* backward agrees and accumulates into both variables */
        TF_ASSERT_OK(tf_eager_backward(l, g_cpu));
        tf_tensor *sx = NULL, *sy = NULL;
        TF_ASSERT_OK(tf_eager_grad(x, &sx));
        TF_ASSERT_OK(tf_eager_grad(y, &sy));
        double vx[4], vy[4];
        read_values(sx, vx, 4);
        read_values(sy, vy, 4);
        for (int i = 0; i < 4; i++)
            assert_true(vx[i] == wx[i] && vy[i] == wy[i]);
        tf_tensor_release(sx);
        tf_tensor_release(sy);
        tf_eager_release(jx);
        tf_eager_release(jy);
        tf_eager_release(tx);
        tf_eager_release(gx);
        tf_eager_release(gy);
        tf_eager_release(l);
        tf_eager_release(z);
        tf_eager_release(x);
        tf_eager_release(y);
    }
    /* maximum(x, x): each side gets half; the total is exactly one */
    tf_eager *x = tft_f64(f.rt, 1, 1, sh, (double[]){1, -2, 0, 5}, 4), *z = NULL;
    TF_ASSERT_OK(tf_session_maximum(f.s, x, x, &z));
    tf_eager *l = sum_all(f.s, z), *g = tft_grad(f.rt, l, x);
    expect_exact(g, TF_F64, (double[]){1, 1, 1, 1}, 4);
    tf_eager_release(g);
    tf_eager_release(l);
    tf_eager_release(z);
    /* a broadcast scalar tied with two elements collects both halves */
    tf_eager *c = tft_f64(f.rt, 1, 0, NULL, (double[]){1}, 1);
    TF_ASSERT_OK(tf_session_minimum(f.s, x, c, &z)); /* ties at x = 1 only */
    l = sum_all(f.s, z);
    g = tft_grad(f.rt, l, c);
    expect_exact(g, TF_F64, (double[]){0.5 + 1}, 1); /* half the tie at x = 1, all of x = 5 */
    tf_eager_release(g);
    g = tft_grad(f.rt, l, x);
    expect_exact(g, TF_F64, (double[]){0.5, 1, 1, 0}, 4);
    tf_eager_release(g);
    tf_eager_release(l);
    tf_eager_release(z);
    tf_eager_release(c);
    tf_eager_release(x);
    tft_env_end(&f);
}

/* pow's derivatives where the textbook formulas give NaN. */
static void test_pow_special_points(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    const int64_t sh[] = {6};
    /* (x, y): (0,2) (0,0) (2,0) (0,1) (0,3) (3,2) */
    tf_eager *x = tft_f64(f.rt, 1, 1, sh, (double[]){0, 0, 2, 0, 0, 3}, 6);
    tf_eager *y = tft_f64(f.rt, 1, 1, sh, (double[]){2, 0, 0, 1, 3, 2}, 6), *z = NULL;
    TF_ASSERT_OK(tf_session_pow(f.s, x, y, &z));
    expect_exact(z, TF_F64, (double[]){0, 1, 1, 0, 0, 9}, 6);
    tf_eager *l = sum_all(f.s, z), *gx = tft_grad(f.rt, l, x), *gy = tft_grad(f.rt, l, y);
    /* d/dx = y x^(y-1), taken as 0 where y == 0 */
    expect_exact(gx, TF_F64, (double[]){0, 0, 0, 1, 0, 6}, 6);
    /* d/dy = x^y log x, taken as 0 where x == 0; log within libmvec's 4 ulp of libm's */
    tft_expect_near(gy, (double[]){0, 0, log(2.0), 0, 0, 9 * log(3.0)}, 6, 8 * DBL_EPSILON);
    /* the forward rule agrees */
    tf_eager *t = tft_f64(f.rt, 0, 1, sh, (double[]){1, 1, 1, 1, 1, 1}, 6), *jx = NULL, *jy = NULL;
    TF_ASSERT_OK(tf_runtime_jvp(f.rt, g_cpu, z, x, t, &jx));
    TF_ASSERT_OK(tf_runtime_jvp(f.rt, g_cpu, z, y, t, &jy));
    expect_exact(jx, TF_F64, (double[]){0, 0, 0, 1, 0, 6}, 6);
    tft_expect_near(jy, (double[]){0, 0, log(2.0), 0, 0, 9 * log(3.0)}, 6, 8 * DBL_EPSILON);
    tf_eager_release(jx);
    tf_eager_release(jy);
    tf_eager_release(t);
    tf_eager_release(gx);
    tf_eager_release(gy);
    tf_eager_release(l);
    tf_eager_release(z);
    tf_eager_release(x);
    tf_eager_release(y);
    tft_env_end(&f);
}

/* ===================================================================== */
/* compare, select, clamp                                                 */
/* ===================================================================== */

static void test_compare_values(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    const int64_t s2[] = {2, 2};
    tf_eager *x = tft_f64(f.rt, 0, 2, s2, (double[]){1, 2, 3, NAN}, 4);
    tf_eager *c = tft_f64(f.rt, 0, 0, NULL, (double[]){2}, 1), *y = NULL;
    static const double want[TF_COMPARE_COUNT_][4] = {
        {0, 1, 0, 0}, /* eq */
        {1, 0, 1, 1}, /* ne: NaN is unequal to everything */
        {1, 0, 0, 0}, /* lt */
        {1, 1, 0, 0}, /* le */
        {0, 0, 1, 0}, /* gt */
        {0, 1, 1, 0}, /* ge */
    };
    for (int d = 0; d < TF_COMPARE_COUNT_; d++) {
        TF_ASSERT_OK(tf_session_compare(f.s, x, c, (tf_compare_op)d, &y));
        tft_expect_shape(y, 2, s2);
        expect_exact(y, TF_BOOL, want[d], 4);
        tf_eager_release(y);
    }
    /* broadcasting both ways and integers */
    const int64_t c21[] = {2, 1}, r13[] = {1, 3}, s23[] = {2, 3};
    tf_eager *a = tft_constant(f.rt, TF_I32, 2, c21, (int32_t[]){1, 3}, 2);
    tf_eager *b = tft_constant(f.rt, TF_I32, 2, r13, (int32_t[]){0, 1, 2}, 3);
    TF_ASSERT_OK(tf_session_compare(f.s, a, b, TF_COMPARE_GT, &y));
    tft_expect_shape(y, 2, s23);
    expect_exact(y, TF_BOOL, (double[]){1, 1, 0, 1, 0, 1}, 6);
    tf_eager_release(y);
    tf_eager_release(a);
    tf_eager_release(b);
    tf_eager_release(c);
    tf_eager_release(x);
    tft_env_end(&f);
}

/*
 * compare has no derivative. It is a recorded op, so by runtime.h an output
 * reached only through it still depends on wrt "through recorded ops": wrt
 * is active, and the derivative is an exact zero (not NULL, not an error).
 */
static void test_compare_zero_derivative(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    const int64_t sh[] = {3};
    tf_eager *x = tft_f64(f.rt, 1, 1, sh, (double[]){-1, 0.5, 2}, 3);
    tf_eager *c = tft_f64(f.rt, 0, 0, NULL, (double[]){0}, 1), *m = NULL;
    TF_ASSERT_OK(tf_session_compare(f.s, x, c, TF_COMPARE_GT, &m));
    assert_true(tf_eager_tracks_grad(m));
    tf_eager *cot = NULL, *r = NULL;
    TF_ASSERT_OK(tf_session_full(f.s, TF_BOOL, 1, sh, 1, &cot));
    TF_ASSERT_OK(tf_runtime_vjp_optional(f.rt, g_cpu, m, x, cot, &r));
    tft_expect_shape(r, 1, sh);
    expect_exact(r, TF_F64, (double[]){0, 0, 0}, 3);
    tf_eager_release(r);
    r = NULL;
    TF_ASSERT_OK(tf_runtime_vjp(f.rt, g_cpu, m, x, cot, &r));
    expect_exact(r, TF_F64, (double[]){0, 0, 0}, 3);
    tf_eager_release(r);
    /* forward mode: a zero tangent of the output's dtype and shape */
    tf_eager *t = tft_f64(f.rt, 0, 1, sh, (double[]){1, 1, 1}, 3);
    r = NULL;
    TF_ASSERT_OK(tf_runtime_jvp_optional(f.rt, g_cpu, m, x, t, &r));
    tft_expect_shape(r, 1, sh);
    expect_exact(r, TF_BOOL, (double[]){0, 0, 0}, 3);
    tf_eager_release(r);
    /* relu-like x * (x > 0): the mask is a constant for differentiation */
    tf_eager *mf = NULL, *y = NULL;
    TF_ASSERT_OK(tf_session_cast(f.s, m, TF_F64, &mf));
    TF_ASSERT_OK(tf_session_mul(f.s, x, mf, &y));
    tf_eager *l = sum_all(f.s, y), *g = tft_grad(f.rt, l, x);
    expect_exact(g, TF_F64, (double[]){0, 1, 1}, 3);
    tf_eager_release(g);
    tf_eager_release(l);
    tf_eager_release(y);
    tf_eager_release(mf);
    tf_eager_release(t);
    tf_eager_release(cot);
    tf_eager_release(m);
    tf_eager_release(c);
    tf_eager_release(x);
    tft_env_end(&f);
}

/* x * (x > y) + y * (x <= y): a piecewise function made with compare. */
static tf_status call_compare_mask(tf_session *s, tf_eager *const *xs, size_t n, void *user,
                                   tf_eager **out)
{
    (void)n;
    (void)user;
    tf_eager *gt = NULL, *le = NULL, *fg = NULL, *fl = NULL, *a = NULL, *b = NULL;
    tf_status st = tf_session_compare(s, xs[0], xs[1], TF_COMPARE_GT, &gt);
    if (!st)
        st = tf_session_compare(s, xs[0], xs[1], TF_COMPARE_LE, &le);
    if (!st)
        st = tf_session_cast(s, gt, TF_F64, &fg);
    if (!st)
        st = tf_session_cast(s, le, TF_F64, &fl);
    if (!st)
        st = tf_session_mul(s, xs[0], fg, &a);
    if (!st)
        st = tf_session_mul(s, xs[1], fl, &b);
    if (!st)
        st = tf_session_add(s, a, b, out);
    tf_eager *all[] = {gt, le, fg, fl, a, b};
    for (size_t i = 0; i < 6; i++)
        tf_eager_release(all[i]);
    return st;
}

static void test_compare_gradcheck(void **state)
{
    (void)state;
    unsigned seed = 21;
    for (size_t i = 0; i < N_BINARY_SPECS; i++) {
        tf_tensor *in[2] = {gc_random_view(&k_binary_specs[i][0], -2, 2, &seed),
                            gc_random_view(&k_binary_specs[i][1], -2, 2, &seed)};
        char what[64];
        snprintf(what, sizeof what, "compare mask, shape pair %zu", i);
        gc_check(what, g_cpu, call_compare_mask, NULL, in, 2, NULL);
        tf_tensor_release(in[0]);
        tf_tensor_release(in[1]);
    }
}

/* select with a fixed bool predicate (user) broadcast against both operands. */
static tf_status call_select(tf_session *s, tf_eager *const *xs, size_t n, void *user,
                             tf_eager **out)
{
    (void)n;
    tf_eager *p = NULL;
    tf_status st = tf_session_constant_from_host(s, user, &p);
    if (!st)
        st = tf_session_select(s, p, xs[0], xs[1], out);
    tf_eager_release(p);
    return st;
}

static void test_select_gradcheck(void **state)
{
    (void)state;
    unsigned seed = 4;
    const int64_t s23[] = {2, 3}, s3[] = {3}, s21[] = {2, 1};
    tf_tensor *p23 = tft_host(TF_BOOL, 2, s23, (uint8_t[]){1, 0, 0, 1, 1, 0}, 6);
    tf_tensor *p3 = tft_host(TF_BOOL, 1, s3, (uint8_t[]){0, 1, 1}, 3);
    tf_tensor *p21 = tft_host(TF_BOOL, 2, s21, (uint8_t[]){1, 0}, 2);
    struct {
        tf_tensor *pred;
        gc_spec a, b;
    } cases[] = {
        {p23, {2, {2, 3}, GC_PLAIN}, {2, {2, 3}, GC_PLAIN}},
        {p23, {1, {3}, GC_PLAIN}, {0, {0}, GC_PLAIN}},
        {p3, {2, {2, 1}, GC_PLAIN}, {2, {2, 3}, GC_TRANSPOSED}},
        {p21, {2, {1, 3}, GC_PLAIN}, {1, {3}, GC_REVERSED}},
        {p23, {2, {2, 3}, GC_SLICED}, {2, {2, 1}, GC_PLAIN}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tf_tensor *in[2] = {gc_random_view(&cases[i].a, -2, 2, &seed),
                            gc_random_view(&cases[i].b, -2, 2, &seed)};
        char what[64];
        snprintf(what, sizeof what, "select, case %zu", i);
        gc_check(what, g_cpu, call_select, cases[i].pred, in, 2, NULL);
        tf_tensor_release(in[0]);
        tf_tensor_release(in[1]);
    }
    tf_tensor_release(p23);
    tf_tensor_release(p3);
    tf_tensor_release(p21);
}

/* select routes the cotangent to the chosen side; broadcast operands collect sums. */
static void test_select_routing(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    const int64_t s23[] = {2, 3};
    tf_eager *p = tft_constant(f.rt, TF_BOOL, 2, s23, (uint8_t[]){1, 0, 0, 1, 1, 1}, 6);
    tf_eager *a = tft_f64(f.rt, 1, 2, s23, (double[]){1, 2, 3, 4, 5, 6}, 6);
    tf_eager *b = tft_f64(f.rt, 1, 0, NULL, (double[]){-1}, 1), *z = NULL;
    TF_ASSERT_OK(tf_session_select(f.s, p, a, b, &z));
    expect_exact(z, TF_F64, (double[]){1, -1, -1, 4, 5, 6}, 6);
    tf_eager *w = tft_f64(f.rt, 0, 2, s23, (double[]){1, 2, 3, 4, 5, 6}, 6), *zw = NULL;
    TF_ASSERT_OK(tf_session_mul(f.s, z, w, &zw));
    tf_eager *l = sum_all(f.s, zw), *ga = tft_grad(f.rt, l, a), *gb = tft_grad(f.rt, l, b);
    expect_exact(ga, TF_F64, (double[]){1, 0, 0, 4, 5, 6}, 6);
    expect_exact(gb, TF_F64, (double[]){2 + 3}, 1);
    /* forward: a tangent on b moves only the unselected places */
    tf_eager *tb = tft_f64(f.rt, 0, 0, NULL, (double[]){10}, 1), *j = NULL;
    TF_ASSERT_OK(tf_runtime_jvp(f.rt, g_cpu, z, b, tb, &j));
    tft_expect_shape(j, 2, s23);
    expect_exact(j, TF_F64, (double[]){0, 10, 10, 0, 0, 0}, 6);
    tf_eager_release(j);
    /* the predicate feeds a recorded op, so (runtime.h) it is an active wrt
       with a zero derivative, like compare's operands */
    tf_eager *r = NULL;
    TF_ASSERT_OK(tf_runtime_grad(f.rt, g_cpu, l, p, &r));
    tft_expect_shape(r, 2, s23);
    expect_exact(r, TF_BOOL, (double[]){0, 0, 0, 0, 0, 0}, 6);
    tf_eager_release(r);
    tf_eager_release(tb);
    tf_eager_release(ga);
    tf_eager_release(gb);
    tf_eager_release(l);
    tf_eager_release(zw);
    tf_eager_release(w);
    tf_eager_release(z);
    tf_eager_release(a);
    tf_eager_release(b);
    tf_eager_release(p);
    tft_env_end(&f);
}

static tf_status call_clamp(tf_session *s, tf_eager *const *xs, size_t n, void *user,
                            tf_eager **out)
{
    (void)n;
    (void)user;
    return tf_session_clamp(s, xs[0], xs[1], xs[2], out);
}

static void test_clamp_gradcheck(void **state)
{
    (void)state;
    unsigned seed = 8;
    static const gc_spec cases[][3] = {
        {{2, {2, 3}, GC_PLAIN}, {0, {0}, GC_PLAIN}, {0, {0}, GC_PLAIN}},
        {{2, {2, 3}, GC_PLAIN}, {1, {3}, GC_PLAIN}, {2, {2, 1}, GC_PLAIN}},
        {{0, {0}, GC_PLAIN}, {1, {4}, GC_PLAIN}, {0, {0}, GC_PLAIN}},
        {{2, {2, 3}, GC_TRANSPOSED}, {2, {2, 3}, GC_REVERSED}, {1, {3}, GC_PLAIN}},
        {{3, {2, 2, 3}, GC_SLICED}, {1, {3}, GC_PLAIN}, {0, {0}, GC_PLAIN}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tf_tensor *in[3] = {gc_random_view(&cases[i][0], -2, 2, &seed),
                            gc_random_view(&cases[i][1], -1, -0.3, &seed),
                            gc_random_view(&cases[i][2], 0.3, 1, &seed)};
        char what[64];
        snprintf(what, sizeof what, "clamp, case %zu", i);
        gc_check(what, g_cpu, call_clamp, NULL, in, 3, NULL);
        for (int k = 0; k < 3; k++)
            tf_tensor_release(in[k]);
    }
    /* lo > hi everywhere: the result is hi, and so is the gradient's target */
    for (size_t i = 0; i < 2; i++) {
        tf_tensor *in[3] = {gc_random_view(&cases[i][0], -2, 2, &seed),
                            gc_random_view(&cases[i][1], 0.3, 1, &seed),
                            gc_random_view(&cases[i][2], -1, -0.3, &seed)};
        char what[64];
        snprintf(what, sizeof what, "clamp with lo > hi, case %zu", i);
        gc_check(what, g_cpu, call_clamp, NULL, in, 3, NULL);
        for (int k = 0; k < 3; k++)
            tf_tensor_release(in[k]);
    }
}

/* lo > hi (issue 19, item 9): min(max(x, lo), hi) is hi, as ops.h and NumPy's
   clip say, and the gradient goes to hi alone. */
static void test_clamp_lo_above_hi(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    const int64_t sh[] = {3};
    tf_eager *x = tft_f64(f.rt, 1, 1, sh, (double[]){1, 2, 3}, 3);
    tf_eager *lo = tft_f64(f.rt, 1, 0, NULL, (double[]){2.5}, 1);
    tf_eager *hi = tft_f64(f.rt, 1, 0, NULL, (double[]){1.5}, 1), *z = NULL;
    TF_ASSERT_OK(tf_session_clamp(f.s, x, lo, hi, &z));
    expect_exact(z, TF_F64, (double[]){1.5, 1.5, 1.5}, 3);
    tf_eager *l = sum_all(f.s, z);
    tf_eager *gx = tft_grad(f.rt, l, x), *gl = tft_grad(f.rt, l, lo), *gh = tft_grad(f.rt, l, hi);
    expect_exact(gx, TF_F64, (double[]){0, 0, 0}, 3);
    expect_exact(gl, TF_F64, (double[]){0}, 1);
    expect_exact(gh, TF_F64, (double[]){3}, 1);
    tf_eager *t = tft_f64(f.rt, 0, 0, NULL, (double[]){2}, 1), *j = NULL;
    TF_ASSERT_OK(tf_runtime_jvp(f.rt, g_cpu, z, hi, t, &j));
    expect_exact(j, TF_F64, (double[]){2, 2, 2}, 3);
    tf_eager *arr[] = {j, t, gx, gl, gh, l, z, x, lo, hi};
    for (size_t i = 0; i < sizeof arr / sizeof arr[0]; i++)
        tf_eager_release(arr[i]);
    tft_env_end(&f);
}

/* clamp routes the gradient to the active operand; ties go to x. */
static void test_clamp_routing(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    const int64_t sh[] = {5};
    tf_eager *x = tft_f64(f.rt, 1, 1, sh, (double[]){-3, -1, 0, 1, 3}, 5);
    tf_eager *lo = tft_f64(f.rt, 1, 0, NULL, (double[]){-1}, 1);
    tf_eager *hi = tft_f64(f.rt, 1, 0, NULL, (double[]){1}, 1), *z = NULL;
    TF_ASSERT_OK(tf_session_clamp(f.s, x, lo, hi, &z));
    expect_exact(z, TF_F64, (double[]){-1, -1, 0, 1, 1}, 5);
    tf_eager *l = sum_all(f.s, z);
    tf_eager *gx = tft_grad(f.rt, l, x), *gl = tft_grad(f.rt, l, lo), *gh = tft_grad(f.rt, l, hi);
    expect_exact(gx, TF_F64, (double[]){0, 1, 1, 1, 0}, 5); /* x = lo and x = hi are ties */
    expect_exact(gl, TF_F64, (double[]){1}, 1);
    expect_exact(gh, TF_F64, (double[]){1}, 1);
    tf_eager *t = tft_f64(f.rt, 0, 1, sh, (double[]){1, 2, 3, 4, 5}, 5), *j = NULL;
    TF_ASSERT_OK(tf_runtime_jvp(f.rt, g_cpu, z, x, t, &j));
    expect_exact(j, TF_F64, (double[]){0, 2, 3, 4, 0}, 5);
    tf_eager_release(j);
    tf_eager_release(t);
    tf_eager_release(gx);
    tf_eager_release(gl);
    tf_eager_release(gh);
    tf_eager_release(l);
    tf_eager_release(z);
    tf_eager_release(x);
    tf_eager_release(lo);
    tf_eager_release(hi);
    tft_env_end(&f);
}

/* ===================================================================== */
/* convert and cast                                                       */
/* ===================================================================== */

typedef struct conv_case {
    int checked;
    tf_dtype via;
} conv_case;

/* x -> via -> f64, squared in the middle dtype so the rule is not trivial. */
static tf_status call_convert(tf_session *s, tf_eager *const *xs, size_t n, void *user,
                              tf_eager **out)
{
    (void)n;
    const conv_case *c = user;
    tf_status (*fn)(tf_session *, tf_eager *, tf_dtype, tf_eager **) =
        c->checked ? tf_session_convert : tf_session_cast;
    tf_eager *a = NULL, *sq = NULL;
    tf_status st = fn(s, xs[0], c->via, &a);
    if (!st)
        st = tf_session_mul(s, a, a, &sq);
    if (!st)
        st = fn(s, sq, TF_F64, out);
    tf_eager_release(a);
    tf_eager_release(sq);
    return st;
}

static void test_convert_gradcheck(void **state)
{
    (void)state;
    unsigned seed = 13;
    static const gc_spec sp[] = {
        {0, {0}, GC_PLAIN}, {2, {2, 3}, GC_TRANSPOSED}, {1, {5}, GC_PLAIN}};
    for (int checked = 0; checked < 2; checked++) {
        for (size_t i = 0; i < 3; i++) {
            tf_tensor *x = gc_random_view(&sp[i], -2, 2, &seed);
            conv_case same = {checked, TF_F64}, narrow = {checked, TF_F32};
            gc_check(checked ? "convert f64" : "cast f64", g_cpu, call_convert, &same, &x, 1, NULL);
            /* through f32: rounding of ~1e-7 limits what differences can see */
            gc_options o = {1e-4, 1e-2, 1, 0, 0};
            gc_check(checked ? "convert via f32" : "cast via f32", g_cpu, call_convert, &narrow, &x,
                     1, &o);
            tf_tensor_release(x);
        }
    }
}

static void test_convert_derivatives(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    const int64_t sh[] = {3};
    tf_eager *x = tft_f64(f.rt, 1, 1, sh, (double[]){1.5, -2, 0.25}, 3), *y = NULL;
    TF_ASSERT_OK(tf_session_convert(f.s, x, TF_F32, &y));
    expect_exact(y, TF_F32, (double[]){1.5, -2, 0.25}, 3);
    assert_true(tf_eager_tracks_grad(y));
    tf_eager *y2 = NULL;
    TF_ASSERT_OK(tf_session_mul(f.s, y, y, &y2));
    tf_eager *l = sum_all(f.s, y2), *g = tft_grad(f.rt, l, x);
    /* the cotangent comes back in the input's dtype */
    expect_exact(g, TF_F64, (double[]){3, -4, 0.5}, 3);
    tf_eager_release(g);
    /* backward fills the f64 slot */
    TF_ASSERT_OK(tf_eager_backward(l, g_cpu));
    tf_tensor *slot = NULL;
    TF_ASSERT_OK(tf_eager_grad(x, &slot));
    assert_int_equal(tf_tensor_dtype(slot), TF_F64);
    double v[3];
    read_values(slot, v, 3);
    assert_true(v[0] == 3 && v[1] == -4 && v[2] == 0.5);
    tf_tensor_release(slot);
    /* forward mode: an f64 tangent becomes an f32 one */
    tf_eager *t = tft_f64(f.rt, 0, 1, sh, (double[]){1, 2, 3}, 3), *j = NULL;
    TF_ASSERT_OK(tf_runtime_jvp(f.rt, g_cpu, y, x, t, &j));
    expect_exact(j, TF_F32, (double[]){1, 2, 3}, 3);
    tf_eager_release(j);
    tf_eager_release(t);
    tf_eager_release(l);
    tf_eager_release(y2);
    tf_eager_release(y);

    /* float -> int -> float: values truncate, the derivative is zero */
    tf_eager *i = NULL, *back = NULL;
    TF_ASSERT_OK(tf_session_cast(f.s, x, TF_I32, &i));
    expect_exact(i, TF_I32, (double[]){1, -2, 0}, 3);
    TF_ASSERT_OK(tf_session_cast(f.s, i, TF_F64, &back));
    l = sum_all(f.s, back);
    g = NULL;
    TF_ASSERT_OK(tf_runtime_grad_optional(f.rt, g_cpu, l, x, &g));
    expect_exact(g, TF_F64, (double[]){0, 0, 0}, 3);
    tf_eager_release(g);
    tf_eager_release(l);
    tf_eager_release(back);
    tf_eager_release(i);
    tf_eager_release(x);
    tft_env_end(&f);
}

/* Integer data converted to float carries no derivative and tracks nothing. */
static void test_int_to_float_untracked(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    const int64_t sh[] = {3};
    tf_eager *i = tft_constant(f.rt, TF_I32, 1, sh, (int32_t[]){1, -2, 7}, 3), *c = NULL;
    TF_ASSERT_OK(tf_session_convert(f.s, i, TF_F64, &c));
    expect_exact(c, TF_F64, (double[]){1, -2, 7}, 3);
    assert_false(tf_eager_tracks_grad(c));
    tf_eager *x = tft_f64(f.rt, 1, 1, sh, (double[]){2, 3, 4}, 3), *y = NULL;
    TF_ASSERT_OK(tf_session_mul(f.s, x, c, &y));
    tf_eager *l = sum_all(f.s, y), *g = tft_grad(f.rt, l, x);
    expect_exact(g, TF_F64, (double[]){1, -2, 7}, 3);
    tf_eager_release(g);
    /* the integer input was never recorded: it is not a differentiation target */
    g = (tf_eager *)0x1;
    TF_ASSERT_OK(tf_runtime_grad_optional(f.rt, g_cpu, l, i, &g));
    assert_null(g);
    /* lossy casts: truncation toward zero, saturation; checked convert refuses */
    const int64_t s4[] = {4};
    tf_eager *big = tft_f64(f.rt, 0, 1, s4, (double[]){2.9, -2.9, 1e20, NAN}, 4), *r = NULL;
    TF_ASSERT_OK(tf_session_cast(f.s, big, TF_I32, &r));
    expect_exact(r, TF_I32, (double[]){2, -2, INT32_MAX, 0}, 4);
    tf_eager_release(r);
    r = (tf_eager *)0x1;
    TF_ASSERT_STATUS(tf_session_convert(f.s, big, TF_I32, &r), TF_ERR_OUT_OF_RANGE);
    assert_ptr_equal(r, (tf_eager *)0x1);
    tf_eager_release(big);
    tf_eager_release(l);
    tf_eager_release(y);
    tf_eager_release(x);
    tf_eager_release(c);
    tf_eager_release(i);
    tft_env_end(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unary_gradcheck),     cmocka_unit_test(test_unary_second_order),
        cmocka_unit_test(test_unary_values),        cmocka_unit_test(test_unary_accuracy_edges),
        cmocka_unit_test(test_unary_integers),      cmocka_unit_test(test_abs_sign_derivatives),
        cmocka_unit_test(test_binary_gradcheck),    cmocka_unit_test(test_binary_shared_operand),
        cmocka_unit_test(test_binary_second_order), cmocka_unit_test(test_binary_values),
        cmocka_unit_test(test_extremum_ties),       cmocka_unit_test(test_pow_special_points),
        cmocka_unit_test(test_compare_values),      cmocka_unit_test(test_compare_zero_derivative),
        cmocka_unit_test(test_compare_gradcheck),   cmocka_unit_test(test_select_gradcheck),
        cmocka_unit_test(test_select_routing),      cmocka_unit_test(test_clamp_gradcheck),
        cmocka_unit_test(test_clamp_routing),
        cmocka_unit_test(test_clamp_lo_above_hi),       cmocka_unit_test(test_convert_gradcheck),
        cmocka_unit_test(test_convert_derivatives), cmocka_unit_test(test_int_to_float_untracked),
    };
    return cmocka_run_group_tests(tests, tft_cpu_setup, tft_cpu_teardown);
}
