/*
 * dist_rules.c - the AD rules of tenferro.dist. Every collective is linear,
 * so its forward rule is itself applied to the tangent, and its reverse rule
 * is its adjoint, again a collective (for the loss L = sum over ranks of
 * <ybar_r, y_r>):
 *
 *   all_reduce(sum)   y_r = sum_s x_s          xbar_s = sum_r ybar_r = all_reduce(ybar, sum)
 *   all_reduce(mean)  y_r = (1/p) sum_s x_s    xbar_s = all_reduce(ybar, mean)
 *   broadcast(root)   y_r = x_root             xbar_root = sum_r ybar_r, 0 elsewhere
 *                                              = reduce(ybar, root)
 *   reduce(root)      y_root = sum_s x_s, 0    xbar_s = ybar_root = broadcast(ybar, root)
 *   all_gather        y_r = [x_0 ... x_{p-1}]  xbar_s = sum_r (block s of ybar_r)
 *                                              = reduce_scatter(ybar)
 *   reduce_scatter    y_r = sum_s block r of x_s   xbar_s = [ybar_0 ... ybar_{p-1}]
 *                                              = all_gather(ybar)
 *
 * The rules call the module's own ops by name (ops->call), so derivatives
 * are recorded and differentiable again. A collective must run on every
 * rank, so a rule given no cotangent or tangent (zero) still runs its
 * collective, on zeros: skipping it on one rank would leave the others
 * waiting.
 */
#include <string.h>

#include "dist_internal.h"

/* `like`'s dtype and shape filled with zeros (what a NULL tangent or cotangent means). */
static tf_status zeros_like(const tf_ext_rule_ctx *c, const tf_ext_tensor *like,
                            tf_ext_tensor **out)
{
    int64_t shape[TF_MAX_RANK];
    uint32_t rank = c->ops->rank(like);
    for (uint32_t i = 0; i < rank; i++)
        shape[i] = c->ops->extent(like, i);
    return c->ops->full(c->session, like, rank, shape, 0.0, out);
}

/*
 * *out = op(x, scalars...) for the module's op `name` (a full name), with x
 * replaced by zeros shaped like `like` when it is NULL.
 */
static tf_status apply(const tf_ext_rule_ctx *c, const char *name, tf_ext_tensor *x,
                       const tf_ext_tensor *like, const tf_ext_scalar *sc, uint32_t n_sc,
                       tf_ext_tensor **out)
{
    tf_ext_tensor *zero = NULL;
    if (!x) {
        tf_status st = zeros_like(c, like, &zero);
        if (st)
            return st;
        x = zero;
    }
    tf_status st = c->ops->call(c->session, name, &x, 1, sc, n_sc, out, 1);
    c->ops->release(zero);
    return st;
}

#define OP(name) DIST_ID "." name

tf_status dist_all_reduce_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                              tf_ext_tensor *cot, const int *need, tf_ext_tensor **cin)
{
    (void)need;
    return apply(c, OP("all_reduce"), cot, call->output, call->scalars, 1, &cin[0]);
}

tf_status dist_all_reduce_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                              tf_ext_tensor *const *tan, tf_ext_tensor **tout)
{
    return apply(c, OP("all_reduce"), tan[0], call->tensors[0], call->scalars, 1, tout);
}

tf_status dist_broadcast_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                             tf_ext_tensor *cot, const int *need, tf_ext_tensor **cin)
{
    (void)need;
    return apply(c, OP("reduce"), cot, call->output, call->scalars, 1, &cin[0]);
}

tf_status dist_broadcast_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                             tf_ext_tensor *const *tan, tf_ext_tensor **tout)
{
    return apply(c, OP("broadcast"), tan[0], call->tensors[0], call->scalars, 1, tout);
}

tf_status dist_reduce_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                          const int *need, tf_ext_tensor **cin)
{
    (void)need;
    return apply(c, OP("broadcast"), cot, call->output, call->scalars, 1, &cin[0]);
}

tf_status dist_reduce_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                          tf_ext_tensor *const *tan, tf_ext_tensor **tout)
{
    return apply(c, OP("reduce"), tan[0], call->tensors[0], call->scalars, 1, tout);
}

tf_status dist_all_gather_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                              tf_ext_tensor *cot, const int *need, tf_ext_tensor **cin)
{
    (void)need;
    return apply(c, OP("reduce_scatter"), cot, call->output, NULL, 0, &cin[0]);
}

tf_status dist_all_gather_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                              tf_ext_tensor *const *tan, tf_ext_tensor **tout)
{
    return apply(c, OP("all_gather"), tan[0], call->tensors[0], NULL, 0, tout);
}

tf_status dist_reduce_scatter_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                                  tf_ext_tensor *cot, const int *need, tf_ext_tensor **cin)
{
    (void)need;
    return apply(c, OP("all_gather"), cot, call->output, NULL, 0, &cin[0]);
}

tf_status dist_reduce_scatter_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                                  tf_ext_tensor *const *tan, tf_ext_tensor **tout)
{
    return apply(c, OP("reduce_scatter"), tan[0], call->tensors[0], NULL, 0, tout);
}
