/*
 * tf_shrink.c - shrinking a failing program while a predicate holds
 * (tf_shrink.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tf_shrink.h"

/* The values of q on cfg (shapes and dtypes for the edits). */
static bool values_of(const tfp_program *q, const tfp_config *cfg, tfp_data *vals)
{
    tfp_run run;
    uint32_t n = tfp_n_values(q);
    memset(vals, 0, n * sizeof *vals);
    bool ok = tfp_run_begin(&run, q, cfg);
    while (ok && run.n_done < q->n_ops)
        ok = tfp_run_op(&run);
    for (uint32_t id = 0; ok && id < n; id++)
        ok = tfp_read_value(&run, id, &vals[id]);
    tfp_run_end(&run);
    return ok;
}

static void free_values(tfp_data *vals, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        tfp_data_free(&vals[i]);
}

static bool same_layout(const tfp_data *a, const tfp_data *b)
{
    return a->dtype == b->dtype && a->rank == b->rank &&
           memcmp(a->shape, b->shape, a->rank * sizeof a->shape[0]) == 0;
}

/* Loss weights for q's output of shape `like` (deterministic, never 0). */
static bool reweigh(tfp_program *q, const tfp_data *like)
{
    if (same_layout(&q->weights, like))
        return true;
    tfp_data w = *like;
    w.data = malloc((w.count ? w.count : 1) * sizeof *w.data);
    if (!w.data)
        return false;
    for (size_t k = 0; k < w.count; k++)
        w.data[k] = 0.5 + 0.25 * (double)(k % 3);
    tfp_data_free(&q->weights);
    q->weights = w;
    return true;
}

/* Replaces *p by q when q still fails (q is consumed either way). */
static bool accept(tfp_program *p, tfp_program *q, tfs_fails_fn fails, void *ctx, int *budget)
{
    (*budget)--;
    if (fails(q, ctx)) {
        tfp_program_free(p);
        *p = *q;
        return true;
    }
    tfp_program_free(q);
    return false;
}

/* One round of edits; true when one was kept. */
static bool shrink_round(tfp_program *p, tfs_fails_fn fails, void *ctx, int *budget,
                         const tfp_config *cfg)
{
    static tfp_data vals[2048];
    uint32_t n = tfp_n_values(p);
    if (n > 2048 || !values_of(p, cfg, vals))
        return false;
    bool kept = false;
    /* the output moved to an earlier float result, the ops after it dropped */
    for (uint32_t k = 0; !kept && *budget > 0 && k + 1 < p->n_ops; k++) {
        const tfp_data *v = &vals[tfp_op_value(p, k)];
        tfp_program q;
        if ((v->dtype != TFP_F64 && v->dtype != TFP_C128) || !tfp_program_copy(&q, p))
            continue;
        q.output = tfp_op_value(&q, k);
        while (q.n_ops > k + 1)
            tfp_program_pop(&q);
        kept = reweigh(&q, v) ? accept(p, &q, fails, ctx, budget) : (tfp_program_free(&q), false);
    }
    /* an op bypassed: its uses read one of its arguments of the same layout */
    for (uint32_t k = p->n_ops; !kept && *budget > 0 && k-- > 0;) {
        const tfp_op *op = &p->ops[k];
        for (uint32_t i = 0; !kept && i < op->n_args; i++) {
            tfp_program q;
            if (!same_layout(&vals[op->args[i]], &vals[tfp_op_value(p, k)]) ||
                !tfp_program_copy(&q, p))
                continue;
            tfp_program_drop_op(&q, k, op->args[i]);
            kept = accept(p, &q, fails, ctx, budget);
        }
    }
    free_values(vals, n);
    return kept;
}

/* Drops what nothing reads: dead ops, unused constants and inputs. */
static bool shrink_dead(tfp_program *p, tfs_fails_fn fails, void *ctx, int *budget)
{
    for (uint32_t k = p->n_ops; *budget > 0 && k-- > 0;) {
        tfp_program q;
        if (tfp_value_used(p, tfp_op_value(p, k)) || !tfp_program_copy(&q, p))
            continue;
        tfp_program_drop_op(&q, k, 0);
        if (accept(p, &q, fails, ctx, budget))
            return true;
    }
    for (uint32_t c = p->n_consts; *budget > 0 && c-- > 0;) {
        tfp_program q;
        if (tfp_value_used(p, p->n_inputs + c) || !tfp_program_copy(&q, p))
            continue;
        tfp_program_drop_const(&q, c);
        if (accept(p, &q, fails, ctx, budget))
            return true;
    }
    for (uint32_t i = p->n_inputs; *budget > 0 && i-- > 1;) {
        tfp_program q;
        if (tfp_value_used(p, i) || i == p->hvp_input || !tfp_program_copy(&q, p))
            continue;
        tfp_program_drop_input(&q, i);
        if (accept(p, &q, fails, ctx, budget))
            return true;
    }
    return false;
}

/* Leaves made simpler: dense layouts, values rounded to one decimal. */
static bool shrink_leaves(tfp_program *p, tfs_fails_fn fails, void *ctx, int *budget)
{
    for (uint32_t i = 0; *budget > 0 && i < p->n_inputs + p->n_consts; i++) {
        bool input = i < p->n_inputs;
        const tfp_leaf *l = input ? &p->inputs[i] : &p->consts[i - p->n_inputs];
        bool rounded = true;
        for (size_t k = 0; k < l->value.count; k++)
            rounded = rounded && l->value.data[k] * 10 == round(l->value.data[k] * 10);
        for (int edit = 0; edit < 2; edit++) {
            if ((edit == 0 && l->layout == TFP_DENSE) || (edit == 1 && rounded))
                continue;
            tfp_program q;
            if (!tfp_program_copy(&q, p))
                return false;
            tfp_leaf *m = input ? &q.inputs[i] : &q.consts[i - p->n_inputs];
            if (edit == 0)
                m->layout = TFP_DENSE;
            for (size_t k = 0; edit == 1 && k < m->value.count; k++)
                m->value.data[k] = round(m->value.data[k] * 10) / 10;
            if (accept(p, &q, fails, ctx, budget))
                return true;
        }
    }
    return false;
}

void tfs_shrink(tfp_program *p, tfs_fails_fn fails, void *ctx, const tfp_config *cfg, int budget)
{
    while (budget > 0 && (shrink_round(p, fails, ctx, &budget, cfg) ||
                          shrink_dead(p, fails, ctx, &budget) ||
                          shrink_leaves(p, fails, ctx, &budget)))
        ;
}

