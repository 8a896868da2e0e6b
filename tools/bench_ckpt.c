/*
 * bench_ckpt.c - the checkpoint workload of `tenferro bench` (see
 * bench_train.c's header): tf_checkpoint_save and tf_checkpoint_load against
 * a plain write() and read() of the same bytes.
 *
 * The plain side writes each tensor's bytes as they lie in memory into one
 * file (truncated in place, and also written anew and renamed over the old
 * one, the atomic protocol tf_checkpoint_save follows), and reads them back into newly allocated buffers, one per tensor,
 * all alive until the end, as any loader's are (reading every tensor into
 * one buffer reused would skip the first touch of the memory, which a
 * loader cannot). Both sides work in TMPDIR
 * (default /tmp) on the same file system, through its page cache: the
 * figures are what the library adds to the system's own cost, not a disk's
 * speed.
 */
#define _POSIX_C_SOURCE 200809L

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tenferro/checkpoint.h>
#include <tenferro/tenferro.h>

#include "bench_train.h"
#include "bench_util.h"

#define MAX_TENSORS 32

const tf_bench_train_sizes tf_bench_train_full = {5, 20, 64, 784, 256, 10, (size_t)25 << 20,
                                                  1024, 2048, 6, 4};
const tf_bench_train_sizes tf_bench_train_quick = {1, 2, 4, 8, 6, 3, 4096, 16, 32, 2, 2};

typedef struct set {
    tf_tensor *t[MAX_TENSORS];
    int n;
    size_t bytes;
} set;

static tf_status make_set(const tf_bench_train_sizes *z, set *w)
{
    memset(w, 0, sizeof *w);
    size_t m = (size_t)(z->ck_rows * z->ck_cols);
    float *v = malloc(m * sizeof *v);
    if (!v)
        return TF_ERR_OUT_OF_MEMORY;
    tf_bench_rng rng = tf_bench_rng_seed(5);
    for (size_t i = 0; i < m; i++)
        v[i] = (float)tf_bench_rng_uniform(&rng);
    tf_status st = TF_OK;
    const int64_t mat[2] = {z->ck_rows, z->ck_cols}, vec[1] = {(int64_t)m / 2};
    for (int i = 0; i < z->ck_matrices + z->ck_vectors && !st && w->n < MAX_TENSORS; i++) {
        int is_mat = i < z->ck_matrices;
        size_t n = is_mat ? m : m / 2;
        st = tf_tensor_from_host(TF_F32, is_mat ? 2 : 1, is_mat ? mat : vec, v, n, &w->t[w->n]);
        if (!st) {
            w->n++;
            w->bytes += n * 4;
        }
    }
    free(v);
    return st;
}

static void free_set(set *w)
{
    for (int i = 0; i < w->n; i++)
        tf_tensor_release(w->t[i]);
}

static int write_all(int fd, const void *p, size_t n)
{
    for (const char *c = p; n;) {
        ssize_t k = write(fd, c, n);
        if (k <= 0)
            return 0;
        c += k;
        n -= (size_t)k;
    }
    return 1;
}

static int read_all(int fd, void *p, size_t n)
{
    for (char *c = p; n;) {
        ssize_t k = read(fd, c, n);
        if (k <= 0)
            return 0;
        c += k;
        n -= (size_t)k;
    }
    return 1;
}

/*
 * The plain side: write every tensor's bytes (into the file truncated, or, with
 * `renamed`, into a new file renamed over it: the protocol tf_checkpoint_save
 * follows), or read them into new buffers.
 */
static int plain(const set *w, const char *path, int writing, int renamed, double *seconds)
{
    void *bufs[MAX_TENSORS] = {NULL};
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.new", path);
    double t0 = tf_bench_now();
    int fd = !writing  ? open(path, O_RDONLY)
             : renamed ? open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644)
                       : open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int ok = fd >= 0;
    for (int i = 0; i < w->n && ok; i++) {
        const void *data;
        size_t count, bytes = tf_tensor_numel(w->t[i]) * 4;
        if (writing)
            ok = tf_tensor_data(w->t[i], TF_F32, &data, &count) == TF_OK &&
                 write_all(fd, data, bytes);
        else
            ok = (bufs[i] = malloc(bytes)) != NULL && read_all(fd, bufs[i], bytes);
    }
    if (fd >= 0)
        ok = close(fd) == 0 && ok;
    if (renamed)
        ok = rename(tmp, path) == 0 && ok;
    for (int i = 0; i < w->n; i++)
        free(bufs[i]);
    *seconds = tf_bench_now() - t0;
    return ok;
}

static tf_status ours(const set *w, const char *path, tf_engine *load_into, int saving,
                      double *seconds)
{
    double t0 = tf_bench_now();
    tf_checkpoint *ck = NULL;
    tf_status st = TF_OK;
    if (saving) {
        char name[16];
        st = tf_checkpoint_create(&ck);
        for (int i = 0; i < w->n && !st; i++) {
            snprintf(name, sizeof name, "t%d", i);
            st = tf_checkpoint_add(ck, name, w->t[i]);
        }
        if (!st)
            st = tf_checkpoint_save(ck, path);
    } else {
        st = tf_checkpoint_load(path, load_into, &ck);
    }
    tf_checkpoint_destroy(ck);
    *seconds = tf_bench_now() - t0;
    return st;
}

static void figure(const char *metric, double value, const char *unit)
{
    printf("checkpoint %s %.6g %s\n", metric, value, unit);
    fflush(stdout);
}

/* One side of the comparison. */
typedef struct side {
    const char *metric;
    int plain, writing, renamed;
    tf_engine *engine;
} side;

#define N_SIDES 6

/*
 * Every side once per repetition, in turn (one untimed round first), so that
 * the page cache and the file system's writeback treat the sides alike; the
 * median of each side's repetitions as its throughput in gbps[].
 */
static tf_status time_sides(const set *w, const side *sides, const char *ck_path,
                            const char *raw_path, int reps, double *gbps)
{
    double secs[N_SIDES][TF_BENCH_MAX_REPS], t;
    tf_status st = TF_OK;
    for (int r = -1; r < reps && !st; r++) {
        for (int k = 0; k < N_SIDES && !st; k++) {
            const side *d = &sides[k];
            if (d->plain)
                st = plain(w, raw_path, d->writing, d->renamed, &t) ? TF_OK
                                                                    : TF_ERR_RUNTIME_STATE;
            else
                st = ours(w, ck_path, d->engine, d->writing, &t);
            if (r >= 0)
                secs[k][r] = t;
        }
    }
    for (int k = 0; k < N_SIDES && !st; k++) {
        gbps[k] = (double)w->bytes / tf_bench_median(secs[k], reps) / 1e9;
        figure(sides[k].metric, gbps[k], "GB/s");
    }
    return st;
}

tf_status tf_bench_checkpoint(tf_engine *e, tf_runtime *rt, tf_session *s,
                              const tf_bench_train_sizes *z)
{
    (void)rt, (void)s;
    const char *dir = getenv("TMPDIR") && getenv("TMPDIR")[0] ? getenv("TMPDIR") : "/tmp";
    char ck_path[512], raw_path[512];
    snprintf(ck_path, sizeof ck_path, "%s/tenferro-bench-%ld.safetensors", dir, (long)getpid());
    snprintf(raw_path, sizeof raw_path, "%s/tenferro-bench-%ld.raw", dir, (long)getpid());
    set w;
    tf_status st = make_set(z, &w);
    double g[N_SIDES] = {0};
    const side sides[N_SIDES] = {{"plain_write_gbps", 1, 1, 0, NULL},
                                 {"plain_write_rename_gbps", 1, 1, 1, NULL},
                                 {"save_gbps", 0, 1, 0, NULL},
                                 {"plain_read_gbps", 1, 0, 0, NULL},
                                 {"load_gbps", 0, 0, 0, NULL},
                                 {"load_to_engine_gbps", 0, 0, 0, e}};
    if (!st)
        fprintf(stderr, "bench: checkpoint: %d tensors, %.1f MiB in %s\n", w.n,
                (double)w.bytes / (1 << 20), dir);
    if (!st)
        st = time_sides(&w, sides, ck_path, raw_path, z->reps, g);
    if (!st) {
        figure("save_vs_write", g[2] / g[0], "x");
        figure("save_vs_write_rename", g[2] / g[1], "x");
        figure("load_vs_read", g[4] / g[3], "x");
    } else if (tf_train_error_message()[0]) {
        fprintf(stderr, "bench: checkpoint: %s\n", tf_train_error_message());
    }
    unlink(ck_path);
    unlink(raw_path);
    free_set(&w);
    return st;
}
