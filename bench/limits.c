/*
 * limits.c - the machine's limits for the standard workloads, measured in the
 * same run as `tenferro bench` (see docs/performance.md, "The limits"):
 *
 *   limit:matmul      the three raw BLAS calls of the matmul workload
 *                     (C = A B, dA = G B^T, dB = A^T G with G all ones, the
 *                     cotangent of sum) for f64 n = 512 and f32 n = 1024;
 *   limit:elementwise one fused pass over n = 2^22 f64 computing
 *                     loss = sum(exp(x) y + x) and d loss/dx = exp(x) y + 1
 *                     (fwd_bwd): x and y read once, the gradient written once,
 *                     exp vectorised (glibc's libmvec: this file alone is
 *                     built with -ffast-math), the pass split over the threads
 *                     by OpenMP; fwd_bwd_2grads also writes d loss/dy = exp(x)
 *                     (y is a constant in the workload: for reference only);
 *   limit:mlp         one step of the mlp workload done by hand: its five raw
 *                     sgemm calls and one fused pass for each elementwise
 *                     stage between them (bias + tanh; bias, residual, loss
 *                     and its cotangent with b2's gradient; tanh's derivative
 *                     with b1's gradient) and one for the SGD update, 50
 *                     steps timed together (step);
 *   limit:complex     the matmul workload's three GEMMs in c128 (n = 512) as raw
 *                     zgemm calls: C = A B, dA = G B^H, dB = A^H G (G all
 *                     ones, the cotangent of the real part of the sum);
 *   limit:svd_grad    the svd_grad workload by hand: one LAPACK dgesdd (thin,
 *                     jobz 'S') of the f64 [256, 256] A, loss = sum(s w), and
 *                     its gradient U diag(w) V^T as one dgemm on U with its
 *                     columns scaled (fwd_bwd). A gradient needs U and V, so
 *                     one gesdd is the least any implementation on LAPACK does;
 *   limit:transformer the sgemm calls of one transformer step, forward and
 *                     backward, with tenferro's shapes and transposes: the
 *                     four [1024, 256] x [256, 256] projections (Q, K, V, Wo),
 *                     W1 and W2, each with dX = dY W^T and dW = X^T dY, and
 *                     per batch * head (32) q k^T, P v and their four backward
 *                     products, on dense blocks; no elementwise work at all,
 *                     3 steps timed together (step). The floor of any
 *                     implementation of the block on this BLAS.
 *
 * Every figure is at the thread count asked for: OpenBLAS's threads for the
 * products (openblas_set_num_threads) and OpenMP's for the passes, the team
 * bound to the CPUs and OpenBLAS's idle workers stopped while it runs (see
 * team_bind and blas_workers_stop). It links
 * OpenBLAS directly and never libtenferro. Figures are printed as
 * `limit:<workload> <metric> <value> <unit>` on stdout, each the median of 5
 * timed repetitions (15 for matmul, as in the bench) after one untimed
 * warm-up; the OpenBLAS kernel and thread counts go to stderr.
 *
 * usage: tenferro-limits [--threads N] [--quick] [WORKLOAD ...]
 * (WORKLOAD: the limits to run, by the workload's name; default all), or
 * tenferro-limits --list (the workloads it has limits for, one a line)
 */
#define _GNU_SOURCE /* clock_gettime; sched_setaffinity and the CPU_SET macros */

#include <complex.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>
#include <lapacke.h>
#include <omp.h>

#define REPS 5
#define MATMUL_REPS 15 /* one f64 step takes only ~10 ms: more of them, as in the bench */
#define MAX_THREADS 256
/* The elementwise pass's warm-up, in seconds: passes until they took this long, as
   `tenferro bench` and bench/torch_bench.py warm up (docs/performance.md, "Fresh
   memory": on a virtual machine freshly allocated memory runs slower at first) */
#define ELEMENTWISE_WARM_S 0.5

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

/* 64-byte aligned, as the CPU engine's buffers are (a vector load never splits a line). */
static void *checked_malloc(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 1) != 0) {
        fprintf(stderr, "limits: out of memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

static void print_figure(const char *workload, const char *metric, double value,
                         const char *unit)
{
    printf("limit:%s %s %.6g %s\n", workload, metric, value, unit);
    fflush(stdout);
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
    char metric[64];
    snprintf(metric, sizeof metric, "%s_%d_fwd_bwd_gflops", wide ? "f64" : "f32", n);
    print_figure("matmul", metric, flops / median(t + 1, MATMUL_REPS) / 1e9, "GFLOP/s");
    for (int i = 0; i < 6; i++)
        free(buf[i]);
}

/* The complex step's three zgemm calls (column-major); G^H = G for G all ones. */
static double gemm3_c128(int n, const double _Complex *a, const double _Complex *b,
                         const double _Complex *g, double _Complex *c, double _Complex *da,
                         double _Complex *db)
{
    const double _Complex one = 1.0, zero = 0.0;
    double t0 = now();
    cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, &one, a, n, b, n, &zero, c, n);
    cblas_zgemm(CblasColMajor, CblasNoTrans, CblasConjTrans, n, n, n, &one, g, n, b, n, &zero, da,
                n);
    cblas_zgemm(CblasColMajor, CblasConjTrans, CblasNoTrans, n, n, n, &one, a, n, g, n, &zero, db,
                n);
    return now() - t0;
}

/* Runs the three c128 GEMMs and prints GFLOP/s counting 4*3*2*n^3 real flops. */
static void limit_complex(int n)
{
    size_t nn = (size_t)n * (size_t)n;
    double _Complex *buf[6];
    uint64_t rng = 31;
    for (int i = 0; i < 6; i++)
        buf[i] = checked_malloc(nn * sizeof(double _Complex));
    for (size_t k = 0; k < nn; k++) {
        double ar = uniform(&rng), ai = uniform(&rng), br = uniform(&rng), bi = uniform(&rng);
        buf[0][k] = ar + ai * _Complex_I;
        buf[1][k] = br + bi * _Complex_I;
        buf[2][k] = 1.0;
    }
    double t[MATMUL_REPS + 1];
    for (int r = 0; r <= MATMUL_REPS; r++) /* r = 0 is the warm-up */
        t[r] = gemm3_c128(n, buf[0], buf[1], buf[2], buf[3], buf[4], buf[5]);
    char metric[64];
    snprintf(metric, sizeof metric, "c128_%d_fwd_bwd_gflops", n);
    print_figure("complex", metric,
                 4.0 * 3.0 * 2.0 * (double)n * (double)n * (double)n / median(t + 1, MATMUL_REPS) /
                     1e9,
                 "GFLOP/s");
    for (int i = 0; i < 6; i++)
        free(buf[i]);
}

/* ---- elementwise: one fused pass ------------------------------------------------ */

/* loss and d/dx of sum(exp(x) y + x) in one pass; gy non-NULL: d/dy too. */
static double fused_pass(size_t n, const double *restrict x, const double *restrict y,
                         double *restrict gx, double *restrict gy)
{
    double sum = 0;
    if (gy) {
#pragma omp parallel for simd schedule(static) reduction(+ : sum) aligned(x, y, gx, gy : 64)
        for (size_t i = 0; i < n; i++) {
            double e = exp(x[i]), t = e * y[i];
            sum += t + x[i];
            gx[i] = t + 1.0;
            gy[i] = e;
        }
    } else {
#pragma omp parallel for simd schedule(static) reduction(+ : sum) aligned(x, y, gx : 64)
        for (size_t i = 0; i < n; i++) {
            double t = exp(x[i]) * y[i];
            sum += t + x[i];
            gx[i] = t + 1.0;
        }
    }
    return sum;
}

static void limit_elementwise(size_t n, double warm_s)
{
    double *x = checked_malloc(n * sizeof *x), *y = checked_malloc(n * sizeof *y);
    double *gx = checked_malloc(n * sizeof *gx), *gy = checked_malloc(n * sizeof *gy);
    uint64_t rng = 21;
    for (size_t i = 0; i < n; i++)
        x[i] = uniform(&rng);
    for (size_t i = 0; i < n; i++)
        y[i] = uniform(&rng);
    for (int both = 0; both < 2; both++) {
        double t[REPS + 1], loss = 0, warm0 = now();
        do { /* the warm-up: passes until they took warm_s (at least one) */
            loss = fused_pass(n, x, y, gx, both ? gy : NULL);
        } while (now() - warm0 < warm_s);
        for (int r = 1; r <= REPS; r++) {
            double t0 = now();
            loss = fused_pass(n, x, y, gx, both ? gy : NULL);
            t[r] = now() - t0;
        }
        fprintf(stderr, "limits: elementwise loss %.17g, gx[0] %.17g\n", loss, gx[0]);
        print_figure("elementwise", both ? "fwd_bwd_2grads" : "fwd_bwd", 1e3 * median(t + 1, REPS),
                     "ms");
    }
    free(x);
    free(y);
    free(gx);
    free(gy);
}

/* ---- mlp: five sgemm calls and four fused passes per step ------------------------ */

/* Row-major, as BENCHMARKS.md writes the shapes; the arithmetic is the workload's. */
typedef struct mlp_sizes {
    int batch, in, hidden, out, steps;
} mlp_sizes;

typedef struct mlp_state {
    float *x, *t;                    /* [batch, in], [batch, out] */
    float *w1, *b1, *w2, *b2;        /* [in, hidden], [hidden], [hidden, out], [out] */
    float *g_w1, *g_b1, *g_w2, *g_b2; /* their gradients */
    float *z, *h, *o, *g_o, *g_h;    /* X W1; tanh(z + b1); H W2; dO; dH (then dZ) */
    double loss;
} mlp_state;

/*
 * The step runs inside one OpenMP parallel region: each thread computes its share
 * of every product (a block of the output's columns, or of its rows) with
 * single-threaded sgemm calls and its share of every pass, with a barrier
 * between stages. That is the fastest arrangement measured here: OpenBLAS's own
 * threads on these small products, with OpenMP's team for the passes, put two
 * sets of spinning workers on the same cores (docs/performance.md, "The limits").
 */

/* [lo, hi) of n split over the team. */
static void share(int n, int *lo, int *hi)
{
    int nt = omp_get_num_threads(), id = omp_get_thread_num();
    *lo = n * id / nt;
    *hi = n * (id + 1) / nt;
}

/* Z = X W1 (this thread's columns); then H = tanh(Z + b1) over them. */
static void stage_hidden(const mlp_sizes *z, mlp_state *m)
{
    const int b = z->batch, ni = z->in, nh = z->hidden;
    int j0, j1;
    share(nh, &j0, &j1);
    if (j1 > j0)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, b, j1 - j0, ni, 1.0f, m->x, ni,
                    m->w1 + j0, nh, 0.0f, m->z + j0, nh);
    for (int i = 0; i < b; i++) {
        const float *restrict zi = m->z + (size_t)i * nh, *restrict bias = m->b1;
        float *restrict hi = m->h + (size_t)i * nh;
#pragma omp simd
        for (int j = j0; j < j1; j++)
            hi[j] = tanhf(zi[j] + bias[j]);
    }
}

/* O = H W2; D = O + b2 - T; loss = sum(D^2) / batch; dO = (2 / batch) D; d b2 = column
   sums of dO (one thread: the output is [batch, 10]). */
static void stage_loss(const mlp_sizes *z, mlp_state *m)
{
    const int b = z->batch, nh = z->hidden, no = z->out;
    const float scale = 1.0f / (float)b;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, b, no, nh, 1.0f, m->h, nh, m->w2, no,
                0.0f, m->o, no);
    double loss = 0;
    for (int j = 0; j < no; j++)
        m->g_b2[j] = 0;
    for (int i = 0; i < b; i++) {
        const float *restrict oi = m->o + (size_t)i * no, *restrict ti = m->t + (size_t)i * no;
        float *restrict gi = m->g_o + (size_t)i * no;
        for (int j = 0; j < no; j++) {
            float d = oi[j] + m->b2[j] - ti[j];
            loss += (double)(d * d);
            gi[j] = 2.0f * scale * d;
            m->g_b2[j] += gi[j];
        }
    }
    m->loss = loss * scale;
}

/* dW2 = H^T dO (this thread's rows); dH = dO W2^T (its columns); dZ = dH (1 - H^2)
   over dH's memory and d b1 = the column sums of dZ (the same columns). */
static void stage_hidden_grad(const mlp_sizes *z, mlp_state *m)
{
    const int b = z->batch, nh = z->hidden, no = z->out;
    int j0, j1;
    share(nh, &j0, &j1);
    if (j1 <= j0)
        return;
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, j1 - j0, no, b, 1.0f, m->h + j0, nh,
                m->g_o, no, 0.0f, m->g_w2 + (size_t)j0 * no, no);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, b, j1 - j0, no, 1.0f, m->g_o, no,
                m->w2 + (size_t)j0 * no, no, 0.0f, m->g_h + j0, nh);
    for (int j = j0; j < j1; j++)
        m->g_b1[j] = 0;
    for (int i = 0; i < b; i++) {
        const float *restrict hi = m->h + (size_t)i * nh;
        float *restrict gi = m->g_h + (size_t)i * nh, *restrict gb = m->g_b1;
#pragma omp simd
        for (int j = j0; j < j1; j++) {
            float d = gi[j] * (1.0f - hi[j] * hi[j]);
            gi[j] = d;
            gb[j] += d;
        }
    }
}

/* p -= lr g over this thread's share of n elements. */
static void update(float *restrict p, const float *restrict g, int n)
{
    int i0, i1;
    share(n, &i0, &i1);
#pragma omp simd
    for (int i = i0; i < i1; i++)
        p[i] -= 0.01f * g[i];
}

/* dW1 = X^T dZ (this thread's columns), then the SGD update (lr 0.01) of every
   parameter, each thread its share: W1's rows of its columns first, as they are hot. */
static void stage_input_grad(const mlp_sizes *z, mlp_state *m)
{
    const int b = z->batch, ni = z->in, nh = z->hidden, no = z->out;
    int j0, j1;
    share(nh, &j0, &j1);
    if (j1 > j0) {
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, ni, j1 - j0, b, 1.0f, m->x, ni,
                    m->g_h + j0, nh, 0.0f, m->g_w1 + j0, nh);
        for (int r = 0; r < ni; r++) {
            float *restrict p = m->w1 + (size_t)r * nh;
            const float *restrict g = m->g_w1 + (size_t)r * nh;
#pragma omp simd
            for (int j = j0; j < j1; j++)
                p[j] -= 0.01f * g[j];
        }
    }
    update(m->b1, m->g_b1, nh);
    update(m->w2, m->g_w2, nh * no);
    update(m->b2, m->g_b2, no);
}

static void mlp_steps(const mlp_sizes *z, mlp_state *m)
{
#pragma omp parallel
    for (int s = 0; s < z->steps; s++) {
        stage_hidden(z, m);
#pragma omp barrier
#pragma omp single
        stage_loss(z, m);
        /* (single ends with a barrier) */
        stage_hidden_grad(z, m);
#pragma omp barrier
        stage_input_grad(z, m);
#pragma omp barrier
    }
}

/* n floats uniform in [lo, hi). */
static float *mlp_array(size_t n, double lo, double hi, uint64_t *rng)
{
    float *p = checked_malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = (float)(lo + (hi - lo) * uniform(rng));
    return p;
}

static void limit_mlp(const mlp_sizes *z)
{
    const size_t b = (size_t)z->batch, ni = (size_t)z->in, nh = (size_t)z->hidden,
                 no = (size_t)z->out;
    const double s1 = sqrt(3.0 / (double)ni), s2 = sqrt(3.0 / (double)nh);
    uint64_t rng = 11;
    mlp_state m = {
        .x = mlp_array(b * ni, 0, 1, &rng),       .t = mlp_array(b * no, 0, 1, &rng),
        .w1 = mlp_array(ni * nh, -s1, s1, &rng),  .b1 = mlp_array(nh, -0.1, 0.1, &rng),
        .w2 = mlp_array(nh * no, -s2, s2, &rng),  .b2 = mlp_array(no, -0.1, 0.1, &rng),
        .g_w1 = mlp_array(ni * nh, 0, 0, &rng),   .g_b1 = mlp_array(nh, 0, 0, &rng),
        .g_w2 = mlp_array(nh * no, 0, 0, &rng),   .g_b2 = mlp_array(no, 0, 0, &rng),
        .z = mlp_array(b * nh, 0, 0, &rng),       .h = mlp_array(b * nh, 0, 0, &rng),
        .o = mlp_array(b * no, 0, 0, &rng),       .g_o = mlp_array(b * no, 0, 0, &rng),
        .g_h = mlp_array(b * nh, 0, 0, &rng),     .loss = 0};
    double t[REPS + 1];
    for (int r = 0; r <= REPS; r++) {
        double t0 = now();
        mlp_steps(z, &m);
        t[r] = now() - t0;
    }
    fprintf(stderr, "limits: mlp loss after the last step %.9g\n", m.loss);
    print_figure("mlp", "step", 1e3 * median(t + 1, REPS) / z->steps, "ms");
    float *all[] = {m.x, m.t, m.w1, m.b1, m.w2, m.b2, m.g_w1, m.g_b1,
                    m.g_w2, m.g_b2, m.z, m.h, m.o, m.g_o, m.g_h};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]);
}

/* ---- svd_grad: one gesdd and one product ------------------------------------------- */

/* One step on preallocated buffers; returns the loss. */
static double svd_step(int n, const double *a, const double *w, double *work, double *s,
                       double *u, double *vt, double *grad)
{
    memcpy(work, a, (size_t)n * (size_t)n * sizeof *work); /* gesdd destroys its input */
    if (LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'S', n, n, work, n, s, u, n, vt, n) != 0) {
        fprintf(stderr, "limits: dgesdd failed\n");
        exit(1);
    }
    double loss = 0;
    for (int j = 0; j < n; j++) {
        loss += s[j] * w[j];
        for (int i = 0; i < n; i++)
            u[i + (size_t)j * n] *= w[j]; /* U diag(w) */
    }
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, u, n, vt, n, 0.0, grad,
                n);
    return loss;
}

static void limit_svd_grad(int n)
{
    const size_t nn = (size_t)n * (size_t)n;
    double *a = checked_malloc(nn * sizeof *a), *w = checked_malloc((size_t)n * sizeof *w);
    double *work = checked_malloc(nn * sizeof *work), *s = checked_malloc((size_t)n * sizeof *s);
    double *u = checked_malloc(nn * sizeof *u), *vt = checked_malloc(nn * sizeof *vt);
    double *grad = checked_malloc(nn * sizeof *grad);
    uint64_t rng = 51;
    for (size_t i = 0; i < nn; i++)
        a[i] = uniform(&rng);
    for (int i = 0; i < n; i++)
        w[i] = uniform(&rng);
    double t[REPS + 1], loss = 0;
    for (int r = 0; r <= REPS; r++) {
        double t0 = now();
        loss = svd_step(n, a, w, work, s, u, vt, grad);
        t[r] = now() - t0;
    }
    fprintf(stderr, "limits: svd_grad loss %.17g\n", loss);
    print_figure("svd_grad", "fwd_bwd", 1e3 * median(t + 1, REPS), "ms");
    double *all[] = {a, w, work, s, u, vt, grad};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]);
}

/* ---- transformer: the step's sgemm calls ---------------------------------------- */

/*
 * Column-major, as tenferro lays the block out (bench_models.c): x's rows are the
 * [rows = batch * seq, model] matrix, a linear layer is one NN product by its
 * weight [in, out], and each of the batch * heads attention products works on
 * dense [seq, width] (or [width, seq]) blocks, the packed copies the CPU engine's
 * dot_general makes of the strided head views. The calls, their shapes and
 * transposes are the ones tenferro's step makes (logged by interposing
 * cblas_sgemm under `tenferro bench --threads 1 transformer`).
 */
typedef struct tr_sizes {
    int batch, seq, model, heads, ffn, steps;
} tr_sizes;

/* clang-format off */
enum { /* [rows, model] matrices */
       TR_A, TR_Q, TR_K, TR_V, TR_ATT, TR_O, TR_N2, TR_F2, TR_DF2, TR_DN2, TR_DATT,
       TR_DQ, TR_DK, TR_DV, TR_DA_Q, TR_DA_K, TR_DA_V,
       /* [rows, ffn] */
       TR_G, TR_DG,
       /* the weights and their gradients */
       TR_WQ, TR_WK, TR_WV, TR_WO, TR_W1, TR_W2, TR_GWQ, TR_GWK, TR_GWV, TR_GWO, TR_GW1, TR_GW2,
       /* per head, dense [seq, width] or [width, seq] blocks */
       TR_QP, TR_KTP, TR_VP, TR_ATTP, TR_DATTP, TR_VTP, TR_KP, TR_QTP, TR_HDQ, TR_HDK, TR_HDV,
       /* per head, [seq, seq] */
       TR_S, TR_DS,
       TR_NBUF };
/* clang-format on */

/* C = op(A) op(B), C dense m x n; A m x k (ta: k x m), B k x n (tb: n x k), dense. */
static void sgemm_dense(int ta, int tb, int m, int n, int k, const float *a, const float *b,
                        float *c)
{
    cblas_sgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
                k, 1.0f, a, ta ? k : m, b, tb ? n : k, 0.0f, c, m);
}

/* A linear layer's three products: forward Y = X W, backward dX = dY W^T, dW = X^T dY. */
static void tr_linear_fwd(int rows, int in, int out, const float *x, const float *w, float *y)
{
    sgemm_dense(0, 0, rows, out, in, x, w, y);
}

static void tr_linear_bwd(int rows, int in, int out, const float *x, const float *w,
                          const float *dy, float *dx, float *dw)
{
    sgemm_dense(0, 1, rows, in, out, dy, w, dx);
    sgemm_dense(1, 0, in, out, rows, x, dy, dw);
}

/* The attention products of one head h (blocks of ss = seq^2 and sw = seq * width floats). */
static void tr_head_fwd(const tr_sizes *z, float **buf, int h)
{
    const int s = z->seq, w = z->model / z->heads;
    const size_t sw = (size_t)s * w, ss = (size_t)s * s;
    /* scores = q k^T (the 1/8 scale and softmax are elementwise: not counted) */
    sgemm_dense(0, 0, s, s, w, buf[TR_QP] + h * sw, buf[TR_KTP] + h * sw, buf[TR_S] + h * ss);
    /* att = P v */
    sgemm_dense(0, 0, s, w, s, buf[TR_S] + h * ss, buf[TR_VP] + h * sw, buf[TR_ATTP] + h * sw);
}

static void tr_head_bwd(const tr_sizes *z, float **buf, int h)
{
    const int s = z->seq, w = z->model / z->heads;
    const size_t sw = (size_t)s * w, ss = (size_t)s * s;
    /* dP = datt v^T; dv = P^T datt */
    sgemm_dense(0, 0, s, s, w, buf[TR_DATTP] + h * sw, buf[TR_VTP] + h * sw, buf[TR_DS] + h * ss);
    sgemm_dense(1, 0, s, w, s, buf[TR_S] + h * ss, buf[TR_DATTP] + h * sw, buf[TR_HDV] + h * sw);
    /* dq = dS k; dk^T = q^T dS (dS: softmax's backward of dP, elementwise) */
    sgemm_dense(0, 0, s, w, s, buf[TR_DS] + h * ss, buf[TR_KP] + h * sw, buf[TR_HDQ] + h * sw);
    sgemm_dense(0, 0, w, s, s, buf[TR_QTP] + h * sw, buf[TR_DS] + h * ss, buf[TR_HDK] + h * sw);
}

/* Every head's products, one call each: OpenBLAS at the run's thread count threads each
   call as it sees fit. Splitting the heads over OpenMP's team instead measured slower at
   2 threads (56 against 44 ms a step): OpenBLAS's workers still spin after the threaded
   projection before them and take the team's second core. */
static void tr_heads(const tr_sizes *z, float **buf, int backward)
{
    for (int h = 0; h < z->batch * z->heads; h++) {
        if (backward)
            tr_head_bwd(z, buf, h);
        else
            tr_head_fwd(z, buf, h);
    }
}

/* One step's sgemm calls, in the order the step makes them. */
static void tr_step(const tr_sizes *z, float **buf)
{
    const int r = z->batch * z->seq, d = z->model, f = z->ffn;
    tr_linear_fwd(r, d, d, buf[TR_A], buf[TR_WQ], buf[TR_Q]);
    tr_linear_fwd(r, d, d, buf[TR_A], buf[TR_WK], buf[TR_K]);
    tr_linear_fwd(r, d, d, buf[TR_A], buf[TR_WV], buf[TR_V]);
    tr_heads(z, buf, 0);
    tr_linear_fwd(r, d, d, buf[TR_ATT], buf[TR_WO], buf[TR_O]);
    tr_linear_fwd(r, d, f, buf[TR_N2], buf[TR_W1], buf[TR_G]);
    tr_linear_fwd(r, f, d, buf[TR_G], buf[TR_W2], buf[TR_F2]);
    tr_linear_bwd(r, f, d, buf[TR_G], buf[TR_W2], buf[TR_DF2], buf[TR_DG], buf[TR_GW2]);
    tr_linear_bwd(r, d, f, buf[TR_N2], buf[TR_W1], buf[TR_DG], buf[TR_DN2], buf[TR_GW1]);
    tr_linear_bwd(r, d, d, buf[TR_ATT], buf[TR_WO], buf[TR_DF2], buf[TR_DATT], buf[TR_GWO]);
    tr_heads(z, buf, 1);
    tr_linear_bwd(r, d, d, buf[TR_A], buf[TR_WQ], buf[TR_DQ], buf[TR_DA_Q], buf[TR_GWQ]);
    tr_linear_bwd(r, d, d, buf[TR_A], buf[TR_WK], buf[TR_DK], buf[TR_DA_K], buf[TR_GWK]);
    tr_linear_bwd(r, d, d, buf[TR_A], buf[TR_WV], buf[TR_DV], buf[TR_DA_V], buf[TR_GWV]);
}

static void limit_transformer(const tr_sizes *z)
{
    const size_t rd = (size_t)z->batch * z->seq * z->model, rf = rd / z->model * z->ffn;
    const size_t dd = (size_t)z->model * z->model, df = (size_t)z->model * z->ffn;
    const size_t heads_ss = (size_t)z->batch * z->heads * z->seq * z->seq;
    float *buf[TR_NBUF];
    uint64_t rng = 61;
    for (int i = 0; i < TR_NBUF; i++) {
        size_t n = i < TR_G                                   ? rd
                   : i < TR_WQ                                ? rf
                   : i < TR_W1 || (i >= TR_GWQ && i < TR_GW1) ? dd
                   : i < TR_QP                                ? df
                   : i < TR_S                                 ? rd
                                                              : heads_ss;
        buf[i] = checked_malloc(n * sizeof(float));
        for (size_t k = 0; k < n; k++)
            buf[i][k] = (float)(2.0 * uniform(&rng) - 1.0) * 0.0625f;
    }
    double t[REPS + 1];
    for (int rep = 0; rep <= REPS; rep++) { /* rep = 0 is the warm-up */
        double t0 = now();
        for (int s = 0; s < z->steps; s++)
            tr_step(z, buf);
        t[rep] = now() - t0;
    }
    print_figure("transformer", "step", 1e3 * median(t + 1, REPS) / z->steps, "ms");
    for (int i = 0; i < TR_NBUF; i++)
        free(buf[i]);
}

/* ---- the threads' placement ---------------------------------------------------- */

/*
 * OpenBLAS's pthreads build exports the call its own fork handler makes to stop
 * its worker threads; the next threaded call starts them again. Weak: another
 * BLAS, or OpenBLAS's OpenMP build, may lack it, and then the workers stay.
 */
extern int blas_thread_shutdown_(void) __attribute__((weak));

/*
 * Before the OpenMP passes: OpenBLAS's workers, idle, spin (yielding) for its
 * thread timeout, about 0.1 s, after the library loads and after every threaded
 * call, on the cores the team needs; measured here, limit:mlp at 2 threads run
 * first in a fresh process took 0.80 ms a step beside them and 0.35 ms without.
 */
static void blas_workers_stop(void)
{
    if (blas_thread_shutdown_ != NULL)
        blas_thread_shutdown_();
}

/*
 * Binds OpenMP's team, thread i to the i-th CPU this process may run on, when
 * there are as many CPUs as threads, and returns the master thread's own mask
 * in *saved (for team_unbind). Unbound, the 2-thread elementwise pass took
 * 8.0 ms in about half the runs on a 2-core machine (both threads sharing one
 * core, it seems) and 2.6-2.9 ms in the others; bound, 2.6-2.9 ms every time.
 * Returns 0 when it bound nothing.
 */
static int team_bind(cpu_set_t *saved)
{
    int cpus[CPU_SETSIZE], n = 0;
    if (sched_getaffinity(0, sizeof *saved, saved) != 0)
        return 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, saved))
            cpus[n++] = c;
    int team = omp_get_max_threads();
    if (team < 2 || n < team)
        return 0;
#pragma omp parallel
    {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpus[omp_get_thread_num()], &one);
        (void)sched_setaffinity(0, sizeof one, &one); /* 0: the calling thread */
    }
    return 1;
}

/* Gives the master thread its mask back: threads it creates later (OpenBLAS's
   workers, for the threaded products) inherit it. */
static void team_unbind(const cpu_set_t *saved)
{
    (void)sched_setaffinity(0, sizeof *saved, saved);
}

/* The limits, in the order they run: the OpenMP passes first (see main). */
static const char *const k_workloads[] = {"elementwise", "mlp",      "matmul",
                                          "complex",     "svd_grad", "transformer"};
#define N_WORKLOADS (sizeof k_workloads / sizeof k_workloads[0])

int main(int argc, char **argv)
{
    int threads = 1, quick = 0, any = 0;
    int want[N_WORKLOADS] = {0};
    if (argc == 2 && strcmp(argv[1], "--list") == 0) { /* what bench/run.sh reads */
        for (size_t w = 0; w < N_WORKLOADS; w++)
            printf("%s\n", k_workloads[w]);
        return 0;
    }
    for (int i = 1; i < argc; i++) {
        size_t w = 0;
        while (w < N_WORKLOADS && strcmp(argv[i], k_workloads[w]) != 0)
            w++;
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0 &&
            atoi(argv[i + 1]) <= MAX_THREADS) {
            threads = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (w < N_WORKLOADS) {
            want[w] = any = 1;
        } else {
            fprintf(stderr, "usage: tenferro-limits [--threads N] [--quick] [WORKLOAD ...]\n"
                            "       tenferro-limits --list   (its workloads, one a line)\n"
                            "  WORKLOAD:");
            for (size_t k = 0; k < N_WORKLOADS; k++)
                fprintf(stderr, " %s", k_workloads[k]);
            fprintf(stderr, " (default: all)\n");
            return 2;
        }
    }
    for (size_t w = 0; w < N_WORKLOADS && !any; w++)
        want[w] = 1;
    omp_set_num_threads(threads);
    openblas_set_num_threads(threads);
    fprintf(stderr, "limits: OpenBLAS kernel %s, %d thread(s), OpenMP %d thread(s); config: %s\n",
            openblas_get_corename(), openblas_get_num_threads(), omp_get_max_threads(),
            openblas_get_config());
    /* OpenMP's passes first, OpenBLAS at one thread (the mlp step splits its products
       over OpenMP's team) and its workers stopped, the team bound (see team_bind) */
    openblas_set_num_threads(1);
    blas_workers_stop();
    cpu_set_t saved;
    int bound = (want[0] || want[1]) && team_bind(&saved);
    if (want[0])
        limit_elementwise(quick ? (size_t)1 << 10 : (size_t)1 << 22, quick ? 0 : ELEMENTWISE_WARM_S);
    const mlp_sizes full = {64, 784, 256, 10, 50}, tiny = {4, 8, 6, 3, 12};
    if (want[1])
        limit_mlp(quick ? &tiny : &full);
    if (bound)
        team_unbind(&saved);
    openblas_set_num_threads(threads);
    if (want[2]) {
        limit_matmul(quick ? 16 : 512, 1);
        limit_matmul(quick ? 16 : 1024, 0);
    }
    if (want[3])
        limit_complex(quick ? 16 : 512);
    if (want[4])
        limit_svd_grad(quick ? 8 : 256);
    const tr_sizes tr_full = {8, 128, 256, 4, 1024, 3}, tr_tiny = {2, 4, 8, 2, 16, 2};
    if (want[5])
        limit_transformer(quick ? &tr_tiny : &tr_full);
    return 0;
}
