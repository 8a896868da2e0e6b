/*
 * test_ops_index.c - the indexing ops of the eager runtime: slice, pad,
 * concatenate, stack, gather (index_select, take_along_axis), scatter (add
 * and replace) and dynamic_slice.
 *
 * Forward values are compared with hand-computed references (column-major
 * data throughout). Every op is gradient-checked in reverse and forward mode
 * against central differences on several shapes, with non-contiguous
 * inputs, stride > 1, negative padding, repeated indices and the same
 * tensor joined twice; second derivatives (grad of a grad taken inside the
 * checked function) check that the rules are differentiable in turn, which
 * also exercises the internal dynamic_update_slice op. Every error path is
 * checked for its status, the argument it names, and that *out was left
 * alone.
 */
#include <math.h>

#include <tenferro/ops.h>

#include "tf_eager_test.h"
#include "tf_gradcheck.h"

/* ===================================================================== */
/* Helpers                                                                */
/* ===================================================================== */

/* x(i0, i1, ...) = its column-major position, as f64. */
static tf_eager *counting(tf_runtime *rt, size_t rank, const int64_t *shape)
{
    size_t n = 1;
    for (size_t d = 0; d < rank; d++)
        n *= (size_t)shape[d];
    double *v = malloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = (double)i;
    tf_eager *x = tft_constant(rt, TF_F64, rank, shape, v, n);
    free(v);
    return x;
}

static tf_eager *i64_vec(tf_runtime *rt, size_t n, const int64_t *v)
{
    int64_t shape[1] = {(int64_t)n};
    return tft_constant(rt, TF_I64, 1, shape, v, n);
}

/* Host inputs for gc_check. */
static tf_tensor *rnd(size_t rank, const int64_t *shape, unsigned *seed)
{
    return gc_random(rank, shape, -1.0, 1.0, seed);
}

/* A transposed view of a fresh random [shape[1], shape[0]] tensor: [shape]. */
static tf_tensor *rnd_t(const int64_t *shape, unsigned *seed)
{
    int64_t sw[2] = {shape[1], shape[0]};
    int perm[2] = {1, 0};
    tf_tensor *base = rnd(2, sw, seed), *v = NULL;
    TF_ASSERT_OK(tf_tensor_transpose(base, perm, &v));
    tf_tensor_release(base);
    return v;
}

/* A reversed view (all axes) of a fresh random tensor. */
static tf_tensor *rnd_rev(size_t rank, const int64_t *shape, unsigned *seed)
{
    int axes[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    tf_tensor *base = rnd(rank, shape, seed), *v = NULL;
    TF_ASSERT_OK(tf_tensor_reverse(base, rank, axes, &v));
    tf_tensor_release(base);
    return v;
}

static void check(const char *what, gc_fn fn, void *user, tf_tensor **xs, size_t n)
{
    gc_check(what, g_cpu, fn, user, xs, n, NULL);
    for (size_t i = 0; i < n; i++)
        tf_tensor_release(xs[i]);
}

/* ---- second derivatives ---- */

static void check2(const char *what, gc_fn fn, void *user, tf_tensor **xs, size_t n)
{
    gc_order2 o = {fn, user};
    check(what, gc_second_order, &o, xs, n);
}

/* An index tensor of the session's runtime from a host tensor. */
static tf_eager *index_in(tf_session *s, tf_tensor *host_index)
{
    tf_eager *ix = NULL;
    TF_ASSERT_OK(tf_session_constant_from_host(s, host_index, &ix));
    return ix;
}

/* ===================================================================== */
/* slice                                                                  */
/* ===================================================================== */

static void slice_values(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    int64_t shape[2] = {3, 4};
    tf_eager *x = counting(e.rt, 2, shape), *y = NULL;
    int64_t start[2] = {1, 0}, limit[2] = {3, 4}, stride[2] = {1, 2};
    TF_ASSERT_OK(tf_session_slice(e.s, x, start, limit, stride, &y));
    /* rows 1..2, columns 0 and 2 of x(i, j) = i + 3j */
    int64_t want_shape[2] = {2, 2};
    double want[4] = {1, 2, 7, 8};
    tft_expect_shaped(y, 2, want_shape, want, 4);
    assert_true(tf_tensor_shares_storage(tf_eager_value(x), tf_eager_value(y)));
    tf_eager_release(y);

    /* stride 3 over 4 elements takes 0 and 3; start == limit is empty */
    int64_t s2[2] = {0, 2}, l2[2] = {3, 2}, st2[2] = {2, 3};
    TF_ASSERT_OK(tf_session_slice(e.s, x, s2, l2, st2, &y));
    int64_t empty_shape[2] = {2, 0};
    tft_expect_shaped(y, 2, empty_shape, NULL, 0);
    tf_eager_release(y);

    /* rank 0: the identity */
    double one = 5;
    tf_eager *sc = tft_constant(e.rt, TF_F64, 0, NULL, &one, 1);
    TF_ASSERT_OK(tf_session_slice(e.s, sc, NULL, NULL, NULL, &y));
    tft_expect_shaped(y, 0, NULL, &one, 1);
    tf_eager_release(y);
    tf_eager_release(sc);
    tf_eager_release(x);
    tft_env_end(&e);
}

typedef struct slice_args {
    int64_t start[4], limit[4], stride[4];
} slice_args;

static tf_status slice_fn(tf_session *s, tf_eager *const *xs, size_t n, void *user, tf_eager **out)
{
    const slice_args *a = user;
    return tf_session_slice(s, xs[0], a->start, a->limit, a->stride, out);
}

static void slice_grad(void **state)
{
    (void)state;
    unsigned seed = 11;
    int64_t s45[2] = {4, 5}, s7[1] = {7}, s3[1] = {3};
    slice_args a = {{1, 0}, {4, 5}, {2, 2}};
    tf_tensor *x[1] = {rnd(2, s45, &seed)};
    check("slice [4,5] stride 2", slice_fn, &a, x, 1);
    slice_args b = {{1}, {7}, {3}};
    x[0] = rnd(1, s7, &seed);
    check("slice [7] stride 3", slice_fn, &b, x, 1);
    slice_args c = {{2}, {2}, {1}};
    x[0] = rnd(1, s3, &seed);
    check("slice [3] empty", slice_fn, &c, x, 1);
    x[0] = rnd_t(s45, &seed);
    check("slice transposed [4,5]", slice_fn, &a, x, 1);
    slice_args d = {{0, 1}, {3, 5}, {1, 3}};
    x[0] = rnd_rev(2, s45, &seed);
    check("slice reversed [4,5]", slice_fn, &d, x, 1);
    x[0] = rnd(2, s45, &seed);
    check2("slice second order", slice_fn, &a, x, 1);
}

static void slice_errors(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    int64_t shape[2] = {3, 4};
    tf_eager *x = counting(e.rt, 2, shape), *y;
    int64_t start[2] = {0, 0}, limit[2] = {3, 4}, stride[2] = {1, 1};
    int64_t bad_stride[2] = {1, 0}, big_limit[2] = {3, 5}, neg_start[2] = {-1, 0};
    int64_t crossed[2] = {2, 0}, crossed_limit[2] = {1, 4};
    TFT_EXPECT_FAIL(tf_session_slice(e.s, x, NULL, limit, stride, &y), TF_ERR_VALIDATION, "start",
                    y);
    TFT_EXPECT_FAIL(tf_session_slice(e.s, x, start, NULL, stride, &y), TF_ERR_VALIDATION, "limit",
                    y);
    TFT_EXPECT_FAIL(tf_session_slice(e.s, x, start, limit, NULL, &y), TF_ERR_VALIDATION, "stride",
                    y);
    TFT_EXPECT_FAIL(tf_session_slice(e.s, x, start, limit, bad_stride, &y), TF_ERR_VALIDATION,
                    "stride", y);
    TFT_EXPECT_FAIL(tf_session_slice(e.s, x, start, big_limit, stride, &y), TF_ERR_OUT_OF_RANGE,
                    "limit", y);
    TFT_EXPECT_FAIL(tf_session_slice(e.s, x, neg_start, limit, stride, &y), TF_ERR_OUT_OF_RANGE,
                    "start", y);
    TFT_EXPECT_FAIL(tf_session_slice(e.s, x, crossed, crossed_limit, stride, &y),
                    TF_ERR_OUT_OF_RANGE, "start", y);
    TFT_EXPECT_FAIL(tf_session_slice(e.s, NULL, start, limit, stride, &y), TF_ERR_VALIDATION, "x",
                    y);
    TFT_EXPECT_FAIL(tf_session_slice(NULL, x, start, limit, stride, &y), TF_ERR_VALIDATION,
                    "session", y);
    TF_ASSERT_STATUS(tf_session_slice(e.s, x, start, limit, stride, NULL), TF_ERR_VALIDATION);
    /* a tensor of another runtime */
    tf_runtime *other;
    TF_ASSERT_OK(tf_runtime_create(&other));
    tf_eager *z = counting(other, 2, shape);
    TFT_EXPECT_FAIL(tf_session_slice(e.s, z, start, limit, stride, &y), TF_ERR_CONTEXT_MISMATCH,
                    "x", y);
    tf_eager_release(z);
    tf_runtime_release(other);
    tf_eager_release(x);
    tft_env_end(&e);
}

/* ===================================================================== */
/* pad                                                                    */
/* ===================================================================== */

static void pad_values(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    double v3[3] = {1, 2, 3}, v5[5] = {1, 2, 3, 4, 5};
    int64_t s3[1] = {3}, s5[1] = {5};
    tf_eager *x3 = tft_constant(e.rt, TF_F64, 1, s3, v3, 3),
             *x5 = tft_constant(e.rt, TF_F64, 1, s5, v5, 5);
    tf_eager *y = NULL;

    /* OPS.md: [1,2,3], low 1, high 2, interior 1 -> [0,1,0,2,0,3,0,0] */
    int64_t lo[1] = {1}, hi[1] = {2}, in[1] = {1};
    TF_ASSERT_OK(tf_session_pad(e.s, x3, lo, hi, in, 0.0, &y));
    int64_t ws8[1] = {8};
    double w8[8] = {0, 1, 0, 2, 0, 3, 0, 0};
    tft_expect_shaped(y, 1, ws8, w8, 8);
    tf_eager_release(y);

    /* negative low/high crop */
    int64_t nlo[1] = {-1}, nhi[1] = {-2}, zero[1] = {0};
    TF_ASSERT_OK(tf_session_pad(e.s, x5, nlo, nhi, zero, 0.0, &y));
    int64_t ws2[1] = {2};
    double w2[2] = {2, 3};
    tft_expect_shaped(y, 1, ws2, w2, 2);
    tf_eager_release(y);

    /* cropping into the interior: [1,0,2,0,3] without its ends */
    int64_t m1[1] = {-1};
    TF_ASSERT_OK(tf_session_pad(e.s, x3, m1, m1, in, 0.0, &y));
    int64_t ws3[1] = {3};
    double w3[3] = {0, 2, 0};
    tft_expect_shaped(y, 1, ws3, w3, 3);
    tf_eager_release(y);

    /* a fill value; 2-D with different pads per axis */
    int64_t s22[2] = {2, 2};
    double v22[4] = {1, 2, 3, 4};
    tf_eager *x22 = tft_constant(e.rt, TF_F64, 2, s22, v22, 4);
    int64_t lo2[2] = {1, 0}, hi2[2] = {0, 1}, in2[2] = {0, 0};
    TF_ASSERT_OK(tf_session_pad(e.s, x22, lo2, hi2, in2, 7.5, &y));
    int64_t ws33[2] = {3, 3};
    double w33[9] = {7.5, 1, 2, 7.5, 3, 4, 7.5, 7.5, 7.5};
    tft_expect_shaped(y, 2, ws33, w33, 9);
    tf_eager_release(y);

    /* an integer dtype takes the integer value */
    int32_t iv[2] = {1, 2};
    int64_t s2[1] = {2};
    tf_eager *xi = tft_constant(e.rt, TF_I32, 1, s2, iv, 2);
    TF_ASSERT_OK(tf_session_pad(e.s, xi, lo, zero, zero, -3.0, &y));
    assert_int_equal(tf_tensor_dtype(tf_eager_value(y)), TF_I32);
    double wi[3] = {-3, 1, 2};
    tft_expect_shaped(y, 1, ws3, wi, 3);
    tf_eager_release(y);

    /* an empty axis: only the padding */
    int64_t s0[1] = {0};
    tf_eager *x0 = tft_constant(e.rt, TF_F64, 1, s0, NULL, 0);
    TF_ASSERT_OK(tf_session_pad(e.s, x0, hi, lo, in, 4.0, &y));
    double w4[3] = {4, 4, 4};
    tft_expect_shaped(y, 1, ws3, w4, 3);
    tf_eager_release(y);

    tf_eager_release(x0);
    tf_eager_release(xi);
    tf_eager_release(x22);
    tf_eager_release(x3);
    tf_eager_release(x5);
    tft_env_end(&e);
}

typedef struct pad_args {
    int64_t low[4], high[4], interior[4];
    double value;
} pad_args;

static tf_status pad_fn(tf_session *s, tf_eager *const *xs, size_t n, void *user, tf_eager **out)
{
    const pad_args *a = user;
    return tf_session_pad(s, xs[0], a->low, a->high, a->interior, a->value, out);
}

static void pad_grad(void **state)
{
    (void)state;
    unsigned seed = 21;
    int64_t s3[1] = {3}, s4[1] = {4}, s23[2] = {2, 3}, s34[2] = {3, 4};
    pad_args a = {{1}, {2}, {1}, 0.0};
    tf_tensor *x[1] = {rnd(1, s3, &seed)};
    check("pad [3] interior", pad_fn, &a, x, 1);
    pad_args b = {{-1, 2}, {1, -2}, {0, 1}, 2.5};
    x[0] = rnd(2, s23, &seed);
    check("pad [2,3] mixed signs", pad_fn, &b, x, 1);
    /* [a,0,b,0,c,0,d] cropped to [0,c,0]: a, b and d get no gradient */
    pad_args c = {{-3}, {-1}, {1}, 0.0};
    x[0] = rnd(1, s4, &seed);
    check("pad [4] cropped interior", pad_fn, &c, x, 1);
    pad_args d = {{2, -1}, {-1, 1}, {2, 0}, -1.0};
    x[0] = rnd_t(s34, &seed);
    check("pad transposed [3,4]", pad_fn, &d, x, 1);
    pad_args z = {{0}, {0}, {0}, 0.0};
    x[0] = rnd(0, NULL, &seed);
    check("pad rank 0", pad_fn, &z, x, 1);
    x[0] = rnd(2, s23, &seed);
    check2("pad second order", pad_fn, &b, x, 1);
}

/*
 * Attributes at the int64 extremes (issue 19, item 11): the forward accepts
 * every pad whose extents fit, and its reverse and forward rules must hold
 * there too, with no signed overflow (the sanitizer build runs this) and no
 * padding of the cotangent beyond x's own extents.
 */
static void pad_extremes(void **state)
{
    (void)state;
    static const struct {
        int64_t d, low, high, interior;
        int64_t ext;
        double want[3], grad[2];
    } cases[] = {
        {1, 0, 0, INT64_MAX, 1, {7}, {1}},                   /* the largest interior */
        {1, INT64_MIN, INT64_MAX, 0, 0, {0}, {0}},           /* the smallest low */
        {2, INT64_MIN, INT64_MAX, 0, 1, {-1}, {0, 0}},       /* all of x cropped away */
        {1, INT64_MAX - 5, -(INT64_MAX - 5), 0, 1, {-1}, {0}}, /* x lands past the end */
        {2, 0, -(INT64_MAX - 1), INT64_MAX - 2, 1, {7}, {1, 0}},
        {2, -(INT64_MAX - 1), 0, INT64_MAX - 2, 1, {8}, {0, 1}},
        {2, -(INT64_MAX - 5), INT64_MAX - 5, 0, 2, {-1, -1}, {0, 0}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tft_env e = tft_env_begin();
        const int64_t sd[1] = {cases[c].d};
        tf_eager *x = tft_f64(e.rt, 1, 1, sd, (double[]){7, 8}, (size_t)cases[c].d), *y = NULL;
        int64_t lo[1] = {cases[c].low}, hi[1] = {cases[c].high}, in[1] = {cases[c].interior};
        TF_ASSERT_OK(tf_session_pad(e.s, x, lo, hi, in, -1.0, &y));
        const int64_t se[1] = {cases[c].ext};
        tft_expect_shaped(y, 1, se, cases[c].want, (size_t)cases[c].ext);
        tf_eager *l = NULL, *t = NULL, *j = NULL;
        TF_ASSERT_OK(tf_session_reduce_sum(e.s, y, NULL, 0, &l));
        tf_eager *g = tft_grad(e.rt, l, x);
        tft_expect_shaped(g, 1, sd, cases[c].grad, (size_t)cases[c].d);
        TF_ASSERT_OK(tf_eager_backward(l, g_cpu));
        t = tft_f64(e.rt, 0, 1, sd, (double[]){1, 1}, (size_t)cases[c].d);
        TF_ASSERT_OK(tf_runtime_jvp(e.rt, g_cpu, l, x, t, &j));
        double dot = cases[c].grad[0] + (cases[c].d > 1 ? cases[c].grad[1] : 0);
        tft_expect_shaped(j, 0, NULL, &dot, 1);
        tf_eager *all[] = {j, t, g, l, y, x};
        for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
            tf_eager_release(all[k]);
        tft_env_end(&e);
        /* and by finite differences, second order included */
        unsigned seed = 40 + (unsigned)c;
        pad_args a = {{cases[c].low}, {cases[c].high}, {cases[c].interior}, 0.5};
        tf_tensor *xs[1] = {rnd(1, sd, &seed)};
        char what[64];
        snprintf(what, sizeof what, "pad at the int64 extremes, case %zu", c);
        check(what, pad_fn, &a, xs, 1);
        xs[0] = rnd(1, sd, &seed);
        check2(what, pad_fn, &a, xs, 1);
    }
}

static void pad_errors(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    int64_t s3[1] = {3};
    tf_eager *x = counting(e.rt, 1, s3), *y;
    int64_t zero[1] = {0}, neg[1] = {-1}, m4[1] = {-4}, m2[1] = {-2}, big[1] = {INT64_MAX};
    int64_t huge_in[1] = {INT64_MAX / 2};
    TFT_EXPECT_FAIL(tf_session_pad(e.s, x, zero, zero, neg, 0.0, &y), TF_ERR_VALIDATION, "interior",
                    y);
    TFT_EXPECT_FAIL(tf_session_pad(e.s, x, m4, zero, zero, 0.0, &y), TF_ERR_VALIDATION, "low", y);
    TFT_EXPECT_FAIL(tf_session_pad(e.s, x, m2, m2, zero, 0.0, &y), TF_ERR_VALIDATION, "low", y);
    TFT_EXPECT_FAIL(tf_session_pad(e.s, x, zero, m4, zero, 0.0, &y), TF_ERR_VALIDATION, "high", y);
    TFT_EXPECT_FAIL(tf_session_pad(e.s, x, zero, big, zero, 0.0, &y), TF_ERR_SHAPE_OVERFLOW, NULL,
                    y);
    TFT_EXPECT_FAIL(tf_session_pad(e.s, x, zero, zero, huge_in, 0.0, &y), TF_ERR_SHAPE_OVERFLOW,
                    NULL, y);
    TFT_EXPECT_FAIL(tf_session_pad(e.s, x, NULL, zero, zero, 0.0, &y), TF_ERR_VALIDATION, "low", y);
    TFT_EXPECT_FAIL(tf_session_pad(e.s, x, zero, NULL, zero, 0.0, &y), TF_ERR_VALIDATION, "high",
                    y);
    TFT_EXPECT_FAIL(tf_session_pad(e.s, x, zero, zero, NULL, 0.0, &y), TF_ERR_VALIDATION,
                    "interior", y);
    TFT_EXPECT_FAIL(tf_session_pad(e.s, NULL, zero, zero, zero, 0.0, &y), TF_ERR_VALIDATION, "x",
                    y);
    /* the extent fits in int64 but its byte size does not */
    int64_t large[1] = {INT64_MAX - 10};
    TFT_EXPECT_FAIL(tf_session_pad(e.s, x, zero, large, zero, 0.0, &y), TF_ERR_SHAPE_OVERFLOW, NULL,
                    y);
    tf_eager_release(x);
    tft_env_end(&e);
}

/* ===================================================================== */
/* concatenate and stack                                                  */
/* ===================================================================== */

static void concatenate_values(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    int64_t s21[2] = {2, 1}, s22[2] = {2, 2}, s12[2] = {1, 2};
    double a[2] = {1, 2}, b[4] = {3, 4, 5, 6};
    tf_eager *xa = tft_constant(e.rt, TF_F64, 2, s21, a, 2),
             *xb = tft_constant(e.rt, TF_F64, 2, s22, b, 4);
    tf_eager *y = NULL;
    tf_eager *ab[2] = {xa, xb};
    TF_ASSERT_OK(tf_session_concatenate(e.s, ab, 2, -1, &y));
    int64_t w23[2] = {2, 3};
    double want1[6] = {1, 2, 3, 4, 5, 6};
    tft_expect_shaped(y, 2, w23, want1, 6);
    tf_eager_release(y);

    tf_eager *xc = tft_constant(e.rt, TF_F64, 2, s12, a, 2);
    tf_eager *cb[2] = {xc, xb};
    TF_ASSERT_OK(tf_session_concatenate(e.s, cb, 2, 0, &y));
    int64_t w32[2] = {3, 2};
    double want2[6] = {1, 3, 4, 2, 5, 6};
    tft_expect_shaped(y, 2, w32, want2, 6);
    tf_eager_release(y);

    /* one input; the same input twice */
    TF_ASSERT_OK(tf_session_concatenate(e.s, &xb, 1, 1, &y));
    tft_expect_shaped(y, 2, s22, b, 4);
    tf_eager_release(y);
    tf_eager *bb[2] = {xb, xb};
    TF_ASSERT_OK(tf_session_concatenate(e.s, bb, 2, 1, &y));
    int64_t w24[2] = {2, 4};
    double want3[8] = {3, 4, 5, 6, 3, 4, 5, 6};
    tft_expect_shaped(y, 2, w24, want3, 8);
    tf_eager_release(y);

    /* more inputs than one engine call takes (joined in groups) */
    enum {
        N = 70
    };
    tf_eager *many[N];
    double vals[N];
    int64_t s1[1] = {1};
    for (int i = 0; i < N; i++) {
        vals[i] = i;
        many[i] = tft_constant(e.rt, TF_F64, 1, s1, &vals[i], 1);
    }
    TF_ASSERT_OK(tf_session_concatenate(e.s, many, N, 0, &y));
    int64_t wn[1] = {N};
    tft_expect_shaped(y, 1, wn, vals, N);
    tf_eager_release(y);
    for (int i = 0; i < N; i++)
        tf_eager_release(many[i]);

    tf_eager_release(xa);
    tf_eager_release(xb);
    tf_eager_release(xc);
    tft_env_end(&e);
}

typedef struct concat_args {
    int axis;
    size_t n;
    int which[4]; /* which input each joined tensor is */
} concat_args;

static tf_status concat_fn(tf_session *s, tf_eager *const *xs, size_t n, void *user, tf_eager **out)
{
    const concat_args *a = user;
    tf_eager *list[4];
    for (size_t i = 0; i < a->n; i++)
        list[i] = xs[a->which[i]];
    return tf_session_concatenate(s, list, a->n, a->axis, out);
}

static tf_status stack_fn(tf_session *s, tf_eager *const *xs, size_t n, void *user, tf_eager **out)
{
    const concat_args *a = user;
    tf_eager *list[4];
    for (size_t i = 0; i < a->n; i++)
        list[i] = xs[a->which[i]];
    return tf_session_stack(s, list, a->n, a->axis, out);
}

/* xs[0] joined with itself 20 times (more than one engine call takes). */
static tf_status concat_many_fn(tf_session *s, tf_eager *const *xs, size_t n, void *user,
                                tf_eager **out)
{
    tf_eager *list[20];
    for (int i = 0; i < 20; i++)
        list[i] = i % 3 == 1 && n > 1 ? xs[1] : xs[0];
    return tf_session_concatenate(s, list, 20, *(const int *)user, out);
}

static void concatenate_grad(void **state)
{
    (void)state;
    unsigned seed = 31;
    int64_t s23[2] = {2, 3}, s21[2] = {2, 1}, s13[2] = {1, 3}, s0[1] = {0}, s3[1] = {3};
    concat_args a = {1, 2, {0, 1}};
    tf_tensor *x2[2] = {rnd(2, s23, &seed), rnd(2, s21, &seed)};
    check("concatenate [2,3] [2,1] axis 1", concat_fn, &a, x2, 2);
    concat_args twice = {0, 2, {0, 0}};
    tf_tensor *x1[1] = {rnd(2, s23, &seed)};
    check("concatenate x with itself", concat_fn, &twice, x1, 1);
    concat_args three = {-2, 3, {0, 1, 0}};
    tf_tensor *x3[2] = {rnd_t(s23, &seed), rnd(2, s13, &seed)};
    check("concatenate transposed, axis -2", concat_fn, &three, x3, 2);
    concat_args empty = {0, 2, {0, 1}};
    tf_tensor *x4[2] = {rnd(1, s0, &seed), rnd(1, s3, &seed)};
    check("concatenate with an empty input", concat_fn, &empty, x4, 2);
    tf_tensor *x5[2] = {rnd(2, s23, &seed), rnd(2, s21, &seed)};
    check2("concatenate second order", concat_fn, &a, x5, 2);
    int axis1 = 1;
    tf_tensor *x6[2] = {rnd(2, s21, &seed), rnd_t(s21, &seed)};
    check("concatenate 20 inputs", concat_many_fn, &axis1, x6, 2);
    tf_tensor *x7[2] = {rnd(2, s21, &seed), rnd(2, s21, &seed)};
    check2("concatenate 20 inputs, second order", concat_many_fn, &axis1, x7, 2);
}

static void stack_values_and_grad(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    int64_t s2[1] = {2};
    double a[2] = {1, 2}, b[2] = {3, 4};
    tf_eager *xa = tft_constant(e.rt, TF_F64, 1, s2, a, 2),
             *xb = tft_constant(e.rt, TF_F64, 1, s2, b, 2);
    tf_eager *ab[2] = {xa, xb}, *y = NULL;
    int64_t w22[2] = {2, 2};
    TF_ASSERT_OK(tf_session_stack(e.s, ab, 2, 0, &y));
    double want0[4] = {1, 3, 2, 4};
    tft_expect_shaped(y, 2, w22, want0, 4);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_stack(e.s, ab, 2, -1, &y));
    double want1[4] = {1, 2, 3, 4};
    tft_expect_shaped(y, 2, w22, want1, 4);
    tf_eager_release(y);
    double sc = 9;
    tf_eager *x0 = tft_constant(e.rt, TF_F64, 0, NULL, &sc, 1);
    TF_ASSERT_OK(tf_session_stack(e.s, &x0, 1, 0, &y));
    int64_t w1[1] = {1};
    tft_expect_shaped(y, 1, w1, &sc, 1);
    tf_eager_release(y);
    tf_eager_release(x0);
    tf_eager_release(xa);
    tf_eager_release(xb);
    tft_env_end(&e);

    unsigned seed = 41;
    int64_t s23[2] = {2, 3};
    concat_args mid = {1, 2, {0, 1}};
    tf_tensor *x2[2] = {rnd(2, s23, &seed), rnd_t(s23, &seed)};
    check("stack [2,3] x2 axis 1", stack_fn, &mid, x2, 2);
    concat_args thrice = {-1, 3, {0, 0, 0}};
    tf_tensor *x1[1] = {rnd(2, s23, &seed)};
    check("stack x three times, axis -1", stack_fn, &thrice, x1, 1);
}

static void concatenate_errors(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    int64_t s23[2] = {2, 3}, s33[2] = {3, 3}, s2[1] = {2};
    float f[6] = {0};
    tf_eager *a = counting(e.rt, 2, s23), *b = counting(e.rt, 2, s33), *c = counting(e.rt, 1, s2);
    tf_eager *af = tft_constant(e.rt, TF_F32, 2, s23, f, 6), *y;
    tf_eager *ab[2] = {a, b}, *ac[2] = {a, c}, *aaf[2] = {a, af}, *anull[2] = {a, NULL};
    TFT_EXPECT_FAIL(tf_session_concatenate(e.s, ab, 0, 0, &y), TF_ERR_VALIDATION, "n", y);
    TFT_EXPECT_FAIL(tf_session_concatenate(e.s, NULL, 2, 0, &y), TF_ERR_VALIDATION, "xs", y);
    TFT_EXPECT_FAIL(tf_session_concatenate(e.s, anull, 2, 0, &y), TF_ERR_VALIDATION, "xs[1]", y);
    TFT_EXPECT_FAIL(tf_session_concatenate(e.s, aaf, 2, 0, &y), TF_ERR_DTYPE_MISMATCH, "xs", y);
    TFT_EXPECT_FAIL(tf_session_concatenate(e.s, ac, 2, 0, &y), TF_ERR_SHAPE_MISMATCH, "xs", y);
    TFT_EXPECT_FAIL(tf_session_concatenate(e.s, ab, 2, 1, &y), TF_ERR_SHAPE_MISMATCH, "xs", y);
    TFT_EXPECT_FAIL(tf_session_concatenate(e.s, ab, 2, 2, &y), TF_ERR_AXIS_OUT_OF_BOUNDS, "axis",
                    y);
    TFT_EXPECT_FAIL(tf_session_concatenate(e.s, ab, 2, -3, &y), TF_ERR_AXIS_OUT_OF_BOUNDS, "axis",
                    y);
    tf_runtime *other;
    TF_ASSERT_OK(tf_runtime_create(&other));
    tf_eager *z = counting(other, 2, s23);
    tf_eager *az[2] = {a, z};
    TFT_EXPECT_FAIL(tf_session_concatenate(e.s, az, 2, 0, &y), TF_ERR_CONTEXT_MISMATCH, "xs[1]", y);
    TFT_EXPECT_FAIL(tf_session_stack(e.s, az, 2, 0, &y), TF_ERR_CONTEXT_MISMATCH, "xs[1]", y);

    TFT_EXPECT_FAIL(tf_session_stack(e.s, ab, 2, 0, &y), TF_ERR_SHAPE_MISMATCH, "xs", y);
    TFT_EXPECT_FAIL(tf_session_stack(e.s, aaf, 2, 0, &y), TF_ERR_DTYPE_MISMATCH, "xs", y);
    tf_eager *aa[2] = {a, a};
    TFT_EXPECT_FAIL(tf_session_stack(e.s, aa, 2, 3, &y), TF_ERR_AXIS_OUT_OF_BOUNDS, "axis", y);
    TFT_EXPECT_FAIL(tf_session_stack(e.s, aa, 2, -4, &y), TF_ERR_AXIS_OUT_OF_BOUNDS, "axis", y);
    TFT_EXPECT_FAIL(tf_session_stack(e.s, aa, 0, 0, &y), TF_ERR_VALIDATION, "n", y);
    int64_t s8[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    tf_eager *r8 = counting(e.rt, 8, s8), *r8s[1] = {r8};
    TFT_EXPECT_FAIL(tf_session_stack(e.s, r8s, 1, 0, &y), TF_ERR_RANK_TOO_LARGE, "xs", y);
    TF_ASSERT_STATUS(tf_session_concatenate(e.s, ab, 2, 0, NULL), TF_ERR_VALIDATION);
    tf_eager_release(r8);
    tf_eager_release(z);
    tf_runtime_release(other);
    tf_eager_release(a);
    tf_eager_release(b);
    tf_eager_release(c);
    tf_eager_release(af);
    tft_env_end(&e);
}

/* ===================================================================== */
/* gather                                                                 */
/* ===================================================================== */

static void gather_values(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    int64_t s32[2] = {3, 2};
    tf_eager *x = counting(e.rt, 2, s32), *y = NULL; /* x(i, j) = i + 3j */
    int64_t idx[3] = {2, 0, 2};
    tf_eager *ix = i64_vec(e.rt, 3, idx);
    TF_ASSERT_OK(tf_session_index_select(e.s, x, 0, ix, &y));
    int64_t w32[2] = {3, 2};
    double want[6] = {2, 0, 2, 5, 3, 5};
    tft_expect_shaped(y, 2, w32, want, 6);
    tf_eager_release(y);

    /* i32 index, negative axis */
    int32_t idx32[2] = {1, 1};
    int64_t s2[1] = {2};
    tf_eager *ix32 = tft_constant(e.rt, TF_I32, 1, s2, idx32, 2);
    TF_ASSERT_OK(tf_session_index_select(e.s, x, -1, ix32, &y));
    double want2[6] = {3, 4, 5, 3, 4, 5};
    tft_expect_shaped(y, 2, w32, want2, 6);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_gather(e.s, x, 1, ix32, TF_GATHER_INDEX_SELECT, &y));
    tft_expect_shaped(y, 2, w32, want2, 6);
    tf_eager_release(y);

    /* take_along_axis on x(i, j) = i + 2j, [2,3] */
    int64_t s23[2] = {2, 3}, s22[2] = {2, 2};
    tf_eager *x23 = counting(e.rt, 2, s23);
    int64_t along[4] = {2, 0, 1, 1};
    tf_eager *ia = tft_constant(e.rt, TF_I64, 2, s22, along, 4);
    TF_ASSERT_OK(tf_session_take_along_axis(e.s, x23, 1, ia, &y));
    double want3[4] = {4, 1, 2, 3};
    tft_expect_shaped(y, 2, s22, want3, 4);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_gather(e.s, x23, -1, ia, TF_GATHER_ALONG_AXIS, &y));
    tft_expect_shaped(y, 2, s22, want3, 4);
    tf_eager_release(y);

    /* an empty index */
    tf_eager *none = i64_vec(e.rt, 0, NULL);
    TF_ASSERT_OK(tf_session_index_select(e.s, x, 0, none, &y));
    int64_t w02[2] = {0, 2};
    tft_expect_shaped(y, 2, w02, NULL, 0);
    tf_eager_release(y);

    tf_eager_release(none);
    tf_eager_release(ia);
    tf_eager_release(x23);
    tf_eager_release(ix32);
    tf_eager_release(ix);
    tf_eager_release(x);
    tft_env_end(&e);
}

typedef struct gather_args {
    int axis;
    tf_gather_mode mode;
    tf_tensor *index; /* host */
} gather_args;

static tf_status gather_fn(tf_session *s, tf_eager *const *xs, size_t n, void *user, tf_eager **out)
{
    const gather_args *a = user;
    tf_eager *ix = index_in(s, a->index);
    tf_status st = a->mode == TF_GATHER_INDEX_SELECT
                       ? tf_session_index_select(s, xs[0], a->axis, ix, out)
                       : tf_session_take_along_axis(s, xs[0], a->axis, ix, out);
    tf_eager_release(ix);
    return st;
}

static tf_tensor *index_host(size_t rank, const int64_t *shape, const int64_t *v)
{
    size_t n = 1;
    for (size_t d = 0; d < rank; d++)
        n *= (size_t)shape[d];
    return tft_host(TF_I64, rank, shape, v, n);
}

static void gather_grad(void **state)
{
    (void)state;
    unsigned seed = 51;
    int64_t s43[2] = {4, 3}, s5[1] = {5}, s2[1] = {2}, s34[2] = {3, 4};
    int64_t rep[5] = {3, 1, 3, 3, 0}, twice[2] = {2, 2};
    gather_args a = {0, TF_GATHER_INDEX_SELECT, index_host(1, s5, rep)};
    tf_tensor *x[1] = {rnd(2, s43, &seed)};
    check("index_select repeated", gather_fn, &a, x, 1);
    x[0] = rnd_t(s43, &seed);
    check("index_select transposed", gather_fn, &a, x, 1);
    gather_args b = {-1, TF_GATHER_INDEX_SELECT, index_host(1, s2, twice)};
    x[0] = rnd(2, s43, &seed);
    check("index_select axis -1", gather_fn, &b, x, 1);

    /* take_along_axis: more picks than the axis has, with repeats */
    int64_t s35[2] = {3, 5}, along[15] = {0, 3, 3, 1, 1, 1, 2, 0, 3, 3, 3, 3, 0, 2, 1};
    gather_args c = {1, TF_GATHER_ALONG_AXIS, index_host(2, s35, along)};
    x[0] = rnd(2, s34, &seed);
    check("take_along_axis repeated", gather_fn, &c, x, 1);
    /* an index smaller than x off the axis */
    int64_t s22[2] = {2, 2}, small[4] = {2, 0, 2, 2};
    gather_args d = {0, TF_GATHER_ALONG_AXIS, index_host(2, s22, small)};
    x[0] = rnd_rev(2, s34, &seed);
    check("take_along_axis small index, reversed x", gather_fn, &d, x, 1);

    x[0] = rnd(2, s43, &seed);
    check2("index_select second order", gather_fn, &a, x, 1);
    x[0] = rnd(2, s34, &seed);
    check2("take_along_axis second order", gather_fn, &c, x, 1);
    tf_tensor_release(a.index);
    tf_tensor_release(b.index);
    tf_tensor_release(c.index);
    tf_tensor_release(d.index);
}

static void gather_errors(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    int64_t s32[2] = {3, 2}, s22[2] = {2, 2}, s42[2] = {4, 2};
    tf_eager *x = counting(e.rt, 2, s32), *y;
    int64_t good[2] = {0, 1}, high[2] = {0, 3}, neg[2] = {-1, 0};
    double fidx[2] = {0, 1};
    int64_t s2[1] = {2};
    tf_eager *ig = i64_vec(e.rt, 2, good), *ih = i64_vec(e.rt, 2, high),
             *in = i64_vec(e.rt, 2, neg);
    tf_eager *ifl = tft_constant(e.rt, TF_F64, 1, s2, fidx, 2);
    int64_t m4[4] = {0, 0, 0, 0}, m8[8] = {0};
    tf_eager *i22 = tft_constant(e.rt, TF_I64, 2, s22, m4, 4),
             *i42 = tft_constant(e.rt, TF_I64, 2, s42, m8, 8);

    TFT_EXPECT_FAIL(tf_session_index_select(e.s, x, 0, ifl, &y), TF_ERR_DTYPE_MISMATCH, "index", y);
    TFT_EXPECT_FAIL(tf_session_index_select(e.s, x, 0, i22, &y), TF_ERR_SHAPE_MISMATCH, "index", y);
    TFT_EXPECT_FAIL(tf_session_index_select(e.s, x, 2, ig, &y), TF_ERR_AXIS_OUT_OF_BOUNDS, "axis",
                    y);
    TFT_EXPECT_FAIL(tf_session_index_select(e.s, x, -3, ig, &y), TF_ERR_AXIS_OUT_OF_BOUNDS, "axis",
                    y);
    TFT_EXPECT_FAIL(tf_session_index_select(e.s, x, 0, NULL, &y), TF_ERR_VALIDATION, "index", y);
    TFT_EXPECT_FAIL(tf_session_index_select(e.s, NULL, 0, ig, &y), TF_ERR_VALIDATION, "x", y);
    /* index values outside [0, extent): the engine's error */
    TFT_EXPECT_FAIL(tf_session_index_select(e.s, x, 0, ih, &y), TF_ERR_OUT_OF_RANGE, NULL, y);
    TFT_EXPECT_FAIL(tf_session_index_select(e.s, x, 1, in, &y), TF_ERR_OUT_OF_RANGE, NULL, y);
    TFT_EXPECT_FAIL(tf_session_gather(e.s, x, 0, ig, (tf_gather_mode)7, &y), TF_ERR_VALIDATION,
                    "mode", y);
    /* take_along_axis: rank and off-axis extents */
    TFT_EXPECT_FAIL(tf_session_take_along_axis(e.s, x, 0, ig, &y), TF_ERR_SHAPE_MISMATCH, "index",
                    y);
    TFT_EXPECT_FAIL(tf_session_take_along_axis(e.s, x, 1, i42, &y), TF_ERR_SHAPE_MISMATCH, "index",
                    y);
    int64_t bad[4] = {0, 5, 0, 0};
    tf_eager *ib = tft_constant(e.rt, TF_I64, 2, s22, bad, 4);
    TFT_EXPECT_FAIL(tf_session_take_along_axis(e.s, x, 1, ib, &y), TF_ERR_OUT_OF_RANGE, NULL, y);
    /* a scalar has no axis */
    double one = 1;
    tf_eager *sc = tft_constant(e.rt, TF_F64, 0, NULL, &one, 1);
    TFT_EXPECT_FAIL(tf_session_index_select(e.s, sc, 0, ig, &y), TF_ERR_AXIS_OUT_OF_BOUNDS, "axis",
                    y);
    tf_eager_release(sc);
    tf_eager_release(ib);
    tf_eager_release(i22);
    tf_eager_release(i42);
    tf_eager_release(ifl);
    tf_eager_release(ig);
    tf_eager_release(ih);
    tf_eager_release(in);
    tf_eager_release(x);
    tft_env_end(&e);
}

/* ===================================================================== */
/* scatter                                                                */
/* ===================================================================== */

static void scatter_values(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    int64_t s4[1] = {4}, s3[1] = {3};
    double base[4] = {1, 1, 1, 1}, upd[3] = {10, 20, 30};
    int64_t idx[3] = {0, 2, 0};
    tf_eager *b = tft_constant(e.rt, TF_F64, 1, s4, base, 4),
             *u = tft_constant(e.rt, TF_F64, 1, s3, upd, 3);
    tf_eager *ix = i64_vec(e.rt, 3, idx), *y = NULL;
    TF_ASSERT_OK(tf_session_scatter(e.s, b, 0, ix, u, TF_GATHER_INDEX_SELECT, TF_SCATTER_ADD, &y));
    double add[4] = {41, 1, 21, 1};
    tft_expect_shaped(y, 1, s4, add, 4);
    tf_eager_release(y);
    TF_ASSERT_OK(
        tf_session_scatter(e.s, b, 0, ix, u, TF_GATHER_INDEX_SELECT, TF_SCATTER_REPLACE, &y));
    double rep[4] = {30, 1, 20, 1}; /* the last duplicate wins */
    tft_expect_shaped(y, 1, s4, rep, 4);
    tf_eager_release(y);

    /* along an axis: base [2,3], index/updates [2,2] on axis 1 */
    int64_t s23[2] = {2, 3}, s22[2] = {2, 2};
    double z6[6] = {0}, u4[4] = {1, 2, 3, 4};
    int64_t along[4] = {2, 1, 2, 0}; /* (0,0)->col 2, (1,0)->1, (0,1)->2, (1,1)->0 */
    tf_eager *b2 = tft_constant(e.rt, TF_F64, 2, s23, z6, 6),
             *u2 = tft_constant(e.rt, TF_F64, 2, s22, u4, 4);
    tf_eager *ia = tft_constant(e.rt, TF_I64, 2, s22, along, 4);
    TF_ASSERT_OK(tf_session_scatter(e.s, b2, 1, ia, u2, TF_GATHER_ALONG_AXIS, TF_SCATTER_ADD, &y));
    double add2[6] = {0, 4, 0, 2, 4, 0};
    tft_expect_shaped(y, 2, s23, add2, 6);
    tf_eager_release(y);
    TF_ASSERT_OK(
        tf_session_scatter(e.s, b2, 1, ia, u2, TF_GATHER_ALONG_AXIS, TF_SCATTER_REPLACE, &y));
    double rep2[6] = {0, 4, 0, 2, 3, 0};
    tft_expect_shaped(y, 2, s23, rep2, 6);
    tf_eager_release(y);

    tf_eager_release(ia);
    tf_eager_release(b2);
    tf_eager_release(u2);
    tf_eager_release(ix);
    tf_eager_release(b);
    tf_eager_release(u);
    tft_env_end(&e);
}

typedef struct scatter_args {
    int axis;
    tf_gather_mode mode;
    tf_scatter_combine combine;
    tf_tensor *index; /* host */
} scatter_args;

static tf_status scatter_fn(tf_session *s, tf_eager *const *xs, size_t n, void *user,
                            tf_eager **out)
{
    const scatter_args *a = user;
    tf_eager *ix = index_in(s, a->index);
    tf_status st = tf_session_scatter(s, xs[0], a->axis, ix, xs[1], a->mode, a->combine, out);
    tf_eager_release(ix);
    return st;
}

/* The same with the updates first, so that gc_second_order differentiates them. */
static tf_status scatter_upd_fn(tf_session *s, tf_eager *const *xs, size_t n, void *user,
                                tf_eager **out)
{
    tf_eager *swapped[2] = {xs[1], xs[0]};
    return scatter_fn(s, swapped, n, user, out);
}

static void scatter_grad(void **state)
{
    (void)state;
    unsigned seed = 61;
    int64_t s43[2] = {4, 3}, s53[2] = {5, 3}, s5[1] = {5}, s33[2] = {3, 3}, s24[2] = {2, 4};
    int64_t rep[5] = {3, 1, 3, 3, 0};
    tf_tensor *ix = index_host(1, s5, rep);
    /* updates for index_select on axis 0: [5, 3] */
    for (int c = 0; c < 2; c++) {
        tf_scatter_combine comb = c ? TF_SCATTER_REPLACE : TF_SCATTER_ADD;
        scatter_args a = {0, TF_GATHER_INDEX_SELECT, comb, ix};
        tf_tensor *x[2] = {rnd(2, s43, &seed), rnd(2, s53, &seed)};
        check(c ? "scatter replace, repeated" : "scatter add, repeated", scatter_fn, &a, x, 2);
        tf_tensor *xt[2] = {rnd_t(s43, &seed), rnd_rev(2, s53, &seed)};
        check(c ? "scatter replace, strided" : "scatter add, strided", scatter_fn, &a, xt, 2);
        tf_tensor *x2[2] = {rnd(2, s43, &seed), rnd(2, s53, &seed)};
        check2(c ? "scatter replace, second order (base)" : "scatter add, second order (base)",
               scatter_fn, &a, x2, 2);
        tf_tensor *x3[2] = {rnd(2, s53, &seed), rnd(2, s43, &seed)};
        check2(c ? "scatter replace, second order (updates)"
                 : "scatter add, second order (updates)",
               scatter_upd_fn, &a, x3, 2);
    }
    tf_tensor_release(ix);

    /* along axis 1: base [3,3], index/updates [2,4] with collisions on rows */
    int64_t along[8] = {0, 2, 0, 2, 1, 2, 0, 0};
    tf_tensor *ia = index_host(2, s24, along);
    for (int c = 0; c < 2; c++) {
        tf_scatter_combine comb = c ? TF_SCATTER_REPLACE : TF_SCATTER_ADD;
        scatter_args a = {1, TF_GATHER_ALONG_AXIS, comb, ia};
        tf_tensor *x[2] = {rnd(2, s33, &seed), rnd(2, s24, &seed)};
        check(c ? "scatter along replace" : "scatter along add", scatter_fn, &a, x, 2);
        tf_tensor *x3[2] = {rnd(2, s24, &seed), rnd(2, s33, &seed)};
        check2(c ? "scatter along replace, second order" : "scatter along add, second order",
               scatter_upd_fn, &a, x3, 2);
    }
    tf_tensor_release(ia);

    /* no updates at all */
    int64_t s0[1] = {0}, s03[2] = {0, 3};
    tf_tensor *none = index_host(1, s0, NULL);
    scatter_args e = {0, TF_GATHER_INDEX_SELECT, TF_SCATTER_REPLACE, none};
    tf_tensor *x[2] = {rnd(2, s43, &seed), rnd(2, s03, &seed)};
    check("scatter replace, empty index", scatter_fn, &e, x, 2);
    tf_tensor_release(none);
}

/* With duplicates, only the winner of a REPLACE gets a gradient. */
static void scatter_replace_winners(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    int64_t s4[1] = {4}, s3[1] = {3};
    double base[4] = {1, 2, 3, 4}, upd[3] = {10, 20, 30};
    int64_t idx[3] = {0, 2, 0};
    tf_tensor *bt = tft_host(TF_F64, 1, s4, base, 4), *ut = tft_host(TF_F64, 1, s3, upd, 3);
    tf_eager *b = NULL, *u = NULL, *y = NULL, *loss = NULL, *gb = NULL, *gu = NULL;
    TF_ASSERT_OK(tf_runtime_variable_from(e.rt, bt, &b));
    TF_ASSERT_OK(tf_runtime_variable_from(e.rt, ut, &u));
    tf_eager *ix = i64_vec(e.rt, 3, idx);
    TF_ASSERT_OK(
        tf_session_scatter(e.s, b, 0, ix, u, TF_GATHER_INDEX_SELECT, TF_SCATTER_REPLACE, &y));
    TF_ASSERT_OK(tf_session_reduce_sum(e.s, y, NULL, 0, &loss));
    TF_ASSERT_OK(tf_runtime_grad(e.rt, g_cpu, loss, b, &gb));
    TF_ASSERT_OK(tf_runtime_grad(e.rt, g_cpu, loss, u, &gu));
    double want_b[4] = {0, 1, 0, 1}, want_u[3] = {0, 1, 1};
    tft_expect_shaped(gb, 1, s4, want_b, 4);
    tft_expect_shaped(gu, 1, s3, want_u, 3);
    tf_eager_release(gb);
    tf_eager_release(gu);
    tf_eager_release(loss);
    tf_eager_release(y);
    tf_eager_release(ix);
    tf_eager_release(b);
    tf_eager_release(u);
    tf_tensor_release(bt);
    tf_tensor_release(ut);
    tft_env_end(&e);
}

static void scatter_errors(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    int64_t s4[1] = {4}, s3[1] = {3}, s2[1] = {2};
    double base[4] = {0}, upd[3] = {0};
    float fu[3] = {0};
    int64_t idx[3] = {0, 1, 2}, bad[3] = {0, 4, 1};
    tf_eager *b = tft_constant(e.rt, TF_F64, 1, s4, base, 4),
             *u = tft_constant(e.rt, TF_F64, 1, s3, upd, 3);
    tf_eager *u2 = tft_constant(e.rt, TF_F64, 1, s2, upd, 2),
             *uf = tft_constant(e.rt, TF_F32, 1, s3, fu, 3);
    tf_eager *ix = i64_vec(e.rt, 3, idx), *ibad = i64_vec(e.rt, 3, bad), *y;
    uint8_t bb[4] = {0}, bu[3] = {1, 1, 1};
    tf_eager *bbase = tft_constant(e.rt, TF_BOOL, 1, s4, bb, 4),
             *bupd = tft_constant(e.rt, TF_BOOL, 1, s3, bu, 3);
    const tf_gather_mode sel = TF_GATHER_INDEX_SELECT;
    TFT_EXPECT_FAIL(tf_session_scatter(e.s, b, 0, ix, uf, sel, TF_SCATTER_ADD, &y),
                    TF_ERR_DTYPE_MISMATCH, "updates", y);
    TFT_EXPECT_FAIL(tf_session_scatter(e.s, b, 0, ix, u2, sel, TF_SCATTER_ADD, &y),
                    TF_ERR_SHAPE_MISMATCH, "updates", y);
    TFT_EXPECT_FAIL(tf_session_scatter(e.s, b, 0, ix, u, sel, (tf_scatter_combine)5, &y),
                    TF_ERR_VALIDATION, "combine", y);
    TFT_EXPECT_FAIL(tf_session_scatter(e.s, b, 1, ix, u, sel, TF_SCATTER_ADD, &y),
                    TF_ERR_AXIS_OUT_OF_BOUNDS, "axis", y);
    TFT_EXPECT_FAIL(tf_session_scatter(e.s, b, 0, ix, u, (tf_gather_mode)3, TF_SCATTER_ADD, &y),
                    TF_ERR_VALIDATION, "mode", y);
    TFT_EXPECT_FAIL(tf_session_scatter(e.s, b, 0, u, u, sel, TF_SCATTER_ADD, &y),
                    TF_ERR_DTYPE_MISMATCH, "index", y);
    TFT_EXPECT_FAIL(tf_session_scatter(e.s, b, 0, ix, NULL, sel, TF_SCATTER_ADD, &y),
                    TF_ERR_VALIDATION, "updates", y);
    TFT_EXPECT_FAIL(tf_session_scatter(e.s, bbase, 0, ix, bupd, sel, TF_SCATTER_ADD, &y),
                    TF_ERR_DTYPE_MISMATCH, "base", y);
    TFT_EXPECT_FAIL(tf_session_scatter(e.s, b, 0, ibad, u, sel, TF_SCATTER_REPLACE, &y),
                    TF_ERR_OUT_OF_RANGE, NULL, y);
    /* bool REPLACE is fine */
    TF_ASSERT_OK(tf_session_scatter(e.s, bbase, 0, ix, bupd, sel, TF_SCATTER_REPLACE, &y));
    tf_eager_release(y);
    tf_eager_release(bbase);
    tf_eager_release(bupd);
    tf_eager_release(ix);
    tf_eager_release(ibad);
    tf_eager_release(b);
    tf_eager_release(u);
    tf_eager_release(u2);
    tf_eager_release(uf);
    tft_env_end(&e);
}

/* ===================================================================== */
/* dynamic_slice                                                          */
/* ===================================================================== */

static void dynamic_slice_values(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    int64_t s5[1] = {5};
    tf_eager *x = counting(e.rt, 1, s5), *y = NULL;
    int64_t size3[1] = {3}, at3[1] = {3}, atneg[1] = {-2};
    int64_t w3[1] = {3};
    double clamped_hi[3] = {2, 3, 4}, clamped_lo[3] = {0, 1, 2}, mid[3] = {1, 2, 3};
    tf_eager *st = i64_vec(e.rt, 1, at3);
    TF_ASSERT_OK(tf_session_dynamic_slice(e.s, x, st, size3, &y));
    tft_expect_shaped(y, 1, w3, clamped_hi, 3);
    tf_eager_release(y);
    tf_eager_release(st);
    st = i64_vec(e.rt, 1, atneg);
    TF_ASSERT_OK(tf_session_dynamic_slice(e.s, x, st, size3, &y));
    tft_expect_shaped(y, 1, w3, clamped_lo, 3);
    tf_eager_release(y);
    tf_eager_release(st);
    int32_t at1_32[1] = {1};
    int64_t s1[1] = {1};
    st = tft_constant(e.rt, TF_I32, 1, s1, at1_32, 1);
    TF_ASSERT_OK(tf_session_dynamic_slice(e.s, x, st, size3, &y));
    tft_expect_shaped(y, 1, w3, mid, 3);
    tf_eager_release(y);
    tf_eager_release(st);

    /* 2-D, x(i, j) = i + 4j on [4,3]: block [2,2] at (1, 5) -> (1, 1) */
    int64_t s43[2] = {4, 3}, sz[2] = {2, 2}, at[2] = {1, 5};
    tf_eager *x2 = counting(e.rt, 2, s43);
    st = i64_vec(e.rt, 2, at);
    TF_ASSERT_OK(tf_session_dynamic_slice(e.s, x2, st, sz, &y));
    double want[4] = {5, 6, 9, 10};
    tft_expect_shaped(y, 2, sz, want, 4);
    tf_eager_release(y);
    tf_eager_release(st);
    tf_eager_release(x2);
    tf_eager_release(x);
    tft_env_end(&e);
}

typedef struct dslice_args {
    tf_tensor *starts; /* host */
    int64_t sizes[4];
} dslice_args;

static tf_status dslice_fn(tf_session *s, tf_eager *const *xs, size_t n, void *user, tf_eager **out)
{
    const dslice_args *a = user;
    tf_eager *st = index_in(s, a->starts);
    tf_status r = tf_session_dynamic_slice(s, xs[0], st, a->sizes, out);
    tf_eager_release(st);
    return r;
}

static void dynamic_slice_grad(void **state)
{
    (void)state;
    unsigned seed = 71;
    int64_t s54[2] = {5, 4}, s2[1] = {2}, at[2] = {4, -1}, in[2] = {1, 1}, s7[1] = {7};
    dslice_args a = {index_host(1, s2, at), {2, 3}}; /* clamped to (3, 0) */
    tf_tensor *x[1] = {rnd(2, s54, &seed)};
    check("dynamic_slice clamped", dslice_fn, &a, x, 1);
    dslice_args b = {index_host(1, s2, in), {3, 2}};
    x[0] = rnd_t(s54, &seed);
    check("dynamic_slice transposed", dslice_fn, &b, x, 1);
    int64_t s1[1] = {1}, at2[1] = {2};
    dslice_args c = {index_host(1, s1, at2), {0}};
    x[0] = rnd(1, s7, &seed);
    check("dynamic_slice empty", dslice_fn, &c, x, 1);
    /* differentiating the VJP differentiates dynamic_update_slice */
    x[0] = rnd(2, s54, &seed);
    check2("dynamic_slice second order (clamped)", dslice_fn, &a, x, 1);
    x[0] = rnd(2, s54, &seed);
    check2("dynamic_slice second order", dslice_fn, &b, x, 1);
    tf_tensor_release(a.starts);
    tf_tensor_release(b.starts);
    tf_tensor_release(c.starts);
}

static void dynamic_slice_errors(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    int64_t s43[2] = {4, 3}, s2[1] = {2};
    tf_eager *x = counting(e.rt, 2, s43), *y;
    int64_t at[2] = {0, 0}, at3[3] = {0, 0, 0};
    double fat[2] = {0, 0};
    tf_eager *st = i64_vec(e.rt, 2, at), *st3 = i64_vec(e.rt, 3, at3);
    tf_eager *stf = tft_constant(e.rt, TF_F64, 1, s2, fat, 2);
    int64_t sz[2] = {2, 2}, big[2] = {5, 1}, neg[2] = {1, -1};
    TFT_EXPECT_FAIL(tf_session_dynamic_slice(e.s, x, stf, sz, &y), TF_ERR_DTYPE_MISMATCH, "starts",
                    y);
    TFT_EXPECT_FAIL(tf_session_dynamic_slice(e.s, x, st3, sz, &y), TF_ERR_SHAPE_MISMATCH, "starts",
                    y);
    TFT_EXPECT_FAIL(tf_session_dynamic_slice(e.s, x, st, big, &y), TF_ERR_SHAPE_MISMATCH, "sizes",
                    y);
    TFT_EXPECT_FAIL(tf_session_dynamic_slice(e.s, x, st, neg, &y), TF_ERR_VALIDATION, "sizes", y);
    TFT_EXPECT_FAIL(tf_session_dynamic_slice(e.s, x, st, NULL, &y), TF_ERR_VALIDATION, "sizes", y);
    TFT_EXPECT_FAIL(tf_session_dynamic_slice(e.s, x, NULL, sz, &y), TF_ERR_VALIDATION, "starts", y);
    TFT_EXPECT_FAIL(tf_session_dynamic_slice(e.s, NULL, st, sz, &y), TF_ERR_VALIDATION, "x", y);
    tf_eager_release(st);
    tf_eager_release(st3);
    tf_eager_release(stf);
    tf_eager_release(x);
    tft_env_end(&e);
}

/* ===================================================================== */
/* Recording                                                              */
/* ===================================================================== */

/* backward through a chain of these ops accumulates into the variable. */
static void backward_through_chain(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    int64_t s3[1] = {3};
    double v[3] = {1, 2, 3};
    tf_tensor *t = tft_host(TF_F64, 1, s3, v, 3);
    tf_eager *x = NULL;
    TF_ASSERT_OK(tf_runtime_variable_from(e.rt, t, &x));
    /* y = sum(pad(concat(x, x[::2]))) with a repeated index_select in between */
    int64_t start[1] = {0}, limit[1] = {3}, stride[1] = {2}, lo[1] = {1}, hi[1] = {1}, in[1] = {1};
    int64_t idx[4] = {0, 0, 4, 1};
    tf_eager *sl = NULL, *cat = NULL, *sel = NULL, *pad = NULL, *sum = NULL;
    tf_eager *ix = i64_vec(e.rt, 4, idx);
    TF_ASSERT_OK(tf_session_slice(e.s, x, start, limit, stride, &sl));
    tf_eager *pair[2] = {x, sl};
    TF_ASSERT_OK(tf_session_concatenate(e.s, pair, 2, 0, &cat));
    TF_ASSERT_OK(tf_session_index_select(e.s, cat, 0, ix, &sel));
    TF_ASSERT_OK(tf_session_pad(e.s, sel, lo, hi, in, 0.0, &pad));
    TF_ASSERT_OK(tf_session_reduce_sum(e.s, pad, NULL, 0, &sum));
    assert_true(tf_eager_tracks_grad(sum));
    TF_ASSERT_OK(tf_eager_backward(sum, g_cpu));
    tf_tensor *g = NULL;
    TF_ASSERT_OK(tf_eager_grad(x, &g));
    /* cat = [x0, x1, x2, x0, x2]; picks 0, 0, 4 (x2), 1 */
    double want[3] = {2, 1, 1}, got[3];
    TF_ASSERT_OK(tf_tensor_copy_to_host(g, TF_F64, got, 3));
    for (int i = 0; i < 3; i++)
        assert_true(got[i] == want[i]);
    tf_tensor_release(g);
    tf_eager_release(sum);
    tf_eager_release(pad);
    tf_eager_release(sel);
    tf_eager_release(cat);
    tf_eager_release(sl);
    tf_eager_release(ix);
    tf_eager_release(x);
    tf_tensor_release(t);
    tft_env_end(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(slice_values),
        cmocka_unit_test(slice_grad),
        cmocka_unit_test(slice_errors),
        cmocka_unit_test(pad_values),
        cmocka_unit_test(pad_grad),
        cmocka_unit_test(pad_errors),
        cmocka_unit_test(pad_extremes),
        cmocka_unit_test(concatenate_values),
        cmocka_unit_test(concatenate_grad),
        cmocka_unit_test(stack_values_and_grad),
        cmocka_unit_test(concatenate_errors),
        cmocka_unit_test(gather_values),
        cmocka_unit_test(gather_grad),
        cmocka_unit_test(gather_errors),
        cmocka_unit_test(scatter_values),
        cmocka_unit_test(scatter_grad),
        cmocka_unit_test(scatter_replace_winners),
        cmocka_unit_test(scatter_errors),
        cmocka_unit_test(dynamic_slice_values),
        cmocka_unit_test(dynamic_slice_grad),
        cmocka_unit_test(dynamic_slice_errors),
        cmocka_unit_test(backward_through_chain),
    };
    return cmocka_run_group_tests(tests, tft_cpu_setup, tft_cpu_teardown);
}
