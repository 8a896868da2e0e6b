/*
 * tenferro/dp.h - data-parallel training over MPI on the tenferro.dist
 * extension module (a bundled plugin, tenferro-ext-dist.so; docs/training.md).
 *
 * Every rank (an MPI process, started by mpirun) holds the whole model and
 * trains on its own shard of each batch. The helper makes that equal to one
 * process training on the whole batch:
 *   1. tf_dp_broadcast_params: every rank starts from rank 0's parameters;
 *   2. after backward, tf_dp_step averages every parameter's gradient over
 *      the ranks and takes the optimizer's step with the averages, so the
 *      parameters stay the same on every rank. The gradients travel in
 *      buckets: those of one dtype are flattened and joined into messages of
 *      about tf_dp_set_bucket_bytes bytes (25 MiB by default, PyTorch DDP's),
 *      each averaged by one all_reduce (of g / p, pre-scaled while packing:
 *      for p a power of two the mean to the bit, otherwise equal to it
 *      within rounding), rather than one message per tensor.
 * With a loss that is the mean over the shard and shards of equal size, the
 * averaged gradient is the gradient of the mean over the whole batch.
 *
 * A parameter whose grad slot is empty on every rank gets no gradient (the
 * optimizer leaves it alone, as in one process); one whose slot is empty on
 * some ranks only counts as zero there. Every parameter travels in a bucket
 * (zeros where a rank has none), so the buckets are the same on every rank
 * without asking, and a presence mask carried in the last bucket says which
 * parameters had a gradient anywhere, at no extra collective.
 *
 * The collectives run in sessions on the helper's engine, which must be one
 * the dist module has kernels for (the CPU engine). Every rank must make the
 * same calls in the same order. A dead rank or a communication failure makes
 * the call fail on the others within the module's time limit
 * (TENFERRO_DIST_TIMEOUT seconds, default 300) with TF_ERR_EXTENSION;
 * tf_error_extension_kind() (extension.h) then names the kind (timeout,
 * comm_failure, mismatch, broken) and tf_train_error_message() says where.
 * After such a failure the process cannot communicate any more and should
 * stop.
 *
 * Threads: a helper is used by one thread at a time.
 */
#ifndef TENFERRO_DP_H
#define TENFERRO_DP_H

#include <stddef.h>

#include <tenferro/optim.h>
#include <tenferro/train.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tf_dp tf_dp;

/* PyTorch DistributedDataParallel's default bucket size. */
#define TF_DP_DEFAULT_BUCKET_BYTES ((size_t)25 << 20)

/*
 * A helper for runtime `rt` (retained) computing on `engine` (borrowed for
 * the helper's life): loads the dist module (tf_extension_load("dist")),
 * installs it into rt, and asks it for this process's rank and the number
 * of ranks (initialising MPI if the application has not). Run outside
 * mpirun it is rank 0 of 1. Errors: TF_ERR_VALIDATION (NULL), the loader's
 * (TF_ERR_PLUGIN_NOT_FOUND when the module was not built: no MPI),
 * TF_ERR_UNSUPPORTED (an engine the module has no kernels for),
 * TF_ERR_BACKEND (MPI unavailable), TF_ERR_OUT_OF_MEMORY.
 */
TF_TRAIN_API tf_status tf_dp_create(tf_runtime *rt, tf_engine *engine, tf_dp **out);

/* Releases the helper (MPI stays up until the process ends). NULL is a no-op. */
TF_TRAIN_API void tf_dp_destroy(tf_dp *dp);

TF_TRAIN_API int tf_dp_rank(const tf_dp *dp);
TF_TRAIN_API int tf_dp_size(const tf_dp *dp);

/* Sets the bucket size (>= 1 byte). Errors: TF_ERR_VALIDATION (argument "bytes"). */
TF_TRAIN_API tf_status tf_dp_set_bucket_bytes(tf_dp *dp, size_t bytes);

/*
 * Replaces every parameter of opt by rank 0's value (tf_optim_set_param).
 * All or nothing on this rank. Errors: the collectives' (see above).
 */
TF_TRAIN_API tf_status tf_dp_broadcast_params(tf_dp *dp, tf_optim *opt);

/*
 * The gradients of opt's parameters averaged over the ranks: grads[i] gets
 * a new reference (NULL where no rank had one); n == tf_optim_param_count.
 * Written only on success. Errors: TF_ERR_VALIDATION (argument "grads":
 * wrong count), the collectives'.
 */
TF_TRAIN_API tf_status tf_dp_average_grads(tf_dp *dp, const tf_optim *opt, tf_tensor **grads,
                                           size_t n);

/*
 * tf_dp_average_grads then tf_optim_step_with_grads with the averages: the
 * data-parallel step. All or nothing on this rank (a failed collective
 * changes no parameter).
 */
TF_TRAIN_API tf_status tf_dp_step(tf_dp *dp, tf_optim *opt);

/* The sum (mean != 0: the mean) of one number over the ranks, e.g. a metric. */
TF_TRAIN_API tf_status tf_dp_all_reduce_scalar(tf_dp *dp, double value, int mean, double *out);

/* How many bucket all_reduce calls the last tf_dp_average_grads made. */
TF_TRAIN_API size_t tf_dp_last_buckets(const tf_dp *dp);

#ifdef __cplusplus
}
#endif
#endif /* TENFERRO_DP_H */
