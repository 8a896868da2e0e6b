/*
 * test_dp.c - data-parallel training (dp.h), run by ctest alone and under
 * `mpirun -np 2` and `-np 4`.
 *
 * The program does not use MPI itself: the dist module initialises it, as it
 * does for an application that only links tenferro. The main check: an MLP
 * trained for several steps on a global batch split across the ranks (each
 * rank its shard, starting from different values that the broadcast
 * replaces by rank 0's) ends with the same parameters, within rounding in
 * f64, as one process trained on the whole batch; with buckets large and
 * small, with Adam and with SGD. Then parameters without gradients (on no
 * rank, on some), a metric, and the refusals.
 */
#include <math.h>

#include <tenferro/dp.h>

#include "train_test.h"

#define BATCH 16 /* divisible by 1, 2 and 4 ranks */
#define IN 3
#define HID 5
#define NP 4

static const int64_t k_shapes[NP][2] = {{IN, HID}, {HID, 0}, {HID, 1}, {1, 0}};

static size_t numel_of(int i)
{
    return (size_t)k_shapes[i][0] * (size_t)(k_shapes[i][1] ? k_shapes[i][1] : 1);
}

/* The global batch: inputs [BATCH, IN] and targets [BATCH, 1], row-wise formulas. */
static double input_at(int row, int col)
{
    return sin(0.37 * row + 1.1 * col) + 0.05 * col;
}

static double target_at(int row)
{
    return cos(0.21 * row) * 0.5;
}

/* Rows [lo, hi) of the batch as constants of rt. */
static void batch(tf_runtime *rt, int lo, int hi, tf_eager **x, tf_eager **t)
{
    int n = hi - lo;
    double xv[BATCH * IN], tv[BATCH];
    for (int r = 0; r < n; r++) {
        for (int c = 0; c < IN; c++)
            xv[r + n * c] = input_at(lo + r, c);
        tv[r] = target_at(lo + r);
    }
    *x = tft_f64(rt, 0, 2, (const int64_t[]){n, IN}, xv, (size_t)(n * IN));
    *t = tft_f64(rt, 0, 2, (const int64_t[]){n, 1}, tv, (size_t)n);
}

/* Initial parameters from a seed (every rank its own before the broadcast). */
static tf_optim *model(tf_runtime *rt, tf_optim_kind kind, int seed)
{
    tf_eager *p[NP];
    for (int i = 0; i < NP; i++) {
        double v[16];
        for (size_t k = 0; k < numel_of(i); k++)
            v[k] = 0.6 * sin(2.3 * (double)k + 0.9 * i + 7.1 * seed);
        p[i] = trt_param(rt, k_shapes[i][1] ? 2 : 1, k_shapes[i], v, numel_of(i));
    }
    tf_optim *opt = NULL;
    TF_ASSERT_OK(tf_optim_create(rt, kind, &opt));
    tf_optim_options o;
    tf_optim_options_default(kind, &o);
    o.lr = 0.05;
    o.momentum = kind == TF_OPTIM_SGD ? 0.9 : 0;
    TF_ASSERT_OK(tf_optim_add_group(opt, &o, p, NP));
    for (int i = 0; i < NP; i++)
        tf_eager_release(p[i]);
    return opt;
}

/* backward of mean((tanh(x W1 + b1) W2 + b2 - t)^2) over the rows given. */
static void backward(tf_runtime *rt, tf_optim *opt, tf_eager *x, tf_eager *t)
{
    tf_session *s = NULL;
    TF_ASSERT_OK(tf_session_begin(rt, g_cpu, &s));
    tf_eager *v[8] = {NULL};
    TF_ASSERT_OK(tf_session_matmul(s, x, tf_optim_param(opt, 0), &v[0]));
    TF_ASSERT_OK(tf_session_add(s, v[0], tf_optim_param(opt, 1), &v[1]));
    TF_ASSERT_OK(tf_session_tanh(s, v[1], &v[2]));
    TF_ASSERT_OK(tf_session_matmul(s, v[2], tf_optim_param(opt, 2), &v[3]));
    TF_ASSERT_OK(tf_session_add(s, v[3], tf_optim_param(opt, 3), &v[4]));
    TF_ASSERT_OK(tf_session_sub(s, v[4], t, &v[5]));
    TF_ASSERT_OK(tf_session_mul(s, v[5], v[5], &v[6]));
    TF_ASSERT_OK(tf_session_reduce_mean(s, v[6], NULL, 0, &v[7]));
    tf_session_end(s);
    TF_ASSERT_OK(tf_eager_backward(v[7], g_cpu));
    for (int i = 0; i < 8; i++)
        tf_eager_release(v[i]);
}

static void values(tf_optim *opt, double *out)
{
    for (int i = 0; i < NP; i++) {
        trt_read(tf_eager_value(tf_optim_param(opt, (size_t)i)), out, numel_of(i));
        out += numel_of(i);
    }
}

/* `steps` data-parallel steps against one process on the whole batch. */
static void check_equivalence(tf_optim_kind kind, size_t bucket_bytes, size_t want_buckets)
{
    tf_runtime *rt = NULL, *ref_rt = NULL;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    TF_ASSERT_OK(tf_runtime_create(&ref_rt));
    tf_dp *dp = NULL;
    TF_ASSERT_OK(tf_dp_create(rt, g_cpu, &dp));
    if (bucket_bytes)
        TF_ASSERT_OK(tf_dp_set_bucket_bytes(dp, bucket_bytes));
    int r = tf_dp_rank(dp), p = tf_dp_size(dp);
    tf_optim *opt = model(rt, kind, 1 + r), *ref = model(ref_rt, kind, 1);
    TF_ASSERT_OK(tf_dp_broadcast_params(dp, opt));
    tf_eager *x = NULL, *t = NULL, *xa = NULL, *ta = NULL;
    batch(rt, r * BATCH / p, (r + 1) * BATCH / p, &x, &t);
    batch(ref_rt, 0, BATCH, &xa, &ta);
    for (int step = 0; step < 6; step++) {
        backward(rt, opt, x, t);
        TF_ASSERT_OK(tf_dp_step(dp, opt));
        assert_int_equal(tf_dp_last_buckets(dp), want_buckets);
        backward(ref_rt, ref, xa, ta);
        TF_ASSERT_OK(tf_optim_step(ref, g_cpu));
    }
    double got[32], want[32];
    values(opt, got);
    values(ref, want);
    trt_expect_close("data-parallel parameters", got, want, 26, 1e-12);
    tf_eager *all[] = {x, t, xa, ta};
    for (int i = 0; i < 4; i++)
        tf_eager_release(all[i]);
    tf_optim_destroy(opt);
    tf_optim_destroy(ref);
    tf_dp_destroy(dp);
    tf_runtime_release(rt);
    tf_runtime_release(ref_rt);
}

static void test_matches_one_process_on_the_whole_batch(void **state)
{
    (void)state;
    check_equivalence(TF_OPTIM_ADAM, 0, 1);            /* one bucket of 26 f64 */
    check_equivalence(TF_OPTIM_ADAM, 48, 3);           /* [15] [5] [5, 1]: three */
    check_equivalence(TF_OPTIM_SGD, 1, NP);            /* one per tensor */
}

/* No gradient anywhere: untouched, no bucket; a gradient on rank 0 only: averaged with zeros. */
static void test_missing_gradients(void **state)
{
    (void)state;
    tf_runtime *rt = NULL;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    tf_dp *dp = NULL;
    TF_ASSERT_OK(tf_dp_create(rt, g_cpu, &dp));
    int r = tf_dp_rank(dp), p = tf_dp_size(dp);
    const int64_t two = 2;
    const double v[2] = {1, 2};
    tf_eager *ps[3] = {trt_param(rt, 1, &two, v, 2), trt_param(rt, 1, &two, v, 2),
                       trt_param(rt, 1, &two, v, 2)};
    tf_optim *opt = NULL;
    TF_ASSERT_OK(tf_optim_create(rt, TF_OPTIM_SGD, &opt));
    tf_optim_options o;
    tf_optim_options_default(TF_OPTIM_SGD, &o);
    o.lr = 1;
    TF_ASSERT_OK(tf_optim_add_group(opt, &o, ps, 3));
    /* loss = sum(p0) on every rank + sum(p1) on rank 0 only; p2 unused */
    tf_session *s = NULL;
    tf_eager *l0 = NULL, *l1 = NULL, *loss = NULL;
    TF_ASSERT_OK(tf_session_begin(rt, g_cpu, &s));
    TF_ASSERT_OK(tf_session_reduce_sum(s, tf_optim_param(opt, 0), NULL, 0, &l0));
    TF_ASSERT_OK(tf_session_reduce_sum(s, tf_optim_param(opt, 1), NULL, 0, &l1));
    if (r == 0) {
        TF_ASSERT_OK(tf_session_add(s, l0, l1, &loss));
    } else {
        tf_eager_retain(l0);
        loss = l0;
    }
    tf_session_end(s);
    TF_ASSERT_OK(tf_eager_backward(loss, g_cpu));
    tf_tensor *g[3] = {NULL, NULL, NULL};
    TF_ASSERT_OK(tf_dp_average_grads(dp, opt, g, 3));
    assert_non_null(g[0]);
    assert_non_null(g[1]);
    assert_null(g[2]);
    double got[2];
    trt_read(g[1], got, 2);
    assert_true(got[0] == 1.0 / p && got[1] == 1.0 / p);
    for (int i = 0; i < 3; i++)
        tf_tensor_release(g[i]);
    TF_ASSERT_OK(tf_dp_step(dp, opt));
    assert_ptr_equal(tf_optim_param(opt, 2), ps[2]);
    trt_read(tf_eager_value(tf_optim_param(opt, 0)), got, 2);
    assert_true(got[0] == 0.0 && got[1] == 1.0);
    tf_eager *all[] = {l0, l1, loss, ps[0], ps[1], ps[2]};
    for (int i = 0; i < 6; i++)
        tf_eager_release(all[i]);
    tf_optim_destroy(opt);
    tf_dp_destroy(dp);
    tf_runtime_release(rt);
}

static void test_metric_and_refusals(void **state)
{
    (void)state;
    tf_runtime *rt = NULL;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    tf_dp *dp = NULL;
    trt_expect_fail(tf_dp_create(NULL, g_cpu, &dp), TF_ERR_VALIDATION, "rt");
    trt_expect_fail(tf_dp_create(rt, NULL, &dp), TF_ERR_VALIDATION, "engine");
    TF_ASSERT_OK(tf_dp_create(rt, g_cpu, &dp));
    int r = tf_dp_rank(dp), p = tf_dp_size(dp);
    assert_true(r >= 0 && r < p);
    double mean = -1, sum = -1;
    TF_ASSERT_OK(tf_dp_all_reduce_scalar(dp, r, 1, &mean));
    TF_ASSERT_OK(tf_dp_all_reduce_scalar(dp, 1.0, 0, &sum));
    assert_true(mean == (p - 1) / 2.0 && sum == p);
    trt_expect_fail(tf_dp_set_bucket_bytes(dp, 0), TF_ERR_VALIDATION, "bytes");
    tf_optim *opt = model(rt, TF_OPTIM_ADAM, 3);
    tf_tensor *g[NP];
    trt_expect_fail(tf_dp_average_grads(dp, opt, g, NP - 1), TF_ERR_VALIDATION, "grads");
    trt_expect_fail(tf_dp_step(dp, NULL), TF_ERR_VALIDATION, "opt");
    tf_optim_destroy(opt);
    tf_dp_destroy(dp);
    tf_runtime_release(rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_one_process_on_the_whole_batch),
        cmocka_unit_test(test_missing_gradients),
        cmocka_unit_test(test_metric_and_refusals),
    };
    return cmocka_run_group_tests(tests, tft_cpu_setup, tft_cpu_teardown);
}
