/*
 * ops_composite.c - logsumexp, softmax, log_softmax, silu, gelu, softplus,
 * layer_norm and rms_norm: ops built from other recorded ops, so they need
 * no op id and no rules of their own; their derivatives (of every order)
 * come from their parts. Each is written in a numerically stable form.
 */
#include <math.h>
#include <string.h>

#include "rule_builder.h"

static const char *const k_x[] = {"x"};

/* Checks s, x and out, and that x has a float dtype. */
static tf_status check_float(const char *op, tf_session *s, tf_eager *x, tf_eager **out)
{
    tf_status st = tf__check_inputs(op, s, &x, 1, k_x, out);
    if (st)
        return st;
    if (!tf_dtype_is_float(x->value->dtype))
        return tf__error(TF_ERR_DTYPE_MISMATCH, op, "x", "%s: defined for f32 and f64, not %s", op,
                         tf_dtype_name(x->value->dtype));
    return TF_OK;
}

/* A reduced-shape tensor broadcast back over x's shape (`mask` = reduced axes). */
static tf_eager *spread(rule_builder *b, tf_eager *r, const tf_eager *x, uint64_t mask)
{
    return tf__rb_unreduce(b, r, x->value, mask);
}

static tf_eager *rc_mean(rule_builder *b, tf_eager *x, const int *axes, size_t n)
{
    tf_eager *o = NULL;
    if (!x)
        return NULL;
    RB_CALL_(b, tf_session_reduce_mean(b->s, x, axes, n, &o));
}

/* ---- logsumexp and the softmax family ---- */

static tf_eager *rc_detach(rule_builder *b, tf_eager *x)
{
    tf_eager *o = NULL;
    RB_CALL_(b, tf_eager_detach(x, &o));
}

static tf_eager *rc_max(rule_builder *b, tf_eager *x, const int *axes, size_t n)
{
    tf_eager *o = NULL;
    if (!x)
        return NULL;
    RB_CALL_(b, tf_session_reduce_max(b->s, x, axes, n, &o));
}

/*
 * x - m with m the maximum of each group (the axes in `mask`; `axes`, `n`
 * the same list) taken from a detached x: the shift is a constant, so the
 * derivatives of what follows are exact whatever m is, and x - m is exact
 * near the maximum. An infinite or NaN maximum is replaced by 0, so that an
 * all -inf (or empty) group gives -inf, a +inf gives +inf and a NaN gives
 * NaN rather than inf - inf. *m gets m (the reduced shape).
 */
static tf_eager *shift_by_max(rule_builder *b, tf_eager *x, const int *axes, size_t n,
                              uint64_t mask, tf_eager **m)
{
    tf_eager *mx = rc_max(b, rc_detach(b, x), axes, n);
    tf_eager *finite = rb_compare(b, rb_abs(b, mx), rb_scalar(b, x, INFINITY), TF_COMPARE_LT);
    *m = rb_select(b, finite, mx, rb_scalar(b, x, 0.0));
    return rb_sub(b, x, spread(b, *m, x, mask));
}

/* log(sum(exp(x))) = log(sum(exp(x - m))) + m, the sum between 1 and the group size. */
TF_API tf_status tf_session_logsumexp(tf_session *s, tf_eager *x, const int *axes, size_t n_axes,
                                      tf_eager **out)
{
    tf_status st = check_float("logsumexp", s, x, out);
    uint64_t mask = 0;
    if (!st)
        st = tf__axes_mask("logsumexp", axes, n_axes, x->value->rank, &mask);
    if (st)
        return st;
    rule_builder b = rb_begin(s);
    tf_eager *m = NULL, *shifted = shift_by_max(&b, x, axes, n_axes, mask, &m);
    tf_eager *lse = rb_log(&b, rb_reduce_sum(&b, rb_exp(&b, shifted), axes, n_axes));
    return rb_done(&b, rb_add(&b, lse, m), out);
}

/*
 * softmax = e / sum(e) and log_softmax = (x - m) - log(sum(e)) with
 * e = exp(x - m): every term is computed from the exact shift x - m, never
 * from x - logsumexp(x), which would lose the bits of a large maximum.
 */
static tf_status softmax_family(const char *op, tf_session *s, tf_eager *x, int axis, bool log_,
                                tf_eager **out)
{
    tf_status st = check_float(op, s, x, out);
    uint32_t a = 0;
    if (!st)
        st = tf__norm_axis(op, "axis", axis, x->value->rank, &a);
    if (st)
        return st;
    int ax = (int)a;
    uint64_t mask = 1ull << a;
    rule_builder b = rb_begin(s);
    tf_eager *m = NULL, *shifted = shift_by_max(&b, x, &ax, 1, mask, &m);
    tf_eager *e = rb_exp(&b, shifted), *sum = rb_reduce_sum(&b, e, &ax, 1);
    if (log_)
        return rb_done(&b, rb_sub(&b, shifted, spread(&b, rb_log(&b, sum), x, mask)), out);
    return rb_done(&b, rb_div(&b, e, spread(&b, sum, x, mask)), out);
}

TF_API tf_status tf_session_softmax(tf_session *s, tf_eager *x, int axis, tf_eager **out)
{
    return softmax_family("softmax", s, x, axis, false, out);
}

TF_API tf_status tf_session_log_softmax(tf_session *s, tf_eager *x, int axis, tf_eager **out)
{
    return softmax_family("log_softmax", s, x, axis, true, out);
}

/* ---- activations ---- */

TF_API tf_status tf_session_silu(tf_session *s, tf_eager *x, tf_eager **out)
{
    tf_status st = check_float("silu", s, x, out);
    if (st)
        return st;
    rule_builder b = rb_begin(s);
    return rb_done(&b, rb_mul(&b, x, rb_sigmoid(&b, x)), out);
}

TF_API tf_status tf_session_gelu(tf_session *s, tf_eager *x, tf_eager **out)
{
    tf_status st = check_float("gelu", s, x, out);
    if (st)
        return st;
    rule_builder b = rb_begin(s);
    tf_eager *phi = rb_erf(&b, rb_mul(&b, x, rb_scalar(&b, x, 0.70710678118654752440)));
    phi = rb_add(&b, rb_scalar(&b, x, 1.0), phi);
    return rb_done(&b, rb_mul(&b, rb_mul(&b, x, phi), rb_scalar(&b, x, 0.5)), out);
}

/*
 * max(x, 0) + log1p(exp(-|x|)): exp never overflows and log1p keeps the
 * tail accurate. At x = 0 the tie-split of maximum (1/2) and sign(0) = 0 give
 * the exact derivative sigmoid(0) = 1/2.
 */
TF_API tf_status tf_session_softplus(tf_session *s, tf_eager *x, tf_eager **out)
{
    tf_status st = check_float("softplus", s, x, out);
    if (st)
        return st;
    rule_builder b = rb_begin(s);
    tf_eager *relu = rb_maximum(&b, x, rb_scalar(&b, x, 0.0));
    tf_eager *tail = rb_log1p(&b, rb_exp(&b, rb_neg(&b, rb_abs(&b, x))));
    return rb_done(&b, rb_add(&b, relu, tail), out);
}

/* ---- normalisation ---- */

/*
 * Checks the arguments of layer_norm / rms_norm: n_axes <= rank, eps >= 0,
 * and each affine parameter (may be NULL) with x's dtype and exactly the
 * normalised trailing shape. Sets *mask to the normalised axes.
 */
static tf_status check_norm(const char *op, tf_session *s, tf_eager *x, size_t n_axes,
                            tf_eager *const *params, const char *const *names, size_t n_params,
                            double eps, uint64_t *mask, tf_eager **out)
{
    tf_status st = check_float(op, s, x, out);
    if (st)
        return st;
    const tf_tensor *v = x->value;
    if (n_axes > v->rank)
        return tf__error(TF_ERR_AXIS_OUT_OF_BOUNDS, op, "n_axes",
                         "%s: cannot normalise over the last %zu axes of a rank-%u tensor", op,
                         n_axes, v->rank);
    if (!(eps >= 0.0))
        return tf__error(TF_ERR_VALIDATION, op, "eps", "%s: eps is %g; it must be >= 0", op, eps);
    for (size_t i = 0; i < n_params; i++) {
        const tf_eager *p = params[i];
        if (!p)
            continue;
        if ((st = tf__check_inputs(op, s, &params[i], 1, &names[i], out)))
            return st;
        if (p->value->dtype != v->dtype)
            return tf__error(TF_ERR_DTYPE_MISMATCH, op, names[i], "%s: x is %s, %s is %s", op,
                             tf_dtype_name(v->dtype), names[i], tf_dtype_name(p->value->dtype));
        const int64_t *tail = v->shape + (v->rank - n_axes);
        if (p->value->rank != n_axes ||
            (n_axes && memcmp(p->value->shape, tail, n_axes * sizeof *tail) != 0))
            return tf__error(TF_ERR_SHAPE_MISMATCH, op, names[i],
                             "%s: %s must have the normalised shape (the last %zu axes of x)", op,
                             names[i], n_axes);
    }
    *mask = 0;
    for (uint32_t d = v->rank - (uint32_t)n_axes; d < v->rank; d++)
        *mask |= 1ull << d;
    return TF_OK;
}

/* The normalised axes as a list (the last n of rank). */
static size_t trailing_axes(uint32_t rank, size_t n, int *axes)
{
    for (size_t i = 0; i < n; i++)
        axes[i] = (int)(rank - n + i);
    return n;
}

TF_API tf_status tf_session_layer_norm(tf_session *s, tf_eager *x, size_t n_axes, tf_eager *weight,
                                       tf_eager *bias, double eps, tf_eager **out)
{
    static const char *const names[] = {"weight", "bias"};
    tf_eager *params[2] = {weight, bias};
    uint64_t mask = 0;
    tf_status st = check_norm("layer_norm", s, x, n_axes, params, names, 2, eps, &mask, out);
    if (st)
        return st;
    int axes[TF_MAX_RANK];
    size_t n = trailing_axes(x->value->rank, n_axes, axes);
    rule_builder b = rb_begin(s);
    /* two passes: the variance of the centred values, which cannot go negative */
    tf_eager *centred = rb_sub(&b, x, spread(&b, rc_mean(&b, x, axes, n), x, mask));
    tf_eager *var = rc_mean(&b, rb_mul(&b, centred, centred), axes, n);
    tf_eager *inv = rb_rsqrt(&b, rb_add(&b, var, rb_scalar(&b, x, eps)));
    tf_eager *y = rb_mul(&b, centred, spread(&b, inv, x, mask));
    if (weight)
        y = rb_mul(&b, y, weight); /* NumPy broadcasting aligns the trailing axes */
    if (bias)
        y = rb_add(&b, y, bias);
    return rb_done(&b, y, out);
}

TF_API tf_status tf_session_rms_norm(tf_session *s, tf_eager *x, size_t n_axes, tf_eager *weight,
                                     double eps, tf_eager **out)
{
    static const char *const names[] = {"weight"};
    uint64_t mask = 0;
    tf_status st = check_norm("rms_norm", s, x, n_axes, &weight, names, 1, eps, &mask, out);
    if (st)
        return st;
    int axes[TF_MAX_RANK];
    size_t n = trailing_axes(x->value->rank, n_axes, axes);
    rule_builder b = rb_begin(s);
    tf_eager *ms = rc_mean(&b, rb_mul(&b, x, x), axes, n);
    tf_eager *inv = rb_rsqrt(&b, rb_add(&b, ms, rb_scalar(&b, x, eps)));
    tf_eager *y = rb_mul(&b, x, spread(&b, inv, x, mask));
    return rb_done(&b, weight ? rb_mul(&b, y, weight) : y, out);
}
