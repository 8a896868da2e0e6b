/*
 * test_ops_triangle.c - the matrix ops on the last two axes: tril, triu,
 * diagonal and diag_embed.
 *
 * Forward values against hand-computed references (row i on axis rank-2,
 * column j on axis rank-1; column-major data), gradient checks in reverse
 * and forward mode on square, wide, tall, batched, empty and non-contiguous
 * matrices, second derivatives through each op's rules, and every error
 * path (status, argument, *out untouched).
 */
#include <tenferro/ops.h>

#include "tf_eager_test.h"
#include "tf_gradcheck.h"

/* ===================================================================== */
/* Helpers                                                                */
/* ===================================================================== */

/* f64 with values 1, 2, 3, ... in column-major order. */
static tf_eager *counting(tf_runtime *rt, size_t rank, const int64_t *shape)
{
    size_t n = 1;
    for (size_t d = 0; d < rank; d++)
        n *= (size_t)shape[d];
    double v[64];
    assert_true(n <= 64);
    for (size_t i = 0; i < n; i++)
        v[i] = (double)(i + 1);
    return tft_constant(rt, TF_F64, rank, shape, v, n);
}

static tf_tensor *rnd(size_t rank, const int64_t *shape, unsigned *seed)
{
    return gc_random(rank, shape, -1.0, 1.0, seed);
}

/* A view of a fresh random tensor with its last two axes swapped: [shape]. */
static tf_tensor *rnd_t(size_t rank, const int64_t *shape, unsigned *seed)
{
    int64_t sw[8];
    int perm[8];
    for (size_t d = 0; d < rank; d++) {
        sw[d] = shape[d];
        perm[d] = (int)d;
    }
    sw[rank - 2] = shape[rank - 1];
    sw[rank - 1] = shape[rank - 2];
    perm[rank - 2] = (int)rank - 1;
    perm[rank - 1] = (int)rank - 2;
    tf_tensor *base = rnd(rank, sw, seed), *v = NULL;
    TF_ASSERT_OK(tf_tensor_transpose(base, perm, &v));
    tf_tensor_release(base);
    return v;
}

/* A view reversed along axis 0 of a fresh random tensor. */
static tf_tensor *rnd_rev(size_t rank, const int64_t *shape, unsigned *seed)
{
    int axis = 0;
    tf_tensor *base = rnd(rank, shape, seed), *v = NULL;
    TF_ASSERT_OK(tf_tensor_reverse(base, 1, &axis, &v));
    tf_tensor_release(base);
    return v;
}

static void check(const char *what, gc_fn fn, void *user, tf_tensor *x)
{
    gc_check(what, g_cpu, fn, user, &x, 1, NULL);
    tf_tensor_release(x);
}

static void check2(const char *what, gc_fn fn, void *user, tf_tensor *x)
{
    gc_order2 o = {fn, user};
    check(what, gc_second_order, &o, x);
}

/* ===================================================================== */
/* tril and triu                                                          */
/* ===================================================================== */

static void triangle_values(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    int64_t s34[2] = {3, 4};
    tf_eager *x = counting(e.rt, 2, s34), *y = NULL; /* x(i, j) = 1 + i + 3j */
    TF_ASSERT_OK(tf_session_tril(e.s, x, 0, &y));
    double lower[12] = {1, 2, 3, 0, 5, 6, 0, 0, 9, 0, 0, 0};
    tft_expect_shaped(y, 2, s34, lower, 12);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_tril(e.s, x, -1, &y));
    double strict[12] = {0, 2, 3, 0, 0, 6, 0, 0, 0, 0, 0, 0};
    tft_expect_shaped(y, 2, s34, strict, 12);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_triu(e.s, x, 1, &y));
    double upper1[12] = {0, 0, 0, 4, 0, 0, 7, 8, 0, 10, 11, 12};
    tft_expect_shaped(y, 2, s34, upper1, 12);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_triu(e.s, x, 0, &y));
    double upper0[12] = {1, 0, 0, 4, 5, 0, 7, 8, 9, 10, 11, 12};
    tft_expect_shaped(y, 2, s34, upper0, 12);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_triu(e.s, x, -2, &y));
    double upperm2[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    tft_expect_shaped(y, 2, s34, upperm2, 12);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_tril(e.s, x, INT64_MAX, &y));
    tft_expect_shaped(y, 2, s34, upperm2, 12);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_tril(e.s, x, INT64_MIN, &y));
    double zeros[12] = {0};
    tft_expect_shaped(y, 2, s34, zeros, 12);
    tf_eager_release(y);
    tf_eager_release(x);

    /* batched: each [2,2] matrix */
    int64_t s222[3] = {2, 2, 2};
    x = counting(e.rt, 3, s222);
    TF_ASSERT_OK(tf_session_tril(e.s, x, 0, &y));
    double batched[8] = {1, 2, 3, 4, 0, 0, 7, 8}; /* x(b, i, j) = 1 + b + 2i + 4j */
    tft_expect_shaped(y, 3, s222, batched, 8);
    tf_eager_release(y);
    tf_eager_release(x);

    /* an empty batch of huge matrices: no element reads the mask, so none of
       its 2^40 entries is made (an OOM before) */
    int64_t s0big[3] = {0, (int64_t)1 << 20, (int64_t)1 << 20};
    double none = 0;
    x = tft_constant(e.rt, TF_F64, 3, s0big, &none, 0);
    TF_ASSERT_OK(tf_session_tril(e.s, x, 0, &y));
    tft_expect_shaped(y, 3, s0big, &none, 0);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_triu(e.s, x, 3, &y));
    tft_expect_shaped(y, 3, s0big, &none, 0);
    tf_eager_release(y);
    tf_eager_release(x);

    /* integers */
    int32_t iv[4] = {1, 2, 3, 4};
    int64_t s22[2] = {2, 2};
    x = tft_constant(e.rt, TF_I32, 2, s22, iv, 4);
    TF_ASSERT_OK(tf_session_triu(e.s, x, 0, &y));
    assert_int_equal(tf_tensor_dtype(tf_eager_value(y)), TF_I32);
    double iu[4] = {1, 0, 3, 4};
    tft_expect_shaped(y, 2, s22, iu, 4);
    tf_eager_release(y);
    tf_eager_release(x);
    tft_env_end(&e);
}

typedef struct tri_args {
    int64_t k;
    int upper;
} tri_args;

static tf_status tri_fn(tf_session *s, tf_eager *const *xs, size_t n, void *user, tf_eager **out)
{
    const tri_args *a = user;
    return a->upper ? tf_session_triu(s, xs[0], a->k, out) : tf_session_tril(s, xs[0], a->k, out);
}

static void triangle_grad(void **state)
{
    (void)state;
    unsigned seed = 81;
    int64_t s34[2] = {3, 4}, s43[2] = {4, 3}, s233[3] = {2, 3, 3}, s03[2] = {0, 3};
    tri_args lo0 = {0, 0}, lo1 = {1, 0}, upm1 = {-1, 1}, up2 = {2, 1};
    check("tril [3,4]", tri_fn, &lo0, rnd(2, s34, &seed));
    check("tril k=1 [4,3]", tri_fn, &lo1, rnd(2, s43, &seed));
    check("triu k=-1 [2,3,3]", tri_fn, &upm1, rnd(3, s233, &seed));
    check("triu k=2 transposed [3,4]", tri_fn, &up2, rnd_t(2, s34, &seed));
    check("tril reversed [2,3,3]", tri_fn, &lo0, rnd_rev(3, s233, &seed));
    check("tril [0,3]", tri_fn, &lo0, rnd(2, s03, &seed));
    check2("tril second order", tri_fn, &lo1, rnd(2, s34, &seed));
    check2("triu second order", tri_fn, &upm1, rnd(3, s233, &seed));
}

static void triangle_errors(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    int64_t s3[1] = {3};
    tf_eager *v = counting(e.rt, 1, s3), *y;
    double one = 1;
    tf_eager *sc = tft_constant(e.rt, TF_F64, 0, NULL, &one, 1);
    TFT_EXPECT_FAIL(tf_session_tril(e.s, v, 0, &y), TF_ERR_SHAPE_MISMATCH, "x", y);
    TFT_EXPECT_FAIL(tf_session_triu(e.s, sc, 0, &y), TF_ERR_SHAPE_MISMATCH, "x", y);
    TFT_EXPECT_FAIL(tf_session_tril(e.s, NULL, 0, &y), TF_ERR_VALIDATION, "x", y);
    TFT_EXPECT_FAIL(tf_session_triu(NULL, v, 0, &y), TF_ERR_VALIDATION, "session", y);
    TF_ASSERT_STATUS(tf_session_tril(e.s, v, 0, NULL), TF_ERR_VALIDATION);
    tf_eager_release(sc);
    tf_eager_release(v);
    tft_env_end(&e);
}

/* ===================================================================== */
/* diagonal and diag_embed                                                */
/* ===================================================================== */

static void diagonal_values(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    int64_t s34[2] = {3, 4}, s43[2] = {4, 3}, s3[1] = {3};
    tf_eager *x = counting(e.rt, 2, s34), *y = NULL;
    TF_ASSERT_OK(tf_session_diagonal(e.s, x, &y));
    double d34[3] = {1, 5, 9};
    tft_expect_shaped(y, 1, s3, d34, 3);
    assert_true(tf_tensor_shares_storage(tf_eager_value(x), tf_eager_value(y)));
    tf_eager_release(y);
    tf_eager_release(x);
    x = counting(e.rt, 2, s43);
    TF_ASSERT_OK(tf_session_diagonal(e.s, x, &y));
    double d43[3] = {1, 6, 11};
    tft_expect_shaped(y, 1, s3, d43, 3);
    tf_eager_release(y);
    tf_eager_release(x);
    /* batched [2,2,3]: x(b, i, j) = 1 + b + 2i + 4j; diagonal [2,2] */
    int64_t s223[3] = {2, 2, 3}, s22[2] = {2, 2};
    x = counting(e.rt, 3, s223);
    TF_ASSERT_OK(tf_session_diagonal(e.s, x, &y));
    double db[4] = {1, 2, 7, 8};
    tft_expect_shaped(y, 2, s22, db, 4);
    tf_eager_release(y);
    tf_eager_release(x);
    tft_env_end(&e);
}

static void diag_embed_values(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    int64_t s3[1] = {3}, s33[2] = {3, 3};
    tf_eager *x = counting(e.rt, 1, s3), *y = NULL;
    TF_ASSERT_OK(tf_session_diag_embed(e.s, x, &y));
    double m[9] = {1, 0, 0, 0, 2, 0, 0, 0, 3};
    tft_expect_shaped(y, 2, s33, m, 9);
    tf_eager_release(y);
    tf_eager_release(x);
    /* batched: x [2,2] (batch first, diagonal last) -> [2,2,2], out(b, i, i) = x(b, i) */
    int64_t s22[2] = {2, 2}, s222[3] = {2, 2, 2};
    x = counting(e.rt, 2, s22);
    TF_ASSERT_OK(tf_session_diag_embed(e.s, x, &y));
    double mb[8] = {1, 2, 0, 0, 0, 0, 3, 4};
    tft_expect_shaped(y, 3, s222, mb, 8);
    tf_eager_release(y);
    tf_eager_release(x);
    /* integers, and an empty diagonal */
    int32_t iv[2] = {-1, 7};
    int64_t s2[1] = {2}, s0[1] = {0}, s00[2] = {0, 0};
    x = tft_constant(e.rt, TF_I32, 1, s2, iv, 2);
    TF_ASSERT_OK(tf_session_diag_embed(e.s, x, &y));
    double mi[4] = {-1, 0, 0, 7};
    tft_expect_shaped(y, 2, s22, mi, 4);
    tf_eager_release(y);
    tf_eager_release(x);
    x = tft_constant(e.rt, TF_F64, 1, s0, NULL, 0);
    TF_ASSERT_OK(tf_session_diag_embed(e.s, x, &y));
    tft_expect_shaped(y, 2, s00, NULL, 0);
    tf_eager_release(y);
    tf_eager_release(x);
    tft_env_end(&e);
}

static tf_status diagonal_fn(tf_session *s, tf_eager *const *xs, size_t n, void *user,
                             tf_eager **out)
{
    return tf_session_diagonal(s, xs[0], out);
}

static tf_status diag_embed_fn(tf_session *s, tf_eager *const *xs, size_t n, void *user,
                               tf_eager **out)
{
    return tf_session_diag_embed(s, xs[0], out);
}

static void diag_grad(void **state)
{
    (void)state;
    unsigned seed = 91;
    int64_t s34[2] = {3, 4}, s43[2] = {4, 3}, s33[2] = {3, 3}, s234[3] = {2, 3, 4};
    int64_t s3[1] = {3}, s24[2] = {2, 4}, s05[2] = {0, 5};
    check("diagonal [3,4]", diagonal_fn, NULL, rnd(2, s34, &seed));
    check("diagonal [4,3]", diagonal_fn, NULL, rnd(2, s43, &seed));
    check("diagonal [3,3]", diagonal_fn, NULL, rnd(2, s33, &seed));
    check("diagonal [2,3,4]", diagonal_fn, NULL, rnd(3, s234, &seed));
    check("diagonal transposed [3,4]", diagonal_fn, NULL, rnd_t(2, s34, &seed));
    check("diagonal reversed [2,3,4]", diagonal_fn, NULL, rnd_rev(3, s234, &seed));
    check("diagonal [0,5]", diagonal_fn, NULL, rnd(2, s05, &seed));
    check("diag_embed [3]", diag_embed_fn, NULL, rnd(1, s3, &seed));
    check("diag_embed [2,4]", diag_embed_fn, NULL, rnd(2, s24, &seed));
    check("diag_embed transposed [2,4]", diag_embed_fn, NULL, rnd_t(2, s24, &seed));
    check("diag_embed reversed [2,4]", diag_embed_fn, NULL, rnd_rev(2, s24, &seed));
    check2("diagonal second order [3,4]", diagonal_fn, NULL, rnd(2, s34, &seed));
    check2("diagonal second order [4,3]", diagonal_fn, NULL, rnd(2, s43, &seed));
    check2("diag_embed second order", diag_embed_fn, NULL, rnd(2, s24, &seed));
}

static void diag_errors(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    int64_t s3[1] = {3}, s8[8] = {1, 1, 1, 1, 1, 1, 1, 2}, s7[7] = {1, 1, 1, 1, 1, 1, 2};
    tf_eager *v = counting(e.rt, 1, s3), *y;
    double one = 1;
    tf_eager *sc = tft_constant(e.rt, TF_F64, 0, NULL, &one, 1);
    TFT_EXPECT_FAIL(tf_session_diagonal(e.s, v, &y), TF_ERR_SHAPE_MISMATCH, "x", y);
    TFT_EXPECT_FAIL(tf_session_diagonal(e.s, NULL, &y), TF_ERR_VALIDATION, "x", y);
    TFT_EXPECT_FAIL(tf_session_diag_embed(e.s, sc, &y), TF_ERR_SHAPE_MISMATCH, "x", y);
    TFT_EXPECT_FAIL(tf_session_diag_embed(e.s, NULL, &y), TF_ERR_VALIDATION, "x", y);
    tf_eager *r8 = counting(e.rt, 8, s8);
    TFT_EXPECT_FAIL(tf_session_diag_embed(e.s, r8, &y), TF_ERR_RANK_TOO_LARGE, "x", y);
    /* rank 7 still fits */
    tf_eager *r7 = counting(e.rt, 7, s7);
    TF_ASSERT_OK(tf_session_diag_embed(e.s, r7, &y));
    assert_int_equal(tf_tensor_rank(tf_eager_value(y)), 8);
    tf_eager_release(y);
    TF_ASSERT_STATUS(tf_session_diagonal(e.s, v, NULL), TF_ERR_VALIDATION);
    tf_eager_release(r7);
    tf_eager_release(r8);
    tf_eager_release(sc);
    tf_eager_release(v);
    tft_env_end(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(triangle_values),   cmocka_unit_test(triangle_grad),
        cmocka_unit_test(triangle_errors),   cmocka_unit_test(diagonal_values),
        cmocka_unit_test(diag_embed_values), cmocka_unit_test(diag_grad),
        cmocka_unit_test(diag_errors),
    };
    return cmocka_run_group_tests(tests, tft_cpu_setup, tft_cpu_teardown);
}
