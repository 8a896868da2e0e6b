/*
 * fused.c - elementwise programs for reverse rules: building them and running
 * one, with the sum into a running cotangent, as a single TF_PRIM_FUSED call.
 * See fused.h.
 */
#include <string.h>

#include "fused.h"
#include "internal.h"

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

void tf__fx_resolve(const tf_fused_step *steps, uint32_t n, uint32_t n_in, tf_fused_step *out)
{
    for (uint32_t k = 0; k < n; k++) {
        const tf_fused_step *st = &steps[k];
        uint32_t a = st->a & TF_FX_IN ? st->a & ~TF_FX_IN : n_in + st->a;
        uint32_t b = st->b & TF_FX_IN ? st->b & ~TF_FX_IN : n_in + st->b;
        out[k] = (tf_fused_step){st->kind, st->op, a, st->kind == TF_FUSED_BINARY ? b : 0};
    }
}

tf_status tf__fx_run_step(tf_engine *e, const tf_fused_step *step, tf_tensor *const *regs,
                          tf_tensor *out)
{
    tf_unary_params up = {sizeof up, step->op};
    tf_binary_params bp = {sizeof bp, step->op};
    tf_tensor *args[2] = {regs[step->a], regs[step->b]};
    bool unary = step->kind == TF_FUSED_UNARY;
    return tf_engine_execute(e, unary ? TF_PRIM_UNARY : TF_PRIM_BINARY,
                             unary ? (const void *)&up : (const void *)&bp, unary ? 1 : 2, args,
                             1, &out);
}

/* Steps 0 .. result resolved (the program ends at its result: a step reads
   only earlier ones, so any after it are not needed). */
static uint32_t resolve(const tf_fx *fx, uint32_t result, uint32_t n_in, tf_fused_step *out)
{
    tf__fx_resolve(fx->steps, result + 1, n_in, out);
    return result + 1;
}

/*
 * The program's input tensors: each input's value, and each constant as a
 * rank-0 tensor of the session's engine broadcast to `like`'s shape. New
 * references in in[] (and the constants' eager tensors in keep[]).
 */
static tf_status gather_inputs(tf_session *s, const tf_fx *fx, const tf_eager *like,
                               tf_tensor **in, tf_eager **keep)
{
    const tf_tensor *lv = like->value;
    for (uint32_t i = 0; i < fx->n_in; i++) {
        tf_tensor *v = NULL;
        tf_status st;
        if (fx->in[i]) {
            v = fx->in[i]->value;
            tf_tensor_retain(v);
            st = TF_OK;
        } else {
            st = tf__scalar_like(s, like, fx->konst[i], &keep[i]);
            if (!st)
                st = tf__broadcast_view(keep[i]->value, lv->rank, lv->shape, &v);
        }
        in[i] = v;
        if (st)
            return st;
    }
    return TF_OK;
}

tf_status tf__fx_run_steps(tf_engine *e, const tf_fused_step *steps, uint32_t n, uint32_t n_in,
                           tf_tensor *const *in, tf_dtype dtype, uint32_t rank,
                           const int64_t *shape, tf_tensor **dst)
{
    tf_tensor *r[TF_FUSED_MAX_INPUTS + TF_FUSED_MAX_STEPS];
    tf_status st = TF_OK;
    for (uint32_t i = 0; i < n_in; i++)
        r[i] = in[i];
    for (uint32_t k = 0; k < n && !st; k++) {
        if (!dst[k])
            st = tf_tensor_empty(e, dtype, rank, shape, &dst[k]);
        if (!st)
            st = tf__fx_run_step(e, &steps[k], r, dst[k]);
        r[n_in + k] = dst[k];
    }
    return st;
}

/*
 * The program into a new tensor through the session's deferral (lazy.h):
 * it joins the session's batch, with the steps of the rules before and after
 * it, where the session defers results of its size (its inner steps then
 * have no tensors at all), and otherwise runs as one FUSED call (one
 * primitive per step on an engine without FUSED for it); the result is
 * summed into *acc by tf__accumulate_take.
 */
static tf_status run_as_ops(tf_session *s, const tf_fused_params *p, uint32_t n_in,
                            tf_tensor *const *in, const tf_eager *like, tf_eager **acc)
{
    const tf_tensor *lv = like->value;
    tf_tensor *out = NULL;
    tf_status st = tf__empty(s, lv->dtype, lv->rank, lv->shape, &out);
    if (!st)
        st = tf__lazy_program(&s->lazy, p->steps, p->n_steps, n_in, in, out);
    if (st) {
        tf_tensor_release(out);
        return st;
    }
    tf_eager *v = tf__eager_new(s->rt, out, false);
    tf_tensor_release(out);
    return v ? tf__accumulate_take(s, acc, v) : TF_ERR_OUT_OF_MEMORY;
}

tf_status tf__fx_accumulate(tf_session *s, tf_fx *fx, uint32_t result, const tf_eager *like,
                            tf_eager **acc)
{
    if (result & TF_FX_IN) { /* a cotangent passed on as it is: nothing to compute */
        tf_eager *x = fx->in[result & ~TF_FX_IN];
        if (!x)
            return tf__error(TF_ERR_RUNTIME_STATE, "autodiff", NULL,
                             "a fused reverse rule gave a bare constant");
        return tf__accumulate(s, acc, x); /* borrowed: the rule may pass x on twice */
    }
    /* acc is summed in by the program itself when there is room for it */
    bool with_acc = *acc != NULL && fx->n_in < TF_FUSED_MAX_INPUTS &&
                    result + 1 < TF_FUSED_MAX_STEPS;
    uint32_t n_in = fx->n_in + (with_acc ? 1 : 0);
    bool fused = (with_acc || !*acc) && !tf__lazy_defers(&s->lazy, like->value) &&
                 tf__engine_fuses(s->engine, like->value->dtype, n_in, 1);
    if (!fused) {
        with_acc = false;
        n_in = fx->n_in;
    }
    tf_fused_step steps[TF_FUSED_MAX_STEPS];
    tf_fused_params p = {sizeof p, resolve(fx, result, n_in, steps), steps, 0, NULL};
    tf_tensor *in[TF_FUSED_MAX_INPUTS] = {NULL};
    tf_eager *keep[TF_FUSED_MAX_INPUTS] = {NULL};
    int alias = -1;
    tf_tensor *out = NULL;
    tf_status st = gather_inputs(s, fx, like, in, keep);
    if (!st && !fused) {
        st = run_as_ops(s, &p, n_in, in, like, acc);
    } else if (!st && with_acc) {
        uint32_t a = fx->n_in; /* acc's register */
        bool private_sum = tf__can_add_in_place(s, *acc, like); /* before any retain */
        in[a] = (*acc)->value;
        tf_tensor_retain(in[a]);
        steps[p.n_steps] =
            (tf_fused_step){TF_FUSED_BINARY, TF_BINARY_ADD, n_in + p.n_steps - 1, a};
        p.n_steps++;
        if (private_sum) { /* written over acc's own memory */
            alias = (int)a;
            out = in[a];
            tf_tensor_retain(out);
        }
    }
    if (!st && fused && !out) {
        const tf_tensor *lv = like->value;
        st = tf__empty(s, lv->dtype, lv->rank, lv->shape, &out);
    }
    if (!st && fused && p.n_steps == 1) {
        /* one step: the primitive itself, which costs an engine less to check and run */
        st = tf__fx_run_step(s->engine, &steps[0], in, out);
    } else if (!st && fused) {
        st = tf__engine_execute_fused(s->engine, &p, n_in, in, 1, &out, alias);
    }
    if (!st && fused && alias < 0) {
        tf_eager *sum = tf__eager_new(s->rt, out, false);
        if (!sum) {
            st = TF_ERR_OUT_OF_MEMORY;
        } else {
            tf_eager_release(*acc);
            *acc = sum;
        }
    }
    tf_tensor_release(out);
    for (uint32_t i = 0; i < n_in; i++)
        tf_tensor_release(in[i]);
    for (uint32_t i = 0; i < fx->n_in; i++)
        tf_eager_release(keep[i]);
    return st;
}
