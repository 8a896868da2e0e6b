/*
 * dp_average.c - averaging gradients over the ranks in buckets, and the
 * data-parallel step (dp.h).
 *
 * Every parameter travels in a bucket (zeros where this rank has no
 * gradient), in order, one dtype at a time, so that the buckets are the
 * same on every rank without asking. The last bucket carries one more
 * segment: a presence mask (1 where this rank has a gradient), so that its
 * average, positive where any rank had one, says which parameters get an
 * average and which none, at no extra collective.
 *
 * Each bucket is packed once into host memory with the 1/p scale fused into
 * that copy (dp_pack.c) and summed by one all_reduce: the sum of g / p over
 * the ranks (pre-scaling, as PyTorch DDP does). For p a power of two 1/p is
 * exact and that is the sum divided by p to the bit; for other p the two
 * are equal within rounding.
 */
#include <string.h>

#include "dp_internal.h"

typedef struct avg_ctx {
    tf_dp *dp;
    tf_session *s;
    const tf_optim *opt;
    tf_tensor **local; /* this rank's gradients (NULL: none) */
    tf_tensor **out;   /* the averages */
    size_t buckets;
    tf_dtype last_dtype; /* the dtype of the last bucket formed (the mask's) */
    tf_tensor *mask_mean; /* the averaged mask ([n_params]), from the last bucket */
} avg_ctx;

static tf_status fail_core(tf_status st, const char *what)
{
    return tt_fail_core(st, "dp_average_grads: %s", what);
}

/* The packed bucket as an eager constant of the session's engine (no copy on the host's). */
static tf_status as_constant(avg_ctx *a, tf_tensor *packed, tf_eager **out)
{
    if (tf_engine_uses_host_memory(tf_session_engine(a->s)))
        return tf_runtime_constant_from(a->opt->rt, packed, out);
    return tf_session_constant_from_host(a->s, packed, out);
}

/* Cuts the averaged bucket back into views of the parameters' shapes (and the mask). */
static tf_status unpack(avg_ctx *a, const tf_tensor *mean, const size_t *idx, size_t k,
                        int with_mask)
{
    int64_t off = 0, one = 1;
    tf_status st = TF_OK;
    for (size_t j = 0; j < k && !st; j++) {
        const tf_tensor *p = tf_eager_value(a->opt->params[idx[j]].var);
        int64_t lo = off, hi = off + (int64_t)tf_tensor_numel(p);
        tf_tensor *piece = NULL;
        st = tf_tensor_slice(mean, &lo, &hi, &one, &piece);
        if (!st)
            st = tf_tensor_reshape(piece, tf_tensor_rank(p), tf_tensor_shape(p), &a->out[idx[j]]);
        tf_tensor_release(piece);
        off = hi;
    }
    int64_t hi = off + (int64_t)a->opt->n_params;
    if (!st && with_mask)
        st = tf_tensor_slice(mean, &off, &hi, &one, &a->mask_mean);
    return st ? fail_core(st, "unpacking a bucket") : TF_OK;
}

/*
 * One bucket: parameters idx[0 .. k) packed with the 1/p scale, summed over
 * the ranks by one all_reduce (from the packed buffer into a new one: Open
 * MPI's ring all-reduce is slower in place, docs/performance.md), cut back.
 */
static tf_status bucket(avg_ctx *a, const size_t *idx, size_t k, int with_mask)
{
    tf_dtype dtype = tf_tensor_dtype(tf_eager_value(a->opt->params[idx[0]].var));
    int64_t total = with_mask ? (int64_t)a->opt->n_params : 0;
    for (size_t j = 0; j < k; j++)
        total += (int64_t)tf_tensor_numel(tf_eager_value(a->opt->params[idx[j]].var));
    tf_tensor *packed = NULL;
    tf_eager *flat = NULL, *mean = NULL;
    tf_status st = tt_dp_pack(a->dp, a->opt, a->local, idx, k, with_mask, dtype, total, &packed);
    if (!st && (st = as_constant(a, packed, &flat)))
        st = fail_core(st, "packing a bucket");
    tf_call_arg args[2] = {TF_ARG_TENSOR(flat), TF_ARG_I64(0)}; /* the sum */
    if (!st && (st = tf_session_call(a->s, TT_DIST_ALL_REDUCE, args, 2, &mean, 1)))
        st = fail_core(st, "the bucket's all_reduce");
    if (!st)
        st = unpack(a, tf_eager_value(mean), idx, k, with_mask);
    a->buckets += !st;
    tf_tensor_release(packed);
    tf_eager_release(flat);
    tf_eager_release(mean);
    return st;
}

/* The dtype of the last bucket formed (f64 if any parameter is): the mask rides in it. */
static void find_last(avg_ctx *a)
{
    a->last_dtype = TF_F32;
    for (size_t i = 0; i < a->opt->n_params; i++)
        if (tf_tensor_dtype(tf_eager_value(a->opt->params[i].var)) == TF_F64)
            a->last_dtype = TF_F64;
}

/* Every parameter, one dtype at a time, in buckets of about `limit` bytes. */
static tf_status all_buckets(avg_ctx *a, size_t *idx, size_t limit)
{
    static const tf_dtype dtypes[] = {TF_F32, TF_F64};
    find_last(a);
    tf_status st = TF_OK;
    for (size_t d = 0; d < 2 && !st; d++) {
        size_t k = 0, bytes = 0;
        for (size_t i = 0; i < a->opt->n_params && !st; i++) {
            const tf_tensor *p = tf_eager_value(a->opt->params[i].var);
            if (tf_tensor_dtype(p) != dtypes[d])
                continue;
            size_t b = tf_tensor_numel(p) * tf_dtype_size(dtypes[d]);
            if (k && bytes + b > limit) {
                st = bucket(a, idx, k, 0);
                k = bytes = 0;
            }
            idx[k++] = i;
            bytes += b;
        }
        if (!st && k)
            st = bucket(a, idx, k, dtypes[d] == a->last_dtype);
    }
    return st;
}

/* Drops the averages of parameters no rank had a gradient for (the mask's zeros). */
static tf_status apply_mask(avg_ctx *a)
{
    size_t n = a->opt->n_params;
    if (!a->mask_mean)
        return TF_OK;
    tf_dtype dtype = tf_tensor_dtype(a->mask_mean);
    size_t es = tf_dtype_size(dtype);
    char *m = tt_calloc(n, es);
    tf_status st = m ? tt_dp_read(a->mask_mean, dtype, 1.0, m, n) : TF_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < n && !st; i++) {
        double v;
        float v32;
        if (dtype == TF_F64)
            memcpy(&v, m + i * es, es);
        else
            memcpy(&v32, m + i * es, es), v = v32;
        if (v <= 0) {
            tf_tensor_release(a->out[i]);
            a->out[i] = NULL;
        }
    }
    tt_free(m);
    return st ? fail_core(st, "reading which parameters have gradients") : TF_OK;
}

static tf_status local_grads(const tf_optim *opt, tf_tensor **g)
{
    for (size_t i = 0; i < opt->n_params; i++) {
        tf_status st = tf_eager_grad(opt->params[i].var, &g[i]);
        if (st)
            return fail_core(st, "reading a grad slot");
    }
    return TF_OK;
}

/* The buckets in a session of the helper under no-grad. */
static tf_status average(tf_dp *dp, avg_ctx *a, size_t *idx)
{
    tf_scope guard;
    tf_status st = tf_session_begin(dp->rt, dp->engine, &a->s);
    if (st)
        return fail_core(st, "session");
    int guarded = tf_scope_begin_no_grad(dp->rt, &guard) == TF_OK;
    st = all_buckets(a, idx, dp->bucket_bytes);
    if (!st)
        st = apply_mask(a);
    tf_tensor_release(a->mask_mean);
    if (guarded)
        tf_scope_end(&guard);
    tf_session_end(a->s);
    return st;
}

TF_TRAIN_API tf_status tf_dp_average_grads(tf_dp *dp, const tf_optim *opt, tf_tensor **grads,
                                           size_t n)
{
    if (!dp || !opt || (!grads && n))
        return tt_fail(TF_ERR_VALIDATION, !dp ? "dp" : !opt ? "opt" : "grads",
                       "dp_average_grads: NULL argument");
    if (n != opt->n_params)
        return tt_fail(TF_ERR_VALIDATION, "grads",
                       "dp_average_grads: room for %zu gradients, %zu parameters", n,
                       opt->n_params);
    size_t m = n ? n : 1;
    avg_ctx a;
    memset(&a, 0, sizeof a);
    a.dp = dp;
    a.opt = opt;
    a.local = tt_calloc(m, sizeof(tf_tensor *));
    a.out = tt_calloc(m, sizeof(tf_tensor *));
    size_t *idx = tt_calloc(m, sizeof *idx);
    tf_status st = !a.local || !a.out || !idx
                       ? tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "dp_average_grads: out of memory")
                       : local_grads(opt, a.local);
    if (!st)
        st = average(dp, &a, idx);
    for (size_t i = 0; i < n; i++) {
        tf_tensor_release(a.local ? a.local[i] : NULL);
        if (st)
            tf_tensor_release(a.out ? a.out[i] : NULL);
        else
            grads[i] = a.out[i];
    }
    if (!st)
        dp->last_buckets = a.buckets;
    tt_free(a.local);
    tt_free(a.out);
    tt_free(idx);
    return st;
}

TF_TRAIN_API tf_status tf_dp_step(tf_dp *dp, tf_optim *opt)
{
    if (!dp || !opt)
        return tt_fail(TF_ERR_VALIDATION, !dp ? "dp" : "opt", "dp_step: NULL argument");
    size_t n = opt->n_params;
    tf_tensor **g = tt_calloc(n ? n : 1, sizeof *g);
    if (!g)
        return tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "dp_step: out of memory");
    tf_status st = tf_dp_average_grads(dp, opt, g, n);
    if (!st)
        st = tf_optim_step_with_grads(opt, dp->engine, g, n);
    for (size_t i = 0; i < n; i++)
        tf_tensor_release(g[i]);
    tt_free(g);
    return st;
}
