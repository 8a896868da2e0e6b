/*
 * bench_models.c - the real-model workloads of `tenferro bench`
 * (../shared/BENCHMARKS.md; bench/torch_bench.py runs the same in PyTorch):
 *
 *   transformer  f32. x, y [8, 128, 256] constants uniform in [-1, 1). One
 *                pre-norm block: a = layer_norm(x; g1, n1, eps 1e-5) over the
 *                model axis; q, k, v = a Wq + bq, a Wk + bk, a Wv + bv, split
 *                into 4 heads of 64; att = softmax(q k^T / 8 over the keys)
 *                v, heads joined; h = x + att Wo + bo; m = layer_norm(h; g2,
 *                n2); out = h + gelu(m W1 + b1) W2 + b2 (exact gelu, W1
 *                [256, 1024], W2 [1024, 256]). loss = mean((out - y)^2);
 *                clear grads; backward; AdamW (lr 1e-3, betas 0.9 / 0.999,
 *                eps 1e-8, weight decay 0.01; tenferro/optim.h) under
 *                no-grad. Weights uniform in +-1/sqrt(fan_in), biases 0, gains
 *                1. `transformer step <ms> ms`: 3 steps timed together / 3.
 *   svd_grad     f64. A [256, 256] variable uniform in [0, 1), w [256]
 *                constant uniform in [0, 1). loss = sum(S w), S the singular
 *                values of A (thin SVD, tenferro.linalg.svd); clear grads;
 *                backward. `svd_grad fwd_bwd <ms> ms`.
 *
 * Layout. Shapes are the row-major ones of BENCHMARKS.md read in tenferro's
 * column-major order, so x is [8, 128, 256] with the batch axis fastest; a
 * linear layer multiplies the [1024, 256] matrix of x's rows (a view) by its
 * weight, and the heads are the [8, 128, 64, 4] view of q, k and v (feature f
 * = d + 64 h, as PyTorch's view(8, 128, 4, 64) splits it). The arithmetic is
 * the workload's; only where each number sits in memory differs.
 *
 * Every timed section ends with tf_engine_synchronize; each figure is the
 * median of the timed repetitions after one warm-up, as in cmd_bench.c.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <tenferro/optim.h>
#include <tenferro/tenferro.h>

#include "bench_models.h"
#include "bench_util.h"

const tf_bench_model_sizes tf_bench_models_full = {5, 3, 8, 128, 256, 4, 1024, 256};
const tf_bench_model_sizes tf_bench_models_quick = {1, 2, 2, 4, 8, 2, 16, 8};

/* ---- transformer ---------------------------------------------------------------- */

enum { G1, N1, WQ, BQ, WK, BK, WV, BV, WO, BO, G2, N2, W1, B1, W2, B2, NP };

typedef struct block {
    const tf_bench_model_sizes *z;
    tf_session *s;
    tf_eager *x, *y;   /* [rows, model] views of the [batch, seq, model] constants */
    tf_eager *scale;   /* 1 / sqrt(head width), f32 scalar */
    tf_optim *opt;     /* AdamW, owns the parameters */
} block;

static tf_eager *param(const block *m, int i)
{
    return tf_optim_param(m->opt, (size_t)i);
}

/* Values the forward pass makes; released together after backward. */
typedef struct tape {
    tf_eager *v[40];
    int n;
} tape;

/* Keeps t (owned) on the tape and returns it (NULL stays NULL). */
static tf_eager *keep(tape *tp, tf_eager *t)
{
    if (t)
        tp->v[tp->n++] = t;
    return t;
}

static void tape_release(tape *tp)
{
    for (int i = 0; i < tp->n; i++)
        tf_eager_release(tp->v[i]);
    tp->n = 0;
}

/* a W + b for a [rows, in] matrix a. */
static tf_status linear(const block *m, tape *tp, tf_eager *a, int w, int b, tf_eager **out)
{
    tf_eager *p = NULL, *q = NULL;
    tf_status st = tf_session_matmul(m->s, a, param(m, w), &p);
    TRY(tf_session_add(m->s, keep(tp, p), param(m, b), &q));
    *out = keep(tp, q);
    return st;
}

/* The [batch, seq, width, heads] view of a [rows, model] matrix. */
static tf_status heads(const block *m, tape *tp, tf_eager *a, tf_eager **out)
{
    const tf_bench_model_sizes *z = m->z;
    const int64_t shape[4] = {z->batch, z->seq, z->model / z->heads, z->heads};
    tf_eager *r = NULL;
    tf_status st = tf_session_reshape(m->s, a, 4, shape, &r);
    *out = keep(tp, r);
    return st;
}

/*
 * att = softmax(q k^T * scale over the keys) v, heads joined: [rows, model].
 * dot_general's output axes are the lhs free ones, the rhs free ones, then the
 * batch pairs: the scores are [query, key, batch, head], att [query, d, batch,
 * head], joined as [batch, query, d, head] = [rows, model].
 */
static tf_status attention(const block *m, tape *tp, tf_eager *q, tf_eager *k, tf_eager *v,
                           tf_eager **out)
{
    const tf_bench_model_sizes *z = m->z;
    tf_dot_dims qk = {.n_contracting = 1, .n_batch = 2};
    qk.lhs_contracting[0] = qk.rhs_contracting[0] = 2; /* d */
    qk.lhs_batch[0] = qk.rhs_batch[0] = 0;             /* batch */
    qk.lhs_batch[1] = qk.rhs_batch[1] = 3;             /* head */
    tf_dot_dims pv = {.n_contracting = 1, .n_batch = 2};
    pv.lhs_contracting[0] = pv.rhs_contracting[0] = 1; /* key */
    pv.lhs_batch[0] = 2, pv.lhs_batch[1] = 3;
    pv.rhs_batch[0] = 0, pv.rhs_batch[1] = 3;
    const int join[4] = {2, 0, 1, 3};
    const int64_t rows[2] = {z->batch * z->seq, z->model};
    tf_eager *t[6] = {NULL};
    tf_status st = tf_session_dot_general(m->s, q, k, &qk, &t[0]);
    TRY(tf_session_mul(m->s, keep(tp, t[0]), m->scale, &t[1]));
    TRY(tf_session_softmax(m->s, keep(tp, t[1]), 1, &t[2]));
    TRY(tf_session_dot_general(m->s, keep(tp, t[2]), v, &pv, &t[3]));
    TRY(tf_session_transpose(m->s, keep(tp, t[3]), join, &t[4]));
    TRY(tf_session_reshape(m->s, keep(tp, t[4]), 2, rows, &t[5]));
    *out = keep(tp, t[5]);
    return st;
}

/* The block's loss; every intermediate value on tp. */
static tf_status block_loss(const block *m, tape *tp, tf_eager **loss)
{
    tf_session *s = m->s;
    tf_eager *a = NULL, *q = NULL, *k = NULL, *v = NULL, *q4 = NULL, *k4 = NULL, *v4 = NULL;
    tf_eager *att = NULL, *o = NULL, *h = NULL, *n2 = NULL, *f = NULL, *g = NULL, *f2 = NULL;
    tf_eager *out = NULL, *d = NULL, *sq = NULL, *l = NULL;
    tf_status st = tf_session_layer_norm(s, m->x, 1, param(m, G1), param(m, N1), 1e-5, &a);
    TRY(linear(m, tp, keep(tp, a), WQ, BQ, &q));
    TRY(linear(m, tp, a, WK, BK, &k));
    TRY(linear(m, tp, a, WV, BV, &v));
    TRY(heads(m, tp, q, &q4));
    TRY(heads(m, tp, k, &k4));
    TRY(heads(m, tp, v, &v4));
    TRY(attention(m, tp, q4, k4, v4, &att));
    TRY(linear(m, tp, att, WO, BO, &o));
    TRY(tf_session_add(s, m->x, o, &h));
    TRY(tf_session_layer_norm(s, keep(tp, h), 1, param(m, G2), param(m, N2), 1e-5, &n2));
    TRY(linear(m, tp, keep(tp, n2), W1, B1, &f));
    TRY(tf_session_gelu(s, f, &g));
    TRY(linear(m, tp, keep(tp, g), W2, B2, &f2));
    TRY(tf_session_add(s, h, f2, &out));
    TRY(tf_session_sub(s, keep(tp, out), m->y, &d));
    TRY(tf_session_mul(s, keep(tp, d), d, &sq));
    TRY(tf_session_reduce_mean(s, keep(tp, sq), NULL, 0, &l));
    *loss = l;
    return st;
}

/* One training step: loss, clear grads, backward, AdamW. With `value`, the
   loss is also read (host-memory engines only: untimed steps). */
static tf_status block_step(const block *m, tf_engine *e, tf_runtime *rt, float *value)
{
    tape tp = {.n = 0};
    tf_eager *loss = NULL;
    tf_status st = block_loss(m, &tp, &loss);
    tape_release(&tp); /* the tape keeps what backward needs */
    if (value)
        TRY(tf_tensor_copy_to_host(tf_eager_value(loss), TF_F32, value, 1));
    TRY(tf_runtime_clear_grads(rt));
    TRY(tf_eager_backward(loss, e));
    tf_eager_release(loss);
    TRY(tf_optim_step(m->opt, e));
    return st;
}

static tf_status block_params(block *m, tf_runtime *rt)
{
    const tf_bench_model_sizes *z = m->z;
    const int64_t d = z->model, f = z->ffn;
    /* in, out extents of each weight; a vector's extent in `out` (in 0) */
    const int64_t shape[NP][2] = {{0, d}, {0, d}, {d, d}, {0, d}, {d, d}, {0, d}, {d, d}, {0, d},
                                  {d, d}, {0, d}, {0, d}, {0, d}, {d, f}, {0, f}, {f, d}, {0, d}};
    tf_eager *p[NP] = {NULL};
    tf_status st = TF_OK;
    for (int i = 0; i < NP && !st; i++) {
        if (shape[i][0]) {
            double a = 1.0 / sqrt((double)shape[i][0]);
            st = tf_bench_random(m->s, TF_F32, 2, shape[i], -a, a, 100 + (uint64_t)i, 1, &p[i]);
            continue;
        }
        tf_eager *c = NULL; /* gains 1, biases 0 */
        st = tf_session_full(m->s, TF_F32, 1, &shape[i][1], i == G1 || i == G2 ? 1.0 : 0.0, &c);
        TRY(tf_runtime_variable_from(rt, tf_eager_value(c), &p[i]));
        tf_eager_release(c);
    }
    TRY(tf_optim_create(rt, TF_OPTIM_ADAMW, &m->opt));
    tf_optim_options o;
    tf_optim_options_default(TF_OPTIM_ADAMW, &o);
    o.lr = 1e-3, o.beta1 = 0.9, o.beta2 = 0.999, o.eps = 1e-8, o.weight_decay = 0.01;
    TRY(tf_optim_add_group(m->opt, &o, p, NP));
    for (int i = 0; i < NP; i++)
        tf_eager_release(p[i]);
    return st;
}

static tf_status block_make(block *m, tf_runtime *rt)
{
    const tf_bench_model_sizes *z = m->z;
    const int64_t xs[3] = {z->batch, z->seq, z->model}, rows[2] = {z->batch * z->seq, z->model};
    tf_eager *x = NULL, *y = NULL;
    tf_status st = tf_bench_random(m->s, TF_F32, 3, xs, -1, 1, 91, 0, &x);
    TRY(tf_bench_random(m->s, TF_F32, 3, xs, -1, 1, 92, 0, &y));
    TRY(tf_session_reshape(m->s, x, 2, rows, &m->x));
    TRY(tf_session_reshape(m->s, y, 2, rows, &m->y));
    tf_eager_release(x);
    tf_eager_release(y);
    TRY(tf_session_scalar(m->s, TF_F32, 1.0 / sqrt((double)(z->model / z->heads)), &m->scale));
    TRY(block_params(m, rt));
    return st;
}

tf_status tf_bench_transformer(tf_engine *e, tf_runtime *rt, tf_session *s,
                               const tf_bench_model_sizes *z)
{
    block m = {z, s, NULL, NULL, NULL, NULL};
    tf_status st = block_make(&m, rt);
    double secs[TF_BENCH_MAX_REPS];
    /* the warm-up's losses on stderr, for bench/check_transformer.py */
    const int host = tf_engine_uses_host_memory(e) != 0;
    for (int r = 0; r <= z->reps && !st; r++) { /* r = 0: the warm-up */
        double t0 = tf_bench_now();
        for (int i = 0; i < z->steps && !st; i++) {
            float loss = 0;
            st = block_step(&m, e, rt, r == 0 && host ? &loss : NULL);
            if (!st && r == 0 && host)
                fprintf(stderr, "bench: transformer loss at step %d: %.9g\n", i + 1, loss);
        }
        TRY(tf_engine_synchronize(e));
        if (r > 0)
            secs[r - 1] = tf_bench_now() - t0;
    }
    if (!st)
        tf_bench_figure("transformer", "step", 1e3 * tf_bench_median(secs, z->reps) / z->steps,
                        "ms");
    tf_eager_release(m.x);
    tf_eager_release(m.y);
    tf_eager_release(m.scale);
    tf_optim_destroy(m.opt);
    return st;
}

/* ---- svd_grad ----------------------------------------------------------------------- */

static tf_status svd_once(tf_session *s, tf_engine *e, tf_runtime *rt, tf_eager *a, tf_eager *w,
                          double *seconds)
{
    tf_eager *usv[3] = {NULL}, *sw = NULL, *loss = NULL;
    const tf_call_arg args[2] = {TF_ARG_TENSOR(a), TF_ARG_F64(0.0)};
    double t0 = tf_bench_now();
    tf_status st = tf_session_call(s, "tenferro.linalg.svd", args, 2, usv, 3);
    TRY(tf_session_mul(s, usv[1], w, &sw));
    TRY(tf_session_reduce_sum(s, sw, NULL, 0, &loss));
    for (int i = 0; i < 3; i++)
        tf_eager_release(usv[i]);
    tf_eager_release(sw);
    TRY(tf_runtime_clear_grads(rt));
    TRY(tf_eager_backward(loss, e));
    tf_eager_release(loss);
    TRY(tf_engine_synchronize(e));
    *seconds = tf_bench_now() - t0;
    return st;
}

tf_status tf_bench_svd_grad(tf_engine *e, tf_runtime *rt, tf_session *s,
                            const tf_bench_model_sizes *z)
{
    tf_extension_module *linalg = NULL;
    tf_epoch epoch;
    tf_status st = tf_extension_load("linalg", &linalg);
    TRY(tf_runtime_install_extension_module(rt, linalg, &epoch));
    const int64_t as[2] = {z->svd_n, z->svd_n};
    tf_eager *a = NULL, *w = NULL;
    TRY(tf_bench_random(s, TF_F64, 2, as, 0, 1, 51, 1, &a));
    TRY(tf_bench_random(s, TF_F64, 1, &z->svd_n, 0, 1, 52, 0, &w));
    double secs[TF_BENCH_MAX_REPS], warm = 0;
    TRY(svd_once(s, e, rt, a, w, &warm));
    for (int r = 0; r < z->reps && !st; r++)
        st = svd_once(s, e, rt, a, w, &secs[r]);
    if (!st)
        tf_bench_figure("svd_grad", "fwd_bwd", 1e3 * tf_bench_median(secs, z->reps), "ms");
    tf_eager_release(a);
    tf_eager_release(w);
    return st;
}
