/*
 * test_registry.c - loading extension modules, the epoch-based registry and
 * calling ops by name: refusals of malformed modules (registry and epoch
 * unchanged), idempotent installs that take no lock, replacement, a
 * transaction failing halfway, caches keyed by the epoch, signature
 * mismatches, a missing kernel for the engine, a missing AD rule.
 */
#include <stdlib.h>

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
    expect_load_error(FX_PATH("no_symbol"), TF_ERR_PLUGIN_SYMBOL, "TF_EXTENSION_EXPORT const");
    char found[32]; /* the fixture states major 2 and the current minor */
    snprintf(found, sizeof found, "found 2.%d", TF_EXTENSION_ABI_MINOR);
    expect_load_error(FX_PATH("desc_major"), TF_ERR_PLUGIN_ABI, found);
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
                                                  linked_install,
                                                  NULL,
                                                  0,
                                                  0,
                                                  NULL};

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

/*
 * Found by tests/fuzz/fuzz_descriptor: an op whose struct_size ends before
 * its name is refused without reading past the struct. The op lives in a
 * block exactly as long as it says, so the sanitizer build reports any read
 * beyond it.
 */
static tf_status short_op_install(const tf_host_api *host, const tf_ext_registrar *reg)
{
    (void)host;
    const uint32_t head[2] = {(uint32_t)sizeof head, 1}; /* struct_size, n_args */
    tf_ext_op *op = malloc(sizeof head);
    assert_non_null(op);
    memcpy(op, head, sizeof head);
    tf_status st = reg->add_op(reg->candidate, op);
    free(op);
    return st;
}

static void test_short_op_struct_refused(void **state)
{
    (void)state;
    tf_runtime *rt;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    tf_extension_module_desc d = k_linked;
    d.id = "test.short_op";
    d.install = short_op_install;
    tf_extension_module *m;
    TF_ASSERT_OK(tf_extension_from_descriptor(&d, &m));
    tf_epoch e = 999;
    TF_ASSERT_STATUS(tf_runtime_install_extension_module(rt, m, &e), TF_ERR_RUNTIME_STATE);
    assert_int_equal(e, 999);
    assert_int_equal(tf_runtime_epoch(rt), 0);
    if (!strstr(tf_error_cause(), "op '?' is malformed: expected struct_size"))
        fail_msg("cause '%s'", tf_error_cause());
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

/*
 * An extension rule that hands one cotangent to both of its inputs (sum2's):
 * summing it into the first input's cotangent must not write over it while
 * the second still reads it. t1 = exp(x); t2 = sum2(t1, x); loss =
 * sum(t1 - t2) = sum(-x): backward into the slot, grad and vjp give -1, on a
 * small vector and on one the CPU engine's sessions defer.
 */
static void test_rule_shares_cotangent(void **state)
{
    (void)state;
    const int64_t sizes[] = {3, 40000};
    for (int si = 0; si < 2; si++) {
        int64_t n = sizes[si];
        tf_runtime *rt = runtime_with_fixture();
        tf_session *s;
        TF_ASSERT_OK(tf_session_begin(rt, g_cpu, &s));
        double *v = malloc((size_t)n * sizeof *v);
        assert_non_null(v);
        for (int64_t i = 0; i < n; i++)
            v[i] = 0.25 * (double)(i % 5) - 0.5;
        tf_eager *x = ext_tensor(rt, 1, &n, v, 1), *t1, *t2, *y, *l, *g, *one, *vj;
        TF_ASSERT_OK(tf_session_exp(s, x, &t1));
        tf_call_arg args[] = {TF_ARG_TENSOR(t1), TF_ARG_TENSOR(x)};
        TF_ASSERT_OK(tf_session_call(s, "tenferro.fixture.sum2", args, 2, &t2, 1));
        TF_ASSERT_OK(tf_session_sub(s, t1, t2, &y));
        TF_ASSERT_OK(tf_session_reduce_sum(s, y, NULL, 0, &l));
        TF_ASSERT_OK(tf_runtime_grad(rt, g_cpu, l, x, &g));
        TF_ASSERT_OK(tf_session_full(s, TF_F64, 0, NULL, 1.0, &one));
        TF_ASSERT_OK(tf_runtime_vjp(rt, g_cpu, l, x, one, &vj));
        TF_ASSERT_OK(tf_eager_backward(l, g_cpu));
        tf_tensor *slot = NULL;
        TF_ASSERT_OK(tf_eager_grad(x, &slot));
        const tf_eager *got[] = {g, vj};
        for (int k = 0; k < 3; k++) {
            TF_ASSERT_OK(tf_tensor_copy_to_host(k < 2 ? tf_eager_value(got[k]) : slot, TF_F64, v,
                                                (size_t)n));
            for (int64_t i = 0; i < n; i++)
                if (v[i] != -1.0)
                    fail_msg("%s, n = %lld: element %lld is %g, not -1",
                             k == 0 ? "grad" : k == 1 ? "vjp" : "backward's slot", (long long)n,
                             (long long)i, v[i]);
        }
        free(v);
        tf_tensor_release(slot);
        tf_eager *all[] = {vj, one, g, l, y, t2, t1, x};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            tf_eager_release(all[i]);
        tf_session_end(s);
        tf_runtime_release(rt);
    }
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
    /* the message itself carries infer's reason (issue 20, item 11) */
    assert_non_null(strstr(tf_error_message(), "the arguments were refused: "));
    assert_non_null(strstr(tf_error_message(), "must be f32 or f64"));
    tf_eager_release(xi);
    tf_eager_release(x);
    tf_eager_release(z);
    tf_session_end(s);
    tf_runtime_release(other);
    tf_runtime_release(rt);
}

/*
 * An op whose only kernel is the cpu kernel runs on an engine that keeps its
 * memory on a device (the devmem fixture) through host copies: its
 * arguments are downloaded (views as views), the result is uploaded and
 * recorded like any op's. An argument in memory the engine cannot read is
 * still refused. (devmem runs nothing but FILL and COPY: the derivatives of
 * such ops are checked on the Vulkan engine by test_oracle_v2_vulkan.)
 */
static void test_kernel_for_a_device_engine(void **state)
{
    (void)state;
    tf_engine *dev;
    TF_ASSERT_OK(tf_engine_open(TF_FIXTURE_DIR "/tenferro-engine-devmem.so", 0, &dev));
    tf_runtime *rt = runtime_with_fixture();
    tf_session *s;
    TF_ASSERT_OK(tf_session_begin(rt, dev, &s));
    tf_tensor *h = tft_host(TF_F64, 1, (int64_t[]){2}, (double[]){1, 2}, 2), *d = NULL, *back = NULL;
    TF_ASSERT_OK(tf_engine_upload(dev, h, &d));
    tf_eager *x = NULL, *y = NULL, *l = NULL, *g = NULL;
    TF_ASSERT_OK(tf_runtime_variable_from(rt, d, &x));
    TF_ASSERT_OK(tf_session_call(s, "tenferro.fixture.scale",
                                 (tf_call_arg[]){TF_ARG_TENSOR(x), TF_ARG_F64(2.5)}, 2, &y, 1));
    assert_false(tf_tensor_is_host_accessible(tf_eager_value(y)));
    TF_ASSERT_OK(tf_engine_download(dev, tf_eager_value(y), &back));
    tft_expect_values(back, (double[]){2.5, 5}, 2);
    tf_tensor_release(back);
    assert_true(tf_eager_tracks_grad(y)); /* recorded: its rule runs on engines that can */
    /* a strided view of device memory is read as the view it is */
    int rev_axes[] = {0};
    TF_ASSERT_OK(tf_session_reverse(s, x, rev_axes, 1, &l));
    TF_ASSERT_OK(tf_session_call(s, "tenferro.fixture.noad", (tf_call_arg[]){TF_ARG_TENSOR(l)},
                                 1, &g, 1));
    TF_ASSERT_OK(tf_engine_download(dev, tf_eager_value(g), &back));
    tft_expect_values(back, (double[]){2, 1}, 2);
    tf_tensor_release(back);
    /* a host tensor on a device engine's session: refused, naming the argument */
    tf_eager *hx = ext_tensor(rt, 1, (int64_t[]){2}, (double[]){1, 2}, 0), *z = TFT_SENTINEL;
    TF_ASSERT_STATUS(tf_session_call(s, "tenferro.fixture.scale",
                                     (tf_call_arg[]){TF_ARG_TENSOR(hx), TF_ARG_F64(2)}, 2, &z, 1),
                     TF_ERR_PLACEMENT);
    assert_ptr_equal(z, TFT_SENTINEL);
    tf_eager *all[] = {hx, g, l, y, x};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tf_eager_release(all[i]);
    tf_tensor_release(d);
    tf_tensor_release(h);
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

/* ---- typed errors (extension ABI 1.1) ---- */

static const tf_ext_error_kind k_good_kinds[] = {{"boom", "the thing went boom"},
                                                 {"no_luck_2", "no luck"}};

/* Kernel of test.kinds.fail(x, mode): mode picks how it fails. */
static tf_status fail_cpu(const tf_ext_kernel_ctx *k, const tf_operand *x, int64_t mode,
                          const tf_operand *y)
{
    (void)x;
    (void)y;
    if (!TF_ABI_HAS_FIELD(k, tf_ext_kernel_ctx, report_kind))
        return TF_ERR_RUNTIME_STATE; /* this host is 1.1: never taken */
    switch (mode) {
    case 1: return k->report_kind(k, "boom", 3, "test.kinds.fail: boom at element 3");
    case 2: return k->report_kind(k, "no_luck_2", -7, "test.kinds.fail: no luck");
    case 3: return k->report_kind(k, "undeclared", 0, "test.kinds.fail: made up");
    case 4: return TF_ERR_EXTENSION; /* without a kind */
    case 5: /* a kind reported, then another status returned: the status wins */
        k->report_kind(k, "boom", 1, "test.kinds.fail: changed its mind");
        return TF_ERR_VALIDATION;
    default: return TF_OK;
    }
}

static tf_status fail_infer(const tf_ext_rule_ctx *c, const tf_ext_meta *t, uint32_t nt,
                            const tf_ext_scalar *sc, uint32_t ns, tf_ext_meta *out)
{
    if (sc[0].i == 99)
        return c->report_argument(c, TF_ERR_VALIDATION, 1, "test.kinds.fail: mode 99 refused");
    if (sc[0].i == 98)
        return c->report_argument(c, TF_ERR_SHAPE_MISMATCH, 7, "test.kinds.fail: bad index");
    if (sc[0].i == 97) { /* the 1.0 way: no argument named */
        c->host->report_error(c->host->ctx, TF_ERR_VALIDATION, "test.kinds.fail: mode 97");
        return TF_ERR_VALIDATION;
    }
    out[0] = t[0];
    return TF_OK;
}

static const uint32_t k_fail_kinds[] = {TF_EXT_ARG_TENSOR, TF_EXT_ARG_I64};
static const char *const k_fail_names[] = {"x", "mode"};
static const tf_ext_kernel k_fail_kernels[] = {{"cpu", TF_EXT_KERNEL_FN(fail_cpu)}};
static const tf_ext_op k_fail_op = {
    sizeof(tf_ext_op), 2,    1,    1,   "fail", k_fail_kinds, k_fail_names, fail_infer,
    k_fail_kernels,    NULL, NULL, NULL, NULL, 0, 0};

static tf_status kinds_install(const tf_host_api *host, const tf_ext_registrar *reg)
{
    (void)host;
    return reg->add_op(reg->candidate, &k_fail_op);
}

static const tf_extension_module_desc k_kinds_desc = {sizeof(tf_extension_module_desc),
                                                      TF_EXTENSION_ABI_MAJOR,
                                                      TF_EXTENSION_ABI_MINOR,
                                                      0,
                                                      "test.kinds",
                                                      "1",
                                                      NULL,
                                                      kinds_install,
                                                      k_good_kinds,
                                                      2,
                                                      0,
                                                      NULL};

static void expect_kinds_refused(tf_runtime *rt, const tf_ext_error_kind *kinds, uint32_t n,
                                 const char *needle)
{
    tf_extension_module_desc d = k_kinds_desc;
    d.error_kinds = kinds;
    d.n_error_kinds = n;
    tf_extension_module *m;
    TF_ASSERT_OK(tf_extension_from_descriptor(&d, &m));
    tf_epoch before = tf_runtime_epoch(rt), e = 999;
    uint64_t pubs = tf_runtime_extension_publish_count(rt);
    uint64_t locks = tf_runtime_extension_lock_count(rt);
    TF_ASSERT_STATUS(tf_runtime_install_extension_module(rt, m, &e), TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "error_kinds");
    if (!strstr(tf_error_message(), needle))
        fail_msg("'%s' lacks '%s'", tf_error_message(), needle);
    assert_int_equal(e, 999);
    assert_int_equal(tf_runtime_epoch(rt), before);
    assert_int_equal(tf_runtime_extension_publish_count(rt), pubs);
    assert_int_equal(tf_runtime_extension_lock_count(rt), locks);
    assert_false(tf_runtime_has_op(rt, "test.kinds.fail"));
}

static void test_error_kinds_checked_at_install(void **state)
{
    (void)state;
    tf_runtime *rt;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    static const tf_ext_error_kind upper[] = {{"Singular", "x"}};
    static const tf_ext_error_kind dotted[] = {{"a.b", "x"}};
    static const tf_ext_error_kind empty[] = {{"", "x"}};
    static const tf_ext_error_kind null_name[] = {{NULL, "x"}};
    static const tf_ext_error_kind no_msg[] = {{"ok", NULL}};
    static const tf_ext_error_kind empty_msg[] = {{"ok", ""}};
    static const tf_ext_error_kind dup[] = {{"same", "x"}, {"other", "y"}, {"same", "z"}};
    static const tf_ext_error_kind long_name[] = {
        {"a234567890123456789012345678901234567890123456789012345678901234", "x"}};
    expect_kinds_refused(rt, upper, 1, "\"Singular\"");
    expect_kinds_refused(rt, dotted, 1, "\"a.b\"");
    expect_kinds_refused(rt, empty, 1, "one segment");
    expect_kinds_refused(rt, null_name, 1, "(null)");
    expect_kinds_refused(rt, no_msg, 1, "a non-empty message");
    expect_kinds_refused(rt, empty_msg, 1, "a non-empty message");
    expect_kinds_refused(rt, dup, 3, "error kind 2 (\"same\")");
    expect_kinds_refused(rt, long_name, 1, "at most 63 bytes");
    expect_kinds_refused(rt, NULL, 1, "NULL table");
    expect_kinds_refused(rt, k_good_kinds, TF_EXT_MAX_ERROR_KINDS + 1, "at most 64");
    assert_int_equal(tf_runtime_epoch(rt), 0);
    /* a 1.0 descriptor ends before the kinds: whatever follows is never read */
    tf_extension_module_desc old = k_kinds_desc;
    old.struct_size = (uint32_t)offsetof(tf_extension_module_desc, error_kinds);
    old.abi_minor = 0;
    old.error_kinds = (const tf_ext_error_kind *)(uintptr_t)8; /* garbage beyond its size */
    old.n_error_kinds = 1000;
    tf_extension_module *m;
    tf_epoch e;
    TF_ASSERT_OK(tf_extension_from_descriptor(&old, &m));
    TF_ASSERT_OK(tf_runtime_install_extension_module(rt, m, &e));
    assert_int_equal(e, 1);
    assert_true(tf_runtime_has_op(rt, "test.kinds.fail"));
    tf_runtime_release(rt);
}

static tf_status call_fail(tf_session *s, tf_eager *x, int64_t mode, tf_eager **y)
{
    return tf_session_call(s, "test.kinds.fail",
                           (tf_call_arg[]){TF_ARG_TENSOR(x), TF_ARG_I64(mode)}, 2, y, 1);
}

static void test_typed_errors_reach_the_app(void **state)
{
    (void)state;
    assert_string_equal(tf_status_name(TF_ERR_EXTENSION), "TF_ERR_EXTENSION");
    assert_int_equal(TF_ERR_EXTENSION, 26);
    tf_runtime *rt;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    tf_extension_module *m;
    tf_epoch e;
    TF_ASSERT_OK(tf_extension_from_descriptor(&k_kinds_desc, &m));
    TF_ASSERT_OK(tf_runtime_install_extension_module(rt, m, &e));
    tf_session *s;
    TF_ASSERT_OK(tf_session_begin(rt, g_cpu, &s));
    tf_eager *x = ext_tensor(rt, 1, (int64_t[]){2}, (double[]){1, 2}, 0), *y;
    TF_ASSERT_OK(call_fail(s, x, 0, &y));
    tf_eager_release(y);
    const char *mod, *kind;
    int64_t idx;
    y = (tf_eager *)(uintptr_t)1;
    TF_ASSERT_STATUS(call_fail(s, x, 1, &y), TF_ERR_EXTENSION);
    assert_ptr_equal(y, (tf_eager *)(uintptr_t)1);
    assert_true(tf_error_extension_kind(&mod, &kind, &idx));
    assert_string_equal(mod, "test.kinds");
    assert_string_equal(kind, "boom");
    assert_int_equal(idx, 3);
    assert_string_equal(tf_error_op(), "test.kinds.fail");
    assert_string_equal(tf_error_message(),
                        "test.kinds.fail: the thing went boom (test.kinds/boom, batch element 3)");
    assert_string_equal(tf_error_cause(), "test.kinds.fail: boom at element 3");
    /* a negative index means none; NULL out-parameters are allowed */
    TF_ASSERT_STATUS(call_fail(s, x, 2, &y), TF_ERR_EXTENSION);
    assert_true(tf_error_extension_kind(NULL, &kind, &idx));
    assert_string_equal(kind, "no_luck_2");
    assert_int_equal(idx, -1);
    assert_string_equal(tf_error_message(), "test.kinds.fail: no luck (test.kinds/no_luck_2)");
    /* module bugs are not typed errors */
    TF_ASSERT_STATUS(call_fail(s, x, 3, &y), TF_ERR_BACKEND);
    assert_false(tf_error_extension_kind(&mod, &kind, &idx));
    assert_string_equal(mod, "");
    assert_string_equal(kind, "");
    assert_int_equal(idx, -1);
    assert_non_null(strstr(tf_error_cause(), "'undeclared', which module 'test.kinds' does not"));
    TF_ASSERT_STATUS(call_fail(s, x, 4, &y), TF_ERR_BACKEND);
    assert_non_null(strstr(tf_error_message(), "without reporting a declared error kind"));
    assert_false(tf_error_extension_kind(NULL, NULL, NULL));
    TF_ASSERT_STATUS(call_fail(s, x, 5, &y), TF_ERR_VALIDATION);
    assert_false(tf_error_extension_kind(NULL, NULL, NULL));
    assert_string_equal(tf_error_cause(), "test.kinds.fail: changed its mind");
    /* a later failure of another kind clears the typed fields */
    TF_ASSERT_STATUS(call_fail(s, x, 1, &y), TF_ERR_EXTENSION);
    TF_ASSERT_STATUS(tf_session_call(s, "test.kinds.nope", NULL, 0, &y, 1), TF_ERR_VALIDATION);
    assert_false(tf_error_extension_kind(NULL, NULL, NULL));
    TF_ASSERT_STATUS(call_fail(s, x, 1, &y), TF_ERR_EXTENSION);
    tf_error_clear();
    assert_false(tf_error_extension_kind(NULL, NULL, NULL));
    /* infer() naming the argument */
    TF_ASSERT_STATUS(call_fail(s, x, 99, &y), TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "mode");
    assert_string_equal(tf_error_cause(), "test.kinds.fail: mode 99 refused");
    TF_ASSERT_STATUS(call_fail(s, x, 98, &y), TF_ERR_SHAPE_MISMATCH);
    assert_string_equal(tf_error_argument(), "");
    TF_ASSERT_STATUS(call_fail(s, x, 97, &y), TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "");
    assert_ptr_equal(y, (tf_eager *)(uintptr_t)1);
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
        cmocka_unit_test(test_short_op_struct_refused),
        cmocka_unit_test(test_call_and_gradient),
        cmocka_unit_test(test_call_signature_mismatch),
        cmocka_unit_test(test_kernel_for_a_device_engine),
        cmocka_unit_test(test_no_ad_rule),
        cmocka_unit_test(test_rule_shares_cotangent),
        cmocka_unit_test(test_caches_keyed_by_epoch),
        cmocka_unit_test(test_error_kinds_checked_at_install),
        cmocka_unit_test(test_typed_errors_reach_the_app),
    };
    return cmocka_run_group_tests(tests, tft_cpu_setup, tft_cpu_teardown);
}
