/*
 * prim_check_fused.c - the checks of a TF_PRIM_FUSED call (prim_check.c
 * checks every other primitive): its steps, its outputs, its immediates
 * (ABI 1.5) and its reduced output (ABI 1.6).
 */
#include <stdio.h>

#include "prim_check_internal.h"

/* Step k of a FUSED program: its kind, its op (defined for out[0]'s float dtype) and the
   registers it reads, which must already hold values (inputs and earlier steps). */
/* Fails step k's check with argument "steps[k].<field>"; named only on failure (the
   checks run on every call). */
static tf_status fail_step(const call *c, tf_status st, uint32_t k, const char *field,
                           const char *msg)
{
    char arg[32];
    snprintf(arg, sizeof arg, "steps[%u].%s", k, field);
    return tf__pc_fail(c, st, arg, "step %u%s", k, msg);
}

/* The immediates a FUSED call's params carry: params.n_imm of a struct of ABI 1.5 or
   later, else none. */
static uint32_t fused_n_imm(const tf_fused_params *p)
{
    return TF_ABI_HAS_FIELD(p, tf_fused_params, imm) ? p->n_imm : 0;
}

/* Whether operand register r of a step with n_regs registers before it (and n_imm
   immediates) holds a value; what it reads otherwise, in msg. */
static bool fused_operand_ok(uint32_t r, uint32_t n_regs, uint32_t n_imm, const char *which,
                             char *msg, size_t size)
{
    if (r & TF_FUSED_IMM) {
        if ((r & ~TF_FUSED_IMM) < n_imm)
            return true;
        snprintf(msg, size, " reads immediate %u (%s), but params.n_imm is %u", r & ~TF_FUSED_IMM,
                 which, n_imm);
        return false;
    }
    if (r < n_regs)
        return true;
    snprintf(msg, size, " reads register %u (%s), but only registers 0..%u exist", r, which,
             n_regs - 1);
    return false;
}

static tf_status check_fused_step(const call *c, uint32_t k, const tf_fused_step *s)
{
    char msg[96];
    uint32_t n_regs = (uint32_t)c->n_in + k, n_imm = fused_n_imm(c->params);
    if (s->kind >= TF_FUSED_KIND_COUNT_) {
        snprintf(msg, sizeof msg, " has unknown kind %u", s->kind);
        return fail_step(c, TF_ERR_VALIDATION, k, "kind", msg);
    }
    bool binary = s->kind == TF_FUSED_BINARY;
    tf_prim sub = binary ? TF_PRIM_BINARY : TF_PRIM_UNARY;
    if (s->op >= (binary ? (uint32_t)TF_BINARY_COUNT_ : (uint32_t)TF_UNARY_COUNT_)) {
        snprintf(msg, sizeof msg, " has unknown %s op %u", tf_prim_name(sub), s->op);
        return fail_step(c, TF_ERR_VALIDATION, k, "op", msg);
    }
    tf_dtype dt = c->out[0]->dtype;
    if (binary ? !tf__pc_binary_defined(s->op, dt) : !tf__pc_unary_defined(s->op, dt)) {
        snprintf(msg, sizeof msg, ": %s is not defined for %s", tf_prim_op_name(sub, s->op),
                 tf_dtype_name(dt));
        return fail_step(c, TF_ERR_DTYPE_MISMATCH, k, "op", msg);
    }
    if (!fused_operand_ok(s->a, n_regs, n_imm, "a", msg, sizeof msg))
        return fail_step(c, TF_ERR_VALIDATION, k, "a", msg);
    if (binary && !fused_operand_ok(s->b, n_regs, n_imm, "b", msg, sizeof msg))
        return fail_step(c, TF_ERR_VALIDATION, k, "b", msg);
    if (!binary && s->b != 0) {
        snprintf(msg, sizeof msg, " is unary, so b must be 0, got %u", s->b);
        return fail_step(c, TF_ERR_VALIDATION, k, "b", msg);
    }
    return TF_OK;
}

/* The elementwise outputs a FUSED call's params ask for: with a reduced output (1.6)
   params.n_outputs exactly; else params.n_outputs of a struct of ABI 1.3 or later when
   above 1, else the one output of ABI 1.2. */
static uint32_t fused_n_outputs(const tf_fused_params *p)
{
    if (TF_FUSED_PARAMS_REDUCE(p))
        return p->n_outputs;
    return TF_ABI_HAS_FIELD(p, tf_fused_params, outputs) && p->n_outputs > 1 ? p->n_outputs : 1;
}

uint32_t tf__pc_fused_op(const tf_fused_params *p)
{
    uint32_t r = TF_FUSED_PARAMS_REDUCE(p), m = fused_n_outputs(p);
    return r ? TF_FUSED_REDUCE_QUERY(r - 1, m) : m - 1;
}

/* Fails output i of params.outputs (argument "outputs[i]"); named only on failure. */
static tf_status fail_output(const call *c, uint32_t i, const char *msg)
{
    char arg[32];
    snprintf(arg, sizeof arg, "outputs[%u]", i);
    return tf__pc_fail(c, TF_ERR_VALIDATION, arg, "params.outputs[%u] %s", i, msg);
}

/* The steps params.outputs names (m of them): strictly increasing, the last one the
   program's last step (so every one is a step); with a reduced output (1.6), m may be 1
   and the last step is the later of outputs[m - 1] and params.reduce_step. */
static tf_status check_fused_outputs(const call *c, const tf_fused_params *p, uint32_t m)
{
    char msg[96];
    if (!p->outputs)
        return tf__pc_fail(c, TF_ERR_VALIDATION, "outputs",
                           "params.outputs is NULL with n_outputs %u", m);
    for (uint32_t i = 1; i < m; i++)
        if (p->outputs[i] <= p->outputs[i - 1]) {
            snprintf(msg, sizeof msg, "is step %u, not after outputs[%u] (step %u)", p->outputs[i],
                     i - 1, p->outputs[i - 1]);
            return fail_output(c, i, msg);
        }
    if (TF_FUSED_PARAMS_REDUCE(p)) {
        if (p->outputs[m - 1] >= p->n_steps) {
            snprintf(msg, sizeof msg, "is step %u, but the program has %u", p->outputs[m - 1],
                     p->n_steps);
            return fail_output(c, m - 1, msg);
        }
        return TF_OK; /* the last step: check_fused_reduce */
    }
    if (p->outputs[m - 1] != p->n_steps - 1) {
        snprintf(msg, sizeof msg, "is step %u, but the last output must be the last step (%u)",
                 p->outputs[m - 1], p->n_steps - 1);
        return fail_output(c, m - 1, msg);
    }
    return TF_OK;
}

/* One element: every extent 1 (any rank). */
static bool one_element(const tf_tensor *t)
{
    for (uint32_t k = 0; k < t->rank; k++)
        if (t->shape[k] != 1)
            return false;
    return true;
}

/*
 * ABI 1.6, the reduced output out[m] after m elementwise ones: a known op, a step that
 * exists, the program ending at the later of it and the last elementwise output, and
 * the operands: every input and elementwise output of in[0]'s shape, out[m] of one
 * element, all of one dtype.
 */
static tf_status check_fused_reduce(const call *c, const tf_fused_params *p, uint32_t m)
{
    uint32_t r = p->reduce - 1;
    if (r >= TF_REDUCE_COUNT_)
        return tf__pc_fail(c, TF_ERR_VALIDATION, "reduce",
                           "params.reduce is %u, expected 0 or 1 + a reduce op (1 to %d)",
                           p->reduce, TF_REDUCE_COUNT_);
    uint32_t last = m && p->outputs[m - 1] > p->reduce_step ? p->outputs[m - 1] : p->reduce_step;
    if (last != p->n_steps - 1)
        return tf__pc_fail(c, TF_ERR_VALIDATION, "reduce_step",
                           "params.reduce_step is %u and the last elementwise output step %d, "
                           "but the later of them must be the last step (%u)",
                           p->reduce_step, m ? (int)p->outputs[m - 1] : -1, p->n_steps - 1);
    static const char *const names[] = {"inputs[0]", "inputs[1]", "inputs[2]", "inputs[3]",
                                        "inputs[4]"};
    static const char *const out_names[] = {"outputs[0]", "outputs[1]", "outputs[2]", "outputs[3]",
                                            "outputs[4]", "outputs[5]", "outputs[6]", "outputs[7]"};
    const tf_tensor *shape = c->in[0];
    tf_dtype dt = c->out[0]->dtype;
    tf_status st = TF_OK;
    for (size_t i = 0; i < c->n_in && !st; i++)
        if (!(st = tf__pc_need_dtype(c, names[i], c->in[i], dt)))
            st = tf__pc_need_shape(c, names[i], c->in[i], shape);
    for (uint32_t i = 0; i < m && !st; i++)
        if (!(st = tf__pc_need_dtype(c, out_names[i], c->out[i], dt)))
            st = tf__pc_need_shape(c, out_names[i], c->out[i], shape);
    if (!st && !(st = tf__pc_need_dtype(c, out_names[m], c->out[m], dt)) && !one_element(c->out[m]))
        st = tf__pc_fail(c, TF_ERR_SHAPE_MISMATCH, out_names[m],
                         "%s receives the reduction (params.reduce): every extent must be 1",
                         out_names[m]);
    return st;
}

tf_status tf__pc_check_fused(const call *c)
{
    if (c->n_in < 1 || c->n_in > TF_FUSED_MAX_INPUTS)
        return tf__pc_fail(c, TF_ERR_VALIDATION, "n_inputs", "expects 1 to %d inputs, got %zu",
                           TF_FUSED_MAX_INPUTS, c->n_in);
    /* the struct of ABI 1.2 ends before n_outputs; it asks for one output */
    tf_status st = tf__pc_check_params(c, offsetof(tf_fused_params, n_outputs));
    if (st)
        return st;
    const tf_fused_params *p = c->params;
    uint32_t m = fused_n_outputs(p), reduce = TF_FUSED_PARAMS_REDUCE(p) != 0;
    if (m + reduce > TF_FUSED_MAX_OUTPUTS)
        return tf__pc_fail(
            c, TF_ERR_VALIDATION, "n_outputs", "params.n_outputs is %u, expected 0 to %d%s", m,
            TF_FUSED_MAX_OUTPUTS - (int)reduce, reduce ? " besides the reduced output" : "");
    if (c->n_out != m + reduce)
        return tf__pc_fail(c, TF_ERR_VALIDATION, "n_outputs", "expects %u output%s%s, got %zu",
                           m + reduce, m + reduce == 1 ? "" : "s",
                           reduce   ? " (params.n_outputs and the reduced one)"
                           : m == 1 ? ""
                                    : " (params.n_outputs)",
                           c->n_out);
    if (p->n_steps < 1 || p->n_steps > TF_FUSED_MAX_STEPS)
        return tf__pc_fail(c, TF_ERR_VALIDATION, "n_steps", "n_steps is %u, expected 1 to %d",
                           p->n_steps, TF_FUSED_MAX_STEPS);
    if (!p->steps)
        return tf__pc_fail(c, TF_ERR_VALIDATION, "steps", "steps is NULL");
    uint32_t n_imm = fused_n_imm(p);
    if (n_imm > TF_FUSED_MAX_IMMEDIATES)
        return tf__pc_fail(c, TF_ERR_VALIDATION, "n_imm", "params.n_imm is %u, expected 0 to %d",
                           n_imm, TF_FUSED_MAX_IMMEDIATES);
    if (n_imm && !p->imm)
        return tf__pc_fail(c, TF_ERR_VALIDATION, "imm", "params.imm is NULL with n_imm %u", n_imm);
    if ((m > 1 || (reduce && m)) && (st = check_fused_outputs(c, p, m)))
        return st;
    tf_dtype dt = c->out[0]->dtype;
    if (dt != TF_F32 && dt != TF_F64)
        return tf__pc_fail(c, TF_ERR_DTYPE_MISMATCH, "outputs[0]",
                           "outputs[0] is %s, expected f32 or f64", tf_dtype_name(dt));
    if ((st = reduce ? check_fused_reduce(c, p, m) : tf__pc_elementwise_like(c, 0, true)))
        return st;
    for (uint32_t k = 0; k < p->n_steps; k++)
        if ((st = check_fused_step(c, k, &p->steps[k])))
            return st;
    return TF_OK;
}
