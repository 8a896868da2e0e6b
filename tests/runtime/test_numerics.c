/*
 * test_numerics.c - numerical edge cases (issue 8, item 6), with the C
 * library as the oracle.
 *
 * Forward values of the elementwise ops on the special values (NaN, +-Inf,
 * +-0, the edges of each domain) must be what C99 Annex F says of the libm
 * function or IEEE arithmetic of the operator, signed zeros included.
 * Gradients are the derivative formulas of docs/runtime.md ("Numerical edge
 * cases") evaluated in IEEE arithmetic: +-Inf where the derivative is
 * unbounded (log and sqrt at 0), NaN where the value is NaN, and the stated
 * conventions where the formula is 0 * Inf (pow at x = 0 or y = 0).
 * Reductions propagate NaN and Inf, and over an empty group give their
 * identity (sum 0, prod 1, max -Inf, min +Inf; mean NaN). Shapes whose
 * element count or byte size overflows are refused with
 * TF_ERR_SHAPE_OVERFLOW before anything is allocated.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "tf_eager_test.h"

#define NSPEC 11
/* The special values every elementwise op is tried on. */
static const double k_spec[NSPEC] = {NAN,  INFINITY, -INFINITY, 0.0,  -0.0, 1.0,
                                     -1.0, 0.5,      2.0,       -2.5, 1e308};

/* Same number: both NaN, or equal with the same sign (zeros and infinities
   exactly), or finite and within rel of each other. */
static int same_num(double got, double want, double rel)
{
    if (isnan(want) || isnan(got))
        return isnan(want) && isnan(got);
    if (want == 0 || isinf(want) || got == 0 || isinf(got))
        return got == want && signbit(got) == signbit(want);
    return fabs(got - want) <= rel * fabs(want);
}

static void read_all(const tf_eager *x, double *v, size_t n)
{
    assert_int_equal(tf_tensor_numel(tf_eager_value(x)), n);
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(x), TF_F64, v, n));
}

static void expect_values(const char *what, const tf_eager *x, const double *in, const double *want,
                          size_t n, double rel)
{
    double got[64];
    assert_true(n <= 64);
    read_all(x, got, n);
    for (size_t i = 0; i < n; i++)
        if (!same_num(got[i], want[i], rel))
            fail_msg("%s at %.17g (element %zu): got %.17g, want %.17g", what,
                     in ? in[i] : (double)i, i, got[i], want[i]);
}

/* ---- unary ops: forward against libm, gradient against f'(x) ---- */

typedef tf_status (*unary_fn)(tf_session *, tf_eager *, tf_eager **);

typedef struct unary_case {
    const char *name;
    unary_fn op;
    double (*f)(double);
    double (*df)(double);
} unary_case;

static double neg_(double x)
{
    return -x;
}
static double mone_(double x)
{
    return -1.0;
}
static double sign_(double x)
{
    return isnan(x) ? x : x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
}
static double dexp_(double x)
{
    return exp(x);
}
static double dlog_(double x)
{
    return 1.0 / x;
}
static double dexpm1_(double x)
{
    return exp(x);
}
static double dlog1p_(double x)
{
    return 1.0 / (1.0 + x);
}
static double dsin_(double x)
{
    return cos(x);
}
static double dcos_(double x)
{
    return -sin(x);
}
static double dtanh_(double x)
{
    return 1.0 - tanh(x) * tanh(x);
}
static double dsqrt_(double x)
{
    return 0.5 / sqrt(x);
}
static double rsqrt_(double x)
{
    return 1.0 / sqrt(x);
}
static double drsqrt_(double x)
{
    return -0.5 * (rsqrt_(x) / x);
}
static double derf_(double x)
{
    return 2.0 / sqrt(acos(-1.0)) * exp(-x * x);
}
static double sigmoid_(double x)
{
    return 1.0 / (1.0 + exp(-x));
}
static double dsigmoid_(double x)
{
    return sigmoid_(x) * (1.0 - sigmoid_(x));
}

static const unary_case k_unary[] = {
    {"neg", tf_session_neg, neg_, mone_},
    {"abs", tf_session_abs, fabs, sign_},
    {"exp", tf_session_exp, exp, dexp_},
    {"log", tf_session_log, log, dlog_},
    {"expm1", tf_session_expm1, expm1, dexpm1_},
    {"log1p", tf_session_log1p, log1p, dlog1p_},
    {"sin", tf_session_sin, sin, dsin_},
    {"cos", tf_session_cos, cos, dcos_},
    {"tanh", tf_session_tanh, tanh, dtanh_},
    {"sqrt", tf_session_sqrt, sqrt, dsqrt_},
    {"rsqrt", tf_session_rsqrt, rsqrt_, drsqrt_},
    {"erf", tf_session_erf, erf, derf_},
    {"sigmoid", tf_session_sigmoid, sigmoid_, dsigmoid_},
};

/* f(x) elementwise over the special values, and d sum(f(x)) / dx. */
static void test_unary_specials(void **state)
{
    int64_t n = NSPEC;
    for (size_t c = 0; c < sizeof k_unary / sizeof k_unary[0]; c++) {
        const unary_case *u = &k_unary[c];
        tft_env e = tft_env_begin();
        tf_eager *x = tft_f64(e.rt, 1, 1, &n, k_spec, NSPEC), *y = NULL, *l = NULL;
        TF_ASSERT_OK(u->op(e.s, x, &y));
        double want[NSPEC], dwant[NSPEC];
        for (int i = 0; i < NSPEC; i++) {
            want[i] = u->f(k_spec[i]);
            dwant[i] = u->df(k_spec[i]);
        }
        char what[64];
        snprintf(what, sizeof what, "%s", u->name);
        expect_values(what, y, k_spec, want, NSPEC, 4 * DBL_EPSILON);
        TF_ASSERT_OK(tf_session_reduce_sum(e.s, y, NULL, 0, &l));
        tf_eager *g = tft_grad(e.rt, l, x);
        snprintf(what, sizeof what, "d %s / dx", u->name);
        expect_values(what, g, k_spec, dwant, NSPEC, 8 * DBL_EPSILON);
        tf_eager_release(g);
        tf_eager_release(l);
        tf_eager_release(y);
        tf_eager_release(x);
        tft_env_end(&e);
    }
}

/* ---- binary ops: every pair of special values ---- */

typedef tf_status (*binary_fn)(tf_session *, tf_eager *, tf_eager *, tf_eager **);

/* IEEE 754-2019 maximum/minimum: NaN propagates, -0 < +0. */
static double maximum_(double a, double b)
{
    if (isnan(a) || isnan(b))
        return NAN;
    if (a == b)
        return signbit(a) ? b : a;
    return a > b ? a : b;
}

static double minimum_(double a, double b)
{
    if (isnan(a) || isnan(b))
        return NAN;
    if (a == b)
        return signbit(a) ? a : b;
    return a < b ? a : b;
}

static double add_(double a, double b)
{
    return a + b;
}
static double sub_(double a, double b)
{
    return a - b;
}
static double mul_(double a, double b)
{
    return a * b;
}
static double div_(double a, double b)
{
    return a / b;
}

static void test_binary_specials(void **state)
{
    static const struct {
        const char *name;
        binary_fn op;
        double (*f)(double, double);
    } cases[] = {
        {"add", tf_session_add, add_},
        {"sub", tf_session_sub, sub_},
        {"mul", tf_session_mul, mul_},
        {"div", tf_session_div, div_},
        {"pow", tf_session_pow, pow},
        {"maximum", tf_session_maximum, maximum_},
        {"minimum", tf_session_minimum, minimum_},
        {"rem", tf_session_rem, fmod},
    };
    /* x varies along axis 0, y along axis 1: [NSPEC, 1] op [1, NSPEC]. */
    int64_t sx[2] = {NSPEC, 1}, sy[2] = {1, NSPEC};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tft_env e = tft_env_begin();
        tf_eager *x = tft_f64(e.rt, 0, 2, sx, k_spec, NSPEC);
        tf_eager *y = tft_f64(e.rt, 0, 2, sy, k_spec, NSPEC), *z = NULL;
        TF_ASSERT_OK(cases[c].op(e.s, x, y, &z));
        double got[NSPEC * NSPEC];
        read_all(z, got, NSPEC * NSPEC);
        for (int j = 0; j < NSPEC; j++) {
            for (int i = 0; i < NSPEC; i++) {
                double a = k_spec[i], b = k_spec[j], want = cases[c].f(a, b);
                if (!same_num(got[i + NSPEC * j], want, 4 * DBL_EPSILON))
                    fail_msg("%s(%.17g, %.17g): got %.17g, want %.17g", cases[c].name, a, b,
                             got[i + NSPEC * j], want);
            }
        }
        tf_eager_release(z);
        tf_eager_release(y);
        tf_eager_release(x);
        tft_env_end(&e);
    }
}

/* d/dx and d/dy of sum(op(x, y)) on element pairs, against stated values. */
static void expect_binary_grads(binary_fn op, const char *name, const double *xs, const double *ys,
                                size_t n, const double *want_z, const double *want_dx,
                                const double *want_dy)
{
    tft_env e = tft_env_begin();
    int64_t shape = (int64_t)n;
    tf_eager *x = tft_f64(e.rt, 1, 1, &shape, xs, n), *y = tft_f64(e.rt, 1, 1, &shape, ys, n);
    tf_eager *z = NULL, *l = NULL;
    TF_ASSERT_OK(op(e.s, x, y, &z));
    char what[64];
    snprintf(what, sizeof what, "%s", name);
    expect_values(what, z, xs, want_z, n, 4 * DBL_EPSILON);
    TF_ASSERT_OK(tf_session_reduce_sum(e.s, z, NULL, 0, &l));
    tf_eager *gx = tft_grad(e.rt, l, x), *gy = tft_grad(e.rt, l, y);
    snprintf(what, sizeof what, "d %s / dx", name);
    expect_values(what, gx, xs, want_dx, n, 8 * DBL_EPSILON);
    snprintf(what, sizeof what, "d %s / dy", name);
    expect_values(what, gy, xs, want_dy, n, 8 * DBL_EPSILON);
    tf_eager_release(gy);
    tf_eager_release(gx);
    tf_eager_release(l);
    tf_eager_release(z);
    tf_eager_release(y);
    tf_eager_release(x);
    tft_env_end(&e);
}

/*
 * div: d/dx = 1/y, d/dy = -(x/y)/y. At y = +-0 the quotient is +-Inf (or NaN
 * for 0/0) and so are the derivatives, with the signs IEEE gives.
 */
static void test_div_edges(void **state)
{
    const double xs[] = {1, 1, -1, 0, 0, NAN, INFINITY, 3};
    const double ys[] = {0, -0.0, 0, 0, 2, 1, INFINITY, 4};
    double z[8], dx[8], dy[8];
    for (int i = 0; i < 8; i++) {
        z[i] = xs[i] / ys[i];
        dx[i] = 1.0 / ys[i];
        dy[i] = -(z[i] / ys[i]);
    }
    /* Spelled out for the edges, so the table above is not its own oracle. */
    assert_true(isinf(dx[0]) && dx[0] > 0 && isinf(dy[0]) && dy[0] < 0);
    assert_true(isinf(dx[1]) && dx[1] < 0 && isinf(dy[1]) && dy[1] < 0);
    assert_true(isnan(z[3]) && isnan(dy[3]) && isinf(dx[3]));
    assert_true(dy[4] == 0 && signbit(dy[4]));
    assert_true(isnan(z[6]) && dx[6] == 0);
    expect_binary_grads(tf_session_div, "div", xs, ys, 8, z, dx, dy);
}

/*
 * pow: d/dx = y x^(y-1), taken as 0 where y == 0; d/dy = x^y log x, taken
 * as 0 where x == 0. Elsewhere the formulas in IEEE arithmetic: +Inf at
 * (0, 0.5), -Inf at (0, -1), NaN for a negative base (d/dy always; d/dx
 * where x^(y-1) is NaN).
 */
static void test_pow_edges(void **state)
{
    const double xs[] = {0, 0, 0, 0, -8, -2, 2, 1, NAN, 4};
    const double ys[] = {0, 2, 0.5, -1, 1.0 / 3, 2, 3, NAN, 0, -0.5};
    const double z[] = {1, 0, 0, INFINITY, NAN, 4, 8, 1, 1, 0.5};
    const double dx[] = {0, 0, INFINITY, -INFINITY, NAN, -4, 12, NAN, 0, -0.0625};
    const double dy[] = {0, 0, 0, 0, NAN, NAN, 8 * log(2.0), 0, NAN, 0.5 * log(4.0)};
    for (int i = 0; i < 10; i++) /* the oracle agrees on the values */
        assert_true(same_num(pow(xs[i], ys[i]), z[i], 4 * DBL_EPSILON));
    expect_binary_grads(tf_session_pow, "pow", xs, ys, 10, z, dx, dy);
}

/*
 * maximum/minimum: a NaN input gives a NaN result and takes the whole
 * derivative, as in reduce_max (both NaN: a tie); ties split it in halves.
 */
static void test_extremum_edges(void **state)
{
    const double xs[] = {NAN, 1, 2, INFINITY, -0.0, NAN, -INFINITY};
    const double ys[] = {1, NAN, 2, 5, 0, NAN, 3};
    const double dx[] = {1, 0, 0.5, 1, 0.5, 0.5, 0};
    const double dy[] = {0, 1, 0.5, 0, 0.5, 0.5, 1};
    double zmax[7], zmin[7], dxmin[7], dymin[7];
    for (int i = 0; i < 7; i++) {
        zmax[i] = maximum_(xs[i], ys[i]);
        zmin[i] = minimum_(xs[i], ys[i]);
        /* minimum: the same shares with the winner's side swapped, NaN and ties alike */
        int nan_or_tie = isnan(xs[i]) || isnan(ys[i]) || xs[i] == ys[i];
        dxmin[i] = nan_or_tie ? dx[i] : 1 - dx[i];
        dymin[i] = nan_or_tie ? dy[i] : 1 - dy[i];
    }
    expect_binary_grads(tf_session_maximum, "maximum", xs, ys, 7, zmax, dx, dy);
    expect_binary_grads(tf_session_minimum, "minimum", xs, ys, 7, zmin, dxmin, dymin);
}

/* ---- reductions ---- */

typedef tf_status (*reduce_fn)(tf_session *, tf_eager *, const int *, size_t, tf_eager **);

static void reduce_case(reduce_fn op, const char *name, const double *xs, size_t n, double want,
                        const double *dwant)
{
    tft_env e = tft_env_begin();
    int64_t shape = (int64_t)n;
    tf_eager *x = tft_f64(e.rt, 1, 1, &shape, xs, n), *r = NULL;
    TF_ASSERT_OK(op(e.s, x, NULL, 0, &r));
    expect_values(name, r, NULL, &want, 1, 4 * DBL_EPSILON);
    if (dwant) {
        tf_eager *g = tft_grad(e.rt, r, x);
        char what[64];
        snprintf(what, sizeof what, "d %s / dx", name);
        expect_values(what, g, xs, dwant, n, 4 * DBL_EPSILON);
        tf_eager_release(g);
    }
    tf_eager_release(r);
    tf_eager_release(x);
    tft_env_end(&e);
}

static void test_reduce_nan_inf(void **state)
{
    const double ones[] = {1, 1, 1};
    reduce_case(tf_session_reduce_sum, "sum(1, inf, -inf)", (double[]){1, INFINITY, -INFINITY}, 3,
                NAN, ones);
    reduce_case(tf_session_reduce_sum, "sum(1, inf, 2)", (double[]){1, INFINITY, 2}, 3, INFINITY,
                ones);
    reduce_case(tf_session_reduce_sum, "sum(1, nan, 2)", (double[]){1, NAN, 2}, 3, NAN, ones);
    /* prod's gradient is the product of the others, without a division. */
    reduce_case(tf_session_reduce_prod, "prod(0, inf, 2)", (double[]){0, INFINITY, 2}, 3, NAN,
                (double[]){INFINITY, 0, NAN});
    reduce_case(tf_session_reduce_prod, "prod(0, 3, 2)", (double[]){0, 3, 2}, 3, 0,
                (double[]){6, 0, 0});
    reduce_case(tf_session_reduce_prod, "prod(inf, 3)", (double[]){INFINITY, 3}, 2, INFINITY,
                (double[]){3, INFINITY});
    /* max/min: NaN propagates and takes the whole gradient; ties split it. */
    reduce_case(tf_session_reduce_max, "max(1, nan, 3)", (double[]){1, NAN, 3}, 3, NAN,
                (double[]){0, 1, 0});
    reduce_case(tf_session_reduce_max, "max(nan, 7, nan)", (double[]){NAN, 7, NAN}, 3, NAN,
                (double[]){0.5, 0, 0.5});
    reduce_case(tf_session_reduce_max, "max(1, inf, inf)", (double[]){1, INFINITY, INFINITY}, 3,
                INFINITY, (double[]){0, 0.5, 0.5});
    reduce_case(tf_session_reduce_min, "min(-inf, 2, 1)", (double[]){-INFINITY, 2, 1}, 3, -INFINITY,
                (double[]){1, 0, 0});
    reduce_case(tf_session_reduce_max, "max(-inf, -inf)", (double[]){-INFINITY, -INFINITY}, 2,
                -INFINITY, (double[]){0.5, 0.5});
    reduce_case(tf_session_reduce_mean, "mean(1, inf)", (double[]){1, INFINITY}, 2, INFINITY,
                (double[]){0.5, 0.5});
    /* logsumexp is max-shifted: +Inf stays +Inf, all -Inf gives -Inf. */
    reduce_case(tf_session_logsumexp, "logsumexp(1, inf)", (double[]){1, INFINITY}, 2, INFINITY,
                NULL);
    reduce_case(tf_session_logsumexp, "logsumexp(-inf, -inf)", (double[]){-INFINITY, -INFINITY}, 2,
                -INFINITY, NULL);
    reduce_case(tf_session_logsumexp, "logsumexp(0, -inf)", (double[]){0, -INFINITY}, 2, 0,
                (double[]){1, 0});
    reduce_case(tf_session_logsumexp, "logsumexp(nan, 0)", (double[]){NAN, 0}, 2, NAN, NULL);
}

/* Float sums keep the sign of zero: -0 + -0 is -0. */
static void test_reduce_signed_zero(void **state)
{
    reduce_case(tf_session_reduce_sum, "sum(-0, -0)", (double[]){-0.0, -0.0}, 2, -0.0, NULL);
    reduce_case(tf_session_reduce_sum, "sum(-0, 0)", (double[]){-0.0, 0.0}, 2, 0.0, NULL);
    reduce_case(tf_session_reduce_max, "max(-0, 0)", (double[]){-0.0, 0.0}, 2, 0.0, NULL);
    reduce_case(tf_session_reduce_min, "min(0, -0)", (double[]){0.0, -0.0}, 2, -0.0, NULL);
}

/* matmul: IEEE products, so Inf * 0 inside a dot product gives NaN. */
static void test_matmul_nan_inf(void **state)
{
    tft_env e = tft_env_begin();
    int64_t sa[2] = {2, 2}, sb[2] = {2, 1};
    /* a = [inf 1; 1 nan] (column-major), b = [0; 1] */
    const double a[4] = {INFINITY, 1, 1, NAN}, b[2] = {0, 1};
    tf_eager *ea = tft_f64(e.rt, 1, 2, sa, a, 4), *eb = tft_f64(e.rt, 1, 2, sb, b, 2);
    tf_eager *c = NULL, *l = NULL;
    TF_ASSERT_OK(tf_session_matmul(e.s, ea, eb, &c));
    /* row 0: inf*0 + 1*1 = NaN; row 1: 1*0 + nan*1 = NaN */
    expect_values("[inf 1; 1 nan] [0; 1]", c, NULL, (double[]){NAN, NAN}, 2, 0);
    TF_ASSERT_OK(tf_session_reduce_sum(e.s, c, NULL, 0, &l));
    /* d/da = 1 b^T = [0 1; 0 1]; d/db = a^T 1 = [inf + 1; 1 + nan] */
    tf_eager *ga = tft_grad(e.rt, l, ea), *gb = tft_grad(e.rt, l, eb);
    expect_values("d/da", ga, NULL, (double[]){0, 0, 1, 1}, 4, 0);
    expect_values("d/db", gb, NULL, (double[]){INFINITY, NAN}, 2, 0);
    tf_eager_release(gb);
    tf_eager_release(ga);
    tf_eager_release(l);
    tf_eager_release(c);
    tf_eager_release(eb);
    tf_eager_release(ea);
    tft_env_end(&e);
}

/* ---- reductions over empty groups ---- */

static void test_reduce_empty_f64(void **state)
{
    static const struct {
        const char *name;
        reduce_fn op;
        double want;
    } cases[] = {
        {"sum", tf_session_reduce_sum, 0.0},
        {"prod", tf_session_reduce_prod, 1.0},
        {"max", tf_session_reduce_max, -INFINITY},
        {"min", tf_session_reduce_min, INFINITY},
        {"mean", tf_session_reduce_mean, NAN},
        {"sum_squares", tf_session_reduce_sum_squares, 0.0},
        {"logsumexp", tf_session_logsumexp, -INFINITY},
    };
    int64_t shape[2] = {0, 3}, three = 3;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tft_env e = tft_env_begin();
        tf_eager *x = tft_f64(e.rt, 1, 2, shape, NULL, 0), *r = NULL, *all = NULL, *l = NULL;
        int axis0 = 0;
        TF_ASSERT_OK(cases[c].op(e.s, x, &axis0, 1, &r));
        tft_expect_shape(r, 1, &three);
        double want[3] = {cases[c].want, cases[c].want, cases[c].want};
        expect_values(cases[c].name, r, NULL, want, 3, 0);
        /* over every axis: a scalar with the same value */
        TF_ASSERT_OK(cases[c].op(e.s, x, NULL, 0, &all));
        tft_expect_shape(all, 0, NULL);
        expect_values(cases[c].name, all, NULL, want, 1, 0);
        /* the gradient with respect to an empty input is empty */
        TF_ASSERT_OK(tf_session_reduce_sum(e.s, r, NULL, 0, &l));
        tf_eager *g = tft_grad(e.rt, l, x);
        tft_expect_shape(g, 2, shape);
        tf_eager_release(g);
        tf_eager_release(l);
        tf_eager_release(all);
        tf_eager_release(r);
        tf_eager_release(x);
        tft_env_end(&e);
    }
}

/* Integer reductions over an empty group give the dtype's identity. */
static void test_reduce_empty_int(void **state)
{
    static const struct {
        reduce_fn op;
        double i32, i64;
    } cases[] = {
        {tf_session_reduce_sum, 0, 0},
        {tf_session_reduce_prod, 1, 1},
        {tf_session_reduce_max, INT32_MIN, (double)INT64_MIN},
        {tf_session_reduce_min, INT32_MAX, (double)INT64_MAX},
    };
    int64_t shape[1] = {0};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tft_env e = tft_env_begin();
        tf_eager *x32 = tft_constant(e.rt, TF_I32, 1, shape, NULL, 0);
        tf_eager *x64 = tft_constant(e.rt, TF_I64, 1, shape, NULL, 0), *r32 = NULL, *r64 = NULL;
        TF_ASSERT_OK(cases[c].op(e.s, x32, NULL, 0, &r32));
        TF_ASSERT_OK(cases[c].op(e.s, x64, NULL, 0, &r64));
        int32_t v32 = 0;
        int64_t v64 = 0;
        TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(r32), TF_I32, &v32, 1));
        TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(r64), TF_I64, &v64, 1));
        assert_true((double)v32 == cases[c].i32);
        assert_true((double)v64 == cases[c].i64);
        tf_eager_release(r64);
        tf_eager_release(r32);
        tf_eager_release(x64);
        tf_eager_release(x32);
        tft_env_end(&e);
    }
}

/* ---- integer overflow in shape arithmetic ---- */

static void expect_overflow(tf_status st, const char *what)
{
    if (st != TF_ERR_SHAPE_OVERFLOW)
        fail_msg("%s: got %s (\"%s\"), want TF_ERR_SHAPE_OVERFLOW", what, tf_status_name(st),
                 tf_error_message());
    assert_int_equal(tf_error_status(), TF_ERR_SHAPE_OVERFLOW);
    assert_true(tf_error_message()[0] != '\0');
}

static void test_shape_overflow(void **state)
{
    const double one = 1.0;
    tf_tensor *scalar = tft_host(TF_F64, 0, NULL, &one, 1), *sentinel = (tf_tensor *)&one;
    int dims[2] = {0, 1};
    /* element counts past SIZE_MAX, and byte sizes past INT64_MAX */
    const int64_t bad[][2] = {
        {INT64_MAX, 2},
        {(int64_t)1 << 32, (int64_t)1 << 32},
        {(int64_t)1 << 31, (int64_t)1 << 30}, /* 2^61 f64 = 2^64 bytes */
        {(int64_t)1 << 60, 1},                /* 2^63 bytes: one past INT64_MAX */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tf_tensor *out = sentinel;
        expect_overflow(tf_tensor_broadcast_in_dim(scalar, 2, bad[i], dims, &out),
                        "broadcast_in_dim");
        assert_ptr_equal(out, sentinel);
    }
    /* The largest byte size that fits is accepted (a stride-0 view, no memory). */
    int64_t edge[2] = {((int64_t)1 << 60) - 1, 1};
    tf_tensor *view = NULL;
    TF_ASSERT_OK(tf_tensor_broadcast_in_dim(scalar, 2, edge, dims, &view));
    assert_int_equal(tf_tensor_numel(view), (size_t)edge[0]);

    tft_env e = tft_env_begin();
    /* Ops that would allocate refuse before allocating; nothing is recorded. */
    tf_eager *out = (tf_eager *)sentinel;
    expect_overflow(tf_session_full(e.s, TF_F64, 2, bad[1], 0.0, &out), "full");
    assert_ptr_equal(out, (tf_eager *)sentinel);
    int64_t s3 = 3;
    tf_eager *x = tft_f64(e.rt, 1, 1, &s3, (double[]){1, 2, 3}, 3);
    int64_t low = 0, high = INT64_MAX - 1, interior = 0;
    expect_overflow(tf_session_pad(e.s, x, &low, &high, &interior, 0.0, &out), "pad high");
    interior = INT64_MAX / 2;
    high = 0;
    expect_overflow(tf_session_pad(e.s, x, &low, &high, &interior, 0.0, &out), "pad interior");
    assert_ptr_equal(out, (tf_eager *)sentinel);
    /* reshape to an overflowing shape is refused, not wrapped to a small count */
    int64_t wrap[2] = {(int64_t)1 << 62, 4};
    tf_status st = tf_session_reshape(e.s, x, 2, wrap, &out);
    if (st != TF_ERR_SHAPE_OVERFLOW && st != TF_ERR_ELEMENT_COUNT)
        fail_msg("reshape to 2^64 elements: got %s", tf_status_name(st));
    assert_ptr_equal(out, (tf_eager *)sentinel);
    tf_eager_release(x);
    tft_env_end(&e);
    tf_tensor_release(view);
    tf_tensor_release(scalar);
}

/* Integer division by zero is an error, not a value; nothing is returned. */
static void test_integer_division_by_zero(void **state)
{
    tft_env e = tft_env_begin();
    int64_t two = 2;
    const int32_t a[2] = {7, -7}, b[2] = {2, 0};
    tf_eager *x = tft_constant(e.rt, TF_I32, 1, &two, a, 2);
    tf_eager *y = tft_constant(e.rt, TF_I32, 1, &two, b, 2);
    tf_eager *sentinel = x, *out = sentinel;
    TF_ASSERT_STATUS(tf_session_div(e.s, x, y, &out), TF_ERR_VALIDATION);
    assert_ptr_equal(out, sentinel);
    TF_ASSERT_STATUS(tf_session_rem(e.s, x, y, &out), TF_ERR_VALIDATION);
    assert_ptr_equal(out, sentinel);
    const int32_t base[2] = {2, 0}, expo[2] = {3, -1};
    tf_eager *p = tft_constant(e.rt, TF_I32, 1, &two, base, 2);
    tf_eager *q = tft_constant(e.rt, TF_I32, 1, &two, expo, 2);
    TF_ASSERT_STATUS(tf_session_pow(e.s, p, q, &out), TF_ERR_VALIDATION); /* 0 ^ -1 */
    assert_ptr_equal(out, sentinel);
    tf_eager_release(q);
    tf_eager_release(p);
    tf_eager_release(y);
    tf_eager_release(x);
    tft_env_end(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unary_specials),     cmocka_unit_test(test_binary_specials),
        cmocka_unit_test(test_div_edges),          cmocka_unit_test(test_pow_edges),
        cmocka_unit_test(test_extremum_edges),     cmocka_unit_test(test_reduce_nan_inf),
        cmocka_unit_test(test_reduce_signed_zero), cmocka_unit_test(test_matmul_nan_inf),
        cmocka_unit_test(test_reduce_empty_f64),   cmocka_unit_test(test_reduce_empty_int),
        cmocka_unit_test(test_shape_overflow),     cmocka_unit_test(test_integer_division_by_zero),
    };
    return cmocka_run_group_tests(tests, tft_cpu_setup, tft_cpu_teardown);
}
