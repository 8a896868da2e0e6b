/*
 * test_registry.c - loading extension modules, the epoch-based registry and
 * calling ops by name: refusals of malformed modules (registry and epoch
 * unchanged), idempotent installs that take no lock, replacement, a
 * transaction failing halfway, caches keyed by the epoch, signature
 * mismatches, a missing kernel for the engine, a missing AD rule.
 */
#include "ext_test_util.h"

/* ---- loading ---- */

static void expect_load_error(const char *path, tf_status expected, const char *needle)
{
    tf_extension_module *m = (tf_extension_module *)(uintptr_t)1;
    TF_ASSERT_STATUS(tf_extension_load(path, &m), expected);
    assert_ptr_equal(m, (tf_extension_module *)(uintptr_t)1); /* not written */
    if (!strstr(tf_error_message(), needle))
        fail_msg("message '%s' lacks '%s'", tf_error_message(), needle);
}

static void test_load_refusals(void **state)
{
    (void)state;
    expect_load_error(FX_PATH("other_major"), TF_ERR_PLUGIN_ABI, "tf_extension_module_v2");
    expect_load_error(FX_PATH("no_symbol"), TF_ERR_PLUGIN_SYMBOL, "tf_extension_module_v1");
    expect_load_error(FX_PATH("desc_major"), TF_ERR_PLUGIN_ABI, "found 2.0");
    expect_load_error(FX_PATH("small_struct"), TF_ERR_PLUGIN_STRUCT_SIZE, "struct_size");
    expect_load_error(FX_PATH("bad_id"), TF_ERR_VALIDATION, "Bad-Id");
    assert_string_equal(tf_error_argument(), "id");
    expect_load_error(TF_EXT_FIXTURE_DIR "/tenferro-ext-missing.so", TF_ERR_PLUGIN_NOT_FOUND,
                      "not found");
    expect_load_error("no_such_module", TF_ERR_PLUGIN_NOT_FOUND, "tenferro-ext-no_such_module.so");
}

static void test_load_by_name_and_once(void **state)
{
    (void)state;
    tf_extension_module *a, *b, *newer;
    TF_ASSERT_OK(tf_extension_load(FX_PATH("newer_minor"), &newer)); /* minors are accepted */
    assert_int_equal(tf_extension_abi_minor(newer), TF_EXTENSION_ABI_MINOR + 7);
    TF_ASSERT_OK(tf_extension_load("linalg", &a));
    TF_ASSERT_OK(tf_extension_load("linalg", &b));
    assert_ptr_equal(a, b);
    assert_string_equal(tf_extension_id(a), "tenferro.linalg");
    assert_non_null(strstr(tf_extension_file(a), "tenferro-ext-linalg.so"));
    tf_extension_candidate *c;
    size_t n;
    TF_ASSERT_OK(tf_extension_scan(&c, &n));
    int found = 0;
    for (size_t i = 0; i < n; i++)
        found += c[i].module == a && c[i].status == TF_OK && strcmp(c[i].kind, "extension") == 0;
    assert_int_equal(found, 1);
    tf_extension_scan_free(c, n);
}

/* ---- installing ---- */

static void expect_install_refused(tf_runtime *rt, const char *fixture, const char *needle)
{
    tf_extension_module *m;
    char path[512];
    snprintf(path, sizeof path, "%s/tenferro-ext-fx_%s.so", TF_EXT_FIXTURE_DIR, fixture);
    TF_ASSERT_OK(tf_extension_load(path, &m));
    tf_epoch before = tf_runtime_epoch(rt), e = 999;
    uint64_t pubs = tf_runtime_extension_publish_count(rt);
    TF_ASSERT_STATUS(tf_runtime_install_extension_module(rt, m, &e), TF_ERR_RUNTIME_STATE);
    assert_int_equal(e, 999);
    if (!strstr(tf_error_cause(), needle) && !strstr(tf_error_message(), needle))
        fail_msg("install of %s: '%s' (cause '%s') lacks '%s'", fixture, tf_error_message(),
                 tf_error_cause(), needle);
    assert_int_equal(tf_runtime_epoch(rt), before);
    assert_int_equal(tf_runtime_extension_publish_count(rt), pubs);
    assert_false(tf_runtime_has_op(rt, "tenferro.fixture.scale"));
    assert_false(tf_runtime_has_op(rt, "tenferro.fixture.noad"));
}

static void test_install_refusals_leave_registry(void **state)
{
    (void)state;
    tf_runtime *rt;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    expect_install_refused(rt, "dup_op", "duplicate op name 'tenferro.fixture.scale'");
    expect_install_refused(rt, "hook_fails", "the install hook gives up");
    expect_install_refused(rt, "no_cpu", "a kernel for the \"cpu\" engine");
    assert_int_equal(tf_runtime_epoch(rt), 0);
    TF_ASSERT_STATUS(tf_runtime_install_extension_module(rt, NULL, &(tf_epoch){0}),
                     TF_ERR_VALIDATION);
    tf_runtime_release(rt);
}

static void test_install_idempotent_and_transactional(void **state)
{
    (void)state;
    tf_runtime *rt;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    tf_extension_module *fx, *hook_fails;
    TF_ASSERT_OK(tf_extension_load(FX_PATH("fixture"), &fx));
    TF_ASSERT_OK(tf_extension_load(FX_PATH("hook_fails"), &hook_fails));
    tf_epoch e1, e2;
    TF_ASSERT_OK(tf_runtime_install_extension_module(rt, fx, &e1));
    assert_int_equal(e1, 1);
    assert_int_equal(tf_runtime_epoch(rt), 1);
    assert_true(tf_runtime_has_op(rt, "tenferro.fixture.scale"));
    uint64_t locks = tf_runtime_extension_lock_count(rt);
    assert_int_equal(locks, 1);
    for (int i = 0; i < 5; i++) {
        TF_ASSERT_OK(tf_runtime_install_extension_module(rt, fx, &e2));
        assert_int_equal(e2, e1);
    }
    assert_int_equal(tf_runtime_extension_lock_count(rt), locks); /* no lock taken */
    assert_int_equal(tf_runtime_extension_publish_count(rt), 1);
    /* the same id failing halfway through its hook: the installed one stays */
    TF_ASSERT_STATUS(tf_runtime_install_extension_module(rt, hook_fails, &e2),
                     TF_ERR_RUNTIME_STATE);
    assert_int_equal(tf_runtime_epoch(rt), 1);
    assert_true(tf_runtime_has_op(rt, "tenferro.fixture.scale"));
    assert_true(tf_runtime_has_op(rt, "tenferro.fixture.noad"));
    tf_runtime_release(rt);
}

/* A module linked into the test: each from_descriptor call is a new instance. */
static tf_status linked_install(const tf_host_api *host, const tf_ext_registrar *reg)
{
    (void)host;
    (void)reg;
    return TF_OK;
}

static const tf_extension_module_desc k_linked = {sizeof(tf_extension_module_desc),
                                                  TF_EXTENSION_ABI_MAJOR,
                                                  TF_EXTENSION_ABI_MINOR,
                                                  0,
                                                  "test.linked",
                                                  "1",
                                                  NULL,
                                                  linked_install};

static void test_replace_bumps_epoch(void **state)
{
    (void)state;
    tf_runtime *rt;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    tf_extension_module *a, *b;
    TF_ASSERT_OK(tf_extension_from_descriptor(&k_linked, &a));
    TF_ASSERT_OK(tf_extension_from_descriptor(&k_linked, &b));
    assert_ptr_not_equal(a, b);
    tf_epoch e;
    TF_ASSERT_OK(tf_runtime_install_extension_module(rt, a, &e));
    assert_int_equal(e, 1);
    TF_ASSERT_OK(tf_runtime_install_extension_module(rt, b, &e));
    assert_int_equal(e, 2);
    TF_ASSERT_OK(tf_runtime_install_extension_module(rt, a, &e)); /* a was replaced */
    assert_int_equal(e, 3);
    assert_int_equal(tf_runtime_extension_publish_count(rt), 3);
    tf_extension_module *bad;
    tf_extension_module_desc d = k_linked;
    d.id = "nodots";
    TF_ASSERT_STATUS(tf_extension_from_descriptor(&d, &bad), TF_ERR_VALIDATION);
    d.id = "a..b";
    TF_ASSERT_STATUS(tf_extension_from_descriptor(&d, &bad), TF_ERR_VALIDATION);
    d.id = "tenferro.x-y";
    TF_ASSERT_STATUS(tf_extension_from_descriptor(&d, &bad), TF_ERR_VALIDATION);
    tf_runtime_release(rt);
}

/* ---- calling ---- */

static tf_runtime *runtime_with_fixture(void)
{
    tf_runtime *rt;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    tf_extension_module *fx;
    TF_ASSERT_OK(tf_extension_load(FX_PATH("fixture"), &fx));
    tf_epoch e;
    TF_ASSERT_OK(tf_runtime_install_extension_module(rt, fx, &e));
    return rt;
}

static void test_call_and_gradient(void **state)
{
    (void)state;
    tf_runtime *rt = runtime_with_fixture();
    tf_session *s;
    TF_ASSERT_OK(tf_session_begin(rt, g_cpu, &s));
    tf_eager *x = ext_tensor(rt, 2, (int64_t[]){2, 2}, (double[]){1, 2, 3, 4}, 1), *y, *l, *g;
    tf_call_arg args[] = {TF_ARG_TENSOR(x), TF_ARG_F64(2.5)};
    TF_ASSERT_OK(tf_session_call(s, "tenferro.fixture.scale", args, 2, &y, 1));
    double v[4];
    ext_read(y, v, 4);
    assert_true(v[0] == 2.5 && v[3] == 10.0);
    assert_true(tf_eager_tracks_grad(y));
    TF_ASSERT_OK(tf_session_reduce_sum(s, y, NULL, 0, &l));
    TF_ASSERT_OK(tf_runtime_grad(rt, g_cpu, l, x, &g));
    ext_read(g, v, 4);
    for (int i = 0; i < 4; i++)
        assert_true(v[i] == 2.5);
    tf_eager_release(g);
    tf_eager *t = ext_tensor(rt, 2, (int64_t[]){2, 2}, (double[]){1, 0, 0, 1}, 0);
    TF_ASSERT_OK(tf_runtime_jvp(rt, g_cpu, y, x, t, &g));
    ext_read(g, v, 4);
    assert_true(v[0] == 2.5 && v[1] == 0 && v[3] == 2.5);
    tf_eager_release(g);
    tf_eager_release(t);
    tf_eager_release(l);
    tf_eager_release(y);
    tf_eager_release(x);
    tf_session_end(s);
    tf_runtime_release(rt);
}

static void test_call_signature_mismatch(void **state)
{
    (void)state;
    tf_runtime *rt = runtime_with_fixture(), *other;
    TF_ASSERT_OK(tf_runtime_create(&other));
    tf_session *s;
    TF_ASSERT_OK(tf_session_begin(rt, g_cpu, &s));
    tf_eager *x = ext_tensor(rt, 1, (int64_t[]){3}, (double[]){1, 2, 3}, 0);
    tf_eager *z = ext_tensor(other, 1, (int64_t[]){3}, (double[]){1, 2, 3}, 0);
    tf_eager *y = (tf_eager *)(uintptr_t)1, *ys[2];
    const char *op = "tenferro.fixture.scale";
    TF_ASSERT_STATUS(tf_session_call(s, "tenferro.fixture.nope", NULL, 0, &y, 1),
                     TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "name");
    TF_ASSERT_STATUS(tf_session_call(s, op, (tf_call_arg[]){TF_ARG_TENSOR(x)}, 1, &y, 1),
                     TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "args");
    TF_ASSERT_STATUS(
        tf_session_call(s, op, (tf_call_arg[]){TF_ARG_TENSOR(x), TF_ARG_I64(2)}, 2, &y, 1),
        TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "factor");
    TF_ASSERT_STATUS(
        tf_session_call(s, op, (tf_call_arg[]){TF_ARG_F64(1), TF_ARG_F64(2)}, 2, &y, 1),
        TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "x");
    TF_ASSERT_STATUS(
        tf_session_call(s, op, (tf_call_arg[]){TF_ARG_TENSOR(NULL), TF_ARG_F64(2)}, 2, &y, 1),
        TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "x");
    TF_ASSERT_STATUS(
        tf_session_call(s, op, (tf_call_arg[]){TF_ARG_TENSOR(z), TF_ARG_F64(2)}, 2, &y, 1),
        TF_ERR_CONTEXT_MISMATCH);
    TF_ASSERT_STATUS(
        tf_session_call(s, op, (tf_call_arg[]){TF_ARG_TENSOR(x), TF_ARG_F64(2)}, 2, ys, 2),
        TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "outputs");
    assert_ptr_equal(y, (tf_eager *)(uintptr_t)1);
    /* inference refuses an integer tensor with the module's own status */
    tf_tensor *it;
    TF_ASSERT_OK(tf_tensor_from_host(TF_I32, 1, (int64_t[]){2}, (int32_t[]){1, 2}, 2, &it));
    tf_eager *xi;
    TF_ASSERT_OK(tf_runtime_constant_from(rt, it, &xi));
    tf_tensor_release(it);
    TF_ASSERT_STATUS(
        tf_session_call(s, op, (tf_call_arg[]){TF_ARG_TENSOR(xi), TF_ARG_F64(2)}, 2, &y, 1),
        TF_ERR_DTYPE_MISMATCH);
    assert_non_null(strstr(tf_error_cause(), "must be f32 or f64"));
    tf_eager_release(xi);
    tf_eager_release(x);
    tf_eager_release(z);
    tf_session_end(s);
    tf_runtime_release(other);
    tf_runtime_release(rt);
}

static void test_no_kernel_for_engine(void **state)
{
    (void)state;
    tf_engine *dev;
    TF_ASSERT_OK(tf_engine_open(TF_FIXTURE_DIR "/tenferro-engine-devmem.so", 0, &dev));
    tf_runtime *rt = runtime_with_fixture();
    tf_session *s;
    TF_ASSERT_OK(tf_session_begin(rt, dev, &s));
    tf_eager *x = ext_tensor(rt, 1, (int64_t[]){2}, (double[]){1, 2}, 0), *y;
    TF_ASSERT_STATUS(tf_session_call(s, "tenferro.fixture.scale",
                                     (tf_call_arg[]){TF_ARG_TENSOR(x), TF_ARG_F64(2)}, 2, &y, 1),
                     TF_ERR_UNSUPPORTED);
    assert_non_null(strstr(tf_error_message(), "tenferro.fixture.scale"));
    assert_non_null(strstr(tf_error_message(), "devmem"));
    tf_eager_release(x);
    tf_session_end(s);
    tf_runtime_release(rt);
    tf_engine_destroy(dev);
}

static void test_no_ad_rule(void **state)
{
    (void)state;
    tf_runtime *rt = runtime_with_fixture();
    tf_session *s;
    TF_ASSERT_OK(tf_session_begin(rt, g_cpu, &s));
    tf_eager *x = ext_tensor(rt, 1, (int64_t[]){2}, (double[]){1, 2}, 1), *y, *l, *g = NULL;
    TF_ASSERT_OK(
        tf_session_call(s, "tenferro.fixture.noad", (tf_call_arg[]){TF_ARG_TENSOR(x)}, 1, &y, 1));
    TF_ASSERT_OK(tf_session_reduce_sum(s, y, NULL, 0, &l));
    TF_ASSERT_STATUS(tf_runtime_grad(rt, g_cpu, l, x, &g), TF_ERR_UNSUPPORTED_AD_RULE);
    assert_non_null(strstr(tf_error_message(), "tenferro.fixture.noad"));
    TF_ASSERT_STATUS(tf_runtime_jvp(rt, g_cpu, y, x, x, &g), TF_ERR_UNSUPPORTED_AD_RULE);
    assert_null(g);
    tf_eager_release(l);
    tf_eager_release(y);
    tf_eager_release(x);
    tf_session_end(s);
    tf_runtime_release(rt);
}

/* ---- caches keyed by the epoch ---- */

static void grad_once(tf_runtime *rt, tf_session *s, tf_eager *x)
{
    tf_eager *y, *l, *g;
    TF_ASSERT_OK(tf_session_call(s, "tenferro.fixture.scale",
                                 (tf_call_arg[]){TF_ARG_TENSOR(x), TF_ARG_F64(3)}, 2, &y, 1));
    TF_ASSERT_OK(tf_session_reduce_sum(s, y, NULL, 0, &l));
    TF_ASSERT_OK(tf_runtime_grad(rt, g_cpu, l, x, &g));
    tf_eager_release(g);
    tf_eager_release(l);
    tf_eager_release(y);
}

/* One more call with another scalar: a different extension-cache key. */
static tf_status tf_runtime_call_with_factor(tf_runtime *rt, tf_session *s, tf_eager *x, double f)
{
    (void)rt;
    tf_eager *y;
    tf_status st = tf_session_call(s, "tenferro.fixture.scale",
                                   (tf_call_arg[]){TF_ARG_TENSOR(x), TF_ARG_F64(f)}, 2, &y, 1);
    if (!st)
        tf_eager_release(y);
    return st;
}

static void test_caches_keyed_by_epoch(void **state)
{
    (void)state;
    tf_runtime *rt = runtime_with_fixture();
    tf_session *s;
    TF_ASSERT_OK(tf_session_begin(rt, g_cpu, &s));
    tf_eager *x = ext_tensor(rt, 1, (int64_t[]){2}, (double[]){1, 2}, 1);
    tf_runtime_stats a, b, c;
    grad_once(rt, s, x);
    TF_ASSERT_OK(tf_runtime_cache_stats(rt, &a));
    grad_once(rt, s, x);
    TF_ASSERT_OK(tf_runtime_cache_stats(rt, &b));
    assert_true(b.prepared_derivatives.hits > a.prepared_derivatives.hits);
    assert_true(b.extensions.hits > a.extensions.hits);
    assert_true(b.extensions.entries >= 1);
    /* an install bumps the epoch: nothing prepared before it is reused */
    tf_extension_module *m;
    tf_epoch e;
    TF_ASSERT_OK(tf_extension_from_descriptor(&k_linked, &m));
    TF_ASSERT_OK(tf_runtime_install_extension_module(rt, m, &e));
    assert_int_equal(e, 2);
    grad_once(rt, s, x);
    TF_ASSERT_OK(tf_runtime_cache_stats(rt, &c));
    assert_int_equal(c.prepared_derivatives.hits, b.prepared_derivatives.hits);
    assert_true(c.prepared_derivatives.misses > b.prepared_derivatives.misses);
    assert_int_equal(c.extensions.hits, b.extensions.hits);
    assert_true(c.extensions.misses > b.extensions.misses);
    TF_ASSERT_OK(tf_runtime_clear_caches(rt));
    TF_ASSERT_OK(tf_runtime_cache_stats(rt, &c));
    assert_int_equal(c.extensions.entries, 0);
    tf_cache_limits lim = {0, 0};
    TF_ASSERT_STATUS(tf_runtime_set_extension_cache_limits(rt, &lim), TF_ERR_VALIDATION);
    lim.max_entries = 1;
    TF_ASSERT_OK(tf_runtime_set_extension_cache_limits(rt, &lim));
    grad_once(rt, s, x);
    TF_ASSERT_OK(tf_runtime_call_with_factor(rt, s, x, 5.0));
    TF_ASSERT_OK(tf_runtime_cache_stats(rt, &c));
    assert_int_equal(c.extensions.entries, 1);
    assert_true(c.extensions.evictions >= 1);
    TF_ASSERT_OK(tf_runtime_extension_cache_limits(rt, &lim));
    assert_int_equal(lim.max_entries, 1);
    /* per module: the fixture's cache holds that entry, the linked module's none */
    tf_cache_stats fx, linked;
    TF_ASSERT_OK(tf_runtime_extension_cache_stats(rt, "tenferro.fixture", &fx));
    TF_ASSERT_OK(tf_runtime_extension_cache_stats(rt, "test.linked", &linked));
    assert_int_equal(fx.entries, 1);
    assert_true(fx.hits >= 1 && fx.misses >= 3);
    assert_int_equal(linked.entries, 0);
    assert_int_equal(linked.hits + linked.misses, 0);
    TF_ASSERT_STATUS(tf_runtime_extension_cache_stats(rt, "no.such", &fx), TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "module_id");
    tf_eager_release(x);
    tf_session_end(s);
    tf_runtime_release(rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_refusals),
        cmocka_unit_test(test_load_by_name_and_once),
        cmocka_unit_test(test_install_refusals_leave_registry),
        cmocka_unit_test(test_install_idempotent_and_transactional),
        cmocka_unit_test(test_replace_bumps_epoch),
        cmocka_unit_test(test_call_and_gradient),
        cmocka_unit_test(test_call_signature_mismatch),
        cmocka_unit_test(test_no_kernel_for_engine),
        cmocka_unit_test(test_no_ad_rule),
        cmocka_unit_test(test_caches_keyed_by_epoch),
    };
    return cmocka_run_group_tests(tests, tft_cpu_setup, tft_cpu_teardown);
}
