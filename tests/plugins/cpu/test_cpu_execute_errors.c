/*
 * test_cpu_execute_errors.c - what tf_engine_execute refuses, on the CPU
 * engine. The core's checks (counts, dtypes, shapes, axes, params, dense
 * outputs, outputs sharing storage with inputs, unsupported combinations)
 * must fail with the documented status and a message, before the engine
 * runs: the outputs are left exactly as they were. That includes every rule
 * of a FUSED program (counts, steps, registers, dtypes, shapes, and the several
 * outputs of ABI 1.3: their count, their steps, their operands). The engine's own
 * data-dependent checks (index ranges, integer division by zero, checked
 * conversions) must come back with the engine's status and its message as
 * the cause.
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "cpu_fixture.h"

#define MAX_OUT (TF_FUSED_MAX_OUTPUTS + 1)

/* A call the core must refuse on the engine under test (tf_ref.h). */
#define expect_reject(...) tfr_expect_reject(cpu_engine, __VA_ARGS__)

/* A host input of `shape` holding 1, 2, 3, ... */
static tf_tensor *ramp(tf_dtype dtype, size_t rank, const int64_t *shape)
{
    size_t n = tfr_numel(rank, shape);
    tf_scalar *v = tfr_vals_alloc(n);
    for (size_t i = 0; i < n; i++)
        v[i] = tf_dtype_is_float(dtype) ? tfr_f((double)(i + 1)) : tfr_i((int64_t)(i + 1));
    tf_tensor *t = tfr_host(dtype, rank, shape, v);
    free(v);
    return t;
}

static const int64_t s23[2] = {2, 3}, s32[2] = {3, 2}, s6[1] = {6}, s33[2] = {3, 3};

static void test_wrong_counts(void **state)
{
    (void)state;
    tf_tensor *a = ramp(TF_F32, 2, s23), *b = ramp(TF_F32, 2, s23);
    tf_tensor *out = tfr_output(cpu_engine, TF_F32, 2, s23);
    tf_tensor *out2 = tfr_output(cpu_engine, TF_F32, 2, s23);
    tf_tensor *ab[2] = {a, b}, *outs[2] = {out, out2};
    tf_binary_params bp = {sizeof bp, TF_BINARY_ADD};
    tf_unary_params up = {sizeof up, TF_UNARY_NEG};
    tf_fill_params fp = {sizeof fp, 0, {1.0, 1}, 0};
    expect_reject("binary with one input", TF_PRIM_BINARY, &bp, 1, ab, 1, &out, TF_ERR_VALIDATION);
    expect_reject("unary with two inputs", TF_PRIM_UNARY, &up, 2, ab, 1, &out, TF_ERR_VALIDATION);
    expect_reject("fill with an input", TF_PRIM_FILL, &fp, 1, ab, 1, &out, TF_ERR_VALIDATION);
    expect_reject("binary with two outputs", TF_PRIM_BINARY, &bp, 2, ab, 2, outs,
                  TF_ERR_VALIDATION);
    tf_error_clear();
    if (tf_engine_execute(cpu_engine, TF_PRIM_BINARY, &bp, 2, ab, 0, outs) != TF_ERR_VALIDATION)
        fail_msg("binary with no output: %s", tf_error_message());
    expect_reject("select with two inputs", TF_PRIM_SELECT, NULL, 2, ab, 1, &out,
                  TF_ERR_VALIDATION);
    tf_concatenate_params cp = {sizeof cp, 0};
    expect_reject("concatenate of nothing", TF_PRIM_CONCATENATE, &cp, 0, ab, 1, &out,
                  TF_ERR_VALIDATION);
    tf_tensor_release(out2);
    tf_tensor_release(out);
    tf_tensor_release(a);
    tf_tensor_release(b);
}

static void test_dtype_mismatch(void **state)
{
    (void)state;
    tf_tensor *f32 = ramp(TF_F32, 2, s23), *f64 = ramp(TF_F64, 2, s23);
    tf_tensor *i32 = ramp(TF_I32, 2, s23), *idx = ramp(TF_F32, 1, (int64_t[]){2});
    tf_tensor *out32 = tfr_output(cpu_engine, TF_F32, 2, s23);
    tf_tensor *out64 = tfr_output(cpu_engine, TF_F64, 2, s23);
    tf_binary_params bp = {sizeof bp, TF_BINARY_ADD};
    tf_unary_params up = {sizeof up, TF_UNARY_NEG};
    tf_compare_params cp = {sizeof cp, TF_COMPARE_EQ};
    tf_gather_params gp = {sizeof gp, 0, TF_GATHER_INDEX_SELECT, 0};
    tf_tensor *mixed[2] = {f32, f64}, *sel[3] = {f32, f32, f32}, *gat[2] = {f32, idx};
    expect_reject("binary f32 + f64", TF_PRIM_BINARY, &bp, 2, mixed, 1, &out32,
                  TF_ERR_DTYPE_MISMATCH);
    expect_reject("unary f32 -> f64", TF_PRIM_UNARY, &up, 1, &f32, 1, &out64,
                  TF_ERR_DTYPE_MISMATCH);
    expect_reject("compare into f32", TF_PRIM_COMPARE, &cp, 2, (tf_tensor *[]){f32, f32}, 1, &out32,
                  TF_ERR_DTYPE_MISMATCH);
    expect_reject("select with an f32 condition", TF_PRIM_SELECT, NULL, 3, sel, 1, &out32,
                  TF_ERR_DTYPE_MISMATCH);
    expect_reject("gather with an f32 index", TF_PRIM_GATHER, &gp, 2, gat, 1, &out32,
                  TF_ERR_DTYPE_MISMATCH);
    expect_reject("copy i32 -> f32", TF_PRIM_COPY, NULL, 1, &i32, 1, &out32, TF_ERR_DTYPE_MISMATCH);
    tf_tensor_release(out32);
    tf_tensor_release(out64);
    tf_tensor_release(f32);
    tf_tensor_release(f64);
    tf_tensor_release(i32);
    tf_tensor_release(idx);
}

static void test_shape_mismatch(void **state)
{
    (void)state;
    tf_tensor *a = ramp(TF_F64, 2, s23), *b = ramp(TF_F64, 2, s32), *flat = ramp(TF_F64, 1, s6);
    tf_tensor *out = tfr_output(cpu_engine, TF_F64, 2, s23);
    tf_tensor *out33 = tfr_output(cpu_engine, TF_F64, 2, s33);
    tf_binary_params bp = {sizeof bp, TF_BINARY_MUL};
    tf_unary_params up = {sizeof up, TF_UNARY_EXP};
    tf_reduce_params rp = {sizeof rp, TF_REDUCE_SUM, 1};
    tf_dot_general_params dp = {sizeof dp, 1, 0, 0, {1}, {1}, {0}, {0}, 0, 0}; /* 3 vs 2 */
    tf_concatenate_params cp = {sizeof cp, 0};
    expect_reject("binary [2,3] * [3,2]", TF_PRIM_BINARY, &bp, 2, (tf_tensor *[]){a, b}, 1, &out,
                  TF_ERR_SHAPE_MISMATCH);
    expect_reject("unary [6] -> [2,3]", TF_PRIM_UNARY, &up, 1, &flat, 1, &out,
                  TF_ERR_SHAPE_MISMATCH);
    expect_reject("reduce axis 0 of [2,3] into [2,3]", TF_PRIM_REDUCE, &rp, 1, &a, 1, &out,
                  TF_ERR_SHAPE_MISMATCH);
    expect_reject("dot_general contracting 3 with 2", TF_PRIM_DOT_GENERAL, &dp, 2,
                  (tf_tensor *[]){a, b}, 1, &out, TF_ERR_SHAPE_MISMATCH);
    expect_reject("concatenate [2,3] and [2,3] into [3,3]", TF_PRIM_CONCATENATE, &cp, 2,
                  (tf_tensor *[]){a, a}, 1, &out33, TF_ERR_SHAPE_MISMATCH);
    expect_reject("copy [2,3] -> [3,3]", TF_PRIM_COPY, NULL, 1, &a, 1, &out33,
                  TF_ERR_SHAPE_MISMATCH);
    tf_tensor_release(out);
    tf_tensor_release(out33);
    tf_tensor_release(a);
    tf_tensor_release(b);
    tf_tensor_release(flat);
}

static void test_axis_out_of_bounds(void **state)
{
    (void)state;
    tf_tensor *a = ramp(TF_F32, 2, s23), *idx = ramp(TF_I32, 1, s6);
    tf_tensor *out = tfr_output(cpu_engine, TF_F32, 2, s23);
    tf_reduce_params rp = {sizeof rp, TF_REDUCE_SUM, 4}; /* axis 2 of a rank-2 input */
    tf_iota_params ip = {sizeof ip, 2};
    tf_concatenate_params cp = {sizeof cp, 2};
    tf_gather_params gp = {sizeof gp, 2, TF_GATHER_INDEX_SELECT, 0};
    tf_dot_general_params dp = {sizeof dp, 1, 0, 0, {2}, {0}, {0}, {0}, 0, 0};
    expect_reject("reduce axis 2 of rank 2", TF_PRIM_REDUCE, &rp, 1, &a, 1, &out,
                  TF_ERR_AXIS_OUT_OF_BOUNDS);
    rp.axes_mask = (uint64_t)1 << 63;
    expect_reject("reduce axis 63 of rank 2", TF_PRIM_REDUCE, &rp, 1, &a, 1, &out,
                  TF_ERR_AXIS_OUT_OF_BOUNDS);
    expect_reject("iota axis 2 of rank 2", TF_PRIM_IOTA, &ip, 0, NULL, 1, &out,
                  TF_ERR_AXIS_OUT_OF_BOUNDS);
    expect_reject("concatenate axis 2 of rank 2", TF_PRIM_CONCATENATE, &cp, 1, &a, 1, &out,
                  TF_ERR_AXIS_OUT_OF_BOUNDS);
    expect_reject("gather axis 2 of rank 2", TF_PRIM_GATHER, &gp, 2, (tf_tensor *[]){a, idx}, 1,
                  &out, TF_ERR_AXIS_OUT_OF_BOUNDS);
    expect_reject("dot_general contracting axis 2 of rank 2", TF_PRIM_DOT_GENERAL, &dp, 2,
                  (tf_tensor *[]){a, a}, 1, &out, TF_ERR_AXIS_OUT_OF_BOUNDS);
    tf_tensor_release(out);
    tf_tensor_release(a);
    tf_tensor_release(idx);
}

/* Outputs must be dense unless the primitive allows strides (FILL, COPY). */
static void test_strided_output(void **state)
{
    (void)state;
    tf_tensor *a = ramp(TF_F32, 2, s23), *b = ramp(TF_F32, 2, s32);
    tf_tensor *root = tfr_output(cpu_engine, TF_F32, 2, s32), *big = NULL, *t = NULL, *sl = NULL;
    int perm[2] = {1, 0};
    TF_ASSERT_OK(tf_tensor_transpose(root, perm, &t)); /* [2,3], strides (3,1) */
    int64_t bigs[2] = {4, 3}, st[2] = {1, 0}, li[2] = {3, 3}, step[2] = {1, 1};
    big = tfr_output(cpu_engine, TF_F32, 2, bigs);
    TF_ASSERT_OK(tf_tensor_slice(big, st, li, step, &sl)); /* [2,3] at offset 1 */
    tf_unary_params up = {sizeof up, TF_UNARY_NEG};
    tf_binary_params bp = {sizeof bp, TF_BINARY_ADD};
    expect_reject("unary into a transposed view", TF_PRIM_UNARY, &up, 1, &a, 1, &t,
                  TF_ERR_VALIDATION);
    expect_reject("binary into a slice", TF_PRIM_BINARY, &bp, 2, (tf_tensor *[]){a, a}, 1, &sl,
                  TF_ERR_VALIDATION);
    /* COPY may write strided views, but never one element twice */
    tf_tensor *one = tfr_output(cpu_engine, TF_F32, 1, (int64_t[]){1}), *rep = NULL;
    int64_t rs[2] = {2, 3}, zs[2] = {0, 0};
    TF_ASSERT_OK(tf_tensor_view(one, 2, rs, zs, 0, &rep));
    expect_reject("copy into a stride-0 view", TF_PRIM_COPY, NULL, 1, &a, 1, &rep,
                  TF_ERR_VALIDATION);
    tf_tensor_release(rep);
    tf_tensor_release(one);
    tf_tensor_release(sl);
    tf_tensor_release(big);
    tf_tensor_release(t);
    tf_tensor_release(root);
    tf_tensor_release(a);
    tf_tensor_release(b);
}

/* An output that shares storage with an input is refused. */
static void test_output_shares_input(void **state)
{
    (void)state;
    tf_tensor *x = tfr_output(cpu_engine, TF_F64, 2, s23), *y = NULL, *r = NULL;
    tf_tensor *other = ramp(TF_F64, 2, s23);
    tf_unary_params up = {sizeof up, TF_UNARY_NEG};
    tf_binary_params bp = {sizeof bp, TF_BINARY_SUB};
    expect_reject("unary in place", TF_PRIM_UNARY, &up, 1, &x, 1, &x, TF_ERR_VALIDATION);
    /* the engine's TF_ENGINE_CAP_IN_PLACE is for the core's private sums, not this call */
    tf_tensor *x_other[] = {x, other};
    expect_reject("binary in place", TF_PRIM_BINARY, &bp, 2, x_other, 1, &x, TF_ERR_VALIDATION);
    TF_ASSERT_OK(tf_tensor_reshape(x, 1, s6, &y)); /* dense, same storage */
    tf_tensor *flat_other = NULL, *y2 = NULL;
    TF_ASSERT_OK(tf_tensor_reshape(other, 1, s6, &flat_other));
    TF_ASSERT_OK(tf_tensor_reshape(x, 1, s6, &y2)); /* another view of that storage */
    expect_reject("binary into another view of its second input", TF_PRIM_BINARY, &bp, 2,
                  (tf_tensor *[]){flat_other, y}, 1, &y2, TF_ERR_VALIDATION);
    tf_tensor_release(y2);
    int axes[2] = {0, 1};
    TF_ASSERT_OK(tf_tensor_reverse(x, 2, axes, &r));
    expect_reject("copy into a reversed view of its own input", TF_PRIM_COPY, NULL, 1, &x, 1, &r,
                  TF_ERR_VALIDATION);
    tf_tensor_release(flat_other);
    tf_tensor_release(r);
    tf_tensor_release(y);
    tf_tensor_release(other);
    tf_tensor_release(x);
}

static void test_bad_params(void **state)
{
    (void)state;
    tf_tensor *a = ramp(TF_F32, 2, s23), *out = tfr_output(cpu_engine, TF_F32, 2, s23);
    tf_binary_params bp = {0, TF_BINARY_ADD};
    tf_tensor *aa[2] = {a, a};
    expect_reject("binary with struct_size 0", TF_PRIM_BINARY, &bp, 2, aa, 1, &out,
                  TF_ERR_VALIDATION);
    bp.struct_size = 4; /* op not covered */
    expect_reject("binary with struct_size 4", TF_PRIM_BINARY, &bp, 2, aa, 1, &out,
                  TF_ERR_VALIDATION);
    expect_reject("binary with NULL params", TF_PRIM_BINARY, NULL, 2, aa, 1, &out,
                  TF_ERR_VALIDATION);
    tf_fill_params fp = {8, 0, {1.0, 1}, 0}; /* value not covered */
    expect_reject("fill with a truncated params", TF_PRIM_FILL, &fp, 0, NULL, 1, &out,
                  TF_ERR_VALIDATION);
    expect_reject("reduce with NULL params", TF_PRIM_REDUCE, NULL, 1, &a, 1, &out,
                  TF_ERR_VALIDATION);
    tf_pad_params pp = {sizeof pp, 0, {0.0, 0}, {0, 0}, {-1, 0}, 0};
    expect_reject("pad with interior -1", TF_PRIM_PAD, &pp, 1, &a, 1, &out, TF_ERR_VALIDATION);
    tf_dot_general_params dp = {sizeof dp, 2, 0, 0, {0, 0}, {0, 1}, {0}, {0}, 0, 0};
    tf_tensor *sq = ramp(TF_F32, 2, (int64_t[]){2, 2});
    tf_tensor *o3 = tfr_output(cpu_engine, TF_F32, 1, (int64_t[]){3});
    expect_reject("dot_general listing lhs axis 0 twice", TF_PRIM_DOT_GENERAL, &dp, 2,
                  (tf_tensor *[]){a, sq}, 1, &o3, TF_ERR_VALIDATION);
    tf_tensor_release(o3);
    tf_tensor_release(sq);
    tf_tensor_release(out);
    tf_tensor_release(a);
}

/*
 * A dtype outside the primitive's description (engine_abi.h) is refused by
 * the core's argument checks, before supports() is asked: the core reports it
 * as TF_ERR_DTYPE_MISMATCH naming the op and the dtype.
 */
static void expect_undefined(const char *what, tf_prim prim, const void *params, uint32_t op,
                             size_t n_in, tf_tensor *const *in, tf_tensor *out)
{
    expect_reject(what, prim, params, n_in, in, 1, &out, TF_ERR_DTYPE_MISMATCH);
    const char *msg = tf_error_message();
    const char *dt = tf_dtype_name(tf_tensor_dtype(n_in ? in[0] : out));
    int has_op = prim == TF_PRIM_UNARY || prim == TF_PRIM_BINARY || prim == TF_PRIM_COMPARE ||
                 prim == TF_PRIM_REDUCE;
    const char *name = has_op ? tf_prim_op_name(prim, op) : tf_prim_name(prim);
    if (!strstr(msg, dt) || !strstr(msg, name))
        fail_msg("%s: the message \"%s\" does not name the dtype (%s) and op (%s)", what, msg, dt,
                 name);
}

static void test_outside_description(void **state)
{
    (void)state;
    tf_tensor *i = ramp(TF_I32, 2, s23), *f = ramp(TF_F32, 2, s23), *b = ramp(TF_BOOL, 2, s23);
    tf_tensor *oi = tfr_output(cpu_engine, TF_I32, 2, s23);
    tf_tensor *of = tfr_output(cpu_engine, TF_F32, 2, s23);
    tf_tensor *ob = tfr_output(cpu_engine, TF_BOOL, 2, s23);
    tf_tensor *ob1 = tfr_output(cpu_engine, TF_BOOL, 2, (int64_t[]){1, 3});
    tf_unary_params exp_p = {sizeof exp_p, TF_UNARY_EXP},
                    not_p = {sizeof not_p, TF_UNARY_LOGICAL_NOT};
    tf_binary_params add = {sizeof add, TF_BINARY_ADD}, and_p = {sizeof and_p, TF_BINARY_AND};
    tf_iota_params ip = {sizeof ip, 0};
    tf_reduce_params rp = {sizeof rp, TF_REDUCE_SUM, 1};
    expect_undefined("exp of i32", TF_PRIM_UNARY, &exp_p, TF_UNARY_EXP, 1, &i, oi);
    expect_undefined("logical_not of f32", TF_PRIM_UNARY, &not_p, TF_UNARY_LOGICAL_NOT, 1, &f, of);
    expect_undefined("add of bool", TF_PRIM_BINARY, &add, TF_BINARY_ADD, 2, (tf_tensor *[]){b, b},
                     ob);
    expect_undefined("and of f32", TF_PRIM_BINARY, &and_p, TF_BINARY_AND, 2, (tf_tensor *[]){f, f},
                     of);
    expect_undefined("iota of bool", TF_PRIM_IOTA, &ip, 0, 0, NULL, ob);
    expect_undefined("sum of bool", TF_PRIM_REDUCE, &rp, TF_REDUCE_SUM, 1, &b, ob1);
    tf_tensor_release(oi);
    tf_tensor_release(of);
    tf_tensor_release(ob);
    tf_tensor_release(ob1);
    tf_tensor_release(i);
    tf_tensor_release(f);
    tf_tensor_release(b);
}

/* ---- FUSED: every rule of the program's validation (engine_abi.h) ---- */

/* A FUSED call the core must refuse, naming the offending argument and, in the message,
   `text` (the step and field, or the count). */
static void expect_fused_reject(const char *what, const void *params, size_t n_in,
                                tf_tensor *const *in, size_t n_out, tf_tensor *const *out,
                                tf_status expected, const char *arg, const char *text)
{
    expect_reject(what, TF_PRIM_FUSED, params, n_in, in, n_out, out, expected);
    if (strcmp(tf_error_argument(), arg) != 0 || !strstr(tf_error_message(), text))
        fail_msg("%s: argument \"%s\" (want \"%s\"), message \"%s\" (want \"%s\" in it)", what,
                 tf_error_argument(), arg, tf_error_message(), text);
}

/* r2 = r0 * r1; r3 = exp(r2); r4 = r3 + r0 */
static const tf_fused_step k_prog[3] = {
    {TF_FUSED_BINARY, TF_BINARY_MUL, 0, 1},
    {TF_FUSED_UNARY, TF_UNARY_EXP, 2, 0},
    {TF_FUSED_BINARY, TF_BINARY_ADD, 3, 0},
};

/* Counts, params and operands of a FUSED call. */
static void test_fused_bad_call(void **state)
{
    (void)state;
    tf_tensor *a = ramp(TF_F32, 2, s23), *b = ramp(TF_F32, 2, s23), *d = ramp(TF_F64, 2, s23);
    tf_tensor *t = ramp(TF_F32, 2, s32), *flat = ramp(TF_F32, 1, s6), *i = ramp(TF_I32, 2, s23);
    tf_tensor *out = tfr_output(cpu_engine, TF_F32, 2, s23);
    tf_tensor *out2 = tfr_output(cpu_engine, TF_F32, 2, s23);
    tf_tensor *oi = tfr_output(cpu_engine, TF_I32, 2, s23), *root = NULL, *tv = NULL;
    tf_tensor *ab[6] = {a, b, a, b, a, b}, *outs[2] = {out, out2};
    tf_fused_params fp = {sizeof fp, 3, k_prog, 0, NULL, 0, NULL, 0, 0};
    expect_fused_reject("fused with NULL params", NULL, 2, ab, 1, &out, TF_ERR_VALIDATION,
                        "params", "required");
    fp.struct_size = 8; /* steps not covered */
    expect_fused_reject("fused with struct_size 8", &fp, 2, ab, 1, &out, TF_ERR_VALIDATION,
                        "params", "struct_size is 8");
    fp.struct_size = sizeof fp;
    expect_fused_reject("fused with no input", &fp, 0, ab, 1, &out, TF_ERR_VALIDATION,
                        "n_inputs", "got 0");
    expect_fused_reject("fused with 6 inputs", &fp, 6, ab, 1, &out, TF_ERR_VALIDATION,
                        "n_inputs", "got 6");
    expect_fused_reject("fused with two outputs", &fp, 2, ab, 2, outs, TF_ERR_VALIDATION,
                        "n_outputs", "got 2");
    expect_fused_reject("fused with no output", &fp, 2, ab, 0, outs, TF_ERR_VALIDATION,
                        "n_outputs", "got 0");
    fp.n_steps = 0;
    expect_fused_reject("fused with 0 steps", &fp, 2, ab, 1, &out, TF_ERR_VALIDATION, "n_steps",
                        "n_steps is 0");
    tf_fused_step many[TF_FUSED_MAX_STEPS + 1];
    for (uint32_t k = 0; k <= TF_FUSED_MAX_STEPS; k++)
        many[k] = (tf_fused_step){TF_FUSED_UNARY, TF_UNARY_NEG, k, 0};
    fp = (tf_fused_params){sizeof fp, TF_FUSED_MAX_STEPS + 1, many, 0, NULL, 0, NULL, 0, 0};
    expect_fused_reject("fused with 17 steps", &fp, 1, ab, 1, &out, TF_ERR_VALIDATION, "n_steps",
                        "n_steps is 17");
    fp = (tf_fused_params){sizeof fp, 3, NULL, 0, NULL, 0, NULL, 0, 0};
    expect_fused_reject("fused with NULL steps", &fp, 2, ab, 1, &out, TF_ERR_VALIDATION, "steps",
                        "NULL");
    fp.steps = k_prog;
    expect_fused_reject("fused of i32", &fp, 2, (tf_tensor *[]){i, i}, 1, &oi,
                        TF_ERR_DTYPE_MISMATCH, "outputs[0]", "i32");
    expect_fused_reject("fused f32 with an f64 input", &fp, 2, (tf_tensor *[]){a, d}, 1, &out,
                        TF_ERR_DTYPE_MISMATCH, "inputs[1]", "f64");
    expect_fused_reject("fused with an f64 fifth input", &fp, 5, (tf_tensor *[]){a, b, a, b, d},
                        1, &out, TF_ERR_DTYPE_MISMATCH, "inputs[4]", "f64");
    expect_fused_reject("fused [2,3] with a [3,2] input", &fp, 2, (tf_tensor *[]){a, t}, 1, &out,
                        TF_ERR_SHAPE_MISMATCH, "inputs[1]", "shape");
    expect_fused_reject("fused [2,3] with a [6] input", &fp, 2, (tf_tensor *[]){flat, b}, 1, &out,
                        TF_ERR_SHAPE_MISMATCH, "inputs[0]", "rank 1");
    /* out[0] is dense and shares no memory, as every output (the in-place form is private) */
    root = tfr_output(cpu_engine, TF_F32, 2, s32);
    TF_ASSERT_OK(tf_tensor_transpose(root, (int[]){1, 0}, &tv));
    expect_fused_reject("fused into a transposed view", &fp, 2, ab, 1, &tv, TF_ERR_VALIDATION,
                        "outputs", "dense");
    expect_fused_reject("fused into its own input", &fp, 2, (tf_tensor *[]){out, b}, 1, &out,
                        TF_ERR_VALIDATION, "outputs", "shares memory");
    tf_tensor *rel[] = {a, b, d, t, flat, i, out, out2, oi, tv, root};
    for (size_t k = 0; k < sizeof rel / sizeof rel[0]; k++)
        tf_tensor_release(rel[k]);
}

/* Each step's kind, op and registers. */
static void test_fused_bad_steps(void **state)
{
    (void)state;
    static const struct {
        const char *what;
        uint32_t step, field, value; /* field: 0 kind, 1 op, 2 a, 3 b */
        tf_status expected;
        const char *arg, *text;
    } cases[] = {
        {"kind 2", 1, 0, TF_FUSED_KIND_COUNT_, TF_ERR_VALIDATION, "steps[1].kind", "step 1"},
        {"unknown unary op", 1, 1, TF_UNARY_COUNT_, TF_ERR_VALIDATION, "steps[1].op",
         "step 1 has unknown unary op"},
        {"unknown binary op", 0, 1, TF_BINARY_COUNT_, TF_ERR_VALIDATION, "steps[0].op",
         "step 0 has unknown binary op"},
        {"logical_not", 1, 1, TF_UNARY_LOGICAL_NOT, TF_ERR_DTYPE_MISMATCH, "steps[1].op",
         "step 1: logical_not is not defined for f32"},
        {"and", 2, 1, TF_BINARY_AND, TF_ERR_DTYPE_MISMATCH, "steps[2].op", "step 2: and is"},
        {"or", 0, 1, TF_BINARY_OR, TF_ERR_DTYPE_MISMATCH, "steps[0].op", "step 0: or is"},
        {"xor", 2, 1, TF_BINARY_XOR, TF_ERR_DTYPE_MISMATCH, "steps[2].op", "step 2: xor is"},
        {"a reading its own register", 2, 2, 4, TF_ERR_VALIDATION, "steps[2].a",
         "step 2 reads register 4 (a), but only registers 0..3 exist"},
        {"a far out", 0, 2, 1000, TF_ERR_VALIDATION, "steps[0].a", "register 1000 (a)"},
        {"unary a ahead", 1, 2, 3, TF_ERR_VALIDATION, "steps[1].a", "registers 0..2 exist"},
        {"b reading its own register", 0, 3, 2, TF_ERR_VALIDATION, "steps[0].b",
         "step 0 reads register 2 (b), but only registers 0..1 exist"},
        {"b ahead", 2, 3, 7, TF_ERR_VALIDATION, "steps[2].b", "register 7 (b)"},
        {"unary with b 1", 1, 3, 1, TF_ERR_VALIDATION, "steps[1].b", "b must be 0"},
    };
    tf_tensor *a = ramp(TF_F32, 2, s23), *b = ramp(TF_F32, 2, s23);
    tf_tensor *out = tfr_output(cpu_engine, TF_F32, 2, s23), *ab[2] = {a, b};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tf_fused_step steps[3];
        memcpy(steps, k_prog, sizeof steps);
        uint32_t *f[4] = {&steps[cases[k].step].kind, &steps[cases[k].step].op,
                          &steps[cases[k].step].a, &steps[cases[k].step].b};
        *f[cases[k].field] = cases[k].value;
        tf_fused_params fp = {sizeof fp, 3, steps, 0, NULL, 0, NULL, 0, 0};
        char what[96];
        snprintf(what, sizeof what, "fused with %s", cases[k].what);
        expect_fused_reject(what, &fp, 2, ab, 1, &out, cases[k].expected, cases[k].arg,
                            cases[k].text);
    }
    tf_tensor_release(out);
    tf_tensor_release(a);
    tf_tensor_release(b);
}

/* The largest valid program (5 inputs, 16 steps, broadcast and strided inputs) passes the
   checks: it runs, or - on an engine without FUSED - only supports() refuses it. */
static void test_fused_valid_passes_checks(void **state)
{
    (void)state;
    tf_tensor *x = ramp(TF_F32, 2, s23), *y = ramp(TF_F32, 2, s32), *yt = NULL, *one = NULL;
    tf_tensor *bc = NULL;
    TF_ASSERT_OK(tf_tensor_transpose(y, (int[]){1, 0}, &yt));
    one = ramp(TF_F32, 1, (int64_t[]){1});
    TF_ASSERT_OK(tf_tensor_view(one, 2, s23, (int64_t[]){0, 0}, 0, &bc));
    tf_tensor *in[TF_FUSED_MAX_INPUTS] = {x, yt, bc, x, yt};
    tf_fused_step steps[TF_FUSED_MAX_STEPS];
    for (uint32_t k = 0; k < TF_FUSED_MAX_STEPS; k++) /* r[5+k] = r[4+k] + r[k % 5] */
        steps[k] = (tf_fused_step){TF_FUSED_BINARY, TF_BINARY_ADD, 4 + k, k % 5};
    steps[3] = (tf_fused_step){TF_FUSED_UNARY, TF_UNARY_TANH, 7, 0};
    tf_fused_params fp = {sizeof fp, TF_FUSED_MAX_STEPS, steps, 0, NULL, 0, NULL, 0, 0};
    tf_tensor *out = tfr_output(cpu_engine, TF_F32, 2, s23);
    tf_error_clear();
    tf_status st = tf_engine_execute(cpu_engine, TF_PRIM_FUSED, &fp, 5, in, 1, &out);
    if (st != TF_OK && st != TF_ERR_UNSUPPORTED)
        fail_msg("a valid program: %s (%s)", tf_status_name(st), tf_error_message());
    tf_tensor_release(out);
    tf_tensor_release(bc);
    tf_tensor_release(one);
    tf_tensor_release(yt);
    tf_tensor_release(y);
    tf_tensor_release(x);
}

/* ABI 1.3, several outputs: params.n_outputs, params.outputs and the output operands. */
static void test_fused_bad_outputs(void **state)
{
    (void)state;
    tf_tensor *a = ramp(TF_F32, 2, s23), *b = ramp(TF_F32, 2, s23), *ab[2] = {a, b};
    tf_tensor *o[MAX_OUT], *wide = tfr_output(cpu_engine, TF_F32, 2, (int64_t[]){2, 6});
    for (int k = 0; k < MAX_OUT; k++)
        o[k] = tfr_output(cpu_engine, TF_F32, 2, s23);
    uint32_t list[MAX_OUT] = {0, 1, 2};
    tf_fused_params fp = {sizeof fp, 3, k_prog, 3, list, 0, NULL, 0, 0};
    /* the count */
    fp.n_outputs = TF_FUSED_MAX_OUTPUTS + 1;
    expect_fused_reject("fused with params.n_outputs 9", &fp, 2, ab, MAX_OUT, o, TF_ERR_VALIDATION,
                        "n_outputs", "params.n_outputs is 9, expected 0 to 8");
    fp.n_outputs = 3;
    expect_fused_reject("fused asking 3 outputs, given 2", &fp, 2, ab, 2, o, TF_ERR_VALIDATION,
                        "n_outputs", "expects 3 outputs (params.n_outputs), got 2");
    expect_fused_reject("fused asking 3 outputs, given 4", &fp, 2, ab, 4, o, TF_ERR_VALIDATION,
                        "n_outputs", "got 4");
    fp.n_outputs = 2;
    list[0] = 1;
    expect_fused_reject("fused asking 2 outputs, given 1", &fp, 2, ab, 1, o, TF_ERR_VALIDATION,
                        "n_outputs", "got 1");
    /* the steps it names */
    static const struct {
        const char *what;
        uint32_t n_out, outputs[3];
        const char *arg, *text;
    } lists[] = {
        {"outputs NULL", 2, {0}, "outputs", "params.outputs is NULL with n_outputs 2"},
        {"an output twice", 3, {1, 1, 2}, "outputs[1]", "is step 1, not after outputs[0]"},
        {"outputs decreasing", 3, {1, 0, 2}, "outputs[1]", "step 0, not after outputs[0] (step 1)"},
        {"last output early", 2, {0, 1}, "outputs[1]", "must be the last step (2)"},
        {"an output past the steps", 2, {0, 7}, "outputs[1]", "is step 7"},
    };
    for (size_t c = 0; c < sizeof lists / sizeof lists[0]; c++) {
        memcpy(list, lists[c].outputs, sizeof lists[c].outputs);
        fp = (tf_fused_params){sizeof fp, 3, k_prog, lists[c].n_out, c == 0 ? NULL : list, 0,
                               NULL,      0, 0};
        char what[96];
        snprintf(what, sizeof what, "fused with %s", lists[c].what);
        expect_fused_reject(what, &fp, 2, ab, lists[c].n_out, o, TF_ERR_VALIDATION, lists[c].arg,
                            lists[c].text);
    }
    /* the output operands: each like outputs[0], dense, sharing no memory */
    memcpy(list, (const uint32_t[]){0, 1, 2}, 3 * sizeof list[0]);
    fp = (tf_fused_params){sizeof fp, 3, k_prog, 3, list, 0, NULL, 0, 0};
    tf_tensor *d = tfr_output(cpu_engine, TF_F64, 2, s23),
              *t = tfr_output(cpu_engine, TF_F32, 2, s32);
    tf_tensor *root = tfr_output(cpu_engine, TF_F32, 2, s32), *tv = NULL, *left = NULL;
    tf_tensor *right = NULL;
    TF_ASSERT_OK(tf_tensor_transpose(root, (int[]){1, 0}, &tv));
    TF_ASSERT_OK(
        tf_tensor_slice(wide, (int64_t[]){0, 0}, (int64_t[]){2, 3}, (int64_t[]){1, 1}, &left));
    TF_ASSERT_OK(
        tf_tensor_slice(wide, (int64_t[]){0, 3}, (int64_t[]){2, 6}, (int64_t[]){1, 1}, &right));
    expect_fused_reject("fused with an f64 outputs[1]", &fp, 2, ab, 3,
                        (tf_tensor *[]){o[0], d, o[2]}, TF_ERR_DTYPE_MISMATCH, "outputs[1]",
                        "outputs[1] is f64, expected f32");
    expect_fused_reject("fused with a [3,2] outputs[2]", &fp, 2, ab, 3,
                        (tf_tensor *[]){o[0], o[1], t}, TF_ERR_SHAPE_MISMATCH, "outputs[2]",
                        "outputs[2] has rank 2");
    expect_fused_reject("fused with a transposed outputs[1]", &fp, 2, ab, 3,
                        (tf_tensor *[]){o[0], tv, o[2]}, TF_ERR_VALIDATION, "outputs",
                        "outputs[1] must be dense");
    expect_fused_reject("fused with outputs[1] an input", &fp, 2, ab, 3,
                        (tf_tensor *[]){o[0], b, o[2]}, TF_ERR_VALIDATION, "outputs",
                        "outputs[1] shares memory with inputs[1]");
    expect_fused_reject("fused with outputs[2] outputs[0]", &fp, 2, ab, 3,
                        (tf_tensor *[]){o[0], o[1], o[0]}, TF_ERR_VALIDATION, "outputs",
                        "outputs[2] shares memory with outputs[0]");
    expect_fused_reject("fused with two outputs in halves of one buffer", &fp, 2, ab, 3,
                        (tf_tensor *[]){left, o[1], right}, TF_ERR_VALIDATION, "outputs",
                        "outputs[2] shares memory with outputs[0]");
    /* an engine that answers no for several outputs is not sent them */
    tf_engine *off = NULL;
    TF_ASSERT_OK(tfr_engine_create("cpu", 1, "fused", "off", &off));
    tf_scalar *before = tfr_read(o[1]);
    tf_error_clear();
    assert_int_equal(tf_engine_execute(off, TF_PRIM_FUSED, &fp, 2, ab, 3, o), TF_ERR_UNSUPPORTED);
    assert_non_null(strstr(tf_error_message(), "does not support fused"));
    tf_scalar *after = tfr_read(o[1]);
    tfr_check("fused=off: outputs[1] untouched", TF_F32, 6, after, before, NULL, (tfr_tol){0, 0});
    free(before);
    free(after);
    tf_engine_destroy(off);
    tf_tensor *rel[] = {a, b, wide, d, t, root, tv, left, right};
    for (size_t k = 0; k < sizeof rel / sizeof rel[0]; k++)
        tf_tensor_release(rel[k]);
    for (int k = 0; k < MAX_OUT; k++)
        tf_tensor_release(o[k]);
}

/* A params struct of ABI 1.2 (it ends before n_outputs) is one output, whatever follows it
   in memory; the same program of ABI 1.3 gives the same values. */
static void test_fused_params_1_2(void **state)
{
    (void)state;
    tf_tensor *a = ramp(TF_F32, 2, s23), *b = ramp(TF_F32, 2, s23), *ab[2] = {a, b};
    tf_tensor *o12 = tfr_output(cpu_engine, TF_F32, 2, s23);
    tf_tensor *o[3] = {tfr_output(cpu_engine, TF_F32, 2, s23),
                       tfr_output(cpu_engine, TF_F32, 2, s23),
                       tfr_output(cpu_engine, TF_F32, 2, s23)};
    static const uint32_t list[3] = {0, 1, 2};
    tf_fused_params fp = {(uint32_t)offsetof(tf_fused_params, n_outputs),
                          3,
                          k_prog,
                          3,
                          (const uint32_t *)(uintptr_t)1,
                          7,
                          NULL,
                          0,
                          0}; /* garbage a 1.2 host never wrote */
    tfr_exec_ok("fused, params of ABI 1.2", cpu_engine, TF_PRIM_FUSED, &fp, 2, ab, 1, &o12);
    expect_fused_reject("fused, params of ABI 1.2, three outputs", &fp, 2, ab, 3, o,
                        TF_ERR_VALIDATION, "n_outputs", "expects 1 output, got 3");
    fp = (tf_fused_params){sizeof fp, 3, k_prog, 3, list, 0, NULL, 0, 0};
    tfr_exec_ok("fused, three outputs", cpu_engine, TF_PRIM_FUSED, &fp, 2, ab, 3, o);
    tf_scalar *got = tfr_read(o12), *want = tfr_read(o[2]), *first = tfr_read(o[0]);
    tfr_check("1.2 output vs the last of three", TF_F32, 6, got, want, NULL, (tfr_tol){0, 0});
    for (int i = 0; i < 6; i++) /* r2 = r0 * r1, the ramps 1..6 */
        assert_true(first[i].f == (double)((i + 1) * (i + 1)));
    free(got);
    free(want);
    free(first);
    tf_tensor *rel[] = {a, b, o12, o[0], o[1], o[2]};
    for (size_t k = 0; k < sizeof rel / sizeof rel[0]; k++)
        tf_tensor_release(rel[k]);
}

/* ---- supports(): the reference engine covers the whole documented set ---- */

static const tf_dtype all_dtypes[] = {TF_F32, TF_F64, TF_I32, TF_I64, TF_BOOL};

static void expect_supports(int want, tf_prim prim, uint32_t op, const tf_dtype *dt, size_t n)
{
    if (!tf_engine_supports(cpu_engine, prim, op, dt, n) == !want)
        return;
    char types[64] = "";
    for (size_t k = 0, used = 0; k < n && used < sizeof types; k++)
        used += (size_t)snprintf(types + used, sizeof types - used, " %s", tf_dtype_name(dt[k]));
    fail_msg("supports(%s %s,%s) answered %d, want %d", tf_prim_name(prim),
             tf_prim_op_name(prim, op), types, !want, want);
}

/* UNARY and BINARY: which ops each dtype class has (engine_abi.h). */
static int unary_defined(tf_dtype t, uint32_t op)
{
    if (t == TF_BOOL)
        return op == TF_UNARY_LOGICAL_NOT;
    if (tf_dtype_is_float(t))
        return op != TF_UNARY_LOGICAL_NOT && op <= TF_UNARY_CEIL;
    return op == TF_UNARY_NEG || op == TF_UNARY_ABS || op == TF_UNARY_SIGN || op == TF_UNARY_SQUARE;
}

static int binary_defined(tf_dtype t, uint32_t op)
{
    if (t == TF_BOOL)
        return op == TF_BINARY_AND || op == TF_BINARY_OR || op == TF_BINARY_XOR ||
               op == TF_BINARY_MAX || op == TF_BINARY_MIN;
    if (tf_dtype_is_float(t))
        return op <= TF_BINARY_REM;
    return op != TF_BINARY_COMPLEX;
}

static void test_supports_elementwise(void **state)
{
    (void)state;
    for (size_t d = 0; d < 5; d++) {
        tf_dtype t = all_dtypes[d], u2[2] = {t, t}, b3[3] = {t, t, t}, c3[3] = {t, t, TF_BOOL};
        tf_dtype s4[4] = {TF_BOOL, t, t, t};
        expect_supports(1, TF_PRIM_FILL, 0, &t, 1);
        expect_supports(t != TF_BOOL, TF_PRIM_IOTA, 0, &t, 1);
        for (uint32_t op = 0; op < TF_UNARY_COUNT_; op++)
            expect_supports(unary_defined(t, op), TF_PRIM_UNARY, op, u2, 2);
        for (uint32_t op = 0; op < TF_BINARY_COUNT_; op++)
            expect_supports(binary_defined(t, op), TF_PRIM_BINARY, op, b3, 3);
        for (uint32_t op = 0; op < TF_COMPARE_COUNT_; op++)
            expect_supports(1, TF_PRIM_COMPARE, op, c3, 3);
        expect_supports(1, TF_PRIM_SELECT, 0, s4, 4);
        for (size_t e = 0; e < 5; e++)
            expect_supports(1, TF_PRIM_CONVERT, 0, (tf_dtype[]){t, all_dtypes[e]}, 2);
    }
}

static void test_supports_structural(void **state)
{
    (void)state;
    for (size_t d = 0; d < 5; d++) {
        tf_dtype t = all_dtypes[d], u2[2] = {t, t}, b3[3] = {t, t, t}, cat[5] = {t, t, t, t, t};
        for (uint32_t op = 0; op < TF_REDUCE_COUNT_; op++)
            expect_supports(t != TF_BOOL || op >= TF_REDUCE_MAX, TF_PRIM_REDUCE, op, u2, 2);
        expect_supports(t != TF_BOOL, TF_PRIM_DOT_GENERAL, 0, b3, 3);
        expect_supports(1, TF_PRIM_COPY, 0, u2, 2);
        expect_supports(1, TF_PRIM_PAD, 0, u2, 2);
        for (size_t n = 2; n <= 5; n++)
            expect_supports(1, TF_PRIM_CONCATENATE, 0, cat, n);
        for (size_t k = 2; k <= 3; k++) {
            tf_dtype it = all_dtypes[k];
            expect_supports(1, TF_PRIM_GATHER, 0, (tf_dtype[]){t, it, t}, 3);
            expect_supports(1, TF_PRIM_SCATTER, 0, (tf_dtype[]){t, it, t, t}, 4);
            expect_supports(1, TF_PRIM_DYNAMIC_SLICE, 0, (tf_dtype[]){t, it, t}, 3);
            expect_supports(1, TF_PRIM_DYNAMIC_UPDATE_SLICE, 0, (tf_dtype[]){t, t, it, t}, 4);
        }
    }
    /* FUSED is for one float dtype and 1 .. TF_FUSED_MAX_INPUTS inputs (whether the engine
       runs it for f32/f64 is its own choice, checked by the kit against the steps) */
    for (size_t d = 2; d < 5; d++)
        expect_supports(0, TF_PRIM_FUSED, 0, (tf_dtype[]){all_dtypes[d], all_dtypes[d]}, 2);
    expect_supports(0, TF_PRIM_FUSED, 0, (tf_dtype[]){TF_F32, TF_F64, TF_F32}, 3);
    expect_supports(0, TF_PRIM_FUSED, 0, (tf_dtype[]){TF_F64, TF_F64, TF_F32}, 3);
    expect_supports(0, TF_PRIM_FUSED, 0, (tf_dtype[]){TF_F32}, 1);
    expect_supports(0, TF_PRIM_FUSED, 0, (tf_dtype[7]){TF_F64, TF_F64, TF_F64, TF_F64, TF_F64,
                                                       TF_F64, TF_F64}, 7);
    /* never for numbers it cannot know */
    expect_supports(0, TF_PRIM_COUNT_, 0, (tf_dtype[]){TF_F32, TF_F32}, 2);
    expect_supports(0, TF_PRIM_UNARY, TF_UNARY_COUNT_, (tf_dtype[]){TF_F32, TF_F32}, 2);
}

/* Numbers outside the enums: an unknown primitive or sub-op is never executed. */
static void test_unknown_values(void **state)
{
    (void)state;
    tf_tensor *a = ramp(TF_F32, 2, s23), *out = tfr_output(cpu_engine, TF_F32, 2, s23);
    tf_scalar *before = tfr_read(out);
    tf_unary_params up = {sizeof up, TF_UNARY_COUNT_ + 7};
    tf_gather_params gp = {sizeof gp, 0, 9, 0};
    struct {
        const char *what;
        tf_prim prim;
        const void *params;
        size_t n_in;
        tf_tensor *in[2];
    } cases[] = {
        {"primitive TF_PRIM_COUNT_", TF_PRIM_COUNT_, NULL, 1, {a}},
        {"unary op 26", TF_PRIM_UNARY, &up, 1, {a}},
        {"gather mode 9", TF_PRIM_GATHER, &gp, 2, {a, ramp(TF_I32, 1, (int64_t[]){3})}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tf_error_clear();
        tf_status st = tf_engine_execute(cpu_engine, cases[k].prim, cases[k].params, cases[k].n_in,
                                         cases[k].in, 1, &out);
        if (st != TF_ERR_VALIDATION && st != TF_ERR_UNSUPPORTED)
            fail_msg("%s: got %s, want TF_ERR_VALIDATION or TF_ERR_UNSUPPORTED", cases[k].what,
                     tf_status_name(st));
        if (tf_error_message()[0] == '\0')
            fail_msg("%s: empty error message", cases[k].what);
        tf_scalar *after = tfr_read(out);
        tfr_check(cases[k].what, TF_F32, 6, after, before, NULL, (tfr_tol){0, 0});
        free(after);
    }
    tf_tensor_release(cases[2].in[1]);
    free(before);
    tf_tensor_release(out);
    tf_tensor_release(a);
}

/* ===================================================================== */
/* Errors found by the engine                                             */
/* ===================================================================== */

static void expect_engine_error(const char *what, tf_prim prim, const void *params, size_t n_in,
                                tf_tensor *const *in, tf_tensor *out, tf_status expected)
{
    tf_error_clear();
    tf_status st = tf_engine_execute(cpu_engine, prim, params, n_in, in, 1, &out);
    if (st != expected)
        fail_msg("%s: got %s, want %s (%s)", what, tf_status_name(st), tf_status_name(expected),
                 tf_error_message());
    if (tf_error_status() != expected || tf_error_message()[0] == '\0' ||
        tf_error_cause()[0] == '\0')
        fail_msg("%s: error slot %s, message \"%s\", cause \"%s\" (both must be set)", what,
                 tf_status_name(tf_error_status()), tf_error_message(), tf_error_cause());
}

/* The cause names the primitive and its sub-operation as the engine spells them. */
static void expect_cause(const char *what, const char *text)
{
    if (strstr(tf_error_cause(), text) == NULL)
        fail_msg("%s: cause \"%s\" lacks \"%s\"", what, tf_error_cause(), text);
}

static void test_index_out_of_range(void **state)
{
    (void)state;
    static const tf_dtype its[] = {TF_I32, TF_I64};
    static const int64_t bad[] = {3, -1, 1000};
    tf_tensor *x = ramp(TF_F32, 2, s23); /* axis 1 has extent 3 */
    for (size_t d = 0; d < 2; d++) {
        for (size_t b = 0; b < 3; b++) {
            tf_scalar iv[4] = {tfr_i(0), tfr_i(2), tfr_i(bad[b]), tfr_i(1)};
            tf_tensor *idx = tfr_host(its[d], 1, (int64_t[]){4}, iv);
            tf_tensor *out = tfr_output(cpu_engine, TF_F32, 2, (int64_t[]){2, 4});
            tf_gather_params gp = {sizeof gp, 1, TF_GATHER_INDEX_SELECT, TF_SCATTER_ADD};
            char what[96];
            snprintf(what, sizeof what, "gather with %s index %lld", tf_dtype_name(its[d]),
                     (long long)bad[b]);
            expect_engine_error(what, TF_PRIM_GATHER, &gp, 2, (tf_tensor *[]){x, idx}, out,
                                TF_ERR_OUT_OF_RANGE);
            expect_cause(what, "cpu: GATHER f32 (index_select, axis 1): index");
            tf_tensor *upd = ramp(TF_F32, 2, (int64_t[]){2, 4});
            tf_tensor *sout = tfr_output(cpu_engine, TF_F32, 2, s23);
            snprintf(what, sizeof what, "scatter with %s index %lld", tf_dtype_name(its[d]),
                     (long long)bad[b]);
            expect_engine_error(what, TF_PRIM_SCATTER, &gp, 3, (tf_tensor *[]){x, idx, upd}, sout,
                                TF_ERR_OUT_OF_RANGE);
            expect_cause(what, "cpu: SCATTER f32 (index_select, axis 1): index");
            tf_tensor_release(sout);
            tf_tensor_release(upd);
            tf_tensor_release(out);
            tf_tensor_release(idx);
        }
    }
    /* along an axis: index [2,3] with one entry outside axis 0's extent 2 */
    tf_scalar av[6] = {tfr_i(0), tfr_i(1), tfr_i(1), tfr_i(2), tfr_i(0), tfr_i(1)};
    tf_tensor *aidx = tfr_host(TF_I64, 2, s23, av);
    tf_tensor *aout = tfr_output(cpu_engine, TF_F32, 2, s23);
    tf_gather_params ap = {sizeof ap, 0, TF_GATHER_ALONG_AXIS, TF_SCATTER_REPLACE};
    expect_engine_error("gather along axis with index 2 of extent 2", TF_PRIM_GATHER, &ap, 2,
                        (tf_tensor *[]){x, aidx}, aout, TF_ERR_OUT_OF_RANGE);
    expect_cause("gather along axis", "cpu: GATHER f32 (along_axis, axis 0): index 2");
    tf_tensor_release(aout);
    tf_tensor_release(aidx);
    tf_tensor_release(x);
}

static void test_integer_division_by_zero(void **state)
{
    (void)state;
    static const tf_dtype dts[] = {TF_I32, TF_I64};
    static const tf_binary_op ops[] = {TF_BINARY_DIV, TF_BINARY_REM};
    for (size_t d = 0; d < 2; d++) {
        for (size_t o = 0; o < 2; o++) {
            tf_scalar den[6] = {tfr_i(1), tfr_i(2), tfr_i(3), tfr_i(0), tfr_i(5), tfr_i(6)};
            tf_tensor *num = ramp(dts[d], 2, s23), *dv = tfr_host(dts[d], 2, s23, den);
            tf_tensor *out = tfr_output(cpu_engine, dts[d], 2, s23);
            tf_binary_params bp = {sizeof bp, ops[o]};
            char what[64];
            snprintf(what, sizeof what, "%s %s by zero", tf_prim_op_name(TF_PRIM_BINARY, ops[o]),
                     tf_dtype_name(dts[d]));
            expect_engine_error(what, TF_PRIM_BINARY, &bp, 2, (tf_tensor *[]){num, dv}, out,
                                TF_ERR_VALIDATION);
            char cause[96];
            snprintf(cause, sizeof cause, "cpu: BINARY %s %s: integer division by zero",
                     tf_prim_op_name(TF_PRIM_BINARY, ops[o]), tf_dtype_name(dts[d]));
            expect_cause(what, cause);
            tf_tensor_release(out);
            tf_tensor_release(dv);
            tf_tensor_release(num);
        }
    }
}

/* Each checked conversion whose value would change. */
static void test_checked_convert_changes_value(void **state)
{
    (void)state;
    static const struct {
        tf_dtype src, dst;
        tf_scalar v;
    } cases[] = {
        {TF_F64, TF_I32, {0.5, 0}},
        {TF_F64, TF_I64, {NAN, 0}},
        {TF_F64, TF_I32, {3e9, 0}},
        {TF_F32, TF_I32, {INFINITY, 0}},
        {TF_F32, TF_I32, {2147483648.0, 0}},
        {TF_F64, TF_I64, {9223372036854775808.0, 0}},
        {TF_I64, TF_I32, {0, (int64_t)1 << 40}},
        {TF_I64, TF_I32, {0, -2147483649LL}},
        {TF_I32, TF_F32, {0, 16777217}},
        {TF_I64, TF_F64, {0, ((int64_t)1 << 53) + 1}},
        {TF_F64, TF_F32, {1e39, 0}},
        {TF_I32, TF_BOOL, {0, 2}},
        {TF_I64, TF_BOOL, {0, -1}},
        {TF_F64, TF_BOOL, {0.5, 0}},
        {TF_F32, TF_BOOL, {NAN, 0}},
        {TF_F32, TF_I64, {-1.25, 0}},
    };
    tf_convert_params cp = {sizeof cp, 1};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tf_scalar vals[3] = {tfr_i(1), cases[k].v, tfr_i(0)};
        if (tf_dtype_is_float(cases[k].src)) {
            vals[0] = tfr_f(1.0);
            vals[2] = tfr_f(0.0);
        }
        tf_tensor *in = tfr_host(cases[k].src, 1, (int64_t[]){3}, vals);
        tf_tensor *out = tfr_output(cpu_engine, cases[k].dst, 1, (int64_t[]){3});
        char what[128];
        snprintf(what, sizeof what, "checked convert %s -> %s of case %zu",
                 tf_dtype_name(cases[k].src), tf_dtype_name(cases[k].dst), k);
        expect_engine_error(what, TF_PRIM_CONVERT, &cp, 1, &in, out, TF_ERR_OUT_OF_RANGE);
        tf_tensor_release(out);
        tf_tensor_release(in);
    }
}

/* The engine's extra options stream_threshold, fused and spin_us: bad keys and values are
   refused by create, which leaves *out as it was; good ones are taken. */
static void test_create_options(void **state)
{
    (void)state;
    static const struct {
        const char *key, *value, *cause;
    } bad[] = {
        {"stream", "0", "unknown option \"stream\""},
        {"stream_threshold", "", "not a byte count"},
        {"stream_threshold", "-1", "not a byte count"},
        {"stream_threshold", "1k", "not a byte count"},
        {"stream_threshold", " 5", "not a byte count"},
        {"stream_threshold", "99999999999999999999999", "not a byte count"},
        {"stream_threshold", NULL, "not a byte count"},
        {"fused", "maybe", "option fused = \"maybe\" (expected on, one or off)"},
        {"fused", NULL, "option fused = \"(null)\""},
        {"spin_us", "", "spin_us = \"\" is not a count of microseconds"},
        {"spin_us", "-5", "is not a count of microseconds from 0 to 1000000"},
        {"spin_us", "1000001", "is not a count of microseconds from 0 to 1000000"},
        {"spin_us", "50us", "is not a count of microseconds"},
        {"spin_us", NULL, "spin_us = \"(null)\""},
    };
    tf_engine *const sentinel = (tf_engine *)(void *)&bad;
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        tf_engine *e = sentinel;
        TF_ASSERT_STATUS(tfr_engine_create("cpu", 1, bad[k].key, bad[k].value, &e),
                         TF_ERR_VALIDATION);
        assert_ptr_equal(e, sentinel);
        if (strstr(tf_error_cause(), bad[k].cause) == NULL) {
            fail_msg("%s = %s: cause \"%s\" lacks \"%s\"", bad[k].key,
                     bad[k].value ? bad[k].value : "NULL", tf_error_cause(), bad[k].cause);
        }
    }
    tf_engine *e = NULL;
    TF_ASSERT_OK(tfr_engine_create("cpu", 0, "stream_threshold", "1048576", &e));
    tf_engine_destroy(e);
    TF_ASSERT_OK(tfr_engine_create("cpu", 2, "spin_us", "0", &e));
    tf_engine_destroy(e);
    TF_ASSERT_OK(tfr_engine_create("cpu", 2, "spin_us", "1000000", &e));
    tf_engine_destroy(e);
    /* fused=off: FUSED is refused by supports() (and so by the core), on by default */
    const tf_dtype f64x2[2] = {TF_F64, TF_F64};
    TF_ASSERT_OK(tfr_engine_create("cpu", 1, "fused", "off", &e));
    assert_false(tf_engine_supports(e, TF_PRIM_FUSED, 0, f64x2, 2));
    tf_engine_destroy(e);
    TF_ASSERT_OK(tfr_engine_create("cpu", 1, "fused", "on", &e));
    assert_true(tf_engine_supports(e, TF_PRIM_FUSED, 0, f64x2, 2));
    tf_engine_destroy(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wrong_counts),
        cmocka_unit_test(test_dtype_mismatch),
        cmocka_unit_test(test_shape_mismatch),
        cmocka_unit_test(test_axis_out_of_bounds),
        cmocka_unit_test(test_strided_output),
        cmocka_unit_test(test_output_shares_input),
        cmocka_unit_test(test_bad_params),
        cmocka_unit_test(test_outside_description),
        cmocka_unit_test(test_fused_bad_call),
        cmocka_unit_test(test_fused_bad_steps),
        cmocka_unit_test(test_fused_valid_passes_checks),
        cmocka_unit_test(test_fused_bad_outputs),
        cmocka_unit_test(test_fused_params_1_2),
        cmocka_unit_test(test_supports_elementwise),
        cmocka_unit_test(test_supports_structural),
        cmocka_unit_test(test_unknown_values),
        cmocka_unit_test(test_index_out_of_range),
        cmocka_unit_test(test_integer_division_by_zero),
        cmocka_unit_test(test_checked_convert_changes_value),
        cmocka_unit_test(test_create_options),
    };
    return CPU_RUN_GROUPS("cpu execute errors", tests);
}
