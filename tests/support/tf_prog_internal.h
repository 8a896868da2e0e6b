/*
 * tf_prog_internal.h - what the runner's files (tf_prog_run.c, tf_prog_ops.c)
 * share beside tf_prog.h.
 */
#ifndef TF_PROG_INTERNAL_H
#define TF_PROG_INTERNAL_H

#include "tf_prog.h"

/* d as an untracked constant of the run (f64/c128 data at the run's dtype,
   i64 and bool as they are), laid out as `layout` says. */
tf_status tfp__constant(tfp_run *r, const tfp_data *d, tfp_layout layout, tf_eager **out);

/* Issues op with argument values a[] through r's session. */
tf_status tfp__dispatch(tfp_run *r, const tfp_op *op, tf_eager *const *a, tf_eager **out);

#endif /* TF_PROG_INTERNAL_H */
