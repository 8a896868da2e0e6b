/*
 * test_cpu_fused.c - TF_PRIM_FUSED of the CPU engine. The reference is the same
 * program run as separate UNARY and BINARY calls on the same engine, each into a
 * dense tensor: engine_abi.h promises the CPU engine gives those values bit for bit.
 * The comparison is of the bits, except that any NaN equals any NaN (the vectorised
 * and scalar loops of one kernel may each propagate the other operand's NaN).
 *
 * Random programs (1 to TF_FUSED_MAX_STEPS steps over 1 to TF_FUSED_MAX_INPUTS
 * inputs, every float op) over random shapes of rank 0 to 4 (empty ones included)
 * and inputs of every layout (transposed, stepped with an offset, reversed,
 * broadcast, engine-resident), sizes around the engine's chunk lengths and its
 * threading grain; all on the serial, threaded and always-streaming engine. The
 * same for programs of several outputs (ABI 1.3): each output must hold, bit for
 * bit, the register of its step as the separate calls compute it.
 *
 * tf_engine_execute always validates and never lets an output share an input's
 * memory, so the in-place form (out[0] is one of the inputs) and the engine's own
 * checks of an unvalidated call are tested through the plugin's descriptor,
 * loaded directly from TF_CPU_PLUGIN_FILE.
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "cpu_direct.h"
#include "cpu_fixture.h"

static const tf_dtype float_dtypes[] = {TF_F32, TF_F64};


#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ===================================================================== */
/* Programs                                                               */
/* ===================================================================== */

typedef struct prog {
    uint32_t n_in;
    uint32_t n_out; /* 1, or several (params.n_outputs and outputs set) */
    tf_fused_params params;
    tf_fused_step steps[TF_FUSED_MAX_STEPS];
    uint32_t outputs[TF_FUSED_MAX_OUTPUTS];
} prog;

static void prog_random(tfr_rng *rng, uint32_t n_in, uint32_t n_steps, prog *p)
{
    p->n_in = n_in;
    p->n_out = 1;
    p->params = (tf_fused_params){sizeof p->params, n_steps, p->steps, 0, NULL, 0, NULL, 0, 0};
    tfr_fused_random_steps(rng, n_in, n_steps, p->steps);
}

static void prog_set(prog *p, uint32_t n_in, uint32_t n_steps, const tf_fused_step *steps)
{
    p->n_in = n_in;
    p->n_out = 1;
    p->params = (tf_fused_params){sizeof p->params, n_steps, p->steps, 0, NULL, 0, NULL, 0, 0};
    memcpy(p->steps, steps, n_steps * sizeof *steps);
}

/* Makes p a program of n_out outputs: the steps `outputs` (n_out > 1 of them). */
static void prog_set_outputs(prog *p, uint32_t n_out, const uint32_t *outputs)
{
    p->n_out = n_out;
    memcpy(p->outputs, outputs, n_out * sizeof *outputs);
    p->params.n_outputs = n_out;
    p->params.outputs = p->outputs;
}

/* n_out (2 .. n_steps) random outputs: n_out - 1 distinct earlier steps, then the last. */
static void prog_random_outputs(tfr_rng *rng, prog *p, uint32_t n_out)
{
    uint32_t outputs[TF_FUSED_MAX_OUTPUTS], n = 0, n_steps = p->params.n_steps;
    for (uint32_t k = 0; k + 1 < n_steps; k++) /* selection sampling keeps them in order */
        if ((uint32_t)tfr_rng_int(rng, 0, n_steps - 2 - k) < n_out - 1 - n)
            outputs[n++] = k;
    outputs[n++] = n_steps - 1;
    prog_set_outputs(p, n, outputs);
}

/* ===================================================================== */
/* Running and comparing                                                  */
/* ===================================================================== */


/* Runs p fused on `in` and as separate steps; compares every element of every output. */
static void check_prog(const prog *p, tf_dtype dtype, size_t rank, const int64_t *shape,
                       const tfr_input *in, const char *label)
{
    char what[1200], desc[700], s[96];
    tf_tensor *args[TF_FUSED_MAX_INPUTS];
    tfr_fused_describe(p->n_in, p->params.n_steps, p->steps, desc, sizeof desc);
    int used = snprintf(what, sizeof what, "%s %s shape %s [%s] outputs", label,
                        tf_dtype_name(dtype), tfr_shape_str(rank, shape, s, sizeof s), desc);
    for (uint32_t i = 0; i < p->n_out && used > 0 && (size_t)used < sizeof what; i++)
        used += snprintf(what + used, sizeof what - (size_t)used, " r%u",
                         p->n_in + (p->n_out > 1 ? p->outputs[i] : p->params.n_steps - 1));
    if (used > 0 && (size_t)used < sizeof what)
        used += snprintf(what + used, sizeof what - (size_t)used, ", layouts");
    for (uint32_t k = 0; k < p->n_in; k++) {
        args[k] = in[k].t;
        if (used > 0 && (size_t)used < sizeof what)
            used += snprintf(what + used, sizeof what - (size_t)used, " %s",
                             tfr_layout_name(in[k].layout));
    }
    tf_tensor *out[TF_FUSED_MAX_OUTPUTS], *ref[TF_FUSED_MAX_OUTPUTS];
    for (uint32_t i = 0; i < p->n_out; i++)
        out[i] = tfr_output(cpu_engine, dtype, rank, shape);
    tfr_exec_ok(what, cpu_engine, TF_PRIM_FUSED, &p->params, p->n_in, args, p->n_out, out);
    tfr_fused_run_outputs(cpu_engine, p->n_in, p->params.n_steps, p->steps, p->n_out, p->outputs,
                          args, dtype, rank, shape, ref);
    size_t n = tfr_numel(rank, shape);
    for (uint32_t i = 0; i < p->n_out; i++) {
        char which[1300];
        snprintf(which, sizeof which, "%s: output %u", what, i);
        tf_scalar *got = tfr_read(out[i]), *want = tfr_read(ref[i]);
        tfr_check_same_bits(which, dtype, n, got, want);
        free(got);
        free(want);
        tf_tensor_release(ref[i]);
        tf_tensor_release(out[i]);
    }
}

/* Values mostly in [-2, 2] (long chains stay finite), some inputs with NaN, inf, +-0. */
static void make_inputs(tfr_rng *rng, uint32_t n_in, tf_dtype dtype, size_t rank,
                        const int64_t *shape, tfr_input *in)
{
    for (uint32_t k = 0; k < n_in; k++) {
        tfr_gen gen = {tfr_rng_chance(rng, 25) ? TFR_SPECIAL : TFR_UNIFORM, -2.0, 2.0};
        tfr_input_make(&in[k], rng, cpu_engine, dtype, rank, shape, tfr_random_layout(rng), &gen);
    }
}

static void free_inputs(uint32_t n_in, tfr_input *in)
{
    for (uint32_t k = 0; k < n_in; k++)
        tfr_input_free(&in[k]);
}

/* One random program over random inputs of `shape`; with `several`, of 2 to
   TF_FUSED_MAX_OUTPUTS outputs (no more than it has steps). */
static void check_random_(tfr_rng *rng, tf_dtype dtype, size_t rank, const int64_t *shape,
                          const char *label, int several)
{
    tfr_input in[TF_FUSED_MAX_INPUTS];
    prog p;
    uint32_t n_in = (uint32_t)tfr_rng_int(rng, 1, TF_FUSED_MAX_INPUTS);
    prog_random(rng, n_in, (uint32_t)tfr_rng_int(rng, several ? 2 : 1, TF_FUSED_MAX_STEPS), &p);
    if (several) {
        uint32_t most =
            p.params.n_steps < TF_FUSED_MAX_OUTPUTS ? p.params.n_steps : TF_FUSED_MAX_OUTPUTS;
        prog_random_outputs(rng, &p, (uint32_t)tfr_rng_int(rng, 2, most));
    }
    make_inputs(rng, n_in, dtype, rank, shape, in);
    check_prog(&p, dtype, rank, shape, in, label);
    free_inputs(n_in, in);
}

static void check_random(tfr_rng *rng, tf_dtype dtype, size_t rank, const int64_t *shape,
                         const char *label)
{
    check_random_(rng, dtype, rank, shape, label, 0);
}

/* ===================================================================== */
/* Tests through tf_engine_execute                                        */
/* ===================================================================== */

/* 150 random programs per dtype (`several`: of several outputs) over random small shapes,
   rank 0..4, empty extents included. */
static void check_random_shapes(uint64_t seed, int several, const char *label)
{
    tfr_rng rng;
    tfr_rng_seed(&rng, seed);
    for (size_t d = 0; d < COUNT(float_dtypes); d++) {
        for (int t = 0; t < 150; t++) {
            int64_t shape[TF_MAX_RANK];
            size_t rank = (size_t)tfr_rng_int(&rng, 0, 4);
            tfr_random_shape(&rng, rank, rank > 2 ? 5 : 9, 8, shape);
            check_random_(&rng, float_dtypes[d], rank, shape, label, several);
        }
    }
}

static void test_fused_random(void **state)
{
    (void)state;
    check_random_shapes(1601, 0, "random");
}

/* Lengths around the vector block (16), the engine's chunks (64 to 256 elements), the
   streamed piece (4096 bytes) and the costly ops' threading grain (4096 elements). */
static void test_fused_sizes(void **state)
{
    (void)state;
    static const int64_t lengths[] = {1,    15,   16,   17,   63,    64,    65,
                                      127,  128,  129,  255,  256,   257,   1023,
                                      1025, 4095, 4097, 8193, 40000, 65537, 100003};
    tfr_rng rng;
    tfr_rng_seed(&rng, 1602);
    for (size_t d = 0; d < COUNT(float_dtypes); d++) {
        for (size_t l = 0; l < COUNT(lengths); l++) {
            check_random(&rng, float_dtypes[d], 1, &lengths[l], "length");
            /* the same length as the inner or outer axis of a matrix */
            int64_t m[2] = {lengths[l], 3};
            check_random(&rng, float_dtypes[d], 2, m, "inner length");
            int64_t t[2] = {3, lengths[l]};
            check_random(&rng, float_dtypes[d], 2, t, "outer length");
        }
    }
}

/* About 100k elements in shapes of every rank: threads split it, rows of every length. */
static void test_fused_large(void **state)
{
    (void)state;
    static const int64_t shapes[][4] = {
        {100000, 1, 1, 1}, {317, 331, 1, 1}, {7, 129, 111, 1}, {17, 19, 23, 15}, {2, 50000, 1, 1}};
    static const size_t ranks[] = {1, 2, 3, 4, 2};
    tfr_rng rng;
    tfr_rng_seed(&rng, 1603);
    for (size_t d = 0; d < COUNT(float_dtypes); d++)
        for (size_t s = 0; s < COUNT(shapes); s++)
            for (int t = 0; t < 3; t++)
                check_random(&rng, float_dtypes[d], ranks[s], shapes[s], "large");
    /* cheap steps only: split between threads only above CPU_GRAIN_CHEAP (256 Ki elements
       a piece), where a random program's costly step splits from 4 Ki */
    static const tf_fused_step cheap[3] = {{TF_FUSED_BINARY, TF_BINARY_MUL, 0, 1},
                                           {TF_FUSED_BINARY, TF_BINARY_ADD, 2, 0},
                                           {TF_FUSED_BINARY, TF_BINARY_SUB, 3, 1}};
    const int64_t big = 600001;
    for (size_t d = 0; d < COUNT(float_dtypes); d++) {
        tfr_input in[2];
        prog p;
        prog_set(&p, 2, 3, cheap);
        make_inputs(&rng, 2, float_dtypes[d], 1, &big, in);
        check_prog(&p, float_dtypes[d], 1, &big, in, "cheap, large");
        free_inputs(2, in);
    }
}

/* Two inputs, r2..r6 all alive until the end, then summed: r7 = r2 + r3, ... */
static const tf_fused_step k_live[] = {
    {TF_FUSED_UNARY, TF_UNARY_EXP, 0, 0},     {TF_FUSED_UNARY, TF_UNARY_SIN, 1, 0},
    {TF_FUSED_BINARY, TF_BINARY_MUL, 0, 1},   {TF_FUSED_UNARY, TF_UNARY_TANH, 1, 0},
    {TF_FUSED_UNARY, TF_UNARY_SIGMOID, 0, 0}, {TF_FUSED_BINARY, TF_BINARY_ADD, 2, 3},
    {TF_FUSED_BINARY, TF_BINARY_SUB, 7, 4},   {TF_FUSED_BINARY, TF_BINARY_POW, 8, 5},
    {TF_FUSED_BINARY, TF_BINARY_REM, 9, 6}};

/* The largest program: 5 inputs, TF_FUSED_MAX_STEPS steps r[5+k] = f(r[4+k], r[k % 5]). */
static void longest_program(tf_fused_step *steps)
{
    for (uint32_t k = 0; k < TF_FUSED_MAX_STEPS; k++)
        steps[k] = (tf_fused_step){TF_FUSED_BINARY, tfr_float_binary_ops[k % 4], 4 + k, k % 5};
    steps[5] = (tf_fused_step){TF_FUSED_UNARY, TF_UNARY_EXPM1, 9, 0};
    steps[11] = (tf_fused_step){TF_FUSED_UNARY, TF_UNARY_LOG1P, 15, 0};
}

/* A program given by its steps (and outputs when n_out > 1). */
typedef struct known_prog {
    uint32_t n_in, n_steps, n_out;
    const char *name;
} known_prog;

/* Each program (steps[c], outs[c]) on both float dtypes, over [m, n] shapes from empty to
   about 90k elements, inputs of random layouts. */
static void check_known(uint64_t seed, const known_prog *cases, const tf_fused_step *const *steps,
                        const uint32_t *const *outs, size_t n_cases)
{
    static const int64_t shapes[][2] = {{0, 3}, {1, 1}, {5, 7}, {129, 2}, {300, 301}};
    tfr_rng rng;
    tfr_rng_seed(&rng, seed);
    for (size_t d = 0; d < COUNT(float_dtypes); d++) {
        for (size_t c = 0; c < n_cases; c++) {
            for (size_t s = 0; s < COUNT(shapes); s++) {
                prog p;
                tfr_input in[TF_FUSED_MAX_INPUTS];
                prog_set(&p, cases[c].n_in, cases[c].n_steps, steps[c]);
                if (cases[c].n_out > 1)
                    prog_set_outputs(&p, cases[c].n_out, outs[c]);
                make_inputs(&rng, p.n_in, float_dtypes[d], 2, shapes[s], in);
                check_prog(&p, float_dtypes[d], 2, shapes[s], in, cases[c].name);
                free_inputs(p.n_in, in);
            }
        }
    }
}

/* Programs of known structure: an input read by many steps, the output the last of several
   live registers, steps whose value nobody reads, the largest program. */
static void test_fused_structures(void **state)
{
    (void)state;
    static const tf_fused_step reuse[] = {
        /* r1 = r0*r0; r2 = r1 + r0; r3 = r0 - r2; r4 = max(r0, r0); r5 = r3 / r4 */
        {TF_FUSED_BINARY, TF_BINARY_MUL, 0, 0},
        {TF_FUSED_BINARY, TF_BINARY_ADD, 1, 0},
        {TF_FUSED_BINARY, TF_BINARY_SUB, 0, 2},
        {TF_FUSED_BINARY, TF_BINARY_MAX, 0, 0},
        {TF_FUSED_BINARY, TF_BINARY_DIV, 3, 4}};
    static const tf_fused_step dead[] = {
        /* r2 and r4 are never read; the result is r5 = erf(r3) with r3 = r1 * r0 */
        {TF_FUSED_UNARY, TF_UNARY_LOG, 0, 0},
        {TF_FUSED_BINARY, TF_BINARY_MUL, 1, 0},
        {TF_FUSED_UNARY, TF_UNARY_COS, 3, 0},
        {TF_FUSED_UNARY, TF_UNARY_ERF, 3, 0}};
    static const tf_fused_step single[] = {{TF_FUSED_UNARY, TF_UNARY_RSQRT, 0, 0}};
    static const tf_fused_step last_input[] = {{TF_FUSED_BINARY, TF_BINARY_MIN, 4, 2}};
    tf_fused_step longest[TF_FUSED_MAX_STEPS];
    longest_program(longest);
    static const known_prog cases[] = {
        {1, COUNT(reuse), 1, "input reused"},     {2, COUNT(k_live), 1, "many live registers"},
        {2, COUNT(dead), 1, "dead steps"},        {1, COUNT(single), 1, "one step"},
        {5, COUNT(last_input), 1, "last inputs"}, {5, TF_FUSED_MAX_STEPS, 1, "longest"}};
    const tf_fused_step *steps[] = {reuse, k_live, dead, single, last_input, longest};
    check_known(1604, cases, steps, NULL, COUNT(cases));
}

static void test_fused_outputs_random(void **state)
{
    (void)state;
    check_random_shapes(1611, 1, "several outputs");
}

/* Several outputs at lengths around the chunks, the streamed piece (shared by the
   outputs) and the threading grains; about 100k elements in shapes of rank 1 to 4. */
static void test_fused_outputs_sizes(void **state)
{
    (void)state;
    static const int64_t lengths[] = {1,    17,   63,   64,    65,    255,   257,
                                      1025, 4097, 8193, 40000, 65537, 100003};
    static const int64_t shapes[][4] = {{317, 331, 1, 1}, {7, 129, 111, 1}, {17, 19, 23, 15}};
    static const size_t ranks[] = {2, 3, 4};
    tfr_rng rng;
    tfr_rng_seed(&rng, 1612);
    for (size_t d = 0; d < COUNT(float_dtypes); d++) {
        for (size_t l = 0; l < COUNT(lengths); l++) {
            check_random_(&rng, float_dtypes[d], 1, &lengths[l], "several outputs, length", 1);
            int64_t m[2] = {3, lengths[l]};
            check_random_(&rng, float_dtypes[d], 2, m, "several outputs, outer length", 1);
        }
        for (size_t s = 0; s < COUNT(shapes); s++)
            check_random_(&rng, float_dtypes[d], ranks[s], shapes[s], "several outputs, large", 1);
    }
}

/* Outputs of known structure: every step an output; outputs read by later steps; an
   output nobody reads; outputs among many live registers; the most outputs of the
   longest program. */
static void test_fused_outputs_structures(void **state)
{
    (void)state;
    static const tf_fused_step chain[] = {
        /* r1 = -r0; r2 = exp(r1); r3 = r2 * r0; ... every one an output */
        {TF_FUSED_UNARY, TF_UNARY_NEG, 0, 0},   {TF_FUSED_UNARY, TF_UNARY_EXP, 1, 0},
        {TF_FUSED_BINARY, TF_BINARY_MUL, 2, 0}, {TF_FUSED_UNARY, TF_UNARY_TANH, 3, 0},
        {TF_FUSED_BINARY, TF_BINARY_ADD, 4, 1}, {TF_FUSED_UNARY, TF_UNARY_SQUARE, 5, 0},
        {TF_FUSED_BINARY, TF_BINARY_SUB, 6, 3}, {TF_FUSED_BINARY, TF_BINARY_DIV, 7, 2}};
    static const uint32_t chain_out[] = {0, 1, 2, 3, 4, 5, 6, 7};
    static const tf_fused_step reread[] = {
        /* r2 = exp(r0) [out]; r3 = r2 * r1; r4 = sin(r2) [out]; r5 = r3 + r4 [out] */
        {TF_FUSED_UNARY, TF_UNARY_EXP, 0, 0},
        {TF_FUSED_BINARY, TF_BINARY_MUL, 2, 1},
        {TF_FUSED_UNARY, TF_UNARY_SIN, 2, 0},
        {TF_FUSED_BINARY, TF_BINARY_ADD, 3, 4}};
    static const uint32_t reread_out[] = {0, 2, 3};
    static const tf_fused_step unread[] = {
        /* r1 = log(r0) [out, read by nobody]; r2 = cos(r0); r3 = r2 * r2 [out] */
        {TF_FUSED_UNARY, TF_UNARY_LOG, 0, 0},
        {TF_FUSED_UNARY, TF_UNARY_COS, 0, 0},
        {TF_FUSED_BINARY, TF_BINARY_MUL, 2, 2}};
    static const uint32_t unread_out[] = {0, 2};
    static const uint32_t live_out[] = {1, 4, 5, 8};
    tf_fused_step longest[TF_FUSED_MAX_STEPS];
    longest_program(longest);
    static const uint32_t longest_out[] = {1, 3, 5, 7, 9, 11, 13, 15};
    static const known_prog cases[] = {
        {1, COUNT(chain), COUNT(chain_out), "every step an output"},
        {2, COUNT(reread), COUNT(reread_out), "outputs read again"},
        {1, COUNT(unread), COUNT(unread_out), "an output nobody reads"},
        {2, COUNT(k_live), COUNT(live_out), "outputs among live registers"},
        {5, TF_FUSED_MAX_STEPS, COUNT(longest_out), "longest, most outputs"}};
    const tf_fused_step *steps[] = {chain, reread, unread, k_live, longest};
    const uint32_t *outs[] = {chain_out, reread_out, unread_out, live_out, longest_out};
    check_known(1613, cases, steps, outs, COUNT(cases));
}

/* supports(): one float dtype for all operands, 1 .. TF_FUSED_MAX_INPUTS inputs and, with
   op m - 1 (ABI 1.3), m = 1 .. TF_FUSED_MAX_OUTPUTS outputs. */
static void test_fused_supports(void **state)
{
    (void)state;
    enum {
        MOST = TF_FUSED_MAX_INPUTS + TF_FUSED_MAX_OUTPUTS
    };
    tf_dtype d[MOST + 1];
    for (size_t k = 0; k < COUNT(float_dtypes); k++) {
        tf_dtype t = float_dtypes[k], other = t == TF_F32 ? TF_F64 : TF_F32;
        for (size_t n = 0; n < COUNT(d); n++)
            d[n] = t;
        for (uint32_t m = 1; m <= TF_FUSED_MAX_OUTPUTS; m++) {
            for (size_t n_in = 1; n_in <= TF_FUSED_MAX_INPUTS; n_in++) {
                assert_true(tf_engine_supports(cpu_engine, TF_PRIM_FUSED, m - 1, d, n_in + m));
                for (size_t o = n_in; o < n_in + m; o++) { /* an output of the other dtype */
                    d[o] = other;
                    assert_false(tf_engine_supports(cpu_engine, TF_PRIM_FUSED, m - 1, d, n_in + m));
                    d[o] = t;
                }
            }
            /* no input, or one more than TF_FUSED_MAX_INPUTS */
            assert_false(tf_engine_supports(cpu_engine, TF_PRIM_FUSED, m - 1, d, m));
            assert_false(tf_engine_supports(cpu_engine, TF_PRIM_FUSED, m - 1, d,
                                            TF_FUSED_MAX_INPUTS + 1 + m));
        }
        /* more outputs than TF_FUSED_MAX_OUTPUTS */
        assert_false(tf_engine_supports(cpu_engine, TF_PRIM_FUSED, TF_FUSED_MAX_OUTPUTS, d, MOST));
        assert_false(
            tf_engine_supports(cpu_engine, TF_PRIM_FUSED, TF_FUSED_MAX_OUTPUTS, d, MOST + 1));
    }
    static const tf_dtype others[] = {TF_I32, TF_I64, TF_BOOL};
    for (size_t k = 0; k < COUNT(others); k++)
        assert_false(tf_engine_supports(cpu_engine, TF_PRIM_FUSED, 0,
                                        (tf_dtype[]){others[k], others[k]}, 2));
}

/* ===================================================================== */
/* Through the plugin's descriptor: in place, and unvalidated calls       */
/* ===================================================================== */

/* The group's engine, straight from the plugin (cpu_direct.h). */
static void direct_open(void)
{
    cpu_direct_open();
    const char *key = "stream_threshold", *value = "0";
    /* the streamed group too: in place must not stream */
    g_direct.engine = cpu_direct_engine(cpu_threads, cpu_threads > 1 ? 1 : 0, &key, &value);
}

static void direct_close(void)
{
    cpu_direct_close();
}

#define operand cpu_direct_operand

/* execute() of p with n_out outputs, straight into the plugin. */
static tf_status direct_exec_n(const prog *p, const tf_operand *in, uint32_t n_out,
                               const tf_operand *out, uint32_t flags)
{
    return cpu_direct_fused(g_direct.engine, &p->params, p->n_in, in, n_out, out, flags);
}

static tf_status direct_exec(const prog *p, const tf_operand *in, const tf_operand *out,
                             uint32_t flags)
{
    return direct_exec_n(p, in, 1, out, flags);
}

/*
 * out[0] is input `k` itself (dense), the other inputs dense, broadcast along axis 0 or
 * transposed: the result equals the out-of-place one bit for bit, with and without the
 * engine's own checks.
 */
static void test_fused_in_place(void **state)
{
    (void)state;
    static const int64_t shapes[][2] = {{1, 1}, {129, 3}, {3, 257}, {100003, 1}, {250, 400}};
    tfr_rng rng;
    tfr_rng_seed(&rng, 1605);
    direct_open();
    for (size_t d = 0; d < COUNT(float_dtypes); d++) {
        tf_dtype dt = float_dtypes[d];
        size_t es = tf_dtype_size(dt);
        for (size_t s = 0; s < COUNT(shapes); s++) {
            const int64_t *shape = shapes[s];
            size_t n = (size_t)(shape[0] * shape[1]);
            const int64_t dense[2] = {1, shape[0]}, bcast[2] = {0, 1};
            const int64_t trans[2] = {shape[1], 1}; /* a [s1, s0] array read transposed */
            for (int t = 0; t < 8; t++) {
                prog p;
                prog_random(&rng, (uint32_t)tfr_rng_int(&rng, 1, TF_FUSED_MAX_INPUTS),
                            (uint32_t)tfr_rng_int(&rng, 1, TF_FUSED_MAX_STEPS), &p);
                uint32_t k_out = (uint32_t)tfr_rng_int(&rng, 0, p.n_in - 1);
                void *data[TF_FUSED_MAX_INPUTS];
                tf_operand in[TF_FUSED_MAX_INPUTS];
                for (uint32_t k = 0; k < p.n_in; k++) {
                    int kind = k == k_out ? 0 : (int)tfr_rng_int(&rng, 0, 2);
                    data[k] = malloc(n * es + es);
                    cpu_direct_fill(&rng, dt, n + 1, 0, data[k]);
                    /* kind 1: column 0 broadcast along axis 1, from element 1 (offset) */
                    in[k] = operand(dt, 2, shape,
                                    kind == 0   ? dense
                                    : kind == 1 ? bcast
                                                : trans,
                                    kind == 1 ? 1 : 0, data[k]);
                }
                void *sep = malloc(n * es);
                tf_operand out = operand(dt, 2, shape, dense, 0, sep);
                char desc[700];
                tfr_fused_describe(p.n_in, p.params.n_steps, p.steps, desc, sizeof desc);
                assert_int_equal(direct_exec(&p, in, &out, TF_EXEC_VALIDATED), TF_OK);
                for (int validated = 0; validated < 2; validated++) {
                    void *copy = malloc(n * es + es);
                    memcpy(copy, data[k_out], n * es + es);
                    tf_operand in2[TF_FUSED_MAX_INPUTS];
                    memcpy(in2, in, sizeof in);
                    in2[k_out].data = copy;
                    tf_status st =
                        direct_exec(&p, in2, &in2[k_out], validated ? TF_EXEC_VALIDATED : 0);
                    if (st != TF_OK)
                        fail_msg("in place %s: %s (%s)", desc, tf_status_name(st),
                                 g_direct.message);
                    for (size_t i = 0; i < n; i++) {
                        tf_scalar got = tfr_load(dt, copy, (int64_t)i);
                        tf_scalar want = tfr_load(dt, sep, (int64_t)i);
                        if (!tfr_same_bits(dt, got.f, want.f))
                            fail_msg("in place into input %u, %s, shape [%lld,%lld], %s: "
                                     "element %zu: %.17g, out of place %.17g",
                                     k_out, tf_dtype_name(dt), (long long)shape[0],
                                     (long long)shape[1], desc, i, got.f, want.f);
                    }
                    free(copy);
                }
                free(sep);
                for (uint32_t k = 0; k < p.n_in; k++)
                    free(data[k]);
            }
        }
    }
    direct_close();
}

/* One call the engine must refuse on its own (flags without TF_EXEC_VALIDATED). */
static void expect_refused(const char *what, const prog *p, const tf_operand *in,
                           tf_dtype out_dtype, tf_status expected)
{
    static const int64_t shape[2] = {3, 4}, dense[2] = {1, 3};
    double out_data[12];
    for (int i = 0; i < 12; i++)
        out_data[i] = -1234.5;
    tf_operand out = operand(out_dtype, 2, shape, dense, 0, out_data);
    tf_status st = direct_exec(p, in, &out, 0);
    if (st != expected || g_direct.reported != expected || g_direct.message[0] == '\0')
        fail_msg("%s: %s (reported %s, \"%s\"), want %s", what, tf_status_name(st),
                 tf_status_name(g_direct.reported), g_direct.message, tf_status_name(expected));
    for (int i = 0; i < 12; i++)
        if (out_data[i] != -1234.5)
            fail_msg("%s: the output was written", what);
}

/* r2 = r0 * r1; r3 = exp(r2); r4 = r3 + r0: the unvalidated calls' valid program. */
static const tf_fused_step k_good[3] = {{TF_FUSED_BINARY, TF_BINARY_MUL, 0, 1},
                                        {TF_FUSED_UNARY, TF_UNARY_EXP, 2, 0},
                                        {TF_FUSED_BINARY, TF_BINARY_ADD, 3, 0}};

/*
 * ABI 1.6: the engine's own checks of a reduced output (k_good's sum, into one element),
 * each refusal leaving every output unwritten.
 */
static void test_fused_reduce_unvalidated(void **state)
{
    (void)state;
    if (cpu_threads != 1)
        skip();
    direct_open();
    static const int64_t shape[2] = {3, 4}, dense[2] = {1, 3}, ones[2] = {1, 1};
    double data[2][12] = {{0}}, ew[12], red[12];
    tf_operand in[2] = {operand(TF_F64, 2, shape, dense, 0, data[0]),
                        operand(TF_F64, 2, shape, dense, 0, data[1])};
    tf_operand out[2] = {operand(TF_F64, 2, shape, dense, 0, ew),
                         operand(TF_F64, 2, ones, dense, 0, red)};
    prog p;
    prog_set(&p, 2, 3, k_good);
    p.params.reduce = TF_REDUCE_SUM + 1;
    p.params.reduce_step = 2;
    assert_int_equal(direct_exec_n(&p, in, 1, &out[1], 0), TF_OK);
    assert_true(red[0] == 12.0); /* twelve exp(0 * 0) + 0 */
    static const struct {
        const char *what;
        uint32_t reduce, reduce_step, n_outputs, first; /* first: outputs[0] */
        int red_shape_full, red_in_input, null_outputs;
        tf_status expected;
    } cases[] = {
        {"unknown reduce op", TF_REDUCE_COUNT_ + 1, 2, 0, 0, 0, 0, 0, TF_ERR_UNSUPPORTED},
        {"reduce_step not the last", TF_REDUCE_SUM + 1, 1, 0, 0, 0, 0, 0, TF_ERR_VALIDATION},
        {"reduce_step past the end", TF_REDUCE_SUM + 1, 3, 0, 0, 0, 0, 0, TF_ERR_VALIDATION},
        {"outputs[0] past the end", TF_REDUCE_SUM + 1, 2, 1, 3, 0, 0, 0, TF_ERR_VALIDATION},
        {"outputs NULL", TF_REDUCE_SUM + 1, 2, 1, 0, 0, 0, 1, TF_ERR_VALIDATION},
        {"reduced output of 12 elements", TF_REDUCE_MAX + 1, 2, 0, 0, 1, 0, 0,
         TF_ERR_SHAPE_MISMATCH},
        {"reduced output in an input", TF_REDUCE_MIN + 1, 2, 0, 0, 0, 1, 0, TF_ERR_VALIDATION},
        {"8 elementwise outputs", TF_REDUCE_SUM + 1, 2, TF_FUSED_MAX_OUTPUTS, 0, 0, 0, 0,
         TF_ERR_VALIDATION},
    };
    for (size_t c = 0; c < COUNT(cases); c++) {
        for (int i = 0; i < 12; i++)
            ew[i] = red[i] = -1234.5;
        prog_set(&p, 2, 3, k_good);
        p.outputs[0] = cases[c].first;
        p.params.n_outputs = cases[c].n_outputs;
        p.params.outputs = cases[c].null_outputs ? NULL : p.outputs;
        p.params.reduce = cases[c].reduce;
        p.params.reduce_step = cases[c].reduce_step;
        tf_operand r = out[1];
        if (cases[c].red_shape_full)
            r.shape = shape;
        if (cases[c].red_in_input)
            r.data = data[1];
        tf_operand o[2] = {out[0], r};
        uint32_t m = cases[c].n_outputs < 2 ? cases[c].n_outputs : 1;
        tf_status st = direct_exec_n(&p, in, m + 1, m ? o : &o[1], 0);
        if (st != cases[c].expected || g_direct.reported != cases[c].expected)
            fail_msg("%s: %s (reported %s, \"%s\"), want %s", cases[c].what, tf_status_name(st),
                     tf_status_name(g_direct.reported), g_direct.message,
                     tf_status_name(cases[c].expected));
        for (int i = 0; i < 12; i++)
            if (ew[i] != -1234.5 || red[i] != -1234.5)
                fail_msg("%s: an output was written", cases[c].what);
    }
    direct_close();
}

/* The engine's own checks of every rule of a FUSED call. */
static void test_fused_unvalidated(void **state)
{
    (void)state;
    if (cpu_threads != 1)
        skip(); /* the checks run before any thread: one group is enough */
    direct_open();
    static const int64_t shape[2] = {3, 4}, other[2] = {4, 3}, dense[2] = {1, 3};
    double data[6][12] = {{0}};
    tf_operand in[TF_FUSED_MAX_INPUTS + 1];
    for (int k = 0; k <= TF_FUSED_MAX_INPUTS; k++)
        in[k] = operand(TF_F64, 2, shape, dense, 0, data[k]);
    prog p;
    prog_set(&p, 2, 3, k_good);
    /* valid without the flag: runs */
    double out_data[12];
    tf_operand out = operand(TF_F64, 2, shape, dense, 0, out_data);
    assert_int_equal(direct_exec(&p, in, &out, 0), TF_OK);
    assert_true(out_data[0] == 1.0); /* exp(0 * 0) + 0 */

    static const struct {
        const char *what;
        uint32_t step, field, value; /* field: 0 kind, 1 op, 2 a, 3 b */
        tf_status expected;
    } steps[] = {
        {"kind 2", 1, 0, TF_FUSED_KIND_COUNT_, TF_ERR_VALIDATION},
        {"unknown unary op", 1, 1, TF_UNARY_COUNT_, TF_ERR_VALIDATION},
        {"unknown binary op", 0, 1, TF_BINARY_COUNT_, TF_ERR_VALIDATION},
        {"logical_not", 1, 1, TF_UNARY_LOGICAL_NOT, TF_ERR_DTYPE_MISMATCH},
        {"and", 2, 1, TF_BINARY_AND, TF_ERR_DTYPE_MISMATCH},
        {"or", 0, 1, TF_BINARY_OR, TF_ERR_DTYPE_MISMATCH},
        {"xor", 2, 1, TF_BINARY_XOR, TF_ERR_DTYPE_MISMATCH},
        {"a reading its own register", 2, 2, 4, TF_ERR_VALIDATION},
        {"unary a ahead", 1, 2, 3, TF_ERR_VALIDATION},
        {"b reading its own register", 0, 3, 2, TF_ERR_VALIDATION},
        {"b far out", 2, 3, 1000, TF_ERR_VALIDATION},
        {"unary with b 1", 1, 3, 1, TF_ERR_VALIDATION},
    };
    for (size_t c = 0; c < COUNT(steps); c++) {
        prog_set(&p, 2, 3, k_good);
        uint32_t *f[4] = {&p.steps[steps[c].step].kind, &p.steps[steps[c].step].op,
                          &p.steps[steps[c].step].a, &p.steps[steps[c].step].b};
        *f[steps[c].field] = steps[c].value;
        expect_refused(steps[c].what, &p, in, TF_F64, steps[c].expected);
    }
    prog_set(&p, 2, 3, k_good);
    p.params.n_steps = 0;
    expect_refused("0 steps", &p, in, TF_F64, TF_ERR_VALIDATION);
    p.params.n_steps = TF_FUSED_MAX_STEPS + 1;
    expect_refused("17 steps", &p, in, TF_F64, TF_ERR_VALIDATION);
    p.params = (tf_fused_params){sizeof p.params, 3, NULL, 0, NULL, 0, NULL, 0, 0};
    expect_refused("NULL steps", &p, in, TF_F64, TF_ERR_VALIDATION);
    p.params = (tf_fused_params){8, 3, p.steps, 0, NULL, 0, NULL, 0, 0};
    expect_refused("short params", &p, in, TF_F64, TF_ERR_VALIDATION);
    prog_set(&p, 2, 3, k_good);
    p.n_in = 0;
    expect_refused("no input", &p, in, TF_F64, TF_ERR_VALIDATION);
    p.n_in = TF_FUSED_MAX_INPUTS + 1;
    expect_refused("6 inputs", &p, in, TF_F64, TF_ERR_VALIDATION);
    p.n_in = 2;
    expect_refused("an f32 output", &p, in, TF_F32, TF_ERR_UNSUPPORTED);
    in[1].dtype = TF_F32;
    expect_refused("an f32 input", &p, in, TF_F64, TF_ERR_UNSUPPORTED);
    in[1].dtype = TF_I64;
    in[0].dtype = TF_I64;
    expect_refused("i64", &p, in, TF_I64, TF_ERR_UNSUPPORTED);
    in[0].dtype = in[1].dtype = TF_F64;
    in[1].shape = other;
    expect_refused("a [4,3] input", &p, in, TF_F64, TF_ERR_SHAPE_MISMATCH);
    direct_close();
}

/* Refused with `expected` (status, report and message) on the engine's own checks, and
   none of the n_out outputs (data[0 .. n_out), each of 12 elements) written. */
static void expect_refused_n(const char *what, const prog *p, const tf_operand *in, uint32_t n_out,
                             const tf_operand *out, double (*data)[12], tf_status expected)
{
    for (uint32_t o = 0; o < n_out; o++)
        for (int i = 0; i < 12; i++)
            data[o][i] = -1234.5;
    tf_status st = direct_exec_n(p, in, n_out, out, 0);
    if (st != expected || g_direct.reported != expected || g_direct.message[0] == '\0')
        fail_msg("%s: %s (reported %s, \"%s\"), want %s", what, tf_status_name(st),
                 tf_status_name(g_direct.reported), g_direct.message, tf_status_name(expected));
    for (uint32_t o = 0; o < n_out; o++)
        for (int i = 0; i < 12; i++)
            if (data[o][i] != -1234.5)
                fail_msg("%s: output %u was written", what, o);
}

/* The engine's own checks of several outputs (ABI 1.3), and a 1.2 struct still read as
   one output whatever follows it. */
static void test_fused_outputs_unvalidated(void **state)
{
    (void)state;
    if (cpu_threads != 1)
        skip(); /* the checks run before any thread: one group is enough */
    direct_open();
    enum {
        N = TF_FUSED_MAX_OUTPUTS + 1
    };
    static const int64_t shape[2] = {3, 4}, other[2] = {4, 3}, dense[2] = {1, 3};
    double in_data[2][12] = {{0}}, out_data[N][12];
    tf_operand in[2], out[N];
    for (int k = 0; k < 2; k++)
        in[k] = operand(TF_F64, 2, shape, dense, 0, in_data[k]);
    for (int k = 0; k < N; k++)
        out[k] = operand(TF_F64, 2, shape, dense, 0, out_data[k]);
    prog p;
    prog_set(&p, 2, 3, k_good);
    /* valid without the flag: outputs r2 = 0 * 0 and r4 = exp(0) + 0 */
    prog_set_outputs(&p, 2, (const uint32_t[]){0, 2});
    assert_int_equal(direct_exec_n(&p, in, 2, out, 0), TF_OK);
    assert_true(out_data[0][11] == 0.0 && out_data[1][11] == 1.0);
    /* the struct of ABI 1.2 ends before n_outputs: what follows it is not read */
    p.params.struct_size = (uint32_t)offsetof(tf_fused_params, n_outputs);
    p.params.n_outputs = 5;
    p.params.outputs = NULL;
    out_data[0][0] = -1;
    assert_int_equal(direct_exec_n(&p, in, 1, out, 0), TF_OK);
    assert_true(out_data[0][0] == 1.0);
    expect_refused_n("two outputs with a 1.2 struct", &p, in, 2, out, out_data, TF_ERR_VALIDATION);

    static const struct {
        const char *what;
        uint32_t n_out;
        uint32_t outputs[3];
    } lists[] = {
        {"outputs repeated", 2, {0, 0}},
        {"outputs decreasing", 3, {1, 0, 2}},
        {"last output not the last step", 2, {0, 1}},
        {"an output past the steps", 2, {0, 3}},
    };
    for (size_t c = 0; c < COUNT(lists); c++) {
        prog_set(&p, 2, 3, k_good);
        prog_set_outputs(&p, lists[c].n_out, lists[c].outputs);
        expect_refused_n(lists[c].what, &p, in, lists[c].n_out, out, out_data, TF_ERR_VALIDATION);
    }
    prog_set(&p, 2, 3, k_good);
    prog_set_outputs(&p, 3, (const uint32_t[]){0, 1, 2});
    expect_refused_n("3 outputs asked, 2 given", &p, in, 2, out, out_data, TF_ERR_VALIDATION);
    expect_refused_n("3 outputs asked, 4 given", &p, in, 4, out, out_data, TF_ERR_VALIDATION);
    p.params.outputs = NULL;
    expect_refused_n("outputs NULL", &p, in, 3, out, out_data, TF_ERR_VALIDATION);
    tf_fused_step many[N];
    uint32_t all[N];
    for (uint32_t k = 0; k < N; k++) {
        many[k] = (tf_fused_step){TF_FUSED_UNARY, TF_UNARY_NEG, 1 + k, 0};
        all[k] = k;
    }
    prog_set(&p, 2, N, many);
    p.params.n_outputs = N;
    p.params.outputs = all;
    expect_refused_n("9 outputs", &p, in, N, out, out_data, TF_ERR_VALIDATION);

    prog_set(&p, 2, 3, k_good);
    prog_set_outputs(&p, 3, (const uint32_t[]){0, 1, 2});
    out[1].dtype = TF_F32;
    expect_refused_n("an f32 outputs[1]", &p, in, 3, out, out_data, TF_ERR_UNSUPPORTED);
    out[1].dtype = TF_F64;
    out[2].shape = other;
    expect_refused_n("a [4,3] outputs[2]", &p, in, 3, out, out_data, TF_ERR_SHAPE_MISMATCH);
    out[2].shape = shape;
    /* no in-place form with several outputs: an output in an input's or another output's memory */
    for (int o = 0; o < 3; o++) {
        tf_operand alias[3] = {out[0], out[1], out[2]};
        alias[o] = in[o % 2];
        expect_refused_n("an output in an input's memory", &p, in, 3, alias, out_data,
                         TF_ERR_VALIDATION);
        alias[o] = out[0];
        alias[0] = o == 0 ? out[2] : out[0];
        expect_refused_n("two outputs in one memory", &p, in, 3, alias, out_data,
                         TF_ERR_VALIDATION);
    }
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 12; i++)
            assert_true(in_data[k][i] == 0.0);
    direct_close();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fused_supports),
        cmocka_unit_test(test_fused_random),
        cmocka_unit_test(test_fused_sizes),
        cmocka_unit_test(test_fused_large),
        cmocka_unit_test(test_fused_structures),
        cmocka_unit_test(test_fused_in_place),
        cmocka_unit_test(test_fused_unvalidated),
        cmocka_unit_test(test_fused_reduce_unvalidated),
        cmocka_unit_test(test_fused_outputs_random),
        cmocka_unit_test(test_fused_outputs_sizes),
        cmocka_unit_test(test_fused_outputs_structures),
        cmocka_unit_test(test_fused_outputs_unvalidated),
    };
    return CPU_RUN_GROUPS("cpu fused", tests);
}
