/*
 * ops_elementwise.c - unary and binary elementwise ops, compare, select,
 * clamp, convert and cast, with their reverse and forward rules.
 *
 * The derivative of each unary op is one expression f'(x) (in terms of x and
 * the output), shared by its VJP (cot * f') and its JVP (t * f'); binary ops
 * likewise have df/dx and df/dy. Broadcasting is expressed with stride-0
 * views, and undone in the VJP by summing back to the operand's shape.
 */
#include <math.h>
#include <string.h>

#include "rule_builder.h"
#include "rule_fx.h"

/* ===================================================================== */
/* Forward                                                                */
/* ===================================================================== */

static const char *const k_x[] = {"x"};
static const char *const k_xy[] = {"x", "y"};

static tf_status unary_forward(tf_session *s, uint32_t opid, tf_unary_op prim_op, tf_eager *x,
                               tf_eager **out)
{
    const char *name = tf__op_rule(opid)->name;
    tf_status st = tf__check_inputs(name, s, &x, 1, k_x, out);
    if (st)
        return st;
    const tf_tensor *v = x->value;
    if ((st = tf__complex_check(name, "x", opid, v->dtype)))
        return st;
    tf_tensor *t;
    if ((st = tf__empty(s, tf__unary_dtype(opid, v->dtype), v->rank, v->shape, &t)))
        return st;
    tf_unary_params p = {sizeof p, (uint32_t)prim_op};
    tf_tensor *in = x->value;
    if ((st = tf__lazy_exec(&s->lazy, TF_PRIM_UNARY, &p, 1, &in, t))) {
        tf_tensor_release(t);
        return st;
    }
    return tf__record(s, opid, NULL, &x, 1, t, out);
}

/*
 * Runs an elementwise primitive over inputs broadcast NumPy style to one
 * shape, into a new tensor of `dtype`.
 */
static tf_status broadcast_exec(tf_session *s, const char *name, tf_prim prim, const void *params,
                                tf_eager *const *xs, size_t n, tf_dtype dtype, tf_tensor **out)
{
    /* views[i]: the operand itself when it has the full shape already (held by
       xs[i], so not retained), else a broadcast view of it, owned here */
    tf_tensor *vals[3], *views[3] = {NULL, NULL, NULL};
    bool owned[3] = {false, false, false};
    for (size_t i = 0; i < n; i++)
        vals[i] = xs[i]->value;
    int64_t shape[TF_MAX_RANK];
    size_t rank;
    tf_status st = tf__broadcast_shapes(name, vals, n, shape, &rank);
    for (size_t i = 0; i < n && !st; i++) {
        if (tf__same_extents(vals[i], rank, shape))
            views[i] = vals[i];
        else
            owned[i] = !(st = tf__broadcast_view(vals[i], rank, shape, &views[i]));
    }
    tf_tensor *t = NULL;
    if (!st)
        st = tf__empty(s, dtype, rank, shape, &t);
    if (!st)
        st = tf__lazy_exec(&s->lazy, prim, params, n, views, t);
    for (size_t i = 0; i < n; i++)
        if (owned[i])
            tf_tensor_release(views[i]);
    if (st) {
        tf_tensor_release(t);
        return st;
    }
    *out = t;
    return TF_OK;
}

static tf_status same_dtype(const char *name, tf_eager *const *xs, size_t n,
                            const char *const *names)
{
    for (size_t i = 1; i < n; i++)
        if (xs[i]->value->dtype != xs[0]->value->dtype)
            return tf__error(TF_ERR_DTYPE_MISMATCH, name, names[i], "%s: %s is %s, %s is %s", name,
                             names[0], tf_dtype_name(xs[0]->value->dtype), names[i],
                             tf_dtype_name(xs[i]->value->dtype));
    return TF_OK;
}

/*
 * A binary op after NumPy's promotion of its operands (tf__promote), or,
 * for complex(re, im), two parts of one real dtype.
 */
static tf_status binary_forward(tf_session *s, uint32_t opid, tf_binary_op prim_op, tf_eager *x,
                                tf_eager *y, tf_eager **out)
{
    static const char *const k_parts[] = {"re", "im"};
    const char *name = tf__op_rule(opid)->name;
    bool parts = opid == TF_OP_complex;
    const char *const *names = parts ? k_parts : k_xy;
    tf_eager *xs[2] = {x, y}, *cv[2] = {NULL, NULL};
    tf_status st = tf__check_inputs(name, s, xs, 2, names, out);
    if (st)
        return st;
    /* cv: the operands as the op reads them; converted ones (promotion) are owned
       here, the caller's own are used as they are (the caller holds them) */
    bool converted = false;
    if (parts ? !(st = same_dtype(name, xs, 2, names)) : x->value->dtype == y->value->dtype) {
        cv[0] = x, cv[1] = y;
    } else if (!parts) {
        st = tf__promote(s, name, xs, names, cv);
        converted = true;
    }
    tf_dtype dt = cv[0] ? cv[0]->value->dtype : x->value->dtype;
    if (!st)
        st = tf__complex_check(name, names[0], opid, dt);
    tf_binary_params p = {sizeof p, (uint32_t)prim_op};
    tf_tensor *t = NULL;
    if (!st)
        st = broadcast_exec(s, name, TF_PRIM_BINARY, &p, cv, 2,
                            parts ? tf_dtype_complex_of(dt) : dt, &t);
    if (!st)
        st = tf__record(s, opid, NULL, cv, 2, t, out);
    if (converted) {
        tf_eager_release(cv[0]);
        tf_eager_release(cv[1]);
    }
    return st;
}

#define UNARY_API_(NAME, name)                                                     \
    TF_API tf_status tf_session_##name(tf_session *s, tf_eager *x, tf_eager **out) \
    {                                                                              \
        return unary_forward(s, TF_OP_##name, TF_UNARY_##NAME, x, out);            \
    }
TF_UNARY_OPS(UNARY_API_)
TF_COMPLEX_UNARY_OPS(UNARY_API_)
#undef UNARY_API_

#define BINARY_API_(NAME, name)                                                                 \
    TF_API tf_status tf_session_##name(tf_session *s, tf_eager *x, tf_eager *y, tf_eager **out) \
    {                                                                                           \
        return binary_forward(s, TF_OP_##name, TF_BINARY_##NAME, x, y, out);                    \
    }
TF_BINARY_OPS(BINARY_API_)
BINARY_API_(COMPLEX, complex)
#undef BINARY_API_

TF_API tf_status tf_session_compare(tf_session *s, tf_eager *x, tf_eager *y,
                                    tf_compare_op direction, tf_eager **out)
{
    tf_eager *xs[2] = {x, y};
    tf_status st = tf__check_inputs("compare", s, xs, 2, k_xy, out);
    if (!st)
        st = same_dtype("compare", xs, 2, k_xy);
    if (st)
        return st;
    if ((unsigned)direction >= TF_COMPARE_COUNT_)
        return tf__error(TF_ERR_VALIDATION, "compare", "direction", "compare: unknown direction %d",
                         (int)direction);
    if (tf_dtype_is_complex(x->value->dtype) && direction != TF_COMPARE_EQ &&
        direction != TF_COMPARE_NE)
        return tf__error(TF_ERR_DTYPE_MISMATCH, "compare", "direction",
                         "compare: %s values have no order (only EQ and NE)",
                         tf_dtype_name(x->value->dtype));
    tf_compare_params p = {sizeof p, (uint32_t)direction};
    tf_tensor *t;
    if ((st = broadcast_exec(s, "compare", TF_PRIM_COMPARE, &p, xs, 2, TF_BOOL, &t)))
        return st;
    tf_attrs a = {0};
    a.i[0] = direction;
    return tf__record(s, TF_OP_compare, &a, xs, 2, t, out);
}

TF_API tf_status tf_session_select(tf_session *s, tf_eager *pred, tf_eager *on_true,
                                   tf_eager *on_false, tf_eager **out)
{
    static const char *const names[] = {"pred", "on_true", "on_false"};
    tf_eager *xs[3] = {pred, on_true, on_false};
    tf_status st = tf__check_inputs("select", s, xs, 3, names, out);
    if (!st)
        st = same_dtype("select", xs + 1, 2, names + 1);
    if (st)
        return st;
    if (pred->value->dtype != TF_BOOL)
        return tf__error(TF_ERR_DTYPE_MISMATCH, "select", "pred", "select: pred is %s, not bool",
                         tf_dtype_name(pred->value->dtype));
    tf_tensor *t;
    if ((st = broadcast_exec(s, "select", TF_PRIM_SELECT, NULL, xs, 3, on_true->value->dtype, &t)))
        return st;
    return tf__record(s, TF_OP_select, NULL, xs, 3, t, out);
}

/* clamp is composed of recorded ops, min(max(x, lo), hi) as ops.h says: m = lo
   where x < lo, else x; then hi where m > hi, else m. So hi wins when lo > hi
   (NumPy's clip), and the gradient goes to whichever operand was picked. */
TF_API tf_status tf_session_clamp(tf_session *s, tf_eager *x, tf_eager *lo, tf_eager *hi,
                                  tf_eager **out)
{
    static const char *const names[] = {"x", "lo", "hi"};
    tf_eager *xs[3] = {x, lo, hi};
    tf_status st = tf__check_inputs("clamp", s, xs, 3, names, out);
    if (!st)
        st = same_dtype("clamp", xs, 3, names);
    if (st)
        return st;
    rule_builder b = rb_begin(s);
    tf_eager *m = rb_select(&b, rb_compare(&b, x, lo, TF_COMPARE_LT), lo, x);
    tf_eager *r = rb_select(&b, rb_compare(&b, m, hi, TF_COMPARE_GT), hi, m);
    return rb_done(&b, r, out);
}

static tf_status convert_forward(tf_session *s, tf_eager *x, tf_dtype dtype, bool checked,
                                 tf_eager **out)
{
    const char *name = checked ? "convert" : "cast";
    tf_status st = tf__check_inputs(name, s, &x, 1, k_x, out);
    if (st)
        return st;
    if (!tf_dtype_is_valid((int)dtype))
        return tf__error(TF_ERR_VALIDATION, name, "dtype", "%s: %d is not a dtype", name,
                         (int)dtype);
    const tf_tensor *v = x->value;
    tf_tensor *t;
    if ((st = tf__empty(s, dtype, v->rank, v->shape, &t)))
        return st;
    tf_convert_params p = {sizeof p, checked};
    tf_tensor *in = x->value;
    if ((st = tf__exec(s, TF_PRIM_CONVERT, &p, 1, &in, t))) {
        tf_tensor_release(t);
        return st;
    }
    tf_attrs a = {0};
    a.i[0] = checked;
    return tf__record(s, TF_OP_convert, &a, &x, 1, t, out);
}

TF_API tf_status tf_session_convert(tf_session *s, tf_eager *x, tf_dtype dtype, tf_eager **out)
{
    return convert_forward(s, x, dtype, true, out);
}

TF_API tf_status tf_session_cast(tf_session *s, tf_eager *x, tf_dtype dtype, tf_eager **out)
{
    return convert_forward(s, x, dtype, false, out);
}

/* ===================================================================== */
/* Derivatives                                                            */
/* ===================================================================== */

/*
 * A derivative formula is written once, over the dx_* calls below, and built
 * either as session ops (through a rule builder: the rules that record, and
 * every forward rule) or as an elementwise program (rule_fx.h: backward's fused
 * reverse rules). A dv is a value of the one or the other; `nil` means what the
 * formula's comment says (a zero or a one that needs no product).
 */
typedef struct dx {
    rule_builder *b;      /* session ops when set, else ... */
    tf_fx *fx;            /* ... steps of this program */
    const tf_eager *like; /* the constants' dtype (session ops) */
} dx;

typedef struct dv {
    tf_eager *e; /* session ops */
    uint32_t r;  /* program reference */
    bool nil;
} dv;

static dv dv_nil(void)
{
    return (dv){NULL, TF_FX_NONE, true};
}

static dv dx_in(dx *d, tf_eager *x)
{
    return d->b ? (dv){x, 0, false} : (dv){NULL, tf__fx_input(d->fx, x), false};
}

static dv dx_const(dx *d, double v)
{
    return d->b ? (dv){rb_scalar(d->b, d->like, v), 0, false}
                : (dv){NULL, tf__fx_const(d->fx, v), false};
}

static dv dx_unary(dx *d, tf_unary_op op, dv a)
{
    if (!d->b)
        return (dv){NULL, tf__fx_unary(d->fx, op, a.r), false};
    tf_eager *e = NULL;
    switch (op) {
    case TF_UNARY_NEG: e = rb_neg(d->b, a.e); break;
    case TF_UNARY_SIGN: e = rb_sign(d->b, a.e); break;
    case TF_UNARY_EXP: e = rb_exp(d->b, a.e); break;
    case TF_UNARY_SIN: e = rb_sin(d->b, a.e); break;
    case TF_UNARY_COS: e = rb_cos(d->b, a.e); break;
    default: /* no formula uses another */
        d->b->st = tf__error(TF_ERR_RUNTIME_STATE, "autodiff", NULL,
                             "a derivative formula used unary op %d", (int)op);
    }
    return (dv){e, 0, false};
}

static dv dx_binary(dx *d, tf_binary_op op, dv a, dv b)
{
    if (!d->b)
        return (dv){NULL, tf__fx_binary(d->fx, op, a.r, b.r), false};
    tf_eager *e = NULL;
    switch (op) {
    case TF_BINARY_ADD: e = rb_add(d->b, a.e, b.e); break;
    case TF_BINARY_SUB: e = rb_sub(d->b, a.e, b.e); break;
    case TF_BINARY_MUL: e = rb_mul(d->b, a.e, b.e); break;
    case TF_BINARY_DIV: e = rb_div(d->b, a.e, b.e); break;
    default: /* no formula uses another */
        d->b->st = tf__error(TF_ERR_RUNTIME_STATE, "autodiff", NULL,
                             "a derivative formula used binary op %d", (int)op);
    }
    return (dv){e, 0, false};
}

/* f'(x) of a unary op; nil when it is identically zero. */
static dv unary_deriv(dx *d, uint32_t op, tf_eager *xe, tf_eager *oute)
{
    dv one, out, x;
    switch (op) {
    case TF_OP_neg: return dx_const(d, -1.0);
    case TF_OP_abs: return dx_unary(d, TF_UNARY_SIGN, dx_in(d, xe));
    case TF_OP_sign: return dv_nil();
    case TF_OP_exp: return dx_in(d, oute);
    case TF_OP_log: return dx_binary(d, TF_BINARY_DIV, dx_const(d, 1.0), dx_in(d, xe));
    case TF_OP_expm1: return dx_binary(d, TF_BINARY_ADD, dx_in(d, oute), dx_const(d, 1.0));
    case TF_OP_log1p:
        one = dx_const(d, 1.0);
        return dx_binary(d, TF_BINARY_DIV, one, dx_binary(d, TF_BINARY_ADD, dx_in(d, xe), one));
    case TF_OP_sin: return dx_unary(d, TF_UNARY_COS, dx_in(d, xe));
    case TF_OP_cos: return dx_unary(d, TF_UNARY_NEG, dx_unary(d, TF_UNARY_SIN, dx_in(d, xe)));
    case TF_OP_tanh:
        out = dx_in(d, oute);
        return dx_binary(d, TF_BINARY_SUB, dx_const(d, 1.0), dx_binary(d, TF_BINARY_MUL, out, out));
    case TF_OP_sqrt: return dx_binary(d, TF_BINARY_DIV, dx_const(d, 0.5), dx_in(d, oute));
    case TF_OP_rsqrt:
        return dx_binary(d, TF_BINARY_MUL, dx_const(d, -0.5),
                         dx_binary(d, TF_BINARY_DIV, dx_in(d, oute), dx_in(d, xe)));
    case TF_OP_erf:
        x = dx_in(d, xe);
        return dx_binary(d, TF_BINARY_MUL, dx_const(d, 1.1283791670955126 /* 2/sqrt(pi) */),
                         dx_unary(d, TF_UNARY_EXP,
                                  dx_unary(d, TF_UNARY_NEG, dx_binary(d, TF_BINARY_MUL, x, x))));
    case TF_OP_sigmoid:
        out = dx_in(d, oute);
        return dx_binary(d, TF_BINARY_MUL, out, dx_binary(d, TF_BINARY_SUB, dx_const(d, 1.0), out));
    }
    return dv_nil();
}

/*
 * On a complex input a holomorphic op's cotangent is cot * conj(f'(z))
 * (PyTorch's convention, docs/complex.md), its tangent t * f'(z); the other
 * ops have rules of their own (ops_complex.c).
 */
static tf_status unary_vjp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *cot,
                           const bool *need, tf_eager **cin)
{
    bool cplx = tf_dtype_is_complex(nd->inputs[0]->value->dtype);
    if (cplx && !tf__holomorphic(nd->op))
        return tf__complex_unary_vjp(s, out, nd, cot, need, cin);
    rule_builder b = rb_begin(s);
    dx d = {&b, NULL, nd->inputs[0]};
    dv f = need[0] ? unary_deriv(&d, nd->op, nd->inputs[0], out) : dv_nil();
    tf_eager *fe = f.nil ? NULL : cplx ? rb_conj(&b, f.e) : f.e;
    return rb_done(&b, fe ? rb_mul(&b, cot, fe) : NULL, &cin[0]);
}

static tf_status unary_jvp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *const *tin,
                           tf_eager **tout)
{
    if (tf_dtype_is_complex(nd->inputs[0]->value->dtype) && !tf__holomorphic(nd->op))
        return tf__complex_unary_jvp(s, out, nd, tin, tout);
    rule_builder b = rb_begin(s);
    dx d = {&b, NULL, nd->inputs[0]};
    dv f = unary_deriv(&d, nd->op, nd->inputs[0], out);
    return rb_done(&b, f.nil ? NULL : rb_mul(&b, tin[0], f.e), tout);
}

/*
 * x's share of the derivative of maximum (gt) / minimum (lt): 1 where x
 * wins, 1/2 on ties, 0 where y wins. A NaN result comes from a NaN input,
 * which takes the whole derivative (both NaN: a tie), as in reduce_max.
 * NaN compares false, so without the NaN terms a NaN x would pass its
 * derivative to y.
 */
static tf_eager *extremum_mask(rule_builder *b, tf_eager *x, tf_eager *y, tf_compare_op win)
{
    tf_eager *half = rb_scalar(b, x, 0.5);
    tf_eager *wins = rb_mask(b, rb_compare(b, x, y, win), x);
    tf_eager *ties = rb_mask(b, rb_compare(b, x, y, TF_COMPARE_EQ), x);
    tf_eager *nan_x = rb_mask(b, rb_compare(b, x, x, TF_COMPARE_NE), x);
    tf_eager *nan_y = rb_mask(b, rb_compare(b, y, y, TF_COMPARE_NE), x);
    tf_eager *m = rb_add(b, rb_add(b, wins, nan_x), rb_mul(b, ties, half));
    return rb_sub(b, m, rb_mul(b, rb_mul(b, nan_x, nan_y), half));
}

/*
 * df/dx (k = 0) or df/dy (k = 1) of a binary op; nil means "exactly one" for
 * add/sub-x and rem-x (the caller skips the product). pow, maximum and minimum
 * need compare and select, which a program has not: built as a program they
 * mark it overflowed, and the plain rule runs.
 */
static dv binary_deriv(dx *d, uint32_t op, int k, tf_eager *xe, tf_eager *ye, tf_eager *oute)
{
    switch (op) {
    case TF_OP_add: return dv_nil();
    case TF_OP_sub: return k ? dx_const(d, -1.0) : dv_nil();
    case TF_OP_mul: return dx_in(d, k ? xe : ye);
    case TF_OP_div:
        return k ? dx_unary(d, TF_UNARY_NEG,
                            dx_binary(d, TF_BINARY_DIV, dx_in(d, oute), dx_in(d, ye)))
                 : dx_binary(d, TF_BINARY_DIV, dx_const(d, 1.0), dx_in(d, ye));
    case TF_OP_rem: /* x - trunc(x / y) * y */
        return k ? dx_unary(d, TF_UNARY_NEG,
                            dx_binary(d, TF_BINARY_DIV,
                                      dx_binary(d, TF_BINARY_SUB, dx_in(d, xe), dx_in(d, oute)),
                                      dx_in(d, ye)))
                 : dv_nil();
    }
    if (!d->b) {
        d->fx->overflow = true;
        return dv_nil();
    }
    rule_builder *b = d->b;
    tf_eager *x = xe, *y = ye, *out = oute;
    switch (op) {
    case TF_OP_pow: {
        tf_eager *zero = rb_scalar(b, x, 0.0);
        if (k) /* out * log x, taken as 0 where x == 0 (as 0^y is flat there for y > 0) */
            return (dv){rb_select(b, rb_compare(b, x, zero, TF_COMPARE_EQ), zero,
                                  rb_mul(b, out, rb_log(b, x))),
                        0, false};
        /* y * x^(y-1), taken as 0 where y == 0 */
        tf_eager *t = rb_mul(b, y, rb_pow(b, x, rb_sub(b, y, rb_scalar(b, x, 1.0))));
        return (dv){rb_select(b, rb_compare(b, y, zero, TF_COMPARE_EQ), zero, t), 0, false};
    }
    case TF_OP_maximum:
    case TF_OP_minimum: {
        tf_eager *m = extremum_mask(b, x, y, op == TF_OP_maximum ? TF_COMPARE_GT : TF_COMPARE_LT);
        return (dv){k ? rb_sub(b, rb_scalar(b, x, 1.0), m) : m, 0, false};
    }
    }
    return dv_nil();
}

/*
 * Whether every element of t is 1 (tf__tensor_reads_one: a broadcast of one
 * current host value). Backward seeds sum(...) with such a cotangent, and
 * 1 * d is d exactly in IEEE arithmetic, so the product below can be skipped.
 */
static bool broadcast_one(const tf_tensor *t)
{
    return tf__tensor_reads_one(t);
}

/*
 * t * d, or t when d is NULL (a derivative of 1); d itself when t is all
 * ones of d's shape and d is a constant (a tracked d stays behind its own
 * product, so that a derivative taken with create_graph has a node of its
 * own rather than being a value of the forward graph).
 */
static tf_eager *times(rule_builder *b, tf_eager *t, tf_eager *d)
{
    if (!d)
        return t;
    const tf_tensor *tv = t->value, *dval = d->value;
    if (!d->tracked && tv->dtype == dval->dtype && tf__same_shape(tv, dval) && broadcast_one(tv))
        return d;
    return rb_mul(b, t, d);
}

static tf_status binary_vjp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *cot,
                            const bool *need, tf_eager **cin)
{
    rule_builder b = rb_begin(s);
    tf_eager *x = nd->inputs[0], *y = nd->inputs[1];
    for (int k = 0; k < 2; k++) {
        if (!need[k])
            continue;
        dx d = {&b, NULL, x};
        dv f = binary_deriv(&d, nd->op, k, x, y, out);
        tf_eager *fe = f.nil ? NULL : f.e;
        if (fe && tf_dtype_is_complex(x->value->dtype))
            fe = rb_conj(&b, fe); /* cot * conj(df): every binary op is holomorphic */
        rb_set(&b, rb_sum_to(&b, times(&b, cot, fe), nd->inputs[k]), &cin[k]);
    }
    return rb_finish(&b);
}

static tf_status binary_jvp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *const *tin,
                            tf_eager **tout)
{
    rule_builder b = rb_begin(s);
    tf_eager *x = nd->inputs[0], *y = nd->inputs[1], *sum = NULL;
    for (int k = 0; k < 2; k++) {
        if (!tin[k])
            continue;
        dx d = {&b, NULL, x};
        dv f = binary_deriv(&d, nd->op, k, x, y, out);
        tf_eager *term = times(&b, tin[k], f.nil ? NULL : f.e);
        sum = sum ? rb_add(&b, sum, term) : term;
    }
    const tf_tensor *sv = sum ? sum->value : NULL, *ov = out->value;
    bool reshape = sv && !tf__same_shape(sv, ov);
    return rb_done(&b, reshape ? rb_broadcast_to(&b, sum, out) : sum, tout);
}

/* compare has no derivative: no cotangents, a zero tangent. */
static tf_status compare_vjp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *cot,
                             const bool *need, tf_eager **cin)
{
    return TF_OK;
}

static tf_status compare_jvp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *const *tin,
                             tf_eager **tout)
{
    return TF_OK;
}

static tf_status select_vjp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *cot,
                            const bool *need, tf_eager **cin)
{
    rule_builder b = rb_begin(s);
    tf_eager *p = nd->inputs[0], *zero = rb_scalar(&b, cot, 0.0);
    if (need[1])
        rb_set(&b, rb_sum_to(&b, rb_select(&b, p, cot, zero), nd->inputs[1]), &cin[1]);
    if (need[2])
        rb_set(&b, rb_sum_to(&b, rb_select(&b, p, zero, cot), nd->inputs[2]), &cin[2]);
    return rb_finish(&b);
}

static tf_status select_jvp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *const *tin,
                            tf_eager **tout)
{
    if (!tin[1] && !tin[2])
        return TF_OK;
    rule_builder b = rb_begin(s);
    tf_eager *zero = rb_scalar(&b, out, 0.0);
    tf_eager *r = rb_select(&b, nd->inputs[0], tin[1] ? tin[1] : zero, tin[2] ? tin[2] : zero);
    return rb_done(&b, rb_broadcast_to(&b, r, out), tout);
}

/*
 * Conversions carry derivatives only between float and complex dtypes. The
 * cast of a cotangent to the input's dtype is the adjoint: complex to real
 * keeps the real part (the real input of a mixed op gets a real cotangent),
 * real to complex gives (cot, 0).
 */
static bool float_to_float(const tf_node *nd, const tf_eager *out)
{
    return tf_dtype_is_inexact(nd->inputs[0]->value->dtype) &&
           tf_dtype_is_inexact(out->value->dtype);
}

static tf_status convert_vjp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *cot,
                             const bool *need, tf_eager **cin)
{
    if (!need[0] || !float_to_float(nd, out))
        return TF_OK;
    return tf_session_cast(s, cot, nd->inputs[0]->value->dtype, &cin[0]);
}

static tf_status convert_jvp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *const *tin,
                             tf_eager **tout)
{
    if (!float_to_float(nd, out))
        return TF_OK;
    return tf_session_cast(s, tin[0], out->value->dtype, tout);
}

/* ===================================================================== */
/* Reverse rules as elementwise programs (rule_fx.h)                        */
/* ===================================================================== */

/*
 * cot * d, as times() does it: d itself when cot is all ones and d is not a
 * bare constant (1 * d is d exactly).
 */
static uint32_t times_fx(tf_fx *fx, tf_eager *cot, uint32_t d)
{
    if (d == TF_FX_NONE)
        return tf__fx_input(fx, cot);
    bool constant = (d & TF_FX_IN) && fx->in[d & ~TF_FX_IN] == NULL;
    if (!constant && broadcast_one(cot->value))
        return d;
    return tf__fx_binary(fx, TF_BINARY_MUL, tf__fx_input(fx, cot), d);
}

/* Whether input k has the result's dtype and shape (no broadcast to undo). */
static bool like_out(const tf_node *nd, uint32_t k)
{
    return k < 8 && (nd->like_out >> k & 1);
}

static bool unary_vjp_fx(const tf_node *nd, tf_eager *out, tf_eager *cot, const bool *need,
                         tf_fx *fx, uint32_t *res)
{
    if (!need[0] || !like_out(nd, 0) || !tf_dtype_is_float((tf_dtype)nd->dtype))
        return false;
    tf__fx_init(&fx[0]);
    dx d = {NULL, &fx[0], NULL};
    dv f = unary_deriv(&d, nd->op, nd->inputs[0], out);
    res[0] = f.nil ? TF_FX_NONE : times_fx(&fx[0], cot, f.r);
    return !fx[0].overflow;
}

static bool binary_vjp_fx(const tf_node *nd, tf_eager *out, tf_eager *cot, const bool *need,
                          tf_fx *fx, uint32_t *res)
{
    uint32_t op = nd->op;
    if (!tf_dtype_is_float((tf_dtype)nd->dtype))
        return false;
    /* every formula but add's and sub's reads both inputs: both must be of out's shape */
    bool both = op != TF_OP_add && op != TF_OP_sub;
    if (both && (!like_out(nd, 0) || !like_out(nd, 1)))
        return false;
    for (uint32_t k = 0; k < 2; k++) {
        res[k] = TF_FX_NONE;
        if (!need[k])
            continue;
        if (!like_out(nd, k))
            return false;
        tf_fx *f = &fx[k];
        tf__fx_init(f);
        dx d = {NULL, f, NULL};
        dv df = binary_deriv(&d, op, (int)k, nd->inputs[0], nd->inputs[1], out);
        res[k] = times_fx(f, cot, df.nil ? TF_FX_NONE : df.r);
        if (f->overflow)
            return false;
    }
    return true;
}

/* ===================================================================== */
/* Rule table entries                                                     */
/* ===================================================================== */

#define UNARY_RULE_(NAME, name) \
    const tf_op_rule tf__rule_##name = {#name, unary_vjp, unary_jvp, unary_vjp_fx, 0};
TF_UNARY_OPS(UNARY_RULE_)
TF_COMPLEX_UNARY_OPS(UNARY_RULE_)
#undef UNARY_RULE_

/* The values binary_deriv never touches, one entry per binary op (a new op
   without one does not build): add and sub read only shapes, the dtype of
   input 0 and the cotangent; mul reads its inputs, not its result. */
#define ALL_UNREAD_ (TF_UNREAD_IN(0) | TF_UNREAD_IN(1) | TF_UNREAD_OUT)
enum {
    UNREAD_add = ALL_UNREAD_,
    UNREAD_sub = ALL_UNREAD_,
    UNREAD_mul = TF_UNREAD_OUT,
    UNREAD_div = 0,
    UNREAD_pow = 0,
    UNREAD_maximum = 0,
    UNREAD_minimum = 0,
    UNREAD_rem = 0,
};
#undef ALL_UNREAD_
#define BINARY_RULE_(NAME, name)                                                      \
    const tf_op_rule tf__rule_##name = {#name, binary_vjp, binary_jvp, binary_vjp_fx, \
                                        UNREAD_##name};
TF_BINARY_OPS(BINARY_RULE_)
#undef BINARY_RULE_

const tf_op_rule tf__rule_compare = {.name = "compare", .vjp = compare_vjp, .jvp = compare_jvp};
const tf_op_rule tf__rule_select = {.name = "select", .vjp = select_vjp, .jvp = select_jvp};
const tf_op_rule tf__rule_convert = {.name = "convert", .vjp = convert_vjp, .jvp = convert_jvp};
