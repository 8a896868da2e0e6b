/*
 * ops_reduce.c - reductions over an axis list (reduced axes are removed from
 * the shape) and their rules; mean and sum of squares are composites of
 * recorded ops (logsumexp lives with softmax in ops_composite.c).
 *
 * The derivative of prod is the product of the *other* elements of each
 * group. It is computed without dividing by x (so it is exact with zeros in
 * the group, and its own derivatives are too) by a product tree over the
 * group, padded with ones to a power of two: every element's "others" is
 * the product of its sibling blocks at every level of the tree.
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
    if (!(st = tf__lazy_exec(&s->lazy, TF_PRIM_REDUCE, &p, 1, &v, t)))
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
    if (!st && tf_dtype_is_complex(x->value->dtype) && (op == TF_REDUCE_MAX || op == TF_REDUCE_MIN))
        st = tf__error(TF_ERR_DTYPE_MISMATCH, name, "x", "%s: %s values have no order", name,
                       tf_dtype_name(x->value->dtype));
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

TF_API tf_status tf_session_reduce_sum(tf_session *s, tf_eager *x, const int *axes, size_t n_axes,
                                       tf_eager **out)
{
    return tf__reduce_forward(s, TF_OP_reduce_sum, TF_REDUCE_SUM, x, axes, n_axes, out);
}

static tf_status sum_vjp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *cot,
                         const bool *need, tf_eager **cin)
{
    rule_builder b = rb_begin(s);
    return rb_done(&b, tf__rb_unreduce(&b, cot, nd->inputs[0]->value, nd->attrs->mask), &cin[0]);
}

static tf_status sum_jvp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *const *tin,
                         tf_eager **tout)
{
    int axes[TF_MAX_RANK];
    size_t n = mask_axes(nd->attrs->mask, nd->inputs[0]->value->rank, axes);
    return tf_session_reduce_sum(s, tin[0], axes, n, tout);
}

/* Rule-builder forms of the ops this file's rules use. */
static tf_eager *rx_reduce(rule_builder *b,
                           tf_status (*op)(tf_session *, tf_eager *, const int *, size_t,
                                           tf_eager **),
                           tf_eager *x, const int *axes, size_t n)
{
    tf_eager *o = NULL;
    if (!x)
        return NULL;
    RB_CALL_(b, op(b->s, x, axes, n, &o));
}

static tf_eager *rx_reverse(rule_builder *b, tf_eager *x, const int *axes, size_t n)
{
    tf_eager *o = NULL;
    if (!x)
        return NULL;
    RB_CALL_(b, tf_session_reverse(b->s, x, axes, n, &o));
}

/* x with axis 0 padded at its end with `fill` to `rows` rows, or cropped to them. */
static tf_eager *rx_resize_rows(rule_builder *b, tf_eager *x, int64_t rows, double fill)
{
    tf_eager *o = NULL;
    if (!x)
        return NULL;
    int64_t low[TF_MAX_RANK] = {0}, high[TF_MAX_RANK] = {0}, interior[TF_MAX_RANK] = {0};
    high[0] = rows - x->value->shape[0]; /* negative: crops */
    RB_CALL_(b, tf_session_pad(b->s, x, low, high, interior, fill, &o));
}

/* ---- prod ---- */

TF_API tf_status tf_session_reduce_prod(tf_session *s, tf_eager *x, const int *axes, size_t n_axes,
                                        tf_eager **out)
{
    return tf__reduce_forward(s, TF_OP_reduce_prod, TF_REDUCE_PROD, x, axes, n_axes, out);
}

/* How x's axes regroup into [group, rest]: reduced axes first, then the kept ones. */
typedef struct grouping {
    int perm[TF_MAX_RANK], inv[TF_MAX_RANK];
    int64_t shape[TF_MAX_RANK]; /* x's shape permuted by perm */
    int64_t group, rest;        /* elements per group, number of groups */
} grouping;

static void grouping_of(const tf_tensor *v, uint64_t mask, grouping *g)
{
    uint32_t n = 0;
    g->group = g->rest = 1;
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t d = 0; d < v->rank; d++) {
            if ((int)(mask >> d & 1) != (pass == 0))
                continue;
            g->perm[n] = (int)d;
            g->shape[n++] = v->shape[d];
            *(pass == 0 ? &g->group : &g->rest) *= v->shape[d];
        }
    for (uint32_t i = 0; i < v->rank; i++)
        g->inv[g->perm[i]] = (int)i;
}

/*
 * One level of the product tree over `rows` rows (a power of two):
 * *blocks ([rows / low, k]) holds the products of consecutive runs of `low`
 * rows. Multiplies every row's sibling run (the other half of the run of
 * 2 * low containing it) into *acc ([rows, k]; NULL: none yet) and replaces
 * *blocks by the products of runs of 2 * low (NULL after the last level).
 */
static tf_status others_level(tf_session *s, int64_t rows, int64_t k, int64_t low,
                              tf_eager **blocks, tf_eager **acc)
{
    static const int axis0[1] = {0}, dims[3] = {1, 2, 3};
    int64_t c = rows / (2 * low);
    int64_t pairs[3] = {2, c, k}, wide[4] = {low, 2, c, k}, full[2] = {rows, k};
    rule_builder b = rb_begin(s);
    tf_eager *p = rb_reshape(&b, *blocks, 3, pairs);
    tf_eager *sib = rb_broadcast_in_dim(&b, rx_reverse(&b, p, axis0, 1), 4, wide, dims);
    sib = rb_reshape(&b, sib, 2, full);
    tf_eager *next = *acc ? rb_mul(&b, *acc, sib) : sib;
    tf_eager *merged = c > 1 ? rx_reduce(&b, tf_session_reduce_prod, p, axis0, 1) : NULL;
    if (b.st)
        return rb_finish(&b);
    tf_eager_release(*acc);
    tf_eager_release(*blocks);
    *acc = *blocks = NULL;
    rb_set(&b, next, acc);
    rb_set(&b, merged, blocks);
    return rb_finish(&b);
}

/*
 * others_i = the product of the elements of i's group other than i, for
 * every element of x (groups as in `mask`), as recorded ops without any
 * division: zeros in x need no special case, and it differentiates again.
 */
static tf_status prod_others(tf_session *s, tf_eager *x, uint64_t mask, tf_eager **out)
{
    const tf_tensor *v = x->value;
    grouping g;
    grouping_of(v, mask, &g);
    if (g.group <= 1)
        return tf_session_full(s, v->dtype, v->rank, v->shape, 1.0, out);
    int64_t rows = 1, gk[2] = {g.group, g.rest};
    while (rows < g.group)
        rows *= 2;
    rule_builder b = rb_begin(s);
    tf_eager *flat = rb_reshape(&b, rb_transpose(&b, x, g.perm), 2, gk);
    tf_eager *blocks = NULL, *acc = NULL;
    tf_status st =
        rb_done(&b, rows > g.group ? rx_resize_rows(&b, flat, rows, 1.0) : flat, &blocks);
    for (int64_t low = 1; !st && low < rows; low *= 2)
        st = others_level(s, rows, g.rest, low, &blocks, &acc);
    tf_eager_release(blocks);
    if (st) {
        tf_eager_release(acc);
        return st;
    }
    b = rb_begin(s);
    tf_eager *r = rb_keep(&b, TF_OK, acc);
    r = rows > g.group ? rx_resize_rows(&b, r, g.group, 0.0) : r;
    r = rb_transpose(&b, rb_reshape(&b, r, v->rank, g.shape), g.inv);
    return rb_done(&b, r, out);
}

/* d prod / dx_i = others_i (conjugated for complex dtypes; a no-op on reals). */
static tf_status prod_vjp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *cot,
                          const bool *need, tf_eager **cin)
{
    tf_eager *x = nd->inputs[0], *others = NULL;
    tf_status st = prod_others(s, x, nd->attrs->mask, &others);
    rule_builder b = rb_begin(s);
    rb_keep(&b, st, others);
    if (tf_dtype_is_complex(x->value->dtype))
        others = rb_conj(&b, others);
    tf_eager *spread = tf__rb_unreduce(&b, cot, x->value, nd->attrs->mask);
    return rb_done(&b, rb_mul(&b, spread, others), &cin[0]);
}

static tf_status prod_jvp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *const *tin,
                          tf_eager **tout)
{
    tf_eager *x = nd->inputs[0], *others = NULL;
    tf_status st = prod_others(s, x, nd->attrs->mask, &others);
    rule_builder b = rb_begin(s);
    rb_keep(&b, st, others);
    int axes[TF_MAX_RANK];
    size_t n = mask_axes(nd->attrs->mask, x->value->rank, axes);
    return rb_done(&b, rb_reduce_sum(&b, rb_mul(&b, tin[0], others), axes, n), tout);
}

/* ---- max and min ---- */

TF_API tf_status tf_session_reduce_max(tf_session *s, tf_eager *x, const int *axes, size_t n_axes,
                                       tf_eager **out)
{
    return tf__reduce_forward(s, TF_OP_reduce_max, TF_REDUCE_MAX, x, axes, n_axes, out);
}

TF_API tf_status tf_session_reduce_min(tf_session *s, tf_eager *x, const int *axes, size_t n_axes,
                                       tf_eager **out)
{
    return tf__reduce_forward(s, TF_OP_reduce_min, TF_REDUCE_MIN, x, axes, n_axes, out);
}

/*
 * The share of each element in the derivative of max/min: 1/count on the
 * `count` elements of its group equal to the result, 0 elsewhere. A NaN
 * result (max/min propagate NaN) is shared among the group's NaNs instead;
 * an empty group has no elements and its (constant) result gets a zero
 * tangent. Piecewise constant in x, so these rules differentiate to zero.
 */
static tf_eager *extremum_weights(rule_builder *b, tf_eager *x, tf_eager *out, uint64_t mask)
{
    const tf_tensor *v = x->value;
    int axes[TF_MAX_RANK];
    size_t n = mask_axes(mask, v->rank, axes);
    tf_eager *hit = rb_compare(b, x, tf__rb_unreduce(b, out, v, mask), TF_COMPARE_EQ);
    tf_eager *nan = rb_compare(b, x, x, TF_COMPARE_NE);
    tf_eager *m = rb_add(b, rb_mask(b, hit, x), rb_mask(b, nan, x));
    tf_eager *count = rb_maximum(b, rb_reduce_sum(b, m, axes, n), rb_scalar(b, x, 1.0));
    return rb_div(b, m, tf__rb_unreduce(b, count, v, mask));
}

static tf_status extremum_vjp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *cot,
                              const bool *need, tf_eager **cin)
{
    rule_builder b = rb_begin(s);
    tf_eager *x = nd->inputs[0];
    tf_eager *w = extremum_weights(&b, x, out, nd->attrs->mask);
    tf_eager *spread = tf__rb_unreduce(&b, cot, x->value, nd->attrs->mask);
    return rb_done(&b, rb_mul(&b, spread, w), &cin[0]);
}

/* The tangent of the result is the average tangent of the tied winners. */
static tf_status extremum_jvp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *const *tin,
                              tf_eager **tout)
{
    rule_builder b = rb_begin(s);
    tf_eager *x = nd->inputs[0];
    int axes[TF_MAX_RANK];
    size_t n = mask_axes(nd->attrs->mask, x->value->rank, axes);
    tf_eager *w = extremum_weights(&b, x, out, nd->attrs->mask);
    return rb_done(&b, rb_reduce_sum(&b, rb_mul(&b, tin[0], w), axes, n), tout);
}

/* ---- composites ---- */

/* Checks x and the axis list; mean also needs a float dtype. */
static tf_status check_reduction(const char *op, tf_session *s, tf_eager *x, const int *axes,
                                 size_t n_axes, bool float_only, uint64_t *mask, tf_eager **out)
{
    tf_status st = tf__check_inputs(op, s, &x, 1, k_x, out);
    if (!st)
        st = tf__axes_mask(op, axes, n_axes, x->value->rank, mask);
    if (st)
        return st;
    if (float_only && !tf_dtype_is_inexact(x->value->dtype))
        return tf__error(TF_ERR_DTYPE_MISMATCH, op, "x",
                         "%s: defined for f32, f64, c64 and c128, not %s", op,
                         tf_dtype_name(x->value->dtype));
    return TF_OK;
}

TF_API tf_status tf_session_reduce_mean(tf_session *s, tf_eager *x, const int *axes, size_t n_axes,
                                        tf_eager **out)
{
    uint64_t mask = 0;
    tf_status st = check_reduction("reduce_mean", s, x, axes, n_axes, true, &mask, out);
    if (st)
        return st;
    double count = 1.0;
    for (uint32_t d = 0; d < x->value->rank; d++)
        if (mask >> d & 1)
            count *= (double)x->value->shape[d];
    rule_builder b = rb_begin(s);
    tf_eager *sum = rb_reduce_sum(&b, x, axes, n_axes);
    /* an empty group has mean NaN, as 0/0 says */
    return rb_done(&b, rb_div(&b, sum, rb_scalar(&b, x, count)), out);
}

TF_API tf_status tf_session_reduce_sum_squares(tf_session *s, tf_eager *x, const int *axes,
                                               size_t n_axes, tf_eager **out)
{
    uint64_t mask = 0;
    tf_status st = check_reduction("reduce_sum_squares", s, x, axes, n_axes, false, &mask, out);
    if (st)
        return st;
    rule_builder b = rb_begin(s);
    return rb_done(&b, rb_reduce_sum(&b, rb_mul(&b, x, x), axes, n_axes), out);
}

/* sum_vjp and sum_jvp read the input's shape only */
const tf_op_rule tf__rule_reduce_sum = {.name = "reduce_sum",
                                        .vjp = sum_vjp,
                                        .jvp = sum_jvp,
                                        .unread = TF_UNREAD_IN(0) | TF_UNREAD_OUT};
const tf_op_rule tf__rule_reduce_prod = {.name = "reduce_prod", .vjp = prod_vjp, .jvp = prod_jvp};
const tf_op_rule tf__rule_reduce_max = {
    .name = "reduce_max", .vjp = extremum_vjp, .jvp = extremum_jvp};
const tf_op_rule tf__rule_reduce_min = {
    .name = "reduce_min", .vjp = extremum_vjp, .jvp = extremum_jvp};
