/*
 * optim_rules.c - the arithmetic of each optimizer as session elementwise
 * ops (optim.h gives the formulas, PyTorch's).
 *
 * The step's session defers its elementwise ops (TF_DEFER_ALWAYS), so what
 * is issued back to back with one shape and dtype becomes one FUSED call
 * that writes only the results still held when it runs. Two things follow,
 * and the code is shaped by them:
 *
 * - Intermediates are released as soon as the next op is issued: a result
 *   nobody holds when its batch runs is never written.
 * - A batch takes at most 5 inputs (scalar constants included) and 8 steps.
 *   Adam's update needs more, so it is cut where its state is complete: the
 *   moments are computed on views of shape [n] (phase A), the parameter on
 *   views of shape [n, 1] (phase B), and AdamW's decay on [n, 1, 1]: a new
 *   shape closes the open batch, so each phase is one call, and what crosses
 *   from one to the next (m, v, the decayed p) is exactly what must be
 *   written anyway. The views cost nothing (reshape of dense memory).
 *
 * Every helper takes the chain and does nothing once it holds an error;
 * `own` says which operands the helper releases once the op is issued.
 */
#include <math.h>
#include <string.h>

#include <tenferro/ops.h>

#include "optim_internal.h"

typedef struct chain {
    tf_session *s;
    tt_consts *c;
    tf_dtype dtype;
    tf_status st;
} chain;

enum { OWN_X = 1, OWN_Y = 2, OWN_XY = 3 };

typedef tf_status (*binary_fn)(tf_session *, tf_eager *, tf_eager *, tf_eager **);

static tf_eager *op2(chain *k, binary_fn f, tf_eager *x, tf_eager *y, int own)
{
    tf_eager *r = NULL;
    if (!k->st && x && y) {
        tf_status st = f(k->s, x, y, &r);
        if (st)
            k->st = tt_fail_core(st, "optim step");
    }
    if (own & OWN_X)
        tf_eager_release(x);
    if (own & OWN_Y)
        tf_eager_release(y);
    return r;
}

/* A constant of the chain's dtype (borrowed from the step's cache). */
static tf_eager *K(chain *k, double value)
{
    if (k->st)
        return NULL;
    tf_eager *e = tt_const(k->c, k->dtype, value);
    if (!e)
        k->st = tf_train_error_status();
    return e;
}

/* x viewed with another shape (a new reference; x is released if `own`). */
static tf_eager *view(chain *k, tf_eager *x, size_t rank, const int64_t *shape, int own)
{
    tf_eager *r = NULL;
    if (!k->st && x) {
        tf_status st = tf_session_reshape(k->s, x, rank, shape, &r);
        if (st)
            k->st = tt_fail_core(st, "optim step: reshape");
    }
    if (own)
        tf_eager_release(x);
    return r;
}

static tf_eager *sqrt_of(chain *k, tf_eager *x)
{
    tf_eager *r = NULL;
    if (!k->st && x) {
        tf_status st = tf_session_sqrt(k->s, x, &r);
        if (st)
            k->st = tt_fail_core(st, "optim step");
    }
    tf_eager_release(x);
    return r;
}

static tf_eager *retained(tf_eager *x)
{
    tf_eager_retain(x);
    return x;
}

/* The shapes of one update: the parameter's own, and the phases' views. */
typedef struct shapes {
    size_t rank;
    const int64_t *shape;
    int64_t a[1], b[2], c[3]; /* [n], [n, 1], [n, 1, 1] */
} shapes;

static shapes shapes_of(const tf_eager *p)
{
    const tf_tensor *t = tf_eager_value(p);
    int64_t n = (int64_t)tf_tensor_numel(t);
    shapes z = {tf_tensor_rank(t), tf_tensor_shape(t), {n}, {n, 1}, {n, 1, 1}};
    return z;
}

/* ---- SGD ---- */

/* The momentum buffer of this step (new reference), from the direction d (borrowed). */
static tf_eager *sgd_buffer(chain *k, const tt_update *u, const shapes *z, tf_eager *d)
{
    if (!u->state[0])
        return retained(d); /* PyTorch: the buffer starts as a copy of d */
    const tf_optim_options *o = u->o;
    tf_eager *b = op2(k, tf_session_mul, view(k, u->state[0], 1, z->a, 0), K(k, o->momentum),
                      OWN_X);
    tf_eager *scaled = o->dampening != 0
                           ? op2(k, tf_session_mul, K(k, 1 - o->dampening), d, 0)
                           : retained(d);
    return op2(k, tf_session_add, b, scaled, OWN_XY);
}

/*
 * Makes the constants of an update before its first elementwise op, so that
 * nothing else is issued between the ops of a phase.
 */
static void prepare(chain *k, const double *values, size_t n)
{
    for (size_t i = 0; i < n; i++)
        K(k, values[i]);
}

static void sgd(chain *k, tt_update *u)
{
    const tf_optim_options *o = u->o;
    shapes z = shapes_of(u->p);
    prepare(k, (const double[]){o->weight_decay, o->momentum, 1 - o->dampening, o->lr}, 4);
    tf_eager *p = view(k, u->p, 1, z.a, 0);
    tf_eager *d = view(k, u->g, 1, z.a, 0);
    if (o->weight_decay != 0)
        d = op2(k, tf_session_add, d, op2(k, tf_session_mul, K(k, o->weight_decay), p, 0),
                OWN_XY);
    if (o->momentum != 0) {
        tf_eager *b = sgd_buffer(k, u, &z, d);
        if (o->nesterov) {
            d = op2(k, tf_session_add, d, op2(k, tf_session_mul, K(k, o->momentum), b, 0),
                    OWN_XY);
        } else {
            tf_eager_release(d);
            d = retained(b);
        }
        u->state_out[0] = view(k, b, z.rank, z.shape, 1);
    }
    tf_eager *next = op2(k, tf_session_sub, p, op2(k, tf_session_mul, K(k, o->lr), d, OWN_Y),
                         OWN_XY);
    u->p_out = view(k, next, z.rank, z.shape, 1);
}

/* ---- Adam and AdamW ---- */

/* Adam's constants at step t: a and c of the update (see optim.h). */
static void adam_ac(const tf_optim_options *o, uint64_t step, double *a, double *c)
{
    double t = (double)step;
    double bc1 = 1 - pow(o->beta1, t), bc2 = 1 - pow(o->beta2, t);
    *a = bc1 / (o->lr * sqrt(bc2));
    *c = o->eps * bc1 / o->lr;
}

/* Phase A: the moments m, v on [n] views (new references in *m, *v). */
static void adam_moments(chain *k, tf_optim_kind kind, tt_update *u, const shapes *z,
                         tf_eager **m, tf_eager **v)
{
    const tf_optim_options *o = u->o;
    tf_eager *g = view(k, u->g, 1, z->a, 0);
    if (kind == TF_OPTIM_ADAM && o->weight_decay != 0) {
        tf_eager *decay = op2(k, tf_session_mul, K(k, o->weight_decay),
                              view(k, u->p, 1, z->a, 0), OWN_Y);
        g = op2(k, tf_session_add, g, decay, OWN_XY);
    }
    double c1 = 1 - o->beta1, c2 = 1 - o->beta2;
    tf_eager *gg = op2(k, tf_session_mul, g, g, 0);
    if (u->state[0]) { /* m + c1 (g - m), v + c2 (g g - v): PyTorch's lerp */
        tf_eager *m0 = view(k, u->state[0], 1, z->a, 0), *v0 = view(k, u->state[1], 1, z->a, 0);
        tf_eager *dm = op2(k, tf_session_mul, K(k, c1), op2(k, tf_session_sub, g, m0, 0), OWN_Y);
        *m = op2(k, tf_session_add, m0, dm, OWN_XY);
        tf_eager *dv = op2(k, tf_session_mul, K(k, c2), op2(k, tf_session_sub, gg, v0, OWN_X),
                           OWN_Y);
        *v = op2(k, tf_session_add, v0, dv, OWN_XY);
    } else { /* the same from m = v = 0 */
        *m = op2(k, tf_session_mul, K(k, c1), g, 0);
        *v = op2(k, tf_session_mul, K(k, c2), gg, OWN_Y);
    }
    tf_eager_release(g);
}

/* Phase B: p - m / (sqrt(v) a + c) on [n, 1] views, with p decayed first for AdamW. */
static tf_eager *adam_param(chain *k, tf_optim_kind kind, tt_update *u, const shapes *z,
                            tf_eager *m, tf_eager *v)
{
    const tf_optim_options *o = u->o;
    tf_eager *p;
    if (kind == TF_OPTIM_ADAMW && o->weight_decay != 0) /* its own phase, [n, 1, 1] */
        p = view(k,
                 op2(k, tf_session_mul, view(k, u->p, 3, z->c, 0),
                     K(k, 1 - o->lr * o->weight_decay), OWN_X),
                 2, z->b, 1);
    else
        p = view(k, u->p, 2, z->b, 0);
    if (o->lr == 0)
        return p; /* the step size is zero (a and c below would be infinite) */
    double a, c;
    adam_ac(o, u->t, &a, &c);
    tf_eager *den = op2(k, tf_session_mul, sqrt_of(k, view(k, v, 2, z->b, 0)), K(k, a), OWN_X);
    den = op2(k, tf_session_add, den, K(k, c), OWN_X);
    tf_eager *delta = op2(k, tf_session_div, view(k, m, 2, z->b, 0), den, OWN_XY);
    return op2(k, tf_session_sub, p, delta, OWN_XY);
}

static void adam(chain *k, tf_optim_kind kind, tt_update *u)
{
    const tf_optim_options *o = u->o;
    shapes z = shapes_of(u->p);
    double a = 0, c = 0;
    if (o->lr != 0)
        adam_ac(o, u->t, &a, &c);
    prepare(k, (const double[]){o->weight_decay, 1 - o->beta1, 1 - o->beta2, a, c,
                                1 - o->lr * o->weight_decay}, 6);
    tf_eager *m = NULL, *v = NULL;
    adam_moments(k, kind, u, &z, &m, &v);
    u->p_out = view(k, adam_param(k, kind, u, &z, m, v), z.rank, z.shape, 1);
    u->state_out[0] = view(k, m, z.rank, z.shape, 1);
    u->state_out[1] = view(k, v, z.rank, z.shape, 1);
}

tf_status tt_rule_update(tf_optim_kind kind, tf_session *s, tt_consts *c, tt_update *u)
{
    chain k = {s, c, tf_tensor_dtype(tf_eager_value(u->p)), TF_OK};
    if (kind == TF_OPTIM_SGD)
        sgd(&k, u);
    else
        adam(&k, kind, u);
    if (k.st) {
        tf_eager_release(u->p_out);
        u->p_out = NULL;
        for (int i = 0; i < TT_MAX_STATE; i++) {
            tf_eager_release(u->state_out[i]);
            u->state_out[i] = NULL;
        }
    }
    return k.st;
}

/* ---- the constants of a step ---- */

tf_eager *tt_const(tt_consts *c, tf_dtype dtype, double value)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->items[i].dtype == dtype && memcmp(&c->items[i].value, &value, sizeof value) == 0)
            return c->items[i].e;
    if (!tt_grow((void **)&c->items, &c->cap, c->n, sizeof *c->items)) {
        tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "optim step: out of memory");
        return NULL;
    }
    tf_eager *e = NULL;
    tf_status st = tf_session_scalar(c->s, dtype, value, &e);
    if (st) {
        tt_fail_core(st, "optim step: a constant");
        return NULL;
    }
    c->items[c->n++] = (struct tt_const){dtype, value, e};
    return e;
}

void tt_consts_free(tt_consts *c)
{
    for (size_t i = 0; i < c->n; i++)
        tf_eager_release(c->items[i].e);
    tt_free(c->items);
    memset(c, 0, sizeof *c);
}
