/*
 * limits.c - the machine's limits for the standard workloads, measured in the
 * same run as `tenferro bench` (see docs/performance.md):
 *
 *   limit:matmul      the three raw BLAS calls of the matmul workload
 *                     (C = A B, dA = G B^T, dB = A^T G with G all ones, the
 *                     cotangent of sum) for f64 n = 512 and f32 n = 1024;
 *   limit:elementwise one fused hand-written pass over n = 2^22 f64 computing
 *                     loss = sum(exp(x) y + x) and d loss/dx = exp(x) y + 1
 *                     (fwd_bwd), and the same also writing d loss/dy = exp(x)
 *                     (fwd_bwd_2grads: y is a constant in the workload, so
 *                     this second figure is only for reference).
 *
 * It links OpenBLAS directly and never libtenferro. Figures are printed as
 * `limit:<workload> <metric> <value> <unit>` on stdout, each the median of 5
 * timed repetitions (15 for matmul, as in the bench) after one untimed warm-up; the OpenBLAS kernel
 * (openblas_get_corename) and thread count go to stderr.
 *
 * usage: tenferro-limits [--threads N] [--quick]
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#define REPS 5
#define MATMUL_REPS 15 /* one f64 step takes only ~10 ms: more of them, as in the bench */
#define MAX_THREADS 256

static double now(void)
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

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, compare_doubles);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* xorshift64*, uniform in [0, 1): the inputs' values do not matter, only that they repeat. */
static double uniform(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return (double)((x * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0;
}

static void *checked_malloc(size_t bytes)
{
    void *p = malloc(bytes);
    if (!p) {
        fprintf(stderr, "limits: out of memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

/* ---- matmul: three GEMMs, column-major ---------------------------------------- */

static double gemm3_f64(int n, const double *a, const double *b, const double *g, double *c,
                        double *da, double *db)
{
    double t0 = now();
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, b, n, 0.0, c, n);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0, g, n, b, n, 0.0, da, n);
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, n, n, n, 1.0, a, n, g, n, 0.0, db, n);
    return now() - t0;
}

static double gemm3_f32(int n, const float *a, const float *b, const float *g, float *c, float *da,
                        float *db)
{
    double t0 = now();
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0f, g, n, b, n, 0.0f, da, n);
    cblas_sgemm(CblasColMajor, CblasTrans, CblasNoTrans, n, n, n, 1.0f, a, n, g, n, 0.0f, db, n);
    return now() - t0;
}

/* Runs the three GEMMs of dtype f64 (wide) or f32 and prints GFLOP/s counting 3*2*n^3. */
static void limit_matmul(int n, int wide)
{
    size_t nn = (size_t)n * (size_t)n, width = wide ? sizeof(double) : sizeof(float);
    char *buf[6];
    uint64_t rng = 31;
    for (int i = 0; i < 6; i++)
        buf[i] = checked_malloc(nn * width);
    for (size_t k = 0; k < nn; k++) {
        double a = uniform(&rng), b = uniform(&rng);
        if (wide) {
            ((double *)buf[0])[k] = a, ((double *)buf[1])[k] = b, ((double *)buf[2])[k] = 1.0;
        } else {
            ((float *)buf[0])[k] = (float)a, ((float *)buf[1])[k] = (float)b;
            ((float *)buf[2])[k] = 1.0f;
        }
    }
    double t[MATMUL_REPS + 1];
    for (int r = 0; r <= MATMUL_REPS; r++) /* r = 0 is the warm-up */
        t[r] = wide ? gemm3_f64(n, (double *)buf[0], (double *)buf[1], (double *)buf[2],
                                (double *)buf[3], (double *)buf[4], (double *)buf[5])
                    : gemm3_f32(n, (float *)buf[0], (float *)buf[1], (float *)buf[2],
                                (float *)buf[3], (float *)buf[4], (float *)buf[5]);
    double flops = 3.0 * 2.0 * (double)n * (double)n * (double)n;
    printf("limit:matmul %s_%d_fwd_bwd_gflops %.6g GFLOP/s\n", wide ? "f64" : "f32", n,
           flops / median(t + 1, MATMUL_REPS) / 1e9);
    fflush(stdout);
    for (int i = 0; i < 6; i++)
        free(buf[i]);
}

/* ---- elementwise: one fused pass, split over threads ------------------------- */

typedef struct pass_job {
    const double *x, *y;
    double *gx, *gy; /* gy NULL: d/dy not wanted */
    size_t begin, end;
    double partial;
    pthread_t thread;
} pass_job;

/* loss, d/dx (and d/dy) of sum(exp(x) y + x) over [begin, end) in one pass. */
static void *fused_pass(void *arg)
{
    pass_job *j = arg;
    const double *restrict x = j->x, *restrict y = j->y;
    double *restrict gx = j->gx, *restrict gy = j->gy;
    double sum = 0;
    if (gy) {
        for (size_t i = j->begin; i < j->end; i++) {
            double e = exp(x[i]), t = e * y[i];
            sum += t + x[i];
            gx[i] = t + 1.0;
            gy[i] = e;
        }
    } else {
        for (size_t i = j->begin; i < j->end; i++) {
            double t = exp(x[i]) * y[i];
            sum += t + x[i];
            gx[i] = t + 1.0;
        }
    }
    j->partial = sum;
    return NULL;
}

/* One fused pass with `threads` threads (the caller's thread does the first share). */
static double fused_once(int threads, size_t n, const double *x, const double *y, double *gx,
                         double *gy, double *loss)
{
    pass_job jobs[MAX_THREADS];
    double t0 = now();
    for (int k = 0; k < threads; k++) {
        jobs[k] = (pass_job){
            x, y, gx, gy, n * (size_t)k / (size_t)threads, n * (size_t)(k + 1) / (size_t)threads,
            0, 0};
        if (k > 0 && pthread_create(&jobs[k].thread, NULL, fused_pass, &jobs[k]) != 0) {
            fprintf(stderr, "limits: cannot start a thread\n");
            exit(1);
        }
    }
    fused_pass(&jobs[0]);
    double sum = jobs[0].partial;
    for (int k = 1; k < threads; k++) {
        pthread_join(jobs[k].thread, NULL);
        sum += jobs[k].partial;
    }
    double t = now() - t0;
    *loss = sum;
    return t;
}

static void limit_elementwise(int threads, size_t n)
{
    double *x = checked_malloc(n * sizeof *x), *y = checked_malloc(n * sizeof *y);
    double *gx = checked_malloc(n * sizeof *gx), *gy = checked_malloc(n * sizeof *gy);
    uint64_t rng = 21;
    for (size_t i = 0; i < n; i++)
        x[i] = uniform(&rng);
    for (size_t i = 0; i < n; i++)
        y[i] = uniform(&rng);
    for (int both = 0; both < 2; both++) {
        double t[REPS + 1], loss = 0;
        for (int r = 0; r <= REPS; r++)
            t[r] = fused_once(threads, n, x, y, gx, both ? gy : NULL, &loss);
        fprintf(stderr, "limits: elementwise loss %.17g, gx[0] %.17g\n", loss, gx[0]);
        printf("limit:elementwise %s %.6g ms\n", both ? "fwd_bwd_2grads" : "fwd_bwd",
               1e3 * median(t + 1, REPS));
        fflush(stdout);
    }
    free(x);
    free(y);
    free(gx);
    free(gy);
}

int main(int argc, char **argv)
{
    int threads = 1, quick = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0 &&
            atoi(argv[i + 1]) <= MAX_THREADS) {
            threads = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else {
            fprintf(stderr, "usage: tenferro-limits [--threads N] [--quick]\n");
            return 2;
        }
    }
    openblas_set_num_threads(threads);
    fprintf(stderr, "limits: OpenBLAS kernel %s, %d thread(s); config: %s\n",
            openblas_get_corename(), openblas_get_num_threads(), openblas_get_config());
    limit_matmul(quick ? 16 : 512, 1);
    limit_matmul(quick ? 16 : 1024, 0);
    limit_elementwise(threads, quick ? (size_t)1 << 10 : (size_t)1 << 22);
    return 0;
}
