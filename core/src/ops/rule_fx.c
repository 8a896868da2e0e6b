/*
 * rule_fx.c - building reverse rules as elementwise programs (rule_fx.h):
 * inputs (eager tensors or constants), unary and binary steps, and the
 * limits of TF_PRIM_FUSED that make a program fall back.
 */
#include "rule_fx.h"

void tf__fx_init(tf_fx *fx)
{
    fx->n_in = 0;
    fx->n_steps = 0;
    fx->overflow = false;
}

static uint32_t add_input(tf_fx *fx, tf_eager *x, double v)
{
    for (uint32_t i = 0; i < fx->n_in; i++)
        if (fx->in[i] == x && (x || fx->konst[i] == v))
            return TF_FX_IN | i;
    if (fx->n_in == TF_FUSED_MAX_INPUTS) {
        fx->overflow = true;
        return TF_FX_IN;
    }
    fx->in[fx->n_in] = x;
    fx->konst[fx->n_in] = v;
    return TF_FX_IN | fx->n_in++;
}

uint32_t tf__fx_input(tf_fx *fx, tf_eager *x)
{
    return add_input(fx, x, 0.0);
}

uint32_t tf__fx_const(tf_fx *fx, double v)
{
    return add_input(fx, NULL, v);
}

static uint32_t add_step(tf_fx *fx, tf_fused_kind kind, uint32_t op, uint32_t a, uint32_t b)
{
    if (fx->n_steps == TF_FUSED_MAX_STEPS) {
        fx->overflow = true;
        return 0;
    }
    fx->steps[fx->n_steps] = (tf_fused_step){(uint32_t)kind, op, a, b};
    return fx->n_steps++;
}

uint32_t tf__fx_unary(tf_fx *fx, tf_unary_op op, uint32_t a)
{
    return add_step(fx, TF_FUSED_UNARY, (uint32_t)op, a, 0);
}

uint32_t tf__fx_binary(tf_fx *fx, tf_binary_op op, uint32_t a, uint32_t b)
{
    return add_step(fx, TF_FUSED_BINARY, (uint32_t)op, a, b);
}
