/*
 * dist_module.c - the tenferro.dist extension module: differentiable MPI
 * collectives for data-parallel training. Its descriptor, entry symbol,
 * install hook and the shape/dtype inference of each op.
 *
 * Ops (full names "tenferro.dist.<op>"; x f32 or f64, integers where said;
 * every rank calls the same op with the same dtype and shape, in the same
 * order; the result on each rank is a new tensor):
 *   world() -> i64 [2]                 this process's rank and the number of ranks
 *   all_reduce(x, op: i64) -> y        the sum over ranks (op 0; i32, i64 too) or
 *                                      the mean (op 1), on every rank
 *   broadcast(x, root: i64) -> y       root's x on every rank (i32, i64 too)
 *   reduce(x, root: i64) -> y          the sum over ranks on root, zeros elsewhere
 *   all_gather(x [..., n]) -> [..., n p]     the ranks' x side by side along the
 *                                      last axis, rank r's at [r n, (r + 1) n)
 *   reduce_scatter(x [..., n p]) -> [..., n] rank r gets block r of the sum
 * The AD rules (dist_rules.c) are collectives too: all_reduce's adjoint is
 * all_reduce, all_gather's is reduce_scatter and back, broadcast's is reduce
 * and back. MPI and its time limits are dist_comm.c's.
 *
 * Failures are typed errors of module tenferro.dist (TF_ERR_EXTENSION):
 * timeout, comm_failure, mismatch, broken, unavailable (k_kinds below).
 */
#include <limits.h>
#include <stdio.h>

#include "dist_internal.h"

static tf_status refuse_arg(const tf_ext_rule_ctx *c, tf_status st, uint32_t arg, const char *msg)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s: %s", c->op_name, msg);
    if (TF_ABI_HAS_FIELD(c, tf_ext_rule_ctx, report_argument) && c->report_argument)
        return c->report_argument(c, st, arg, buf);
    c->host->report_error(c->host->ctx, st, buf); /* an ABI 1.0 host */
    return st;
}

static int64_t meta_numel(const tf_ext_meta *m)
{
    int64_t n = 1;
    for (uint32_t d = 0; d < m->rank; d++)
        n *= m->shape[d];
    return n;
}

/* x's dtype (floats, or integers too when `ints`) and size (one MPI message). */
static tf_status check_x(const tf_ext_rule_ctx *c, const tf_ext_meta *x, int ints)
{
    int ok = x->dtype == TF_F32 || x->dtype == TF_F64 ||
             (ints && (x->dtype == TF_I32 || x->dtype == TF_I64));
    if (!ok)
        return refuse_arg(c, TF_ERR_DTYPE_MISMATCH, 0,
                          ints ? "argument 'x' must be f32, f64, i32 or i64"
                               : "argument 'x' must be f32 or f64");
    if (meta_numel(x) > INT_MAX)
        return refuse_arg(c, TF_ERR_VALIDATION, 0,
                          "argument 'x' has more than INT_MAX elements, the most one MPI "
                          "message holds");
    return TF_OK;
}

/* check_x, then the number of ranks into *size (the ops whose shapes or roots need it). */
static tf_status check_world(const tf_ext_rule_ctx *c, const tf_ext_meta *x, int *size)
{
    int rank;
    tf_status st = check_x(c, x, 1);
    return st ? st : dist_world(c->host, &rank, size);
}

static tf_status infer_world(const tf_ext_rule_ctx *c, const tf_ext_meta *t, uint32_t nt,
                             const tf_ext_scalar *s, uint32_t ns, tf_ext_meta *out)
{
    (void)c, (void)t, (void)nt, (void)s, (void)ns;
    out[0].dtype = TF_I64;
    out[0].rank = 1;
    out[0].shape[0] = 2;
    return TF_OK;
}

static tf_status infer_all_reduce(const tf_ext_rule_ctx *c, const tf_ext_meta *t, uint32_t nt,
                                  const tf_ext_scalar *s, uint32_t ns, tf_ext_meta *out)
{
    (void)nt, (void)ns;
    if (s[0].i != DIST_SUM && s[0].i != DIST_MEAN)
        return refuse_arg(c, TF_ERR_VALIDATION, 1, "argument 'op' must be 0 (sum) or 1 (mean)");
    tf_status st = check_x(c, &t[0], s[0].i == DIST_SUM);
    if (st)
        return st;
    out[0] = t[0];
    return TF_OK;
}

/* broadcast and reduce: root must be a rank. */
static tf_status infer_rooted(const tf_ext_rule_ctx *c, const tf_ext_meta *t, uint32_t nt,
                              const tf_ext_scalar *s, uint32_t ns, tf_ext_meta *out)
{
    (void)nt, (void)ns;
    int size;
    tf_status st = check_world(c, &t[0], &size);
    if (st)
        return st;
    if (s[0].i < 0 || s[0].i >= size) {
        char msg[96];
        snprintf(msg, sizeof msg, "argument 'root' is %lld, not a rank of 0..%d",
                 (long long)s[0].i, size - 1);
        return refuse_arg(c, TF_ERR_VALIDATION, 1, msg);
    }
    out[0] = t[0];
    return TF_OK;
}

static tf_status infer_all_gather(const tf_ext_rule_ctx *c, const tf_ext_meta *t, uint32_t nt,
                                  const tf_ext_scalar *s, uint32_t ns, tf_ext_meta *out)
{
    (void)nt, (void)s, (void)ns;
    int size;
    tf_status st = check_world(c, &t[0], &size);
    if (!st && t[0].rank == 0)
        st = refuse_arg(c, TF_ERR_SHAPE_MISMATCH, 0,
                        "argument 'x' must have an axis to gather along (reshape a scalar to [1])");
    if (st)
        return st;
    if (meta_numel(&t[0]) > INT64_MAX / size)
        return refuse_arg(c, TF_ERR_VALIDATION, 0, "the gathered tensor is too large");
    out[0] = t[0];
    out[0].shape[t[0].rank - 1] *= size;
    return TF_OK;
}

static tf_status infer_reduce_scatter(const tf_ext_rule_ctx *c, const tf_ext_meta *t, uint32_t nt,
                                      const tf_ext_scalar *s, uint32_t ns, tf_ext_meta *out)
{
    (void)nt, (void)s, (void)ns;
    int size;
    tf_status st = check_world(c, &t[0], &size);
    if (st)
        return st;
    if (t[0].rank == 0 || t[0].shape[t[0].rank - 1] % size != 0) {
        char msg[128];
        snprintf(msg, sizeof msg,
                 "argument 'x' must have a last axis whose extent is a multiple of the %d ranks",
                 size);
        return refuse_arg(c, TF_ERR_SHAPE_MISMATCH, 0, msg);
    }
    out[0] = t[0];
    out[0].shape[t[0].rank - 1] /= size;
    return TF_OK;
}

static const uint32_t k_x[] = {TF_EXT_ARG_TENSOR};
static const uint32_t k_xi[] = {TF_EXT_ARG_TENSOR, TF_EXT_ARG_I64};
static const char *const n_x[] = {"x"};
static const char *const n_xop[] = {"x", "op"};
static const char *const n_xroot[] = {"x", "root"};

#define KERNELS_(fn) \
    static const tf_ext_kernel k_##fn[] = {{"cpu", TF_EXT_KERNEL_FN(dist_##fn##_cpu)}}
KERNELS_(world);
KERNELS_(all_reduce);
KERNELS_(broadcast);
KERNELS_(reduce);
KERNELS_(all_gather);
KERNELS_(reduce_scatter);

#define OP_(nm, nargs, kinds, names, inf, v, j, text)                                         \
    {.struct_size = sizeof(tf_ext_op), .n_args = nargs, .n_outputs = 1, .n_kernels = 1,        \
     .name = #nm, .arg_kinds = kinds, .arg_names = names, .infer = inf, .kernels = k_##nm,       \
     .vjp = v, .jvp = j, .doc = text}

static const tf_ext_op k_ops[] = {
    OP_(world, 0, NULL, NULL, infer_world, NULL, NULL,
        "[rank, size]: this process's rank and the number of ranks (i64)"),
    OP_(all_reduce, 2, k_xi, n_xop, infer_all_reduce, dist_all_reduce_vjp, dist_all_reduce_jvp,
        "the sum (op 0) or mean (op 1) of x over the ranks, on every rank"),
    OP_(broadcast, 2, k_xi, n_xroot, infer_rooted, dist_broadcast_vjp, dist_broadcast_jvp,
        "root's x on every rank"),
    OP_(reduce, 2, k_xi, n_xroot, infer_rooted, dist_reduce_vjp, dist_reduce_jvp,
        "the sum of x over the ranks on root, zeros on the others"),
    OP_(all_gather, 1, k_x, n_x, infer_all_gather, dist_all_gather_vjp, dist_all_gather_jvp,
        "the ranks' x side by side along the last axis"),
    OP_(reduce_scatter, 1, k_x, n_x, infer_reduce_scatter, dist_reduce_scatter_vjp,
        dist_reduce_scatter_jvp, "block r (of the last axis) of the sum of x, on rank r"),
};

static tf_status install(const tf_host_api *host, const tf_ext_registrar *reg)
{
    (void)host;
    for (size_t i = 0; i < sizeof k_ops / sizeof k_ops[0]; i++) {
        tf_status st = reg->add_op(reg->candidate, &k_ops[i]);
        if (st)
            return st;
    }
    return TF_OK;
}

/* The typed errors of the kernels (extension_abi.h "Typed errors"). */
static const tf_ext_error_kind k_kinds[] = {
    {"timeout", "a collective did not complete in time (another rank may have failed)"},
    {"comm_failure", "MPI reported a communication failure"},
    {"mismatch", "the ranks did not call the same collective with the same shape"},
    {"broken", "an earlier collective failed, so this process can no longer communicate"},
    {"unavailable", "MPI could not be initialised"},
};

static const tf_extension_module_desc k_desc = {
    .struct_size = sizeof(tf_extension_module_desc),
    .abi_major = TF_EXTENSION_ABI_MAJOR,
    .abi_minor = TF_EXTENSION_ABI_MINOR,
    .id = DIST_ID,
    .version = "0.1.0",
    .description = "differentiable MPI collectives: all_reduce, broadcast, reduce, all_gather, "
                   "reduce_scatter",
    .install = install,
    .error_kinds = k_kinds,
    .n_error_kinds = sizeof k_kinds / sizeof k_kinds[0],
};

TF_EXTENSION_EXPORT const tf_extension_module_desc *
tf_extension_module_v1(const tf_host_api *host, uint32_t abi_major, uint32_t abi_minor);

TF_EXTENSION_EXPORT const tf_extension_module_desc *
tf_extension_module_v1(const tf_host_api *host, uint32_t abi_major, uint32_t abi_minor)
{
    (void)abi_minor;
    if (abi_major != TF_EXTENSION_ABI_MAJOR || !host)
        return NULL;
    return &k_desc;
}
