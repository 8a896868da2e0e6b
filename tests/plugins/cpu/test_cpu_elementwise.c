/*
 * test_cpu_elementwise.c - FILL, IOTA, UNARY, BINARY, COMPARE, SELECT and
 * CONVERT of the CPU engine against reference loops written from the
 * semantics in engine_abi.h. Random shapes (rank 0..5, zero extents) and
 * inputs of every layout: transposed, stepped, reversed, broadcast (stride
 * 0), engine-resident. Every case runs on the serial and threaded engine.
 */
#include <math.h>

#include "cpu_fixture.h"

static const tf_dtype all_dtypes[] = {TF_F32, TF_F64, TF_I32, TF_I64, TF_BOOL};
static const tf_dtype float_dtypes[] = {TF_F32, TF_F64};
static const tf_dtype int_dtypes[] = {TF_I32, TF_I64};

/* ===================================================================== */
/* The elementwise runner                                                 */
/* ===================================================================== */

typedef struct ew_case ew_case;
typedef tf_scalar (*ew_ref_fn)(const ew_case *c, const tf_scalar *args);
typedef void (*ew_fix_fn)(const ew_case *c, tf_scalar *args);

/* One elementwise primitive with fixed dtypes and value distributions. */
struct ew_case {
    tf_prim prim;
    const void *params;
    uint32_t op;
    size_t n_in;
    tf_dtype in[3];
    tfr_gen gen[3];
    tf_dtype out;
    ew_ref_fn ref;
    ew_fix_fn fix; /* adjusts one element's arguments (a zero divisor...); NULL: none */
};

static void ew_describe(const ew_case *c, const tfr_input *in, size_t rank, const int64_t *shape,
                        char *buf, size_t size)
{
    char s[96];
    int used = snprintf(buf, size, "%s %s %s->%s shape %s layouts", tf_prim_name(c->prim),
                        tf_prim_op_name(c->prim, c->op), tf_dtype_name(c->in[0]),
                        tf_dtype_name(c->out), tfr_shape_str(rank, shape, s, sizeof s));
    for (size_t k = 0; k < c->n_in && used > 0 && (size_t)used < size; k++)
        used += snprintf(buf + used, size - (size_t)used, " %s", tfr_layout_name(in[k].layout));
}

/* Inputs of random layouts; with c->fix, values are drawn first and fixed. */
static void ew_inputs(const ew_case *c, tfr_rng *rng, size_t rank, const int64_t *shape,
                      tfr_input *in)
{
    if (!c->fix) {
        for (size_t k = 0; k < c->n_in; k++)
            tfr_input_make(&in[k], rng, cpu_engine, c->in[k], rank, shape, tfr_random_layout(rng),
                           &c->gen[k]);
        return;
    }
    size_t n = tfr_numel(rank, shape);
    tf_scalar *vals[3], args[3];
    for (size_t k = 0; k < c->n_in; k++) {
        vals[k] = tfr_vals_alloc(n);
        for (size_t i = 0; i < n; i++)
            vals[k][i] = tfr_random_value(rng, c->in[k], &c->gen[k]);
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < c->n_in; k++)
            args[k] = vals[k][i];
        c->fix(c, args);
        for (size_t k = 0; k < c->n_in; k++)
            vals[k][i] = tfr_norm(c->in[k], args[k]);
    }
    for (size_t k = 0; k < c->n_in; k++) {
        tfr_input_from_vals(&in[k], rng, cpu_engine, c->in[k], rank, shape, tfr_random_layout(rng),
                            vals[k]);
        free(vals[k]);
    }
}

/* Executes c on the inputs and compares every element with the reference. */
static void ew_check(const ew_case *c, const tfr_input *in, size_t rank, const int64_t *shape)
{
    char what[256];
    tf_tensor *args[3];
    tf_scalar a[3];
    size_t n = tfr_numel(rank, shape);
    ew_describe(c, in, rank, shape, what, sizeof what);
    for (size_t k = 0; k < c->n_in; k++)
        args[k] = in[k].t;
    tf_tensor *out = tfr_output(cpu_engine, c->out, rank, shape);
    tfr_exec_ok(what, cpu_engine, c->prim, c->params, c->n_in, args, 1, &out);
    tf_scalar *got = tfr_read(out);
    tf_scalar *want = tfr_vals_alloc(n);
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < c->n_in; k++)
            a[k] = in[k].vals[i];
        want[i] = tfr_norm(c->out, c->ref(c, a));
    }
    tfr_check(what, c->out, n, got, want, NULL, tfr_tol_default(c->out));
    free(got);
    free(want);
    tf_tensor_release(out);
}

static void ew_run(const ew_case *c, tfr_rng *rng, int trials)
{
    for (int t = 0; t < trials; t++) {
        int64_t shape[TF_MAX_RANK];
        tfr_input in[3];
        size_t rank = tfr_random_rank(rng, 5);
        tfr_random_shape(rng, rank, rank > 3 ? 4 : 6, 8, shape);
        ew_inputs(c, rng, rank, shape, in);
        ew_check(c, in, rank, shape);
        for (size_t k = 0; k < c->n_in; k++)
            tfr_input_free(&in[k]);
    }
}

/* ===================================================================== */
/* Integer helpers: wrapping arithmetic through uint64                    */
/* ===================================================================== */

static tf_scalar wrap(tf_dtype dtype, uint64_t bits)
{
    return tfr_norm(dtype, tfr_i((int64_t)bits));
}

/* x^y mod 2^64 for y >= 0, by squaring. */
static uint64_t upow(uint64_t x, uint64_t y)
{
    uint64_t r = 1;
    while (y) {
        if (y & 1u)
            r *= x;
        x *= x;
        y >>= 1;
    }
    return r;
}

/* ===================================================================== */
/* FILL                                                                   */
/* ===================================================================== */

static tf_scalar fill_value(tfr_rng *rng, tf_dtype dtype)
{
    tf_scalar v = {tfr_rng_real(rng, -100.0, 100.0), tfr_rng_int(rng, -1000000, 1000000)};
    if (dtype == TF_I64 && tfr_rng_chance(rng, 30))
        v.i = INT64_MIN + tfr_rng_int(rng, 0, 5); /* needs all 64 bits */
    if (dtype == TF_BOOL)
        v.i = tfr_rng_int(rng, -2, 2); /* non-zero means true */
    return v;
}

static tf_scalar fill_expect(tf_dtype dtype, tf_scalar v)
{
    if (tf_dtype_is_float(dtype))
        return tfr_norm(dtype, tfr_f(v.f));
    return tfr_norm(dtype, tfr_i(v.i));
}

static void test_fill_dense(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 101);
    for (size_t d = 0; d < 5; d++) {
        for (int t = 0; t < 20; t++) {
            tf_dtype dtype = all_dtypes[d];
            int64_t shape[TF_MAX_RANK];
            size_t rank = tfr_random_rank(&rng, 5);
            tfr_random_shape(&rng, rank, 5, 10, shape);
            tf_fill_params p = {sizeof p, 0, fill_value(&rng, dtype), 0};
            tf_tensor *out = tfr_output(cpu_engine, dtype, rank, shape);
            tfr_exec_ok("fill dense", cpu_engine, TF_PRIM_FILL, &p, 0, NULL, 1, &out);
            size_t n = tfr_numel(rank, shape);
            tf_scalar *got = tfr_read(out), *want = tfr_vals_alloc(n);
            for (size_t i = 0; i < n; i++)
                want[i] = fill_expect(dtype, p.value);
            tfr_check("fill dense", dtype, n, got, want, NULL, tfr_tol_default(dtype));
            free(got);
            free(want);
            tf_tensor_release(out);
        }
    }
}

/* FILL through strided views: a diagonal, reversed, stepped, transposed, repeated. */
static void test_fill_strided(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 102);
    for (size_t d = 0; d < 5; d++) {
        for (int l = 0; l < TFR_OUT_LAYOUT_COUNT_; l++) {
            tf_dtype dtype = all_dtypes[d];
            int64_t shape[TF_MAX_RANK];
            size_t rank = 1 + (size_t)tfr_rng_int(&rng, 0, 3);
            tfr_random_shape(&rng, rank, 5, 5, shape);
            tf_tensor *root, *view;
            tfr_strided_output(&rng, cpu_engine, dtype, rank, shape, (tfr_out_layout)l, &root,
                               &view);
            tf_fill_params p = {sizeof p, 0, fill_value(&rng, dtype), 0};
            if (dtype == TF_BOOL)
                p.value.i = 0; /* the sentinel of bool is 1: write 0 to see it */
            char what[96];
            snprintf(what, sizeof what, "fill %s into a %s view", tf_dtype_name(dtype),
                     tfr_out_layout_name((tfr_out_layout)l));
            tfr_exec_ok(what, cpu_engine, TF_PRIM_FILL, &p, 0, NULL, 1, &view);
            size_t n = tfr_numel(rank, shape);
            tf_scalar *vals = tfr_vals_alloc(n);
            for (size_t i = 0; i < n; i++)
                vals[i] = fill_expect(dtype, p.value);
            tfr_check_strided_write(what, root, view, vals);
            free(vals);
            tf_tensor_release(view);
            tf_tensor_release(root);
        }
    }
}

/* ===================================================================== */
/* IOTA                                                                   */
/* ===================================================================== */

static void test_iota(void **state)
{
    (void)state;
    static const tf_dtype dtypes[] = {TF_F32, TF_F64, TF_I32, TF_I64};
    tfr_rng rng;
    tfr_rng_seed(&rng, 103);
    for (size_t d = 0; d < 4; d++) {
        for (int t = 0; t < 20; t++) {
            int64_t shape[TF_MAX_RANK], idx[TF_MAX_RANK] = {0};
            size_t rank = 1 + (size_t)tfr_rng_int(&rng, 0, 4);
            tfr_random_shape(&rng, rank, 6, 8, shape);
            tf_iota_params p = {sizeof p, (uint32_t)tfr_rng_int(&rng, 0, (int64_t)rank - 1)};
            tf_tensor *out = tfr_output(cpu_engine, dtypes[d], rank, shape);
            char what[128], s[96];
            snprintf(what, sizeof what, "iota %s %s axis %u", tf_dtype_name(dtypes[d]),
                     tfr_shape_str(rank, shape, s, sizeof s), p.axis);
            tfr_exec_ok(what, cpu_engine, TF_PRIM_IOTA, &p, 0, NULL, 1, &out);
            size_t n = tfr_numel(rank, shape);
            tf_scalar *got = tfr_read(out), *want = tfr_vals_alloc(n);
            for (size_t i = 0; i < n; i++, tfr_index_next(rank, shape, idx))
                want[i] =
                    tf_dtype_is_float(dtypes[d]) ? tfr_f((double)idx[p.axis]) : tfr_i(idx[p.axis]);
            tfr_check(what, dtypes[d], n, got, want, NULL, tfr_tol_default(dtypes[d]));
            free(got);
            free(want);
            tf_tensor_release(out);
        }
    }
}

/* ===================================================================== */
/* UNARY                                                                  */
/* ===================================================================== */

static double sign_of(double x)
{
    if (isnan(x))
        return NAN;
    return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
}

static double sigmoid(double x)
{
    if (x >= 0)
        return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

static double unary_float(tf_unary_op op, double x)
{
    switch (op) {
    case TF_UNARY_NEG: return -x;
    case TF_UNARY_ABS: return fabs(x);
    case TF_UNARY_SIGN: return sign_of(x);
    case TF_UNARY_EXP: return exp(x);
    case TF_UNARY_LOG: return log(x);
    case TF_UNARY_EXPM1: return expm1(x);
    case TF_UNARY_LOG1P: return log1p(x);
    case TF_UNARY_SIN: return sin(x);
    case TF_UNARY_COS: return cos(x);
    case TF_UNARY_TANH: return tanh(x);
    case TF_UNARY_SQRT: return sqrt(x);
    case TF_UNARY_RSQRT: return 1.0 / sqrt(x);
    case TF_UNARY_ERF: return erf(x);
    case TF_UNARY_SIGMOID: return sigmoid(x);
    case TF_UNARY_RECIPROCAL: return 1.0 / x;
    case TF_UNARY_SQUARE: return x * x;
    case TF_UNARY_FLOOR: return floor(x);
    case TF_UNARY_CEIL: return ceil(x);
    default: break;
    }
    return NAN;
}

static tf_scalar unary_int(tf_dtype dtype, tf_unary_op op, int64_t x)
{
    uint64_t u = (uint64_t)x;
    switch (op) {
    case TF_UNARY_NEG: return wrap(dtype, 0u - u);
    case TF_UNARY_ABS: return wrap(dtype, x < 0 ? 0u - u : u);
    case TF_UNARY_SIGN: return tfr_i(x > 0 ? 1 : x < 0 ? -1 : 0);
    case TF_UNARY_SQUARE: return wrap(dtype, u * u);
    default: break;
    }
    fail_msg("no integer reference for unary op %d", (int)op);
    return tfr_i(0);
}

static tf_scalar ref_unary(const ew_case *c, const tf_scalar *a)
{
    if (c->in[0] == TF_BOOL)
        return tfr_i(!a[0].i);
    if (tf_dtype_is_float(c->in[0]))
        return tfr_f(unary_float((tf_unary_op)c->op, a[0].f));
    return unary_int(c->in[0], (tf_unary_op)c->op, a[0].i);
}

/* The domain where an op is real-valued, for the bulk of the random values. */
static tfr_gen unary_domain(tf_unary_op op)
{
    switch (op) {
    case TF_UNARY_LOG:
    case TF_UNARY_SQRT:
    case TF_UNARY_RSQRT: return (tfr_gen){TFR_UNIFORM, 0.01, 5.0};
    case TF_UNARY_LOG1P: return (tfr_gen){TFR_UNIFORM, -0.99, 5.0};
    case TF_UNARY_EXP:
    case TF_UNARY_EXPM1: return (tfr_gen){TFR_UNIFORM, -10.0, 10.0};
    case TF_UNARY_SIGMOID: return (tfr_gen){TFR_UNIFORM, -30.0, 30.0};
    case TF_UNARY_FLOOR:
    case TF_UNARY_CEIL: return (tfr_gen){TFR_UNIFORM, -5.0, 5.0};
    default: return (tfr_gen){TFR_UNIFORM, -4.0, 4.0};
    }
}

static void test_unary_float(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 104);
    for (size_t d = 0; d < 2; d++) {
        for (uint32_t op = 0; op <= TF_UNARY_CEIL; op++) { /* the ops after CEIL are complex */
            if (op == TF_UNARY_LOGICAL_NOT)
                continue;
            tf_unary_params p = {sizeof p, op};
            ew_case c = {TF_PRIM_UNARY,   &p,        op,  1, {float_dtypes[d]}, {unary_domain(op)},
                         float_dtypes[d], ref_unary, NULL};
            ew_run(&c, &rng, 12);
            c.gen[0] = (tfr_gen){TFR_SPECIAL, -4.0, 4.0}; /* NaN, inf, -0 and all signs */
            ew_run(&c, &rng, 6);
        }
    }
}

static void test_unary_int_bool(void **state)
{
    (void)state;
    static const tf_unary_op int_ops[] = {TF_UNARY_NEG, TF_UNARY_ABS, TF_UNARY_SIGN,
                                          TF_UNARY_SQUARE};
    tfr_rng rng;
    tfr_rng_seed(&rng, 105);
    for (size_t d = 0; d < 2; d++) {
        for (size_t o = 0; o < 4; o++) {
            tf_unary_params p = {sizeof p, int_ops[o]};
            ew_case c = {
                TF_PRIM_UNARY, &p,        int_ops[o], 1, {int_dtypes[d]}, {{TFR_WIDE, 0, 0}},
                int_dtypes[d], ref_unary, NULL};
            ew_run(&c, &rng, 12); /* whole range: NEG/ABS/SQUARE wrap */
            c.gen[0] = (tfr_gen){TFR_SPECIAL, -20, 20};
            ew_run(&c, &rng, 6);
        }
    }
    tf_unary_params p = {sizeof p, TF_UNARY_LOGICAL_NOT};
    ew_case c = {
        TF_PRIM_UNARY, &p,  TF_UNARY_LOGICAL_NOT, 1, {TF_BOOL}, {{TFR_UNIFORM, 0, 1}}, TF_BOOL,
        ref_unary,     NULL};
    ew_run(&c, &rng, 20);
}

/* One value through UNARY, with a relative tolerance and no absolute slack. */
static void unary_exact_point(tf_dtype dtype, tf_unary_op op, double x, double want, double rtol)
{
    tf_unary_params p = {sizeof p, op};
    tf_scalar v = tfr_f(x);
    tf_tensor *in = tfr_host(dtype, 0, NULL, &v);
    tf_tensor *out = tfr_output(cpu_engine, dtype, 0, NULL);
    char what[128];
    snprintf(what, sizeof what, "%s(%g) %s", tf_prim_op_name(TF_PRIM_UNARY, op), x,
             tf_dtype_name(dtype));
    tfr_exec_ok(what, cpu_engine, TF_PRIM_UNARY, &p, 1, &in, 1, &out);
    tf_scalar *got = tfr_read(out);
    tf_scalar w = tfr_norm(dtype, tfr_f(want));
    tfr_check(what, dtype, 1, got, &w, NULL, (tfr_tol){rtol, 0.0});
    free(got);
    tf_tensor_release(out);
    tf_tensor_release(in);
}

/* The ops that exist for accuracy must be accurate where the naive formula is not. */
static void test_unary_accuracy(void **state)
{
    (void)state;
    for (size_t d = 0; d < 2; d++) {
        tf_dtype dt = float_dtypes[d];
        double rtol = dt == TF_F32 ? 1e-5 : 1e-12;
        unary_exact_point(dt, TF_UNARY_EXPM1, 1e-10, expm1(1e-10), rtol);
        unary_exact_point(dt, TF_UNARY_EXPM1, -3e-9, expm1(-3e-9), rtol);
        unary_exact_point(dt, TF_UNARY_LOG1P, 1e-10, log1p(1e-10), rtol);
        unary_exact_point(dt, TF_UNARY_LOG1P, -2e-9, log1p(-2e-9), rtol);
        unary_exact_point(dt, TF_UNARY_SIGMOID, 1000.0, 1.0, rtol);
        unary_exact_point(dt, TF_UNARY_SIGMOID, -60.0, sigmoid(-60.0), rtol);
        unary_exact_point(dt, TF_UNARY_SIGMOID, -1000.0, 0.0, rtol);
        unary_exact_point(dt, TF_UNARY_SIGN, -0.0, 0.0, 0.0);
        unary_exact_point(dt, TF_UNARY_ERF, 1e-8, erf(1e-8), rtol);
    }
}

/* ===================================================================== */
/* BINARY                                                                 */
/* ===================================================================== */

static double binary_float(tf_binary_op op, double a, double b)
{
    switch (op) {
    case TF_BINARY_ADD: return a + b;
    case TF_BINARY_SUB: return a - b;
    case TF_BINARY_MUL: return a * b;
    case TF_BINARY_DIV: return a / b;
    case TF_BINARY_POW: return pow(a, b);
    case TF_BINARY_MAX: return isnan(a) || isnan(b) ? NAN : (a > b ? a : b);
    case TF_BINARY_MIN: return isnan(a) || isnan(b) ? NAN : (a < b ? a : b);
    case TF_BINARY_REM: return fmod(a, b);
    default: break;
    }
    return NAN;
}

/* Integer POW: wrapping for y >= 0; 1/x^-y truncated for y < 0. */
static tf_scalar int_pow(tf_dtype dtype, int64_t x, int64_t y)
{
    if (y >= 0)
        return wrap(dtype, upow((uint64_t)x, (uint64_t)y));
    if (x == 1)
        return tfr_i(1);
    if (x == -1)
        return tfr_i((y & 1) ? -1 : 1);
    return tfr_i(0);
}

static tf_scalar binary_int(tf_dtype dt, tf_binary_op op, int64_t a, int64_t b)
{
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    switch (op) {
    case TF_BINARY_ADD: return wrap(dt, ua + ub);
    case TF_BINARY_SUB: return wrap(dt, ua - ub);
    case TF_BINARY_MUL: return wrap(dt, ua * ub);
    case TF_BINARY_DIV: return b == -1 ? wrap(dt, 0u - ua) : tfr_i(a / b);
    case TF_BINARY_REM: return b == -1 ? tfr_i(0) : tfr_i(a % b);
    case TF_BINARY_POW: return int_pow(dt, a, b);
    case TF_BINARY_MAX: return tfr_i(a > b ? a : b);
    case TF_BINARY_MIN: return tfr_i(a < b ? a : b);
    case TF_BINARY_AND: return tfr_i(a & b);
    case TF_BINARY_OR: return tfr_i(a | b);
    case TF_BINARY_XOR: return tfr_i(a ^ b);
    default: break;
    }
    return tfr_i(0);
}

static tf_scalar ref_binary(const ew_case *c, const tf_scalar *a)
{
    tf_binary_op op = (tf_binary_op)c->op;
    if (tf_dtype_is_float(c->in[0]))
        return tfr_f(binary_float(op, a[0].f, a[1].f));
    if (c->in[0] == TF_BOOL) {
        if (op == TF_BINARY_AND || op == TF_BINARY_MIN)
            return tfr_i(a[0].i && a[1].i);
        if (op == TF_BINARY_OR || op == TF_BINARY_MAX)
            return tfr_i(a[0].i || a[1].i);
        return tfr_i(a[0].i != a[1].i);
    }
    return binary_int(c->in[0], op, a[0].i, a[1].i);
}

/* Division by zero is an error (tested elsewhere); keep divisors non-zero. */
static void fix_int_binary(const ew_case *c, tf_scalar *a)
{
    if ((c->op == TF_BINARY_DIV || c->op == TF_BINARY_REM) && a[1].i == 0)
        a[1].i = 7;
    if (c->op == TF_BINARY_POW && a[0].i == 0 && a[1].i < 0)
        a[1].i = 3; /* 0 to a negative power divides by zero */
}

static void test_binary_float(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 106);
    for (size_t d = 0; d < 2; d++) {
        for (uint32_t op = 0; op <= TF_BINARY_REM; op++) {
            tf_dtype dt = float_dtypes[d];
            tf_binary_params p = {sizeof p, op};
            ew_case c = {TF_PRIM_BINARY,
                         &p,
                         op,
                         2,
                         {dt, dt},
                         {{TFR_UNIFORM, -4, 4}, {TFR_UNIFORM, -4, 4}},
                         dt,
                         ref_binary,
                         NULL};
            ew_run(&c, &rng, 10);
            c.gen[0] = c.gen[1] = (tfr_gen){TFR_SPECIAL, -4, 4};
            ew_run(&c, &rng, 6);
            c.gen[0] = (tfr_gen){TFR_INTEGRAL_SPECIAL, -4, 4};
            c.gen[1] = (tfr_gen){TFR_INTEGRAL, -4, 4}; /* integral powers, exact remainders */
            ew_run(&c, &rng, 4);
        }
    }
}

static void test_binary_int(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 107);
    for (size_t d = 0; d < 2; d++) {
        for (uint32_t op = 0; op <= TF_BINARY_XOR; op++) { /* COMPLEX takes real parts */
            tf_dtype dt = int_dtypes[d];
            tf_binary_params p = {sizeof p, op};
            ew_case c = {TF_PRIM_BINARY,
                         &p,
                         op,
                         2,
                         {dt, dt},
                         {{TFR_WIDE, 0, 0}, {TFR_WIDE, 0, 0}},
                         dt,
                         ref_binary,
                         fix_int_binary};
            ew_run(&c, &rng, 8); /* whole range: wrapping, INT_MIN / -1 */
            c.gen[0] = (tfr_gen){TFR_SPECIAL, -50, 50};
            c.gen[1] = (tfr_gen){TFR_SPECIAL, -9, 9}; /* signs of DIV/REM, small POW exponents */
            ew_run(&c, &rng, 8);
            if (op == TF_BINARY_POW) {
                c.gen[0] = (tfr_gen){TFR_INTEGRAL, -3, 3};
                c.gen[1] = (tfr_gen){TFR_INTEGRAL, -70, 70}; /* negative and wrapping powers */
                ew_run(&c, &rng, 6);
            }
        }
    }
}

static void test_binary_bool(void **state)
{
    (void)state;
    static const tf_binary_op ops[] = {TF_BINARY_AND, TF_BINARY_OR, TF_BINARY_XOR, TF_BINARY_MAX,
                                       TF_BINARY_MIN};
    tfr_rng rng;
    tfr_rng_seed(&rng, 108);
    for (size_t o = 0; o < 5; o++) {
        tf_binary_params p = {sizeof p, ops[o]};
        ew_case c = {TF_PRIM_BINARY,
                     &p,
                     ops[o],
                     2,
                     {TF_BOOL, TF_BOOL},
                     {{TFR_UNIFORM, 0, 1}, {TFR_UNIFORM, 0, 1}},
                     TF_BOOL,
                     ref_binary,
                     NULL};
        ew_run(&c, &rng, 12);
    }
}

/* The same tensor as both operands (x op x), strided. */
static void test_binary_same_operand(void **state)
{
    (void)state;
    static const tf_binary_op ops[] = {TF_BINARY_ADD, TF_BINARY_SUB, TF_BINARY_MUL, TF_BINARY_DIV,
                                       TF_BINARY_MAX};
    tfr_rng rng;
    tfr_rng_seed(&rng, 109);
    for (size_t d = 0; d < 4; d++) {
        for (size_t o = 0; o < 5; o++) {
            tf_dtype dt = all_dtypes[d];
            tf_binary_params p = {sizeof p, ops[o]};
            ew_case c = {TF_PRIM_BINARY,         &p, ops[o],     2,   {dt, dt},
                         {{TFR_INTEGRAL, 1, 9}}, dt, ref_binary, NULL};
            int64_t shape[3] = {3, 4, 2};
            tfr_input in[2];
            tfr_input_make(&in[0], &rng, cpu_engine, dt, 3, shape, tfr_random_layout(&rng),
                           &c.gen[0]);
            in[1] = in[0];
            ew_check(&c, in, 3, shape);
            tfr_input_free(&in[0]);
        }
    }
}

/* ===================================================================== */
/* COMPARE and SELECT                                                     */
/* ===================================================================== */

static tf_scalar ref_compare(const ew_case *c, const tf_scalar *a)
{
    int lt, eq, gt;
    if (tf_dtype_is_float(c->in[0])) {
        lt = a[0].f < a[1].f;
        eq = a[0].f == a[1].f;
        gt = a[0].f > a[1].f;
    } else {
        lt = a[0].i < a[1].i;
        eq = a[0].i == a[1].i;
        gt = a[0].i > a[1].i;
    }
    switch ((tf_compare_op)c->op) {
    case TF_COMPARE_EQ: return tfr_i(eq);
    case TF_COMPARE_NE: return tfr_i(!eq);
    case TF_COMPARE_LT: return tfr_i(lt);
    case TF_COMPARE_LE: return tfr_i(lt || eq);
    case TF_COMPARE_GT: return tfr_i(gt);
    case TF_COMPARE_GE: return tfr_i(gt || eq);
    default: break;
    }
    return tfr_i(0);
}

static void test_compare(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 110);
    for (size_t d = 0; d < 5; d++) {
        for (uint32_t op = 0; op < TF_COMPARE_COUNT_; op++) {
            tf_dtype dt = all_dtypes[d];
            tf_compare_params p = {sizeof p, op};
            /* few distinct values so that equal pairs are common; NaN, inf, -0 == 0 */
            tfr_gen g = {TFR_INTEGRAL_SPECIAL, -2, 2};
            ew_case c = {TF_PRIM_COMPARE, &p, op, 2, {dt, dt}, {g, g}, TF_BOOL, ref_compare, NULL};
            ew_run(&c, &rng, 12);
        }
    }
}

static tf_scalar ref_select(const ew_case *c, const tf_scalar *a)
{
    (void)c;
    return a[0].i ? a[1] : a[2];
}

static void test_select(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 111);
    for (size_t d = 0; d < 5; d++) {
        tf_dtype dt = all_dtypes[d];
        tfr_gen g = {TFR_SPECIAL, -100, 100};
        ew_case c = {TF_PRIM_SELECT, NULL, 0, 3, {TF_BOOL, dt, dt}, {{TFR_UNIFORM, 0, 1}, g, g}, dt,
                     ref_select,     NULL};
        ew_run(&c, &rng, 25);
    }
}

/* ===================================================================== */
/* CONVERT                                                                */
/* ===================================================================== */

/* Float to integer, unchecked: truncate toward zero, saturate, NaN gives 0. */
static tf_scalar float_to_int(tf_dtype dst, double x)
{
    if (isnan(x))
        return tfr_i(0);
    double t = trunc(x);
    double hi = dst == TF_I32 ? 2147483648.0 : 9223372036854775808.0; /* 2^31, 2^63 */
    if (t >= hi)
        return tfr_i(tfr_int_max(dst));
    if (t < -hi)
        return tfr_i(tfr_int_min(dst));
    return tfr_i((int64_t)t);
}

static tf_scalar ref_convert(const ew_case *c, const tf_scalar *a)
{
    tf_dtype src = c->in[0], dst = c->out;
    if (dst == TF_BOOL)
        return tfr_i(tf_dtype_is_float(src) ? a[0].f != 0.0 : a[0].i != 0);
    if (tf_dtype_is_float(src)) {
        if (tf_dtype_is_float(dst))
            return tfr_f(dst == TF_F32 ? (double)(float)a[0].f : a[0].f);
        return float_to_int(dst, a[0].f);
    }
    /* integer or bool source: int to float rounds to nearest, once */
    if (dst == TF_F32)
        return tfr_f((double)(float)a[0].i);
    if (dst == TF_F64)
        return tfr_f((double)a[0].i);
    return tfr_i(a[0].i);
}

/* Values that exercise a conversion: wide floats, specials, huge integers. */
static tfr_gen convert_gen(tf_dtype src, tf_dtype dst, int variant)
{
    if (tf_dtype_is_float(src)) {
        if (variant == 0)
            return (tfr_gen){TFR_SPECIAL, -5.0, 5.0};
        if (src == TF_F64 && dst == TF_F32)
            return (tfr_gen){TFR_UNIFORM, -1e39, 1e39}; /* overflow gives inf */
        return (tfr_gen){TFR_UNIFORM, -3e19, 3e19};     /* saturation of i32 and i64 */
    }
    if (src == TF_I64 && dst == TF_I32) /* out-of-range i64 -> i32 casts are unspecified */
        return (tfr_gen){TFR_UNIFORM, -2147483648.0, 2147483647.0};
    return variant ? (tfr_gen){TFR_WIDE, 0, 0} : (tfr_gen){TFR_SPECIAL, -5, 5};
}

static void test_convert_unchecked(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 112);
    tf_convert_params p = {sizeof p, 0};
    for (size_t s = 0; s < 5; s++) {
        for (size_t d = 0; d < 5; d++) {
            for (int variant = 0; variant < 2; variant++) {
                ew_case c = {TF_PRIM_CONVERT,
                             &p,
                             0,
                             1,
                             {all_dtypes[s]},
                             {convert_gen(all_dtypes[s], all_dtypes[d], variant)},
                             all_dtypes[d],
                             ref_convert,
                             NULL};
                ew_run(&c, &rng, 8);
            }
        }
    }
}

/* Values that a checked conversion must let through unchanged. */
static void fix_checked(const ew_case *c, tf_scalar *a)
{
    tf_dtype src = c->in[0], dst = c->out;
    if (dst == TF_BOOL) {
        if (tf_dtype_is_float(src))
            a[0].f = a[0].f > 0 ? 1.0 : 0.0;
        else
            a[0].i = a[0].i > 0;
    } else if (tf_dtype_is_float(src) && !tf_dtype_is_float(dst)) {
        a[0].f = isfinite(a[0].f) ? trunc(a[0].f) : 0.0;
    } else if (!tf_dtype_is_float(src) && tf_dtype_is_float(dst)) {
        /* exactly representable: |x| < 2^24 (f32) or 2^53 (f64) */
        int64_t lim = dst == TF_F32 ? (1 << 24) : ((int64_t)1 << 53);
        a[0].i %= lim;
    }
}

static void test_convert_checked_ok(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 113);
    tf_convert_params p = {sizeof p, 1};
    for (size_t s = 0; s < 5; s++) {
        for (size_t d = 0; d < 5; d++) {
            tf_dtype src = all_dtypes[s], dst = all_dtypes[d];
            tfr_gen g = {TFR_UNIFORM, -1e6, 1e6};
            if (src == TF_F64 && dst == TF_F32)
                g = (tfr_gen){TFR_SPECIAL, -1e30, 1e30}; /* rounding, NaN and inf allowed */
            else if (src == TF_I64 && dst == TF_I32)     /* in range; the extremes: edges test */
                g = (tfr_gen){TFR_UNIFORM, -2147483648.0, 2147483647.0};
            else if (!tf_dtype_is_float(src))
                g = (tfr_gen){TFR_WIDE, 0, 0};
            ew_case c = {TF_PRIM_CONVERT, &p, 0, 1, {src}, {g}, dst, ref_convert, fix_checked};
            ew_run(&c, &rng, 8);
        }
    }
}

/* Boundary values of the checked conversions that must pass. */
static void test_convert_checked_edges(void **state)
{
    (void)state;
    static const struct {
        tf_dtype src, dst;
        tf_scalar v;
    } cases[] = {
        {TF_F64, TF_I32, {2147483647.0, 0}},
        {TF_F64, TF_I32, {-2147483648.0, 0}},
        {TF_F32, TF_I64, {-9223372036854775808.0, 0}},
        {TF_I64, TF_F64, {0, (int64_t)1 << 53}},
        {TF_I32, TF_F32, {0, 1 << 24}},
        {TF_I64, TF_F32, {0, (int64_t)1 << 40}},
        {TF_I64, TF_I32, {0, INT32_MIN}},
        {TF_F64, TF_F32, {0.1, 0}},
        {TF_F64, TF_F32, {INFINITY, 0}},
        {TF_F32, TF_BOOL, {1.0, 0}},
        {TF_I64, TF_BOOL, {0, 1}},
        {TF_F64, TF_I64, {-0x1p62, 0}},
    };
    tf_convert_params p = {sizeof p, 1};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tf_tensor *in = tfr_host(cases[i].src, 0, NULL, &cases[i].v);
        tf_tensor *out = tfr_output(cpu_engine, cases[i].dst, 0, NULL);
        ew_case c = {TF_PRIM_CONVERT,       &p,           0,           1,   {cases[i].src},
                     {{TFR_UNIFORM, 0, 0}}, cases[i].dst, ref_convert, NULL};
        char what[96];
        snprintf(what, sizeof what, "checked convert %s -> %s of case %zu",
                 tf_dtype_name(cases[i].src), tf_dtype_name(cases[i].dst), i);
        tfr_exec_ok(what, cpu_engine, TF_PRIM_CONVERT, &p, 1, &in, 1, &out);
        tf_scalar *got = tfr_read(out);
        tf_scalar want = tfr_norm(cases[i].dst, ref_convert(&c, &cases[i].v));
        tfr_check(what, cases[i].dst, 1, got, &want, NULL, tfr_tol_default(cases[i].dst));
        free(got);
        tf_tensor_release(out);
        tf_tensor_release(in);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fill_dense),
        cmocka_unit_test(test_fill_strided),
        cmocka_unit_test(test_iota),
        cmocka_unit_test(test_unary_float),
        cmocka_unit_test(test_unary_int_bool),
        cmocka_unit_test(test_unary_accuracy),
        cmocka_unit_test(test_binary_float),
        cmocka_unit_test(test_binary_int),
        cmocka_unit_test(test_binary_bool),
        cmocka_unit_test(test_binary_same_operand),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_select),
        cmocka_unit_test(test_convert_unchecked),
        cmocka_unit_test(test_convert_checked_ok),
        cmocka_unit_test(test_convert_checked_edges),
    };
    return CPU_RUN_GROUPS("cpu elementwise", tests);
}
