/*
 * autodiff.c - reverse mode (backward, grad, vjp) and forward mode (jvp)
 * over the recorded graph.
 *
 * A derivative starts with a walk of the graph from the output and the
 * program prepared for its structure (graph.c: the walk, the structural
 * fingerprint - ops, attributes, how results feed each other, which tensors
 * are targets, and the dtypes and shapes of the tensors it starts from,
 * which fix all others - and the prepared-derivative cache). This file runs
 * the program: rules run as ordinary session ops, so with recording on, the
 * results are differentiable again.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "autodiff_internal.h"
#include "rule_fx.h"

/* ---- the reverse pass ---- */

static tf_status unsupported_rule(const char *op, const tf_node *nd, const char *mode)
{
    return tf__error(TF_ERR_UNSUPPORTED_AD_RULE, op, NULL, "%s: the op '%s' has no %s rule", op,
                     tf__op_rule(nd->op)->name, mode);
}

/*
 * Runs a rule's elementwise programs (rule_fx.h), each summed into its input's
 * cotangent by one call; false when the rule has none for this node (then
 * *status is untouched and the plain vjp runs).
 */
static bool run_step_fused(tf_session *s, const graph *g, const tf_node *nd, tf_eager *e,
                           const tf_op_rule *rule, const step *st, tf_eager **cot,
                           tf_status *status)
{
    tf_fx fx[2];
    uint32_t res[2];
    bool need[2];
    if (!rule->vjp_fx || nd->n_inputs > 2)
        return false;
    for (uint32_t j = 0; j < nd->n_inputs; j++)
        need[j] = (st->need_mask >> j & 1) != 0;
    if (!rule->vjp_fx(nd, e, cot[st->at], need, fx, res))
        return false;
    *status = TF_OK;
    for (uint32_t j = 0; j < nd->n_inputs && !*status; j++) {
        size_t k = tf__graph_lookup(g, nd->inputs[j]);
        if (need[j] && res[j] != TF_FX_NONE && k < g->n)
            *status = tf__fx_accumulate(s, &fx[j], res[j], cot[st->at], &cot[k]);
    }
    return true;
}

/*
 * Runs one step: the rule of g->at[st->at], accumulating into cot[]; `fuse`:
 * nothing is recorded, so a rule with a program form may run it.
 */
static tf_status run_step(tf_session *s, const graph *g, const step *st, tf_eager **cot, bool fuse)
{
    tf_eager *e = g->at[st->at];
    const tf_node *nd = e->node;
    const tf_op_rule *rule = tf__op_rule(nd->op);
    if (!rule->vjp)
        return unsupported_rule("vjp", nd, "reverse");
    tf_status fused_status;
    if (fuse && run_step_fused(s, g, nd, e, rule, st, cot, &fused_status))
        return fused_status;
    bool need_small[8];
    tf_eager *cin_small[8];
    bool *need = nd->n_inputs <= 8 ? need_small : tf__calloc(nd->n_inputs, sizeof *need);
    tf_eager **cin = nd->n_inputs <= 8 ? cin_small : tf__calloc(nd->n_inputs, sizeof *cin);
    tf_status status = TF_OK;
    if (!need || !cin) {
        status = tf__error(TF_ERR_OUT_OF_MEMORY, "vjp", NULL, "out of memory");
        goto done;
    }
    for (uint32_t j = 0; j < nd->n_inputs; j++) {
        need[j] = j >= 32 || (st->need_mask >> j & 1);
        cin[j] = NULL;
    }
    status = rule->vjp(s, e, nd, cot[st->at], need, cin);
    for (uint32_t j = 0; j < nd->n_inputs; j++) {
        size_t k = tf__graph_lookup(g, nd->inputs[j]);
        if (cin[j] && need[j] && k < g->n && status == TF_OK) {
            status = tf__accumulate_take(s, &cot[k], cin[j]); /* the rule's reference */
            cin[j] = NULL;
        }
        tf_eager_release(cin[j]);
    }
done:
    if (need != need_small)
        tf__free(need);
    if (cin != cin_small)
        tf__free(cin);
    return status;
}

/*
 * Runs the program with `seed` as the output's cotangent. On success cot[]
 * holds the cotangents of the targets (others are released as consumed).
 */
static tf_status reverse(tf_session *s, const graph *g, const program *pr, tf_eager *seed,
                         const tf_eager *wrt, tf_eager **cot)
{
    tf_eager_retain(seed);
    cot[g->n - 1] = seed;
    bool fuse = !tf__recording(s->rt); /* rules open no scopes: it holds for the whole walk */
    for (size_t k = 0; k < pr->n_steps; k++) {
        const step *st = &pr->steps[k];
        if (!cot[st->at])
            continue;
        tf_status status = run_step(s, g, st, cot, fuse);
        if (status)
            return status;
        if (!tf__graph_is_target(g->at[st->at], wrt)) {
            tf_eager_release(cot[st->at]);
            cot[st->at] = NULL;
        }
    }
    return TF_OK;
}

static void release_all(tf_eager **xs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tf_eager_release(xs[i]);
    tf__free(xs);
}

/*
 * Makes a derivative readable as one slice: rules return views where they
 * can (a broadcast cotangent is a stride-0 view), but what the caller gets
 * back - a grad slot, a grad/vjp/jvp result - should be dense. Materialised
 * through a recorded reshape, so a tracked result stays differentiable.
 */
static tf_status make_dense(tf_session *s, tf_eager **x)
{
    const tf_tensor *v = (*x)->value;
    if (tf_tensor_is_contiguous(v))
        return TF_OK;
    tf_eager *d;
    tf_status st = tf_session_reshape(s, *x, v->rank, v->shape, &d);
    if (st)
        return st;
    tf_eager_release(*x);
    *x = d;
    return TF_OK;
}

/*
 * A derivative's session takes as its own the batch in which the forward ops
 * of its graph still wait, when that batch opened on this thread (the
 * application's session: tf__lazy_share). The rules' elementwise ops then
 * join the forward's program: exp(x)'s reverse rule reads exp(x) as a step of
 * the same FUSED call, not as memory a first call writes and a second reads
 * back, and the batch runs once, at end_batch. Its results are written as
 * before: those something holds (the tape's included).
 */
static void share_forward_batch(tf_session *s, const graph *g)
{
    for (size_t i = g->n; i-- > 0;)
        if (tf__lazy_share(&s->lazy, g->at[i]->value))
            return;
}

/*
 * A derivative's session defers elementwise work as the application's do
 * (the rules' ops, their fused programs, the cotangent sums), so that a
 * chain of them is one engine call and the intermediates nothing holds are
 * never written. Its batch runs here, before anything is published: an
 * engine failure is the derivative's, with nothing changed. Ops after this
 * (slot sums) run at once.
 */
static void end_batch(tf_session *s, tf_status *st)
{
    tf_status end = tf__lazy_end(&s->lazy);
    if (!*st)
        *st = end;
    s->lazy.mode = TF_DEFER_OFF;
}

/* ---- argument checks ---- */

static tf_status check_same_rt(const char *op, tf_runtime *rt, tf_eager *x, const char *name)
{
    if (!x)
        return tf__error(TF_ERR_VALIDATION, op, name, "%s: %s is NULL", op, name);
    if (x->rt != rt)
        return tf__error(TF_ERR_CONTEXT_MISMATCH, op, name,
                         "%s: %s belongs to runtime %llu, not to runtime %llu; move it with "
                         "tf_eager_detach_into first",
                         op, name, (unsigned long long)x->rt->id, (unsigned long long)rt->id);
    return TF_OK;
}

static tf_status check_like(const char *op, const char *name, const tf_eager *got,
                            const tf_eager *want, const char *want_name)
{
    const tf_tensor *a = got->value, *b = want->value;
    if (a->dtype != b->dtype)
        return tf__error(TF_ERR_VALIDATION, op, name, "%s: %s is %s, %s is %s", op, name,
                         tf_dtype_name(a->dtype), want_name, tf_dtype_name(b->dtype));
    if (!tf__same_shape(a, b))
        return tf__error(TF_ERR_VALIDATION, op, name,
                         "%s: %s has rank %u and a shape different from %s (rank %u)", op, name,
                         a->rank, want_name, b->rank);
    return TF_OK;
}

/* ---- backward ---- */

/* One variable's share of a backward: its cotangent and its slot's new value. */
typedef struct pending {
    tf_eager *v, *g;
    tf_tensor *next; /* owned until published */
} pending;

static int pending_by_slot(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const pending *)a)->v->slot;
    uintptr_t y = (uintptr_t)((const pending *)b)->v->slot;
    return x < y ? -1 : x > y;
}

/* slot->grad + p->g (or p->g when the slot is empty) into p->next; slot locked. */
static tf_status slot_sum(tf_session *s, pending *p)
{
    tf_grad_slot *slot = p->v->slot;
    if (!slot->grad) {
        tf_tensor_retain(p->g->value);
        p->next = p->g->value;
        return TF_OK;
    }
    tf_eager *old = tf__eager_new(s->rt, slot->grad, false), *sum = NULL;
    tf_status st = old ? tf_session_add(s, old, p->g, &sum) : TF_ERR_OUT_OF_MEMORY;
    if (!old)
        tf__error(st, "backward", NULL, "out of memory");
    if (!st) {
        tf_tensor_retain(sum->value);
        p->next = sum->value;
    }
    tf_eager_release(sum);
    tf_eager_release(old);
    return st;
}

/*
 * Adds every cot[i] into its variable's grad slot, all or nothing: the new
 * values are computed with every slot involved locked (in address order, so
 * concurrent backward passes cannot deadlock) and published only when all of
 * them succeeded; on any failure no slot changes.
 */
static tf_status accumulate_all(tf_session *s, const graph *g, tf_eager **cot)
{
    size_t n = 0;
    for (size_t i = 0; i < g->n; i++)
        n += cot[i] && g->at[i]->slot;
    if (n == 0)
        return TF_OK;
    pending *p = tf__calloc(n, sizeof *p);
    if (!p)
        return tf__error(TF_ERR_OUT_OF_MEMORY, "backward", NULL, "out of memory");
    for (size_t i = 0, j = 0; i < g->n; i++)
        if (cot[i] && g->at[i]->slot)
            p[j++] = (pending){g->at[i], cot[i], NULL};
    qsort(p, n, sizeof *p, pending_by_slot);
    for (size_t j = 0; j < n; j++)
        pthread_mutex_lock(&p[j].v->slot->lock);
    tf_status st = TF_OK;
    for (size_t j = 0; j < n && !st; j++)
        st = slot_sum(s, &p[j]);
    for (size_t j = n; j-- > 0;) {
        tf_grad_slot *slot = p[j].v->slot;
        if (!st) {
            tf_tensor_release(slot->grad);
            slot->grad = p[j].next;
        } else {
            tf_tensor_release(p[j].next);
        }
        pthread_mutex_unlock(&slot->lock);
    }
    tf__free(p);
    return st;
}

static tf_status backward_run(tf_eager *x, tf_eager *seed, tf_engine *engine)
{
    tf_session s = tf__session_make(x->rt, engine, x->rt->defer);
    graph g = {0};
    tf_status st = x->tracked ? tf__graph_walk(&g, x, true) : TF_OK;
    if (st || !x->tracked) {
        tf__graph_free(&g);
        return st; /* nothing depends on a variable: nothing to accumulate */
    }
    program *pr = tf__program_get(x->rt, &g, NULL, 1);
    tf_eager **cot = tf__calloc(g.n, sizeof *cot);
    if (!pr || !cot) {
        tf__program_free(pr);
        tf__free(cot);
        tf__graph_free(&g);
        return tf__error(TF_ERR_OUT_OF_MEMORY, "backward", NULL, "out of memory");
    }
    /* everything is computed first; slots change only when all succeeded.
       A variable reached only through zero derivatives (sign, compare, a
       float -> int -> float round trip) has d x / d leaf = 0: it gets a zero,
       as tf_runtime_grad returns one, rather than being left empty as if
       x did not depend on it. */
    if (pr->active)
        share_forward_batch(&s, &g);
    if (pr->active && !(st = reverse(&s, &g, pr, seed, NULL, cot)))
        for (size_t i = 0; i < g.n && !st; i++)
            if (!cot[i] && g.at[i]->slot)
                st = tf__zeros_like(&s, g.at[i], &cot[i]);
    for (size_t i = 0; i < g.n && !st; i++)
        if (cot[i] && g.at[i]->slot)
            st = make_dense(&s, &cot[i]);
    end_batch(&s, &st);
    if (!st)
        st = accumulate_all(&s, &g, cot);
    release_all(cot, g.n);
    tf__program_free(pr);
    tf__graph_free(&g);
    return st;
}

static tf_status backward_checked(tf_eager *x, tf_eager *seed, tf_engine *engine)
{
    uint32_t token = tf__suspend_begin(x->rt);
    tf_status st = backward_run(x, seed, engine);
    tf__suspend_end(x->rt, token);
    return st;
}

TF_API tf_status tf_eager_backward(tf_eager *x, tf_engine *engine)
{
    if (!x || !engine)
        return tf__error(TF_ERR_VALIDATION, "backward", x ? "engine" : "tensor",
                         "backward: NULL argument");
    if (x->value->numel != 1)
        return tf__error(TF_ERR_NON_SCALAR_GRAD, "backward", "tensor",
                         "backward: the output has %zu elements; backward needs a scalar (use "
                         "tf_eager_backward_with_seed for other shapes)",
                         x->value->numel);
    tf_session s = tf__session_make(x->rt, engine, TF_DEFER_OFF);
    tf_eager *one;
    tf_status st = tf_session_full(&s, x->value->dtype, x->value->rank, x->value->shape, 1.0, &one);
    if (st)
        return st;
    st = backward_checked(x, one, engine);
    tf_eager_release(one);
    return st;
}

TF_API tf_status tf_eager_backward_with_seed(tf_eager *x, tf_eager *seed, tf_engine *engine)
{
    if (!x || !engine)
        return tf__error(TF_ERR_VALIDATION, "backward", x ? "engine" : "tensor",
                         "backward: NULL argument");
    tf_status st = check_same_rt("backward", x->rt, seed, "seed");
    if (st)
        return st;
    const tf_tensor *a = seed->value, *b = x->value;
    if (a->dtype != b->dtype)
        return tf__error(TF_ERR_DTYPE_MISMATCH, "backward", "seed",
                         "backward: the seed is %s, the output %s", tf_dtype_name(a->dtype),
                         tf_dtype_name(b->dtype));
    if (!tf__same_shape(a, b))
        return tf__error(TF_ERR_SHAPE_MISMATCH, "backward", "seed",
                         "backward: the seed's shape (rank %u) differs from the output's (rank "
                         "%u)",
                         a->rank, b->rank);
    return backward_checked(x, seed, engine);
}

/*
 * wrt is inactive (the output does not depend on it through recorded ops):
 * NULL for the _optional forms, a Validation error naming "wrt" otherwise.
 */
static tf_status inactive(const char *op, bool optional, tf_eager **out)
{
    if (optional) {
        *out = NULL;
        return TF_OK;
    }
    return tf__error(TF_ERR_VALIDATION, op, "wrt",
                     "%s: the output does not depend on wrt through recorded ops (wrt is "
                     "inactive; use the _optional form to test for that)",
                     op);
}

/* ---- functional reverse mode ---- */

static tf_status vjp_impl(const char *op, tf_runtime *rt, tf_engine *engine, tf_eager *output,
                          tf_eager *wrt, tf_eager *cotangent, bool optional, tf_eager **out)
{
    tf_session s = tf__session_make(rt, engine, rt->defer);
    graph g = {0};
    tf_status st = tf__graph_walk(&g, output, false);
    size_t wi = st ? 0 : tf__graph_lookup(&g, wrt);
    program *pr = st || wi >= g.n ? NULL : tf__program_get(rt, &g, wrt, 2);
    if (!st && wi < g.n && !pr)
        st = tf__error(TF_ERR_OUT_OF_MEMORY, op, NULL, "out of memory");
    if (st || !pr || !pr->active) {
        tf__program_free(pr);
        tf__graph_free(&g);
        if (st)
            return st;
        return inactive(op, optional, out);
    }
    tf_eager **cot = tf__calloc(g.n, sizeof *cot);
    if (!cot)
        st = tf__error(TF_ERR_OUT_OF_MEMORY, op, NULL, "out of memory");
    if (!st) {
        share_forward_batch(&s, &g);
        st = reverse(&s, &g, pr, cotangent, wrt, cot);
    }
    if (!st && !cot[wi])
        st = tf__zeros_like(&s, wrt, &cot[wi]); /* reached only through zero derivatives */
    if (!st)
        st = make_dense(&s, &cot[wi]);
    end_batch(&s, &st);
    if (!st) {
        *out = cot[wi];
        cot[wi] = NULL;
    }
    if (cot)
        release_all(cot, g.n);
    tf__program_free(pr);
    tf__graph_free(&g);
    return st;
}

static tf_status check_functional(const char *op, tf_runtime *rt, tf_engine *engine,
                                  tf_eager *output, tf_eager *wrt, tf_eager **out)
{
    if (!rt || !engine || !out)
        return tf__error(TF_ERR_VALIDATION, op,
                         !rt       ? "runtime"
                         : !engine ? "engine"
                                   : "out",
                         "%s: NULL argument", op);
    tf_status st = check_same_rt(op, rt, output, "output");
    return st ? st : check_same_rt(op, rt, wrt, "wrt");
}

static tf_status grad_impl(const char *op, tf_runtime *rt, tf_engine *engine, tf_eager *output,
                           tf_eager *wrt, bool optional, tf_eager **out)
{
    tf_status st = check_functional(op, rt, engine, output, wrt, out);
    if (st)
        return st;
    if (output->value->numel != 1)
        return tf__error(TF_ERR_NON_SCALAR_GRAD, op, "output",
                         "%s: the output has %zu elements; grad needs a scalar (use vjp)", op,
                         output->value->numel);
    tf_session s = tf__session_make(rt, engine, TF_DEFER_OFF);
    tf_eager *one;
    const tf_tensor *v = output->value;
    if ((st = tf_session_full(&s, v->dtype, v->rank, v->shape, 1.0, &one)))
        return st;
    st = vjp_impl(op, rt, engine, output, wrt, one, optional, out);
    tf_eager_release(one);
    return st;
}

TF_API tf_status tf_runtime_grad(tf_runtime *rt, tf_engine *engine, tf_eager *output, tf_eager *wrt,
                                 tf_eager **out)
{
    return grad_impl("grad", rt, engine, output, wrt, false, out);
}

TF_API tf_status tf_runtime_grad_optional(tf_runtime *rt, tf_engine *engine, tf_eager *output,
                                          tf_eager *wrt, tf_eager **out)
{
    return grad_impl("grad_optional", rt, engine, output, wrt, true, out);
}

static tf_status seeded_checked(const char *op, tf_runtime *rt, tf_engine *engine, tf_eager *output,
                                tf_eager *wrt, tf_eager *seed, bool forward, bool optional,
                                tf_eager **out);

TF_API tf_status tf_runtime_vjp(tf_runtime *rt, tf_engine *engine, tf_eager *output, tf_eager *wrt,
                                tf_eager *cotangent, tf_eager **out)
{
    return seeded_checked("vjp", rt, engine, output, wrt, cotangent, false, false, out);
}

TF_API tf_status tf_runtime_vjp_optional(tf_runtime *rt, tf_engine *engine, tf_eager *output,
                                         tf_eager *wrt, tf_eager *cotangent, tf_eager **out)
{
    return seeded_checked("vjp_optional", rt, engine, output, wrt, cotangent, false, true, out);
}

/* ---- forward mode ---- */

/* Runs the forward rule of g->at[i] with the tangents known so far. */
static tf_status jvp_step(tf_session *s, const graph *g, size_t i, tf_eager **tan)
{
    tf_eager *e = g->at[i];
    const tf_node *nd = e->node;
    tf_eager *small[8];
    tf_eager **tin = nd->n_inputs <= 8 ? small : tf__calloc(nd->n_inputs, sizeof *tin);
    if (!tin)
        return tf__error(TF_ERR_OUT_OF_MEMORY, "jvp", NULL, "out of memory");
    bool any = false;
    for (uint32_t j = 0; j < nd->n_inputs; j++) {
        size_t k = tf__graph_lookup(g, nd->inputs[j]);
        tin[j] = k < g->n ? tan[k] : NULL;
        any = any || tin[j];
    }
    tf_status st = TF_OK;
    if (any) {
        const tf_op_rule *rule = tf__op_rule(nd->op);
        st = rule->jvp ? rule->jvp(s, e, nd, tin, &tan[i]) : unsupported_rule("jvp", nd, "forward");
    }
    if (tin != small)
        tf__free(tin);
    return st;
}

static tf_status jvp_impl(const char *op, tf_runtime *rt, tf_engine *engine, tf_eager *output,
                          tf_eager *wrt, tf_eager *tangent, bool optional, tf_eager **out)
{
    tf_session s = tf__session_make(rt, engine, rt->defer);
    graph g = {0};
    tf_status st = tf__graph_walk(&g, output, false);
    size_t wi = st ? 0 : tf__graph_lookup(&g, wrt);
    bool *needs = st || wi >= g.n ? NULL : tf__graph_needs(&g, wrt);
    tf_eager **tan = needs ? tf__calloc(g.n, sizeof *tan) : NULL;
    if (!st && wi < g.n && !tan)
        st = tf__error(TF_ERR_OUT_OF_MEMORY, op, NULL, "out of memory");
    if (st || wi >= g.n || !needs[g.n - 1]) {
        tf__free(needs);
        tf__free(tan);
        tf__graph_free(&g);
        if (st)
            return st;
        return inactive(op, optional, out);
    }
    tf_eager_retain(tangent);
    tan[wi] = tangent;
    share_forward_batch(&s, &g);
    for (size_t i = wi + 1; i < g.n && !st; i++)
        if (needs[i] && g.at[i]->node)
            st = jvp_step(&s, &g, i, tan);
    if (!st && !tan[g.n - 1])
        st = tf__zeros_like(&s, output, &tan[g.n - 1]);
    if (!st)
        st = make_dense(&s, &tan[g.n - 1]);
    end_batch(&s, &st);
    if (!st) {
        *out = tan[g.n - 1];
        tan[g.n - 1] = NULL;
    }
    release_all(tan, g.n);
    tf__free(needs);
    tf__graph_free(&g);
    return st;
}

/*
 * Checks the arguments of vjp (seed: a cotangent like the output) or jvp
 * (seed: a tangent like wrt) before running it.
 */
static tf_status seeded_checked(const char *op, tf_runtime *rt, tf_engine *engine, tf_eager *output,
                                tf_eager *wrt, tf_eager *seed, bool forward, bool optional,
                                tf_eager **out)
{
    const char *name = forward ? "tangent" : "cotangent";
    tf_status st = check_functional(op, rt, engine, output, wrt, out);
    if (!st)
        st = check_same_rt(op, rt, seed, name);
    if (!st)
        st = forward ? check_like(op, name, seed, wrt, "wrt")
                     : check_like(op, name, seed, output, "the output");
    if (st)
        return st;
    return forward ? jvp_impl(op, rt, engine, output, wrt, seed, optional, out)
                   : vjp_impl(op, rt, engine, output, wrt, seed, optional, out);
}

TF_API tf_status tf_runtime_jvp(tf_runtime *rt, tf_engine *engine, tf_eager *output, tf_eager *wrt,
                                tf_eager *tangent, tf_eager **out)
{
    return seeded_checked("jvp", rt, engine, output, wrt, tangent, true, false, out);
}

TF_API tf_status tf_runtime_jvp_optional(tf_runtime *rt, tf_engine *engine, tf_eager *output,
                                         tf_eager *wrt, tf_eager *tangent, tf_eager **out)
{
    return seeded_checked("jvp_optional", rt, engine, output, wrt, tangent, true, true, out);
}
