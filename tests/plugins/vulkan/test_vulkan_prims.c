/*
 * test_vulkan_prims.c - every primitive the Vulkan engine claims, on random
 * shapes (rank 0 to 4, zero extents) and input layouts (dense, transposed,
 * reversed, broadcast, stepped), against the CPU reference engine, with the
 * Khronos validation layer on and any message of it a failure. test_dot_tiles,
 * test_dot_big and test_vec4_elementwise choose shapes, layouts and offsets
 * that reach every GEMM tile shape and both the vector and the element path
 * of the dense elementwise kernels, and check in the engine's log that each
 * ran.
 *
 * Tolerances: f32 arithmetic is compared at 1e-6 relative, f64 at 1e-15;
 * f64 transcendental ops (the engine's own series, math64.glsl) at 1e-13. Transcendental
 * ops get 2e-5 relative plus 1e-6 absolute: the Vulkan engine evaluates
 * them with GLSL built-ins (and its own erf/expm1/log1p), which differ from
 * libm by a few ulps, and results near zero (sin of a multiple of pi, tanh
 * of tiny values) need an absolute floor. Sums and products differ by the
 * summation order (a tree on the device, sequential on the CPU), bounded by
 * about n ulps of the magnitudes involved, so their absolute tolerance
 * scales with the reduced count.
 */
#include <math.h>

#include "vk_fixture.h"

#define CASES 12

static const vk_gen sym = {-3.0, 3.0};

/* The dtypes every structural primitive moves: the real ones and the complex ones (c128
   as 16-byte words, with or without shaderFloat64). */
static const tf_dtype k_all[7] = {TF_F32, TF_F64, TF_I32, TF_I64, TF_BOOL, TF_C64, TF_C128};

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

static int f64_ok(void)
{
    tf_dtype d[2] = {TF_F64, TF_F64};
    return tf_engine_supports(vk_engine, TF_PRIM_UNARY, TF_UNARY_NEG, d, 2);
}

/* ---- FILL, IOTA, COPY -------------------------------------------------------------- */

static void test_fill_iota(void **state)
{
    (void)state;
    const tf_dtype *dts = k_all;
    tfr_rng rng;
    tfr_rng_seed(&rng, 11);
    for (int c = 0; c < CASES; c++) {
        for (size_t t = 0; t < 7; t++) {
            int64_t shape[TF_MAX_RANK];
            size_t rank = random_shape(&rng, shape, 6);
            tf_fill_params fp = {sizeof fp, 0, {-2.5, -7}, 3.25}; /* imag: complex only */
            if (dts[t] == TF_BOOL)
                fp.value.i = 1;
            vk_pair out;
            vk_pair_output(&out, dts[t], rank, shape);
            vk_run_compare("FILL", TF_PRIM_FILL, &fp, 0, NULL, &out, 0, 0);
            vk_pair_free(&out);
            if (dts[t] == TF_BOOL || tf_dtype_is_complex(dts[t]) || rank == 0)
                continue;
            tf_iota_params ip = {sizeof ip, (uint32_t)tfr_rng_int(&rng, 0, (int64_t)rank - 1)};
            vk_pair_output(&out, dts[t], rank, shape);
            vk_run_compare("IOTA", TF_PRIM_IOTA, &ip, 0, NULL, &out, 0, 0);
            vk_pair_free(&out);
        }
    }
}

/* FILL and COPY into a reversed, stepped view of a larger output. */
static void test_strided_outputs(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 12);
    for (int c = 0; c < CASES; c++) {
        int64_t shape[TF_MAX_RANK], root_shape[TF_MAX_RANK], start[TF_MAX_RANK], limit[TF_MAX_RANK],
            step[TF_MAX_RANK];
        int axes[TF_MAX_RANK];
        size_t rank = random_shape(&rng, shape, 5);
        for (size_t k = 0; k < rank; k++) {
            root_shape[k] = 2 * shape[k] + 1;
            start[k] = 1;
            limit[k] = 2 * shape[k] + 1;
            step[k] = 2;
            axes[k] = (int)k;
        }
        vk_pair root, view;
        vk_pair_output(&root, TF_F32, rank, root_shape);
        tf_fill_params zero = {sizeof zero, 0, {0.0, 0}, 0};
        vk_run_compare("FILL root", TF_PRIM_FILL, &zero, 0, NULL, &root, 0, 0);
        tf_tensor *sliced[2], *views[2] = {NULL, NULL};
        tf_tensor *roots[2] = {root.cpu, root.vk};
        for (int s = 0; s < 2; s++) {
            TF_ASSERT_OK(tf_tensor_slice(roots[s], start, limit, step, &sliced[s]));
            TF_ASSERT_OK(tf_tensor_reverse(sliced[s], rank, axes, &views[s]));
            tf_tensor_release(sliced[s]);
        }
        view.cpu = views[0];
        view.vk = views[1];
        vk_pair in;
        vk_pair_make(&in, &rng, TF_F32, rank, shape, random_layout(&rng), sym);
        tf_tensor *ci[1] = {in.cpu}, *vi[1] = {in.vk};
        TF_ASSERT_OK(tf_engine_execute(vk_cpu, TF_PRIM_COPY, NULL, 1, ci, 1, &view.cpu));
        TF_ASSERT_OK(tf_engine_execute(vk_engine, TF_PRIM_COPY, NULL, 1, vi, 1, &view.vk));
        vk_compare("COPY into a strided view", root.cpu, root.vk, 0, 0);
        vk_pair_free(&in);
        vk_pair_free(&view);
        vk_pair_free(&root);
    }
}

static void test_copy(void **state)
{
    (void)state;
    const tf_dtype *dts = k_all;
    tfr_rng rng;
    tfr_rng_seed(&rng, 13);
    for (int c = 0; c < CASES; c++) {
        for (size_t t = 0; t < 7; t++) {
            int64_t shape[TF_MAX_RANK];
            size_t rank = random_shape(&rng, shape, 6);
            vk_pair in, out;
            vk_pair_make(&in, &rng, dts[t], rank, shape, random_layout(&rng), (vk_gen){-1e3, 1e3});
            vk_pair_output(&out, dts[t], rank, shape);
            vk_run_compare("COPY", TF_PRIM_COPY, NULL, 1, &in, &out, 0, 0);
            vk_pair_free(&in);
            vk_pair_free(&out);
        }
    }
}

/* PAD with negative, zero and positive low/high and interior padding; all dtypes. */
static void test_pad(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 14);
    for (int c = 0; c < 3 * CASES; c++) {
        tf_dtype dt = k_all[c % 7];
        int64_t shape[TF_MAX_RANK], oshape[TF_MAX_RANK];
        size_t rank = random_shape(&rng, shape, 6);
        tf_pad_params p;
        memset(&p, 0, sizeof p);
        p.struct_size = sizeof p;
        p.value = dt == TF_BOOL ? tfr_i(1) : (tfr_f(-9.5));
        p.value.i = dt == TF_BOOL ? 1 : -9;
        p.imag = 0.75; /* complex only */
        for (size_t k = 0; k < rank; k++) {
            p.low[k] = tfr_rng_int(&rng, -3, 3);
            p.interior[k] = tfr_rng_int(&rng, 0, 2);
            int64_t high = tfr_rng_int(&rng, -3, 3);
            int64_t core = shape[k] > 0 ? shape[k] + (shape[k] - 1) * p.interior[k] : 0;
            oshape[k] = p.low[k] + core + high;
            if (oshape[k] < 0)
                oshape[k] = 0;
        }
        vk_pair in, out;
        vk_pair_make(&in, &rng, dt, rank, shape, random_layout(&rng), (vk_gen){-50, 50});
        vk_pair_output(&out, dt, rank, oshape);
        vk_run_compare("PAD", TF_PRIM_PAD, &p, 1, &in, &out, 0, 0);
        vk_pair_free(&in);
        vk_pair_free(&out);
    }
}

static void test_concatenate(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 15);
    for (int c = 0; c < 3 * CASES; c++) {
        tf_dtype dt = k_all[c % 7];
        int64_t shape[TF_MAX_RANK];
        size_t rank = random_shape(&rng, shape, 5);
        if (rank == 0)
            continue;
        tf_concatenate_params p = {sizeof p, (uint32_t)tfr_rng_int(&rng, 0, (int64_t)rank - 1)};
        size_t n = (size_t)tfr_rng_int(&rng, 1, 3);
        vk_pair in[3], out;
        int64_t oshape[TF_MAX_RANK];
        memcpy(oshape, shape, sizeof oshape);
        oshape[p.axis] = 0;
        for (size_t i = 0; i < n; i++) {
            int64_t s[TF_MAX_RANK];
            memcpy(s, shape, sizeof s);
            s[p.axis] = tfr_rng_int(&rng, 0, 4);
            oshape[p.axis] += s[p.axis];
            vk_pair_make(&in[i], &rng, dt, rank, s, random_layout(&rng), (vk_gen){-50, 50});
        }
        vk_pair_output(&out, dt, rank, oshape);
        vk_run_compare("CONCATENATE", TF_PRIM_CONCATENATE, &p, n, in, &out, 0, 0);
        for (size_t i = 0; i < n; i++)
            vk_pair_free(&in[i]);
        vk_pair_free(&out);
    }
}

/* Start indices on the device, of both index dtypes, beyond the clamping range too. */
static void starts_pair(vk_pair *p, tfr_rng *rng, tf_dtype idx, size_t rank, const int64_t *big,
                        const int64_t *small)
{
    int64_t n = (int64_t)rank;
    tf_scalar vals[TF_MAX_RANK];
    for (size_t k = 0; k < rank; k++)
        vals[k] = tfr_i(tfr_rng_int(rng, -3, big[k] - small[k] + 3));
    if (idx == TF_I64 && rank > 0 && tfr_rng_chance(rng, 30))
        vals[0] = tfr_i(tfr_rng_chance(rng, 50) ? INT64_MAX / 3 : INT64_MIN / 3);
    p->cpu = tfr_host(idx, 1, &n, vals);
    TF_ASSERT_OK(tf_engine_upload(vk_engine, p->cpu, &p->vk));
}

static void test_dynamic_slices(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 16);
    for (int c = 0; c < 4 * CASES; c++) {
        tf_dtype dt = k_all[(c / 2) % 7], idx = c % 2 ? TF_I64 : TF_I32;
        int64_t big[TF_MAX_RANK], small[TF_MAX_RANK];
        size_t rank = random_shape(&rng, big, 6);
        for (size_t k = 0; k < rank; k++)
            small[k] = tfr_rng_int(&rng, 0, big[k]);
        vk_pair x, starts, out;
        vk_pair_make(&x, &rng, dt, rank, big, random_layout(&rng), (vk_gen){-50, 50});
        starts_pair(&starts, &rng, idx, rank, big, small);
        vk_pair_output(&out, dt, rank, small);
        vk_pair in[3] = {x, starts};
        vk_run_compare("DYNAMIC_SLICE", TF_PRIM_DYNAMIC_SLICE, NULL, 2, in, &out, 0, 0);
        vk_pair_free(&out);
        vk_pair upd;
        vk_pair_make(&upd, &rng, dt, rank, small, random_layout(&rng), (vk_gen){-50, 50});
        vk_pair_output(&out, dt, rank, big);
        vk_pair uin[3] = {x, upd, starts};
        vk_run_compare("DYNAMIC_UPDATE_SLICE", TF_PRIM_DYNAMIC_UPDATE_SLICE, NULL, 3, uin, &out, 0,
                       0);
        vk_pair_free(&out);
        vk_pair_free(&upd);
        vk_pair_free(&x);
        vk_pair_free(&starts);
    }
}

/* A valid index tensor (values in [0, extent)), sometimes reversed, on both engines. */
static void index_pair(vk_pair *p, tfr_rng *rng, tf_dtype idx, size_t rank, const int64_t *shape,
                       int64_t extent)
{
    size_t n = tfr_numel(rank, shape);
    tf_scalar *vals = tfr_vals_alloc(n);
    for (size_t i = 0; i < n; i++)
        vals[i] = tfr_i(tfr_rng_int(rng, 0, extent - 1));
    tf_tensor *roots[2];
    roots[0] = tfr_host(idx, rank, shape, vals);
    free(vals);
    TF_ASSERT_OK(tf_engine_upload(vk_engine, roots[0], &roots[1]));
    int axes[TF_MAX_RANK];
    for (size_t k = 0; k < rank; k++)
        axes[k] = (int)k;
    int reverse = rank > 0 && tfr_rng_chance(rng, 50);
    tf_tensor *views[2];
    for (int s = 0; s < 2; s++) {
        if (reverse)
            TF_ASSERT_OK(tf_tensor_reverse(roots[s], rank, axes, &views[s]));
        else {
            views[s] = roots[s];
            tf_tensor_retain(roots[s]);
        }
        tf_tensor_release(roots[s]);
    }
    p->cpu = views[0];
    p->vk = views[1];
}

static void test_gather_scatter(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 17);
    for (int c = 0; c < 5 * CASES; c++) {
        tf_dtype dt = k_all[c % 7], idx = (c / 7) % 2 ? TF_I64 : TF_I32;
        int64_t shape[TF_MAX_RANK], ishape[TF_MAX_RANK], oshape[TF_MAX_RANK];
        size_t rank = random_shape(&rng, shape, 5);
        if (rank == 0)
            continue;
        uint32_t axis = (uint32_t)tfr_rng_int(&rng, 0, (int64_t)rank - 1);
        if (shape[axis] == 0)
            shape[axis] = 3;
        int along = tfr_rng_chance(&rng, 50);
        tf_gather_params p = {sizeof p, axis, along ? TF_GATHER_ALONG_AXIS : TF_GATHER_INDEX_SELECT,
                              tfr_rng_chance(&rng, 50) ? TF_SCATTER_ADD : TF_SCATTER_REPLACE};
        size_t irank = along ? rank : 1;
        if (along) {
            for (size_t k = 0; k < rank; k++)
                ishape[k] = k == axis ? tfr_rng_int(&rng, 0, 5) : tfr_rng_int(&rng, 0, shape[k]);
            memcpy(oshape, ishape, sizeof oshape);
        } else {
            ishape[0] = tfr_rng_int(&rng, 0, 5);
            memcpy(oshape, shape, sizeof oshape);
            oshape[axis] = ishape[0];
        }
        vk_pair x, index, out;
        vk_pair_make(&x, &rng, dt, rank, shape, random_layout(&rng), (vk_gen){-50, 50});
        index_pair(&index, &rng, idx, irank, ishape, shape[axis]);
        vk_pair_output(&out, dt, rank, oshape);
        vk_pair gin[2] = {x, index};
        vk_run_compare(along ? "GATHER along axis" : "GATHER index select", TF_PRIM_GATHER, &p, 2,
                       gin, &out, 0, 0);
        vk_pair_free(&out);
        tf_dtype sd[4] = {dt, idx, dt, dt};
        if (dt == TF_BOOL)
            p.combine = TF_SCATTER_REPLACE; /* the core refuses scatter-add on bool */
        if (tf_engine_supports(vk_engine, TF_PRIM_SCATTER, 0, sd, 4)) {
            vk_pair upd;
            vk_pair_make(&upd, &rng, dt, rank, oshape, random_layout(&rng), (vk_gen){-50, 50});
            vk_pair_output(&out, dt, rank, shape);
            vk_pair sin[3] = {x, index, upd};
            vk_run_compare(along ? "SCATTER along axis" : "SCATTER index select", TF_PRIM_SCATTER,
                           &p, 3, sin, &out, 1e-6, 0);
            vk_pair_free(&out);
            vk_pair_free(&upd);
        }
        vk_pair_free(&x);
        vk_pair_free(&index);
    }
}

/* ---- UNARY, BINARY, COMPARE, SELECT ------------------------------------------------------ */

static int transcendental(uint32_t op)
{
    return op == TF_UNARY_EXP || op == TF_UNARY_LOG || op == TF_UNARY_EXPM1 ||
           op == TF_UNARY_LOG1P || op == TF_UNARY_SIN || op == TF_UNARY_COS ||
           op == TF_UNARY_TANH || op == TF_UNARY_ERF || op == TF_UNARY_SIGMOID ||
           op == TF_UNARY_RSQRT;
}

static vk_gen unary_domain(uint32_t op)
{
    switch (op) {
    case TF_UNARY_LOG:
    case TF_UNARY_SQRT:
    case TF_UNARY_RSQRT: return (vk_gen){0.05, 20.0};
    case TF_UNARY_LOG1P: return (vk_gen){-0.9, 5.0};
    case TF_UNARY_EXP:
    case TF_UNARY_EXPM1: return (vk_gen){-10.0, 10.0};
    case TF_UNARY_ERF: return (vk_gen){-4.0, 4.0};
    case TF_UNARY_SIGMOID: return (vk_gen){-30.0, 30.0};
    default: return sym;
    }
}

static int i64_ok(void)
{
    tf_dtype d[2] = {TF_I64, TF_I64};
    return tf_engine_supports(vk_engine, TF_PRIM_UNARY, TF_UNARY_NEG, d, 2);
}

static int is_int(tf_dtype d)
{
    return d == TF_I32 || d == TF_I64;
}

static void test_unary(void **state)
{
    (void)state;
    static const tf_dtype dts[] = {TF_F32, TF_F64, TF_I32, TF_I64, TF_BOOL};
    tfr_rng rng;
    tfr_rng_seed(&rng, 21);
    int claimed = 0;
    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
        for (uint32_t op = 0; op < TF_UNARY_COUNT_; op++) {
            tf_dtype d[2] = {dts[t], dts[t]};
            if (!tf_engine_supports(vk_engine, TF_PRIM_UNARY, op, d, 2))
                continue;
            claimed++;
            for (int c = 0; c < CASES / 2; c++) {
                int64_t shape[TF_MAX_RANK];
                size_t rank = random_shape(&rng, shape, 7);
                vk_gen g = is_int(dts[t]) ? (vk_gen){-1000, 1000} : unary_domain(op);
                vk_pair in, out;
                vk_pair_make(&in, &rng, dts[t], rank, shape, random_layout(&rng), g);
                vk_pair_output(&out, dts[t], rank, shape);
                tf_unary_params p = {sizeof p, op};
                char what[64];
                snprintf(what, sizeof what, "UNARY %s %s", tf_prim_op_name(TF_PRIM_UNARY, op),
                         tf_dtype_name(dts[t]));
                /* f64 transcendentals are the engine's own series (math64.glsl): ~1e-15. */
                int loose = transcendental(op);
                double rtol = dts[t] == TF_F32 ? (loose ? 2e-5 : 1e-6) : (loose ? 1e-13 : 1e-15);
                double atol = loose ? (dts[t] == TF_F32 ? 1e-6 : 1e-15) : 0;
                vk_run_compare(what, TF_PRIM_UNARY, &p, 1, &in, &out, rtol, atol);
                vk_pair_free(&in);
                vk_pair_free(&out);
            }
        }
    }
    /* f32: all 18 float ops; i32: 4; bool: 1; f64 and i64 (when the device has them): 18, 4. */
    assert_int_equal(claimed, 18 + 4 + 1 + (f64_ok() ? 18 : 0) + (i64_ok() ? 4 : 0));
}

/*
 * expm1 and log1p to a few ulps on vk_small_args, where their plain forms (exp(x) - 1,
 * log(1 + x)) cancel, dense (the vector form and its tail) and reversed (the strided
 * form). The shaders correct the rounding of exp(x) and 1 + x; a driver compiler that
 * folds log(exp(x)) or (1 + x) - 1 away cancels the correction (lavapipe did: 1e9 ulps at
 * -4.7e-10).
 */
static void test_unary_small_args(void **state)
{
    (void)state;
    static const uint32_t ops[2] = {TF_UNARY_EXPM1, TF_UNARY_LOG1P};
    static long double (*const ref[2])(long double) = {expm1l, log1pl};
    for (int t = 0; t < (f64_ok() ? 2 : 1); t++) {
        tf_dtype dt = t == 0 ? TF_F32 : TF_F64;
        double x[VK_SMALL_ARGS], rx[VK_SMALL_ARGS];
        size_t n = vk_small_args(dt, x);
        for (size_t i = 0; i < n; i++)
            rx[i] = x[n - 1 - i];
        tf_tensor *in = vk_upload_values(dt, n, x), *rev = NULL;
        int axis = 0;
        TF_ASSERT_OK(tf_tensor_reverse(in, 1, &axis, &rev));
        for (int o = 0; o < 2; o++) {
            tf_unary_params p = {sizeof p, ops[o]};
            for (int r = 0; r < 2; r++) {
                tf_tensor *out = NULL, *src = r ? rev : in;
                int64_t shape[1] = {(int64_t)n};
                TF_ASSERT_OK(tf_tensor_empty(vk_engine, dt, 1, shape, &out));
                TF_ASSERT_OK(tf_engine_execute(vk_engine, TF_PRIM_UNARY, &p, 1, &src, 1, &out));
                vk_assert_ulps(tf_prim_op_name(TF_PRIM_UNARY, ops[o]), dt, out, r ? rx : x, n,
                               ref[o], VK_SMALL_ARGS_ULPS(dt));
                tf_tensor_release(out);
            }
        }
        tf_tensor_release(rev);
        tf_tensor_release(in);
    }
}

static void test_binary(void **state)
{
    (void)state;
    static const tf_dtype dts[] = {TF_F32, TF_F64, TF_I32, TF_I64, TF_BOOL};
    tfr_rng rng;
    tfr_rng_seed(&rng, 22);
    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
        for (uint32_t op = 0; op < TF_BINARY_COUNT_; op++) {
            tf_dtype d[3] = {dts[t], dts[t], dts[t]};
            if (!tf_engine_supports(vk_engine, TF_PRIM_BINARY, op, d, 3))
                continue;
            for (int c = 0; c < CASES / 2; c++) {
                int64_t shape[TF_MAX_RANK];
                size_t rank = random_shape(&rng, shape, 7);
                vk_gen ga = is_int(dts[t]) ? (vk_gen){-100, 100} : sym;
                vk_gen gb = ga;
                if (op == TF_BINARY_POW) {
                    ga = is_int(dts[t]) ? (vk_gen){-5, 5} : (vk_gen){0.1, 4.0};
                    gb = is_int(dts[t]) ? (vk_gen){-2, 6} : (vk_gen){-3.0, 3.0};
                    if (is_int(dts[t]))
                        ga = (vk_gen){1, 5}; /* negative powers of 0 fail: see below */
                }
                if ((op == TF_BINARY_DIV || op == TF_BINARY_REM) && is_int(dts[t]))
                    gb = (vk_gen){1, 9}; /* no zero divisors here; see test_vulkan_engine.c */
                vk_pair in[2], out;
                vk_pair_make(&in[0], &rng, dts[t], rank, shape, random_layout(&rng), ga);
                vk_pair_make(&in[1], &rng, dts[t], rank, shape, random_layout(&rng), gb);
                vk_pair_output(&out, dts[t], rank, shape);
                tf_binary_params p = {sizeof p, op};
                char what[64];
                snprintf(what, sizeof what, "BINARY %s %s", tf_prim_op_name(TF_PRIM_BINARY, op),
                         tf_dtype_name(dts[t]));
                int loose = op == TF_BINARY_POW;
                double rtol = dts[t] == TF_F32 ? (loose ? 2e-5 : 1e-6) : (loose ? 1e-13 : 1e-15);
                vk_run_compare(what, TF_PRIM_BINARY, &p, 2, in, &out, rtol, 0);
                vk_pair_free(&in[0]);
                vk_pair_free(&in[1]);
                vk_pair_free(&out);
            }
        }
    }
}

static void test_compare_select(void **state)
{
    (void)state;
    const tf_dtype *dts = k_all;
    tfr_rng rng;
    tfr_rng_seed(&rng, 23);
    for (size_t t = 0; t < 7; t++) {
        for (uint32_t op = 0; op < TF_COMPARE_COUNT_; op++) {
            tf_dtype cd[3] = {dts[t], dts[t], TF_BOOL}; /* complex: EQ and NE */
            if (!tf_engine_supports(vk_engine, TF_PRIM_COMPARE, op, cd, 3))
                continue;
            int64_t shape[TF_MAX_RANK];
            size_t rank = random_shape(&rng, shape, 7);
            /* Small integers in every dtype, so equal pairs occur. */
            vk_gen g = {-2, 2};
            vk_pair in[3], out, sel;
            vk_pair_make(&in[0], &rng, dts[t], rank, shape, random_layout(&rng), g);
            vk_pair_make(&in[1], &rng, dts[t], rank, shape, random_layout(&rng), g);
            if (dts[t] != TF_BOOL) {
                /* integral values for the float dtypes too */
                vk_pair_free(&in[0]);
                vk_pair_free(&in[1]);
                vk_pair_make(&in[0], &rng, TF_I32, rank, shape, VK_DENSE, g);
                vk_pair_make(&in[1], &rng, TF_I32, rank, shape, VK_DENSE, g);
                for (int k = 0; k < 2; k++) {
                    vk_pair cv;
                    tf_convert_params cp = {sizeof cp, 0};
                    vk_pair_output(&cv, dts[t], rank, shape);
                    vk_run_compare("CONVERT i32 (inputs)", TF_PRIM_CONVERT, &cp, 1, &in[k], &cv, 0,
                                   0);
                    vk_pair_free(&in[k]);
                    in[k] = cv;
                }
            }
            vk_pair_output(&out, TF_BOOL, rank, shape);
            tf_compare_params p = {sizeof p, op};
            vk_run_compare("COMPARE", TF_PRIM_COMPARE, &p, 2, in, &out, 0, 0);
            /* SELECT(out, in0, in1) */
            vk_pair sin[3] = {out, in[0], in[1]};
            vk_pair_output(&sel, dts[t], rank, shape);
            vk_run_compare("SELECT", TF_PRIM_SELECT, NULL, 3, sin, &sel, 0, 0);
            vk_pair_free(&sel);
            vk_pair_free(&out);
            vk_pair_free(&in[0]);
            vk_pair_free(&in[1]);
        }
    }
}

/* ---- CONVERT ---------------------------------------------------------------------- */

static void test_convert(void **state)
{
    (void)state;
    const tf_dtype *dts = k_all;
    tfr_rng rng;
    tfr_rng_seed(&rng, 31);
    for (size_t s = 0; s < 7; s++) {
        for (size_t d = 0; d < 7; d++) {
            tf_dtype dd[2] = {dts[s], dts[d]};
            if (!tf_engine_supports(vk_engine, TF_PRIM_CONVERT, 0, dd, 2))
                continue;
            for (int c = 0; c < CASES / 2; c++) {
                int64_t shape[TF_MAX_RANK];
                size_t rank = random_shape(&rng, shape, 7);
                vk_pair in, out;
                /* Beyond i32 (wraps, saturates) and, for i64 -> f32, beyond 2^24 (rounds). */
                vk_gen wide = dts[s] == TF_I64 ? (vk_gen){-3e15, 3e15} : (vk_gen){-3e9, 3e9};
                vk_pair_make(&in, &rng, dts[s], rank, shape, random_layout(&rng), wide);
                vk_pair_output(&out, dts[d], rank, shape);
                tf_convert_params p = {sizeof p, 0};
                vk_run_compare("CONVERT (cast)", TF_PRIM_CONVERT, &p, 1, &in, &out, 0, 0);
                vk_pair_free(&in);
                vk_pair_free(&out);
                if (tf_dtype_is_complex(dts[s]) && !tf_dtype_is_complex(dts[d]))
                    continue; /* only the cast (the host refuses a checked one) */
                /* Checked, on values every target holds exactly. */
                vk_pair_make(&in, &rng, dts[s], rank, shape, random_layout(&rng),
                             dts[d] == TF_BOOL ? (vk_gen){0, 1} : (vk_gen){-1000, 1000});
                if (tf_dtype_is_float(dts[s]) && !tf_dtype_is_float(dts[d])) {
                    /* integral floats: round through i32 first */
                    vk_pair iv;
                    vk_pair_free(&in);
                    vk_pair_make(&iv, &rng, TF_I32, rank, shape, VK_DENSE,
                                 dts[d] == TF_BOOL ? (vk_gen){0, 1} : (vk_gen){-1000, 1000});
                    vk_pair_output(&in, dts[s], rank, shape);
                    vk_run_compare("CONVERT i32 -> float", TF_PRIM_CONVERT, &p, 1, &iv, &in, 0, 0);
                    vk_pair_free(&iv);
                }
                vk_pair_output(&out, dts[d], rank, shape);
                p.checked = 1;
                vk_run_compare("CONVERT (checked)", TF_PRIM_CONVERT, &p, 1, &in, &out, 0, 0);
                vk_pair_free(&in);
                vk_pair_free(&out);
            }
        }
    }
}

/* ---- REDUCE ---------------------------------------------------------------------------- */

static void reduce_cases(void)
{
    static const tf_dtype dts[] = {TF_F32, TF_F64, TF_I32, TF_I64, TF_BOOL};
    /* Fixed long reductions (the workgroup-per-output path), then random ones. */
    static const int64_t fixed_shapes[3][2] = {{3, 1000}, {1000, 3}, {50, 40}};
    static const uint64_t fixed_masks[3] = {2, 1, 3};
    tfr_rng rng;
    tfr_rng_seed(&rng, 41);
    for (size_t t = 0; t < 5; t++) {
        for (uint32_t op = 0; op < TF_REDUCE_COUNT_; op++) {
            tf_dtype d[2] = {dts[t], dts[t]};
            if (!tf_engine_supports(vk_engine, TF_PRIM_REDUCE, op, d, 2))
                continue;
            for (int f = 0; f < 3; f++) {
                int64_t oshape[2];
                for (int k = 0; k < 2; k++)
                    oshape[k] = (fixed_masks[f] >> k) & 1u ? 1 : fixed_shapes[f][k];
                vk_gen g = op == TF_REDUCE_PROD ? (vk_gen){0.99, 1.01} : sym;
                if (is_int(dts[t]))
                    g = op == TF_REDUCE_PROD ? (vk_gen){-1, 1} : (vk_gen){-1000, 1000};
                vk_pair in, out;
                vk_pair_make(&in, &rng, dts[t], 2, fixed_shapes[f], random_layout(&rng), g);
                vk_pair_output(&out, dts[t], 2, oshape);
                tf_reduce_params p = {sizeof p, op, fixed_masks[f]};
                double eps = dts[t] == TF_F32 ? 1.2e-7 : 2.3e-16;
                vk_run_compare("REDUCE (long)", TF_PRIM_REDUCE, &p, 1, &in, &out, 4000 * eps,
                               tf_dtype_is_float(dts[t]) ? 3000 * eps * 3 : 0);
                vk_pair_free(&in);
                vk_pair_free(&out);
            }
            for (int c = 0; c < CASES; c++) {
                int64_t shape[TF_MAX_RANK], oshape[TF_MAX_RANK];
                /* Some long reductions to take the workgroup-per-output path. */
                size_t rank = random_shape(&rng, shape, c % 3 == 0 ? 40 : 7);
                uint64_t mask = (uint64_t)tfr_rng_int(&rng, 0, (1 << rank) - 1);
                int64_t count = 1;
                for (size_t k = 0; k < rank; k++) {
                    oshape[k] = (mask >> k) & 1u ? 1 : shape[k];
                    count *= (mask >> k) & 1u ? shape[k] : 1;
                }
                vk_gen g = op == TF_REDUCE_PROD ? (vk_gen){0.9, 1.1} : sym;
                if (is_int(dts[t]))
                    g = op == TF_REDUCE_PROD ? (vk_gen){-3, 3} : (vk_gen){-1000, 1000};
                vk_pair in, out;
                vk_pair_make(&in, &rng, dts[t], rank, shape, random_layout(&rng), g);
                vk_pair_output(&out, dts[t], rank, oshape);
                tf_reduce_params p = {sizeof p, op, mask};
                char what[64];
                snprintf(what, sizeof what, "REDUCE %s %s over %lld",
                         tf_prim_op_name(TF_PRIM_REDUCE, op), tf_dtype_name(dts[t]),
                         (long long)count);
                double eps = dts[t] == TF_F32 ? 1.2e-7 : 2.3e-16;
                double atol = tf_dtype_is_float(dts[t]) ? 3.0 * eps * (double)count : 0;
                vk_run_compare(what, TF_PRIM_REDUCE, &p, 1, &in, &out, 4 * eps * (double)count,
                               atol);
                vk_pair_free(&in);
                vk_pair_free(&out);
            }
        }
    }
}

/* The default engine: subgroup reductions where the device has them (lavapipe does). */
static void test_reduce(void **state)
{
    (void)state;
    reduce_cases();
}

/* The shared-memory-only tree, on an engine opened with subgroup_reduce=off. */
static void test_reduce_shared_memory(void **state)
{
    (void)state;
    tf_engine *shared = NULL, *saved = vk_engine;
    TF_ASSERT_OK(tfr_engine_create("vulkan", 0, "subgroup_reduce", "off", &shared));
    vk_engine = shared;
    reduce_cases();
    vk_engine = saved;
    tf_engine_destroy(shared);
}

/* ---- DOT_GENERAL --------------------------------------------------------------------------- */

/*
 * One DOT_GENERAL of lhs [m, k, b] and rhs [k, n, b] on both engines: axis i of lhs holds its
 * logical axis lp[i] (of m, k, b), axis i of rhs rp[i] (of k, n, b), and the operands are in
 * the layouts lr[0], lr[1] (NULL: random ones); without `batched` the batch axis is absent
 * and b is 1.
 */
static void run_dot_laid(tfr_rng *rng, tf_dtype dt, int64_t m, int64_t n, int64_t k, int64_t b,
                         int batched, const int *lp, const int *rp, const vk_layout *lr)
{
    int64_t lsh_logical[3] = {m, k, b}, rsh_logical[3] = {k, n, b};
    size_t rank = batched ? 3 : 2;
    int64_t lsh[3], rsh[3];
    tf_dot_general_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.n_contracting = 1;
    p.n_batch = batched ? 1 : 0;
    for (size_t i = 0; i < rank; i++) {
        lsh[i] = lsh_logical[lp[i]];
        rsh[i] = rsh_logical[rp[i]];
        if (lp[i] == 1)
            p.lhs_contracting[0] = (uint32_t)i;
        if (lp[i] == 2)
            p.lhs_batch[0] = (uint32_t)i;
        if (rp[i] == 0)
            p.rhs_contracting[0] = (uint32_t)i;
        if (rp[i] == 2)
            p.rhs_batch[0] = (uint32_t)i;
    }
    int64_t osh[3] = {m, n, b};
    vk_pair in[2], out;
    vk_gen g = is_int(dt) ? (vk_gen){-1000, 1000} : sym; /* ints: sums wrap */
    vk_pair_make(&in[0], rng, dt, rank, lsh, lr ? lr[0] : random_layout(rng), g);
    vk_pair_make(&in[1], rng, dt, rank, rsh, lr ? lr[1] : random_layout(rng), g);
    vk_pair_output(&out, dt, rank, osh);
    char what[96];
    snprintf(what, sizeof what, "DOT_GENERAL %s m=%lld n=%lld k=%lld b=%lld", tf_dtype_name(dt),
             (long long)m, (long long)n, (long long)k, (long long)(batched ? b : 1));
    double eps = dt == TF_F32 ? 1.2e-7 : (dt == TF_F64 ? 2.3e-16 : 0);
    vk_run_compare(what, TF_PRIM_DOT_GENERAL, &p, 2, in, &out, 4 * eps * (double)k,
                   9.0 * 4 * eps * (double)k);
    vk_pair_free(&in[0]);
    vk_pair_free(&in[1]);
    vk_pair_free(&out);
}

/* run_dot_laid with the axes permuted at random and the operands in random layouts. */
static void run_dot(tfr_rng *rng, tf_dtype dt, int64_t m, int64_t n, int64_t k, int64_t b,
                    int batched)
{
    int lp[3], rp[3];
    tfr_rng_perm(rng, batched ? 3 : 2, lp);
    tfr_rng_perm(rng, batched ? 3 : 2, rp);
    run_dot_laid(rng, dt, m, n, k, b, batched, lp, rp, NULL);
}

/* Random sizes that cross tile edges, matrix-vector shapes and long dot products. */
static void test_dot_general(void **state)
{
    (void)state;
    static const tf_dtype dts[] = {TF_F32, TF_F64, TF_I32, TF_I64};
    tfr_rng rng;
    tfr_rng_seed(&rng, 51);
    for (size_t t = 0; t < 4; t++) {
        tf_dtype d[3] = {dts[t], dts[t], dts[t]};
        if (!tf_engine_supports(vk_engine, TF_PRIM_DOT_GENERAL, 0, d, 3))
            continue;
        for (int c = 0; c < 3 * CASES; c++) {
            int64_t m = tfr_rng_int(&rng, 0, 70), n = tfr_rng_int(&rng, 0, 70);
            int64_t k = tfr_rng_int(&rng, 0, 40), b = tfr_rng_int(&rng, 1, 3);
            if (c % 4 == 0)
                n = 1; /* matrix-vector */
            if (c % 4 == 1)
                m = 1; /* vector-matrix */
            if (c % 8 == 0)
                k = 300 + c; /* long dot products: a workgroup per output */
            run_dot(&rng, dts[t], m, n, k, b, tfr_rng_chance(&rng, 50));
        }
    }
}

/* ---- kernel shapes: GEMM tiles, dense vector paths ---------------------------------------- */

/*
 * Shapes chosen to reach every GEMM tile shape (see gemm_choose in
 * plugins/vulkan/vk_dot.c) with full and partial edge tiles, batched and not,
 * and the matrix-vector path; each dtype must have used every family.
 */
static void test_dot_tiles(void **state)
{
    (void)state;
    static const struct {
        int64_t m, n, k, b;
    } cases[] = {
        {130, 97, 33, 1}, {128, 128, 16, 2}, {96, 200, 5, 1},               /* 64 x 64 */
        {50, 40, 17, 1},  {95, 33, 70, 3},   {16, 16, 9, 1},  {2, 2, 3, 1}, /* 32 x 32 */
        {200, 3, 20, 1},  {65, 16, 31, 2},   {17, 2, 64, 1},                /* 64 x 16 */
        {2, 150, 19, 1},  {16, 65, 64, 2},   {3, 17, 0, 1},                 /* 16 x 64 */
        {70, 1, 300, 2},  {1, 70, 40, 1},                                   /* matrix-vector */
    };
    static const tf_dtype dts[] = {TF_F32, TF_F64, TF_I32, TF_I64};
    static const char *const names[] = {"f32", "f64", "i32", "i64"};
    tf_engine *saved = vk_fresh_begin(NULL, NULL);
    tfr_rng rng;
    tfr_rng_seed(&rng, 52);
    for (size_t t = 0; t < 4; t++) {
        tf_dtype d[3] = {dts[t], dts[t], dts[t]};
        if (!tf_engine_supports(vk_engine, TF_PRIM_DOT_GENERAL, 0, d, 3))
            continue;
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
            run_dot(&rng, dts[t], cases[c].m, cases[c].n, cases[c].k, cases[c].b,
                    cases[c].b > 1 || c % 2 == 0);
        static const char *const families[] = {"gemm", "gemm_m", "gemm_t", "gemm_w", "gemv"};
        for (size_t f = 0; f < 5; f++) {
            char name[32];
            snprintf(name, sizeof name, "%s_%s", families[f], names[t]);
            vk_assert_pipeline_used(name);
        }
    }
    vk_fresh_end(saved);
}

/*
 * The 128 x 128 tile of gemm_big.comp (gemm_choose: M, N >= 512, f32 or f64, A contiguous along
 * M and B along K), on dense operands: square, edges in every dimension, K = 0 and 1, batched with
 * lhs's batch axis between its free and contracting axes; then layouts it must leave to the
 * generic kernel (lhs stored [k, m], rhs stored [n, k]); each group on an engine of its own so the
 * log shows which kernels ran.
 */
static void test_dot_big(void **state)
{
    (void)state;
    typedef struct {
        int64_t m, n, k, b;
        int lp[3], rp[3];
    } big_case;
    static const big_case fast[] = {
        {512, 512, 64, 1, {0, 1, 2}, {0, 1, 2}},
        {520, 600, 37, 1, {0, 1, 2}, {0, 1, 2}},
        {512, 640, 0, 1, {0, 1, 2}, {0, 1, 2}},
        {600, 512, 1, 1, {0, 1, 2}, {0, 1, 2}}, /* B's k stride is 0 here: unused */
        {513, 530, 20, 2, {0, 2, 1}, {0, 1, 2}},
    };
    static const big_case generic[] = {
        {520, 515, 24, 1, {1, 0, 2}, {0, 1, 2}}, /* A along K: stride_m = k */
        {515, 520, 24, 1, {0, 1, 2}, {1, 0, 2}}, /* B along N: stride_k = n */
    };
    static const vk_layout dense[2] = {VK_DENSE, VK_DENSE};
    static const tf_dtype dts[] = {TF_F32, TF_F64};
    static const char *const names[] = {"f32", "f64"};
    tfr_rng rng;
    tfr_rng_seed(&rng, 53);
    for (int g = 0; g < 2; g++) {
        const big_case *cases = g == 0 ? fast : generic;
        size_t n_cases = g == 0 ? sizeof fast / sizeof fast[0] : sizeof generic / sizeof generic[0];
        tf_engine *saved = vk_fresh_begin(NULL, NULL);
        for (size_t t = 0; t < 2; t++) {
            tf_dtype d[3] = {dts[t], dts[t], dts[t]};
            if (!tf_engine_supports(vk_engine, TF_PRIM_DOT_GENERAL, 0, d, 3))
                continue;
            for (size_t c = 0; c < n_cases; c++)
                run_dot_laid(&rng, dts[t], cases[c].m, cases[c].n, cases[c].k, cases[c].b,
                             cases[c].b > 1, cases[c].lp, cases[c].rp, dense);
            char name[32];
            snprintf(name, sizeof name, "%s_%s", g == 0 ? "gemm_big" : "gemm", names[t]);
            vk_assert_pipeline_used(name);
        }
        if (g == 1 && tf_test_log_count(TF_LOG_DEBUG, "vulkan: pipeline gemm_big") != 0) {
            tf_test_log_dump();
            fail_msg("a layout outside gemm_big's fast path took it");
        }
        vk_fresh_end(saved);
    }
}

/* A dense 1-D operand starting at element `off` of a larger uploaded root. */
static void offset_pair(vk_pair *p, tfr_rng *rng, tf_dtype dt, int64_t n, int64_t off, vk_gen g)
{
    int64_t root_n = n + off, start = off, limit = off + n, step = 1;
    vk_pair root;
    vk_pair_make(&root, rng, dt, 1, &root_n, VK_DENSE, g);
    TF_ASSERT_OK(tf_tensor_slice(root.cpu, &start, &limit, &step, &p->cpu));
    TF_ASSERT_OK(tf_tensor_slice(root.vk, &start, &limit, &step, &p->vk));
    vk_pair_free(&root);
}

/*
 * The dense elementwise kernels with 16-byte accesses (UNARY, BINARY on f32
 * and i32; COPY and FILL of 32-bit values): lengths around multiples of 4
 * (the tail), operands at element offsets 0 and 4 (vector path) and 1, 2
 * (element path, also when only one operand is misaligned).
 */
static void test_vec4_elementwise(void **state)
{
    (void)state;
    static const int64_t lengths[] = {4, 5, 6, 7, 8, 1001, 4099};
    static const int64_t offsets[][2] = {{0, 0}, {4, 8}, {1, 1}, {4, 2}, {0, 1}};
    tf_engine *saved = vk_fresh_begin(NULL, NULL);
    tfr_rng rng;
    tfr_rng_seed(&rng, 53);
    for (int t = 0; t < 2; t++) {
        tf_dtype dt = t == 0 ? TF_F32 : TF_I32;
        for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++) {
            int64_t n = lengths[l];
            for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; o++) {
                vk_gen ga = dt == TF_F32 ? sym : (vk_gen){-100, 100};
                vk_pair in[2], out;
                offset_pair(&in[0], &rng, dt, n, offsets[o][0], ga);
                offset_pair(&in[1], &rng, dt, n, offsets[o][1], (vk_gen){1, 9});
                char what[96];
                tf_unary_params up = {sizeof up, dt == TF_F32 ? TF_UNARY_EXP : TF_UNARY_ABS};
                snprintf(what, sizeof what, "dense UNARY %s n=%lld at %lld", tf_dtype_name(dt),
                         (long long)n, (long long)offsets[o][0]);
                vk_pair_output(&out, dt, 1, &n);
                vk_run_compare(what, TF_PRIM_UNARY, &up, 1, in, &out, 2e-5, 1e-6);
                vk_pair_free(&out);
                tf_binary_params bp = {sizeof bp, dt == TF_F32 ? TF_BINARY_MUL : TF_BINARY_DIV};
                snprintf(what, sizeof what, "dense BINARY %s n=%lld at %lld, %lld",
                         tf_dtype_name(dt), (long long)n, (long long)offsets[o][0],
                         (long long)offsets[o][1]);
                vk_pair_output(&out, dt, 1, &n);
                vk_run_compare(what, TF_PRIM_BINARY, &bp, 2, in, &out, 1e-6, 0);
                vk_pair_free(&out);
                snprintf(what, sizeof what, "dense COPY %s n=%lld", tf_dtype_name(dt),
                         (long long)n);
                vk_pair_output(&out, dt, 1, &n);
                vk_run_compare(what, TF_PRIM_COPY, NULL, 1, in, &out, 0, 0);
                vk_pair_free(&out);
                vk_pair_free(&in[0]);
                vk_pair_free(&in[1]);
            }
            /* FILL into a dense view at offset 4 (vectors) and 1 (elements) of a root. */
            for (int64_t off = 1; off <= 4; off += 3) {
                int64_t root_n = n + 5, start = off, limit = off + n, step = 1;
                vk_pair root, view;
                vk_pair_output(&root, dt, 1, &root_n);
                tf_fill_params zero = {sizeof zero, 0, {0.0, 0}, 0};
                vk_run_compare("FILL root", TF_PRIM_FILL, &zero, 0, NULL, &root, 0, 0);
                TF_ASSERT_OK(tf_tensor_slice(root.cpu, &start, &limit, &step, &view.cpu));
                TF_ASSERT_OK(tf_tensor_slice(root.vk, &start, &limit, &step, &view.vk));
                tf_fill_params fp = {sizeof fp, 0, {-1.5, -7}, 0};
                TF_ASSERT_OK(tf_engine_execute(vk_cpu, TF_PRIM_FILL, &fp, 0, NULL, 1, &view.cpu));
                TF_ASSERT_OK(tf_engine_execute(vk_engine, TF_PRIM_FILL, &fp, 0, NULL, 1, &view.vk));
                vk_compare("FILL into an offset view", root.cpu, root.vk, 0, 0);
                vk_pair_free(&view);
                vk_pair_free(&root);
            }
        }
    }
    static const char *const used[] = {"unary_f32_v4",  "unary_i32_v4", "binary_f32_v4",
                                       "binary_i32_v4", "copy_w32_v4",  "fill_w32_v4",
                                       "unary_f32",     "binary_i32",   "copy_w32"};
    for (size_t i = 0; i < sizeof used / sizeof used[0]; i++)
        vk_assert_pipeline_used(used[i]);

    /* A division by zero at element 6 is reported with its index by the vector path too. */
    int32_t a[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, b[9] = {1, 1, 1, 1, 1, 1, 0, 1, 1};
    int64_t n9 = 9;
    tf_tensor *ah = NULL, *bh = NULL, *av = NULL, *bv = NULL, *ov = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_I32, 1, &n9, a, 9, &ah));
    TF_ASSERT_OK(tf_tensor_from_host(TF_I32, 1, &n9, b, 9, &bh));
    TF_ASSERT_OK(tf_engine_upload(vk_engine, ah, &av));
    TF_ASSERT_OK(tf_engine_upload(vk_engine, bh, &bv));
    TF_ASSERT_OK(tf_tensor_empty(vk_engine, TF_I32, 1, &n9, &ov));
    tf_tensor *in2[2] = {av, bv};
    tf_binary_params div = {sizeof div, TF_BINARY_DIV};
    TF_ASSERT_OK(tf_engine_execute(vk_engine, TF_PRIM_BINARY, &div, 2, in2, 1, &ov));
    TF_ASSERT_STATUS(tf_engine_synchronize(vk_engine), TF_ERR_VALIDATION);
    assert_non_null(strstr(tf_error_cause(), "element 6 "));
    tf_tensor *all[] = {ah, bh, av, bv, ov};
    for (size_t i = 0; i < 5; i++)
        tf_tensor_release(all[i]);
    vk_fresh_end(saved);
}

/* A chain of dependent ops in one batch, then one download: barriers must order them. */
static void test_dependent_chain(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 61);
    int64_t shape[1] = {1000};
    vk_pair x, acc;
    vk_pair_make(&x, &rng, TF_F32, 1, shape, VK_DENSE, sym);
    vk_pair_output(&acc, TF_F32, 1, shape);
    tf_fill_params zero = {sizeof zero, 0, {0.0, 0}, 0};
    tf_tensor *none[1] = {NULL};
    (void)none;
    TF_ASSERT_OK(tf_engine_execute(vk_cpu, TF_PRIM_FILL, &zero, 0, NULL, 1, &acc.cpu));
    TF_ASSERT_OK(tf_engine_execute(vk_engine, TF_PRIM_FILL, &zero, 0, NULL, 1, &acc.vk));
    tf_binary_params add = {sizeof add, TF_BINARY_ADD};
    for (int i = 0; i < 600; i++) { /* crosses the batch bound (512 dispatches) */
        vk_pair next;
        vk_pair_output(&next, TF_F32, 1, shape);
        tf_tensor *ci[2] = {acc.cpu, x.cpu}, *vi[2] = {acc.vk, x.vk};
        TF_ASSERT_OK(tf_engine_execute(vk_cpu, TF_PRIM_BINARY, &add, 2, ci, 1, &next.cpu));
        TF_ASSERT_OK(tf_engine_execute(vk_engine, TF_PRIM_BINARY, &add, 2, vi, 1, &next.vk));
        vk_pair_free(&acc);
        acc = next; /* the old accumulator is freed while its batch may still run */
    }
    vk_compare("600 dependent adds", acc.cpu, acc.vk, 1e-6, 1e-4);
    vk_pair_free(&x);
    vk_pair_free(&acc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fill_iota),        cmocka_unit_test(test_copy),
        cmocka_unit_test(test_strided_outputs),  cmocka_unit_test(test_pad),
        cmocka_unit_test(test_concatenate),      cmocka_unit_test(test_dynamic_slices),
        cmocka_unit_test(test_gather_scatter),   cmocka_unit_test(test_unary),
        cmocka_unit_test(test_unary_small_args), cmocka_unit_test(test_binary),
        cmocka_unit_test(test_compare_select),   cmocka_unit_test(test_convert),
        cmocka_unit_test(test_reduce),           cmocka_unit_test(test_reduce_shared_memory),
        cmocka_unit_test(test_dot_general),      cmocka_unit_test(test_dot_tiles),
        cmocka_unit_test(test_dot_big),          cmocka_unit_test(test_vec4_elementwise),
        cmocka_unit_test(test_dependent_chain),
    };
    return cmocka_run_group_tests_name("vulkan primitives vs cpu", tests, vk_group_setup,
                                       vk_group_teardown);
}
