/*
 * fused_sum.c - a reverse rule's elementwise program (rule_fx.h) run with
 * the sum into its input's running cotangent: one TF_PRIM_FUSED call,
 * written over the running sum where that is private (docs/runtime.md,
 * "Writing in place"), or through the session's deferral, where the program
 * joins the batch of the rules around it.
 */
#include <string.h>

#include "autodiff_internal.h"

/* Steps 0 .. result resolved (the program ends at its result: a step reads
   only earlier ones, so any after it are not needed). */
static uint32_t resolve(const tf_fx *fx, uint32_t result, uint32_t n_in, tf_fused_step *out)
{
    tf__lazy_resolve(fx->steps, result + 1, n_in, out);
    return result + 1;
}

/*
 * The program's input tensors: each input's value, and each constant as a
 * rank-0 tensor of the session's engine broadcast to `like`'s shape. New
 * references in in[] (and the constants' eager tensors in keep[]).
 */
static tf_status gather_inputs(tf_session *s, const tf_fx *fx, const tf_eager *like, tf_tensor **in,
                               tf_eager **keep)
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
    bool with_acc =
        *acc != NULL && fx->n_in < TF_FUSED_MAX_INPUTS && result + 1 < TF_FUSED_MAX_STEPS;
    uint32_t n_in = fx->n_in + (with_acc ? 1 : 0);
    bool fused = (with_acc || !*acc) && !tf__lazy_defers(&s->lazy, like->value) &&
                 tf__engine_fuses(s->engine, like->value->dtype, n_in, 1);
    if (!fused) {
        with_acc = false;
        n_in = fx->n_in;
    }
    tf_fused_step steps[TF_FUSED_MAX_STEPS];
    tf_fused_params p = {sizeof p, resolve(fx, result, n_in, steps), steps, 0, NULL, 0, NULL, 0, 0};
    tf_tensor *in[TF_FUSED_MAX_INPUTS] = {NULL};
    tf_eager *keep[TF_FUSED_MAX_INPUTS] = {NULL};
    int alias = -1;
    tf_tensor *out = NULL;
    tf_status st = gather_inputs(s, fx, like, in, keep);
    if (!st && !fused) {
        st = run_as_ops(s, &p, n_in, in, like, acc);
    } else if (!st && with_acc) {
        uint32_t a = fx->n_in;                                  /* acc's register */
        bool private_sum = tf__can_add_in_place(s, *acc, like); /* before any retain */
        in[a] = (*acc)->value;
        tf_tensor_retain(in[a]);
        steps[p.n_steps] = (tf_fused_step){TF_FUSED_BINARY, TF_BINARY_ADD, n_in + p.n_steps - 1, a};
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
        st = tf__lazy_run_step(s->engine, &steps[0], in, NULL, out);
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
