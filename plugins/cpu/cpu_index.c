/*
 * cpu_index.c - GATHER, SCATTER, DYNAMIC_SLICE and DYNAMIC_UPDATE_SLICE.
 *
 * Both gather modes are one elementwise walk over the output with three
 * operands: the output, an index operand of the output's shape, and x with
 * its stride on the gathered axis set to 0; each element adds index * that
 * stride. ALONG_AXIS uses the index tensor as it is; INDEX_SELECT broadcasts
 * the rank-1 index over the other axes (stride 0 there). SCATTER is the same
 * walk over the updates, writing into the output (a copy of base). Its walk
 * is serial and in column-major order of the updates, which is what makes
 * REPLACE keep the last duplicate and ADD sum duplicates in a fixed order.
 * Scatter ADD on bool is a logical or; on complex values it adds both parts.
 *
 * INDEX_SELECT indices are checked up front (so a bad index fails even when
 * the other extents make the output empty); ALONG_AXIS indices are checked as
 * they are read. The dynamic slices clamp their starts and become copies.
 */
#include <string.h>

#include "cpu_internal.h"

#define GATHER_GRAIN (32 * 1024)

typedef struct index_job {
    int64_t stride; /* of the indexed operand along the axis, in elements */
    int64_t extent; /* of the indexed operand along the axis */
    uint32_t prim;
    uint32_t dtype;
    uint32_t axis;
    uint32_t mode;
} index_job;

static int index_error(cpu_err *err, const index_job *job, int64_t index)
{
    return tf__cpu_fail(err, TF_ERR_OUT_OF_RANGE,
                        "cpu: %s %s (%s, axis %u): index %lld out of range [0, %lld)",
                        tf__cpu_prim_name(job->prim), tf__cpu_dtype_name(job->dtype),
                        tf__cpu_gather_mode_name(job->mode),
                        job->axis, (long long)index, (long long)job->extent);
}

/* Reads element i (stride s) of an i32 or i64 index operand. */
static int64_t index_load(const char *p, uint32_t dtype, int64_t i)
{
    if (dtype == TF_I32) {
        int32_t v;
        memcpy(&v, p + i * 4, 4);
        return v;
    }
    int64_t v;
    memcpy(&v, p + i * 8, 8);
    return v;
}

/* ---- rows -------------------------------------------------------------------- */

/* out[i] = x[i + index[i] * stride]; p = {out, index, x}. */
#define GATHER_ROW(NAME, SIZE, IT)                                                                \
    static int NAME(const void *ctx, int64_t n, char *const *p, const int64_t *s, cpu_err *err)   \
    {                                                                                             \
        const index_job *job = ctx;                                                               \
        const IT *ix = (const IT *)(const void *)p[1];                                            \
        for (int64_t i = 0; i < n; i++) {                                                         \
            int64_t j = (int64_t)ix[i * s[1]];                                                    \
            if (j < 0 || j >= job->extent) {                                                      \
                return index_error(err, job, j);                                                  \
            }                                                                                     \
            memcpy(p[0] + i * s[0] * (SIZE), p[2] + (i * s[2] + j * job->stride) * (SIZE),        \
                   (SIZE));                                                                       \
        }                                                                                         \
        return 0;                                                                                 \
    }

GATHER_ROW(gather1_i32, 1, int32_t)
GATHER_ROW(gather4_i32, 4, int32_t)
GATHER_ROW(gather8_i32, 8, int32_t)
GATHER_ROW(gather16_i32, 16, int32_t)
GATHER_ROW(gather1_i64, 1, int64_t)
GATHER_ROW(gather4_i64, 4, int64_t)
GATHER_ROW(gather8_i64, 8, int64_t)
GATHER_ROW(gather16_i64, 16, int64_t)

/* out[i + index[i] * stride] = upd[i]; p = {out, index, updates}. */
#define SCATTER_SET_ROW(NAME, SIZE, IT)                                                           \
    static int NAME(const void *ctx, int64_t n, char *const *p, const int64_t *s, cpu_err *err)   \
    {                                                                                             \
        const index_job *job = ctx;                                                               \
        const IT *ix = (const IT *)(const void *)p[1];                                            \
        for (int64_t i = 0; i < n; i++) {                                                         \
            int64_t j = (int64_t)ix[i * s[1]];                                                    \
            if (j < 0 || j >= job->extent) {                                                      \
                return index_error(err, job, j);                                                  \
            }                                                                                     \
            memcpy(p[0] + (i * s[0] + j * job->stride) * (SIZE), p[2] + i * s[2] * (SIZE),        \
                   (SIZE));                                                                       \
        }                                                                                         \
        return 0;                                                                                 \
    }

SCATTER_SET_ROW(set1_i32, 1, int32_t)
SCATTER_SET_ROW(set4_i32, 4, int32_t)
SCATTER_SET_ROW(set8_i32, 8, int32_t)
SCATTER_SET_ROW(set16_i32, 16, int32_t)
SCATTER_SET_ROW(set1_i64, 1, int64_t)
SCATTER_SET_ROW(set4_i64, 4, int64_t)
SCATTER_SET_ROW(set8_i64, 8, int64_t)
SCATTER_SET_ROW(set16_i64, 16, int64_t)

/* out[i + index[i] * stride] += upd[i]. */
#define SCATTER_ADD_ROW(NAME, T, IT, ADD)                                                         \
    static int NAME(const void *ctx, int64_t n, char *const *p, const int64_t *s, cpu_err *err)   \
    {                                                                                             \
        const index_job *job = ctx;                                                               \
        const IT *ix = (const IT *)(const void *)p[1];                                            \
        T *o = (T *)(void *)p[0];                                                                 \
        const T *u = (const T *)(const void *)p[2];                                               \
        for (int64_t i = 0; i < n; i++) {                                                         \
            int64_t j = (int64_t)ix[i * s[1]];                                                    \
            if (j < 0 || j >= job->extent) {                                                      \
                return index_error(err, job, j);                                                  \
            }                                                                                     \
            T *dst = o + i * s[0] + j * job->stride;                                              \
            *dst = ADD(*dst, u[i * s[2]]);                                                        \
        }                                                                                         \
        return 0;                                                                                 \
    }

#define ADD_F(a, b) ((a) + (b))
#define ADD_I32(a, b) ((int32_t)((uint32_t)(a) + (uint32_t)(b)))
#define ADD_I64(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))
#define ADD_BOOL(a, b) ((uint8_t)(((a) != 0) | ((b) != 0)))

SCATTER_ADD_ROW(add_f32_i32, float, int32_t, ADD_F)
SCATTER_ADD_ROW(add_f64_i32, double, int32_t, ADD_F)
SCATTER_ADD_ROW(add_i32_i32, int32_t, int32_t, ADD_I32)
SCATTER_ADD_ROW(add_i64_i32, int64_t, int32_t, ADD_I64)
SCATTER_ADD_ROW(add_bool_i32, uint8_t, int32_t, ADD_BOOL)
SCATTER_ADD_ROW(add_f32_i64, float, int64_t, ADD_F)
SCATTER_ADD_ROW(add_f64_i64, double, int64_t, ADD_F)
SCATTER_ADD_ROW(add_i32_i64, int32_t, int64_t, ADD_I32)
SCATTER_ADD_ROW(add_i64_i64, int64_t, int64_t, ADD_I64)
SCATTER_ADD_ROW(add_bool_i64, uint8_t, int64_t, ADD_BOOL)
SCATTER_ADD_ROW(add_c64_i32, float _Complex, int32_t, ADD_F)
SCATTER_ADD_ROW(add_c128_i32, double _Complex, int32_t, ADD_F)
SCATTER_ADD_ROW(add_c64_i64, float _Complex, int64_t, ADD_F)
SCATTER_ADD_ROW(add_c128_i64, double _Complex, int64_t, ADD_F)

/* [index is i64][element size 1, 4, 8, 16] */
static const cpu_row_fn gather_rows[2][4] = {
    {gather1_i32, gather4_i32, gather8_i32, gather16_i32},
    {gather1_i64, gather4_i64, gather8_i64, gather16_i64}};
static const cpu_row_fn set_rows[2][4] = {{set1_i32, set4_i32, set8_i32, set16_i32},
                                          {set1_i64, set4_i64, set8_i64, set16_i64}};
/* [index is i64][dtype] */
static const cpu_row_fn add_rows[2][TF_DTYPE_COUNT] = {
    {add_f32_i32, add_f64_i32, add_i32_i32, add_i64_i32, add_bool_i32, add_c64_i32, add_c128_i32},
    {add_f32_i64, add_f64_i64, add_i32_i64, add_i64_i64, add_bool_i64, add_c64_i64,
     add_c128_i64}};

static int size_slot(size_t esize)
{
    return esize == 1 ? 0 : esize == 4 ? 1 : esize == 8 ? 2 : 3;
}

/* ---- checks and views --------------------------------------------------------- */

static int shape_error(cpu_err *err, uint32_t prim, const char *what, int axis, long long got,
                       long long want)
{
    return tf__cpu_fail(err, TF_ERR_SHAPE_MISMATCH, "cpu: %s: %s on axis %d (%lld, expected %lld)",
                        tf__cpu_prim_name(prim), what, axis, got, want);
}

/*
 * Checks the shapes of a gather/scatter: `walk` is the operand walked (out of
 * GATHER, updates of SCATTER), `x` the indexed one (x, or base).
 */
static int index_check_shapes(const tf_exec *ex, const tf_gather_params *gp, const cpu_view *x,
                              const cpu_view *index, const cpu_view *walk, cpu_err *err)
{
    const int axis = (int)gp->axis;
    if (axis >= x->rank || walk->rank != x->rank || gp->mode > TF_GATHER_ALONG_AXIS) {
        return tf__cpu_fail(err, TF_ERR_VALIDATION, "cpu: %s: bad axis %u or mode %u for rank %d",
                            tf__cpu_prim_name(ex->prim), gp->axis, gp->mode, x->rank);
    }
    int select = gp->mode == TF_GATHER_INDEX_SELECT;
    if (select ? index->rank != 1 : index->rank != x->rank) {
        return shape_error(err, ex->prim, "index rank", -1, index->rank, select ? 1 : x->rank);
    }
    for (int k = 0; k < x->rank; k++) {
        int64_t want = select ? (k == axis ? index->shape[0] : x->shape[k]) : index->shape[k];
        if (walk->shape[k] != want) {
            return shape_error(err, ex->prim, "extent", k, walk->shape[k], want);
        }
        if (!select && k != axis && index->shape[k] > x->shape[k]) {
            return shape_error(err, ex->prim, "index extent", k, index->shape[k], x->shape[k]);
        }
    }
    return 0;
}

/* An INDEX_SELECT index broadcast to the walked shape: stride 0 off the axis. */
static void index_broadcast(cpu_view *v, const cpu_view *walk, int axis)
{
    int64_t s = v->strides[0];
    v->rank = walk->rank;
    for (int k = 0; k < walk->rank; k++) {
        v->shape[k] = walk->shape[k];
        v->strides[k] = k == axis ? s : 0;
    }
}

/* Every INDEX_SELECT index in [0, extent), whatever the other extents. */
static int index_check_all(const cpu_view *index, const index_job *job, cpu_err *err)
{
    for (int64_t i = 0; i < index->shape[0]; i++) {
        int64_t j = index_load(index->base, index->dtype, i * index->strides[0]);
        if (j < 0 || j >= job->extent) {
            return index_error(err, job, j);
        }
    }
    return 0;
}

/*
 * Readies the walk: job, index view (broadcast for INDEX_SELECT) and the
 * indexed view `target` reshaped to the walk with its axis stride 0.
 */
static int index_prepare(const tf_exec *ex, const cpu_view *walk, cpu_view *index,
                         cpu_view *target, index_job *job, cpu_err *err)
{
    const tf_gather_params *gp = ex->params;
    const int axis = (int)gp->axis;
    job->stride = target->strides[axis];
    job->extent = target->shape[axis];
    job->prim = ex->prim;
    job->dtype = target->dtype;
    job->axis = gp->axis;
    job->mode = gp->mode;
    if (gp->mode == TF_GATHER_INDEX_SELECT) {
        if (index_check_all(index, job, err) != 0) {
            return 1;
        }
        index_broadcast(index, walk, axis);
    }
    for (int k = 0; k < walk->rank; k++) {
        target->shape[k] = walk->shape[k];
    }
    target->strides[axis] = 0;
    return 0;
}

/* ---- GATHER and SCATTER -------------------------------------------------------- */

int tf__cpu_exec_gather(const cpu_engine *e, const tf_exec *x, cpu_err *err)
{
    cpu_view xv, index, out;
    index_job job;
    tf__cpu_view_from_operand(&xv, x->inputs[0]);
    tf__cpu_view_from_operand(&index, x->inputs[1]);
    tf__cpu_view_from_operand(&out, x->outputs[0]);
    if (index_check_shapes(x, x->params, &xv, &index, &out, err) != 0 ||
        index_prepare(x, &out, &index, &xv, &job, err) != 0) {
        return 1;
    }
    if (tf__cpu_view_numel(&out) == 0) {
        return 0;
    }
    const cpu_view *views[3] = {&out, &index, &xv};
    cpu_iter it;
    tf__cpu_iter_init(&it, 3, views, 0);
    cpu_row_fn fn = gather_rows[index.dtype == TF_I64][size_slot(xv.esize)];
    return tf__cpu_iter_run(e, &it, GATHER_GRAIN, fn, &job, err);
}

int tf__cpu_exec_scatter(const cpu_engine *e, const tf_exec *x, cpu_err *err)
{
    const tf_gather_params *gp = x->params;
    cpu_view base, index, upd, out;
    index_job job;
    tf__cpu_view_from_operand(&base, x->inputs[0]);
    tf__cpu_view_from_operand(&index, x->inputs[1]);
    tf__cpu_view_from_operand(&upd, x->inputs[2]);
    tf__cpu_view_from_operand(&out, x->outputs[0]);
    if (gp->combine > TF_SCATTER_REPLACE) {
        return tf__cpu_fail(err, TF_ERR_VALIDATION, "cpu: SCATTER: unknown combine %u",
                            gp->combine);
    }
    if (index_check_shapes(x, gp, &base, &index, &upd, err) != 0) {
        return 1;
    }
    if (tf__cpu_copy_view(e, &out, &base, err) != 0) {
        return 1;
    }
    cpu_view target = out;
    if (index_prepare(x, &upd, &index, &target, &job, err) != 0) {
        return 1;
    }
    const cpu_view *views[3] = {&target, &index, &upd};
    cpu_iter it;
    tf__cpu_iter_init(&it, 3, views, 0);
    int i64 = index.dtype == TF_I64;
    cpu_row_fn fn = gp->combine == TF_SCATTER_ADD ? add_rows[i64][out.dtype]
                                                  : set_rows[i64][size_slot(out.esize)];
    return tf__cpu_iter_range(&it, 0, it.total, fn, &job, err);
}

/* ---- dynamic slices -------------------------------------------------------------- */

/* Reads the starts, clamps each to [0, x_ext - block_ext] and moves x's view there. */
static int slice_at_starts(const tf_exec *ex, const tf_operand *starts_op, cpu_view *x,
                           const cpu_view *block, cpu_err *err)
{
    cpu_view starts;
    tf__cpu_view_from_operand(&starts, starts_op);
    if (starts.rank != 1 || starts.shape[0] != x->rank || block->rank != x->rank) {
        return tf__cpu_fail(err, TF_ERR_SHAPE_MISMATCH,
                            "cpu: %s: starts must have one entry per axis of rank %d",
                            tf__cpu_prim_name(ex->prim), x->rank);
    }
    int64_t at[TF_MAX_RANK];
    for (int k = 0; k < x->rank; k++) {
        int64_t room = x->shape[k] - block->shape[k];
        if (room < 0) {
            return shape_error(err, ex->prim, "block extent", k, block->shape[k], x->shape[k]);
        }
        int64_t s = index_load(starts.base, starts.dtype, k * starts.strides[0]);
        at[k] = s < 0 ? 0 : s > room ? room : s;
    }
    for (int k = 0; k < x->rank; k++) {
        tf__cpu_view_shift(x, k, at[k]);
        x->shape[k] = block->shape[k];
    }
    return 0;
}

int tf__cpu_exec_dynamic_slice(const cpu_engine *e, const tf_exec *x, cpu_err *err)
{
    cpu_view xv, out;
    tf__cpu_view_from_operand(&xv, x->inputs[0]);
    tf__cpu_view_from_operand(&out, x->outputs[0]);
    if (slice_at_starts(x, x->inputs[1], &xv, &out, err) != 0) {
        return 1;
    }
    return tf__cpu_copy_view(e, &out, &xv, err);
}

int tf__cpu_exec_dynamic_update_slice(const cpu_engine *e, const tf_exec *x, cpu_err *err)
{
    cpu_view base, upd, out;
    tf__cpu_view_from_operand(&base, x->inputs[0]);
    tf__cpu_view_from_operand(&upd, x->inputs[1]);
    tf__cpu_view_from_operand(&out, x->outputs[0]);
    if (tf__cpu_copy_view(e, &out, &base, err) != 0) {
        return 1;
    }
    cpu_view block = out;
    if (slice_at_starts(x, x->inputs[2], &block, &upd, err) != 0) {
        return 1;
    }
    return tf__cpu_copy_view(e, &block, &upd, err);
}
