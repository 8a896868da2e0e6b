/*
 * bench_util.h - what `tenferro bench` needs besides the library: a clock, a
 * fixed-seed generator, medians and the kernel's resident-memory counters.
 */
#ifndef TF_BENCH_UTIL_H
#define TF_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* The most timed repetitions a workload runs. */
#define TF_BENCH_MAX_REPS 16

/* xorshift64*: the same sequence on every machine for one seed. */
typedef struct tf_bench_rng {
    uint64_t state;
} tf_bench_rng;

tf_bench_rng tf_bench_rng_seed(uint64_t seed);
/* Uniform in [0, 1) with 53 random bits. */
double tf_bench_rng_uniform(tf_bench_rng *rng);

/* Monotonic seconds. */
double tf_bench_now(void);

/* The median of n values (1 <= n <= TF_BENCH_MAX_REPS); v is left unchanged. */
double tf_bench_median(const double *v, int n);

/* Current resident memory (VmRSS) in MiB, or -1 when the kernel does not say. */
double tf_bench_rss_mib(void);

/*
 * Peak resident memory (VmHWM) in MiB since the last tf_bench_peak_rss_reset,
 * or since the process started where the kernel cannot reset it; falls back
 * on getrusage's ru_maxrss; -1 when neither is available.
 */
double tf_bench_peak_rss_mib(void);

/* Resets the peak to the current resident memory (writes 5 to /proc/self/clear_refs). */
void tf_bench_peak_rss_reset(void);

#endif /* TF_BENCH_UTIL_H */
