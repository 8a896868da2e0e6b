/*
 * test_complex_ops.c - the complex ops of the eager runtime on the CPU
 * engine: values of conj, real, imag, angle, abs and complex(re, im);
 * NumPy's promotion of mixed real/complex operands; the refusals of what
 * complex values do not define (typed error naming op and dtype, nothing
 * made); complex variables; the worked examples of docs/complex.md; that no
 * complex op joins a deferred (FUSED) batch; the derivatives at z = 0;
 * backward into grad slots; and c64 against c128. The finite-difference
 * checks of every rule are test_complex_ad.c's.
 */
#include <math.h>
#include <string.h>

#include <tenferro/ops.h>

#include "tf_eager_test.h"

#define CX_MAX_EL 16

/* c128 values of x as interleaved doubles. */
static void expect_c128(const tf_eager *x, const double *want, size_t n, double tol)
{
    double got[2 * CX_MAX_EL];
    assert_int_equal(tf_tensor_dtype(tf_eager_value(x)), TF_C128);
    assert_int_equal(tft_read_parts(tf_eager_value(x), got, 2 * CX_MAX_EL), 2 * n);
    for (size_t k = 0; k < 2 * n; k++)
        if (!(fabs(got[k] - want[k]) <= tol))
            fail_msg("part %zu: got %.17g, want %.17g", k, got[k], want[k]);
}

/* The worked examples of docs/complex.md: |z|^2 gives 2z, Re z gives 1. */
static void test_worked_examples(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    int64_t two[1] = {2};
    double zv[4] = {1.0, 2.0, -0.5, 3.0};
    tf_eager *z = tft_eager(e.rt, TF_C128, 1, 1, two, zv, 2);
    tf_eager *a = NULL, *sq = NULL, *l = NULL, *r = NULL, *l2 = NULL;
    TF_ASSERT_OK(tf_session_abs(e.s, z, &a));
    TF_ASSERT_OK(tf_session_mul(e.s, a, a, &sq));
    TF_ASSERT_OK(tf_session_reduce_sum(e.s, sq, NULL, 0, &l));
    tf_eager *g = tft_grad(e.rt, l, z);
    const double twice[4] = {2.0, 4.0, -1.0, 6.0};
    expect_c128(g, twice, 2, 1e-12);
    TF_ASSERT_OK(tf_session_real(e.s, z, &r));
    TF_ASSERT_OK(tf_session_reduce_sum(e.s, r, NULL, 0, &l2));
    tf_eager *g2 = tft_grad(e.rt, l2, z);
    const double ones[4] = {1.0, 0.0, 1.0, 0.0};
    expect_c128(g2, ones, 2, 0);
    tf_eager *xs[] = {z, a, sq, l, g, r, l2, g2};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++)
        tf_eager_release(xs[i]);
    tft_env_end(&e);
}

static void test_values_and_promotion(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    int64_t two[1] = {2};
    const double zv[4] = {3.0, 4.0, -1.0, 0.0};
    tf_eager *z = tft_constant(e.rt, TF_C128, 1, two, zv, 2);
    tf_eager *r = NULL, *i = NULL, *an = NULL, *c = NULL, *back = NULL, *ab = NULL;
    TF_ASSERT_OK(tf_session_real(e.s, z, &r));
    TF_ASSERT_OK(tf_session_imag(e.s, z, &i));
    TF_ASSERT_OK(tf_session_angle(e.s, z, &an));
    TF_ASSERT_OK(tf_session_conj(e.s, z, &c));
    TF_ASSERT_OK(tf_session_abs(e.s, z, &ab));
    const double re[2] = {3.0, -1.0}, im[2] = {4.0, 0.0},
                 ang[2] = {atan2(4.0, 3.0), atan2(0.0, -1.0)};
    const double mag[2] = {5.0, 1.0}, cj[4] = {3.0, -4.0, -1.0, -0.0};
    tft_expect_near(r, re, 2, 0);
    tft_expect_near(i, im, 2, 0);
    tft_expect_near(an, ang, 2, 1e-15);
    tft_expect_near(ab, mag, 2, 1e-15);
    expect_c128(c, cj, 2, 0);
    TF_ASSERT_OK(tf_session_complex(e.s, r, i, &back));
    expect_c128(back, zv, 2, 0);
    /* promotion: f32 + c64 -> c64, f64 + c64 -> c128, f32 + c128 -> c128, c64 + c128 -> c128 */
    const tf_dtype a_dt[] = {TF_F32, TF_F64, TF_F32, TF_C64, TF_C64};
    const tf_dtype b_dt[] = {TF_C64, TF_C64, TF_C128, TF_C128, TF_F32};
    const tf_dtype want[] = {TF_C64, TF_C128, TF_C128, TF_C128, TF_C64};
    for (size_t k = 0; k < 5; k++) {
        tf_eager *x = NULL, *y = NULL, *sum = NULL;
        TF_ASSERT_OK(tf_session_full(e.s, a_dt[k], 1, two, 2.0, &x));
        TF_ASSERT_OK(tf_session_cast(e.s, z, b_dt[k], &y));
        TF_ASSERT_OK(tf_session_add(e.s, x, y, &sum));
        assert_int_equal(tf_tensor_dtype(tf_eager_value(sum)), want[k]);
        tf_eager *wide = NULL;
        TF_ASSERT_OK(tf_session_cast(e.s, sum, TF_C128, &wide));
        /* a real y (the last case) is z's real part: the cast drops the imaginary one */
        const double w[4] = {5.0, tf_dtype_is_complex(b_dt[k]) ? 4.0 : 0.0, 1.0, 0.0};
        expect_c128(wide, w, 2, 0);
        tf_eager_release(x);
        tf_eager_release(y);
        tf_eager_release(sum);
        tf_eager_release(wide);
    }
    tf_eager *xs[] = {z, r, i, an, c, back, ab};
    for (size_t k = 0; k < sizeof xs / sizeof xs[0]; k++)
        tf_eager_release(xs[k]);
    tft_env_end(&e);
}

/* What complex values do not define: a typed error naming op and dtype, no result. */
static void test_refusals(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    int64_t two[1] = {2};
    const double zv[4] = {3.0, 4.0, -1.0, 0.0};
    tf_eager *z = tft_eager(e.rt, TF_C128, 1, 1, two, zv, 2), *o = NULL;
    tf_eager *x = tft_f64(e.rt, 1, 1, two, zv, 2);
    TFT_EXPECT_FAIL(tf_session_maximum(e.s, z, z, &o), TF_ERR_DTYPE_MISMATCH, "x", o);
    assert_non_null(strstr(tf_error_message(), "maximum"));
    assert_non_null(strstr(tf_error_message(), "c128"));
    TFT_EXPECT_FAIL(tf_session_minimum(e.s, z, z, &o), TF_ERR_DTYPE_MISMATCH, "x", o);
    TFT_EXPECT_FAIL(tf_session_rem(e.s, z, z, &o), TF_ERR_DTYPE_MISMATCH, "x", o);
    TFT_EXPECT_FAIL(tf_session_erf(e.s, z, &o), TF_ERR_DTYPE_MISMATCH, "x", o);
    assert_non_null(strstr(tf_error_message(), "erf"));
    TFT_EXPECT_FAIL(tf_session_expm1(e.s, z, &o), TF_ERR_DTYPE_MISMATCH, "x", o);
    TFT_EXPECT_FAIL(tf_session_log1p(e.s, z, &o), TF_ERR_DTYPE_MISMATCH, "x", o);
    TFT_EXPECT_FAIL(tf_session_sigmoid(e.s, z, &o), TF_ERR_DTYPE_MISMATCH, "x", o);
    TFT_EXPECT_FAIL(tf_session_compare(e.s, z, z, TF_COMPARE_LT, &o), TF_ERR_DTYPE_MISMATCH,
                    "direction", o);
    TFT_EXPECT_FAIL(tf_session_reduce_max(e.s, z, NULL, 0, &o), TF_ERR_DTYPE_MISMATCH, "x", o);
    TFT_EXPECT_FAIL(tf_session_reduce_min(e.s, z, NULL, 0, &o), TF_ERR_DTYPE_MISMATCH, "x", o);
    assert_non_null(strstr(tf_error_message(), "reduce_min"));
    TFT_EXPECT_FAIL(tf_session_conj(e.s, x, &o), TF_ERR_DTYPE_MISMATCH, "x", o);
    assert_non_null(strstr(tf_error_message(), "f64"));
    TFT_EXPECT_FAIL(tf_session_real(e.s, x, &o), TF_ERR_DTYPE_MISMATCH, "x", o);
    TFT_EXPECT_FAIL(tf_session_angle(e.s, x, &o), TF_ERR_DTYPE_MISMATCH, "x", o);
    TFT_EXPECT_FAIL(tf_session_complex(e.s, z, z, &o), TF_ERR_DTYPE_MISMATCH, "re", o);
    TFT_EXPECT_FAIL(tf_session_complex(e.s, x, z, &o), TF_ERR_DTYPE_MISMATCH, "im", o);
    tf_eager *n = NULL;
    TF_ASSERT_OK(tf_session_full(e.s, TF_I32, 1, two, 1.0, &n));
    TFT_EXPECT_FAIL(tf_session_add(e.s, n, z, &o), TF_ERR_DTYPE_MISMATCH, "y", o);
    tf_eager *bo = NULL; /* no promotion but real/complex: bool with f64 stays an error */
    TF_ASSERT_OK(tf_session_full(e.s, TF_BOOL, 1, two, 1.0, &bo));
    TFT_EXPECT_FAIL(tf_session_maximum(e.s, bo, x, &o), TF_ERR_DTYPE_MISMATCH, "y", o);
    TFT_EXPECT_FAIL(tf_session_add(e.s, x, bo, &o), TF_ERR_DTYPE_MISMATCH, "y", o);
    tf_eager_release(bo);
    TFT_EXPECT_FAIL(tf_session_softmax(e.s, z, 0, &o), TF_ERR_DTYPE_MISMATCH, "x", o);
    TFT_EXPECT_FAIL(tf_session_logsumexp(e.s, z, NULL, 0, &o), TF_ERR_DTYPE_MISMATCH, "x", o);
    TFT_EXPECT_FAIL(tf_session_clamp(e.s, z, z, z, &o), TF_ERR_DTYPE_MISMATCH, "direction", o);
    /* nothing recorded: z's gradient through none of them exists */
    tf_eager *g = NULL;
    TF_ASSERT_STATUS(tf_runtime_grad(e.rt, g_cpu, z, z, &g), TF_ERR_NON_SCALAR_GRAD);
    assert_null(g);
    tf_eager_release(n);
    tf_eager_release(z);
    tf_eager_release(x);
    tft_env_end(&e);
}

/* A variable of each complex dtype may require gradients; ints still may not. */
static void test_complex_variables(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    int64_t one[1] = {1};
    const float f[2] = {1.0f, 2.0f};
    tf_eager *z = tft_eager(e.rt, TF_C64, 1, 1, one, f, 1), *s = NULL, *l = NULL, *a = NULL;
    TF_ASSERT_OK(tf_session_abs(e.s, z, &a));
    TF_ASSERT_OK(tf_session_mul(e.s, a, a, &s));
    TF_ASSERT_OK(tf_session_reduce_sum(e.s, s, NULL, 0, &l));
    tf_eager *g = tft_grad(e.rt, l, z);
    assert_int_equal(tf_tensor_dtype(tf_eager_value(g)), TF_C64);
    float gv[2];
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(g), TF_C64, gv, 1));
    assert_true(fabsf(gv[0] - 2.0f) < 1e-5f && fabsf(gv[1] - 4.0f) < 1e-5f);
    tf_tensor *t = tft_host(TF_I32, 1, one, (const int32_t[]){1}, 1);
    tf_eager *v = TFT_SENTINEL;
    TF_ASSERT_STATUS(tf_runtime_variable_from(e.rt, t, &v), TF_ERR_DTYPE_MISMATCH);
    assert_ptr_equal(v, TFT_SENTINEL);
    tf_tensor_release(t);
    tf_eager *xs[] = {z, s, l, a, g};
    for (size_t k = 0; k < sizeof xs / sizeof xs[0]; k++)
        tf_eager_release(xs[k]);
    tft_env_end(&e);
}

/*
 * FUSED is f32/f64 only: with every op deferred that can be, no op with a
 * complex operand or result joins a batch (abs, real, imag and angle have
 * a real result), forward or backward; a real op after them does.
 */
static void test_complex_never_deferred(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    TF_ASSERT_OK(tf_session_set_defer(e.s, TF_DEFER_ALWAYS));
    int64_t three[1] = {3};
    const double zv[6] = {0.5, 1.0, -1.0, 2.0, 0.25, -0.75};
    tf_eager *z = tft_eager(e.rt, TF_C128, 1, 1, three, zv, 3);
    tf_eager *t[8] = {NULL};
    TF_ASSERT_OK(tf_session_exp(e.s, z, &t[0]));
    TF_ASSERT_OK(tf_session_abs(e.s, t[0], &t[1]));
    TF_ASSERT_OK(tf_session_imag(e.s, t[0], &t[2]));
    TF_ASSERT_OK(tf_session_complex(e.s, t[1], t[2], &t[3]));
    TF_ASSERT_OK(tf_session_mul(e.s, t[1], t[3], &t[4])); /* f64 * c128 */
    TF_ASSERT_OK(tf_session_angle(e.s, t[4], &t[5]));
    TF_ASSERT_OK(tf_session_reduce_sum(e.s, t[5], NULL, 0, &t[6]));
    tf_defer_stats st;
    TF_ASSERT_OK(tf_session_defer_stats(e.s, &st));
    assert_int_equal(st.ops_deferred, 0);
    tf_eager *g = tft_grad(e.rt, t[6], z);
    TF_ASSERT_OK(tf_session_defer_stats(e.s, &st));
    assert_int_equal(st.ops_deferred, 0);
    TF_ASSERT_OK(tf_session_sin(e.s, t[1], &t[7])); /* real: deferred */
    TF_ASSERT_OK(tf_session_defer_stats(e.s, &st));
    assert_int_equal(st.ops_deferred, 1);
    for (size_t k = 0; k < 8; k++)
        tf_eager_release(t[k]);
    tf_eager_release(g);
    tf_eager_release(z);
    tft_env_end(&e);
}

/* The rules of abs, angle and sign are 0 at z = 0 (docs/complex.md), where
   finite differences are not defined. */
static void test_zero_point(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    int64_t two[1] = {2};
    const double zv[4] = {0.0, 0.0, 3.0, 4.0};
    tf_eager *z = tft_eager(e.rt, TF_C128, 1, 1, two, zv, 2);
    tf_status (*const ops[3])(tf_session *, tf_eager *,
                              tf_eager **) = {tf_session_abs, tf_session_angle, tf_session_sign};
    for (int k = 0; k < 3; k++) {
        tf_eager *y = NULL, *r = NULL, *l = NULL;
        TF_ASSERT_OK(ops[k](e.s, z, &y));
        if (tf_dtype_is_complex(tf_tensor_dtype(tf_eager_value(y))))
            TF_ASSERT_OK(tf_session_real(e.s, y, &r));
        TF_ASSERT_OK(tf_session_reduce_sum(e.s, r ? r : y, NULL, 0, &l));
        tf_eager *g = tft_grad(e.rt, l, z);
        double got[4];
        tft_read_parts(tf_eager_value(g), got, 4);
        assert_true(got[0] == 0.0 && got[1] == 0.0);
        assert_true(isfinite(got[2]) && isfinite(got[3]) && (got[2] != 0.0 || got[3] != 0.0));
        tf_eager *t = NULL;
        tf_eager *v = tft_constant(e.rt, TF_C128, 1, two, (const double[]){1, 1, 1, 1}, 2);
        TF_ASSERT_OK(tf_runtime_jvp(e.rt, g_cpu, y, z, v, &t));
        const tf_tensor *tv = tf_eager_value(t);
        double tp[4];
        size_t np = tft_read_parts(tv, tp, 4);
        for (size_t q = 0; q < np / 2; q++)
            assert_true(tp[q] == 0.0); /* the first element's part(s) */
        tf_eager *xs[] = {y, r, l, g, t, v};
        for (size_t q = 0; q < sizeof xs / sizeof xs[0]; q++)
            tf_eager_release(xs[q]);
    }
    tf_eager_release(z);
    tft_env_end(&e);
}

/*
 * Backward into the grad slots (twice, the second replaying over recycled
 * buffers) gives tf_runtime_grad's complex gradient, with a variable used
 * many times (its cotangents summed) and a real variable meeting complex
 * ones (its cotangent real), under each deferral mode.
 */
static void test_backward_slots(void **state)
{
    (void)state;
    const tf_defer_mode modes[] = {TF_DEFER_OFF, TF_DEFER_AUTO, TF_DEFER_ALWAYS};
    for (size_t m = 0; m < 3; m++) {
        tft_env e = tft_env_begin();
        TF_ASSERT_OK(tf_session_set_defer(e.s, modes[m]));
        int64_t three[1] = {3};
        const double zv[6] = {0.5, 1.0, -1.0, 2.0, 0.25, -0.75}, xv[3] = {0.3, -0.2, 0.9};
        tf_eager *z = tft_eager(e.rt, TF_C128, 1, 1, three, zv, 3);
        tf_eager *x = tft_f64(e.rt, 1, 1, three, xv, 3);
        tf_eager *t[6] = {NULL}, *gz = NULL, *gx = NULL;
        TF_ASSERT_OK(tf_session_mul(e.s, z, z, &t[0]));
        TF_ASSERT_OK(tf_session_mul(e.s, t[0], x, &t[1])); /* z^2 x */
        TF_ASSERT_OK(tf_session_exp(e.s, z, &t[2]));
        TF_ASSERT_OK(tf_session_add(e.s, t[1], t[2], &t[3]));
        TF_ASSERT_OK(tf_session_abs(e.s, t[3], &t[4]));
        TF_ASSERT_OK(tf_session_reduce_sum(e.s, t[4], NULL, 0, &t[5]));
        TF_ASSERT_OK(tf_runtime_grad(e.rt, g_cpu, t[5], z, &gz));
        TF_ASSERT_OK(tf_runtime_grad(e.rt, g_cpu, t[5], x, &gx));
        double want_z[6], want_x[3];
        tft_read_parts(tf_eager_value(gz), want_z, 6);
        tft_read_parts(tf_eager_value(gx), want_x, 3);
        for (int round = 0; round < 2; round++) {
            TF_ASSERT_OK(tf_runtime_clear_grads(e.rt));
            TF_ASSERT_OK(tf_eager_backward(t[5], g_cpu));
            tf_tensor *sz = NULL, *sx = NULL;
            TF_ASSERT_OK(tf_eager_grad(z, &sz));
            TF_ASSERT_OK(tf_eager_grad(x, &sx));
            assert_int_equal(tf_tensor_dtype(sx), TF_F64);
            double got_z[6], got_x[3];
            tft_read_parts(sz, got_z, 6);
            tft_read_parts(sx, got_x, 3);
            for (int k = 0; k < 6; k++)
                assert_true(fabs(got_z[k] - want_z[k]) <= 1e-13 * fmax(1.0, fabs(want_z[k])));
            for (int k = 0; k < 3; k++)
                assert_true(fabs(got_x[k] - want_x[k]) <= 1e-13 * fmax(1.0, fabs(want_x[k])));
            tf_tensor_release(sz);
            tf_tensor_release(sx);
        }
        for (size_t k = 0; k < 6; k++)
            tf_eager_release(t[k]);
        tf_eager *xs[] = {z, x, gz, gx};
        for (size_t k = 0; k < 4; k++)
            tf_eager_release(xs[k]);
        tft_env_end(&e);
    }
}

/* L = sum(|exp(z) conj(z) + sin(z) / z|^2 + angle(z w)) in dtype dt, with its
   gradient and its tangent along v read back as c128 parts. */
static void c64_side(tf_dtype dt, const double *zv, const double *vv, double *grad, double *tan)
{
    tft_env e = tft_env_begin();
    int64_t three[1] = {3};
    tf_eager *z0 = tft_eager(e.rt, TF_C128, 1, 1, three, zv, 3), *zc = NULL, *z = NULL;
    TF_ASSERT_OK(tf_session_cast(e.s, z0, dt, &zc));
    TF_ASSERT_OK(tf_runtime_variable_from(e.rt, tf_eager_value(zc), &z));
    tf_eager_release(zc);
    tf_eager_release(z0);
    tf_eager *t[12] = {NULL};
    TF_ASSERT_OK(tf_session_exp(e.s, z, &t[0]));
    TF_ASSERT_OK(tf_session_conj(e.s, z, &t[1]));
    TF_ASSERT_OK(tf_session_mul(e.s, t[0], t[1], &t[2]));
    TF_ASSERT_OK(tf_session_sin(e.s, z, &t[3]));
    TF_ASSERT_OK(tf_session_div(e.s, t[3], z, &t[4]));
    TF_ASSERT_OK(tf_session_add(e.s, t[2], t[4], &t[5]));
    TF_ASSERT_OK(tf_session_abs(e.s, t[5], &t[6]));
    TF_ASSERT_OK(tf_session_mul(e.s, t[6], t[6], &t[7]));
    TF_ASSERT_OK(tf_session_mul(e.s, z, t[1], &t[8])); /* |z|^2 as complex */
    TF_ASSERT_OK(tf_session_add(e.s, t[8], t[0], &t[9]));
    TF_ASSERT_OK(tf_session_angle(e.s, t[9], &t[10]));
    TF_ASSERT_OK(tf_session_add(e.s, t[7], t[10], &t[11]));
    tf_eager *l = NULL, *g = NULL, *g2 = NULL, *tn = NULL, *tn2 = NULL, *v = NULL, *v2 = NULL;
    TF_ASSERT_OK(tf_session_reduce_sum(e.s, t[11], NULL, 0, &l));
    TF_ASSERT_OK(tf_runtime_grad(e.rt, g_cpu, l, z, &g));
    assert_int_equal(tf_tensor_dtype(tf_eager_value(g)), dt);
    v = tft_constant(e.rt, TF_C128, 1, three, vv, 3);
    TF_ASSERT_OK(tf_session_cast(e.s, v, dt, &v2));
    TF_ASSERT_OK(tf_runtime_jvp(e.rt, g_cpu, t[11], z, v2, &tn));
    TF_ASSERT_OK(tf_session_cast(e.s, g, TF_C128, &g2));
    TF_ASSERT_OK(tf_session_cast(e.s, tn, TF_F64, &tn2));
    tft_read_parts(tf_eager_value(g2), grad, 6);
    tft_read_parts(tf_eager_value(tn2), tan, 3);
    for (size_t k = 0; k < 12; k++)
        tf_eager_release(t[k]);
    tf_eager *xs[] = {z, l, g, g2, tn, tn2, v, v2};
    for (size_t k = 0; k < sizeof xs / sizeof xs[0]; k++)
        tf_eager_release(xs[k]);
    tft_env_end(&e);
}

/* c64 runs the same rules as c128 (FD-checked above) to f32 precision. */
static void test_c64_matches_c128(void **state)
{
    (void)state;
    const double zv[6] = {0.5, 1.0, -1.0, 0.5, 0.25, -0.75};
    const double vv[6] = {1.0, -0.5, 0.25, 1.0, -1.0, 0.75};
    double g64[6], g128[6], t64[3], t128[3];
    c64_side(TF_C64, zv, vv, g64, t64);
    c64_side(TF_C128, zv, vv, g128, t128);
    for (int k = 0; k < 6; k++)
        if (!(fabs(g64[k] - g128[k]) <= 1e-4 * fmax(1.0, fabs(g128[k]))))
            fail_msg("gradient part %d: c64 %.9g, c128 %.9g", k, g64[k], g128[k]);
    for (int k = 0; k < 3; k++)
        if (!(fabs(t64[k] - t128[k]) <= 1e-4 * fmax(1.0, fabs(t128[k]))))
            fail_msg("tangent %d: c64 %.9g, c128 %.9g", k, t64[k], t128[k]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_and_promotion),   cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_complex_variables),      cmocka_unit_test(test_worked_examples),
        cmocka_unit_test(test_complex_never_deferred), cmocka_unit_test(test_zero_point),
        cmocka_unit_test(test_backward_slots),         cmocka_unit_test(test_c64_matches_c128),
    };
    return cmocka_run_group_tests(tests, tft_cpu_setup, tft_cpu_teardown);
}
