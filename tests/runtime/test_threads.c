/*
 * test_threads.c - one runtime used by several threads at once.
 *
 * Each worker has its own CPU engine and session, builds its own graphs,
 * runs backward and the functional forms (grad, grad of grad, jvp) and
 * checks exact results; all workers also accumulate into one shared
 * variable, through their own graphs and through one shared graph, and the
 * final gradient must be the exact total. A "chaos" thread changes the
 * cache limits and clears the caches while the workers run. Every value is
 * a small integer, so every sum is exact whatever the order of the
 * additions. Run under ThreadSanitizer (TF_SANITIZE=thread) too.
 *
 * Workers cannot use cmocka's asserts (they longjmp); they record the first
 * failure and the main thread asserts on it.
 */
#define _POSIX_C_SOURCE 200809L /* pthread_barrier_t */

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include <tenferro/ops.h>

#include "tf_test.h"

#define N_WORKERS 4
#define ITERS 150

static const int64_t k4[] = {4};

typedef struct worker {
    int id;
    tf_runtime *rt;
    tf_engine *engine;
    tf_eager *w;              /* the shared variable [4] */
    tf_eager *shared_l;       /* sum(w * w): one graph shared by all workers */
    pthread_barrier_t *start; /* all workers begin together */
    tf_eager *x;              /* out: this worker's variable, kept for the final check */
    char failure[256];        /* the first failure, "" if none */
} worker;

typedef struct chaos {
    tf_runtime *rt;
    atomic_int *stop;
    int rounds;
    char failure[256];
} chaos;

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

/* Whether the tensor holds exactly `want` (n values). */
static int equals(const tf_tensor *t, const double *want, size_t n)
{
    double got[8];
    if (!t || n > 8 || tf_tensor_numel(t) != n || tf_tensor_copy_to_host(t, TF_F64, got, n))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i])
            return 0;
    return 1;
}

static int eager_equals(const tf_eager *x, const double *want, size_t n)
{
    return x && equals(tf_eager_value(x), want, n);
}

/* One iteration of a worker: its own graph, backward, grad, grad of grad, jvp. */
static void worker_iteration(worker *w, tf_session *s, tf_eager *c, tf_eager *a, int it)
{
    const double cv = w->id + 2;
    double xv[4], want[4];
    for (int i = 0; i < 4; i++)
        xv[i] = (w->id + 1) * (i + 1);
    tf_eager *y = NULL, *z = NULL, *l = NULL, *g = NULL, *gs = NULL, *h = NULL, *t = NULL,
             *j = NULL, *wa = NULL, *lw = NULL;
    CHECK_OK(w, tf_session_mul(s, w->x, w->x, &y));
    CHECK_OK(w, tf_session_mul(s, y, c, &z));
    CHECK_OK(w, tf_session_reduce_sum(s, z, NULL, 0, &l)); /* c * sum(x^2) */
    if (w->failure[0])
        goto done;
    CHECK_OK(w, tf_eager_backward(l, w->engine));
    CHECK_OK(w, tf_runtime_grad(w->rt, w->engine, l, w->x, &g));
    for (int i = 0; i < 4; i++)
        want[i] = 2 * cv * xv[i];
    CHECK(w, eager_equals(g, want, 4), "worker %d iteration %d: wrong grad", w->id, it);
    if (g) {
        CHECK_OK(w, tf_session_reduce_sum(s, g, NULL, 0, &gs));
        CHECK_OK(w, tf_runtime_grad(w->rt, w->engine, gs, w->x, &h));
        double two_c[4] = {2 * cv, 2 * cv, 2 * cv, 2 * cv};
        CHECK(w, eager_equals(h, two_c, 4), "worker %d iteration %d: wrong grad of grad", w->id,
              it);
    }
    t = make(w->rt, 0, 1, k4, (double[]){1, 1, 1, 1}, 4);
    CHECK_OK(w, tf_runtime_jvp(w->rt, w->engine, l, w->x, t, &j));
    double jw = 2 * cv * (xv[0] + xv[1] + xv[2] + xv[3]);
    CHECK(w, eager_equals(j, &jw, 1), "worker %d iteration %d: wrong jvp", w->id, it);
    /* into the shared variable: through this worker's own graph... */
    CHECK_OK(w, tf_session_mul(s, w->w, a, &wa));
    CHECK_OK(w, tf_session_reduce_sum(s, wa, NULL, 0, &lw));
    if (lw)
        CHECK_OK(w, tf_eager_backward(lw, w->engine));
    /* ...and through the graph all workers share */
    CHECK_OK(w, tf_eager_backward(w->shared_l, w->engine));
    /* a no-grad scope here does not stop the others from recording */
    if (it % 5 == 0) {
        tf_scope ng;
        tf_eager *q = NULL;
        CHECK_OK(w, tf_scope_begin_no_grad(w->rt, &ng));
        CHECK_OK(w, tf_session_mul(s, w->x, w->x, &q));
        tf_scope_end(&ng);
        CHECK(w, q && !tf_eager_tracks_grad(q), "worker %d: no-grad result is tracked", w->id);
        tf_eager_release(q);
    }
done:;
    tf_eager *all[] = {y, z, l, g, gs, h, t, j, wa, lw};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tf_eager_release(all[i]);
}

static void *worker_main(void *p)
{
    worker *w = p;
    double xv[4], av[4];
    for (int i = 0; i < 4; i++) {
        xv[i] = (w->id + 1) * (i + 1);
        av[i] = w->id + 1;
    }
    w->x = make(w->rt, 1, 1, k4, xv, 4);
    tf_eager *c = make(w->rt, 0, 0, NULL, (double[]){w->id + 2}, 1);
    tf_eager *a = make(w->rt, 0, 1, k4, av, 4);
    tf_session *s = NULL;
    CHECK(w, w->x && c && a, "worker %d: cannot make its inputs", w->id);
    CHECK_OK(w, tf_session_begin(w->rt, w->engine, &s));
    pthread_barrier_wait(w->start);
    for (int it = 0; it < ITERS && !w->failure[0]; it++)
        worker_iteration(w, s, c, a, it);
    tf_session_end(s);
    tf_eager_release(a);
    tf_eager_release(c);
    return NULL;
}

/* Changes limits and clears caches until told to stop; after each change
   the cache respects the limit it set. */
static void *chaos_main(void *p)
{
    chaos *c = p;
    static const tf_cache_limits limits[] = {{1, 0}, {2, 0}, {3, 1}, {256, 0}};
    while (!atomic_load(c->stop)) {
        const tf_cache_limits *l = &limits[c->rounds % 4];
        tf_runtime_stats st;
        if (tf_runtime_set_prepared_derivative_cache_limits(c->rt, l) ||
            tf_runtime_set_ad_transform_cache_limits(c->rt, l) ||
            tf_runtime_cache_stats(c->rt, &st)) {
            snprintf(c->failure, sizeof c->failure, "chaos: %s", tf_error_message());
            return NULL;
        }
        /* only this thread lowers the limits: the cache can never hold more */
        if (st.prepared_derivatives.entries > l->max_entries) {
            snprintf(c->failure, sizeof c->failure, "chaos: %zu entries over a limit of %zu",
                     st.prepared_derivatives.entries, l->max_entries);
            return NULL;
        }
        if (c->rounds % 3 == 0)
            tf_runtime_clear_caches(c->rt);
        if (c->rounds % 7 == 0)
            tf_runtime_clear_prepared_derivative_cache(c->rt);
        c->rounds++;
    }
    return NULL;
}

static void run_workers(int with_chaos)
{
    tf_runtime *rt;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    tf_engine *engines[N_WORKERS], *main_engine;
    TF_ASSERT_OK(tf_engine_open("cpu", 1, &main_engine));
    for (int i = 0; i < N_WORKERS; i++)
        TF_ASSERT_OK(tf_engine_open("cpu", 1, &engines[i]));
    tf_eager *w = make(rt, 1, 1, k4, (double[]){1, 2, 3, 4}, 4), *ww = NULL, *shared_l = NULL;
    assert_non_null(w);
    tf_session *s;
    TF_ASSERT_OK(tf_session_begin(rt, main_engine, &s));
    TF_ASSERT_OK(tf_session_mul(s, w, w, &ww));
    TF_ASSERT_OK(tf_session_reduce_sum(s, ww, NULL, 0, &shared_l));
    tf_session_end(s);

    worker ws[N_WORKERS];
    pthread_t th[N_WORKERS], ch;
    atomic_int stop;
    atomic_init(&stop, 0);
    chaos c = {rt, &stop, 0, ""};
    pthread_barrier_t start;
    assert_int_equal(pthread_barrier_init(&start, NULL, N_WORKERS), 0);
    if (with_chaos)
        assert_int_equal(pthread_create(&ch, NULL, chaos_main, &c), 0);
    for (int i = 0; i < N_WORKERS; i++) {
        ws[i] = (worker){i, rt, engines[i], w, shared_l, &start, NULL, ""};
        assert_int_equal(pthread_create(&th[i], NULL, worker_main, &ws[i]), 0);
    }
    for (int i = 0; i < N_WORKERS; i++)
        pthread_join(th[i], NULL);
    atomic_store(&stop, 1);
    if (with_chaos)
        pthread_join(ch, NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < N_WORKERS; i++)
        if (ws[i].failure[0])
            fail_msg("%s", ws[i].failure);
    if (c.failure[0])
        fail_msg("%s", c.failure);

    /* each worker's slot: ITERS backward calls of 2 c x */
    for (int i = 0; i < N_WORKERS; i++) {
        double want[4];
        for (int k = 0; k < 4; k++)
            want[k] = ITERS * 2.0 * (i + 2) * (i + 1) * (k + 1);
        tf_tensor *g = NULL;
        TF_ASSERT_OK(tf_eager_grad(ws[i].x, &g));
        if (!equals(g, want, 4))
            fail_msg("worker %d's slot lost an accumulation", i);
        tf_tensor_release(g);
        tf_eager_release(ws[i].x);
    }
    /* the shared slot: from every worker's own graph (a = id + 1 per element)
       and from the shared graph (2 w each time) */
    double sum_a = 0;
    for (int i = 0; i < N_WORKERS; i++)
        sum_a += i + 1;
    double want[4];
    for (int k = 0; k < 4; k++)
        want[k] = ITERS * sum_a + (double)ITERS * N_WORKERS * 2 * (k + 1);
    tf_tensor *g = NULL;
    TF_ASSERT_OK(tf_eager_grad(w, &g));
    double got[4];
    TF_ASSERT_OK(tf_tensor_copy_to_host(g, TF_F64, got, 4));
    for (int k = 0; k < 4; k++)
        if (got[k] != want[k])
            fail_msg("shared slot element %d: got %.17g, want %.17g (lost updates)", k, got[k],
                     want[k]);
    tf_tensor_release(g);
    if (with_chaos)
        assert_true(c.rounds > 0);

    tf_eager_release(shared_l);
    tf_eager_release(ww);
    tf_eager_release(w);
    for (int i = 0; i < N_WORKERS; i++)
        tf_engine_destroy(engines[i]);
    tf_engine_destroy(main_engine);
    assert_int_equal(tf_runtime_ref_count(rt), 1);
    tf_runtime_release(rt);
}

static void test_workers(void **state)
{
    (void)state;
    run_workers(0);
}

static void test_workers_with_cache_chaos(void **state)
{
    (void)state;
    run_workers(1);
}

/* Several threads clearing and reading one slot while others accumulate:
   no crash, no torn value, and after the last clear and one more backward
   the slot holds exactly one contribution. */
typedef struct clearer {
    tf_runtime *rt;
    tf_eager *v;
    atomic_int *stop;
    int bad;
} clearer;

static void *clearer_main(void *p)
{
    clearer *c = p;
    unsigned n = 0;
    while (!atomic_load(c->stop)) {
        tf_tensor *g = NULL;
        if (tf_eager_grad(c->v, &g) == TF_OK && g) {
            double got[4];
            /* every value is a whole multiple of the per-call contribution */
            if (tf_tensor_copy_to_host(g, TF_F64, got, 4) || fmod(got[0], 2.0) != 0 ||
                got[1] != 2 * got[0])
                c->bad = 1;
        }
        tf_tensor_release(g);
        if (++n % 2)
            tf_eager_clear_grad(c->v);
        else
            tf_runtime_clear_grads(c->rt);
    }
    return NULL;
}

typedef struct accumulator {
    tf_runtime *rt;
    tf_engine *engine;
    tf_eager *l;
    int failed;
} accumulator;

static void *accumulator_main(void *p)
{
    accumulator *a = p;
    for (int i = 0; i < ITERS * 2; i++)
        if (tf_eager_backward(a->l, a->engine))
            a->failed = 1;
    return NULL;
}

/* Variables created, backpropagated into and dropped (their slots
   registered and unregistered) while another thread clears all slots. */
static void *churn_main(void *p)
{
    accumulator *a = p;
    tf_session *s = NULL;
    if (tf_session_begin(a->rt, a->engine, &s))
        a->failed = 1;
    for (int i = 0; i < ITERS && s; i++) {
        tf_eager *v = make(a->rt, 1, 1, k4, (double[]){1, 2, 3, 4}, 4), *l = NULL;
        if (!v || tf_session_reduce_sum_squares(s, v, NULL, 0, &l) ||
            tf_eager_backward(l, a->engine))
            a->failed = 1;
        tf_eager_release(l);
        tf_eager_release(v);
    }
    tf_session_end(s);
    return NULL;
}

static void test_clear_while_accumulating(void **state)
{
    (void)state;
    tf_runtime *rt;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    tf_engine *e[4];
    for (int i = 0; i < 4; i++)
        TF_ASSERT_OK(tf_engine_open("cpu", 1, &e[i]));
    tf_eager *v = make(rt, 1, 1, k4, (double[]){1, 2, 3, 4}, 4), *vv = NULL, *l = NULL;
    tf_session *s;
    TF_ASSERT_OK(tf_session_begin(rt, e[2], &s));
    TF_ASSERT_OK(tf_session_mul(s, v, v, &vv));
    TF_ASSERT_OK(tf_session_reduce_sum(s, vv, NULL, 0, &l));
    tf_session_end(s);
    atomic_int stop;
    atomic_init(&stop, 0);
    clearer c = {rt, v, &stop, 0};
    accumulator a[3] = {{rt, e[0], l, 0}, {rt, e[1], l, 0}, {rt, e[3], NULL, 0}};
    pthread_t tc, ta[3];
    assert_int_equal(pthread_create(&tc, NULL, clearer_main, &c), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_create(&ta[i], NULL, i < 2 ? accumulator_main : churn_main, &a[i]),
                         0);
    for (int i = 0; i < 3; i++)
        pthread_join(ta[i], NULL);
    atomic_store(&stop, 1);
    pthread_join(tc, NULL);
    assert_false(a[0].failed || a[1].failed || a[2].failed);
    assert_false(c.bad);
    TF_ASSERT_OK(tf_runtime_clear_grads(rt));
    TF_ASSERT_OK(tf_eager_backward(l, e[2]));
    tf_tensor *g = NULL;
    TF_ASSERT_OK(tf_eager_grad(v, &g));
    assert_true(equals(g, (double[]){2, 4, 6, 8}, 4));
    tf_tensor_release(g);
    tf_eager_release(l);
    tf_eager_release(vv);
    tf_eager_release(v);
    for (int i = 0; i < 4; i++)
        tf_engine_destroy(e[i]);
    tf_runtime_release(rt);
}

/*
 * Two derivative walks over one graph at the same time, made to overlap
 * deterministically: walk A is stopped inside the application's allocator
 * when its list of walked tensors grows past 64 (it holds the marks of the
 * first 64 tensors then); walk B runs a whole backward over the same graph
 * meanwhile, finding A's marks live and taking the rest; A then resumes and
 * finds B's marks, which it cannot prove stale. Both must use their own maps
 * for those tensors and get exact gradients.
 */
enum { OVERLAP_OPS = 50 }; /* 2 * 50 recorded ops + x: 101 walked tensors */

typedef struct overlap {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int a_paused, b_done, timed_out;
} overlap;

static overlap g_overlap = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0};
static _Thread_local int t_pause_armed;

/* Waits (10 s at most) until *flag is set; the lock is held. */
static void overlap_wait(int *flag)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    while (!*flag && !g_overlap.timed_out)
        if (pthread_cond_timedwait(&g_overlap.cond, &g_overlap.lock, &until) != 0)
            g_overlap.timed_out = 1;
}

static void *overlap_alloc(void *user, size_t size, size_t align)
{
    (void)user;
    /* the walk's first 1024-byte block is its stack (64 frames), the second
       its list of walked tensors growing from 64 to 128 entries */
    if (t_pause_armed && size == 128 * sizeof(void *) && ++t_pause_armed == 3) {
        t_pause_armed = 0;
        pthread_mutex_lock(&g_overlap.lock);
        g_overlap.a_paused = 1;
        pthread_cond_broadcast(&g_overlap.cond);
        overlap_wait(&g_overlap.b_done);
        pthread_mutex_unlock(&g_overlap.lock);
    }
    void *p = NULL;
    if (align < sizeof(void *))
        align = sizeof(void *);
    return posix_memalign(&p, align, size) == 0 ? p : NULL;
}

static void overlap_free(void *user, void *p)
{
    (void)user;
    free(p);
}

typedef struct walker {
    tf_eager *l;
    tf_engine *engine;
    tf_status st;
} walker;

static void *walker_a_main(void *p)
{
    walker *w = p;
    t_pause_armed = 1;
    w->st = tf_eager_backward(w->l, w->engine);
    t_pause_armed = 0;
    return NULL;
}

static void test_overlapping_walks(void **state)
{
    (void)state;
    tf_allocator_set(&(tf_allocator){overlap_alloc, overlap_free, NULL});
    tf_runtime *rt;
    tf_engine *ea, *eb;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    TF_ASSERT_OK(tf_engine_open("cpu", 1, &ea));
    TF_ASSERT_OK(tf_engine_open("cpu", 1, &eb));
    tf_session *s;
    TF_ASSERT_OK(tf_session_begin(rt, ea, &s));
    tf_eager *x = make(rt, 1, 1, k4, (double[]){1, 2, 3, 4}, 4);
    tf_eager *c = make(rt, 0, 1, k4, (double[]){1, 1, 1, 1}, 4);
    assert_non_null(x);
    assert_non_null(c);
    tf_eager *y = x, *l = NULL;
    tf_eager_retain(y);
    for (int i = 0; i < OVERLAP_OPS; i++) { /* y = y * c + x */
        tf_eager *t, *u;
        TF_ASSERT_OK(tf_session_mul(s, y, c, &t));
        TF_ASSERT_OK(tf_session_add(s, t, x, &u));
        tf_eager_release(t);
        tf_eager_release(y);
        y = u;
    }
    TF_ASSERT_OK(tf_session_reduce_sum(s, y, NULL, 0, &l));
    tf_session_end(s);

    walker a = {l, ea, TF_OK};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, walker_a_main, &a), 0);
    pthread_mutex_lock(&g_overlap.lock);
    overlap_wait(&g_overlap.a_paused);
    int paused = g_overlap.a_paused;
    pthread_mutex_unlock(&g_overlap.lock);
    tf_status b_st = tf_eager_backward(l, eb); /* while A's walk is live */
    pthread_mutex_lock(&g_overlap.lock);
    g_overlap.b_done = 1;
    pthread_cond_broadcast(&g_overlap.cond);
    pthread_mutex_unlock(&g_overlap.lock);
    pthread_join(th, NULL);
    assert_true(paused); /* A really stopped inside its walk */
    assert_false(g_overlap.timed_out);
    TF_ASSERT_OK(b_st);
    TF_ASSERT_OK(a.st);
    /* y = (OVERLAP_OPS + 1) x: that much for each element, once per backward */
    tf_tensor *g = NULL;
    TF_ASSERT_OK(tf_eager_grad(x, &g));
    double want = 2 * (OVERLAP_OPS + 1);
    assert_true(equals(g, (double[]){want, want, want, want}, 4));
    tf_tensor_release(g);
    /* a third walk after both ended takes every mark over */
    TF_ASSERT_OK(tf_eager_backward(l, ea));
    TF_ASSERT_OK(tf_eager_grad(x, &g));
    want = 3 * (OVERLAP_OPS + 1);
    assert_true(equals(g, (double[]){want, want, want, want}, 4));
    tf_tensor_release(g);

    tf_eager_release(l);
    tf_eager_release(y);
    tf_eager_release(c);
    tf_eager_release(x);
    tf_engine_destroy(ea);
    tf_engine_destroy(eb);
    tf_runtime_release(rt);
    tf_allocator_set(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_workers),
        cmocka_unit_test(test_workers_with_cache_chaos),
        cmocka_unit_test(test_clear_while_accumulating),
        cmocka_unit_test(test_overlapping_walks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
