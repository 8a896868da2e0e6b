/*
 * extension_ops.c - the ABI 1.2 entries of the ops table extension rules
 * and composite ops issue their work through (tf__ext_ops, whose 1.0
 * entries live in extension_call.c): every built-in session op of ops.h,
 * reached by the engine ABI's op codes where those exist (unary, binary,
 * compare) and by one entry per op elsewhere.
 *
 * Each entry is a thin forward to the same-named tf_session_* op, so it
 * validates, records and differentiates exactly as that op does; a code
 * that names no session op is TF_ERR_VALIDATION naming "op".
 */
#include <string.h>

#include "extensions_internal.h"

#define S_(x) ((tf_session *)(x))
#define E_(x) ((tf_eager *)(x))
#define EO_(x) ((tf_eager **)(x))
#define ES_(x) ((tf_eager *const *)(x))

typedef tf_status (*unary_fn)(tf_session *, tf_eager *, tf_eager **);
typedef tf_status (*binary_fn)(tf_session *, tf_eager *, tf_eager *, tf_eager **);

/* The session ops behind the engine ABI's codes; NULL where a code has none. */
static const unary_fn k_unary[TF_UNARY_COUNT_] = {
#define UNARY_ENTRY_(NAME, name) [TF_UNARY_##NAME] = tf_session_##name,
    TF_UNARY_OPS(UNARY_ENTRY_)
    TF_COMPLEX_UNARY_OPS(UNARY_ENTRY_) /* conj, real, imag, angle (complex only) */
#undef UNARY_ENTRY_
};

static const binary_fn k_binary[TF_BINARY_COUNT_] = {
#define BINARY_ENTRY_(NAME, name) [TF_BINARY_##NAME] = tf_session_##name,
    TF_BINARY_OPS(BINARY_ENTRY_)
#undef BINARY_ENTRY_
};

static tf_status no_such_op(const char *entry, uint32_t op)
{
    return tf__error(TF_ERR_VALIDATION, entry, "op",
                     "%s: op code %u names no session op (see extension_abi.h, ABI 1.2)", entry,
                     op);
}

tf_status tf__xo_unary(tf_ext_session *s, uint32_t op, tf_ext_tensor *x, tf_ext_tensor **out)
{
    if (op >= TF_UNARY_COUNT_ || !k_unary[op])
        return no_such_op("unary", op);
    return k_unary[op](S_(s), E_(x), EO_(out));
}

tf_status tf__xo_binary(tf_ext_session *s, uint32_t op, tf_ext_tensor *x, tf_ext_tensor *y,
                        tf_ext_tensor **out)
{
    if (op >= TF_BINARY_COUNT_ || !k_binary[op])
        return no_such_op("binary", op);
    return k_binary[op](S_(s), E_(x), E_(y), EO_(out));
}

tf_status tf__xo_compare(tf_ext_session *s, uint32_t op, tf_ext_tensor *x, tf_ext_tensor *y,
                         tf_ext_tensor **out)
{
    if (op >= TF_COMPARE_COUNT_)
        return no_such_op("compare", op);
    return tf_session_compare(S_(s), E_(x), E_(y), (tf_compare_op)op, EO_(out));
}

tf_status tf__xo_select(tf_ext_session *s, tf_ext_tensor *p, tf_ext_tensor *t, tf_ext_tensor *f,
                        tf_ext_tensor **out)
{
    return tf_session_select(S_(s), E_(p), E_(t), E_(f), EO_(out));
}

tf_status tf__xo_clamp(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor *lo, tf_ext_tensor *hi,
                       tf_ext_tensor **out)
{
    return tf_session_clamp(S_(s), E_(x), E_(lo), E_(hi), EO_(out));
}

static tf_status check_dtype(const char *entry, uint32_t dtype)
{
    if (dtype >= TF_DTYPE_COUNT)
        return tf__error(TF_ERR_VALIDATION, entry, "dtype", "%s: %u is not a tf_dtype", entry,
                         dtype);
    return TF_OK;
}

tf_status tf__xo_convert(tf_ext_session *s, tf_ext_tensor *x, uint32_t dtype, tf_ext_tensor **out)
{
    tf_status st = check_dtype("convert", dtype);
    return st ? st : tf_session_convert(S_(s), E_(x), (tf_dtype)dtype, EO_(out));
}

tf_status tf__xo_cast(tf_ext_session *s, tf_ext_tensor *x, uint32_t dtype, tf_ext_tensor **out)
{
    tf_status st = check_dtype("cast", dtype);
    return st ? st : tf_session_cast(S_(s), E_(x), (tf_dtype)dtype, EO_(out));
}

tf_status tf__xo_reduce(tf_ext_session *s, uint32_t op, tf_ext_tensor *x, const int *axes,
                        size_t n_axes, tf_ext_tensor **out)
{
    tf_session *ss = S_(s);
    switch (op) {
    case TF_EXT_REDUCE_SUM: return tf_session_reduce_sum(ss, E_(x), axes, n_axes, EO_(out));
    case TF_EXT_REDUCE_PROD: return tf_session_reduce_prod(ss, E_(x), axes, n_axes, EO_(out));
    case TF_EXT_REDUCE_MAX: return tf_session_reduce_max(ss, E_(x), axes, n_axes, EO_(out));
    case TF_EXT_REDUCE_MIN: return tf_session_reduce_min(ss, E_(x), axes, n_axes, EO_(out));
    case TF_EXT_REDUCE_MEAN: return tf_session_reduce_mean(ss, E_(x), axes, n_axes, EO_(out));
    case TF_EXT_REDUCE_SUM_SQUARES:
        return tf_session_reduce_sum_squares(ss, E_(x), axes, n_axes, EO_(out));
    case TF_EXT_REDUCE_LOGSUMEXP: return tf_session_logsumexp(ss, E_(x), axes, n_axes, EO_(out));
    default: return no_such_op("reduce", op);
    }
}

tf_status tf__xo_dot_general(tf_ext_session *s, tf_ext_tensor *lhs, tf_ext_tensor *rhs,
                             const tf_dot_general_params *p, tf_ext_tensor **out)
{
    if (!p)
        return tf__error(TF_ERR_VALIDATION, "dot_general", "dims", "dot_general: dims is NULL");
    if (p->n_contracting > TF_MAX_RANK || p->n_batch > TF_MAX_RANK)
        return tf__error(TF_ERR_VALIDATION, "dot_general", "dims",
                         "dot_general: %u contracting and %u batch pairs, at most %d each",
                         p->n_contracting, p->n_batch, TF_MAX_RANK);
    tf_dot_dims d;
    memset(&d, 0, sizeof d);
    d.n_contracting = p->n_contracting;
    d.n_batch = p->n_batch;
    /* An axis too large for an int stays out of range (the op refuses it). */
    for (uint32_t i = 0; i < p->n_contracting; i++) {
        d.lhs_contracting[i] =
            p->lhs_contracting[i] > TF_MAX_RANK ? TF_MAX_RANK : (int)p->lhs_contracting[i];
        d.rhs_contracting[i] =
            p->rhs_contracting[i] > TF_MAX_RANK ? TF_MAX_RANK : (int)p->rhs_contracting[i];
    }
    for (uint32_t i = 0; i < p->n_batch; i++) {
        d.lhs_batch[i] = p->lhs_batch[i] > TF_MAX_RANK ? TF_MAX_RANK : (int)p->lhs_batch[i];
        d.rhs_batch[i] = p->rhs_batch[i] > TF_MAX_RANK ? TF_MAX_RANK : (int)p->rhs_batch[i];
    }
    return tf_session_dot_general(S_(s), E_(lhs), E_(rhs), &d, EO_(out));
}

tf_status tf__xo_broadcast_in_dim(tf_ext_session *s, tf_ext_tensor *x, uint32_t rank,
                                  const int64_t *shape, const int *dims, tf_ext_tensor **out)
{
    return tf_session_broadcast_in_dim(S_(s), E_(x), rank, shape, dims, EO_(out));
}

tf_status tf__xo_reverse(tf_ext_session *s, tf_ext_tensor *x, const int *axes, size_t n_axes,
                         tf_ext_tensor **out)
{
    return tf_session_reverse(S_(s), E_(x), axes, n_axes, EO_(out));
}

tf_status tf__xo_slice(tf_ext_session *s, tf_ext_tensor *x, const int64_t *start,
                       const int64_t *limit, const int64_t *stride, tf_ext_tensor **out)
{
    return tf_session_slice(S_(s), E_(x), start, limit, stride, EO_(out));
}

tf_status tf__xo_dynamic_slice(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor *starts,
                               const int64_t *sizes, tf_ext_tensor **out)
{
    return tf_session_dynamic_slice(S_(s), E_(x), E_(starts), sizes, EO_(out));
}

static tf_status check_mode(const char *entry, uint32_t mode, uint32_t combine)
{
    if (mode > TF_GATHER_ALONG_AXIS)
        return tf__error(TF_ERR_VALIDATION, entry, "mode", "%s: %u is not a tf_gather_mode", entry,
                         mode);
    if (combine > TF_SCATTER_REPLACE)
        return tf__error(TF_ERR_VALIDATION, entry, "combine", "%s: %u is not a tf_scatter_combine",
                         entry, combine);
    return TF_OK;
}

tf_status tf__xo_gather(tf_ext_session *s, tf_ext_tensor *x, int axis, tf_ext_tensor *index,
                        uint32_t mode, tf_ext_tensor **out)
{
    tf_status st = check_mode("gather", mode, 0);
    return st ? st
              : tf_session_gather(S_(s), E_(x), axis, E_(index), (tf_gather_mode)mode, EO_(out));
}

tf_status tf__xo_scatter(tf_ext_session *s, tf_ext_tensor *base, int axis, tf_ext_tensor *index,
                         tf_ext_tensor *updates, uint32_t mode, uint32_t combine,
                         tf_ext_tensor **out)
{
    tf_status st = check_mode("scatter", mode, combine);
    return st ? st
              : tf_session_scatter(S_(s), E_(base), axis, E_(index), E_(updates),
                                   (tf_gather_mode)mode, (tf_scatter_combine)combine, EO_(out));
}

tf_status tf__xo_pad(tf_ext_session *s, tf_ext_tensor *x, const int64_t *low, const int64_t *high,
                     const int64_t *interior, double value, tf_ext_tensor **out)
{
    return tf_session_pad(S_(s), E_(x), low, high, interior, value, EO_(out));
}

tf_status tf__xo_concatenate(tf_ext_session *s, tf_ext_tensor *const *xs, size_t n, int axis,
                             tf_ext_tensor **out)
{
    return tf_session_concatenate(S_(s), ES_(xs), n, axis, EO_(out));
}

tf_status tf__xo_stack(tf_ext_session *s, tf_ext_tensor *const *xs, size_t n, int axis,
                       tf_ext_tensor **out)
{
    return tf_session_stack(S_(s), ES_(xs), n, axis, EO_(out));
}

tf_status tf__xo_softmax(tf_ext_session *s, tf_ext_tensor *x, int axis, tf_ext_tensor **out)
{
    return tf_session_softmax(S_(s), E_(x), axis, EO_(out));
}

tf_status tf__xo_log_softmax(tf_ext_session *s, tf_ext_tensor *x, int axis, tf_ext_tensor **out)
{
    return tf_session_log_softmax(S_(s), E_(x), axis, EO_(out));
}

tf_status tf__xo_silu(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor **out)
{
    return tf_session_silu(S_(s), E_(x), EO_(out));
}

tf_status tf__xo_gelu(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor **out)
{
    return tf_session_gelu(S_(s), E_(x), EO_(out));
}

tf_status tf__xo_softplus(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor **out)
{
    return tf_session_softplus(S_(s), E_(x), EO_(out));
}

tf_status tf__xo_layer_norm(tf_ext_session *s, tf_ext_tensor *x, size_t n_axes, tf_ext_tensor *w,
                            tf_ext_tensor *b, double eps, tf_ext_tensor **out)
{
    return tf_session_layer_norm(S_(s), E_(x), n_axes, E_(w), E_(b), eps, EO_(out));
}

tf_status tf__xo_rms_norm(tf_ext_session *s, tf_ext_tensor *x, size_t n_axes, tf_ext_tensor *w,
                          double eps, tf_ext_tensor **out)
{
    return tf_session_rms_norm(S_(s), E_(x), n_axes, E_(w), eps, EO_(out));
}

tf_status tf__xo_constant(tf_ext_session *s, uint32_t dtype, uint32_t rank, const int64_t *shape,
                          double value, tf_ext_tensor **out)
{
    tf_status st = check_dtype("constant", dtype);
    return st ? st : tf_session_full(S_(s), (tf_dtype)dtype, rank, shape, value, EO_(out));
}

tf_status tf__xo_constant_from_host(tf_ext_session *s, uint32_t dtype, uint32_t rank,
                                    const int64_t *shape, const void *data, size_t count,
                                    tf_ext_tensor **out)
{
    tf_status st = check_dtype("constant_from_host", dtype);
    if (st)
        return st;
    if (!s || !out)
        return tf__error(TF_ERR_VALIDATION, "constant_from_host", s ? "out" : "session",
                         "constant_from_host: NULL argument");
    tf_tensor *t;
    if ((st = tf_tensor_from_host((tf_dtype)dtype, rank, shape, data, count, &t)))
        return st;
    st = tf_session_constant_from_host(S_(s), t, EO_(out));
    tf_tensor_release(t);
    return st;
}
