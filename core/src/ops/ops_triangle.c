/*
 * ops_triangle.c - ops on the matrices of the last two axes: tril and triu
 * (composites of a constant mask and the recorded select), diagonal (a view
 * of the operand) and diag_embed (a fill and a strided copy), with the rules
 * of the last two.
 *
 * The matrix of a tensor is its last two axes: element (..., i, j) is row i
 * and column j, with i on axis rank-2 and j on axis rank-1 (as in NumPy and
 * PyTorch; column-major storage changes nothing about the indexing).
 */
#include <string.h>

#include "rule_builder.h"

static const char *const k_x[] = {"x"};

static tf_status need_matrix(const char *op, const tf_eager *x)
{
    if (x->value->rank < 2)
        return tf__error(TF_ERR_SHAPE_MISMATCH, op, "x",
                         "%s: x has rank %u; it needs rank >= 2 (a matrix on the last two axes)",
                         op, x->value->rank);
    return TF_OK;
}

/* ===================================================================== */
/* tril and triu                                                          */
/* ===================================================================== */

/*
 * The bool [m, n] mask of the kept triangle: j - i <= k (lower) or
 * j - i >= k (upper), built on the engine from two iotas.
 */
static tf_status triangle_mask(tf_session *s, int64_t m, int64_t n, int64_t k, bool upper,
                               bool x_empty, tf_tensor **out)
{
    const int64_t shape[2] = {m, n};
    tf_iota_params rows_p = {sizeof rows_p, 0}, cols_p = {sizeof cols_p, 1};
    tf_binary_params sub = {sizeof sub, TF_BINARY_SUB};
    tf_compare_params cmp = {sizeof cmp, upper ? TF_COMPARE_GE : TF_COMPARE_LE};
    tf_fill_params fill = {.struct_size = sizeof fill, .value = {(double)k, k}};
    tf_tensor *rows = NULL, *cols = NULL, *diff = NULL, *kk = NULL, *kv = NULL;
    if (m == 0 || n == 0) { /* an empty mask: filled directly, no iota over empty axes */
        tf_fill_params none = {.struct_size = sizeof none, .value = {0.0, 0}};
        return tf__exec_new(s, TF_PRIM_FILL, &none, 0, NULL, TF_BOOL, 2, shape, out);
    }
    if (x_empty) { /* no element reads the mask ([0, m, n]): one value, broadcast, no m x n work */
        tf_fill_params none = {.struct_size = sizeof none, .value = {0.0, 0}};
        tf_tensor *one = NULL;
        tf_status st = tf__exec_new(s, TF_PRIM_FILL, &none, 0, NULL, TF_BOOL, 0, NULL, &one);
        if (!st)
            st = tf__broadcast_view(one, 2, shape, out);
        tf_tensor_release(one);
        return st;
    }
    tf_status st = tf__exec_new(s, TF_PRIM_IOTA, &rows_p, 0, NULL, TF_I64, 2, shape, &rows);
    if (!st)
        st = tf__exec_new(s, TF_PRIM_IOTA, &cols_p, 0, NULL, TF_I64, 2, shape, &cols);
    if (!st) {
        tf_tensor *in[2] = {cols, rows};
        st = tf__exec_new(s, TF_PRIM_BINARY, &sub, 2, in, TF_I64, 2, shape, &diff);
    }
    if (!st)
        st = tf__exec_new(s, TF_PRIM_FILL, &fill, 0, NULL, TF_I64, 0, NULL, &kk);
    if (!st)
        st = tf__broadcast_view(kk, 2, shape, &kv);
    if (!st) {
        tf_tensor *in[2] = {diff, kv};
        st = tf__exec_new(s, TF_PRIM_COMPARE, &cmp, 2, in, TF_BOOL, 2, shape, out);
    }
    tf_tensor_release(rows);
    tf_tensor_release(cols);
    tf_tensor_release(diff);
    tf_tensor_release(kk);
    tf_tensor_release(kv);
    return st;
}

/*
 * select(mask, x, 0): the mask is an untracked constant, so the recorded
 * select carries the derivative, which is the same triangle of the
 * cotangent or tangent.
 */
static tf_status triangle(const char *op, tf_session *s, tf_eager *x, int64_t k, bool upper,
                          tf_eager **out)
{
    tf_status st = tf__check_inputs(op, s, &x, 1, k_x, out);
    if (!st)
        st = need_matrix(op, x);
    if (st)
        return st;
    const tf_tensor *v = x->value;
    tf_tensor *m = NULL;
    if ((st = triangle_mask(s, v->shape[v->rank - 2], v->shape[v->rank - 1], k, upper,
                            v->numel == 0, &m)))
        return st;
    rule_builder b = rb_begin(s);
    tf_eager *mask = tf__eager_new(s->rt, m, false);
    tf_tensor_release(m);
    rb_keep(&b, mask ? TF_OK : TF_ERR_OUT_OF_MEMORY, mask);
    return rb_done(&b, rb_select(&b, mask, x, rb_scalar(&b, x, 0.0)), out);
}

TF_API tf_status tf_session_tril(tf_session *s, tf_eager *x, int64_t k, tf_eager **out)
{
    return triangle("tril", s, x, k, false, out);
}

TF_API tf_status tf_session_triu(tf_session *s, tf_eager *x, int64_t k, tf_eager **out)
{
    return triangle("triu", s, x, k, true, out);
}

/* ===================================================================== */
/* diagonal                                                               */
/* ===================================================================== */

TF_API tf_status tf_session_diagonal(tf_session *s, tf_eager *x, tf_eager **out)
{
    tf_status st = tf__check_inputs("diagonal", s, &x, 1, k_x, out);
    if (!st)
        st = need_matrix("diagonal", x);
    if (st)
        return st;
    int r = (int)x->value->rank;
    tf_tensor *t;
    if ((st = tf_tensor_diagonal(x->value, r - 2, r - 1, &t)))
        return st;
    return tf__record(s, TF_OP_diagonal, NULL, &x, 1, t, out);
}

/* diag_embed of the cotangent, padded with zeros to [m, n] when m != n. */
static tf_status diagonal_vjp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *cot,
                              const bool *need, tf_eager **cin)
{
    const tf_tensor *x = nd->inputs[0]->value;
    uint32_t r = x->rank;
    int64_t p = out->value->shape[r - 2]; /* min(m, n) */
    int64_t zero[TF_MAX_RANK] = {0}, high[TF_MAX_RANK] = {0};
    high[r - 2] = x->shape[r - 2] - p;
    high[r - 1] = x->shape[r - 1] - p;
    rule_builder b = rb_begin(s);
    tf_eager *e = NULL;
    tf_status st = tf_session_diag_embed(s, cot, &e);
    rb_keep(&b, st, e);
    if (!b.st && (high[r - 2] || high[r - 1])) {
        tf_eager *padded = NULL;
        st = tf_session_pad(s, e, zero, high, zero, 0.0, &padded);
        e = rb_keep(&b, st, padded);
    }
    return rb_done(&b, e, &cin[0]);
}

static tf_status diagonal_jvp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *const *tin,
                              tf_eager **tout)
{
    return tf_session_diagonal(s, tin[0], tout);
}

/* ===================================================================== */
/* diag_embed                                                             */
/* ===================================================================== */

/* Zeros of out's shape, then x copied into the diagonal view of them. */
static tf_status embed_value(tf_session *s, tf_tensor *x, size_t rank, const int64_t *shape,
                             tf_tensor **out)
{
    tf_fill_params zero = {.struct_size = sizeof zero, .value = {0.0, 0}};
    tf_tensor *t, *diag = NULL;
    tf_status st = tf__exec_new(s, TF_PRIM_FILL, &zero, 0, NULL, x->dtype, rank, shape, &t);
    if (st)
        return st;
    if (!(st = tf_tensor_diagonal(t, (int)rank - 2, (int)rank - 1, &diag)))
        st = tf__exec(s, TF_PRIM_COPY, NULL, 1, &x, diag); /* a strided output */
    tf_tensor_release(diag);
    if (st)
        tf_tensor_release(t);
    else
        *out = t;
    return st;
}

TF_API tf_status tf_session_diag_embed(tf_session *s, tf_eager *x, tf_eager **out)
{
    const char *op = "diag_embed";
    tf_status st = tf__check_inputs(op, s, &x, 1, k_x, out);
    if (st)
        return st;
    const tf_tensor *v = x->value;
    if (v->rank < 1)
        return tf__error(TF_ERR_SHAPE_MISMATCH, op, "x",
                         "%s: x has rank 0; it needs an axis to put on the diagonal", op);
    if (v->rank + 1 > TF_MAX_RANK)
        return tf__error(TF_ERR_RANK_TOO_LARGE, op, "x",
                         "%s: x has rank %u; the result would have rank %u > %d", op, v->rank,
                         v->rank + 1, TF_MAX_RANK);
    int64_t shape[TF_MAX_RANK];
    memcpy(shape, v->shape, v->rank * sizeof *shape);
    shape[v->rank] = v->shape[v->rank - 1];
    tf_tensor *t;
    if ((st = embed_value(s, x->value, v->rank + 1, shape, &t)))
        return st;
    return tf__record(s, TF_OP_diag_embed, NULL, &x, 1, t, out);
}

static tf_status diag_embed_vjp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *cot,
                                const bool *need, tf_eager **cin)
{
    return tf_session_diagonal(s, cot, &cin[0]);
}

static tf_status diag_embed_jvp(tf_session *s, tf_eager *out, const tf_node *nd,
                                tf_eager *const *tin, tf_eager **tout)
{
    return tf_session_diag_embed(s, tin[0], tout);
}

const tf_op_rule tf__rule_diagonal = {.name = "diagonal", .vjp = diagonal_vjp, .jvp = diagonal_jvp};
const tf_op_rule tf__rule_diag_embed = {
    .name = "diag_embed", .vjp = diag_embed_vjp, .jvp = diag_embed_jvp};
