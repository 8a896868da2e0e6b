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
    tf_fused_params fp = {sizeof fp, 2, steps, 2, outputs, 0, NULL, 0, 0};
    TF_ASSERT_STATUS(tf_engine_execute(old, TF_PRIM_FUSED, &fp, 1, &x, 2, out), TF_ERR_UNSUPPORTED);
    expect_text("old-minor", tf_error_message(), "older than 1.3");
    assert_null(strstr(tf_error_cause(), "fixture")); /* its execute never ran */
    for (int i = 0; i < 2; i++) {
        double got[3];
        TF_ASSERT_OK(tf_tensor_copy_to_host(out[i], TF_F64, got, 3));
        assert_memory_equal(got, zero, sizeof got);
    }
    fp.n_outputs = 1;
    /* ABI 1.5's immediates neither: refused by the host, the plugin never called */
    static const tf_fused_step imm_steps[2] = {{TF_FUSED_BINARY, TF_BINARY_MUL, 0, TF_FUSED_IMM},
                                               {TF_FUSED_UNARY, TF_UNARY_NEG, 1, 0}};
    static const double imm[1] = {2.0};
    tf_fused_params ip = {sizeof ip, 2, imm_steps, 1, NULL, 1, imm, 0, 0};
    TF_ASSERT_STATUS(tf_engine_execute(old, TF_PRIM_FUSED, &ip, 1, &x, 1, out), TF_ERR_UNSUPPORTED);
    expect_text("old-minor", tf_error_message(), "older than 1.5");
    assert_null(strstr(tf_error_cause(), "fixture"));
    /* ABI 1.6's reduced output neither: not asked about, refused, the plugin never called */
    assert_false(tf_engine_supports(old, TF_PRIM_FUSED, TF_FUSED_REDUCE_QUERY(TF_REDUCE_SUM, 0),
                                    d, 2));
    const int64_t one = 1;
    tf_tensor *sum = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, 1, &one, zero, 1, &sum));
    tf_fused_params rp = {sizeof rp, 2, steps, 0, NULL, 0, NULL, TF_REDUCE_SUM + 1, 1};
    TF_ASSERT_STATUS(tf_engine_execute(old, TF_PRIM_FUSED, &rp, 1, &x, 1, &sum),
                     TF_ERR_UNSUPPORTED);
    expect_text("old-minor", tf_error_message(), "older than 1.6");
    assert_null(strstr(tf_error_cause(), "fixture"));
    double got_sum = -1;
    TF_ASSERT_OK(tf_tensor_copy_to_host(sum, TF_F64, &got_sum, 1));
    assert_true(got_sum == 0.0);
    tf_tensor_release(sum);
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

/* ---- a module whose AD rules return results of the wrong dtype or shape ---- */

/*
 * liar(x) -> a copy of x, with reverse and forward rules that return
 * g_lie.result (when set) instead of the honest cotangent or tangent: a
 * rank-0 sum, a tensor of another dtype, or one of another runtime. The host
 * must refuse each one naming the module, the op and the input (issue 19,
 * item 7), and leave grad slots as they were.
 */
static struct {
    int mode;        /* 0: honest; 1: a rank-0 sum; 2: g_lie.other; 3: fail, see below */
    tf_eager *other; /* the tensor mode 2 hands back */
    char *unterminated; /* mode 3 reports and logs these bytes, which have no NUL */
} g_lie;

#define UNTERMINATED_LEN 4096

static tf_status liar_cpu(const tf_ext_kernel_ctx *k, const tf_operand *x, const tf_operand *y)
{
    int64_t n = x->rank ? x->shape[0] : 1;
    for (int64_t i = 0; i < n; i++)
        ((double *)y->data)[y->offset + i] =
            ((const double *)x->data)[x->offset + i * (x->rank ? x->strides[0] : 0)];
    return TF_OK;
}

static tf_status liar_infer(const tf_ext_rule_ctx *c, const tf_ext_meta *t, uint32_t nt,
                            const tf_ext_scalar *sc, uint32_t ns, tf_ext_meta *out)
{
    if (t[0].dtype != TF_F64 || t[0].rank > 1)
        return c->report_argument(c, TF_ERR_DTYPE_MISMATCH, 0, "liar: x must be f64, rank <= 1");
    out[0] = t[0];
    return TF_OK;
}

static tf_status lie(const tf_ext_rule_ctx *c, tf_ext_tensor *honest, tf_ext_tensor **res)
{
    if (g_lie.mode == 3) {
        c->host->log(c->host->ctx, TF_LOG_WARN, g_lie.unterminated);
        c->host->report_error(c->host->ctx, TF_ERR_BACKEND, g_lie.unterminated);
        return TF_ERR_BACKEND;
    }
    if (g_lie.mode == 1)
        return c->ops->reduce_sum(c->session, honest, NULL, 0, res);
    tf_ext_tensor *t = g_lie.mode == 2 ? (tf_ext_tensor *)g_lie.other : honest;
    c->ops->retain(t);
    *res = t;
    return TF_OK;
}

static tf_status liar_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                          const int *need, tf_ext_tensor **cin)
{
    return need[0] ? lie(c, cot, &cin[0]) : TF_OK;
}

static tf_status liar_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                          tf_ext_tensor *const *tan, tf_ext_tensor **tout)
{
    return tan[0] ? lie(c, tan[0], tout) : TF_OK;
}

static tf_status liar_install(const tf_host_api *host, const tf_ext_registrar *reg)
{
    static const uint32_t kinds[] = {TF_EXT_ARG_TENSOR};
    static const char *const names[] = {"x"};
    static const tf_ext_kernel kernels[] = {{"cpu", TF_EXT_KERNEL_FN(liar_cpu)}};
    static const tf_ext_op op = {.struct_size = sizeof(tf_ext_op),
                                 .n_args = 1,
                                 .n_outputs = 1,
                                 .n_kernels = 1,
                                 .name = "liar",
                                 .arg_kinds = kinds,
                                 .arg_names = names,
                                 .infer = liar_infer,
                                 .kernels = kernels,
                                 .vjp = liar_vjp,
                                 .jvp = liar_jvp};
    (void)host;
    return reg->add_op(reg->candidate, &op);
}

static const tf_extension_module_desc k_liar = {.struct_size = sizeof(tf_extension_module_desc),
                                                .abi_major = TF_EXTENSION_ABI_MAJOR,
                                                .abi_minor = TF_EXTENSION_ABI_MINOR,
                                                .id = "test.liar",
                                                .version = "1.0.0",
                                                .description = "lying AD rules",
                                                .install = liar_install};

static size_t g_longest_log;
static void count_log(void *user, tf_log_level level, const char *message)
{
    (void)user;
    (void)level;
    size_t n = strlen(message);
    g_longest_log = n > g_longest_log ? n : g_longest_log;
}

/* The slot of x holds `g` still, with the values {1, 1, 1}. */
static void expect_slot(tf_eager *x, const tf_tensor *g)
{
    tf_tensor *now = NULL;
    TF_ASSERT_OK(tf_eager_grad(x, &now));
    assert_ptr_equal(now, g);
    double v[3];
    TF_ASSERT_OK(tf_tensor_copy_to_host(now, TF_F64, v, 3));
    assert_true(v[0] == 1 && v[1] == 1 && v[2] == 1);
    tf_tensor_release(now);
}

/* Every way in: backward, grad, vjp and jvp, each refused with `status`. */
static void expect_refused(tf_runtime *rt, tf_engine *cpu, tf_eager *x, tf_eager *y, tf_eager *l,
                           tf_status status, const char *rule, const tf_tensor *g)
{
    tf_eager *sentinel = (tf_eager *)&g_lie, *out = sentinel;
    TF_ASSERT_STATUS(tf_eager_backward(l, cpu), status);
    expect_text("backward", tf_error_message(), "extension module 'test.liar', op 'test.liar.liar'");
    expect_text("backward", tf_error_message(), "input 'x'");
    assert_string_equal(tf_error_argument(), "x");
    expect_slot(x, g);
    TF_ASSERT_STATUS(tf_runtime_grad(rt, cpu, l, x, &out), status);
    assert_ptr_equal(out, sentinel);
    TF_ASSERT_STATUS(tf_runtime_vjp(rt, cpu, y, x, y, &out), status);
    assert_ptr_equal(out, sentinel);
    TF_ASSERT_STATUS(tf_runtime_jvp(rt, cpu, y, x, x, &out), status);
    assert_ptr_equal(out, sentinel);
    expect_text("jvp", tf_error_message(), "the forward rule returned a tangent");
    expect_text("jvp", tf_error_message(), rule);
    expect_slot(x, g);
}

static void test_module_rule_results_checked(void **state)
{
    tf_engine *cpu = NULL;
    tf_runtime *rt = NULL, *rt2 = NULL;
    tf_extension_module *m = NULL;
    tf_epoch e;
    TF_ASSERT_OK(tf_engine_open("cpu", 1, &cpu));
    TF_ASSERT_OK(tf_runtime_create(&rt));
    TF_ASSERT_OK(tf_runtime_create(&rt2));
    TF_ASSERT_OK(tf_extension_from_descriptor(&k_liar, &m));
    TF_ASSERT_OK(tf_runtime_install_extension_module(rt, m, &e));
    tf_session *s = NULL;
    TF_ASSERT_OK(tf_session_begin(rt, cpu, &s));
    tf_eager *x = make_var(rt, (const double[]){1, 2, 3}, 3), *y = NULL, *l = NULL;
    tf_call_arg arg = TF_ARG_TENSOR(x);
    TF_ASSERT_OK(tf_session_call(s, "test.liar.liar", &arg, 1, &y, 1));
    TF_ASSERT_OK(tf_session_reduce_sum(s, y, NULL, 0, &l));
    g_lie.mode = 0; /* honest: the slot gets {1, 1, 1} */
    TF_ASSERT_OK(tf_eager_backward(l, cpu));
    tf_tensor *g = NULL;
    TF_ASSERT_OK(tf_eager_grad(x, &g));
    g_lie.mode = 1;
    expect_refused(rt, cpu, x, y, l, TF_ERR_SHAPE_MISMATCH, "f64[] for output 0, which is f64[3]",
                   g);
    const int64_t n3 = 3;
    tf_tensor *t = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F32, 1, &n3, (const float[]){1, 1, 1}, 3, &t));
    TF_ASSERT_OK(tf_runtime_constant_from(rt, t, &g_lie.other));
    g_lie.mode = 2;
    expect_refused(rt, cpu, x, y, l, TF_ERR_DTYPE_MISMATCH, "f32[3] for output 0", g);
    tf_eager_release(g_lie.other);
    TF_ASSERT_OK(tf_runtime_constant_from(rt2, tf_eager_value(x), &g_lie.other));
    expect_refused(rt, cpu, x, y, l, TF_ERR_CONTEXT_MISMATCH, "of another runtime", g);
    tf_eager_release(g_lie.other);
    tf_tensor_release(t);
    /* a failure reported with a message that has no NUL: read no further than the
       host keeps (the sanitizer build checks), logged bounded too */
    g_lie.unterminated = malloc(UNTERMINATED_LEN);
    assert_non_null(g_lie.unterminated);
    memset(g_lie.unterminated, 'M', UNTERMINATED_LEN);
    g_lie.mode = 3;
    tf_log_set(count_log, NULL, TF_LOG_WARN);
    TF_ASSERT_STATUS(tf_eager_backward(l, cpu), TF_ERR_BACKEND);
    tf_log_set(NULL, NULL, TF_LOG_WARN);
    size_t cause = strlen(tf_error_cause());
    assert_true(cause > 500 && cause < UNTERMINATED_LEN);
    assert_true(g_longest_log > 500 && g_longest_log < UNTERMINATED_LEN);
    expect_slot(x, g);
    free(g_lie.unterminated);
    /* honest again: everything works on the same graph */
    g_lie.mode = 0;
    tf_eager *d = NULL;
    TF_ASSERT_OK(tf_runtime_grad(rt, cpu, l, x, &d));
    tf_eager_release(d);
    tf_tensor_release(g);
    tf_eager_release(l);
    tf_eager_release(y);
    tf_eager_release(x);
    tf_session_end(s);
    tf_runtime_release(rt2);
    tf_runtime_release(rt);
    tf_engine_destroy(cpu);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_engine_size_lie_refused),
        cmocka_unit_test(test_engine_supports_lies_contained),
        cmocka_unit_test(test_engine_old_minor_no_fused_outputs),
        cmocka_unit_test(test_module_load_refusals),
        cmocka_unit_test(test_module_hook_fails_late),
        cmocka_unit_test(test_module_rule_results_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
