/*
 * program.c - running a program of TF_PRIM_FUSED steps without FUSED: each
 * step as its own UNARY or BINARY call, and resolving a program's references
 * into registers. The batches (defer.c) and the reverse rules' programs
 * (fused_sum.c) both run through here when an engine takes no FUSED call
 * for them.
 */
#include "lazy_internal.h"

void tf__lazy_resolve(const tf_fused_step *steps, uint32_t n, uint32_t n_in, tf_fused_step *out)
{
    for (uint32_t k = 0; k < n; k++) {
        const tf_fused_step *st = &steps[k];
        uint32_t a = tf__lazy_resolve_ref(st->a, n_in);
        uint32_t b = tf__lazy_resolve_ref(st->b, n_in);
        out[k] = (tf_fused_step){st->kind, st->op, a, st->kind == TF_FUSED_BINARY ? b : 0};
    }
}

uint32_t tf__lazy_resolve_ref(uint32_t ref, uint32_t n_in)
{
    if (ref & TF_FX_IMM)
        return TF_FUSED_IMM | (ref & ~TF_FX_IMM);
    return ref & TF_FX_IN ? ref & ~TF_FX_IN : n_in + ref;
}

/* The tensor operand register r of a resolved step reads. */
static tf_tensor *operand(uint32_t r, tf_tensor *const *regs, tf_tensor *const *imm)
{
    return r & TF_FUSED_IMM ? imm[r & ~TF_FUSED_IMM] : regs[r];
}

tf_status tf__lazy_run_step(tf_engine *e, const tf_fused_step *step, tf_tensor *const *regs,
                            tf_tensor *const *imm, tf_tensor *out)
{
    tf_unary_params up = {sizeof up, step->op};
    tf_binary_params bp = {sizeof bp, step->op};
    tf_tensor *args[2] = {operand(step->a, regs, imm), operand(step->b, regs, imm)};
    bool unary = step->kind == TF_FUSED_UNARY;
    return tf_engine_execute(e, unary ? TF_PRIM_UNARY : TF_PRIM_BINARY,
                             unary ? (const void *)&up : (const void *)&bp, unary ? 1 : 2, args,
                             1, &out);
}

tf_status tf__lazy_run_steps(tf_engine *e, const tf_fused_step *steps, uint32_t n, uint32_t n_in,
                             tf_tensor *const *in, tf_tensor *const *imm, tf_dtype dtype,
                             uint32_t rank, const int64_t *shape, tf_tensor **dst)
{
    tf_tensor *r[TF_FUSED_MAX_INPUTS + TF_FUSED_MAX_STEPS];
    tf_status st = TF_OK;
    for (uint32_t i = 0; i < n_in; i++)
        r[i] = in[i];
    for (uint32_t k = 0; k < n && !st; k++) {
        if (!dst[k])
            st = tf_tensor_empty(e, dtype, rank, shape, &dst[k]);
        if (!st)
            st = tf__lazy_run_step(e, &steps[k], r, imm, dst[k]);
        r[n_in + k] = dst[k];
    }
    return st;
}

