/*
 * test_oom.c - allocation-failure injection, SQLite style (issue 8, item 1).
 *
 * The counting allocator of tf_test_alloc.h is installed before the first
 * library call, so it sees every host allocation of the core and of the CPU
 * plugin (which allocates through the host table). Each scenario runs with
 * the Nth allocation failing, for N = 1, 2, 3, ... until a run sees no
 * injected failure, once with only the Nth failing and once with every
 * allocation from the Nth on failing. At every N the test asserts: the
 * scenario fails with TF_ERR_OUT_OF_MEMORY, or (where the library can do
 * without the memory, e.g. a cache copy) succeeds with the exact result; the
 * allocator's live blocks and bytes are back to their baseline once the
 * scenario released what it made; and the shared runtime is unchanged: the
 * grad slots of its variables hold the same values (all or nothing after a
 * backward), its registry epoch and the entry counts of its caches are as
 * they were. See docs/reliability.md.
 */
#define _POSIX_C_SOURCE 200809L /* mkstemp, setenv */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tenferro/config.h>
#include <tenferro/engine.h>
#include <tenferro/extension.h>
#include <tenferro/ops.h>
#include <tenferro/system.h>

#include "tf_test.h"
#include "tf_test_alloc.h"

#define MAX_N 20000 /* a scenario that allocates more than this is a test bug */
#define MLP_VARS 4

/* The shared state every scenario runs against. */
static tf_runtime *g_rt;
static tf_engine *g_cpu;
static tf_eager *g_vars[MLP_VARS]; /* W1 [3,4], b1 [1,4], W2 [4,2], x [5,3] */
static tf_extension_module *g_linalg;

/* ---- helpers ---- */

static tf_eager *make_f64(size_t rank, const int64_t *shape, double scale, int var)
{
    double v[64];
    size_t n = 1;
    for (size_t i = 0; i < rank; i++)
        n *= (size_t)shape[i];
    assert_true(n <= 64);
    for (size_t k = 0; k < n; k++)
        v[k] = scale * sin(0.7 * (double)k + 0.3);
    tf_tensor *t = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, rank, shape, v, n, &t));
    tf_eager *x = NULL;
    if (var)
        TF_ASSERT_OK(tf_runtime_variable_from(g_rt, t, &x));
    else
        TF_ASSERT_OK(tf_runtime_constant_from(g_rt, t, &x));
    tf_tensor_release(t);
    return x;
}

/* The runtime state a failed scenario must leave alone. */
typedef struct snapshot {
    double grads[MLP_VARS][64];
    size_t n[MLP_VARS];
    int has[MLP_VARS];
    tf_epoch epoch;
    tf_runtime_stats stats;
} snapshot;

static void take(snapshot *sn)
{
    memset(sn, 0, sizeof *sn);
    for (int i = 0; i < MLP_VARS; i++) {
        tf_tensor *g = NULL;
        TF_ASSERT_OK(tf_eager_grad(g_vars[i], &g));
        sn->has[i] = g != NULL;
        if (g) {
            sn->n[i] = tf_tensor_numel(g);
            TF_ASSERT_OK(tf_tensor_copy_to_host(g, TF_F64, sn->grads[i], sn->n[i]));
            tf_tensor_release(g);
        }
    }
    sn->epoch = tf_runtime_epoch(g_rt);
    TF_ASSERT_OK(tf_runtime_cache_stats(g_rt, &sn->stats));
}

/* Compares grads (times `factor`), the epoch and the caches' entry counts. */
static void assert_same(const snapshot *a, const snapshot *b, double factor, size_t n_fail)
{
    for (int i = 0; i < MLP_VARS; i++) {
        if (a->has[i] != b->has[i] || a->n[i] != b->n[i])
            fail_msg("N=%zu: grad slot %d changed presence or size", n_fail, i);
        for (size_t k = 0; k < a->n[i]; k++)
            if (b->grads[i][k] != factor * a->grads[i][k])
                fail_msg("N=%zu: grad slot %d element %zu is %.17g, want %.17g", n_fail, i, k,
                         b->grads[i][k], factor * a->grads[i][k]);
    }
    if (a->epoch != b->epoch)
        fail_msg("N=%zu: epoch moved %llu -> %llu", n_fail, (unsigned long long)a->epoch,
                 (unsigned long long)b->epoch);
    if (a->stats.prepared_derivatives.entries != b->stats.prepared_derivatives.entries ||
        a->stats.ad_transforms.entries != b->stats.ad_transforms.entries ||
        a->stats.extensions.entries != b->stats.extensions.entries)
        fail_msg("N=%zu: cache entry counts changed (prepared %zu -> %zu, ad %zu -> %zu, "
                 "ext %zu -> %zu)",
                 n_fail, a->stats.prepared_derivatives.entries,
                 b->stats.prepared_derivatives.entries, a->stats.ad_transforms.entries,
                 b->stats.ad_transforms.entries, a->stats.extensions.entries,
                 b->stats.extensions.entries);
}

/* A scenario: runs once, releases everything it made, writes a checksum. */
typedef tf_status (*scenario_fn)(double *result);

/* What a successful run of a scenario does to the shared runtime. */
typedef struct effect {
    double grad_factor;  /* the grads after = grad_factor * before (1: untouched) */
    void (*reset)(void); /* brings the runtime back to its state before the run */
} effect;

/* Asserts the allocator is back to `blocks`/`bytes` and kept its contract. */
static void assert_balance(const char *name, size_t n, size_t blocks, size_t bytes,
                           size_t violations, tf_status st)
{
    if (tf_test_alloc_violations() != violations)
        fail_msg("%s, N=%zu: allocator contract violated", name, n);
    if (blocks != tf_test_alloc_live_blocks() || bytes != tf_test_alloc_live_bytes())
        fail_msg("%s, N=%zu: leak: %zu blocks / %zu bytes live, %zu / %zu before (%s)", name, n,
                 tf_test_alloc_live_blocks(), tf_test_alloc_live_bytes(), blocks, bytes,
                 tf_status_name(st));
}

/*
 * Runs fn with allocation N failing (and, when sticky, every one after it)
 * for N = 1, 2, ... until a run sees no injected failure. A run may fail
 * (with TF_ERR_OUT_OF_MEMORY, changing nothing) or, where the library can
 * do without the memory (a cache it skips), succeed with the exact result
 * `want`. Returns the number of N tried.
 */
static size_t sweep(const char *name, scenario_fn fn, const effect *fx, int sticky, double want)
{
    for (size_t n = 1; n < MAX_N; n++) {
        snapshot before, after;
        take(&before);
        size_t blocks = tf_test_alloc_live_blocks(), bytes = tf_test_alloc_live_bytes();
        size_t violations = tf_test_alloc_violations();
        double result = NAN;
        tf_error_clear();
        tf_test_alloc_fail_at(n, sticky);
        tf_status st = fn(&result);
        size_t injected = tf_test_alloc_injected();
        tf_test_alloc_fail_at(0, 0);
        take(&after);
        if (st == TF_OK) {
            if (result != want)
                fail_msg("%s, N=%zu: result %.17g, want %.17g", name, n, result, want);
            assert_same(&before, &after, fx->grad_factor, n);
            if (fx->reset)
                fx->reset();
            assert_balance(name, n, blocks, bytes, violations, st);
            if (injected == 0)
                return n;
            continue;
        }
        if (st != TF_ERR_OUT_OF_MEMORY)
            fail_msg("%s, N=%zu: got %s (\"%s\"), want TF_ERR_OUT_OF_MEMORY", name, n,
                     tf_status_name(st), tf_error_message());
        assert_true(injected > 0);
        assert_int_equal(tf_error_status(), TF_ERR_OUT_OF_MEMORY);
        assert_true(tf_error_message()[0] != '\0');
        assert_same(&before, &after, 1.0, n);
        assert_balance(name, n, blocks, bytes, violations, st);
    }
    fail_msg("%s: still failing after %d allocations", name, MAX_N);
    return 0;
}

#define TRY(call)               \
    do {                        \
        if ((st = (call)) != 0) \
            goto done;          \
    } while (0)

/* loss = sum(tanh(x W1 + b1) W2), recorded on the shared runtime. */
static tf_status mlp_loss(tf_session *s, tf_eager **loss)
{
    tf_eager *h = NULL, *hb = NULL, *a = NULL, *y = NULL;
    tf_status st;
    TRY(tf_session_matmul(s, g_vars[3], g_vars[0], &h));
    TRY(tf_session_add(s, h, g_vars[1], &hb));
    TRY(tf_session_tanh(s, hb, &a));
    TRY(tf_session_matmul(s, a, g_vars[2], &y));
    TRY(tf_session_reduce_sum(s, y, NULL, 0, loss));
done:
    tf_eager_release(y);
    tf_eager_release(a);
    tf_eager_release(hb);
    tf_eager_release(h);
    return st;
}

static double read_scalar(tf_eager *x)
{
    double v = NAN;
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(x), TF_F64, &v, 1));
    return v;
}

/* ---- scenarios ---- */

static tf_status sc_runtime_create(double *result)
{
    tf_runtime *rt = NULL;
    tf_status st = tf_runtime_create(&rt);
    if (!st) {
        *result = (double)tf_runtime_ref_count(rt);
        tf_runtime_release(rt);
    }
    return st;
}

static tf_status sc_forward(double *result)
{
    tf_session *s = NULL;
    tf_eager *loss = NULL;
    tf_status st;
    TRY(tf_session_begin(g_rt, g_cpu, &s));
    TRY(mlp_loss(s, &loss));
    *result = read_scalar(loss);
done:
    tf_eager_release(loss);
    tf_session_end(s);
    return st;
}

static tf_status sc_backward(double *result)
{
    tf_session *s = NULL;
    tf_eager *loss = NULL;
    tf_status st;
    TRY(tf_session_begin(g_rt, g_cpu, &s));
    TRY(mlp_loss(s, &loss));
    TRY(tf_eager_backward(loss, g_cpu));
    *result = read_scalar(loss);
done:
    tf_eager_release(loss);
    tf_session_end(s);
    return st;
}

/* A checksum of a gradient: the sum of its elements. */
static double checksum(tf_eager *g)
{
    double v[64];
    size_t n = tf_tensor_numel(tf_eager_value(g));
    assert_true(n <= 64);
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(g), TF_F64, v, n));
    double sum = 0;
    for (size_t k = 0; k < n; k++)
        sum += v[k];
    return sum;
}

static tf_status sc_functional_grad(double *result)
{
    tf_session *s = NULL;
    tf_eager *loss = NULL, *g = NULL;
    tf_status st;
    TRY(tf_session_begin(g_rt, g_cpu, &s));
    TRY(mlp_loss(s, &loss));
    TRY(tf_runtime_grad(g_rt, g_cpu, loss, g_vars[0], &g));
    *result = checksum(g);
done:
    tf_eager_release(g);
    tf_eager_release(loss);
    tf_session_end(s);
    return st;
}

/* d/dW1 of sum(d loss / dW1 * d loss / dW1): a grad of a grad. */
static tf_status sc_second_order(double *result)
{
    tf_session *s = NULL;
    tf_eager *loss = NULL, *g = NULL, *gg = NULL, *q = NULL, *h = NULL;
    tf_status st;
    TRY(tf_session_begin(g_rt, g_cpu, &s));
    TRY(mlp_loss(s, &loss));
    TRY(tf_runtime_grad(g_rt, g_cpu, loss, g_vars[0], &g));
    TRY(tf_session_mul(s, g, g, &gg));
    TRY(tf_session_reduce_sum(s, gg, NULL, 0, &q));
    TRY(tf_runtime_grad(g_rt, g_cpu, q, g_vars[0], &h));
    *result = checksum(h);
done:
    tf_eager_release(h);
    tf_eager_release(q);
    tf_eager_release(gg);
    tf_eager_release(g);
    tf_eager_release(loss);
    tf_session_end(s);
    return st;
}

/* Upload a host tensor to the CPU engine and download it again. */
static tf_status sc_upload_download(double *result)
{
    int64_t shape[2] = {3, 4};
    double v[12];
    for (int k = 0; k < 12; k++)
        v[k] = k + 0.5;
    tf_tensor *h = NULL, *d = NULL, *back = NULL;
    tf_status st;
    TRY(tf_tensor_from_host(TF_F64, 2, shape, v, 12, &h));
    TRY(tf_engine_upload(g_cpu, h, &d));
    TRY(tf_engine_download(g_cpu, d, &back));
    double w[12];
    TRY(tf_tensor_copy_to_host(back, TF_F64, w, 12));
    *result = 0;
    for (int k = 0; k < 12; k++)
        *result += w[k];
done:
    tf_tensor_release(back);
    tf_tensor_release(d);
    tf_tensor_release(h);
    return st;
}

/*
 * Install linalg into a fresh runtime and solve A x = b there; the shared
 * runtime's registry must not notice. The fresh runtime is made inside the
 * failure window too, so its creation is swept as well.
 */
static tf_status sc_linalg_solve(double *result)
{
    static const double a[4] = {4, 1, 2, 3}, b[2] = {1, 2};
    int64_t sa[2] = {2, 2}, sb[2] = {2, 1};
    tf_runtime *rt = NULL;
    tf_session *s = NULL;
    tf_tensor *ta = NULL, *tb = NULL;
    tf_eager *ea = NULL, *eb = NULL, *x = NULL;
    tf_epoch epoch = 0;
    tf_status st;
    TRY(tf_runtime_create(&rt));
    TRY(tf_runtime_install_extension_module(rt, g_linalg, &epoch));
    TRY(tf_tensor_from_host(TF_F64, 2, sa, a, 4, &ta));
    TRY(tf_tensor_from_host(TF_F64, 2, sb, b, 2, &tb));
    TRY(tf_runtime_variable_from(rt, ta, &ea));
    TRY(tf_runtime_constant_from(rt, tb, &eb));
    TRY(tf_session_begin(rt, g_cpu, &s));
    tf_call_arg args[2] = {TF_ARG_TENSOR(ea), TF_ARG_TENSOR(eb)};
    TRY(tf_session_call(s, "tenferro.linalg.solve", args, 2, &x, 1));
    double v[2];
    TRY(tf_tensor_copy_to_host(tf_eager_value(x), TF_F64, v, 2));
    *result = v[0] * 1000 + v[1];
done:
    /* A failed install leaves the fresh runtime's registry as created (epoch 0, no op). */
    if (rt && (tf_runtime_epoch(rt) != epoch ||
               !tf_runtime_has_op(rt, "tenferro.linalg.solve") != (epoch == 0)))
        fail_msg("the registry of the fresh runtime is half-changed (epoch %llu, install "
                 "returned %llu)",
                 (unsigned long long)tf_runtime_epoch(rt), (unsigned long long)epoch);
    tf_eager_release(x);
    tf_session_end(s);
    tf_eager_release(eb);
    tf_eager_release(ea);
    tf_tensor_release(tb);
    tf_tensor_release(ta);
    tf_runtime_release(rt);
    return st;
}

/* The functional forward-mode derivative: d loss along W1 in direction 1. */
static tf_status sc_jvp(double *result)
{
    static const double ones[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    int64_t shape[2] = {3, 4};
    tf_session *s = NULL;
    tf_tensor *th = NULL;
    tf_eager *loss = NULL, *t = NULL, *j = NULL;
    tf_status st;
    TRY(tf_session_begin(g_rt, g_cpu, &s));
    TRY(mlp_loss(s, &loss));
    TRY(tf_tensor_from_host(TF_F64, 2, shape, ones, 12, &th));
    TRY(tf_runtime_constant_from(g_rt, th, &t));
    TRY(tf_runtime_jvp(g_rt, g_cpu, loss, g_vars[0], t, &j));
    *result = read_scalar(j);
done:
    tf_eager_release(j);
    tf_eager_release(t);
    tf_tensor_release(th);
    tf_eager_release(loss);
    tf_session_end(s);
    return st;
}

/*
 * The layout, index and composite op families and their rules: the gradient
 * of sum(transpose(softmax(concatenate(W1, W1), axis 1))^2) with respect to W1.
 */
static tf_status sc_op_families(double *result)
{
    static const int perm[2] = {1, 0};
    tf_session *s = NULL;
    tf_eager *c = NULL, *sm = NULL, *t = NULL, *sq = NULL, *l = NULL, *g = NULL;
    tf_status st;
    TRY(tf_session_begin(g_rt, g_cpu, &s));
    tf_eager *const parts[2] = {g_vars[0], g_vars[0]};
    TRY(tf_session_concatenate(s, parts, 2, 0, &c));
    TRY(tf_session_softmax(s, c, 1, &sm));
    TRY(tf_session_transpose(s, sm, perm, &t));
    TRY(tf_session_mul(s, t, t, &sq));
    TRY(tf_session_reduce_sum(s, sq, NULL, 0, &l));
    TRY(tf_runtime_grad(g_rt, g_cpu, l, g_vars[0], &g));
    *result = checksum(g);
done:;
    tf_eager *all[] = {g, l, sq, t, sm, c};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tf_eager_release(all[i]);
    tf_session_end(s);
    return st;
}

/* Loading an already loaded module by name: the search-path resolution. */
static tf_status sc_extension_by_name(double *result)
{
    tf_extension_module *m = NULL;
    tf_status st = tf_extension_load("linalg", &m);
    if (!st)
        *result = m == g_linalg ? 1.0 : 0.0;
    return st;
}

/*
 * A scan of the search path's extension modules (all already loaded by the
 * warm-up). A candidate refused for lack of memory is the scan's
 * out-of-memory failure; any other status must be the warm-up's.
 */
static tf_status sc_extension_scan(double *result)
{
    tf_extension_candidate *c = NULL;
    size_t n = 0;
    tf_status st = tf_extension_scan(&c, &n);
    if (st)
        return st;
    double sum = (double)n * 1000;
    for (size_t i = 0; i < n; i++) {
        if (c[i].status == TF_ERR_OUT_OF_MEMORY)
            st = TF_ERR_OUT_OF_MEMORY;
        sum += c[i].status == TF_OK ? 1 : 0;
    }
    tf_extension_scan_free(c, n);
    if (!st)
        *result = sum;
    return st;
}

/* The configuration file of the config scenarios (made by group_setup). */
static char g_config_path[64];

static tf_status sc_config_load(double *result)
{
    tf_config *c = NULL;
    setenv("TENFERRO_CONFIG", g_config_path, 1);
    tf_status st = tf_config_load(&c);
    unsetenv("TENFERRO_CONFIG");
    if (st)
        return st;
    const char *first = tf_config_engine_at(c, 0);
    *result = (double)tf_config_engine_count(c) * 1000 + (double)strlen(tf_config_plugin_path(c)) +
              (first && !strcmp(first, "cpu")) * 100;
    tf_config_destroy(c);
    return TF_OK;
}

static tf_status sc_open_configured(double *result)
{
    tf_engine *e = NULL;
    char *report = NULL;
    setenv("TENFERRO_CONFIG", g_config_path, 1);
    tf_status st = tf_engine_open_configured(&e, &report);
    unsetenv("TENFERRO_CONFIG");
    if (!st)
        *result = (double)strlen(report ? report : "") + 1000 * (e != NULL);
    tf_config_report_free(report);
    tf_engine_destroy(e);
    return st;
}

/* ---- tests ---- */

static const effect NO_EFFECT = {1.0, NULL};

/* A warm-up run (it fills the caches), then the transient and sticky sweeps. */
static void run(const char *name, scenario_fn fn, const effect *fx, double want)
{
    double warm = NAN;
    TF_ASSERT_OK(fn(&warm));
    if (fx->reset)
        fx->reset();
    if (warm != want)
        fail_msg("%s: warm-up result %.17g, want %.17g", name, warm, want);
    size_t once = sweep(name, fn, fx, 0, want);
    size_t from = sweep(name, fn, fx, 1, want);
    print_message("%s: swept N = 1..%zu failing once, 1..%zu failing from N on\n", name, once,
                  from);
}

static double g_loss, g_dw1, g_hvp, g_jvp;

/* Blocks the first load and first install of linalg keep for the process. */
static size_t g_module_blocks;

static void test_runtime_create(void **state)
{
    run("runtime_create", sc_runtime_create, &NO_EFFECT, 1);
}

static void test_forward(void **state)
{
    run("forward", sc_forward, &NO_EFFECT, g_loss);
}

/* Slots back to one gradient g (what a successful backward doubled). */
static void reset_grads(void)
{
    double v;
    TF_ASSERT_OK(tf_runtime_clear_grads(g_rt));
    TF_ASSERT_OK(sc_backward(&v));
}

static void test_backward(void **state)
{
    /* The slots hold one gradient g before every run, so every backward adds
       into non-empty slots: a failed run leaves g, a successful one 2 g. */
    reset_grads();
    static const effect fx = {2.0, reset_grads};
    run("backward", sc_backward, &fx, g_loss);
}

static void test_functional_grad(void **state)
{
    run("functional_grad", sc_functional_grad, &NO_EFFECT, g_dw1);
}

static void test_second_order(void **state)
{
    run("second_order", sc_second_order, &NO_EFFECT, g_hvp);
}

static void test_upload_download(void **state)
{
    run("upload_download", sc_upload_download, &NO_EFFECT, 72);
}

static void test_linalg_solve(void **state)
{
    /* [4 2; 1 3] x = [1; 2] (column-major a = {4, 1, 2, 3}): x = [-0.1; 0.7] */
    double want = NAN;
    size_t blocks = tf_test_alloc_live_blocks();
    TF_ASSERT_OK(sc_linalg_solve(&want));
    /* The first install of a module keeps its process-wide tables. */
    g_module_blocks += tf_test_alloc_live_blocks() - blocks;
    assert_true(fabs(want - (-0.1 * 1000 + 0.7)) < 1e-9);
    run("linalg_solve", sc_linalg_solve, &NO_EFFECT, want);
}

/*
 * The first load of linalg (dlopen, descriptor checks, the module object,
 * which the process then owns): a failed load keeps nothing and a later
 * load still works. Runs first, so that the load is not yet cached. Only
 * the transient mode (the Nth allocation alone fails) is swept: a
 * successful load is cached for the process, so the sweep ends at the
 * first success, which must be a run with no failure injected (a load that
 * went on without an allocation it needed, such as the configuration
 * file's plugin path, would succeed with the wrong search path).
 */
static void test_extension_load(void **state)
{
    for (size_t n = 1; n < MAX_N; n++) {
        size_t blocks = tf_test_alloc_live_blocks();
        tf_extension_module *m = (tf_extension_module *)&g_module_blocks; /* sentinel */
        tf_error_clear();
        tf_test_alloc_fail_at(n, 0);
        tf_status st = tf_extension_load("linalg", &m);
        size_t injected = tf_test_alloc_injected();
        tf_test_alloc_fail_at(0, 0);
        if (st == TF_OK) {
            assert_int_equal(injected, 0); /* every allocation of a first load is needed */
            assert_string_equal(tf_extension_id(m), "tenferro.linalg");
            g_linalg = m;
            g_module_blocks = tf_test_alloc_live_blocks() - blocks;
            print_message("extension_load: swept N = 1..%zu\n", n);
            return;
        }
        if (st != TF_ERR_OUT_OF_MEMORY)
            fail_msg("extension_load, N=%zu: got %s (\"%s\")", n, tf_status_name(st),
                     tf_error_message());
        assert_ptr_equal(m, (tf_extension_module *)&g_module_blocks);
        if (tf_test_alloc_live_blocks() != blocks)
            fail_msg("extension_load, N=%zu: %zu blocks live, %zu before", n,
                     tf_test_alloc_live_blocks(), blocks);
    }
    fail_msg("extension_load: still failing after %d allocations", MAX_N);
}

static void test_jvp(void **state)
{
    run("jvp", sc_jvp, &NO_EFFECT, g_jvp);
}

static void test_op_families(void **state)
{
    double want = NAN;
    TF_ASSERT_OK(sc_op_families(&want));
    run("op_families", sc_op_families, &NO_EFFECT, want);
}

static void test_extension_by_name(void **state)
{
    run("extension_by_name", sc_extension_by_name, &NO_EFFECT, 1.0);
}

static void test_extension_scan(void **state)
{
    /* The first scan may load modules the process then keeps. */
    double want = NAN;
    size_t blocks = tf_test_alloc_live_blocks();
    TF_ASSERT_OK(sc_extension_scan(&want));
    g_module_blocks += tf_test_alloc_live_blocks() - blocks;
    assert_true(want >= 1001); /* at least linalg, loaded */
    run("extension_scan", sc_extension_scan, &NO_EFFECT, want);
}

static void test_config_load(void **state)
{
    /* 1 engine, "cpu" first, the 27-byte plugin path */
    run("config_load", sc_config_load, &NO_EFFECT, 1000 + 100 + 27);
}

static void test_open_configured(void **state)
{
    double want = NAN;
    TF_ASSERT_OK(sc_open_configured(&want));
    assert_true(want > 1000);
    run("open_configured", sc_open_configured, &NO_EFFECT, want);
}

/* Blocks the loaded CPU plugin keeps for the process (plugins stay loaded). */
static size_t g_plugin_blocks;

static int group_setup(void **state)
{
    size_t blocks = tf_test_alloc_live_blocks();
    TF_ASSERT_OK(tf_engine_open("cpu", 1, &g_cpu));
    tf_engine_destroy(g_cpu);
    g_plugin_blocks = tf_test_alloc_live_blocks() - blocks;
    TF_ASSERT_OK(tf_engine_open("cpu", 1, &g_cpu));
    TF_ASSERT_OK(tf_runtime_create(&g_rt));
    int64_t s_w1[2] = {3, 4}, s_b1[2] = {1, 4}, s_w2[2] = {4, 2}, s_x[2] = {5, 3};
    g_vars[0] = make_f64(2, s_w1, 0.5, 1);
    g_vars[1] = make_f64(2, s_b1, 0.1, 1);
    g_vars[2] = make_f64(2, s_w2, 0.7, 1);
    g_vars[3] = make_f64(2, s_x, 1.0, 0);
    /* Reference values from one undisturbed run of each scenario. */
    TF_ASSERT_OK(sc_forward(&g_loss));
    TF_ASSERT_OK(sc_functional_grad(&g_dw1));
    TF_ASSERT_OK(sc_second_order(&g_hvp));
    TF_ASSERT_OK(sc_jvp(&g_jvp));
    /* The configuration the config scenarios read. */
    snprintf(g_config_path, sizeof g_config_path, "/tmp/tf_oom_config_XXXXXX");
    int fd = mkstemp(g_config_path);
    assert_true(fd >= 0);
    static const char text[] = "[engine]\ndefault = cpu\n[plugins]\n"
                               "path = /nonexistent/tf-oom-plugins\n[engine.cpu]\nthreads = 1\n";
    assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
    return 0;
}

static int group_teardown(void **state)
{
    for (int i = 0; i < MLP_VARS; i++)
        tf_eager_release(g_vars[i]);
    tf_engine_destroy(g_cpu);
    tf_runtime_release(g_rt);
    if (g_config_path[0])
        unlink(g_config_path);
    return 0;
}

int main(void)
{
    tf_test_alloc_install(); /* before any other library call */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_extension_load), /* first: the load is not cached yet */
        cmocka_unit_test(test_runtime_create),  cmocka_unit_test(test_forward),
        cmocka_unit_test(test_backward),        cmocka_unit_test(test_functional_grad),
        cmocka_unit_test(test_second_order),    cmocka_unit_test(test_upload_download),
        cmocka_unit_test(test_linalg_solve),    cmocka_unit_test(test_jvp),
        cmocka_unit_test(test_op_families),     cmocka_unit_test(test_extension_by_name),
        cmocka_unit_test(test_extension_scan),  cmocka_unit_test(test_config_load),
        cmocka_unit_test(test_open_configured),
    };
    int failed = cmocka_run_group_tests(tests, group_setup, group_teardown);
    /* Only the loaded plugin and module (owned by the process) may remain. */
    size_t kept = g_plugin_blocks + g_module_blocks;
    if (!failed && (tf_test_alloc_live_blocks() != kept || tf_test_alloc_violations() != 0)) {
        fprintf(stderr,
                "test_oom: %zu blocks live at exit (the plugin and module keep %zu), "
                "%zu contract violations\n",
                tf_test_alloc_live_blocks(), kept, tf_test_alloc_violations());
        failed = 1;
    }
    return failed;
}
