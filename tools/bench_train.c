/*
 * bench_train.c - the training workloads of `tenferro bench`, run only when
 * named (docs/performance.md, "Training"):
 *
 *   dp          the data-parallel step of the mlp workload's model (f32,
 *               784-256-10, a batch of 64 per rank) with SGD and tf_dp_step,
 *               and the bucketed gradient all-reduce alone (tf_dp_average_grads)
 *               on that model's gradients (one 0.8 MB bucket) and on a model of
 *               25 MiB (one default bucket), as time and bandwidth. Run it under
 *               `mpirun -np N` (rank 0 prints); bench/dp_allreduce.c times raw
 *               MPI_Allreduce of the same bytes beside it.
 *   checkpoint  tf_checkpoint_save and tf_checkpoint_load of 64 MiB of f32
 *               matrices and vectors (reordered to row-major on the way) against
 *               a plain write() and read() of the same bytes, in the same folder
 *               (TMPDIR, default /tmp), as throughput; and the load into the
 *               engine's memory.
 *
 * Figures as everywhere in the bench: `<workload> <metric> <value> <unit>`,
 * the median of the timed repetitions after one warm-up.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, mkstemp */

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tenferro/checkpoint.h>
#include <tenferro/dp.h>
#include <tenferro/ops.h>
#include <tenferro/tenferro.h>

#include "bench_train.h"
#include "bench_util.h"

static int g_rank; /* only rank 0 prints */

static void figure(const char *workload, const char *metric, double value, const char *unit)
{
    if (g_rank == 0)
        tf_bench_figure(workload, metric, value, unit);
}

/* A variable of f32 values uniform in [lo, hi) from a fixed seed, in the engine's memory. */
static tf_status f32_tensor(tf_session *s, size_t rank, const int64_t *shape, double lo,
                            double hi, uint64_t seed, int variable, tf_eager **out)
{
    return tf_bench_random(s, TF_F32, rank, shape, lo, hi, seed, variable, out);
}

/* ---- dp ---- */

enum { W1, B1, W2, B2, NP };

typedef struct mlp {
    tf_eager *x, *t, *inv_batch;
    tf_optim *opt;
} mlp;

static tf_status mlp_make(tf_session *s, const tf_bench_train_sizes *z, mlp *m)
{
    const int64_t xs[2] = {z->batch, z->in}, ts[2] = {z->batch, z->out};
    const int64_t shapes[NP][2] = {{z->in, z->hidden}, {z->hidden, 1}, {z->hidden, z->out},
                                   {z->out, 1}};
    tf_eager *p[NP] = {NULL};
    tf_status st = f32_tensor(s, 2, xs, 0, 1, 11 + (uint64_t)g_rank, 0, &m->x);
    TRY(f32_tensor(s, 2, ts, 0, 1, 12 + (uint64_t)g_rank, 0, &m->t));
    for (int i = 0; i < NP; i++) {
        double a = i % 2 ? 0.1 : sqrt(3.0 / (double)shapes[i][0]);
        TRY(f32_tensor(s, i % 2 ? 1 : 2, shapes[i], -a, a, 13 + (uint64_t)i, 1, &p[i]));
    }
    TRY(tf_session_scalar(s, TF_F32, 1.0 / (double)z->batch, &m->inv_batch));
    TRY(tf_optim_create(tf_session_runtime(s), TF_OPTIM_SGD, &m->opt));
    tf_optim_options o;
    tf_optim_options_default(TF_OPTIM_SGD, &o);
    o.lr = 0.01;
    TRY(tf_optim_add_group(m->opt, &o, p, NP));
    for (int i = 0; i < NP; i++)
        tf_eager_release(p[i]);
    return st;
}

static void mlp_free(mlp *m)
{
    tf_eager_release(m->x);
    tf_eager_release(m->t);
    tf_eager_release(m->inv_batch);
    tf_optim_destroy(m->opt);
}

/* backward of sum((tanh(X W1 + b1) W2 + b2 - T)^2) / batch (the mlp workload's loss). */
static tf_status mlp_backward(tf_session *s, tf_engine *e, const mlp *m)
{
    tf_eager *v[9] = {NULL};
    tf_status st = tf_session_matmul(s, m->x, tf_optim_param(m->opt, W1), &v[0]);
    TRY(tf_session_add(s, v[0], tf_optim_param(m->opt, B1), &v[1]));
    TRY(tf_session_tanh(s, v[1], &v[2]));
    TRY(tf_session_matmul(s, v[2], tf_optim_param(m->opt, W2), &v[3]));
    TRY(tf_session_add(s, v[3], tf_optim_param(m->opt, B2), &v[4]));
    TRY(tf_session_sub(s, v[4], m->t, &v[5]));
    TRY(tf_session_mul(s, v[5], v[5], &v[6]));
    TRY(tf_session_reduce_sum(s, v[6], NULL, 0, &v[7]));
    TRY(tf_session_mul(s, v[7], m->inv_batch, &v[8]));
    TRY(tf_eager_backward(v[8], e));
    for (int i = 0; i < 9; i++)
        tf_eager_release(v[i]);
    return st;
}

/* Steps timed together (one repetition): forward, backward, tf_dp_step. */
static tf_status dp_steps(tf_session *s, tf_engine *e, tf_dp *dp, mlp *m, int steps,
                          double *seconds)
{
    tf_status st = TF_OK;
    double t0 = tf_bench_now();
    for (int i = 0; i < steps && !st; i++) {
        st = mlp_backward(s, e, m);
        TRY(tf_dp_step(dp, m->opt));
    }
    TRY(tf_engine_synchronize(e));
    *seconds = (tf_bench_now() - t0) / steps;
    return st;
}

/* The average of opt's current gradients, timed alone; *bytes: what one bucket pass moves. */
static tf_status average_once(tf_dp *dp, tf_optim *opt, double *seconds)
{
    size_t n = tf_optim_param_count(opt);
    tf_tensor *g[8] = {NULL};
    double t0 = tf_bench_now();
    tf_status st = tf_dp_average_grads(dp, opt, g, n);
    *seconds = tf_bench_now() - t0;
    for (size_t i = 0; i < n; i++)
        tf_tensor_release(g[i]);
    return st;
}

static size_t grad_bytes(const tf_optim *opt)
{
    size_t b = 0;
    for (size_t i = 0; i < tf_optim_param_count(opt); i++)
        b += 4 * tf_tensor_numel(tf_eager_value(tf_optim_param(opt, i)));
    return b;
}

/* The bucket all-reduce of the gradients opt's parameters hold now, as `metric`. */
static tf_status bucket_figures(tf_dp *dp, tf_optim *opt, int reps, const char *metric)
{
    double secs[TF_BENCH_MAX_REPS], warm;
    tf_status st = average_once(dp, opt, &warm);
    for (int r = 0; r < reps && !st; r++)
        st = average_once(dp, opt, &secs[r]);
    if (st)
        return st;
    double t = tf_bench_median(secs, reps), bytes = (double)grad_bytes(opt);
    char name[64];
    snprintf(name, sizeof name, "%s_ms", metric);
    figure("dp", name, 1e3 * t, "ms");
    snprintf(name, sizeof name, "%s_gbps", metric);
    figure("dp", name, bytes / t / 1e9, "GB/s");
    snprintf(name, sizeof name, "%s_bytes", metric);
    figure("dp", name, bytes, "B");
    return TF_OK;
}

/* A model of `bytes` of f32 gradients (one default bucket), its slots filled by a backward. */
static tf_status big_model(tf_session *s, tf_engine *e, size_t bytes, tf_optim **out)
{
    int64_t n = (int64_t)(bytes / 4 / 4);
    const int64_t shape[1] = {n};
    tf_eager *p[4] = {NULL}, *sum = NULL, *part = NULL, *next = NULL;
    tf_status st = TF_OK;
    for (int i = 0; i < 4; i++) {
        TRY(f32_tensor(s, 1, shape, -1, 1, 40 + (uint64_t)i, 1, &p[i]));
        TRY(tf_session_reduce_sum_squares(s, p[i], NULL, 0, &part));
        if (!st && sum) {
            st = tf_session_add(s, sum, part, &next);
            tf_eager_release(sum);
            tf_eager_release(part);
            sum = next;
        } else if (!st) {
            sum = part;
        }
        part = next = NULL;
    }
    TRY(tf_eager_backward(sum, e));
    tf_eager_release(sum);
    TRY(tf_optim_create(tf_session_runtime(s), TF_OPTIM_SGD, out));
    tf_optim_options o;
    tf_optim_options_default(TF_OPTIM_SGD, &o);
    TRY(tf_optim_add_group(*out, &o, p, 4));
    for (int i = 0; i < 4; i++)
        tf_eager_release(p[i]);
    return st;
}

tf_status tf_bench_dp(tf_engine *e, tf_runtime *rt, tf_session *s, const tf_bench_train_sizes *z)
{
    tf_dp *dp = NULL;
    mlp m;
    memset(&m, 0, sizeof m);
    tf_status st = tf_dp_create(rt, e, &dp);
    if (st) {
        fprintf(stderr, "bench: dp: %s\n", tf_train_error_message());
        return st;
    }
    g_rank = tf_dp_rank(dp);
    if (g_rank == 0)
        fprintf(stderr, "bench: dp: %d ranks, batch %lld per rank\n", tf_dp_size(dp),
                (long long)z->batch);
    TRY(mlp_make(s, z, &m));
    TRY(tf_dp_broadcast_params(dp, m.opt));
    double secs[TF_BENCH_MAX_REPS], warm = 0;
    TRY(dp_steps(s, e, dp, &m, z->steps, &warm));
    for (int r = 0; r < z->reps && !st; r++)
        st = dp_steps(s, e, dp, &m, z->steps, &secs[r]);
    if (!st)
        figure("dp", "step", 1e3 * tf_bench_median(secs, z->reps), "ms");
    figure("dp", "ranks", tf_dp_size(dp), "");
    TRY(mlp_backward(s, e, &m)); /* the slots of the current parameters */
    TRY(bucket_figures(dp, m.opt, z->reps, "bucket_mlp"));
    tf_optim *big = NULL;
    TRY(big_model(s, e, z->big_bytes, &big));
    TRY(bucket_figures(dp, big, z->reps, "bucket_25mib"));
    if (st && tf_train_error_message()[0])
        fprintf(stderr, "bench: dp: %s\n", tf_train_error_message());
    tf_optim_destroy(big);
    mlp_free(&m);
    tf_dp_destroy(dp);
    g_rank = 0;
    return st;
}
