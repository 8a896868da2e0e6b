/*
 * bench_train.h - the training workloads of `tenferro bench` (bench_train.c:
 * dp; bench_ckpt.c: checkpoint), run only when named.
 */
#ifndef TF_BENCH_TRAIN_H
#define TF_BENCH_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include <tenferro/runtime.h>

/* The sizes of one run: the full ones, or tiny ones for --quick. */
typedef struct tf_bench_train_sizes {
    int reps;                          /* timed repetitions after one warm-up */
    int steps;                         /* dp steps timed together */
    int64_t batch, in, hidden, out;    /* the mlp model, a batch per rank */
    size_t big_bytes;                  /* the one-bucket model of dp */
    int64_t ck_rows, ck_cols;          /* checkpoint: each matrix */
    int ck_matrices, ck_vectors;       /* how many; each vector ck_rows * ck_cols / 2 */
} tf_bench_train_sizes;

extern const tf_bench_train_sizes tf_bench_train_full, tf_bench_train_quick;

/* The dp workload (run it under mpirun; rank 0 prints). */
tf_status tf_bench_dp(tf_engine *e, tf_runtime *rt, tf_session *s, const tf_bench_train_sizes *z);

/* The checkpoint workload. */
tf_status tf_bench_checkpoint(tf_engine *e, tf_runtime *rt, tf_session *s,
                              const tf_bench_train_sizes *z);

#endif /* TF_BENCH_TRAIN_H */
