/*
 * bench_models.h - the real-model workloads of `tenferro bench`
 * (bench_models.c): transformer (a pre-norm transformer block's training step
 * with AdamW) and svd_grad (the backward of a weighted sum of singular values),
 * exactly as ../shared/BENCHMARKS.md specifies them. Both print their figure
 * lines on stdout as the other workloads do; docs/performance.md has them
 * beside PyTorch's (bench/torch_bench.py).
 */
#ifndef TF_BENCH_MODELS_H
#define TF_BENCH_MODELS_H

#include <tenferro/runtime.h>

/* The sizes of one run: the full ones, or tiny ones for --quick. */
typedef struct tf_bench_model_sizes {
    int reps;                         /* timed repetitions after one warm-up */
    int steps;                        /* transformer steps timed together */
    int64_t batch, seq, model, heads; /* x, y: [batch, seq, model]; heads divide model */
    int64_t ffn;                      /* the feed-forward width */
    int64_t svd_n;                    /* svd_grad: A is [n, n] */
} tf_bench_model_sizes;

extern const tf_bench_model_sizes tf_bench_models_full, tf_bench_models_quick;

/* transformer: `transformer step <ms> ms` on e through s (rt: s's runtime). */
tf_status tf_bench_transformer(tf_engine *e, tf_runtime *rt, tf_session *s,
                               const tf_bench_model_sizes *z);

/* svd_grad: `svd_grad fwd_bwd <ms> ms`; loads and installs the linalg module in rt. */
tf_status tf_bench_svd_grad(tf_engine *e, tf_runtime *rt, tf_session *s,
                            const tf_bench_model_sizes *z);

#endif /* TF_BENCH_MODELS_H */
