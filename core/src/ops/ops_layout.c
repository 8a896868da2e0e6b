/*
 * ops_layout.c - reshape, transpose, broadcast_in_dim and reverse: ops that
 * move no data (their results are views of the operand's storage) and whose
 * rules are the inverse layout change of the cotangent.
 */
#include <string.h>

#include "rule_builder.h"

static const char *const k_x[] = {"x"};

/* A dense copy of v made by the engine (for reshaping strided views). */
static tf_status materialise(tf_session *s, tf_tensor *v, tf_tensor **out)
{
    tf_tensor *t;
    tf_status st = tf__empty(s, v->dtype, v->rank, v->shape, &t);
    if (!st && (st = tf__exec(s, TF_PRIM_COPY, NULL, 1, &v, t)))
        tf_tensor_release(t);
    if (!st)
        *out = t;
    return st;
}

/* ---- reshape ---- */

TF_API tf_status tf_session_reshape(tf_session *s, tf_eager *x, size_t rank, const int64_t *shape,
                                    tf_eager **out)
{
    tf_status st = tf__check_inputs("reshape", s, &x, 1, k_x, out);
    if (st)
        return st;
    size_t numel, nbytes;
    if ((st = tf__shape_check("reshape", x->value->dtype, rank, shape, &numel, &nbytes)))
        return st;
    if (numel != x->value->numel)
        return tf__error(TF_ERR_ELEMENT_COUNT, "reshape", "shape",
                         "reshape: cannot reshape %zu elements into a shape of %zu",
                         x->value->numel, numel);
    tf_tensor *src = x->value, *dense = NULL, *t;
    if (!tf_tensor_is_contiguous(src)) {
        if ((st = materialise(s, src, &dense)))
            return st;
        src = dense;
    }
    st = tf_tensor_reshape(src, rank, shape, &t);
    tf_tensor_release(dense);
    if (st)
        return st;
    tf_attrs a = {0};
    a.n[0] = (uint32_t)rank;
    if (rank)
        memcpy(a.v[0], shape, rank * sizeof *shape);
    return tf__record(s, TF_OP_reshape, &a, &x, 1, t, out);
}

static tf_status reshape_vjp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *cot,
                             const bool *need, tf_eager **cin)
{
    const tf_tensor *x = nd->inputs[0]->value;
    return tf_session_reshape(s, cot, x->rank, x->shape, &cin[0]);
}

static tf_status reshape_jvp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *const *tin,
                             tf_eager **tout)
{
    return tf_session_reshape(s, tin[0], out->value->rank, out->value->shape, tout);
}

/* ---- transpose ---- */

TF_API tf_status tf_session_transpose(tf_session *s, tf_eager *x, const int *perm, tf_eager **out)
{
    tf_status st = tf__check_inputs("transpose", s, &x, 1, k_x, out);
    if (st)
        return st;
    tf_tensor *t;
    if ((st = tf_tensor_transpose(x->value, perm, &t)))
        return st;
    tf_attrs a = {0};
    uint32_t r = x->value->rank;
    a.n[0] = r;
    for (uint32_t i = 0; i < r; i++)
        a.v[0][i] = perm[i] < 0 ? perm[i] + (int)r : perm[i];
    return tf__record(s, TF_OP_transpose, &a, &x, 1, t, out);
}

static tf_status transpose_vjp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *cot,
                               const bool *need, tf_eager **cin)
{
    int inv[TF_MAX_RANK];
    for (uint32_t i = 0; i < nd->attrs->n[0]; i++)
        inv[nd->attrs->v[0][i]] = (int)i;
    return tf_session_transpose(s, cot, inv, &cin[0]);
}

static tf_status transpose_jvp(tf_session *s, tf_eager *out, const tf_node *nd,
                               tf_eager *const *tin, tf_eager **tout)
{
    int perm[TF_MAX_RANK];
    for (uint32_t i = 0; i < nd->attrs->n[0]; i++)
        perm[i] = (int)nd->attrs->v[0][i];
    return tf_session_transpose(s, tin[0], perm, tout);
}

/* ---- broadcast_in_dim ---- */

TF_API tf_status tf_session_broadcast_in_dim(tf_session *s, tf_eager *x, size_t rank,
                                             const int64_t *shape, const int *dims, tf_eager **out)
{
    tf_status st = tf__check_inputs("broadcast_in_dim", s, &x, 1, k_x, out);
    if (st)
        return st;
    if (rank && !shape)
        return tf__error(TF_ERR_VALIDATION, "broadcast_in_dim", "shape",
                         "broadcast_in_dim: shape is NULL");
    tf_tensor *t;
    if ((st = tf_tensor_broadcast_in_dim(x->value, rank, shape, dims, &t)))
        return st;
    tf_attrs a = {0};
    a.n[0] = (uint32_t)rank;
    if (rank)
        memcpy(a.v[0], shape, rank * sizeof *shape);
    a.n[1] = x->value->rank;
    for (uint32_t i = 0; i < x->value->rank; i++)
        a.v[1][i] = dims[i];
    return tf__record(s, TF_OP_broadcast_in_dim, &a, &x, 1, t, out);
}

/* The axes a broadcast cotangent is summed over: the new and the stretched ones. */
typedef struct broadcast_plan {
    uint32_t n;
    int axes[TF_MAX_RANK];
} broadcast_plan;

static void plan_broadcast(const tf_node *nd, void *out)
{
    broadcast_plan *p = out;
    const tf_tensor *x = nd->inputs[0]->value;
    bool kept[TF_MAX_RANK] = {false};
    for (uint32_t i = 0; i < nd->attrs->n[1]; i++)
        if (x->shape[i] != 1 || nd->attrs->v[0][nd->attrs->v[1][i]] == 1)
            kept[nd->attrs->v[1][i]] = true;
    p->n = 0;
    for (uint32_t d = 0; d < nd->attrs->n[0]; d++)
        if (!kept[d])
            p->axes[p->n++] = (int)d;
}

/* Sums the cotangent back to x's shape. */
static tf_status broadcast_vjp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *cot,
                               const bool *need, tf_eager **cin)
{
    const tf_tensor *x = nd->inputs[0]->value;
    broadcast_plan p;
    tf_status st = tf__ad_transform(s, nd, 0, sizeof p, plan_broadcast, &p);
    if (st)
        return st;
    rule_builder b = rb_begin(s);
    tf_eager *sum = p.n ? rb_reduce_sum(&b, cot, p.axes, p.n) : cot;
    return rb_done(&b, rb_reshape(&b, sum, x->rank, x->shape), &cin[0]);
}

static tf_status broadcast_jvp(tf_session *s, tf_eager *out, const tf_node *nd,
                               tf_eager *const *tin, tf_eager **tout)
{
    int dims[TF_MAX_RANK];
    for (uint32_t i = 0; i < nd->attrs->n[1]; i++)
        dims[i] = (int)nd->attrs->v[1][i];
    return tf_session_broadcast_in_dim(s, tin[0], nd->attrs->n[0], nd->attrs->v[0], dims, tout);
}

/* ---- reverse ---- */

TF_API tf_status tf_session_reverse(tf_session *s, tf_eager *x, const int *axes, size_t n_axes,
                                    tf_eager **out)
{
    tf_status st = tf__check_inputs("reverse", s, &x, 1, k_x, out);
    if (st)
        return st;
    tf_tensor *t;
    if ((st = tf_tensor_reverse(x->value, n_axes, axes, &t)))
        return st;
    tf_attrs a = {0};
    a.n[0] = (uint32_t)n_axes;
    for (size_t i = 0; i < n_axes; i++)
        a.v[0][i] = axes[i];
    return tf__record(s, TF_OP_reverse, &a, &x, 1, t, out);
}

static tf_status reverse_apply(tf_session *s, const tf_node *nd, tf_eager *t, tf_eager **out)
{
    int axes[TF_MAX_RANK];
    for (uint32_t i = 0; i < nd->attrs->n[0]; i++)
        axes[i] = (int)nd->attrs->v[0][i];
    return tf_session_reverse(s, t, axes, nd->attrs->n[0], out);
}

static tf_status reverse_vjp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *cot,
                             const bool *need, tf_eager **cin)
{
    return reverse_apply(s, nd, cot, &cin[0]);
}

static tf_status reverse_jvp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *const *tin,
                             tf_eager **tout)
{
    return reverse_apply(s, nd, tin[0], tout);
}

const tf_op_rule tf__rule_reshape = {.name = "reshape", .vjp = reshape_vjp, .jvp = reshape_jvp};
const tf_op_rule tf__rule_transpose = {
    .name = "transpose", .vjp = transpose_vjp, .jvp = transpose_jvp};
const tf_op_rule tf__rule_broadcast_in_dim = {
    .name = "broadcast_in_dim", .vjp = broadcast_vjp, .jvp = broadcast_jvp};
const tf_op_rule tf__rule_reverse = {.name = "reverse", .vjp = reverse_vjp, .jvp = reverse_jvp};
