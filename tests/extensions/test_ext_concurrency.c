/*
 * test_ext_concurrency.c - the registry under contention: 8 threads race to
 * install the same module instance (4 threads) and a second, different
 * module (2 threads) into a fresh runtime while 2 threads keep calling and
 * differentiating an installed op by name. Each round checks: exactly one
 * publish per distinct install, every installer got an epoch no older than
 * its module's publish, the epochs are distinct and the runtime's epoch never went
 * backwards for the readers, and a reader that saw a module's first op
 * never afterwards misses its second op (no half-built snapshot). Meant to
 * run under ThreadSanitizer as well (LABELS concurrency).
 */
#include <pthread.h>
#include <stdatomic.h>

#include "ext_test_util.h"

#define ROUNDS 20
#define INSTALLERS_A 4
#define INSTALLERS_B 2
#define RUNNERS 2
#define THREADS (INSTALLERS_A + INSTALLERS_B + RUNNERS)

static tf_extension_module *g_a, *g_b, *g_linalg;

typedef struct round_ctx {
    tf_runtime *rt;
    pthread_barrier_t start;
    _Atomic int installers_left;
    tf_epoch got[THREADS];
    int failures;
    pthread_mutex_t lock;
    char why[256];
} round_ctx;

typedef struct thread_arg {
    round_ctx *r;
    int index;
} thread_arg;

static void fail_round(round_ctx *r, const char *what)
{
    pthread_mutex_lock(&r->lock);
    if (!r->failures++)
        snprintf(r->why, sizeof r->why, "%s: %s (%s)", what, tf_error_message(), tf_error_cause());
    pthread_mutex_unlock(&r->lock);
}

static void run_ops(round_ctx *r)
{
    tf_engine *cpu;
    if (tf_engine_open("cpu", 1, &cpu) != TF_OK) {
        fail_round(r, "engine_open");
        return;
    }
    tf_session *s;
    tf_session_begin(r->rt, cpu, &s);
    double a[4] = {3, 1, 2, 4};
    tf_tensor *t;
    tf_tensor_from_host(TF_F64, 2, (int64_t[]){2, 2}, a, 4, &t);
    tf_eager *x;
    tf_runtime_variable_from(r->rt, t, &x);
    tf_tensor_release(t);
    tf_epoch last = 0;
    int saw_scale = 0;
    for (int iter = 0; iter < 10 || atomic_load(&r->installers_left) > 0; iter++) {
        tf_epoch e = tf_runtime_epoch(r->rt);
        if (e < last)
            fail_round(r, "the epoch went backwards");
        last = e;
        if (tf_runtime_has_op(r->rt, "tenferro.fixture.scale"))
            saw_scale = 1;
        if (saw_scale && !tf_runtime_has_op(r->rt, "tenferro.fixture.noad"))
            fail_round(r, "saw scale, then no noad");
        tf_eager *y, *l, *g;
        if (tf_session_call(s, "tenferro.linalg.inv", (tf_call_arg[]){TF_ARG_TENSOR(x)}, 1, &y,
                            1) != TF_OK) {
            fail_round(r, "inv");
            break;
        }
        tf_session_reduce_sum(s, y, NULL, 0, &l);
        if (tf_runtime_grad(r->rt, cpu, l, x, &g) != TF_OK)
            fail_round(r, "grad");
        else
            tf_eager_release(g);
        tf_eager_release(l);
        tf_eager_release(y);
    }
    tf_eager_release(x);
    tf_session_end(s);
    tf_engine_destroy(cpu);
}

static void *thread_main(void *p)
{
    thread_arg *ta = p;
    round_ctx *r = ta->r;
    pthread_barrier_wait(&r->start);
    if (ta->index >= INSTALLERS_A + INSTALLERS_B) {
        run_ops(r);
        return NULL;
    }
    tf_extension_module *m = ta->index < INSTALLERS_A ? g_a : g_b;
    if (tf_runtime_install_extension_module(r->rt, m, &r->got[ta->index]) != TF_OK)
        fail_round(r, "install");
    atomic_fetch_sub(&r->installers_left, 1);
    return NULL;
}

static void one_round(void)
{
    round_ctx r;
    memset(&r, 0, sizeof r);
    pthread_mutex_init(&r.lock, NULL);
    TF_ASSERT_OK(tf_runtime_create(&r.rt));
    tf_epoch base;
    TF_ASSERT_OK(tf_runtime_install_extension_module(r.rt, g_linalg, &base));
    assert_int_equal(base, 1);
    atomic_init(&r.installers_left, INSTALLERS_A + INSTALLERS_B);
    pthread_barrier_init(&r.start, NULL, THREADS);
    pthread_t th[THREADS];
    thread_arg args[THREADS];
    for (int i = 0; i < THREADS; i++) {
        args[i] = (thread_arg){&r, i};
        assert_int_equal(pthread_create(&th[i], NULL, thread_main, &args[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    if (r.failures)
        fail_msg("%d failures; first: %s", r.failures, r.why);
    assert_int_equal(tf_runtime_extension_publish_count(r.rt), 3); /* linalg, a, b */
    assert_int_equal(tf_runtime_epoch(r.rt), 3);
    /* the publish of a module is the smallest epoch its installers saw; the
       others returned the then-current epoch (which another publish may
       have moved on), never an older one */
    tf_epoch ea = 99, eb = 99;
    for (int i = 0; i < INSTALLERS_A + INSTALLERS_B; i++) {
        tf_epoch *e = i < INSTALLERS_A ? &ea : &eb;
        assert_true(r.got[i] >= 2 && r.got[i] <= 3);
        *e = r.got[i] < *e ? r.got[i] : *e;
    }
    assert_true(ea != eb);
    assert_true(tf_runtime_has_op(r.rt, "tenferro.fixture.noad"));
    assert_true(tf_runtime_has_op(r.rt, "tenferro.fixture_b.scale"));
    pthread_barrier_destroy(&r.start);
    pthread_mutex_destroy(&r.lock);
    tf_runtime_release(r.rt);
}

static void test_install_race(void **state)
{
    (void)state;
    TF_ASSERT_OK(tf_extension_load(FX_PATH("fixture"), &g_a));
    TF_ASSERT_OK(tf_extension_load(FX_PATH("fixture_b"), &g_b));
    TF_ASSERT_OK(tf_extension_load("linalg", &g_linalg));
    for (int i = 0; i < ROUNDS; i++)
        one_round();
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_install_race)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
