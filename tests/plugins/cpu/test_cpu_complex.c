/*
 * test_cpu_complex.c - the complex dtypes (c64, c128) on the CPU engine, against
 * references written from engine_abi.h's "Complex dtypes" section with C's
 * <complex.h>: every UNARY and BINARY op, COMPARE, SELECT, CONVERT, REDUCE,
 * DOT_GENERAL with its conjugation flags (BLAS and transposed layouts, batches),
 * FILL and PAD with an imaginary part, the 16-byte moves (COPY, GATHER, SCATTER,
 * CONCATENATE), the branch cuts and special values, and the calls the host refuses
 * (with the output untouched). Each group runs on the serial and threaded engines.
 */
#include <complex.h>
#include <math.h>
#include <string.h>

#include "cpu_fixture.h"

typedef double _Complex zd;

#define PI 3.14159265358979323846

static const tf_dtype k_cx[2] = {TF_C64, TF_C128};

/* A host tensor of dtype dt (complex, or any real dtype read from the real parts). */
static tf_tensor *make(tf_dtype dt, size_t rank, const int64_t *shape, const zd *v, size_t n)
{
    unsigned char buf[16 * 64];
    assert_true(n <= 64);
    for (size_t i = 0; i < n; i++) {
        if (dt == TF_C64) {
            float p[2] = {(float)creal(v[i]), (float)cimag(v[i])};
            memcpy(buf + 8 * i, p, 8);
        } else if (dt == TF_C128) {
            double p[2] = {creal(v[i]), cimag(v[i])};
            memcpy(buf + 16 * i, p, 16);
        } else if (dt == TF_F32) {
            float f = (float)creal(v[i]);
            memcpy(buf + 4 * i, &f, 4);
        } else if (dt == TF_F64) {
            double f = creal(v[i]);
            memcpy(buf + 8 * i, &f, 8);
        } else {
            int32_t k = (int32_t)creal(v[i]);
            memcpy(buf + 4 * i, &k, 4);
        }
    }
    tf_tensor *t = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(dt, rank, shape, buf, n, &t));
    return t;
}

/* The n values of t as complex doubles (a real dtype gives im = 0; bool reads 0/1). */
static void read(const tf_tensor *t, zd *out, size_t n)
{
    tf_dtype dt = tf_tensor_dtype(t);
    unsigned char buf[16 * 64];
    assert_true(n <= 64);
    TF_ASSERT_OK(tf_tensor_copy_to_host(t, dt, buf, n));
    for (size_t i = 0; i < n; i++) {
        float f[2];
        double d[2];
        switch (dt) {
        case TF_C64: memcpy(f, buf + 8 * i, 8); out[i] = CMPLX(f[0], f[1]); break;
        case TF_C128: memcpy(d, buf + 16 * i, 16); out[i] = CMPLX(d[0], d[1]); break;
        case TF_F32: memcpy(f, buf + 4 * i, 4); out[i] = f[0]; break;
        case TF_F64: memcpy(d, buf + 8 * i, 8); out[i] = d[0]; break;
        case TF_BOOL: out[i] = buf[i]; break;
        default: fail_msg("read: %s", tf_dtype_name(dt));
        }
    }
}

static tf_tensor *empty(tf_dtype dt, size_t rank, const int64_t *shape)
{
    tf_tensor *t = NULL;
    TF_ASSERT_OK(tf_tensor_empty(cpu_engine, dt, rank, shape, &t));
    return t;
}

/* Same value: both NaN (in a part), or equal within a relative tolerance of the
   modulus, or (tol 0) bit-equal parts, signed zeros included. */
static int same(zd got, zd want, double tol)
{
    double gr = creal(got), gi = cimag(got), wr = creal(want), wi = cimag(want);
    if (isnan(wr) || isnan(wi))
        return isnan(gr) || isnan(gi);
    if (tol == 0)
        return gr == wr && gi == wi && signbit(gr) == signbit(wr) && signbit(gi) == signbit(wi);
    if (isinf(wr) || isinf(wi))
        return gr == wr && gi == wi;
    double m = cabs(want) + 1e-300;
    return fabs(gr - wr) <= tol * m + 1e-300 && fabs(gi - wi) <= tol * m + 1e-300;
}

static void expect(const char *what, tf_dtype dt, const zd *got, const zd *want, size_t n,
                   double tol)
{
    double t = tol < 0 ? (tf_dtype_real_of(dt) == TF_F32 ? 2e-6 : 1e-14) : tol;
    for (size_t i = 0; i < n; i++)
        if (!same(got[i], want[i], t))
            fail_msg("%s (%s) [%zu]: got %.17g%+.17gi, want %.17g%+.17gi", what,
                     tf_dtype_name(dt), i, creal(got[i]), cimag(got[i]), creal(want[i]),
                     cimag(want[i]));
}

/* A few values spread over the plane, one per quadrant and both axes. */
static const zd k_vals[8] = {CMPLX(0.7, -1.3),  CMPLX(-2.1, 0.4),   CMPLX(1.5, 2.5),
                             CMPLX(-0.3, -0.9), CMPLX(3.0, 0.0),    CMPLX(0.0, -1.7),
                             CMPLX(-1.2, 1e-3), CMPLX(0.25, 0.125)};

static zd ref_unary(uint32_t op, zd a)
{
    switch (op) {
    case TF_UNARY_NEG: return -a;
    case TF_UNARY_CONJ: return conj(a);
    case TF_UNARY_SIGN: return a == 0 ? 0 : a / cabs(a);
    case TF_UNARY_EXP: return cexp(a);
    case TF_UNARY_LOG: return clog(a);
    case TF_UNARY_SIN: return csin(a);
    case TF_UNARY_COS: return ccos(a);
    case TF_UNARY_TANH: return ctanh(a);
    case TF_UNARY_SQRT: return csqrt(a);
    case TF_UNARY_RSQRT: return 1.0 / csqrt(a);
    case TF_UNARY_RECIPROCAL: return 1.0 / a;
    case TF_UNARY_SQUARE: return a * a;
    case TF_UNARY_ABS: return cabs(a);
    case TF_UNARY_REAL: return creal(a);
    case TF_UNARY_IMAG: return cimag(a);
    case TF_UNARY_ANGLE: return carg(a);
    }
    fail_msg("ref_unary: op %u", op);
    return 0;
}

static int to_part(uint32_t op)
{
    return op == TF_UNARY_ABS || op == TF_UNARY_REAL || op == TF_UNARY_IMAG ||
           op == TF_UNARY_ANGLE;
}

static const uint32_t k_unary[] = {
    TF_UNARY_NEG,  TF_UNARY_CONJ,  TF_UNARY_SIGN,       TF_UNARY_EXP,    TF_UNARY_LOG,
    TF_UNARY_SIN,  TF_UNARY_COS,   TF_UNARY_TANH,       TF_UNARY_SQRT,   TF_UNARY_RSQRT,
    TF_UNARY_ABS,  TF_UNARY_REAL,  TF_UNARY_RECIPROCAL, TF_UNARY_SQUARE, TF_UNARY_IMAG,
    TF_UNARY_ANGLE};

/* out = op(x) over k_vals, for both complex dtypes; the others are not claimed. */
static void test_unary(void **state)
{
    (void)state;
    int64_t n = 8;
    for (int d = 0; d < 2; d++) {
        tf_dtype dt = k_cx[d];
        for (size_t k = 0; k < sizeof k_unary / sizeof k_unary[0]; k++) {
            uint32_t op = k_unary[k];
            tf_dtype od = to_part(op) ? tf_dtype_real_of(dt) : dt;
            tf_tensor *x = make(dt, 1, &n, k_vals, 8), *o = empty(od, 1, &n);
            tf_unary_params p = {sizeof p, op};
            TF_ASSERT_OK(tf_engine_execute(cpu_engine, TF_PRIM_UNARY, &p, 1, &x, 1, &o));
            zd got[8], want[8], xin[8];
            read(x, xin, 8); /* the values as the dtype holds them */
            for (int i = 0; i < 8; i++)
                want[i] = ref_unary(op, xin[i]);
            read(o, got, 8);
            expect(tf_prim_op_name(TF_PRIM_UNARY, op), dt, got, want, 8, -1);
            tf_tensor_release(x);
            tf_tensor_release(o);
        }
        for (uint32_t op = 0; op < TF_UNARY_COUNT_; op++) {
            int listed = 0;
            for (size_t k = 0; k < sizeof k_unary / sizeof k_unary[0]; k++)
                listed |= k_unary[k] == op;
            tf_dtype sig[2] = {dt, to_part(op) ? tf_dtype_real_of(dt) : dt};
            assert_int_equal(tf_engine_supports(cpu_engine, TF_PRIM_UNARY, op, sig, 2) != 0,
                             listed);
        }
    }
}

/* The branch cuts, zeros and infinities engine_abi.h states, bit for bit. */
static void test_special_values(void **state)
{
    (void)state;
    static const struct {
        uint32_t op;
        zd x, want;
    } cases[] = {
        {TF_UNARY_LOG, CMPLX(-1.0, 0.0), CMPLX(0.0, PI)},
        {TF_UNARY_LOG, CMPLX(-1.0, -0.0), CMPLX(0.0, -PI)},
        {TF_UNARY_LOG, CMPLX(0.0, 0.0), CMPLX(-INFINITY, 0.0)},
        {TF_UNARY_SQRT, CMPLX(-4.0, 0.0), CMPLX(0.0, 2.0)},
        {TF_UNARY_SQRT, CMPLX(-4.0, -0.0), CMPLX(0.0, -2.0)},
        {TF_UNARY_SQRT, CMPLX(0.0, 0.0), CMPLX(0.0, 0.0)},
        {TF_UNARY_ANGLE, CMPLX(-1.0, 0.0), PI},
        {TF_UNARY_ANGLE, CMPLX(-1.0, -0.0), -PI},
        {TF_UNARY_ANGLE, CMPLX(0.0, 0.0), 0.0},
        {TF_UNARY_ABS, CMPLX(3.0, -4.0), 5.0},
        {TF_UNARY_ABS, CMPLX(INFINITY, NAN), INFINITY},
        {TF_UNARY_SIGN, CMPLX(0.0, 0.0), CMPLX(0.0, 0.0)},
        {TF_UNARY_SIGN, CMPLX(INFINITY, 2.0), CMPLX(1.0, 0.0)},
        {TF_UNARY_SIGN, CMPLX(-3.0, 4.0), CMPLX(-0.6, 0.8)},
        {TF_UNARY_CONJ, CMPLX(1.0, 0.0), CMPLX(1.0, -0.0)},
    };
    int64_t one = 1;
    for (int d = 0; d < 2; d++)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            tf_dtype dt = k_cx[d], od = to_part(cases[c].op) ? tf_dtype_real_of(dt) : dt;
            tf_tensor *x = make(dt, 1, &one, &cases[c].x, 1), *o = empty(od, 1, &one);
            tf_unary_params p = {sizeof p, cases[c].op};
            TF_ASSERT_OK(tf_engine_execute(cpu_engine, TF_PRIM_UNARY, &p, 1, &x, 1, &o));
            zd got, want = cases[c].want;
            read(o, &got, 1);
            if (dt == TF_C64) { /* the value f32 holds */
                volatile float wr = (float)creal(want), wi = (float)cimag(want);
                want = CMPLX((double)wr, (double)wi);
            }
            double tol = cases[c].op == TF_UNARY_SIGN && c == 13 ? 1e-7 : 0;
            expect(tf_prim_op_name(TF_PRIM_UNARY, cases[c].op), dt, &got, &want, 1, tol);
            tf_tensor_release(x);
            tf_tensor_release(o);
        }
}

static zd ref_binary(uint32_t op, zd a, zd b)
{
    switch (op) {
    case TF_BINARY_ADD: return a + b;
    case TF_BINARY_SUB: return a - b;
    case TF_BINARY_MUL: return a * b;
    case TF_BINARY_DIV: return a / b;
    case TF_BINARY_POW: return b == 0 ? 1 : (a == 0 && creal(b) > 0) ? 0 : cexp(b * clog(a));
    }
    fail_msg("ref_binary: op %u", op);
    return 0;
}

/* The arithmetic ops, pow's zeros, COMPLEX from two parts, a broadcast operand. */
static void test_binary(void **state)
{
    (void)state;
    int64_t n = 8;
    zd ys[8];
    for (int i = 0; i < 8; i++)
        ys[i] = k_vals[(i + 3) % 8] * 0.5;
    ys[2] = 0; /* x^0 = 1 */
    for (int d = 0; d < 2; d++) {
        tf_dtype dt = k_cx[d];
        for (uint32_t op = TF_BINARY_ADD; op <= TF_BINARY_POW; op++) {
            tf_tensor *in[2] = {make(dt, 1, &n, k_vals, 8), make(dt, 1, &n, ys, 8)};
            tf_tensor *o = empty(dt, 1, &n);
            tf_binary_params p = {sizeof p, op};
            TF_ASSERT_OK(tf_engine_execute(cpu_engine, TF_PRIM_BINARY, &p, 2, in, 1, &o));
            zd got[8], want[8], a[8], b[8];
            read(in[0], a, 8);
            read(in[1], b, 8);
            for (int i = 0; i < 8; i++)
                want[i] = ref_binary(op, a[i], b[i]);
            read(o, got, 8);
            expect(tf_prim_op_name(TF_PRIM_BINARY, op), dt, got, want, 8,
                   dt == TF_C64 ? 1e-5 : 1e-13);
            tf_tensor_release(in[0]);
            tf_tensor_release(in[1]);
            tf_tensor_release(o);
        }
        /* 0^(1 + i) = 0; COMPLEX keeps both parts' bits, -0 included */
        int64_t one = 1;
        zd zero = 0, e = CMPLX(1.0, 1.0), got;
        tf_tensor *in[2] = {make(dt, 1, &one, &zero, 1), make(dt, 1, &one, &e, 1)};
        tf_tensor *o = empty(dt, 1, &one);
        tf_binary_params pw = {sizeof pw, TF_BINARY_POW};
        TF_ASSERT_OK(tf_engine_execute(cpu_engine, TF_PRIM_BINARY, &pw, 2, in, 1, &o));
        read(o, &got, 1);
        expect("pow(0, 1 + i)", dt, &got, &zero, 1, 0);
        tf_tensor_release(in[0]);
        tf_tensor_release(in[1]);
        tf_tensor_release(o);

        tf_dtype part = tf_dtype_real_of(dt);
        zd re[3] = {1.5, -0.0, 2.0}, im[3] = {-2.0, 3.0, -0.0}, want[3], out[3];
        int64_t three = 3;
        tf_tensor *parts[2] = {make(part, 1, &three, re, 3), make(part, 1, &three, im, 3)};
        tf_tensor *z = empty(dt, 1, &three);
        tf_binary_params cp = {sizeof cp, TF_BINARY_COMPLEX};
        TF_ASSERT_OK(tf_engine_execute(cpu_engine, TF_PRIM_BINARY, &cp, 2, parts, 1, &z));
        read(z, out, 3);
        for (int i = 0; i < 3; i++)
            want[i] = CMPLX(creal(re[i]), creal(im[i]));
        expect("complex", dt, out, want, 3, 0);
        tf_tensor_release(parts[0]);
        tf_tensor_release(parts[1]);
        tf_tensor_release(z);
    }
}

/* EQ and NE compare both parts (NaN unequal); SELECT picks whole elements. */
static void test_compare_select(void **state)
{
    (void)state;
    int64_t n = 4;
    zd a[4] = {CMPLX(1, 2), CMPLX(1, 2), CMPLX(NAN, 0), CMPLX(0.0, -0.0)};
    zd b[4] = {CMPLX(1, 2), CMPLX(1, -2), CMPLX(NAN, 0), CMPLX(-0.0, 0.0)};
    zd eq_want[4] = {1, 0, 0, 1}, ne_want[4] = {0, 1, 1, 0}, got[4];
    for (int d = 0; d < 2; d++) {
        tf_dtype dt = k_cx[d];
        tf_tensor *in[3] = {NULL, make(dt, 1, &n, a, 4), make(dt, 1, &n, b, 4)};
        for (uint32_t op = TF_COMPARE_EQ; op <= TF_COMPARE_NE; op++) {
            tf_tensor *o = empty(TF_BOOL, 1, &n);
            tf_compare_params p = {sizeof p, op};
            TF_ASSERT_OK(tf_engine_execute(cpu_engine, TF_PRIM_COMPARE, &p, 2, in + 1, 1, &o));
            read(o, got, 4);
            expect(tf_prim_op_name(TF_PRIM_COMPARE, op), dt, got,
                   op == TF_COMPARE_EQ ? eq_want : ne_want, 4, 0);
            if (op == TF_COMPARE_EQ)
                in[0] = o;
            else
                tf_tensor_release(o);
        }
        tf_tensor *o = empty(dt, 1, &n);
        TF_ASSERT_OK(tf_engine_execute(cpu_engine, TF_PRIM_SELECT, NULL, 3, in, 1, &o));
        read(o, got, 4);
        zd want[4] = {a[0], b[1], b[2], a[3]};
        expect("select", dt, got, want, 4, 0);
        for (int i = 0; i < 3; i++)
            tf_tensor_release(in[i]);
        tf_tensor_release(o);
    }
}

/* Real to complex gives x + 0i; complex to real takes the real part; to bool z != 0. */
static void test_convert(void **state)
{
    (void)state;
    int64_t n = 4;
    zd v[4] = {CMPLX(1.5, -2.0), CMPLX(0.0, 3.0), CMPLX(-7.25, 0.0), CMPLX(0.0, 0.0)};
    static const tf_dtype all[] = {TF_F32, TF_F64, TF_I32, TF_BOOL, TF_C64, TF_C128};
    for (int d = 0; d < 2; d++)
        for (size_t t = 0; t < sizeof all / sizeof all[0]; t++) {
            tf_dtype from = k_cx[d], to = all[t];
            tf_tensor *x = make(from, 1, &n, v, 4), *o = empty(to, 1, &n);
            tf_convert_params p = {sizeof p, 0};
            TF_ASSERT_OK(tf_engine_execute(cpu_engine, TF_PRIM_CONVERT, &p, 1, &x, 1, &o));
            zd got[4], want[4];
            for (int i = 0; i < 4; i++)
                want[i] = tf_dtype_is_complex(to) ? v[i]
                          : to == TF_BOOL         ? (zd)(v[i] != 0)
                          : to == TF_I32          ? (zd)trunc(creal(v[i]))
                                                  : (zd)creal(v[i]);
            if (to == TF_I32) { /* read as doubles through a cast back */
                int32_t k[4];
                TF_ASSERT_OK(tf_tensor_copy_to_host(o, TF_I32, k, 4));
                for (int i = 0; i < 4; i++)
                    got[i] = k[i];
            } else {
                read(o, got, 4);
            }
            expect("convert", to, got, want, 4, 0);
            tf_tensor_release(x);
            tf_tensor_release(o);
            /* and back: a real source becomes x + 0i */
            if (to == TF_I32 || to == TF_BOOL || tf_dtype_is_complex(to))
                continue;
            x = make(to, 1, &n, v, 4);
            o = empty(from, 1, &n);
            TF_ASSERT_OK(tf_engine_execute(cpu_engine, TF_PRIM_CONVERT, &p, 1, &x, 1, &o));
            read(o, got, 4);
            for (int i = 0; i < 4; i++)
                want[i] = CMPLX(creal(v[i]), 0.0);
            expect("convert to complex", from, got, want, 4, 0);
            tf_tensor_release(x);
            tf_tensor_release(o);
        }
}

/* Checked: c128 to c64 fails on a part f32 cannot hold; complex to real is refused. */
static void test_convert_checked(void **state)
{
    (void)state;
    int64_t n = 2;
    zd v[2] = {CMPLX(1.0, 2.0), CMPLX(3.0, 1e300)};
    tf_tensor *x = make(TF_C128, 1, &n, v, 2), *o = empty(TF_C64, 1, &n);
    tf_convert_params p = {sizeof p, 1};
    TF_ASSERT_STATUS(tf_engine_execute(cpu_engine, TF_PRIM_CONVERT, &p, 1, &x, 1, &o),
                     TF_ERR_OUT_OF_RANGE);
    assert_non_null(strstr(tf_error_cause(), "1.0000000000000001e+300"));
    tf_tensor *r = empty(TF_F64, 1, &n);
    double before[2] = {-7.0, -7.0}, after[2];
    tf_tensor *h = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, 1, &n, before, 2, &h));
    TF_ASSERT_OK(tf_engine_execute(cpu_engine, TF_PRIM_COPY, NULL, 1, &h, 1, &r));
    TF_ASSERT_STATUS(tf_engine_execute(cpu_engine, TF_PRIM_CONVERT, &p, 1, &x, 1, &r),
                     TF_ERR_DTYPE_MISMATCH);
    assert_non_null(strstr(tf_error_message(), "real part"));
    TF_ASSERT_OK(tf_tensor_copy_to_host(r, TF_F64, after, 2));
    assert_memory_equal(before, after, sizeof before); /* nothing written */
    tf_tensor_release(h);
    tf_tensor_release(r);
    tf_tensor_release(x);
    tf_tensor_release(o);
}

/* SUM and PROD over each axis of a 2 x 4 matrix; MAX and MIN are not claimed. */
static void test_reduce(void **state)
{
    (void)state;
    int64_t shape[2] = {2, 4};
    for (int d = 0; d < 2; d++) {
        tf_dtype dt = k_cx[d], sig[2] = {dt, dt};
        for (uint32_t op = TF_REDUCE_SUM; op <= TF_REDUCE_PROD; op++)
            for (uint64_t mask = 1; mask <= 3; mask++) {
                int64_t oshape[2] = {mask & 1 ? 1 : 2, mask & 2 ? 1 : 4};
                tf_tensor *x = make(dt, 2, shape, k_vals, 8), *o = empty(dt, 2, oshape);
                tf_reduce_params p = {sizeof p, op, mask};
                TF_ASSERT_OK(tf_engine_execute(cpu_engine, TF_PRIM_REDUCE, &p, 1, &x, 1, &o));
                zd in[8], want[8], got[8];
                read(x, in, 8);
                size_t m = (size_t)(oshape[0] * oshape[1]);
                for (size_t k = 0; k < m; k++)
                    want[k] = op == TF_REDUCE_SUM ? 0 : 1;
                for (int j = 0; j < 4; j++)
                    for (int i = 0; i < 2; i++) {
                        size_t k = (size_t)((mask & 1 ? 0 : i) + oshape[0] * (mask & 2 ? 0 : j));
                        want[k] = op == TF_REDUCE_SUM ? want[k] + in[i + 2 * j]
                                                      : want[k] * in[i + 2 * j];
                    }
                read(o, got, m);
                expect(tf_prim_op_name(TF_PRIM_REDUCE, op), dt, got, want, m, -1);
                tf_tensor_release(x);
                tf_tensor_release(o);
            }
        assert_false(tf_engine_supports(cpu_engine, TF_PRIM_REDUCE, TF_REDUCE_MAX, sig, 2));
        assert_false(tf_engine_supports(cpu_engine, TF_PRIM_REDUCE, TF_REDUCE_MIN, sig, 2));
    }
}

/* lhs [m, k] (or its transpose, [k, m], contracted on axis 0), rhs [k, n], with every
   combination of the conjugation flags, against the naive sum. */
static void test_dot_general(void **state)
{
    (void)state;
    enum { M = 3, K = 4, N = 2 };
    zd a[M * K], b[K * N];
    for (int i = 0; i < M * K; i++)
        a[i] = k_vals[i % 8] * (1.0 + 0.1 * i);
    for (int i = 0; i < K * N; i++)
        b[i] = conj(k_vals[(i + 5) % 8]) - 0.2 * i;
    for (int d = 0; d < 2; d++)
        for (int trans = 0; trans < 2; trans++)
            for (uint32_t cj = 0; cj < 4; cj++) {
                tf_dtype dt = k_cx[d];
                int64_t ash[2] = {trans ? K : M, trans ? M : K}, bsh[2] = {K, N}, osh[2] = {M, N};
                tf_tensor *in[2] = {make(dt, 2, ash, a, M * K), make(dt, 2, bsh, b, K * N)};
                tf_tensor *o = empty(dt, 2, osh);
                tf_dot_general_params p;
                memset(&p, 0, sizeof p);
                p.struct_size = sizeof p;
                p.n_contracting = 1;
                p.lhs_contracting[0] = trans ? 0 : 1;
                p.rhs_contracting[0] = 0;
                p.conjugate = cj;
                TF_ASSERT_OK(tf_engine_execute(cpu_engine, TF_PRIM_DOT_GENERAL, &p, 2, in, 1, &o));
                zd av[M * K], bv[K * N], want[M * N], got[M * N];
                read(in[0], av, M * K);
                read(in[1], bv, K * N);
                for (int i = 0; i < M; i++)
                    for (int j = 0; j < N; j++) {
                        zd s = 0;
                        for (int k = 0; k < K; k++) {
                            zd x = trans ? av[k + K * i] : av[i + M * k], y = bv[k + K * j];
                            s += (cj & TF_DOT_CONJ_LHS ? conj(x) : x) *
                                 (cj & TF_DOT_CONJ_RHS ? conj(y) : y);
                        }
                        want[i + M * j] = s;
                    }
                read(o, got, M * N);
                expect("dot_general", dt, got, want, M * N, dt == TF_C64 ? 1e-5 : 1e-13);
                tf_tensor_release(in[0]);
                tf_tensor_release(in[1]);
                tf_tensor_release(o);
            }
}

/* FILL and PAD take the imaginary part from `imag`; 16-byte COPY, GATHER, SCATTER add,
   CONCATENATE move whole elements. */
static void test_moves(void **state)
{
    (void)state;
    int64_t n = 4, two = 2, six = 6;
    for (int d = 0; d < 2; d++) {
        tf_dtype dt = k_cx[d];
        zd got[8], want[8];
        tf_tensor *o = empty(dt, 1, &n);
        tf_fill_params fp = {sizeof fp, 0, {1.5, 0}, -2.25};
        TF_ASSERT_OK(tf_engine_execute(cpu_engine, TF_PRIM_FILL, &fp, 0, NULL, 1, &o));
        read(o, got, 4);
        for (int i = 0; i < 4; i++)
            want[i] = CMPLX(1.5, -2.25);
        expect("fill", dt, got, want, 4, 0);
        tf_tensor_release(o);

        tf_tensor *x = make(dt, 1, &two, k_vals, 2), *pd = empty(dt, 1, &n);
        tf_pad_params pp;
        memset(&pp, 0, sizeof pp);
        pp.struct_size = sizeof pp;
        pp.value.f = -1.0;
        pp.imag = 0.5;
        pp.low[0] = 1;
        TF_ASSERT_OK(tf_engine_execute(cpu_engine, TF_PRIM_PAD, &pp, 1, &x, 1, &pd));
        read(pd, got, 4);
        zd xv[2];
        read(x, xv, 2);
        zd pw[4] = {CMPLX(-1, 0.5), xv[0], xv[1], CMPLX(-1, 0.5)};
        expect("pad", dt, got, pw, 4, 0);
        tf_tensor_release(pd);

        /* concatenate [x, x, x] and gather it back reversed */
        tf_tensor *parts[3] = {x, x, x}, *cat = empty(dt, 1, &six);
        tf_concatenate_params cp = {sizeof cp, 0};
        TF_ASSERT_OK(tf_engine_execute(cpu_engine, TF_PRIM_CONCATENATE, &cp, 3, parts, 1, &cat));
        int32_t idx[6] = {5, 4, 3, 2, 1, 0};
        tf_tensor *ih = NULL, *g = empty(dt, 1, &six);
        TF_ASSERT_OK(tf_tensor_from_host(TF_I32, 1, &six, idx, 6, &ih));
        tf_tensor *gin[2] = {cat, ih};
        tf_gather_params gp = {sizeof gp, 0, TF_GATHER_INDEX_SELECT, 0};
        TF_ASSERT_OK(tf_engine_execute(cpu_engine, TF_PRIM_GATHER, &gp, 2, gin, 1, &g));
        read(g, got, 6);
        for (int i = 0; i < 6; i++)
            want[i] = xv[(5 - i) % 2];
        expect("concatenate + gather", dt, got, want, 6, 0);

        /* scatter-add the six into two slots: duplicates add up */
        int32_t to[6] = {0, 1, 0, 1, 0, 0};
        tf_tensor *th = NULL, *base = make(dt, 1, &two, k_vals + 4, 2), *s = empty(dt, 1, &two);
        TF_ASSERT_OK(tf_tensor_from_host(TF_I32, 1, &six, to, 6, &th));
        tf_tensor *sin_[3] = {base, th, g};
        tf_gather_params sp = {sizeof sp, 0, TF_GATHER_INDEX_SELECT, TF_SCATTER_ADD};
        TF_ASSERT_OK(tf_engine_execute(cpu_engine, TF_PRIM_SCATTER, &sp, 3, sin_, 1, &s));
        zd bv[2];
        read(base, bv, 2);
        zd sw[2] = {bv[0], bv[1]};
        for (int i = 0; i < 6; i++)
            sw[to[i]] += want[i];
        read(s, got, 2);
        expect("scatter add", dt, got, sw, 2, dt == TF_C64 ? 1e-6 : 1e-15);
        tf_tensor_release(th);
        tf_tensor_release(base);
        tf_tensor_release(s);
        tf_tensor_release(ih);
        tf_tensor_release(g);
        tf_tensor_release(cat);
        tf_tensor_release(x);
    }
}

/* A transposed 16-byte copy large enough for the tiled path. */
static void test_transposed_copy(void **state)
{
    (void)state;
    enum { R = 40, C = 48 };
    static double src[2 * R * C];
    for (int i = 0; i < 2 * R * C; i++)
        src[i] = 0.5 * i - 7;
    int64_t shape[2] = {R, C};
    tf_tensor *h = NULL, *t = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_C128, 2, shape, src, R * C, &h));
    TF_ASSERT_OK(tf_tensor_transpose(h, (const int[]){1, 0}, &t));
    int64_t tshape[2] = {C, R};
    tf_tensor *o = empty(TF_C128, 2, tshape);
    TF_ASSERT_OK(tf_engine_execute(cpu_engine, TF_PRIM_COPY, NULL, 1, &t, 1, &o));
    static double back[2 * R * C];
    TF_ASSERT_OK(tf_tensor_copy_to_host(o, TF_C128, back, R * C));
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) {
            const double *want = src + 2 * (i + R * j), *got = back + 2 * (j + C * i);
            if (want[0] != got[0] || want[1] != got[1])
                fail_msg("copy: element (%d, %d) differs", j, i);
        }
    tf_tensor_release(o);
    tf_tensor_release(t);
    tf_tensor_release(h);
}

/* Calls the host refuses for complex operands, each naming the op and the dtype, with
   the output left as it was. */
static void test_refusals(void **state)
{
    (void)state;
    int64_t n = 2;
    zd v[2] = {CMPLX(1, 2), CMPLX(3, 4)}, before[2] = {CMPLX(-9, -9), CMPLX(-9, -9)}, after[2];
    tf_tensor *x = make(TF_C128, 1, &n, v, 2);
    tf_tensor *in2[2] = {x, x};
    tf_compare_params lt = {sizeof lt, TF_COMPARE_LT};
    tf_tensor *b = empty(TF_BOOL, 1, &n);
    TF_ASSERT_STATUS(tf_engine_execute(cpu_engine, TF_PRIM_COMPARE, &lt, 2, in2, 1, &b),
                     TF_ERR_DTYPE_MISMATCH);
    assert_non_null(strstr(tf_error_message(), "lt is not defined for c128"));
    tf_tensor_release(b);

    struct {
        tf_prim prim;
        const void *params;
        size_t n_in;
        tf_dtype out;
        const char *text;
        tf_status st;
    } cases[] = {
        {TF_PRIM_UNARY, &(tf_unary_params){sizeof(tf_unary_params), TF_UNARY_ABS}, 1, TF_C128,
         "outputs[0] is c128, expected f64", TF_ERR_DTYPE_MISMATCH},
        {TF_PRIM_UNARY, &(tf_unary_params){sizeof(tf_unary_params), TF_UNARY_ERF}, 1, TF_C128,
         "erf is not defined for c128", TF_ERR_DTYPE_MISMATCH},
        {TF_PRIM_BINARY, &(tf_binary_params){sizeof(tf_binary_params), TF_BINARY_MAX}, 2,
         TF_C128, "max is not defined for c128", TF_ERR_DTYPE_MISMATCH},
        {TF_PRIM_BINARY, &(tf_binary_params){sizeof(tf_binary_params), TF_BINARY_COMPLEX}, 2,
         TF_C128, "complex is not defined for c128", TF_ERR_DTYPE_MISMATCH},
        {TF_PRIM_REDUCE, &(tf_reduce_params){sizeof(tf_reduce_params), TF_REDUCE_MAX, 0}, 1,
         TF_C128, "max is not defined for c128", TF_ERR_DTYPE_MISMATCH},
        {TF_PRIM_IOTA, &(tf_iota_params){sizeof(tf_iota_params), 0}, 0, TF_C128,
         "iota does not produce c128", TF_ERR_DTYPE_MISMATCH},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tf_tensor *o = make(cases[c].out, 1, &n, before, 2);
        TF_ASSERT_STATUS(
            tf_engine_execute(cpu_engine, cases[c].prim, cases[c].params, cases[c].n_in, in2, 1, &o),
            cases[c].st);
        if (!strstr(tf_error_message(), cases[c].text))
            fail_msg("case %zu: '%s' lacks '%s'", c, tf_error_message(), cases[c].text);
        read(o, after, 2);
        expect("untouched", cases[c].out, after, before, 2, 0);
        tf_tensor_release(o);
    }
    /* the conjugation flags are for complex operands only, and only the two bits */
    int64_t sq[2] = {2, 2};
    double r[4] = {1, 2, 3, 4};
    tf_tensor *rh = NULL, *ro = empty(TF_F64, 2, sq);
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, 2, sq, r, 4, &rh));
    tf_tensor *rin[2] = {rh, rh};
    tf_dot_general_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.n_contracting = 1;
    p.lhs_contracting[0] = 1;
    p.conjugate = TF_DOT_CONJ_LHS;
    TF_ASSERT_STATUS(tf_engine_execute(cpu_engine, TF_PRIM_DOT_GENERAL, &p, 2, rin, 1, &ro),
                     TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "conjugate");
    tf_tensor_release(rh);
    tf_tensor_release(ro);
    tf_tensor_release(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unary),           cmocka_unit_test(test_special_values),
        cmocka_unit_test(test_binary),          cmocka_unit_test(test_compare_select),
        cmocka_unit_test(test_convert),         cmocka_unit_test(test_convert_checked),
        cmocka_unit_test(test_reduce),          cmocka_unit_test(test_dot_general),
        cmocka_unit_test(test_moves),           cmocka_unit_test(test_transposed_copy),
        cmocka_unit_test(test_refusals),
    };
    return CPU_RUN_GROUPS("cpu complex", tests);
}
