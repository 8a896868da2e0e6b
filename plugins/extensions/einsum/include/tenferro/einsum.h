/*
 * tenferro/einsum.h - typed calls of the tenferro.einsum extension module,
 * for applications (docs/einsum.md). Inline wrappers over the public API:
 * nothing here needs linking beyond libtenferro, and the module itself is
 * loaded at run time like any other (tenferro-ext-einsum.so).
 *
 *   tf_extension_module *einsum;
 *   tf_einsum_install(rt, &einsum);           (load once, install into rt)
 *   tf_eager *ops[2] = {a, b}, *c;
 *   tf_einsum(s, "ij,jk->ik", 2, ops, &c);     (recorded; grad, jvp, ... work)
 *
 *   const tf_einsum_planner *p = tf_einsum_planner_of(einsum);
 *   tf_einsum_path *path;                     (numpy.einsum_path's answer)
 *   p->path("ij,jk,kl->il", 3, ranks, shapes, NULL, &path, &err);
 *
 * Threads: as tf_session_call (the session's thread) and
 * tf_extension_interface (any thread).
 */
#ifndef TENFERRO_EINSUM_H
#define TENFERRO_EINSUM_H

#include <tenferro/einsum_abi.h>
#include <tenferro/extension.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Loads the module (tenferro-ext-einsum.so on the plugin search path; once
 * per process) and installs it into rt (a no-op when it is installed
 * already). *module (may be NULL) gets the process-owned module. Errors:
 * those of tf_extension_load and tf_runtime_install_extension_module.
 */
static inline tf_status tf_einsum_install(tf_runtime *rt, tf_extension_module **module)
{
    tf_extension_module *m = NULL;
    tf_epoch epoch;
    tf_status st = tf_extension_load("einsum", &m);
    if (st == TF_OK)
        st = tf_runtime_install_extension_module(rt, m, &epoch);
    if (st == TF_OK && module)
        *module = m;
    return st;
}

/*
 * out = einsum(subscripts, operands[0..n-1]) with NumPy's semantics, the
 * path chosen by `options` (NULL: TF_EINSUM_AUTO, no memory limit; the
 * fields read are optimize and memory_limit) and cached in the runtime's
 * extension cache of tenferro.einsum per (subscripts, options, dtypes,
 * shapes). Operands share one dtype (f32, f64, i32 or i64). *out is a new
 * reference, written only on success; operands are borrowed. Errors:
 * TF_ERR_VALIDATION with tf_error_argument() "subscripts" and the byte
 * position in the message for a malformed expression (also "operands" for
 * their count, "optimize", "memory_limit"); TF_ERR_SHAPE_MISMATCH
 * ("operands") when the extents of an index disagree (size 1 broadcasts);
 * TF_ERR_DTYPE_MISMATCH ("operands"); TF_ERR_UNSUPPORTED when no path keeps
 * every intermediate within memory_limit and TF_MAX_RANK axes; and those of
 * tf_session_call (the module not installed: TF_ERR_VALIDATION "name").
 * Nothing is recorded on failure.
 */
static inline tf_status tf_einsum_with(tf_session *s, const char *subscripts, size_t n,
                                       tf_eager *const *operands, const tf_einsum_options *options,
                                       tf_eager **out)
{
    int64_t optimize = options ? (int64_t)options->optimize : TF_EINSUM_AUTO;
    double memory_limit = options ? options->memory_limit : 0.0;
    tf_call_arg args[4] = {TF_ARG_STRING(subscripts), TF_ARG_I64(optimize),
                           TF_ARG_F64(memory_limit), TF_ARG_TENSORS(operands, n)};
    return tf_session_call(s, TF_EINSUM_OP, args, 4, out, 1);
}

/* tf_einsum_with with the default options. */
static inline tf_status tf_einsum(tf_session *s, const char *subscripts, size_t n,
                                  tf_eager *const *operands, tf_eager **out)
{
    return tf_einsum_with(s, subscripts, n, operands, NULL, out);
}

/* The planner interface of a loaded tenferro.einsum module; NULL if it offers none. */
static inline const tf_einsum_planner *tf_einsum_planner_of(const tf_extension_module *module)
{
    return (const tf_einsum_planner *)tf_extension_interface(module, TF_EINSUM_PLANNER_V1);
}

#ifdef __cplusplus
}
#endif
#endif /* TENFERRO_EINSUM_H */
