/*
 * test_engine_faults.c - engine failures in the middle of a forward pass and
 * of a backward pass (issue 8, item 2).
 *
 * The `faulty` fixture engine (tests/plugins/fixtures/faulty.c) executes
 * FILL, COPY and ADD on f64 and fails every execute after its Kth with
 * TF_ERR_BACKEND, reporting "injected fault (...)". For K = 0, 1, 2, ...
 * until the pass succeeds, the tests check that the error reaches the caller
 * with the engine's message as tf_error_cause(), that no output is written,
 * that the tape (the values already computed, and what they were computed
 * from) and the grad slots are unchanged, and that the next op works.
 *
 * The program, with two variables x and w:
 *   y1 = x + w;  y2 = y1 + x;  y3 = y2 + y1      (y3 = 3 x + 2 w)
 * so for a seed c, backward gives x += 3 c and w += 2 c.
 */
#include <stdint.h>
#include <string.h>

#include <tenferro/engine.h>
#include <tenferro/ops.h>

#include "tf_test.h"

#ifndef TF_FIXTURE_DIR
#error "TF_FIXTURE_DIR must be defined by the build"
#endif

#define N 3
#define MAX_K 1000
#define SENTINEL ((tf_eager *)(uintptr_t)0x5e5e5e50)

static tf_plugin *g_plugin;
static tf_runtime *g_rt;
static tf_engine *g_good; /* a faulty-engine instance that never fails */
static tf_eager *g_x, *g_w, *g_seed;

static const double X[N] = {1, 2, 3}, W[N] = {10, 20, 30}, C[N] = {0.5, -1, 2};

/* A faulty engine failing every execute after the kth (k < 0: never). */
static tf_engine *faulty(long k)
{
    char value[32];
    snprintf(value, sizeof value, "%ld", k);
    const char *keys[1] = {"fail_after"}, *values[1] = {value};
    tf_engine_options opt;
    memset(&opt, 0, sizeof opt);
    opt.struct_size = sizeof opt;
    opt.threads = 1;
    opt.n_extra = k >= 0 ? 1 : 0;
    opt.extra_keys = keys;
    opt.extra_values = values;
    tf_engine *e = NULL;
    TF_ASSERT_OK(tf_engine_create(g_plugin, &opt, &e));
    return e;
}

static tf_eager *make(const double *v, int var)
{
    int64_t shape[1] = {N};
    tf_tensor *t = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, 1, shape, v, N, &t));
    tf_eager *x = NULL;
    if (var)
        TF_ASSERT_OK(tf_runtime_variable_from(g_rt, t, &x));
    else
        TF_ASSERT_OK(tf_runtime_constant_from(g_rt, t, &x));
    tf_tensor_release(t);
    return x;
}

static void read3(tf_tensor *t, double *v)
{
    TF_ASSERT_OK(tf_tensor_copy_to_host(t, TF_F64, v, N));
}

/* Asserts the grad slot of v holds a * C exactly (a = 0: empty slot). */
static void assert_grad(tf_eager *v, double a, const char *what, long k)
{
    tf_tensor *g = NULL;
    TF_ASSERT_OK(tf_eager_grad(v, &g));
    if (a == 0) {
        if (g)
            fail_msg("K=%ld: %s: the grad slot should be empty", k, what);
        return;
    }
    if (!g)
        fail_msg("K=%ld: %s: the grad slot is empty", k, what);
    double got[N];
    read3(g, got);
    tf_tensor_release(g);
    for (int i = 0; i < N; i++)
        if (got[i] != a * C[i])
            fail_msg("K=%ld: %s: grad[%d] = %g, want %g", k, what, i, got[i], a * C[i]);
}

/* The failure must be the engine's, with its message as the cause. */
static void assert_engine_fault(tf_status st, long k)
{
    if (st != TF_ERR_BACKEND)
        fail_msg("K=%ld: got %s (\"%s\"), want TF_ERR_BACKEND", k, tf_status_name(st),
                 tf_error_message());
    assert_int_equal(tf_error_status(), TF_ERR_BACKEND);
    if (!strstr(tf_error_cause(), "injected fault"))
        fail_msg("K=%ld: cause \"%s\" (message \"%s\") is not the engine's", k, tf_error_cause(),
                 tf_error_message());
}

/* vjp of y with respect to x for the seed, on the good engine: want a * C. */
static void assert_vjp(tf_eager *y, tf_eager *wrt, double a, long k)
{
    tf_eager *d = NULL;
    TF_ASSERT_OK(tf_runtime_vjp(g_rt, g_good, y, wrt, g_seed, &d));
    double got[N];
    read3(tf_eager_value(d), got);
    tf_eager_release(d);
    for (int i = 0; i < N; i++)
        if (got[i] != a * C[i])
            fail_msg("K=%ld: vjp[%d] = %g, want %g", k, i, got[i], a * C[i]);
}

/* The three ops on engine e; *done counts those that succeeded. */
static tf_status forward(tf_engine *e, tf_eager *y[3], int *done)
{
    tf_session *s = NULL;
    tf_status st = tf_session_begin(g_rt, e, &s);
    if (!st) /* each op fails where it is issued (deferred batches: test_defer_faults.c) */
        st = tf_session_set_defer(s, TF_DEFER_OFF);
    *done = 0;
    for (int i = 0; i < 3 && !st; i++) {
        tf_eager *a = i == 0 ? g_x : i == 1 ? y[0] : y[1];
        tf_eager *b = i == 0 ? g_w : i == 1 ? g_x : y[0];
        y[i] = SENTINEL;
        tf_error_clear();
        st = tf_session_add(s, a, b, &y[i]);
        if (!st)
            (*done)++;
    }
    tf_session_end(s);
    return st;
}

static void release_y(tf_eager *y[3], int done)
{
    for (int i = 0; i < done; i++)
        tf_eager_release(y[i]);
}

static void test_fault_in_forward(void **state)
{
    TF_ASSERT_OK(tf_runtime_clear_grads(g_rt));
    static const double want[3][N] = {{11, 22, 33}, {12, 24, 36}, {23, 46, 69}};
    static const double dx[3] = {1, 2, 3}; /* d y_i / d x (times the seed) */
    long k = 0;
    for (;; k++) {
        assert_true(k < MAX_K);
        tf_engine *e = faulty(k);
        tf_eager *y[3];
        int done = 0;
        tf_status st = forward(e, y, &done);
        if (!st) {
            release_y(y, done);
            tf_engine_destroy(e);
            break;
        }
        assert_engine_fault(st, k);
        assert_ptr_equal(y[done], SENTINEL); /* the failing op wrote nothing */
        /* The values computed before the fault are intact and still differentiable. */
        for (int i = 0; i < done; i++) {
            double got[N];
            read3(tf_eager_value(y[i]), got);
            assert_memory_equal(got, want[i], sizeof got);
            assert_vjp(y[i], g_x, dx[i], k);
        }
        assert_grad(g_x, 0, "x", k);
        assert_grad(g_w, 0, "w", k);
        /* The next op works, on the same runtime. */
        tf_eager *z[3];
        int zdone = 0;
        TF_ASSERT_OK(forward(g_good, z, &zdone));
        assert_vjp(z[2], g_x, 3, k);
        assert_vjp(z[2], g_w, 2, k);
        release_y(z, zdone);
        release_y(y, done);
        tf_engine_destroy(e);
    }
    assert_true(k >= 3); /* the three adds each failed once */
    print_message("forward: swept K = 0..%ld\n", k);
}

static void test_fault_in_backward(void **state)
{
    long k = 0;
    for (;; k++) {
        assert_true(k < MAX_K);
        /* Both slots hold one gradient, so backward has to add into both. */
        TF_ASSERT_OK(tf_runtime_clear_grads(g_rt));
        tf_eager *y[3];
        int done = 0;
        TF_ASSERT_OK(forward(g_good, y, &done));
        TF_ASSERT_OK(tf_eager_backward_with_seed(y[2], g_seed, g_good));
        assert_grad(g_x, 3, "x", -1);
        assert_grad(g_w, 2, "w", -1);

        tf_engine *e = faulty(k);
        tf_error_clear();
        tf_status st = tf_eager_backward_with_seed(y[2], g_seed, e);
        tf_engine_destroy(e);
        if (!st) {
            assert_grad(g_x, 6, "x", k);
            assert_grad(g_w, 4, "w", k);
            release_y(y, done);
            break;
        }
        assert_engine_fault(st, k);
        assert_grad(g_x, 3, "x", k); /* all or nothing: neither slot moved */
        assert_grad(g_w, 2, "w", k);
        /* The tape is intact: the same backward on a good engine works. */
        TF_ASSERT_OK(tf_eager_backward_with_seed(y[2], g_seed, g_good));
        assert_grad(g_x, 6, "x", k);
        assert_grad(g_w, 4, "w", k);
        release_y(y, done);
    }
    assert_true(k >= 2); /* at least the two accumulations could fail */
    print_message("backward: swept K = 0..%ld\n", k);
}

static int group_setup(void **state)
{
    TF_ASSERT_OK(tf_plugin_load(TF_FIXTURE_DIR "/tenferro-engine-faulty.so", &g_plugin));
    TF_ASSERT_OK(tf_runtime_create(&g_rt));
    g_good = faulty(-1);
    g_x = make(X, 1);
    g_w = make(W, 1);
    g_seed = make(C, 0);
    return 0;
}

static int group_teardown(void **state)
{
    tf_eager_release(g_seed);
    tf_eager_release(g_w);
    tf_eager_release(g_x);
    tf_engine_destroy(g_good);
    tf_runtime_release(g_rt);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fault_in_forward),
        cmocka_unit_test(test_fault_in_backward),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
