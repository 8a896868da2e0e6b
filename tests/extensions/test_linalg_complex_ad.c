/*
 * test_linalg_complex_ad.c - the derivatives of tenferro.linalg on c128, in
 * PyTorch's convention (docs/complex.md), against central finite
 * differences along every real and imaginary part (tf_gradcheck.h): reverse
 * mode (the VJP with a random complex cotangent w is the gradient of
 * Re sum(conj(w) y)) and forward mode (the JVP along a random complex
 * tangent) for every op and output, batched and on transposed views, with
 * gauge-invariant functions of the eigen- and singular vectors (|V|^2,
 * U V^H); second order (gradients of gradients, both modes) for every op;
 * the svd rule's imaginary-diagonal term on its own; c64 gradients against
 * c128's.
 */
#include "linalg_cx_util.h"
#include "tf_gradcheck.h"

typedef struct cspec {
    const char *op;
    int64_t lower; /* triangular_solve's; -1: no such scalar */
    int out;       /* which output of a multi-output op */
    int herm;      /* (x + x^H) / 2 first (cholesky, eigh) */
    int post;      /* POST_* */
    double ord;    /* norm's order */
} cspec;

enum {
    POST_NONE,
    POST_ABS2, /* |y|^2 elementwise: free of the phase of each column of y */
    POST_UVH   /* svd: U V^H (out ignored), free of the common phase of u_j and v_j */
};

/* x^H (the last two axes swapped and conjugated) */
static tf_status adj(tf_session *s, tf_eager *x, tf_eager **out)
{
    int r = (int)tf_tensor_rank(tf_eager_value(x)), perm[TF_MAX_RANK];
    for (int i = 0; i < r; i++)
        perm[i] = i;
    perm[r - 2] = r - 1;
    perm[r - 1] = r - 2;
    tf_eager *t = NULL;
    tf_status st = tf_session_transpose(s, x, perm, &t);
    if (!st)
        st = tf_session_conj(s, t, out);
    tf_eager_release(t);
    return st;
}

/* (x + x^H) / 2 */
static tf_status hermitian(tf_session *s, tf_eager *x, tf_eager **out)
{
    tf_eager *h = NULL, *sum = NULL, *half = NULL;
    tf_status st = adj(s, x, &h);
    if (!st && !(st = tf_session_add(s, x, h, &sum)) &&
        !(st = tf_session_scalar(s, TF_F64, 0.5, &half)))
        st = tf_session_mul(s, sum, half, out);
    tf_eager_release(h);
    tf_eager_release(sum);
    tf_eager_release(half);
    return st;
}

/* |y|^2 = Re(y conj(y)), real */
static tf_status abs2(tf_session *s, tf_eager *y, tf_eager **out)
{
    tf_eager *c = NULL, *p = NULL;
    tf_status st = tf_session_conj(s, y, &c);
    if (!st && !(st = tf_session_mul(s, y, c, &p)))
        st = tf_session_real(s, p, out);
    tf_eager_release(c);
    tf_eager_release(p);
    return st;
}

static size_t n_outputs(const char *op)
{
    return !strcmp(op, "svd") ? 3 : !strcmp(op, "slogdet") || !strcmp(op, "qr") ||
                                            !strcmp(op, "eigh")
                                        ? 2
                                        : 1;
}

/* The op on a (and b), with its scalar; every output in o. */
static tf_status run_op(tf_session *s, const cspec *g, tf_eager *a, tf_eager *b, tf_eager **o)
{
    tf_call_arg args[3] = {TF_ARG_TENSOR(a)};
    size_t n = 1;
    if (b)
        args[n++] = TF_ARG_TENSOR(b);
    if (g->lower >= 0)
        args[n++] = TF_ARG_I64(g->lower);
    else if (!strcmp(g->op, "svd") || !strcmp(g->op, "eigh"))
        args[n++] = TF_ARG_F64(0.0);
    else if (!strcmp(g->op, "pinv"))
        args[n++] = TF_ARG_F64(1e-10);
    else if (!strcmp(g->op, "norm"))
        args[n++] = TF_ARG_F64(g->ord);
    return cx_call(s, g->op, args, n, o, n_outputs(g->op));
}

static tf_status cfn(tf_session *s, tf_eager *const *xs, size_t n, void *user, tf_eager **out)
{
    const cspec *g = user;
    ensure(s);
    tf_eager *a = xs[0], *h = NULL, *o[3] = {NULL, NULL, NULL};
    tf_status st = TF_OK;
    if (g->herm && (st = hermitian(s, a, &h)))
        return st;
    st = run_op(s, g, h ? h : a, n > 1 ? xs[1] : NULL, o);
    tf_eager_release(h);
    if (st)
        return st;
    size_t no = n_outputs(g->op);
    int pick = g->out < 0 ? 0 : g->out;
    if (g->post == POST_UVH) { /* sum_k U[.., i, k] conj(V[.., j, k]): [m, n, batch...] */
        tf_eager *vc = NULL;
        int r = (int)tf_tensor_rank(tf_eager_value(o[0]));
        tf_dot_dims d = {.n_contracting = 1, .n_batch = (size_t)r - 2};
        d.lhs_contracting[0] = d.rhs_contracting[0] = r - 1;
        for (int i = 0; i + 2 < r; i++)
            d.lhs_batch[i] = d.rhs_batch[i] = i;
        if (!(st = tf_session_conj(s, o[2], &vc)))
            st = tf_session_dot_general(s, o[0], vc, &d, out);
        tf_eager_release(vc);
    } else if (g->post == POST_ABS2) {
        st = abs2(s, o[pick], out);
    } else {
        tf_eager_retain(o[pick]);
        *out = o[pick];
    }
    for (size_t i = 0; i < no; i++)
        tf_eager_release(o[i]);
    return st;
}

/* A c128 host tensor [B, m, n] (rank 2 when B is 0), random plus shift on the diagonal. */
static tf_tensor *host_cx(int64_t B, int64_t m, int64_t n, double shift, unsigned *st)
{
    cx p[128];
    int64_t bb = B ? B : 1;
    cx_random(p, (size_t)(bb * m * n), st);
    for (int64_t q = 0; q < bb; q++)
        for (int64_t i = 0; i < (m < n ? m : n); i++)
            CX(p, q, i, i, bb, m) += shift;
    int64_t sh[3] = {B, m, n};
    tf_tensor *t;
    TF_ASSERT_OK(tf_tensor_from_host(TF_C128, B ? 3 : 2, B ? sh : sh + 1, p,
                                     (size_t)(bb * m * n), &t));
    return t;
}

/* t's last two axes swapped: a strided view (t is not released). */
static tf_tensor *transposed(tf_tensor *t)
{
    int r = (int)tf_tensor_rank(t), perm[3] = {0, 1, 2};
    perm[r - 2] = r - 1;
    perm[r - 1] = r - 2;
    tf_tensor *v;
    TF_ASSERT_OK(tf_tensor_transpose(t, perm, &v));
    assert_false(tf_tensor_is_contiguous(v));
    return v;
}

static void check(const char *what, const cspec *g, tf_tensor *a, tf_tensor *b, double tol)
{
    tf_tensor *in[2] = {a, b};
    gc_options o = {.tol = tol > 0 ? tol : 1e-6};
    gc_check(what, g_cpu, cfn, (void *)g, in, b ? 2 : 1, &o);
}

static void test_square_ops(void **state)
{
    (void)state;
    unsigned st = 5;
    tf_tensor *a = host_cx(0, 3, 3, 2.0, &st), *ba = host_cx(2, 3, 3, 2.0, &st);
    tf_tensor *b = host_cx(0, 3, 2, 0.0, &st), *bb = host_cx(2, 3, 2, 0.0, &st);
    tf_tensor *at = transposed(a);
    static const cspec inv = {"inv", -1, -1, 0, 0, 0}, solve = {"solve", -1, -1, 0, 0, 0},
                       lo = {"triangular_solve", 1, -1, 0, 0, 0},
                       up = {"triangular_solve", 0, -1, 0, 0, 0}, det = {"det", -1, -1, 0, 0, 0},
                       sign = {"slogdet", -1, 0, 0, 0, 0}, lad = {"slogdet", -1, 1, 0, 0, 0};
    check("inv", &inv, a, NULL, 0);
    check("inv batched", &inv, ba, NULL, 0);
    check("inv of a transposed view", &inv, at, NULL, 0);
    check("solve", &solve, a, b, 0);
    check("solve batched", &solve, ba, bb, 0);
    check("solve, a transposed view", &solve, at, b, 0);
    check("triangular_solve lower", &lo, a, b, 0);
    check("triangular_solve upper batched", &up, ba, bb, 0);
    check("det", &det, a, NULL, 0);
    check("det batched", &det, ba, NULL, 0);
    check("slogdet sign", &sign, ba, NULL, 0);
    check("slogdet logabsdet", &lad, ba, NULL, 0);
    check("slogdet logabsdet of a transposed view", &lad, at, NULL, 0);
    tf_tensor *gone[] = {at, a, ba, b, bb};
    for (size_t i = 0; i < 5; i++)
        tf_tensor_release(gone[i]);
}

static void test_factorisations(void **state)
{
    (void)state;
    unsigned st = 7;
    tf_tensor *a = host_cx(0, 3, 3, 4.0, &st), *ba = host_cx(2, 3, 3, 4.0, &st);
    tf_tensor *h = host_cx(2, 3, 3, 0.0, &st); /* eigh: distinct eigenvalues */
    tf_tensor *tall = host_cx(2, 4, 3, 0.0, &st), *sq = host_cx(0, 3, 3, 1.0, &st);
    tf_tensor *rt = host_cx(2, 4, 2, 0.0, &st), *bsq = host_cx(0, 3, 2, 0.0, &st);
    tf_tensor *wide = host_cx(2, 3, 4, 0.0, &st), *tall_t = transposed(wide); /* [2, 4, 3] */
    static const cspec chol = {"cholesky", -1, -1, 1, 0, 0}, qr_q = {"qr", -1, 0, 0, 0, 0},
                       qr_r = {"qr", -1, 1, 0, 0, 0}, eig_w = {"eigh", -1, 0, 1, 0, 0},
                       eig_v = {"eigh", -1, 1, 1, POST_ABS2, 0}, lsq = {"lstsq", -1, -1, 0, 0, 0};
    check("cholesky", &chol, a, NULL, 0);
    check("cholesky batched", &chol, ba, NULL, 0);
    check("qr q batched", &qr_q, tall, NULL, 0);
    check("qr r batched", &qr_r, tall, NULL, 0);
    check("qr q square", &qr_q, sq, NULL, 0);
    check("qr r of a transposed view", &qr_r, tall_t, NULL, 0);
    check("eigh w batched", &eig_w, h, NULL, 0);
    check("eigh |v|^2 batched", &eig_v, h, NULL, 0);
    check("lstsq batched", &lsq, tall, rt, 0);
    check("lstsq square", &lsq, sq, bsq, 0);
    check("lstsq of a transposed view", &lsq, tall_t, rt, 0);
    tf_tensor *gone[] = {a, ba, h, tall, sq, rt, bsq, tall_t, wide};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
        tf_tensor_release(gone[i]);
}

static void test_svd_pinv_norm(void **state)
{
    (void)state;
    unsigned st = 9;
    tf_tensor *tall = host_cx(2, 4, 3, 0.0, &st), *wide = host_cx(2, 3, 4, 0.0, &st);
    tf_tensor *sq = host_cx(0, 3, 3, 0.0, &st);
    tf_tensor *ins[] = {tall, wide, sq};
    const char *names[] = {"tall", "wide", "square"};
    static const cspec svd_s = {"svd", -1, 1, 0, 0, 0}, svd_u = {"svd", -1, 0, 0, POST_ABS2, 0},
                       svd_v = {"svd", -1, 2, 0, POST_ABS2, 0},
                       svd_uvh = {"svd", -1, 0, 0, POST_UVH, 0},
                       pinv = {"pinv", -1, -1, 0, 0, 0}, norm = {"norm", -1, -1, 0, 0, 'F'};
    static const double ords[] = {'F', 'N', 2, -2, 1, -1, INFINITY, -INFINITY};
    for (int i = 0; i < 3; i++) {
        char what[64];
        const cspec *svds[] = {&svd_s, &svd_u, &svd_v, &svd_uvh, &pinv};
        const char *sw[] = {"svd s", "svd |u|^2", "svd |v|^2", "svd u v^H", "pinv"};
        for (int k = 0; k < 5; k++) {
            snprintf(what, sizeof what, "%s %s", sw[k], names[i]);
            check(what, svds[k], ins[i], NULL, 0);
        }
        for (size_t o = 0; o < sizeof ords / sizeof ords[0]; o++) {
            cspec ng = norm;
            ng.ord = ords[o];
            snprintf(what, sizeof what, "norm ord %g %s", ords[o], names[i]);
            check(what, &ng, ins[i], NULL, 0);
        }
    }
    tf_tensor *tt = transposed(wide);
    check("svd u v^H of a transposed view", &svd_uvh, tt, NULL, 0);
    tf_tensor_release(tt);
    for (int i = 0; i < 3; i++)
        tf_tensor_release(ins[i]);
}

/*
 * The imaginary-diagonal term of svd's rules on its own: L = Im(u_1^H x)
 * for a fixed x depends on the phase of u_1 alone, so it is not gauge
 * invariant; L' = Im(conj(u_1^H x) (v_1^H y)) is (the phases cancel), and
 * reaches the U and V cotangents' diagonals Im diag(U^H Ubar), Im diag(V^H
 * Vbar) with opposite signs, the term a real rule does not have.
 */
static tf_status svd_phase(tf_session *s, tf_eager *const *xs, size_t n, void *user,
                           tf_eager **out)
{
    ensure(s);
    tf_eager *o[3], *xh = NULL, *uhx = NULL, *vhy = NULL, *t = NULL, *p = NULL, *c = NULL;
    static const cspec svd = {"svd", -1, 0, 0, 0, 0};
    tf_status st = run_op(s, &svd, xs[0], NULL, o);
    if (st)
        return st;
    tf_eager *x = xs[1], *y = xs[2]; /* [m, 1], [n, 1] constants of the check */
    if (!(st = adj(s, o[0], &xh)) && !(st = tf_session_matmul(s, xh, x, &uhx)))
        st = adj(s, o[2], &t);
    if (!st && !(st = tf_session_matmul(s, t, y, &vhy)) && !(st = tf_session_conj(s, uhx, &c)))
        st = tf_session_mul(s, c, vhy, &p);
    if (!st)
        st = tf_session_imag(s, p, out); /* [k, 1]: every singular pair */
    tf_eager *gone[] = {o[0], o[1], o[2], xh, uhx, vhy, t, p, c};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
        tf_eager_release(gone[i]);
    return st;
}

static void test_svd_phase_term(void **state)
{
    (void)state;
    unsigned st = 11;
    tf_tensor *a = host_cx(0, 4, 3, 0.0, &st), *x = host_cx(0, 4, 1, 0.0, &st),
              *y = host_cx(0, 3, 1, 0.0, &st);
    tf_tensor *in[3] = {a, x, y};
    gc_options o = {.tol = 1e-6};
    gc_check("svd: Im(conj(u^H x) v^H y)", g_cpu, svd_phase, NULL, in, 3, &o);
    tf_tensor_release(a);
    tf_tensor_release(x);
    tf_tensor_release(y);
}

/* Shapes the oracle programs of programs-v2 give linalg on c128: a rank-4
   batch, a single column, a rank-3 batch of one 2 x 2 matrix. */
static void test_oracle_shapes(void **state)
{
    (void)state;
    unsigned st = 17;
    tf_tensor *r4 = gc_random_dt(TF_C128, 4, (int64_t[]){1, 2, 3, 4}, -1, 1, &st);
    tf_tensor *col = gc_random_dt(TF_C128, 3, (int64_t[]){2, 5, 1}, -1, 1, &st);
    tf_tensor *one = host_cx(1, 2, 2, 1.0, &st), *row = gc_random_dt(TF_C128, 2, (int64_t[]){1, 3},
                                                                      -1, 1, &st);
    static const cspec pinv = {"pinv", -1, -1, 0, 0, 0}, lad = {"slogdet", -1, 1, 0, 0, 0},
                       det = {"det", -1, -1, 0, 0, 0};
    check("pinv [1, 2, 3, 4]", &pinv, r4, NULL, 0);
    check("pinv [2, 5, 1]", &pinv, col, NULL, 0);
    check("pinv [1, 3]", &pinv, row, NULL, 0);
    check("slogdet logabsdet [1, 2, 2]", &lad, one, NULL, 0);
    check("det [1, 2, 2]", &det, one, NULL, 0);
    tf_tensor *gone[] = {r4, col, one, row};
    for (size_t i = 0; i < 4; i++)
        tf_tensor_release(gone[i]);
}

/* The gradient of sum(|op(A)|^2) (a real loss, gauge-free for these outputs) in c64
   against c128's, within f32 tolerance. */
static void test_c64_gradients(void **state)
{
    (void)state;
    static const cspec specs[] = {
        {"inv", -1, -1, 0, 0, 0},      {"det", -1, -1, 0, 0, 0},   {"slogdet", -1, 1, 0, 0, 0},
        {"cholesky", -1, -1, 1, 0, 0}, {"qr", -1, 1, 0, 0, 0},     {"eigh", -1, 0, 1, 0, 0},
        {"svd", -1, 1, 0, 0, 0},       {"pinv", -1, -1, 0, 0, 0},  {"norm", -1, -1, 0, 0, 'N'},
        {"svd", -1, 0, 0, POST_UVH, 0}, {"eigh", -1, 1, 1, POST_ABS2, 0},
    };
    unsigned st = 19;
    cx a[18];
    cx_random(a, 18, &st);
    for (int i = 0; i < 3; i++)
        a[i + 3 * i] += 4.0; /* positive definite once Hermitian */
    for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
        cx g[2][9];
        for (int w = 0; w < 2; w++) {
            tft_env e = linalg_env_begin();
            tf_eager *x128 = tft_eager(e.rt, TF_C128, 1, 2, (int64_t[]){3, 3}, a, 9), *x = x128;
            if (w == 1) { /* a c64 variable of the same values */
                tf_tensor *t = NULL;
                float complex f[9];
                for (int i = 0; i < 9; i++)
                    f[i] = (float complex)a[i];
                TF_ASSERT_OK(tf_tensor_from_host(TF_C64, 2, (int64_t[]){3, 3}, f, 9, &t));
                TF_ASSERT_OK(tf_runtime_variable_from(e.rt, t, &x));
                tf_tensor_release(t);
            }
            tf_eager *y, *y2, *l, *gr;
            TF_ASSERT_OK(cfn(e.s, &x, 1, (void *)&specs[k], &y));
            if (tf_dtype_is_complex(tf_tensor_dtype(tf_eager_value(y))))
                TF_ASSERT_OK(abs2(e.s, y, &y2));
            else
                TF_ASSERT_OK(tf_session_mul(e.s, y, y, &y2));
            TF_ASSERT_OK(tf_session_reduce_sum(e.s, y2, NULL, 0, &l));
            gr = tft_grad(e.rt, l, x);
            assert_int_equal(tf_tensor_dtype(tf_eager_value(gr)), w ? TF_C64 : TF_C128);
            if (w) {
                float complex f[9];
                TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(gr), TF_C64, f, 9));
                for (int i = 0; i < 9; i++)
                    g[1][i] = f[i];
            } else {
                cx_read(gr, g[0], 9);
            }
            tf_eager *gone[] = {y, y2, l, gr, x};
            for (size_t i = 0; i < 5; i++)
                tf_eager_release(gone[i]);
            if (w)
                tf_eager_release(x128);
            tft_env_end(&e);
        }
        double scale = 1;
        for (int i = 0; i < 9; i++)
            scale = fmax(scale, cabs(g[0][i]));
        if (!(cx_maxdiff(g[0], g[1], 9) <= 1e-4 * scale))
            fail_msg("%s out %d: the c64 gradient differs from c128's by %.3g (scale %.3g)",
                     specs[k].op, specs[k].out, cx_maxdiff(g[0], g[1], 9), scale);
    }
}

/* Second order: the gradient of Re sum(sin(op(x))) (gc_second_order), checked in both modes. */
static void test_second_order(void **state)
{
    (void)state;
    unsigned st = 13;
    tf_tensor *a = host_cx(0, 3, 3, 2.0, &st), *pd = host_cx(0, 3, 3, 4.0, &st);
    tf_tensor *tall = host_cx(0, 4, 3, 0.0, &st), *h = host_cx(0, 3, 3, 0.0, &st);
    static const cspec specs[] = {
        {"inv", -1, -1, 0, 0, 0},          {"det", -1, -1, 0, 0, 0},
        {"slogdet", -1, 1, 0, 0, 0},       {"slogdet", -1, 0, 0, 0, 0},
        {"cholesky", -1, -1, 1, 0, 0},     {"qr", -1, 1, 0, 0, 0},
        {"qr", -1, 0, 0, 0, 0},            {"eigh", -1, 0, 1, 0, 0},
        {"eigh", -1, 1, 1, POST_ABS2, 0},  {"svd", -1, 1, 0, 0, 0},
        {"svd", -1, 0, 0, POST_UVH, 0},    {"pinv", -1, -1, 0, 0, 0},
        {"norm", -1, -1, 0, 0, 'F'},       {"norm", -1, -1, 0, 0, 'N'},
        {"norm", -1, -1, 0, 0, 2},         {"norm", -1, -1, 0, 0, -2},
        {"triangular_solve", 1, -1, 0, 0, 0},
    };
    tf_tensor *rhs = host_cx(0, 3, 2, 0.0, &st);
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        const cspec *g = &specs[i];
        tf_tensor *in = !strcmp(g->op, "cholesky")                      ? pd
                        : !strcmp(g->op, "eigh")                        ? h
                        : !strcmp(g->op, "qr") || !strcmp(g->op, "svd") ||
                                  !strcmp(g->op, "pinv") || !strcmp(g->op, "norm")
                            ? tall
                            : a;
        gc_order2 o2 = {cfn, (void *)g};
        tf_tensor *ins[2] = {in, rhs};
        char what[96];
        snprintf(what, sizeof what, "second order: %s out %d post %d ord %g", g->op, g->out,
                 g->post, g->ord);
        gc_options o = {.tol = 1e-5};
        gc_check(what, g_cpu, gc_second_order, &o2, ins, g->lower >= 0 ? 2 : 1, &o);
    }
    tf_tensor *gone[] = {a, pd, tall, h, rhs};
    for (size_t i = 0; i < 5; i++)
        tf_tensor_release(gone[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_square_ops),     cmocka_unit_test(test_factorisations),
        cmocka_unit_test(test_svd_pinv_norm),  cmocka_unit_test(test_svd_phase_term),
        cmocka_unit_test(test_oracle_shapes),  cmocka_unit_test(test_c64_gradients),
        cmocka_unit_test(test_second_order),
    };
    return cmocka_run_group_tests(tests, setup, tft_cpu_teardown);
}
