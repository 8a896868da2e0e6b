/*
 * test_fused_grad.c - reverse rules run as elementwise programs (core/src/ops/rule_fx.h).
 *
 * tf_eager_backward records nothing, so the rules of the elementwise ops that
 * have a program form run it, summed into the running cotangent, as one
 * TF_PRIM_FUSED call (in place over a private running sum). The functional
 * tf_runtime_grad records its ops (its result can be differentiated again), so
 * it runs the same rules as session ops, one primitive per operation. The
 * programs repeat the session ops' expressions step for step, so the two must
 * agree bit for bit; finite differences (test_ops_elementwise) check the
 * values themselves.
 *
 * Each case runs on the CPU engine (FUSED) and the CPU engine with fused=off (the
 * programs' steps as separate primitives); built as test_fused_grad_vulkan, on the
 * Vulkan engine (its own FUSED; compared within a tolerance), which must open.
 */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "tf_eager_test.h"
#include "tf_ref.h"

#define N 67 /* not a multiple of any vector width or chunk */

typedef tf_status (*unary_fn)(tf_session *s, tf_eager *x, tf_eager **out);
typedef tf_status (*binary_fn)(tf_session *s, tf_eager *x, tf_eager *y, tf_eager **out);

static const struct {
    const char *name;
    unary_fn f;
    double lo, hi; /* the inputs' range: inside the op's domain */
} k_unary[] = {
    {"neg", tf_session_neg, -2, 2},        {"abs", tf_session_abs, -2, 2},
    {"sign", tf_session_sign, -2, 2},      {"exp", tf_session_exp, -2, 2},
    {"log", tf_session_log, 0.1, 3},       {"expm1", tf_session_expm1, -2, 2},
    {"log1p", tf_session_log1p, -0.5, 3},  {"sin", tf_session_sin, -3, 3},
    {"cos", tf_session_cos, -3, 3},        {"tanh", tf_session_tanh, -3, 3},
    {"sqrt", tf_session_sqrt, 0.1, 3},     {"rsqrt", tf_session_rsqrt, 0.1, 3},
    {"erf", tf_session_erf, -2, 2},        {"sigmoid", tf_session_sigmoid, -4, 4},
};

static const struct {
    const char *name;
    binary_fn f;
} k_binary[] = {
    {"add", tf_session_add}, {"sub", tf_session_sub}, {"mul", tf_session_mul},
    {"div", tf_session_div}, {"rem", tf_session_rem},
};

/* The engines a case runs on: the CPU engine with and without FUSED, Vulkan. */
typedef struct engine_case {
    const char *name;
    tf_engine *engine;
    double tol; /* 0: bit for bit */
} engine_case;

static engine_case g_engines[2];
static size_t g_n_engines;

static int setup(void **state)
{
    (void)state;
    g_n_engines = 0;
    tf_engine *e = NULL;
#ifdef TF_FUSED_GRAD_VULKAN
    if (tfr_engine_create("vulkan", 1, "device_type", "any", &e))
        return -1;
    g_engines[g_n_engines++] = (engine_case){"vulkan", e, 1e-5};
#else
    if (tfr_engine_create("cpu", 1, NULL, NULL, &e))
        return -1;
    g_engines[g_n_engines++] = (engine_case){"cpu", e, 0};
    if (tfr_engine_create("cpu", 1, "fused", "off", &e))
        return -1;
    g_engines[g_n_engines++] = (engine_case){"cpu fused=off", e, 0};
#endif
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (size_t i = 0; i < g_n_engines; i++)
        tf_engine_destroy(g_engines[i].engine);
    g_n_engines = 0;
    return 0;
}

static uint64_t g_rng = 0x2545f4914f6cdd1dull;

static double uniform(double lo, double hi)
{
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (double)(g_rng >> 11) / 9007199254740992.0;
}

/* An eager tensor of n elements in [lo, hi) on s's engine (a variable when var). */
static tf_eager *random_eager(tf_session *s, tf_runtime *rt, tf_dtype dt, int var, double lo,
                              double hi)
{
    double v[N];
    float f[N];
    for (size_t i = 0; i < N; i++) {
        v[i] = uniform(lo, hi);
        f[i] = (float)v[i];
    }
    int64_t shape[1] = {N};
    tf_tensor *host = tft_host(dt, 1, shape, dt == TF_F32 ? (const void *)f : (const void *)v, N);
    tf_eager *c = NULL, *x = NULL;
    TF_ASSERT_OK(tf_session_constant_from_host(s, host, &c));
    tf_tensor_release(host);
    if (!var)
        return c;
    TF_ASSERT_OK(tf_runtime_variable_from(rt, tf_eager_value(c), &x));
    tf_eager_release(c);
    return x;
}

/* The values of t (on any engine) as doubles. */
static void read_values(tf_engine *engine, const tf_tensor *t, double *out)
{
    tf_tensor *host = NULL;
    TF_ASSERT_OK(tf_engine_download(engine, t, &host));
    assert_int_equal(tf_tensor_numel(host), N);
    if (tf_tensor_dtype(host) == TF_F32) {
        float f[N];
        TF_ASSERT_OK(tf_tensor_copy_to_host(host, TF_F32, f, N));
        for (size_t i = 0; i < N; i++)
            out[i] = f[i];
    } else {
        TF_ASSERT_OK(tf_tensor_copy_to_host(host, TF_F64, out, N));
    }
    tf_tensor_release(host);
}

/* A loss built from the variables; its value must be a scalar. */
typedef void (*loss_fn)(tf_session *s, tf_eager *const *v, tf_eager *const *c, const void *user,
                        tf_eager **loss);

/*
 * For each variable: the gradient by backward (programs) and by the recorded
 * functional grad (session ops) must agree - exactly on the CPU engines.
 */
static void compare(const char *what, const engine_case *ec, tf_dtype dt, size_t n_var,
                    const double (*range)[2], loss_fn fn, const void *user)
{
    tf_runtime *rt = NULL;
    tf_session *s = NULL;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    TF_ASSERT_OK(tf_session_begin(rt, ec->engine, &s));
    tf_eager *v[2] = {NULL, NULL}, *c[2] = {NULL, NULL}, *loss = NULL;
    for (size_t i = 0; i < n_var; i++)
        v[i] = random_eager(s, rt, dt, 1, range[i][0], range[i][1]);
    for (size_t i = 0; i < 2; i++)
        c[i] = random_eager(s, rt, dt, 0, -1.5, 1.5);
    fn(s, v, c, user, &loss);
    TF_ASSERT_OK(tf_eager_backward(loss, ec->engine));
    for (size_t i = 0; i < n_var; i++) {
        tf_tensor *g = NULL;
        tf_eager *want = NULL;
        TF_ASSERT_OK(tf_eager_grad(v[i], &g));
        assert_non_null(g);
        TF_ASSERT_OK(tf_runtime_grad(rt, ec->engine, loss, v[i], &want));
        double got_v[N], want_v[N];
        read_values(ec->engine, g, got_v);
        read_values(ec->engine, tf_eager_value(want), want_v);
        for (size_t k = 0; k < N; k++) {
            double d = fabs(got_v[k] - want_v[k]);
            bool same = ec->tol == 0 ? memcmp(&got_v[k], &want_v[k], sizeof got_v[k]) == 0
                                     : d <= ec->tol * (1 + fabs(want_v[k]));
            if (!same)
                fail_msg("%s on %s (%s), d/dv%zu [%zu]: backward %.17g, grad %.17g", what,
                         ec->name, tf_dtype_name(dt), i, k, got_v[k], want_v[k]);
        }
        tf_eager_release(want);
        tf_tensor_release(g);
    }
    tf_eager_release(loss);
    for (size_t i = 0; i < 2; i++) {
        tf_eager_release(v[i]);
        tf_eager_release(c[i]);
    }
    tf_session_end(s);
    tf_runtime_release(rt);
}

/* sum(f(x) * c0): a cotangent that is not all ones. */
static void unary_weighted(tf_session *s, tf_eager *const *v, tf_eager *const *c,
                           const void *user, tf_eager **loss)
{
    unary_fn f = *(const unary_fn *)user;
    tf_eager *y = NULL, *w = NULL;
    TF_ASSERT_OK(f(s, v[0], &y));
    TF_ASSERT_OK(tf_session_mul(s, y, c[0], &w));
    TF_ASSERT_OK(tf_session_reduce_sum(s, w, NULL, 0, loss));
    tf_eager_release(w);
    tf_eager_release(y);
}

/* sum(f(x)): the all-ones cotangent of sum. */
static void unary_plain(tf_session *s, tf_eager *const *v, tf_eager *const *c, const void *user,
                        tf_eager **loss)
{
    (void)c;
    unary_fn f = *(const unary_fn *)user;
    tf_eager *y = NULL;
    TF_ASSERT_OK(f(s, v[0], &y));
    TF_ASSERT_OK(tf_session_reduce_sum(s, y, NULL, 0, loss));
    tf_eager_release(y);
}

/*
 * sum(f(x) * c0 + f(tanh(x)) * c1 + x): x's cotangent is summed from three
 * contributions, two of them programs (the second summed in place over the
 * first, a private result).
 */
static void unary_summed(tf_session *s, tf_eager *const *v, tf_eager *const *c,
                         const void *user, tf_eager **loss)
{
    unary_fn f = *(const unary_fn *)user;
    tf_eager *t[7] = {NULL};
    TF_ASSERT_OK(f(s, v[0], &t[0]));
    TF_ASSERT_OK(tf_session_mul(s, t[0], c[0], &t[1]));
    TF_ASSERT_OK(tf_session_tanh(s, v[0], &t[2]));
    TF_ASSERT_OK(f(s, t[2], &t[3]));
    TF_ASSERT_OK(tf_session_mul(s, t[3], c[1], &t[4]));
    TF_ASSERT_OK(tf_session_add(s, t[1], t[4], &t[5]));
    TF_ASSERT_OK(tf_session_add(s, t[5], v[0], &t[6]));
    TF_ASSERT_OK(tf_session_reduce_sum(s, t[6], NULL, 0, loss));
    for (size_t i = 0; i < 7; i++)
        tf_eager_release(t[i]);
}

static void test_unary_rules(void **state)
{
    (void)state;
    static const tf_dtype dts[] = {TF_F32, TF_F64};
    static const loss_fn losses[] = {unary_weighted, unary_plain, unary_summed};
    static const char *const loss_names[] = {"weighted", "plain", "summed"};
    for (size_t e = 0; e < g_n_engines; e++)
        for (size_t d = 0; d < 2; d++)
            for (size_t u = 0; u < sizeof k_unary / sizeof k_unary[0]; u++)
                for (size_t l = 0; l < 3; l++) {
                    char what[64];
                    snprintf(what, sizeof what, "%s (%s)", k_unary[u].name, loss_names[l]);
                    const double range[1][2] = {{k_unary[u].lo, k_unary[u].hi}};
                    compare(what, &g_engines[e], dts[d], 1, range, losses[l], &k_unary[u].f);
                }
}

/* sum(f(x, y) * c0) and sum(f(x, y)): both inputs' cotangents. */
static void binary_weighted(tf_session *s, tf_eager *const *v, tf_eager *const *c,
                            const void *user, tf_eager **loss)
{
    binary_fn f = *(const binary_fn *)user;
    tf_eager *y = NULL, *w = NULL;
    TF_ASSERT_OK(f(s, v[0], v[1], &y));
    TF_ASSERT_OK(tf_session_mul(s, y, c[0], &w));
    TF_ASSERT_OK(tf_session_reduce_sum(s, w, NULL, 0, loss));
    tf_eager_release(w);
    tf_eager_release(y);
}

static void binary_plain(tf_session *s, tf_eager *const *v, tf_eager *const *c,
                         const void *user, tf_eager **loss)
{
    (void)c;
    binary_fn f = *(const binary_fn *)user;
    tf_eager *y = NULL;
    TF_ASSERT_OK(f(s, v[0], v[1], &y));
    TF_ASSERT_OK(tf_session_reduce_sum(s, y, NULL, 0, loss));
    tf_eager_release(y);
}

/* sum(f(x, x) * c0): both of the op's inputs are x, so its two programs sum. */
static void binary_same(tf_session *s, tf_eager *const *v, tf_eager *const *c,
                        const void *user, tf_eager **loss)
{
    binary_fn f = *(const binary_fn *)user;
    tf_eager *y = NULL, *w = NULL;
    TF_ASSERT_OK(f(s, v[0], v[0], &y));
    TF_ASSERT_OK(tf_session_mul(s, y, c[0], &w));
    TF_ASSERT_OK(tf_session_reduce_sum(s, w, NULL, 0, loss));
    tf_eager_release(w);
    tf_eager_release(y);
}

static void test_binary_rules(void **state)
{
    (void)state;
    static const tf_dtype dts[] = {TF_F32, TF_F64};
    static const loss_fn losses[] = {binary_weighted, binary_plain, binary_same};
    static const char *const loss_names[] = {"weighted", "plain", "same input"};
    const double range[2][2] = {{0.5, 2.0}, {0.5, 2.0}}; /* away from 0 for div */
    for (size_t e = 0; e < g_n_engines; e++)
        for (size_t d = 0; d < 2; d++)
            for (size_t b = 0; b < sizeof k_binary / sizeof k_binary[0]; b++)
                for (size_t l = 0; l < 3; l++) {
                    char what[64];
                    snprintf(what, sizeof what, "%s (%s)", k_binary[b].name, loss_names[l]);
                    compare(what, &g_engines[e], dts[d], l == 2 ? 1 : 2, range, losses[l],
                            &k_binary[b].f);
                }
}

/*
 * A chain long enough that its rules' programs and sums meet: the gradient
 * of sum(sigmoid(tanh(exp(x) * y) / (x + 2)) * c0) for x and y.
 */
static void chain(tf_session *s, tf_eager *const *v, tf_eager *const *c, const void *user,
                  tf_eager **loss)
{
    (void)user;
    tf_eager *t[9] = {NULL};
    TF_ASSERT_OK(tf_session_exp(s, v[0], &t[0]));
    TF_ASSERT_OK(tf_session_mul(s, t[0], v[1], &t[1]));
    TF_ASSERT_OK(tf_session_tanh(s, t[1], &t[2]));
    TF_ASSERT_OK(tf_session_full(s, tf_tensor_dtype(tf_eager_value(v[0])), 0, NULL, 2.0, &t[8]));
    TF_ASSERT_OK(tf_session_add(s, v[0], t[8], &t[3])); /* a broadcast input: no program */
    TF_ASSERT_OK(tf_session_div(s, t[2], t[3], &t[4]));
    TF_ASSERT_OK(tf_session_sigmoid(s, t[4], &t[5]));
    TF_ASSERT_OK(tf_session_mul(s, t[5], c[0], &t[6]));
    TF_ASSERT_OK(tf_session_reduce_sum(s, t[6], NULL, 0, loss));
    for (size_t i = 0; i < 9; i++)
        tf_eager_release(t[i]);
}

static void test_chain(void **state)
{
    (void)state;
    const double range[2][2] = {{-1.0, 1.0}, {-1.0, 1.0}};
    for (size_t e = 0; e < g_n_engines; e++)
        for (int d = 0; d < 2; d++)
            compare("chain", &g_engines[e], d ? TF_F64 : TF_F32, 2, range, chain, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unary_rules),
        cmocka_unit_test(test_binary_rules),
        cmocka_unit_test(test_chain),
    };
    return cmocka_run_group_tests_name("fused reverse rules", tests, setup, teardown);
}
