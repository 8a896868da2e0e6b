/*
 * bench_growth.h - how cost grows with size (bench_growth.c): the extra
 * workload `growth` of `tenferro bench`, run only when named. bench/growth.py
 * runs it beside PyTorch's (bench/torch_bench.py growth) and draws the plot of
 * docs/performance.md.
 */
#ifndef TF_BENCH_GROWTH_H
#define TF_BENCH_GROWTH_H

#include <tenferro/runtime.h>

/*
 * Prints `growth mul_<n>_ns <ns> ns`, the time of one tracked f32 mul and its
 * backward (seeded with ones) on n elements, for n = 1, 4, 16, ... up to
 * 2^22 (2^10 with quick), and `growth matmul_<n>_gflops <x> GFLOP/s`, the
 * matmul workload's step in f32 counting 3 * 2 n^3 flops, for n = 16, 32,
 * ... 2048 (64 with quick).
 */
tf_status tf_bench_growth(tf_engine *e, tf_runtime *rt, tf_session *s, int quick);

#endif /* TF_BENCH_GROWTH_H */
