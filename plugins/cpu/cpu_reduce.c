/*
 * cpu_reduce.c - REDUCE (sum, prod, max, min) over any set of axes.
 *
 * The input's axes split into kept ones (the output's) and reduced ones;
 * each list is sorted by |stride| and merged where strides chain. Two loop
 * shapes cover the layouts:
 *   - reduced-inner: each output element folds rows of the innermost reduced
 *     axis with eight independent accumulators (vectorisable);
 *   - kept-inner: when a kept axis is innermost in memory (column sums of a
 *     column-major matrix, say), a tile of up to CPU_RED_TILE outputs is
 *     updated together for each reduced position.
 *
 * Determinism: the reduced positions are cut into units of a fixed size
 * that does not depend on the thread count, every unit is folded from the
 * identity in a fixed order, and an output is the fold of its unit partials
 * in unit order. Threads split outputs, or (for few outputs) units whose
 * partials the calling thread folds, so serial and threaded engines give
 * bit-identical results.
 *
 * Accumulators: double for f32 and f64 (f32 sums and products are computed
 * in double and rounded once), 64-bit unsigned for integer SUM/PROD (the low
 * bits wrap exactly like the dtype), 64-bit signed for integer MAX/MIN, 0/1
 * for bool, double complex for c64 and c128 SUM/PROD. Float MAX/MIN propagate NaN. Float SUM folds from -0.0, the exact
 * neutral element, so sums of negative zeros stay -0.0; an empty group gives
 * +0.0.
 */
#include <complex.h>
#include <math.h>
#include <string.h>

#include "cpu_internal.h"
#include "cpu_ops.h"

#define CPU_RED_TILE 512                /* outputs per kept-inner tile */
#define CPU_RED_UNIT_ELEMS (64 * 1024)   /* input elements per unit, kept-inner */
#define CPU_RED_GRAIN (32 * 1024)        /* input elements per thread, at least */

typedef cpu_red_acc red_acc;

typedef struct red_kernel {
    red_acc identity; /* the neutral element the folds start from */
    red_acc empty;    /* the value of an empty group */
    red_acc (*row)(const char *p, int64_t n, int64_t s);
    void (*feed)(red_acc *lanes, int64_t q, int64_t body, const char *p, int64_t n, int64_t s);
    red_acc (*close)(const red_acc *lanes);
    void (*tile)(red_acc *acc, const char *p, int64_t n, int64_t s);
    red_acc (*combine)(red_acc a, red_acc b);
    void (*store)(char *out, red_acc a);
} red_kernel;

/* One kernel: T the dtype, M the accumulator member, AT its type. */
#define RED_KERNEL(NAME, T, M, AT, LOAD, OP, ID, EMPTY)                                           \
    static red_acc NAME##_combine(red_acc a, red_acc b)                                           \
    {                                                                                             \
        red_acc r;                                                                                \
        r.M = OP(a.M, b.M);                                                                       \
        return r;                                                                                 \
    }                                                                                             \
    /* Feeds n elements (stride s) at positions q ... of a fold whose first `body`  \
       positions go to lane position % 8 and the rest to lane 0, each lane in order  \
       of position: a fold fed piece by piece equals the fold of the whole row. */    \
    static void NAME##_feed(red_acc *lanes, int64_t q, int64_t body, const char *p, int64_t n,  \
                            int64_t s)                                                            \
    {                                                                                             \
        const T *x = (const T *)(const void *)p;                                                  \
        AT a[8];                                                                                  \
        int64_t i = 0;                                                                            \
        for (int j = 0; j < 8; j++) {                                                             \
            a[j] = lanes[j].M;                                                                    \
        }                                                                                         \
        for (; i < n && (q + i) % 8 != 0 && q + i < body; i++) {                                  \
            a[(q + i) % 8] = OP(a[(q + i) % 8], LOAD(x[i * s]));                                  \
        }                                                                                         \
        if (s == 1) {                                                                             \
            for (; i + 8 <= n && q + i + 8 <= body; i += 8) {                                     \
                for (int j = 0; j < 8; j++) {                                                     \
                    a[j] = OP(a[j], LOAD(x[i + j]));                                              \
                }                                                                                 \
            }                                                                                     \
        } else {                                                                                  \
            for (; i + 8 <= n && q + i + 8 <= body; i += 8) {                                     \
                for (int j = 0; j < 8; j++) {                                                     \
                    a[j] = OP(a[j], LOAD(x[(i + j) * s]));                                        \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
        for (; i < n; i++) {                                                                      \
            const int lane = q + i < body ? (int)((q + i) % 8) : 0;                               \
            a[lane] = OP(a[lane], LOAD(x[i * s]));                                                \
        }                                                                                         \
        for (int j = 0; j < 8; j++) {                                                             \
            lanes[j].M = a[j];                                                                    \
        }                                                                                         \
    }                                                                                             \
    /* The lanes folded pairwise into one value. */                                              \
    static red_acc NAME##_close(const red_acc *lanes)                                             \
    {                                                                                             \
        red_acc r;                                                                                \
        r.M = OP(OP(OP(lanes[0].M, lanes[1].M), OP(lanes[2].M, lanes[3].M)),                      \
                 OP(OP(lanes[4].M, lanes[5].M), OP(lanes[6].M, lanes[7].M)));                     \
        return r;                                                                                 \
    }                                                                                             \
    /* A row of n elements: eight lanes from the identity, fed once. */                          \
    static red_acc NAME##_row(const char *p, int64_t n, int64_t s)                                \
    {                                                                                             \
        red_acc lanes[8];                                                                         \
        for (int j = 0; j < 8; j++) {                                                             \
            lanes[j].M = (ID);                                                                    \
        }                                                                                         \
        NAME##_feed(lanes, 0, n - n % 8, p, n, s);                                                \
        return NAME##_close(lanes);                                                               \
    }                                                                                             \
    static void NAME##_tile(red_acc *acc, const char *p, int64_t n, int64_t s)                    \
    {                                                                                             \
        const T *x = (const T *)(const void *)p;                                                  \
        if (s == 1) {                                                                             \
            for (int64_t t = 0; t < n; t++) {                                                     \
                acc[t].M = OP(acc[t].M, LOAD(x[t]));                                              \
            }                                                                                     \
        } else {                                                                                  \
            for (int64_t t = 0; t < n; t++) {                                                     \
                acc[t].M = OP(acc[t].M, LOAD(x[t * s]));                                          \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
    static void NAME##_store(char *out, red_acc a)                                                \
    {                                                                                             \
        T v = (T)a.M;                                                                             \
        memcpy(out, &v, sizeof v);                                                                \
    }                                                                                             \
    static const red_kernel NAME = {{.M = (ID)},   {.M = (EMPTY)}, NAME##_row,     NAME##_feed,   \
                                    NAME##_close,  NAME##_tile,    NAME##_combine, NAME##_store};

#define OP_ADD(a, b) ((a) + (b))
#define OP_MUL(a, b) ((a) * (b))
/* IEEE 754-2019 maximum / minimum (cpu_ops.h): NaN propagates and -0 < +0, so the
   fold's result does not depend on the order in which equal zeros meet. */
#define OP_FMAX(a, b) CPU_FMAX(a, b)
#define OP_FMIN(a, b) CPU_FMIN(a, b)
#define OP_MAX(a, b) ((a) > (b) ? (a) : (b))
#define OP_MIN(a, b) ((a) < (b) ? (a) : (b))
#define OP_OR(a, b) ((a) | (b))
#define OP_AND(a, b) ((a) & (b))

#define LOAD_F(v) ((double)(v))
#define LOAD_U(v) ((uint64_t)(int64_t)(v))
#define LOAD_I(v) ((int64_t)(v))
#define LOAD_B(v) ((uint64_t)((v) != 0))
#define LOAD_Z(v) ((double _Complex)(v))

RED_KERNEL(sum_f32, float, f, double, LOAD_F, OP_ADD, -0.0, 0.0)
RED_KERNEL(prod_f32, float, f, double, LOAD_F, OP_MUL, 1.0, 1.0)
RED_KERNEL(max_f32, float, f, double, LOAD_F, OP_FMAX, -INFINITY, -INFINITY)
RED_KERNEL(min_f32, float, f, double, LOAD_F, OP_FMIN, INFINITY, INFINITY)
RED_KERNEL(sum_f64, double, f, double, LOAD_F, OP_ADD, -0.0, 0.0)
RED_KERNEL(prod_f64, double, f, double, LOAD_F, OP_MUL, 1.0, 1.0)
RED_KERNEL(max_f64, double, f, double, LOAD_F, OP_FMAX, -INFINITY, -INFINITY)
RED_KERNEL(min_f64, double, f, double, LOAD_F, OP_FMIN, INFINITY, INFINITY)
/* Integer SUM/PROD: the int32 store keeps the low 32 bits of the wrapped sum. */
RED_KERNEL(sum_i32, int32_t, u, uint64_t, LOAD_U, OP_ADD, 0u, 0u)
RED_KERNEL(prod_i32, int32_t, u, uint64_t, LOAD_U, OP_MUL, 1u, 1u)
RED_KERNEL(max_i32, int32_t, i, int64_t, LOAD_I, OP_MAX, INT32_MIN, INT32_MIN)
RED_KERNEL(min_i32, int32_t, i, int64_t, LOAD_I, OP_MIN, INT32_MAX, INT32_MAX)
RED_KERNEL(sum_i64, int64_t, u, uint64_t, LOAD_U, OP_ADD, 0u, 0u)
RED_KERNEL(prod_i64, int64_t, u, uint64_t, LOAD_U, OP_MUL, 1u, 1u)
RED_KERNEL(max_i64, int64_t, i, int64_t, LOAD_I, OP_MAX, INT64_MIN, INT64_MIN)
RED_KERNEL(min_i64, int64_t, i, int64_t, LOAD_I, OP_MIN, INT64_MAX, INT64_MAX)
RED_KERNEL(any_bool, uint8_t, u, uint64_t, LOAD_B, OP_OR, 0u, 0u)
RED_KERNEL(all_bool, uint8_t, u, uint64_t, LOAD_B, OP_AND, 1u, 1u)
/* Complex SUM folds from -0 - 0i, the exact neutral element, as the float sums do. */
RED_KERNEL(sum_c64, float _Complex, z, double _Complex, LOAD_Z, OP_ADD, CMPLX(-0.0, -0.0),
           CMPLX(0.0, 0.0))
RED_KERNEL(prod_c64, float _Complex, z, double _Complex, LOAD_Z, OP_MUL, CMPLX(1.0, 0.0),
           CMPLX(1.0, 0.0))
RED_KERNEL(sum_c128, double _Complex, z, double _Complex, LOAD_Z, OP_ADD, CMPLX(-0.0, -0.0),
           CMPLX(0.0, 0.0))
RED_KERNEL(prod_c128, double _Complex, z, double _Complex, LOAD_Z, OP_MUL, CMPLX(1.0, 0.0),
           CMPLX(1.0, 0.0))

static const red_kernel *const red_table[TF_DTYPE_COUNT][TF_REDUCE_COUNT_] = {
    [TF_F32] = {&sum_f32, &prod_f32, &max_f32, &min_f32},
    [TF_F64] = {&sum_f64, &prod_f64, &max_f64, &min_f64},
    [TF_I32] = {&sum_i32, &prod_i32, &max_i32, &min_i32},
    [TF_I64] = {&sum_i64, &prod_i64, &max_i64, &min_i64},
    [TF_BOOL] = {[TF_REDUCE_MAX] = &any_bool, [TF_REDUCE_MIN] = &all_bool},
    [TF_C64] = {[TF_REDUCE_SUM] = &sum_c64, [TF_REDUCE_PROD] = &prod_c64},
    [TF_C128] = {[TF_REDUCE_SUM] = &sum_c128, [TF_REDUCE_PROD] = &prod_c128},
};

int tf__cpu_reduce_supported(uint32_t dtype, uint32_t op)
{
    return dtype < TF_DTYPE_COUNT && op < TF_REDUCE_COUNT_ && red_table[dtype][op] != NULL;
}

/* ---- a full reduction in units (ABI 1.6, FUSED's reduced output) --------- */

/*
 * REDUCE over every axis of a dense array of n elements merges them into one
 * reduced-inner row: unit u is row() of positions [u * CPU_RED_UNIT_ROWS, ...)
 * combined into the identity, and the result the identity combined with the
 * units in order (red_item_run, red_split_fold), or the element itself when
 * n is 1 (no axis to fold). These give FUSED the same value bit for bit.
 */
void tf__cpu_reduce_fold_init(cpu_red_fold *f, uint32_t dtype, uint32_t op, int64_t n)
{
    const red_kernel *k = red_table[dtype][op];
    f->kernel = k;
    f->q = 0;
    f->body = n - n % 8;
    for (int j = 0; j < 8; j++) {
        f->lanes[j] = k->identity;
    }
}

void tf__cpu_reduce_fold_feed(cpu_red_fold *f, const char *p, int64_t n, int64_t s)
{
    const red_kernel *k = f->kernel;
    k->feed(f->lanes, f->q, f->body, p, n, s);
    f->q += n;
}

void tf__cpu_reduce_fold_get(const cpu_red_fold *f, double *lanes)
{
    for (int j = 0; j < 8; j++) {
        lanes[j] = f->lanes[j].f;
    }
}

void tf__cpu_reduce_fold_put(cpu_red_fold *f, const double *lanes, int64_t n)
{
    for (int j = 0; j < 8; j++) {
        f->lanes[j].f = lanes[j];
    }
    f->q += n;
}

cpu_red_acc tf__cpu_reduce_fold_close(const cpu_red_fold *f)
{
    const red_kernel *k = f->kernel;
    return k->combine(k->identity, k->close(f->lanes));
}

cpu_red_acc tf__cpu_reduce_unit(uint32_t dtype, uint32_t op, const char *p, int64_t n)
{
    cpu_red_fold f;
    tf__cpu_reduce_fold_init(&f, dtype, op, n);
    tf__cpu_reduce_fold_feed(&f, p, n, 1);
    return tf__cpu_reduce_fold_close(&f);
}

void tf__cpu_reduce_finish(uint32_t dtype, uint32_t op, const cpu_red_acc *units, int64_t nunits,
                           char *out)
{
    const red_kernel *k = red_table[dtype][op];
    if (nunits == 0) {
        k->store(out, k->empty);
        return;
    }
    red_acc total = k->identity;
    for (int64_t u = 0; u < nunits; u++) {
        total = k->combine(total, units[u]);
    }
    k->store(out, total);
}

/* ---- plan ---------------------------------------------------------------- */

typedef struct red_plan {
    const red_kernel *k;
    const char *in;
    char *out;
    size_t esize;
    int nk, nr;
    int64_t kshape[TF_MAX_RANK], kin[TF_MAX_RANK], kout[TF_MAX_RANK];
    int64_t rshape[TF_MAX_RANK], rin[TF_MAX_RANK];
    int64_t nr_total;
    int kinner;     /* loop shape: kept axis 0 innermost */
    int64_t ntiles; /* kept-inner: tiles along kept axis 0 */
    int64_t nitems; /* outputs (reduced-inner) or tiles x outer kept positions */
    int64_t unit;   /* reduced positions per unit */
    int64_t nunits;
    int64_t width;  /* accumulators per item: the longest tile, or 1 */
} red_plan;

/* Sorts n axes by |a[1][k]| (the input strides; stable), permuting all m arrays alike. */
static void sort_axes(int n, int m, int64_t *const *a)
{
    for (int i = 1; i < n; i++) {
        for (int j = i; j > 0 && tf__cpu_stride_mag(a[1][j]) < tf__cpu_stride_mag(a[1][j - 1]); j--) {
            for (int r = 0; r < m; r++) {
                int64_t t = a[r][j];
                a[r][j] = a[r][j - 1];
                a[r][j - 1] = t;
            }
        }
    }
}

/* Merges neighbouring axes (extents a[0]) whose strides a[1 .. m-1] all chain. */
static int merge_axes(int n, int m, int64_t *const *a)
{
    if (n == 0) {
        return 0;
    }
    int out = 0;
    for (int k = 1; k < n; k++) {
        int chain = 1;
        for (int r = 1; r < m; r++) {
            chain = chain && a[r][k] == a[r][out] * a[0][out];
        }
        if (chain) {
            a[0][out] *= a[0][k];
            continue;
        }
        out++;
        for (int r = 0; r < m; r++) {
            a[r][out] = a[r][k];
        }
    }
    return out + 1;
}

static void red_plan_axes(red_plan *pl, const cpu_view *in, const cpu_view *out, uint64_t mask)
{
    pl->nk = pl->nr = 0;
    for (int k = 0; k < in->rank; k++) {
        if (in->shape[k] == 1) {
            continue;
        }
        if ((mask >> k) & 1u) {
            pl->rshape[pl->nr] = in->shape[k];
            pl->rin[pl->nr++] = in->strides[k];
        } else {
            pl->kshape[pl->nk] = in->shape[k];
            pl->kin[pl->nk] = in->strides[k];
            pl->kout[pl->nk++] = out->strides[k];
        }
    }
    int64_t *karr[3] = {pl->kshape, pl->kin, pl->kout};
    int64_t *rarr[2] = {pl->rshape, pl->rin};
    sort_axes(pl->nk, 3, karr);
    sort_axes(pl->nr, 2, rarr);
    pl->nk = merge_axes(pl->nk, 3, karr);
    pl->nr = merge_axes(pl->nr, 2, rarr);
    pl->nr_total = 1;
    for (int k = 0; k < pl->nr; k++) {
        pl->nr_total *= pl->rshape[k];
    }
}

/* Chooses the loop shape and the work decomposition. */
static void red_plan_loops(red_plan *pl)
{
    int64_t nk_total = 1;
    for (int k = 0; k < pl->nk; k++) {
        nk_total *= pl->kshape[k];
    }
    pl->kinner = pl->nk > 0 && pl->kshape[0] >= 4 &&
                 (tf__cpu_stride_mag(pl->kin[0]) < tf__cpu_stride_mag(pl->rin[0]) ||
                  (pl->rshape[0] < 32 && pl->kshape[0] >= 32));
    if (pl->kinner) {
        pl->ntiles = (pl->kshape[0] + CPU_RED_TILE - 1) / CPU_RED_TILE;
        pl->nitems = pl->ntiles * (nk_total / pl->kshape[0]);
        pl->width = pl->kshape[0] < CPU_RED_TILE ? pl->kshape[0] : CPU_RED_TILE;
        /* Units sized in elements keep the split's partials a small fraction of the input. */
        pl->unit = CPU_RED_UNIT_ELEMS / pl->width;
    } else {
        pl->ntiles = 1;
        pl->nitems = nk_total;
        pl->width = 1;
        pl->unit = CPU_RED_UNIT_ROWS;
    }
    pl->nunits = (pl->nr_total + pl->unit - 1) / pl->unit;
}

/* ---- one item ------------------------------------------------------------- */

/* An item's position: its first input element, first output element, tile length. */
typedef struct red_item {
    int64_t in_off;
    int64_t out_off;
    int64_t len;
} red_item;

static red_item red_item_at(const red_plan *pl, int64_t item)
{
    red_item it = {0, 0, 1};
    int64_t rest = item;
    int first = 0;
    if (pl->kinner) {
        int64_t t = item % pl->ntiles;
        rest = item / pl->ntiles;
        it.in_off = t * CPU_RED_TILE * pl->kin[0];
        it.out_off = t * CPU_RED_TILE * pl->kout[0];
        it.len = pl->kshape[0] - t * CPU_RED_TILE;
        it.len = it.len < CPU_RED_TILE ? it.len : CPU_RED_TILE;
        first = 1;
    }
    for (int k = first; k < pl->nk; k++) {
        int64_t i = rest % pl->kshape[k];
        rest /= pl->kshape[k];
        it.in_off += i * pl->kin[k];
        it.out_off += i * pl->kout[k];
    }
    return it;
}

/* The fold of unit u for a reduced-inner item, row by row. */
static red_acc red_unit_rows(const red_plan *pl, int64_t in_off, int64_t u)
{
    int64_t begin = u * pl->unit;
    int64_t end = begin + pl->unit < pl->nr_total ? begin + pl->unit : pl->nr_total;
    int64_t idx[TF_MAX_RANK];
    red_acc acc = pl->k->identity;

    tf__cpu_unravel(begin, pl->nr, pl->rshape, idx);
    for (int64_t pos = begin; pos < end;) {
        int64_t off = in_off;
        for (int k = 0; k < pl->nr; k++) {
            off += idx[k] * pl->rin[k];
        }
        int64_t n = pl->rshape[0] - idx[0];
        n = n < end - pos ? n : end - pos;
        acc = pl->k->combine(acc, pl->k->row(pl->in + off * (int64_t)pl->esize, n, pl->rin[0]));
        pos += n;
        tf__cpu_unravel(pos < pl->nr_total ? pos : 0, pl->nr, pl->rshape, idx);
    }
    return acc;
}

/* The fold of unit u for a kept-inner item: acc[0 .. len) from the identity. */
static void red_unit_tile(const red_plan *pl, const red_item *it, int64_t u, red_acc *acc)
{
    int64_t begin = u * pl->unit;
    int64_t end = begin + pl->unit < pl->nr_total ? begin + pl->unit : pl->nr_total;
    int64_t idx[TF_MAX_RANK];

    for (int64_t t = 0; t < it->len; t++) {
        acc[t] = pl->k->identity;
    }
    tf__cpu_unravel(begin, pl->nr, pl->rshape, idx);
    for (int64_t pos = begin; pos < end; pos++) {
        int64_t off = it->in_off;
        for (int k = 0; k < pl->nr; k++) {
            off += idx[k] * pl->rin[k];
        }
        pl->k->tile(acc, pl->in + off * (int64_t)pl->esize, it->len, pl->kin[0]);
        for (int k = 0; k < pl->nr && ++idx[k] == pl->rshape[k]; k++) {
            idx[k] = 0;
        }
    }
}

/*
 * Stores an item's len results. Only a kept-inner item has more than one,
 * spaced by the first kept axis's stride; otherwise there may be no kept
 * axis at all (a full reduction) and kout[0] was never set, so it must not
 * be read, even to be multiplied by t = 0 (valgrind saw that read).
 */
static void red_store_tile(const red_plan *pl, const red_item *it, const red_acc *acc)
{
    int64_t step = pl->kinner ? pl->kout[0] : 0;
    for (int64_t t = 0; t < it->len; t++) {
        pl->k->store(pl->out + (it->out_off + t * step) * (int64_t)pl->esize, acc[t]);
    }
}

/* Folds every unit of one item in order and stores the result. */
static void red_item_run(const red_plan *pl, int64_t item)
{
    red_item it = red_item_at(pl, item);
    if (!pl->kinner) {
        red_acc total = pl->k->identity;
        for (int64_t u = 0; u < pl->nunits; u++) {
            total = pl->k->combine(total, red_unit_rows(pl, it.in_off, u));
        }
        pl->k->store(pl->out + it.out_off * (int64_t)pl->esize, total);
        return;
    }
    red_acc total[CPU_RED_TILE], part[CPU_RED_TILE];
    for (int64_t t = 0; t < it.len; t++) {
        total[t] = pl->k->identity;
    }
    for (int64_t u = 0; u < pl->nunits; u++) {
        red_unit_tile(pl, &it, u, part);
        for (int64_t t = 0; t < it.len; t++) {
            total[t] = pl->k->combine(total[t], part[t]);
        }
    }
    red_store_tile(pl, &it, total);
}

static int red_items_piece(const void *ctx, int64_t begin, int64_t end, cpu_err *err)
{
    (void)err;
    for (int64_t item = begin; item < end; item++) {
        red_item_run(ctx, item);
    }
    return 0;
}

/* ---- few items, many units: partials computed in parallel ---------------- */

typedef struct red_split {
    const red_plan *pl;
    red_acc *partials; /* [item][unit][width] */
    int64_t width;     /* accumulators per partial */
} red_split;

static int red_split_task(const void *ctx, int64_t task, cpu_err *err)
{
    const red_split *sp = ctx;
    const red_plan *pl = sp->pl;
    int64_t item = task / pl->nunits, u = task % pl->nunits;
    red_item it = red_item_at(pl, item);
    red_acc *dst = sp->partials + task * sp->width;
    (void)err;
    if (pl->kinner) {
        red_unit_tile(pl, &it, u, dst);
    } else {
        dst[0] = red_unit_rows(pl, it.in_off, u);
    }
    return 0;
}

static void red_split_fold(const red_split *sp)
{
    const red_plan *pl = sp->pl;
    red_acc total[CPU_RED_TILE];
    for (int64_t item = 0; item < pl->nitems; item++) {
        red_item it = red_item_at(pl, item);
        for (int64_t t = 0; t < it.len; t++) {
            total[t] = pl->k->identity;
        }
        for (int64_t u = 0; u < pl->nunits; u++) {
            const red_acc *part = sp->partials + (item * pl->nunits + u) * sp->width;
            for (int64_t t = 0; t < it.len; t++) {
                total[t] = pl->k->combine(total[t], part[t]);
            }
        }
        red_store_tile(pl, &it, total);
    }
}

/* Non-zero when done this way; zero to fall back to splitting items. */
static int red_run_split(const cpu_engine *e, const red_plan *pl, cpu_err *err)
{
    red_split sp = {pl, NULL, pl->width};
    size_t n = (size_t)(pl->nitems * pl->nunits * sp.width);
    cpu_err ignored;
    sp.partials = tf__cpu_alloc(e, n * sizeof(red_acc), &ignored, "REDUCE");
    if (sp.partials == NULL) {
        return 0; /* the item split needs no scratch */
    }
    tf__cpu_pool_run(e->pool, pl->nitems * pl->nunits, red_split_task, &sp, err);
    red_split_fold(&sp);
    tf__cpu_free(e, sp.partials);
    return 1;
}

/* ---- entry ---------------------------------------------------------------- */

int tf__cpu_exec_reduce(const cpu_engine *e, const tf_exec *x, cpu_err *err)
{
    const tf_reduce_params *rp = x->params;
    cpu_view in, out;
    red_plan pl;

    tf__cpu_view_from_operand(&in, x->inputs[0]);
    tf__cpu_view_from_operand(&out, x->outputs[0]);
    pl.k = red_table[in.dtype][rp->op];
    if (tf__cpu_view_numel(&out) == 0) {
        return 0;
    }
    if (tf__cpu_view_numel(&in) == 0) {
        unsigned char value[16];
        pl.k->store((char *)value, pl.k->empty);
        return tf__cpu_fill_view(e, &out, value, err);
    }
    pl.in = in.base;
    pl.out = out.base;
    pl.esize = in.esize;
    red_plan_axes(&pl, &in, &out, rp->axes_mask);
    if (pl.nr == 0) {
        /* Nothing to fold: every group has one element. */
        cpu_view src = in;
        memcpy(src.shape, out.shape, sizeof src.shape);
        return tf__cpu_copy_view(e, &out, &src, err);
    }
    red_plan_loops(&pl);
    int64_t per_item = pl.nr_total * pl.width;
    if (e->pool != NULL && pl.nitems < e->threads && pl.nunits > 1 &&
        tf__cpu_view_numel(&in) >= 2 * CPU_RED_GRAIN && red_run_split(e, &pl, err)) {
        return 0;
    }
    int64_t grain = CPU_RED_GRAIN / per_item;
    return tf__cpu_parallel_for(e, pl.nitems, grain > 0 ? grain : 1, red_items_piece, &pl, err);
}
