/*
 * test_malformed.c - the malformed plugins and modules of the corpus that
 * lie or fail late (issue 8, item 3); the corpus's plain ABI refusals are
 * tested by tests/core/test_loader.c and tests/extensions/test_registry.c.
 *
 *   engine size-lie       a descriptor of this host's minor claiming 64 bytes
 *                         more than it has
 *   engine supports-lies  supports() claims everything, execute() fails
 *   engine old-minor      the same, built against ABI 1.2: FUSED with several
 *                         outputs (ABI 1.3) is never asked of it or sent to it
 *   module size_lie       a 1.0 descriptor claiming the 1.1 struct's size
 *   module null_id        id NULL
 *   module hook_fails_late  the install hook adds every op, then fails
 *
 * Each must be refused at load with its specific status and a message naming
 * the file, or (supports-lies, hook_fails_late) contained: the call fails
 * with a specific status, nothing is recorded or published, and the same
 * runtime keeps working.
 */
#include <stdlib.h>
#include <string.h>

#include <tenferro/engine.h>
#include <tenferro/extension.h>
#include <tenferro/ops.h>

#include "tf_test.h"

#if !defined(TF_FIXTURE_DIR) || !defined(TF_EXT_FIXTURE_DIR)
#error "TF_FIXTURE_DIR and TF_EXT_FIXTURE_DIR must be defined by the build"
#endif
#define ENGINE_PATH(name) TF_FIXTURE_DIR "/tenferro-engine-" name ".so"
#define MODULE_PATH(name) TF_EXT_FIXTURE_DIR "/tenferro-ext-fx_" name ".so"

static void expect_text(const char *what, const char *text, const char *needle)
{
    if (!strstr(text, needle))
        fail_msg("%s: \"%s\" lacks \"%s\"", what, text, needle);
}

/* ---- engines ---- */

static void test_engine_size_lie_refused(void **state)
{
    for (int attempt = 0; attempt < 2; attempt++) { /* the refusal is not cached as a load */
        tf_plugin *p = (tf_plugin *)&p;
        TF_ASSERT_STATUS(tf_plugin_load(ENGINE_PATH("size-lie"), &p), TF_ERR_PLUGIN_STRUCT_SIZE);
        assert_ptr_equal(p, (tf_plugin *)&p);
        expect_text("size-lie", tf_error_message(), "tenferro-engine-size-lie.so");
        expect_text("size-lie", tf_error_message(), "struct_size");
        expect_text("size-lie", tf_error_message(), "expected at most");
    }
    /* A scan reports it with the same status, and the truthful plugins as loadable. */
    setenv("TENFERRO_PLUGIN_PATH", TF_FIXTURE_DIR, 1);
    tf_plugin_candidate *c = NULL;
    size_t n = 0;
    TF_ASSERT_OK(tf_plugin_scan(&c, &n));
    int seen = 0;
    for (size_t i = 0; i < n; i++) {
        if (strstr(c[i].path, "/tenferro-engine-size-lie.so")) {
            assert_int_equal(c[i].status, TF_ERR_PLUGIN_STRUCT_SIZE);
            assert_null(c[i].plugin);
            seen |= 1;
        }
        if (strstr(c[i].path, "/tenferro-engine-supports-lies.so")) {
            assert_int_equal(c[i].status, TF_OK); /* its lie only shows when it runs */
            seen |= 2;
        }
    }
    tf_plugin_scan_free(c, n);
    unsetenv("TENFERRO_PLUGIN_PATH");
    assert_int_equal(seen, 3);
}

static tf_eager *make_var(tf_runtime *rt, const double *v, size_t n)
{
    int64_t shape = (int64_t)n;
    tf_tensor *t = NULL;
    tf_eager *x = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, 1, &shape, v, n, &t));
    TF_ASSERT_OK(tf_runtime_variable_from(rt, t, &x));
    tf_tensor_release(t);
    return x;
}

/*
 * An engine that claims an op and then fails it: the caller gets the
 * engine's status and message, no result, nothing on the tape, and the
 * runtime goes on with another engine.
 */
static void test_engine_supports_lies_contained(void **state)
{
    tf_plugin *p = NULL;
    tf_engine *liar = NULL, *cpu = NULL;
    TF_ASSERT_OK(tf_plugin_load(ENGINE_PATH("supports-lies"), &p));
    TF_ASSERT_OK(tf_engine_create(p, NULL, &liar));
    TF_ASSERT_OK(tf_engine_open("cpu", 1, &cpu));
    tf_runtime *rt = NULL;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    const double v[3] = {1, 2, 3};
    tf_eager *x = make_var(rt, v, 3);
    tf_session *s = NULL;
    TF_ASSERT_OK(tf_session_begin(rt, liar, &s));
    assert_true(tf_engine_supports(liar, TF_PRIM_BINARY, TF_BINARY_ADD,
                                   (const tf_dtype[]){TF_F64, TF_F64, TF_F64}, 3));
    tf_eager *sentinel = (tf_eager *)&p, *out = sentinel;
    TF_ASSERT_STATUS(tf_session_add(s, x, x, &out), TF_ERR_UNSUPPORTED);
    assert_ptr_equal(out, sentinel);
    expect_text("supports-lies", tf_error_message(), "supports-lies");
    expect_text("supports-lies", tf_error_cause(), "supports-lies fixture: claimed primitive");
    TF_ASSERT_STATUS(tf_session_exp(s, x, &out), TF_ERR_UNSUPPORTED);
    TF_ASSERT_STATUS(tf_session_reduce_sum(s, x, NULL, 0, &out), TF_ERR_UNSUPPORTED);
    assert_ptr_equal(out, sentinel);
    tf_session_end(s);
    /* Nothing was recorded and no slot changed. */
    tf_tensor *g = (tf_tensor *)&p;
    TF_ASSERT_OK(tf_eager_grad(x, &g));
    assert_null(g);
    /* The same runtime and variable work on the CPU engine. */
    TF_ASSERT_OK(tf_session_begin(rt, cpu, &s));
    tf_eager *y = NULL, *l = NULL;
    TF_ASSERT_OK(tf_session_mul(s, x, x, &y));
    TF_ASSERT_OK(tf_session_reduce_sum(s, y, NULL, 0, &l));
    TF_ASSERT_OK(tf_eager_backward(l, cpu));
    TF_ASSERT_OK(tf_eager_grad(x, &g));
    double got[3];
    TF_ASSERT_OK(tf_tensor_copy_to_host(g, TF_F64, got, 3));
    for (int i = 0; i < 3; i++)
        assert_true(got[i] == 2 * v[i]);
    tf_tensor_release(g);
    tf_eager_release(l);
    tf_eager_release(y);
    tf_session_end(s);
    tf_eager_release(x);
    tf_runtime_release(rt);
    tf_engine_destroy(cpu);
    tf_engine_destroy(liar);
}

/*
 * A plugin of ABI 1.2 that says yes to every question (it does not know op m - 1 of
 * FUSED): several outputs are refused by the host without asking the plugin or calling
 * its execute, the outputs untouched; one output is still asked and sent.
 */
static void test_engine_old_minor_no_fused_outputs(void **state)
{
    tf_plugin *p = NULL;
    tf_engine *old = NULL;
    TF_ASSERT_OK(tf_plugin_load(ENGINE_PATH("old-minor"), &p));
    assert_int_equal(tf_plugin_abi_minor(p), 2);
    TF_ASSERT_OK(tf_engine_create(p, NULL, &old));
    static const tf_dtype d[4] = {TF_F64, TF_F64, TF_F64, TF_F64};
    assert_true(tf_engine_supports(old, TF_PRIM_FUSED, 0, d, 2));
    assert_false(tf_engine_supports(old, TF_PRIM_FUSED, 1, d, 3));
    assert_false(tf_engine_supports(old, TF_PRIM_FUSED, 2, d, 4));
    const int64_t n = 3;
    const double zero[3] = {0, 0, 0};
    tf_tensor *x = NULL, *out[2] = {NULL, NULL};
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, 1, &n, (const double[]){1, 2, 3}, 3, &x));
    for (int i = 0; i < 2; i++)
        TF_ASSERT_OK(tf_tensor_from_host(TF_F64, 1, &n, zero, 3, &out[i]));
    static const tf_fused_step steps[2] = {{TF_FUSED_UNARY, TF_UNARY_EXP, 0, 0},
                                           {TF_FUSED_UNARY, TF_UNARY_NEG, 1, 0}};
    static const uint32_t outputs[2] = {0, 1};
    tf_fused_params fp = {sizeof fp, 2, steps, 2, outputs};
    TF_ASSERT_STATUS(tf_engine_execute(old, TF_PRIM_FUSED, &fp, 1, &x, 2, out), TF_ERR_UNSUPPORTED);
    expect_text("old-minor", tf_error_message(), "older than 1.3");
    assert_null(strstr(tf_error_cause(), "fixture")); /* its execute never ran */
    for (int i = 0; i < 2; i++) {
        double got[3];
        TF_ASSERT_OK(tf_tensor_copy_to_host(out[i], TF_F64, got, 3));
        assert_memory_equal(got, zero, sizeof got);
    }
    fp.n_outputs = 1;
    TF_ASSERT_STATUS(tf_engine_execute(old, TF_PRIM_FUSED, &fp, 1, &x, 1, out), TF_ERR_UNSUPPORTED);
    expect_text("old-minor", tf_error_cause(), "old-minor fixture: claimed primitive 16");
    tf_tensor_release(x);
    tf_tensor_release(out[0]);
    tf_tensor_release(out[1]);
    tf_engine_destroy(old);
}

/* ---- extension modules ---- */

static void test_module_load_refusals(void **state)
{
    static const struct {
        const char *path, *file;
        tf_status status;
        const char *needle;
    } cases[] = {
        {MODULE_PATH("size_lie"), "tenferro-ext-fx_size_lie.so", TF_ERR_PLUGIN_STRUCT_SIZE,
         "for the ABI 1.0 it states"},
        {MODULE_PATH("null_id"), "tenferro-ext-fx_null_id.so", TF_ERR_VALIDATION,
         "found \"(null)\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tf_extension_module *m = (tf_extension_module *)&m;
        TF_ASSERT_STATUS(tf_extension_load(cases[i].path, &m), cases[i].status);
        assert_ptr_equal(m, (tf_extension_module *)&m);
        expect_text(cases[i].file, tf_error_message(), cases[i].file);
        expect_text(cases[i].file, tf_error_message(), cases[i].needle);
    }
}

static void expect_late_failure(tf_runtime *rt, tf_extension_module *late, int installed)
{
    tf_epoch before = tf_runtime_epoch(rt), e = 999;
    uint64_t pubs = tf_runtime_extension_publish_count(rt);
    TF_ASSERT_STATUS(tf_runtime_install_extension_module(rt, late, &e), TF_ERR_RUNTIME_STATE);
    assert_int_equal(e, 999);
    expect_text("hook_fails_late", tf_error_cause(), "fails after adding every op");
    assert_int_equal(tf_runtime_epoch(rt), before);
    assert_int_equal(tf_runtime_extension_publish_count(rt), pubs);
    assert_int_equal(tf_runtime_has_op(rt, "tenferro.fixture.scale"), installed);
    assert_int_equal(tf_runtime_has_op(rt, "tenferro.fixture.noad"), installed);
}

/* Every op was added to the candidate, then the hook failed: none is published. */
static void test_module_hook_fails_late(void **state)
{
    tf_extension_module *late = NULL, *good = NULL;
    TF_ASSERT_OK(tf_extension_load(MODULE_PATH("hook_fails_late"), &late));
    TF_ASSERT_OK(tf_extension_load(MODULE_PATH("fixture"), &good));
    tf_runtime *rt = NULL;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    expect_late_failure(rt, late, 0);
    assert_int_equal(tf_runtime_epoch(rt), 0);
    /* The working module of the same id installs, and a late failure replacing
       it keeps it installed. */
    tf_epoch e = 0;
    TF_ASSERT_OK(tf_runtime_install_extension_module(rt, good, &e));
    assert_int_equal(e, 1);
    expect_late_failure(rt, late, 1);
    /* ...and callable. */
    tf_engine *cpu = NULL;
    TF_ASSERT_OK(tf_engine_open("cpu", 1, &cpu));
    tf_session *s = NULL;
    TF_ASSERT_OK(tf_session_begin(rt, cpu, &s));
    tf_eager *x = make_var(rt, (const double[]){1, 2}, 2), *y = NULL;
    tf_call_arg args[2] = {TF_ARG_TENSOR(x), TF_ARG_F64(3.0)};
    TF_ASSERT_OK(tf_session_call(s, "tenferro.fixture.scale", args, 2, &y, 1));
    double got[2];
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(y), TF_F64, got, 2));
    assert_true(got[0] == 3 && got[1] == 6);
    tf_eager_release(y);
    tf_eager_release(x);
    tf_session_end(s);
    tf_engine_destroy(cpu);
    tf_runtime_release(rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_engine_size_lie_refused),
        cmocka_unit_test(test_engine_supports_lies_contained),
        cmocka_unit_test(test_engine_old_minor_no_fused_outputs),
        cmocka_unit_test(test_module_load_refusals),
        cmocka_unit_test(test_module_hook_fails_late),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
