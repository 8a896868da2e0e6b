/*
 * test_vulkan_complex.c - the arithmetic of the complex dtypes (c64, c128) on
 * the Vulkan engine against the CPU engine (glibc's <complex.h>, OpenBLAS
 * cgemm/zgemm): every complex UNARY and BINARY op on random operands in every
 * layout (dense, transposed, reversed, broadcast, stepped), on the special
 * values of C11 Annex G (zeros of both signs, infinities, NaN, the branch
 * cuts) with the sign of every zero and infinity checked, clog near |z| = 1
 * and ctanh at large |re| part by part (where a modulus-relative tolerance
 * would hide a cancellation), COMPARE EQ/NE, REDUCE SUM/PROD, DOT_GENERAL with
 * the conjugation flags on every GEMM tile and both matrix-vector paths, and
 * the refusals: what the ABI leaves out of complex (the host's error kinds,
 * as on the CPU engine) and c128 arithmetic on an engine without
 * shaderFloat64 (shader_float64=off: TF_ERR_UNSUPPORTED, the output
 * untouched), which still moves c128 and computes c64. The structural
 * primitives (FILL, COPY, PAD, CONCATENATE, GATHER, SCATTER, the dynamic
 * slices, SELECT, CONVERT) take complex in test_vulkan_prims.c's dtype lists.
 *
 * Tolerances (relative to the element's modulus unless said otherwise):
 * c64 1e-6 for + - * / and the parts, 2e-6 for the transcendental ops
 * (complex.glsl's own f32 series against glibc's), c128 1e-15 and 1e-14.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "vk_fixture.h"

#define CASES 6

static const tf_dtype k_cx[2] = {TF_C64, TF_C128};

static int c128_ok(void)
{
    tf_dtype d[2] = {TF_C128, TF_C128};
    return tf_engine_supports(vk_engine, TF_PRIM_UNARY, TF_UNARY_EXP, d, 2);
}

static tf_dtype part_of(tf_dtype d)
{
    return d == TF_C64 ? TF_F32 : TF_F64;
}

static size_t random_shape(tfr_rng *rng, int64_t *shape, int64_t max_extent)
{
    size_t rank = tfr_random_rank(rng, 4);
    tfr_random_shape(rng, rank, max_extent, 10, shape);
    return rank;
}

static vk_layout random_layout(tfr_rng *rng)
{
    return (vk_layout)tfr_rng_int(rng, 0, VK_LAYOUT_COUNT_ - 1);
}

/* The complex unary ops of the ABI; the four after SQUARE have a real result. */
static const uint32_t k_unary[] = {TF_UNARY_NEG,   TF_UNARY_CONJ,       TF_UNARY_SIGN,
                                   TF_UNARY_EXP,   TF_UNARY_LOG,        TF_UNARY_SIN,
                                   TF_UNARY_COS,   TF_UNARY_TANH,       TF_UNARY_SQRT,
                                   TF_UNARY_RSQRT, TF_UNARY_RECIPROCAL, TF_UNARY_SQUARE,
                                   TF_UNARY_ABS,   TF_UNARY_REAL,       TF_UNARY_IMAG,
                                   TF_UNARY_ANGLE};
#define N_UNARY (sizeof k_unary / sizeof k_unary[0])

static int to_part(uint32_t op)
{
    return op == TF_UNARY_ABS || op == TF_UNARY_REAL || op == TF_UNARY_IMAG ||
           op == TF_UNARY_ANGLE;
}

static int exact_op(uint32_t op)
{
    return op == TF_UNARY_NEG || op == TF_UNARY_CONJ || op == TF_UNARY_REAL ||
           op == TF_UNARY_IMAG;
}

static double rtol_of(tf_dtype dt, int transcendental)
{
    if (dt == TF_C64 || dt == TF_F32)
        return transcendental ? 2e-6 : 1e-6;
    return transcendental ? 1e-14 : 1e-15;
}

/* ---- special values -------------------------------------------------------------------- */

/* Parts of the special-value grid: signed zeros, infinities, NaN, branch-cut neighbours,
   large real parts (ctanh, cexp overflow) and ordinary values. */
static const double k_parts[] = {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-3, 25.0, -100.0, 1e4,
                                 INFINITY, -INFINITY, NAN};
#define N_PARTS (sizeof k_parts / sizeof k_parts[0])
/* In place of k_parts' 1e4 for + - * /: products and quotients that overflow (1e30 for
   c64, 1e300 for c128). sin and cos are reduced exactly only to |x| ~ 1e4 (complex.glsl,
   math64.glsl: no Payne-Hanek), so the transcendental ops keep 1e4. */
static double big_part(tf_dtype dt)
{
    return dt == TF_C64 ? 1e30 : 1e300;
}

/* Twice the smallest subnormal of the part dtype. */
static double denorm2(tf_dtype dt)
{
    return dt == TF_C64 ? 2.0 * FLT_TRUE_MIN : 2.0 * DBL_TRUE_MIN;
}

/* A dense rank-1 pair holding n complex values of dtype dt (re[i] + im[i] i). */
static void values_pair(vk_pair *p, tf_dtype dt, size_t n, const double *re, const double *im)
{
    tf_scalar *vals = tfr_vals_alloc(n);
    for (size_t i = 0; i < n; i++)
        vals[i] = tf_dtype_is_complex(dt) ? tfr_c(re[i], im[i]) : tfr_f(re[i]);
    int64_t shape[1] = {(int64_t)n};
    p->cpu = tfr_host(dt, 1, shape, vals);
    free(vals);
    TF_ASSERT_OK(tf_engine_upload(vk_engine, p->cpu, &p->vk));
}

/* The grid of every pair of parts (N_PARTS^2 values); a non-zero `big` in place of
   1e4. */
static size_t grid(double *re, double *im, double big)
{
    size_t n = 0;
    for (size_t a = 0; a < N_PARTS; a++) {
        for (size_t b = 0; b < N_PARTS; b++, n++) {
            re[n] = big != 0 && k_parts[a] == 1e4 ? big : k_parts[a];
            im[n] = big != 0 && k_parts[b] == 1e4 ? big : k_parts[b];
        }
    }
    return n;
}

/* Whether an operand of element e has an infinite or NaN part. */
static int nonfinite_at(size_t e, const double *xr, const double *xi, const double *yr,
                        const double *yi)
{
    return !isfinite(xr[e]) || !isfinite(xi[e]) ||
           (yr != NULL && (!isfinite(yr[e]) || !isfinite(yi[e])));
}

/*
 * Part by part: NaN where the CPU has NaN, the same infinity, the same zero (its sign
 * included, except where `free_zero` says C leaves it open: 1 (POW) where an operand part
 * is infinite or NaN, since exp(y log x)'s product can hold a NaN part and cexp(-inf + NaN
 * i) = +-0 +- 0i (glibc's signs follow the sign bit of x86's NaN); 2 (DIV, RECIPROCAL,
 * RSQRT) everywhere: Annex G's division and the libgcc one the CPU engine calls (Smith's,
 * for double) round to zeros of different signs, e.g. 0 / -i), else within rtol of the part
 * itself plus rtol_mod of the modulus. Fails naming the operands x (and y) of the element.
 */
static void expect_parts(const char *what, const tf_tensor *cpu_t, const tf_tensor *vk_t,
                         double rtol, double rtol_mod, int free_zero, const double *xr,
                         const double *xi, const double *yr, const double *yi)
{
    size_t n = tf_tensor_numel(cpu_t);
    int cx = tf_dtype_is_complex(tf_tensor_dtype(cpu_t));
    assert_int_equal(tf_tensor_dtype(cpu_t), tf_tensor_dtype(vk_t));
    double *want = vk_read(vk_cpu, cpu_t), *got = vk_read(vk_engine, vk_t);
    for (size_t i = 0; i < (cx ? 2 * n : n); i++) {
        double w = want[i], g = got[i];
        size_t e = cx ? i / 2 : i;
        double mag = cx ? hypot(want[2 * e], want[2 * e + 1]) : fabs(w);
        int ok;
        if (isnan(w))
            ok = isnan(g);
        else if (w == 0 && (free_zero == 2 || (free_zero && nonfinite_at(e, xr, xi, yr, yi))))
            ok = g == 0;
        else if (isinf(w) || w == 0)
            ok = g == w && !signbit(g) == !signbit(w);
        else /* (and an ulp of the subnormals: log1p(1e-40) in f32) */
            ok = fabs(g - w) <= rtol * fabs(w) + (isfinite(mag) ? rtol_mod * mag : 0) +
                                    (cx ? denorm2(tf_tensor_dtype(cpu_t)) : 0);
        if (!ok) {
            char y[96] = "";
            if (yr != NULL)
                snprintf(y, sizeof y, ", y = %g%+gi", yr[e], yi[e]);
            free(want);
            free(got);
            fail_msg("%s: x = %g%+gi%s: %s part: vulkan %.9g, cpu %.9g", what, xr[e],
                     xi ? xi[e] : 0.0, y, cx && i % 2 ? "imaginary" : "real", g, w);
        }
    }
    free(want);
    free(got);
    vk_assert_validation_clean();
}

static void run_both(const char *what, tf_prim prim, const void *params, size_t n_in,
                     vk_pair *in, vk_pair *out)
{
    tf_tensor *ci[3], *vi[3];
    for (size_t i = 0; i < n_in; i++) {
        ci[i] = in[i].cpu;
        vi[i] = in[i].vk;
    }
    tf_status st = tf_engine_execute(vk_cpu, prim, params, n_in, ci, 1, &out->cpu);
    if (st != TF_OK)
        fail_msg("%s: cpu -> %s: %s", what, tf_status_name(st), tf_error_message());
    st = tf_engine_execute(vk_engine, prim, params, n_in, vi, 1, &out->vk);
    if (st != TF_OK)
        fail_msg("%s: vulkan -> %s: %s", what, tf_status_name(st), tf_error_message());
}

/* Every unary op on the grid: Annex G's values at 0, infinities and NaN, the cuts. */
static void test_unary_special(void **state)
{
    (void)state;
    double re[N_PARTS * N_PARTS], im[N_PARTS * N_PARTS];
    size_t n = grid(re, im, 0);
    for (int t = 0; t < (c128_ok() ? 2 : 1); t++) {
        vk_pair x;
        values_pair(&x, k_cx[t], n, re, im);
        for (size_t o = 0; o < N_UNARY; o++) {
            uint32_t op = k_unary[o];
            tf_dtype od = to_part(op) ? part_of(k_cx[t]) : k_cx[t];
            int64_t shape[1] = {(int64_t)n};
            vk_pair out;
            vk_pair_output(&out, od, 1, shape);
            tf_unary_params p = {sizeof p, op};
            char what[64];
            snprintf(what, sizeof what, "UNARY %s %s (special values)",
                     tf_prim_op_name(TF_PRIM_UNARY, op), tf_dtype_name(k_cx[t]));
            run_both(what, TF_PRIM_UNARY, &p, 1, &x, &out);
            int quotient = op == TF_UNARY_RECIPROCAL || op == TF_UNARY_RSQRT;
            expect_parts(what, out.cpu, out.vk, 4 * rtol_of(k_cx[t], 1), rtol_of(k_cx[t], 1),
                         quotient ? 2 : 0, re, im, NULL, NULL);
            vk_pair_free(&out);
        }
        vk_pair_free(&x);
    }
}

/* Every binary op on every pair of grid values (C's * and / recover infinities); + - * /
   also with parts that overflow; POW with 7 in place of 1e4 (x^1e4 near the cut turns
   the phase by ~3e4 radians: no f32 engine keeps its digits). */
static void test_binary_special(void **state)
{
    (void)state;
    static const uint32_t ops[] = {TF_BINARY_ADD, TF_BINARY_SUB, TF_BINARY_MUL, TF_BINARY_DIV,
                                   TF_BINARY_POW};
    size_t g = N_PARTS * N_PARTS, n = g * g;
    double gre[N_PARTS * N_PARTS], gim[N_PARTS * N_PARTS];
    double *xr = malloc(n * sizeof *xr), *xi = malloc(n * sizeof *xi);
    double *yr = malloc(n * sizeof *yr), *yi = malloc(n * sizeof *yi);
    for (int t = 0; t < (c128_ok() ? 2 : 1); t++) {
        for (int v = 0; v < 3; v++) {
            grid(gre, gim, v == 0 ? 7.0 : v == 1 ? 0 : big_part(k_cx[t]));
            for (size_t a = 0; a < g; a++) {
                for (size_t b = 0; b < g; b++) {
                    xr[a * g + b] = gre[a];
                    xi[a * g + b] = gim[a];
                    yr[a * g + b] = gre[b];
                    yi[a * g + b] = gim[b];
                }
            }
            vk_pair in[2];
            values_pair(&in[0], k_cx[t], n, xr, xi);
            values_pair(&in[1], k_cx[t], n, yr, yi);
            for (size_t o = v == 0 ? 4 : 0; o < (v == 0 ? 5u : 4u); o++) {
                int64_t shape[1] = {(int64_t)n};
                vk_pair out;
                vk_pair_output(&out, k_cx[t], 1, shape);
                tf_binary_params p = {sizeof p, ops[o]};
                char what[64];
                snprintf(what, sizeof what, "BINARY %s %s (special values)",
                         tf_prim_op_name(TF_PRIM_BINARY, ops[o]), tf_dtype_name(k_cx[t]));
                run_both(what, TF_PRIM_BINARY, &p, 2, in, &out);
                /* pow: exp(y log x) magnifies the rounding of y log x by its size (to
                   ~300 here: -100 log(-1 + 0.001i)), on both engines */
                int tr = ops[o] == TF_BINARY_POW;
                expect_parts(what, out.cpu, out.vk, 4 * rtol_of(k_cx[t], tr),
                             (tr ? 100 : 1) * rtol_of(k_cx[t], tr),
                             ops[o] == TF_BINARY_DIV ? 2 : tr, xr, xi, yr, yi);
                vk_pair_free(&out);
            }
            vk_pair_free(&in[0]);
            vk_pair_free(&in[1]);
        }
    }
    free(xr);
    free(xi);
    free(yr);
    free(yi);
}

/*
 * Part by part where cancellation hides: log of z = (1 + d) e^(i theta) for tiny d (the
 * real part, log|z| ~ d, against a modulus ~ theta), tanh at large |x| (the imaginary
 * part, 4 sin y cos y e^(-2|x|)), sqrt and log just above and below the cut, exp and
 * cosh where e^x overflows but e^x cos y does not, sin and cos of tiny values.
 */
static void test_cancellation(void **state)
{
    (void)state;
    static const double ds[] = {1e-3, -1e-3, 1e-5, -1e-5, 3e-7, -3e-7, 1e-9};
    static const double thetas[] = {0.3, 1.1, 2.0, -0.7, -2.9, 3.1};
    double re[96], im[96];
    for (int t = 0; t < (c128_ok() ? 2 : 1); t++) {
        size_t n = 0;
        for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++) {
            for (size_t j = 0; j < sizeof thetas / sizeof thetas[0]; j++, n++) {
                re[n] = (1 + ds[i]) * cos(thetas[j]);
                im[n] = (1 + ds[i]) * sin(thetas[j]);
            }
        }
        static const double more[][2] = {{-1, 1e-20}, {-1, -1e-20}, {-4, 1e-7}, {-4, -1e-7},
                                         {12, 0.4},   {-15, 2.5},   {30, -1.2}, {40, 1e-3},
                                         {1e-4, 1e-5}, {1e-20, -3}, {0.6, 0.8}, {0.8, -0.6}};
        for (size_t i = 0; i < sizeof more / sizeof more[0]; i++, n++) {
            re[n] = more[i][0];
            im[n] = more[i][1];
        }
        vk_pair x;
        values_pair(&x, k_cx[t], n, re, im);
        static const uint32_t ops[] = {TF_UNARY_LOG, TF_UNARY_TANH, TF_UNARY_SQRT, TF_UNARY_EXP,
                                       TF_UNARY_SIN, TF_UNARY_COS,  TF_UNARY_ABS,  TF_UNARY_ANGLE};
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            tf_dtype od = to_part(ops[o]) ? part_of(k_cx[t]) : k_cx[t];
            int64_t shape[1] = {(int64_t)n};
            vk_pair out;
            vk_pair_output(&out, od, 1, shape);
            tf_unary_params p = {sizeof p, ops[o]};
            char what[64];
            snprintf(what, sizeof what, "UNARY %s %s (part by part)",
                     tf_prim_op_name(TF_PRIM_UNARY, ops[o]), tf_dtype_name(k_cx[t]));
            run_both(what, TF_PRIM_UNARY, &p, 1, &x, &out);
            /* c64: a few ulps of each part itself; c128 likewise */
            expect_parts(what, out.cpu, out.vk, k_cx[t] == TF_C64 ? 8e-7 : 4e-15, 0, 0, re, im,
                         NULL, NULL);
            vk_pair_free(&out);
        }
        vk_pair_free(&x);
    }
}

/* ---- random operands in every layout ------------------------------------------------------- */

static vk_gen unary_domain(uint32_t op)
{
    return op == TF_UNARY_EXP || op == TF_UNARY_SIN || op == TF_UNARY_COS || op == TF_UNARY_TANH
               ? (vk_gen){-6.0, 6.0}
               : (vk_gen){-3.0, 3.0};
}

static void test_unary(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 121);
    for (int t = 0; t < (c128_ok() ? 2 : 1); t++) {
        for (size_t o = 0; o < N_UNARY; o++) {
            uint32_t op = k_unary[o];
            tf_dtype od = to_part(op) ? part_of(k_cx[t]) : k_cx[t];
            for (int c = 0; c < CASES; c++) {
                int64_t shape[TF_MAX_RANK];
                size_t rank = random_shape(&rng, shape, 7);
                vk_pair in, out;
                vk_pair_make(&in, &rng, k_cx[t], rank, shape, random_layout(&rng),
                             unary_domain(op));
                vk_pair_output(&out, od, rank, shape);
                tf_unary_params p = {sizeof p, op};
                char what[64];
                snprintf(what, sizeof what, "UNARY %s %s", tf_prim_op_name(TF_PRIM_UNARY, op),
                         tf_dtype_name(k_cx[t]));
                double rtol = exact_op(op) ? 0 : rtol_of(k_cx[t], op != TF_UNARY_SQUARE);
                vk_run_compare(what, TF_PRIM_UNARY, &p, 1, &in, &out, rtol, 0);
                vk_pair_free(&in);
                vk_pair_free(&out);
            }
        }
    }
}

/* ADD, SUB, MUL, DIV, POW, and COMPLEX from two parts (broadcast and strided included). */
static void test_binary(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 122);
    static const uint32_t ops[] = {TF_BINARY_ADD, TF_BINARY_SUB, TF_BINARY_MUL, TF_BINARY_DIV,
                                   TF_BINARY_POW, TF_BINARY_COMPLEX};
    for (int t = 0; t < (c128_ok() ? 2 : 1); t++) {
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            int parts = ops[o] == TF_BINARY_COMPLEX;
            tf_dtype id = parts ? part_of(k_cx[t]) : k_cx[t];
            for (int c = 0; c < CASES; c++) {
                int64_t shape[TF_MAX_RANK];
                size_t rank = random_shape(&rng, shape, 7);
                vk_pair in[2], out;
                vk_pair_make(&in[0], &rng, id, rank, shape, random_layout(&rng),
                             (vk_gen){-3.0, 3.0});
                vk_pair_make(&in[1], &rng, id, rank, shape, random_layout(&rng),
                             ops[o] == TF_BINARY_POW ? (vk_gen){-1.5, 1.5} : (vk_gen){-3.0, 3.0});
                vk_pair_output(&out, k_cx[t], rank, shape);
                tf_binary_params p = {sizeof p, ops[o]};
                char what[64];
                snprintf(what, sizeof what, "BINARY %s %s", tf_prim_op_name(TF_PRIM_BINARY, ops[o]),
                         tf_dtype_name(k_cx[t]));
                double rtol = parts ? 0 : rtol_of(k_cx[t], ops[o] == TF_BINARY_POW);
                vk_run_compare(what, TF_PRIM_BINARY, &p, 2, in, &out, rtol, 0);
                vk_pair_free(&in[0]);
                vk_pair_free(&in[1]);
                vk_pair_free(&out);
            }
        }
    }
}

/* EQ and NE with parts equal, one part differing, and NaN in a part. */
static void test_compare(void **state)
{
    (void)state;
    static const double a_re[] = {1, 1, 1, NAN, 0.0, 2, -3, NAN};
    static const double a_im[] = {2, 2, 3, 0, -0.0, NAN, 0.5, NAN};
    static const double b_re[] = {1, 1.5, 1, NAN, -0.0, 2, -3, NAN};
    static const double b_im[] = {2, 2, 2, 0, 0.0, NAN, 0.5, NAN};
    for (int t = 0; t < 2; t++) {
        for (uint32_t op = TF_COMPARE_EQ; op <= TF_COMPARE_NE; op++) {
            vk_pair in[2], out;
            values_pair(&in[0], k_cx[t], 8, a_re, a_im);
            values_pair(&in[1], k_cx[t], 8, b_re, b_im);
            int64_t shape[1] = {8};
            vk_pair_output(&out, TF_BOOL, 1, shape);
            tf_compare_params p = {sizeof p, op};
            vk_run_compare("COMPARE complex", TF_PRIM_COMPARE, &p, 2, in, &out, 0, 0);
            vk_pair_free(&in[0]);
            vk_pair_free(&in[1]);
            vk_pair_free(&out);
        }
    }
}

static void test_reduce(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 123);
    for (int t = 0; t < (c128_ok() ? 2 : 1); t++) {
        for (uint32_t op = TF_REDUCE_SUM; op <= TF_REDUCE_PROD; op++) {
            for (int c = 0; c < 3 * CASES; c++) {
                int prod = op == TF_REDUCE_PROD;
                int64_t shape[TF_MAX_RANK], oshape[TF_MAX_RANK];
                /* long ones too (the workgroup-per-output path, subgroup shuffles of vec2
                   and dvec2): [up to 400, up to 6] or its transpose */
                size_t rank = random_shape(&rng, shape, 7);
                if (c % 3 == 0) {
                    int64_t long_axis = tfr_rng_int(&rng, 129, 400), other = tfr_rng_int(&rng, 1, 6);
                    rank = 2;
                    shape[c % 2] = long_axis;
                    shape[1 - c % 2] = other;
                }
                uint64_t mask = (uint64_t)tfr_rng_int(&rng, 0, (1 << rank) - 1);
                if (c % 3 == 0)
                    mask |= 1u << (c % 2); /* the long axis reduced */
                int64_t count = 1;
                for (size_t k = 0; k < rank; k++) {
                    oshape[k] = (mask >> k) & 1u ? 1 : shape[k];
                    count *= (mask >> k) & 1u ? shape[k] : 1;
                }
                vk_pair in, out;
                vk_pair_make(&in, &rng, k_cx[t], rank, shape, random_layout(&rng),
                             prod ? (vk_gen){-0.3, 0.3} : (vk_gen){-3.0, 3.0});
                if (prod) {
                    /* factors e^z: moduli e^Re z, so a product of n stays near e^(+-0.2 sqrt n)
                       instead of overflowing or vanishing */
                    vk_pair ez;
                    tf_unary_params ex = {sizeof ex, TF_UNARY_EXP};
                    vk_pair_output(&ez, k_cx[t], rank, shape);
                    vk_run_compare("EXP (factors)", TF_PRIM_UNARY, &ex, 1, &in, &ez,
                                   rtol_of(k_cx[t], 1), 0);
                    vk_pair_free(&in);
                    in = ez; /* the same factors on both engines: the CPU's, uploaded */
                    tf_tensor_release(in.vk);
                    TF_ASSERT_OK(tf_engine_upload(vk_engine, in.cpu, &in.vk));
                }
                vk_pair_output(&out, k_cx[t], rank, oshape);
                tf_reduce_params p = {sizeof p, op, mask};
                char what[64];
                snprintf(what, sizeof what, "REDUCE %s %s over %lld",
                         tf_prim_op_name(TF_PRIM_REDUCE, op), tf_dtype_name(k_cx[t]),
                         (long long)count);
                double eps = k_cx[t] == TF_C64 ? 1.2e-7 : 2.3e-16;
                /* sums: n ulps of the magnitudes summed (3 sqrt 2 each) */
                vk_run_compare(what, TF_PRIM_REDUCE, &p, 1, &in, &out, 8 * eps * (double)count,
                               prod ? 0 : 5.0 * eps * (double)count);
                vk_pair_free(&in);
                vk_pair_free(&out);
            }
        }
    }
}

/* ---- DOT_GENERAL ------------------------------------------------------------------------ */

/*
 * lhs [m, k] or [k, m], rhs [k, n] or [n, k] (a batch axis of b last when batched), in
 * random layouts, with the conjugation flags `conj`.
 */
static void run_zdot(tfr_rng *rng, tf_dtype dt, int64_t m, int64_t n, int64_t k, int64_t b,
                     uint32_t conj)
{
    int batched = b > 1, lt = tfr_rng_chance(rng, 50), rt = tfr_rng_chance(rng, 50);
    int64_t lsh[3] = {lt ? k : m, lt ? m : k, b}, rsh[3] = {rt ? n : k, rt ? k : n, b};
    int64_t osh[3] = {m, n, b};
    size_t rank = batched ? 3 : 2;
    tf_dot_general_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.n_contracting = 1;
    p.lhs_contracting[0] = lt ? 0 : 1;
    p.rhs_contracting[0] = rt ? 1 : 0;
    p.n_batch = batched ? 1 : 0;
    p.lhs_batch[0] = p.rhs_batch[0] = 2;
    p.conjugate = conj;
    vk_pair in[2], out;
    vk_pair_make(&in[0], rng, dt, rank, lsh, random_layout(rng), (vk_gen){-1.0, 1.0});
    vk_pair_make(&in[1], rng, dt, rank, rsh, random_layout(rng), (vk_gen){-1.0, 1.0});
    vk_pair_output(&out, dt, rank, osh);
    char what[112];
    snprintf(what, sizeof what, "DOT_GENERAL %s m=%lld n=%lld k=%lld b=%lld conj=%u",
             tf_dtype_name(dt), (long long)m, (long long)n, (long long)k, (long long)b, conj);
    double eps = dt == TF_C64 ? 1.2e-7 : 2.3e-16;
    vk_run_compare(what, TF_PRIM_DOT_GENERAL, &p, 2, in, &out, 4 * eps * (double)k,
                   8 * eps * (double)k);
    vk_pair_free(&in[0]);
    vk_pair_free(&in[1]);
    vk_pair_free(&out);
}

/* Every tile family (c64: 64x64, 32x32, 64x16, 16x64; c128: 32x32), both matrix-vector
   roles (whose flags the engine swaps), long dot products, batches, empty operands. */
static void test_dot_general(void **state)
{
    (void)state;
    static const int64_t shapes[][4] = {{1, 1, 5, 1},   {7, 1, 9, 1},    {1, 9, 7, 1},
                                        {1, 6, 300, 2}, {5, 1, 400, 1},  {70, 70, 20, 1},
                                        {100, 97, 17, 1}, {80, 10, 5, 2}, {10, 80, 5, 1},
                                        {0, 5, 3, 1},   {5, 5, 0, 1},    {33, 17, 40, 3}};
    tfr_rng rng;
    tfr_rng_seed(&rng, 124);
    for (int t = 0; t < (c128_ok() ? 2 : 1); t++) {
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            for (uint32_t conj = 0; conj < 4; conj++)
                run_zdot(&rng, k_cx[t], shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3],
                         conj);
        }
    }
}

/* ---- refusals ----------------------------------------------------------------------------- */

/* An output of dtype dt and `like`'s shape on both engines, filled with 7 + 2i. */
static void filled(vk_pair *p, tf_dtype dt, const tf_tensor *like)
{
    vk_pair_output(p, dt, tf_tensor_rank(like), tf_tensor_shape(like));
    tf_fill_params fp = {sizeof fp, 0, {7.0, 7}, 2.0};
    vk_run_compare("FILL", TF_PRIM_FILL, &fp, 0, NULL, p, 0, 0);
}

/* Fails unless prim fails on the Vulkan engine with `kind` (or, kind 0, the CPU engine's
   kind) and leaves the output as filled() made it. */
static void expect_refused(const char *what, tf_prim prim, const void *params, size_t n_in,
                           vk_pair *in, tf_dtype out_dt, tf_status kind)
{
    vk_pair out, before;
    filled(&out, out_dt, in[0].cpu);
    filled(&before, out_dt, in[0].cpu);
    tf_tensor *ci[3], *vi[3];
    for (size_t i = 0; i < n_in; i++) {
        ci[i] = in[i].cpu;
        vi[i] = in[i].vk;
    }
    tf_status want = kind;
    if (kind == TF_OK) {
        want = tf_engine_execute(vk_cpu, prim, params, n_in, ci, 1, &out.cpu);
        assert_int_not_equal(want, TF_OK);
    }
    tf_status got = tf_engine_execute(vk_engine, prim, params, n_in, vi, 1, &out.vk);
    if (got != want)
        fail_msg("%s: vulkan -> %s (%s), want %s", what, tf_status_name(got), tf_error_message(),
                 tf_status_name(want));
    vk_compare(what, before.cpu, out.vk, 0, 0); /* untouched */
    vk_pair_free(&out);
    vk_pair_free(&before);
}

/* What the ABI leaves out of complex: refused as on the CPU engine, nothing written. */
static void test_refusals(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 125);
    int64_t shape[1] = {5};
    for (int t = 0; t < 2; t++) {
        tf_dtype dt = k_cx[t];
        vk_pair in[2];
        vk_pair_make(&in[0], &rng, dt, 1, shape, VK_DENSE, (vk_gen){-2, 2});
        vk_pair_make(&in[1], &rng, dt, 1, shape, VK_DENSE, (vk_gen){-2, 2});
        tf_compare_params lt = {sizeof lt, TF_COMPARE_LT};
        expect_refused("COMPARE LT", TF_PRIM_COMPARE, &lt, 2, in, TF_BOOL, TF_OK);
        tf_reduce_params mx = {sizeof mx, TF_REDUCE_MAX, 1};
        vk_pair out1;
        vk_pair_output(&out1, dt, 1, (int64_t[1]){1});
        tf_tensor *vi[1] = {in[0].vk};
        assert_int_equal(tf_engine_execute(vk_engine, TF_PRIM_REDUCE, &mx, 1, vi, 1, &out1.vk),
                         tf_engine_execute(vk_cpu, TF_PRIM_REDUCE, &mx, 1, &in[0].cpu, 1,
                                           &out1.cpu));
        vk_pair_free(&out1);
        tf_unary_params em = {sizeof em, TF_UNARY_EXPM1};
        expect_refused("UNARY EXPM1", TF_PRIM_UNARY, &em, 1, in, dt, TF_OK);
        tf_unary_params ab = {sizeof ab, TF_UNARY_ABS}; /* a complex output for ABS */
        expect_refused("UNARY ABS to complex", TF_PRIM_UNARY, &ab, 1, in, dt, TF_OK);
        tf_binary_params bm = {sizeof bm, TF_BINARY_MAX};
        expect_refused("BINARY MAX", TF_PRIM_BINARY, &bm, 2, in, dt, TF_OK);
        tf_convert_params ck = {sizeof ck, 1};
        expect_refused("CONVERT checked to real", TF_PRIM_CONVERT, &ck, 1, in, part_of(dt),
                       TF_OK);
        vk_pair_free(&in[0]);
        vk_pair_free(&in[1]);
    }
}

/*
 * An engine without shaderFloat64 (shader_float64=off) computes c64 and moves c128, but
 * refuses c128 arithmetic with TF_ERR_UNSUPPORTED, writing nothing.
 */
static void test_no_float64(void **state)
{
    (void)state;
    tf_engine *saved = vk_fresh_begin("shader_float64", "off");
    tf_dtype z2[2] = {TF_C128, TF_C128}, c2[2] = {TF_C64, TF_C64}, d3[3] = {TF_C128, TF_C128,
                                                                         TF_C128};
    assert_false(tf_engine_supports(vk_engine, TF_PRIM_UNARY, TF_UNARY_EXP, z2, 2));
    assert_false(tf_engine_supports(vk_engine, TF_PRIM_DOT_GENERAL, 0, d3, 3));
    assert_true(tf_engine_supports(vk_engine, TF_PRIM_COPY, 0, z2, 2));
    assert_true(tf_engine_supports(vk_engine, TF_PRIM_UNARY, TF_UNARY_EXP, c2, 2));
    tfr_rng rng;
    tfr_rng_seed(&rng, 126);
    int64_t shape[2] = {3, 4};
    vk_pair in[2], out;
    vk_pair_make(&in[0], &rng, TF_C128, 2, shape, VK_TRANSPOSED, (vk_gen){-2, 2});
    vk_pair_make(&in[1], &rng, TF_C128, 2, shape, VK_REVERSED, (vk_gen){-2, 2});
    vk_pair_output(&out, TF_C128, 2, shape);
    vk_run_compare("COPY c128 without f64", TF_PRIM_COPY, NULL, 1, in, &out, 0, 0);
    vk_pair_free(&out);
    tf_unary_params ex = {sizeof ex, TF_UNARY_EXP};
    expect_refused("UNARY EXP c128 without f64", TF_PRIM_UNARY, &ex, 1, in, TF_C128,
                   TF_ERR_UNSUPPORTED);
    tf_binary_params mul = {sizeof mul, TF_BINARY_MUL};
    expect_refused("BINARY MUL c128 without f64", TF_PRIM_BINARY, &mul, 2, in, TF_C128,
                   TF_ERR_UNSUPPORTED);
    vk_pair_free(&in[0]);
    vk_pair_free(&in[1]);
    vk_pair c;
    vk_pair_make(&c, &rng, TF_C64, 2, shape, VK_STEPPED, (vk_gen){-2, 2});
    vk_pair_output(&out, TF_C64, 2, shape);
    vk_run_compare("UNARY EXP c64 without f64", TF_PRIM_UNARY, &ex, 1, &c, &out, 2e-6, 0);
    vk_pair_free(&out);
    vk_pair_free(&c);
    vk_fresh_end(saved);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unary_special), cmocka_unit_test(test_binary_special),
        cmocka_unit_test(test_cancellation),  cmocka_unit_test(test_unary),
        cmocka_unit_test(test_binary),        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_reduce),        cmocka_unit_test(test_dot_general),
        cmocka_unit_test(test_refusals),      cmocka_unit_test(test_no_float64),
    };
    return cmocka_run_group_tests_name("vulkan complex", tests, vk_group_setup,
                                       vk_group_teardown);
}
