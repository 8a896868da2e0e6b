/*
 * dp_internal.h - the data-parallel helper of dp.h, shared by dp.c (the
 * helper, its world and the broadcast) and dp_average.c (the buckets and
 * the step).
 */
#ifndef TF_DP_INTERNAL_H
#define TF_DP_INTERNAL_H

#include <tenferro/dp.h>
#include <tenferro/extension.h>
#include <tenferro/ops.h>

#include "optim_internal.h"

#define TT_DIST_ALL_REDUCE "tenferro.dist.all_reduce"
#define TT_DIST_BROADCAST "tenferro.dist.broadcast"

struct tf_dp {
    tf_runtime *rt;     /* retained */
    tf_engine *engine;  /* borrowed */
    int rank, size;
    size_t bucket_bytes;
    size_t last_buckets;
};

#endif /* TF_DP_INTERNAL_H */
