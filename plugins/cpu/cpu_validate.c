/*
 * cpu_validate.c - what the engine supports, and the structural checks of an
 * execute call.
 *
 * supports() answers from the same tables the kernels are dispatched from
 * (tf__cpu_*_supported), so it says exactly what execute handles. execute
 * re-checks the structure of every call before touching memory: operand
 * counts, ranks, dtypes (through supports), parameter structs and the shape
 * relations a kernel relies on to stay in bounds. The host has validated all
 * of this already; the checks are cheap and turn a host bug into an error
 * instead of a wild read. Data-dependent checks live in the kernels.
 */
#include <string.h>

#include "cpu_internal.h"

typedef struct prim_info {
    uint32_t n_in_min, n_in_max; /* inputs */
    uint32_t has_op;             /* the primitive has a sub-operation */
    size_t params_size;          /* 0: no params */
} prim_info;

/* Each primitive's row, INFO_<name> for every entry of TF_PRIM_LIST (a primitive
   without one does not build). */
/* FILL, DOT_GENERAL and PAD: the structs of ABI 1.0 end before the fields of 1.4 */
#define INFO_fill {0, 0, 0, offsetof(tf_fill_params, imag)}
#define INFO_iota {0, 0, 0, sizeof(tf_iota_params)}
#define INFO_unary {1, 1, 1, sizeof(tf_unary_params)}
#define INFO_binary {2, 2, 1, sizeof(tf_binary_params)}
#define INFO_compare {2, 2, 1, sizeof(tf_compare_params)}
#define INFO_select {3, 3, 0, 0}
#define INFO_convert {1, 1, 0, sizeof(tf_convert_params)}
#define INFO_reduce {1, 1, 1, sizeof(tf_reduce_params)}
#define INFO_dot_general {2, 2, 0, offsetof(tf_dot_general_params, conjugate)}
#define INFO_copy {1, 1, 0, 0}
#define INFO_pad {1, 1, 0, offsetof(tf_pad_params, imag)}
#define INFO_concatenate {1, UINT32_MAX - 1, 0, sizeof(tf_concatenate_params)}
#define INFO_gather {2, 2, 0, sizeof(tf_gather_params)}
#define INFO_scatter {3, 3, 0, sizeof(tf_gather_params)}
#define INFO_dynamic_slice {2, 2, 0, 0}
#define INFO_dynamic_update_slice {3, 3, 0, 0}
/* the struct of ABI 1.2 ends before n_outputs */
#define INFO_fused {1, TF_FUSED_MAX_INPUTS, 0, offsetof(tf_fused_params, n_outputs)}

#define PRIM_ROW(NAME, name, value) [TF_PRIM_##NAME] = INFO_##name,
static const prim_info prims[TF_PRIM_COUNT_] = {TF_PRIM_LIST(PRIM_ROW)};

static int is_index(uint32_t d)
{
    return d == TF_I32 || d == TF_I64;
}

static int all_equal(const uint32_t *d, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++) {
        if (d[i] != d[0]) {
            return 0;
        }
    }
    return 1;
}

/* UNARY: complex ABS, REAL, IMAG and ANGLE give the part dtype, the rest in[0]'s. */
static int unary_dtypes_ok(uint32_t op, const uint32_t *d)
{
    int to_part = tf_dtype_is_complex((tf_dtype)d[0]) && tf_unary_gives_part(op);
    uint32_t want = to_part ? (uint32_t)tf_dtype_real_of((tf_dtype)d[0]) : d[0];
    return d[1] == want && tf__cpu_unary_supported(d[0], op);
}

/* BINARY: COMPLEX takes two real parts to their complex dtype, the rest one dtype. */
static int binary_dtypes_ok(uint32_t op, const uint32_t *d)
{
    if (op == TF_BINARY_COMPLEX) {
        return d[0] == d[1] && tf_dtype_is_float((tf_dtype)d[0]) &&
               d[2] == (uint32_t)tf_dtype_complex_of((tf_dtype)d[0]);
    }
    return all_equal(d, 3) && tf__cpu_binary_supported(d[0], op);
}

/* The dtype rules of each primitive; arity and dtype validity already checked. */
static int dtypes_ok(uint32_t prim, uint32_t op, const uint32_t *d, uint32_t n)
{
    switch ((tf_prim)prim) {
    case TF_PRIM_FILL: return 1;
    case TF_PRIM_IOTA: return d[0] != TF_BOOL && !tf_dtype_is_complex((tf_dtype)d[0]);
    case TF_PRIM_UNARY: return unary_dtypes_ok(op, d);
    case TF_PRIM_BINARY: return binary_dtypes_ok(op, d);
    case TF_PRIM_COMPARE:
        return d[0] == d[1] && d[2] == TF_BOOL && tf__cpu_compare_supported(d[0], op);
    case TF_PRIM_SELECT: return d[0] == TF_BOOL && all_equal(d + 1, 3);
    case TF_PRIM_CONVERT: return 1;
    case TF_PRIM_REDUCE: return all_equal(d, 2) && tf__cpu_reduce_supported(d[0], op);
    case TF_PRIM_DOT_GENERAL: return all_equal(d, 3) && d[0] != TF_BOOL;
    case TF_PRIM_COPY:
    case TF_PRIM_PAD:
    case TF_PRIM_CONCATENATE: return all_equal(d, n);
    case TF_PRIM_GATHER:
    case TF_PRIM_DYNAMIC_SLICE: return is_index(d[1]) && d[2] == d[0];
    case TF_PRIM_SCATTER: return is_index(d[1]) && d[2] == d[0] && d[3] == d[0];
    case TF_PRIM_DYNAMIC_UPDATE_SLICE: return d[1] == d[0] && is_index(d[2]) && d[3] == d[0];
    case TF_PRIM_FUSED: return all_equal(d, n) && (d[0] == TF_F32 || d[0] == TF_F64);
    case TF_PRIM_COUNT_: break;
    }
    return 0;
}

int tf__cpu_supports(uint32_t prim, uint32_t op, const uint32_t *dtypes, uint32_t n_dtypes)
{
    if (prim >= TF_PRIM_COUNT_ || (n_dtypes > 0 && dtypes == NULL)) {
        return 0;
    }
    const prim_info *pi = &prims[prim];
    uint32_t n_out = 1;
    if (prim == TF_PRIM_FUSED && op >= TF_FUSED_MAX_OUTPUTS) {
        /* ABI 1.6: TF_FUSED_REDUCE_QUERY(r, m), m elementwise outputs and a reduced one */
        const uint32_t r = TF_FUSED_QUERY_REDUCE_OP(op), m = TF_FUSED_QUERY_OUTPUTS(op);
        if (!TF_FUSED_QUERY_IS_REDUCE(op) || m >= TF_FUSED_MAX_OUTPUTS ||
            n_dtypes == 0 || !tf__cpu_reduce_supported(dtypes[0], r)) {
            return 0;
        }
        n_out = m + 1;
    } else if (prim == TF_PRIM_FUSED) { /* ABI 1.3: op is the output count less one */
        n_out = op + 1;
    } else if (!pi->has_op && op != 0) {
        return 0;
    }
    if (n_dtypes < pi->n_in_min + n_out || n_dtypes > pi->n_in_max + n_out) {
        return 0;
    }
    for (uint32_t i = 0; i < n_dtypes; i++) {
        if (dtypes[i] >= TF_DTYPE_COUNT) {
            return 0;
        }
    }
    return dtypes_ok(prim, op, dtypes, n_dtypes);
}

/* ---- execute-time structure -------------------------------------------------- */

static int bad(cpu_err *err, tf_status status, uint32_t prim, const char *what)
{
    return tf__cpu_fail(err, status, "cpu: %s: %s", tf__cpu_prim_name(prim), what);
}

static int operand_ok(const tf_operand *op)
{
    if (op == NULL || op->struct_size < offsetof(tf_operand, data) + sizeof(op->data) ||
        op->rank > TF_MAX_RANK || op->dtype >= TF_DTYPE_COUNT) {
        return 0;
    }
    if (op->rank > 0 && (op->shape == NULL || op->strides == NULL)) {
        return 0;
    }
    int64_t numel = 1;
    for (uint32_t k = 0; k < op->rank; k++) {
        if (op->shape[k] < 0) {
            return 0;
        }
        numel = op->shape[k] == 0 ? 0 : numel;
    }
    return numel == 0 || op->data != NULL;
}

/* ABI 1.6: 1 + the tf_reduce_op of a FUSED call's reduced output, or 0. */
static uint32_t fused_reduce_of(const tf_exec *x)
{
    const tf_fused_params *pp = x->params;
    return pp != NULL ? TF_FUSED_PARAMS_REDUCE(pp) : 0;
}

/* FUSED's supports() op: its output count less one, or (1.6) the reduced-output query. */
static uint32_t fused_exec_op(const tf_exec *x)
{
    const uint32_t r = fused_reduce_of(x);
    return r ? TF_FUSED_REDUCE_QUERY(r - 1, x->n_outputs - 1) : x->n_outputs - 1;
}

/* The sub-operation read from the params (0 for primitives without one; FUSED's output
   count less one). */
static uint32_t exec_op(const tf_exec *x)
{
    switch ((tf_prim)x->prim) {
    case TF_PRIM_FUSED: return fused_exec_op(x);
    case TF_PRIM_UNARY: return ((const tf_unary_params *)x->params)->op;
    case TF_PRIM_BINARY: return ((const tf_binary_params *)x->params)->op;
    case TF_PRIM_COMPARE: return ((const tf_compare_params *)x->params)->op;
    case TF_PRIM_REDUCE: return ((const tf_reduce_params *)x->params)->op;
    default: return 0;
    }
}

/* The sub-operation's name, "" for primitives without one. */
static const char *op_name(const tf_exec *x)
{
    uint32_t op = exec_op(x);
    switch ((tf_prim)x->prim) {
    case TF_PRIM_UNARY: return tf__cpu_unary_name(op);
    case TF_PRIM_BINARY: return tf__cpu_binary_name(op);
    case TF_PRIM_COMPARE: return tf__cpu_compare_name(op);
    case TF_PRIM_REDUCE: return tf__cpu_reduce_name(op);
    default: return "";
    }
}

static int same_shape(const tf_operand *a, const tf_operand *b)
{
    if (a->rank != b->rank) {
        return 0;
    }
    for (uint32_t k = 0; k < a->rank; k++) {
        if (a->shape[k] != b->shape[k]) {
            return 0;
        }
    }
    return 1;
}

static int reduce_shapes_ok(const tf_exec *x)
{
    const tf_reduce_params *rp = x->params;
    const tf_operand *in = x->inputs[0], *out = x->outputs[0];
    if (in->rank != out->rank || (rp->axes_mask >> in->rank) != 0) {
        return 0;
    }
    for (uint32_t k = 0; k < in->rank; k++) {
        int64_t want = ((rp->axes_mask >> k) & 1u) ? 1 : in->shape[k];
        if (out->shape[k] != want) {
            return 0;
        }
    }
    return 1;
}

static int concat_shapes_ok(const tf_exec *x)
{
    const tf_concatenate_params *cp = x->params;
    const tf_operand *out = x->outputs[0];
    int64_t sum = 0;
    if (cp->axis >= out->rank) {
        return 0;
    }
    for (uint32_t i = 0; i < x->n_inputs; i++) {
        const tf_operand *in = x->inputs[i];
        if (in->rank != out->rank) {
            return 0;
        }
        for (uint32_t k = 0; k < out->rank; k++) {
            if (k != cp->axis && in->shape[k] != out->shape[k]) {
                return 0;
            }
        }
        sum += in->shape[cp->axis];
    }
    return sum == out->shape[cp->axis];
}

/* supports() for the call's dtypes: inputs, then the outputs. */
static int exec_dtypes_ok(const tf_exec *x)
{
    const uint32_t out = x->outputs[0]->dtype;
    if (x->prim == TF_PRIM_CONCATENATE) {
        /* Any number of inputs: the rule is "all one dtype". */
        for (uint32_t i = 0; i < x->n_inputs; i++) {
            if (x->inputs[i]->dtype != out) {
                return 0;
            }
        }
        return 1;
    }
    uint32_t dtypes[CPU_MAX_OPS];
    for (uint32_t i = 0; i < x->n_inputs; i++) {
        dtypes[i] = x->inputs[i]->dtype;
    }
    for (uint32_t i = 0; i < x->n_outputs; i++) {
        dtypes[x->n_inputs + i] = x->outputs[i]->dtype;
    }
    return tf__cpu_supports(x->prim, exec_op(x), dtypes, x->n_inputs + x->n_outputs);
}

/* ABI 1.6: the inputs and elementwise outputs of in[0]'s shape, the reduced output
   (the last) of one element. */
static int fused_reduce_shapes_ok(const tf_exec *x)
{
    const tf_operand *shape = x->inputs[0], *red = x->outputs[x->n_outputs - 1];
    for (uint32_t i = 1; i < x->n_inputs; i++) {
        if (!same_shape(x->inputs[i], shape)) {
            return 0;
        }
    }
    for (uint32_t i = 0; i + 1 < x->n_outputs; i++) {
        if (!same_shape(x->outputs[i], shape)) {
            return 0;
        }
    }
    for (uint32_t k = 0; k < red->rank; k++) {
        if (red->shape[k] != 1) {
            return 0;
        }
    }
    return 1;
}

/* The shape relations the kernels rely on (gather, scatter and dot check their own). */
static int shapes_ok(const tf_exec *x)
{
    const tf_operand *out = x->outputs[0];
    switch ((tf_prim)x->prim) {
    case TF_PRIM_IOTA:
        return ((const tf_iota_params *)x->params)->axis < out->rank &&
               tf__cpu_operand_dense(out);
    case TF_PRIM_UNARY:
    case TF_PRIM_BINARY:
    case TF_PRIM_COMPARE:
    case TF_PRIM_SELECT:
    case TF_PRIM_CONVERT:
    case TF_PRIM_COPY:
    case TF_PRIM_FUSED:
        if (x->prim == TF_PRIM_FUSED && fused_reduce_of(x)) {
            return fused_reduce_shapes_ok(x);
        }
        for (uint32_t i = 0; i < x->n_inputs; i++) {
            if (!same_shape(x->inputs[i], out)) {
                return 0;
            }
        }
        for (uint32_t i = 1; i < x->n_outputs; i++) { /* FUSED's further outputs */
            if (!same_shape(x->outputs[i], out)) {
                return 0;
            }
        }
        return 1;
    case TF_PRIM_REDUCE: return reduce_shapes_ok(x);
    case TF_PRIM_DOT_GENERAL: return tf__cpu_operand_dense(out);
    case TF_PRIM_PAD: return x->inputs[0]->rank == out->rank;
    case TF_PRIM_CONCATENATE: return concat_shapes_ok(x);
    case TF_PRIM_SCATTER:
    case TF_PRIM_DYNAMIC_UPDATE_SLICE: return same_shape(x->inputs[0], out);
    default: return 1;
    }
}

/* Whether operand `op` has the memory of one of the first n operands of `ops`. */
static int shares_memory(const tf_operand *op, const tf_operand *const *ops, uint32_t n)
{
    for (uint32_t i = 0; op->data != NULL && i < n; i++) {
        if (ops[i]->data == op->data) {
            return 1;
        }
    }
    return 0;
}

/*
 * ABI 1.3, several outputs (their count checked already): params.outputs names steps
 * in strictly increasing order, the last one the last step, and no output has the
 * memory of an input or of another output (there is no in-place form then).
 */
static int check_fused_outputs(const tf_exec *x, cpu_err *err)
{
    const tf_fused_params *pp = x->params;
    const uint32_t m = x->n_outputs;
    if (pp->outputs == NULL) {
        return tf__cpu_fail(err, TF_ERR_VALIDATION, "cpu: FUSED: %u outputs, outputs NULL", m);
    }
    for (uint32_t i = 0; i < m; i++) {
        const uint32_t k = pp->outputs[i];
        if ((i > 0 && k <= pp->outputs[i - 1]) || (i == m - 1 && k != pp->n_steps - 1)) {
            return tf__cpu_fail(err, TF_ERR_VALIDATION,
                                "cpu: FUSED: outputs[%u] is step %u (the steps must increase, "
                                "the last being step %u)",
                                i, k, pp->n_steps - 1);
        }
        if (shares_memory(x->outputs[i], x->inputs, x->n_inputs) ||
            shares_memory(x->outputs[i], x->outputs, i)) {
            return tf__cpu_fail(err, TF_ERR_VALIDATION,
                                "cpu: FUSED: outputs[%u] shares memory with another operand", i);
        }
    }
    return 0;
}

/*
 * ABI 1.6, a reduced output after m elementwise ones (the counts, dtypes and shapes
 * checked already): a known reduce op, the outputs' steps increasing, the program
 * ending at the later of the last of them and params.reduce_step, and no output
 * sharing memory with another operand.
 */
static int check_fused_reduce(const tf_exec *x, cpu_err *err)
{
    const tf_fused_params *pp = x->params;
    const uint32_t m = x->n_outputs - 1;
    if (pp->reduce - 1 >= (uint32_t)TF_REDUCE_COUNT_ || (m > 0 && pp->outputs == NULL)) {
        return tf__cpu_fail(err, TF_ERR_VALIDATION, "cpu: FUSED: reduce %u, outputs %s",
                            pp->reduce, pp->outputs == NULL ? "NULL" : "set");
    }
    uint32_t last = pp->reduce_step;
    for (uint32_t i = 0; i < m; i++) {
        const uint32_t k = pp->outputs[i];
        if ((i > 0 && k <= pp->outputs[i - 1]) || k >= pp->n_steps) {
            return tf__cpu_fail(err, TF_ERR_VALIDATION,
                                "cpu: FUSED: outputs[%u] is step %u (the steps must increase, "
                                "below %u)",
                                i, k, pp->n_steps);
        }
        last = k > last ? k : last;
    }
    if (last != pp->n_steps - 1) {
        return tf__cpu_fail(err, TF_ERR_VALIDATION,
                            "cpu: FUSED: the program ends at step %u, not at its last output "
                            "(step %u)",
                            pp->n_steps - 1, last);
    }
    for (uint32_t i = 0; i <= m; i++) {
        if (shares_memory(x->outputs[i], x->inputs, x->n_inputs) ||
            shares_memory(x->outputs[i], x->outputs, i)) {
            return tf__cpu_fail(err, TF_ERR_VALIDATION,
                                "cpu: FUSED: outputs[%u] shares memory with another operand", i);
        }
    }
    return 0;
}

/*
 * A FUSED program (its operands' count, dtypes and shapes are checked already): the
 * step count, and each step a UNARY or BINARY op the engine has for the dtype
 * (TF_ERR_DTYPE_MISMATCH for an op the dtype lacks, as the host reports it), reading
 * registers set before it (b == 0 for a unary step).
 */
/* Whether operand register r of a step is set: a register below regs, or (ABI 1.5)
   TF_FUSED_IMM | j for an immediate j < n_imm. */
static int fused_operand_set(uint32_t r, uint32_t regs, uint32_t n_imm)
{
    return r & TF_FUSED_IMM ? (r & ~TF_FUSED_IMM) < n_imm : r < regs;
}

static int check_fused(const tf_exec *x, cpu_err *err)
{
    const tf_fused_params *pp = x->params;
    const uint32_t dtype = x->outputs[0]->dtype;
    if (pp->n_steps < 1 || pp->n_steps > TF_FUSED_MAX_STEPS || pp->steps == NULL) {
        return tf__cpu_fail(err, TF_ERR_VALIDATION, "cpu: FUSED: %u steps%s (1 to %d steps wanted)",
                            pp->n_steps, pp->steps == NULL ? " at NULL" : "", TF_FUSED_MAX_STEPS);
    }
    const uint32_t n_imm = TF_ABI_HAS_FIELD(pp, tf_fused_params, imm) ? pp->n_imm : 0;
    if (n_imm > TF_FUSED_MAX_IMMEDIATES || (n_imm > 0 && pp->imm == NULL)) {
        return tf__cpu_fail(err, TF_ERR_VALIDATION, "cpu: FUSED: %u immediates%s (0 to %d)",
                            n_imm, pp->imm == NULL ? " at NULL" : "", TF_FUSED_MAX_IMMEDIATES);
    }
    for (uint32_t k = 0; k < pp->n_steps; k++) {
        const tf_fused_step *st = &pp->steps[k];
        const uint32_t regs = x->n_inputs + k; /* registers set before step k */
        const int binary = st->kind == TF_FUSED_BINARY;
        if (st->kind >= TF_FUSED_KIND_COUNT_ ||
            st->op >= (binary ? (uint32_t)TF_BINARY_COUNT_ : (uint32_t)TF_UNARY_COUNT_)) {
            return tf__cpu_fail(err, TF_ERR_VALIDATION, "cpu: FUSED: step %u: kind %u, op %u", k,
                                st->kind, st->op);
        }
        const char *op = binary ? tf__cpu_binary_name(st->op) : tf__cpu_unary_name(st->op);
        if (binary ? !tf__cpu_binary_supported(dtype, st->op)
                   : !tf__cpu_unary_supported(dtype, st->op)) {
            return tf__cpu_fail(err, TF_ERR_DTYPE_MISMATCH,
                                "cpu: FUSED: step %u: %s is not an op of %s", k, op,
                                tf__cpu_dtype_name(dtype));
        }
        if (!fused_operand_set(st->a, regs, n_imm) ||
            (binary ? !fused_operand_set(st->b, regs, n_imm) : st->b != 0)) {
            return tf__cpu_fail(err, TF_ERR_VALIDATION,
                                "cpu: FUSED: step %u (%s) reads registers a %u, b %u; %u are set",
                                k, op, st->a, st->b, regs);
        }
    }
    if (fused_reduce_of(x)) {
        return check_fused_reduce(x, err);
    }
    return x->n_outputs > 1 ? check_fused_outputs(x, err) : 0;
}

/* The outputs a call has: 1, or FUSED's params.n_outputs (ABI 1.3) when above 1;
   UINT32_MAX, which no call has, for more than TF_FUSED_MAX_OUTPUTS. */
static uint32_t exec_n_outputs(const tf_exec *x)
{
    const tf_fused_params *pp = x->params;
    if (x->prim == TF_PRIM_FUSED && fused_reduce_of(x)) { /* 1.6: m + the reduced output */
        return pp->n_outputs < TF_FUSED_MAX_OUTPUTS ? pp->n_outputs + 1 : UINT32_MAX;
    }
    if (x->prim != TF_PRIM_FUSED || pp == NULL || !TF_ABI_HAS_FIELD(pp, tf_fused_params, outputs) ||
        pp->n_outputs <= 1) {
        return 1;
    }
    return pp->n_outputs <= TF_FUSED_MAX_OUTPUTS ? pp->n_outputs : UINT32_MAX;
}

int tf__cpu_validate(const tf_exec *x, cpu_err *err)
{
    if (x == NULL || x->struct_size < offsetof(tf_exec, outputs) + sizeof(x->outputs)) {
        return tf__cpu_fail(err, TF_ERR_VALIDATION, "cpu: execute: missing or short tf_exec");
    }
    if (x->prim >= TF_PRIM_COUNT_) {
        return tf__cpu_fail(err, TF_ERR_UNSUPPORTED, "cpu: execute: unknown primitive %u",
                            x->prim);
    }
    const prim_info *pi = &prims[x->prim];
    if (x->n_inputs < pi->n_in_min || x->n_inputs > pi->n_in_max ||
        x->n_outputs != exec_n_outputs(x) || (x->n_inputs > 0 && x->inputs == NULL) ||
        x->outputs == NULL) {
        return bad(err, TF_ERR_VALIDATION, x->prim, "wrong number of operands");
    }
    if (pi->params_size > 0 &&
        (x->params == NULL || *(const uint32_t *)x->params < pi->params_size)) {
        return bad(err, TF_ERR_VALIDATION, x->prim, "missing or short params struct");
    }
    for (uint32_t i = 0; i < x->n_inputs + x->n_outputs; i++) {
        if (!operand_ok(i < x->n_inputs ? x->inputs[i] : x->outputs[i - x->n_inputs])) {
            return bad(err, TF_ERR_VALIDATION, x->prim, "malformed operand");
        }
    }
    if (!exec_dtypes_ok(x)) {
        return tf__cpu_fail(err, TF_ERR_UNSUPPORTED,
                            "cpu: %s%s%s: unsupported for input dtype %s, output dtype %s",
                            tf__cpu_prim_name(x->prim), prims[x->prim].has_op ? " " : "",
                            op_name(x), x->n_inputs > 0 ? tf__cpu_dtype_name(x->inputs[0]->dtype)
                                                        : "-",
                            tf__cpu_dtype_name(x->outputs[0]->dtype));
    }
    if (!shapes_ok(x)) {
        return bad(err, TF_ERR_SHAPE_MISMATCH, x->prim, "operand shapes do not fit together");
    }
    return x->prim == TF_PRIM_FUSED ? check_fused(x, err) : 0;
}
