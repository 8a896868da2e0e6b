/*
 * bench_growth.c - the `growth` workload of `tenferro bench` (bench_growth.h):
 * per-op cost of mul forward + backward from 1 element to 2^22, and matmul
 * GFLOP/s from n = 16 to 2048, so that a plot shows where fixed costs end and
 * the machine's bandwidth or arithmetic begins. bench/torch_bench.py's
 * `growth` does the same in PyTorch; bench/growth.py draws both.
 *
 * Each figure is the median of 5 timed repetitions after one warm-up; a
 * repetition of mul runs the op and its backward `count` times, with count
 * chosen so that it moves about 2^24 elements (at least once, at most 4096
 * times), and reports the time per op.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>

#include <tenferro/ops.h>
#include <tenferro/tenferro.h>

#include "bench_growth.h"
#include "bench_util.h"

#define REPS 5

/* One mul of x and c and its backward seeded with `seed`, `count` times. */
static tf_status mul_once(tf_engine *e, tf_session *s, tf_eager *x, tf_eager *c, tf_eager *seed,
                          int count, double *seconds)
{
    tf_status st = TF_OK;
    double t0 = tf_bench_now();
    for (int i = 0; i < count && !st; i++) {
        tf_eager *y = NULL;
        st = tf_session_mul(s, x, c, &y);
        TRY(tf_eager_backward_with_seed(y, seed, e));
        tf_eager_release(y);
    }
    TRY(tf_engine_synchronize(e));
    *seconds = (tf_bench_now() - t0) / count;
    return st;
}

static tf_status mul_size(tf_engine *e, tf_runtime *rt, tf_session *s, int64_t n)
{
    tf_eager *x = NULL, *c = NULL, *seed = NULL;
    tf_status st = tf_bench_random(s, TF_F32, 1, &n, 0, 1, 61, 1, &x);
    TRY(tf_bench_random(s, TF_F32, 1, &n, 0, 1, 62, 0, &c));
    TRY(tf_session_full(s, TF_F32, 1, &n, 1.0, &seed));
    int64_t count = ((int64_t)1 << 24) / n;
    count = count < 1 ? 1 : count > 4096 ? 4096 : count;
    double secs[REPS], warm = 0;
    TRY(mul_once(e, s, x, c, seed, (int)count, &warm));
    for (int r = 0; r < REPS && !st; r++) {
        st = tf_runtime_clear_grads(rt);
        TRY(mul_once(e, s, x, c, seed, (int)count, &secs[r]));
    }
    if (!st) {
        char metric[64];
        snprintf(metric, sizeof metric, "mul_%lld_ns", (long long)n);
        tf_bench_figure("growth", metric, 1e9 * tf_bench_median(secs, REPS), "ns");
    }
    tf_eager_release(x);
    tf_eager_release(c);
    tf_eager_release(seed);
    return st;
}

/* The matmul workload's step (loss = sum(A B), backward) in f32 at size n. */
static tf_status matmul_once(tf_engine *e, tf_runtime *rt, tf_session *s, tf_eager *a,
                             tf_eager *b, double *seconds)
{
    tf_eager *ab = NULL, *loss = NULL;
    double t0 = tf_bench_now();
    tf_status st = tf_session_matmul(s, a, b, &ab);
    TRY(tf_session_reduce_sum(s, ab, NULL, 0, &loss));
    tf_eager_release(ab);
    TRY(tf_runtime_clear_grads(rt));
    TRY(tf_eager_backward(loss, e));
    tf_eager_release(loss);
    TRY(tf_engine_synchronize(e));
    *seconds = tf_bench_now() - t0;
    return st;
}

static tf_status matmul_size(tf_engine *e, tf_runtime *rt, tf_session *s, int64_t n)
{
    const int64_t shape[2] = {n, n};
    tf_eager *a = NULL, *b = NULL;
    tf_status st = tf_bench_random(s, TF_F32, 2, shape, 0, 1, 63, 1, &a);
    TRY(tf_bench_random(s, TF_F32, 2, shape, 0, 1, 64, 1, &b));
    double secs[REPS], warm = 0;
    TRY(matmul_once(e, rt, s, a, b, &warm));
    for (int r = 0; r < REPS && !st; r++)
        st = matmul_once(e, rt, s, a, b, &secs[r]);
    if (!st) {
        char metric[64];
        snprintf(metric, sizeof metric, "matmul_%lld_gflops", (long long)n);
        double flops = 6.0 * (double)n * (double)n * (double)n;
        tf_bench_figure("growth", metric, flops / tf_bench_median(secs, REPS) / 1e9, "GFLOP/s");
    }
    tf_eager_release(a);
    tf_eager_release(b);
    return st;
}

tf_status tf_bench_growth(tf_engine *e, tf_runtime *rt, tf_session *s, int quick)
{
    tf_status st = TF_OK;
    for (int64_t n = 1; n <= ((int64_t)1 << (quick ? 10 : 22)) && !st; n *= 4)
        st = mul_size(e, rt, s, n);
    for (int64_t n = 16; n <= (quick ? 64 : 2048) && !st; n *= 2)
        st = matmul_size(e, rt, s, n);
    return st;
}
