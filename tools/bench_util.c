/*
 * bench_util.c - clock, generator, median, resident-memory counters (Linux's
 * /proc/self/status; getrusage elsewhere), figure lines and random inputs of
 * `tenferro bench`.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <tenferro/tenferro.h>

tf_bench_rng tf_bench_rng_seed(uint64_t seed)
{
    tf_bench_rng rng = {seed ? seed : 0x9E3779B97F4A7C15ull};
    return rng;
}

double tf_bench_rng_uniform(tf_bench_rng *rng)
{
    uint64_t x = rng->state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng->state = x;
    return (double)((x * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0;
}

double tf_bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double tf_bench_median(const double *v, int n)
{
    double s[TF_BENCH_MAX_REPS];
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, compare_doubles);
    return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

/* A "Name:   1234 kB" line of /proc/self/status in MiB, or -1. */
static double status_mib(const char *name)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    size_t len = strlen(name);
    double mib = -1;
    while (fgets(line, sizeof line, f)) {
        long long kib;
        if (strncmp(line, name, len) == 0 && line[len] == ':' &&
            sscanf(line + len + 1, "%lld", &kib) == 1) {
            mib = (double)kib / 1024.0;
            break;
        }
    }
    fclose(f);
    return mib;
}

double tf_bench_rss_mib(void)
{
    return status_mib("VmRSS");
}

double tf_bench_peak_rss_mib(void)
{
    double mib = status_mib("VmHWM");
    if (mib >= 0)
        return mib;
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        return (double)ru.ru_maxrss / 1024.0; /* KiB on Linux */
    return -1;
}

void tf_bench_peak_rss_reset(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f) {
        fputs("5", f);
        fclose(f);
    }
}

void tf_bench_figure(const char *workload, const char *metric, double value, const char *unit)
{
    printf("%s %s %.6g %s\n", workload, metric, value, unit);
    fflush(stdout);
}

tf_status tf_bench_random(tf_session *s, tf_dtype dtype, size_t rank, const int64_t *shape,
                          double lo, double hi, uint64_t seed, int variable, tf_eager **out)
{
    size_t n = 1;
    for (size_t i = 0; i < rank; i++)
        n *= (size_t)shape[i];
    /* a complex element is its two parts, each uniform */
    size_t parts = tf_dtype_is_complex(dtype) ? 2 : 1;
    int narrow = dtype == TF_F32 || dtype == TF_C64;
    void *data = malloc(n * tf_dtype_size(dtype) + 1);
    if (!data)
        return TF_ERR_OUT_OF_MEMORY;
    tf_bench_rng rng = tf_bench_rng_seed(seed);
    for (size_t i = 0; i < n * parts; i++) {
        double v = lo + (hi - lo) * tf_bench_rng_uniform(&rng);
        if (narrow)
            ((float *)data)[i] = (float)v;
        else
            ((double *)data)[i] = v;
    }
    tf_tensor *t = NULL;
    tf_eager *c = NULL;
    tf_status st = tf_tensor_from_host(dtype, rank, shape, data, n, &t);
    free(data);
    if (!st)
        st = tf_session_constant_from_host(s, t, &c);
    if (!st && variable)
        st = tf_runtime_variable_from(tf_session_runtime(s), tf_eager_value(c), out);
    else if (!st)
        tf_eager_retain(*out = c);
    tf_eager_release(c);
    tf_tensor_release(t);
    return st;
}
