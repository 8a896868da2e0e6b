/*
 * test_soak.c - a bounded concurrency soak (issue 8, item 5): several
 * threads share one runtime for a fixed wall-clock budget (about two
 * seconds; TF_SOAK_MS overrides it) and do everything at once.
 *
 *   workers (4, each with its own CPU engine and session) cycle through
 *     - backward of sum(w * a) into the shared variable w,
 *     - a by-name call of the fixture module's scale(w, 2), backward
 *       into w, once the installer has installed it,
 *     - functional grad, grad of grad and jvp of c * sum(x^2) on their own
 *       variable x, checked exactly;
 *   an installer installs the fixture modules into the shared runtime,
 *     re-installs them (idempotent), and tries a module whose install hook
 *     fails (the registry and epoch must not move);
 *   a chaos thread changes the cache limits and clears the caches.
 *
 * Every value is a small integer, so every sum is exact in any order: at
 * the end w's gradient must be exactly the total of the contributions the
 * workers counted, element by element. Labelled `concurrency`, so CI runs it
 * under ThreadSanitizer as well. No timing is asserted: the budget only
 * bounds how long the loops run.
 *
 * Workers cannot use cmocka's asserts (they longjmp); each records its first
 * failure and the main thread asserts on it.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, pthread_barrier_t */

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include <tenferro/extension.h>
#include <tenferro/ops.h>

#include "tf_test.h"

#ifndef TF_EXT_FIXTURE_DIR
#error "TF_EXT_FIXTURE_DIR must be defined by the build"
#endif
#define FX_PATH(name) TF_EXT_FIXTURE_DIR "/tenferro-ext-fx_" name ".so"

#define N_WORKERS 4
#define MIN_ITERS 4 /* every kind of step runs at least once per worker */
#define SCALE_OP "tenferro.fixture.scale"

static const int64_t k4[] = {4};

typedef struct shared {
    tf_runtime *rt;
    tf_eager *w; /* the shared variable [4] */
    tf_extension_module *fixture, *fixture_b, *hook_fails;
    atomic_int stop;
    pthread_barrier_t start;
} shared;

typedef struct worker {
    int id;
    shared *sh;
    tf_engine *engine;
    long plain;      /* out: backward passes of sum(w * a), a = id + 1 */
    long scaled;     /* out: backward passes of sum(scale(w, 2)) */
    long iterations; /* out */
    char failure[256];
} worker;

typedef struct helper {
    shared *sh;
    long rounds;
    char failure[256];
} helper;

#define CHECK(w, cond, ...)                                          \
    do {                                                             \
        if (!(cond) && !(w)->failure[0])                             \
            snprintf((w)->failure, sizeof(w)->failure, __VA_ARGS__); \
    } while (0)

#define CHECK_OK(w, call)                                                                       \
    do {                                                                                        \
        tf_status st_ = (call);                                                                 \
        CHECK(w, st_ == TF_OK, "%s -> %s: %s", #call, tf_status_name(st_), tf_error_message()); \
    } while (0)

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static tf_eager *make(tf_runtime *rt, int var, size_t rank, const int64_t *shape,
                      const double *data, size_t n)
{
    tf_tensor *t = NULL;
    tf_eager *x = NULL;
    if (tf_tensor_from_host(TF_F64, rank, shape, data, n, &t))
        return NULL;
    if (var ? tf_runtime_variable_from(rt, t, &x) : tf_runtime_constant_from(rt, t, &x))
        x = NULL;
    tf_tensor_release(t);
    return x;
}

static int equals(const tf_eager *x, const double *want, size_t n)
{
    double got[4];
    if (!x || n > 4 || tf_tensor_numel(tf_eager_value(x)) != n ||
        tf_tensor_copy_to_host(tf_eager_value(x), TF_F64, got, n))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i])
            return 0;
    return 1;
}

/* backward of sum(w * a) into the shared slot: adds a = id + 1 per element. */
static void step_plain(worker *w, tf_session *s, tf_eager *a)
{
    tf_eager *wa = NULL, *l = NULL;
    CHECK_OK(w, tf_session_mul(s, w->sh->w, a, &wa));
    if (wa)
        CHECK_OK(w, tf_session_reduce_sum(s, wa, NULL, 0, &l));
    if (l && tf_eager_backward(l, w->engine) == TF_OK)
        w->plain++;
    else
        CHECK(w, 0, "worker %d: backward of sum(w * a): %s", w->id, tf_error_message());
    tf_eager_release(l);
    tf_eager_release(wa);
}

/* backward of sum(scale(w, 2)) through the extension op: adds 2 per element. */
static void step_scaled(worker *w, tf_session *s)
{
    if (!tf_runtime_has_op(w->sh->rt, SCALE_OP))
        return; /* not installed yet; once installed it stays */
    tf_eager *y = NULL, *l = NULL;
    tf_call_arg args[2] = {TF_ARG_TENSOR(w->sh->w), TF_ARG_F64(2.0)};
    CHECK_OK(w, tf_session_call(s, SCALE_OP, args, 2, &y, 1));
    if (y)
        CHECK_OK(w, tf_session_reduce_sum(s, y, NULL, 0, &l));
    if (l && tf_eager_backward(l, w->engine) == TF_OK)
        w->scaled++;
    else
        CHECK(w, 0, "worker %d: backward through %s: %s", w->id, SCALE_OP, tf_error_message());
    tf_eager_release(l);
    tf_eager_release(y);
}

/* grad, grad of grad and jvp of c * sum(x^2) on the worker's own x. */
static void step_functional(worker *w, tf_session *s, tf_eager *x, tf_eager *c, tf_eager *t)
{
    const double cv = w->id + 2;
    double g_want[4], gg_want[4], j_want = 0;
    for (int i = 0; i < 4; i++) {
        double xv = (w->id + 1) * (i + 1);
        g_want[i] = 2 * cv * xv;
        gg_want[i] = 2 * cv;
        j_want += 2 * cv * xv;
    }
    tf_eager *xx = NULL, *z = NULL, *l = NULL, *g = NULL, *gs = NULL, *h = NULL, *j = NULL;
    CHECK_OK(w, tf_session_mul(s, x, x, &xx));
    if (xx)
        CHECK_OK(w, tf_session_mul(s, xx, c, &z));
    if (z)
        CHECK_OK(w, tf_session_reduce_sum(s, z, NULL, 0, &l));
    if (l) {
        CHECK_OK(w, tf_runtime_grad(w->sh->rt, w->engine, l, x, &g));
        CHECK(w, equals(g, g_want, 4), "worker %d: wrong grad", w->id);
        CHECK_OK(w, tf_runtime_jvp(w->sh->rt, w->engine, l, x, t, &j));
        CHECK(w, equals(j, &j_want, 1), "worker %d: wrong jvp", w->id);
    }
    if (g) {
        CHECK_OK(w, tf_session_reduce_sum(s, g, NULL, 0, &gs));
        if (gs)
            CHECK_OK(w, tf_runtime_grad(w->sh->rt, w->engine, gs, x, &h));
        CHECK(w, equals(h, gg_want, 4), "worker %d: wrong grad of grad", w->id);
    }
    tf_eager *all[] = {xx, z, l, g, gs, h, j};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tf_eager_release(all[i]);
}

static void *worker_main(void *p)
{
    worker *w = p;
    tf_runtime *rt = w->sh->rt;
    double xv[4], av[4] = {w->id + 1, w->id + 1, w->id + 1, w->id + 1};
    for (int i = 0; i < 4; i++)
        xv[i] = (w->id + 1) * (i + 1);
    tf_eager *x = make(rt, 1, 1, k4, xv, 4), *a = make(rt, 0, 1, k4, av, 4);
    tf_eager *c = make(rt, 0, 0, NULL, (double[]){w->id + 2}, 1);
    tf_eager *t = make(rt, 0, 1, k4, (double[]){1, 1, 1, 1}, 4);
    tf_session *s = NULL;
    CHECK(w, x && a && c && t, "worker %d: cannot make its inputs", w->id);
    CHECK_OK(w, tf_session_begin(rt, w->engine, &s));
    pthread_barrier_wait(&w->sh->start);
    while (!w->failure[0] && (w->iterations < MIN_ITERS || !atomic_load(&w->sh->stop))) {
        switch ((w->iterations + w->id) % 3) {
        case 0: step_plain(w, s, a); break;
        case 1: step_scaled(w, s); break;
        default: step_functional(w, s, x, c, t); break;
        }
        w->iterations++;
    }
    tf_session_end(s);
    tf_eager *all[] = {x, a, c, t};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tf_eager_release(all[i]);
    return NULL;
}

/* Installs, re-installs and fails to install modules while the workers run. */
static void *installer_main(void *p)
{
    helper *h = p;
    shared *sh = h->sh;
    tf_epoch last = tf_runtime_epoch(sh->rt);
    pthread_barrier_wait(&sh->start);
    while (!atomic_load(&sh->stop) || h->rounds < 3) {
        tf_extension_module *m = h->rounds % 2 ? sh->fixture_b : sh->fixture;
        tf_epoch e = 0, before = tf_runtime_epoch(sh->rt);
        if (tf_runtime_install_extension_module(sh->rt, m, &e)) {
            snprintf(h->failure, sizeof h->failure, "install: %s", tf_error_message());
            return NULL;
        }
        if (e < last) {
            snprintf(h->failure, sizeof h->failure, "epoch went back: %llu after %llu",
                     (unsigned long long)e, (unsigned long long)last);
            return NULL;
        }
        last = e;
        /* a transaction failing halfway publishes nothing */
        before = tf_runtime_epoch(sh->rt);
        tf_status st = tf_runtime_install_extension_module(sh->rt, sh->hook_fails, &e);
        if (st != TF_ERR_RUNTIME_STATE || tf_runtime_epoch(sh->rt) != before) {
            snprintf(h->failure, sizeof h->failure, "failing install: %s, epoch %llu -> %llu",
                     tf_status_name(st), (unsigned long long)before,
                     (unsigned long long)tf_runtime_epoch(sh->rt));
            return NULL;
        }
        h->rounds++;
    }
    return NULL;
}

/* Changes the cache limits and clears the caches while the workers run. */
static void *chaos_main(void *p)
{
    helper *h = p;
    shared *sh = h->sh;
    static const tf_cache_limits limits[] = {{1, 0}, {2, 0}, {3, 1}, {256, 0}};
    pthread_barrier_wait(&sh->start);
    while (!atomic_load(&sh->stop) || h->rounds < 4) {
        const tf_cache_limits *l = &limits[h->rounds % 4];
        if (tf_runtime_set_prepared_derivative_cache_limits(sh->rt, l) ||
            tf_runtime_set_ad_transform_cache_limits(sh->rt, l)) {
            snprintf(h->failure, sizeof h->failure, "chaos: %s", tf_error_message());
            return NULL;
        }
        if (h->rounds % 3 == 0)
            tf_runtime_clear_caches(sh->rt);
        if (h->rounds % 5 == 0)
            tf_runtime_clear_prepared_derivative_cache(sh->rt);
        h->rounds++;
        struct timespec pause = {0, 200000}; /* 0.2 ms: let the workers fill the caches */
        nanosleep(&pause, NULL);
    }
    return NULL;
}

static void test_soak(void **state)
{
    const char *env = getenv("TF_SOAK_MS");
    double budget = env && atof(env) > 0 ? atof(env) : 2000;
    shared sh = {0};
    TF_ASSERT_OK(tf_runtime_create(&sh.rt));
    TF_ASSERT_OK(tf_extension_load(FX_PATH("fixture"), &sh.fixture));
    TF_ASSERT_OK(tf_extension_load(FX_PATH("fixture_b"), &sh.fixture_b));
    TF_ASSERT_OK(tf_extension_load(FX_PATH("hook_fails"), &sh.hook_fails));
    sh.w = make(sh.rt, 1, 1, k4, (double[]){1, 2, 3, 4}, 4);
    assert_non_null(sh.w);
    atomic_init(&sh.stop, 0);
    assert_int_equal(pthread_barrier_init(&sh.start, NULL, N_WORKERS + 3), 0);

    worker ws[N_WORKERS];
    helper inst = {&sh, 0, ""}, chaos = {&sh, 0, ""};
    pthread_t th[N_WORKERS], ti, tc;
    for (int i = 0; i < N_WORKERS; i++) {
        ws[i] = (worker){.id = i, .sh = &sh};
        TF_ASSERT_OK(tf_engine_open("cpu", 1, &ws[i].engine));
        assert_int_equal(pthread_create(&th[i], NULL, worker_main, &ws[i]), 0);
    }
    assert_int_equal(pthread_create(&ti, NULL, installer_main, &inst), 0);
    assert_int_equal(pthread_create(&tc, NULL, chaos_main, &chaos), 0);
    pthread_barrier_wait(&sh.start);
    double start = now_ms();
    while (now_ms() - start < budget) {
        struct timespec pause = {0, 10 * 1000000};
        nanosleep(&pause, NULL);
    }
    atomic_store(&sh.stop, 1);
    for (int i = 0; i < N_WORKERS; i++)
        pthread_join(th[i], NULL);
    pthread_join(ti, NULL);
    pthread_join(tc, NULL);
    pthread_barrier_destroy(&sh.start);
    for (int i = 0; i < N_WORKERS; i++)
        if (ws[i].failure[0])
            fail_msg("%s", ws[i].failure);
    if (inst.failure[0])
        fail_msg("%s", inst.failure);
    if (chaos.failure[0])
        fail_msg("%s", chaos.failure);

    /* The shared slot is exactly the total the workers counted. */
    double per_element = 0;
    long plain = 0, scaled = 0, iters = 0;
    for (int i = 0; i < N_WORKERS; i++) {
        per_element += (double)ws[i].plain * (i + 1) + (double)ws[i].scaled * 2;
        plain += ws[i].plain;
        scaled += ws[i].scaled;
        iters += ws[i].iterations;
    }
    assert_true(plain >= N_WORKERS);
    tf_tensor *g = NULL;
    TF_ASSERT_OK(tf_eager_grad(sh.w, &g));
    double got[4];
    TF_ASSERT_OK(tf_tensor_copy_to_host(g, TF_F64, got, 4));
    for (int k = 0; k < 4; k++)
        if (got[k] != per_element)
            fail_msg("shared slot element %d: %.17g, want %.17g (%ld plain and %ld scaled "
                     "backward passes): lost or duplicated updates",
                     k, got[k], per_element, plain, scaled);
    tf_tensor_release(g);
    /* Both modules ended up installed, and the failing one never was. */
    assert_true(tf_runtime_has_op(sh.rt, SCALE_OP));
    assert_true(tf_runtime_has_op(sh.rt, "tenferro.fixture_b.scale"));
    print_message("soak: %.0f ms, %ld worker iterations (%ld plain, %ld scaled backward), "
                  "%ld install rounds, %ld cache rounds\n",
                  now_ms() - start, iters, plain, scaled, inst.rounds, chaos.rounds);

    tf_eager_release(sh.w);
    for (int i = 0; i < N_WORKERS; i++)
        tf_engine_destroy(ws[i].engine);
    assert_int_equal(tf_runtime_ref_count(sh.rt), 1);
    tf_runtime_release(sh.rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_soak)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
