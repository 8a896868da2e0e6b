/*
 * checkpoint_optim.c - an optimizer into a checkpoint and back
 * (tf_checkpoint_add_optim, tf_checkpoint_restore_optim).
 *
 * Tensors: each parameter under its name, each state tensor as
 * "optim.<name>.<state>". Metadata (strings, as safetensors wants them):
 * "optim.kind", "optim.steps", "optim.groups", per parameter
 * "optim.<name>.steps" and "optim.<name>.group", per group
 * "optim.group.<g>.<hyperparameter>" with doubles in %.17g (they read back
 * exactly). Restoring parses and checks all of it before it changes
 * anything.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint_internal.h"
#include "optim_internal.h"

#define KEY_MAX 320

static const char *kind_name(tf_optim_kind kind)
{
    return kind == TF_OPTIM_SGD ? "sgd" : kind == TF_OPTIM_ADAM ? "adam" : "adamw";
}

/* The hyperparameters as (name, offset) pairs, for writing and reading them alike. */
static const struct {
    const char *name;
    size_t offset;
} k_fields[] = {
    {"lr", offsetof(tf_optim_options, lr)},
    {"momentum", offsetof(tf_optim_options, momentum)},
    {"dampening", offsetof(tf_optim_options, dampening)},
    {"weight_decay", offsetof(tf_optim_options, weight_decay)},
    {"beta1", offsetof(tf_optim_options, beta1)},
    {"beta2", offsetof(tf_optim_options, beta2)},
    {"eps", offsetof(tf_optim_options, eps)},
};
#define N_FIELDS (sizeof k_fields / sizeof k_fields[0])

static double *field(tf_optim_options *o, size_t f)
{
    return (double *)(void *)((char *)o + k_fields[f].offset);
}

static tf_status check_names(const tf_optim *opt, const char *const *names, size_t n,
                             const char *fn)
{
    if (!names || n != opt->n_params)
        return tt_fail(TF_ERR_VALIDATION, "names", "%s: %zu names for %zu parameters", fn, n,
                       opt->n_params);
    for (size_t i = 0; i < n; i++) {
        if (!names[i] || !names[i][0] || strlen(names[i]) > KEY_MAX - 64)
            return tt_fail(TF_ERR_VALIDATION, "names",
                           "%s: names[%zu] is NULL, empty or longer than %d bytes", fn, i,
                           KEY_MAX - 64);
        for (size_t j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0)
                return tt_fail(TF_ERR_VALIDATION, "names", "%s: '%s' names two parameters", fn,
                               names[i]);
    }
    return TF_OK;
}

/* ---- saving ---- */

static tf_status add_meta(tf_checkpoint *ck, const char *key, const char *fmt, ...)
    TT_PRINTF(3, 4);

static tf_status add_meta(tf_checkpoint *ck, const char *key, const char *fmt, ...)
{
    char value[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(value, sizeof value, fmt, ap);
    va_end(ap);
    return tf_checkpoint_set_meta(ck, key, value);
}

/* Undoes additions past n items and n_meta keys (add_optim appends only). */
static void truncate_to(tf_checkpoint *ck, size_t n, size_t n_meta)
{
    while (ck->n > n) {
        ck->n--;
        tt_free(ck->items[ck->n].name);
        tf_tensor_release(ck->items[ck->n].tensor);
    }
    while (ck->n_meta > n_meta) {
        ck->n_meta--;
        tt_free(ck->meta[ck->n_meta].key);
        tt_free(ck->meta[ck->n_meta].value);
    }
}

static tf_status add_param(tf_checkpoint *ck, const tf_optim *opt, size_t i, const char *name)
{
    const tt_param *p = &opt->params[i];
    const char *const *states;
    size_t n_state = tf_optim_state_names(opt->kind, &states);
    char key[KEY_MAX];
    tf_status st = tf_checkpoint_add(ck, name, tf_eager_value(p->var));
    for (size_t k = 0; k < n_state && !st; k++) {
        snprintf(key, sizeof key, "optim.%s.%s", name, states[k]);
        if (p->state[k])
            st = tf_checkpoint_add(ck, key, p->state[k]);
    }
    snprintf(key, sizeof key, "optim.%s.steps", name);
    if (!st)
        st = add_meta(ck, key, "%llu", (unsigned long long)p->steps);
    snprintf(key, sizeof key, "optim.%s.group", name);
    if (!st)
        st = add_meta(ck, key, "%zu", p->group);
    return st;
}

static tf_status add_groups(tf_checkpoint *ck, const tf_optim *opt)
{
    char key[KEY_MAX];
    tf_status st = tf_checkpoint_set_meta(ck, "optim.kind", kind_name(opt->kind));
    if (!st)
        st = add_meta(ck, "optim.steps", "%llu", (unsigned long long)opt->step_count);
    if (!st)
        st = add_meta(ck, "optim.groups", "%zu", opt->n_groups);
    for (size_t g = 0; g < opt->n_groups && !st; g++) {
        tf_optim_options o = opt->groups[g];
        for (size_t f = 0; f < N_FIELDS && !st; f++) {
            snprintf(key, sizeof key, "optim.group.%zu.%s", g, k_fields[f].name);
            st = add_meta(ck, key, "%.17g", *field(&o, f));
        }
        snprintf(key, sizeof key, "optim.group.%zu.nesterov", g);
        if (!st)
            st = add_meta(ck, key, "%u", o.nesterov ? 1u : 0u);
    }
    return st;
}

/* Refuses when any name or metadata key add_optim would write is already in ck. */
static tf_status check_free(const tf_checkpoint *ck, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char prefix[KEY_MAX];
        snprintf(prefix, sizeof prefix, "optim.%s.", names[i]);
        for (size_t k = 0; k < ck->n; k++)
            if (strcmp(ck->items[k].name, names[i]) == 0 ||
                strncmp(ck->items[k].name, prefix, strlen(prefix)) == 0)
                return tt_fail(TF_ERR_VALIDATION, "names",
                               "checkpoint_add_optim: '%s' is already in the checkpoint",
                               ck->items[k].name);
    }
    for (size_t k = 0; k < ck->n_meta; k++)
        if (strncmp(ck->meta[k].key, "optim.", 6) == 0)
            return tt_fail(TF_ERR_VALIDATION, "names",
                           "checkpoint_add_optim: the checkpoint already holds an optimizer "
                           "('%s')",
                           ck->meta[k].key);
    return TF_OK;
}

TF_TRAIN_API tf_status tf_checkpoint_add_optim(tf_checkpoint *ck, const tf_optim *opt,
                                               const char *const *names, size_t n)
{
    if (!ck || !opt)
        return tt_fail(TF_ERR_VALIDATION, !ck ? "ck" : "opt", "checkpoint_add_optim: NULL");
    tf_status st = check_names(opt, names, n, "checkpoint_add_optim");
    if (!st)
        st = check_free(ck, names, n);
    if (st)
        return st;
    size_t n0 = ck->n, m0 = ck->n_meta;
    st = add_groups(ck, opt);
    for (size_t i = 0; i < n && !st; i++)
        st = add_param(ck, opt, i, names[i]);
    if (st)
        truncate_to(ck, n0, m0);
    return st;
}

/* ---- restoring ---- */

static const char *meta_of(const tf_checkpoint *ck, const char *key, tf_status *st)
{
    const char *v = tf_checkpoint_meta(ck, key);
    if (!v && !*st)
        *st = tt_fail(TF_ERR_VALIDATION, "ck",
                      "checkpoint_restore_optim: the checkpoint has no metadata '%s'", key);
    return v;
}

/*
 * Metadata `key` as a count (into *u) or as a double (into *f, when u is
 * NULL); a missing or malformed value records the first error in *st and
 * gives 0.
 */
static void meta_number(const tf_checkpoint *ck, const char *key, tf_status *st, uint64_t *u,
                        double *f)
{
    const char *v = meta_of(ck, key, st);
    char *end = NULL;
    errno = 0;
    if (u)
        *u = v ? strtoull(v, &end, 10) : 0;
    else
        *f = v ? strtod(v, &end) : 0;
    if (!v || (!errno && end != v && !*end && (!u || (v[0] >= '0' && v[0] <= '9'))))
        return;
    if (!*st)
        *st = tt_fail(TF_ERR_VALIDATION, "ck",
                      "checkpoint_restore_optim: metadata '%s' is '%.40s', not a %s", key, v,
                      u ? "count" : "number");
    if (u)
        *u = 0;
    else
        *f = 0;
}

static uint64_t meta_u64(const tf_checkpoint *ck, const char *key, tf_status *st)
{
    uint64_t u;
    meta_number(ck, key, st, &u, NULL);
    return u;
}

static double meta_f64(const tf_checkpoint *ck, const char *key, tf_status *st)
{
    double f;
    meta_number(ck, key, st, NULL, &f);
    return f;
}

/* Everything a restore changes, gathered and checked before anything changes. */
typedef struct restore {
    tf_optim_options *groups;
    uint64_t *steps;
    tf_tensor **value; /* borrowed from the checkpoint */
    tf_tensor **state; /* TT_MAX_STATE per parameter, borrowed */
    tf_eager **var;    /* the new variables */
    uint64_t step_count;
} restore;

static tf_status read_groups(const tf_checkpoint *ck, const tf_optim *opt, restore *r)
{
    tf_status st = TF_OK;
    const char *kind = meta_of(ck, "optim.kind", &st);
    if (kind && strcmp(kind, kind_name(opt->kind)) != 0)
        return tt_fail(TF_ERR_VALIDATION, "ck",
                       "checkpoint_restore_optim: the checkpoint holds a '%.20s' optimizer, "
                       "this one is '%s'",
                       kind, kind_name(opt->kind));
    uint64_t groups = meta_u64(ck, "optim.groups", &st);
    if (!st && groups != opt->n_groups)
        return tt_fail(TF_ERR_VALIDATION, "ck",
                       "checkpoint_restore_optim: %llu groups in the checkpoint, %zu here",
                       (unsigned long long)groups, opt->n_groups);
    r->step_count = meta_u64(ck, "optim.steps", &st);
    char key[KEY_MAX];
    for (size_t g = 0; g < opt->n_groups && !st; g++) {
        tf_optim_options *o = &r->groups[g];
        *o = opt->groups[g];
        for (size_t f = 0; f < N_FIELDS; f++) {
            snprintf(key, sizeof key, "optim.group.%zu.%s", g, k_fields[f].name);
            *field(o, f) = meta_f64(ck, key, &st);
        }
        snprintf(key, sizeof key, "optim.group.%zu.nesterov", g);
        o->nesterov = meta_u64(ck, key, &st) != 0;
        if (!st)
            st = tt_optim_check_options(opt->kind, o, "checkpoint_restore_optim");
    }
    return st;
}

static tf_status read_param(const tf_checkpoint *ck, const tf_optim *opt, size_t i,
                            const char *name, restore *r)
{
    const tt_param *p = &opt->params[i];
    const tf_tensor *current = tf_eager_value(p->var);
    char key[KEY_MAX];
    tf_status st = TF_OK;
    snprintf(key, sizeof key, "optim.%s.group", name);
    uint64_t group = meta_u64(ck, key, &st);
    if (!st && group != p->group)
        return tt_fail(TF_ERR_VALIDATION, "ck",
                       "checkpoint_restore_optim: '%s' is in group %llu there, %zu here", name,
                       (unsigned long long)group, p->group);
    snprintf(key, sizeof key, "optim.%s.steps", name);
    r->steps[i] = meta_u64(ck, key, &st);
    if (!st && !(r->value[i] = tf_checkpoint_find(ck, name)))
        st = tt_fail(TF_ERR_VALIDATION, "ck", "checkpoint_restore_optim: no tensor '%s'", name);
    if (!st)
        st = tt_check_like(current, r->value[i], "checkpoint_restore_optim", "ck", i);
    const char *const *states;
    size_t n_state = tf_optim_state_names(opt->kind, &states), present = 0;
    for (size_t k = 0; k < n_state && !st; k++) {
        snprintf(key, sizeof key, "optim.%s.%s", name, states[k]);
        tf_tensor *t = r->state[i * TT_MAX_STATE + k] = tf_checkpoint_find(ck, key);
        present += t != NULL;
        if (t)
            st = tt_check_like(current, t, "checkpoint_restore_optim", "ck", i);
    }
    if (!st && ((present && present != n_state) ||
                (opt->kind != TF_OPTIM_SGD && (present != 0) != (r->steps[i] != 0))))
        st = tt_fail(TF_ERR_VALIDATION, "ck",
                     "checkpoint_restore_optim: the state of '%s' is incomplete", name);
    return st;
}

/* Makes the new variables (the one step that can fail once everything is checked). */
static tf_status make_vars(const tf_optim *opt, restore *r)
{
    for (size_t i = 0; i < opt->n_params; i++) {
        tf_status st = tf_runtime_variable_from(opt->rt, r->value[i], &r->var[i]);
        if (st)
            return tt_fail_core(st, "checkpoint_restore_optim: the variable of parameter %zu", i);
    }
    return TF_OK;
}

static void publish(tf_optim *opt, restore *r)
{
    size_t n_state = tf_optim_state_names(opt->kind, NULL);
    memcpy(opt->groups, r->groups, opt->n_groups * sizeof *opt->groups);
    for (size_t i = 0; i < opt->n_params; i++) {
        tt_param *p = &opt->params[i];
        tf_eager_release(p->var);
        p->var = r->var[i];
        r->var[i] = NULL;
        for (size_t k = 0; k < n_state; k++) {
            tf_tensor *t = r->state[i * TT_MAX_STATE + k];
            tf_tensor_retain(t);
            tf_tensor_release(p->state[k]);
            p->state[k] = t;
        }
        p->steps = r->steps[i];
    }
    opt->step_count = r->step_count;
}

TF_TRAIN_API tf_status tf_checkpoint_restore_optim(const tf_checkpoint *ck, tf_optim *opt,
                                                   const char *const *names, size_t n)
{
    if (!ck || !opt)
        return tt_fail(TF_ERR_VALIDATION, !ck ? "ck" : "opt", "checkpoint_restore_optim: NULL");
    tf_status st = check_names(opt, names, n, "checkpoint_restore_optim");
    if (st)
        return st;
    size_t np = opt->n_params ? opt->n_params : 1;
    restore r = {tt_calloc(opt->n_groups ? opt->n_groups : 1, sizeof *r.groups),
                 tt_calloc(np, sizeof *r.steps), tt_calloc(np, sizeof *r.value),
                 tt_calloc(np * TT_MAX_STATE, sizeof *r.state), tt_calloc(np, sizeof *r.var), 0};
    if (!r.groups || !r.steps || !r.value || !r.state || !r.var)
        st = tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "checkpoint_restore_optim: out of memory");
    if (!st)
        st = read_groups(ck, opt, &r);
    for (size_t i = 0; i < n && !st; i++)
        st = read_param(ck, opt, i, names[i], &r);
    if (!st)
        st = make_vars(opt, &r);
    if (!st)
        publish(opt, &r);
    for (size_t i = 0; r.var && i < opt->n_params; i++)
        tf_eager_release(r.var[i]);
    tt_free(r.groups);
    tt_free(r.steps);
    tt_free(r.value);
    tt_free(r.state);
    tt_free(r.var);
    return st;
}
