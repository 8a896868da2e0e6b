/*
 * vk_check.c - what the Vulkan engine supports, and its own checks of the
 * calls of hosts that do not validate.
 *
 * supports() and the checks share one rule set (dtypes_ok), so the engine
 * claims exactly what it runs. f64 arithmetic needs shaderFloat64; the bool
 * dtype needs 8-bit storage and int8 arithmetic; i64 arithmetic needs
 * shaderInt64 (without it i64 is still moved by the type-blind shaders).
 * Complex (ABI 1.4): c64 everywhere the ABI has it; c128 computed only with
 * shaderFloat64 (moved without it, like i64), so every arithmetic primitive
 * of c128 is refused there (supports() 0, TF_ERR_UNSUPPORTED at execute).
 *
 * A call with TF_EXEC_VALIDATED (libtenferro sets it on every call) was
 * checked by the host against every rule of engine_abi.h, with the operands
 * in this engine's buffers, and goes straight to its dispatch (vk_prims.c).
 * A call without it (a host that does not validate, a test driving the
 * plugin directly) is checked here first: counts, params, dtypes through
 * supports(), FUSED programs (the shader indexes its registers with the
 * steps' operands, so a program is never recorded unchecked) and the
 * operands' buffers. Limits of this engine's own (32-bit addressing) are
 * checked by the dispatch on every call.
 */
#include "vk_internal.h"

/* ---- supports ---------------------------------------------------------------------- */

/* The dtype is stored (moved) by type-blind shaders on this device. */
static int movable(const vk_engine *e, uint32_t d)
{
    return d < TF_DTYPE_COUNT && (d != TF_BOOL || e->phys->bool8);
}

/* Computed on: f32, i32, c64, bool (8-bit support), f64 and c128 (shaderFloat64), i64
   (shaderInt64). */
static int computable(const vk_engine *e, uint32_t d)
{
    switch (d) {
    case TF_F32:
    case TF_I32:
    case TF_C64: return 1;
    case TF_F64:
    case TF_C128: return e->f64;
    case TF_I64: return e->phys->i64;
    case TF_BOOL: return e->phys->bool8;
    default: return 0;
    }
}

static int unary_ok(uint32_t d, uint32_t op)
{
    switch (d) {
    case TF_F32:
    case TF_F64: return op <= TF_UNARY_CEIL && op != TF_UNARY_LOGICAL_NOT; /* not the complex ops */
    case TF_I32:
    case TF_I64:
        return op == TF_UNARY_NEG || op == TF_UNARY_ABS || op == TF_UNARY_SIGN ||
               op == TF_UNARY_SQUARE;
    case TF_BOOL: return op == TF_UNARY_LOGICAL_NOT;
    case TF_C64:
    case TF_C128:
        switch (op) {
        case TF_UNARY_NEG:
        case TF_UNARY_ABS:
        case TF_UNARY_SIGN:
        case TF_UNARY_EXP:
        case TF_UNARY_LOG:
        case TF_UNARY_SIN:
        case TF_UNARY_COS:
        case TF_UNARY_TANH:
        case TF_UNARY_SQRT:
        case TF_UNARY_RSQRT:
        case TF_UNARY_RECIPROCAL:
        case TF_UNARY_SQUARE:
        case TF_UNARY_CONJ:
        case TF_UNARY_REAL:
        case TF_UNARY_IMAG:
        case TF_UNARY_ANGLE: return 1;
        default: return 0;
        }
    }
    return 0;
}

/* The part dtype of a complex one (f32 for c64, f64 for c128); TF_DTYPE_COUNT otherwise. */
static uint32_t part_of(uint32_t d)
{
    return d == TF_C64 ? (uint32_t)TF_F32 : d == TF_C128 ? (uint32_t)TF_F64 : (uint32_t)TF_DTYPE_COUNT;
}

static int is_complex(uint32_t d)
{
    return d == TF_C64 || d == TF_C128;
}

static int binary_ok(uint32_t d, uint32_t op)
{
    switch (d) {
    case TF_F32:
    case TF_F64: return op <= TF_BINARY_REM;
    case TF_I32:
    case TF_I64: return op <= TF_BINARY_XOR; /* not COMPLEX */
    case TF_BOOL:
        return op == TF_BINARY_AND || op == TF_BINARY_OR || op == TF_BINARY_XOR ||
               op == TF_BINARY_MAX || op == TF_BINARY_MIN;
    case TF_C64:
    case TF_C128: return op <= TF_BINARY_POW;
    }
    return 0;
}

static int same(const uint32_t *d, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++) {
        if (d[i] != d[0])
            return 0;
    }
    return 1;
}

static int dtypes_ok(const vk_engine *e, uint32_t prim, uint32_t op, const uint32_t *d, uint32_t n)
{
    switch (prim) {
    case TF_PRIM_FILL: return n == 1 && op == 0 && movable(e, d[0]);
    case TF_PRIM_COPY:
    case TF_PRIM_PAD: return n == 2 && op == 0 && same(d, 2) && movable(e, d[0]);
    case TF_PRIM_CONCATENATE: return n >= 2 && op == 0 && same(d, n) && movable(e, d[0]);
    case TF_PRIM_DYNAMIC_SLICE:
        return n == 3 && op == 0 && d[2] == d[0] && movable(e, d[0]) &&
               (d[1] == TF_I32 || d[1] == TF_I64);
    case TF_PRIM_DYNAMIC_UPDATE_SLICE:
        return n == 4 && op == 0 && d[1] == d[0] && d[3] == d[0] && movable(e, d[0]) &&
               (d[2] == TF_I32 || d[2] == TF_I64);
    case TF_PRIM_GATHER:
        return n == 3 && op == 0 && d[2] == d[0] && movable(e, d[0]) &&
               (d[1] == TF_I32 || d[1] == TF_I64);
    case TF_PRIM_SCATTER:
        return n == 4 && op == 0 && d[2] == d[0] && d[3] == d[0] && computable(e, d[0]) &&
               (d[1] == TF_I32 || d[1] == TF_I64);
    case TF_PRIM_SELECT:
        return n == 4 && op == 0 && d[0] == TF_BOOL && e->phys->bool8 && same(d + 1, 3) &&
               movable(e, d[1]);
    case TF_PRIM_IOTA:
        return n == 1 && op == 0 && d[0] != TF_BOOL && !is_complex(d[0]) && computable(e, d[0]);
    case TF_PRIM_UNARY:
        /* complex ABS, REAL, IMAG, ANGLE: the part dtype out */
        return n == 2 && computable(e, d[0]) && unary_ok(d[0], op) &&
               (is_complex(d[0]) && tf_unary_gives_part(op) ? d[1] == part_of(d[0]) : d[1] == d[0]);
    case TF_PRIM_BINARY:
        if (op == TF_BINARY_COMPLEX) /* two parts in, the complex dtype out */
            return n == 3 && d[0] == d[1] && is_complex(d[2]) && d[0] == part_of(d[2]) &&
                   computable(e, d[2]);
        return n == 3 && same(d, 3) && computable(e, d[0]) && binary_ok(d[0], op);
    case TF_PRIM_COMPARE:
        return n == 3 && d[0] == d[1] && d[2] == TF_BOOL && computable(e, d[0]) && e->phys->bool8 &&
               op < TF_COMPARE_COUNT_ &&
               (!is_complex(d[0]) || op == TF_COMPARE_EQ || op == TF_COMPARE_NE);
    case TF_PRIM_CONVERT: return n == 2 && op == 0 && computable(e, d[0]) && computable(e, d[1]);
    case TF_PRIM_REDUCE:
        return n == 2 && same(d, 2) && computable(e, d[0]) && op < TF_REDUCE_COUNT_ &&
               (d[0] != TF_BOOL || op == TF_REDUCE_MAX || op == TF_REDUCE_MIN) &&
               (!is_complex(d[0]) || op == TF_REDUCE_SUM || op == TF_REDUCE_PROD);
    case TF_PRIM_DOT_GENERAL:
        return n == 3 && op == 0 && same(d, 3) && d[0] != TF_BOOL && computable(e, d[0]);
    case TF_PRIM_FUSED:
        /* op + 1 outputs after 1 .. 5 inputs. Every step op unary_ok/binary_ok allows for
           the float dtype runs in fused.comp. */
        return op < TF_FUSED_MAX_OUTPUTS && n >= op + 2 && n <= TF_FUSED_MAX_INPUTS + op + 1 &&
               same(d, n) && (d[0] == TF_F32 || d[0] == TF_F64) && computable(e, d[0]);
    }
    return 0;
}

int tf__vk_supports(const vk_engine *e, uint32_t prim, uint32_t op, const uint32_t *dtypes,
                    uint32_t n_dtypes)
{
    if (prim >= TF_PRIM_COUNT_ || n_dtypes == 0 || dtypes == NULL)
        return 0;
    for (uint32_t i = 0; i < n_dtypes; i++) {
        if (dtypes[i] >= TF_DTYPE_COUNT)
            return 0;
    }
    return dtypes_ok(e, prim, op, dtypes, n_dtypes);
}

/* ---- execute-time checks ------------------------------------------------------------- */

uint32_t tf__vk_fused_outputs(const tf_fused_params *pr)
{
    return TF_ABI_HAS_FIELD(pr, tf_fused_params, outputs) && pr->n_outputs > 1 ? pr->n_outputs : 1;
}

uint32_t tf__vk_exec_op(const tf_exec *x)
{
    switch (x->prim) {
    case TF_PRIM_UNARY: return ((const tf_unary_params *)x->params)->op;
    case TF_PRIM_BINARY: return ((const tf_binary_params *)x->params)->op;
    case TF_PRIM_COMPARE: return ((const tf_compare_params *)x->params)->op;
    case TF_PRIM_REDUCE: return ((const tf_reduce_params *)x->params)->op;
    case TF_PRIM_FUSED: return tf__vk_fused_outputs(x->params) - 1;
    default: return 0;
    }
}

static int same_shape(const tf_operand *a, const tf_operand *b)
{
    if (a->rank != b->rank || a->rank > TF_MAX_RANK)
        return 0;
    for (uint32_t k = 0; k < a->rank; k++) {
        if (a->shape[k] != b->shape[k])
            return 0;
    }
    return 1;
}

/* Every operand of a FUSED call (the inputs, then the m outputs) has out[0]'s float dtype
   and shape. */
static tf_status check_fused_operands(vk_engine *e, const tf_exec *x, uint32_t m)
{
    const tf_operand *out = x->outputs[0];
    if (out->dtype != TF_F32 && out->dtype != TF_F64)
        return tf__vk_fail(e->host, TF_ERR_DTYPE_MISMATCH,
                           "vulkan: FUSED: the output is not f32 or f64");
    for (uint32_t i = 0; i < x->n_inputs + m; i++) {
        int is_in = i < x->n_inputs;
        uint32_t idx = is_in ? i : i - x->n_inputs;
        const tf_operand *op = is_in ? x->inputs[idx] : x->outputs[idx];
        const char *what = is_in ? "input" : "output";
        if (op->dtype != out->dtype)
            return tf__vk_fail(e->host, TF_ERR_DTYPE_MISMATCH,
                               "vulkan: FUSED: %s %u has another dtype than output 0", what, idx);
        if (!same_shape(op, out))
            return tf__vk_fail(e->host, TF_ERR_SHAPE_MISMATCH,
                               "vulkan: FUSED: %s %u has another shape than output 0", what, idx);
    }
    return TF_OK;
}

/* The ABI 1.3 fields: m outputs, receiving strictly increasing steps, the last one last. */
static tf_status check_fused_outputs(vk_engine *e, const tf_fused_params *pr)
{
    if (!TF_ABI_HAS_FIELD(pr, tf_fused_params, outputs) || pr->n_outputs <= 1)
        return TF_OK;
    if (pr->n_outputs > TF_FUSED_MAX_OUTPUTS || pr->outputs == NULL)
        return tf__vk_fail(e->host, TF_ERR_VALIDATION,
                           "vulkan: FUSED: n_outputs %u (2 to %d) with outputs %s", pr->n_outputs,
                           TF_FUSED_MAX_OUTPUTS, pr->outputs ? "set" : "NULL");
    for (uint32_t i = 0; i < pr->n_outputs; i++) {
        uint32_t k = pr->outputs[i];
        int last = i + 1 == pr->n_outputs;
        if (k >= pr->n_steps || (i > 0 && k <= pr->outputs[i - 1]) ||
            (last && k != pr->n_steps - 1))
            return tf__vk_fail(e->host, TF_ERR_VALIDATION,
                               "vulkan: FUSED: outputs[%u] = step %u (strictly increasing, the "
                               "last %u)",
                               i, k, pr->n_steps - 1);
    }
    return TF_OK;
}

/*
 * A FUSED call's own rules (the core checks the same ones; error kinds as its
 * prim_check.c gives them): the shader indexes its registers with the
 * steps' operands and the outputs' steps, so a program is always checked
 * before it is recorded. The operand counts were checked against m already.
 */
static tf_status check_fused(vk_engine *e, const tf_exec *x)
{
    const tf_fused_params *pr = x->params;
    uint32_t n = x->n_inputs;
    if (n < 1 || n > TF_FUSED_MAX_INPUTS)
        return tf__vk_fail(e->host, TF_ERR_VALIDATION, "vulkan: FUSED: %u inputs (1 to %d)", n,
                           TF_FUSED_MAX_INPUTS);
    if (!TF_ABI_HAS_FIELD(pr, tf_fused_params, steps) || pr->n_steps < 1 ||
        pr->n_steps > TF_FUSED_MAX_STEPS || pr->steps == NULL)
        return tf__vk_fail(e->host, TF_ERR_VALIDATION,
                           "vulkan: FUSED: bad params (struct_size %u, n_steps %u, steps %s)",
                           pr->struct_size, pr->n_steps, pr->steps ? "set" : "NULL");
    if (TF_FUSED_PARAMS_REDUCE(pr) != 0)
        return tf__vk_fail(e->host, TF_ERR_UNSUPPORTED,
                           "vulkan: FUSED: a reduced output (params.reduce, ABI 1.6) is not "
                           "supported; supports() says no to it");
    tf_status st = check_fused_outputs(e, pr);
    if (st == TF_OK)
        st = check_fused_operands(e, x, tf__vk_fused_outputs(pr));
    if (st != TF_OK)
        return st;
    uint32_t dtype = x->outputs[0]->dtype;
    /* ABI 1.5: operands TF_FUSED_IMM | j read immediate j < n_imm */
    uint32_t n_imm = TF_ABI_HAS_FIELD(pr, tf_fused_params, imm) ? pr->n_imm : 0;
    if (n_imm > TF_FUSED_MAX_IMMEDIATES || (n_imm && pr->imm == NULL))
        return tf__vk_fail(e->host, TF_ERR_VALIDATION, "vulkan: FUSED: %u immediates (0 to %d)%s",
                           n_imm, TF_FUSED_MAX_IMMEDIATES, pr->imm ? "" : " at NULL");
    for (uint32_t k = 0; k < pr->n_steps; k++) {
        const tf_fused_step *s = &pr->steps[k];
        int binary = s->kind == TF_FUSED_BINARY;
        int a_ok = s->a & TF_FUSED_IMM ? (s->a & ~TF_FUSED_IMM) < n_imm : s->a < n + k;
        int b_ok = s->b & TF_FUSED_IMM ? (s->b & ~TF_FUSED_IMM) < n_imm : s->b < n + k;
        if (s->kind >= TF_FUSED_KIND_COUNT_ ||
            s->op >= (binary ? (uint32_t)TF_BINARY_COUNT_ : (uint32_t)TF_UNARY_COUNT_) || !a_ok ||
            (binary ? !b_ok : s->b != 0))
            return tf__vk_fail(e->host, TF_ERR_VALIDATION,
                               "vulkan: FUSED: step %u (kind %u, op %u, a %u, b %u) is invalid "
                               "with %u registers",
                               k, s->kind, s->op, s->a, s->b, n + k);
        if (binary ? !binary_ok(dtype, s->op) : !unary_ok(dtype, s->op))
            return tf__vk_fail(e->host, TF_ERR_DTYPE_MISMATCH,
                               "vulkan: FUSED: step %u: op %u is not defined for floats", k, s->op);
    }
    return TF_OK;
}

/* Operand i of the call: the inputs, then the outputs. */
static const tf_operand *operand_at(const tf_exec *x, uint32_t i)
{
    return i < x->n_inputs ? x->inputs[i] : x->outputs[i - x->n_inputs];
}

/* Counts (n_out outputs), params present, every operand there and in this engine's memory. */
static tf_status check_structure(vk_engine *e, const tf_exec *x, uint32_t n_out, int needs_params)
{
    const char *name = tf__vk_prim_name(x->prim);
    /* No primitive but CONCATENATE has over five inputs. */
    if (x->prim >= TF_PRIM_COUNT_ || x->n_outputs != n_out ||
        (x->prim != TF_PRIM_CONCATENATE && x->n_inputs > TF_FUSED_MAX_INPUTS) ||
        (x->n_inputs > 0 && x->inputs == NULL) || x->outputs == NULL)
        return tf__vk_fail(e->host, TF_ERR_VALIDATION, "vulkan: %s: bad operand counts", name);
    if (needs_params && x->params == NULL)
        return tf__vk_fail(e->host, TF_ERR_VALIDATION, "vulkan: %s: params are NULL", name);
    for (uint32_t i = 0; i < x->n_inputs + n_out; i++) {
        const tf_operand *op = operand_at(x, i);
        if (op == NULL)
            return tf__vk_fail(e->host, TF_ERR_VALIDATION, "vulkan: %s: operand %u is NULL", name,
                               i);
        if (op->buffer == NULL || op->rank > TF_MAX_RANK)
            return tf__vk_fail(e->host, TF_ERR_PLACEMENT,
                               "vulkan: %s: operand %u is not in this engine's memory", name, i);
    }
    return TF_OK;
}

/* supports() for the call's dtypes (CONCATENATE's any number of inputs: one dtype, asked
   as a pair). */
static tf_status check_dtypes(vk_engine *e, const tf_exec *x, uint32_t n_out, uint32_t op)
{
    const char *name = tf__vk_prim_name(x->prim);
    int many = x->prim == TF_PRIM_CONCATENATE;
    uint32_t dt[VK_MAX_BINDINGS + 1];
    uint32_t n = 0;
    for (uint32_t i = 0; i < x->n_inputs; i++) {
        if (many && x->inputs[i]->dtype != x->outputs[0]->dtype)
            return tf__vk_fail(e->host, TF_ERR_DTYPE_MISMATCH,
                               "vulkan: CONCATENATE: input %u has another dtype than the output",
                               i);
        if (!many)
            dt[n++] = x->inputs[i]->dtype;
    }
    if (many)
        dt[n++] = x->outputs[0]->dtype;
    for (uint32_t i = 0; i < n_out; i++)
        dt[n++] = x->outputs[i]->dtype;
    if (!tf__vk_supports(e, x->prim, op, dt, n))
        return tf__vk_fail(e->host, TF_ERR_UNSUPPORTED,
                           "vulkan: %s (op %u) is not supported for these dtypes on \"%s\"", name,
                           op, e->phys->info.name);
    return TF_OK;
}

tf_status tf__vk_check(vk_engine *e, const tf_exec *x)
{
    int fused = x->prim == TF_PRIM_FUSED;
    int needs_params = x->prim != TF_PRIM_SELECT && x->prim != TF_PRIM_COPY &&
                       x->prim != TF_PRIM_DYNAMIC_SLICE && x->prim != TF_PRIM_DYNAMIC_UPDATE_SLICE;
    /* FUSED's params name its outputs. */
    uint32_t n_out = fused && x->params != NULL ? tf__vk_fused_outputs(x->params) : 1;
    tf_status st = check_structure(e, x, n_out, needs_params);
    if (st == TF_OK && fused)
        st = check_fused(e, x);
    if (st == TF_OK)
        st = check_dtypes(e, x, n_out, needs_params ? tf__vk_exec_op(x) : 0);
    /* as the host: a checked conversion from complex is only to complex */
    if (st == TF_OK && x->prim == TF_PRIM_CONVERT &&
        ((const tf_convert_params *)x->params)->checked && is_complex(x->inputs[0]->dtype) &&
        !is_complex(x->outputs[0]->dtype))
        st = tf__vk_fail(e->host, TF_ERR_DTYPE_MISMATCH,
                         "vulkan: CONVERT: a checked conversion from complex to a real dtype is "
                         "not defined (the unchecked cast takes the real part)");
    return st;
}
