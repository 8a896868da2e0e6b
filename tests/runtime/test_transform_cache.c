/*
 * test_transform_cache.c - the AD-transform cache: rule preparations are
 * built once per (op, attributes, input metadata, epoch), reused by later
 * derivatives, shared by runtimes of one AD context, bounded by its limits.
 */
#include <tenferro/ops.h>

#include "tf_eager_test.h"

/* loss = sum(broadcast_in_dim(x, [2, n], dims {1})^2), backward; returns grad[0] / x[0]. */
static double run_backward(tf_runtime *rt, int64_t n)
{
    double data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    tf_tensor *t;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, 1, &n, data, (size_t)n, &t));
    tf_eager *x, *y, *sq, *loss;
    TF_ASSERT_OK(tf_runtime_variable_from(rt, t, &x));
    tf_tensor_release(t);
    tf_session *s;
    TF_ASSERT_OK(tf_session_begin(rt, g_cpu, &s));
    TF_ASSERT_OK(tf_session_broadcast_in_dim(s, x, 2, (int64_t[]){2, n}, (int[]){1}, &y));
    TF_ASSERT_OK(tf_session_mul(s, y, y, &sq));
    TF_ASSERT_OK(tf_session_reduce_sum(s, sq, NULL, 0, &loss));
    tf_session_end(s);
    TF_ASSERT_OK(tf_eager_backward(loss, g_cpu));
    tf_tensor *g;
    TF_ASSERT_OK(tf_eager_grad(x, &g));
    double gv[8];
    TF_ASSERT_OK(tf_tensor_copy_to_host(g, TF_F64, gv, (size_t)n));
    double g0 = gv[0] / data[0];
    tf_tensor_release(g);
    tf_eager_release(loss);
    tf_eager_release(sq);
    tf_eager_release(y);
    tf_eager_release(x);
    return g0;
}

static void stats(tf_runtime *rt, tf_cache_stats *out)
{
    tf_runtime_stats st;
    TF_ASSERT_OK(tf_runtime_cache_stats(rt, &st));
    *out = st.ad_transforms;
}

static void test_built_once_then_reused(void **state)
{
    (void)state;
    tf_runtime *rt;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    tf_cache_stats st;
    stats(rt, &st);
    assert_int_equal(st.entries, 0);
    /* d/dx sum over 2 rows of x^2 = 4x */
    assert_true(run_backward(rt, 3) == 4.0);
    stats(rt, &st);
    assert_int_equal(st.entries, 1);
    assert_int_equal(st.misses, 1);
    assert_int_equal(st.hits, 0);
    assert_true(st.retained_bytes > 0);
    assert_true(run_backward(rt, 3) == 4.0);
    stats(rt, &st);
    assert_int_equal(st.entries, 1);
    assert_int_equal(st.hits, 1);
    /* other input metadata: another entry */
    assert_true(run_backward(rt, 5) == 4.0);
    stats(rt, &st);
    assert_int_equal(st.entries, 2);
    assert_int_equal(st.misses, 2);
    TF_ASSERT_OK(tf_runtime_clear_ad_transform_caches(rt));
    stats(rt, &st);
    assert_int_equal(st.entries, 0);
    assert_int_equal(st.retained_bytes, 0);
    assert_int_equal(st.clears, 1);
    tf_runtime_release(rt);
}

static void test_shared_through_ad_context(void **state)
{
    (void)state;
    tf_ad_context *ad;
    TF_ASSERT_OK(tf_ad_context_create(&ad));
    tf_runtime *a, *b, *lone;
    TF_ASSERT_OK(tf_runtime_create_with_ad_context(ad, &a));
    TF_ASSERT_OK(tf_runtime_create_with_ad_context(ad, &b));
    TF_ASSERT_OK(tf_runtime_create(&lone));
    run_backward(a, 4);
    run_backward(b, 4);
    tf_cache_stats st;
    stats(b, &st);
    assert_int_equal(st.entries, 1);
    assert_int_equal(st.hits, 1); /* b reused what a prepared */
    stats(lone, &st);
    assert_int_equal(st.entries, 0); /* a runtime of its own context shares nothing */
    tf_runtime_release(lone);
    tf_runtime_release(b);
    tf_runtime_release(a);
    tf_ad_context_release(ad);
}

static void test_shrinking_limit_evicts(void **state)
{
    (void)state;
    tf_runtime *rt;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    run_backward(rt, 2);
    run_backward(rt, 3);
    run_backward(rt, 4);
    tf_cache_stats st;
    stats(rt, &st);
    assert_int_equal(st.entries, 3);
    tf_cache_limits one = {.max_entries = 1};
    TF_ASSERT_OK(tf_runtime_set_ad_transform_cache_limits(rt, &one));
    stats(rt, &st);
    assert_int_equal(st.entries, 1);
    assert_int_equal(st.evictions, 2);
    /* results stay right with the smaller cache */
    assert_true(run_backward(rt, 2) == 4.0);
    stats(rt, &st);
    assert_true(st.entries <= 1);
    tf_cache_limits zero = {.max_entries = 0};
    TF_ASSERT_STATUS(tf_runtime_set_ad_transform_cache_limits(rt, &zero), TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "limits");
    tf_cache_limits got;
    TF_ASSERT_OK(tf_runtime_ad_transform_cache_limits(rt, &got));
    assert_int_equal(got.max_entries, 1);
    tf_runtime_release(rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_built_once_then_reused),
        cmocka_unit_test(test_shared_through_ad_context),
        cmocka_unit_test(test_shrinking_limit_evicts),
    };
    return cmocka_run_group_tests(tests, tft_cpu_setup, tft_cpu_teardown);
}
