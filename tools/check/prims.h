/*
 * prims.h - one primitive call of the conformance kit (a ck_case) and the
 * runner that executes it on the engine under test and on the reference.
 *
 * prim_cases.c describes the calls (shapes, layouts, value domains, params,
 * FUSED's random programs; prim_shape.c those of the structural primitives);
 * prims.c builds the operands identically on both engines, runs, compares
 * and records the outcome in the table; fused_ref.c runs a FUSED call on the
 * reference as its steps.
 */
#ifndef TF_CHECK_PRIMS_H
#define TF_CHECK_PRIMS_H

#include "check.h"

/* How an operand is laid out in its memory. */
typedef enum ck_layout {
    CK_L_DENSE,  /* column-major, offset 0 */
    CK_L_OFFSET, /* column-major, offset 3 */
    CK_L_GAP,    /* every stride doubled, offset 3: a strided slice */
    CK_L_REV,    /* every axis reversed (negative strides) */
    CK_L_TRANS,  /* row-major: a transposed view */
    CK_L_BCAST,  /* stride 0 on the first and last axes (inputs, FILL outputs) */
    CK_L_COUNT_
} ck_layout;

/* Where an operand's values come from. */
typedef enum ck_domain {
    CK_D_ANY,      /* floats in [-2, 2); integers small, sometimes extreme; bool 0/1 */
    CK_D_POS,      /* floats in [0.1, 3); integers in [1, 50] */
    CK_D_UNIT,     /* floats in [-0.9, 0.9) */
    CK_D_NONZERO,  /* |x| in [0.5, 2) for floats; integers in [-50, 50] without 0 */
    CK_D_SMALL,    /* integers in [-9, 9]; floats in [-2, 2) */
    CK_D_FEW,      /* few distinct values (ties), NaN among floats */
    CK_D_NEAR1,    /* floats in [0.6, 1.4); integers in [-2, 2] */
    CK_D_INDEX,    /* integers in [0, lim) */
    CK_D_STARTS,   /* integers in [-2, lim + 2] (clamped by the primitive) */
    CK_D_EXACT,    /* integral values in [-100, 100] (lim 1: only 0 and 1) */
    CK_D_CONVERT,  /* fractions, huge values, NaN, inf, -0.0 / extreme integers */
    CK_D_NAN,      /* as ANY with NaN sprinkled among floats */
    CK_D_ZEROS,    /* as ANY with +0 and -0 sprinkled among floats */
    CK_D_NANZ,     /* as ANY with NaN, +0 and -0 sprinkled among floats */
    CK_D_TINY,     /* as NAN with tiny magnitudes (1e-3 .. 1e-12) sprinkled among floats */
    CK_D_TINY_UNIT, /* as UNIT with tiny magnitudes sprinkled among floats */
    CK_D_CX_EDGE    /* complex: as NAN per part, with the values engine_abi.h states
                       results for sprinkled in (+-0 +- 0i, -1 +- 0i, infinite parts) */
} ck_domain;

/* ck_case_tol's kinds: exact arithmetic, transcendental, exact results, and functions
   whose small results must be as accurate as large ones (expm1, log1p: the reason they
   exist), relative to the result alone. */
enum {
    CK_TOL_ARITH = 0,
    CK_TOL_TRANSCENDENTAL = 1,
    CK_TOL_EXACT = 2,
    CK_TOL_RELATIVE = 3
};

/*
 * The dtypes the kit makes cases of, tf_dtype values 0 .. CK_N_DTYPES - 1 (each
 * file's k_all lists them in that order): f32, f64, i32, i64, bool, c64, c128.
 * The complex ones only for an engine built against ABI 1.4 or later (an older
 * one is never asked about them: ck_wants_dtype).
 */
#define CK_N_DTYPES 7


/* Whether the ABI defines sub-op op of UNARY (BINARY) for dtype d. */
int ck_unary_defined(uint32_t op, tf_dtype d);
int ck_binary_defined(uint32_t op, tf_dtype d);

typedef struct ck_arg {
    tf_dtype dtype;
    size_t rank;
    int64_t shape[TF_MAX_RANK];
    int layout; /* ck_layout */
    int domain; /* ck_domain */
    int64_t lim;
} ck_arg;

/* The most inputs and outputs of a case (FUSED's), and operands in all. */
#define CK_MAX_IN TF_FUSED_MAX_INPUTS
#define CK_MAX_OUT TF_FUSED_MAX_OUTPUTS
#define CK_MAX_OPERANDS (CK_MAX_IN + CK_MAX_OUT)

typedef struct ck_case {
    tf_prim prim;
    uint32_t op; /* the sub-op supports() is asked about */
    const void *params;
    size_t n_in;
    ck_arg in[CK_MAX_IN];
    ck_arg out;        /* every output's: shape, dtype, layout */
    size_t n_out;      /* outputs: 0 or 1 for one; FUSED of ABI 1.3 may have up to CK_MAX_OUT */
    double rtol, atol; /* floats: |got - want| <= atol + rtol * |want| */
    int variant;       /* which signature of the cell (e.g. the index dtype) */
    int zero_sign;     /* floats: a zero must have the reference's sign (engine_abi.h says
                          which ops give which zero; elsewhere either zero is allowed) */
    /* FUSED with a reduced output (ABI 1.6): the last of the n_out outputs is it, described
       by red (every extent 1, out's dtype) and compared with red_rtol/red_atol, the others
       by out */
    int reduced;
    ck_arg red;
    double red_rtol, red_atol;
} ck_case;

/* The case's outputs: one, or FUSED's several. */
static inline size_t ck_n_outs(const ck_case *c)
{
    return c->n_out > 1 ? c->n_out : 1;
}

/* Operand i of the case: the inputs, then the outputs (out's, then red for the reduced). */
static inline const ck_arg *ck_arg_of(const ck_case *c, size_t i)
{
    if (i < c->n_in)
        return &c->in[i];
    return c->reduced && i + 1 == c->n_in + ck_n_outs(c) ? &c->red : &c->out;
}

/*
 * Runs c (claimed: compared with the reference; not: must be refused) into row's cell `col`.
 * Every output is compared (each in its own memory; FUSED with several outputs).
 * The reference runs a FUSED call as its steps, each a UNARY or BINARY call of its own, and
 * the tolerance grows with the largest magnitude an intermediate value reaches there (an
 * error of one step carries into the next); an engine that rounds each step as its UNARY and
 * BINARY calls do, like the CPU engine, matches exactly anyway.
 */
void ck_case_run(ck_ctx *ctx, ck_row *row, tf_dtype col, const ck_case *c);

/* What ck_case_run does once it knows whether the engine claims c (its own process, or a
   worker's: ck_iso_case). */
void ck_case_exec(ck_ctx *ctx, ck_row *row, tf_dtype col, const ck_case *c, int claimed);

/* Runs ck_case_exec in a worker process (isolate.c), or here with --no-fork; a crash or
   hang makes the cell CK_CRASH with the case named. */
void ck_iso_case(ck_ctx *ctx, ck_row *row, tf_dtype col, const ck_case *c, int claimed);

/*
 * The reference's FUSED call (fused_ref.c): the steps run as UNARY and BINARY calls on e
 * from the inputs in[] into registers, the registers the params name written into out[]
 * (the last step's alone for one output); with a reduced output (ABI 1.6), then a REDUCE
 * of the register over every axis into the last of out[]. *mag gets the largest finite
 * magnitude among the registers before the last, and the reduced one's.
 */
tf_status ck_fused_ref(tf_engine *e, const ck_case *c, tf_tensor *const *in, tf_tensor *const *out,
                       double *mag);

/* Sets c's rtol/atol for dtype dt and a kind above (CK_TOL_EXACT: none); n summands. */
void ck_case_tol(ck_case *c, tf_dtype dt, int kind, int64_t n);

/* Every primitive's rows (prim_cases.c). */
void ck_cases_elementwise(ck_ctx *ctx);
void ck_cases_structural(ck_ctx *ctx);
void ck_cases_fused(ck_ctx *ctx);

#endif /* TF_CHECK_PRIMS_H */
