/*
 * bench_util.h - what the workloads of `tenferro bench` share: a clock, a
 * fixed-seed generator, medians, the kernel's resident-memory counters, figure
 * lines and random input tensors.
 */
#ifndef TF_BENCH_UTIL_H
#define TF_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <tenferro/runtime.h>

/* Runs `call` (assigning its status to the local `st`) only while st is TF_OK:
   the workloads' error chaining, so that a step after a failure is skipped and
   the first error is the one returned. */
#define TRY(call)        \
    do {                 \
        if (st == TF_OK) \
            st = (call); \
    } while (0)

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

/* Prints the figure line `<workload> <metric> <value> <unit>` on stdout, flushed. */
void tf_bench_figure(const char *workload, const char *metric, double value, const char *unit);

/*
 * A tensor of dtype (f32, f64, c64 or c128: both parts) and shape (rank entries, copied) in the memory
 * of s's engine, uniform in [lo, hi) from the generator seeded with `seed`: a
 * constant, or with `variable` a trainable variable of s's runtime. *out gets
 * a new reference on success. Errors: those of the calls it makes;
 * TF_ERR_OUT_OF_MEMORY.
 */
tf_status tf_bench_random(tf_session *s, tf_dtype dtype, size_t rank, const int64_t *shape,
                          double lo, double hi, uint64_t seed, int variable, tf_eager **out);

#endif /* TF_BENCH_UTIL_H */
