/*
 * ops_index.c - indexing ops that move blocks: slice, pad, concatenate and
 * stack, with their rules (the gathers, scatter and the dynamic slices are
 * ops_gather.c's).
 *
 * Every op here is linear in its data operand, so each rule is another op
 * of this file applied to the cotangent or tangent: a slice's VJP pads, a
 * pad's VJP slices, a concatenation's VJP slices. Nothing is conjugated:
 * these maps only move elements, so their adjoints are the same for real
 * and complex dtypes.
 */
#include <stdio.h>
#include <string.h>

#include "rule_builder.h"

static const char *const k_x[] = {"x"};

/* ===================================================================== */
/* Helpers                                                                */
/* ===================================================================== */

/* a + b without overflow; false if it would overflow. */
static bool add_ok(int64_t a, int64_t b, int64_t *r)
{
    if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b))
        return false;
    *r = a + b;
    return true;
}

/* a * b for a, b >= 0 without overflow; false if it would overflow. */
static bool mul_ok(int64_t a, int64_t b, int64_t *r)
{
    if (a && b > INT64_MAX / a)
        return false;
    *r = a * b;
    return true;
}

/* ---- rule-builder wrappers of this file's ops ---- */

static tf_eager *rb_slice(rule_builder *b, tf_eager *x, const int64_t *start, const int64_t *limit,
                          const int64_t *stride)
{
    tf_eager *o = NULL;
    if (!x)
        return NULL;
    RB_CALL_(b, tf_session_slice(b->s, x, start, limit, stride, &o));
}

static tf_eager *rb_pad(rule_builder *b, tf_eager *x, const int64_t *low, const int64_t *high,
                        const int64_t *interior)
{
    tf_eager *o = NULL;
    if (!x)
        return NULL;
    RB_CALL_(b, tf_session_pad(b->s, x, low, high, interior, 0.0, &o));
}

/* ===================================================================== */
/* slice                                                                  */
/* ===================================================================== */

static tf_status check_slice(const tf_tensor *x, const int64_t *start, const int64_t *limit,
                             const int64_t *stride)
{
    if (x->rank && (!start || !limit || !stride))
        return tf__null_arg("slice", !start ? "start" : !limit ? "limit" : "stride");
    for (uint32_t d = 0; d < x->rank; d++) {
        if (stride[d] < 1)
            return tf__error(TF_ERR_VALIDATION, "slice", "stride",
                             "slice: stride[%u] = %lld is not >= 1", d, (long long)stride[d]);
        if (start[d] < 0 || start[d] > limit[d] || limit[d] > x->shape[d])
            return tf__error(TF_ERR_OUT_OF_RANGE, "slice",
                             start[d] < 0 || start[d] > limit[d] ? "start" : "limit",
                             "slice: axis %u: start %lld and limit %lld do not satisfy 0 <= "
                             "start <= limit <= %lld",
                             d, (long long)start[d], (long long)limit[d], (long long)x->shape[d]);
    }
    return TF_OK;
}

TF_API tf_status tf_session_slice(tf_session *s, tf_eager *x, const int64_t *start,
                                  const int64_t *limit, const int64_t *stride, tf_eager **out)
{
    tf_status st = tf__check_inputs("slice", s, &x, 1, k_x, out);
    if (!st)
        st = check_slice(x->value, start, limit, stride);
    tf_tensor *t;
    if (st || (st = tf_tensor_slice(x->value, start, limit, stride, &t)))
        return st;
    tf_attrs a = {0};
    uint32_t r = x->value->rank;
    tf__attrs_put(&a, 0, start, r);
    tf__attrs_put(&a, 1, limit, r);
    tf__attrs_put(&a, 2, stride, r);
    return tf__record(s, TF_OP_slice, &a, &x, 1, t, out);
}

/* The cotangent padded with zeros back to x's extents: each taken element
   returns to start + i * stride, the skipped ones are the interior. */
static tf_status slice_vjp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *cot,
                           const bool *need, tf_eager **cin)
{
    const tf_tensor *x = nd->inputs[0]->value, *o = out->value;
    int64_t low[TF_MAX_RANK], high[TF_MAX_RANK], interior[TF_MAX_RANK];
    for (uint32_t d = 0; d < x->rank; d++) {
        int64_t start = nd->attrs->v[0][d], step = nd->attrs->v[2][d], m = o->shape[d];
        int64_t end = m ? start + (m - 1) * step + 1 : start; /* one past the last taken */
        low[d] = start;
        interior[d] = step - 1;
        high[d] = x->shape[d] - end;
    }
    return tf_session_pad(s, cot, low, high, interior, 0.0, &cin[0]);
}

static tf_status slice_jvp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *const *tin,
                           tf_eager **tout)
{
    const tf_attrs *a = nd->attrs;
    return tf_session_slice(s, tin[0], a->v[0], a->v[1], a->v[2], tout);
}

/* ===================================================================== */
/* pad                                                                    */
/* ===================================================================== */

/* d + (d - 1) * interior: the span of the operand's elements (0 for d = 0). */
static bool pad_body(int64_t d, int64_t interior, int64_t *body)
{
    int64_t gaps;
    *body = 0;
    return d == 0 || (mul_ok(d - 1, interior, &gaps) && add_ok(gaps, d, body));
}

static tf_status check_pad(const tf_tensor *x, const int64_t *low, const int64_t *high,
                           const int64_t *interior, int64_t *shape)
{
    if (x->rank && (!low || !high || !interior))
        return tf__null_arg("pad", !low ? "low" : !high ? "high" : "interior");
    for (uint32_t d = 0; d < x->rank; d++) {
        if (interior[d] < 0)
            return tf__error(TF_ERR_VALIDATION, "pad", "interior",
                             "pad: interior[%u] = %lld is negative", d, (long long)interior[d]);
        int64_t body, ext;
        if (!pad_body(x->shape[d], interior[d], &body) || !add_ok(body, low[d], &ext) ||
            !add_ok(ext, high[d], &ext))
            return tf__error(TF_ERR_SHAPE_OVERFLOW, "pad", "high",
                             "pad: axis %u: the padded extent overflows", d);
        if (ext < 0)
            return tf__error(TF_ERR_VALIDATION, "pad", low[d] < 0 ? "low" : "high",
                             "pad: axis %u: low %lld + extent %lld (interior %lld) + high %lld "
                             "gives the negative extent %lld",
                             d, (long long)low[d], (long long)x->shape[d], (long long)interior[d],
                             (long long)high[d], (long long)ext);
        shape[d] = ext;
    }
    return TF_OK;
}

TF_API tf_status tf_session_pad(tf_session *s, tf_eager *x, const int64_t *low, const int64_t *high,
                                const int64_t *interior, double value, tf_eager **out)
{
    tf_status st = tf__check_inputs("pad", s, &x, 1, k_x, out);
    int64_t shape[TF_MAX_RANK];
    if (!st)
        st = check_pad(x->value, low, high, interior, shape);
    if (st)
        return st;
    uint32_t r = x->value->rank;
    tf_pad_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.value = tf__scalar_of(x->value->dtype, value);
    for (uint32_t d = 0; d < r; d++) {
        p.low[d] = low[d];
        p.interior[d] = interior[d];
    }
    tf_tensor *t, *in = x->value;
    if ((st = tf__exec_new(s, TF_PRIM_PAD, &p, 1, &in, in->dtype, r, shape, &t)))
        return st;
    tf_attrs a = {0};
    tf__attrs_put(&a, 0, low, r);
    tf__attrs_put(&a, 1, high, r);
    tf__attrs_put(&a, 2, interior, r);
    a.f = value;
    return tf__record(s, TF_OP_pad, &a, &x, 1, t, out);
}

/*
 * For one axis of a pad: the operand indices i whose position
 * low + i * (interior + 1) lands inside the output's extent `ext`: the
 * first such i, how many, the first position and the step between
 * positions. Unsigned arithmetic, so that no int64 overflows whatever low
 * and interior are (interior >= 0 was checked by the forward, so the step
 * is at most 2^63); every position computed lies in [0, ext).
 */
typedef struct pad_span {
    int64_t first, count, at, step;
} pad_span;

static pad_span pad_span_of(int64_t d, int64_t low, int64_t interior, int64_t ext)
{
    pad_span sp = {0, 0, 0, 1};
    uint64_t step = (uint64_t)interior + 1u, first = 0;
    if (d == 0 || ext == 0 || (low >= 0 && low >= ext))
        return sp;
    if (low < 0) {
        uint64_t need = 0u - (uint64_t)low; /* |low|, at most 2^63 */
        first = need / step + (need % step != 0);
    }
    uint64_t last = ((uint64_t)(ext - 1) - (uint64_t)low) / step; /* true value in [0, 2^64) */
    if (last > (uint64_t)(d - 1))
        last = (uint64_t)(d - 1);
    if (first > last)
        return sp;
    sp.first = (int64_t)first;
    sp.count = (int64_t)(last - first + 1);
    sp.at = (int64_t)((uint64_t)low + first * step); /* first * step < |low| + step <= 2^64 */
    sp.step = sp.count > 1 ? (int64_t)step : 1;      /* several positions: step < ext */
    return sp;
}

/*
 * The strided slice of the cotangent where x's elements landed, padded with
 * zeros for the elements the output cropped away (negative low or high).
 * Computed from pad_span_of, so it holds for any attributes the forward
 * accepted, INT64_MIN and INT64_MAX included: nothing is padded beyond x's
 * own extents and no attribute is negated or incremented in int64.
 */
static tf_status pad_vjp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *cot,
                         const bool *need, tf_eager **cin)
{
    const tf_tensor *x = nd->inputs[0]->value, *o = out->value;
    const tf_attrs *a = nd->attrs;
    int64_t start[TF_MAX_RANK] = {0}, limit[TF_MAX_RANK] = {0}, stride[TF_MAX_RANK] = {0};
    int64_t lo[TF_MAX_RANK] = {0}, hi[TF_MAX_RANK] = {0}, none[TF_MAX_RANK] = {0};
    bool dropped = false, cropped = false;
    for (uint32_t d = 0; d < x->rank; d++) {
        pad_span sp = pad_span_of(x->shape[d], a->v[0][d], a->v[2][d], o->shape[d]);
        dropped = dropped || sp.count == 0;
        start[d] = sp.at;
        limit[d] = sp.count ? sp.at + (sp.count - 1) * sp.step + 1 : sp.at;
        stride[d] = sp.step;
        lo[d] = sp.first;
        hi[d] = x->shape[d] - sp.first - sp.count;
        cropped = cropped || lo[d] || hi[d];
    }
    if (dropped) /* no element of x reaches the output */
        return tf__zeros_like(s, nd->inputs[0], &cin[0]);
    rule_builder b = rb_begin(s);
    tf_eager *taken = rb_slice(&b, cot, start, limit, stride);
    return rb_done(&b, cropped ? rb_pad(&b, taken, lo, hi, none) : taken, &cin[0]);
}

static tf_status pad_jvp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *const *tin,
                         tf_eager **tout)
{
    const tf_attrs *a = nd->attrs;
    return tf_session_pad(s, tin[0], a->v[0], a->v[1], a->v[2], 0.0, tout);
}

/* ===================================================================== */
/* concatenate and stack                                                  */
/* ===================================================================== */

/* Inputs joined per engine call; more are joined in groups, then the groups
   (tf_engine_execute takes a bounded number of operands). */
#define CONCAT_MAX_INPUTS 16

/* Checks a list of n >= 1 tensors of s's runtime with one dtype. */
static tf_status check_list(const char *op, tf_session *s, tf_eager *const *xs, size_t n,
                            tf_eager **out)
{
    tf_status st = tf__check_inputs(op, s, NULL, 0, NULL, out);
    if (st)
        return st;
    if (!xs)
        return tf__null_arg(op, "xs");
    if (n == 0 || n > UINT32_MAX)
        return tf__error(TF_ERR_VALIDATION, op, "n", "%s: n = %zu; expected 1 or more tensors", op,
                         n);
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "xs[%zu]", i);
        const char *names[1] = {name};
        if ((st = tf__check_inputs(op, s, &xs[i], 1, names, out)))
            return st;
        if (xs[i]->value->dtype != xs[0]->value->dtype)
            return tf__error(TF_ERR_DTYPE_MISMATCH, op, "xs", "%s: xs[%zu] is %s, xs[0] is %s", op,
                             i, tf_dtype_name(xs[i]->value->dtype),
                             tf_dtype_name(xs[0]->value->dtype));
    }
    return TF_OK;
}

/* The shapes agree off the axis; the extents along it add up without overflow. */
static tf_status check_concat(tf_eager *const *xs, size_t n, int axis, uint32_t *ax)
{
    const char *op = "concatenate";
    const tf_tensor *x0 = xs[0]->value;
    tf_status st = tf__norm_axis(op, "axis", axis, x0->rank, ax);
    int64_t total = 0;
    for (size_t i = 0; i < n && !st; i++) {
        const tf_tensor *x = xs[i]->value;
        bool ok = x->rank == x0->rank;
        for (uint32_t d = 0; ok && d < x0->rank; d++)
            ok = d == *ax || x->shape[d] == x0->shape[d];
        if (!ok)
            return tf__error(TF_ERR_SHAPE_MISMATCH, op, "xs",
                             "%s: xs[%zu] (rank %u) differs from xs[0] (rank %u) off axis %u", op,
                             i, x->rank, x0->rank, *ax);
        if (!add_ok(total, x->shape[*ax], &total))
            return tf__error(TF_ERR_SHAPE_OVERFLOW, op, "xs",
                             "%s: the extents along axis %u overflow", op, *ax);
    }
    return st;
}

/* Joins values along axis with the engine, in groups when there are many. */
static tf_status concat_values(tf_session *s, tf_tensor *const *vals, size_t n, uint32_t axis,
                               tf_tensor **out)
{
    const tf_tensor *v0 = vals[0];
    if (n <= CONCAT_MAX_INPUTS) {
        int64_t shape[TF_MAX_RANK];
        memcpy(shape, v0->shape, sizeof shape);
        shape[axis] = 0;
        for (size_t i = 0; i < n; i++)
            shape[axis] += vals[i]->shape[axis];
        tf_concatenate_params p = {sizeof p, axis};
        return tf__exec_new(s, TF_PRIM_CONCATENATE, &p, n, vals, v0->dtype, v0->rank, shape, out);
    }
    size_t groups = (n + CONCAT_MAX_INPUTS - 1) / CONCAT_MAX_INPUTS;
    tf_tensor **parts = tf__calloc(groups, sizeof *parts);
    if (!parts)
        return tf__error(TF_ERR_OUT_OF_MEMORY, "concatenate", NULL, "concatenate: out of memory");
    tf_status st = TF_OK;
    for (size_t g = 0; g < groups && !st; g++) {
        size_t first = g * CONCAT_MAX_INPUTS;
        size_t m = n - first < CONCAT_MAX_INPUTS ? n - first : CONCAT_MAX_INPUTS;
        st = concat_values(s, vals + first, m, axis, &parts[g]);
    }
    if (!st)
        st = concat_values(s, parts, groups, axis, out);
    for (size_t g = 0; g < groups; g++)
        tf_tensor_release(parts[g]);
    tf__free(parts);
    return st;
}

TF_API tf_status tf_session_concatenate(tf_session *s, tf_eager *const *xs, size_t n, int axis,
                                        tf_eager **out)
{
    uint32_t ax = 0;
    tf_status st = check_list("concatenate", s, xs, n, out);
    if (!st)
        st = check_concat(xs, n, axis, &ax);
    if (st)
        return st;
    tf_tensor *small[8];
    tf_tensor **vals = n <= 8 ? small : tf__calloc(n, sizeof *vals);
    if (!vals)
        return tf__error(TF_ERR_OUT_OF_MEMORY, "concatenate", NULL, "concatenate: out of memory");
    for (size_t i = 0; i < n; i++)
        vals[i] = xs[i]->value;
    tf_tensor *t;
    st = concat_values(s, vals, n, ax, &t);
    if (vals != small)
        tf__free(vals);
    if (st)
        return st;
    tf_attrs a = {0};
    a.i[0] = ax;
    return tf__record(s, TF_OP_concatenate, &a, xs, (uint32_t)n, t, out);
}

/* Each input gets its block of the cotangent along the axis. */
static tf_status concat_vjp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *cot,
                            const bool *need, tf_eager **cin)
{
    const tf_tensor *o = out->value;
    uint32_t axis = (uint32_t)nd->attrs->i[0];
    int64_t start[TF_MAX_RANK], limit[TF_MAX_RANK], stride[TF_MAX_RANK];
    for (uint32_t d = 0; d < o->rank; d++) {
        start[d] = 0;
        limit[d] = o->shape[d];
        stride[d] = 1;
    }
    tf_status st = TF_OK;
    for (uint32_t i = 0; i < nd->n_inputs && !st; i++) {
        start[axis] = i ? limit[axis] : 0;
        limit[axis] = start[axis] + nd->inputs[i]->value->shape[axis];
        if (need[i])
            st = tf_session_slice(s, cot, start, limit, stride, &cin[i]);
    }
    return st;
}

/* The tangents joined, zeros standing in for inputs without one. */
static tf_status concat_jvp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *const *tin,
                            tf_eager **tout)
{
    uint32_t n = nd->n_inputs;
    tf_eager *small[16];
    tf_eager **ts = n <= 8 ? small : tf__calloc(2 * (size_t)n, sizeof *ts);
    if (!ts)
        return tf__error(TF_ERR_OUT_OF_MEMORY, "jvp", NULL, "concatenate: out of memory");
    tf_eager **zeros = ts + n; /* the zeros made here, released at the end */
    tf_status st = TF_OK;
    for (uint32_t i = 0; i < n; i++) {
        zeros[i] = NULL;
        if (!tin[i] && !st)
            st = tf__zeros_like(s, nd->inputs[i], &zeros[i]);
        ts[i] = tin[i] ? tin[i] : zeros[i];
    }
    if (!st)
        st = tf_session_concatenate(s, ts, n, (int)nd->attrs->i[0], tout);
    for (uint32_t i = 0; i < n; i++)
        tf_eager_release(zeros[i]);
    if (ts != small)
        tf__free(ts);
    return st;
}

/* Reshapes each tensor to insert a size-1 axis, then concatenates them. */
TF_API tf_status tf_session_stack(tf_session *s, tf_eager *const *xs, size_t n, int axis,
                                  tf_eager **out)
{
    const char *op = "stack";
    tf_status st = check_list(op, s, xs, n, out);
    if (st)
        return st;
    const tf_tensor *x0 = xs[0]->value;
    uint32_t r = x0->rank;
    for (size_t i = 1; i < n; i++) {
        const tf_tensor *x = xs[i]->value;
        if (!tf__same_shape(x, x0))
            return tf__error(TF_ERR_SHAPE_MISMATCH, op, "xs",
                             "%s: xs[%zu] (rank %u) has a different shape from xs[0] (rank %u)", op,
                             i, x->rank, r);
    }
    if (r + 1 > TF_MAX_RANK)
        return tf__error(TF_ERR_RANK_TOO_LARGE, op, "xs",
                         "%s: stacking rank %u tensors needs rank %u > %d", op, r, r + 1,
                         TF_MAX_RANK);
    int64_t a = axis < 0 ? (int64_t)axis + r + 1 : axis;
    if (a < 0 || a > (int64_t)r)
        return tf__error(TF_ERR_AXIS_OUT_OF_BOUNDS, op, "axis",
                         "%s: axis %d is out of bounds for a new axis of rank %u", op, axis, r + 1);
    int64_t shape[TF_MAX_RANK];
    for (uint32_t d = 0, k = 0; d <= r; d++)
        shape[d] = d == a ? 1 : x0->shape[k++];
    tf_eager **parts = tf__calloc(n, sizeof *parts);
    if (!parts)
        return tf__error(TF_ERR_OUT_OF_MEMORY, op, NULL, "%s: out of memory", op);
    for (size_t i = 0; i < n && !st; i++)
        st = tf_session_reshape(s, xs[i], r + 1, shape, &parts[i]);
    if (!st)
        st = tf_session_concatenate(s, parts, n, (int)a, out);
    for (size_t i = 0; i < n; i++)
        tf_eager_release(parts[i]);
    tf__free(parts);
    return st;
}

/* ===================================================================== */
/* Rule table entries                                                     */
/* ===================================================================== */

const tf_op_rule tf__rule_slice = {.name = "slice", .vjp = slice_vjp, .jvp = slice_jvp};
const tf_op_rule tf__rule_pad = {.name = "pad", .vjp = pad_vjp, .jvp = pad_jvp};
const tf_op_rule tf__rule_concatenate = {
    .name = "concatenate", .vjp = concat_vjp, .jvp = concat_jvp};
