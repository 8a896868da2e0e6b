/*
 * autodiff_internal.h - automatic differentiation (core/src/autodiff): the
 * graph walk and its fingerprint, prepared derivative programs, backward,
 * grad, vjp and jvp, and the reverse rules' fused programs summed into the
 * running cotangents. Uses every layer up to the ops.
 */
#ifndef TF_AUTODIFF_INTERNAL_H
#define TF_AUTODIFF_INTERNAL_H

#include "rule_fx.h"

/*
 * Adds the value of `result` into *acc (*acc NULL: *acc becomes it), as
 * tf__accumulate does, with one FUSED call: the program's inputs other than
 * constants all have the shape and dtype of `like` (the result's
 * cotangent, which has those of the tensor whose cotangent *acc is). A
 * result that is an input as it is goes through tf__accumulate.
 */
tf_status tf__fx_accumulate(tf_session *s, tf_fx *fx, uint32_t result, const tf_eager *like,
                            tf_eager **acc);

#endif /* TF_AUTODIFF_INTERNAL_H */
