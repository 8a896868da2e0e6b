/*
 * tf_gen_ops.c - the margins each op's operands must keep (tf_gen.h): away
 * from kinks, branch cuts, ties and ill-conditioned matrices, so that every
 * reference point is a smooth point of the program. The op builders are in
 * tf_gen_build.c.
 */
#include <lapacke.h>
#include <math.h>
#include <string.h>

#include "tf_gen_internal.h"

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ===================================================================== */
/* Margins                                                                */
/* ===================================================================== */

static double arg_min(const tfp_data *d, double (*f)(double))
{
    double m = INFINITY;
    for (size_t k = 0; k < d->count; k++)
        m = fmin(m, f(d->data[k]));
    return m;
}

static double ident(double v)
{
    return v;
}

static double neg_abs(double v)
{
    return -fabs(v);
}

static double neg_ident(double v)
{
    return -v;
}

/* min over broadcast elements of f(x, y). */
static double pair_min(const tfp_data *x, const tfp_data *y, const tfp_data *res,
                       double (*f)(double, double))
{
    double m = INFINITY;
    size_t n = tfp_data_numel(res);
    for (size_t e = 0; e < n; e++)
        m = fmin(m, f(x->data[tfg__bcast_index(x, res, e)], y->data[tfg__bcast_index(y, res, e)]));
    return m;
}

static double gap(double x, double y)
{
    return fabs(x - y);
}

/* How far x / y is from the nearest non-zero integer (trunc(x/y) is locally constant). */
static double rem_margin(double x, double y)
{
    if (fabs(y) <= 0.2)
        return -1;
    double q = x / y, r = round(q);
    return r == 0 ? 1 : fabs(q - r) - 0.05;
}

/* The reduced axes of a reduction op as a mask over d's axes. */
static uint32_t reduced_mask(const tfp_op *op, const tfp_data *d)
{
    const tfp_attr *a = tfp_attr_get(op, "axes");
    if (!a || a->kind == TFP_A_NULL)
        return (1u << d->rank) - 1;
    uint32_t m = 0;
    for (size_t i = 0; i < a->n; i++)
        m |= 1u << a->ints[i];
    return m;
}

/* The group (index over the kept axes) of element e. */
static size_t group_of(const tfp_data *d, uint32_t mask, size_t e, size_t *size)
{
    size_t g = 0, stride = 1;
    *size = 1;
    for (uint32_t i = 0; i < d->rank; i++) {
        size_t idx = e % (size_t)d->shape[i];
        e /= (size_t)d->shape[i];
        if (mask >> i & 1) {
            *size *= (size_t)d->shape[i];
        } else {
            g += idx * stride;
            stride *= (size_t)d->shape[i];
        }
    }
    return g;
}

/* reduce_max / reduce_min: the winner of every group beats the runner-up by 0.02. */
static bool extremum_margin(const tfp_op *op, const tfp_data *x, bool max)
{
    uint32_t mask = reduced_mask(op, x);
    size_t n = tfp_data_numel(x), size;
    double best[128], second[128];
    for (size_t i = 0; i < 128; i++)
        best[i] = second[i] = -INFINITY;
    for (size_t e = 0; e < n; e++) {
        size_t gi = group_of(x, mask, e, &size);
        double v = max ? x->data[e] : -x->data[e];
        if (gi >= 128)
            return false;
        if (v > best[gi]) {
            second[gi] = best[gi];
            best[gi] = v;
        } else if (v > second[gi]) {
            second[gi] = v;
        }
    }
    for (size_t i = 0; i < 128; i++)
        if (isfinite(second[i]) && best[i] - second[i] <= 0.02)
            return false;
    return true;
}

/* reduce_prod: no element near 0, at most 24 per group. */
static bool prod_margin(const tfp_op *op, const tfp_data *x)
{
    size_t size = 1;
    if (tfp_data_numel(x))
        group_of(x, reduced_mask(op, x), 0, &size);
    return arg_min(x, fabs) > 0.1 && size <= 24;
}

/* Per group of the last m axes: variance (layer_norm) or mean square (rms_norm) + eps >= 0.05. */
static bool norm_margin(const tfp_op *op, const tfp_data *x, bool layer)
{
    const tfp_attr *m = tfp_attr_get(op, "n_axes"), *eps = tfp_attr_get(op, "eps");
    if (!m || !eps)
        return false;
    size_t group = 1;
    for (uint32_t i = x->rank - (uint32_t)m->num; i < x->rank; i++)
        group *= (size_t)x->shape[i];
    size_t outer = tfp_data_numel(x) / group;
    for (size_t o = 0; o < outer; o++) {
        double s = 0, s2 = 0;
        for (size_t j = 0; j < group; j++) {
            double v = x->data[o + outer * j];
            s += v;
            s2 += v * v;
        }
        double mean = s / (double)group, ms = s2 / (double)group;
        double spread = layer ? ms - mean * mean : ms;
        if (spread + eps->num < 0.05)
            return false;
    }
    return true;
}

/* Matrix b of the batch of d (the last two axes), column-major into a. */
static void matrix(const tfp_data *d, size_t b, double *a, int *m, int *n)
{
    *m = (int)d->shape[d->rank - 2];
    *n = (int)d->shape[d->rank - 1];
    size_t batch = tfp_data_numel(d) / (size_t)(*m * *n);
    for (int j = 0; j < *n; j++)
        for (int i = 0; i < *m; i++)
            a[i + *m * j] = d->data[b + batch * ((size_t)i + (size_t)*m * (size_t)j)];
}

/* Singular values (descending) or, `sym`, eigenvalues of the lower triangle
   (ascending) of every matrix; calls check on each, false at the first no. */
static bool each_spectrum(const tfp_data *d, bool sym, bool (*check)(const double *, int))
{
    if (d->rank < 2)
        return false;
    size_t mn = (size_t)(d->shape[d->rank - 2] * d->shape[d->rank - 1]);
    if (mn == 0 || mn > 64)
        return false;
    size_t batch = tfp_data_numel(d) / mn;
    for (size_t b = 0; b < batch; b++) {
        double a[64], s[8], super[8];
        int m, n;
        matrix(d, b, a, &m, &n);
        int info = sym ? (m == n ? LAPACKE_dsyev(LAPACK_COL_MAJOR, 'N', 'L', n, a, m, s) : -1)
                       : LAPACKE_dgesvd(LAPACK_COL_MAJOR, 'N', 'N', m, n, a, m, s, NULL, 1, NULL,
                                        1, super);
        if (info != 0 || !check(s, m < n ? m : n))
            return false;
    }
    return true;
}

/* sigma_min >= 0.25, sigma_max / sigma_min <= 40. */
static bool conditioned(const double *s, int k)
{
    return s[k - 1] >= 0.25 && s[0] / s[k - 1] <= 40;
}

/* ... and distinct singular values (svdvals, the nuclear and spectral norms). */
static bool distinct_sv(const double *s, int k)
{
    for (int i = 0; i + 1 < k; i++)
        if (s[i] - s[i + 1] <= 0.1 || s[i] - s[i + 1] <= 0.02 * s[0])
            return false;
    return conditioned(s, k);
}

static bool positive_definite(const double *w, int k)
{
    return w[0] >= 0.3 && w[k - 1] / w[0] <= 200;
}

static bool distinct_eig(const double *w, int k)
{
    double big = fmax(fabs(w[0]), fabs(w[k - 1]));
    for (int i = 0; i + 1 < k; i++)
        if (w[i + 1] - w[i] <= 0.1 || w[i + 1] - w[i] <= 0.02 * big)
            return false;
    return true;
}

static bool clamp_margin(const tfp_op *op, const tfp_data *x)
{
    const tfp_attr *lo = tfp_attr_get(op, "min"), *hi = tfp_attr_get(op, "max");
    bool inside = false;
    for (size_t k = 0; lo && hi && k < x->count; k++) {
        double v = x->data[k];
        if (fabs(v - lo->num) <= 0.02 || fabs(v - hi->num) <= 0.02)
            return false;
        inside = inside || (v > lo->num && v < hi->num);
    }
    return inside;
}

/* Ops with a limit on |x| (their values or derivatives grow fast beyond it). */
static const struct {
    const char *name;
    double limit;
} k_bounded[] = {{"sin", 8},      {"cos", 8},  {"tanh", 5},  {"erf", 3},   {"sigmoid", 8},
                 {"softplus", 15}, {"silu", 15}, {"gelu", 15}};

static bool is(const tfp_op *op, const char *name)
{
    return strcmp(op->name, name) == 0;
}

static bool linalg_margin(const tfp_op *op, const tfp_data *a)
{
    if (is(op, "cholesky"))
        return each_spectrum(a, true, positive_definite);
    if (is(op, "eigvalsh") || is(op, "eigh_v2"))
        return each_spectrum(a, true, distinct_eig);
    if (is(op, "svd_u2") || is(op, "svd_v2"))
        return each_spectrum(a, false, distinct_sv);
    const tfp_attr *ord = tfp_attr_get(op, "ord");
    if (is(op, "svdvals") || (ord && strcmp(ord->str, "fro") != 0))
        return each_spectrum(a, false, distinct_sv);
    return each_spectrum(a, false, conditioned);
}

/* ---- complex operands (OPS.md 7.9) ---- */

/* The minimum over the elements of a c128 value of f(re, im). */
static double cx_min(const tfp_data *d, double (*f)(double, double))
{
    double m = INFINITY;
    for (size_t k = 0; k + 1 < d->count; k += 2)
        m = fmin(m, f(d->data[k], d->data[k + 1]));
    return m;
}

static double cx_abs(double re, double im)
{
    return hypot(re, im);
}

/* Away from 0 and from the branch cut on the negative real axis (log, sqrt, pow, angle). */
static double cx_cut(double re, double im)
{
    return fmin(hypot(re, im) - 0.1, 3.141592653589793 - 0.3 - fabs(atan2(im, re)));
}

static double cx_exp(double re, double im)
{
    (void)im;
    return 5 - re;
}

static double cx_sincos(double re, double im)
{
    return fmin(8 - fabs(re), 2.5 - fabs(im));
}

static double cx_tanh(double re, double im)
{
    return fmin(5 - fabs(re), 1.2 - fabs(im));
}

static double cx_neg_abs(double re, double im)
{
    return -hypot(re, im);
}

/* The smallest and the largest magnitude of a value (moduli of a complex one). */
static double any_abs_min(const tfp_data *d)
{
    return d->dtype == TFP_C128 ? cx_min(d, cx_abs) : arg_min(d, fabs);
}

static double any_abs_max(const tfp_data *d)
{
    return -(d->dtype == TFP_C128 ? cx_min(d, cx_neg_abs) : arg_min(d, neg_abs));
}

/*
 * The margins of an op with a complex operand; *handled false for the ops
 * whose real margins still apply (none of those accept complex operands but
 * structural and additive ones, which need none).
 */
static bool complex_margins(const tfp_op *op, const tfp_data *x, const tfp_data *y, bool *handled)
{
    *handled = true;
    if (is(op, "exp"))
        return cx_min(x, cx_exp) >= 0;
    if (is(op, "log") || is(op, "sqrt") || is(op, "rsqrt") || is(op, "angle"))
        return cx_min(x, cx_cut) > 0;
    if (is(op, "sin") || is(op, "cos"))
        return cx_min(x, cx_sincos) >= 0;
    if (is(op, "tanh"))
        return cx_min(x, cx_tanh) >= 0;
    if (is(op, "abs") || is(op, "sign"))
        return cx_min(x, cx_abs) > 0.05;
    if (is(op, "div"))
        return any_abs_min(y) > 0.2;
    if (is(op, "pow")) /* x on the principal branch, moderate exponents */
        return (x->dtype == TFP_C128 ? cx_min(x, cx_cut) > 0 : arg_min(x, ident) > 0.1) &&
               any_abs_max(y) <= 3;
    if (is(op, "reduce_prod")) {
        size_t size = 1;
        if (tfp_data_numel(x))
            group_of(x, reduced_mask(op, x), 0, &size);
        return cx_min(x, cx_abs) > 0.1 && size <= 24;
    }
    bool linalg = false;
    if (tfp_op_known(op->name, &linalg) && linalg)
        return false; /* complex matrices: no conditioning margins here yet, so none made */
    *handled = false;
    return true;
}

bool tfg__margins(gen *g, const tfp_op *op, const tfp_data *res)
{
    const tfp_data *x = op->n_args ? tfg__val(g, op->args[0]) : NULL;
    const tfp_data *y = op->n_args > 1 ? tfg__val(g, op->args[1]) : NULL;
    if ((x && x->dtype == TFP_C128) || (y && y->dtype == TFP_C128)) {
        bool handled;
        bool ok = complex_margins(op, x, y, &handled);
        if (handled)
            return ok;
    }
    for (size_t i = 0; i < COUNT_OF(k_bounded); i++)
        if (is(op, k_bounded[i].name))
            return arg_min(x, neg_abs) >= -k_bounded[i].limit;
    if (is(op, "abs") || is(op, "sign"))
        return arg_min(x, fabs) > 0.02;
    if (is(op, "log") || is(op, "sqrt") || is(op, "rsqrt"))
        return arg_min(x, ident) > 0.1;
    if (is(op, "log1p"))
        return arg_min(x, ident) > -0.9;
    if (is(op, "exp") || is(op, "expm1"))
        return arg_min(x, neg_ident) >= -6;
    if (is(op, "div"))
        return arg_min(y, fabs) > 0.2;
    if (is(op, "pow"))
        return arg_min(x, ident) > 0.1 && arg_min(y, neg_abs) >= -3;
    if (is(op, "rem"))
        return pair_min(x, y, res, rem_margin) > 0;
    if (is(op, "maximum") || is(op, "minimum") || is(op, "compare"))
        return pair_min(x, y, res, gap) > 0.02;
    if (is(op, "reduce_max") || is(op, "reduce_min"))
        return extremum_margin(op, x, is(op, "reduce_max"));
    if (is(op, "reduce_prod"))
        return prod_margin(op, x);
    if (is(op, "clamp"))
        return clamp_margin(op, x);
    if (is(op, "layer_norm") || is(op, "rms_norm"))
        return norm_margin(op, x, is(op, "layer_norm"));
    static const char *const la[] = {"inv",    "det",     "slogdet", "cholesky",    "solve",
                                     "lstsq",  "eigvalsh", "svdvals", "matrix_norm", "qr_r",
                                     "pinv",   "triangular_solve", "eigh_v2", "svd_u2",
                                     "svd_v2", "qr_q2"};
    for (size_t i = 0; i < COUNT_OF(la); i++)
        if (is(op, la[i]))
            return linalg_margin(op, x);
    return true;
}
