/*
 * ops_reduce.c - reductions over an axis list (reduced axes are removed from
 * the shape) and their rules; mean and sum of squares are composites of
 * recorded ops.
 */
#include <string.h>

#include "rule_builder.h"

static const char *const k_x[] = {"x"};

/* The kept axes' extents (the result shape) and the keep-dims shape. */
static size_t reduced_shape(const tf_tensor *v, uint64_t mask, int64_t *kept, int64_t *keepdims)
{
    size_t r = 0;
    for (uint32_t d = 0; d < v->rank; d++) {
        bool red = mask >> d & 1;
        keepdims[d] = red ? 1 : v->shape[d];
        if (!red)
            kept[r++] = v->shape[d];
    }
    return r;
}

/*
 * Runs REDUCE op over the axes in `mask` and returns a tensor of the reduced
 * shape (a view of the keep-dims result).
 */
tf_status tf__reduce_value(tf_session *s, tf_reduce_op op, tf_tensor *v, uint64_t mask,
                           tf_tensor **out)
{
    int64_t kept[TF_MAX_RANK], keepdims[TF_MAX_RANK];
    size_t r = reduced_shape(v, mask, kept, keepdims);
    tf_tensor *t, *view;
    tf_status st = tf__empty(s, v->dtype, v->rank, keepdims, &t);
    if (st)
        return st;
    tf_reduce_params p = {sizeof p, (uint32_t)op, mask};
    if (!(st = tf__exec(s, TF_PRIM_REDUCE, &p, 1, &v, t)))
        st = tf_tensor_reshape(t, r, kept, &view);
    tf_tensor_release(t);
    if (!st)
        *out = view;
    return st;
}

tf_status tf__reduce_forward(tf_session *s, uint32_t opid, tf_reduce_op op, tf_eager *x,
                             const int *axes, size_t n_axes, tf_eager **out)
{
    const char *name = tf__op_rule(opid)->name;
    tf_status st = tf__check_inputs(name, s, &x, 1, k_x, out);
    uint64_t mask = 0;
    if (!st)
        st = tf__axes_mask(name, axes, n_axes, x->value->rank, &mask);
    tf_tensor *t;
    if (!st)
        st = tf__reduce_value(s, op, x->value, mask, &t);
    if (st)
        return st;
    tf_attrs a = {0};
    a.mask = mask;
    return tf__record(s, opid, &a, &x, 1, t, out);
}

/* Broadcasts a reduced-shape tensor back over x's shape (the kept axes). */
tf_eager *tf__rb_unreduce(rule_builder *b, tf_eager *r, const tf_tensor *x, uint64_t mask)
{
    int dims[TF_MAX_RANK];
    size_t n = 0;
    for (uint32_t d = 0; d < x->rank; d++)
        if (!(mask >> d & 1))
            dims[n++] = (int)d;
    return rb_broadcast_in_dim(b, r, x->rank, x->shape, dims);
}

/* The axis list of a mask (for re-issuing a reduction). */
static size_t mask_axes(uint64_t mask, uint32_t rank, int *axes)
{
    size_t n = 0;
    for (uint32_t d = 0; d < rank; d++)
        if (mask >> d & 1)
            axes[n++] = (int)d;
    return n;
}

/* ---- sum ---- */

TF_API tf_status tf_session_reduce_sum(tf_session *s, tf_eager *x, const int *axes,
                                       size_t n_axes, tf_eager **out)
{
    return tf__reduce_forward(s, TF_OP_reduce_sum, TF_REDUCE_SUM, x, axes, n_axes, out);
}

static tf_status sum_vjp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *cot,
                         const bool *need, tf_eager **cin)
{
    rule_builder b = rb_begin(s);
    return rb_done(&b, tf__rb_unreduce(&b, cot, nd->inputs[0]->value, nd->attrs.mask), &cin[0]);
}

static tf_status sum_jvp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *const *tin,
                         tf_eager **tout)
{
    int axes[TF_MAX_RANK];
    size_t n = mask_axes(nd->attrs.mask, nd->inputs[0]->value->rank, axes);
    return tf_session_reduce_sum(s, tin[0], axes, n, tout);
}

/* ---- composites ---- */

TF_API tf_status tf_session_reduce_mean(tf_session *s, tf_eager *x, const int *axes,
                                        size_t n_axes, tf_eager **out)
{
    tf_status st = tf__check_inputs("reduce_mean", s, &x, 1, k_x, out);
    uint64_t mask = 0;
    if (!st)
        st = tf__axes_mask("reduce_mean", axes, n_axes, x->value->rank, &mask);
    if (st)
        return st;
    if (!tf_dtype_is_float(x->value->dtype))
        return tf__error(TF_ERR_DTYPE_MISMATCH, "reduce_mean", "x",
                         "reduce_mean: defined for f32 and f64, not %s",
                         tf_dtype_name(x->value->dtype));
    double count = 1.0;
    for (uint32_t d = 0; d < x->value->rank; d++)
        if (mask >> d & 1)
            count *= (double)x->value->shape[d];
    rule_builder b = rb_begin(s);
    tf_eager *sum = NULL;
    st = tf_session_reduce_sum(s, x, axes, n_axes, &sum);
    rb_keep(&b, st, sum);
    /* an empty group has mean NaN, as 0/0 says */
    return rb_done(&b, rb_div(&b, sum, rb_scalar(&b, x, count)), out);
}

TF_API tf_status tf_session_reduce_sum_squares(tf_session *s, tf_eager *x, const int *axes,
                                               size_t n_axes, tf_eager **out)
{
    tf_status st = tf__check_inputs("reduce_sum_squares", s, &x, 1, k_x, out);
    if (st)
        return st;
    rule_builder b = rb_begin(s);
    tf_eager *sq = rb_mul(&b, x, x);
    if (b.st)
        return rb_finish(&b);
    tf_eager *r = NULL;
    st = tf_session_reduce_sum(s, sq, axes, n_axes, &r);
    return rb_done(&b, rb_keep(&b, st, r), out);
}

const tf_op_rule tf__rule_reduce_sum = {"reduce_sum", sum_vjp, sum_jvp};
