/*
 * test_linalg_complex.c - tenferro.linalg on c128 and c64: every op's values
 * against identities on random complex matrices (A inv(A) = I, A X = B,
 * L L^H = A, Q R = A with Q unitary, A V = V diag(w), U S V^H = A, the
 * normal equations, the Penrose conditions, det by hand, of a triangular
 * matrix and multiplicatively, the norms from their definitions), batched
 * and on transposed views; the dtypes of the real outputs; c64 against c128
 * within f32 tolerance; and every refusal (wrong and mixed dtypes, shapes,
 * singular and not positive definite inputs) with its error kind and
 * nothing changed. The derivatives are test_linalg_complex_ad.c's.
 */
#include "linalg_cx_util.h"

enum { B = 2, N = 3 };

/* The [B, N, N] identity minus x, largest entry. */
static double off_identity(const cx *x, int64_t b, int64_t n)
{
    double m = 0;
    for (int64_t q = 0; q < b; q++)
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++)
                m = fmax(m, cabs(CX(x, q, i, j, b, n) - (i == j ? 1.0 : 0.0)));
    return m;
}

static void test_inv_solve_trisolve(void **state)
{
    (void)state;
    tft_env e = linalg_env_begin();
    unsigned st = 3;
    cx a[B * N * N], bb[B * N * 2], y[B * N * N], p[B * N * N], x[B * N * 2], r[B * N * 2];
    cx_shifted(a, B, N, 2.0, &st);
    cx_random(bb, B * N * 2, &st);
    tf_eager *ea = cx_eager(&e, TF_C128, B, N, N, a), *eb = cx_eager(&e, TF_C128, B, N, 2, bb);
    tf_eager *ey, *ex;
    TF_ASSERT_OK(call1(e.s, "inv", ea, NULL, -1, &ey));
    assert_int_equal(tf_tensor_dtype(tf_eager_value(ey)), TF_C128);
    cx_read(ey, y, B * N * N);
    cx_prod(B, N, N, N, a, 'N', y, 'N', p);
    assert_true(off_identity(p, B, N) < 1e-12);
    TF_ASSERT_OK(call1(e.s, "solve", ea, eb, -1, &ex));
    cx_read(ex, x, B * N * 2);
    cx_prod(B, N, N, 2, a, 'N', x, 'N', r);
    assert_true(cx_maxdiff(r, bb, B * N * 2) < 1e-12);
    tf_eager_release(ex);
    for (int lower = 0; lower < 2; lower++) { /* only a's triangle is read */
        cx t[B * N * N];
        for (int64_t q = 0; q < B; q++)
            for (int64_t i = 0; i < N; i++)
                for (int64_t j = 0; j < N; j++)
                    CX(t, q, i, j, B, N) = (lower ? i >= j : i <= j) ? CX(a, q, i, j, B, N) : 0;
        TF_ASSERT_OK(call1(e.s, "triangular_solve", ea, eb, lower, &ex));
        cx_read(ex, x, B * N * 2);
        cx_prod(B, N, N, 2, t, 'N', x, 'N', r);
        assert_true(cx_maxdiff(r, bb, B * N * 2) < 1e-12);
        tf_eager_release(ex);
    }
    /* a transposed (strided) view: inv(a^T) = inv(a)^T */
    tf_tensor *tt;
    TF_ASSERT_OK(tf_tensor_transpose(tf_eager_value(ea), (const int[]){0, 2, 1}, &tt));
    tf_eager *eat, *eyt;
    TF_ASSERT_OK(tf_runtime_constant_from(e.rt, tt, &eat));
    TF_ASSERT_OK(call1(e.s, "inv", eat, NULL, -1, &eyt));
    cx yt[B * N * N];
    cx_read(eyt, yt, B * N * N);
    for (int64_t q = 0; q < B; q++)
        for (int64_t i = 0; i < N; i++)
            for (int64_t j = 0; j < N; j++)
                assert_true(cabs(CX(yt, q, i, j, B, N) - CX(y, q, j, i, B, N)) < 1e-12);
    tf_tensor_release(tt);
    tf_eager *gone[] = {eyt, eat, ey, eb, ea};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
        tf_eager_release(gone[i]);
    tft_env_end(&e);
}

static void test_det_slogdet(void **state)
{
    (void)state;
    tft_env e = linalg_env_begin();
    /* by hand: det [[1+2i, 3], [-i, 2-i]] = (1+2i)(2-i) - 3(-i) = 4 + 6i */
    cx h[4] = {1 + 2 * I, -I, 3, 2 - I}, d[B];
    tf_eager *eh = cx_eager(&e, TF_C128, 0, 2, 2, h), *ed, *o[2];
    TF_ASSERT_OK(call1(e.s, "det", eh, NULL, -1, &ed));
    cx_read(ed, d, 1);
    assert_true(cabs(d[0] - (4 + 6 * I)) < 1e-14);
    TF_ASSERT_OK(tf_session_call(e.s, "tenferro.linalg.slogdet", (tf_call_arg[]){TF_ARG_TENSOR(eh)},
                                 1, o, 2));
    assert_int_equal(tf_tensor_dtype(tf_eager_value(o[0])), TF_C128);
    assert_int_equal(tf_tensor_dtype(tf_eager_value(o[1])), TF_F64); /* logabsdet is real */
    cx sg;
    double la;
    cx_read(o[0], &sg, 1);
    cx_read_real(o[1], &la, 1);
    assert_true(cabs(sg - (4 + 6 * I) / sqrt(52.0)) < 1e-14 && fabs(la - 0.5 * log(52.0)) < 1e-14);
    tf_eager_release(o[0]);
    tf_eager_release(o[1]);
    tf_eager_release(ed);
    tf_eager_release(eh);
    /* an upper triangular batch: det is the product of the diagonal (LU's own U) */
    unsigned st = 9;
    cx a[B * N * N], b2[B * N * N], ab[B * N * N], da[B], db[B], dab[B];
    cx_shifted(a, B, N, 1.0, &st);
    for (int64_t q = 0; q < B; q++)
        for (int64_t i = 0; i < N; i++)
            for (int64_t j = 0; j < i; j++)
                CX(a, q, i, j, B, N) = 0;
    tf_eager *ea = cx_eager(&e, TF_C128, B, N, N, a);
    TF_ASSERT_OK(call1(e.s, "det", ea, NULL, -1, &ed));
    cx_read(ed, da, B);
    for (int64_t q = 0; q < B; q++) {
        cx prod = 1;
        for (int64_t i = 0; i < N; i++)
            prod *= CX(a, q, i, i, B, N);
        assert_true(cabs(da[q] - prod) < 1e-13);
    }
    tf_eager_release(ed);
    tf_eager_release(ea);
    /* general matrices: det(A B) = det(A) det(B), sign exp(logabsdet) = det, |sign| = 1 */
    cx_shifted(a, B, N, 0.5, &st);
    cx_shifted(b2, B, N, 0.5, &st);
    cx_prod(B, N, N, N, a, 'N', b2, 'N', ab);
    const cx *ms[3] = {a, b2, ab};
    cx *ds[3] = {da, db, dab};
    for (int k = 0; k < 3; k++) {
        ea = cx_eager(&e, TF_C128, B, N, N, ms[k]);
        TF_ASSERT_OK(call1(e.s, "det", ea, NULL, -1, &ed));
        cx_read(ed, ds[k], B);
        TF_ASSERT_OK(tf_session_call(e.s, "tenferro.linalg.slogdet",
                                     (tf_call_arg[]){TF_ARG_TENSOR(ea)}, 1, o, 2));
        cx sgs[B];
        double las[B];
        cx_read(o[0], sgs, B);
        cx_read_real(o[1], las, B);
        for (int64_t q = 0; q < B; q++) {
            assert_true(fabs(cabs(sgs[q]) - 1) < 1e-14);
            assert_true(cabs(sgs[q] * exp(las[q]) - ds[k][q]) < 1e-12 * cabs(ds[k][q]));
        }
        tf_eager *gone[] = {o[0], o[1], ed, ea};
        for (size_t i = 0; i < 4; i++)
            tf_eager_release(gone[i]);
    }
    for (int64_t q = 0; q < B; q++)
        assert_true(cabs(dab[q] - da[q] * db[q]) < 1e-12 * cabs(dab[q]));
    tft_env_end(&e);
}

static void test_cholesky_qr(void **state)
{
    (void)state;
    tft_env e = linalg_env_begin();
    unsigned st = 21;
    cx a[B * N * N], l[B * N * N], p[B * N * N];
    cx_hpd(a, B, N, &st);
    tf_eager *ea = cx_eager(&e, TF_C128, B, N, N, a), *el;
    TF_ASSERT_OK(call1(e.s, "cholesky", ea, NULL, -1, &el));
    cx_read(el, l, B * N * N);
    cx_prod(B, N, N, N, l, 'N', l, 'H', p);
    assert_true(cx_maxdiff(p, a, B * N * N) < 1e-12);
    for (int64_t q = 0; q < B; q++)
        for (int64_t i = 0; i < N; i++) {
            assert_true(creal(CX(l, q, i, i, B, N)) > 0 && cimag(CX(l, q, i, i, B, N)) == 0);
            for (int64_t j = i + 1; j < N; j++)
                assert_true(CX(l, q, i, j, B, N) == 0);
        }
    tf_eager_release(el);
    tf_eager_release(ea);
    /* thin QR of a tall [B, 4, 3] batch */
    enum { M = 4 };
    cx t[B * M * N], q[B * M * N], r[B * N * N], qr[B * M * N], qq[B * N * N];
    cx_random(t, B * M * N, &st);
    ea = cx_eager(&e, TF_C128, B, M, N, t);
    tf_eager *o[2];
    TF_ASSERT_OK(
        tf_session_call(e.s, "tenferro.linalg.qr", (tf_call_arg[]){TF_ARG_TENSOR(ea)}, 1, o, 2));
    cx_read(o[0], q, B * M * N);
    cx_read(o[1], r, B * N * N);
    cx_prod(B, M, N, N, q, 'N', r, 'N', qr);
    assert_true(cx_maxdiff(qr, t, B * M * N) < 1e-12);
    cx_prod(B, N, M, N, q, 'H', q, 'N', qq);
    assert_true(off_identity(qq, B, N) < 1e-12);
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < N; i++) {
            assert_true(cimag(CX(r, b, i, i, B, N)) == 0); /* geqrf: a real diagonal */
            for (int64_t j = 0; j < i; j++)
                assert_true(CX(r, b, i, j, B, N) == 0);
        }
    tf_eager *gone[] = {o[0], o[1], ea};
    for (size_t i = 0; i < 3; i++)
        tf_eager_release(gone[i]);
    tft_env_end(&e);
}

static void test_eigh_svd(void **state)
{
    (void)state;
    tft_env e = linalg_env_begin();
    unsigned st = 33;
    cx a[B * N * N], v[B * N * N], av[B * N * N], vw[B * N * N], vv[B * N * N];
    cx_hpd(a, B, N, &st);
    for (int64_t q = 0; q < B; q++) /* the upper triangle is never read */
        for (int64_t i = 0; i < N; i++)
            for (int64_t j = i + 1; j < N; j++)
                CX(a, q, i, j, B, N) = conj(CX(a, q, j, i, B, N));
    tf_eager *ea = cx_eager(&e, TF_C128, B, N, N, a), *o[3];
    TF_ASSERT_OK(tf_session_call(e.s, "tenferro.linalg.eigh",
                                 (tf_call_arg[]){TF_ARG_TENSOR(ea), TF_ARG_F64(0)}, 2, o, 2));
    double w[B * N];
    cx_read_real(o[0], w, B * N);
    cx_read(o[1], v, B * N * N);
    cx_prod(B, N, N, N, a, 'N', v, 'N', av);
    for (int64_t q = 0; q < B; q++)
        for (int64_t i = 0; i < N; i++)
            for (int64_t j = 0; j < N; j++)
                CX(vw, q, i, j, B, N) = CX(v, q, i, j, B, N) * w[q + j * B];
    assert_true(cx_maxdiff(av, vw, B * N * N) < 1e-12);
    cx_prod(B, N, N, N, v, 'H', v, 'N', vv);
    assert_true(off_identity(vv, B, N) < 1e-12);
    for (int64_t q = 0; q < B; q++)
        for (int64_t j = 1; j < N; j++)
            assert_true(w[q + (j - 1) * B] <= w[q + j * B]);
    tf_eager_release(o[0]);
    tf_eager_release(o[1]);
    tf_eager_release(ea);
    /* thin SVD of tall and wide batches: U diag(s) V^H = A, U^H U = V^H V = I */
    int64_t shapes[2][2] = {{4, 3}, {3, 4}};
    for (int k = 0; k < 2; k++) {
        int64_t m = shapes[k][0], n = shapes[k][1], kk = m < n ? m : n;
        cx x[B * 12], u[B * 12], vm[B * 12], us[B * 12], rec[B * 12], g[B * 9];
        double s[B * 3];
        cx_random(x, (size_t)(B * m * n), &st);
        ea = cx_eager(&e, TF_C128, B, m, n, x);
        TF_ASSERT_OK(tf_session_call(e.s, "tenferro.linalg.svd",
                                     (tf_call_arg[]){TF_ARG_TENSOR(ea), TF_ARG_F64(0)}, 2, o, 3));
        cx_read(o[0], u, (size_t)(B * m * kk));
        cx_read_real(o[1], s, (size_t)(B * kk));
        cx_read(o[2], vm, (size_t)(B * n * kk));
        for (int64_t q = 0; q < B; q++)
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < kk; j++)
                    CX(us, q, i, j, B, m) = CX(u, q, i, j, B, m) * s[q + j * B];
        cx_prod(B, m, kk, n, us, 'N', vm, 'H', rec);
        assert_true(cx_maxdiff(rec, x, (size_t)(B * m * n)) < 1e-12);
        cx_prod(B, kk, m, kk, u, 'H', u, 'N', g);
        assert_true(off_identity(g, B, kk) < 1e-12);
        cx_prod(B, kk, n, kk, vm, 'H', vm, 'N', g);
        assert_true(off_identity(g, B, kk) < 1e-12);
        for (int64_t q = 0; q < B; q++)
            for (int64_t j = 1; j < kk; j++)
                assert_true(s[q + (j - 1) * B] >= s[q + j * B] && s[q + j * B] >= 0);
        tf_eager *gone[] = {o[0], o[1], o[2], ea};
        for (size_t i = 0; i < 4; i++)
            tf_eager_release(gone[i]);
    }
    tft_env_end(&e);
}

static void test_lstsq_pinv(void **state)
{
    (void)state;
    tft_env e = linalg_env_begin();
    enum { M = 4 };
    unsigned st = 45;
    cx a[B * M * N], b[B * M * 2], x[B * N * 2], res[B * M * 2], ne[B * N * 2];
    cx_random(a, B * M * N, &st);
    cx_random(b, B * M * 2, &st);
    tf_eager *ea = cx_eager(&e, TF_C128, B, M, N, a), *eb = cx_eager(&e, TF_C128, B, M, 2, b), *ex;
    TF_ASSERT_OK(call1(e.s, "lstsq", ea, eb, -1, &ex));
    cx_read(ex, x, B * N * 2);
    cx_prod(B, M, N, 2, a, 'N', x, 'N', res);
    for (size_t k = 0; k < B * M * 2; k++)
        res[k] -= b[k];
    cx_prod(B, N, M, 2, a, 'H', res, 'N', ne); /* the normal equations: A^H (A X - B) = 0 */
    for (size_t k = 0; k < B * N * 2; k++)
        assert_true(cabs(ne[k]) < 1e-12);
    tf_eager_release(ex);
    /* pinv: A P A = A, P A P = P, A P and P A Hermitian */
    cx p[B * N * M], ap[B * M * M], apa[B * M * N], pa[B * N * N], pap[B * N * M];
    TF_ASSERT_OK(tf_session_call(e.s, "tenferro.linalg.pinv",
                                 (tf_call_arg[]){TF_ARG_TENSOR(ea), TF_ARG_F64(1e-10)}, 2, &ex,
                                 1));
    cx_read(ex, p, B * N * M);
    cx_prod(B, M, N, M, a, 'N', p, 'N', ap);
    cx_prod(B, M, M, N, ap, 'N', a, 'N', apa);
    cx_prod(B, N, M, N, p, 'N', a, 'N', pa);
    cx_prod(B, N, N, M, pa, 'N', p, 'N', pap);
    assert_true(cx_maxdiff(apa, a, B * M * N) < 1e-12 && cx_maxdiff(pap, p, B * N * M) < 1e-12);
    for (int64_t q = 0; q < B; q++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < M; j++)
                assert_true(cabs(CX(ap, q, i, j, B, M) - conj(CX(ap, q, j, i, B, M))) < 1e-12);
    for (int64_t q = 0; q < B; q++)
        for (int64_t i = 0; i < N; i++)
            for (int64_t j = 0; j < N; j++)
                assert_true(cabs(CX(pa, q, i, j, B, N) - conj(CX(pa, q, j, i, B, N))) < 1e-12);
    tf_eager *gone[] = {ex, eb, ea};
    for (size_t i = 0; i < 3; i++)
        tf_eager_release(gone[i]);
    tft_env_end(&e);
}

static void test_norms(void **state)
{
    (void)state;
    tft_env e = linalg_env_begin();
    enum { M = 4 };
    unsigned st = 57;
    cx a[B * M * N];
    cx_random(a, B * M * N, &st);
    tf_eager *ea = cx_eager(&e, TF_C128, B, M, N, a), *o[3];
    TF_ASSERT_OK(tf_session_call(e.s, "tenferro.linalg.svd",
                                 (tf_call_arg[]){TF_ARG_TENSOR(ea), TF_ARG_F64(0)}, 2, o, 3));
    double s[B * N];
    cx_read_real(o[1], s, B * N);
    for (int i = 0; i < 3; i++)
        tf_eager_release(o[i]);
    static const double ords[] = {'F', 'N', 2, -2, 1, -1, INFINITY, -INFINITY};
    for (size_t k = 0; k < sizeof ords / sizeof ords[0]; k++) {
        double ord = ords[k], got[B], want[B];
        for (int64_t q = 0; q < B; q++) {
            double fro = 0, nuc = 0, col[N] = {0}, row[M] = {0};
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    double z = cabs(CX(a, q, i, j, B, M));
                    fro += z * z;
                    col[j] += z;
                    row[i] += z;
                }
            for (int64_t j = 0; j < N; j++)
                nuc += s[q + j * B];
            double cmax = col[0], cmin = col[0], rmax = row[0], rmin = row[0];
            for (int64_t j = 1; j < N; j++)
                cmax = fmax(cmax, col[j]), cmin = fmin(cmin, col[j]);
            for (int64_t i = 1; i < M; i++)
                rmax = fmax(rmax, row[i]), rmin = fmin(rmin, row[i]);
            want[q] = ord == 'F'    ? sqrt(fro)
                      : ord == 'N'  ? nuc
                      : ord == 2    ? s[q]
                      : ord == -2   ? s[q + (N - 1) * B]
                      : ord == 1    ? cmax
                      : ord == -1   ? cmin
                      : ord > 0     ? rmax
                                    : rmin;
        }
        tf_eager *n;
        TF_ASSERT_OK(tf_session_call(e.s, "tenferro.linalg.norm",
                                     (tf_call_arg[]){TF_ARG_TENSOR(ea), TF_ARG_F64(ord)}, 2, &n,
                                     1));
        assert_int_equal(tf_tensor_dtype(tf_eager_value(n)), TF_F64);
        cx_read_real(n, got, B);
        for (int64_t q = 0; q < B; q++)
            if (!(fabs(got[q] - want[q]) < 1e-12 * want[q]))
                fail_msg("norm ord %g: got %.17g, want %.17g", ord, got[q], want[q]);
        tf_eager_release(n);
    }
    tf_eager_release(ea);
    tft_env_end(&e);
}

/* ---- c64 against c128 ---- */

/* Runs op on x128 and on x64 (the same values rounded to c64) and compares
   output `out` (of n_out) within f32 tolerance, relative to its largest entry. */
static void same_in_c64(tft_env *e, const char *op, tf_eager *const *in128,
                        tf_eager *const *in64, size_t n_t, const tf_call_arg *scalar,
                        size_t n_out, size_t out, int modulus)
{
    tf_call_arg a128[3], a64[3];
    for (size_t i = 0; i < n_t; i++) {
        a128[i] = TF_ARG_TENSOR(in128[i]);
        a64[i] = TF_ARG_TENSOR(in64[i]);
    }
    if (scalar)
        a128[n_t] = a64[n_t] = *scalar;
    size_t na = n_t + (scalar ? 1 : 0);
    tf_eager *o128[3], *o64[3];
    TF_ASSERT_OK(cx_call(e->s, op, a128, na, o128, n_out));
    TF_ASSERT_OK(cx_call(e->s, op, a64, na, o64, n_out));
    const tf_tensor *t128 = tf_eager_value(o128[out]), *t64 = tf_eager_value(o64[out]);
    tf_dtype d128 = tf_tensor_dtype(t128), d64 = tf_tensor_dtype(t64);
    assert_int_equal(d64, d128 == TF_C128 ? TF_C64 : TF_F32); /* c64 in, c64 / f32 out */
    size_t n = tf_tensor_numel(t128);
    cx y128[64], y64[64];
    assert_true(n <= 64);
    if (d64 == TF_C64) {
        float complex f[64];
        TF_ASSERT_OK(tf_tensor_copy_to_host(t128, TF_C128, y128, n));
        TF_ASSERT_OK(tf_tensor_copy_to_host(t64, TF_C64, f, n));
        for (size_t k = 0; k < n; k++)
            y64[k] = f[k];
    } else { /* real outputs */
        double r128[64];
        float r64[64];
        TF_ASSERT_OK(tf_tensor_copy_to_host(t128, TF_F64, r128, n));
        TF_ASSERT_OK(tf_tensor_copy_to_host(t64, TF_F32, r64, n));
        for (size_t k = 0; k < n; k++)
            y128[k] = r128[k], y64[k] = r64[k];
    }
    double scale = 0;
    for (size_t k = 0; k < n; k++) {
        if (modulus) /* gauge: compare |.| (qr's R rows may differ in sign) */
            y128[k] = cabs(y128[k]), y64[k] = cabs(y64[k]);
        scale = fmax(scale, cabs(y128[k]));
    }
    if (!(cx_maxdiff(y128, y64, n) <= 1e-4 * fmax(scale, 1.0)))
        fail_msg("%s output %zu: c64 differs from c128 by %.3g", op, out,
                 cx_maxdiff(y128, y64, n));
    for (size_t i = 0; i < n_out; i++) {
        tf_eager_release(o128[i]);
        tf_eager_release(o64[i]);
    }
}

static void test_c64_matches_c128(void **state)
{
    (void)state;
    tft_env e = linalg_env_begin();
    enum { M = 4 };
    unsigned st = 71;
    cx a[B * N * N], h[B * N * N], t[B * M * N], b[B * N * 2], bt[B * M * 2];
    cx_shifted(a, B, N, 2.0, &st);
    cx_hpd(h, B, N, &st);
    cx_random(t, B * M * N, &st);
    cx_random(b, B * N * 2, &st);
    cx_random(bt, B * M * 2, &st);
    const cx *src[5] = {a, h, t, b, bt};
    int64_t rows[5] = {N, N, M, N, M}, cols[5] = {N, N, N, 2, 2};
    tf_eager *x128[5], *x64[5];
    for (int i = 0; i < 5; i++) {
        x128[i] = cx_eager(&e, TF_C128, B, rows[i], cols[i], src[i]);
        x64[i] = cx_eager(&e, TF_C64, B, rows[i], cols[i], src[i]);
    }
    tf_eager *ab128[2] = {x128[0], x128[3]}, *ab64[2] = {x64[0], x64[3]};
    tf_eager *tb128[2] = {x128[2], x128[4]}, *tb64[2] = {x64[2], x64[4]};
    tf_call_arg zero = TF_ARG_F64(0), lower = TF_ARG_I64(1), rcond = TF_ARG_F64(1e-6);
    same_in_c64(&e, "inv", x128, x64, 1, NULL, 1, 0, 0);
    same_in_c64(&e, "det", x128, x64, 1, NULL, 1, 0, 0);
    same_in_c64(&e, "slogdet", x128, x64, 1, NULL, 2, 0, 0);
    same_in_c64(&e, "slogdet", x128, x64, 1, NULL, 2, 1, 0);
    same_in_c64(&e, "solve", ab128, ab64, 2, NULL, 1, 0, 0);
    same_in_c64(&e, "triangular_solve", ab128, ab64, 2, &lower, 1, 0, 0);
    same_in_c64(&e, "cholesky", x128 + 1, x64 + 1, 1, NULL, 1, 0, 0);
    same_in_c64(&e, "eigh", x128 + 1, x64 + 1, 1, &zero, 2, 0, 0);
    same_in_c64(&e, "qr", x128 + 2, x64 + 2, 1, NULL, 2, 1, 1);
    same_in_c64(&e, "svd", x128 + 2, x64 + 2, 1, &zero, 3, 1, 0);
    same_in_c64(&e, "lstsq", tb128, tb64, 2, NULL, 1, 0, 0);
    same_in_c64(&e, "pinv", x128 + 2, x64 + 2, 1, &rcond, 1, 0, 0);
    static const double ords[] = {'F', 'N', 2, -2, 1, -1, INFINITY, -INFINITY};
    for (size_t k = 0; k < sizeof ords / sizeof ords[0]; k++) {
        tf_call_arg ord = TF_ARG_F64(ords[k]);
        same_in_c64(&e, "norm", x128 + 2, x64 + 2, 1, &ord, 1, 0, 0);
    }
    for (int i = 0; i < 5; i++) {
        tf_eager_release(x128[i]);
        tf_eager_release(x64[i]);
    }
    tft_env_end(&e);
}

/* ---- refusals ---- */

/* A call refused before anything runs: status, argument, message fragments,
   no output written, the registry unchanged. */
static void expect_refused(tft_env *e, const char *op, const tf_call_arg *args, size_t n,
                           size_t n_out, tf_status want, const char *arg, const char *says)
{
    tf_eager *sentinel = TFT_SENTINEL, *outs[3] = {sentinel, sentinel, sentinel};
    tf_epoch epoch = tf_runtime_epoch(e->rt);
    TF_ASSERT_STATUS(cx_call(e->s, op, args, n, outs, n_out), want);
    assert_string_equal(tf_error_argument(), arg);
    assert_false(tf_error_extension_kind(NULL, NULL, NULL));
    char full[64];
    snprintf(full, sizeof full, "tenferro.linalg.%s", op);
    if (!strstr(tf_error_cause(), full) || (says && !strstr(tf_error_cause(), says)))
        fail_msg("cause '%s' lacks '%s' or '%s'", tf_error_cause(), full, says ? says : "");
    for (int i = 0; i < 3; i++)
        assert_ptr_equal(outs[i], sentinel);
    assert_int_equal(tf_runtime_epoch(e->rt), epoch);
}

static void test_refusals(void **state)
{
    (void)state;
    tft_env e = linalg_env_begin();
    unsigned st = 83;
    cx r[6], sq[B * N * N], bb[B * N * 2];
    cx_random(r, 6, &st);
    cx_shifted(sq, B, N, 2.0, &st);
    cx_random(bb, B * N * 2, &st);
    tf_eager *rect = cx_eager(&e, TF_C128, 0, 2, 3, r), *a = cx_eager(&e, TF_C128, B, N, N, sq);
    tf_eager *b = cx_eager(&e, TF_C128, B, N, 2, bb), *b64 = cx_eager(&e, TF_C64, B, N, 2, bb);
    tf_eager *bf = NULL, *one = cx_eager(&e, TF_C128, 0, N, 2, bb);
    TF_ASSERT_OK(tf_session_real(e.s, b, &bf));
    int32_t ints[4] = {1, 2, 3, 4};
    tf_eager *ai = tft_constant(e.rt, TF_I32, 2, (int64_t[]){2, 2}, ints, 4);
    const char *square_ops[] = {"inv", "det", "slogdet", "cholesky"};
    for (size_t i = 0; i < 4; i++) /* not square */
        expect_refused(&e, square_ops[i], (tf_call_arg[]){TF_ARG_TENSOR(rect)}, 1,
                       strcmp(square_ops[i], "slogdet") ? 1 : 2, TF_ERR_SHAPE_MISMATCH, "a",
                       "square");
    expect_refused(&e, "eigh", (tf_call_arg[]){TF_ARG_TENSOR(rect), TF_ARG_F64(0)}, 2, 2,
                   TF_ERR_SHAPE_MISMATCH, "a", "square");
    expect_refused(&e, "qr", (tf_call_arg[]){TF_ARG_TENSOR(rect)}, 1, 2, TF_ERR_SHAPE_MISMATCH,
                   "a", "m >= n");
    /* integers keep being refused, naming the dtype */
    const char *int_ops[] = {"inv", "det", "qr"};
    for (size_t i = 0; i < 3; i++)
        expect_refused(&e, int_ops[i], (tf_call_arg[]){TF_ARG_TENSOR(ai)}, 1,
                       strcmp(int_ops[i], "qr") ? 1 : 2, TF_ERR_DTYPE_MISMATCH, "a", "not i32");
    expect_refused(&e, "norm", (tf_call_arg[]){TF_ARG_TENSOR(ai), TF_ARG_F64('F')}, 2, 1,
                   TF_ERR_DTYPE_MISMATCH, "a", "i32");
    uint8_t bits[4] = {1, 0, 0, 1};
    tf_eager *ab = tft_constant(e.rt, TF_BOOL, 2, (int64_t[]){2, 2}, bits, 4);
    expect_refused(&e, "cholesky", (tf_call_arg[]){TF_ARG_TENSOR(ab)}, 1, 1,
                   TF_ERR_DTYPE_MISMATCH, "a", "not bool");
    expect_refused(&e, "svd", (tf_call_arg[]){TF_ARG_TENSOR(ab), TF_ARG_F64(0)}, 2, 3,
                   TF_ERR_DTYPE_MISMATCH, "a", "not bool");
    tf_eager_release(ab);
    /* a real/complex mix, and c64 with c128, are refused naming both dtypes */
    expect_refused(&e, "solve", (tf_call_arg[]){TF_ARG_TENSOR(a), TF_ARG_TENSOR(bf)}, 2, 1,
                   TF_ERR_DTYPE_MISMATCH, "b", "'b' (f64) must have a's dtype (c128)");
    expect_refused(&e, "solve", (tf_call_arg[]){TF_ARG_TENSOR(a), TF_ARG_TENSOR(b64)}, 2, 1,
                   TF_ERR_DTYPE_MISMATCH, "b", "(c64)");
    expect_refused(&e, "triangular_solve",
                   (tf_call_arg[]){TF_ARG_TENSOR(a), TF_ARG_TENSOR(bf), TF_ARG_I64(1)}, 3, 1,
                   TF_ERR_DTYPE_MISMATCH, "b", "(f64)");
    expect_refused(&e, "lstsq", (tf_call_arg[]){TF_ARG_TENSOR(a), TF_ARG_TENSOR(bf)}, 2, 1,
                   TF_ERR_DTYPE_MISMATCH, "b", "(f64)");
    /* mixed shapes: b without a's batch axes */
    expect_refused(&e, "solve", (tf_call_arg[]){TF_ARG_TENSOR(a), TF_ARG_TENSOR(one)}, 2, 1,
                   TF_ERR_SHAPE_MISMATCH, "b", "rank");
    /* singular and not positive definite complex matrices: the typed errors */
    cx sing[4] = {1, I, I, -1}; /* det = -1 - i^2 = 0 */
    cx notpd[4] = {1, -2 * I, 2 * I, 1}; /* Hermitian, eigenvalues -1 and 3 */
    tf_eager *es = cx_eager(&e, TF_C128, 0, 2, 2, sing), *en = cx_eager(&e, TF_C128, 0, 2, 2, notpd);
    tf_eager *b2 = cx_eager(&e, TF_C128, 0, 2, 1, sing);
    expect_call_kind(&e, "inv", es, NULL, NULL, 1, "singular", 0);
    expect_call_kind(&e, "solve", es, b2, NULL, 1, "singular", 0);
    expect_call_kind(&e, "cholesky", en, NULL, NULL, 1, "not_positive_definite", 0);
    cx nan_in[4] = {1, 0, 2, 1};
    ((double *)&nan_in[1])[1] = NAN; /* imaginary, in the lower triangle, which eigh reads */
    tf_eager *enan = cx_eager(&e, TF_C128, 0, 2, 2, nan_in);
    tf_call_arg zero = TF_ARG_F64(0);
    expect_call_kind(&e, "svd", enan, NULL, &zero, 3, "no_convergence", 0);
    expect_call_kind(&e, "eigh", enan, NULL, &zero, 2, "no_convergence", 0);
    /* det of a singular complex matrix is 0; slogdet gives sign 0 and -inf */
    tf_eager *d, *o[2];
    cx dv, sv;
    double la;
    TF_ASSERT_OK(call1(e.s, "det", es, NULL, -1, &d));
    cx_read(d, &dv, 1);
    assert_true(dv == 0);
    TF_ASSERT_OK(tf_session_call(e.s, "tenferro.linalg.slogdet", (tf_call_arg[]){TF_ARG_TENSOR(es)},
                                 1, o, 2));
    cx_read(o[0], &sv, 1);
    cx_read_real(o[1], &la, 1);
    assert_true(sv == 0 && isinf(la) && la < 0);
    tf_eager *gone[] = {d, o[0], o[1], enan, b2, en, es, ai, one, bf, b64, b, a, rect};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
        tf_eager_release(gone[i]);
    tft_env_end(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inv_solve_trisolve), cmocka_unit_test(test_det_slogdet),
        cmocka_unit_test(test_cholesky_qr),        cmocka_unit_test(test_eigh_svd),
        cmocka_unit_test(test_lstsq_pinv),         cmocka_unit_test(test_norms),
        cmocka_unit_test(test_c64_matches_c128),   cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, setup, tft_cpu_teardown);
}
