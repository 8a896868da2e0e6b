/*
 * test_ops_layout.c - the layout ops (reshape, transpose, broadcast_in_dim,
 * reverse) and the basic reductions (reduce_sum, reduce_mean,
 * reduce_sum_squares) of the eager runtime.
 *
 * Each op is gradient-checked (reverse and forward mode against central
 * finite differences in f64) on rank 0 to 3, zero-size extents and
 * non-contiguous inputs (transposed, reversed and sliced views), and its
 * second derivatives through grad of grad; forward values and shapes are
 * compared with hand-computed column-major references.
 */
#include <math.h>

#include <tenferro/ops.h>

#include "tf_eager_test.h"
#include "tf_gradcheck.h"

/* ===================================================================== */
/* Helpers                                                                */
/* ===================================================================== */

static void expect_exact(const tf_eager *x, const double *want, size_t n)
{
    assert_non_null(x);
    const tf_tensor *t = tf_eager_value(x);
    assert_int_equal(tf_tensor_dtype(t), TF_F64);
    assert_int_equal(tf_tensor_numel(t), n);
    double got[64];
    assert_true(n <= 64);
    if (n)
        TF_ASSERT_OK(tf_tensor_copy_to_host(t, TF_F64, got, n));
    for (size_t i = 0; i < n; i++)
        if (!(got[i] == want[i] || (isnan(got[i]) && isnan(want[i]))))
            fail_msg("element %zu: got %.17g, want %.17g", i, got[i], want[i]);
}

static void expect_close(const tf_eager *x, const double *want, size_t n)
{
    double got[64];
    assert_true(n <= 64);
    assert_int_equal(tf_tensor_numel(tf_eager_value(x)), n);
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(x), TF_F64, got, n));
    for (size_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= 1e-15 * fmax(1, fabs(want[i]))))
            fail_msg("element %zu: got %.17g, want %.17g", i, got[i], want[i]);
}

/* A random input of the spec's shape in [-2, 2); a view is never contiguous. */
static tf_tensor *make_input(const gc_spec *sp, unsigned *state)
{
    tf_tensor *t = gc_random_view(sp, -2, 2, state);
    if (sp->view != GC_PLAIN)
        assert_false(tf_tensor_is_contiguous(t));
    return t;
}

/*
 * One layout or reduction op with its arguments: `ints` are the perm, dims
 * or axes (n_ints of them; axes NULL when all_axes), `shape` the target
 * shape of reshape/broadcast_in_dim.
 */
typedef enum op_kind {
    RESHAPE,
    TRANSPOSE,
    BROADCAST,
    REVERSE,
    SUM,
    MEAN,
    SUMSQ
} op_kind;

typedef struct op_case {
    op_kind kind;
    gc_spec in;
    size_t rank; /* reshape/broadcast target rank */
    int64_t shape[4];
    size_t n_ints;
    int ints[4];
    int all_axes;
} op_case;

static tf_status apply(tf_session *s, const op_case *c, tf_eager *x, tf_eager **out)
{
    const int *axes = c->all_axes ? NULL : c->ints;
    switch (c->kind) {
    case RESHAPE: return tf_session_reshape(s, x, c->rank, c->shape, out);
    case TRANSPOSE: return tf_session_transpose(s, x, c->ints, out);
    case BROADCAST: return tf_session_broadcast_in_dim(s, x, c->rank, c->shape, c->ints, out);
    case REVERSE: return tf_session_reverse(s, x, c->ints, c->n_ints, out);
    case SUM: return tf_session_reduce_sum(s, x, axes, c->n_ints, out);
    case MEAN: return tf_session_reduce_mean(s, x, axes, c->n_ints, out);
    case SUMSQ: return tf_session_reduce_sum_squares(s, x, axes, c->n_ints, out);
    }
    return TF_ERR_VALIDATION;
}

static tf_status call_op(tf_session *s, tf_eager *const *xs, size_t n, void *user, tf_eager **out)
{
    (void)n;
    return apply(s, user, xs[0], out);
}

/* grad of sum((op x)^3): its derivative exercises the op's rules twice. */
static tf_status call_op_grad(tf_session *s, tf_eager *const *xs, size_t n, void *user,
                              tf_eager **out)
{
    (void)n;
    tf_runtime *rt = tf_session_runtime(s);
    tf_scope sc; /* the finite-difference side passes constants: capture them */
    tf_status st = tf_scope_begin_capture_trace(rt, &sc);
    if (st)
        return st;
    tf_eager *y = NULL, *y2 = NULL, *y3 = NULL, *l = NULL;
    st = apply(s, user, xs[0], &y);
    if (!st)
        st = tf_session_mul(s, y, y, &y2);
    if (!st)
        st = tf_session_mul(s, y2, y, &y3);
    if (!st)
        st = tf_session_reduce_sum(s, y3, NULL, 0, &l);
    if (!st)
        st = tf_runtime_grad(rt, tf_session_engine(s), l, xs[0], out);
    tf_scope_end(&sc);
    tf_eager_release(y);
    tf_eager_release(y2);
    tf_eager_release(y3);
    tf_eager_release(l);
    return st;
}

static const op_case k_cases[] = {
    /* reshape (column-major), including views that must be materialised */
    {RESHAPE, {2, {2, 3}, GC_PLAIN}, 2, {3, 2}, 0, {0}, 0},
    {RESHAPE, {2, {2, 3}, GC_PLAIN}, 1, {6}, 0, {0}, 0},
    {RESHAPE, {3, {2, 3, 2}, GC_PLAIN}, 2, {4, 3}, 0, {0}, 0},
    {RESHAPE, {1, {1}, GC_PLAIN}, 0, {0}, 0, {0}, 0},
    {RESHAPE, {0, {0}, GC_PLAIN}, 2, {1, 1}, 0, {0}, 0},
    {RESHAPE, {2, {2, 3}, GC_TRANSPOSED}, 1, {6}, 0, {0}, 0},
    {RESHAPE, {2, {2, 3}, GC_REVERSED}, 2, {3, 2}, 0, {0}, 0},
    {RESHAPE, {2, {2, 2}, GC_SLICED}, 1, {4}, 0, {0}, 0},
    {RESHAPE, {2, {0, 3}, GC_PLAIN}, 2, {3, 0}, 0, {0}, 0},
    /* transpose */
    {TRANSPOSE, {2, {2, 3}, GC_PLAIN}, 0, {0}, 2, {1, 0}, 0},
    {TRANSPOSE, {3, {2, 3, 2}, GC_PLAIN}, 0, {0}, 3, {2, 0, 1}, 0},
    {TRANSPOSE, {3, {2, 3, 2}, GC_PLAIN}, 0, {0}, 3, {-1, 0, 1}, 0},
    {TRANSPOSE, {2, {2, 3}, GC_PLAIN}, 0, {0}, 2, {0, 1}, 0},
    {TRANSPOSE, {0, {0}, GC_PLAIN}, 0, {0}, 0, {0}, 0},
    {TRANSPOSE, {2, {2, 3}, GC_TRANSPOSED}, 0, {0}, 2, {1, 0}, 0},
    {TRANSPOSE, {3, {2, 2, 3}, GC_SLICED}, 0, {0}, 3, {1, 2, 0}, 0},
    {TRANSPOSE, {2, {0, 3}, GC_PLAIN}, 0, {0}, 2, {1, 0}, 0},
    /* broadcast_in_dim: new axes, stretched axes, rank 0 */
    {BROADCAST, {1, {3}, GC_PLAIN}, 2, {2, 3}, 1, {1}, 0},
    {BROADCAST, {2, {2, 1}, GC_PLAIN}, 2, {2, 4}, 2, {0, 1}, 0},
    {BROADCAST, {0, {0}, GC_PLAIN}, 2, {2, 2}, 0, {0}, 0},
    {BROADCAST, {1, {3}, GC_PLAIN}, 3, {3, 2, 2}, 1, {0}, 0},
    {BROADCAST, {1, {1}, GC_PLAIN}, 1, {3}, 1, {0}, 0},
    {BROADCAST, {2, {2, 3}, GC_TRANSPOSED}, 3, {2, 4, 3}, 2, {0, 2}, 0},
    {BROADCAST, {2, {2, 3}, GC_REVERSED}, 2, {2, 3}, 2, {0, 1}, 0},
    {BROADCAST, {1, {3}, GC_PLAIN}, 2, {0, 3}, 1, {1}, 0},
    /* reverse */
    {REVERSE, {1, {5}, GC_PLAIN}, 0, {0}, 1, {0}, 0},
    {REVERSE, {2, {2, 3}, GC_PLAIN}, 0, {0}, 2, {0, 1}, 0},
    {REVERSE, {3, {2, 3, 2}, GC_PLAIN}, 0, {0}, 1, {-1}, 0},
    {REVERSE, {2, {2, 3}, GC_PLAIN}, 0, {0}, 0, {0}, 0},
    {REVERSE, {0, {0}, GC_PLAIN}, 0, {0}, 0, {0}, 0},
    {REVERSE, {2, {2, 3}, GC_TRANSPOSED}, 0, {0}, 1, {1}, 0},
    {REVERSE, {2, {2, 3}, GC_REVERSED}, 0, {0}, 1, {0}, 0},
    /* reduce_sum */
    {SUM, {0, {0}, GC_PLAIN}, 0, {0}, 0, {0}, 1},
    {SUM, {1, {5}, GC_PLAIN}, 0, {0}, 0, {0}, 1},
    {SUM, {2, {2, 3}, GC_PLAIN}, 0, {0}, 1, {0}, 0},
    {SUM, {2, {2, 3}, GC_PLAIN}, 0, {0}, 1, {1}, 0},
    {SUM, {3, {2, 3, 2}, GC_PLAIN}, 0, {0}, 2, {0, 2}, 0},
    {SUM, {3, {2, 3, 2}, GC_PLAIN}, 0, {0}, 1, {-1}, 0},
    {SUM, {2, {2, 3}, GC_PLAIN}, 0, {0}, 0, {0}, 0},
    {SUM, {2, {2, 3}, GC_TRANSPOSED}, 0, {0}, 1, {1}, 0},
    {SUM, {2, {2, 2}, GC_SLICED}, 0, {0}, 0, {0}, 1},
    {SUM, {3, {2, 3, 2}, GC_REVERSED}, 0, {0}, 2, {2, 1}, 0},
    {SUM, {2, {0, 3}, GC_PLAIN}, 0, {0}, 1, {0}, 0},
    {SUM, {2, {0, 3}, GC_PLAIN}, 0, {0}, 1, {1}, 0},
    /* reduce_mean */
    {MEAN, {0, {0}, GC_PLAIN}, 0, {0}, 0, {0}, 1},
    {MEAN, {2, {2, 3}, GC_PLAIN}, 0, {0}, 0, {0}, 1},
    {MEAN, {2, {2, 3}, GC_PLAIN}, 0, {0}, 1, {1}, 0},
    {MEAN, {3, {2, 3, 2}, GC_PLAIN}, 0, {0}, 2, {0, -1}, 0},
    {MEAN, {2, {2, 3}, GC_PLAIN}, 0, {0}, 0, {0}, 0},
    {MEAN, {2, {2, 3}, GC_TRANSPOSED}, 0, {0}, 1, {0}, 0},
    {MEAN, {2, {2, 2}, GC_SLICED}, 0, {0}, 1, {1}, 0},
    /* reduce_sum_squares */
    {SUMSQ, {0, {0}, GC_PLAIN}, 0, {0}, 0, {0}, 1},
    {SUMSQ, {2, {2, 3}, GC_PLAIN}, 0, {0}, 0, {0}, 1},
    {SUMSQ, {2, {2, 3}, GC_PLAIN}, 0, {0}, 1, {0}, 0},
    {SUMSQ, {3, {2, 3, 2}, GC_PLAIN}, 0, {0}, 2, {1, 2}, 0},
    {SUMSQ, {2, {2, 3}, GC_REVERSED}, 0, {0}, 1, {-1}, 0},
    {SUMSQ, {2, {2, 3}, GC_PLAIN}, 0, {0}, 0, {0}, 0},
    {SUMSQ, {2, {0, 3}, GC_PLAIN}, 0, {0}, 1, {0}, 0},
};
#define N_CASES (sizeof k_cases / sizeof k_cases[0])

static const char *const k_names[] = {"reshape",    "transpose",   "broadcast_in_dim",  "reverse",
                                      "reduce_sum", "reduce_mean", "reduce_sum_squares"};

/* ===================================================================== */
/* Gradient checks                                                        */
/* ===================================================================== */

static void test_gradcheck(void **state)
{
    (void)state;
    unsigned seed = 17;
    for (size_t i = 0; i < N_CASES; i++) {
        tf_tensor *x = make_input(&k_cases[i].in, &seed);
        char what[64];
        snprintf(what, sizeof what, "%s, case %zu", k_names[k_cases[i].kind], i);
        gc_check(what, g_cpu, call_op, (void *)&k_cases[i], &x, 1, NULL);
        tf_tensor_release(x);
    }
}

static void test_second_order(void **state)
{
    (void)state;
    unsigned seed = 23;
    gc_options o = {1e-5, 1e-5, 4, 0, 0};
    for (size_t i = 0; i < N_CASES; i++) {
        tf_tensor *x = make_input(&k_cases[i].in, &seed);
        char what[64];
        snprintf(what, sizeof what, "grad of %s, case %zu", k_names[k_cases[i].kind], i);
        gc_check(what, g_cpu, call_op_grad, (void *)&k_cases[i], &x, 1, &o);
        tf_tensor_release(x);
    }
}

/* A chain of every op: reshape(transpose(reverse(broadcast(x)))) * w, summed
   over one axis, squared and averaged. */
static tf_status call_chain(tf_session *s, tf_eager *const *xs, size_t n, void *user,
                            tf_eager **out)
{
    (void)n;
    (void)user;
    static const int64_t b[] = {3, 2, 4}, r[] = {6, 4};
    static const int dims[] = {0, 2}, perm[] = {1, 0, 2}, rev[] = {0, 2}, ax[] = {1};
    tf_eager *t[6] = {NULL};
    tf_status st = tf_session_broadcast_in_dim(s, xs[0], 3, b, dims, &t[0]);
    if (!st)
        st = tf_session_reverse(s, t[0], rev, 2, &t[1]);
    if (!st)
        st = tf_session_transpose(s, t[1], perm, &t[2]);
    if (!st)
        st = tf_session_reshape(s, t[2], 2, r, &t[3]);
    if (!st)
        st = tf_session_mul(s, t[3], xs[1], &t[4]);
    if (!st)
        st = tf_session_reduce_sum_squares(s, t[4], ax, 1, &t[5]);
    if (!st)
        st = tf_session_reduce_mean(s, t[5], NULL, 0, out);
    for (int i = 0; i < 6; i++)
        tf_eager_release(t[i]);
    return st;
}

static void test_chain_gradcheck(void **state)
{
    (void)state;
    unsigned seed = 29;
    static const gc_spec sx = {2, {3, 4}, GC_TRANSPOSED}, sw = {1, {4}, GC_PLAIN};
    tf_tensor *in[2] = {make_input(&sx, &seed), NULL};
    in[1] = gc_random(sw.rank, sw.shape, -2, 2, &seed);
    gc_check("layout chain", g_cpu, call_chain, NULL, in, 2, NULL);
    tf_tensor_release(in[0]);
    tf_tensor_release(in[1]);
}

/* ===================================================================== */
/* Forward values                                                         */
/* ===================================================================== */

/*
 * An op result's tensor and storage share one allocation (engine.c); views
 * keep the memory alive after the tensor itself is gone, in any order of
 * release, and the views still read the values (ASan checks the lifetimes).
 */
static void test_views_outlive_results(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    const int64_t s23[] = {2, 3}, s6[] = {6};
    tf_eager *a = tft_f64(f.rt, 0, 2, s23, (double[]){1, 2, 3, 4, 5, 6}, 6);
    tf_eager *r = NULL;
    TF_ASSERT_OK(tf_session_add(f.s, a, a, &r));
    tf_tensor *flat = NULL, *tr = NULL;
    TF_ASSERT_OK(tf_tensor_reshape(tf_eager_value(r), 1, s6, &flat));
    TF_ASSERT_OK(tf_tensor_transpose(tf_eager_value(r), (int[]){1, 0}, &tr));
    tf_eager_release(r); /* the result's tensor goes; its storage stays with the views */
    double got[6];
    TF_ASSERT_OK(tf_tensor_copy_to_host(flat, TF_F64, got, 6));
    for (int i = 0; i < 6; i++)
        assert_true(got[i] == 2.0 * (i + 1));
    tf_tensor_release(flat);
    TF_ASSERT_OK(tf_tensor_copy_to_host(tr, TF_F64, got, 6));
    const double want_t[] = {2, 6, 10, 4, 8, 12};
    for (int i = 0; i < 6; i++)
        assert_true(got[i] == want_t[i]);
    tf_tensor_release(tr); /* the last reference: the shared block is freed now */
    tf_eager_release(a);
    tft_env_end(&f);
}

static const int64_t k23[] = {2, 3};
static const double k16[] = {1, 2, 3, 4, 5, 6}; /* [[1,3,5],[2,4,6]] column-major */

static void test_reshape_values(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    tf_eager *x = tft_f64(f.rt, 1, 2, k23, k16, 6), *y = NULL, *t = NULL, *z = NULL;
    const int64_t s32[] = {3, 2}, s6[] = {6};
    TF_ASSERT_OK(tf_session_reshape(f.s, x, 2, s32, &y));
    tft_expect_shape(y, 2, s32);
    expect_exact(y, k16, 6); /* column-major order is kept */
    assert_true(tf_tensor_shares_storage(tf_eager_value(y), tf_eager_value(x)));
    assert_true(tf_eager_tracks_grad(y));
    tf_eager_release(y);
    /* a transposed view must be read in its own order */
    static const int perm[] = {1, 0};
    TF_ASSERT_OK(tf_session_transpose(f.s, x, perm, &t));
    TF_ASSERT_OK(tf_session_reshape(f.s, t, 1, s6, &z));
    expect_exact(z, (double[]){1, 3, 5, 2, 4, 6}, 6);
    tf_eager_release(z);
    /* rank 0 <-> [1] */
    const int64_t s1[] = {1};
    tf_eager *c = tft_f64(f.rt, 0, 0, NULL, (double[]){7}, 1);
    TF_ASSERT_OK(tf_session_reshape(f.s, c, 1, s1, &z));
    tft_expect_shape(z, 1, s1);
    expect_exact(z, (double[]){7}, 1);
    tf_eager *back = NULL;
    TF_ASSERT_OK(tf_session_reshape(f.s, z, 0, NULL, &back));
    tft_expect_shape(back, 0, NULL);
    tf_eager_release(back);
    tf_eager_release(z);
    tf_eager_release(c);
    tf_eager_release(t);
    tf_eager_release(x);
    tft_env_end(&f);
}

static void test_transpose_reverse_values(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    tf_eager *x = tft_f64(f.rt, 0, 2, k23, k16, 6), *y = NULL;
    static const int perm[] = {1, 0}, neg[] = {-1, -2}, a0[] = {0}, a1[] = {-1}, both[] = {0, 1};
    const int64_t s32[] = {3, 2};
    TF_ASSERT_OK(tf_session_transpose(f.s, x, perm, &y));
    tft_expect_shape(y, 2, s32);
    expect_exact(y, (double[]){1, 3, 5, 2, 4, 6}, 6);
    assert_true(tf_tensor_shares_storage(tf_eager_value(y), tf_eager_value(x)));
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_transpose(f.s, x, neg, &y));
    expect_exact(y, (double[]){1, 3, 5, 2, 4, 6}, 6);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_reverse(f.s, x, a0, 1, &y));
    tft_expect_shape(y, 2, k23);
    expect_exact(y, (double[]){2, 1, 4, 3, 6, 5}, 6);
    assert_true(tf_tensor_shares_storage(tf_eager_value(y), tf_eager_value(x)));
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_reverse(f.s, x, a1, 1, &y));
    expect_exact(y, (double[]){5, 6, 3, 4, 1, 2}, 6);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_reverse(f.s, x, both, 2, &y));
    expect_exact(y, (double[]){6, 5, 4, 3, 2, 1}, 6);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_reverse(f.s, x, NULL, 0, &y)); /* no axes: the identity */
    expect_exact(y, k16, 6);
    tf_eager_release(y);
    tf_eager_release(x);
    tft_env_end(&f);
}

static void test_broadcast_values(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    const int64_t s3[] = {3}, s21[] = {2, 1}, s322[] = {3, 2, 2};
    tf_eager *v = tft_f64(f.rt, 0, 1, s3, (double[]){10, 20, 30}, 3), *y = NULL;
    static const int d1[] = {1}, d0[] = {0}, d01[] = {0, 1};
    TF_ASSERT_OK(tf_session_broadcast_in_dim(f.s, v, 2, k23, d1, &y));
    tft_expect_shape(y, 2, k23);
    expect_exact(y, (double[]){10, 10, 20, 20, 30, 30}, 6);
    assert_true(tf_tensor_shares_storage(tf_eager_value(y), tf_eager_value(v)));
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_broadcast_in_dim(f.s, v, 3, s322, d0, &y));
    tft_expect_shape(y, 3, s322);
    expect_exact(y, (double[]){10, 20, 30, 10, 20, 30, 10, 20, 30, 10, 20, 30}, 12);
    tf_eager_release(y);
    tf_eager *c = tft_f64(f.rt, 0, 2, s21, (double[]){1, 2}, 2);
    TF_ASSERT_OK(tf_session_broadcast_in_dim(f.s, c, 2, k23, d01, &y));
    expect_exact(y, (double[]){1, 2, 1, 2, 1, 2}, 6);
    tf_eager_release(y);
    tf_eager *sc = tft_f64(f.rt, 0, 0, NULL, (double[]){4}, 1);
    TF_ASSERT_OK(tf_session_broadcast_in_dim(f.s, sc, 2, k23, NULL, &y));
    expect_exact(y, (double[]){4, 4, 4, 4, 4, 4}, 6);
    tf_eager_release(y);
    tf_eager_release(sc);
    tf_eager_release(c);
    tf_eager_release(v);
    tft_env_end(&f);
}

static void test_reduction_values(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    tf_eager *x = tft_f64(f.rt, 0, 2, k23, k16, 6), *y = NULL;
    static const int a0[] = {0}, a1[] = {1}, am1[] = {-1};
    const int64_t s3[] = {3}, s2[] = {2};
    TF_ASSERT_OK(tf_session_reduce_sum(f.s, x, a0, 1, &y));
    tft_expect_shape(y, 1, s3);
    expect_exact(y, (double[]){3, 7, 11}, 3);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_reduce_sum(f.s, x, am1, 1, &y));
    tft_expect_shape(y, 1, s2);
    expect_exact(y, (double[]){9, 12}, 2);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_reduce_sum(f.s, x, NULL, 0, &y));
    tft_expect_shape(y, 0, NULL);
    expect_exact(y, (double[]){21}, 1);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_reduce_sum(f.s, x, a0, 0, &y)); /* no axes: the identity */
    tft_expect_shape(y, 2, k23);
    expect_exact(y, k16, 6);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_reduce_mean(f.s, x, a1, 1, &y));
    expect_exact(y, (double[]){3, 4}, 2);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_reduce_mean(f.s, x, NULL, 0, &y));
    expect_exact(y, (double[]){3.5}, 1);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_reduce_sum_squares(f.s, x, NULL, 0, &y));
    expect_exact(y, (double[]){91}, 1);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_reduce_sum_squares(f.s, x, a0, 1, &y));
    expect_exact(y, (double[]){5, 25, 61}, 3);
    tf_eager_release(y);
    /* rank 0 with all axes */
    tf_eager *c = tft_f64(f.rt, 0, 0, NULL, (double[]){-3}, 1);
    TF_ASSERT_OK(tf_session_reduce_sum_squares(f.s, c, NULL, 0, &y));
    expect_exact(y, (double[]){9}, 1);
    tf_eager_release(y);
    tf_eager_release(c);
    /* empty groups: sum 0, mean NaN (0/0) */
    const int64_t s03[] = {0, 3};
    tf_eager *e = tft_f64(f.rt, 0, 2, s03, NULL, 0);
    TF_ASSERT_OK(tf_session_reduce_sum(f.s, e, a0, 1, &y));
    tft_expect_shape(y, 1, s3);
    expect_exact(y, (double[]){0, 0, 0}, 3);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_reduce_mean(f.s, e, a0, 1, &y));
    expect_exact(y, (double[]){NAN, NAN, NAN}, 3);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_reduce_sum(f.s, e, a1, 1, &y));
    const int64_t s0[] = {0};
    tft_expect_shape(y, 1, s0);
    tf_eager_release(y);
    tf_eager_release(e);
    tf_eager_release(x);
    tft_env_end(&f);
}

/* Hand-checked derivatives: broadcast sums back, mean divides, sum of
   squares doubles. */
static void test_reduction_derivatives(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    tf_eager *x = tft_f64(f.rt, 1, 2, k23, k16, 6), *y = NULL, *l = NULL, *g = NULL;
    static const int a1[] = {1};
    TF_ASSERT_OK(tf_session_reduce_mean(f.s, x, a1, 1, &y));          /* [3, 4] */
    TF_ASSERT_OK(tf_session_reduce_sum_squares(f.s, y, NULL, 0, &l)); /* 25 */
    expect_exact(l, (double[]){25}, 1);
    TF_ASSERT_OK(tf_runtime_grad(f.rt, g_cpu, l, x, &g));
    /* d/dx[i,j] = 2 mean_i / 3 */
    expect_close(g, (double[]){2.0, 8.0 / 3, 2.0, 8.0 / 3, 2.0, 8.0 / 3}, 6);
    tf_eager_release(g);
    tf_eager_release(l);
    tf_eager_release(y);
    /* broadcast of a scalar variable: the gradient is the sum of the cotangent */
    tf_eager *c = tft_f64(f.rt, 1, 0, NULL, (double[]){2}, 1), *b = NULL, *w = NULL, *p = NULL;
    TF_ASSERT_OK(tf_session_broadcast_in_dim(f.s, c, 2, k23, NULL, &b));
    w = tft_f64(f.rt, 0, 2, k23, k16, 6);
    TF_ASSERT_OK(tf_session_mul(f.s, b, w, &p));
    TF_ASSERT_OK(tf_session_reduce_sum(f.s, p, NULL, 0, &l));
    TF_ASSERT_OK(tf_runtime_grad(f.rt, g_cpu, l, c, &g));
    tft_expect_shape(g, 0, NULL);
    expect_exact(g, (double[]){21}, 1);
    tf_eager_release(g);
    tf_eager *t = tft_f64(f.rt, 0, 0, NULL, (double[]){1}, 1), *j = NULL;
    TF_ASSERT_OK(tf_runtime_jvp(f.rt, g_cpu, p, c, t, &j));
    tft_expect_shape(j, 2, k23);
    expect_exact(j, k16, 6);
    tf_eager_release(j);
    tf_eager_release(t);
    tf_eager_release(l);
    tf_eager_release(p);
    tf_eager_release(w);
    tf_eager_release(b);
    tf_eager_release(c);
    tf_eager_release(x);
    tft_env_end(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradcheck),
        cmocka_unit_test(test_second_order),
        cmocka_unit_test(test_chain_gradcheck),
        cmocka_unit_test(test_reshape_values),
        cmocka_unit_test(test_views_outlive_results),
        cmocka_unit_test(test_transpose_reverse_values),
        cmocka_unit_test(test_broadcast_values),
        cmocka_unit_test(test_reduction_values),
        cmocka_unit_test(test_reduction_derivatives),
    };
    return cmocka_run_group_tests(tests, tft_cpu_setup, tft_cpu_teardown);
}
