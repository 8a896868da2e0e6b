/*
 * test_einsum_threads.c - tenferro.einsum from several threads at once, each with
 * its own session of one shared runtime (so they share its plan cache: concurrent
 * misses, stores and hits of the same keys, and clears in between), forward and
 * backward; every result equals the single-threaded one. Labelled concurrency, so the
 * ThreadSanitizer build runs it.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include <tenferro/einsum.h>

#include "ext_test_util.h"

#define THREADS 4
#define ROUNDS 40

static const char *const k_exprs[] = {"ij,jk->ik", "ij,jk,kl->il", "ii->i", "ab,bc,ca->",
                                      "...ij,...jk->...ik"};
#define N_EXPRS (sizeof k_exprs / sizeof k_exprs[0])

static tf_runtime *g_rt;
static tf_eager *g_ops[3];
static double g_want[N_EXPRS][27];
static size_t g_n[N_EXPRS];
static atomic_int g_failures; /* the workers count failures; cmocka asserts on the main thread */

static uint32_t operand_count(const char *e)
{
    uint32_t n = 1;
    for (; *e && *e != '-'; e++)
        n += *e == ',';
    return n;
}

/* One einsum of expression k; its values in out (room for 27); 0 on failure. */
static size_t run_one(tf_session *s, size_t k, int backward, double *out)
{
    tf_eager *y = NULL, *loss = NULL, *g = NULL;
    size_t n = 0;
    if (tf_einsum(s, k_exprs[k], operand_count(k_exprs[k]), g_ops, &y) == TF_OK &&
        tf_tensor_copy_to_host(tf_eager_value(y), TF_F64, out,
                               tf_tensor_numel(tf_eager_value(y))) == TF_OK)
        n = tf_tensor_numel(tf_eager_value(y));
    if (n && backward &&
        (tf_session_reduce_sum(s, y, NULL, 0, &loss) != TF_OK ||
         tf_runtime_grad(g_rt, g_cpu, loss, g_ops[0], &g) != TF_OK))
        n = 0;
    tf_eager_release(g);
    tf_eager_release(loss);
    tf_eager_release(y);
    return n;
}

static void *worker(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg;
    tf_session *s = NULL;
    if (tf_session_begin(g_rt, g_cpu, &s) != TF_OK) {
        atomic_fetch_add(&g_failures, 1);
        return NULL;
    }
    for (int r = 0; r < ROUNDS; r++) {
        size_t k = (id + (unsigned)r) % N_EXPRS;
        double got[27];
        size_t n = run_one(s, k, r % 3 == 0, got);
        if (n != g_n[k] || memcmp(got, g_want[k], n * sizeof *got) != 0)
            atomic_fetch_add(&g_failures, 1);
        if (id == 0 && r % 10 == 5 && tf_runtime_clear_caches(g_rt) != TF_OK)
            atomic_fetch_add(&g_failures, 1); /* plans vanish under the others */
    }
    tf_session_end(s);
    return NULL;
}

static void test_threads_share_the_plan_cache(void **state)
{
    (void)state;
    TF_ASSERT_OK(tf_runtime_create(&g_rt));
    TF_ASSERT_OK(tf_einsum_install(g_rt, NULL));
    const int64_t s33[2] = {3, 3};
    double d[9];
    for (int t = 0; t < 3; t++) {
        for (int i = 0; i < 9; i++)
            d[i] = (double)((t + 2) * (i + 1) % 7) - 3.0;
        g_ops[t] = ext_tensor(g_rt, 2, s33, d, 1);
    }
    tf_session *s = NULL;
    TF_ASSERT_OK(tf_session_begin(g_rt, g_cpu, &s));
    for (size_t k = 0; k < N_EXPRS; k++)
        assert_true((g_n[k] = run_one(s, k, 0, g_want[k])) > 0);
    tf_session_end(s);
    TF_ASSERT_OK(tf_runtime_clear_caches(g_rt));
    pthread_t th[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, worker, (void *)i), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&g_failures), 0);
    tf_cache_stats st;
    TF_ASSERT_OK(tf_runtime_extension_cache_stats(g_rt, TF_EINSUM_MODULE_ID, &st));
    assert_true(st.hits > 0 && st.misses >= N_EXPRS);
    for (int t = 0; t < 3; t++)
        tf_eager_release(g_ops[t]);
    tf_runtime_release(g_rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_share_the_plan_cache),
    };
    return cmocka_run_group_tests(tests, tft_cpu_setup, tft_cpu_teardown);
}
