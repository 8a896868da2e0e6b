/*
 * cpu_dot.c - DOT_GENERAL: a batch of matrix products.
 *
 * The contraction is read as C_b = A_b * B_b with A the lhs as an M x K
 * matrix (rows: its free axes in ascending order, columns: the contracting
 * axes), B the rhs as K x N (rows: contracting axes in the same pair order,
 * columns: its free axes) and C_b the dense M x N column-major block b of the
 * output, b running over the batch axes in lhs_batch order - exactly the
 * output layout the ABI prescribes.
 *
 * An operand is used in place when each axis group merges into one stride
 * (the contracting pairs may be reordered to make that happen, identically on
 * both sides); a float operand must also fit a BLAS layout, plain or
 * transposed, with unit stride one way and a leading dimension >= the other
 * extent. Otherwise the operand is copied into a dense [rows, cols, batch]
 * scratch first. Batch axes never need to merge: each batch is its own call.
 *
 * f32/f64 go through OpenBLAS sgemm/dgemm, c64/c128 through cgemm/zgemm, a
 * conjugated operand (TF_DOT_CONJ_*) as CblasConjNoTrans or CblasConjTrans
 * (OpenBLAS has both); integers (wrapping) and float products too large for
 * BLAS's int dimensions use a plain column-by-column loop.
 *
 * Threads. A threaded engine runs gemm in one of two ways.
 *  - One large product (at least CPU_BLAS_HANDOFF_FLOPS multiply-adds, fewer
 *    batches than threads): OpenBLAS threads it, with the engine's thread
 *    count. Its threaded driver partitions M and N and shares the packed
 *    panels between its threads; the engine cannot (cblas takes whole
 *    matrices), and two single-threaded halves, each packing all of the other
 *    operand, measured 15-35 % slower at 2 threads on 256..1024 (see
 *    docs/performance.md, "matmul at 2 threads").
 *  - Everything else: OpenBLAS single-threaded, the engine's own pool
 *    parallelising. The output of each batch is cut into tiles (tile edges
 *    at least CPU_GEMM_MIN_EDGE and multiples of 16), and the batch x tile
 *    items run on the pool, one single-threaded gemm each. The tiles are
 *    whole columns of C while N allows, and only then cut along M: a block of
 *    whole columns is contiguous (ldc == its M), and OpenBLAS's beta = 0 pass
 *    over C clears a contiguous block with one memset but a block of partial
 *    columns column by column, slowly (sgemm_beta took 13 % of the 2-thread
 *    mlp step's samples when its dW1 = X^T dZ, 784 x 256, was cut in two
 *    along M; whole columns: 0.90 of the step's time). Many batches, or
 *    products of a few million multiply-adds (the mlp's), stay here:
 *    OpenBLAS's workers spin for a while after each threaded call, taking a
 *    core from the pool's next job.
 * OpenBLAS's thread count is process-global, so the two are kept apart by a
 * read-write lock: single-threaded calls hold it shared (any number of
 * engines at once) and run only while the count is one; a handoff holds it
 * exclusively, raises the count, makes its call and sets it back to one
 * before letting go. Another user of the same libopenblas in the process
 * that raises the count is set back to one before this plugin's next
 * single-threaded gemm. The handoff is used only with OpenBLAS's pthreads
 * build (openblas_get_parallel() == 1): in the OpenMP build the count is
 * OpenMP's, which belongs to the application.
 * Neither way partitions K, so every output element is summed in the same
 * order as in one serial call: in practice threaded results equal the serial
 * ones bit for bit (OpenBLAS does not promise it, so "equal within rounding"
 * is the guarantee).
 */
#define _POSIX_C_SOURCE 200809L

#include <cblas.h>
#include <complex.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>

#include "cpu_internal.h"

#define DOT_LOOP_GRAIN (64 * 1024)     /* multiply-adds per thread, at least (loop path) */
#define CPU_GEMM_MIN_EDGE 64            /* shortest tile edge when gemm is split */
#define CPU_GEMM_SPLIT_FLOPS (1 << 21)  /* multiply-adds per batch below which gemm is not split */
#define CPU_BLAS_HANDOFF_FLOPS (1 << 24) /* multiply-adds per batch from which OpenBLAS threads it */

/* The largest M, N or K handed to BLAS (its dimensions are int); a test build may lower it. */
#ifndef CPU_BLAS_DIM_MAX
#define CPU_BLAS_DIM_MAX INT_MAX
#endif

/* ---- OpenBLAS's thread count ------------------------------------------------ */

/* Shared: single-threaded gemms are running; exclusive: the count is being changed. */
static pthread_rwlock_t blas_rw = PTHREAD_RWLOCK_INITIALIZER;

/* Holds blas_rw shared with OpenBLAS at one thread (sets it back if anyone changed it). */
static void blas_hold_single(void)
{
    for (;;) {
        pthread_rwlock_rdlock(&blas_rw);
        if (openblas_get_num_threads() == 1) {
            return;
        }
        pthread_rwlock_unlock(&blas_rw);
        pthread_rwlock_wrlock(&blas_rw);
        openblas_set_num_threads(1);
        pthread_rwlock_unlock(&blas_rw);
    }
}

/* ---- plan ------------------------------------------------------------------ */

/* An ordered list of axes of one operand. */
typedef struct axis_list {
    int n;
    int64_t ext[TF_MAX_RANK];
    int64_t str[TF_MAX_RANK];
} axis_list;

/* One operand as a batch of matrices. */
typedef struct dot_side {
    const char *base;
    int64_t rows, cols;
    int64_t rs, cs;                 /* strides of the merged row and column groups */
    int64_t bstride[TF_MAX_RANK];   /* per batch axis, in lhs_batch order */
    int blas_trans;                 /* BLAS path: transposed layout */
    int64_t ld;                     /* BLAS path: leading dimension */
    void *pack;                     /* scratch holding the packed copy, or NULL */
} dot_side;

typedef struct dot_plan {
    uint32_t dtype;
    size_t esize;
    int64_t m, n, k, nbatch;
    int nb;
    int64_t bshape[TF_MAX_RANK];
    dot_side a, b;
    int conj_a, conj_b; /* complex only: the operand enters conjugated */
    char *out;
} dot_plan;

static void list_push(axis_list *l, const cpu_view *v, uint32_t axis)
{
    l->ext[l->n] = v->shape[axis];
    l->str[l->n] = v->strides[axis];
    l->n++;
}

static int64_t list_total(const axis_list *l)
{
    int64_t t = 1;
    for (int i = 0; i < l->n; i++) {
        if (l->ext[i] == 0) {
            return 0; /* first: the other extents of an empty operand may overflow */
        }
    }
    for (int i = 0; i < l->n; i++) {
        t *= l->ext[i];
    }
    return t;
}

/* One stride for the whole group (column-major over it), or 0 if none exists. */
static int list_merge(const axis_list *l, int64_t *stride)
{
    int64_t expect = 0;
    int have = 0;
    *stride = 1;
    for (int i = 0; i < l->n; i++) {
        if (l->ext[i] == 1) {
            continue;
        }
        if (have && l->str[i] != expect) {
            return 0;
        }
        if (!have) {
            *stride = l->str[i];
            have = 1;
        }
        /* an empty operand's strides may be anything (tests/fuzz/fuzz_shapes) */
        if (__builtin_mul_overflow(l->str[i], l->ext[i], &expect)) {
            return 0;
        }
    }
    return 1;
}

/* The free axes of an operand: in neither list, ascending. */
static void free_axes(axis_list *l, const cpu_view *v, const uint32_t *c, uint32_t nc,
                      const uint32_t *b, uint32_t nbatch)
{
    unsigned used = 0;
    for (uint32_t i = 0; i < nc; i++) {
        used |= 1u << c[i];
    }
    for (uint32_t i = 0; i < nbatch; i++) {
        used |= 1u << b[i];
    }
    l->n = 0;
    for (int k = 0; k < v->rank; k++) {
        if (!(used & (1u << k))) {
            list_push(l, v, (uint32_t)k);
        }
    }
}

/*
 * The contracting pairs in an order where both sides merge if there is one:
 * as given, by lhs stride, or by rhs stride. Writes both ordered lists.
 */
static void contracting_axes(axis_list *la, axis_list *lb, const cpu_view *a, const cpu_view *b,
                             const tf_dot_general_params *p)
{
    uint32_t order[TF_MAX_RANK];
    const uint32_t nc = p->n_contracting;
    for (int attempt = 0; attempt < 3; attempt++) {
        for (uint32_t i = 0; i < nc; i++) {
            order[i] = i;
        }
        const uint32_t *key = attempt == 1 ? p->lhs_contracting : p->rhs_contracting;
        const cpu_view *kv = attempt == 1 ? a : b;
        for (uint32_t i = 1; attempt > 0 && i < nc; i++) {
            for (uint32_t j = i; j > 0; j--) {
                uint64_t s1 = tf__cpu_stride_mag(kv->strides[key[order[j]]]);
                uint64_t s0 = tf__cpu_stride_mag(kv->strides[key[order[j - 1]]]);
                if (s1 >= s0) {
                    break;
                }
                uint32_t t = order[j];
                order[j] = order[j - 1];
                order[j - 1] = t;
            }
        }
        la->n = lb->n = 0;
        for (uint32_t i = 0; i < nc; i++) {
            list_push(la, a, p->lhs_contracting[order[i]]);
            list_push(lb, b, p->rhs_contracting[order[i]]);
        }
        int64_t s;
        if (list_merge(la, &s) && list_merge(lb, &s)) {
            return;
        }
    }
}

/* Whether (rows x cols, strides rs/cs) is a BLAS column-major matrix, maybe transposed. */
static int blas_layout(dot_side *s)
{
    const int64_t r = s->rows, c = s->cols;
    if ((r <= 1 || s->rs == 1) && (c <= 1 || s->cs >= (r > 1 ? r : 1))) {
        s->blas_trans = 0;
        s->ld = c <= 1 ? (r > 1 ? r : 1) : s->cs;
    } else if ((c <= 1 || s->cs == 1) && (r <= 1 || s->rs >= (c > 1 ? c : 1))) {
        s->blas_trans = 1;
        s->ld = r <= 1 ? (c > 1 ? c : 1) : s->rs;
    } else {
        return 0;
    }
    return s->ld <= INT_MAX;
}

/* Copies the operand into dense [rows, cols, batch] scratch. */
static int side_pack(const cpu_engine *e, dot_side *s, const cpu_view *v, const axis_list *rows,
                     const axis_list *cols, const axis_list *batch, cpu_err *err)
{
    cpu_view src = *v, dst;
    int r = 0;
    const axis_list *groups[3] = {rows, cols, batch};
    for (int g = 0; g < 3; g++) {
        for (int i = 0; i < groups[g]->n; i++, r++) {
            src.shape[r] = groups[g]->ext[i];
            src.strides[r] = groups[g]->str[i];
        }
    }
    src.rank = r;
    /* A broadcast operand may have far more elements than memory: that is an OOM, not a wrap. */
    int64_t numel = tf__cpu_view_numel(&src);
    if ((uint64_t)numel > SIZE_MAX / v->esize) {
        return tf__cpu_fail(err, TF_ERR_OUT_OF_MEMORY,
                            "cpu: DOT_GENERAL: packing an operand of %lld elements needs more "
                            "memory than can be addressed",
                            (long long)numel);
    }
    s->pack = tf__cpu_alloc(e, (size_t)numel * v->esize, err, "DOT_GENERAL");
    if (s->pack == NULL) {
        return 1;
    }
    tf__cpu_view_dense(&dst, s->pack, v->dtype, src.rank, src.shape);
    if (tf__cpu_copy_view(e, &dst, &src, err) != 0) {
        return 1;
    }
    s->base = s->pack;
    s->rs = 1;
    s->cs = s->rows;
    for (int i = 0; i < batch->n; i++) {
        s->bstride[i] = dst.strides[rows->n + cols->n + i];
    }
    return 0;
}

/*
 * Readies one side: in place when its groups merge (and, for BLAS, fit a
 * layout), packed otherwise.
 */
static int side_prepare(const cpu_engine *e, dot_side *s, const cpu_view *v,
                        const axis_list *rows, const axis_list *cols, const axis_list *batch,
                        int blas, cpu_err *err)
{
    s->base = v->base;
    s->pack = NULL;
    s->rows = list_total(rows);
    s->cols = list_total(cols);
    for (int i = 0; i < batch->n; i++) {
        s->bstride[i] = batch->str[i];
    }
    int fits = list_merge(rows, &s->rs) && list_merge(cols, &s->cs);
    if (fits && (!blas || blas_layout(s))) {
        return 0;
    }
    if (side_pack(e, s, v, rows, cols, batch, err) != 0) {
        return 1;
    }
    if (blas) {
        blas_layout(s);
    }
    return 0;
}

/* Element offsets of batch b in both operands. */
static void batch_offsets(const dot_plan *pl, int64_t b, int64_t *aoff, int64_t *boff)
{
    int64_t idx[TF_MAX_RANK];
    tf__cpu_unravel(b, pl->nb, pl->bshape, idx);
    *aoff = *boff = 0;
    for (int i = 0; i < pl->nb; i++) {
        *aoff += idx[i] * pl->a.bstride[i];
        *boff += idx[i] * pl->b.bstride[i];
    }
}

/* ---- BLAS path -------------------------------------------------------------- */

/* How each batch's M x N output is cut: tm x tn tiles, edges multiples of 16. */
typedef struct gemm_job {
    const dot_plan *pl;
    int64_t tm, tn;       /* tiles along M and N */
    int64_t em, en;       /* tile edges (the last tile may be shorter) */
} gemm_job;

/* The BLAS operation of an operand in the (maybe transposed) layout, maybe conjugated. */
static enum CBLAS_TRANSPOSE blas_trans(int trans, int conj)
{
    return trans ? (conj ? CblasConjTrans : CblasTrans) : (conj ? CblasConjNoTrans : CblasNoTrans);
}

/* One single-threaded gemm: rows [m0, m0 + m) and columns [n0, n0 + n) of batch b. */
static void gemm_tile(const dot_plan *pl, int64_t b, int64_t m0, int64_t m, int64_t n0,
                      int64_t n)
{
    int64_t aoff, boff;
    batch_offsets(pl, b, &aoff, &boff);
    aoff += m0 * pl->a.rs; /* m0 > 0 only when M > 1, where rs is the real row stride */
    boff += n0 * pl->b.cs;
    const enum CBLAS_TRANSPOSE ta = blas_trans(pl->a.blas_trans, pl->conj_a);
    const enum CBLAS_TRANSPOSE tb = blas_trans(pl->b.blas_trans, pl->conj_b);
    const int lda = (int)pl->a.ld, ldb = (int)pl->b.ld, ldc = pl->m > 1 ? (int)pl->m : 1;
    const int64_t coff = b * pl->m * pl->n + n0 * pl->m + m0;
    if (pl->dtype == TF_C64) {
        const float _Complex one = 1.0f, zero = 0.0f;
        cblas_cgemm(CblasColMajor, ta, tb, (int)m, (int)n, (int)pl->k, &one,
                    (const float _Complex *)(const void *)pl->a.base + aoff, lda,
                    (const float _Complex *)(const void *)pl->b.base + boff, ldb, &zero,
                    (float _Complex *)(void *)pl->out + coff, ldc);
    } else if (pl->dtype == TF_C128) {
        const double _Complex one = 1.0, zero = 0.0;
        cblas_zgemm(CblasColMajor, ta, tb, (int)m, (int)n, (int)pl->k, &one,
                    (const double _Complex *)(const void *)pl->a.base + aoff, lda,
                    (const double _Complex *)(const void *)pl->b.base + boff, ldb, &zero,
                    (double _Complex *)(void *)pl->out + coff, ldc);
    } else if (pl->dtype == TF_F32) {
        const float *a = (const float *)(const void *)pl->a.base + aoff;
        const float *bb = (const float *)(const void *)pl->b.base + boff;
        float *c = (float *)(void *)pl->out + coff;
        cblas_sgemm(CblasColMajor, ta, tb, (int)m, (int)n, (int)pl->k, 1.0f, a, lda, bb, ldb,
                    0.0f, c, ldc);
    } else {
        const double *a = (const double *)(const void *)pl->a.base + aoff;
        const double *bb = (const double *)(const void *)pl->b.base + boff;
        double *c = (double *)(void *)pl->out + coff;
        cblas_dgemm(CblasColMajor, ta, tb, (int)m, (int)n, (int)pl->k, 1.0, a, lda, bb, ldb, 0.0,
                    c, ldc);
    }
}

static int gemm_piece(const void *ctx, int64_t begin, int64_t end, cpu_err *err)
{
    const gemm_job *job = ctx;
    const dot_plan *pl = job->pl;
    (void)err;
    for (int64_t item = begin; item < end; item++) {
        int64_t i = item % job->tm, rest = item / job->tm;
        int64_t j = rest % job->tn, b = rest / job->tn;
        int64_t m0 = i * job->em, n0 = j * job->en;
        int64_t m = pl->m - m0 < job->em ? pl->m - m0 : job->em;
        int64_t n = pl->n - n0 < job->en ? pl->n - n0 : job->en;
        gemm_tile(pl, b, m0, m, n0, n);
    }
    return 0;
}

/* Ceil(x / parts) rounded up to a multiple of 16. */
static int64_t tile_edge(int64_t x, int64_t parts)
{
    int64_t e = (x + parts - 1) / parts;
    return (e + 15) / 16 * 16;
}

/* Enough tiles per batch to give every thread work, none thinner than the minimum edge. */
static void gemm_split(const cpu_engine *e, const dot_plan *pl, gemm_job *job)
{
    job->tm = job->tn = 1;
    /* Products of three extents are taken in double: they need not fit int64. */
    if (e->threads > 1 && pl->nbatch < e->threads &&
        (double)pl->m * (double)pl->n * (double)pl->k >= CPU_GEMM_SPLIT_FLOPS) {
        int64_t want = (e->threads + pl->nbatch - 1) / pl->nbatch;
        /* whole columns first: see the file's comment, "Threads" */
        while (job->tm * job->tn < want) {
            if (pl->n / (job->tn + 1) >= CPU_GEMM_MIN_EDGE) {
                job->tn++;
            } else if (pl->m / (job->tm + 1) >= CPU_GEMM_MIN_EDGE) {
                job->tm++;
            } else {
                break;
            }
        }
    }
    job->em = job->tm > 1 ? tile_edge(pl->m, job->tm) : pl->m;
    job->en = job->tn > 1 ? tile_edge(pl->n, job->tn) : pl->n;
    job->tm = (pl->m + job->em - 1) / job->em; /* rounding the edges may leave fewer tiles */
    job->tn = (pl->n + job->en - 1) / job->en;
}

/* Whether a product of this many multiply-adds is handed to OpenBLAS's own threads. */
static int blas_handoff(const cpu_engine *e, const dot_plan *pl, double flops)
{
    return e->threads > 1 && pl->nbatch < e->threads && flops >= CPU_BLAS_HANDOFF_FLOPS &&
           openblas_get_parallel() == 1;
}

static int run_blas(const cpu_engine *e, const dot_plan *pl, cpu_err *err)
{
    if (blas_handoff(e, pl, (double)pl->m * (double)pl->n * (double)pl->k)) {
        pthread_rwlock_wrlock(&blas_rw);
        openblas_set_num_threads(e->threads);
        for (int64_t b = 0; b < pl->nbatch; b++) {
            gemm_tile(pl, b, 0, pl->m, 0, pl->n);
        }
        openblas_set_num_threads(1);
        pthread_rwlock_unlock(&blas_rw);
        return 0;
    }
    gemm_job job = {pl, 1, 1, pl->m, pl->n};
    gemm_split(e, pl, &job);
    int64_t items = pl->nbatch * job.tm * job.tn;
    double per_item = (double)job.em * (double)job.en * (double)pl->k;
    int64_t grain = per_item < CPU_GEMM_SPLIT_FLOPS ? (int64_t)(CPU_GEMM_SPLIT_FLOPS / per_item) : 1;
    blas_hold_single();
    int failed = tf__cpu_parallel_for(e, items, grain, gemm_piece, &job, err);
    pthread_rwlock_unlock(&blas_rw);
    return failed;
}

/* ---- loop path ---------------------------------------------------------------- */

/* Work item: rows [m0, m1) of column n of batch b; C = sum over k of A[:, k] * B[k, n]. */
#define DOT_LOOP(NAME, T, MULADD)                                                                 \
    static void NAME(const dot_plan *pl, int64_t b, int64_t n, int64_t m0, int64_t m1)           \
    {                                                                                             \
        int64_t aoff, boff;                                                                       \
        batch_offsets(pl, b, &aoff, &boff);                                                       \
        const T *a = (const T *)(const void *)pl->a.base + aoff;                                  \
        const T *bb = (const T *)(const void *)pl->b.base + boff + n * pl->b.cs;                  \
        T *c = (T *)(void *)pl->out + (b * pl->n + n) * pl->m;                                    \
        const int64_t ars = pl->a.rs, acs = pl->a.cs, brs = pl->b.rs;                             \
        for (int64_t i = m0; i < m1; i++) {                                                       \
            c[i] = 0;                                                                             \
        }                                                                                         \
        for (int64_t kk = 0; kk < pl->k; kk++) {                                                  \
            const T y = bb[kk * brs];                                                             \
            const T *ak = a + kk * acs;                                                           \
            if (ars == 1) {                                                                       \
                for (int64_t i = m0; i < m1; i++) {                                               \
                    c[i] = MULADD(c[i], ak[i], y);                                                \
                }                                                                                 \
            } else {                                                                              \
                for (int64_t i = m0; i < m1; i++) {                                               \
                    c[i] = MULADD(c[i], ak[i * ars], y);                                          \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }

#define MULADD_F(c, x, y) ((c) + (x) * (y))
#define MULADD_I32(c, x, y) ((int32_t)((uint32_t)(c) + (uint32_t)(x) * (uint32_t)(y)))
#define MULADD_I64(c, x, y) ((int64_t)((uint64_t)(c) + (uint64_t)(x) * (uint64_t)(y)))

DOT_LOOP(loop_f32, float, MULADD_F)
DOT_LOOP(loop_f64, double, MULADD_F)
DOT_LOOP(loop_i32, int32_t, MULADD_I32)
DOT_LOOP(loop_i64, int64_t, MULADD_I64)

/* Complex: y and each lhs element conjugated when the plan says so (sums in the dtype). */
#define MULADD_Z(c, x, y) ((c) + (pl->conj_a ? conj(x) : (x)) * (y))
#define DOT_LOOP_Z(NAME, T)                                                                       \
    static void NAME(const dot_plan *pl, int64_t b, int64_t n, int64_t m0, int64_t m1)           \
    {                                                                                             \
        int64_t aoff, boff;                                                                       \
        batch_offsets(pl, b, &aoff, &boff);                                                       \
        const T *a = (const T *)(const void *)pl->a.base + aoff;                                  \
        const T *bb = (const T *)(const void *)pl->b.base + boff + n * pl->b.cs;                  \
        T *c = (T *)(void *)pl->out + (b * pl->n + n) * pl->m;                                    \
        for (int64_t i = m0; i < m1; i++) {                                                       \
            c[i] = 0;                                                                             \
        }                                                                                         \
        for (int64_t kk = 0; kk < pl->k; kk++) {                                                  \
            const T y = pl->conj_b ? conj(bb[kk * pl->b.rs]) : bb[kk * pl->b.rs];                 \
            for (int64_t i = m0; i < m1; i++) {                                                   \
                c[i] = MULADD_Z(c[i], a[kk * pl->a.cs + i * pl->a.rs], y);                        \
            }                                                                                     \
        }                                                                                         \
    }

DOT_LOOP_Z(loop_c64, float _Complex)
DOT_LOOP_Z(loop_c128, double _Complex)

typedef void (*dot_loop_fn)(const dot_plan *pl, int64_t b, int64_t n, int64_t m0, int64_t m1);

typedef struct loop_job {
    const dot_plan *pl;
    dot_loop_fn fn;
    int64_t mblock; /* rows per work item */
    int64_t mblocks;
} loop_job;

static int loop_piece(const void *ctx, int64_t begin, int64_t end, cpu_err *err)
{
    const loop_job *job = ctx;
    (void)err;
    for (int64_t item = begin; item < end; item++) {
        int64_t mb = item % job->mblocks, col = item / job->mblocks;
        int64_t m0 = mb * job->mblock;
        int64_t m1 = m0 + job->mblock < job->pl->m ? m0 + job->mblock : job->pl->m;
        job->fn(job->pl, col / job->pl->n, col % job->pl->n, m0, m1);
    }
    return 0;
}

static int run_loops(const cpu_engine *e, const dot_plan *pl, cpu_err *err)
{
    static const dot_loop_fn fns[TF_DTYPE_COUNT] = {
        [TF_F32] = loop_f32, [TF_F64] = loop_f64, [TF_I32] = loop_i32, [TF_I64] = loop_i64,
        [TF_C64] = loop_c64, [TF_C128] = loop_c128};
    loop_job job = {pl, fns[pl->dtype], pl->m, 1};
    int64_t columns = pl->nbatch * pl->n;
    /* Few columns: cut them into row blocks too, so that every thread has work. */
    if (e->threads > 1 && columns < e->threads && pl->m >= 128) {
        job.mblock = (pl->m + e->threads - 1) / e->threads;
        job.mblocks = (pl->m + job.mblock - 1) / job.mblock;
    }
    int64_t per_item = job.mblock * pl->k;
    int64_t grain = per_item > 0 ? DOT_LOOP_GRAIN / per_item : 1;
    return tf__cpu_parallel_for(e, columns * job.mblocks, grain > 0 ? grain : 1, loop_piece, &job,
                                err);
}

/* ---- entry -------------------------------------------------------------------- */

static int dot_validate(const tf_exec *x, const cpu_view *a, const cpu_view *b, const cpu_view *o,
                        cpu_err *err);

/* The axis groups of both operands and the plan's sizes. */
typedef struct dot_groups {
    axis_list afree, bfree, ac, bc, ab, bb;
} dot_groups;

static void dot_plan_init(dot_plan *pl, dot_groups *g, const cpu_view *a, const cpu_view *b,
                          const cpu_view *o, const tf_dot_general_params *p)
{
    free_axes(&g->afree, a, p->lhs_contracting, p->n_contracting, p->lhs_batch, p->n_batch);
    free_axes(&g->bfree, b, p->rhs_contracting, p->n_contracting, p->rhs_batch, p->n_batch);
    contracting_axes(&g->ac, &g->bc, a, b, p);
    g->ab.n = g->bb.n = 0;
    for (uint32_t i = 0; i < p->n_batch; i++) {
        list_push(&g->ab, a, p->lhs_batch[i]);
        list_push(&g->bb, b, p->rhs_batch[i]);
    }
    pl->dtype = o->dtype;
    pl->esize = o->esize;
    pl->m = list_total(&g->afree);
    pl->n = list_total(&g->bfree);
    pl->k = list_total(&g->ac);
    pl->nbatch = list_total(&g->ab);
    pl->nb = g->ab.n;
    memcpy(pl->bshape, g->ab.ext, sizeof pl->bshape);
    pl->out = o->base;
    pl->a.pack = pl->b.pack = NULL;
    uint32_t cj = TF_ABI_HAS_FIELD(p, tf_dot_general_params, conjugate) &&
                          tf_dtype_is_complex((tf_dtype)o->dtype)
                      ? p->conjugate
                      : 0;
    pl->conj_a = (cj & TF_DOT_CONJ_LHS) != 0;
    pl->conj_b = (cj & TF_DOT_CONJ_RHS) != 0;
}

int tf__cpu_exec_dot_general(const cpu_engine *e, const tf_exec *x, cpu_err *err)
{
    cpu_view a, b, o;
    dot_groups g;
    dot_plan pl;

    tf__cpu_view_from_operand(&a, x->inputs[0]);
    tf__cpu_view_from_operand(&b, x->inputs[1]);
    tf__cpu_view_from_operand(&o, x->outputs[0]);
    if (dot_validate(x, &a, &b, &o, err) != 0) {
        return 1;
    }
    dot_plan_init(&pl, &g, &a, &b, &o, x->params);
    if (pl.m == 0 || pl.n == 0 || pl.nbatch == 0) {
        return 0;
    }
    if (pl.k == 0) {
        unsigned char zero[16] = {0}; /* all-zero bytes are 0 in every dtype */
        return tf__cpu_fill_view(e, &o, zero, err);
    }
    int blas = tf_dtype_is_inexact((tf_dtype)pl.dtype) && pl.m <= CPU_BLAS_DIM_MAX &&
               pl.n <= CPU_BLAS_DIM_MAX && pl.k <= CPU_BLAS_DIM_MAX;
    int failed = side_prepare(e, &pl.a, &a, &g.afree, &g.ac, &g.ab, blas, err) ||
                 side_prepare(e, &pl.b, &b, &g.bc, &g.bfree, &g.bb, blas, err);
    if (!failed) {
        failed = blas ? run_blas(e, &pl, err) : run_loops(e, &pl, err);
    }
    tf__cpu_free(e, pl.a.pack);
    tf__cpu_free(e, pl.b.pack);
    return failed;
}

/* ---- validation (an inconsistent contraction would read out of bounds) --------- */

static int dot_bad(cpu_err *err, const char *what, long long v1, long long v2)
{
    return tf__cpu_fail(err, TF_ERR_VALIDATION, "cpu: DOT_GENERAL: %s (%lld, %lld)", what, v1, v2);
}

/* Marks `axis` used in *mask; fails if out of range or used twice. */
static int dot_use(unsigned *mask, uint32_t axis, int rank, cpu_err *err)
{
    if ((int64_t)axis >= rank) {
        return dot_bad(err, "axis out of range (axis, rank)", axis, rank);
    }
    if (*mask & (1u << axis)) {
        return dot_bad(err, "axis listed twice (axis, rank)", axis, rank);
    }
    *mask |= 1u << axis;
    return 0;
}

static int dot_validate(const tf_exec *x, const cpu_view *a, const cpu_view *b, const cpu_view *o,
                        cpu_err *err)
{
    const tf_dot_general_params *p = x->params;
    unsigned ma = 0, mb = 0;
    if (p->n_contracting > TF_MAX_RANK || p->n_batch > TF_MAX_RANK) {
        return dot_bad(err, "too many axes (contracting, batch)", p->n_contracting, p->n_batch);
    }
    for (uint32_t i = 0; i < p->n_contracting + p->n_batch; i++) {
        int c = i < p->n_contracting;
        uint32_t la = c ? p->lhs_contracting[i] : p->lhs_batch[i - p->n_contracting];
        uint32_t lb = c ? p->rhs_contracting[i] : p->rhs_batch[i - p->n_contracting];
        if (dot_use(&ma, la, a->rank, err) || dot_use(&mb, lb, b->rank, err)) {
            return 1;
        }
        if (a->shape[la] != b->shape[lb]) {
            return dot_bad(err, "paired extents differ (lhs, rhs)", a->shape[la], b->shape[lb]);
        }
    }
    int r = 0;
    int64_t want[3 * TF_MAX_RANK];
    for (int k = 0; k < a->rank; k++) {
        if (!(ma & (1u << k))) {
            want[r++] = a->shape[k];
        }
    }
    for (int k = 0; k < b->rank; k++) {
        if (!(mb & (1u << k))) {
            want[r++] = b->shape[k];
        }
    }
    for (uint32_t i = 0; i < p->n_batch; i++) {
        want[r++] = a->shape[p->lhs_batch[i]];
    }
    if (r != o->rank) {
        return dot_bad(err, "output rank (expected, got)", r, o->rank);
    }
    for (int k = 0; k < r; k++) {
        if (want[k] != o->shape[k]) {
            return dot_bad(err, "output extent (expected, got)", want[k], o->shape[k]);
        }
    }
    return 0;
}
