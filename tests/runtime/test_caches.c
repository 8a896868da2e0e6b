/*
 * test_caches.c - the prepared-derivative cache of the eager runtime, seen
 * through tf_runtime_cache_stats: one entry per graph structure and target
 * (not per variable), hits for repeated and structurally identical graphs,
 * misses for other shapes, other targets and other sharing, LRU eviction
 * when the limits shrink, clears, and results that stay exact on hits.
 */
#include <tenferro/ops.h>

#include "tf_eager_test.h"

static tf_cache_stats prepared(tf_runtime *rt)
{
    tf_runtime_stats st;
    TF_ASSERT_OK(tf_runtime_cache_stats(rt, &st));
    return st.prepared_derivatives;
}

/* Asserts hits, misses and entries of the prepared-derivative cache. */
static void expect_stats(tf_runtime *rt, uint64_t hits, uint64_t misses, size_t entries)
{
    tf_cache_stats c = prepared(rt);
    if (c.hits != hits || c.misses != misses || c.entries != entries)
        fail_msg("prepared-derivative cache: hits %llu misses %llu entries %zu, expected %llu "
                 "%llu %zu",
                 (unsigned long long)c.hits, (unsigned long long)c.misses, c.entries,
                 (unsigned long long)hits, (unsigned long long)misses, entries);
    if (entries)
        assert_true(c.retained_bytes > 0);
    else
        assert_int_equal(c.retained_bytes, 0);
}

static void expect_slot(tf_eager *x, const double *want, size_t n)
{
    tf_tensor *g = NULL;
    TF_ASSERT_OK(tf_eager_grad(x, &g));
    tft_expect_values(g, want, n);
    tf_tensor_release(g);
}

/* A graph: l = sum(x * x * c), c = 3 a constant. */
typedef struct cube {
    tf_eager *x, *c, *xx, *xxc, *l;
} cube;

static cube cube_new(tf_runtime *rt, tf_session *s, size_t n, const double *xv)
{
    cube g;
    const int64_t shape[] = {(int64_t)n};
    g.x = tft_f64(rt, 1, 1, shape, xv, n);
    g.c = tft_f64(rt, 0, 0, NULL, (double[]){3}, 1);
    TF_ASSERT_OK(tf_session_mul(s, g.x, g.x, &g.xx));
    TF_ASSERT_OK(tf_session_mul(s, g.xx, g.c, &g.xxc));
    TF_ASSERT_OK(tf_session_reduce_sum(s, g.xxc, NULL, 0, &g.l));
    return g;
}

static void cube_free(cube *g)
{
    tf_eager_release(g->l);
    tf_eager_release(g->xxc);
    tf_eager_release(g->xx);
    tf_eager_release(g->c);
    tf_eager_release(g->x);
}

/* A runtime and session whose prepared-derivative cache starts empty. */
static tft_env fx_begin(void)
{
    tft_env f = tft_env_begin();
    expect_stats(f.rt, 0, 0, 0);
    return f;
}

static void test_repeat_is_a_hit(void **state)
{
    (void)state;
    tft_env f = fx_begin();
    cube a = cube_new(f.rt, f.s, 3, (double[]){1, 2, 3});
    TF_ASSERT_OK(tf_eager_backward(a.l, g_cpu));
    expect_stats(f.rt, 0, 1, 1);
    expect_slot(a.x, (double[]){6, 12, 18}, 3);
    TF_ASSERT_OK(tf_eager_backward(a.l, g_cpu));
    expect_stats(f.rt, 1, 1, 1);
    expect_slot(a.x, (double[]){12, 24, 36}, 3); /* the hit computes the same */
    /* a new graph of the same structure and shapes, other values: a hit with
       the new values' gradient */
    cube b = cube_new(f.rt, f.s, 3, (double[]){-1, 0.5, 4});
    TF_ASSERT_OK(tf_eager_backward(b.l, g_cpu));
    expect_stats(f.rt, 2, 1, 1);
    expect_slot(b.x, (double[]){-6, 3, 24}, 3);
    /* the same structure with another extent: a miss, a second entry */
    cube c = cube_new(f.rt, f.s, 4, (double[]){1, 1, 1, 1});
    TF_ASSERT_OK(tf_eager_backward(c.l, g_cpu));
    expect_stats(f.rt, 2, 2, 2);
    expect_slot(c.x, (double[]){6, 6, 6, 6}, 4);
    /* functional grad of the first graph: its own entry (another target) */
    tf_eager *g = NULL;
    TF_ASSERT_OK(tf_runtime_grad(f.rt, g_cpu, a.l, a.x, &g));
    expect_stats(f.rt, 2, 3, 3);
    tft_expect_values(tf_eager_value(g), (double[]){6, 12, 18}, 3);
    tf_eager_release(g);
    TF_ASSERT_OK(tf_runtime_grad(f.rt, g_cpu, b.l, b.x, &g));
    expect_stats(f.rt, 3, 3, 3);
    tft_expect_values(tf_eager_value(g), (double[]){-6, 3, 24}, 3);
    tf_eager_release(g);
    cube_free(&a);
    cube_free(&b);
    cube_free(&c);
    tft_env_end(&f);
}

/* l = sum(x1 * x2 + x3 * x4 + x5): five variables, one entry for backward;
   grad with respect to each of them is an entry of its own. */
static void test_one_entry_per_graph(void **state)
{
    (void)state;
    tft_env f = fx_begin();
    const int64_t k2[] = {2};
    tf_eager *x[5];
    for (int i = 0; i < 5; i++)
        x[i] = tft_f64(f.rt, 1, 1, k2, (double[]){i + 1, 2 * (i + 1)}, 2);
    tf_eager *p = NULL, *q = NULL, *pq = NULL, *r = NULL, *l = NULL;
    TF_ASSERT_OK(tf_session_mul(f.s, x[0], x[1], &p));
    TF_ASSERT_OK(tf_session_mul(f.s, x[2], x[3], &q));
    TF_ASSERT_OK(tf_session_add(f.s, p, q, &pq));
    TF_ASSERT_OK(tf_session_add(f.s, pq, x[4], &r));
    TF_ASSERT_OK(tf_session_reduce_sum(f.s, r, NULL, 0, &l));
    TF_ASSERT_OK(tf_eager_backward(l, g_cpu));
    expect_stats(f.rt, 0, 1, 1);
    expect_slot(x[0], (double[]){2, 4}, 2);
    expect_slot(x[1], (double[]){1, 2}, 2);
    expect_slot(x[2], (double[]){4, 8}, 2);
    expect_slot(x[3], (double[]){3, 6}, 2);
    expect_slot(x[4], (double[]){1, 1}, 2);
    tf_eager *g = NULL;
    for (int i = 0; i < 5; i++) {
        TF_ASSERT_OK(tf_runtime_grad(f.rt, g_cpu, l, x[i], &g));
        tf_eager_release(g);
        expect_stats(f.rt, 0, 2 + (uint64_t)i, 2 + (size_t)i);
    }
    /* the second round hits every one of them */
    for (int i = 0; i < 5; i++) {
        TF_ASSERT_OK(tf_runtime_grad(f.rt, g_cpu, l, x[i], &g));
        tf_eager_release(g);
    }
    TF_ASSERT_OK(tf_eager_backward(l, g_cpu));
    expect_stats(f.rt, 6, 6, 6);
    expect_slot(x[0], (double[]){4, 8}, 2);
    tf_eager *all[] = {p, q, pq, r, l, x[0], x[1], x[2], x[3], x[4]};
    for (size_t i = 0; i < 10; i++)
        tf_eager_release(all[i]);
    tft_env_end(&f);
}

/* Graphs that differ only in which tensor feeds which op, or in whether an
   input is a variable, must not share an entry: a shared one would compute
   wrong gradients. */
static void test_structure_is_the_key(void **state)
{
    (void)state;
    tft_env f = fx_begin();
    const int64_t k2[] = {2};
    tf_eager *x = tft_f64(f.rt, 1, 1, k2, (double[]){2, 3}, 2);
    tf_eager *z = tft_f64(f.rt, 1, 1, k2, (double[]){5, 7}, 2);
    tf_eager *c = tft_f64(f.rt, 0, 1, k2, (double[]){5, 7}, 2);
    tf_eager *xx = NULL, *xz = NULL, *xc = NULL, *l1 = NULL, *l2 = NULL, *l3 = NULL;
    TF_ASSERT_OK(tf_session_mul(f.s, x, x, &xx));
    TF_ASSERT_OK(tf_session_mul(f.s, x, z, &xz));
    TF_ASSERT_OK(tf_session_mul(f.s, x, c, &xc));
    TF_ASSERT_OK(tf_session_reduce_sum(f.s, xx, NULL, 0, &l1));
    TF_ASSERT_OK(tf_session_reduce_sum(f.s, xz, NULL, 0, &l2));
    TF_ASSERT_OK(tf_session_reduce_sum(f.s, xc, NULL, 0, &l3));
    tf_eager *g = NULL;
    TF_ASSERT_OK(tf_runtime_grad(f.rt, g_cpu, l1, x, &g));
    tft_expect_values(tf_eager_value(g), (double[]){4, 6}, 2);
    tf_eager_release(g);
    TF_ASSERT_OK(tf_runtime_grad(f.rt, g_cpu, l2, x, &g));
    tft_expect_values(tf_eager_value(g), (double[]){5, 7}, 2);
    tf_eager_release(g);
    TF_ASSERT_OK(tf_runtime_grad(f.rt, g_cpu, l3, x, &g));
    tft_expect_values(tf_eager_value(g), (double[]){5, 7}, 2);
    tf_eager_release(g);
    expect_stats(f.rt, 0, 3, 3);
    /* backward into z through l2 (z's slot) and not through l3 (c has none) */
    TF_ASSERT_OK(tf_eager_backward(l2, g_cpu));
    TF_ASSERT_OK(tf_eager_backward(l3, g_cpu));
    expect_stats(f.rt, 0, 5, 5);
    expect_slot(z, (double[]){2, 3}, 2);
    expect_slot(x, (double[]){10, 14}, 2);
    tf_eager *all[] = {xx, xz, xc, l1, l2, l3, x, z, c};
    for (size_t i = 0; i < 9; i++)
        tf_eager_release(all[i]);
    tft_env_end(&f);
}

static void test_shrinking_limits_evict(void **state)
{
    (void)state;
    tft_env f = fx_begin();
    tf_cache_limits defaults;
    TF_ASSERT_OK(tf_runtime_prepared_derivative_cache_limits(f.rt, &defaults));
    assert_true(defaults.max_entries >= 4);
    cube g[4];
    double first[4][4];
    for (int i = 0; i < 4; i++) {
        double xv[4] = {1, 2, 3, 4};
        g[i] = cube_new(f.rt, f.s, (size_t)i + 1, xv); /* four shapes: four entries */
        TF_ASSERT_OK(tf_eager_backward(g[i].l, g_cpu));
        tf_tensor *t = NULL;
        TF_ASSERT_OK(tf_eager_grad(g[i].x, &t));
        TF_ASSERT_OK(tf_tensor_copy_to_host(t, TF_F64, first[i], (size_t)i + 1));
        tf_tensor_release(t);
        TF_ASSERT_OK(tf_eager_clear_grad(g[i].x));
    }
    expect_stats(f.rt, 0, 4, 4);
    assert_int_equal(prepared(f.rt).evictions, 0);

    /* max_entries 2 keeps the two most recently used: g[3], g[2] */
    tf_cache_limits two = {2, 0};
    TF_ASSERT_OK(tf_runtime_set_prepared_derivative_cache_limits(f.rt, &two));
    tf_cache_stats c = prepared(f.rt);
    assert_int_equal(c.entries, 2);
    assert_int_equal(c.evictions, 2);
    TF_ASSERT_OK(tf_eager_backward(g[2].l, g_cpu)); /* hit; now g[2] is the newest */
    expect_stats(f.rt, 1, 4, 2);
    TF_ASSERT_OK(tf_eager_backward(g[0].l, g_cpu)); /* miss; evicts g[3] */
    expect_stats(f.rt, 1, 5, 2);
    assert_int_equal(prepared(f.rt).evictions, 3);
    TF_ASSERT_OK(tf_eager_backward(g[2].l, g_cpu)); /* still there */
    expect_stats(f.rt, 2, 5, 2);
    TF_ASSERT_OK(tf_eager_backward(g[3].l, g_cpu)); /* gone */
    expect_stats(f.rt, 2, 6, 2);

    /* max_entries 1 */
    tf_cache_limits one = {1, 0};
    TF_ASSERT_OK(tf_runtime_set_prepared_derivative_cache_limits(f.rt, &one));
    c = prepared(f.rt);
    assert_int_equal(c.entries, 1);
    assert_int_equal(c.evictions, 5);

    /* a byte limit below one entry's size keeps nothing, at once and later */
    tf_cache_limits tiny = {16, 1};
    TF_ASSERT_OK(tf_runtime_set_prepared_derivative_cache_limits(f.rt, &tiny));
    c = prepared(f.rt);
    assert_int_equal(c.entries, 0);
    assert_int_equal(c.retained_bytes, 0);
    assert_int_equal(c.evictions, 6);
    TF_ASSERT_OK(tf_eager_backward(g[1].l, g_cpu));
    c = prepared(f.rt);
    assert_int_equal(c.entries, 0);
    assert_int_equal(c.evictions, 7);

    /* hit, miss or evicted, every call added exactly the first run's gradient */
    static const int calls[4] = {1, 1, 2, 1}; /* backward calls per graph since the clear */
    for (int i = 0; i < 4; i++) {
        double want[4];
        for (int k = 0; k <= i; k++)
            want[k] = calls[i] * first[i][k];
        expect_slot(g[i].x, want, (size_t)i + 1);
    }
    /* the defaults back: entries come back too */
    TF_ASSERT_OK(tf_runtime_set_prepared_derivative_cache_limits(f.rt, &defaults));
    TF_ASSERT_OK(tf_eager_backward(g[1].l, g_cpu));
    assert_int_equal(prepared(f.rt).entries, 1);
    for (int i = 0; i < 4; i++)
        cube_free(&g[i]);
    tft_env_end(&f);
}

static void test_clears(void **state)
{
    (void)state;
    tft_env f = fx_begin();
    cube a = cube_new(f.rt, f.s, 3, (double[]){1, 2, 3});
    TF_ASSERT_OK(tf_eager_backward(a.l, g_cpu));
    tf_eager *g = NULL;
    TF_ASSERT_OK(tf_runtime_grad(f.rt, g_cpu, a.l, a.x, &g));
    tf_eager_release(g);
    expect_stats(f.rt, 0, 2, 2);
    tf_runtime_stats before;
    TF_ASSERT_OK(tf_runtime_cache_stats(f.rt, &before));

    TF_ASSERT_OK(tf_runtime_clear_prepared_derivative_cache(f.rt));
    tf_runtime_stats st;
    TF_ASSERT_OK(tf_runtime_cache_stats(f.rt, &st));
    assert_int_equal(st.prepared_derivatives.entries, 0);
    assert_int_equal(st.prepared_derivatives.retained_bytes, 0);
    assert_int_equal(st.prepared_derivatives.clears, before.prepared_derivatives.clears + 1);
    /* counters other than entries survive a clear; the other cache is untouched */
    assert_int_equal(st.prepared_derivatives.misses, 2);
    assert_int_equal(st.ad_transforms.clears, before.ad_transforms.clears);
    assert_int_equal(st.ad_transforms.entries, before.ad_transforms.entries);

    /* after a clear the same backward is a miss again, with the same result */
    TF_ASSERT_OK(tf_eager_clear_grad(a.x));
    TF_ASSERT_OK(tf_eager_backward(a.l, g_cpu));
    expect_stats(f.rt, 0, 3, 1);
    expect_slot(a.x, (double[]){6, 12, 18}, 3);

    TF_ASSERT_OK(tf_runtime_clear_caches(f.rt));
    TF_ASSERT_OK(tf_runtime_cache_stats(f.rt, &st));
    assert_int_equal(st.prepared_derivatives.entries, 0);
    assert_int_equal(st.prepared_derivatives.clears, before.prepared_derivatives.clears + 2);
    assert_int_equal(st.ad_transforms.entries, 0);
    assert_int_equal(st.ad_transforms.clears, before.ad_transforms.clears + 1);

    TF_ASSERT_OK(tf_runtime_clear_ad_transform_caches(f.rt));
    TF_ASSERT_OK(tf_runtime_cache_stats(f.rt, &st));
    assert_int_equal(st.ad_transforms.clears, before.ad_transforms.clears + 2);
    assert_int_equal(st.prepared_derivatives.clears, before.prepared_derivatives.clears + 2);

    /* still correct after every clear */
    TF_ASSERT_OK(tf_runtime_grad(f.rt, g_cpu, a.l, a.x, &g));
    tft_expect_values(tf_eager_value(g), (double[]){6, 12, 18}, 3);
    tf_eager_release(g);
    cube_free(&a);
    tft_env_end(&f);
}

/* Runtimes have caches of their own; those sharing an AD context share
   its AD-transform cache but not their prepared derivatives. */
static void test_caches_per_runtime(void **state)
{
    (void)state;
    tf_ad_context *ad;
    TF_ASSERT_OK(tf_ad_context_create(&ad));
    tf_runtime *r1, *r2;
    TF_ASSERT_OK(tf_runtime_create_with_ad_context(ad, &r1));
    TF_ASSERT_OK(tf_runtime_create_with_ad_context(ad, &r2));
    tf_session *s1, *s2;
    TF_ASSERT_OK(tf_session_begin(r1, g_cpu, &s1));
    TF_ASSERT_OK(tf_session_begin(r2, g_cpu, &s2));
    cube a = cube_new(r1, s1, 3, (double[]){1, 2, 3});
    cube b = cube_new(r2, s2, 3, (double[]){1, 2, 3});
    TF_ASSERT_OK(tf_eager_backward(a.l, g_cpu));
    TF_ASSERT_OK(tf_eager_backward(b.l, g_cpu)); /* a miss in r2's own cache */
    expect_stats(r1, 0, 1, 1);
    expect_stats(r2, 0, 1, 1);
    TF_ASSERT_OK(tf_runtime_clear_prepared_derivative_cache(r1));
    expect_stats(r2, 0, 1, 1);
    tf_runtime_stats st1, st2;
    TF_ASSERT_OK(tf_runtime_clear_ad_transform_caches(r1));
    TF_ASSERT_OK(tf_runtime_cache_stats(r1, &st1));
    TF_ASSERT_OK(tf_runtime_cache_stats(r2, &st2));
    assert_memory_equal(&st1.ad_transforms, &st2.ad_transforms, sizeof st1.ad_transforms);
    cube_free(&a);
    cube_free(&b);
    tf_session_end(s1);
    tf_session_end(s2);
    tf_runtime_release(r1);
    tf_runtime_release(r2);
    tf_ad_context_release(ad);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_repeat_is_a_hit),
        cmocka_unit_test(test_one_entry_per_graph),
        cmocka_unit_test(test_structure_is_the_key),
        cmocka_unit_test(test_shrinking_limits_evict),
        cmocka_unit_test(test_clears),
        cmocka_unit_test(test_caches_per_runtime),
    };
    return cmocka_run_group_tests(tests, tft_cpu_setup, tft_cpu_teardown);
}
