/*
 * einsum_exec.c - running a plan with the ops of the host's table, so that
 * every step is recorded like any op and runs on the session's engine:
 * per operand its diagonals (a transpose view putting the pair last, then
 * the diagonal view) and one reduce_sum; one dot_general per pairwise step;
 * the last result viewed into the output's order.
 *
 * Each intermediate is released as soon as its step has consumed it (the
 * tape keeps what the derivatives need), so peak memory is the path's.
 */
#include <string.h>

#include "einsum_internal.h"

typedef struct run {
    const tf_ext_rule_ctx *ctx;
    const tf_ext_ops *o;
    tf_ext_session *s;
} run;

/* Operand t after its diagonals and sums: a new reference in *out. */
static tf_status prep_one(const run *r, const ein_prep *pr, tf_ext_tensor *x, tf_ext_tensor **out)
{
    const tf_ext_ops *o = r->o;
    o->retain(x);
    tf_ext_tensor *cur = x;
    tf_status st = TF_OK;
    for (uint32_t d = 0; d < pr->n_diag && !st; d++) {
        int perm[8];
        for (uint32_t i = 0; i < pr->diag_rank[d]; i++)
            perm[i] = pr->diag_perm[d][i];
        tf_ext_tensor *moved = NULL, *diag = NULL;
        st = o->transpose(r->s, cur, perm, &moved);
        if (!st)
            st = o->diagonal(r->s, moved, &diag);
        o->release(moved);
        o->release(cur);
        cur = diag;
    }
    if (!st && pr->n_sum) {
        int axes[8];
        for (uint32_t i = 0; i < pr->n_sum; i++)
            axes[i] = pr->sum_axes[i];
        tf_ext_tensor *summed = NULL;
        st = o->reduce_sum(r->s, cur, axes, pr->n_sum, &summed);
        o->release(cur);
        cur = summed;
    }
    if (st) {
        o->release(cur);
        return st;
    }
    *out = cur;
    return TF_OK;
}

static bool identity(const ein_plan *plan)
{
    for (uint32_t i = 0; i < plan->out_rank; i++)
        if (plan->out_perm[i] != (int8_t)i)
            return false;
    return true;
}

/* The last tensor in the output's order; `fresh` when no operand is it. */
static tf_status finish(const run *r, const ein_plan *plan, tf_ext_tensor *root, bool fresh,
                        tf_ext_tensor **out)
{
    if (fresh && identity(plan)) {
        r->o->retain(root);
        *out = root;
        return TF_OK;
    }
    int perm[8];
    for (uint32_t i = 0; i < plan->out_rank; i++)
        perm[i] = plan->out_perm[i];
    return r->o->transpose(r->s, root, perm, out);
}

tf_status ein_execute(const tf_ext_rule_ctx *ctx, const ein_plan *plan, tf_ext_tensor *const *ops,
                      tf_ext_tensor **out)
{
    run r = {ctx, ctx->ops, ctx->session};
    uint32_t n = plan->n_ops, ids = 2 * n - 1;
    ein_mem m = ein_mem_host(ctx->host);
    tf_ext_tensor **v = ein_calloc(&m, ids, sizeof *v);
    if (!v) {
        ctx->host->report_error(ctx->host->ctx, TF_ERR_OUT_OF_MEMORY,
                                "tenferro.einsum.einsum: out of memory");
        return TF_ERR_OUT_OF_MEMORY;
    }
    const ein_prep *prep = ein_plan_prep(plan);
    const ein_step *steps = ein_plan_steps(plan);
    tf_status st = TF_OK;
    bool fresh = n > 1 || prep[0].n_diag || prep[0].n_sum;
    for (uint32_t t = 0; t < n && !st; t++)
        st = prep_one(&r, &prep[t], ops[t], &v[t]);
    for (uint32_t k = 0; k < plan->n_steps && !st; k++) {
        const ein_step *sp = &steps[k];
        st = r.o->dot_general(r.s, v[sp->lhs], v[sp->rhs], &sp->dims, &v[n + k]);
        r.o->release(v[sp->lhs]);
        r.o->release(v[sp->rhs]);
        v[sp->lhs] = v[sp->rhs] = NULL;
    }
    if (!st)
        st = finish(&r, plan, v[ids - 1], fresh, out);
    for (uint32_t i = 0; i < ids; i++)
        r.o->release(v[i]);
    ein_free(&m, v);
    return st;
}
