/*
 * fused.h - elementwise programs for reverse rules (autodiff fusion).
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
 * Building: tf__fx_input / tf__fx_const / tf__fx_unary / tf__fx_binary return
 * a reference (an input or a step); a program that outgrows the ABI's limits
 * is marked `overflow` and the caller falls back.
 */
#ifndef TF_FUSED_H
#define TF_FUSED_H

#include "eager_internal.h"

/* A reference: an input (TF_FX_IN | index) or a step (its index). */
#define TF_FX_IN 0x80000000u
/* A vjp_fx result: this input gets no contribution. */
#define TF_FX_NONE 0xffffffffu

typedef struct tf_fx {
    uint32_t n_in, n_steps;
    tf_eager *in[TF_FUSED_MAX_INPUTS]; /* borrowed; NULL for a constant */
    double konst[TF_FUSED_MAX_INPUTS]; /* the value of a constant input */
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

/* Resolves n steps built with references into registers (inputs 0 .. n_in-1,
   step k n_in + k), as TF_PRIM_FUSED reads them. */
void tf__fx_resolve(const tf_fused_step *steps, uint32_t n, uint32_t n_in, tf_fused_step *out);
/* One resolved step as its own UNARY or BINARY call on e, reading regs[]. */
tf_status tf__fx_run_step(tf_engine *e, const tf_fused_step *step, tf_tensor *const *regs,
                          tf_tensor *out);
/*
 * n resolved steps, one primitive call each, over the n_in tensors in[]: step
 * k writes dst[k], or, where dst[k] is NULL, a new dense tensor of dtype and
 * shape that it puts there (the caller releases those, also on failure).
 * Stops at the first failure.
 */
tf_status tf__fx_run_steps(tf_engine *e, const tf_fused_step *steps, uint32_t n, uint32_t n_in,
                           tf_tensor *const *in, tf_dtype dtype, uint32_t rank,
                           const int64_t *shape, tf_tensor **dst);

/*
 * Adds the value of `result` into *acc (*acc NULL: *acc becomes it), as
 * tf__accumulate does, with one FUSED call: the program's inputs other than
 * constants all have the shape and dtype of `like` (the result's
 * cotangent, which has those of the tensor whose cotangent *acc is). A
 * result that is an input as it is goes through tf__accumulate.
 */
tf_status tf__fx_accumulate(tf_session *s, tf_fx *fx, uint32_t result, const tf_eager *like,
                            tf_eager **acc);

#endif /* TF_FUSED_H */
