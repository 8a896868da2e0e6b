/*
 * test_linalg.c - the tenferro.linalg extension: every op against reference
 * identities (A x = b, L L^T = A, A A^-1 = I, det via LU and by hand,
 * triangular solves, Q R = A, A v = w v, least-squares normal equations, U S V^T = A, A A+ A = A,
 * the Frobenius norm), batched over leading axes, f32 and f64, strided inputs, LAPACK failures as
 * typed errors naming the op, and every AD rule against finite differences in f64 in both modes
 * (tf_gradcheck.h).
 */
#include <math.h>

#include "linalg_test_util.h"
#include "tf_gradcheck.h"

/* A batch of diagonally dominant n x n matrices, shape [batch..., n, n], column-major. */
static void dominant(double *a, int64_t batch, int64_t n, unsigned seed)
{
    for (int64_t b = 0; b < batch; b++)
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < n; i++) {
                seed = seed * 1103515245u + 12345u;
                double v = ((seed >> 8) & 0xffff) / 65536.0 - 0.5;
                a[b + i * batch + j * batch * n] = v + (i == j ? (double)n + 1 : 0.0);
            }
}

/* element (b, i, j) of a column-major [batch, m, n] array */
#define AT(p, b, i, j, batch, m) (p)[(b) + (i) * (batch) + (j) * (batch) * (m)]

/* ---- forward values ---- */

static void test_solve_inv_identities(void **state)
{
    (void)state;
    tft_env e = linalg_env_begin();
    enum {
        B = 2,
        N = 3,
        K = 2
    };
    double a[B * N * N], bb[B * N * K], x[B * N * K], y[B * N * N];
    dominant(a, B, N, 7);
    for (int i = 0; i < B * N * K; i++)
        bb[i] = sin(i + 1.0);
    tf_eager *ea = ext_tensor(e.rt, 3, (int64_t[]){B, N, N}, a, 0);
    tf_eager *eb = ext_tensor(e.rt, 3, (int64_t[]){B, N, K}, bb, 0), *ex, *ey;
    TF_ASSERT_OK(call1(e.s, "solve", ea, eb, -1, &ex));
    TF_ASSERT_OK(call1(e.s, "inv", ea, NULL, -1, &ey));
    ext_read(ex, x, B * N * K);
    ext_read(ey, y, B * N * N);
    for (int b = 0; b < B; b++)
        for (int i = 0; i < N; i++) {
            for (int k = 0; k < K; k++) { /* A x = b */
                double r = -AT(bb, b, i, k, B, N);
                for (int j = 0; j < N; j++)
                    r += AT(a, b, i, j, B, N) * AT(x, b, j, k, B, N);
                assert_true(fabs(r) < 1e-12);
            }
            for (int k = 0; k < N; k++) { /* A A^-1 = I */
                double r = i == k ? -1.0 : 0.0;
                for (int j = 0; j < N; j++)
                    r += AT(a, b, i, j, B, N) * AT(y, b, j, k, B, N);
                assert_true(fabs(r) < 1e-12);
            }
        }
    tf_eager_release(ex);
    tf_eager_release(ey);
    tf_eager_release(eb);
    tf_eager_release(ea);
    tft_env_end(&e);
}

static void test_cholesky_det_trisolve(void **state)
{
    (void)state;
    tft_env e = linalg_env_begin();
    /* SPD [[4,2,0],[2,5,1],[0,1,3]] */
    double a[9] = {4, 2, 0, 2, 5, 1, 0, 1, 3}, l[9], d, sg, la, x[3];
    tf_eager *ea = ext_tensor(e.rt, 2, (int64_t[]){3, 3}, a, 0), *el, *ed, *outs[2], *ex, *eb;
    TF_ASSERT_OK(call1(e.s, "cholesky", ea, NULL, -1, &el));
    ext_read(el, l, 9);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double r = 0;
            for (int k = 0; k < 3; k++)
                r += l[i + 3 * k] * l[j + 3 * k];
            assert_true(fabs(r - a[i + 3 * j]) < 1e-12);
            if (j > i)
                assert_true(l[i + 3 * j] == 0.0);
        }
    TF_ASSERT_OK(call1(e.s, "det", ea, NULL, -1, &ed));
    assert_int_equal(tf_tensor_rank(tf_eager_value(ed)), 0);
    ext_read(ed, &d, 1);
    assert_true(fabs(d - (4 * (15 - 1) - 2 * (6 - 0))) < 1e-12); /* 44 */
    TF_ASSERT_OK(tf_session_call(e.s, "tenferro.linalg.slogdet", (tf_call_arg[]){TF_ARG_TENSOR(ea)},
                                 1, outs, 2));
    ext_read(outs[0], &sg, 1);
    ext_read(outs[1], &la, 1);
    assert_true(sg == 1.0 && fabs(la - log(44.0)) < 1e-12);
    /* L x = b (lower) and L^T x = b via its upper triangle */
    eb = ext_tensor(e.rt, 2, (int64_t[]){3, 1}, (double[]){1, 2, 3}, 0);
    TF_ASSERT_OK(call1(e.s, "triangular_solve", el, eb, 1, &ex));
    ext_read(ex, x, 3);
    for (int i = 0; i < 3; i++) {
        double r = -(i + 1.0);
        for (int j = 0; j <= i; j++)
            r += l[i + 3 * j] * x[j];
        assert_true(fabs(r) < 1e-12);
    }
    tf_eager_release(ex);
    tf_eager *at;
    TF_ASSERT_OK(tf_session_transpose(e.s, ea, (int[]){1, 0}, &at)); /* upper = A's upper */
    TF_ASSERT_OK(call1(e.s, "triangular_solve", at, eb, 0, &ex));
    ext_read(ex, x, 3);
    for (int i = 0; i < 3; i++) {
        double r = -(i + 1.0);
        for (int j = i; j < 3; j++)
            r += a[j + 3 * i] * x[j];
        assert_true(fabs(r) < 1e-12);
    }
    tf_eager *all[] = {ex, at, eb, outs[0], outs[1], ed, el, ea};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tf_eager_release(all[i]);
    tft_env_end(&e);
}

static void test_f32_and_strided(void **state)
{
    (void)state;
    tft_env e = linalg_env_begin();
    float a[4] = {3, 1, 2, 4}; /* [[3,2],[1,4]] column-major */
    tf_tensor *t, *tt;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F32, 2, (int64_t[]){2, 2}, a, 4, &t));
    TF_ASSERT_OK(tf_tensor_transpose(t, (const int[]){1, 0}, &tt)); /* a strided view */
    tf_eager *ea, *ed;
    TF_ASSERT_OK(tf_runtime_constant_from(e.rt, tt, &ea));
    TF_ASSERT_OK(call1(e.s, "det", ea, NULL, -1, &ed));
    assert_int_equal(tf_tensor_dtype(tf_eager_value(ed)), TF_F32);
    float d;
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(ed), TF_F32, &d, 1));
    assert_true(fabsf(d - 10.0f) < 1e-5f);
    tf_eager *ey;
    TF_ASSERT_OK(call1(e.s, "inv", ea, NULL, -1, &ey));
    float y[4];
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(ey), TF_F32, y, 4));
    /* inverse of [[3,1],[2,4]] = [[4,-1],[-2,3]] / 10, column-major */
    assert_true(fabsf(y[0] - 0.4f) < 1e-6f && fabsf(y[1] + 0.2f) < 1e-6f);
    assert_true(fabsf(y[2] + 0.1f) < 1e-6f && fabsf(y[3] - 0.3f) < 1e-6f);
    tf_eager_release(ey);
    tf_eager_release(ed);
    tf_eager_release(ea);
    tf_tensor_release(tt);
    tf_tensor_release(t);
    tft_env_end(&e);
}

static void test_errors(void **state)
{
    (void)state;
    tft_env e = linalg_env_begin();
    tf_eager *sing = ext_tensor(e.rt, 2, (int64_t[]){2, 2}, (double[]){1, 2, 2, 4}, 0);
    tf_eager *notpd = ext_tensor(e.rt, 2, (int64_t[]){2, 2}, (double[]){1, 2, 2, 1}, 0);
    tf_eager *rect = ext_tensor(e.rt, 2, (int64_t[]){2, 3}, (double[]){1, 2, 3, 4, 5, 6}, 0);
    tf_eager *b = ext_tensor(e.rt, 2, (int64_t[]){3, 1}, (double[]){1, 2, 3}, 0);
    tf_eager *b2 = ext_tensor(e.rt, 2, (int64_t[]){2, 1}, (double[]){1, 2}, 0);
    tf_eager *y = (tf_eager *)(uintptr_t)1, *outs[2];
    tf_call_arg lower = TF_ARG_I64(1);
    tf_eager *trising = ext_tensor(e.rt, 2, (int64_t[]){2, 2}, (double[]){1, 2, 3, 0}, 0);
    expect_call_kind(&e, "inv", sing, NULL, NULL, 1, "singular", 0);
    assert_non_null(strstr(tf_error_message(), "the matrix is singular"));
    expect_call_kind(&e, "solve", sing, b2, NULL, 1, "singular", 0);
    expect_call_kind(&e, "triangular_solve", trising, b2, &lower, 1, "singular", 0);
    assert_non_null(strstr(tf_error_cause(), "diagonal element 2"));
    expect_call_kind(&e, "cholesky", notpd, NULL, NULL, 1, "not_positive_definite", 0);
    assert_non_null(strstr(tf_error_cause(), "leading minor of order 2"));
    /* lstsq on a tall matrix with an exactly zero column (gels sees exact rank loss only) */
    tf_eager *tall = ext_tensor(e.rt, 2, (int64_t[]){3, 2}, (double[]){1, 2, 3, 0, 0, 0}, 0);
    expect_call_kind(&e, "lstsq", tall, b, NULL, 1, "rank_deficient", 0);
    /* numerically rank deficient (issue 19, item 8): the second column is twice the
       first, so R[2,2] is rounding noise; gels alone gave values near 1e14 */
    tf_eager *dep = ext_tensor(e.rt, 2, (int64_t[]){3, 2}, (double[]){1, 2, 3, 2, 4, 6}, 0);
    expect_call_kind(&e, "lstsq", dep, b, NULL, 1, "rank_deficient", 0);
    assert_non_null(strstr(tf_error_cause(), "max(m, n) * eps * max |R[i,i]|"));
    tf_eager *dep32 = NULL, *b32 = NULL;
    TF_ASSERT_OK(tf_session_cast(e.s, dep, TF_F32, &dep32));
    TF_ASSERT_OK(tf_session_cast(e.s, b, TF_F32, &b32));
    expect_call_kind(&e, "lstsq", dep32, b32, NULL, 1, "rank_deficient", 0);
    /* in a batch, the element that is deficient is named */
    double pair[12];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++) {
            pair[0 + 2 * (i + 3 * j)] = i == j ? 1.0 : 0.5; /* full rank */
            pair[1 + 2 * (i + 3 * j)] = (double)(i + 1) * (j + 1);
        }
    tf_eager *batch = ext_tensor(e.rt, 3, (int64_t[]){2, 3, 2}, pair, 0);
    tf_eager *bb = ext_tensor(e.rt, 3, (int64_t[]){2, 3, 1}, (double[]){1, 1, 2, 2, 3, 3}, 0);
    expect_call_kind(&e, "lstsq", batch, bb, NULL, 1, "rank_deficient", 1);
    /* ill-conditioned (1e8) but of full rank in f64: solved */
    tf_eager *ill = ext_tensor(e.rt, 2, (int64_t[]){3, 2}, (double[]){1, 1, 0, 1, 1 + 1e-8, 0}, 0);
    TF_ASSERT_OK(call1(e.s, "lstsq", ill, b, -1, &y));
    tf_eager_release(y);
    y = (tf_eager *)(uintptr_t)1; /* the sentinel the refusals below must leave */
    tf_eager *gone[] = {dep, dep32, b32, batch, bb, ill};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
        tf_eager_release(gone[i]);
    /* inference errors name the argument */
    TF_ASSERT_STATUS(call1(e.s, "inv", rect, NULL, -1, &y), TF_ERR_SHAPE_MISMATCH);
    assert_non_null(strstr(tf_error_cause(), "square"));
    assert_string_equal(tf_error_argument(), "a");
    assert_false(tf_error_extension_kind(NULL, NULL, NULL));
    TF_ASSERT_STATUS(call1(e.s, "solve", notpd, b, -1, &y), TF_ERR_SHAPE_MISMATCH);
    assert_string_equal(tf_error_argument(), "b");
    TF_ASSERT_STATUS(tf_session_call(e.s, "tenferro.linalg.svd",
                                     (tf_call_arg[]){TF_ARG_TENSOR(sing), TF_ARG_F64(-1)}, 2, outs,
                                     3),
                     TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "eps");
    TF_ASSERT_STATUS(tf_session_call(e.s, "tenferro.linalg.norm",
                                     (tf_call_arg[]){TF_ARG_TENSOR(sing), TF_ARG_F64(3)}, 2, &y, 1),
                     TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "ord");
    assert_ptr_equal(y, (tf_eager *)(uintptr_t)1);
    /* det of an exactly singular matrix is 0; slogdet gives sign 0, -inf */
    double d;
    TF_ASSERT_OK(call1(e.s, "det", sing, NULL, -1, &y));
    ext_read(y, &d, 1);
    assert_true(d == 0.0);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_call(e.s, "tenferro.linalg.slogdet",
                                 (tf_call_arg[]){TF_ARG_TENSOR(sing)}, 1, outs, 2));
    ext_read(outs[0], &d, 1);
    assert_true(d == 0.0);
    ext_read(outs[1], &d, 1);
    assert_true(isinf(d) && d < 0);
    tf_eager_release(outs[0]);
    tf_eager_release(outs[1]);
    tf_eager *all[] = {trising, tall, b2, b, rect, notpd, sing};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tf_eager_release(all[i]);
    tft_env_end(&e);
}

/* Batched, f32, and non-finite inputs: the index names the failing matrix. */
static void test_errors_batched_and_no_convergence(void **state)
{
    (void)state;
    tft_env e = linalg_env_begin();
    /* [3, 2, 2], element 1 singular (column-major: a[b + 3 i + 6 j]) */
    double a[12] = {2, 1, 3, 0, 2, 0, 0, 4, 0, 1, 8, 2};
    tf_eager *ab = ext_tensor(e.rt, 3, (int64_t[]){3, 2, 2}, a, 1);
    tf_eager *bb = ext_tensor(e.rt, 3, (int64_t[]){3, 2, 1}, (double[]){1, 1, 1, 1, 1, 1}, 0);
    expect_call_kind(&e, "inv", ab, NULL, NULL, 1, "singular", 1);
    expect_call_kind(&e, "solve", ab, bb, NULL, 1, "singular", 1);
    tf_tensor *gslot = (tf_tensor *)(uintptr_t)1;
    TF_ASSERT_OK(tf_eager_grad(ab, &gslot)); /* a failed call leaves the variable's slot empty */
    assert_null(gslot);
    /* f32 */
    float f[4] = {1, 2, 2, 4};
    tf_tensor *t;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F32, 2, (int64_t[]){2, 2}, f, 4, &t));
    tf_eager *ef;
    TF_ASSERT_OK(tf_runtime_constant_from(e.rt, t, &ef));
    tf_tensor_release(t);
    expect_call_kind(&e, "inv", ef, NULL, NULL, 1, "singular", 0);
    /* NaN and infinity: LAPACK's iterations cannot converge on them */
    double nan_m[4] = {1, NAN, NAN, 1}, inf_m[8] = {1, 0, 0, 1, 1, 0, 0, INFINITY};
    tf_eager *en = ext_tensor(e.rt, 2, (int64_t[]){2, 2}, nan_m, 0);
    tf_eager *ei = ext_tensor(e.rt, 3, (int64_t[]){2, 2, 2}, inf_m, 0);
    tf_call_arg eps = TF_ARG_F64(0), rcond = TF_ARG_F64(1e-12), two = TF_ARG_F64(2),
                nuc = TF_ARG_F64('N');
    expect_call_kind(&e, "eigh", en, NULL, &eps, 2, "no_convergence", 0);
    expect_call_kind(&e, "svd", en, NULL, &eps, 3, "no_convergence", 0);
    expect_call_kind(&e, "svd", ei, NULL, &eps, 3, "no_convergence", 1);
    assert_non_null(strstr(tf_error_cause(), "entry (1, 1) is not finite"));
    expect_call_kind(&e, "pinv", ei, NULL, &rcond, 1, "no_convergence", 1);
    expect_call_kind(&e, "norm", ei, NULL, &two, 1, "no_convergence", 1);
    expect_call_kind(&e, "norm", en, NULL, &nuc, 1, "no_convergence", 0);
    expect_call_kind(&e, "eigh", ei, NULL, &eps, 2, "no_convergence", 1);
    /* a failure inside a rule: d det / dA at a singular A needs inv(A) */
    tf_eager *xs = ext_tensor(e.rt, 2, (int64_t[]){2, 2}, (double[]){1, 2, 2, 4}, 1), *d, *g;
    TF_ASSERT_OK(call1(e.s, "det", xs, NULL, -1, &d));
    g = (tf_eager *)(uintptr_t)1;
    TF_ASSERT_STATUS(tf_runtime_grad(e.rt, g_cpu, d, xs, &g), TF_ERR_EXTENSION);
    expect_kind("inv", "singular", 0);
    assert_ptr_equal(g, (tf_eager *)(uintptr_t)1);
    TF_ASSERT_STATUS(tf_eager_backward(d, g_cpu), TF_ERR_EXTENSION);
    gslot = (tf_tensor *)(uintptr_t)1;
    TF_ASSERT_OK(tf_eager_grad(xs, &gslot)); /* backward is all-or-nothing */
    assert_null(gslot);
    tf_error_clear();
    assert_false(tf_error_extension_kind(NULL, NULL, NULL));
    tf_eager *all[] = {d, xs, ei, en, ef, bb, ab};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tf_eager_release(all[i]);
    tft_env_end(&e);
}

static void test_qr_eigh_identities(void **state)
{
    (void)state;
    tft_env e = linalg_env_begin();
    enum {
        M = 4,
        N = 3
    };
    double a[M * N], q[M * N], r[N * N];
    for (int i = 0; i < M * N; i++)
        a[i] = cos(1.7 * i * i + 0.3); /* full column rank (a pure cosine sequence is not) */
    tf_eager *ea = ext_tensor(e.rt, 2, (int64_t[]){M, N}, a, 0), *o[2];
    TF_ASSERT_OK(
        tf_session_call(e.s, "tenferro.linalg.qr", (tf_call_arg[]){TF_ARG_TENSOR(ea)}, 1, o, 2));
    ext_read(o[0], q, M * N);
    ext_read(o[1], r, N * N);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) { /* Q R = A */
            double v = 0;
            for (int k = 0; k < N; k++)
                v += q[i + M * k] * r[k + N * j];
            assert_true(fabs(v - a[i + M * j]) < 1e-12);
        }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) { /* Q^T Q = I, R upper */
            double v = 0;
            for (int k = 0; k < M; k++)
                v += q[k + M * i] * q[k + M * j];
            assert_true(fabs(v - (i == j)) < 1e-12);
            if (i > j)
                assert_true(r[i + N * j] == 0.0);
        }
    tf_eager_release(o[0]);
    tf_eager_release(o[1]);
    /* svd: U diag(s) V^T = A, s descending */
    tf_eager *so[3];
    double u[M * N], sv[N], vv[N * N];
    TF_ASSERT_OK(tf_session_call(e.s, "tenferro.linalg.svd",
                                 (tf_call_arg[]){TF_ARG_TENSOR(ea), TF_ARG_F64(0)}, 2, so, 3));
    ext_read(so[0], u, M * N);
    ext_read(so[1], sv, N);
    ext_read(so[2], vv, N * N);
    assert_true(sv[0] >= sv[1] && sv[1] >= sv[2] && sv[2] > 0);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double x = 0;
            for (int k = 0; k < N; k++)
                x += u[i + M * k] * sv[k] * vv[j + N * k];
            assert_true(fabs(x - a[i + M * j]) < 1e-12);
        }
    for (int i = 0; i < 3; i++)
        tf_eager_release(so[i]);
    /* pinv: A A+ A = A; norm: sqrt of the sum of squares */
    tf_eager *ep, *en;
    double pv[N * M], nrm, ss = 0;
    TF_ASSERT_OK(tf_session_call(e.s, "tenferro.linalg.pinv",
                                 (tf_call_arg[]){TF_ARG_TENSOR(ea), TF_ARG_F64(1e-12)}, 2, &ep, 1));
    ext_read(ep, pv, N * M);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double x = 0;
            for (int k = 0; k < N; k++)
                for (int l = 0; l < M; l++)
                    x += a[i + M * k] * pv[k + N * l] * a[l + M * j];
            assert_true(fabs(x - a[i + M * j]) < 1e-12);
        }
    TF_ASSERT_OK(tf_session_call(e.s, "tenferro.linalg.norm",
                                 (tf_call_arg[]){TF_ARG_TENSOR(ea), TF_ARG_F64('F')}, 2, &en, 1));
    ext_read(en, &nrm, 1);
    for (int i = 0; i < M * N; i++)
        ss += a[i] * a[i];
    assert_true(fabs(nrm - sqrt(ss)) < 1e-12);
    tf_eager_release(ep);
    tf_eager_release(en);
    /* lstsq: the residual is orthogonal to A's columns (normal equations) */
    double bv[M] = {1, -2, 0.5, 3}, xv[N];
    tf_eager *eb = ext_tensor(e.rt, 2, (int64_t[]){M, 1}, bv, 0), *ex;
    TF_ASSERT_OK(call1(e.s, "lstsq", ea, eb, -1, &ex));
    ext_read(ex, xv, N);
    for (int j = 0; j < N; j++) {
        double v = 0;
        for (int i = 0; i < M; i++) {
            double res = -bv[i];
            for (int k = 0; k < N; k++)
                res += a[i + M * k] * xv[k];
            v += a[i + M * j] * res;
        }
        if (!(fabs(v) < 1e-12))
            fail_msg("lstsq: column %d of A^T (A x - b) is %g", j, v);
    }
    tf_eager_release(ex);
    tf_eager_release(eb);
    /* eigh of [[2,1,0],[1,3,1],[0,1,4]]: A v = w v, ascending */
    double sa[9] = {2, 1, 0, 1, 3, 1, 0, 1, 4}, w[3], v[9];
    tf_eager *es = ext_tensor(e.rt, 2, (int64_t[]){3, 3}, sa, 0);
    TF_ASSERT_OK(tf_session_call(e.s, "tenferro.linalg.eigh",
                                 (tf_call_arg[]){TF_ARG_TENSOR(es), TF_ARG_F64(0)}, 2, o, 2));
    ext_read(o[0], w, 3);
    ext_read(o[1], v, 9);
    assert_true(w[0] <= w[1] && w[1] <= w[2]);
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 3; i++) {
            double av = 0;
            for (int j = 0; j < 3; j++)
                av += sa[i + 3 * j] * v[j + 3 * k];
            assert_true(fabs(av - w[k] * v[i + 3 * k]) < 1e-12);
        }
    tf_eager_release(o[0]);
    tf_eager_release(o[1]);
    tf_eager *y = (tf_eager *)(uintptr_t)1;
    TF_ASSERT_STATUS(tf_session_call(e.s, "tenferro.linalg.eigh",
                                     (tf_call_arg[]){TF_ARG_TENSOR(es), TF_ARG_F64(-1)}, 2, o, 2),
                     TF_ERR_VALIDATION);
    tf_eager *wide = ext_tensor(e.rt, 2, (int64_t[]){N, M}, a, 0);
    TF_ASSERT_STATUS(
        tf_session_call(e.s, "tenferro.linalg.qr", (tf_call_arg[]){TF_ARG_TENSOR(wide)}, 1, o, 2),
        TF_ERR_SHAPE_MISMATCH);
    assert_ptr_equal(y, (tf_eager *)(uintptr_t)1);
    tf_eager_release(wide);
    tf_eager_release(es);
    tf_eager_release(ea);
    tft_env_end(&e);
}

/* Degenerate spectrum: with eps > 0 the eigenvector derivative stays finite. */
static void test_eigh_regularised(void **state)
{
    (void)state;
    tft_env e = linalg_env_begin();
    tf_eager *x = ext_tensor(e.rt, 2, (int64_t[]){2, 2}, (double[]){1, 0, 0, 1}, 1), *o[2], *l, *g;
    TF_ASSERT_OK(tf_session_call(e.s, "tenferro.linalg.eigh",
                                 (tf_call_arg[]){TF_ARG_TENSOR(x), TF_ARG_F64(1e-6)}, 2, o, 2));
    TF_ASSERT_OK(tf_session_reduce_sum(e.s, o[1], NULL, 0, &l));
    TF_ASSERT_OK(tf_runtime_grad(e.rt, g_cpu, l, x, &g));
    double v[4];
    ext_read(g, v, 4);
    for (int i = 0; i < 4; i++)
        assert_true(isfinite(v[i]));
    tf_eager_release(g);
    tf_eager_release(l);
    tf_eager_release(o[0]);
    tf_eager_release(o[1]);
    tf_eager_release(x);
    tft_env_end(&e);
}

/* ---- matrix norms ---- */

/* norm(x, ord) of a [2, 2, 2] batch: [[1,2],[3,4]] and [[-1,0],[0,5]]. */
static void norms_of(tft_env *e, tf_dtype dt, double ord, double *out)
{
    double a[8] = {1, -1, 3, 0, 2, 0, 4, 5}; /* a[b + 2 i + 4 j] */
    tf_tensor *t;
    if (dt == TF_F64) {
        TF_ASSERT_OK(tf_tensor_from_host(TF_F64, 3, (int64_t[]){2, 2, 2}, a, 8, &t));
    } else {
        float f[8];
        for (int i = 0; i < 8; i++)
            f[i] = (float)a[i];
        TF_ASSERT_OK(tf_tensor_from_host(TF_F32, 3, (int64_t[]){2, 2, 2}, f, 8, &t));
    }
    tf_eager *x, *n;
    TF_ASSERT_OK(tf_runtime_constant_from(e->rt, t, &x));
    tf_tensor_release(t);
    TF_ASSERT_OK(tf_session_call(e->s, "tenferro.linalg.norm",
                                 (tf_call_arg[]){TF_ARG_TENSOR(x), TF_ARG_F64(ord)}, 2, &n, 1));
    assert_int_equal(tf_tensor_rank(tf_eager_value(n)), 1);
    assert_int_equal(tf_tensor_dtype(tf_eager_value(n)), dt);
    if (dt == TF_F64) {
        TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(n), TF_F64, out, 2));
    } else {
        float f[2];
        TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(n), TF_F32, f, 2));
        out[0] = f[0];
        out[1] = f[1];
    }
    tf_eager_release(n);
    tf_eager_release(x);
}

static void test_norms(void **state)
{
    (void)state;
    tft_env e = linalg_env_begin();
    /* [[1,2],[3,4]]: A^T A = [[10,14],[14,20]], s^2 = 15 +- sqrt(221) */
    double s1 = sqrt(15 + sqrt(221.0)), s2 = sqrt(15 - sqrt(221.0));
    struct {
        double ord, want[2];
    } k[] = {
        {'F', {sqrt(30.0), sqrt(26.0)}},
        {'N', {s1 + s2, 6}},
        {2, {s1, 5}},
        {-2, {s2, 1}},
        {1, {6, 5}}, /* column sums 4, 6 and 1, 5 */
        {-1, {4, 1}},
        {INFINITY, {7, 5}}, /* row sums 3, 7 and 1, 5 */
        {-INFINITY, {3, 1}},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        double got[2];
        norms_of(&e, TF_F64, k[i].ord, got);
        for (int b = 0; b < 2; b++)
            if (!(fabs(got[b] - k[i].want[b]) < 1e-12 * (1 + k[i].want[b])))
                fail_msg("norm ord %g batch %d: %.17g, expected %.17g", k[i].ord, b, got[b],
                         k[i].want[b]);
        norms_of(&e, TF_F32, k[i].ord, got);
        for (int b = 0; b < 2; b++)
            assert_true(fabs(got[b] - k[i].want[b]) < 1e-5 * (1 + k[i].want[b]));
    }
    /* a repeated largest singular value shares the subgradient: at I, G = I / 2 */
    tf_eager *x = ext_tensor(e.rt, 2, (int64_t[]){2, 2}, (double[]){1, 0, 0, 1}, 1), *n, *g;
    TF_ASSERT_OK(tf_session_call(e.s, "tenferro.linalg.norm",
                                 (tf_call_arg[]){TF_ARG_TENSOR(x), TF_ARG_F64(2)}, 2, &n, 1));
    TF_ASSERT_OK(tf_runtime_grad(e.rt, g_cpu, n, x, &g));
    tft_expect_near(g, (double[]){0.5, 0, 0, 0.5}, 4, 1e-12);
    tf_eager_release(g);
    tf_eager_release(n);
    tf_eager_release(x);
    tft_env_end(&e);
}

/* ---- gradients ---- */

typedef struct gspec {
    const char *op;
    int64_t lower; /* -1: no scalar */
    int out;       /* which output (slogdet, qr, eigh) */
    int sym;       /* symmetrise the first input (cholesky, eigh) */
    int square;    /* square the result elementwise (eigenvectors: sign-free) */
    double ord;    /* norm's order */
} gspec;

/* Output g->out of a multi-output op (eigh and svd take eps = 0). */
static tf_status two_outputs(tf_session *s, const gspec *g, tf_eager *a, tf_eager **out)
{
    char name[64];
    snprintf(name, sizeof name, "tenferro.linalg.%s", g->op);
    tf_call_arg args[2] = {TF_ARG_TENSOR(a), TF_ARG_F64(0.0)};
    tf_eager *o[3] = {NULL, NULL, NULL};
    int svd = strcmp(g->op, "svd") == 0;
    size_t n_args = svd || strcmp(g->op, "eigh") == 0 ? 2 : 1, n_out = svd ? 3 : 2;
    tf_status st = tf_session_call(s, name, args, n_args, o, n_out);
    if (st)
        return st;
    for (size_t i = 0; i < n_out; i++)
        if ((int)i != g->out)
            tf_eager_release(o[i]);
    if (!g->square) {
        *out = o[g->out];
        return TF_OK;
    }
    st = tf_session_mul(s, o[g->out], o[g->out], out);
    tf_eager_release(o[g->out]);
    return st;
}

static tf_status gfn(tf_session *s, tf_eager *const *xs, size_t n, void *user, tf_eager **out)
{
    const gspec *g = user;
    ensure(s);
    tf_eager *a = xs[0], *tmp = NULL, *sum = NULL, *half = NULL;
    tf_status st = TF_OK;
    if (g->sym) { /* (x + x^T) / 2 */
        int r = (int)tf_tensor_rank(tf_eager_value(a));
        int perm[TF_MAX_RANK];
        for (int i = 0; i < r; i++)
            perm[i] = i;
        perm[r - 2] = r - 1;
        perm[r - 1] = r - 2;
        if (!(st = tf_session_transpose(s, a, perm, &tmp)) &&
            !(st = tf_session_add(s, a, tmp, &sum)) &&
            !(st = tf_session_scalar(s, TF_F64, 0.5, &half)))
            st = tf_session_mul(s, sum, half, &a);
        tf_eager_release(tmp);
        tf_eager_release(sum);
        tf_eager_release(half);
        if (st)
            return st;
    }
    if (g->out >= 0 && (strcmp(g->op, "slogdet") == 0 || strcmp(g->op, "qr") == 0 ||
                        strcmp(g->op, "eigh") == 0 || strcmp(g->op, "svd") == 0)) {
        st = two_outputs(s, g, a, out);
    } else if (strcmp(g->op, "norm") == 0) {
        st = tf_session_call(s, "tenferro.linalg.norm",
                             (tf_call_arg[]){TF_ARG_TENSOR(a), TF_ARG_F64(g->ord)}, 2, out, 1);
    } else if (strcmp(g->op, "pinv") == 0) {
        st = tf_session_call(s, "tenferro.linalg.pinv",
                             (tf_call_arg[]){TF_ARG_TENSOR(a), TF_ARG_F64(1e-10)}, 2, out, 1);
    } else {
        st = call1(s, g->op, a, n > 1 ? xs[1] : NULL, g->lower, out);
    }
    if (g->sym)
        tf_eager_release(a);
    return st;
}

static tf_tensor *host_dominant(size_t rank, const int64_t *shape, unsigned seed)
{
    double buf[256];
    int64_t n = shape[rank - 1], batch = 1;
    for (size_t i = 0; i + 2 < rank; i++)
        batch *= shape[i];
    dominant(buf, batch, n, seed);
    tf_tensor *t;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, rank, shape, buf, (size_t)(batch * n * n), &t));
    return t;
}

static void check(const char *what, const gspec *g, tf_tensor *a, tf_tensor *b)
{
    tf_tensor *in[2] = {a, b};
    gc_options o = {.tol = 1e-6};
    gc_check(what, g_cpu, gfn, (void *)g, in, b ? 2 : 1, &o);
}

static void test_gradients(void **state)
{
    (void)state;
    unsigned seed = 5;
    int64_t sq[2] = {3, 3}, bsq[3] = {2, 3, 3}, rhs[2] = {3, 2}, brhs[3] = {2, 3, 2};
    tf_tensor *a = host_dominant(2, sq, 11), *ba = host_dominant(3, bsq, 13);
    tf_tensor *b = gc_random(2, rhs, -1, 1, &seed), *bb = gc_random(3, brhs, -1, 1, &seed);
    static const gspec inv = {"inv", -1, 0, 0, 0, 0}, solve = {"solve", -1, 0, 0, 0, 0},
                       lo = {"triangular_solve", 1, 0, 0, 0, 0},
                       up = {"triangular_solve", 0, 0, 0, 0, 0}, det = {"det", -1, 0, 0, 0, 0},
                       sld = {"slogdet", -1, 1, 0, 0, 0}, chol = {"cholesky", -1, 0, 1, 0, 0},
                       qr_q = {"qr", -1, 0, 0, 0, 0}, qr_r = {"qr", -1, 1, 0, 0, 0},
                       eig_w = {"eigh", -1, 0, 1, 0, 0}, eig_v = {"eigh", -1, 1, 1, 1, 0},
                       lsq = {"lstsq", -1, 0, 0, 0, 0}, svd_u = {"svd", -1, 0, 0, 1, 0},
                       svd_s = {"svd", -1, 1, 0, 0, 0}, svd_v = {"svd", -1, 2, 0, 1, 0},
                       pinv = {"pinv", -1, -1, 0, 0, 0}, norm = {"norm", -1, -1, 0, 0, 'F'};
    check("inv", &inv, a, NULL);
    check("inv batched", &inv, ba, NULL);
    check("solve", &solve, a, b);
    check("solve batched", &solve, ba, bb);
    check("triangular_solve lower", &lo, a, b);
    check("triangular_solve upper batched", &up, ba, bb);
    check("det", &det, a, NULL);
    check("det batched", &det, ba, NULL);
    check("slogdet", &sld, ba, NULL);
    check("cholesky", &chol, a, NULL);
    check("cholesky batched", &chol, ba, NULL);
    tf_tensor *tall = gc_random(3, (int64_t[]){2, 4, 3}, -1, 1, &seed);
    check("qr q batched", &qr_q, tall, NULL);
    check("qr r batched", &qr_r, tall, NULL);
    check("qr q square", &qr_q, a, NULL);
    tf_tensor *rhs_tall = gc_random(3, (int64_t[]){2, 4, 2}, -1, 1, &seed);
    check("lstsq batched", &lsq, tall, rhs_tall);
    check("lstsq square", &lsq, a, b);
    tf_tensor_release(rhs_tall);
    tf_tensor *wide = gc_random(3, (int64_t[]){2, 3, 4}, -1, 1, &seed);
    tf_tensor *svd_in[] = {tall, wide, a};
    for (int i = 0; i < 3; i++) {
        check("svd s", &svd_s, svd_in[i], NULL);
        check("svd u (squared)", &svd_u, svd_in[i], NULL);
        check("svd v (squared)", &svd_v, svd_in[i], NULL);
    }
    static const double ords[] = {'F', 'N', 2, -2, 1, -1, INFINITY, -INFINITY};
    for (int i = 0; i < 3; i++) {
        check("pinv", &pinv, svd_in[i], NULL);
        for (size_t o = 0; o < sizeof ords / sizeof ords[0]; o++) {
            gspec ng = norm;
            ng.ord = ords[o];
            char what[48];
            snprintf(what, sizeof what, "norm ord %g", ords[o]);
            check(what, &ng, svd_in[i], NULL);
        }
    }
    tf_tensor_release(wide);
    tf_tensor_release(tall);
    check("eigh w", &eig_w, a, NULL);
    check("eigh v (squared) batched", &eig_v, ba, NULL);
    tf_tensor *at;
    TF_ASSERT_OK(tf_tensor_transpose(a, (const int[]){1, 0}, &at));
    check("inv of a transposed view", &inv, at, NULL);
    tf_tensor_release(at);
    tf_tensor_release(a);
    tf_tensor_release(ba);
    tf_tensor_release(b);
    tf_tensor_release(bb);
}

/*
 * d/dA of sum(grad f(A) o grad f(A)) exercises the rules' own
 * differentiability: f is det (user NULL) or the norm of the order *user.
 */
static tf_status second_order(tf_session *s, tf_eager *const *xs, size_t n, void *user,
                              tf_eager **out)
{
    ensure(s);
    tf_eager *d, *g, *sq;
    tf_scope sc; /* the finite-difference side passes constants: capture them */
    tf_status st = tf_scope_begin_capture_trace(tf_session_runtime(s), &sc);
    if (st)
        return st;
    if (user)
        st = tf_session_call(s, "tenferro.linalg.norm",
                             (tf_call_arg[]){TF_ARG_TENSOR(xs[0]), TF_ARG_F64(*(double *)user)},
                             2, &d, 1);
    else
        st = call1(s, "det", xs[0], NULL, -1, &d);
    if (!st) {
        st = tf_runtime_grad(tf_session_runtime(s), tf_session_engine(s), d, xs[0], &g);
        tf_eager_release(d);
    }
    tf_scope_end(&sc);
    if (st)
        return st;
    st = tf_session_mul(s, g, g, &sq);
    tf_eager_release(g);
    if (!st) {
        st = tf_session_reduce_sum(s, sq, NULL, 0, out);
        tf_eager_release(sq);
    }
    return st;
}

static void test_second_order(void **state)
{
    (void)state;
    tf_tensor *a = host_dominant(2, (int64_t[]){2, 2}, 17);
    gc_options o = {.tol = 1e-5};
    gc_check("grad of det, differentiated", g_cpu, second_order, NULL, &a, 1, &o);
    tf_tensor_release(a);
    /* the spectral norms' subgradients u v^T are differentiable where sigma is simple */
    unsigned seed = 5;
    tf_tensor *r = gc_random(2, (int64_t[]){3, 2}, -1, 1, &seed);
    double ords[] = {2, -2, 'N'};
    for (int i = 0; i < 3; i++) {
        char what[64];
        snprintf(what, sizeof what, "grad of norm ord %g, differentiated", ords[i]);
        gc_check(what, g_cpu, second_order, &ords[i], &r, 1, &o);
    }
    tf_tensor_release(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_solve_inv_identities),
        cmocka_unit_test(test_cholesky_det_trisolve),
        cmocka_unit_test(test_f32_and_strided),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_errors_batched_and_no_convergence),
        cmocka_unit_test(test_qr_eigh_identities),
        cmocka_unit_test(test_eigh_regularised),
        cmocka_unit_test(test_norms),
        cmocka_unit_test(test_gradients),
        cmocka_unit_test(test_second_order),
    };
    return cmocka_run_group_tests(tests, setup, tft_cpu_teardown);
}
