/*
 * train_test.c - the helpers of train_test.h.
 */
#include "train_test.h"

#include <math.h>

tf_eager *trt_param(tf_runtime *rt, size_t rank, const int64_t *shape, const double *v, size_t n)
{
    return trt_param_of(rt, TF_F64, rank, shape, v, n);
}

tf_eager *trt_param_of(tf_runtime *rt, tf_dtype dtype, size_t rank, const int64_t *shape,
                       const void *v, size_t n)
{
    tf_tensor *host = tft_host(dtype, rank, shape, v, n), *dev = NULL;
    TF_ASSERT_OK(tf_engine_upload(g_cpu, host, &dev));
    tf_eager *x = NULL;
    TF_ASSERT_OK(tf_runtime_variable_from(rt, dev, &x));
    tf_tensor_release(host);
    tf_tensor_release(dev);
    return x;
}

void trt_read(const tf_tensor *x, double *out, size_t n)
{
    TF_ASSERT_OK(tf_tensor_copy_to_host(x, TF_F64, out, n));
}

void trt_grad(tf_eager *x, double *out, size_t n)
{
    tf_tensor *g = NULL;
    TF_ASSERT_OK(tf_eager_grad(x, &g));
    assert_non_null(g);
    trt_read(g, out, n);
    tf_tensor_release(g);
}

void trt_expect_fail(tf_status st, tf_status want, const char *arg)
{
    if (st != want)
        fail_msg("got %s, expected %s (%s)", tf_status_name(st), tf_status_name(want),
                 tf_train_error_message());
    assert_int_equal(tf_train_error_status(), want);
    assert_true(tf_train_error_message()[0] != '\0');
    if (arg)
        assert_string_equal(tf_train_error_argument(), arg);
}

void trt_expect_close(const char *what, const double *a, const double *b, size_t n, double tol)
{
    for (size_t i = 0; i < n; i++) {
        double scale = fabs(b[i]) > 1 ? fabs(b[i]) : 1;
        if (!(fabs(a[i] - b[i]) <= tol * scale))
            fail_msg("%s[%zu]: got %.17g, expected %.17g", what, i, a[i], b[i]);
    }
}

void trt_expect_bits(const char *what, const double *a, const double *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof a[i]) != 0)
            fail_msg("%s[%zu]: got %.17g, expected the bits of %.17g", what, i, a[i], b[i]);
}
