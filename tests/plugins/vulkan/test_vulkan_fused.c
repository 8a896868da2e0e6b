/*
 * test_vulkan_fused.c - TF_PRIM_FUSED on the Vulkan engine (one dispatch of
 * shaders/fused.comp per program), with the validation layer on.
 *
 * References:
 * - the same engine running the program's steps as separate UNARY/BINARY
 *   calls: fused.comp calls the very functions unary.comp and binary.comp
 *   run (float_ops.glsl), so the results must be equal bit for bit (NaN
 *   equals NaN, -0 differs from +0). Programs draw from every float op.
 * - the CPU engine: FUSED where it supports it, else the same steps one by
 *   one (FUSED is defined as equal to them). The engines' f32 functions
 *   differ by a few ulps per op (see test_vulkan_prims.c), and a chain of up
 *   to 16 steps carries those differences along, so these programs draw from
 *   ops that do not amplify them without bound (no division, log, pow,
 *   floor...), on inputs in [-1, 1], with the per-op tolerance of
 *   test_vulkan_prims.c times the number of steps.
 *
 * Programs have one output (ABI 1.2) or several (ABI 1.3: out[i] receives
 * step outputs[i]; each output is checked against its step's separate
 * result the same ways).
 *
 * Inputs are dense, transposed, reversed, broadcast (stride 0) or stepped
 * views, rank 0 to 4 with zero extents, plus a case of ~1e5 elements. The
 * engine's own checks of a FUSED call the host did not validate are
 * test_vulkan_checks.c's.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <tenferro/engine_abi.h>

#include "vk_fixture.h"

typedef struct program {
    uint32_t n_in, n_steps;
    tf_fused_step steps[TF_FUSED_MAX_STEPS];
    uint32_t n_out; /* 1: the last step, as in ABI 1.2 */
    uint32_t outputs[TF_FUSED_MAX_OUTPUTS];
} program;

/* Ops whose chains keep engine-to-engine differences small on [-1, 1]. */
static const uint32_t tame_unary[] = {TF_UNARY_NEG,  TF_UNARY_ABS, TF_UNARY_SIN,    TF_UNARY_COS,
                                      TF_UNARY_TANH, TF_UNARY_ERF, TF_UNARY_SIGMOID};
static const uint32_t tame_binary[] = {TF_BINARY_ADD, TF_BINARY_SUB, TF_BINARY_MUL, TF_BINARY_MAX,
                                       TF_BINARY_MIN};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static void random_program(tfr_rng *rng, int tame, uint32_t n_in, uint32_t n_steps, program *p)
{
    p->n_in = n_in;
    p->n_steps = n_steps;
    p->n_out = 1;
    for (uint32_t k = 0; k < n_steps; k++) {
        uint32_t regs = n_in + k;
        tf_fused_step *s = &p->steps[k];
        s->kind = tfr_rng_chance(rng, 50) ? TF_FUSED_BINARY : TF_FUSED_UNARY;
        if (s->kind == TF_FUSED_UNARY)
            s->op = tame ? tame_unary[tfr_rng_int(rng, 0, COUNT(tame_unary) - 1)]
                         : tfr_float_unary_ops[tfr_rng_int(rng, 0, COUNT(tfr_float_unary_ops) - 1)];
        else
            s->op =
                tame ? tame_binary[tfr_rng_int(rng, 0, COUNT(tame_binary) - 1)]
                     : tfr_float_binary_ops[tfr_rng_int(rng, 0, COUNT(tfr_float_binary_ops) - 1)];
        /* Mostly a chain through the latest register; sometimes any earlier one. */
        s->a =
            k > 0 && tfr_rng_chance(rng, 60) ? regs - 1 : (uint32_t)tfr_rng_int(rng, 0, regs - 1);
        s->b = s->kind == TF_FUSED_BINARY ? (uint32_t)tfr_rng_int(rng, 0, regs - 1) : 0;
    }
}

/* m outputs: the last step and m - 1 other steps drawn in increasing order. */
static void random_outputs(tfr_rng *rng, uint32_t m, program *p)
{
    p->n_out = m;
    uint32_t need = m - 1, left = p->n_steps - 1, n = 0;
    for (uint32_t k = 0; k + 1 < p->n_steps; k++, left--) {
        if (tfr_rng_int(rng, 1, left) <= need - n) /* each subset equally likely */
            p->outputs[n++] = k;
    }
    p->outputs[n] = p->n_steps - 1;
}

/* The program and, with several outputs, which step each one receives (returns buf). */
static const char *describe(const program *p, char *buf, size_t size)
{
    tfr_fused_describe(p->n_in, p->n_steps, p->steps, buf, size);
    size_t used = strlen(buf);
    for (uint32_t i = 0; i < p->n_out && p->n_out > 1 && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%u", i ? "," : "; outputs step ",
                                 p->outputs[i]);
    return buf;
}

/* FUSED on `engine` into p->n_out new tensors. */
static void run_fused(tf_engine *engine, const program *p, tf_tensor *const *in, tf_dtype dt,
                      size_t rank, const int64_t *shape, tf_tensor **out)
{
    tf_fused_params fp = {sizeof fp, p->n_steps, p->steps, p->n_out, p->outputs, 0, NULL, 0, 0};
    for (uint32_t i = 0; i < p->n_out; i++)
        TF_ASSERT_OK(tf_tensor_empty(engine, dt, rank, shape, &out[i]));
    tf_status st = tf_engine_execute(engine, TF_PRIM_FUSED, &fp, p->n_in, in, p->n_out, out);
    if (st != TF_OK)
        fail_msg("FUSED -> %s: %s (%s)", tf_status_name(st), tf_error_message(), tf_error_cause());
}

static int cpu_has_fused(tf_dtype dt, uint32_t n_in, uint32_t n_out)
{
    tf_dtype d[TF_FUSED_MAX_INPUTS + TF_FUSED_MAX_OUTPUTS];
    for (uint32_t i = 0; i < n_in + n_out; i++)
        d[i] = dt;
    return tf_engine_supports(vk_cpu, TF_PRIM_FUSED, n_out - 1, d, n_in + n_out);
}

/* Bit-for-bit equality of two Vulkan tensors (NaN equals NaN): output `o` of program p. */
static void assert_identical(const char *what, const program *p, uint32_t o, const tf_tensor *want,
                             const tf_tensor *got)
{
    size_t n = tf_tensor_numel(want);
    assert_int_equal(n, tf_tensor_numel(got));
    double *w = vk_read(vk_engine, want), *g = vk_read(vk_engine, got);
    for (size_t i = 0; i < n; i++) {
        if ((isnan(w[i]) && isnan(g[i])) || memcmp(&w[i], &g[i], sizeof w[i]) == 0)
            continue;
        char buf[512];
        fail_msg("%s: output %u, element %zu: fused %.17g, steps %.17g; program %s", what, o, i,
                 g[i], w[i], describe(p, buf, sizeof buf));
    }
    free(w);
    free(g);
    vk_assert_validation_clean();
}

/*
 * One program on given inputs of one shape: each output of FUSED on Vulkan against its
 * step run separately on Vulkan (exact) and, for tame programs, against the CPU engine
 * (tolerance).
 */
static void check_inputs(const program *p, tf_dtype dt, size_t rank, const int64_t *shape, int tame,
                         const vk_pair *in)
{
    tf_tensor *vi[TF_FUSED_MAX_INPUTS], *ci[TF_FUSED_MAX_INPUTS];
    for (uint32_t i = 0; i < p->n_in; i++) {
        vi[i] = in[i].vk;
        ci[i] = in[i].cpu;
    }
    tf_tensor *fused[TF_FUSED_MAX_OUTPUTS], *steps[TF_FUSED_MAX_OUTPUTS];
    tf_tensor *ref[TF_FUSED_MAX_OUTPUTS];
    uint32_t m = p->n_out;
    run_fused(vk_engine, p, vi, dt, rank, shape, fused);
    tfr_fused_run_outputs(vk_engine, p->n_in, p->n_steps, p->steps, m, p->outputs, vi, dt, rank,
                          shape, steps);
    for (uint32_t o = 0; o < m; o++)
        assert_identical(dt == TF_F32 ? "f32 fused vs steps" : "f64 fused vs steps", p, o, steps[o],
                         fused[o]);
    if (tame) {
        if (cpu_has_fused(dt, p->n_in, m))
            run_fused(vk_cpu, p, ci, dt, rank, shape, ref);
        else
            tfr_fused_run_outputs(vk_cpu, p->n_in, p->n_steps, p->steps, m, p->outputs, ci, dt,
                                  rank, shape, ref);
        /* test_vulkan_prims.c's transcendental tolerance, per step of the chain */
        double rtol = (dt == TF_F32 ? 2e-5 : 1e-13) * p->n_steps;
        double atol = (dt == TF_F32 ? 1e-6 : 1e-15) * p->n_steps;
        for (uint32_t o = 0; o < m; o++) {
            char what[600];
            describe(p, what, sizeof what - 24);
            snprintf(what + strlen(what), 24, ", output %u", o);
            vk_compare(what, ref[o], fused[o], rtol, atol);
            tf_tensor_release(ref[o]);
        }
    }
    for (uint32_t o = 0; o < m; o++) {
        tf_tensor_release(fused[o]);
        tf_tensor_release(steps[o]);
    }
}

/* check_inputs on inputs in random layouts (input 0 broadcast if force_broadcast). */
static void check_program(tfr_rng *rng, const program *p, tf_dtype dt, size_t rank,
                          const int64_t *shape, int tame, int force_broadcast)
{
    vk_pair in[TF_FUSED_MAX_INPUTS];
    vk_gen g = tame ? (vk_gen){-1.0, 1.0} : (vk_gen){-3.0, 3.0};
    for (uint32_t i = 0; i < p->n_in; i++) {
        vk_layout l = (vk_layout)tfr_rng_int(rng, 0, VK_LAYOUT_COUNT_ - 1);
        if (force_broadcast && i == 0)
            l = VK_BROADCAST;
        vk_pair_make(&in[i], rng, dt, rank, shape, l, g);
    }
    check_inputs(p, dt, rank, shape, tame, in);
    for (uint32_t i = 0; i < p->n_in; i++)
        vk_pair_free(&in[i]);
}

static int f64_ok(void)
{
    tf_dtype d[3] = {TF_F64, TF_F64, TF_F64};
    return tf_engine_supports(vk_engine, TF_PRIM_FUSED, 0, d, 2) &&
           tf_engine_supports(vk_engine, TF_PRIM_FUSED, 1, d, 3);
}

/* The dtypes to test: f32, and f64 where the device has shaderFloat64 (lavapipe has). */
static size_t float_dtypes(tf_dtype *dts)
{
    dts[0] = TF_F32;
    dts[1] = TF_F64;
    return f64_ok() ? 2 : 1;
}

/* Random programs on random shapes; `several`: 2 to 8 outputs, else one. */
static void random_programs(uint64_t seed, int tame, int cases, int several)
{
    tf_dtype dts[2];
    size_t n_dts = float_dtypes(dts);
    tfr_rng rng;
    tfr_rng_seed(&rng, seed);
    for (size_t t = 0; t < n_dts; t++) {
        for (int c = 0; c < cases; c++) {
            program p;
            uint32_t n_steps = (uint32_t)tfr_rng_int(&rng, several ? 2 : 1, TF_FUSED_MAX_STEPS);
            random_program(&rng, tame, (uint32_t)tfr_rng_int(&rng, 1, TF_FUSED_MAX_INPUTS), n_steps,
                           &p);
            if (several)
                random_outputs(
                    &rng,
                    (uint32_t)tfr_rng_int(
                        &rng, 2, n_steps < TF_FUSED_MAX_OUTPUTS ? n_steps : TF_FUSED_MAX_OUTPUTS),
                    &p);
            int64_t shape[TF_MAX_RANK];
            size_t rank = tfr_random_rank(&rng, 4);
            tfr_random_shape(&rng, rank, 7, 10, shape);
            check_program(&rng, &p, dts[t], rank, shape, tame, 0);
        }
    }
}

/* Every float op in random programs of one and of several outputs: each output equals its
   step's separate result bit for bit. */
static void test_fused_equals_steps(void **state)
{
    (void)state;
    random_programs(101, 0, 60, 0);
    random_programs(106, 0, 50, 1);
}

/* Programs of well-conditioned ops, of one and of several outputs, against the CPU engine. */
static void test_fused_vs_cpu(void **state)
{
    (void)state;
    random_programs(102, 1, 40, 0);
    random_programs(107, 1, 30, 1);
}

/*
 * Every binding at once: five inputs (one broadcast) and eight outputs over ~1e5
 * elements, the outputs being the last eight steps, every other step, or the first and
 * the last; and one output per step of an 8-step program on a small strided shape.
 */
static void test_fused_outputs_wide(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 108);
    int64_t big[2] = {317, 331}, small[3] = {3, 4, 5};
    tf_dtype dts[2];
    for (size_t t = 0, n_dts = float_dtypes(dts); t < n_dts; t++) {
        for (int tame = 0; tame < 2; tame++) {
            program p;
            random_program(&rng, tame, TF_FUSED_MAX_INPUTS, TF_FUSED_MAX_STEPS, &p);
            p.n_out = TF_FUSED_MAX_OUTPUTS;
            for (uint32_t i = 0; i < p.n_out; i++)
                p.outputs[i] = TF_FUSED_MAX_STEPS - TF_FUSED_MAX_OUTPUTS + i;
            check_program(&rng, &p, dts[t], 2, big, tame, 1);
            for (uint32_t i = 0; i < p.n_out; i++)
                p.outputs[i] = 2 * i + 1;
            check_program(&rng, &p, dts[t], 3, small, tame, 0);
            p.n_out = 2;
            p.outputs[0] = 0;
            p.outputs[1] = TF_FUSED_MAX_STEPS - 1;
            check_program(&rng, &p, dts[t], 2, big, tame, 1);
            random_program(&rng, tame, 1, TF_FUSED_MAX_OUTPUTS, &p);
            p.n_out = TF_FUSED_MAX_OUTPUTS;
            for (uint32_t i = 0; i < p.n_out; i++)
                p.outputs[i] = i;
            check_program(&rng, &p, dts[t], 3, small, tame, 0);
        }
    }
}

/* Each op alone and at the end of a chain, so that every case of the shader's switch runs. */
static void test_fused_each_op(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 103);
    int64_t shape[2] = {5, 9};
    tf_dtype dts[2];
    for (size_t t = 0, n_dts = float_dtypes(dts); t < n_dts; t++) {
        for (uint32_t kind = 0; kind < 2; kind++) {
            size_t n_ops =
                kind == TF_FUSED_UNARY ? COUNT(tfr_float_unary_ops) : COUNT(tfr_float_binary_ops);
            for (size_t i = 0; i < n_ops; i++) {
                program p = {.n_in = 2, .n_steps = 2, .n_out = 1};
                p.steps[0] = (tf_fused_step){TF_FUSED_BINARY, TF_BINARY_MUL, 0, 1};
                uint32_t op =
                    kind == TF_FUSED_UNARY ? tfr_float_unary_ops[i] : tfr_float_binary_ops[i];
                p.steps[1] = (tf_fused_step){kind, op, 2, kind == TF_FUSED_BINARY ? 1u : 0u};
                check_program(&rng, &p, dts[t], 2, shape, 0, 0);
            }
        }
    }
}

/* ~1e5 elements (many workgroups, the grid-stride loop) with a broadcast input. */
static void test_fused_large(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 104);
    int64_t shape[2] = {317, 331};
    tf_dtype dts[2];
    for (size_t t = 0, n_dts = float_dtypes(dts); t < n_dts; t++) {
        program p;
        random_program(&rng, 1, 3, TF_FUSED_MAX_STEPS, &p);
        check_program(&rng, &p, dts[t], 2, shape, 1, 1);
        random_program(&rng, 0, TF_FUSED_MAX_INPUTS, TF_FUSED_MAX_STEPS, &p);
        check_program(&rng, &p, dts[t], 2, shape, 0, 1);
    }
}

/* Rank 0, and outputs with no element: nothing to do, no dispatch, no validation message. */
static void test_fused_empty_and_scalar(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 105);
    int64_t empty[3] = {4, 0, 3};
    program p;
    random_program(&rng, 0, 2, 5, &p);
    check_program(&rng, &p, TF_F32, 3, empty, 0, 0);
    check_program(&rng, &p, TF_F32, 0, empty, 1, 0);
    random_program(&rng, 1, 1, 1, &p);
    check_program(&rng, &p, TF_F32, 0, empty, 1, 0);
    random_program(&rng, 0, 3, 6, &p);
    random_outputs(&rng, 4, &p);
    check_program(&rng, &p, TF_F32, 3, empty, 0, 0);
    check_program(&rng, &p, TF_F32, 0, empty, 0, 0);
}

static void test_fused_supports(void **state)
{
    (void)state;
    enum {
        MOST = TF_FUSED_MAX_INPUTS + TF_FUSED_MAX_OUTPUTS + 1 /* one too many */
    };
    tf_dtype f32[MOST], i32[3] = {TF_I32, TF_I32, TF_I32};
    for (size_t k = 0; k < MOST; k++)
        f32[k] = TF_F32;
    /* op = m - 1 for m outputs after 1 to 5 inputs */
    for (uint32_t m = 1; m <= TF_FUSED_MAX_OUTPUTS; m++) {
        for (size_t n_in = 1; n_in <= TF_FUSED_MAX_INPUTS; n_in++)
            assert_true(tf_engine_supports(vk_engine, TF_PRIM_FUSED, m - 1, f32, n_in + m));
        assert_false(tf_engine_supports(vk_engine, TF_PRIM_FUSED, m - 1, f32, m)); /* no input */
        assert_false(tf_engine_supports(vk_engine, TF_PRIM_FUSED, m - 1, f32, m + 6)); /* six */
    }
    assert_false(tf_engine_supports(vk_engine, TF_PRIM_FUSED, TF_FUSED_MAX_OUTPUTS, f32,
                                    TF_FUSED_MAX_OUTPUTS + 2)); /* nine outputs */
    assert_false(tf_engine_supports(vk_engine, TF_PRIM_FUSED, 0, f32, 1));
    assert_false(tf_engine_supports(vk_engine, TF_PRIM_FUSED, 0, i32, 3));
    tf_dtype mixed_in[3] = {TF_F32, TF_F64, TF_F32},
             mixed_out[4] = {TF_F32, TF_F32, TF_F32, TF_F64};
    assert_false(tf_engine_supports(vk_engine, TF_PRIM_FUSED, 0, mixed_in, 3));
    assert_false(tf_engine_supports(vk_engine, TF_PRIM_FUSED, 1, mixed_out, 4));
    /* Where the CPU engine runs FUSED (with several outputs), both claim the same lists. */
    if (!cpu_has_fused(TF_F32, 1, 1))
        return;
    uint32_t last_op = cpu_has_fused(TF_F32, 1, 2) ? TF_FUSED_MAX_OUTPUTS : 0;
    static const tf_dtype dts[] = {TF_F32, TF_F64, TF_I32, TF_I64, TF_BOOL};
    for (uint32_t op = 0; op <= last_op; op++) {
        for (size_t n = 1; n <= MOST; n++) {
            for (size_t t = 0; t < COUNT(dts); t++) {
                tf_dtype d[MOST];
                for (size_t k = 0; k < n; k++)
                    d[k] = dts[t];
                int cpu = tf_engine_supports(vk_cpu, TF_PRIM_FUSED, op, d, n);
                int vk = tf_engine_supports(vk_engine, TF_PRIM_FUSED, op, d, n);
                if (dts[t] != TF_F64 || f64_ok())
                    assert_int_equal(cpu != 0, vk != 0);
            }
        }
    }
}

/*
 * expm1 and log1p on vk_small_args (tiny arguments among them, where drivers that fold
 * log(exp(x)) or (1 + x) - 1 cancel the shaders' corrections), each alone (so that the
 * other one's function, and the decorations of its `precise` values, are dropped from the
 * module) and both as the two outputs of one program, in the vector form (dense) and the
 * strided one (reversed): each output within a few ulps of the exact value and equal bit
 * for bit to its step run as a separate UNARY call.
 */
static void test_fused_small_args(void **state)
{
    (void)state;
    tf_engine *saved = vk_fresh_begin(NULL, NULL);
    tf_dtype dts[2];
    size_t n_dts = float_dtypes(dts);
    for (size_t t = 0; t < n_dts; t++) {
        double x[VK_SMALL_ARGS], rx[VK_SMALL_ARGS];
        size_t n = vk_small_args(dts[t], x);
        for (size_t i = 0; i < n; i++)
            rx[i] = x[n - 1 - i];
        int64_t shape[1] = {(int64_t)n};
        int axis = 0;
        tf_tensor *in[2] = {vk_upload_values(dts[t], n, x), NULL};
        TF_ASSERT_OK(tf_tensor_reverse(in[0], 1, &axis, &in[1]));
        for (int both = 0; both < 3; both++) { /* expm1, log1p, both */
            program p = {.n_in = 1, .n_steps = 1, .n_out = 1, .outputs = {0, 1}};
            p.steps[0] =
                (tf_fused_step){TF_FUSED_UNARY, both == 1 ? TF_UNARY_LOG1P : TF_UNARY_EXPM1, 0, 0};
            p.steps[1] = (tf_fused_step){TF_FUSED_UNARY, TF_UNARY_LOG1P, 0, 0};
            if (both == 2)
                p.n_steps = p.n_out = 2;
            for (int r = 0; r < 2; r++) {
                tf_tensor *fused[2], *steps[2];
                run_fused(vk_engine, &p, &in[r], dts[t], 1, shape, fused);
                tfr_fused_run_outputs(vk_engine, 1, p.n_steps, p.steps, p.n_out, p.outputs, &in[r],
                                      dts[t], 1, shape, steps);
                for (uint32_t o = 0; o < p.n_out; o++) {
                    uint32_t op = p.steps[o].op;
                    assert_identical("small arguments", &p, o, steps[o], fused[o]);
                    vk_assert_ulps(tf_prim_op_name(TF_PRIM_UNARY, op), dts[t], fused[o], r ? rx : x,
                                   n, op == TF_UNARY_EXPM1 ? expm1l : log1pl,
                                   VK_SMALL_ARGS_ULPS(dts[t]));
                    tf_tensor_release(fused[o]);
                    tf_tensor_release(steps[o]);
                }
            }
        }
        tf_tensor_release(in[0]);
        tf_tensor_release(in[1]);
        vk_assert_pipeline_used(dts[t] == TF_F32 ? "fused_f32_v4" : "fused_f64_v4");
        vk_assert_pipeline_used(dts[t] == TF_F32 ? "fused_f32" : "fused_f64");
    }
    vk_fresh_end(saved);
}

/* ---- forms and the pipeline cache ------------------------------------------------------ */

/* fused.comp's form word (specialisation constant 0, as vk_prims.c's fused_program makes
   it): inputs, steps, walk rank (strided form), dense, broadcast inputs, outputs. */
static uint32_t form(uint32_t n_in, uint32_t n_steps, uint32_t rank, uint32_t dense, uint32_t bcast,
                     uint32_t m)
{
    return n_in | n_steps << 3 | rank << 8 | dense << 12 | bcast << 13 | m << 18;
}

/* Pipelines the fresh engine made of `module` for form word `spec` (needle "" : any). */
static size_t made(const char *module, uint32_t spec, const char *needle)
{
    char line[128];
    snprintf(line, sizeof line, "vulkan: pipeline %s spec %u program %s", module, spec, needle);
    return tf_test_log_count(TF_LOG_DEBUG, line);
}

/* An operand of `shape` (rank 2) viewing a dense root of root_n elements with `strides`
   (NULL: dense) from `offset`, on both engines. */
static void view_pair(vk_pair *p, tfr_rng *rng, tf_dtype dt, int64_t root_n, const int64_t *strides,
                      int64_t offset, const int64_t *shape)
{
    vk_pair root;
    vk_pair_make(&root, rng, dt, 1, &root_n, VK_DENSE, (vk_gen){-1.0, 1.0});
    TF_ASSERT_OK(tf_tensor_view(root.cpu, 2, shape, strides, offset, &p->cpu));
    TF_ASSERT_OK(tf_tensor_view(root.vk, 2, shape, strides, offset, &p->vk));
    vk_pair_free(&root);
}

/*
 * Which form runs a call: the vector form when every input is dense in the outputs'
 * order or a broadcast element and the dense ones start at multiples of 4; the dense
 * element form when one does not; the strided form, compiled for the walk's rank, when
 * an input is transposed or broadcast along one axis only (a broadcast element is still
 * read once there). Each case must equal the
 * separate steps bit for bit (and the CPU engine), make the expected pipeline once, and
 * make nothing when it runs again.
 */
static void test_fused_forms(void **state)
{
    (void)state;
    enum {
        R = 37,
        C = 29,
        N = R * C /* 1073: the vector form has a tail */
    };
    static const int64_t shape[2] = {R, C}, dense[2] = {1, R}, transposed[2] = {C, 1},
                         bias[2] = {1, 0}, scalar[2] = {0, 0};
    static const struct {
        const char *what;
        int64_t root_n[3], offset[3];
        const int64_t *strides[3];
        int vector;
        uint32_t rank, dense, bcast;
    } cases[] = {
        {"dense", {N, N, N}, {0, 0, 0}, {NULL, NULL, NULL}, 1, 0, 1, 0},
        {"offsets 4, 8", {N + 4, N + 8, N}, {4, 8, 0}, {NULL, dense, NULL}, 1, 0, 1, 0},
        {"a scalar", {N, N, 1}, {0, 0, 0}, {NULL, NULL, scalar}, 1, 0, 1, 4},
        {"scalars only", {1, 1, 1}, {0, 0, 0}, {scalar, scalar, scalar}, 1, 0, 1, 7},
        {"offset 1", {N + 1, N, 1}, {1, 0, 0}, {NULL, NULL, scalar}, 0, 0, 1, 4},
        {"transposed", {N, N, N}, {0, 0, 0}, {NULL, transposed, NULL}, 0, 2, 0, 0},
        {"transposed, a scalar", {N, N, 1}, {0, 0, 0}, {NULL, transposed, scalar}, 0, 2, 0, 4},
        {"bias", {N, N, R}, {0, 0, 0}, {NULL, NULL, bias}, 0, 2, 0, 0},
    };
    /* r3 = r0 * r1, r4 = r3 + r2, r5 = tanh(r4): one output, then two */
    program p = {.n_in = 3, .n_steps = 3, .n_out = 1};
    p.steps[0] = (tf_fused_step){TF_FUSED_BINARY, TF_BINARY_MUL, 0, 1};
    p.steps[1] = (tf_fused_step){TF_FUSED_BINARY, TF_BINARY_ADD, 3, 2};
    p.steps[2] = (tf_fused_step){TF_FUSED_UNARY, TF_UNARY_TANH, 4, 0};
    tf_engine *saved = vk_fresh_begin(NULL, NULL);
    tfr_rng rng;
    tfr_rng_seed(&rng, 109);
    tf_dtype dts[2];
    for (size_t t = 0, n_dts = float_dtypes(dts); t < n_dts; t++) {
        for (uint32_t m = 1; m <= 2; m++) {
            p.n_out = m;
            p.outputs[0] = 1;
            p.outputs[1] = 2;
            for (size_t c = 0; c < COUNT(cases); c++) {
                vk_pair in[3];
                for (int i = 0; i < 3; i++)
                    view_pair(&in[i], &rng, dts[t], cases[c].root_n[i], cases[c].strides[i],
                              cases[c].offset[i], shape);
                char module[32];
                snprintf(module, sizeof module, "fused_%s%s", dts[t] == TF_F32 ? "f32" : "f64",
                         cases[c].vector ? "_v4" : "");
                uint32_t spec = form(3, 3, cases[c].rank, cases[c].dense, cases[c].bcast, m);
                for (int again = 0; again < 2; again++) {
                    check_inputs(&p, dts[t], 2, shape, 1, in);
                    if (made(module, spec, "") != 1) {
                        tf_test_log_dump();
                        fail_msg("%s, %u output(s): %zu pipelines %s spec %u", cases[c].what, m,
                                 made(module, spec, ""), module, spec);
                    }
                }
                for (int i = 0; i < 3; i++)
                    vk_pair_free(&in[i]);
            }
        }
    }
    vk_fresh_end(saved);
}

/* A one-step program: op on input 0 (step word kind | op << 1 in the log's "program"). */
static program unary_program(uint32_t op)
{
    program p = {.n_in = 1, .n_steps = 1, .n_out = 1};
    p.steps[0] = (tf_fused_step){TF_FUSED_UNARY, op, 0, 0};
    return p;
}

/* Pipelines made of the one-step program `op` (f32, dense: the vector form). */
static size_t made_op(uint32_t op)
{
    char needle[16];
    snprintf(needle, sizeof needle, "%08x", op << 1);
    return made("fused_f32_v4", form(1, 1, 0, 1, 0, 1), needle);
}

/*
 * The engine keeps at most fused_pipelines program pipelines (here 3), dropping the
 * least recently used; a dropped program is compiled again when it comes back, a kept
 * one never. Programs whose pipelines a pending batch holds are not dropped under it:
 * five new programs recorded into one batch still run right, with the validation layer
 * (which sees a pipeline destroyed while in use) silent. Bad values of the option are
 * refused at create.
 */
static void test_fused_pipeline_cache(void **state)
{
    (void)state;
    static const char *const bad[] = {"0", "-1", "abc", "65537", "3k", ""};
    for (size_t i = 0; i < COUNT(bad); i++) {
        tf_engine *e = NULL;
        TF_ASSERT_STATUS(tfr_engine_create("vulkan", 0, "fused_pipelines", bad[i], &e),
                         TF_ERR_VALIDATION);
        assert_non_null(strstr(tf_error_cause(), "fused_pipelines"));
        assert_null(e);
    }
    tf_engine *saved = vk_fresh_begin("fused_pipelines", "3");
    tfr_rng rng;
    tfr_rng_seed(&rng, 110);
    int64_t shape[1] = {64};
    vk_pair x;
    vk_pair_make(&x, &rng, TF_F32, 1, shape, VK_DENSE, (vk_gen){-3.0, 3.0});
    /* op, then how many times each of neg, abs, square, floor has been compiled after it */
    static const struct {
        uint32_t op;
        size_t neg, abs, square, floor, dropped;
    } seq[] = {
        {TF_UNARY_NEG, 1, 0, 0, 0, 0},    {TF_UNARY_ABS, 1, 1, 0, 0, 0},
        {TF_UNARY_SQUARE, 1, 1, 1, 0, 0}, {TF_UNARY_NEG, 1, 1, 1, 0, 0}, /* kept */
        {TF_UNARY_FLOOR, 1, 1, 1, 1, 1},                                 /* abs goes */
        {TF_UNARY_ABS, 1, 2, 1, 1, 2},                                   /* square goes */
        {TF_UNARY_NEG, 1, 2, 1, 1, 2},                                   /* kept */
        {TF_UNARY_SQUARE, 1, 2, 2, 1, 3},                                /* floor goes */
        {TF_UNARY_FLOOR, 1, 2, 2, 2, 4},                                 /* abs goes */
    };
    for (size_t i = 0; i < COUNT(seq); i++) {
        program p = unary_program(seq[i].op);
        check_inputs(&p, TF_F32, 1, shape, 0, &x); /* reads: every batch completes */
        size_t got[5] = {made_op(TF_UNARY_NEG), made_op(TF_UNARY_ABS), made_op(TF_UNARY_SQUARE),
                         made_op(TF_UNARY_FLOOR),
                         tf_test_log_count(TF_LOG_DEBUG, "program dropped")};
        size_t want[5] = {seq[i].neg, seq[i].abs, seq[i].square, seq[i].floor, seq[i].dropped};
        if (memcmp(got, want, sizeof got) != 0) {
            tf_test_log_dump();
            fail_msg("call %zu (op %u): made neg %zu abs %zu square %zu floor %zu, dropped %zu", i,
                     seq[i].op, got[0], got[1], got[2], got[3], got[4]);
        }
    }
    /* Five new programs into one batch, then read. */
    static const uint32_t fresh_ops[] = {TF_UNARY_CEIL, TF_UNARY_SIGN, TF_UNARY_RECIPROCAL,
                                         TF_UNARY_SQRT, TF_UNARY_EXP};
    tf_tensor *out[COUNT(fresh_ops)], *want[COUNT(fresh_ops)];
    for (size_t i = 0; i < COUNT(fresh_ops); i++) {
        program p = unary_program(fresh_ops[i]);
        run_fused(vk_engine, &p, &x.vk, TF_F32, 1, shape, &out[i]);
    }
    for (size_t i = 0; i < COUNT(fresh_ops); i++) {
        program p = unary_program(fresh_ops[i]);
        assert_int_equal(made_op(fresh_ops[i]), 1);
        tfr_fused_run_outputs(vk_engine, 1, 1, p.steps, 1, p.outputs, &x.vk, TF_F32, 1, shape,
                              &want[i]);
        assert_identical("a program of a full batch", &p, 0, want[i], out[i]);
        tf_tensor_release(out[i]);
        tf_tensor_release(want[i]);
    }
    vk_pair_free(&x);
    vk_fresh_end(saved);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fused_supports),
        cmocka_unit_test(test_fused_each_op),
        cmocka_unit_test(test_fused_small_args),
        cmocka_unit_test(test_fused_equals_steps),
        cmocka_unit_test(test_fused_vs_cpu),
        cmocka_unit_test(test_fused_large),
        cmocka_unit_test(test_fused_empty_and_scalar),
        cmocka_unit_test(test_fused_outputs_wide),
        cmocka_unit_test(test_fused_forms),
        cmocka_unit_test(test_fused_pipeline_cache),
    };
    return cmocka_run_group_tests_name("vulkan FUSED", tests, vk_group_setup, vk_group_teardown);
}
