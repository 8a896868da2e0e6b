/*
 * tf_shrink.h - shrinking a failing program (the differential checker's):
 * while a predicate still holds, the output moves to an earlier result, ops
 * are bypassed (their uses read an argument of the same dtype and shape) or
 * dropped when dead, unused constants and inputs go, leaves become dense and
 * their values are rounded to one decimal.
 */
#ifndef TF_SHRINK_H
#define TF_SHRINK_H

#include "tf_prog.h"

/* Whether a candidate still fails (ctx: the caller's). */
typedef bool (*tfs_fails_fn)(const tfp_program *q, void *ctx);

/*
 * Shrinks p in place while fails() holds, trying at most `budget`
 * candidates; cfg runs p to learn its values' shapes (the reference
 * configuration of the caller).
 */
void tfs_shrink(tfp_program *p, tfs_fails_fn fails, void *ctx, const tfp_config *cfg, int budget);

#endif /* TF_SHRINK_H */
