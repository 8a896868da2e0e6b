/*
 * tf_eager_test.c - the helpers of tf_eager_test.h, shared by the eager
 * runtime and extension tests so that each test program keeps only what is
 * particular to it.
 */
#include "tf_eager_test.h"

#include <math.h>

tf_engine *g_cpu;
int tft_sentinel_storage;

int tft_cpu_setup(void **state)
{
    (void)state;
    return tf_engine_open("cpu", 1, &g_cpu) == TF_OK ? 0 : -1;
}

int tft_cpu_teardown(void **state)
{
    (void)state;
    tf_engine_destroy(g_cpu);
    return 0;
}

tft_env tft_env_begin(void)
{
    tft_env e;
    TF_ASSERT_OK(tf_runtime_create(&e.rt));
    TF_ASSERT_OK(tf_session_begin(e.rt, g_cpu, &e.s));
    return e;
}

void tft_env_end(tft_env *e)
{
    tf_session_end(e->s);
    tf_runtime_release(e->rt);
}

tf_tensor *tft_host(tf_dtype dtype, size_t rank, const int64_t *shape, const void *data, size_t n)
{
    tf_tensor *t = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(dtype, rank, shape, data, n, &t));
    return t;
}

tf_eager *tft_eager(tf_runtime *rt, tf_dtype dtype, int var, size_t rank, const int64_t *shape,
                    const void *data, size_t n)
{
    tf_tensor *t = tft_host(dtype, rank, shape, data, n);
    tf_eager *x = NULL;
    if (var)
        TF_ASSERT_OK(tf_runtime_variable_from(rt, t, &x));
    else
        TF_ASSERT_OK(tf_runtime_constant_from(rt, t, &x));
    tf_tensor_release(t);
    return x;
}

tf_eager *tft_f64(tf_runtime *rt, int var, size_t rank, const int64_t *shape, const double *data,
                  size_t n)
{
    return tft_eager(rt, TF_F64, var, rank, shape, data, n);
}

tf_eager *tft_constant(tf_runtime *rt, tf_dtype dtype, size_t rank, const int64_t *shape,
                       const void *data, size_t n)
{
    return tft_eager(rt, dtype, 0, rank, shape, data, n);
}

tf_eager *tft_grad(tf_runtime *rt, tf_eager *y, tf_eager *x)
{
    tf_eager *g = NULL;
    TF_ASSERT_OK(tf_runtime_grad(rt, g_cpu, y, x, &g));
    return g;
}

void tft_expect_shape(const tf_eager *x, size_t rank, const int64_t *shape)
{
    const tf_tensor *t = tf_eager_value(x);
    assert_int_equal(tf_tensor_rank(t), rank);
    for (size_t i = 0; i < rank; i++)
        assert_int_equal(tf_tensor_shape(t)[i], shape[i]);
}

void tft_expect_near(const tf_eager *x, const double *want, size_t n, double rel)
{
    const tf_tensor *t = tf_eager_value(x);
    assert_int_equal(tf_tensor_numel(t), n);
    double got[64];
    assert_true(n <= 64);
    if (n)
        TF_ASSERT_OK(tf_tensor_copy_to_host(t, TF_F64, got, n));
    for (size_t i = 0; i < n; i++) {
        double w = want[i], g = got[i];
        int ok = isnan(w) ? isnan(g) : isinf(w) || w == 0 ? g == w : fabs(g - w) <= rel * fabs(w);
        if (!ok)
            fail_msg("element %zu: got %.17g, want %.17g", i, g, w);
    }
}

void tft_expect_shaped(const tf_eager *x, size_t rank, const int64_t *shape, const double *want,
                       size_t n)
{
    assert_non_null(x);
    const tf_tensor *t = tf_eager_value(x);
    assert_int_equal(tf_tensor_rank(t), rank);
    for (size_t d = 0; d < rank; d++)
        assert_int_equal(tf_tensor_shape(t)[d], shape[d]);
    assert_int_equal(tf_tensor_numel(t), n);
    double got[128];
    assert_true(n <= 128);
    if (tf_tensor_dtype(t) == TF_I32) {
        int32_t b[128];
        TF_ASSERT_OK(tf_tensor_copy_to_host(t, TF_I32, b, n));
        for (size_t i = 0; i < n; i++)
            got[i] = b[i];
    } else if (n) {
        TF_ASSERT_OK(tf_tensor_copy_to_host(t, TF_F64, got, n));
    }
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i])
            fail_msg("element %zu: got %.17g, want %.17g", i, got[i], want[i]);
}

size_t tft_read_parts(const tf_tensor *t, double *out, size_t cap)
{
    size_t n = tf_tensor_numel(t), per = tf_dtype_is_complex(tf_tensor_dtype(t)) ? 2 : 1;
    tf_dtype dt = tf_tensor_dtype(t);
    assert_true(dt == TF_C128 || dt == TF_F64);
    assert_true(n * per <= cap);
    if (n)
        TF_ASSERT_OK(tf_tensor_copy_to_host(t, dt, out, n));
    return n * per;
}

void tft_expect_values(const tf_tensor *t, const double *want, size_t n)
{
    double got[16];
    assert_non_null(t);
    assert_int_equal(tf_tensor_numel(t), n);
    TF_ASSERT_OK(tf_tensor_copy_to_host(t, TF_F64, got, n));
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i])
            fail_msg("element %zu: got %.17g, want %.17g", i, got[i], want[i]);
}

void tft_expect_error(tf_status st, tf_status want, const char *arg, tf_eager *out,
                      tf_eager *sentinel)
{
    if (st != want)
        fail_msg("got %s, want %s (%s)", tf_status_name(st), tf_status_name(want),
                 tf_error_message());
    if (arg)
        assert_string_equal(tf_error_argument(), arg);
    assert_ptr_equal(out, sentinel);
}
