/*
 * linalg_lb.h - the builder the AD rules of tenferro.linalg are written with
 * (linalg_rules.c, linalg_rules_spectral.c).
 *
 * A rule runs ops of the host's ops table (so what it computes is recorded
 * and differentiable again) through an `lb`: each lb_* call returns a new
 * temporary the builder keeps and releases in lb_done, or NULL once any call
 * has failed, after which every lb_* is a no-op and lb_done returns the first
 * error. lb_set hands a result to the rule's caller (a new reference). The
 * functions are static inline: each rule file uses its own share of them.
 *
 * Complex operands: the rules are written for PyTorch's convention
 * (docs/complex.md), where the cotangent map is the adjoint under the real
 * inner product Re tr(X^H Y): every transpose of a real rule becomes lb_adj
 * (X^H), which is lb_transpose_last2 for a real X, so one rule serves both.
 */
#ifndef TF_LINALG_LB_H
#define TF_LINALG_LB_H

#include <string.h>

#include "linalg_internal.h"

#define LB_MAX 40

/* Collects temporaries and the first error; every lb_* is a no-op after one. */
typedef struct lb {
    const tf_ext_rule_ctx *c;
    tf_ext_session *s;
    const tf_ext_ops *o;
    tf_status st;
    int n;
    tf_ext_tensor *tmp[LB_MAX];
} lb;

static inline lb lb_begin(const tf_ext_rule_ctx *c)
{
    lb b;
    memset(&b, 0, sizeof b);
    b.c = c;
    b.s = c->session;
    b.o = c->ops;
    return b;
}

static inline tf_ext_tensor *keep(lb *b, tf_status st, tf_ext_tensor *x)
{
    if (st) {
        b->st = st;
        return NULL;
    }
    if (b->n == LB_MAX) {
        b->o->release(x);
        b->c->host->report_error(b->c->host->ctx, TF_ERR_RUNTIME_STATE,
                                 "linalg: a rule needed too many temporaries");
        b->st = TF_ERR_RUNTIME_STATE;
        return NULL;
    }
    return b->tmp[b->n++] = x;
}

/* Hands r to *dst (new reference) and keeps going. */
static inline void lb_set(lb *b, tf_ext_tensor *r, tf_ext_tensor **dst)
{
    if (!b->st && r) {
        b->o->retain(r);
        *dst = r;
    }
}

static inline tf_status lb_done(lb *b)
{
    for (int i = 0; i < b->n; i++)
        b->o->release(b->tmp[i]);
    return b->st;
}

#define LB2_(name)                                                             \
    static inline tf_ext_tensor *lb_##name(lb *b, tf_ext_tensor *x, tf_ext_tensor *y) \
    {                                                                          \
        tf_ext_tensor *r = NULL;                                               \
        if (b->st || !x || !y)                                                 \
            return NULL;                                                       \
        tf_status st_ = b->o->name(b->s, x, y, &r);                            \
        return keep(b, st_, r);                                                \
    }
LB2_(add)
LB2_(sub)
LB2_(mul)
LB2_(div)
LB2_(matmul)
#define LB1_(name)                                           \
    static inline tf_ext_tensor *lb_##name(lb *b, tf_ext_tensor *x) \
    {                                                        \
        tf_ext_tensor *r = NULL;                             \
        if (b->st || !x)                                     \
            return NULL;                                     \
        tf_status st_ = b->o->name(b->s, x, &r);             \
        return keep(b, st_, r);                              \
    }
LB1_(neg)
LB1_(transpose_last2)
LB1_(diagonal)   /* [..., k, k] -> [..., k] */
LB1_(diag_embed) /* [..., k] -> [..., k, k] */

/* Non-zero when x is c64 or c128. */
static inline int lb_is_cx(lb *b, tf_ext_tensor *x)
{
    return x && tf_dtype_is_complex((tf_dtype)b->o->dtype(x));
}

/* A unary op by its tf_unary_op code (the ops table's `unary`, ABI 1.2). */
static inline tf_ext_tensor *lb_unary(lb *b, uint32_t op, tf_ext_tensor *x)
{
    tf_ext_tensor *r = NULL;
    if (b->st || !x)
        return NULL;
    if (!TF_ABI_HAS_FIELD(b->o, tf_ext_ops, unary) || !b->o->unary) {
        b->c->host->report_error(b->c->host->ctx, TF_ERR_UNSUPPORTED_AD_RULE,
                                 "linalg: complex rules need a host of extension ABI 1.2 or later");
        b->st = TF_ERR_UNSUPPORTED_AD_RULE;
        return NULL;
    }
    tf_status st_ = b->o->unary(b->s, op, x, &r);
    return keep(b, st_, r);
}

/* conj(x) for a complex x; a real x itself (borrowed, no op issued). */
static inline tf_ext_tensor *lb_conj(lb *b, tf_ext_tensor *x)
{
    return lb_is_cx(b, x) ? lb_unary(b, TF_UNARY_CONJ, x) : b->st ? NULL : x;
}

/* The real part of a complex x (the parts' dtype); a real x itself. */
static inline tf_ext_tensor *lb_real(lb *b, tf_ext_tensor *x)
{
    return lb_is_cx(b, x) ? lb_unary(b, TF_UNARY_REAL, x) : b->st ? NULL : x;
}

/* x^H: the last two axes swapped and conjugated (x^T for a real x). */
static inline tf_ext_tensor *lb_adj(lb *b, tf_ext_tensor *x)
{
    return lb_conj(b, lb_transpose_last2(b, x));
}

/* x - x^H: skew-Hermitian (skew-symmetric, zero diagonal, for a real x). */
static inline tf_ext_tensor *lb_skew(lb *b, tf_ext_tensor *x)
{
    return lb_sub(b, x, lb_adj(b, x));
}

static inline tf_ext_tensor *lb_tri(lb *b, tf_ext_tensor *x, int lower, int64_t k)
{
    tf_ext_tensor *r = NULL;
    if (b->st || !x)
        return NULL;
    tf_status st_ = lower ? b->o->tril(b->s, x, k, &r) : b->o->triu(b->s, x, k, &r);
    return keep(b, st_, r);
}

static inline tf_ext_tensor *lb_scale(lb *b, tf_ext_tensor *x, double v)
{
    tf_ext_tensor *c = NULL;
    if (b->st || !x)
        return NULL;
    tf_status st_ = b->o->scalar(b->s, x, v, &c);
    c = keep(b, st_, c);
    return lb_mul(b, x, c);
}

/* x of shape [...] reshaped to [..., 1, 1] so it broadcasts over matrices. */
static inline tf_ext_tensor *lb_expand2(lb *b, tf_ext_tensor *x)
{
    tf_ext_tensor *r = NULL;
    if (b->st || !x)
        return NULL;
    uint32_t rank = b->o->rank(x);
    int64_t shape[TF_MAX_RANK];
    for (uint32_t i = 0; i < rank; i++)
        shape[i] = b->o->extent(x, i);
    shape[rank] = shape[rank + 1] = 1;
    tf_status st_ = b->o->reshape(b->s, x, rank + 2, shape, &r);
    return keep(b, st_, r);
}

/* Sum over the last two axes. */
static inline tf_ext_tensor *lb_sum2(lb *b, tf_ext_tensor *x)
{
    tf_ext_tensor *r = NULL;
    if (b->st || !x)
        return NULL;
    int rank = (int)b->o->rank(x), axes[2] = {rank - 2, rank - 1};
    tf_status st_ = b->o->reduce_sum(b->s, x, axes, 2, &r);
    return keep(b, st_, r);
}

static inline tf_ext_tensor *lb_op(lb *b, const char *name, tf_ext_tensor *x, tf_ext_tensor *y,
                            int64_t lower)
{
    tf_ext_tensor *r = NULL;
    if (b->st || !x || (y == NULL && lower >= 0))
        return NULL;
    tf_ext_tensor *ts[2] = {x, y};
    tf_ext_scalar sc = {0.0, lower};
    tf_status st_ = b->o->call(b->s, name, ts, y ? 2 : 1, &sc, lower >= 0 ? 1 : 0, &r, 1);
    return keep(b, st_, r);
}

/*
 * The n outputs o[] of the recorded multi-output op `name` a rule
 * differentiates: the forward's own values when the host gives them (ABI
 * 1.3, tf_ext_call.outputs: borrowed, a first-order derivative that is not
 * recorded), else recomputed through the op from its recorded arguments (a
 * 1.2 host, or grad of grad, where they must stay differentiable functions
 * of the inputs; new references the builder releases).
 */
static inline void lb_outputs(lb *b, const char *name, const tf_ext_call *call, uint32_t n,
                              tf_ext_tensor **o)
{
    for (uint32_t j = 0; j < n; j++)
        o[j] = NULL;
    if (b->st)
        return;
    if (TF_ABI_HAS_FIELD(call, tf_ext_call, outputs) && call->outputs && call->n_outputs == n) {
        for (uint32_t j = 0; j < n; j++)
            o[j] = call->outputs[j];
        return;
    }
    tf_status st = b->o->call(b->s, name, call->tensors, call->n_tensors, call->scalars,
                              call->n_scalars, o, n);
    if (st) {
        b->st = st;
        return;
    }
    for (uint32_t j = 0; j < n; j++)
        o[j] = keep(b, TF_OK, o[j]);
}

#endif /* TF_LINALG_LB_H */
