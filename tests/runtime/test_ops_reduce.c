/*
 * test_ops_reduce.c - the reductions of the eager runtime: sum, prod, max,
 * min, mean, sum of squares and logsumexp.
 *
 * Every reduction is gradient-checked (reverse and forward mode against
 * central differences in f64) over several axis sets - all (NULL), none
 * (an empty non-NULL list, the identity), single and several axes,
 * negative axes - on rank 0 to 3, non-contiguous views and zero-size
 * extents. The derivatives finite differences cannot pin down are checked
 * by hand: ties of max/min (split evenly), prod with one and two zeros in a
 * group (first and second derivatives, which a division by x gets wrong),
 * NaN results. Forward values, the axis conventions, logsumexp's stability
 * and every error path are checked too.
 */
#include <math.h>

#include <tenferro/ops.h>

#include "tf_eager_test.h"
#include "tf_gradcheck.h"

/* ===================================================================== */
/* Helpers                                                                */
/* ===================================================================== */

static tf_eager *jvp_of(tf_runtime *rt, tf_eager *y, tf_eager *x, tf_eager *t)
{
    tf_eager *r = NULL;
    TF_ASSERT_OK(tf_runtime_jvp(rt, g_cpu, y, x, t, &r));
    return r;
}

/* sum(y * w) with w a constant of y's shape (w == NULL: plain sum). */
static tf_eager *weighted_sum(tft_env *f, tf_eager *y, const double *w)
{
    const tf_tensor *v = tf_eager_value(y);
    tf_eager *p = y, *r = NULL;
    tf_eager_retain(y);
    if (w) {
        tf_eager *we =
            tft_f64(f->rt, 0, tf_tensor_rank(v), tf_tensor_shape(v), w, tf_tensor_numel(v));
        tf_eager_release(p);
        TF_ASSERT_OK(tf_session_mul(f->s, y, we, &p));
        tf_eager_release(we);
    }
    TF_ASSERT_OK(tf_session_reduce_sum(f->s, p, NULL, 0, &r));
    tf_eager_release(p);
    return r;
}

/* ---- input shapes for gradient checks ---- */

/* ===================================================================== */
/* Gradient checks                                                        */
/* ===================================================================== */

typedef tf_status (*reduce_fn)(tf_session *, tf_eager *, const int *, size_t, tf_eager **);

typedef struct reduce_op {
    const char *name;
    reduce_fn fn;
    double lo, hi;
} reduce_op;

static const reduce_op k_ops[] = {
    {"reduce_sum", tf_session_reduce_sum, -2, 2},
    {"reduce_prod", tf_session_reduce_prod, -1.5, 1.5},
    {"reduce_max", tf_session_reduce_max, -2, 2},
    {"reduce_min", tf_session_reduce_min, -2, 2},
    {"reduce_mean", tf_session_reduce_mean, -2, 2},
    {"reduce_sum_squares", tf_session_reduce_sum_squares, -2, 2},
    {"logsumexp", tf_session_logsumexp, -3, 3},
};
#define N_OPS (sizeof k_ops / sizeof k_ops[0])

/* One reduction case: an input spec and an axis list (all: NULL). */
typedef struct reduce_case {
    gc_spec in;
    int all;
    size_t n_axes;
    int axes[4];
} reduce_case;

static const reduce_case k_cases[] = {
    {{0, {0}, GC_PLAIN}, 1, 0, {0}},  /* rank 0, all: unchanged */
    {{0, {0}, GC_PLAIN}, 0, 0, {0}},  /* rank 0, none */
    {{1, {5}, GC_PLAIN}, 1, 0, {0}},  /* vector, all */
    {{1, {7}, GC_PLAIN}, 0, 1, {-1}}, /* odd group, negative axis */
    {{2, {3, 4}, GC_PLAIN}, 0, 1, {0}},       {{2, {3, 4}, GC_PLAIN}, 0, 1, {1}},
    {{2, {3, 4}, GC_PLAIN}, 0, 2, {1, 0}}, /* both, listed out of order */
    {{2, {3, 4}, GC_PLAIN}, 0, 0, {0}},    /* none: the identity */
    {{3, {2, 3, 4}, GC_PLAIN}, 0, 2, {0, 2}}, {{3, {2, 5, 2}, GC_PLAIN}, 0, 1, {1}},
    {{3, {3, 2, 3}, GC_PLAIN}, 1, 0, {0}}, /* 18 elements in one group */
    {{2, {3, 5}, GC_TRANSPOSED}, 0, 1, {1}},  {{2, {4, 3}, GC_REVERSED}, 0, 1, {0}},
    {{2, {3, 2}, GC_SLICED}, 1, 0, {0}},      {{3, {2, 3, 3}, GC_TRANSPOSED}, 0, 2, {-1, 0}},
};
#define N_CASES (sizeof k_cases / sizeof k_cases[0])

typedef struct call {
    const reduce_op *op;
    const reduce_case *c;
} call;

static tf_status call_reduce(tf_session *s, tf_eager *const *xs, size_t n, void *user,
                             tf_eager **out)
{
    (void)n;
    const call *k = user;
    return k->op->fn(s, xs[0], k->c->all ? NULL : k->c->axes, k->c->n_axes, out);
}

static void test_gradcheck(void **state)
{
    (void)state;
    unsigned seed = 3;
    for (size_t o = 0; o < N_OPS; o++)
        for (size_t i = 0; i < N_CASES; i++) {
            call k = {&k_ops[o], &k_cases[i]};
            tf_tensor *x = gc_random_view(&k_cases[i].in, k_ops[o].lo, k_ops[o].hi, &seed);
            char what[80];
            snprintf(what, sizeof what, "%s, case %zu", k_ops[o].name, i);
            gc_check(what, g_cpu, call_reduce, &k, &x, 1, NULL);
            tf_tensor_release(x);
        }
}

/* Zero-size extents: empty groups (sum 0, prod 1, max -inf...) and empty results. */
static void test_gradcheck_zero_size(void **state)
{
    (void)state;
    static const reduce_case cases[] = {
        {{2, {0, 3}, GC_PLAIN}, 0, 1, {0}}, /* three empty groups */
        {{2, {0, 3}, GC_PLAIN}, 0, 1, {1}}, /* no groups */
        {{2, {0, 3}, GC_PLAIN}, 1, 0, {0}},
    };
    unsigned seed = 4;
    for (size_t o = 0; o < N_OPS; o++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            call k = {&k_ops[o], &cases[i]};
            tf_tensor *x = gc_random_view(&cases[i].in, -1, 1, &seed);
            char what[80];
            snprintf(what, sizeof what, "%s, zero-size case %zu", k_ops[o].name, i);
            /* an empty group's mean is NaN, and log of an empty sum has no
               finite tangent: only reverse mode is meaningful there */
            int rev_only = (o == 4 || o == 6) && i != 1;
            gc_options opt = {0, 0, 1, rev_only, 0};
            gc_check(what, g_cpu, call_reduce, &k, &x, 1, &opt);
            tf_tensor_release(x);
        }
}

/* prod over groups of every size 1..17 (powers of two and not), with zeros-free data. */
static void test_prod_group_sizes(void **state)
{
    (void)state;
    unsigned seed = 8;
    for (int64_t n = 1; n <= 17; n++) {
        reduce_case c = {{2, {n, 2}, GC_PLAIN}, 0, 1, {0}};
        call k = {&k_ops[1], &c};
        tf_tensor *x = gc_random_view(&c.in, 0.5, 1.5, &seed);
        char what[80];
        snprintf(what, sizeof what, "reduce_prod, group of %lld", (long long)n);
        gc_check(what, g_cpu, call_reduce, &k, &x, 1, NULL);
        tf_tensor_release(x);
    }
}

/* ---- second order: <grad(sum(f(x) * W)), C> as a function of x ---- */

typedef struct second {
    const call *k;
    const double *w, *c; /* weights of the output, of the gradient */
} second;

static tf_status call_second(tf_session *s, tf_eager *const *xs, size_t n, void *user,
                             tf_eager **out)
{
    (void)n;
    const second *so = user;
    tf_runtime *rt = tf_session_runtime(s);
    tf_scope sc;
    tf_status st = tf_scope_begin_capture_trace(rt, &sc); /* makes constants targets too */
    if (st)
        return st;
    tf_eager *y = NULL, *wy = NULL, *l = NULL, *g = NULL, *gc = NULL, *w = NULL, *c = NULL;
    const tf_tensor *xv = tf_eager_value(xs[0]);
    if (!(st = call_reduce(s, xs, 1, (void *)so->k, &y))) {
        const tf_tensor *yv = tf_eager_value(y);
        tf_tensor *wt = NULL, *ct = NULL;
        st = tf_tensor_from_host(TF_F64, tf_tensor_rank(yv), tf_tensor_shape(yv), so->w,
                                 tf_tensor_numel(yv), &wt);
        if (!st)
            st = tf_tensor_from_host(TF_F64, tf_tensor_rank(xv), tf_tensor_shape(xv), so->c,
                                     tf_tensor_numel(xv), &ct);
        if (!st)
            st = tf_session_constant_from_host(s, wt, &w);
        if (!st)
            st = tf_session_constant_from_host(s, ct, &c);
        tf_tensor_release(wt);
        tf_tensor_release(ct);
    }
    if (!st)
        st = tf_session_mul(s, y, w, &wy);
    if (!st)
        st = tf_session_reduce_sum(s, wy, NULL, 0, &l);
    if (!st)
        st = tf_runtime_grad(rt, tf_session_engine(s), l, xs[0], &g);
    if (!st)
        st = tf_session_mul(s, g, c, &gc);
    if (!st)
        st = tf_session_reduce_sum(s, gc, NULL, 0, out);
    tf_scope_end(&sc);
    tf_eager *all[] = {y, wy, l, g, gc, w, c};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tf_eager_release(all[i]);
    return st;
}

static void test_second_order(void **state)
{
    (void)state;
    static const double w[] = {0.3, -1.2, 0.7, 1.1, -0.4, 0.9, 0.2, -0.8};
    static const double c[] = {1.0, -0.5, 0.25, 0.8, -1.3, 0.6,  0.4, -0.2,
                               0.9, 0.1,  -0.7, 1.2, 0.3,  -0.9, 0.5, 0.7};
    static const reduce_case cases[] = {
        {{2, {3, 4}, GC_PLAIN}, 0, 1, {0}},
        {{2, {2, 5}, GC_PLAIN}, 1, 0, {0}},
        {{3, {2, 3, 2}, GC_PLAIN}, 0, 2, {2, 0}},
    };
    /* the ops with non-zero second derivatives (sum/max/min are piecewise linear) */
    static const size_t ops[] = {1, 4, 5, 6};
    unsigned seed = 9;
    gc_options opt = {1e-5, 1e-5, 2, 0, 0};
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            call k = {&k_ops[ops[o]], &cases[i]};
            second so = {&k, w, c};
            tf_tensor *x = gc_random_view(&cases[i].in, 0.5, 1.5, &seed);
            char what[80];
            snprintf(what, sizeof what, "grad of %s, case %zu", k_ops[ops[o]].name, i);
            gc_check(what, g_cpu, call_second, &so, &x, 1, &opt);
            tf_tensor_release(x);
        }
}

/* ===================================================================== */
/* Values and axis conventions                                            */
/* ===================================================================== */

/* x = [[1, 3, 5], [2, 4, 6]] ([2, 3], column-major 1..6). */
static void test_values(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    static const int64_t sh[2] = {2, 3};
    static const double d[6] = {1, 2, 3, 4, 5, 6};
    tf_eager *x = tft_f64(f.rt, 0, 2, sh, d, 6), *y = NULL;
    static const int ax0[1] = {0}, ax1[1] = {1}, axm1[1] = {-1};
    struct {
        reduce_fn fn;
        const int *axes;
        size_t n, count;
        double want[3];
    } cases[] = {
        {tf_session_reduce_sum, ax1, 1, 2, {9, 12}},
        {tf_session_reduce_sum, ax0, 1, 3, {3, 7, 11}},
        {tf_session_reduce_sum, NULL, 0, 1, {21}},
        {tf_session_reduce_prod, ax0, 1, 3, {2, 12, 30}},
        {tf_session_reduce_prod, NULL, 0, 1, {720}},
        {tf_session_reduce_max, axm1, 1, 2, {5, 6}},
        {tf_session_reduce_max, NULL, 0, 1, {6}},
        {tf_session_reduce_min, ax0, 1, 3, {1, 3, 5}},
        {tf_session_reduce_min, ax1, 1, 2, {1, 2}},
        {tf_session_reduce_mean, NULL, 0, 1, {3.5}},
        {tf_session_reduce_mean, ax1, 1, 2, {3, 4}},
        {tf_session_reduce_sum_squares, NULL, 0, 1, {91}},
        {tf_session_reduce_sum_squares, ax0, 1, 3, {5, 25, 61}},
        {tf_session_logsumexp,
         ax0,
         1,
         3,
         {2 + log1p(exp(-1)), 4 + log1p(exp(-1)), 6 + log1p(exp(-1))}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TF_ASSERT_OK(cases[i].fn(f.s, x, cases[i].axes, cases[i].n, &y));
        int64_t want_shape[1] = {(int64_t)cases[i].count};
        tft_expect_shape(y, cases[i].axes ? 1 : 0, want_shape);
        tft_expect_near(y, cases[i].want, cases[i].count, 1e-15);
        tf_eager_release(y);
    }
    tf_eager_release(x);
    tft_env_end(&f);
}

/* A non-NULL empty axis list is the identity; NULL on rank 0 too. */
static void test_axes_conventions(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    static const int64_t sh[2] = {2, 3};
    static const double d[6] = {1, -2, 3, 4, -5, 6}, z = 2.5;
    static const int none[1] = {0};
    tf_eager *x = tft_f64(f.rt, 1, 2, sh, d, 6), *s0 = tft_f64(f.rt, 1, 0, NULL, &z, 1), *y = NULL;
    double ident_sq[6];
    for (int i = 0; i < 6; i++)
        ident_sq[i] = d[i] * d[i];
    for (size_t o = 0; o < N_OPS; o++) {
        TF_ASSERT_OK(k_ops[o].fn(f.s, x, none, 0, &y));
        tft_expect_shape(y, 2, sh);
        tft_expect_near(y, o == 5 ? ident_sq : d, 6, 1e-15);
        /* the identity's derivative is one everywhere (sum of squares: 2x) */
        tf_eager *l = weighted_sum(&f, y, NULL), *g = tft_grad(f.rt, l, x);
        double want[6];
        for (int i = 0; i < 6; i++)
            want[i] = o == 5 ? 2 * d[i] : 1.0;
        tft_expect_near(g, want, 6, 1e-15);
        tf_eager_release(g);
        tf_eager_release(l);
        tf_eager_release(y);
        TF_ASSERT_OK(k_ops[o].fn(f.s, s0, NULL, 0, &y));
        tft_expect_shape(y, 0, NULL);
        double w0 = o == 5 ? z * z : z;
        tft_expect_near(y, &w0, 1, 1e-15);
        tf_eager_release(y);
    }
    tf_eager_release(s0);
    tf_eager_release(x);
    tft_env_end(&f);
}

/* Integer reductions (no derivatives), f32 as well. */
static void test_other_dtypes(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    static const int64_t sh[2] = {2, 3};
    static const int32_t di[6] = {1, -2, 3, 4, -5, 6};
    static const float df[6] = {1, 2, 3, 4, 5, 6};
    static const int ax1[1] = {1};
    tf_eager *xi = tft_eager(f.rt, TF_I32, 0, 2, sh, di, 6),
             *xf = tft_eager(f.rt, TF_F32, 1, 2, sh, df, 6);
    tf_eager *y = NULL;
    int32_t got[2];
    TF_ASSERT_OK(tf_session_reduce_prod(f.s, xi, ax1, 1, &y));
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(y), TF_I32, got, 2));
    assert_int_equal(got[0], 1 * 3 * -5);
    assert_int_equal(got[1], -2 * 4 * 6);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_reduce_max(f.s, xi, ax1, 1, &y));
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(y), TF_I32, got, 2));
    assert_int_equal(got[0], 3);
    assert_int_equal(got[1], 6);
    tf_eager_release(y);
    /* f32 logsumexp and its gradient (softmax) */
    TF_ASSERT_OK(tf_session_logsumexp(f.s, xf, ax1, 1, &y));
    assert_int_equal(tf_tensor_dtype(tf_eager_value(y)), TF_F32);
    float v[2];
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(y), TF_F32, v, 2));
    assert_true(fabs(v[0] - (5 + log(1 + exp(-2) + exp(-4)))) < 1e-5);
    tf_eager *l = NULL, *g = NULL;
    TF_ASSERT_OK(tf_session_reduce_sum(f.s, y, NULL, 0, &l));
    g = tft_grad(f.rt, l, xf);
    float gv[6];
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(g), TF_F32, gv, 6));
    double z0 = 1 + exp(-2) + exp(-4);
    assert_true(fabs(gv[4] - 1 / z0) < 1e-6 && fabs(gv[0] - exp(-4) / z0) < 1e-6);
    tf_eager_release(g);
    tf_eager_release(l);
    tf_eager_release(y);
    tf_eager_release(xi);
    tf_eager_release(xf);
    tft_env_end(&f);
}

/* ===================================================================== */
/* Hand-computed derivatives                                              */
/* ===================================================================== */

/* Checks d(sum(reduce(x) * cot))/dx == want and jvp along t == want_jvp. */
static void check_derivs(tft_env *f, reduce_fn fn, size_t rank, const int64_t *shape,
                         const double *x_data, size_t n, const int *axes, size_t n_axes,
                         const double *cot, const double *want, const double *t,
                         const double *want_jvp, size_t n_out)
{
    tf_eager *x = tft_f64(f->rt, 1, rank, shape, x_data, n), *y = NULL;
    TF_ASSERT_OK(fn(f->s, x, axes, n_axes, &y));
    tf_eager *l = weighted_sum(f, y, cot), *g = tft_grad(f->rt, l, x);
    tft_expect_near(g, want, n, 1e-15);
    tf_eager *te = tft_f64(f->rt, 0, rank, shape, t, n), *j = jvp_of(f->rt, y, x, te);
    tft_expect_near(j, want_jvp, n_out, 1e-15);
    tf_eager *all[] = {x, y, l, g, te, j};
    for (size_t i = 0; i < 6; i++)
        tf_eager_release(all[i]);
}

/* Ties share the derivative evenly; the JVP averages the tied tangents. */
static void test_max_min_ties(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    static const int ax1[1] = {1};
    static const double t4[4] = {1, 2, 4, 8}, t6[6] = {1, 2, 4, 8, 16, 32}, one = 1;
    /* [1, 3, 3, 0]: max 3 twice */
    static const int64_t s4[1] = {4};
    static const double x4[4] = {1, 3, 3, 0}, g4[4] = {0, 0.5, 0.5, 0}, j4 = 3;
    check_derivs(&f, tf_session_reduce_max, 1, s4, x4, 4, NULL, 0, &one, g4, t4, &j4, 1);
    /* min of [1, 3, 3, 0] is the single 0 */
    static const double gm4[4] = {0, 0, 0, 1}, jm4 = 8;
    check_derivs(&f, tf_session_reduce_min, 1, s4, x4, 4, NULL, 0, &one, gm4, t4, &jm4, 1);
    /* rows [1, 3, 3] and [5, 5, 5] ([2, 3] column-major), per row, cot [1, 3] */
    static const int64_t s6[2] = {2, 3};
    static const double x6[6] = {1, 5, 3, 5, 3, 5}, cot[2] = {1, 3};
    static const double gmax[6] = {0, 1, 0.5, 1, 0.5, 1},
                        jmax[2] = {(4 + 16) / 2.0, (2 + 8 + 32) / 3.0};
    check_derivs(&f, tf_session_reduce_max, 2, s6, x6, 6, ax1, 1, cot, gmax, t6, jmax, 2);
    static const double gmin[6] = {1, 1, 0, 1, 0, 1}, jmin[2] = {1, (2 + 8 + 32) / 3.0};
    check_derivs(&f, tf_session_reduce_min, 2, s6, x6, 6, ax1, 1, cot, gmin, t6, jmin, 2);
    /* all equal over every axis: 1/6 each */
    static const double x6e[6] = {2, 2, 2, 2, 2, 2},
                        g6e[6] = {1 / 6.0, 1 / 6.0, 1 / 6.0, 1 / 6.0, 1 / 6.0, 1 / 6.0};
    double j6e = 63 / 6.0;
    check_derivs(&f, tf_session_reduce_max, 2, s6, x6e, 6, NULL, 0, &one, g6e, t6, &j6e, 1);
    tft_env_end(&f);
}

/* A NaN result (max propagates NaN) sends the derivative to the NaN. */
static void test_max_nan(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    static const int64_t s3[1] = {3};
    static const double x[3] = {1, NAN, 2}, one = 1, g[3] = {0, 1, 0}, t[3] = {1, 2, 4};
    static const double j = 2;
    tf_eager *xe = tft_f64(f.rt, 1, 1, s3, x, 3), *y = NULL;
    TF_ASSERT_OK(tf_session_reduce_max(f.s, xe, NULL, 0, &y));
    double nan_ = NAN;
    tft_expect_near(y, &nan_, 1, 0);
    tf_eager_release(y);
    tf_eager_release(xe);
    check_derivs(&f, tf_session_reduce_max, 1, s3, x, 3, NULL, 0, &one, g, t, &j, 1);
    tft_env_end(&f);
}

/* prod with zeros: exact first derivatives (no 0/0), per group. */
static void test_prod_zeros(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    static const double one = 1;
    static const int64_t s4[1] = {4}, s5[1] = {5};
    static const double t4[4] = {1, 2, 4, 8}, t5[5] = {1, 2, 4, 8, 16};
    /* no zero: the products of the others */
    static const double xa[4] = {2, 3, 4, 5}, ga[4] = {60, 40, 30, 24}, ja = 60 + 80 + 120 + 192;
    check_derivs(&f, tf_session_reduce_prod, 1, s4, xa, 4, NULL, 0, &one, ga, t4, &ja, 1);
    /* one zero: only the zero's position has a derivative, the product of the others */
    static const double xb[4] = {2, 0, 3, 4}, gb[4] = {0, 24, 0, 0}, jb = 48;
    check_derivs(&f, tf_session_reduce_prod, 1, s4, xb, 4, NULL, 0, &one, gb, t4, &jb, 1);
    /* two zeros: all derivatives vanish */
    static const double xc[4] = {2, 0, 3, 0}, gc[4] = {0, 0, 0, 0}, jc = 0;
    check_derivs(&f, tf_session_reduce_prod, 1, s4, xc, 4, NULL, 0, &one, gc, t4, &jc, 1);
    /* an odd group (padded inside the rule) with a zero in the middle */
    static const double xd[5] = {1, 2, 0, 4, 5}, gd[5] = {0, 0, 40, 0, 0}, jd = 160;
    check_derivs(&f, tf_session_reduce_prod, 1, s5, xd, 5, NULL, 0, &one, gd, t5, &jd, 1);
    /* per column of [3, 2]: (2, 0, 5) has one zero, (0, 0, 7) two; cot [1, 2] */
    static const int64_t s32[2] = {3, 2};
    static const int ax0[1] = {0};
    static const double xe[6] = {2, 0, 5, 0, 0, 7}, cot[2] = {1, 2};
    static const double ge[6] = {0, 10, 0, 0, 0, 0}, te[6] = {1, 2, 4, 8, 16, 32};
    static const double je[2] = {20, 0};
    check_derivs(&f, tf_session_reduce_prod, 2, s32, xe, 6, ax0, 1, cot, ge, te, je, 2);
    tft_env_end(&f);
}

/* H v for prod at x along v: grad of <grad prod(x), v>. */
static void check_prod_hvp(tft_env *f, const double *x_data, const double *v, const double *want,
                           size_t n)
{
    int64_t shape[1] = {(int64_t)n};
    tf_eager *x = tft_f64(f->rt, 1, 1, shape, x_data, n), *y = NULL;
    TF_ASSERT_OK(tf_session_reduce_prod(f->s, x, NULL, 0, &y));
    tf_eager *g = tft_grad(f->rt, y, x), *gv = weighted_sum(f, g, v), *h = tft_grad(f->rt, gv, x);
    tft_expect_near(h, want, n, 1e-15);
    /* forward over reverse gives the same column */
    tf_eager *ve = tft_f64(f->rt, 0, 1, shape, v, n), *hj = jvp_of(f->rt, g, x, ve);
    tft_expect_near(hj, want, n, 1e-15);
    tf_eager *all[] = {x, y, g, gv, h, ve, hj};
    for (size_t i = 0; i < 7; i++)
        tf_eager_release(all[i]);
}

/* Second derivatives at zeros: H_ik = product of all but i and k. */
static void test_prod_zeros_second_order(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    /* one zero, column 1: H e1 = [x2 x3, 0, x0 x3, x0 x2] */
    static const double xb[4] = {2, 0, 3, 4}, e1[4] = {0, 1, 0, 0}, hb[4] = {12, 0, 8, 6};
    check_prod_hvp(&f, xb, e1, hb, 4);
    /* one zero, column 0: H e0 = [0, x2 x3, x1 x3, x1 x2] = [0, 12, 0, 0] */
    static const double e0[4] = {1, 0, 0, 0}, hb0[4] = {0, 12, 0, 0};
    check_prod_hvp(&f, xb, e0, hb0, 4);
    /* two zeros: H e3 = [x1 x2, x0 x2, x0 x1, 0] = [0, 6, 0, 0] */
    static const double xc[4] = {2, 0, 3, 0}, e3[4] = {0, 0, 0, 1}, hc[4] = {0, 6, 0, 0};
    check_prod_hvp(&f, xc, e3, hc, 4);
    /* three zeros, group of 5: every second derivative has a zero factor */
    static const double xd[5] = {0, 2, 0, 3, 0}, v5[5] = {1, 1, 1, 1, 1}, hd[5] = {0};
    check_prod_hvp(&f, xd, v5, hd, 5);
    tft_env_end(&f);
}

/*
 * Finite differences agree at exact zeros too (prod is multilinear), first
 * and second order: columns of a [6, 3] with no, one and two zeros.
 */
static void test_prod_zeros_gradcheck(void **state)
{
    (void)state;
    static const int64_t sh[2] = {6, 3};
    static const double d[18] = {0.5, -1.2, 0.7,  1.3, -0.9, 1.1, 0.8, 0,    -1.4,
                                 0.6, 1.2,  -0.7, 0,   1.5,  0.9, 0,   -0.6, 1.1};
    static const reduce_case c = {{2, {6, 3}, GC_PLAIN}, 0, 1, {0}};
    static const double w[3] = {0.7, -1.1, 0.4};
    static const double cc[18] = {1.0, -0.5, 0.25, 0.8, -1.3, 0.6, 0.4, -0.2, 0.9,
                                  0.1, -0.7, 1.2,  0.3, -0.9, 0.5, 0.7, 1.1,  -0.4};
    call k = {&k_ops[1], &c};
    second so = {&k, w, cc};
    tf_tensor *x = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, 2, sh, d, 18, &x));
    gc_check("reduce_prod at zeros", g_cpu, call_reduce, &k, &x, 1, NULL);
    gc_options opt = {1e-5, 1e-5, 2, 0, 0};
    gc_check("grad of reduce_prod at zeros", g_cpu, call_second, &so, &x, 1, &opt);
    tf_tensor_release(x);
}

/* logsumexp stays finite for large magnitudes and handles infinities. */
static void test_logsumexp_stability(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    static const int64_t s2[2] = {2, 4};
    /* columns: (1000, 1000), (-1000, -1000), (-inf, -inf), (inf, 1) */
    static const double x[8] = {1000, 1000, -1000, -1000, -INFINITY, -INFINITY, INFINITY, 1};
    static const int ax0[1] = {0};
    double want[4] = {1000 + log(2.0), -1000 + log(2.0), -INFINITY, INFINITY};
    tf_eager *xe = tft_f64(f.rt, 1, 2, s2, x, 8), *y = NULL;
    TF_ASSERT_OK(tf_session_logsumexp(f.s, xe, ax0, 1, &y));
    tft_expect_near(y, want, 4, 1e-15);
    tf_eager_release(y);
    /* the gradient of the finite columns is softmax: 1/2 each */
    static const int64_t s22[2] = {2, 2};
    tf_eager *xf = tft_f64(f.rt, 1, 2, s22, x, 4), *l = NULL;
    TF_ASSERT_OK(tf_session_logsumexp(f.s, xf, ax0, 1, &y));
    l = weighted_sum(&f, y, NULL);
    tf_eager *g = tft_grad(f.rt, l, xf);
    static const double half[4] = {0.5, 0.5, 0.5, 0.5};
    tft_expect_near(g, half, 4, 1e-15);
    tf_eager *all[] = {xe, y, xf, l, g};
    for (size_t i = 0; i < 5; i++)
        tf_eager_release(all[i]);
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
    static const int64_t sh[2] = {2, 3};
    static const double d[6] = {1, 2, 3, 4, 5, 6};
    static const int32_t di[6] = {1, 2, 3, 4, 5, 6};
    static const int bad[1] = {2}, neg_bad[1] = {-3}, twice[2] = {1, -1}, ok[1] = {0};
    tf_eager *x = tft_f64(f.rt, 1, 2, sh, d, 6), *xo = tft_f64(other, 1, 2, sh, d, 6);
    tf_eager *xi = tft_eager(f.rt, TF_I32, 0, 2, sh, di, 6);
    static char sentinel_storage;
    tf_eager *sentinel = (tf_eager *)&sentinel_storage; /* never dereferenced */
    for (size_t o = 0; o < N_OPS; o++) {
        reduce_fn fn = k_ops[o].fn;
        tf_eager *out = sentinel;
        tft_expect_error(fn(NULL, x, ok, 1, &out), TF_ERR_VALIDATION, "session", out, sentinel);
        tft_expect_error(fn(f.s, NULL, ok, 1, &out), TF_ERR_VALIDATION, "x", out, sentinel);
        tft_expect_error(fn(f.s, x, ok, 1, NULL), TF_ERR_VALIDATION, "out", out, sentinel);
        tft_expect_error(fn(f.s, x, bad, 1, &out), TF_ERR_AXIS_OUT_OF_BOUNDS, "axes", out,
                         sentinel);
        tft_expect_error(fn(f.s, x, neg_bad, 1, &out), TF_ERR_AXIS_OUT_OF_BOUNDS, "axes", out,
                         sentinel);
        tft_expect_error(fn(f.s, x, twice, 2, &out), TF_ERR_VALIDATION, "axes", out, sentinel);
        tft_expect_error(fn(f.s, xo, ok, 1, &out), TF_ERR_CONTEXT_MISMATCH, "x", out, sentinel);
        if (fn == tf_session_reduce_mean || fn == tf_session_logsumexp)
            tft_expect_error(fn(f.s, xi, ok, 1, &out), TF_ERR_DTYPE_MISMATCH, "x", out, sentinel);
    }
    tf_eager_release(xi);
    tf_eager_release(xo);
    tf_eager_release(x);
    tf_runtime_release(other);
    tft_env_end(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradcheck),
        cmocka_unit_test(test_gradcheck_zero_size),
        cmocka_unit_test(test_prod_group_sizes),
        cmocka_unit_test(test_second_order),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_axes_conventions),
        cmocka_unit_test(test_other_dtypes),
        cmocka_unit_test(test_max_min_ties),
        cmocka_unit_test(test_max_nan),
        cmocka_unit_test(test_prod_zeros),
        cmocka_unit_test(test_prod_zeros_second_order),
        cmocka_unit_test(test_prod_zeros_gradcheck),
        cmocka_unit_test(test_logsumexp_stability),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, tft_cpu_setup, tft_cpu_teardown);
}
