/*
 * dist_internal.h - shared declarations of the tenferro.dist module: the
 * process's MPI connection and its bounded collectives (dist_comm.c), the
 * kernels (dist_kernels.c), the AD rules (dist_rules.c) and the module
 * descriptor with the ops' inference (dist_module.c).
 *
 * Conventions: all_gather concatenates the ranks' tensors along the last
 * axis (rank r's block is elements [r n, (r + 1) n) of that axis, which is
 * one contiguous block of column-major memory), reduce_scatter sums and
 * gives rank r that block. Root arguments are ranks of MPI_COMM_WORLD.
 */
#ifndef TF_DIST_INTERNAL_H
#define TF_DIST_INTERNAL_H

#include <tenferro/extension_abi.h>

#define DIST_ID "tenferro.dist"

/* all_reduce's `op` argument. */
enum { DIST_SUM = 0, DIST_MEAN = 1 };

/* The collectives, also the first word of every signature the ranks compare. */
typedef enum dist_kind {
    DIST_ALL_REDUCE = 1,
    DIST_BROADCAST = 2,
    DIST_REDUCE = 3,
    DIST_ALL_GATHER = 4,
    DIST_REDUCE_SCATTER = 5
} dist_kind;

/*
 * This process's rank and the number of ranks, initialising MPI on first
 * use (see dist_comm.c). On failure reports through host->report_error and
 * returns TF_ERR_BACKEND; every later call fails the same way.
 */
tf_status dist_world(const tf_host_api *host, int *rank, int *size);

/*
 * Runs one collective on dense host buffers: `send` and `recv` of `count`
 * elements each of dtype (recv of count * size for all_gather, count / size
 * for reduce_scatter; `arg` is the root or the reduction), within the
 * module's time limit. Failures are typed errors of the module reported
 * through ctx (timeout, comm_failure, mismatch, broken, unavailable).
 */
tf_status dist_collective(const tf_ext_kernel_ctx *ctx, dist_kind kind, uint32_t dtype,
                          int64_t arg, const void *send, void *recv, int64_t count);

/* Kernels (typed C signatures, called through libffi by the host). */
tf_status dist_world_cpu(const tf_ext_kernel_ctx *k, const tf_operand *out);
tf_status dist_all_reduce_cpu(const tf_ext_kernel_ctx *k, const tf_operand *x, int64_t op,
                              const tf_operand *y);
tf_status dist_broadcast_cpu(const tf_ext_kernel_ctx *k, const tf_operand *x, int64_t root,
                             const tf_operand *y);
tf_status dist_reduce_cpu(const tf_ext_kernel_ctx *k, const tf_operand *x, int64_t root,
                          const tf_operand *y);
tf_status dist_all_gather_cpu(const tf_ext_kernel_ctx *k, const tf_operand *x,
                              const tf_operand *y);
tf_status dist_reduce_scatter_cpu(const tf_ext_kernel_ctx *k, const tf_operand *x,
                                  const tf_operand *y);

/* AD rules: each collective's derivative is a collective (dist_rules.c). */
tf_status dist_all_reduce_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                              tf_ext_tensor *cot, const int *need, tf_ext_tensor **cin);
tf_status dist_all_reduce_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                              tf_ext_tensor *const *tan, tf_ext_tensor **tout);
tf_status dist_broadcast_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                             tf_ext_tensor *cot, const int *need, tf_ext_tensor **cin);
tf_status dist_broadcast_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                             tf_ext_tensor *const *tan, tf_ext_tensor **tout);
tf_status dist_reduce_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                          const int *need, tf_ext_tensor **cin);
tf_status dist_reduce_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                          tf_ext_tensor *const *tan, tf_ext_tensor **tout);
tf_status dist_all_gather_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                              tf_ext_tensor *cot, const int *need, tf_ext_tensor **cin);
tf_status dist_all_gather_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                              tf_ext_tensor *const *tan, tf_ext_tensor **tout);
tf_status dist_reduce_scatter_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                                  tf_ext_tensor *cot, const int *need, tf_ext_tensor **cin);
tf_status dist_reduce_scatter_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                                  tf_ext_tensor *const *tan, tf_ext_tensor **tout);

#endif /* TF_DIST_INTERNAL_H */
