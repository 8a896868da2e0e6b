/*
 * optim.c - the optimizer object of optim.h: parameter groups, parameters
 * and their state, and the step driver (the arithmetic is optim_rules.c).
 *
 * A step is all or nothing: every update is issued in one deferring session
 * under no-grad, the engine is synchronised (which runs the fused batches
 * and reports their failures), the new variables are made, and only then is
 * anything published. On a failure everything new is released and the
 * optimizer is as it was.
 */
#include <math.h>
#include <string.h>

#include <tenferro/ops.h>

#include "optim_internal.h"

static const char *const k_sgd_state[] = {"momentum_buffer"};
static const char *const k_adam_state[] = {"exp_avg", "exp_avg_sq"};

TF_TRAIN_API void tf_optim_options_default(tf_optim_kind kind, tf_optim_options *out)
{
    memset(out, 0, sizeof *out);
    out->struct_size = (uint32_t)sizeof *out;
    out->lr = 1e-3;
    if (kind == TF_OPTIM_ADAM || kind == TF_OPTIM_ADAMW) {
        out->beta1 = 0.9;
        out->beta2 = 0.999;
        out->eps = 1e-8;
        out->weight_decay = kind == TF_OPTIM_ADAMW ? 1e-2 : 0.0;
    }
}

TF_TRAIN_API size_t tf_optim_state_names(tf_optim_kind kind, const char *const **names)
{
    int adam = kind == TF_OPTIM_ADAM || kind == TF_OPTIM_ADAMW;
    if (names)
        *names = adam ? k_adam_state : k_sgd_state;
    return adam ? 2 : 1;
}

TF_TRAIN_API tf_status tf_optim_create(tf_runtime *rt, tf_optim_kind kind, tf_optim **out)
{
    if (!rt || !out)
        return tt_fail(TF_ERR_VALIDATION, !rt ? "rt" : "out", "optim_create: NULL argument");
    if (kind != TF_OPTIM_SGD && kind != TF_OPTIM_ADAM && kind != TF_OPTIM_ADAMW)
        return tt_fail(TF_ERR_VALIDATION, "kind", "optim_create: unknown kind %d", (int)kind);
    tf_optim *opt = tt_calloc(1, sizeof *opt);
    if (!opt)
        return tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "optim_create: out of memory");
    tf_runtime_retain(rt);
    opt->rt = rt;
    opt->kind = kind;
    opt->defer = TF_DEFER_ALWAYS;
    *out = opt;
    return TF_OK;
}

static void param_clear(tt_param *p)
{
    tf_eager_release(p->var);
    for (int i = 0; i < TT_MAX_STATE; i++)
        tf_tensor_release(p->state[i]);
}

TF_TRAIN_API void tf_optim_destroy(tf_optim *opt)
{
    if (!opt)
        return;
    for (size_t i = 0; i < opt->n_params; i++)
        param_clear(&opt->params[i]);
    tt_free(opt->params);
    tt_free(opt->groups);
    tf_runtime_release(opt->rt);
    tt_free(opt);
}

TF_TRAIN_API tf_optim_kind tf_optim_get_kind(const tf_optim *opt)
{
    return opt->kind;
}

/* ---- groups ---- */

static int finite_nonneg(double v)
{
    return isfinite(v) && v >= 0;
}

tf_status tt_optim_check_options(tf_optim_kind kind, const tf_optim_options *o, const char *fn)
{
    const char *bad = NULL;
    if (o->struct_size < sizeof *o)
        bad = "struct_size is smaller than sizeof(tf_optim_options)";
    else if (!finite_nonneg(o->lr))
        bad = "lr must be finite and >= 0";
    else if (!finite_nonneg(o->weight_decay))
        bad = "weight_decay must be finite and >= 0";
    else if (kind == TF_OPTIM_SGD && !finite_nonneg(o->momentum))
        bad = "momentum must be finite and >= 0";
    else if (kind == TF_OPTIM_SGD && !(o->dampening >= 0 && o->dampening <= 1))
        bad = "dampening must be in [0, 1]";
    else if (kind == TF_OPTIM_SGD && o->nesterov && (o->momentum == 0 || o->dampening != 0))
        bad = "Nesterov momentum requires momentum > 0 and zero dampening";
    else if (kind != TF_OPTIM_SGD && !(o->beta1 >= 0 && o->beta1 < 1 && o->beta2 >= 0 &&
                                       o->beta2 < 1))
        bad = "beta1 and beta2 must be in [0, 1)";
    else if (kind != TF_OPTIM_SGD && !finite_nonneg(o->eps))
        bad = "eps must be finite and >= 0";
    return bad ? tt_fail(TF_ERR_VALIDATION, "options", "%s: %s", fn, bad) : TF_OK;
}

static int has_param(const tf_optim *opt, tf_eager *const *extra, size_t n_extra, tf_eager *x)
{
    for (size_t i = 0; i < opt->n_params; i++)
        if (opt->params[i].var == x)
            return 1;
    for (size_t i = 0; i < n_extra; i++)
        if (extra[i] == x)
            return 1;
    return 0;
}

static tf_status check_param(const tf_optim *opt, tf_eager *const *params, size_t i)
{
    tf_eager *x = params[i];
    if (!x)
        return tt_fail(TF_ERR_VALIDATION, "params", "optim_add_group: params[%zu] is NULL", i);
    if (tf_eager_context_id(x) != tf_runtime_id(opt->rt))
        return tt_fail(TF_ERR_CONTEXT_MISMATCH, "params",
                       "optim_add_group: params[%zu] belongs to another runtime", i);
    if (!tf_dtype_is_float(tf_tensor_dtype(tf_eager_value(x))))
        return tt_fail(TF_ERR_DTYPE_MISMATCH, "params",
                       "optim_add_group: params[%zu] is %s; parameters are f32 or f64", i,
                       tf_dtype_name(tf_tensor_dtype(tf_eager_value(x))));
    if (!tf_eager_tracks_grad(x))
        return tt_fail(TF_ERR_VALIDATION, "params",
                       "optim_add_group: params[%zu] is not a variable (tf_runtime_variable_from)",
                       i);
    if (has_param(opt, params, i, x))
        return tt_fail(TF_ERR_VALIDATION, "params",
                       "optim_add_group: params[%zu] is already in the optimizer", i);
    return TF_OK;
}

static int reserve_params(tf_optim *opt, size_t more)
{
    while (opt->n_params + more > opt->cap_params) {
        size_t cap = opt->cap_params;
        if (!tt_grow((void **)&opt->params, &cap, opt->cap_params, sizeof *opt->params))
            return 0;
        opt->cap_params = cap;
    }
    return 1;
}

TF_TRAIN_API tf_status tf_optim_add_group(tf_optim *opt, const tf_optim_options *options,
                                          tf_eager *const *params, size_t n)
{
    if (!opt || !options || (!params && n))
        return tt_fail(TF_ERR_VALIDATION, !opt ? "opt" : !options ? "options" : "params",
                       "optim_add_group: NULL argument");
    if (n == 0)
        return tt_fail(TF_ERR_VALIDATION, "params", "optim_add_group: a group needs parameters");
    tf_status st = tt_optim_check_options(opt->kind, options, "optim_add_group");
    for (size_t i = 0; i < n && !st; i++)
        st = check_param(opt, params, i);
    if (st)
        return st;
    if (!reserve_params(opt, n) ||
        !tt_grow((void **)&opt->groups, &opt->cap_groups, opt->n_groups, sizeof *opt->groups))
        return tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "optim_add_group: out of memory");
    opt->groups[opt->n_groups] = *options;
    opt->groups[opt->n_groups].struct_size = (uint32_t)sizeof *options;
    for (size_t i = 0; i < n; i++) {
        tt_param *p = &opt->params[opt->n_params++];
        memset(p, 0, sizeof *p);
        tf_eager_retain(params[i]);
        p->var = params[i];
        p->group = opt->n_groups;
    }
    opt->n_groups++;
    return TF_OK;
}

TF_TRAIN_API size_t tf_optim_group_count(const tf_optim *opt)
{
    return opt->n_groups;
}

TF_TRAIN_API size_t tf_optim_param_count(const tf_optim *opt)
{
    return opt->n_params;
}

TF_TRAIN_API size_t tf_optim_param_group(const tf_optim *opt, size_t index)
{
    return index < opt->n_params ? opt->params[index].group : SIZE_MAX;
}

TF_TRAIN_API tf_status tf_optim_group_options(const tf_optim *opt, size_t group,
                                              tf_optim_options *out)
{
    if (!opt || !out)
        return tt_fail(TF_ERR_VALIDATION, !opt ? "opt" : "out", "optim_group_options: NULL");
    if (group >= opt->n_groups)
        return tt_fail(TF_ERR_VALIDATION, "group", "optim_group_options: group %zu of %zu",
                       group, opt->n_groups);
    *out = opt->groups[group];
    return TF_OK;
}

TF_TRAIN_API tf_status tf_optim_set_group_options(tf_optim *opt, size_t group,
                                                  const tf_optim_options *options)
{
    if (!opt || !options)
        return tt_fail(TF_ERR_VALIDATION, !opt ? "opt" : "options",
                       "optim_set_group_options: NULL argument");
    if (group >= opt->n_groups)
        return tt_fail(TF_ERR_VALIDATION, "group", "optim_set_group_options: group %zu of %zu",
                       group, opt->n_groups);
    tf_status st = tt_optim_check_options(opt->kind, options, "optim_set_group_options");
    if (st)
        return st;
    opt->groups[group] = *options;
    opt->groups[group].struct_size = (uint32_t)sizeof *options;
    return TF_OK;
}

TF_TRAIN_API tf_status tf_optim_set_lr(tf_optim *opt, size_t group, double lr)
{
    if (!opt)
        return tt_fail(TF_ERR_VALIDATION, "opt", "optim_set_lr: NULL optimizer");
    if (group >= opt->n_groups)
        return tt_fail(TF_ERR_VALIDATION, "group", "optim_set_lr: group %zu of %zu", group,
                       opt->n_groups);
    if (!finite_nonneg(lr))
        return tt_fail(TF_ERR_VALIDATION, "lr", "optim_set_lr: lr %g must be finite and >= 0",
                       lr);
    opt->groups[group].lr = lr;
    return TF_OK;
}

TF_TRAIN_API tf_eager *tf_optim_param(const tf_optim *opt, size_t index)
{
    return opt && index < opt->n_params ? opt->params[index].var : NULL;
}

TF_TRAIN_API uint64_t tf_optim_step_count(const tf_optim *opt)
{
    return opt->step_count;
}

TF_TRAIN_API void tf_optim_set_step_count(tf_optim *opt, uint64_t count)
{
    opt->step_count = count;
}

TF_TRAIN_API tf_status tf_optim_set_defer(tf_optim *opt, tf_defer_mode mode)
{
    if (!opt)
        return tt_fail(TF_ERR_VALIDATION, "opt", "optim_set_defer: NULL optimizer");
    if (mode != TF_DEFER_OFF && mode != TF_DEFER_AUTO && mode != TF_DEFER_ALWAYS)
        return tt_fail(TF_ERR_VALIDATION, "mode", "optim_set_defer: unknown mode %d", (int)mode);
    opt->defer = mode;
    return TF_OK;
}

TF_TRAIN_API void tf_optim_last_stats(const tf_optim *opt, tf_defer_stats *out)
{
    *out = opt->last;
}

TF_TRAIN_API uint64_t tf_optim_param_steps(const tf_optim *opt, size_t index)
{
    return index < opt->n_params ? opt->params[index].steps : 0;
}
