/*
 * ops_index.c - indexing ops: slice, pad, concatenate and stack, the gathers
 * (gather, index_select, take_along_axis), scatter, dynamic_slice and the
 * internal dynamic_update_slice, with their rules.
 *
 * Every op here is linear in its data operands, so each rule is another op
 * of this file applied to the cotangent or tangent: a slice's VJP pads, a
 * pad's VJP slices, a concatenation's VJP slices, a gather's VJP
 * scatter-adds, a dynamic slice's VJP writes the cotangent into zeros. The
 * integer operands (gather and scatter indices, dynamic starts) are inputs
 * of the recorded node so that rules can reuse them, but carry no
 * derivative. Nothing is conjugated anywhere: these maps only move elements,
 * so their adjoints are the same for real and complex dtypes.
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

static tf_status null_arg(const char *op, const char *arg)
{
    return tf__error(TF_ERR_VALIDATION, op, arg, "%s: %s is NULL", op, arg);
}

static tf_status check_index_dtype(const char *op, const char *arg, const tf_eager *ix)
{
    tf_dtype dt = ix->value->dtype;
    if (dt != TF_I32 && dt != TF_I64)
        return tf__error(TF_ERR_DTYPE_MISMATCH, op, arg, "%s: %s is %s, expected i32 or i64", op,
                         arg, tf_dtype_name(dt));
    return TF_OK;
}

/* Runs `prim` into a new dense tensor of (dtype, rank, shape). */
static tf_status exec_new(tf_session *s, tf_prim prim, const void *params, size_t n_in,
                          tf_tensor *const *in, tf_dtype dtype, size_t rank, const int64_t *shape,
                          tf_tensor **out)
{
    tf_tensor *t;
    tf_status st = tf__empty(s, dtype, rank, shape, &t);
    if (!st && (st = tf__exec(s, prim, params, n_in, in, t)))
        tf_tensor_release(t);
    if (!st)
        *out = t;
    return st;
}

static void put_vec(tf_attrs *a, int k, const int64_t *v, uint32_t n)
{
    a->n[k] = n;
    if (n)
        memcpy(a->v[k], v, n * sizeof *v);
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
    tf_status st = exec_new(s, TF_PRIM_IOTA, &p, 0, NULL, TF_I64, rank, shape, &t);
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
/* slice                                                                  */
/* ===================================================================== */

static tf_status check_slice(const tf_tensor *x, const int64_t *start, const int64_t *limit,
                             const int64_t *stride)
{
    if (x->rank && (!start || !limit || !stride))
        return null_arg("slice", !start ? "start" : !limit ? "limit" : "stride");
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
    put_vec(&a, 0, start, r);
    put_vec(&a, 1, limit, r);
    put_vec(&a, 2, stride, r);
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
        return null_arg("pad", !low ? "low" : !high ? "high" : "interior");
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
    if ((st = exec_new(s, TF_PRIM_PAD, &p, 1, &in, in->dtype, r, shape, &t)))
        return st;
    tf_attrs a = {0};
    put_vec(&a, 0, low, r);
    put_vec(&a, 1, high, r);
    put_vec(&a, 2, interior, r);
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
    sp.step = sp.count > 1 ? (int64_t)step : 1;     /* several positions: step < ext */
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
        return null_arg(op, "xs");
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
        return exec_new(s, TF_PRIM_CONCATENATE, &p, n, vals, v0->dtype, v0->rank, shape, out);
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
    if ((st = exec_new(s, TF_PRIM_GATHER, &p, 2, in, in[0]->dtype, in[0]->rank, shape, &t)))
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
    if ((st = exec_new(s, TF_PRIM_SCATTER, &p, 3, in, bv->dtype, bv->rank, bv->shape, &t)))
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
        return null_arg("dynamic_slice", "sizes");
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
    if ((st = exec_new(s, TF_PRIM_DYNAMIC_SLICE, NULL, 2, in, in[0]->dtype, r, sizes, &t)))
        return st;
    tf_attrs a = {0};
    put_vec(&a, 0, sizes, r);
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
    tf_status st =
        exec_new(s, TF_PRIM_DYNAMIC_UPDATE_SLICE, NULL, 3, in, bv->dtype, bv->rank, bv->shape, &t);
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

const tf_op_rule tf__rule_slice = {.name = "slice", .vjp = slice_vjp, .jvp = slice_jvp};
const tf_op_rule tf__rule_pad = {.name = "pad", .vjp = pad_vjp, .jvp = pad_jvp};
const tf_op_rule tf__rule_concatenate = {
    .name = "concatenate", .vjp = concat_vjp, .jvp = concat_jvp};
const tf_op_rule tf__rule_gather = {.name = "gather", .vjp = gather_vjp, .jvp = gather_jvp};
const tf_op_rule tf__rule_scatter = {.name = "scatter", .vjp = scatter_vjp, .jvp = scatter_jvp};
const tf_op_rule tf__rule_dynamic_slice = {
    .name = "dynamic_slice", .vjp = dslice_vjp, .jvp = dslice_jvp};
const tf_op_rule tf__rule_dynamic_update_slice = {
    .name = "dynamic_update_slice", .vjp = dus_vjp, .jvp = dus_jvp};
