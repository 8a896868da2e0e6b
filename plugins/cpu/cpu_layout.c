/*
 * cpu_layout.c - data movement: fill and copy of strided views, and the
 * COPY, PAD and CONCATENATE primitives built on them.
 *
 * Movement is dtype-blind: elements are 1, 4, 8 or 16 bytes (c128) and are moved with
 * fixed-size memcpy (a single load/store, free of aliasing questions). A copy
 * walks its axes in the order of the destination's strides, so that writes
 * stream; dense-to-dense rows become one memcpy, and transposing copies go
 * tile by tile.
 */
#include <string.h>

#include "cpu_internal.h"

/* Elements per thread below which copies and fills stay on one thread. */
#define CPU_COPY_GRAIN (64 * 1024)
#define CPU_COPY_TILE 32

void tf__cpu_scalar_bytes(uint32_t dtype, tf_scalar value, double imag, void *out)
{
    switch ((tf_dtype)dtype) {
    case TF_F32: {
        float f = (float)value.f;
        memcpy(out, &f, sizeof f);
        break;
    }
    case TF_F64: memcpy(out, &value.f, sizeof value.f); break;
    case TF_I32: {
        /* Keeps the low 32 bits, as a C cast of int64 to int32 does on every target. */
        int32_t i = (int32_t)(uint32_t)(uint64_t)value.i;
        memcpy(out, &i, sizeof i);
        break;
    }
    case TF_I64: memcpy(out, &value.i, sizeof value.i); break;
    case TF_BOOL: {
        uint8_t b = value.i != 0;
        memcpy(out, &b, sizeof b);
        break;
    }
    case TF_C64: {
        float z[2] = {(float)value.f, (float)imag};
        memcpy(out, z, sizeof z);
        break;
    }
    case TF_C128: {
        double z[2] = {value.f, imag};
        memcpy(out, z, sizeof z);
        break;
    }
    }
}

/* ---- fill and copy rows --------------------------------------------------- */

#define FILL_ROW(NAME, SIZE)                                                                      \
    static int NAME(const void *ctx, int64_t n, char *const *p, const int64_t *s, cpu_err *err)   \
    {                                                                                             \
        char *restrict o = p[0];                                                                  \
        unsigned char v[SIZE];                                                                    \
        memcpy(v, ctx, (SIZE));                                                                   \
        (void)err;                                                                                \
        if (s[0] == 1) {                                                                          \
            for (int64_t i = 0; i < n; i++) {                                                     \
                memcpy(o + i * (SIZE), v, (SIZE));                                                \
            }                                                                                     \
        } else {                                                                                  \
            for (int64_t i = 0; i < n; i++) {                                                     \
                memcpy(o + i * s[0] * (SIZE), v, (SIZE));                                         \
            }                                                                                     \
        }                                                                                         \
        return 0;                                                                                 \
    }

FILL_ROW(fill_row1, 1)
FILL_ROW(fill_row4, 4)
FILL_ROW(fill_row8, 8)
FILL_ROW(fill_row16, 16)

/* ---- copy ---------------------------------------------------------------- */

#define COPY_ROW(NAME, FILL, SIZE)                                                                \
    static int NAME(const void *ctx, int64_t n, char *const *p, const int64_t *s, cpu_err *err)   \
    {                                                                                             \
        char *restrict o = p[0];                                                                  \
        const char *restrict x = p[1];                                                            \
        (void)ctx;                                                                                \
        if (s[1] == 0) { /* a broadcast materialised: a fill with x's element */                 \
            return FILL(x, n, p, s, err);                                                         \
        }                                                                                         \
        (void)err;                                                                                \
        if (s[0] == 1 && s[1] == 1) {                                                             \
            memcpy(o, x, (size_t)n * (SIZE));                                                     \
        } else {                                                                                  \
            for (int64_t i = 0; i < n; i++) {                                                     \
                memcpy(o + i * s[0] * (SIZE), x + i * s[1] * (SIZE), (SIZE));                     \
            }                                                                                     \
        }                                                                                         \
        return 0;                                                                                 \
    }

COPY_ROW(copy_row1, fill_row1, 1)
COPY_ROW(copy_row4, fill_row4, 4)
COPY_ROW(copy_row8, fill_row8, 8)
COPY_ROW(copy_row16, fill_row16, 16)

static cpu_row_fn copy_row_for(size_t esize)
{
    return esize == 1 ? copy_row1 : esize == 4 ? copy_row4 : esize == 8 ? copy_row8 : copy_row16;
}

/*
 * Transposing copies: when the source is strided along the destination's
 * inner axis but dense along another axis j, rows would read one element per
 * cache line. Tiles of CPU_COPY_TILE x CPU_COPY_TILE elements over axes 0 and
 * j keep the source lines in cache while the destination is written in order.
 */
typedef struct tile_job {
    const cpu_iter *it;
    int j;            /* the axis along which the source is densest */
    int64_t tiles0;   /* tiles along axis 0 */
    int64_t tilesj;   /* tiles along axis j */
    size_t esize;
} tile_job;

#define TILE_COPY(NAME, SIZE)                                                                     \
    static void NAME(char *o, const char *x, int64_t n0, int64_t nj, const int64_t *d,             \
                     const int64_t *s)                                                            \
    {                                                                                             \
        for (int64_t b = 0; b < nj; b++) {                                                        \
            for (int64_t a = 0; a < n0; a++) {                                                    \
                memcpy(o + (a * d[0] + b * d[1]) * (SIZE), x + (a * s[0] + b * s[1]) * (SIZE),    \
                       (SIZE));                                                                   \
            }                                                                                     \
        }                                                                                         \
    }

TILE_COPY(tile_copy1, 1)
TILE_COPY(tile_copy4, 4)
TILE_COPY(tile_copy8, 8)
TILE_COPY(tile_copy16, 16)

/* Work item: one tile of one position of the axes other than 0 and j. */
static int tile_piece(const void *ctx, int64_t begin, int64_t end, cpu_err *err)
{
    const tile_job *job = ctx;
    const cpu_iter *it = job->it;
    const int64_t d[2] = {it->strides[0][0], it->strides[0][job->j]};
    const int64_t s[2] = {it->strides[1][0], it->strides[1][job->j]};
    (void)err;
    for (int64_t item = begin; item < end; item++) {
        int64_t t0 = item % job->tiles0, rest = item / job->tiles0;
        int64_t tj = rest % job->tilesj;
        rest /= job->tilesj;
        int64_t a0 = t0 * CPU_COPY_TILE, aj = tj * CPU_COPY_TILE;
        int64_t doff = a0 * d[0] + aj * d[1], soff = a0 * s[0] + aj * s[1];
        for (int k = 1; k < it->rank; k++) {
            if (k != job->j) {
                int64_t i = rest % it->shape[k];
                rest /= it->shape[k];
                doff += i * it->strides[0][k];
                soff += i * it->strides[1][k];
            }
        }
        int64_t n0 = it->shape[0] - a0 < CPU_COPY_TILE ? it->shape[0] - a0 : CPU_COPY_TILE;
        int64_t nj = it->shape[job->j] - aj < CPU_COPY_TILE ? it->shape[job->j] - aj : CPU_COPY_TILE;
        char *o = it->base[0] + doff * (int64_t)job->esize;
        const char *x = it->base[1] + soff * (int64_t)job->esize;
        if (job->esize == 1) {
            tile_copy1(o, x, n0, nj, d, s);
        } else if (job->esize == 4) {
            tile_copy4(o, x, n0, nj, d, s);
        } else if (job->esize == 8) {
            tile_copy8(o, x, n0, nj, d, s);
        } else {
            tile_copy16(o, x, n0, nj, d, s);
        }
    }
    return 0;
}

/* The axis to tile with axis 0, or 0 when rows are good enough. */
static int tile_axis(const cpu_iter *it)
{
    int j = 0;
    uint64_t best = tf__cpu_stride_mag(it->strides[1][0]);
    if (it->rank < 2 || best < 8 || it->shape[0] < 8 || it->total < 4096) {
        return 0;
    }
    for (int k = 1; k < it->rank; k++) {
        uint64_t sk = tf__cpu_stride_mag(it->strides[1][k]);
        if (sk != 0 && sk < best && it->shape[k] >= 8) {
            best = sk;
            j = k;
        }
    }
    return j;
}

int tf__cpu_copy_view(const cpu_engine *e, const cpu_view *dst, const cpu_view *src,
                      cpu_err *err)
{
    const cpu_view *views[2] = {dst, src};
    cpu_iter it;
    tf__cpu_iter_init(&it, 2, views, CPU_ITER_SORT);
    int j = tile_axis(&it);
    if (j == 0) {
        return tf__cpu_iter_run(e, &it, CPU_COPY_GRAIN, copy_row_for(dst->esize), NULL, err);
    }
    tile_job job = {&it, j, (it.shape[0] + CPU_COPY_TILE - 1) / CPU_COPY_TILE,
                    (it.shape[j] + CPU_COPY_TILE - 1) / CPU_COPY_TILE, dst->esize};
    int64_t items = job.tiles0 * job.tilesj * (it.total / (it.shape[0] * it.shape[j]));
    int64_t grain = CPU_COPY_GRAIN / (CPU_COPY_TILE * CPU_COPY_TILE);
    return tf__cpu_parallel_for(e, items, grain, tile_piece, &job, err);
}

/* ---- fill ---------------------------------------------------------------- */


int tf__cpu_fill_view(const cpu_engine *e, const cpu_view *dst, const void *value, cpu_err *err)
{
    /* Axes of stride 0 only rewrite one address: walk them once. */
    cpu_view v = *dst;
    for (int k = 0; k < v.rank; k++) {
        if (v.strides[k] == 0 && v.shape[k] > 1) {
            v.shape[k] = 1;
        }
    }
    const cpu_view *views[1] = {&v};
    cpu_iter it;
    tf__cpu_iter_init(&it, 1, views, CPU_ITER_SORT);
    /* Threads only where no two of them can write the same address. */
    int64_t grain = tf__cpu_view_is_injective(&v) ? CPU_COPY_GRAIN : INT64_MAX;
    cpu_row_fn fn = v.esize == 1   ? fill_row1
                    : v.esize == 4 ? fill_row4
                    : v.esize == 8 ? fill_row8
                                   : fill_row16;
    return tf__cpu_iter_run(e, &it, grain, fn, value, err);
}

/* ---- COPY ---------------------------------------------------------------- */

int tf__cpu_exec_copy(const cpu_engine *e, const tf_exec *x, cpu_err *err)
{
    cpu_view in, out;
    tf__cpu_view_from_operand(&in, x->inputs[0]);
    tf__cpu_view_from_operand(&out, x->outputs[0]);
    return tf__cpu_copy_view(e, &out, &in, err);
}

/* ---- PAD ----------------------------------------------------------------- */

/*
 * For one axis: the input indices i whose position low + i*(interior+1)
 * lands in [0, out_ext): the first one, how many, the first position and the
 * step. Computed in unsigned arithmetic so that no int64 overflows whatever
 * low and interior are.
 */
typedef struct pad_axis {
    int64_t first_in;
    int64_t count;
    int64_t first_out;
    int64_t step;
} pad_axis;

static pad_axis pad_axis_plan(int64_t low, int64_t interior, int64_t in_ext, int64_t out_ext)
{
    pad_axis a = {0, 0, 0, 0};
    uint64_t step = (uint64_t)interior + 1u; /* interior <= INT64_MAX: no wrap */
    uint64_t first = 0;
    if (in_ext == 0 || out_ext == 0 || (low >= 0 && low > out_ext - 1)) {
        return a;
    }
    if (low < 0) {
        uint64_t need = 0u - (uint64_t)low; /* |low| <= 2^63 */
        first = need / step + (need % step != 0);
    }
    uint64_t limit = (uint64_t)(out_ext - 1) - (uint64_t)low; /* true value in [0, 2^64) */
    uint64_t last = limit / step;
    if (last > (uint64_t)(in_ext - 1)) {
        last = (uint64_t)(in_ext - 1);
    }
    if (first > last) {
        return a;
    }
    a.first_in = (int64_t)first;
    a.count = (int64_t)(last - first + 1);
    a.first_out = (int64_t)((uint64_t)low + first * step); /* lands in [0, out_ext) */
    a.step = a.count > 1 ? (int64_t)step : 1;
    return a;
}

int tf__cpu_exec_pad(const cpu_engine *e, const tf_exec *x, cpu_err *err)
{
    const tf_pad_params *pp = x->params;
    cpu_view in, out, src, dst;
    unsigned char value[16];
    int covered = 1;

    tf__cpu_view_from_operand(&in, x->inputs[0]);
    tf__cpu_view_from_operand(&out, x->outputs[0]);
    if (tf__cpu_view_numel(&out) == 0) {
        return 0;
    }
    src = in;
    dst = out;
    for (int k = 0; k < in.rank; k++) {
        if (pp->interior[k] < 0) {
            return tf__cpu_fail(err, TF_ERR_VALIDATION,
                                "cpu: PAD %s: interior[%d] = %lld is negative",
                                tf__cpu_dtype_name(in.dtype), k, (long long)pp->interior[k]);
        }
        pad_axis a = pad_axis_plan(pp->low[k], pp->interior[k], in.shape[k], out.shape[k]);
        covered = covered && a.count == out.shape[k] && a.step == 1;
        tf__cpu_view_shift(&src, k, a.first_in);
        src.shape[k] = a.count;
        tf__cpu_view_shift(&dst, k, a.first_out);
        dst.shape[k] = a.count;
        dst.strides[k] = out.strides[k] * a.step;
    }
    if (!covered) {
        double imag = TF_ABI_HAS_FIELD(pp, tf_pad_params, imag) ? pp->imag : 0.0;
        tf__cpu_scalar_bytes(out.dtype, pp->value, imag, value);
        if (tf__cpu_fill_view(e, &out, value, err) != 0) {
            return 1;
        }
    }
    if (tf__cpu_view_numel(&dst) == 0) {
        return 0;
    }
    return tf__cpu_copy_view(e, &dst, &src, err);
}

/* ---- CONCATENATE --------------------------------------------------------- */

int tf__cpu_exec_concatenate(const cpu_engine *e, const tf_exec *x, cpu_err *err)
{
    const tf_concatenate_params *cp = x->params;
    const int axis = (int)cp->axis;
    cpu_view out;
    int64_t at = 0;

    tf__cpu_view_from_operand(&out, x->outputs[0]);
    for (uint32_t i = 0; i < x->n_inputs; i++) {
        cpu_view in, dst = out;
        tf__cpu_view_from_operand(&in, x->inputs[i]);
        tf__cpu_view_shift(&dst, axis, at);
        dst.shape[axis] = in.shape[axis];
        at += in.shape[axis];
        if (tf__cpu_view_numel(&in) == 0) {
            continue;
        }
        if (tf__cpu_copy_view(e, &dst, &in, err) != 0) {
            return 1;
        }
    }
    return 0;
}
