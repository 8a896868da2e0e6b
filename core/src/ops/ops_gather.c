/*
 * ops_gather.c - indexing ops that pick elements by integer operands: the
 * gathers (gather, index_select, take_along_axis), scatter, dynamic_slice
 * and the internal dynamic_update_slice, with their rules.
 *
 * Every op here is linear in its data operands, so each rule is another op
 * of this file applied to the cotangent or tangent: a gather's VJP
 * scatter-adds, a dynamic slice's VJP writes the cotangent into zeros. The
 * integer operands (gather and scatter indices, dynamic starts) are inputs
 * of the recorded node so that rules can reuse them, but carry no
 * derivative. Nothing is conjugated: these maps only move elements.
 */
#include <string.h>

#include "rule_builder.h"

/* ===================================================================== */
/* Helpers                                                                */
/* ===================================================================== */

static tf_status check_index_dtype(const char *op, const char *arg, const tf_eager *ix)
{
    tf_dtype dt = ix->value->dtype;
    if (dt != TF_I32 && dt != TF_I64)
        return tf__error(TF_ERR_DTYPE_MISMATCH, op, arg, "%s: %s is %s, expected i32 or i64", op,
                         arg, tf_dtype_name(dt));
    return TF_OK;
}

/* ---- rule-builder wrappers of this file's ops ---- */

/* x gathered like the gather or scatter node nd (same axis, mode, index). */
static tf_eager *rb_gather_like(rule_builder *b, const tf_node *nd, tf_eager *x)
{
    tf_eager *o = NULL;
    if (!x)
        return NULL;
    RB_CALL_(b, tf_session_gather(b->s, x, (int)nd->attrs->i[0], nd->inputs[1],
                                  (tf_gather_mode)nd->attrs->i[1], &o));
}

/* updates scattered into base like the gather or scatter node nd. */
static tf_eager *rb_scatter_like(rule_builder *b, const tf_node *nd, tf_eager *base,
                                 tf_eager *updates, tf_scatter_combine combine)
{
    tf_eager *o = NULL;
    if (!base || !updates)
        return NULL;
    RB_CALL_(b, tf_session_scatter(b->s, base, (int)nd->attrs->i[0], nd->inputs[1], updates,
                                   (tf_gather_mode)nd->attrs->i[1], combine, &o));
}

static tf_eager *rb_full(rule_builder *b, tf_dtype dtype, size_t rank, const int64_t *shape,
                         double value)
{
    tf_eager *o = NULL;
    RB_CALL_(b, tf_session_full(b->s, dtype, rank, shape, value, &o));
}

/* An untracked i64 constant counting along `axis` (no derivative). */
static tf_status iota_i64(tf_session *s, size_t rank, const int64_t *shape, uint32_t axis,
                          tf_eager **out)
{
    tf_iota_params p = {sizeof p, axis};
    tf_tensor *t;
    tf_status st = tf__exec_new(s, TF_PRIM_IOTA, &p, 0, NULL, TF_I64, rank, shape, &t);
    if (st)
        return st;
    tf_eager *e = tf__eager_new(s->rt, t, false);
    tf_tensor_release(t);
    if (!e)
        return TF_ERR_OUT_OF_MEMORY;
    *out = e;
    return TF_OK;
}

static tf_eager *rb_iota(rule_builder *b, size_t rank, const int64_t *shape, uint32_t axis)
{
    tf_eager *o = NULL;
    RB_CALL_(b, iota_i64(b->s, rank, shape, axis, &o));
}

/* ===================================================================== */
/* gather and scatter                                                     */
/* ===================================================================== */

/* The shape GATHER produces (and SCATTER's updates have) for x and index. */
static tf_status gathered_shape(const char *op, const tf_tensor *x, const tf_tensor *ix,
                                uint32_t axis, tf_gather_mode mode, int64_t *shape)
{
    if (mode == TF_GATHER_INDEX_SELECT) {
        if (ix->rank != 1)
            return tf__error(TF_ERR_SHAPE_MISMATCH, op, "index",
                             "%s: the index must be a vector (rank 1), not rank %u", op, ix->rank);
        memcpy(shape, x->shape, x->rank * sizeof *shape);
        shape[axis] = ix->shape[0];
        return TF_OK;
    }
    if (ix->rank != x->rank)
        return tf__error(TF_ERR_SHAPE_MISMATCH, op, "index",
                         "%s: the index has rank %u, the operand rank %u", op, ix->rank, x->rank);
    for (uint32_t d = 0; d < x->rank; d++)
        if (d != axis && ix->shape[d] > x->shape[d])
            return tf__error(TF_ERR_SHAPE_MISMATCH, op, "index",
                             "%s: the index has extent %lld on axis %u, the operand only %lld", op,
                             (long long)ix->shape[d], d, (long long)x->shape[d]);
    memcpy(shape, ix->shape, ix->rank * sizeof *shape);
    return TF_OK;
}

/* Checks what gather and scatter share; sets the axis and the gathered shape. */
static tf_status check_indexing(const char *op, const tf_eager *x, const tf_eager *index, int axis,
                                tf_gather_mode mode, uint32_t *ax, int64_t *shape)
{
    tf_status st = check_index_dtype(op, "index", index);
    if (!st && mode != TF_GATHER_INDEX_SELECT && mode != TF_GATHER_ALONG_AXIS)
        st = tf__error(TF_ERR_VALIDATION, op, "mode", "%s: unknown gather mode %d", op, (int)mode);
    if (!st)
        st = tf__norm_axis(op, "axis", axis, x->value->rank, ax);
    return st ? st : gathered_shape(op, x->value, index->value, *ax, mode, shape);
}

static tf_status gather_forward(const char *op, tf_session *s, tf_eager *x, int axis,
                                tf_eager *index, tf_gather_mode mode, tf_eager **out)
{
    static const char *const names[] = {"x", "index"};
    tf_eager *xs[2] = {x, index};
    uint32_t ax = 0;
    int64_t shape[TF_MAX_RANK];
    tf_status st = tf__check_inputs(op, s, xs, 2, names, out);
    if (!st)
        st = check_indexing(op, x, index, axis, mode, &ax, shape);
    if (st)
        return st;
    tf_gather_params p = {sizeof p, ax, (uint32_t)mode, 0};
    tf_tensor *t, *in[2] = {x->value, index->value};
    if ((st = tf__exec_new(s, TF_PRIM_GATHER, &p, 2, in, in[0]->dtype, in[0]->rank, shape, &t)))
        return st;
    tf_attrs a = {0};
    a.i[0] = ax;
    a.i[1] = mode;
    return tf__record(s, TF_OP_gather, &a, xs, 2, t, out);
}

TF_API tf_status tf_session_gather(tf_session *s, tf_eager *x, int axis, tf_eager *index,
                                   tf_gather_mode mode, tf_eager **out)
{
    return gather_forward("gather", s, x, axis, index, mode, out);
}

TF_API tf_status tf_session_index_select(tf_session *s, tf_eager *x, int axis, tf_eager *index,
                                         tf_eager **out)
{
    return gather_forward("index_select", s, x, axis, index, TF_GATHER_INDEX_SELECT, out);
}

TF_API tf_status tf_session_take_along_axis(tf_session *s, tf_eager *x, int axis, tf_eager *index,
                                            tf_eager **out)
{
    return gather_forward("take_along_axis", s, x, axis, index, TF_GATHER_ALONG_AXIS, out);
}

/* The cotangent scatter-added into zeros of x (repeated indices add up). */
static tf_status gather_vjp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *cot,
                            const bool *need, tf_eager **cin)
{
    if (!need[0])
        return TF_OK;
    rule_builder b = rb_begin(s);
    tf_eager *zeros = rb_zeros_like(&b, nd->inputs[0]);
    return rb_done(&b, rb_scatter_like(&b, nd, zeros, cot, TF_SCATTER_ADD), &cin[0]);
}

static tf_status gather_jvp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *const *tin,
                            tf_eager **tout)
{
    if (!tin[0])
        return TF_OK; /* the index has no tangent */
    rule_builder b = rb_begin(s);
    return rb_done(&b, rb_gather_like(&b, nd, tin[0]), tout);
}

static tf_status check_updates(const char *op, const tf_eager *base, const tf_eager *updates,
                               tf_scatter_combine combine, const int64_t *shape)
{
    const tf_tensor *b = base->value, *u = updates->value;
    if (combine != TF_SCATTER_ADD && combine != TF_SCATTER_REPLACE)
        return tf__error(TF_ERR_VALIDATION, op, "combine", "%s: unknown combine %d", op,
                         (int)combine);
    if (u->dtype != b->dtype)
        return tf__error(TF_ERR_DTYPE_MISMATCH, op, "updates", "%s: updates are %s, base is %s", op,
                         tf_dtype_name(u->dtype), tf_dtype_name(b->dtype));
    if (combine == TF_SCATTER_ADD && b->dtype == TF_BOOL)
        return tf__error(TF_ERR_DTYPE_MISMATCH, op, "base",
                         "%s: scatter-add is not defined for bool", op);
    size_t r = b->rank; /* the gathered shape has base's rank in both modes */
    if (u->rank != r || memcmp(u->shape, shape, r * sizeof *shape) != 0)
        return tf__error(TF_ERR_SHAPE_MISMATCH, op, "updates",
                         "%s: updates (rank %u) must have the shape a gather with this index "
                         "and axis produces (rank %zu)",
                         op, u->rank, r);
    return TF_OK;
}

TF_API tf_status tf_session_scatter(tf_session *s, tf_eager *base, int axis, tf_eager *index,
                                    tf_eager *updates, tf_gather_mode mode,
                                    tf_scatter_combine combine, tf_eager **out)
{
    static const char *const names[] = {"base", "index", "updates"};
    tf_eager *xs[3] = {base, index, updates};
    uint32_t ax = 0;
    int64_t shape[TF_MAX_RANK];
    tf_status st = tf__check_inputs("scatter", s, xs, 3, names, out);
    if (!st)
        st = check_indexing("scatter", base, index, axis, mode, &ax, shape);
    if (!st)
        st = check_updates("scatter", base, updates, combine, shape);
    if (st)
        return st;
    tf_gather_params p = {sizeof p, ax, (uint32_t)mode, (uint32_t)combine};
    tf_tensor *t, *in[3] = {base->value, index->value, updates->value};
    const tf_tensor *bv = base->value;
    if ((st = tf__exec_new(s, TF_PRIM_SCATTER, &p, 3, in, bv->dtype, bv->rank, bv->shape, &t)))
        return st;
    tf_attrs a = {0};
    a.i[0] = ax;
    a.i[1] = mode;
    a.n[0] = 1;
    a.v[0][0] = combine;
    return tf__record(s, TF_OP_scatter, &a, xs, 3, t, out);
}

/*
 * Bool mask over the updates of a REPLACE scatter: true for the update that
 * lands at its position. Updates collide only when they differ in nothing
 * but their coordinate along the axis, and the last in column-major order
 * wins, i.e. the one with the largest axis coordinate. Scattering each
 * update's axis coordinate (REPLACE, same index) and gathering back gives
 * every update the winner's coordinate at its position; it won if that is
 * its own. Exact with any duplicates, and a constant (no derivative).
 */
static tf_eager *rb_winners(rule_builder *b, const tf_node *nd)
{
    const tf_tensor *base = nd->inputs[0]->value, *upd = nd->inputs[2]->value;
    tf_eager *ids = rb_iota(b, upd->rank, upd->shape, (uint32_t)nd->attrs->i[0]);
    tf_eager *unset = rb_full(b, TF_I64, base->rank, base->shape, -1.0);
    tf_eager *landed = rb_scatter_like(b, nd, unset, ids, TF_SCATTER_REPLACE);
    return rb_compare(b, rb_gather_like(b, nd, landed), ids, TF_COMPARE_EQ);
}

/*
 * ADD: base gets the cotangent, updates its gather. REPLACE: base gets the
 * cotangent with the overwritten positions zeroed, each update the gather
 * of the cotangent where it won and zero where a later duplicate overwrote
 * it.
 */
static tf_status scatter_vjp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *cot,
                             const bool *need, tf_eager **cin)
{
    bool replace = nd->attrs->v[0][0] == TF_SCATTER_REPLACE;
    rule_builder b = rb_begin(s);
    if (need[0]) {
        tf_eager *g = cot;
        if (replace)
            g = rb_scatter_like(&b, nd, cot, rb_zeros_like(&b, nd->inputs[2]), TF_SCATTER_REPLACE);
        rb_set(&b, g, &cin[0]);
    }
    if (need[2]) {
        tf_eager *g = rb_gather_like(&b, nd, cot);
        if (replace && nd->inputs[2]->value->numel > 0)
            g = rb_select(&b, rb_winners(&b, nd), g, rb_scalar(&b, cot, 0.0));
        rb_set(&b, g, &cin[2]);
    }
    return rb_finish(&b);
}

/* The same scatter of the tangents (zeros for a missing one). */
static tf_status scatter_jvp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *const *tin,
                             tf_eager **tout)
{
    tf_scatter_combine combine = (tf_scatter_combine)nd->attrs->v[0][0];
    if (!tin[0] && !tin[2])
        return TF_OK;
    rule_builder b = rb_begin(s);
    if (!tin[2] && combine == TF_SCATTER_ADD)
        return rb_done(&b, tin[0], tout);
    tf_eager *tb = tin[0] ? tin[0] : rb_zeros_like(&b, nd->inputs[0]);
    tf_eager *tu = tin[2] ? tin[2] : rb_zeros_like(&b, nd->inputs[2]);
    return rb_done(&b, rb_scatter_like(&b, nd, tb, tu, combine), tout);
}

/* ===================================================================== */
/* dynamic_slice and dynamic_update_slice                                 */
/* ===================================================================== */

static tf_status check_starts(const char *op, const tf_eager *starts, uint32_t rank)
{
    tf_status st = check_index_dtype(op, "starts", starts);
    if (st)
        return st;
    const tf_tensor *t = starts->value;
    if (t->rank != 1 || t->shape[0] != (int64_t)rank)
        return tf__error(TF_ERR_SHAPE_MISMATCH, op, "starts",
                         "%s: starts must be a vector of %u entries (one per axis of x)", op, rank);
    return TF_OK;
}

static tf_status check_sizes(const tf_tensor *x, const int64_t *sizes)
{
    if (x->rank && !sizes)
        return tf__null_arg("dynamic_slice", "sizes");
    for (uint32_t d = 0; d < x->rank; d++) {
        if (sizes[d] < 0)
            return tf__error(TF_ERR_VALIDATION, "dynamic_slice", "sizes",
                             "dynamic_slice: sizes[%u] = %lld is negative", d, (long long)sizes[d]);
        if (sizes[d] > x->shape[d])
            return tf__error(TF_ERR_SHAPE_MISMATCH, "dynamic_slice", "sizes",
                             "dynamic_slice: sizes[%u] = %lld exceeds the extent %lld", d,
                             (long long)sizes[d], (long long)x->shape[d]);
    }
    return TF_OK;
}

TF_API tf_status tf_session_dynamic_slice(tf_session *s, tf_eager *x, tf_eager *starts,
                                          const int64_t *sizes, tf_eager **out)
{
    static const char *const names[] = {"x", "starts"};
    tf_eager *xs[2] = {x, starts};
    tf_status st = tf__check_inputs("dynamic_slice", s, xs, 2, names, out);
    if (!st)
        st = check_starts("dynamic_slice", starts, x->value->rank);
    if (!st)
        st = check_sizes(x->value, sizes);
    if (st)
        return st;
    tf_tensor *t, *in[2] = {x->value, starts->value};
    uint32_t r = in[0]->rank;
    if ((st = tf__exec_new(s, TF_PRIM_DYNAMIC_SLICE, NULL, 2, in, in[0]->dtype, r, sizes, &t)))
        return st;
    tf_attrs a = {0};
    tf__attrs_put(&a, 0, sizes, r);
    return tf__record(s, TF_OP_dynamic_slice, &a, xs, 2, t, out);
}

/*
 * base with the block at starts (clamped like DYNAMIC_SLICE, for update's
 * extents) replaced by update. Internal: the VJP of dynamic_slice. Its
 * callers pass consistent operands; the engine checks them all the same.
 */
static tf_status dynamic_update_slice(tf_session *s, tf_eager *base, tf_eager *update,
                                      tf_eager *starts, tf_eager **out)
{
    tf_eager *xs[3] = {base, update, starts};
    tf_tensor *t, *in[3] = {base->value, update->value, starts->value};
    const tf_tensor *bv = base->value;
    tf_status st = tf__exec_new(s, TF_PRIM_DYNAMIC_UPDATE_SLICE, NULL, 3, in, bv->dtype, bv->rank,
                                bv->shape, &t);
    return st ? st : tf__record(s, TF_OP_dynamic_update_slice, NULL, xs, 3, t, out);
}

static tf_eager *rb_dynamic_update_slice(rule_builder *b, tf_eager *base, tf_eager *update,
                                         tf_eager *starts)
{
    tf_eager *o = NULL;
    if (!base || !update)
        return NULL;
    RB_CALL_(b, dynamic_update_slice(b->s, base, update, starts, &o));
}

/* The cotangent written into zeros of x at the same (clamped) starts. */
static tf_status dslice_vjp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *cot,
                            const bool *need, tf_eager **cin)
{
    if (!need[0])
        return TF_OK;
    rule_builder b = rb_begin(s);
    tf_eager *zeros = rb_zeros_like(&b, nd->inputs[0]);
    return rb_done(&b, rb_dynamic_update_slice(&b, zeros, cot, nd->inputs[1]), &cin[0]);
}

static tf_status dslice_jvp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *const *tin,
                            tf_eager **tout)
{
    if (!tin[0])
        return TF_OK;
    return tf_session_dynamic_slice(s, tin[0], nd->inputs[1], nd->attrs->v[0], tout);
}

/* base gets the cotangent with the block zeroed, update the block itself. */
static tf_status dus_vjp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *cot,
                         const bool *need, tf_eager **cin)
{
    tf_eager *update = nd->inputs[1], *starts = nd->inputs[2];
    rule_builder b = rb_begin(s);
    if (need[0])
        rb_set(&b, rb_dynamic_update_slice(&b, cot, rb_zeros_like(&b, update), starts), &cin[0]);
    if (need[1] && !b.st) {
        tf_eager *g = NULL;
        tf_status st = tf_session_dynamic_slice(s, cot, starts, update->value->shape, &g);
        rb_set(&b, rb_keep(&b, st, g), &cin[1]);
    }
    return rb_finish(&b);
}

static tf_status dus_jvp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *const *tin,
                         tf_eager **tout)
{
    if (!tin[0] && !tin[1])
        return TF_OK;
    rule_builder b = rb_begin(s);
    tf_eager *tb = tin[0] ? tin[0] : rb_zeros_like(&b, nd->inputs[0]);
    tf_eager *tu = tin[1] ? tin[1] : rb_zeros_like(&b, nd->inputs[1]);
    return rb_done(&b, rb_dynamic_update_slice(&b, tb, tu, nd->inputs[2]), tout);
}

/* ===================================================================== */
/* Rule table entries                                                     */
/* ===================================================================== */

const tf_op_rule tf__rule_gather = {.name = "gather", .vjp = gather_vjp, .jvp = gather_jvp};
const tf_op_rule tf__rule_scatter = {.name = "scatter", .vjp = scatter_vjp, .jvp = scatter_jvp};
const tf_op_rule tf__rule_dynamic_slice = {
    .name = "dynamic_slice", .vjp = dslice_vjp, .jvp = dslice_jvp};
const tf_op_rule tf__rule_dynamic_update_slice = {
    .name = "dynamic_update_slice", .vjp = dus_vjp, .jvp = dus_jvp};
