/*
 * optim_step.c - the step of an optimizer (optim.h) and the functions that
 * read and replace its parameters and state.
 *
 * A step issues every update in one session that defers elementwise ops
 * (TF_DEFER_ALWAYS) under a no-grad scope, each update's batch closed (run)
 * before the next one's ops, then synchronises the engine,
 * which runs the open batches and reports their failures, then makes the new
 * variables, and publishes only when all of that succeeded.
 */
#include <string.h>

#include <tenferro/ops.h>

#include "optim_internal.h"

tf_status tt_check_like(const tf_tensor *p, const tf_tensor *t, const char *fn,
                            const char *arg, size_t index)
{
    if (tf_tensor_dtype(t) != tf_tensor_dtype(p))
        return tt_fail(TF_ERR_DTYPE_MISMATCH, arg, "%s: %s for parameter %zu is %s, not %s", fn,
                       arg, index, tf_dtype_name(tf_tensor_dtype(t)),
                       tf_dtype_name(tf_tensor_dtype(p)));
    size_t rank = tf_tensor_rank(p);
    if (tf_tensor_rank(t) != rank ||
        (rank && memcmp(tf_tensor_shape(t), tf_tensor_shape(p), rank * sizeof(int64_t)) != 0))
        return tt_fail(TF_ERR_SHAPE_MISMATCH, arg,
                       "%s: %s for parameter %zu has another shape than the parameter", fn, arg,
                       index);
    return TF_OK;
}

/* ---- state ---- */

static tf_status check_index(const tf_optim *opt, size_t index, const char *fn)
{
    if (!opt)
        return tt_fail(TF_ERR_VALIDATION, "opt", "%s: NULL optimizer", fn);
    if (index >= opt->n_params)
        return tt_fail(TF_ERR_VALIDATION, "index", "%s: parameter %zu of %zu", fn, index,
                       opt->n_params);
    return TF_OK;
}

TF_TRAIN_API tf_status tf_optim_state(const tf_optim *opt, size_t index, const char *name,
                                      tf_tensor **out)
{
    tf_status st = check_index(opt, index, "optim_state");
    if (st)
        return st;
    if (!name || !out)
        return tt_fail(TF_ERR_VALIDATION, !name ? "name" : "out", "optim_state: NULL argument");
    const char *const *names;
    size_t n = tf_optim_state_names(opt->kind, &names);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(names[i], name) == 0) {
            tf_tensor *t = opt->params[index].state[i];
            tf_tensor_retain(t);
            *out = t;
            return TF_OK;
        }
    }
    return tt_fail(TF_ERR_VALIDATION, "name", "optim_state: this optimizer keeps no '%s'", name);
}

TF_TRAIN_API tf_status tf_optim_set_param(tf_optim *opt, size_t index, tf_tensor *value)
{
    tf_status st = check_index(opt, index, "optim_set_param");
    if (st)
        return st;
    if (!value)
        return tt_fail(TF_ERR_VALIDATION, "value", "optim_set_param: NULL value");
    tt_param *p = &opt->params[index];
    if ((st = tt_check_like(tf_eager_value(p->var), value, "optim_set_param", "value", index)))
        return st;
    tf_eager *var = NULL;
    if ((st = tf_runtime_variable_from(opt->rt, value, &var)))
        return tt_fail_core(st, "optim_set_param");
    tf_eager_release(p->var);
    p->var = var;
    return TF_OK;
}

static tf_status check_state(const tf_optim *opt, size_t index, uint64_t steps,
                             tf_tensor *const *state, size_t n_state)
{
    size_t n = tf_optim_state_names(opt->kind, NULL), present = 0;
    if (n_state != n || (!state && n_state))
        return tt_fail(TF_ERR_VALIDATION, "state",
                       "optim_set_state: this optimizer keeps %zu state tensors per parameter, "
                       "got %zu",
                       n, n_state);
    for (size_t i = 0; i < n; i++) {
        if (!state[i])
            continue;
        present++;
        tf_status st =
            tt_check_like(tf_eager_value(opt->params[index].var), state[i], "optim_set_state",
                       "state", index);
        if (st)
            return st;
    }
    if (present != 0 && present != n)
        return tt_fail(TF_ERR_VALIDATION, "state",
                       "optim_set_state: either every state tensor or none");
    if (opt->kind != TF_OPTIM_SGD && (present != 0) != (steps != 0))
        return tt_fail(TF_ERR_VALIDATION, "state",
                       "optim_set_state: Adam's moments exist exactly after a first step "
                       "(steps %llu, %s moments)",
                       (unsigned long long)steps, present ? "with" : "without");
    return TF_OK;
}

TF_TRAIN_API tf_status tf_optim_set_state(tf_optim *opt, size_t index, uint64_t steps,
                                          tf_tensor *const *state, size_t n_state)
{
    tf_status st = check_index(opt, index, "optim_set_state");
    if (!st)
        st = check_state(opt, index, steps, state, n_state);
    if (st)
        return st;
    tt_param *p = &opt->params[index];
    for (size_t i = 0; i < n_state; i++) {
        tf_tensor_retain(state[i]);
        tf_tensor_release(p->state[i]);
        p->state[i] = state[i];
    }
    p->steps = steps;
    return TF_OK;
}

/* ---- the step ---- */

/* One step's work: the session, its constants and each parameter's update. */
typedef struct step {
    tf_optim *opt;
    tf_engine *engine;
    tf_session *s;
    tt_consts consts;
    tt_update *u;          /* per parameter; u[i].g == NULL: not updated */
    tf_eager **var;        /* the new variables */
} step;

static tf_status check_grads(const tf_optim *opt, tf_tensor *const *grads)
{
    for (size_t i = 0; i < opt->n_params; i++) {
        if (!grads[i])
            continue;
        tf_status st = tt_check_like(tf_eager_value(opt->params[i].var), grads[i],
                                  "optim_step", "grads", i);
        if (st)
            return st;
    }
    return TF_OK;
}

/* Imports the gradients and the state as eager constants of the step. */
static tf_status step_inputs(step *w, tf_tensor *const *grads)
{
    tf_optim *opt = w->opt;
    size_t n_state = tf_optim_state_names(opt->kind, NULL);
    for (size_t i = 0; i < opt->n_params; i++) {
        tt_param *p = &opt->params[i];
        tt_update *u = &w->u[i];
        if (!grads[i])
            continue;
        u->o = &opt->groups[p->group];
        u->t = p->steps + 1;
        u->p = p->var;
        tf_status st = tf_runtime_constant_from(opt->rt, grads[i], &u->g);
        for (size_t k = 0; k < n_state && !st; k++)
            if (p->state[k])
                st = tf_runtime_constant_from(opt->rt, p->state[k], &u->state[k]);
        if (st)
            return tt_fail_core(st, "optim_step: importing parameter %zu's gradient", i);
    }
    return TF_OK;
}

static tf_status step_run(step *w)
{
    tf_optim *opt = w->opt;
    tf_scope guard;
    tf_status st = tf_scope_begin_no_grad(opt->rt, &guard);
    if (st)
        return tt_fail_core(st, "optim_step: no-grad scope");
    for (size_t i = 0; i < opt->n_params && !st; i++) {
        if (!w->u[i].g)
            continue;
        st = tt_rule_update(opt->kind, w->s, &w->consts, &w->u[i]);
        /* each update its own batch (one FUSED call): the next parameter's ops,
           of the same shape perhaps, must not join this one's */
        if (!st && opt->defer != TF_DEFER_OFF &&
            ((st = tf_session_set_defer(w->s, TF_DEFER_OFF)) ||
             (st = tf_session_set_defer(w->s, opt->defer))))
            st = tt_fail_core(st, "optim_step: the engine failed the update of parameter %zu", i);
    }
    tf_scope_end(&guard);
    if (!st && (st = tf_engine_synchronize(w->engine)))
        st = tt_fail_core(st, "optim_step: the engine failed the update");
    for (size_t i = 0; i < opt->n_params && !st; i++) {
        if (!w->u[i].g)
            continue;
        st = tf_runtime_variable_from(opt->rt, tf_eager_value(w->u[i].p_out), &w->var[i]);
        if (st)
            st = tt_fail_core(st, "optim_step: the new variable of parameter %zu", i);
    }
    return st;
}

/* Hands the step's results to the optimizer (nothing here can fail). */
static void step_publish(step *w)
{
    tf_optim *opt = w->opt;
    size_t n_state = tf_optim_state_names(opt->kind, NULL);
    for (size_t i = 0; i < opt->n_params; i++) {
        tt_param *p = &opt->params[i];
        tt_update *u = &w->u[i];
        if (!u->g)
            continue;
        tf_eager_release(p->var);
        p->var = w->var[i];
        w->var[i] = NULL;
        for (size_t k = 0; k < n_state; k++) {
            if (!u->state_out[k])
                continue;
            tf_tensor *t = tf_eager_value(u->state_out[k]);
            tf_tensor_retain(t);
            tf_tensor_release(p->state[k]);
            p->state[k] = t;
        }
        p->steps++;
    }
    tf_session_defer_stats(w->s, &opt->last);
    opt->step_count++;
}

static void step_free(step *w)
{
    for (size_t i = 0; w->u && i < w->opt->n_params; i++) {
        tt_update *u = &w->u[i];
        tf_eager_release(u->g);
        tf_eager_release(u->p_out);
        for (int k = 0; k < TT_MAX_STATE; k++) {
            tf_eager_release(u->state[k]);
            tf_eager_release(u->state_out[k]);
        }
        tf_eager_release(w->var[i]);
    }
    tt_consts_free(&w->consts);
    tf_session_end(w->s);
    tt_free(w->u);
    tt_free(w->var);
}

TF_TRAIN_API tf_status tf_optim_step_with_grads(tf_optim *opt, tf_engine *engine,
                                                tf_tensor *const *grads, size_t n)
{
    if (!opt || !engine)
        return tt_fail(TF_ERR_VALIDATION, !opt ? "opt" : "engine", "optim_step: NULL argument");
    if (n != opt->n_params || (!grads && n))
        return tt_fail(TF_ERR_VALIDATION, "grads",
                       "optim_step: %zu gradients for %zu parameters", n, opt->n_params);
    tf_status st = check_grads(opt, grads);
    if (st)
        return st;
    step w = {opt, engine, NULL, {0}, NULL, NULL};
    w.u = tt_calloc(n ? n : 1, sizeof *w.u);
    w.var = tt_calloc(n ? n : 1, sizeof *w.var);
    if (!w.u || !w.var)
        st = tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "optim_step: out of memory");
    if (!st && (st = tf_session_begin(opt->rt, engine, &w.s)))
        st = tt_fail_core(st, "optim_step: session");
    if (!st && (st = tf_session_set_defer(w.s, opt->defer)))
        st = tt_fail_core(st, "optim_step: deferral");
    w.consts.s = w.s;
    if (!st)
        st = step_inputs(&w, grads);
    if (!st)
        st = step_run(&w);
    if (!st)
        step_publish(&w);
    step_free(&w);
    return st;
}

TF_TRAIN_API tf_status tf_optim_step(tf_optim *opt, tf_engine *engine)
{
    if (!opt || !engine)
        return tt_fail(TF_ERR_VALIDATION, !opt ? "opt" : "engine", "optim_step: NULL argument");
    size_t n = opt->n_params;
    tf_tensor **grads = tt_calloc(n ? n : 1, sizeof *grads);
    if (!grads)
        return tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "optim_step: out of memory");
    tf_status st = TF_OK;
    for (size_t i = 0; i < n && !st; i++)
        if ((st = tf_eager_grad(opt->params[i].var, &grads[i])))
            st = tt_fail_core(st, "optim_step: reading parameter %zu's grad slot", i);
    if (!st)
        st = tf_optim_step_with_grads(opt, engine, grads, n);
    for (size_t i = 0; i < n; i++)
        tf_tensor_release(grads[i]);
    tt_free(grads);
    return st;
}
