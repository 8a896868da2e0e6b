/*
 * cmd_bench.c - `tenferro bench`: the standard workloads of BENCHMARKS.md
 * (dispatch, mlp, elementwise, matmul; transformer and svd_grad in
 * bench_models.c), run through the public API exactly as
 * an application would, on the engine the user picks; and extra workloads
 * run only when named (gemm, elementwise_f32, sized for a GPU; growth in
 * bench_growth.c; the training and einsum ones).
 *
 * Every timed section ends with tf_engine_synchronize, so that on an
 * asynchronous engine (Vulkan) the clock stops when the work is done, not
 * when it is queued; on the CPU engine that call returns at once.
 *
 * stdout carries only figure lines, `<workload> <metric> <value> <unit>`;
 * everything else (engine, driver, notes) goes to stderr. Each figure is the
 * median of the timed repetitions that follow one untimed warm-up (elementwise:
 * warm-up repetitions until they took half a second). Besides
 * the specified figures each workload reports its peak resident memory
 * (`<workload> peak_rss <MiB> MiB`, from the kernel's VmHWM, reset before the
 * workload) and mlp its growth in resident memory between steps 10 and 50 of
 * the warm-up run (`mlp rss_growth <MiB> MiB`). See docs/performance.md.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tenferro/ops.h>
#include <tenferro/tenferro.h>

#include "bench_einsum.h"
#include "bench_growth.h"
#include "bench_models.h"
#include "bench_train.h"
#include "bench_util.h"
#include "cli.h"

typedef struct bench_options {
    const char *engine;
    int threads;
    int quick;
    int64_t gemm_n; /* --gemm-n; 0: the size of the mode */
    tf_defer_mode defer; /* --defer; TF_DEFER_AUTO, a session's default */
} bench_options;

/* Sizes and repetitions of one run: the specified ones, or tiny ones for --quick. */
typedef struct bench_sizes {
    int reps;           /* timed repetitions (after one warm-up) */
    int dispatch_pairs; /* y = y*c; y = y + x pairs */
    int mlp_steps;      /* steps timed together */
    int64_t mlp_batch, mlp_in, mlp_hidden, mlp_out;
    int64_t elementwise_n;
    double elementwise_warm_s; /* its warm-up: repetitions until they took this long */
    int64_t matmul_f64_n, matmul_f32_n;
    int matmul_reps; /* matmul's timed repetitions: one f64 step takes only ~10 ms */
    /* the extra workloads */
    int64_t gemm_n;    /* f32 [n,n] x [n,n] */
    int gemm_products; /* products per timed repetition */
    int64_t elementwise_f32_n;
    int64_t complex_n, complex_matmul_n; /* c128 elementwise elements, matmul [n,n] */
} bench_sizes;

static const bench_sizes k_full = {
    5, 5000, 50, 64, 784, 256, 10, 1 << 22, 0.5, 512, 1024, 15, 4096, 10, (int64_t)1 << 26, 1 << 21,
    512};
static const bench_sizes k_quick = {1, 50, 12, 4,  8, 6, 3, 1 << 10, 0, 16, 16, 1, 16, 2, 1 << 10,
                                    1 << 10, 16};

typedef struct bench {
    tf_engine *engine;
    tf_runtime *rt;
    tf_session *s;
    const bench_sizes *z;
    int quick; /* the training workloads' sizes (bench_train.h) */
} bench;

/* The first failing call's status wins; later calls are skipped. */
/* Waits for the engine's queued work: called before every clock stop. */
static tf_status finish(bench *b)
{
    return tf_engine_synchronize(b->engine);
}

/* ---- inputs ------------------------------------------------------------- */

/* A constant of the session's engine, uniform in [lo, hi), from a fixed seed. */
static tf_status random_constant(bench *b, tf_dtype dtype, size_t rank, const int64_t *shape,
                                 double lo, double hi, uint64_t seed, tf_eager **out)
{
    return tf_bench_random(b->s, dtype, rank, shape, lo, hi, seed, 0, out);
}

/* The same as a trainable variable. */
static tf_status random_variable(bench *b, tf_dtype dtype, size_t rank, const int64_t *shape,
                                 double lo, double hi, uint64_t seed, tf_eager **out)
{
    return tf_bench_random(b->s, dtype, rank, shape, lo, hi, seed, 1, out);
}

/* ---- figures -------------------------------------------------------------- */

static void figure(const char *workload, const char *metric, double value, const char *unit)
{
    tf_bench_figure(workload, metric, value, unit);
}

static void peak_rss_figure(const char *workload)
{
    double mib = tf_bench_peak_rss_mib();
    if (mib >= 0)
        figure(workload, "peak_rss", mib, "MiB");
    else
        fprintf(stderr, "bench: %s: peak resident memory unavailable\n", workload);
}

/* ---- dispatch --------------------------------------------------------------- */

/*
 * One repetition: `pairs` pairs of tiny tracked ops, then backward. The
 * backward time includes releasing the graph, as PyTorch's backward frees its
 * graph as it goes.
 */
static tf_status dispatch_once(bench *b, tf_eager *x, tf_eager *c, double *fwd, double *bwd)
{
    tf_status st = tf_runtime_clear_grads(b->rt);
    tf_eager *y = x, *loss = NULL;
    tf_eager_retain(x);
    double t0 = tf_bench_now();
    for (int i = 0; i < b->z->dispatch_pairs && !st; i++) {
        tf_eager *a = NULL;
        st = tf_session_mul(b->s, y, c, &a);
        tf_eager_release(y);
        y = NULL;
        TRY(tf_session_add(b->s, a, x, &y));
        tf_eager_release(a);
    }
    TRY(tf_session_reduce_sum(b->s, y, NULL, 0, &loss));
    tf_eager_release(y);
    TRY(finish(b));
    double t1 = tf_bench_now();
    TRY(tf_eager_backward(loss, b->engine));
    tf_eager_release(loss);
    TRY(finish(b));
    double t2 = tf_bench_now();
    *fwd = t1 - t0;
    *bwd = t2 - t1;
    return st;
}

static tf_status run_dispatch(bench *b)
{
    const double xs[4] = {1, 2, 3, 4}, cs[4] = {0.5, 0.5, 0.5, 0.5};
    const int64_t shape[1] = {4};
    tf_tensor *xt = NULL, *ct = NULL;
    tf_eager *xc = NULL, *x = NULL, *c = NULL;
    /* uploaded through the session, so engines without host memory run it too */
    tf_status st = tf_tensor_from_host(TF_F64, 1, shape, xs, 4, &xt);
    TRY(tf_tensor_from_host(TF_F64, 1, shape, cs, 4, &ct));
    TRY(tf_session_constant_from_host(b->s, xt, &xc));
    TRY(tf_runtime_variable_from(b->rt, tf_eager_value(xc), &x));
    TRY(tf_session_constant_from_host(b->s, ct, &c));
    tf_eager_release(xc);
    tf_tensor_release(xt);
    tf_tensor_release(ct);
    double fwd[TF_BENCH_MAX_REPS], bwd[TF_BENCH_MAX_REPS], f, g;
    TRY(dispatch_once(b, x, c, &f, &g)); /* warm-up */
    for (int r = 0; r < b->z->reps && !st; r++)
        st = dispatch_once(b, x, c, &fwd[r], &bwd[r]);
    if (!st) {
        double ops = 2.0 * b->z->dispatch_pairs;
        figure("dispatch", "forward_per_op", 1e9 * tf_bench_median(fwd, b->z->reps) / ops, "ns");
        figure("dispatch", "backward_per_op", 1e9 * tf_bench_median(bwd, b->z->reps) / ops, "ns");
    }
    tf_eager_release(x);
    tf_eager_release(c);
    return st;
}

/* ---- mlp ------------------------------------------------------------------- */

enum {
    MLP_W1,
    MLP_B1,
    MLP_W2,
    MLP_B2,
    MLP_PARAMS
};

typedef struct mlp {
    tf_eager *x, *t;          /* inputs and targets (constants) */
    tf_eager *p[MLP_PARAMS];  /* W1, b1, W2, b2 (variables) */
    tf_eager *inv_batch, *lr; /* f32 scalars 1/64 and 0.01 */
} mlp;

/* loss = sum((O - T)^2) / batch with O = tanh(X W1 + b1) W2 + b2. */
static tf_status mlp_loss(bench *b, const mlp *m, tf_eager **loss)
{
    tf_eager *t[9] = {NULL};
    tf_status st = tf_session_matmul(b->s, m->x, m->p[MLP_W1], &t[0]);
    TRY(tf_session_add(b->s, t[0], m->p[MLP_B1], &t[1]));
    TRY(tf_session_tanh(b->s, t[1], &t[2]));
    TRY(tf_session_matmul(b->s, t[2], m->p[MLP_W2], &t[3]));
    TRY(tf_session_add(b->s, t[3], m->p[MLP_B2], &t[4]));
    TRY(tf_session_sub(b->s, t[4], m->t, &t[5]));
    TRY(tf_session_mul(b->s, t[5], t[5], &t[6]));
    TRY(tf_session_reduce_sum(b->s, t[6], NULL, 0, &t[7]));
    TRY(tf_session_mul(b->s, t[7], m->inv_batch, loss));
    for (int i = 0; i < 9; i++)
        tf_eager_release(t[i]);
    return st;
}

/* p = p - lr * grad(p) for every parameter, under no-grad. */
static tf_status mlp_update(bench *b, mlp *m)
{
    tf_scope guard;
    tf_status st = tf_scope_begin_no_grad(b->rt, &guard);
    if (st)
        return st;
    for (int i = 0; i < MLP_PARAMS && !st; i++) {
        tf_tensor *g = NULL;
        tf_eager *ge = NULL, *step = NULL, *next = NULL, *var = NULL;
        st = tf_eager_grad(m->p[i], &g);
        if (!st && !g)
            st = TF_ERR_RUNTIME_STATE; /* every parameter gets a gradient */
        TRY(tf_runtime_constant_from(b->rt, g, &ge));
        TRY(tf_session_mul(b->s, m->lr, ge, &step));
        TRY(tf_session_sub(b->s, m->p[i], step, &next));
        TRY(tf_runtime_variable_from(b->rt, tf_eager_value(next), &var));
        if (!st) {
            tf_eager_release(m->p[i]);
            m->p[i] = var;
        }
        tf_eager_release(next);
        tf_eager_release(step);
        tf_eager_release(ge);
        tf_tensor_release(g);
    }
    tf_scope_end(&guard);
    return st;
}

static tf_status mlp_step(bench *b, mlp *m)
{
    tf_eager *loss = NULL;
    tf_status st = mlp_loss(b, m, &loss);
    TRY(tf_runtime_clear_grads(b->rt));
    TRY(tf_eager_backward(loss, b->engine));
    tf_eager_release(loss);
    TRY(mlp_update(b, m));
    return st;
}

/*
 * `steps` steps; with rss != NULL, records resident memory after step
 * steps/5 and after the last (steps 10 and 50 of the full run).
 */
static tf_status mlp_run(bench *b, mlp *m, double *seconds, double rss[2])
{
    tf_status st = TF_OK;
    int steps = b->z->mlp_steps, early = steps / 5;
    double t0 = tf_bench_now();
    for (int i = 1; i <= steps && !st; i++) {
        st = mlp_step(b, m);
        if (rss && (i == early || i == steps))
            rss[i == steps] = tf_bench_rss_mib();
    }
    TRY(finish(b));
    *seconds = tf_bench_now() - t0;
    return st;
}

static tf_status mlp_init(bench *b, mlp *m)
{
    const bench_sizes *z = b->z;
    const int64_t xs[2] = {z->mlp_batch, z->mlp_in}, ts[2] = {z->mlp_batch, z->mlp_out};
    const int64_t w1[2] = {z->mlp_in, z->mlp_hidden}, w2[2] = {z->mlp_hidden, z->mlp_out};
    double s1 = sqrt(3.0 / (double)z->mlp_in), s2 = sqrt(3.0 / (double)z->mlp_hidden);
    tf_status st = random_constant(b, TF_F32, 2, xs, 0, 1, 11, &m->x);
    TRY(random_constant(b, TF_F32, 2, ts, 0, 1, 12, &m->t));
    TRY(random_variable(b, TF_F32, 2, w1, -s1, s1, 13, &m->p[MLP_W1]));
    TRY(random_variable(b, TF_F32, 1, &z->mlp_hidden, -0.1, 0.1, 14, &m->p[MLP_B1]));
    TRY(random_variable(b, TF_F32, 2, w2, -s2, s2, 15, &m->p[MLP_W2]));
    TRY(random_variable(b, TF_F32, 1, &z->mlp_out, -0.1, 0.1, 16, &m->p[MLP_B2]));
    TRY(tf_session_scalar(b->s, TF_F32, 1.0 / (double)z->mlp_batch, &m->inv_batch));
    TRY(tf_session_scalar(b->s, TF_F32, 0.01, &m->lr));
    return st;
}

static tf_status run_mlp(bench *b)
{
    mlp m;
    memset(&m, 0, sizeof m);
    tf_status st = mlp_init(b, &m);
    double secs[TF_BENCH_MAX_REPS], warm = 0, rss[2] = {-1, -1};
    TRY(mlp_run(b, &m, &warm, rss));
    for (int r = 0; r < b->z->reps && !st; r++)
        st = mlp_run(b, &m, &secs[r], NULL);
    if (!st) {
        figure("mlp", "step", 1e3 * tf_bench_median(secs, b->z->reps) / b->z->mlp_steps, "ms");
        if (rss[0] >= 0 && rss[1] >= 0)
            figure("mlp", "rss_growth", rss[1] - rss[0], "MiB");
        else
            fprintf(stderr, "bench: mlp: resident memory unavailable\n");
    }
    tf_eager *all[] = {m.x, m.t, m.p[0], m.p[1], m.p[2], m.p[3], m.inv_batch, m.lr};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tf_eager_release(all[i]);
    return st;
}

/* ---- elementwise --------------------------------------------------------------- */

/* The loss of a step: sum(v), or its real part for a complex v (a real loss, as
   PyTorch's complex autograd needs). Releases v. */
static tf_status real_sum(bench *b, tf_eager *v, tf_eager **loss)
{
    tf_eager *sum = NULL;
    tf_status st = tf_session_reduce_sum(b->s, v, NULL, 0, &sum);
    tf_eager_release(v);
    if (st || !tf_dtype_is_complex(tf_tensor_dtype(tf_eager_value(sum)))) {
        *loss = sum;
        return st;
    }
    st = tf_session_real(b->s, sum, loss);
    tf_eager_release(sum);
    return st;
}

static tf_status elementwise_once(bench *b, tf_eager *x, tf_eager *y, double *seconds)
{
    tf_eager *e = NULL, *ey = NULL, *sum = NULL, *loss = NULL;
    double t0 = tf_bench_now();
    tf_status st = tf_session_exp(b->s, x, &e);
    TRY(tf_session_mul(b->s, e, y, &ey));
    TRY(tf_session_add(b->s, ey, x, &sum));
    tf_eager_release(e);
    tf_eager_release(ey);
    if (sum)
        TRY(real_sum(b, sum, &loss));
    TRY(tf_runtime_clear_grads(b->rt));
    TRY(tf_eager_backward(loss, b->engine));
    tf_eager_release(loss);
    TRY(finish(b));
    *seconds = tf_bench_now() - t0;
    return st;
}

/* The elementwise work on n elements of one dtype, reported under `workload`. */
static tf_status elementwise_run(bench *b, const char *workload, const char *metric,
                                 tf_dtype dtype, int64_t n)
{
    tf_eager *x = NULL, *y = NULL;
    tf_status st = random_variable(b, dtype, 1, &n, 0, 1, 21, &x);
    TRY(random_constant(b, dtype, 1, &n, 0, 1, 22, &y));
    /* Warm-up: repetitions until they took elementwise_warm_s (docs/performance.md,
       "Fresh memory"), as bench/limits.c and bench/torch_bench.py warm up */
    double secs[TF_BENCH_MAX_REPS], warm = 0, warmed = 0;
    do {
        TRY(elementwise_once(b, x, y, &warm));
        warmed += warm;
    } while (!st && warmed < b->z->elementwise_warm_s);
    for (int r = 0; r < b->z->reps && !st; r++)
        st = elementwise_once(b, x, y, &secs[r]);
    if (!st)
        figure(workload, metric, 1e3 * tf_bench_median(secs, b->z->reps), "ms");
    tf_eager_release(x);
    tf_eager_release(y);
    return st;
}

static tf_status run_elementwise(bench *b)
{
    return elementwise_run(b, "elementwise", "fwd_bwd", TF_F64, b->z->elementwise_n);
}

/* Extra: the same work in f32 on 2^26 elements, where a GPU's bandwidth shows. */
static tf_status run_elementwise_f32(bench *b)
{
    return elementwise_run(b, "elementwise_f32", "fwd_bwd", TF_F32, b->z->elementwise_f32_n);
}

/* ---- matmul ------------------------------------------------------------------ */

static tf_status matmul_once(bench *b, tf_eager *a, tf_eager *c, double *seconds)
{
    tf_eager *ab = NULL, *loss = NULL;
    double t0 = tf_bench_now();
    tf_status st = tf_session_matmul(b->s, a, c, &ab);
    if (ab)
        TRY(real_sum(b, ab, &loss));
    TRY(tf_runtime_clear_grads(b->rt));
    TRY(tf_eager_backward(loss, b->engine));
    tf_eager_release(loss);
    TRY(finish(b));
    *seconds = tf_bench_now() - t0;
    return st;
}

static tf_status matmul_size(bench *b, const char *workload, tf_dtype dtype, int64_t n)
{
    tf_eager *a = NULL, *c = NULL;
    const int64_t shape[2] = {n, n};
    tf_status st = random_variable(b, dtype, 2, shape, 0, 1, 31, &a);
    TRY(random_variable(b, dtype, 2, shape, 0, 1, 32, &c));
    double secs[TF_BENCH_MAX_REPS], warm;
    TRY(matmul_once(b, a, c, &warm));
    for (int r = 0; r < b->z->matmul_reps && !st; r++)
        st = matmul_once(b, a, c, &secs[r]);
    if (!st) {
        char metric[64];
        snprintf(metric, sizeof metric, "%s_%lld_fwd_bwd_gflops", tf_dtype_name(dtype),
                 (long long)n);
        /* real flops: a complex multiply-add is 4 multiplies and 4 adds */
        double flops = (tf_dtype_is_complex(dtype) ? 4.0 : 1.0) * 3.0 * 2.0 * (double)n *
                       (double)n * (double)n;
        figure(workload, metric, flops / tf_bench_median(secs, b->z->matmul_reps) / 1e9, "GFLOP/s");
    }
    tf_eager_release(a);
    tf_eager_release(c);
    return st;
}

static tf_status run_matmul(bench *b)
{
    tf_status st = matmul_size(b, "matmul", TF_F64, b->z->matmul_f64_n);
    TRY(matmul_size(b, "matmul", TF_F32, b->z->matmul_f32_n));
    return st;
}

/* Extra: the matmul and elementwise steps in c128 (a real loss: the real part
   of the sum), beside their f64 figures (docs/complex.md, "Speed"). */
static tf_status run_complex(bench *b)
{
    tf_status st = matmul_size(b, "complex", TF_C128, b->z->complex_matmul_n);
    TRY(elementwise_run(b, "complex", "elementwise_fwd_bwd", TF_C128, b->z->complex_n));
    return st;
}

/* ---- gemm (extra) -------------------------------------------------------------- */

/*
 * One repetition: `gemm_products` untracked products C = A·B (DOT_GENERAL,
 * contracting A's axis 1 with B's axis 0), each result released at once,
 * then one wait for all of them.
 */
static tf_status gemm_once(bench *b, tf_eager *a, tf_eager *c, double *seconds)
{
    tf_dot_dims dims;
    memset(&dims, 0, sizeof dims);
    dims.n_contracting = 1;
    dims.lhs_contracting[0] = 1;
    dims.rhs_contracting[0] = 0;
    tf_status st = TF_OK;
    double t0 = tf_bench_now();
    for (int i = 0; i < b->z->gemm_products && !st; i++) {
        tf_eager *ab = NULL;
        st = tf_session_dot_general(b->s, a, c, &dims, &ab);
        tf_eager_release(ab);
    }
    TRY(finish(b));
    *seconds = tf_bench_now() - t0;
    return st;
}

static tf_status run_gemm(bench *b)
{
    const int64_t n = b->z->gemm_n, shape[2] = {n, n};
    tf_eager *a = NULL, *c = NULL;
    tf_status st = random_constant(b, TF_F32, 2, shape, 0, 1, 41, &a);
    TRY(random_constant(b, TF_F32, 2, shape, 0, 1, 42, &c));
    double secs[TF_BENCH_MAX_REPS], warm;
    TRY(gemm_once(b, a, c, &warm));
    for (int r = 0; r < b->z->reps && !st; r++)
        st = gemm_once(b, a, c, &secs[r]);
    if (!st) {
        char metric[64];
        snprintf(metric, sizeof metric, "f32_%lld_tflops", (long long)n);
        double flops = 2.0 * (double)n * (double)n * (double)n * b->z->gemm_products;
        figure("gemm", metric, flops / tf_bench_median(secs, b->z->reps) / 1e12, "TFLOP/s");
    }
    tf_eager_release(a);
    tf_eager_release(c);
    return st;
}

/* ---- real models (bench_models.c) ---------------------------------------------- */

static const tf_bench_model_sizes *model_sizes(const bench *b)
{
    return b->quick ? &tf_bench_models_quick : &tf_bench_models_full;
}

static tf_status run_transformer(bench *b)
{
    return tf_bench_transformer(b->engine, b->rt, b->s, model_sizes(b));
}

static tf_status run_svd_grad(bench *b)
{
    return tf_bench_svd_grad(b->engine, b->rt, b->s, model_sizes(b));
}

static tf_status run_growth(bench *b)
{
    return tf_bench_growth(b->engine, b->rt, b->s, b->quick);
}

/* ---- training (bench_train.c, bench_ckpt.c) -------------------------------------- */

static tf_status run_dp(bench *b)
{
    return tf_bench_dp(b->engine, b->rt, b->s,
                       b->quick ? &tf_bench_train_quick : &tf_bench_train_full);
}

static tf_status run_checkpoint(bench *b)
{
    return tf_bench_checkpoint(b->engine, b->rt, b->s,
                               b->quick ? &tf_bench_train_quick : &tf_bench_train_full);
}

/* ---- einsum (bench_einsum.c) ------------------------------------------------------ */

static tf_status run_einsum_path(bench *b)
{
    return tf_bench_einsum_path(b->engine, b->rt, b->s, b->quick);
}

static tf_status run_einsum_tn(bench *b)
{
    return tf_bench_einsum_tn(b->engine, b->rt, b->s, b->quick);
}

/* ---- driver ----------------------------------------------------------------- */

typedef struct workload {
    const char *name;
    tf_status (*run)(bench *b);
    int standard; /* run when no workload is named */
} workload;

static const workload k_workloads[] = {
    {"dispatch", run_dispatch, 1},
    {"mlp", run_mlp, 1},
    {"elementwise", run_elementwise, 1},
    {"matmul", run_matmul, 1},
    {"transformer", run_transformer, 1},
    {"svd_grad", run_svd_grad, 1},
    {"gemm", run_gemm, 0},
    {"elementwise_f32", run_elementwise_f32, 0},
    {"complex", run_complex, 0},
    {"growth", run_growth, 0},
    {"dp", run_dp, 0},
    {"checkpoint", run_checkpoint, 0},
    {"einsum_path", run_einsum_path, 0},
    {"einsum_tn", run_einsum_tn, 0},
};
#define N_WORKLOADS (sizeof k_workloads / sizeof k_workloads[0])

/* The names of the workloads that are (standard 1) or are not standard, space-separated. */
static void print_names(FILE *f, int standard)
{
    for (size_t w = 0; w < N_WORKLOADS; w++)
        if (k_workloads[w].standard == standard)
            fprintf(f, " %s", k_workloads[w].name);
}

static void bench_usage(void)
{
    fprintf(stderr, "usage: tenferro bench [--engine NAME] [--threads N] [--quick] [--gemm-n N] "
                    "[--defer off|auto|always] [WORKLOAD ...]\n"
                    "       tenferro bench --list   (every workload, one a line: NAME standard|"
                    "extra)\n"
                    "standard workloads (the default):");
    print_names(stderr, 1);
    fprintf(stderr, "\nextra workloads (run only when named; dp under mpirun, "
                    "docs/performance.md):");
    print_names(stderr, 0);
    fprintf(stderr, "\n");
}

/* `tenferro bench --list`: what bench/run.sh reads instead of naming the workloads itself. */
static void bench_list(void)
{
    for (size_t w = 0; w < N_WORKLOADS; w++)
        printf("%s %s\n", k_workloads[w].name, k_workloads[w].standard ? "standard" : "extra");
}

/* Reads a whole decimal number in [1, max] into *out; returns 0 if `text` is not one. */
static int parse_size(const char *text, int64_t max, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end != '\0' || v < 1 || v > max)
        return 0;
    *out = v;
    return 1;
}

/* Parses options and marks the selected workloads; returns 2 on a usage error. */
static int bench_parse(int argc, char **argv, bench_options *o, int selected[N_WORKLOADS])
{
    int any = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--engine") == 0 && v) {
            o->engine = v;
            i++;
        } else if (strcmp(a, "--threads") == 0 && v &&
                   tf_cli_parse_int(v, 0, TF_CLI_MAX_THREADS, &o->threads) == 0) {
            i++;
        } else if (strcmp(a, "--quick") == 0) {
            o->quick = 1;
        } else if (strcmp(a, "--gemm-n") == 0 && v && parse_size(v, 65536, &o->gemm_n)) {
            i++;
        } else if (strcmp(a, "--defer") == 0 && v &&
                   (!strcmp(v, "off") || !strcmp(v, "auto") || !strcmp(v, "always"))) {
            o->defer = !strcmp(v, "off") ? TF_DEFER_OFF
                       : !strcmp(v, "auto") ? TF_DEFER_AUTO : TF_DEFER_ALWAYS;
            i++;
        } else {
            size_t w = 0;
            while (w < N_WORKLOADS && strcmp(a, k_workloads[w].name) != 0)
                w++;
            if (w == N_WORKLOADS) {
                fprintf(stderr, "tenferro bench: unknown option or workload '%s'\n", a);
                bench_usage();
                return 2;
            }
            selected[w] = 1;
            any = 1;
        }
    }
    for (size_t w = 0; w < N_WORKLOADS && !any; w++)
        selected[w] = k_workloads[w].standard;
    return 0;
}

/* Says on stderr what runs: engine, threads, device and driver (OpenBLAS's kernel). */
static void describe(const bench_options *o, tf_engine *engine)
{
    static const char *const defer[] = {"off", "auto", "always"};
    fprintf(stderr, "bench: engine '%s', threads %d%s%s, deferred chains %s\n",
            tf_engine_name(engine), o->threads, o->threads ? "" : " (engine default)",
            o->quick ? ", quick mode (tiny sizes)" : "", defer[o->defer]);
    tf_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = (uint32_t)sizeof info;
    if (tf_plugin_device_info(tf_engine_get_plugin(engine), 0, &info) == TF_OK)
        fprintf(stderr, "bench: device: %s; driver: %s\n", info.name,
                info.driver[0] ? info.driver : "(none)");
}

static tf_status run_selected(const bench_options *o, const int selected[N_WORKLOADS])
{
    bench_sizes z = o->quick ? k_quick : k_full;
    if (o->gemm_n)
        z.gemm_n = o->gemm_n;
    bench b = {NULL, NULL, NULL, &z, o->quick};
    tf_status st = tf_cli_open_engine(o->engine, o->threads, &b.engine);
    TRY(tf_runtime_create(&b.rt));
    TRY(tf_session_begin(b.rt, b.engine, &b.s));
    TRY(tf_session_set_defer(b.s, o->defer));
    if (!st)
        describe(o, b.engine);
    for (size_t w = 0; w < N_WORKLOADS && !st; w++) {
        if (!selected[w])
            continue;
        tf_bench_peak_rss_reset();
        double t0 = tf_bench_now();
        st = k_workloads[w].run(&b);
        if (!st) {
            peak_rss_figure(k_workloads[w].name);
            fprintf(stderr, "bench: %s took %.2f s\n", k_workloads[w].name, tf_bench_now() - t0);
        } else {
            fprintf(stderr, "tenferro bench: %s failed\n", k_workloads[w].name);
        }
    }
    tf_session_end(b.s);
    tf_runtime_release(b.rt);
    tf_engine_destroy(b.engine);
    return st;
}

int tf_cli_bench(int argc, char **argv)
{
    bench_options o = {NULL, 0, 0, 0, TF_DEFER_AUTO}; /* engine NULL: the configured one */
    int selected[N_WORKLOADS] = {0};
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        bench_list();
        return 0;
    }
    int rc = bench_parse(argc, argv, &o, selected);
    if (rc)
        return rc;
    tf_status st = run_selected(&o, selected);
    if (st) {
        const char *cause = tf_error_cause();
        fprintf(stderr, "tenferro bench: %s%s%s\n", tf_error_message(), cause[0] ? ": " : "",
                cause);
        return 1;
    }
    return 0;
}
