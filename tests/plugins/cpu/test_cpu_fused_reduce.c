/*
 * test_cpu_fused_reduce.c - TF_PRIM_FUSED with a reduced output (ABI 1.6) on the
 * CPU engine. engine_abi.h promises that out[m] holds, bit for bit, what REDUCE of
 * the op over all axes gives for a dense tensor of the program's shape holding the
 * reduced register, and each elementwise output what the steps give as separate
 * calls. The reference here is exactly that: the program run step by step into
 * dense tensors, then one REDUCE call. Any NaN equals any NaN (the kernels'
 * vectorised and scalar loops may propagate different NaN payloads).
 *
 * Random programs over random shapes and input layouts (as test_cpu_fused.c), the
 * four reduce ops, 0 to 7 elementwise outputs, the reduced register also an
 * elementwise output or not; lengths around REDUCE's unit (8192 positions) and the
 * threading grain; empty and one-element programs; on the serial, threaded and
 * always-streaming engines. The host's checks of such calls are in
 * test_cpu_execute_errors.c, the CPU engine's own in test_cpu_fused.c.
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "cpu_fixture.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const tf_dtype float_dtypes[] = {TF_F32, TF_F64};

/* A program with a reduced output: m elementwise outputs, then reduce_step's register. */
typedef struct rprog {
    uint32_t n_in, m;
    tf_fused_step steps[TF_FUSED_MAX_STEPS];
    uint32_t outputs[TF_FUSED_MAX_OUTPUTS];
    tf_fused_params params;
} rprog;

/*
 * n_steps random steps, m (0 .. 7, at most n_steps) random elementwise outputs in
 * order, and the reduced step: the last one, unless the last elementwise output is the
 * last step, in which case any step (sometimes that very output).
 */
static void rprog_random(tfr_rng *rng, uint32_t n_in, uint32_t n_steps, uint32_t m, uint32_t op,
                         rprog *p)
{
    p->n_in = n_in;
    p->m = m;
    tfr_fused_random_steps(rng, n_in, n_steps, p->steps);
    uint32_t n = 0;
    for (uint32_t k = 0; k < n_steps && n < m; k++) /* selection sampling, in order */
        if ((uint32_t)tfr_rng_int(rng, 0, n_steps - 1 - k) < m - n)
            p->outputs[n++] = k;
    uint32_t reduce_step = n_steps - 1;
    if (m > 0 && p->outputs[m - 1] == n_steps - 1)
        reduce_step = tfr_rng_chance(rng, 30) ? n_steps - 1
                                              : (uint32_t)tfr_rng_int(rng, 0, n_steps - 1);
    p->params = (tf_fused_params){
        sizeof p->params, n_steps, p->steps, m, p->outputs, 0, NULL, op + 1, reduce_step};
}


static void check_same(const char *what, tf_dtype dtype, const tf_tensor *got_t,
                       const tf_tensor *want_t)
{
    size_t n = tf_tensor_numel(got_t);
    tf_scalar *got = tfr_read(got_t), *want = tfr_read(want_t);
    tfr_check_same_bits(what, dtype, n, got, want);
    free(got);
    free(want);
}

/* REDUCE of t over all axes into a new one-element tensor of t's rank (the reference). */
static tf_tensor *reduce_all(tf_tensor *t, uint32_t op)
{
    size_t rank = tf_tensor_rank(t);
    int64_t ones[TF_MAX_RANK];
    for (size_t k = 0; k < rank; k++)
        ones[k] = 1;
    tf_tensor *out = tfr_output(cpu_engine, tf_tensor_dtype(t), rank, ones);
    tf_reduce_params rp = {sizeof rp, op, rank ? (uint64_t)-1 >> (64 - rank) : 0};
    tfr_exec_ok("reference reduce", cpu_engine, TF_PRIM_REDUCE, &rp, 1, &t, 1, &out);
    return out;
}

/* Runs p fused on in[] (reduced output of rank red_rank) and against the reference. */
static void check_rprog(const rprog *p, tf_dtype dtype, size_t rank, const int64_t *shape,
                        tf_tensor *const *in, size_t red_rank, const char *label)
{
    char what[900], desc[700];
    tfr_fused_describe(p->n_in, p->params.n_steps, p->steps, desc, sizeof desc);
    snprintf(what, sizeof what, "%s %s rank %zu numel %zu [%s] m %u reduce %s of step %u",
             label, tf_dtype_name(dtype), rank, tfr_numel(rank, shape), desc, p->m,
             tf_prim_op_name(TF_PRIM_REDUCE, p->params.reduce - 1), p->params.reduce_step);
    static const int64_t ones[TF_MAX_RANK] = {1, 1, 1, 1, 1, 1, 1, 1};
    tf_tensor *out[TF_FUSED_MAX_OUTPUTS], *ref[TF_FUSED_MAX_OUTPUTS];
    for (uint32_t i = 0; i < p->m; i++)
        out[i] = tfr_output(cpu_engine, dtype, rank, shape);
    out[p->m] = tfr_output(cpu_engine, dtype, red_rank, ones);
    tfr_exec_ok(what, cpu_engine, TF_PRIM_FUSED, &p->params, p->n_in, in, p->m + 1, out);

    /* the registers the outputs name, step by step: the m elementwise ones, the reduced */
    uint32_t list[TF_FUSED_MAX_OUTPUTS];
    memcpy(list, p->outputs, p->m * sizeof list[0]);
    list[p->m] = p->params.reduce_step;
    tfr_fused_run_outputs(cpu_engine, p->n_in, p->params.n_steps, p->steps, p->m + 1, list, in,
                          dtype, rank, shape, ref);
    char which[1000];
    for (uint32_t i = 0; i < p->m; i++) {
        snprintf(which, sizeof which, "%s: output %u", what, i);
        check_same(which, dtype, out[i], ref[i]);
    }
    tf_tensor *want = reduce_all(ref[p->m], p->params.reduce - 1);
    snprintf(which, sizeof which, "%s: the reduced output", what);
    check_same(which, dtype, out[p->m], want);
    tf_tensor_release(want);
    for (uint32_t i = 0; i <= p->m; i++) {
        tf_tensor_release(out[i]);
        tf_tensor_release(ref[i]);
    }
}

/* One random program (of `op`, or a random one when op is TF_REDUCE_COUNT_) on random
   inputs of `shape` in random layouts; values with NaN, inf and +-0 now and then. */
static void check_random(tfr_rng *rng, tf_dtype dtype, size_t rank, const int64_t *shape,
                         uint32_t op, const char *label)
{
    uint32_t n_in = (uint32_t)tfr_rng_int(rng, 1, TF_FUSED_MAX_INPUTS);
    uint32_t n_steps = (uint32_t)tfr_rng_int(rng, 1, TF_FUSED_MAX_STEPS);
    uint32_t most = n_steps < TF_FUSED_MAX_OUTPUTS - 1 ? n_steps : TF_FUSED_MAX_OUTPUTS - 1;
    uint32_t m = tfr_rng_chance(rng, 40) ? 0 : (uint32_t)tfr_rng_int(rng, 0, most);
    if (op == TF_REDUCE_COUNT_)
        op = (uint32_t)tfr_rng_int(rng, 0, TF_REDUCE_COUNT_ - 1);
    rprog p;
    rprog_random(rng, n_in, n_steps, m, op, &p);
    tfr_input in[TF_FUSED_MAX_INPUTS];
    tf_tensor *args[TF_FUSED_MAX_INPUTS];
    for (uint32_t k = 0; k < n_in; k++) {
        /* sums of long chains stay finite mostly in [-1, 1] */
        tfr_gen gen = {tfr_rng_chance(rng, 15) ? TFR_SPECIAL : TFR_UNIFORM, -1.0, 1.0};
        tfr_input_make(&in[k], rng, cpu_engine, dtype, rank, shape, tfr_random_layout(rng), &gen);
        args[k] = in[k].t;
    }
    size_t red_rank = tfr_rng_chance(rng, 50) ? 0 : rank;
    check_rprog(&p, dtype, rank, shape, args, red_rank, label);
    for (uint32_t k = 0; k < n_in; k++)
        tfr_input_free(&in[k]);
}

/* 120 random programs per dtype over small shapes of rank 0 .. 4, empty ones included. */
static void test_reduce_random(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 1661);
    for (size_t d = 0; d < COUNT(float_dtypes); d++)
        for (int t = 0; t < 120; t++) {
            int64_t shape[TF_MAX_RANK];
            size_t rank = (size_t)tfr_rng_int(&rng, 0, 4);
            tfr_random_shape(&rng, rank, rank > 2 ? 5 : 9, 8, shape);
            check_random(&rng, float_dtypes[d], rank, shape, TF_REDUCE_COUNT_, "random");
        }
}

/* Lengths around REDUCE's unit (8192 positions: the fold of each, then of the units in
   order), its 8 accumulators and the threading grain, as vectors and inner and outer
   matrix axes, every reduce op. */
static void test_reduce_lengths(void **state)
{
    (void)state;
    static const int64_t lengths[] = {2,    7,    8,    9,     255,   257,   8191,
                                      8192, 8193, 16385, 24581, 65537, 100003};
    tfr_rng rng;
    tfr_rng_seed(&rng, 1662);
    for (size_t d = 0; d < COUNT(float_dtypes); d++)
        for (size_t l = 0; l < COUNT(lengths); l++)
            for (uint32_t op = 0; op < TF_REDUCE_COUNT_; op++) {
                check_random(&rng, float_dtypes[d], 1, &lengths[l], op, "length");
                int64_t inner[2] = {lengths[l], 3}, outer[2] = {3, lengths[l]};
                check_random(&rng, float_dtypes[d], 2, inner, op, "inner length");
                check_random(&rng, float_dtypes[d], 2, outer, op, "outer length");
            }
}

/* A large sum (many units, split between threads) of exp(x) * y + x, the training step
   of the elementwise bench: the loss alone, and with exp(x) written too. */
static void test_reduce_training_step(void **state)
{
    (void)state;
    static const tf_fused_step steps[3] = {
        {TF_FUSED_UNARY, TF_UNARY_EXP, 0, 0},
        {TF_FUSED_BINARY, TF_BINARY_MUL, 2, 1},
        {TF_FUSED_BINARY, TF_BINARY_ADD, 3, 0},
    };
    const int64_t n = (1 << 20) + 3;
    tfr_rng rng;
    tfr_rng_seed(&rng, 1663);
    for (size_t d = 0; d < COUNT(float_dtypes); d++) {
        tfr_input in[2];
        tfr_gen gen = {TFR_UNIFORM, 0.0, 1.0};
        tf_tensor *args[2];
        for (int k = 0; k < 2; k++) {
            tfr_input_make(&in[k], &rng, cpu_engine, float_dtypes[d], 1, &n, TFR_DENSE, &gen);
            args[k] = in[k].t;
        }
        for (uint32_t m = 0; m < 2; m++) {
            rprog p = {.n_in = 2, .m = m, .outputs = {0}};
            memcpy(p.steps, steps, sizeof steps);
            p.params = (tf_fused_params){
                sizeof p.params, 3, p.steps, m, p.outputs, 0, NULL, TF_REDUCE_SUM + 1, 2};
            check_rprog(&p, float_dtypes[d], 1, &n, args, 0, "training step");
        }
        for (int k = 0; k < 2; k++)
            tfr_input_free(&in[k]);
    }
}

/* supports(): the reduced-output question for every op and output count, f32 and f64
   only, and never for TF_FUSED_MAX_OUTPUTS elementwise outputs or an unknown op. */
static void test_reduce_supports(void **state)
{
    (void)state;
    tf_dtype d[TF_FUSED_MAX_INPUTS + TF_FUSED_MAX_OUTPUTS + 1];
    for (size_t i = 0; i < COUNT(d); i++)
        d[i] = TF_F64;
    for (uint32_t op = 0; op < TF_REDUCE_COUNT_; op++)
        for (uint32_t m = 0; m < TF_FUSED_MAX_OUTPUTS - 1; m++)
            assert_true(tf_engine_supports(cpu_engine, TF_PRIM_FUSED,
                                           TF_FUSED_REDUCE_QUERY(op, m), d, 2 + m + 1));
    assert_false(tf_engine_supports(cpu_engine, TF_PRIM_FUSED,
                                    TF_FUSED_REDUCE_QUERY(TF_REDUCE_COUNT_, 0), d, 3));
    assert_false(tf_engine_supports(cpu_engine, TF_PRIM_FUSED,
                                    TF_FUSED_REDUCE_QUERY(0, TF_FUSED_MAX_OUTPUTS), d,
                                    1 + TF_FUSED_MAX_OUTPUTS + 1));
    tf_dtype ints[3] = {TF_I32, TF_I32, TF_I32};
    assert_false(tf_engine_supports(cpu_engine, TF_PRIM_FUSED,
                                    TF_FUSED_REDUCE_QUERY(TF_REDUCE_SUM, 0), ints, 3));
}

/* r2 = r0 * r1; r3 = exp(r2); r4 = r3 + r0 */
static const tf_fused_step k_prog[3] = {
    {TF_FUSED_BINARY, TF_BINARY_MUL, 0, 1},
    {TF_FUSED_UNARY, TF_UNARY_EXP, 2, 0},
    {TF_FUSED_BINARY, TF_BINARY_ADD, 3, 0},
};

/* What tf_engine_execute refuses of a reduced output, before the engine runs: the status,
   the argument named, and every output left as it was. */
static void expect_refused(const char *what, const tf_fused_params *p, tf_tensor *const *in,
                           size_t n_out, tf_tensor *const *out, tf_status expected,
                           const char *arg)
{
    tfr_expect_reject(cpu_engine, what, TF_PRIM_FUSED, p, 2, in, n_out, out, expected);
    if (strcmp(tf_error_argument(), arg) != 0)
        fail_msg("%s: argument \"%s\", want \"%s\" (%s)", what, tf_error_argument(), arg,
                 tf_error_message());
}

static void test_reduce_refused(void **state)
{
    (void)state;
    if (cpu_threads != 1)
        skip(); /* the host's checks: one engine is enough */
    static const int64_t s23[2] = {2, 3}, s32[2] = {3, 2}, ones[2] = {1, 1};
    tf_scalar v[6];
    for (int i = 0; i < 6; i++)
        v[i] = tfr_f(0.25 * i);
    tf_tensor *a = tfr_host(TF_F64, 2, s23, v), *b = tfr_host(TF_F64, 2, s23, v);
    tf_tensor *t = tfr_host(TF_F64, 2, s32, v), *ab[2] = {a, b}, *at[2] = {a, t};
    tf_tensor *ew = tfr_output(cpu_engine, TF_F64, 2, s23);
    tf_tensor *red = tfr_output(cpu_engine, TF_F64, 2, ones);
    tf_tensor *red0 = tfr_output(cpu_engine, TF_F64, 0, NULL);
    tf_tensor *red32 = tfr_output(cpu_engine, TF_F32, 2, ones);
    tf_tensor *full = tfr_output(cpu_engine, TF_F64, 2, s23);
    tf_tensor *wrong = tfr_output(cpu_engine, TF_F64, 2, s32);
    uint32_t list[TF_FUSED_MAX_OUTPUTS] = {1};
    tf_fused_params p = {sizeof p, 3, k_prog, 0, list, 0, NULL, TF_REDUCE_SUM + 1, 2};
    /* valid: the reduced output of rank 2 or 0, alone or after exp */
    tfr_exec_ok("sum", cpu_engine, TF_PRIM_FUSED, &p, 2, ab, 1, &red);
    tfr_exec_ok("sum into rank 0", cpu_engine, TF_PRIM_FUSED, &p, 2, ab, 1, &red0);
    p.n_outputs = 1;
    tfr_exec_ok("exp and the sum", cpu_engine, TF_PRIM_FUSED, &p, 2, ab, 2,
                (tf_tensor *[]){ew, red});
    p.n_outputs = 0;

    p.reduce = TF_REDUCE_COUNT_ + 1;
    expect_refused("unknown reduce op", &p, ab, 1, &red, TF_ERR_VALIDATION, "reduce");
    p.reduce = TF_REDUCE_SUM + 1;
    p.reduce_step = 1;
    expect_refused("reduce_step not the last", &p, ab, 1, &red, TF_ERR_VALIDATION, "reduce_step");
    p.reduce_step = 3;
    expect_refused("reduce_step past the end", &p, ab, 1, &red, TF_ERR_VALIDATION, "reduce_step");
    p.reduce_step = 2;
    expect_refused("reduced output of six elements", &p, ab, 1, &full, TF_ERR_SHAPE_MISMATCH,
                   "outputs[0]");
    /* the dtype of outputs[0] is the program's: the inputs are named for differing */
    expect_refused("reduced output f32", &p, ab, 1, &red32, TF_ERR_DTYPE_MISMATCH, "inputs[0]");
    expect_refused("two outputs for none", &p, ab, 2, (tf_tensor *[]){ew, red}, TF_ERR_VALIDATION,
                   "n_outputs");
    expect_refused("an input of another shape", &p, at, 1, &red, TF_ERR_SHAPE_MISMATCH,
                   "inputs[1]");
    p.n_outputs = 1;
    expect_refused("elementwise output of another shape", &p, ab, 2, (tf_tensor *[]){wrong, red},
                   TF_ERR_SHAPE_MISMATCH, "outputs[0]");
    list[0] = 3;
    expect_refused("outputs[0] past the end", &p, ab, 2, (tf_tensor *[]){ew, red},
                   TF_ERR_VALIDATION, "outputs[0]");
    list[0] = 1;
    p.outputs = NULL;
    expect_refused("outputs NULL", &p, ab, 2, (tf_tensor *[]){ew, red}, TF_ERR_VALIDATION,
                   "outputs");
    p.outputs = list;
    p.n_outputs = TF_FUSED_MAX_OUTPUTS;
    expect_refused("8 elementwise outputs besides it", &p, ab, 2, (tf_tensor *[]){ew, red},
                   TF_ERR_VALIDATION, "n_outputs");
    /* a struct of ABI 1.5 ends before reduce: one elementwise output, of red's shape */
    p.n_outputs = 0;
    p.struct_size = (uint32_t)offsetof(tf_fused_params, reduce);
    expect_refused("params of ABI 1.5", &p, ab, 1, &red, TF_ERR_SHAPE_MISMATCH, "inputs[0]");
    tf_tensor *all[] = {a, b, t, ew, red, red0, red32, full, wrong};
    for (size_t i = 0; i < COUNT(all); i++)
        tf_tensor_release(all[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reduce_random),
        cmocka_unit_test(test_reduce_lengths),
        cmocka_unit_test(test_reduce_training_step),
        cmocka_unit_test(test_reduce_supports),
        cmocka_unit_test(test_reduce_refused),
    };
    return CPU_RUN_GROUPS("cpu fused reduce", tests);
}
