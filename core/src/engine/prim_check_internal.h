/*
 * prim_check_internal.h - what prim_check.c shares with prim_check_fused.c:
 * a call being checked and the checks both use.
 */
#ifndef TF_PRIM_CHECK_INTERNAL_H
#define TF_PRIM_CHECK_INTERNAL_H

#include "engine_internal.h"

typedef struct call {
    tf_prim prim;
    const char *name;
    const void *params;
    size_t n_in, n_out;
    tf_tensor *const *in;
    tf_tensor *const *out;
} call;

/* Fails the call with status st, naming argument arg. */
tf_status tf__pc_fail(const call *c, tf_status st, const char *arg, const char *fmt, ...)
    TF_PRINTF(4, 5);
/* A params struct of at least `size` bytes. */
tf_status tf__pc_check_params(const call *c, size_t size);
tf_status tf__pc_need_shape(const call *c, const char *arg, const tf_tensor *t,
                            const tf_tensor *ref);
tf_status tf__pc_need_dtype(const call *c, const char *arg, const tf_tensor *t, tf_dtype want);
/* Same dtype and shape for out[0] and every input from `first`, and every further output. */
tf_status tf__pc_elementwise_like(const call *c, size_t first, bool same_dtype);
/* Whether a UNARY / BINARY op is defined for dtype dt. */
bool tf__pc_unary_defined(uint32_t op, tf_dtype dt);
bool tf__pc_binary_defined(uint32_t op, tf_dtype dt);

/* ---- prim_check_fused.c ---- */

tf_status tf__pc_check_fused(const call *c);
/* The op supports() is asked with for a FUSED call's params (checked). */
uint32_t tf__pc_fused_op(const tf_fused_params *p);

#endif /* TF_PRIM_CHECK_INTERNAL_H */
