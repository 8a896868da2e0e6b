/*
 * bench_einsum.h - the einsum workloads of `tenferro bench` (bench_einsum.c):
 * einsum_path (path quality against NumPy and a randomized greedy) and einsum_tn
 * (an MPS-MPO-MPS expectation value and the four-index transformation, forward and
 * backward). Each prints its figure lines on stdout; `quick` shrinks the sizes.
 */
#ifndef TF_BENCH_EINSUM_H
#define TF_BENCH_EINSUM_H

#include <tenferro/runtime.h>

tf_status tf_bench_einsum_path(tf_engine *engine, tf_runtime *rt, tf_session *s, int quick);
tf_status tf_bench_einsum_tn(tf_engine *engine, tf_runtime *rt, tf_session *s, int quick);

#endif /* TF_BENCH_EINSUM_H */
