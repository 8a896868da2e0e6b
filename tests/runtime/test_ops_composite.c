/*
 * test_ops_composite.c - the composite ops of the eager runtime: softmax,
 * log_softmax, silu, gelu, softplus, layer_norm and rms_norm.
 *
 * Each is gradient-checked (reverse and forward mode against central
 * differences in f64) on several shapes and axes, rank 0 where it is
 * meaningful, and non-contiguous inputs; layer_norm and rms_norm also with
 * respect to their weight and bias. Second derivatives of softmax,
 * log_softmax and layer_norm are checked through tf_runtime_grad inside the
 * function. Forward values are compared with direct formulas, including
 * magnitudes where the naive formulas overflow or cancel, and every error
 * path is checked not to write *out.
 */
#include <math.h>

#include <tenferro/ops.h>

#include "tf_eager_test.h"
#include "tf_gradcheck.h"

/* ===================================================================== */
/* Helpers                                                                */
/* ===================================================================== */

/* ===================================================================== */
/* Softmax family                                                         */
/* ===================================================================== */

typedef tf_status (*axis_fn)(tf_session *, tf_eager *, int, tf_eager **);

typedef struct axis_call {
    axis_fn fn;
    int axis;
} axis_call;

static tf_status call_axis(tf_session *s, tf_eager *const *xs, size_t n, void *user, tf_eager **out)
{
    (void)n;
    const axis_call *c = user;
    return c->fn(s, xs[0], c->axis, out);
}

typedef struct axis_case {
    gc_spec in;
    int axis;
} axis_case;

static const axis_case k_axis_cases[] = {
    {{1, {5}, GC_PLAIN}, 0},         {{1, {4}, GC_PLAIN}, -1},      {{2, {3, 4}, GC_PLAIN}, 0},
    {{2, {3, 4}, GC_PLAIN}, 1},      {{3, {2, 3, 4}, GC_PLAIN}, 1}, {{3, {2, 3, 2}, GC_PLAIN}, -1},
    {{2, {3, 4}, GC_TRANSPOSED}, 1}, {{2, {4, 3}, GC_REVERSED}, 0}, {{2, {2, 3}, GC_SLICED}, -2},
    {{2, {1, 3}, GC_PLAIN}, 0}, /* a group of one: softmax 1, log_softmax 0 */
};
#define N_AXIS_CASES (sizeof k_axis_cases / sizeof k_axis_cases[0])

static void test_softmax_gradcheck(void **state)
{
    (void)state;
    static const axis_fn fns[2] = {tf_session_softmax, tf_session_log_softmax};
    unsigned seed = 31;
    for (size_t k = 0; k < 2; k++)
        for (size_t i = 0; i < N_AXIS_CASES; i++) {
            axis_call c = {fns[k], k_axis_cases[i].axis};
            tf_tensor *x = gc_random_view(&k_axis_cases[i].in, -3, 3, &seed);
            char what[64];
            snprintf(what, sizeof what, "%s, case %zu", k ? "log_softmax" : "softmax", i);
            gc_check(what, g_cpu, call_axis, &c, &x, 1, NULL);
            tf_tensor_release(x);
        }
}

/* A deterministic constant of t's shape (the same on every call). */
static tf_status fixed_like(tf_session *s, const tf_tensor *t, unsigned seed, tf_eager **out)
{
    tf_tensor *h = gc_random(tf_tensor_rank(t), tf_tensor_shape(t), -1, 1, &seed);
    tf_status st = tf_session_constant_from_host(s, h, out);
    tf_tensor_release(h);
    return st;
}

/* <grad_x(sum(f(x) * W)), C>: its derivatives are second derivatives of f. */
static tf_status grad_contracted(tf_session *s, tf_eager *x, tf_eager *y, tf_eager **out)
{
    tf_runtime *rt = tf_session_runtime(s);
    tf_eager *w = NULL, *wy = NULL, *l = NULL, *g = NULL, *c = NULL, *gc = NULL;
    tf_status st = fixed_like(s, tf_eager_value(y), 41, &w);
    if (!st)
        st = tf_session_mul(s, y, w, &wy);
    if (!st)
        st = tf_session_reduce_sum(s, wy, NULL, 0, &l);
    if (!st)
        st = tf_runtime_grad(rt, tf_session_engine(s), l, x, &g);
    if (!st)
        st = fixed_like(s, tf_eager_value(x), 42, &c);
    if (!st)
        st = tf_session_mul(s, g, c, &gc);
    if (!st)
        st = tf_session_reduce_sum(s, gc, NULL, 0, out);
    tf_eager *all[] = {w, wy, l, g, c, gc};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tf_eager_release(all[i]);
    return st;
}

static tf_status call_axis_grad(tf_session *s, tf_eager *const *xs, size_t n, void *user,
                                tf_eager **out)
{
    tf_scope sc;
    tf_status st = tf_scope_begin_capture_trace(tf_session_runtime(s), &sc);
    if (st)
        return st;
    tf_eager *y = NULL;
    st = call_axis(s, xs, n, user, &y);
    if (!st)
        st = grad_contracted(s, xs[0], y, out);
    tf_scope_end(&sc);
    tf_eager_release(y);
    return st;
}

static void test_softmax_second_order(void **state)
{
    (void)state;
    static const axis_fn fns[2] = {tf_session_softmax, tf_session_log_softmax};
    static const size_t picks[] = {0, 3, 4, 6};
    unsigned seed = 32;
    gc_options o = {1e-5, 1e-5, 3, 0, 0};
    for (size_t k = 0; k < 2; k++)
        for (size_t i = 0; i < sizeof picks / sizeof picks[0]; i++) {
            const axis_case *ac = &k_axis_cases[picks[i]];
            axis_call c = {fns[k], ac->axis};
            tf_tensor *x = gc_random_view(&ac->in, -2, 2, &seed);
            char what[64];
            snprintf(what, sizeof what, "grad of %s, case %zu", k ? "log_softmax" : "softmax",
                     picks[i]);
            gc_check(what, g_cpu, call_axis_grad, &c, &x, 1, &o);
            tf_tensor_release(x);
        }
}

/* Values, including magnitudes at which exp overflows. */
static void test_softmax_values(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    static const int64_t s3[1] = {3}, s22[2] = {2, 2};
    static const double x[3] = {1, 2, 3};
    double z = exp(1) + exp(2) + exp(3);
    double sm[3] = {exp(1) / z, exp(2) / z, exp(3) / z};
    double lsm[3] = {1 - log(z), 2 - log(z), 3 - log(z)};
    tf_eager *xe = tft_eager(f.rt, TF_F64, 0, 1, s3, x, 3), *y = NULL;
    TF_ASSERT_OK(tf_session_softmax(f.s, xe, 0, &y));
    tft_expect_near(y, sm, 3, 1e-15);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_log_softmax(f.s, xe, -1, &y));
    tft_expect_near(y, lsm, 3, 4e-15); /* the reference's own 3 - log(z) cancels a little */
    tf_eager_release(y);
    tf_eager_release(xe);
    /* columns (1000, 1001) and (-1000, 0), along axis 0 */
    static const double big[4] = {1000, 1001, -1000, 0};
    double e = exp(1.0);
    double want_sm[4] = {1 / (1 + e), e / (1 + e), exp(-1000.0), 1.0};
    double want_lsm[4] = {-log1p(e), -log1p(1 / e), -1000, 0};
    xe = tft_eager(f.rt, TF_F64, 0, 2, s22, big, 4);
    TF_ASSERT_OK(tf_session_softmax(f.s, xe, 0, &y));
    /* to a few ulps: exp(x - logsumexp(x)) would be off by ~1e-13 here */
    tft_expect_near(y, want_sm, 4, 1e-15);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_log_softmax(f.s, xe, 0, &y));
    tft_expect_near(y, want_lsm, 4, 1e-15);
    tf_eager_release(y);
    tf_eager_release(xe);
    /* f32 */
    static const float xf[3] = {1, 2, 3};
    xe = tft_eager(f.rt, TF_F32, 0, 1, s3, xf, 3);
    TF_ASSERT_OK(tf_session_softmax(f.s, xe, 0, &y));
    float got[3];
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(y), TF_F32, got, 3));
    for (int i = 0; i < 3; i++)
        assert_true(fabs(got[i] - sm[i]) < 1e-6);
    tf_eager_release(y);
    tf_eager_release(xe);
    tft_env_end(&f);
}

/* ===================================================================== */
/* Activations                                                            */
/* ===================================================================== */

typedef tf_status (*unary_fn)(tf_session *, tf_eager *, tf_eager **);

static tf_status call_unary(tf_session *s, tf_eager *const *xs, size_t n, void *user,
                            tf_eager **out)
{
    (void)n;
    return (*(const unary_fn *)user)(s, xs[0], out);
}

static const gc_spec k_unary_specs[] = {
    {0, {0}, GC_PLAIN},       {1, {7}, GC_PLAIN},         {2, {3, 4}, GC_PLAIN},
    {3, {2, 3, 2}, GC_PLAIN}, {2, {3, 4}, GC_TRANSPOSED}, {2, {4, 3}, GC_REVERSED},
    {2, {2, 3}, GC_SLICED},   {2, {0, 3}, GC_PLAIN},
};

static void test_activation_gradcheck(void **state)
{
    (void)state;
    static const unary_fn fns[3] = {tf_session_silu, tf_session_gelu, tf_session_softplus};
    static const char *const names[3] = {"silu", "gelu", "softplus"};
    unsigned seed = 33;
    for (size_t k = 0; k < 3; k++)
        for (size_t i = 0; i < sizeof k_unary_specs / sizeof k_unary_specs[0]; i++) {
            tf_tensor *x = gc_random_view(&k_unary_specs[i], -4, 4, &seed);
            char what[64];
            snprintf(what, sizeof what, "%s, case %zu", names[k], i);
            gc_check(what, g_cpu, call_unary, (void *)&fns[k], &x, 1, NULL);
            tf_tensor_release(x);
        }
}

static double ref_softplus(double x)
{
    return fmax(x, 0) + log1p(exp(-fabs(x)));
}
static double ref_silu(double x)
{
    return x / (1 + exp(-x));
}
static double ref_gelu(double x)
{
    return 0.5 * x * erfc(-x / sqrt(2.0));
}

/* Values over a wide range; softplus must keep its tiny tail and not overflow. */
static void test_activation_values(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    static const double x[10] = {-800, -40, -5, -1, -1e-3, 0, 1e-3, 1, 5, 800};
    static const int64_t s10[1] = {10};
    tf_eager *xe = tft_eager(f.rt, TF_F64, 0, 1, s10, x, 10), *y = NULL;
    double want[10];
    for (int i = 0; i < 10; i++)
        want[i] = ref_softplus(x[i]);
    assert_true(want[1] > 4e-18); /* the tail a naive log(1 + exp(x)) loses */
    TF_ASSERT_OK(tf_session_softplus(f.s, xe, &y));
    tft_expect_near(y, want, 10, 1e-14);
    tf_eager_release(y);
    for (int i = 0; i < 10; i++)
        want[i] = x[i] < -700 ? -0.0 : ref_silu(x[i]);
    TF_ASSERT_OK(tf_session_silu(f.s, xe, &y));
    tft_expect_near(y, want, 10, 1e-14);
    tf_eager_release(y);
    /* gelu from 1 + erf cancels below about -6; compare where it is meaningful */
    static const double xg[6] = {-3, -1, -1e-3, 0, 1, 3};
    static const int64_t s6[1] = {6};
    tf_eager *xge = tft_eager(f.rt, TF_F64, 0, 1, s6, xg, 6);
    for (int i = 0; i < 6; i++)
        want[i] = ref_gelu(xg[i]);
    TF_ASSERT_OK(tf_session_gelu(f.s, xge, &y));
    tft_expect_near(y, want, 6, 1e-12);
    tf_eager_release(y);
    tf_eager_release(xge);
    /* softplus'(0) = sigmoid(0) = 1/2 exactly, through the tie of maximum */
    static const double zero = 0, half = 0.5;
    tf_eager *z = tft_eager(f.rt, TF_F64, 1, 0, NULL, &zero, 1), *g = NULL;
    TF_ASSERT_OK(tf_session_softplus(f.s, z, &y));
    TF_ASSERT_OK(tf_runtime_grad(f.rt, g_cpu, y, z, &g));
    tft_expect_near(g, &half, 1, 0);
    tf_eager_release(g);
    tf_eager_release(y);
    tf_eager_release(z);
    tf_eager_release(xe);
    tft_env_end(&f);
}

/* ===================================================================== */
/* Normalisation                                                          */
/* ===================================================================== */

typedef struct norm_call {
    int rms;
    size_t n_axes;
    int weight, bias; /* which of xs[1], xs[2] are given */
    double eps;
} norm_call;

static tf_status call_norm(tf_session *s, tf_eager *const *xs, size_t n, void *user, tf_eager **out)
{
    (void)n;
    const norm_call *c = user;
    tf_eager *w = c->weight ? xs[1] : NULL, *b = c->bias ? xs[1 + c->weight] : NULL;
    if (c->rms)
        return tf_session_rms_norm(s, xs[0], c->n_axes, w, c->eps, out);
    return tf_session_layer_norm(s, xs[0], c->n_axes, w, b, c->eps, out);
}

typedef struct norm_case {
    gc_spec in;
    size_t n_axes;
} norm_case;

static const norm_case k_norm_cases[] = {
    {{1, {5}, GC_PLAIN}, 1},        {{2, {3, 4}, GC_PLAIN}, 1},      {{2, {3, 4}, GC_PLAIN}, 2},
    {{3, {2, 3, 4}, GC_PLAIN}, 2},  {{2, {3, 4}, GC_TRANSPOSED}, 1}, {{2, {4, 3}, GC_REVERSED}, 1},
    {{3, {2, 2, 3}, GC_SLICED}, 1},
};
#define N_NORM_CASES (sizeof k_norm_cases / sizeof k_norm_cases[0])

/* layer_norm and rms_norm wrt x, weight and bias, every combination of the affine params. */
static void test_norm_gradcheck(void **state)
{
    (void)state;
    unsigned seed = 34;
    for (int rms = 0; rms < 2; rms++)
        for (size_t i = 0; i < N_NORM_CASES; i++)
            for (int affine = 0; affine < (rms ? 2 : 4); affine++) {
                const norm_case *nc = &k_norm_cases[i];
                norm_call c = {rms, nc->n_axes, affine & 1, affine >> 1, 1e-3};
                gc_spec ps = {nc->n_axes, {0}, GC_PLAIN};
                for (size_t d = 0; d < nc->n_axes; d++)
                    ps.shape[d] = nc->in.shape[nc->in.rank - nc->n_axes + d];
                tf_tensor *in[3] = {gc_random_view(&nc->in, -2, 2, &seed), NULL, NULL};
                size_t n = 1;
                if (c.weight)
                    in[n++] = gc_random_view(&ps, 0.5, 1.5, &seed);
                if (c.bias)
                    in[n++] = gc_random_view(&ps, -1, 1, &seed);
                char what[80];
                snprintf(what, sizeof what, "%s, case %zu, affine %d",
                         rms ? "rms_norm" : "layer_norm", i, affine);
                gc_check(what, g_cpu, call_norm, &c, in, n, NULL);
                for (size_t k = 0; k < n; k++)
                    tf_tensor_release(in[k]);
            }
}

static tf_status call_norm_grad(tf_session *s, tf_eager *const *xs, size_t n, void *user,
                                tf_eager **out)
{
    tf_scope sc;
    tf_status st = tf_scope_begin_capture_trace(tf_session_runtime(s), &sc);
    if (st)
        return st;
    tf_eager *y = NULL;
    st = call_norm(s, xs, n, user, &y);
    if (!st)
        st = grad_contracted(s, xs[0], y, out);
    tf_scope_end(&sc);
    tf_eager_release(y);
    return st;
}

static void test_norm_second_order(void **state)
{
    (void)state;
    unsigned seed = 35;
    gc_options o = {1e-5, 1e-5, 4, 0, 0};
    for (int rms = 0; rms < 2; rms++) {
        norm_call c = {rms, 1, 1, !rms, 1e-3};
        static const gc_spec xs = {2, {2, 4}, GC_PLAIN}, ps = {1, {4}, GC_PLAIN};
        tf_tensor *in[3] = {gc_random_view(&xs, -2, 2, &seed), gc_random_view(&ps, 0.5, 1.5, &seed),
                            rms ? NULL : gc_random_view(&ps, -1, 1, &seed)};
        gc_check(rms ? "grad of rms_norm" : "grad of layer_norm", g_cpu, call_norm_grad, &c, in,
                 rms ? 2 : 3, &o);
        for (size_t k = 0; k < 3; k++)
            tf_tensor_release(in[k]);
    }
}

static void test_norm_values(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    /* rows [1, 2, 3, 4] and [2, 2, 2, 2] of a [2, 4] over the last axis */
    static const int64_t s24[2] = {2, 4}, s4[1] = {4};
    static const double x[8] = {1, 2, 2, 2, 3, 2, 4, 2};
    static const double w[4] = {1, 2, 3, 4}, b[4] = {0.5, 0, -0.5, 1};
    tf_eager *xe = tft_eager(f.rt, TF_F64, 0, 2, s24, x, 8),
             *we = tft_eager(f.rt, TF_F64, 0, 1, s4, w, 4);
    tf_eager *be = tft_eager(f.rt, TF_F64, 0, 1, s4, b, 4), *y = NULL;
    double eps = 1e-5, inv = 1 / sqrt(1.25 + eps), want[8];
    for (int j = 0; j < 4; j++) {
        want[2 * j] = ((j + 1) - 2.5) * inv * w[j] + b[j];
        want[2 * j + 1] = b[j]; /* a constant row normalises to 0 */
    }
    TF_ASSERT_OK(tf_session_layer_norm(f.s, xe, 1, we, be, eps, &y));
    tft_expect_near(y, want, 8, 1e-14);
    tf_eager_release(y);
    /* without weight and bias, over both axes: mean 2.25, biased variance 0.6875 */
    for (int k = 0; k < 8; k++)
        want[k] = (x[k] - 2.25) / sqrt(0.6875 + eps);
    TF_ASSERT_OK(tf_session_layer_norm(f.s, xe, 2, NULL, NULL, eps, &y));
    tft_expect_near(y, want, 8, 1e-14);
    tf_eager_release(y);
    /* rms_norm: row 0 has mean square 7.5, row 1 has 4 */
    for (int j = 0; j < 4; j++) {
        want[2 * j] = (j + 1) / sqrt(7.5 + eps) * w[j];
        want[2 * j + 1] = 2 / sqrt(4 + eps) * w[j];
    }
    TF_ASSERT_OK(tf_session_rms_norm(f.s, xe, 1, we, eps, &y));
    tft_expect_near(y, want, 8, 1e-14);
    tf_eager_release(y);
    tf_eager_release(be);
    tf_eager_release(we);
    tf_eager_release(xe);
    tft_env_end(&f);
}

/* ===================================================================== */
/* Errors                                                                 */
/* ===================================================================== */

static void test_errors(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    tf_runtime *other;
    TF_ASSERT_OK(tf_runtime_create(&other));
    static const int64_t s23[2] = {2, 3}, s3[1] = {3}, s2[1] = {2};
    static const double d[6] = {1, 2, 3, 4, 5, 6};
    static const float df[3] = {1, 2, 3};
    static const int32_t di[6] = {1, 2, 3, 4, 5, 6};
    tf_eager *x = tft_eager(f.rt, TF_F64, 1, 2, s23, d, 6),
             *xi = tft_eager(f.rt, TF_I32, 0, 2, s23, di, 6);
    tf_eager *xo = tft_eager(other, TF_F64, 1, 2, s23, d, 6),
             *w3 = tft_eager(f.rt, TF_F64, 1, 1, s3, d, 3);
    tf_eager *w2 = tft_eager(f.rt, TF_F64, 1, 1, s2, d, 2),
             *wf = tft_eager(f.rt, TF_F32, 1, 1, s3, df, 3);
    tf_eager *wo = tft_eager(other, TF_F64, 1, 1, s3, d, 3);
    static char sentinel_storage;
    tf_eager *sentinel = (tf_eager *)&sentinel_storage, *out = sentinel;
    static const axis_fn afns[2] = {tf_session_softmax, tf_session_log_softmax};
    for (int k = 0; k < 2; k++) {
        tft_expect_error(afns[k](NULL, x, 0, &out), TF_ERR_VALIDATION, "session", out, sentinel);
        tft_expect_error(afns[k](f.s, NULL, 0, &out), TF_ERR_VALIDATION, "x", out, sentinel);
        tft_expect_error(afns[k](f.s, x, 0, NULL), TF_ERR_VALIDATION, "out", out, sentinel);
        tft_expect_error(afns[k](f.s, x, 2, &out), TF_ERR_AXIS_OUT_OF_BOUNDS, "axis", out,
                         sentinel);
        tft_expect_error(afns[k](f.s, x, -3, &out), TF_ERR_AXIS_OUT_OF_BOUNDS, "axis", out,
                         sentinel);
        tft_expect_error(afns[k](f.s, xi, 0, &out), TF_ERR_DTYPE_MISMATCH, "x", out, sentinel);
        tft_expect_error(afns[k](f.s, xo, 0, &out), TF_ERR_CONTEXT_MISMATCH, "x", out, sentinel);
    }
    static const unary_fn ufns[3] = {tf_session_silu, tf_session_gelu, tf_session_softplus};
    for (int k = 0; k < 3; k++) {
        tft_expect_error(ufns[k](NULL, x, &out), TF_ERR_VALIDATION, "session", out, sentinel);
        tft_expect_error(ufns[k](f.s, NULL, &out), TF_ERR_VALIDATION, "x", out, sentinel);
        tft_expect_error(ufns[k](f.s, x, NULL), TF_ERR_VALIDATION, "out", out, sentinel);
        tft_expect_error(ufns[k](f.s, xi, &out), TF_ERR_DTYPE_MISMATCH, "x", out, sentinel);
        tft_expect_error(ufns[k](f.s, xo, &out), TF_ERR_CONTEXT_MISMATCH, "x", out, sentinel);
    }
    /* layer_norm */
    tft_expect_error(tf_session_layer_norm(NULL, x, 1, w3, w3, 1e-5, &out), TF_ERR_VALIDATION,
                     "session", out, sentinel);
    tft_expect_error(tf_session_layer_norm(f.s, NULL, 1, w3, w3, 1e-5, &out), TF_ERR_VALIDATION,
                     "x", out, sentinel);
    tft_expect_error(tf_session_layer_norm(f.s, x, 1, w3, w3, 1e-5, NULL), TF_ERR_VALIDATION, "out",
                     out, sentinel);
    tft_expect_error(tf_session_layer_norm(f.s, x, 3, NULL, NULL, 1e-5, &out),
                     TF_ERR_AXIS_OUT_OF_BOUNDS, "n_axes", out, sentinel);
    tft_expect_error(tf_session_layer_norm(f.s, x, 1, NULL, NULL, -1, &out), TF_ERR_VALIDATION,
                     "eps", out, sentinel);
    tft_expect_error(tf_session_layer_norm(f.s, x, 1, NULL, NULL, NAN, &out), TF_ERR_VALIDATION,
                     "eps", out, sentinel);
    tft_expect_error(tf_session_layer_norm(f.s, x, 1, w2, NULL, 1e-5, &out), TF_ERR_SHAPE_MISMATCH,
                     "weight", out, sentinel);
    tft_expect_error(tf_session_layer_norm(f.s, x, 2, w3, NULL, 1e-5, &out), TF_ERR_SHAPE_MISMATCH,
                     "weight", out, sentinel);
    tft_expect_error(tf_session_layer_norm(f.s, x, 1, w3, w2, 1e-5, &out), TF_ERR_SHAPE_MISMATCH,
                     "bias", out, sentinel);
    tft_expect_error(tf_session_layer_norm(f.s, x, 1, NULL, wf, 1e-5, &out), TF_ERR_DTYPE_MISMATCH,
                     "bias", out, sentinel);
    tft_expect_error(tf_session_layer_norm(f.s, x, 1, wo, NULL, 1e-5, &out),
                     TF_ERR_CONTEXT_MISMATCH, "weight", out, sentinel);
    tft_expect_error(tf_session_layer_norm(f.s, xi, 1, NULL, NULL, 1e-5, &out),
                     TF_ERR_DTYPE_MISMATCH, "x", out, sentinel);
    /* rms_norm */
    tft_expect_error(tf_session_rms_norm(f.s, NULL, 1, w3, 1e-5, &out), TF_ERR_VALIDATION, "x", out,
                     sentinel);
    tft_expect_error(tf_session_rms_norm(f.s, x, 3, NULL, 1e-5, &out), TF_ERR_AXIS_OUT_OF_BOUNDS,
                     "n_axes", out, sentinel);
    tft_expect_error(tf_session_rms_norm(f.s, x, 1, NULL, -1e-9, &out), TF_ERR_VALIDATION, "eps",
                     out, sentinel);
    tft_expect_error(tf_session_rms_norm(f.s, x, 1, w2, 1e-5, &out), TF_ERR_SHAPE_MISMATCH,
                     "weight", out, sentinel);
    tft_expect_error(tf_session_rms_norm(f.s, x, 1, wf, 1e-5, &out), TF_ERR_DTYPE_MISMATCH,
                     "weight", out, sentinel);
    tft_expect_error(tf_session_rms_norm(f.s, xo, 1, NULL, 1e-5, &out), TF_ERR_CONTEXT_MISMATCH,
                     "x", out, sentinel);
    tf_eager *all[] = {x, xi, xo, w3, w2, wf, wo};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tf_eager_release(all[i]);
    tf_runtime_release(other);
    tft_env_end(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_softmax_gradcheck),
        cmocka_unit_test(test_softmax_second_order),
        cmocka_unit_test(test_softmax_values),
        cmocka_unit_test(test_activation_gradcheck),
        cmocka_unit_test(test_activation_values),
        cmocka_unit_test(test_norm_gradcheck),
        cmocka_unit_test(test_norm_second_order),
        cmocka_unit_test(test_norm_values),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, tft_cpu_setup, tft_cpu_teardown);
}
