/*
 * test_seed.c - every example of the seed specification (the EagerRuntime
 * API of tenferro-ad), translated to C, each as its own test with the
 * seed's assertions.
 */
#include <tenferro/ops.h>

#include "tf_eager_test.h"

/* Tensor::from_vec_col_major(shape, data) for f64. */
static tf_tensor *f64_tensor(size_t rank, const int64_t *shape, const double *data, size_t n)
{
    tf_tensor *t = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, rank, shape, data, n, &t));
    return t;
}

static tf_eager *constant(tf_runtime *rt, size_t rank, const int64_t *shape, const double *data,
                          size_t n)
{
    tf_tensor *t = f64_tensor(rank, shape, data, n);
    tf_eager *x = NULL;
    TF_ASSERT_OK(tf_eager_from_tensor(t, rt, &x));
    tf_tensor_release(t);
    return x;
}

static tf_eager *variable(tf_runtime *rt, size_t rank, const int64_t *shape, const double *data,
                          size_t n)
{
    tf_tensor *t = f64_tensor(rank, shape, data, n);
    tf_eager *x = NULL;
    TF_ASSERT_OK(tf_eager_requires_grad(t, rt, &x));
    tf_tensor_release(t);
    return x;
}

/* Asserts the eager tensor's value is exactly `want`. */
static void assert_values(const tf_eager *x, const double *want, size_t n)
{
    const void *data;
    size_t count;
    TF_ASSERT_OK(tf_tensor_data(tf_eager_value(x), TF_F64, &data, &count));
    assert_int_equal(count, n);
    for (size_t i = 0; i < n; i++)
        assert_true(((const double *)data)[i] == want[i]);
}

static void assert_tensor_values(const tf_tensor *t, const double *want, size_t n)
{
    const void *data;
    size_t count;
    TF_ASSERT_OK(tf_tensor_data(t, TF_F64, &data, &count));
    assert_int_equal(count, n);
    for (size_t i = 0; i < n; i++)
        assert_true(((const double *)data)[i] == want[i]);
}

static const void *tf_tensor_data_or_null(const tf_tensor *t)
{
    const void *d = NULL;
    size_t n;
    TF_ASSERT_OK(tf_tensor_data(t, TF_F64, &d, &n));
    return d;
}

static const int64_t k1[] = {1}, k2[] = {2}, k3[] = {3};

/* ---- the struct example and with_eager_session ---- */

typedef struct add_args {
    tf_eager *x, *y, *z;
} add_args;

static tf_status add_cb(tf_session *s, void *user)
{
    add_args *a = user;
    return tf_session_add(s, a->x, a->y, &a->z);
}

static void test_struct_example_add(void **state)
{
    (void)state;
    tf_runtime *ctx;
    TF_ASSERT_OK(tf_runtime_create(&ctx));
    add_args a = {constant(ctx, 1, k1, (double[]){1.0}, 1), constant(ctx, 1, k1, (double[]){2.0}, 1),
                  NULL};
    TF_ASSERT_OK(tf_runtime_with_session(ctx, g_cpu, add_cb, &a));
    assert_values(a.z, (double[]){3.0}, 1);
    tf_eager_release(a.x);
    tf_eager_release(a.y);
    tf_eager_release(a.z);
    tf_runtime_release(ctx);
}

static void test_with_eager_session(void **state)
{
    (void)state;
    tf_runtime *ctx;
    TF_ASSERT_OK(tf_runtime_create(&ctx));
    tf_engine *engine; /* CpuEngine::serial() */
    TF_ASSERT_OK(tf_engine_open("cpu", 1, &engine));
    add_args a = {constant(ctx, 1, k1, (double[]){1.0}, 1), constant(ctx, 1, k1, (double[]){2.0}, 1),
                  NULL};
    TF_ASSERT_OK(tf_runtime_with_session(ctx, engine, add_cb, &a));
    assert_values(a.z, (double[]){3.0}, 1);
    tf_eager_release(a.x);
    tf_eager_release(a.y);
    tf_eager_release(a.z);
    tf_engine_destroy(engine);
    tf_runtime_release(ctx);
}

/* ---- new, with_ad_context, id ---- */

static void test_new(void **state)
{
    (void)state;
    tf_runtime *ctx;
    TF_ASSERT_OK(tf_runtime_create(&ctx));
    assert_int_equal(tf_runtime_ref_count(ctx), 1);
    tf_runtime_release(ctx);
}

static void test_with_ad_context(void **state)
{
    (void)state;
    tf_ad_context *ad;
    TF_ASSERT_OK(tf_ad_context_create(&ad));
    tf_runtime *ctx;
    TF_ASSERT_OK(tf_runtime_create_with_ad_context(ad, &ctx));
    assert_int_equal(tf_runtime_ref_count(ctx), 1);
    tf_runtime_release(ctx);
    tf_ad_context_release(ad);
}

static void test_id(void **state)
{
    (void)state;
    tf_runtime *ctx, *other;
    TF_ASSERT_OK(tf_runtime_create(&ctx));
    TF_ASSERT_OK(tf_runtime_create(&other));
    assert_true(tf_runtime_id(ctx) != tf_runtime_id(other));
    tf_runtime_release(other);
    tf_runtime_release(ctx);
}

/* ---- no_grad ---- */

static void test_no_grad(void **state)
{
    (void)state;
    tf_runtime *ctx;
    TF_ASSERT_OK(tf_runtime_create(&ctx));
    tf_eager *x = variable(ctx, 1, k1, (double[]){3.0}, 1);
    tf_session *s;
    TF_ASSERT_OK(tf_session_begin(ctx, g_cpu, &s));
    tf_scope guard;
    TF_ASSERT_OK(tf_scope_begin_no_grad(ctx, &guard));
    tf_eager *y;
    TF_ASSERT_OK(tf_session_mul(s, x, x, &y));
    tf_scope_end(&guard);
    tf_session_end(s);
    assert_false(tf_eager_tracks_grad(y));
    tf_eager_release(y);
    tf_eager_release(x);
    tf_runtime_release(ctx);
}

/* ---- caches ---- */

static void test_clear_caches(void **state)
{
    (void)state;
    tf_runtime *ctx;
    TF_ASSERT_OK(tf_runtime_create(&ctx));
    TF_ASSERT_OK(tf_runtime_clear_caches(ctx));
    tf_runtime_stats st;
    TF_ASSERT_OK(tf_runtime_cache_stats(ctx, &st));
    assert_int_equal(st.ad_transforms.entries, 0);
    assert_int_equal(st.prepared_derivatives.entries, 0);
    tf_runtime_release(ctx);
}

static void test_clear_prepared_derivative_cache(void **state)
{
    (void)state;
    tf_runtime *ctx;
    TF_ASSERT_OK(tf_runtime_create(&ctx));
    TF_ASSERT_OK(tf_runtime_clear_prepared_derivative_cache(ctx));
    tf_runtime_stats st;
    TF_ASSERT_OK(tf_runtime_cache_stats(ctx, &st));
    assert_int_equal(st.prepared_derivatives.entries, 0);
    tf_runtime_release(ctx);
}

static void test_cache_stats(void **state)
{
    (void)state;
    tf_runtime *ctx;
    TF_ASSERT_OK(tf_runtime_create(&ctx));
    tf_runtime_stats st;
    TF_ASSERT_OK(tf_runtime_cache_stats(ctx, &st));
    assert_int_equal(st.ad_transforms.entries, 0);
    assert_int_equal(st.prepared_derivatives.entries, 0);
    tf_runtime_release(ctx);
}

static void test_ad_transform_cache_limits(void **state)
{
    (void)state;
    tf_runtime *ctx;
    TF_ASSERT_OK(tf_runtime_create(&ctx));
    tf_cache_limits l;
    TF_ASSERT_OK(tf_runtime_ad_transform_cache_limits(ctx, &l));
    assert_true(l.max_entries > 0);
    tf_runtime_release(ctx);
}

static void test_set_ad_transform_cache_limits(void **state)
{
    (void)state;
    tf_runtime *ctx;
    TF_ASSERT_OK(tf_runtime_create(&ctx));
    tf_cache_limits limits = {.max_entries = 1};
    TF_ASSERT_OK(tf_runtime_set_ad_transform_cache_limits(ctx, &limits));
    tf_cache_limits got;
    TF_ASSERT_OK(tf_runtime_ad_transform_cache_limits(ctx, &got));
    assert_memory_equal(&got, &limits, sizeof got);
    tf_runtime_release(ctx);
}

static void test_clear_ad_transform_caches(void **state)
{
    (void)state;
    tf_runtime *ctx;
    TF_ASSERT_OK(tf_runtime_create(&ctx));
    TF_ASSERT_OK(tf_runtime_clear_ad_transform_caches(ctx));
    tf_runtime_stats st;
    TF_ASSERT_OK(tf_runtime_cache_stats(ctx, &st));
    assert_int_equal(st.ad_transforms.entries, 0);
    tf_runtime_release(ctx);
}

static void test_prepared_derivative_cache_limits(void **state)
{
    (void)state;
    tf_runtime *ctx;
    TF_ASSERT_OK(tf_runtime_create(&ctx));
    tf_cache_limits l;
    TF_ASSERT_OK(tf_runtime_prepared_derivative_cache_limits(ctx, &l));
    assert_true(l.max_entries > 0);
    tf_runtime_release(ctx);
}

static void test_set_prepared_derivative_cache_limits(void **state)
{
    (void)state;
    tf_runtime *ctx;
    TF_ASSERT_OK(tf_runtime_create(&ctx));
    tf_cache_limits limits = {.max_entries = 1};
    TF_ASSERT_OK(tf_runtime_set_prepared_derivative_cache_limits(ctx, &limits));
    tf_cache_limits got;
    TF_ASSERT_OK(tf_runtime_prepared_derivative_cache_limits(ctx, &got));
    assert_memory_equal(&got, &limits, sizeof got);
    tf_runtime_release(ctx);
}

/* ---- grads ---- */

static void test_clear_grads(void **state)
{
    (void)state;
    tf_runtime *ctx;
    TF_ASSERT_OK(tf_runtime_create(&ctx));
    tf_eager *x = variable(ctx, 1, k3, (double[]){1, 2, 3}, 3);
    tf_eager *y = variable(ctx, 1, k3, (double[]){4, 5, 6}, 3);
    tf_session *s;
    TF_ASSERT_OK(tf_session_begin(ctx, g_cpu, &s));
    tf_eager *product, *loss;
    TF_ASSERT_OK(tf_session_mul(s, x, y, &product));
    TF_ASSERT_OK(tf_session_reduce_sum(s, product, (int[]){0}, 1, &loss));
    tf_session_end(s);
    tf_engine *serial;
    TF_ASSERT_OK(tf_engine_open("cpu", 1, &serial));
    TF_ASSERT_OK(tf_eager_backward(loss, serial));
    tf_engine_destroy(serial);

    TF_ASSERT_OK(tf_runtime_clear_grads(ctx));

    tf_tensor *g = (tf_tensor *)1;
    TF_ASSERT_OK(tf_eager_grad(x, &g));
    assert_null(g);
    g = (tf_tensor *)1;
    TF_ASSERT_OK(tf_eager_grad(y, &g));
    assert_null(g);
    tf_eager_release(loss);
    tf_eager_release(product);
    tf_eager_release(y);
    tf_eager_release(x);
    tf_runtime_release(ctx);
}

static void test_constant_from(void **state)
{
    (void)state;
    tf_runtime *ctx;
    TF_ASSERT_OK(tf_runtime_create(&ctx));
    tf_tensor *ct = f64_tensor(1, k2, (double[]){1, 2}, 2);
    tf_eager *c;
    TF_ASSERT_OK(tf_runtime_constant_from(ctx, ct, &c));
    tf_tensor_release(ct);
    tf_eager *x = variable(ctx, 1, k2, (double[]){3, 4}, 2);
    tf_session *s;
    TF_ASSERT_OK(tf_session_begin(ctx, g_cpu, &s));
    tf_eager *z;
    TF_ASSERT_OK(tf_session_add(s, x, c, &z));
    tf_session_end(s);
    assert_values(z, (double[]){4, 6}, 2);
    assert_false(tf_eager_tracks_grad(c));
    tf_eager_release(z);
    tf_eager_release(x);
    tf_eager_release(c);
    tf_runtime_release(ctx);
}

static void test_variable_from(void **state)
{
    (void)state;
    tf_runtime *ctx;
    TF_ASSERT_OK(tf_runtime_create(&ctx));
    tf_tensor *pt = f64_tensor(1, k2, (double[]){1, 2}, 2);
    tf_eager *p;
    TF_ASSERT_OK(tf_runtime_variable_from(ctx, pt, &p));
    tf_tensor_release(pt);
    tf_session *s;
    TF_ASSERT_OK(tf_session_begin(ctx, g_cpu, &s));
    tf_eager *y, *loss;
    TF_ASSERT_OK(tf_session_exp(s, p, &y));
    TF_ASSERT_OK(tf_session_reduce_sum(s, y, (int[]){0}, 1, &loss));
    tf_session_end(s);
    TF_ASSERT_OK(tf_eager_backward(loss, g_cpu));
    tf_tensor *grad;
    TF_ASSERT_OK(tf_eager_grad(p, &grad));
    assert_non_null(grad);
    assert_int_equal(tf_tensor_rank(grad), 1);
    assert_int_equal(tf_tensor_shape(grad)[0], 2);
    /* d/dp sum(exp(p)) = exp(p), computed by the same kernel */
    assert_tensor_values(grad, (const double *)tf_tensor_data_or_null(tf_eager_value(y)), 2);
    tf_tensor_release(grad);
    tf_eager_release(loss);
    tf_eager_release(y);
    tf_eager_release(p);
    tf_runtime_release(ctx);
}

/* ---- functional derivatives ---- */

static void test_grad(void **state)
{
    (void)state;
    tf_runtime *ctx;
    TF_ASSERT_OK(tf_runtime_create(&ctx));
    tf_eager *x = variable(ctx, 0, NULL, (double[]){3.0}, 1);
    tf_session *s;
    TF_ASSERT_OK(tf_session_begin(ctx, g_cpu, &s));
    tf_eager *loss, *dx;
    TF_ASSERT_OK(tf_session_mul(s, x, x, &loss));
    tf_session_end(s);
    TF_ASSERT_OK(tf_runtime_grad(ctx, g_cpu, loss, x, &dx));
    assert_values(dx, (double[]){6.0}, 1);
    tf_eager_release(dx);
    tf_eager_release(loss);
    tf_eager_release(x);
    tf_runtime_release(ctx);
}

static void test_grad_optional(void **state)
{
    (void)state;
    tf_runtime *ctx;
    TF_ASSERT_OK(tf_runtime_create(&ctx));
    tf_eager *x = variable(ctx, 0, NULL, (double[]){3.0}, 1);
    tf_eager *y = variable(ctx, 0, NULL, (double[]){4.0}, 1);
    tf_session *s;
    TF_ASSERT_OK(tf_session_begin(ctx, g_cpu, &s));
    tf_eager *loss, *dx = (tf_eager *)1;
    TF_ASSERT_OK(tf_session_mul(s, y, y, &loss));
    tf_session_end(s);
    TF_ASSERT_OK(tf_runtime_grad_optional(ctx, g_cpu, loss, x, &dx));
    assert_null(dx);
    tf_eager_release(loss);
    tf_eager_release(y);
    tf_eager_release(x);
    tf_runtime_release(ctx);
}

static void test_vjp(void **state)
{
    (void)state;
    tf_runtime *ctx;
    TF_ASSERT_OK(tf_runtime_create(&ctx));
    tf_eager *x = variable(ctx, 1, k2, (double[]){2, 3}, 2);
    tf_session *s;
    TF_ASSERT_OK(tf_session_begin(ctx, g_cpu, &s));
    tf_eager *y, *dx;
    TF_ASSERT_OK(tf_session_mul(s, x, x, &y));
    tf_session_end(s);
    tf_eager *seed = constant(ctx, 1, k2, (double[]){1, 1}, 2);
    TF_ASSERT_OK(tf_runtime_vjp(ctx, g_cpu, y, x, seed, &dx));
    assert_values(dx, (double[]){4, 6}, 2);
    tf_eager_release(dx);
    tf_eager_release(seed);
    tf_eager_release(y);
    tf_eager_release(x);
    tf_runtime_release(ctx);
}

static void test_vjp_optional(void **state)
{
    (void)state;
    tf_runtime *ctx;
    TF_ASSERT_OK(tf_runtime_create(&ctx));
    tf_eager *x = variable(ctx, 1, k1, (double[]){2}, 1);
    tf_eager *y = variable(ctx, 1, k1, (double[]){4}, 1);
    tf_eager *seed = constant(ctx, 1, k1, (double[]){1}, 1);
    tf_session *s;
    TF_ASSERT_OK(tf_session_begin(ctx, g_cpu, &s));
    tf_eager *loss, *dx = (tf_eager *)1;
    TF_ASSERT_OK(tf_session_mul(s, y, y, &loss));
    tf_session_end(s);
    TF_ASSERT_OK(tf_runtime_vjp_optional(ctx, g_cpu, loss, x, seed, &dx));
    assert_null(dx);
    tf_eager_release(loss);
    tf_eager_release(seed);
    tf_eager_release(y);
    tf_eager_release(x);
    tf_runtime_release(ctx);
}

static void test_jvp(void **state)
{
    (void)state;
    tf_runtime *ctx;
    TF_ASSERT_OK(tf_runtime_create(&ctx));
    tf_eager *x = variable(ctx, 1, k1, (double[]){3}, 1);
    tf_eager *tangent = constant(ctx, 1, k1, (double[]){1}, 1);
    tf_session *s;
    TF_ASSERT_OK(tf_session_begin(ctx, g_cpu, &s));
    tf_eager *y, *dy;
    TF_ASSERT_OK(tf_session_mul(s, x, x, &y));
    tf_session_end(s);
    TF_ASSERT_OK(tf_runtime_jvp(ctx, g_cpu, y, x, tangent, &dy));
    assert_values(dy, (double[]){6}, 1);
    tf_eager_release(dy);
    tf_eager_release(y);
    tf_eager_release(tangent);
    tf_eager_release(x);
    tf_runtime_release(ctx);
}

static void test_jvp_optional(void **state)
{
    (void)state;
    tf_runtime *ctx;
    TF_ASSERT_OK(tf_runtime_create(&ctx));
    tf_eager *x = variable(ctx, 1, k1, (double[]){2}, 1);
    tf_eager *y = variable(ctx, 1, k1, (double[]){4}, 1);
    tf_eager *tangent = constant(ctx, 1, k1, (double[]){1}, 1);
    tf_session *s;
    TF_ASSERT_OK(tf_session_begin(ctx, g_cpu, &s));
    tf_eager *loss, *dy = (tf_eager *)1;
    TF_ASSERT_OK(tf_session_mul(s, y, y, &loss));
    tf_session_end(s);
    TF_ASSERT_OK(tf_runtime_jvp_optional(ctx, g_cpu, loss, x, tangent, &dy));
    assert_null(dy);
    tf_eager_release(loss);
    tf_eager_release(tangent);
    tf_eager_release(y);
    tf_eager_release(x);
    tf_runtime_release(ctx);
}

/* The seed's error contracts that go with the examples. */
static void test_inactive_wrt_errors_name_wrt(void **state)
{
    (void)state;
    tf_runtime *ctx;
    TF_ASSERT_OK(tf_runtime_create(&ctx));
    tf_eager *x = variable(ctx, 0, NULL, (double[]){3}, 1);
    tf_eager *y = variable(ctx, 0, NULL, (double[]){4}, 1);
    tf_eager *one = constant(ctx, 0, NULL, (double[]){1}, 1);
    tf_session *s;
    TF_ASSERT_OK(tf_session_begin(ctx, g_cpu, &s));
    tf_eager *loss, *r = (tf_eager *)1;
    TF_ASSERT_OK(tf_session_mul(s, y, y, &loss));
    tf_session_end(s);
    TF_ASSERT_STATUS(tf_runtime_grad(ctx, g_cpu, loss, x, &r), TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "wrt");
    TF_ASSERT_STATUS(tf_runtime_vjp(ctx, g_cpu, loss, x, one, &r), TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "wrt");
    TF_ASSERT_STATUS(tf_runtime_jvp(ctx, g_cpu, loss, x, one, &r), TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "wrt");
    assert_ptr_equal(r, (tf_eager *)1);
    tf_eager_release(loss);
    tf_eager_release(one);
    tf_eager_release(y);
    tf_eager_release(x);
    tf_runtime_release(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_struct_example_add),
        cmocka_unit_test(test_new),
        cmocka_unit_test(test_with_ad_context),
        cmocka_unit_test(test_id),
        cmocka_unit_test(test_no_grad),
        cmocka_unit_test(test_clear_caches),
        cmocka_unit_test(test_clear_prepared_derivative_cache),
        cmocka_unit_test(test_cache_stats),
        cmocka_unit_test(test_ad_transform_cache_limits),
        cmocka_unit_test(test_set_ad_transform_cache_limits),
        cmocka_unit_test(test_clear_ad_transform_caches),
        cmocka_unit_test(test_prepared_derivative_cache_limits),
        cmocka_unit_test(test_set_prepared_derivative_cache_limits),
        cmocka_unit_test(test_with_eager_session),
        cmocka_unit_test(test_clear_grads),
        cmocka_unit_test(test_constant_from),
        cmocka_unit_test(test_variable_from),
        cmocka_unit_test(test_grad),
        cmocka_unit_test(test_grad_optional),
        cmocka_unit_test(test_vjp),
        cmocka_unit_test(test_vjp_optional),
        cmocka_unit_test(test_jvp),
        cmocka_unit_test(test_jvp_optional),
        cmocka_unit_test(test_inactive_wrt_errors_name_wrt),
    };
    return cmocka_run_group_tests(tests, tft_cpu_setup, tft_cpu_teardown);
}
