/*
 * dp_internal.h - the data-parallel helper of dp.h, shared by dp.c (the
 * helper, its world and the broadcast) and dp_average.c (the buckets and
 * the step).
 */
#ifndef TF_DP_INTERNAL_H
#define TF_DP_INTERNAL_H

#include <stdatomic.h>

#include <tenferro/dp.h>
#include <tenferro/extension.h>
#include <tenferro/ops.h>

#include "optim_internal.h"

#define TT_DIST_ALL_REDUCE "tenferro.dist.all_reduce"
#define TT_DIST_BROADCAST "tenferro.dist.broadcast"

/*
 * The host buffer buckets are packed into, kept for the next call so that
 * each call does not touch fresh pages (a 25 MiB malloc is a new mapping).
 * One reference is the helper's, one each wrapped tensor's over it: the
 * buffer is reused only when the helper's is the last, and freed with the
 * last (dp_pack.c).
 */
typedef struct tt_pack {
    atomic_int refs;
    size_t cap;
    void *mem;
} tt_pack;

void tt_pack_release(tt_pack *p);

/*
 * Packs parameters idx[0 .. k) of opt (their gradients local[], NULL: zeros)
 * and, with with_mask, the presence mask of every parameter, each element
 * times 1/dp->size, into the helper's buffer: *out is a host tensor
 * [total] of dtype over it. Errors (reported): reading a gradient,
 * TF_ERR_OUT_OF_MEMORY.
 */
tf_status tt_dp_pack(tf_dp *dp, const tf_optim *opt, tf_tensor *const *local, const size_t *idx,
                     size_t k, int with_mask, tf_dtype dtype, int64_t total, tf_tensor **out);

/* n elements of t (any placement and strides, dtype) times `scale` into dst. */
tf_status tt_dp_read(const tf_tensor *t, tf_dtype dtype, double scale, void *dst, size_t n);

struct tf_dp {
    tf_runtime *rt;     /* retained */
    tf_engine *engine;  /* borrowed */
    int rank, size;
    size_t bucket_bytes;
    size_t last_buckets;
    tt_pack *pack; /* NULL until the first bucket */
};

#endif /* TF_DP_INTERNAL_H */
