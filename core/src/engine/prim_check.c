/*
 * prim_check.c - checks a primitive call against engine_abi.h before any
 * engine sees it.
 *
 * Engines trust what passes here (counts, params, dtypes, ranks, extents,
 * axes), so third-party engines need not repeat these checks and every
 * engine rejects bad calls the same way, with the same error kinds.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "prim_check_internal.h"

tf_status tf__pc_fail(const call *c, tf_status st, const char *arg, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tf__error(st, c->name, arg, "%s: %s", c->name, msg);
}

/* ---- generic checks ---- */

static tf_status check_counts(const call *c, size_t n_in, size_t n_out)
{
    if (c->n_in != n_in)
        return tf__pc_fail(c, TF_ERR_VALIDATION, "n_inputs", "expects %zu inputs, got %zu", n_in,
                           c->n_in);
    if (c->n_out != n_out)
        return tf__pc_fail(c, TF_ERR_VALIDATION, "n_outputs", "expects %zu outputs, got %zu", n_out,
                           c->n_out);
    return TF_OK;
}

tf_status tf__pc_check_params(const call *c, size_t size)
{
    if (!c->params)
        return tf__pc_fail(c, TF_ERR_VALIDATION, "params", "params are required");
    uint32_t got = *(const uint32_t *)c->params;
    if (got < size)
        return tf__pc_fail(c, TF_ERR_VALIDATION, "params",
                           "params struct_size is %u, expected at least %zu", got, size);
    return TF_OK;
}

tf_status tf__pc_need_shape(const call *c, const char *arg, const tf_tensor *t,
                            const tf_tensor *ref)
{
    if (!tf__same_shape(t, ref))
        return tf__pc_fail(c, TF_ERR_SHAPE_MISMATCH, arg,
                           "%s has rank %u with a different shape than rank %u expected", arg,
                           t->rank, ref->rank);
    return TF_OK;
}

tf_status tf__pc_need_dtype(const call *c, const char *arg, const tf_tensor *t, tf_dtype want)
{
    if (t->dtype != want)
        return tf__pc_fail(c, TF_ERR_DTYPE_MISMATCH, arg, "%s is %s, expected %s", arg,
                           tf_dtype_name(t->dtype), tf_dtype_name(want));
    return TF_OK;
}

static tf_status need_index(const call *c, const char *arg, const tf_tensor *t)
{
    if (t->dtype != TF_I32 && t->dtype != TF_I64)
        return tf__pc_fail(c, TF_ERR_DTYPE_MISMATCH, arg, "%s is %s, expected i32 or i64", arg,
                           tf_dtype_name(t->dtype));
    return TF_OK;
}

static tf_status need_axis(const call *c, const char *arg, uint32_t axis, uint32_t rank)
{
    if (axis >= rank)
        return tf__pc_fail(c, TF_ERR_AXIS_OUT_OF_BOUNDS, arg, "%s %u is out of bounds for rank %u",
                           arg, axis, rank);
    return TF_OK;
}

/* Same dtype and shape for out[0] and every input from `first`, and every further
   output (only FUSED has several: its up to 5 inputs and 8 outputs are named here). */
tf_status tf__pc_elementwise_like(const call *c, size_t first, bool same_dtype)
{
    static const char *const names[] = {"inputs[0]", "inputs[1]", "inputs[2]", "inputs[3]",
                                        "inputs[4]"};
    static const char *const out_names[] = {"outputs[0]", "outputs[1]", "outputs[2]", "outputs[3]",
                                            "outputs[4]", "outputs[5]", "outputs[6]", "outputs[7]"};
    const tf_tensor *o = c->out[0];
    for (size_t i = first; i < c->n_in; i++) {
        tf_status st = tf__pc_need_shape(c, names[i], c->in[i], o);
        if (!st && same_dtype)
            st = tf__pc_need_dtype(c, names[i], c->in[i], o->dtype);
        if (st)
            return st;
    }
    for (size_t i = 1; i < c->n_out; i++) {
        tf_status st = tf__pc_need_dtype(c, out_names[i], c->out[i], o->dtype);
        if (!st)
            st = tf__pc_need_shape(c, out_names[i], c->out[i], o);
        if (st)
            return st;
    }
    return TF_OK;
}

/* ---- per-primitive checks ---- */

static tf_status check_fill(const call *c)
{
    tf_status st = check_counts(c, 0, 1);
    /* the struct of ABI 1.0 ends before imag (1.4), which is 0 when absent */
    return st ? st : tf__pc_check_params(c, offsetof(tf_fill_params, imag));
}

static tf_status check_iota(const call *c)
{
    tf_status st = check_counts(c, 0, 1);
    if (!st)
        st = tf__pc_check_params(c, sizeof(tf_iota_params));
    if (st)
        return st;
    if (c->out[0]->dtype == TF_BOOL || tf_dtype_is_complex(c->out[0]->dtype))
        return tf__pc_fail(c, TF_ERR_DTYPE_MISMATCH, "outputs[0]", "iota does not produce %s",
                           tf_dtype_name(c->out[0]->dtype));
    return need_axis(c, "axis", ((const tf_iota_params *)c->params)->axis, c->out[0]->rank);
}

/* The UNARY ops of a complex input whose output is complex too (ABI 1.4). */
static bool unary_complex_defined(uint32_t op)
{
    switch (op) {
    case TF_UNARY_NEG:
    case TF_UNARY_CONJ:
    case TF_UNARY_SIGN:
    case TF_UNARY_EXP:
    case TF_UNARY_LOG:
    case TF_UNARY_SIN:
    case TF_UNARY_COS:
    case TF_UNARY_TANH:
    case TF_UNARY_SQRT:
    case TF_UNARY_RSQRT:
    case TF_UNARY_RECIPROCAL:
    case TF_UNARY_SQUARE: return true;
    default: return false;
    }
}

/* Whether UNARY `op` (known) is defined with out[0] of dtype dt, in[0] the same. */
bool tf__pc_unary_defined(uint32_t op, tf_dtype dt)
{
    if (tf_dtype_is_complex(dt))
        return unary_complex_defined(op);
    if (tf_dtype_is_float(dt))
        return op != TF_UNARY_LOGICAL_NOT && op <= TF_UNARY_CEIL;
    if (dt == TF_BOOL)
        return op == TF_UNARY_LOGICAL_NOT;
    return op == TF_UNARY_NEG || op == TF_UNARY_ABS || op == TF_UNARY_SIGN ||
           op == TF_UNARY_SQUARE;
}

/* Whether BINARY `op` (known) is defined with all three operands of dtype dt (COMPLEX,
   whose inputs are real, never is). */
bool tf__pc_binary_defined(uint32_t op, tf_dtype dt)
{
    bool bitwise = op == TF_BINARY_AND || op == TF_BINARY_OR || op == TF_BINARY_XOR;
    if (op == TF_BINARY_COMPLEX)
        return false;
    if (tf_dtype_is_complex(dt))
        return op == TF_BINARY_ADD || op == TF_BINARY_SUB || op == TF_BINARY_MUL ||
               op == TF_BINARY_DIV || op == TF_BINARY_POW;
    return tf_dtype_is_float(dt)  ? !bitwise
           : dt == TF_BOOL        ? bitwise || op == TF_BINARY_MAX || op == TF_BINARY_MIN
                                  : true;
}

static tf_status unary_dtype_ok(const call *c, uint32_t op, tf_dtype dt)
{
    bool ok = tf__pc_unary_defined(op, dt);
    if (!ok)
        return tf__pc_fail(c, TF_ERR_DTYPE_MISMATCH, "inputs[0]", "%s is not defined for %s",
                           tf_prim_op_name(TF_PRIM_UNARY, op), tf_dtype_name(dt));
    return TF_OK;
}

static tf_status check_unary(const call *c)
{
    tf_status st = check_counts(c, 1, 1);
    if (!st)
        st = tf__pc_check_params(c, sizeof(tf_unary_params));
    if (st)
        return st;
    uint32_t op = ((const tf_unary_params *)c->params)->op;
    if (op >= TF_UNARY_COUNT_)
        return tf__pc_fail(c, TF_ERR_VALIDATION, "op", "unknown unary op %u", op);
    tf_dtype in = c->in[0]->dtype;
    if (tf_dtype_is_complex(in) && tf_unary_gives_part(op)) { /* complex in, its part out */
        if ((st = tf__pc_need_dtype(c, "outputs[0]", c->out[0], tf_dtype_real_of(in))))
            return st;
        return tf__pc_elementwise_like(c, 0, false);
    }
    if ((st = tf__pc_elementwise_like(c, 0, true)))
        return st;
    return unary_dtype_ok(c, op, c->out[0]->dtype);
}

/* BINARY COMPLEX (ABI 1.4): two real parts of one dtype in, the complex dtype out. */
static tf_status check_binary_complex(const call *c)
{
    tf_dtype part = c->in[0]->dtype;
    if (!tf_dtype_is_float(part))
        return tf__pc_fail(c, TF_ERR_DTYPE_MISMATCH, "inputs[0]", "complex is not defined for %s",
                           tf_dtype_name(part));
    tf_status st = tf__pc_need_dtype(c, "inputs[1]", c->in[1], part);
    if (!st)
        st = tf__pc_need_dtype(c, "outputs[0]", c->out[0], tf_dtype_complex_of(part));
    return st ? st : tf__pc_elementwise_like(c, 0, false);
}

static tf_status check_binary(const call *c)
{
    tf_status st = check_counts(c, 2, 1);
    if (!st)
        st = tf__pc_check_params(c, sizeof(tf_binary_params));
    if (st)
        return st;
    uint32_t op = ((const tf_binary_params *)c->params)->op;
    if (op >= TF_BINARY_COUNT_)
        return tf__pc_fail(c, TF_ERR_VALIDATION, "op", "unknown binary op %u", op);
    if (op == TF_BINARY_COMPLEX)
        return check_binary_complex(c);
    if ((st = tf__pc_elementwise_like(c, 0, true)))
        return st;
    tf_dtype dt = c->out[0]->dtype;
    if (!tf__pc_binary_defined(op, dt))
        return tf__pc_fail(c, TF_ERR_DTYPE_MISMATCH, "inputs[0]", "%s is not defined for %s",
                           tf_prim_op_name(TF_PRIM_BINARY, op), tf_dtype_name(dt));
    return TF_OK;
}

static tf_status check_compare(const call *c)
{
    tf_status st = check_counts(c, 2, 1);
    if (!st)
        st = tf__pc_check_params(c, sizeof(tf_compare_params));
    if (st)
        return st;
    uint32_t op = ((const tf_compare_params *)c->params)->op;
    if (op >= TF_COMPARE_COUNT_)
        return tf__pc_fail(c, TF_ERR_VALIDATION, "op", "unknown compare op %u", op);
    if ((st = tf__pc_need_dtype(c, "outputs[0]", c->out[0], TF_BOOL)) ||
        (st = tf__pc_need_dtype(c, "inputs[1]", c->in[1], c->in[0]->dtype)))
        return st;
    if (tf_dtype_is_complex(c->in[0]->dtype) && op != TF_COMPARE_EQ && op != TF_COMPARE_NE)
        return tf__pc_fail(c, TF_ERR_DTYPE_MISMATCH, "inputs[0]",
                           "%s is not defined for %s (complex values have no order)",
                           tf_prim_op_name(TF_PRIM_COMPARE, op), tf_dtype_name(c->in[0]->dtype));
    return tf__pc_elementwise_like(c, 0, false);
}

static tf_status check_select(const call *c)
{
    tf_status st = check_counts(c, 3, 1);
    if (!st)
        st = tf__pc_need_dtype(c, "inputs[0]", c->in[0], TF_BOOL);
    if (!st)
        st = tf__pc_need_shape(c, "inputs[0]", c->in[0], c->out[0]);
    return st ? st : tf__pc_elementwise_like(c, 1, true);
}

static tf_status check_convert(const call *c)
{
    tf_status st = check_counts(c, 1, 1);
    if (!st)
        st = tf__pc_check_params(c, sizeof(tf_convert_params));
    if (st)
        return st;
    tf_dtype from = c->in[0]->dtype, to = c->out[0]->dtype;
    if (((const tf_convert_params *)c->params)->checked && tf_dtype_is_complex(from) &&
        !tf_dtype_is_complex(to))
        return tf__pc_fail(c, TF_ERR_DTYPE_MISMATCH, "outputs[0]",
                           "a checked conversion from %s to %s is not defined (the unchecked cast "
                           "takes the real part)",
                           tf_dtype_name(from), tf_dtype_name(to));
    return tf__pc_elementwise_like(c, 0, false);
}

static tf_status check_reduce(const call *c)
{
    tf_status st = check_counts(c, 1, 1);
    if (!st)
        st = tf__pc_check_params(c, sizeof(tf_reduce_params));
    if (st)
        return st;
    const tf_reduce_params *p = c->params;
    const tf_tensor *x = c->in[0], *o = c->out[0];
    if (p->op >= TF_REDUCE_COUNT_)
        return tf__pc_fail(c, TF_ERR_VALIDATION, "op", "unknown reduce op %u", p->op);
    if (x->rank < 64 && (p->axes_mask >> x->rank) != 0)
        return tf__pc_fail(c, TF_ERR_AXIS_OUT_OF_BOUNDS, "axes_mask",
                           "axes_mask 0x%llx names an axis beyond rank %u",
                           (unsigned long long)p->axes_mask, x->rank);
    if ((st = tf__pc_need_dtype(c, "outputs[0]", o, x->dtype)))
        return st;
    bool summing = p->op == TF_REDUCE_SUM || p->op == TF_REDUCE_PROD;
    if (x->dtype == TF_BOOL ? summing : (tf_dtype_is_complex(x->dtype) && !summing))
        return tf__pc_fail(c, TF_ERR_DTYPE_MISMATCH, "inputs[0]", "%s is not defined for %s",
                           tf_prim_op_name(TF_PRIM_REDUCE, p->op), tf_dtype_name(x->dtype));
    bool ok = o->rank == x->rank;
    for (uint32_t i = 0; ok && i < x->rank; i++)
        ok = o->shape[i] == ((p->axes_mask >> i & 1) ? 1 : x->shape[i]);
    if (!ok)
        return tf__pc_fail(c, TF_ERR_SHAPE_MISMATCH, "outputs[0]",
                           "the output must keep the input's rank with extent 1 on reduced axes");
    return TF_OK;
}

/* Marks axes used by one operand's lists; false on a duplicate or bad axis. */
static tf_status mark_axes(const call *c, const char *arg, const uint32_t *axes, uint32_t n,
                           uint32_t rank, bool *used)
{
    for (uint32_t i = 0; i < n; i++) {
        tf_status st = need_axis(c, arg, axes[i], rank);
        if (st)
            return st;
        if (used[axes[i]])
            return tf__pc_fail(c, TF_ERR_VALIDATION, arg, "axis %u appears twice", axes[i]);
        used[axes[i]] = true;
    }
    return TF_OK;
}

static tf_status check_dot_general(const call *c)
{
    tf_status st = check_counts(c, 2, 1);
    /* the struct of ABI 1.0 ends before conjugate (1.4), which is 0 when absent */
    if (!st)
        st = tf__pc_check_params(c, offsetof(tf_dot_general_params, conjugate));
    if (st)
        return st;
    const tf_dot_general_params *p = c->params;
    const tf_tensor *l = c->in[0], *r = c->in[1], *o = c->out[0];
    if (l->dtype == TF_BOOL)
        return tf__pc_fail(c, TF_ERR_DTYPE_MISMATCH, "inputs[0]",
                           "dot_general is not defined for bool");
    if (TF_ABI_HAS_FIELD(p, tf_dot_general_params, conjugate) && p->conjugate != 0 &&
        ((p->conjugate & ~(TF_DOT_CONJ_LHS | TF_DOT_CONJ_RHS)) || !tf_dtype_is_complex(l->dtype)))
        return tf__pc_fail(c, TF_ERR_VALIDATION, "conjugate",
                           "conjugate 0x%x: only TF_DOT_CONJ_LHS and TF_DOT_CONJ_RHS, and only for "
                           "complex operands (these are %s)",
                           p->conjugate, tf_dtype_name(l->dtype));
    if ((st = tf__pc_need_dtype(c, "inputs[1]", r, l->dtype)) ||
        (st = tf__pc_need_dtype(c, "outputs[0]", o, l->dtype)))
        return st;
    if (p->n_contracting > TF_MAX_RANK || p->n_batch > TF_MAX_RANK)
        return tf__pc_fail(c, TF_ERR_VALIDATION, "params", "too many contracting or batch axes");
    bool lu[TF_MAX_RANK] = {false}, ru[TF_MAX_RANK] = {false};
    if ((st = mark_axes(c, "lhs_contracting", p->lhs_contracting, p->n_contracting, l->rank, lu)) ||
        (st = mark_axes(c, "lhs_batch", p->lhs_batch, p->n_batch, l->rank, lu)) ||
        (st = mark_axes(c, "rhs_contracting", p->rhs_contracting, p->n_contracting, r->rank, ru)) ||
        (st = mark_axes(c, "rhs_batch", p->rhs_batch, p->n_batch, r->rank, ru)))
        return st;
    for (uint32_t i = 0; i < p->n_contracting; i++)
        if (l->shape[p->lhs_contracting[i]] != r->shape[p->rhs_contracting[i]])
            return tf__pc_fail(c, TF_ERR_SHAPE_MISMATCH, "rhs_contracting",
                               "contracting pair %u has extents %lld and %lld", i,
                               (long long)l->shape[p->lhs_contracting[i]],
                               (long long)r->shape[p->rhs_contracting[i]]);
    for (uint32_t i = 0; i < p->n_batch; i++)
        if (l->shape[p->lhs_batch[i]] != r->shape[p->rhs_batch[i]])
            return tf__pc_fail(
                c, TF_ERR_SHAPE_MISMATCH, "rhs_batch", "batch pair %u has extents %lld and %lld", i,
                (long long)l->shape[p->lhs_batch[i]], (long long)r->shape[p->rhs_batch[i]]);
    int64_t want[3 * TF_MAX_RANK];
    uint32_t n = 0;
    for (uint32_t i = 0; i < l->rank; i++)
        if (!lu[i])
            want[n++] = l->shape[i];
    for (uint32_t i = 0; i < r->rank; i++)
        if (!ru[i])
            want[n++] = r->shape[i];
    for (uint32_t i = 0; i < p->n_batch; i++)
        want[n++] = l->shape[p->lhs_batch[i]];
    if (n != o->rank || (n && memcmp(want, o->shape, n * sizeof want[0]) != 0))
        return tf__pc_fail(c, TF_ERR_SHAPE_MISMATCH, "outputs[0]",
                           "the output must be [lhs free, rhs free, batch] (rank %u, got %u)", n,
                           o->rank);
    return TF_OK;
}

static tf_status check_copy(const call *c)
{
    tf_status st = check_counts(c, 1, 1);
    if (!st)
        st = tf__pc_elementwise_like(c, 0, true);
    if (st)
        return st;
    int axis = tf__repeat_axis(c->out[0]);
    if (axis >= 0)
        return tf__pc_fail(c, TF_ERR_VALIDATION, "outputs[0]",
                           "the output addresses elements twice (stride 0 on axis %d)", axis);
    return TF_OK;
}

static tf_status check_pad(const call *c)
{
    tf_status st = check_counts(c, 1, 1);
    if (!st)
        st = tf__pc_check_params(c, offsetof(tf_pad_params, imag)); /* imag: ABI 1.4 */
    if (!st)
        st = tf__pc_need_dtype(c, "outputs[0]", c->out[0], c->in[0]->dtype);
    if (st)
        return st;
    const tf_pad_params *p = c->params;
    if (c->out[0]->rank != c->in[0]->rank)
        return tf__pc_fail(c, TF_ERR_SHAPE_MISMATCH, "outputs[0]", "the output must keep the rank");
    for (uint32_t i = 0; i < c->in[0]->rank; i++)
        if (p->interior[i] < 0)
            return tf__pc_fail(c, TF_ERR_VALIDATION, "interior", "interior[%u] is negative", i);
    return TF_OK;
}

static tf_status check_concatenate(const call *c)
{
    if (c->n_in < 1 || c->n_out != 1)
        return tf__pc_fail(c, TF_ERR_VALIDATION, "n_inputs",
                           "expects at least 1 input and 1 output");
    tf_status st = tf__pc_check_params(c, sizeof(tf_concatenate_params));
    if (st)
        return st;
    const tf_tensor *o = c->out[0];
    uint32_t axis = ((const tf_concatenate_params *)c->params)->axis;
    if ((st = need_axis(c, "axis", axis, o->rank)))
        return st;
    int64_t total = 0;
    for (size_t i = 0; i < c->n_in; i++) {
        const tf_tensor *x = c->in[i];
        if ((st = tf__pc_need_dtype(c, "inputs", x, o->dtype)))
            return st;
        bool ok = x->rank == o->rank;
        for (uint32_t d = 0; ok && d < o->rank; d++)
            ok = d == axis || x->shape[d] == o->shape[d];
        if (!ok)
            return tf__pc_fail(c, TF_ERR_SHAPE_MISMATCH, "inputs",
                               "inputs[%zu] differs from the output off the axis", i);
        total += x->shape[axis];
    }
    if (total != o->shape[axis])
        return tf__pc_fail(c, TF_ERR_SHAPE_MISMATCH, "outputs[0]",
                           "the inputs add up to %lld along axis %u, the output has %lld",
                           (long long)total, axis, (long long)o->shape[axis]);
    return TF_OK;
}

/* Shape rules shared by GATHER and SCATTER: `data` is x/base, `idx` the
   index, `shaped` the tensor with the gathered shape (out / updates). */
static tf_status check_indexing(const call *c, const tf_gather_params *p, const tf_tensor *data,
                                const tf_tensor *idx, const tf_tensor *shaped, const char *arg)
{
    tf_status st = need_axis(c, "axis", p->axis, data->rank);
    if (!st)
        st = need_index(c, "index", idx);
    if (st)
        return st;
    if (p->mode == TF_GATHER_INDEX_SELECT) {
        if (idx->rank != 1)
            return tf__pc_fail(c, TF_ERR_SHAPE_MISMATCH, "index", "the index must have rank 1");
        bool ok = shaped->rank == data->rank;
        for (uint32_t d = 0; ok && d < data->rank; d++)
            ok = shaped->shape[d] == (d == p->axis ? idx->shape[0] : data->shape[d]);
        if (!ok)
            return tf__pc_fail(c, TF_ERR_SHAPE_MISMATCH, arg,
                               "%s must have the data's shape with len(index) on the axis", arg);
        return TF_OK;
    }
    if (p->mode != TF_GATHER_ALONG_AXIS)
        return tf__pc_fail(c, TF_ERR_VALIDATION, "mode", "unknown gather mode %u", p->mode);
    bool ok = idx->rank == data->rank;
    for (uint32_t d = 0; ok && d < data->rank; d++)
        ok = d == p->axis || idx->shape[d] <= data->shape[d];
    if (!ok)
        return tf__pc_fail(
            c, TF_ERR_SHAPE_MISMATCH, "index",
            "the index must have the data's rank and extents no larger off the axis");
    return tf__pc_need_shape(c, arg, shaped, idx);
}

static tf_status check_gather(const call *c)
{
    tf_status st = check_counts(c, 2, 1);
    if (!st)
        st = tf__pc_check_params(c, sizeof(tf_gather_params));
    if (!st)
        st = tf__pc_need_dtype(c, "outputs[0]", c->out[0], c->in[0]->dtype);
    return st ? st : check_indexing(c, c->params, c->in[0], c->in[1], c->out[0], "outputs[0]");
}

static tf_status check_scatter(const call *c)
{
    tf_status st = check_counts(c, 3, 1);
    if (!st)
        st = tf__pc_check_params(c, sizeof(tf_gather_params));
    if (!st)
        st = tf__pc_need_dtype(c, "inputs[2]", c->in[2], c->in[0]->dtype);
    if (st)
        return st;
    if ((st = tf__pc_need_shape(c, "outputs[0]", c->out[0], c->in[0])) ||
        (st = tf__pc_need_dtype(c, "outputs[0]", c->out[0], c->in[0]->dtype)))
        return st;
    const tf_gather_params *p = c->params;
    if (p->combine != TF_SCATTER_ADD && p->combine != TF_SCATTER_REPLACE)
        return tf__pc_fail(c, TF_ERR_VALIDATION, "combine", "unknown combine %u", p->combine);
    if (p->combine == TF_SCATTER_ADD && c->in[0]->dtype == TF_BOOL)
        return tf__pc_fail(c, TF_ERR_DTYPE_MISMATCH, "inputs[0]",
                           "scatter-add is not defined for bool");
    return check_indexing(c, p, c->in[0], c->in[1], c->in[2], "inputs[2]");
}

static tf_status check_starts(const call *c, const char *arg, const tf_tensor *starts,
                              uint32_t rank)
{
    tf_status st = need_index(c, arg, starts);
    if (st)
        return st;
    if (starts->rank != 1 || starts->shape[0] != (int64_t)rank)
        return tf__pc_fail(c, TF_ERR_SHAPE_MISMATCH, arg, "%s must be a vector of %u starts", arg,
                           rank);
    return TF_OK;
}

/* `small` has big's rank and extents no larger. */
static tf_status check_block(const call *c, const char *arg, const tf_tensor *small,
                             const tf_tensor *big)
{
    bool ok = small->rank == big->rank;
    for (uint32_t d = 0; ok && d < big->rank; d++)
        ok = small->shape[d] <= big->shape[d];
    if (!ok)
        return tf__pc_fail(c, TF_ERR_SHAPE_MISMATCH, arg,
                           "%s must have the operand's rank and extents no larger", arg);
    return TF_OK;
}

static tf_status check_dynamic_slice(const call *c)
{
    tf_status st = check_counts(c, 2, 1);
    if (!st)
        st = tf__pc_need_dtype(c, "outputs[0]", c->out[0], c->in[0]->dtype);
    if (!st)
        st = check_starts(c, "inputs[1]", c->in[1], c->in[0]->rank);
    return st ? st : check_block(c, "outputs[0]", c->out[0], c->in[0]);
}

static tf_status check_dynamic_update_slice(const call *c)
{
    tf_status st = check_counts(c, 3, 1);
    if (!st)
        st = tf__pc_need_dtype(c, "inputs[1]", c->in[1], c->in[0]->dtype);
    if (!st)
        st = tf__pc_need_dtype(c, "outputs[0]", c->out[0], c->in[0]->dtype);
    if (!st)
        st = tf__pc_need_shape(c, "outputs[0]", c->out[0], c->in[0]);
    if (!st)
        st = check_starts(c, "inputs[2]", c->in[2], c->in[0]->rank);
    return st ? st : check_block(c, "inputs[1]", c->in[1], c->in[0]);
}

typedef tf_status (*check_fn)(const call *c);

static const check_fn k_checks[TF_PRIM_COUNT_] = {
    [TF_PRIM_FILL] = check_fill,
    [TF_PRIM_IOTA] = check_iota,
    [TF_PRIM_UNARY] = check_unary,
    [TF_PRIM_BINARY] = check_binary,
    [TF_PRIM_COMPARE] = check_compare,
    [TF_PRIM_SELECT] = check_select,
    [TF_PRIM_CONVERT] = check_convert,
    [TF_PRIM_REDUCE] = check_reduce,
    [TF_PRIM_DOT_GENERAL] = check_dot_general,
    [TF_PRIM_COPY] = check_copy,
    [TF_PRIM_PAD] = check_pad,
    [TF_PRIM_CONCATENATE] = check_concatenate,
    [TF_PRIM_GATHER] = check_gather,
    [TF_PRIM_SCATTER] = check_scatter,
    [TF_PRIM_DYNAMIC_SLICE] = check_dynamic_slice,
    [TF_PRIM_DYNAMIC_UPDATE_SLICE] = check_dynamic_update_slice,
    [TF_PRIM_FUSED] = tf__pc_check_fused,
};

static tf_status check_pointers(const call *c)
{
    if (c->n_in && !c->in)
        return tf__pc_fail(c, TF_ERR_VALIDATION, "inputs", "inputs is NULL");
    if (c->n_out && !c->out)
        return tf__pc_fail(c, TF_ERR_VALIDATION, "outputs", "outputs is NULL");
    for (size_t i = 0; i < c->n_in; i++)
        if (!c->in[i])
            return tf__pc_fail(c, TF_ERR_VALIDATION, "inputs", "inputs[%zu] is NULL", i);
    for (size_t i = 0; i < c->n_out; i++)
        if (!c->out[i])
            return tf__pc_fail(c, TF_ERR_VALIDATION, "outputs", "outputs[%zu] is NULL", i);
    return TF_OK;
}

/*
 * The eager runtime's most frequent call, UNARY or BINARY with every operand
 * of out[0]'s dtype and shape, checked in one pass: true only when the full
 * checks would pass (same rules, same predicates), so anything else - every
 * failure included - goes through them and gets their message.
 */
static bool elementwise_valid(tf_prim prim, const void *params, size_t n_in,
                              tf_tensor *const *in, size_t n_out, tf_tensor *const *out)
{
    size_t want_in = prim == TF_PRIM_UNARY ? 1 : prim == TF_PRIM_BINARY ? 2 : 0;
    size_t psize = prim == TF_PRIM_UNARY ? sizeof(tf_unary_params) : sizeof(tf_binary_params);
    if (!want_in || n_in != want_in || n_out != 1 || !in || !out || !out[0] || !params ||
        *(const uint32_t *)params < psize)
        return false;
    const tf_tensor *o = out[0];
    for (size_t i = 0; i < n_in; i++) {
        const tf_tensor *t = in[i];
        if (!t || t->dtype != o->dtype || !tf__same_shape(t, o))
            return false;
    }
    if (prim == TF_PRIM_UNARY) {
        uint32_t op = ((const tf_unary_params *)params)->op;
        return op < TF_UNARY_COUNT_ && tf__pc_unary_defined(op, o->dtype);
    }
    uint32_t op = ((const tf_binary_params *)params)->op;
    return op < TF_BINARY_COUNT_ && tf__pc_binary_defined(op, o->dtype);
}

tf_status tf__prim_check(tf_prim prim, const void *params, size_t n_inputs,
                         tf_tensor *const *inputs, size_t n_outputs, tf_tensor *const *outputs)
{
    if (elementwise_valid(prim, params, n_inputs, inputs, n_outputs, outputs))
        return TF_OK;
    if ((unsigned)prim >= TF_PRIM_COUNT_)
        return tf__error(TF_ERR_VALIDATION, "engine_execute", "prim",
                         "engine_execute: unknown primitive %d", (int)prim);
    call c = {prim, tf_prim_name(prim), params, n_inputs, n_outputs, inputs, outputs};
    tf_status st = check_pointers(&c);
    return st ? st : k_checks[prim](&c);
}

uint32_t tf__prim_op(tf_prim prim, const void *params)
{
    switch (prim) {
    case TF_PRIM_UNARY:
    case TF_PRIM_BINARY:
    case TF_PRIM_COMPARE:
        return ((const uint32_t *)params)[1];
    case TF_PRIM_REDUCE:
        return ((const tf_reduce_params *)params)->op;
    case TF_PRIM_FUSED: /* prim_check_fused.c */ return tf__pc_fused_op(params);
    default: return 0;
    }
}

bool tf__prim_strided_output(tf_prim prim)
{
    return prim == TF_PRIM_FILL || prim == TF_PRIM_COPY;
}
