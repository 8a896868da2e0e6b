/*
 * dp_allreduce.c - the gradient buckets' all-reduce of dp.h against raw
 * MPI_Allreduce of the same bytes, in one process so that both meet the same
 * machine (docs/performance.md, "Training").
 *
 * For each size in bytes: a model of f32 parameters holding that many bytes
 * of gradients (four tensors, one default bucket), and, in turn for each
 * repetition (after one warm-up of each): a blocking MPI_Allreduce (MPI_SUM,
 * MPI's default algorithm choice) of that many bytes from one buffer into
 * another, an MPI_Iallreduce + MPI_Wait of them, the same in place
 * (MPI_IN_PLACE: `iallreduce_in_place`, which a bucket could use if it were
 * packed into the collective's own output), and tf_dp_average_grads of the
 * model (packing with the 1/p scale, the bucket's all_reduce with its
 * signature exchange, unpacking). Each time is the slowest rank's. Rank 0
 * prints `raw:dp <what>_<bytes>_ms <value> ms` and `..._gbps` lines for the
 * four medians, `bucket_vs_allreduce_<bytes>` (raw time / bucket time:
 * 1 is parity, the goal is >= 0.9) and `bucket_vs_allreduce_paired_<bytes>`,
 * the median of the repetitions' own raw / bucket ratios.
 *
 * The program initialises MPI itself, so the dist module uses that MPI (and
 * selects libnbc's ring all-reduce, see dist_comm.c, which the raw
 * MPI_Iallreduce then gets too; the blocking MPI_Allreduce does not use
 * libnbc).
 *
 * With --cache-alloc the process's allocator (tf_allocator_set) keeps freed
 * blocks for reuse by the next allocation of the same size, as a caching
 * allocator would: the buckets' buffers then skip the kernel's first touch
 * of fresh pages, which the raw side, reusing its two buffers, never pays.
 *
 * usage: mpirun -np N tenferro-dp-allreduce [--reps R] [--cache-alloc] BYTES...
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tenferro/dp.h>
#include <tenferro/ops.h>
#include <tenferro/tenferro.h>

#define MAX_REPS 64
#define N_PARTS 4
#define CACHE_SLOTS 64

/* ---- --cache-alloc: freed blocks kept by size (one thread: the bench's) ---- */

typedef struct cached {
    void *p;
    size_t size;
} cached;

static cached g_cache[CACHE_SLOTS];

static size_t *header(void *p)
{
    return (size_t *)p - 8; /* 64 bytes before the block: its size */
}

static void *cache_alloc(void *user, size_t size, size_t align)
{
    (void)user;
    for (int i = 0; i < CACHE_SLOTS; i++) {
        if (g_cache[i].p && g_cache[i].size == size) {
            void *p = g_cache[i].p;
            g_cache[i].p = NULL;
            return p;
        }
    }
    if (align > 64)
        return NULL;
    char *raw = aligned_alloc(64, ((size + 64 + 63) / 64) * 64);
    if (!raw)
        return NULL;
    *(size_t *)raw = size;
    return raw + 64;
}

static void cache_free(void *user, void *p)
{
    (void)user;
    if (!p)
        return;
    size_t size = *header(p);
    for (int i = 0; i < CACHE_SLOTS; i++) {
        if (!g_cache[i].p) {
            g_cache[i] = (cached){p, size};
            return;
        }
    }
    free((char *)p - 64);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof t[0], by_value);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* The slowest rank's time of what ran since t0. */
static double slowest_since(double t0)
{
    double t = now() - t0, s = 0;
    MPI_Allreduce(&t, &s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return s;
}

/* An SGD optimizer over N_PARTS f32 vectors of `bytes` in all, their grad slots filled. */
static tf_status model(tf_runtime *rt, tf_engine *e, long bytes, tf_optim **out)
{
    int64_t n = bytes / 4 / N_PARTS;
    float *v = malloc((size_t)n * 4 + 4);
    tf_eager *p[N_PARTS] = {NULL}, *loss = NULL;
    tf_session *s = NULL;
    tf_status st = v ? tf_session_begin(rt, e, &s) : TF_ERR_OUT_OF_MEMORY;
    for (int64_t i = 0; v && i < n; i++)
        v[i] = (float)(i % 89) * 0.25f;
    for (int k = 0; k < N_PARTS && !st; k++) {
        tf_tensor *t = NULL, *dev = NULL;
        tf_eager *part = NULL, *sum = NULL;
        st = tf_tensor_from_host(TF_F32, 1, &n, v, (size_t)n, &t);
        if (!st)
            st = tf_engine_upload(e, t, &dev);
        if (!st)
            st = tf_runtime_variable_from(rt, dev, &p[k]);
        if (!st)
            st = tf_session_reduce_sum_squares(s, p[k], NULL, 0, &part);
        if (!st && loss) {
            st = tf_session_add(s, loss, part, &sum);
        } else if (!st) {
            tf_eager_retain(part);
            sum = part;
        }
        tf_eager_release(loss);
        loss = sum;
        tf_eager_release(part);
        tf_tensor_release(t);
        tf_tensor_release(dev);
    }
    tf_session_end(s);
    if (!st)
        st = tf_eager_backward(loss, e);
    tf_optim_options o;
    tf_optim_options_default(TF_OPTIM_SGD, &o);
    if (!st)
        st = tf_optim_create(rt, TF_OPTIM_SGD, out);
    if (!st)
        st = tf_optim_add_group(*out, &o, p, N_PARTS);
    for (int k = 0; k < N_PARTS; k++)
        tf_eager_release(p[k]);
    tf_eager_release(loss);
    free(v);
    return st;
}

static tf_status bucket_once(tf_dp *dp, tf_optim *opt, double *t)
{
    tf_tensor *g[N_PARTS] = {NULL};
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now();
    tf_status st = tf_dp_average_grads(dp, opt, g, N_PARTS);
    *t = slowest_since(t0);
    for (int k = 0; k < N_PARTS; k++)
        tf_tensor_release(g[k]);
    return st;
}

/* nonblocking: 0 MPI_Allreduce, 1 MPI_Iallreduce + MPI_Wait, 2 the same in place on recv. */
static double raw_once(const float *send, float *recv, int n, int nonblocking)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now();
    if (nonblocking) {
        MPI_Request rq;
        MPI_Iallreduce(nonblocking == 2 ? MPI_IN_PLACE : send, recv, n, MPI_FLOAT, MPI_SUM,
                       MPI_COMM_WORLD, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
    } else {
        MPI_Allreduce(send, recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    return slowest_since(t0);
}

static void print(int rank, const char *what, long bytes, const char *suffix, double value,
                  const char *unit)
{
    if (rank == 0)
        printf("raw:dp %s_%ld%s %.6g %s\n", what, bytes, suffix, value, unit);
}

static tf_status size_run(tf_runtime *rt, tf_engine *e, tf_dp *dp, long bytes, int reps,
                          int rank)
{
    int n = (int)(bytes / 4 / N_PARTS * N_PARTS);
    bytes = (long)n * 4;
    float *send = calloc((size_t)n + 1, 4), *recv = calloc((size_t)n + 1, 4);
    tf_optim *opt = NULL;
    tf_status st = send && recv ? model(rt, e, bytes, &opt) : TF_ERR_OUT_OF_MEMORY;
    double t[4][MAX_REPS], w;
    for (int r = -1; r < reps && !st; r++) {
        double a = raw_once(send, recv, n, 0), b = raw_once(send, recv, n, 1);
        double c = raw_once(send, recv, n, 2);
        st = bucket_once(dp, opt, r >= 0 ? &t[3][r] : &w);
        if (r >= 0) {
            t[0][r] = a;
            t[1][r] = b;
            t[2][r] = c;
        }
    }
    static const char *const names[4] = {"allreduce", "iallreduce", "iallreduce_in_place",
                                          "bucket"};
    /* paired: each repetition's raw time / bucket time (the two ran back to back, so a
       slow minute slows both), before median() sorts the times */
    double ratio[MAX_REPS];
    for (int r = 0; r < reps && !st; r++)
        ratio[r] = t[0][r] / t[3][r];
    double med[4] = {0, 0, 0, 0};
    for (int k = 0; k < 4 && !st; k++) {
        med[k] = median(t[k], reps);
        print(rank, names[k], bytes, "_ms", 1e3 * med[k], "ms");
        print(rank, names[k], bytes, "_gbps", (double)bytes / med[k] / 1e9, "GB/s");
    }
    if (!st) {
        print(rank, "bucket_vs_allreduce", bytes, "", med[0] / med[3], "x");
        print(rank, "bucket_vs_allreduce_paired", bytes, "", median(ratio, reps), "x");
    }
    tf_optim_destroy(opt);
    free(send);
    free(recv);
    return st;
}

int main(int argc, char **argv)
{
    int provided, rank = 0, reps = 5;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--cache-alloc") == 0) {
            tf_allocator a = {cache_alloc, cache_free, NULL};
            tf_allocator_set(&a); /* before the library holds any memory */
        }
    }
    tf_engine *e = NULL;
    tf_runtime *rt = NULL;
    tf_dp *dp = NULL;
    tf_status st = tf_engine_open("cpu", 1, &e);
    if (!st)
        st = tf_runtime_create(&rt);
    if (!st)
        st = tf_dp_create(rt, e, &dp);
    for (int i = 1; i < argc && !st; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            reps = atoi(argv[++i]);
            reps = reps < 1 || reps > MAX_REPS ? 5 : reps;
        } else if (strcmp(argv[i], "--cache-alloc") != 0 && atol(argv[i]) >= 4 * N_PARTS) {
            st = size_run(rt, e, dp, atol(argv[i]), reps, rank);
        }
    }
    if (st)
        fprintf(stderr, "tenferro-dp-allreduce: %s %s\n", tf_train_error_message(),
                tf_error_message());
    tf_dp_destroy(dp);
    tf_runtime_release(rt);
    tf_engine_destroy(e);
    MPI_Finalize();
    return st ? 1 : 0;
}
