/*
 * optim_internal.h - the optimizer object (optim.c: groups, parameters,
 * state, the step driver) and its update rules (optim_rules.c: each kind's
 * arithmetic as session ops).
 */
#ifndef TF_OPTIM_INTERNAL_H
#define TF_OPTIM_INTERNAL_H

#include <tenferro/optim.h>

#include "train_internal.h"

/* The most state tensors a kind keeps per parameter. */
#define TT_MAX_STATE 2

typedef struct tt_param {
    tf_eager *var;                   /* the current variable (retained) */
    tf_tensor *state[TT_MAX_STATE];  /* retained; NULL: not yet */
    uint64_t steps;                  /* updates that found a gradient */
    size_t group;
} tt_param;

struct tf_optim {
    tf_runtime *rt;
    tf_optim_kind kind;
    tf_optim_options *groups;
    size_t n_groups, cap_groups;
    tt_param *params;
    size_t n_params, cap_params;
    uint64_t step_count;
    tf_defer_mode defer; /* the step session's mode */
    tf_defer_stats last;
};

/* Checks a group's hyperparameters for `kind` (the refusal names `fn`). */
tf_status tt_optim_check_options(tf_optim_kind kind, const tf_optim_options *o, const char *fn);

/* Refuses (argument `arg` of `fn`, parameter `index`) a t whose dtype or shape is not p's. */
tf_status tt_check_like(const tf_tensor *p, const tf_tensor *t, const char *fn, const char *arg,
                        size_t index);

/* Scalar constants of one step, made once per (dtype, value) and shared. */
typedef struct tt_consts {
    tf_session *s;
    size_t n, cap;
    struct tt_const {
        tf_dtype dtype;
        double value;
        tf_eager *e;
    } *items;
} tt_consts;

/* A rank-0 constant of `dtype` equal to value (borrowed from c); NULL on failure (recorded). */
tf_eager *tt_const(tt_consts *c, tf_dtype dtype, double value);
void tt_consts_free(tt_consts *c);

/* What one parameter's update reads and produces (eager tensors of the step's session). */
typedef struct tt_update {
    const tf_optim_options *o;
    uint64_t t;                      /* the step number of this update (steps + 1) */
    tf_eager *p, *g;                 /* borrowed */
    tf_eager *state[TT_MAX_STATE];   /* borrowed; NULL: none yet */
    tf_eager *p_out;                 /* new reference */
    tf_eager *state_out[TT_MAX_STATE]; /* new references (NULL: unchanged absent) */
} tt_update;

/* The update of one parameter by `kind` in session s: fills u->p_out and u->state_out. */
tf_status tt_rule_update(tf_optim_kind kind, tf_session *s, tt_consts *c, tt_update *u);

#endif /* TF_OPTIM_INTERNAL_H */
