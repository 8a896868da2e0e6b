/*
 * test_complex_ad.c - complex ops of the eager runtime and their
 * derivatives in PyTorch's convention (docs/complex.md), on the CPU engine.
 *
 * Every rule is checked against central finite differences in c128: for a
 * real loss L = sum(Re(w * f(z))) (w random complex; a real f(z) meets
 * Re w), the gradient of an input z must be dL/dx + i dL/dy, each part
 * differenced separately; the forward tangent along a random complex v
 * must be the difference quotient of f along v. Second order: the same
 * check of a function that is itself a gradient (taken with capture on).
 * The ops' values, promotion, refusals and the other derivative checks are
 * test_complex_ops.c's.
 */
#include <math.h>
#include <string.h>

#include <tenferro/ops.h>

#include "tf_eager_test.h"

/* ===================================================================== */
/* The finite-difference checker                                         */
/* ===================================================================== */

#define CX_MAX_IN 3
#define CX_MAX_EL 16

/* Builds the output from the inputs (variables of a fresh runtime). */
typedef tf_status (*cx_fn)(tf_session *s, tf_eager *const *xs, tf_eager **out);

typedef struct cx_case {
    const char *what;
    cx_fn fn;
    size_t n;                    /* inputs */
    tf_dtype dt[CX_MAX_IN];      /* TF_C128 or TF_F64 each */
    size_t rank[CX_MAX_IN];      /* at most 2 */
    int64_t shape[CX_MAX_IN][2]; /* extents */
    double tol;                  /* 0: 1e-6 */
    double shift;                /* added to every real part (keeps log, sqrt off their cuts) */
} cx_case;

static double urand(unsigned *st)
{
    unsigned x = *st;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *st = x;
    return (x >> 8) / 16777216.0;
}

static size_t cx_numel(const cx_case *c, size_t i)
{
    size_t n = 1;
    for (size_t d = 0; d < c->rank[i]; d++)
        n *= (size_t)c->shape[i][d];
    return n;
}

/* Doubles per element: 2 for complex. */
static size_t parts(tf_dtype dt)
{
    return tf_dtype_is_complex(dt) ? 2 : 1;
}

/* Host values of every input: vals[i] has numel * parts doubles. */
typedef struct cx_vals {
    double v[CX_MAX_IN][2 * CX_MAX_EL];
} cx_vals;

static tf_session *open_with(tf_runtime **rt, const cx_case *c, const cx_vals *x, tf_eager **xs)
{
    TF_ASSERT_OK(tf_runtime_create(rt));
    for (size_t i = 0; i < c->n; i++) {
        tf_tensor *t;
        TF_ASSERT_OK(
            tf_tensor_from_host(c->dt[i], c->rank[i], c->shape[i], x->v[i], cx_numel(c, i), &t));
        TF_ASSERT_OK(tf_runtime_variable_from(*rt, t, &xs[i]));
        tf_tensor_release(t);
    }
    tf_session *s;
    TF_ASSERT_OK(tf_session_begin(*rt, g_cpu, &s));
    return s;
}

static void close_with(tf_runtime *rt, tf_session *s, const cx_case *c, tf_eager **xs)
{
    tf_session_end(s);
    for (size_t i = 0; i < c->n; i++)
        tf_eager_release(xs[i]);
    tf_runtime_release(rt);
}

/* The loss: sum(Re(w * y)) with w fixed random complex (Re w for a real y). */
static tf_status loss_of(tf_session *s, tf_eager *y, tf_eager **out)
{
    const tf_tensor *v = tf_eager_value(y);
    size_t n = tf_tensor_numel(v);
    assert_true(n <= CX_MAX_EL);
    double w[2 * CX_MAX_EL];
    unsigned st = 12345;
    for (size_t k = 0; k < 2 * n; k++)
        w[k] = 2.0 * urand(&st) - 1.0;
    tf_dtype dt = tf_tensor_dtype(v);
    tf_eager *we =
        tft_constant(tf_session_runtime(s), dt, tf_tensor_rank(v), tf_tensor_shape(v), w, n);
    tf_eager *p = NULL, *re = NULL;
    tf_status r = tf_session_mul(s, we, y, &p);
    if (!r && dt == TF_C128)
        r = tf_session_real(s, p, &re);
    if (!r)
        r = tf_session_reduce_sum(s, re ? re : p, NULL, 0, out);
    tf_eager_release(we);
    tf_eager_release(p);
    tf_eager_release(re);
    return r;
}

static double loss_at(const cx_case *c, const cx_vals *x)
{
    tf_runtime *rt;
    tf_eager *xs[CX_MAX_IN], *y = NULL, *l = NULL;
    tf_session *s = open_with(&rt, c, x, xs);
    TF_ASSERT_OK(c->fn(s, xs, &y));
    TF_ASSERT_OK(loss_of(s, y, &l));
    double v;
    assert_int_equal(tf_tensor_dtype(tf_eager_value(l)), TF_F64);
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(l), TF_F64, &v, 1));
    tf_eager_release(y);
    tf_eager_release(l);
    close_with(rt, s, c, xs);
    return v;
}

static size_t output_at(const cx_case *c, const cx_vals *x, double *out)
{
    tf_runtime *rt;
    tf_eager *xs[CX_MAX_IN], *y = NULL;
    tf_session *s = open_with(&rt, c, x, xs);
    TF_ASSERT_OK(c->fn(s, xs, &y));
    size_t n = tft_read_parts(tf_eager_value(y), out, 2 * CX_MAX_EL);
    tf_eager_release(y);
    close_with(rt, s, c, xs);
    return n;
}

static void expect_close(const cx_case *c, const char *mode, size_t i, size_t k, double got,
                         double want)
{
    double tol = c->tol > 0 ? c->tol : 1e-6;
    double err = fabs(got - want) / fmax(fabs(want), 1.0);
    if (!(err <= tol))
        fail_msg("%s: %s of input %zu, part %zu: got %.15g, finite differences %.15g", c->what,
                 mode, i, k, got, want);
}

/* Reverse mode: grad of each input against FD of each real part. */
static void check_reverse(const cx_case *c, const cx_vals *x)
{
    const double h = 1e-6;
    tf_runtime *rt;
    tf_eager *xs[CX_MAX_IN], *y = NULL, *l = NULL;
    tf_session *s = open_with(&rt, c, x, xs);
    TF_ASSERT_OK(c->fn(s, xs, &y));
    TF_ASSERT_OK(loss_of(s, y, &l));
    for (size_t i = 0; i < c->n; i++) {
        tf_eager *g = NULL;
        TF_ASSERT_OK(tf_runtime_grad(rt, g_cpu, l, xs[i], &g));
        assert_int_equal(tf_tensor_dtype(tf_eager_value(g)), c->dt[i]);
        double gv[2 * CX_MAX_EL];
        size_t np = tft_read_parts(tf_eager_value(g), gv, 2 * CX_MAX_EL);
        assert_int_equal(np, cx_numel(c, i) * parts(c->dt[i]));
        for (size_t k = 0; k < np; k++) {
            cx_vals p = *x, m = *x;
            p.v[i][k] += h;
            m.v[i][k] -= h;
            expect_close(c, "reverse", i, k, gv[k], (loss_at(c, &p) - loss_at(c, &m)) / (2 * h));
        }
        tf_eager_release(g);
    }
    tf_eager_release(y);
    tf_eager_release(l);
    close_with(rt, s, c, xs);
}

/* Forward mode: the JVP along a random v of each input against FD along v. */
static void check_forward(const cx_case *c, const cx_vals *x)
{
    const double h = 1e-6;
    unsigned st = 777;
    for (size_t i = 0; i < c->n; i++) {
        size_t np = cx_numel(c, i) * parts(c->dt[i]);
        double v[2 * CX_MAX_EL];
        for (size_t k = 0; k < np; k++)
            v[k] = 2.0 * urand(&st) - 1.0;
        tf_runtime *rt;
        tf_eager *xs[CX_MAX_IN], *y = NULL, *t = NULL;
        tf_session *s = open_with(&rt, c, x, xs);
        TF_ASSERT_OK(c->fn(s, xs, &y));
        tf_eager *ve = tft_constant(rt, c->dt[i], c->rank[i], c->shape[i], v, cx_numel(c, i));
        TF_ASSERT_OK(tf_runtime_jvp(rt, g_cpu, y, xs[i], ve, &t));
        double tv[2 * CX_MAX_EL], yp[2 * CX_MAX_EL], ym[2 * CX_MAX_EL];
        size_t ny = tft_read_parts(tf_eager_value(t), tv, 2 * CX_MAX_EL);
        cx_vals p = *x, m = *x;
        for (size_t k = 0; k < np; k++) {
            p.v[i][k] += h * v[k];
            m.v[i][k] -= h * v[k];
        }
        assert_int_equal(output_at(c, &p, yp), ny);
        assert_int_equal(output_at(c, &m, ym), ny);
        for (size_t k = 0; k < ny; k++)
            expect_close(c, "forward", i, k, tv[k], (yp[k] - ym[k]) / (2 * h));
        tf_eager_release(ve);
        tf_eager_release(t);
        tf_eager_release(y);
        close_with(rt, s, c, xs);
    }
}

static void check_case(const cx_case *c, unsigned seed)
{
    cx_vals x;
    for (size_t i = 0; i < c->n; i++) {
        size_t np = cx_numel(c, i) * parts(c->dt[i]);
        for (size_t k = 0; k < np; k++) {
            x.v[i][k] = 2.0 * urand(&seed) - 1.0;
            if (parts(c->dt[i]) == 1 || k % 2 == 0)
                x.v[i][k] += c->shift;
        }
    }
    check_reverse(c, &x);
    check_forward(c, &x);
}

/* ===================================================================== */
/* The functions checked                                                 */
/* ===================================================================== */

#define UNARY_FN_(name)                                                            \
    static tf_status fn_##name(tf_session *s, tf_eager *const *xs, tf_eager **out) \
    {                                                                              \
        return tf_session_##name(s, xs[0], out);                                   \
    }
UNARY_FN_(neg)
UNARY_FN_(exp)
UNARY_FN_(log)
UNARY_FN_(sin)
UNARY_FN_(cos)
UNARY_FN_(tanh)
UNARY_FN_(sqrt)
UNARY_FN_(rsqrt)
UNARY_FN_(abs)
UNARY_FN_(sign)
UNARY_FN_(conj)
UNARY_FN_(real)
UNARY_FN_(imag)
UNARY_FN_(angle)

#define BINARY_FN_(name)                                                           \
    static tf_status fn_##name(tf_session *s, tf_eager *const *xs, tf_eager **out) \
    {                                                                              \
        return tf_session_##name(s, xs[0], xs[1], out);                            \
    }
BINARY_FN_(add)
BINARY_FN_(sub)
BINARY_FN_(mul)
BINARY_FN_(div)
BINARY_FN_(pow)
BINARY_FN_(complex)
BINARY_FN_(matmul)

static tf_status fn_sum(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    int ax = 0;
    return tf_session_reduce_sum(s, xs[0], &ax, 1, out);
}

static tf_status fn_prod(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    int ax = 1;
    return tf_session_reduce_prod(s, xs[0], &ax, 1, out);
}

static tf_status fn_mean(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    return tf_session_reduce_mean(s, xs[0], NULL, 0, out);
}

/* A batched contraction: [b, i, k] . [b, k, j] with b first in both. */
static tf_status fn_dot(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    tf_dot_dims d;
    memset(&d, 0, sizeof d);
    d.n_contracting = 1;
    d.lhs_contracting[0] = 1;
    d.rhs_contracting[0] = 0;
    d.n_batch = 0;
    tf_eager *t = NULL;
    int perm[2] = {1, 0};
    tf_status st = tf_session_transpose(s, xs[1], perm, &t);
    if (!st)
        st = tf_session_dot_general(s, xs[0], t, &d, out);
    tf_eager_release(t);
    return st;
}

/* Structural ops in a chain: slice, pad, reverse, concatenate, gather,
   select, then the chain's elements times themselves (a holomorphic mix). */
static tf_status fn_struct(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    tf_eager *z = xs[0], *sl = NULL, *pd = NULL, *cat = NULL, *g = NULL, *idx = NULL, *p = NULL,
             *sel = NULL, *eq = NULL;
    int64_t start[1] = {1}, limit[1] = {3}, stride[1] = {1}, lo[1] = {1}, hi[1] = {0}, in[1] = {0};
    tf_status st = tf_session_slice(s, z, start, limit, stride, &sl);
    if (!st)
        st = tf_session_pad(s, sl, lo, hi, in, 0.5, &pd);
    tf_eager *both[2] = {pd, z};
    if (!st)
        st = tf_session_concatenate(s, both, 2, 0, &cat);
    int64_t ix[3] = {5, 0, 2};
    int64_t three[1] = {3};
    idx = tft_constant(tf_session_runtime(s), TF_I64, 1, three, ix, 3);
    if (!st)
        st = tf_session_gather(s, cat, 0, idx, TF_GATHER_INDEX_SELECT, &g);
    if (!st)
        st = tf_session_compare(s, g, g, TF_COMPARE_EQ, &eq);
    if (!st)
        st = tf_session_select(s, eq, g, z, &sel);
    if (!st)
        st = tf_session_mul(s, sel, g, out);
    tf_eager_release(sl);
    tf_eager_release(pd);
    tf_eager_release(cat);
    tf_eager_release(g);
    tf_eager_release(idx);
    tf_eager_release(p);
    tf_eager_release(sel);
    tf_eager_release(eq);
    return st;
}

/* The matrix ops on a [2, 3] z: transpose, reshape, tril, diagonal, stack,
   scatter-add of rows, then a product (a holomorphic mix). */
static tf_status fn_matrix(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    tf_eager *z = xs[0], *t[7] = {NULL}, *idx = NULL;
    int perm[2] = {1, 0};
    int64_t shape[2] = {2, 3}, two[1] = {2}, ix[2] = {1, 1};
    tf_status st = tf_session_transpose(s, z, perm, &t[0]); /* [3, 2] */
    if (!st)
        st = tf_session_reshape(s, t[0], 2, shape, &t[1]); /* [2, 3] */
    if (!st)
        st = tf_session_tril(s, t[1], 1, &t[2]);
    if (!st)
        st = tf_session_diagonal(s, t[2], &t[3]); /* [2] */
    tf_eager *pair[2] = {t[3], t[3]};
    if (!st)
        st = tf_session_stack(s, pair, 2, 1, &t[4]); /* [2, 2] */
    idx = tft_constant(tf_session_runtime(s), TF_I64, 1, two, ix, 2);
    if (!st)
        st = tf_session_scatter(s, z, 1, idx, t[4], TF_GATHER_INDEX_SELECT, TF_SCATTER_ADD,
                                &t[5]); /* columns 1 += both */
    if (!st)
        st = tf_session_mul(s, t[5], t[2], out);
    for (size_t k = 0; k < 7; k++)
        tf_eager_release(t[k]);
    tf_eager_release(idx);
    return st;
}

/* |z|^2 through mul and conj, then a cast to c128 of the real result times z. */
static tf_status fn_cast(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    tf_eager *a = NULL, *c = NULL;
    tf_status st = tf_session_abs(s, xs[0], &a);
    if (!st)
        st = tf_session_cast(s, a, TF_C128, &c);
    if (!st)
        st = tf_session_mul(s, c, xs[0], out);
    tf_eager_release(a);
    tf_eager_release(c);
    return st;
}

/* The gradient of sum(|sin(z) * z|^2 + Re(w z^3)), taken with capture on so
   that it is differentiable again: the second-order case. */
static tf_status fn_grad_of(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    tf_runtime *rt = tf_session_runtime(s);
    tf_scope scope;
    TF_ASSERT_OK(tf_scope_begin_capture_trace(rt, &scope));
    tf_eager *z = xs[0], *sz = NULL, *p = NULL, *a = NULL, *sq = NULL, *l = NULL;
    TF_ASSERT_OK(tf_session_sin(s, z, &sz));
    TF_ASSERT_OK(tf_session_mul(s, sz, z, &p));
    TF_ASSERT_OK(tf_session_abs(s, p, &a));
    TF_ASSERT_OK(tf_session_mul(s, a, a, &sq));
    TF_ASSERT_OK(tf_session_reduce_sum(s, sq, NULL, 0, &l));
    tf_status st = tf_runtime_grad(rt, tf_session_engine(s), l, z, out);
    tf_scope_end(&scope);
    tf_eager_release(sz);
    tf_eager_release(p);
    tf_eager_release(a);
    tf_eager_release(sq);
    tf_eager_release(l);
    return st;
}

/* Second order through a matmul, angle and conj: grad of sum(angle(A conj(A))). */
static tf_status fn_grad_of2(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    tf_runtime *rt = tf_session_runtime(s);
    tf_scope scope;
    TF_ASSERT_OK(tf_scope_begin_capture_trace(rt, &scope));
    tf_eager *c = NULL, *m = NULL, *e = NULL, *l = NULL;
    TF_ASSERT_OK(tf_session_conj(s, xs[0], &c));
    TF_ASSERT_OK(tf_session_exp(s, c, &e));
    TF_ASSERT_OK(tf_session_matmul(s, xs[0], e, &m));
    tf_eager *an = NULL;
    TF_ASSERT_OK(tf_session_angle(s, m, &an));
    TF_ASSERT_OK(tf_session_reduce_sum(s, an, NULL, 0, &l));
    tf_status st = tf_runtime_grad(rt, tf_session_engine(s), l, xs[0], out);
    tf_scope_end(&scope);
    tf_eager_release(c);
    tf_eager_release(m);
    tf_eager_release(e);
    tf_eager_release(an);
    tf_eager_release(l);
    return st;
}

/* ===================================================================== */
/* Tests                                                                 */
/* ===================================================================== */

#define C1(name, sh)                                          \
    {                                                         \
#name, fn_##name, 1, {TF_C128 }, {1 }, {{3 } }, 0, sh \
    }

static void test_unary_rules(void **state)
{
    (void)state;
    const cx_case cases[] = {
        C1(neg, 0),    C1(exp, 0),     C1(log, 1.5), C1(sin, 0),  C1(cos, 0),  C1(tanh, 0),
        C1(sqrt, 1.5), C1(rsqrt, 1.5), C1(abs, 0),   C1(sign, 0), C1(conj, 0), C1(real, 0),
        C1(imag, 0),   C1(angle, 0),   C1(sum, 0),   C1(mean, 0), C1(cast, 0), C1(struct, 0),
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_case(&cases[i], 11u + (unsigned)i);
    const cx_case prod = {"prod", fn_prod, 1, {TF_C128}, {2}, {{2, 3}}, 0, 0};
    check_case(&prod, 5);
    const cx_case matrix = {"matrix ops", fn_matrix, 1, {TF_C128}, {2}, {{2, 3}}, 0, 0};
    check_case(&matrix, 6);
}

static void test_binary_rules(void **state)
{
    (void)state;
    const cx_case cases[] = {
        {"add", fn_add, 2, {TF_C128, TF_C128}, {1, 1}, {{3}, {1}}, 0, 0},
        {"sub", fn_sub, 2, {TF_C128, TF_C128}, {1, 1}, {{1}, {3}}, 0, 0},
        {"mul", fn_mul, 2, {TF_C128, TF_C128}, {2, 1}, {{2, 3}, {3}}, 0, 0},
        {"div", fn_div, 2, {TF_C128, TF_C128}, {1, 1}, {{3}, {3}}, 0, 2.0},
        {"pow", fn_pow, 2, {TF_C128, TF_C128}, {1, 1}, {{3}, {3}}, 0, 1.5},
        {"mul f64 * c128", fn_mul, 2, {TF_F64, TF_C128}, {1, 1}, {{3}, {3}}, 0, 0},
        {"div c128 / f64", fn_div, 2, {TF_C128, TF_F64}, {1, 1}, {{3}, {1}}, 0, 2.0},
        {"add f64 + c128", fn_add, 2, {TF_F64, TF_C128}, {2, 1}, {{2, 3}, {3}}, 0, 0},
        {"pow c128 ^ f64", fn_pow, 2, {TF_C128, TF_F64}, {1, 1}, {{3}, {3}}, 0, 1.5},
        {"complex", fn_complex, 2, {TF_F64, TF_F64}, {1, 1}, {{3}, {1}}, 0, 0},
        {"matmul", fn_matmul, 2, {TF_C128, TF_C128}, {2, 2}, {{2, 3}, {3, 2}}, 0, 0},
        {"dot_general", fn_dot, 2, {TF_C128, TF_C128}, {2, 2}, {{2, 3}, {2, 3}}, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_case(&cases[i], 31u + (unsigned)i);
}

static void test_second_order(void **state)
{
    (void)state;
    const cx_case a = {"grad of |sin(z) z|^2", fn_grad_of, 1, {TF_C128}, {1}, {{3}}, 1e-5, 0};
    check_case(&a, 3);
    const cx_case b = {
        "grad of angle(A exp(conj A))", fn_grad_of2, 1, {TF_C128}, {2}, {{2, 2}}, 1e-5, 0.5};
    check_case(&b, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unary_rules),
        cmocka_unit_test(test_binary_rules),
        cmocka_unit_test(test_second_order),
    };
    return cmocka_run_group_tests(tests, tft_cpu_setup, tft_cpu_teardown);
}
