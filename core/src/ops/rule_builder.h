/*
 * rule_builder.h - a small helper for writing AD rules as expressions of
 * session ops without drowning them in error handling.
 *
 * A builder collects every temporary it creates and the first error. Each
 * rb_* call is a no-op returning NULL once an error happened, so a rule is a
 * straight sequence of calls ended by rb_done(), which hands the wanted
 * result to the caller (a new reference), releases the temporaries and
 * returns the first error.
 *
 *     rule_builder b = rb_begin(s);
 *     tf_eager *d = rb_mul(&b, cot, rb_cos(&b, x));
 *     return rb_done(&b, d, &cot_in[0]);
 */
#ifndef TF_RULE_BUILDER_H
#define TF_RULE_BUILDER_H

#include "ops_internal.h"

#define RB_MAX_TEMPS 48

typedef struct rule_builder {
    tf_session *s;
    tf_status st;
    int n;
    tf_eager *tmp[RB_MAX_TEMPS];
} rule_builder;

static inline rule_builder rb_begin(tf_session *s)
{
    rule_builder b;
    b.s = s;
    b.st = TF_OK;
    b.n = 0;
    return b;
}

/* Takes ownership of x as a temporary; records st as the error if x is NULL. */
static inline tf_eager *rb_keep(rule_builder *b, tf_status st, tf_eager *x)
{
    if (st) {
        b->st = st;
        return NULL;
    }
    if (b->n == RB_MAX_TEMPS) {
        tf_eager_release(x);
        b->st = tf__error(TF_ERR_RUNTIME_STATE, "autodiff", NULL,
                          "an AD rule needed more than %d temporaries", RB_MAX_TEMPS);
        return NULL;
    }
    b->tmp[b->n++] = x;
    return x;
}

/* Releases the temporaries; *dst gets a new reference to result on success. */
static inline tf_status rb_done(rule_builder *b, tf_eager *result, tf_eager **dst)
{
    if (!b->st && result) {
        tf_eager_retain(result);
        *dst = result;
    }
    for (int i = 0; i < b->n; i++)
        tf_eager_release(b->tmp[i]);
    b->n = 0;
    return b->st;
}

/* Like rb_done but for rules with several results: releases temporaries only. */
static inline tf_status rb_finish(rule_builder *b)
{
    return rb_done(b, NULL, NULL);
}

/* Hands a result to the caller mid-rule (a new reference). */
static inline void rb_set(rule_builder *b, tf_eager *result, tf_eager **dst)
{
    if (!b->st && result) {
        tf_eager_retain(result);
        *dst = result;
    }
}

#define RB_UNARY_(NAME, name)                                       \
    static inline tf_eager *rb_##name(rule_builder *b, tf_eager *x) \
    {                                                               \
        tf_eager *o = NULL;                                         \
        if (b->st || !x)                                            \
            return NULL;                                            \
        tf_status st_ = tf_session_##name(b->s, x, &o);             \
        return rb_keep(b, st_, o);                                  \
    }
TF_UNARY_OPS(RB_UNARY_)
TF_COMPLEX_UNARY_OPS(RB_UNARY_)
#undef RB_UNARY_

#define RB_BINARY_(NAME, name)                                                   \
    static inline tf_eager *rb_##name(rule_builder *b, tf_eager *x, tf_eager *y) \
    {                                                                            \
        tf_eager *o = NULL;                                                      \
        if (b->st || !x || !y)                                                   \
            return NULL;                                                         \
        tf_status st_ = tf_session_##name(b->s, x, y, &o);                       \
        return rb_keep(b, st_, o);                                               \
    }
TF_BINARY_OPS(RB_BINARY_)
RB_BINARY_(COMPLEX, complex)
#undef RB_BINARY_

/* Wraps a call `expr` that writes its result to `o`. */
#define RB_CALL_(b, expr)            \
    do {                             \
        if ((b)->st)                 \
            return NULL;             \
        tf_status st_ = (expr);      \
        return rb_keep((b), st_, o); \
    } while (0)

/* A rank-0 constant with like's dtype. */
static inline tf_eager *rb_scalar(rule_builder *b, const tf_eager *like, double v)
{
    tf_eager *o = NULL;
    RB_CALL_(b, tf__scalar_like(b->s, like, v, &o));
}

/* Zeros of like's dtype and shape. */
static inline tf_eager *rb_zeros_like(rule_builder *b, const tf_eager *like)
{
    tf_eager *o = NULL;
    RB_CALL_(b, tf__zeros_like(b->s, like, &o));
}

/* x summed back to the shape of `like` (undoing NumPy broadcasting). */
static inline tf_eager *rb_sum_to(rule_builder *b, tf_eager *x, const tf_eager *like)
{
    tf_eager *o = NULL;
    if (!x)
        return NULL;
    RB_CALL_(b, tf__sum_to_shape(b->s, x, like->value->rank, like->value->shape, &o));
}

/* x broadcast (NumPy alignment) to the shape of `like`. */
static inline tf_eager *rb_broadcast_to(rule_builder *b, tf_eager *x, const tf_eager *like)
{
    tf_eager *o = NULL;
    if (!x)
        return NULL;
    const tf_tensor *l = like->value;
    int dims[TF_MAX_RANK];
    for (uint32_t i = 0; i < x->value->rank; i++)
        dims[i] = (int)(l->rank - x->value->rank + i);
    RB_CALL_(b, tf_session_broadcast_in_dim(b->s, x, l->rank, l->shape, dims, &o));
}

static inline tf_eager *rb_compare(rule_builder *b, tf_eager *x, tf_eager *y, tf_compare_op op)
{
    tf_eager *o = NULL;
    if (!x || !y)
        return NULL;
    RB_CALL_(b, tf_session_compare(b->s, x, y, op, &o));
}

static inline tf_eager *rb_select(rule_builder *b, tf_eager *p, tf_eager *t, tf_eager *f)
{
    tf_eager *o = NULL;
    if (!p || !t || !f)
        return NULL;
    RB_CALL_(b, tf_session_select(b->s, p, t, f, &o));
}

/* A bool mask converted to like's float dtype (1.0 where true). */
static inline tf_eager *rb_mask(rule_builder *b, tf_eager *m, const tf_eager *like)
{
    tf_eager *o = NULL;
    if (!m)
        return NULL;
    RB_CALL_(b, tf_session_cast(b->s, m, like->value->dtype, &o));
}

static inline tf_eager *rb_reduce_sum(rule_builder *b, tf_eager *x, const int *axes, size_t n)
{
    tf_eager *o = NULL;
    if (!x)
        return NULL;
    RB_CALL_(b, tf_session_reduce_sum(b->s, x, axes, n, &o));
}

static inline tf_eager *rb_reshape(rule_builder *b, tf_eager *x, size_t rank, const int64_t *shape)
{
    tf_eager *o = NULL;
    if (!x)
        return NULL;
    RB_CALL_(b, tf_session_reshape(b->s, x, rank, shape, &o));
}

static inline tf_eager *rb_broadcast_in_dim(rule_builder *b, tf_eager *x, size_t rank,
                                            const int64_t *shape, const int *dims)
{
    tf_eager *o = NULL;
    if (!x)
        return NULL;
    RB_CALL_(b, tf_session_broadcast_in_dim(b->s, x, rank, shape, dims, &o));
}

static inline tf_eager *rb_transpose(rule_builder *b, tf_eager *x, const int *perm)
{
    tf_eager *o = NULL;
    if (!x)
        return NULL;
    RB_CALL_(b, tf_session_transpose(b->s, x, perm, &o));
}

static inline tf_eager *rb_cast(rule_builder *b, tf_eager *x, tf_dtype dtype)
{
    tf_eager *o = NULL;
    if (!x)
        return NULL;
    RB_CALL_(b, tf_session_cast(b->s, x, dtype, &o));
}

/* Broadcasts a reduced-shape tensor back over x's shape (ops_reduce.c). */
tf_eager *tf__rb_unreduce(rule_builder *b, tf_eager *r, const tf_tensor *x, uint64_t mask);

#endif /* TF_RULE_BUILDER_H */
