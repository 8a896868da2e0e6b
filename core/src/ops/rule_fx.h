/*
 * rule_fx.h - elementwise programs for reverse rules (autodiff fusion).
 *
 * The derivative of an elementwise op is an elementwise expression of the
 * output's cotangent, the op's inputs and its output: tanh's is
 * cot * (1 - out * out). Written with session ops it makes a pass over memory
 * and a new array per operation, and the sum into the input's running
 * cotangent makes another. A rule that can say its result as a tf_fx program
 * (the rule's vjp_fx) lets backward run the whole of it, the sum included, as
 * one TF_PRIM_FUSED call, written in place over the running sum when that is
 * private. Backward does so only when nothing is recorded (no create_graph:
 * the program has no rule of its own) and the engine runs FUSED for the
 * dtype; otherwise the rule's ordinary vjp runs. Where the derivative's
 * session defers chains (defer.c; the engine asks for it), the program's
 * steps and the sum join its batch instead, with the steps of the rules
 * before and after it, so a chain of rules is one FUSED call.
 *
 * Building (rule_fx.c): tf__fx_input / tf__fx_const / tf__fx_unary /
 * tf__fx_binary return a reference (an input or a step); a program that
 * outgrows the ABI's limits is marked `overflow` and the caller falls back.
 * Running it with the sum is autodiff's (tf__fx_accumulate).
 */
#ifndef TF_RULE_FX_H
#define TF_RULE_FX_H

#include "ops_internal.h"

/* References are lazy.h's: an input (TF_FX_IN | index) or a step (its index);
   a vjp_fx result of TF_FX_NONE gives its input no contribution. */

typedef struct tf_fx {
    uint32_t n_in, n_steps;
    tf_eager *in[TF_FUSED_MAX_INPUTS];       /* borrowed; NULL for a constant */
    double konst[TF_FUSED_MAX_INPUTS];       /* the value of a constant input */
    tf_fused_step steps[TF_FUSED_MAX_STEPS]; /* a and b are references while building */
    bool overflow;
} tf_fx;

void tf__fx_init(tf_fx *fx);
/* x as an input (once, however often it is used). */
uint32_t tf__fx_input(tf_fx *fx, tf_eager *x);
/* A scalar of the program's dtype, broadcast. */
uint32_t tf__fx_const(tf_fx *fx, double v);
uint32_t tf__fx_unary(tf_fx *fx, tf_unary_op op, uint32_t a);
uint32_t tf__fx_binary(tf_fx *fx, tf_binary_op op, uint32_t a, uint32_t b);

#endif /* TF_RULE_FX_H */
