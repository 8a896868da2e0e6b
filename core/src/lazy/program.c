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
        uint32_t a = st->a & TF_FX_IN ? st->a & ~TF_FX_IN : n_in + st->a;
        uint32_t b = st->b & TF_FX_IN ? st->b & ~TF_FX_IN : n_in + st->b;
        out[k] = (tf_fused_step){st->kind, st->op, a, st->kind == TF_FUSED_BINARY ? b : 0};
    }
}

tf_status tf__lazy_run_step(tf_engine *e, const tf_fused_step *step, tf_tensor *const *regs,
                          tf_tensor *out)
{
    tf_unary_params up = {sizeof up, step->op};
    tf_binary_params bp = {sizeof bp, step->op};
    tf_tensor *args[2] = {regs[step->a], regs[step->b]};
    bool unary = step->kind == TF_FUSED_UNARY;
    return tf_engine_execute(e, unary ? TF_PRIM_UNARY : TF_PRIM_BINARY,
                             unary ? (const void *)&up : (const void *)&bp, unary ? 1 : 2, args,
                             1, &out);
}

tf_status tf__lazy_run_steps(tf_engine *e, const tf_fused_step *steps, uint32_t n, uint32_t n_in,
                           tf_tensor *const *in, tf_dtype dtype, uint32_t rank,
                           const int64_t *shape, tf_tensor **dst)
{
    tf_tensor *r[TF_FUSED_MAX_INPUTS + TF_FUSED_MAX_STEPS];
    tf_status st = TF_OK;
    for (uint32_t i = 0; i < n_in; i++)
        r[i] = in[i];
    for (uint32_t k = 0; k < n && !st; k++) {
        if (!dst[k])
            st = tf_tensor_empty(e, dtype, rank, shape, &dst[k]);
        if (!st)
            st = tf__lazy_run_step(e, &steps[k], r, dst[k]);
        r[n_in + k] = dst[k];
    }
    return st;
}

