/*
 * prim_cases.c - the calls the conformance kit makes of each primitive.
 *
 * One table row per primitive and sub-op, one cell per dtype. Each cell runs
 * a generated set of cases: rank 0 to 4, empty and size-1 extents, a larger
 * extent than one GPU workgroup, and every input layout of ck_layout in turn
 * (offsets, gaps, reversed and transposed strides, broadcast stride 0).
 * Value domains keep each case inside what engine_abi.h defines (positive
 * arguments for log, nonzero integer divisors, in-range indices) while still
 * reaching the edges the ABI specifies (integer wrapping, NaN propagation,
 * saturating conversions, clamped slice starts). FUSED gets random programs
 * over the UNARY and BINARY ops the engine claims, on the same shapes and
 * layouts: of one output (row "fused"), of several (row "fused/outputs",
 * ABI 1.3), with immediates (row "fused/immediates", ABI 1.5) and with a
 * reduced output of each reduction (rows "fused/reduce/<op>", ABI 1.6).
 */
#include <string.h>

#include "prims.h"

typedef struct ck_shape {
    size_t rank;
    int64_t d[4];
} ck_shape;

/* The first six are the --quick set. */
static const ck_shape k_shapes[] = {
    {0, {0}},          {1, {9}}, {2, {3, 4}}, {1, {0}},   {3, {2, 1, 3}},
    {4, {2, 3, 1, 2}}, {1, {1}}, {2, {0, 3}}, {1, {300}}, {2, {17, 5}},
};

static int n_shapes(const ck_ctx *ctx)
{
    return ctx->quick ? 6 : (int)(sizeof k_shapes / sizeof k_shapes[0]);
}

static const tf_dtype k_all[CK_N_DTYPES] = {TF_F32, TF_F64, TF_I32, TF_I64,
                                            TF_BOOL, TF_C64, TF_C128};

static int want(const ck_ctx *ctx, tf_dtype d)
{
    return ck_wants_dtype(ctx, d);
}

static void set_arg(ck_arg *a, tf_dtype dt, size_t rank, const int64_t *shape, int layout,
                    int domain, int64_t lim)
{
    memset(a, 0, sizeof *a);
    a->dtype = dt;
    a->rank = rank;
    for (size_t i = 0; i < rank; i++)
        a->shape[i] = shape[i];
    a->layout = layout;
    a->domain = domain;
    a->lim = lim;
}

/* Elementwise rows: out and every input have the shape; input k rotates layouts. */
typedef struct ew {
    tf_prim prim;
    uint32_t op;
    const void *params;
    size_t n_in;
    tf_dtype in_dt[3];
    int in_dom[3];
    tf_dtype out_dt;
    int kind; /* tolerance kind (ck_case_tol) */
    int64_t lim;
    int strided_out; /* FILL, COPY: any output layout */
    int zero_sign;   /* ck_case.zero_sign */
} ew;

static void run_ew(ck_ctx *ctx, ck_row *row, tf_dtype col, const ew *e)
{
    for (int i = 0; i < n_shapes(ctx); i++) {
        const ck_shape *s = &k_shapes[i];
        ck_case c = {.prim = e->prim,
                     .op = e->op,
                     .params = e->params,
                     .n_in = e->n_in,
                     .zero_sign = e->zero_sign};
        for (size_t k = 0; k < e->n_in; k++)
            set_arg(&c.in[k], e->in_dt[k], s->rank, s->d, (int)((i + (int)k) % CK_L_COUNT_),
                    e->in_dom[k], e->lim);
        int out_layout = i % 2 ? CK_L_OFFSET : CK_L_DENSE;
        if (e->strided_out) /* FILL may even repeat addresses; COPY must not */
            out_layout = (i + 2) % (e->prim == TF_PRIM_FILL ? CK_L_COUNT_ : CK_L_BCAST);
        set_arg(&c.out, e->out_dt, s->rank, s->d, out_layout, CK_D_ANY, 0);
        ck_case_tol(&c, e->out_dt, e->kind, 1);
        ck_case_run(ctx, row, col, &c);
    }
}

/* ---- fill, iota ---- */

static void rows_fill_iota(ck_ctx *ctx)
{
    ck_row *row = ck_row_add(ctx, "fill");
    for (int d = 0; row && d < CK_N_DTYPES; d++) {
        if (!want(ctx, k_all[d]))
            continue;
        /* not an f32: f64 must keep every bit; complex gets an imaginary part of its own */
        tf_fill_params p = {sizeof p, 0, {-3.1, -7}, 0.0};
        if (tf_dtype_is_complex(k_all[d]))
            p.imag = -0.0; /* the sign of a zero part is kept too */
        if (k_all[d] == TF_C128)
            p.imag = 2.7;
        if (k_all[d] == TF_BOOL)
            p.value.i = 1;
        ew e = {TF_PRIM_FILL, 0, &p, 0, {0}, {0}, k_all[d], CK_TOL_EXACT, 0, 1, 1};
        run_ew(ctx, row, k_all[d], &e);
    }
    row = ck_row_add(ctx, "iota");
    for (int d = 0; row && d < 4; d++) {
        if (!want(ctx, k_all[d]))
            continue;
        for (int i = 0; i < n_shapes(ctx); i++) {
            const ck_shape *s = &k_shapes[i];
            if (s->rank == 0)
                continue;
            tf_iota_params p = {sizeof p, (uint32_t)(i % (int)s->rank)};
            ck_case c = {.prim = TF_PRIM_IOTA, .params = &p};
            set_arg(&c.out, k_all[d], s->rank, s->d, i % 2 ? CK_L_OFFSET : CK_L_DENSE, 0, 0);
            ck_case_tol(&c, k_all[d], CK_TOL_EXACT, 1);
            ck_case_run(ctx, row, k_all[d], &c);
        }
    }
}

/* ---- unary, binary, compare, select ---- */

int ck_unary_defined(uint32_t op, tf_dtype d)
{
    if (tf_dtype_is_complex(d)) /* out[0] of d too, but tf_unary_gives_part's */
        return op == TF_UNARY_NEG || op == TF_UNARY_CONJ || op == TF_UNARY_SIGN ||
               (op >= TF_UNARY_EXP && op <= TF_UNARY_RSQRT && op != TF_UNARY_EXPM1 &&
                op != TF_UNARY_LOG1P) ||
               op == TF_UNARY_RECIPROCAL || op == TF_UNARY_SQUARE || tf_unary_gives_part(op);
    if (tf_dtype_is_float(d))
        return op != TF_UNARY_LOGICAL_NOT && op <= TF_UNARY_CEIL;
    if (tf_dtype_is_int(d))
        return op == TF_UNARY_NEG || op == TF_UNARY_ABS || op == TF_UNARY_SIGN ||
               op == TF_UNARY_SQUARE;
    return op == TF_UNARY_LOGICAL_NOT;
}

/* The float ops whose zero results have a sign engine_abi.h fixes: neg, abs, sign, floor and
   ceil give what IEEE 754 says (sign(+-0) = +0), MAX and MIN the IEEE 754-2019 maximum and
   minimum (-0 < +0); data movement keeps every bit. */
static int unary_zero_sign(uint32_t op)
{
    return op == TF_UNARY_NEG || op == TF_UNARY_ABS || op == TF_UNARY_SIGN ||
           op == TF_UNARY_FLOOR || op == TF_UNARY_CEIL;
}

/* NaN in, NaN out, for every op; tiny arguments where a naive formula loses digits. */
static int unary_domain(uint32_t op)
{
    if (unary_zero_sign(op))
        return CK_D_NANZ;
    switch (op) {
    case TF_UNARY_LOG:
    case TF_UNARY_SQRT:
    case TF_UNARY_RSQRT: return CK_D_POS;
    case TF_UNARY_LOG1P: return CK_D_TINY_UNIT; /* what log1p and expm1 are for */
    case TF_UNARY_EXPM1: return CK_D_TINY;
    case TF_UNARY_RECIPROCAL: return CK_D_NONZERO;
    default: return CK_D_NAN;
    }
}

/* Exact results (no rounding, or one correctly rounded conversion) get no tolerance. */
static int unary_kind(uint32_t op);

static int unary_kind(uint32_t op)
{
    if (unary_zero_sign(op))
        return CK_TOL_EXACT;
    if (op == TF_UNARY_EXPM1 || op == TF_UNARY_LOG1P)
        return CK_TOL_RELATIVE;
    switch (op) {
    case TF_UNARY_SQUARE:
    case TF_UNARY_FLOOR:
    case TF_UNARY_CEIL:
    case TF_UNARY_RECIPROCAL:
    case TF_UNARY_SQRT: return 0;
    default: return 1;
    }
}

/*
 * Complex operands: exact ops (neg, conj, real, imag: sign flips and part moves, every
 * bit kept, zeros' signs too) on NaN and signed zeros; the rest on CK_D_CX_EDGE, the
 * values engine_abi.h states results for (C11 Annex G's log(-1 +- 0i) = +-i pi,
 * sqrt(-1 +- 0i) = +-i, log(0) = -inf + 0i, angle(-1 +- 0i) = +-pi, abs and sign with
 * an infinite part), the zeros' signs of abs, angle, log and sqrt held to the
 * reference's (hypot, atan2 and Annex G fix them). EXP, SIN, COS, TANH, RSQRT,
 * RECIPROCAL, SQUARE: NaN among ordinary values, as for reals.
 */
static void complex_unary(uint32_t op, int *domain, int *kind, int *zero_sign)
{
    int exact = op == TF_UNARY_NEG || op == TF_UNARY_CONJ || op == TF_UNARY_REAL ||
                op == TF_UNARY_IMAG;
    int stated = op == TF_UNARY_ABS || op == TF_UNARY_ANGLE || op == TF_UNARY_LOG ||
                 op == TF_UNARY_SQRT || op == TF_UNARY_SIGN;
    *domain = exact ? CK_D_NANZ : stated ? CK_D_CX_EDGE : CK_D_NAN;
    *kind = exact ? CK_TOL_EXACT : op == TF_UNARY_SQUARE ? CK_TOL_ARITH : CK_TOL_TRANSCENDENTAL;
    *zero_sign = exact || (stated && op != TF_UNARY_SIGN);
}

static void rows_unary(ck_ctx *ctx)
{
    for (uint32_t op = 0; op < TF_UNARY_COUNT_; op++) {
        ck_row *row = ck_row_add(ctx, "unary/%s", tf_prim_op_name(TF_PRIM_UNARY, op));
        for (int d = 0; row && d < CK_N_DTYPES; d++) {
            tf_dtype dt = k_all[d];
            if (!want(ctx, dt) || !ck_unary_defined(op, dt))
                continue;
            tf_unary_params p = {sizeof p, op};
            int dom = unary_domain(op), kind = unary_kind(op), zs = unary_zero_sign(op);
            tf_dtype out = dt;
            if (tf_dtype_is_complex(dt)) {
                complex_unary(op, &dom, &kind, &zs);
                out = tf_unary_gives_part(op) ? tf_dtype_real_of(dt) : dt;
            }
            ew e = {TF_PRIM_UNARY, op, &p, 1, {dt}, {dom}, out, kind, 0, 0, zs};
            run_ew(ctx, row, dt, &e);
        }
    }
}

int ck_binary_defined(uint32_t op, tf_dtype d)
{
    if (op == TF_BINARY_COMPLEX) /* its column is the complex result's (rows_binary) */
        return tf_dtype_is_complex(d);
    if (tf_dtype_is_complex(d))
        return op <= TF_BINARY_POW;
    if (tf_dtype_is_float(d))
        return op <= TF_BINARY_REM;
    if (tf_dtype_is_int(d))
        return op <= TF_BINARY_XOR; /* COMPLEX takes real parts */
    return op == TF_BINARY_AND || op == TF_BINARY_OR || op == TF_BINARY_XOR ||
           op == TF_BINARY_MAX || op == TF_BINARY_MIN;
}

static void rows_binary(ck_ctx *ctx)
{
    for (uint32_t op = 0; op < TF_BINARY_COUNT_; op++) {
        ck_row *row = ck_row_add(ctx, "binary/%s", tf_prim_op_name(TF_PRIM_BINARY, op));
        for (int d = 0; row && d < CK_N_DTYPES; d++) {
            tf_dtype dt = k_all[d];
            if (!want(ctx, dt) || !ck_binary_defined(op, dt))
                continue;
            tf_binary_params p = {sizeof p, op};
            if (op == TF_BINARY_COMPLEX) { /* two parts, each kept bit for bit */
                tf_dtype part = tf_dtype_real_of(dt);
                ew e = {TF_PRIM_BINARY, op, &p, 2, {part, part}, {CK_D_NANZ, CK_D_NANZ}, dt,
                        CK_TOL_EXACT, 0, 0, 1};
                run_ew(ctx, row, dt, &e);
                continue;
            }
            int da = CK_D_ANY, db = CK_D_ANY;
            if (op == TF_BINARY_DIV || op == TF_BINARY_REM)
                db = CK_D_NONZERO;
            if (op == TF_BINARY_POW) /* complex: both parts positive, off the branch cut */
                da = tf_dtype_is_float(dt) || tf_dtype_is_complex(dt) ? CK_D_POS : CK_D_NONZERO;
            if (op == TF_BINARY_POW && tf_dtype_is_int(dt))
                db = CK_D_SMALL;
            int minmax = op == TF_BINARY_MAX || op == TF_BINARY_MIN;
            if (minmax && tf_dtype_is_float(dt))
                da = db = CK_D_NANZ; /* NaN must propagate; -0 < +0 */
            int kind = op == TF_BINARY_POW ? CK_TOL_TRANSCENDENTAL
                       : minmax            ? CK_TOL_EXACT
                                           : CK_TOL_ARITH;
            ew e = {TF_PRIM_BINARY, op, &p, 2, {dt, dt}, {da, db}, dt, kind, 0, 0, minmax};
            run_ew(ctx, row, dt, &e);
        }
    }
}

static void rows_compare_select(ck_ctx *ctx)
{
    for (uint32_t op = 0; op < TF_COMPARE_COUNT_; op++) {
        ck_row *row = ck_row_add(ctx, "compare/%s", tf_prim_op_name(TF_PRIM_COMPARE, op));
        for (int d = 0; row && d < CK_N_DTYPES; d++) {
            tf_dtype dt = k_all[d];
            if (!want(ctx, dt) || (tf_dtype_is_complex(dt) && op > TF_COMPARE_NE))
                continue; /* complex: EQ and NE only (no order) */
            tf_compare_params p = {sizeof p, op};
            ew e = {TF_PRIM_COMPARE, op, &p, 2, {dt, dt}, {CK_D_FEW, CK_D_FEW},
                    TF_BOOL,         0,  0,  0, 0};
            run_ew(ctx, row, dt, &e);
        }
    }
    ck_row *row = ck_row_add(ctx, "select");
    for (int d = 0; row && d < CK_N_DTYPES; d++) {
        tf_dtype dt = k_all[d];
        if (!want(ctx, dt))
            continue;
        ew e = {.prim = TF_PRIM_SELECT,
                .n_in = 3,
                .in_dt = {TF_BOOL, dt, dt},
                .in_dom = {0, CK_D_ZEROS, CK_D_ZEROS},
                .out_dt = dt,
                .kind = CK_TOL_EXACT,
                .zero_sign = 1};
        run_ew(ctx, row, dt, &e);
    }
}

/* ---- convert: a row per source dtype and mode, a column per target ---- */

static void rows_convert(ck_ctx *ctx)
{
    for (int checked = 0; checked < 2; checked++) {
        for (int f = 0; f < CK_N_DTYPES; f++) {
            tf_dtype from = k_all[f];
            ck_row *row = ck_row_add(ctx, "convert%s/from %s", checked ? ".checked" : "",
                                     tf_dtype_name(from));
            if (!row || !want(ctx, from))
                continue;
            for (int t = 0; t < CK_N_DTYPES; t++) {
                tf_dtype to = k_all[t];
                if (!want(ctx, to) ||
                    (checked && tf_dtype_is_complex(from) && !tf_dtype_is_complex(to)))
                    continue; /* complex to real: only the unchecked cast (the real part) */
                tf_convert_params p = {sizeof p, (uint32_t)checked};
                int dom = CK_D_CONVERT;
                int64_t lim = 0;
                int floats = tf_dtype_is_inexact(from) && tf_dtype_is_inexact(to);
                if (checked) { /* values every dtype of the pair holds exactly */
                    dom = floats ? CK_D_ZEROS : CK_D_EXACT;
                    lim = to == TF_BOOL ? 1 : 0;
                }
                ew e = {TF_PRIM_CONVERT, 0, &p, 1, {from}, {dom}, to, CK_TOL_EXACT, lim, 0, floats};
                run_ew(ctx, row, to, &e);
            }
        }
    }
}

static void rows_copy(ck_ctx *ctx)
{
    ck_row *row = ck_row_add(ctx, "copy");
    for (int d = 0; row && d < CK_N_DTYPES; d++) {
        tf_dtype dt = k_all[d];
        if (!want(ctx, dt))
            continue;
        ew e = {TF_PRIM_COPY, 0, NULL, 1, {dt}, {CK_D_ZEROS}, dt, CK_TOL_EXACT, 0, 1, 1};
        run_ew(ctx, row, dt, &e);
    }
}

void ck_cases_elementwise(ck_ctx *ctx)
{
    rows_fill_iota(ctx);
    rows_unary(ctx);
    rows_binary(ctx);
    rows_compare_select(ctx);
    rows_convert(ctx);
    rows_copy(ctx);
}

/* ---- fused: random programs over the steps the engine claims ---- */

/* The UNARY and BINARY ops of dtype dt that programs may use. */
typedef struct fused_ops {
    uint32_t op[TF_UNARY_COUNT_ + TF_BINARY_COUNT_];
    tf_fused_kind kind[TF_UNARY_COUNT_ + TF_BINARY_COUNT_];
    uint32_t n;
} fused_ops;

/* The ops the engine claims for dt (all defined ones when it does not claim FUSED: those
   programs only check that it refuses them). */
static void fused_ops_of(ck_ctx *ctx, tf_dtype dt, int claims_fused, fused_ops *o)
{
    tf_dtype d3[3] = {dt, dt, dt};
    o->n = 0;
    for (uint32_t op = 0; op < TF_UNARY_COUNT_; op++)
        if (ck_unary_defined(op, dt) &&
            (!claims_fused || ck_claims(ctx, NULL, dt, TF_PRIM_UNARY, op, d3, 2) > 0)) {
            o->op[o->n] = op;
            o->kind[o->n++] = TF_FUSED_UNARY;
        }
    for (uint32_t op = 0; op < TF_BINARY_COUNT_; op++)
        if (ck_binary_defined(op, dt) &&
            (!claims_fused || ck_claims(ctx, NULL, dt, TF_PRIM_BINARY, op, d3, 3) > 0)) {
            o->op[o->n] = op;
            o->kind[o->n++] = TF_FUSED_BINARY;
        }
}

static uint32_t rand_below(uint64_t *seed, uint32_t n)
{
    uint32_t r = (uint32_t)(ck_rand(seed) * n);
    return r < n ? r : n - 1;
}

/*
 * A random valid program of n_steps over n_in inputs. Operand a is mostly the
 * register just written, so that chains run deep; the first steps read the
 * inputs in turn as b, so that each input's layout is exercised. Returns the
 * tolerance kind of its worst step (ck_case_tol).
 */
static int fused_program(uint64_t *seed, const fused_ops *o, uint32_t n_in, uint32_t n_steps,
                         tf_fused_step *steps)
{
    int kind = 0;
    for (uint32_t k = 0; k < n_steps; k++) {
        uint32_t regs = n_in + k, pick = rand_below(seed, o->n);
        tf_fused_step *s = &steps[k];
        s->kind = o->kind[pick];
        s->op = o->op[pick];
        s->a = k > 0 && ck_rand(seed) < 0.6 ? regs - 1 : rand_below(seed, regs);
        s->b = s->kind == TF_FUSED_UNARY ? 0 : k < n_in ? k : rand_below(seed, regs);
        if (s->kind == TF_FUSED_UNARY
                ? unary_kind(s->op) == CK_TOL_TRANSCENDENTAL || unary_kind(s->op) == CK_TOL_RELATIVE
                : s->op == TF_BINARY_POW)
            kind = 1;
    }
    return kind;
}

/*
 * ABI 1.5: n_imm immediates into a program: some operands (b of the first
 * BINARY step reading an input, then at random) read immediate j instead,
 * each immediate read at least once where the program has room. Values with
 * a fraction no f32 holds, so that the rounding to the dtype shows.
 */
static void fused_immediates(uint64_t *seed, uint32_t n_steps, tf_fused_step *steps,
                             uint32_t n_imm, double *imm)
{
    for (uint32_t j = 0; j < n_imm; j++)
        imm[j] = (ck_rand(seed) * 4 - 2) * (1 + 1e-9 * (double)(j + 1));
    uint32_t j = 0;
    for (uint32_t k = 0; k < n_steps; k++) {
        tf_fused_step *s = &steps[k];
        if (s->kind == TF_FUSED_BINARY && (j < n_imm || ck_rand(seed) < 0.3))
            s->b = TF_FUSED_IMM | (j < n_imm ? j++ : rand_below(seed, n_imm));
        else if (k + 1 < n_steps && ck_rand(seed) < 0.1 && s->kind == TF_FUSED_BINARY)
            s->a = TF_FUSED_IMM | rand_below(seed, n_imm);
    }
}

/* n_out (2 .. n_steps) outputs: n_out - 1 distinct earlier steps in order, then the last. */
static void fused_outputs(uint64_t *seed, uint32_t n_steps, uint32_t n_out, uint32_t *outputs)
{
    uint32_t n = 0;
    for (uint32_t k = 0; k + 1 < n_steps; k++) /* selection sampling: each subset alike */
        if (rand_below(seed, n_steps - 1 - k) < n_out - 1 - n)
            outputs[n++] = k;
    outputs[n] = n_steps - 1;
}

/* Cases per shape: the first is the largest program (with the most outputs), the second
   the smallest. */
#define FUSED_PER_SHAPE 3

/* The "fused" row's cell (one output), or with `several` the "fused/outputs" row's (2 to
   CK_MAX_OUT outputs, ABI 1.3: supports() is asked with op m - 1); with `imms` the
   "fused/immediates" row's (ABI 1.5: one or several outputs, 1 to 8 immediates). */
static void fused_cell(ck_ctx *ctx, ck_row *row, tf_dtype dt, int several, int imms)
{
    tf_dtype sig[2] = {dt, dt};
    int claims = ck_claims(ctx, row, dt, TF_PRIM_FUSED, 0, sig, 2);
    if (claims < 0)
        return; /* no answer: the cell says why */
    fused_ops ops;
    fused_ops_of(ctx, dt, claims, &ops);
    if (!ops.n)
        return; /* it claims FUSED but no step it could run */
    uint64_t seed = 0xf05edull + (uint64_t)dt + (several ? 0x1000u : 0) + (imms ? 0x2000u : 0);
    for (int i = 0; i < n_shapes(ctx); i++) {
        const ck_shape *sh = &k_shapes[i];
        for (int j = 0; j < FUSED_PER_SHAPE; j++) {
            int v = i * FUSED_PER_SHAPE + j;
            uint32_t least = several ? 2 : 1;
            uint32_t n_in = v == 0 ? CK_MAX_IN : v == 1 ? 1 : 1 + rand_below(&seed, CK_MAX_IN);
            uint32_t n_steps = v == 0   ? TF_FUSED_MAX_STEPS
                               : v == 1 ? least
                                        : least + rand_below(&seed, TF_FUSED_MAX_STEPS + 1 - least);
            uint32_t most = n_steps < CK_MAX_OUT ? n_steps : CK_MAX_OUT;
            uint32_t n_out = !several ? 1 : v == 0 ? most : 2 + rand_below(&seed, most - 1);
            tf_fused_step steps[TF_FUSED_MAX_STEPS];
            uint32_t outputs[CK_MAX_OUT];
            int kind = fused_program(&seed, &ops, n_in, n_steps, steps);
            if (several)
                fused_outputs(&seed, n_steps, n_out, outputs);
            double imm[TF_FUSED_MAX_IMMEDIATES];
            uint32_t n_imm = !imms                ? 0
                             : v == 0             ? TF_FUSED_MAX_IMMEDIATES
                                                  : 1 + rand_below(&seed, TF_FUSED_MAX_IMMEDIATES);
            if (n_imm)
                fused_immediates(&seed, n_steps, steps, n_imm, imm);
            tf_fused_params p = {sizeof p, n_steps, steps, several ? n_out : 0,
                                 several ? outputs : NULL, n_imm, n_imm ? imm : NULL, 0, 0};
            ck_case c = {
                .prim = TF_PRIM_FUSED, .op = n_out - 1, .params = &p, .n_in = n_in, .n_out = n_out};
            for (uint32_t k = 0; k < n_in; k++) /* POS for some: fewer NaN from log and sqrt */
                set_arg(&c.in[k], dt, sh->rank, sh->d, (int)((v + (int)k) % CK_L_COUNT_),
                        k % 2 ? CK_D_POS : CK_D_ANY, 0);
            set_arg(&c.out, dt, sh->rank, sh->d, v % 2 ? CK_L_OFFSET : CK_L_DENSE, CK_D_ANY, 0);
            ck_case_tol(&c, dt, kind, n_steps);
            ck_case_run(ctx, row, dt, &c);
        }
    }
}

/*
 * ABI 1.6: the reduced register and m elementwise outputs, the later of reduce_step and
 * outputs[m - 1] the last step. Mostly the reduced register is the last step and the
 * outputs any m steps (the last among them at times: a register both written and
 * reduced); else the last output is the last step and the reduced register an earlier one.
 * Returns reduce_step.
 */
static uint32_t fused_reduce_outputs(uint64_t *seed, uint32_t n_steps, uint32_t m,
                                     uint32_t *outputs)
{
    int last_out = m > 0 && n_steps > 1 && ck_rand(seed) < 0.3;
    uint32_t pool = n_steps - (last_out ? 1 : 0), pick = m - (last_out ? 1 : 0), n = 0;
    for (uint32_t k = 0; k < pool; k++) /* selection sampling, as fused_outputs */
        if (rand_below(seed, pool - k) < pick - n)
            outputs[n++] = k;
    if (last_out)
        outputs[n] = n_steps - 1;
    return last_out ? rand_below(seed, n_steps - 1) : n_steps - 1;
}

/* The reduced output's tolerance: MAX and MIN pick an element, exactly; SUM and PROD
   also carry every element's error and round once per element. */
static void fused_reduce_tol(ck_case *c, tf_dtype dt, uint32_t op, int kind, uint32_t n_steps)
{
    ck_case t = *c;
    int64_t n = op == TF_REDUCE_MAX || op == TF_REDUCE_MIN ? 0 : 1;
    for (size_t k = 0; n && k < c->out.rank; k++)
        n *= c->out.shape[k];
    ck_case_tol(&t, dt, kind, (int64_t)n_steps + n);
    c->red_rtol = t.rtol;
    c->red_atol = t.atol;
}

/* One case of a "fused/reduce/<op>" cell: case v's program on shape sh, its sizes drawn as
   fused_cell draws them (the first the largest, the second the smallest), 0 to 7
   elementwise outputs, immediates in every third, the reduced output of rank 0, 2 or the
   program's (every extent 1). */
static void fused_reduce_case(ck_ctx *ctx, ck_row *row, tf_dtype dt, uint32_t op,
                              const fused_ops *ops, const ck_shape *sh, int v, uint64_t *seed)
{
    uint32_t n_in = v == 0 ? CK_MAX_IN : v == 1 ? 1 : 1 + rand_below(seed, CK_MAX_IN);
    uint32_t n_steps = v == 0   ? TF_FUSED_MAX_STEPS
                       : v == 1 ? 1
                                : 1 + rand_below(seed, TF_FUSED_MAX_STEPS);
    uint32_t most = n_steps < CK_MAX_OUT - 1 ? n_steps : CK_MAX_OUT - 1;
    uint32_t m = v == 0 ? most : v == 1 ? 0 : rand_below(seed, most + 1);
    tf_fused_step steps[TF_FUSED_MAX_STEPS];
    uint32_t outputs[CK_MAX_OUT];
    double imm[TF_FUSED_MAX_IMMEDIATES];
    int kind = fused_program(seed, ops, n_in, n_steps, steps);
    uint32_t red = fused_reduce_outputs(seed, n_steps, m, outputs);
    uint32_t n_imm = v % 3 == 2 ? 1 + rand_below(seed, TF_FUSED_MAX_IMMEDIATES) : 0;
    if (n_imm)
        fused_immediates(seed, n_steps, steps, n_imm, imm);
    tf_fused_params p = {sizeof p,           n_steps, steps, m, m ? outputs : NULL, n_imm,
                         n_imm ? imm : NULL, 1 + op,  red};
    ck_case c = {.prim = TF_PRIM_FUSED,
                 .op = TF_FUSED_REDUCE_QUERY(op, m),
                 .params = &p,
                 .n_in = n_in,
                 .n_out = m + 1,
                 .reduced = 1};
    for (uint32_t k = 0; k < n_in; k++)
        set_arg(&c.in[k], dt, sh->rank, sh->d, (int)((v + (int)k) % CK_L_COUNT_),
                k % 2 ? CK_D_POS : CK_D_ANY, 0);
    set_arg(&c.out, dt, sh->rank, sh->d, v % 2 ? CK_L_OFFSET : CK_L_DENSE, CK_D_ANY, 0);
    static const int64_t ones[4] = {1, 1, 1, 1};
    size_t red_rank = v % 3 == 0 ? sh->rank : v % 3 == 1 ? 0 : 2; /* any rank will do */
    set_arg(&c.red, dt, red_rank, ones, v % 2 ? CK_L_DENSE : CK_L_OFFSET, CK_D_ANY, 0);
    ck_case_tol(&c, dt, kind, n_steps);
    fused_reduce_tol(&c, dt, op, kind, n_steps);
    ck_case_run(ctx, row, dt, &c);
}

/* The "fused/reduce/<op>" row's cell (ABI 1.6): supports() asked with
   TF_FUSED_REDUCE_QUERY(op, m) for m elementwise outputs; its steps are the ops the engine
   claims when it claims the reduction with none, all defined ones when not (those
   programs must be refused). */
static void fused_reduce_cell(ck_ctx *ctx, ck_row *row, tf_dtype dt, uint32_t op)
{
    tf_dtype sig[2] = {dt, dt};
    int claims = ck_claims(ctx, row, dt, TF_PRIM_FUSED, TF_FUSED_REDUCE_QUERY(op, 0), sig, 2);
    if (claims < 0)
        return; /* no answer: the cell says why */
    fused_ops ops;
    fused_ops_of(ctx, dt, claims, &ops);
    if (!ops.n)
        return;
    uint64_t seed = 0xf05edull + (uint64_t)dt + 0x4000u + 0x100u * op;
    for (int i = 0; i < n_shapes(ctx); i++)
        for (int j = 0; j < FUSED_PER_SHAPE; j++)
            fused_reduce_case(ctx, row, dt, op, &ops, &k_shapes[i], i * FUSED_PER_SHAPE + j, &seed);
}

/* ABI 1.6: a reduced output of each reduction, for engines that declare 1.6 (older ones
   are never asked). */
static void rows_fused_reduce(ck_ctx *ctx)
{
    if (ctx->meta.abi_minor < 6)
        return;
    for (uint32_t op = 0; op < TF_REDUCE_COUNT_; op++) {
        ck_row *row = ck_row_add(ctx, "fused/reduce/%s", tf_prim_op_name(TF_PRIM_REDUCE, op));
        for (int d = 0; row && d < 2; d++)
            if (want(ctx, k_all[d]))
                fused_reduce_cell(ctx, row, k_all[d], op);
    }
}

void ck_cases_fused(ck_ctx *ctx)
{
    ck_row *row = ck_row_add(ctx, "fused");
    for (int d = 0; row && d < 2; d++)
        if (want(ctx, k_all[d]))
            fused_cell(ctx, row, k_all[d], 0, 0);
    /* ABI 1.3: an engine answering no for op > 0 gets "unsup" here, no failure */
    row = ck_row_add(ctx, "fused/outputs");
    for (int d = 0; row && d < 2; d++)
        if (want(ctx, k_all[d]))
            fused_cell(ctx, row, k_all[d], 1, 0);
    /* ABI 1.5: immediates, only for engines that declare it (older ones never get them) */
    if (ctx->meta.abi_minor < 5)
        return;
    row = ck_row_add(ctx, "fused/immediates");
    for (int d = 0; row && d < 2; d++)
        if (want(ctx, k_all[d])) {
            fused_cell(ctx, row, k_all[d], 0, 1);
            fused_cell(ctx, row, k_all[d], 1, 1);
        }
    rows_fused_reduce(ctx);
}
