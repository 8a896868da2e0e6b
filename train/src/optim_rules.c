/*
 * optim_rules.c - the arithmetic of each optimizer as session elementwise
 * ops (optim.h gives the formulas, PyTorch's).
 *
 * The step's session defers its elementwise ops (TF_DEFER_ALWAYS), so what
 * is issued back to back with one shape and dtype becomes one FUSED call
 * that writes only the results still held when it runs. So:
 *
 * - Intermediates are released as soon as the next op is issued: a result
 *   nobody holds when its batch runs is never written.
 * - Scalar constants (lr, betas, bias corrections, eps) are 0-d tensors the
 *   session filled, which an engine of ABI 1.5 or later takes as FUSED
 *   immediates: they spend none of a program's 5 inputs. An update reads at
 *   most 4 tensors (p, g and two state tensors), has at most 14 steps
 *   (Adam with L2 decay), of a batch's 16, and holds at most 3 results, so
 *   each update is one FUSED call; optim_step.c closes the batch after each
 *   parameter's update, so that the next one starts its own.
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

/* ---- SGD ---- */

/* The momentum buffer of this step (new reference), from the direction d (borrowed). */
static tf_eager *sgd_buffer(chain *k, const tt_update *u, tf_eager *d)
{
    if (!u->state[0])
        return retained(d); /* PyTorch: the buffer starts as a copy of d */
    const tf_optim_options *o = u->o;
    tf_eager *b = op2(k, tf_session_mul, u->state[0], K(k, o->momentum), 0);
    tf_eager *scaled = o->dampening != 0
                           ? op2(k, tf_session_mul, K(k, 1 - o->dampening), d, 0)
                           : retained(d);
    return op2(k, tf_session_add, b, scaled, OWN_XY);
}

static void sgd(chain *k, tt_update *u)
{
    const tf_optim_options *o = u->o;
    tf_eager *d = retained(u->g);
    if (o->weight_decay != 0)
        d = op2(k, tf_session_add, d, op2(k, tf_session_mul, K(k, o->weight_decay), u->p, 0),
                OWN_XY);
    if (o->momentum != 0) {
        tf_eager *b = sgd_buffer(k, u, d);
        if (o->nesterov) {
            d = op2(k, tf_session_add, d, op2(k, tf_session_mul, K(k, o->momentum), b, 0),
                    OWN_XY);
        } else {
            tf_eager_release(d);
            d = retained(b);
        }
        u->state_out[0] = b;
    }
    u->p_out =
        op2(k, tf_session_sub, u->p, op2(k, tf_session_mul, K(k, o->lr), d, OWN_Y), OWN_Y);
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

/* The moments m, v (new references in *m, *v). */
static void adam_moments(chain *k, tf_optim_kind kind, tt_update *u, tf_eager **m, tf_eager **v)
{
    const tf_optim_options *o = u->o;
    tf_eager *g = retained(u->g);
    if (kind == TF_OPTIM_ADAM && o->weight_decay != 0) {
        tf_eager *decay = op2(k, tf_session_mul, K(k, o->weight_decay), u->p, 0);
        g = op2(k, tf_session_add, g, decay, OWN_XY);
    }
    double c1 = 1 - o->beta1, c2 = 1 - o->beta2;
    tf_eager *gg = op2(k, tf_session_mul, g, g, 0);
    if (u->state[0]) { /* m + c1 (g - m), v + c2 (g g - v): PyTorch's lerp */
        tf_eager *m0 = u->state[0], *v0 = u->state[1];
        tf_eager *dm = op2(k, tf_session_mul, K(k, c1), op2(k, tf_session_sub, g, m0, 0), OWN_Y);
        *m = op2(k, tf_session_add, m0, dm, OWN_Y);
        tf_eager *dv = op2(k, tf_session_mul, K(k, c2), op2(k, tf_session_sub, gg, v0, OWN_X),
                           OWN_Y);
        *v = op2(k, tf_session_add, v0, dv, OWN_Y);
    } else { /* the same from m = v = 0 */
        *m = op2(k, tf_session_mul, K(k, c1), g, 0);
        *v = op2(k, tf_session_mul, K(k, c2), gg, OWN_Y);
    }
    tf_eager_release(g);
}

/* p - m / (sqrt(v) a + c), with p decayed first for AdamW (new reference). */
static tf_eager *adam_param(chain *k, tf_optim_kind kind, tt_update *u, tf_eager *m, tf_eager *v)
{
    const tf_optim_options *o = u->o;
    tf_eager *p = kind == TF_OPTIM_ADAMW && o->weight_decay != 0
                      ? op2(k, tf_session_mul, u->p, K(k, 1 - o->lr * o->weight_decay), 0)
                      : retained(u->p);
    if (o->lr == 0)
        return p; /* the step size is zero (a and c below would be infinite) */
    double a, c;
    adam_ac(o, u->t, &a, &c);
    tf_eager *den = op2(k, tf_session_mul, sqrt_of(k, retained(v)), K(k, a), OWN_X);
    den = op2(k, tf_session_add, den, K(k, c), OWN_X);
    tf_eager *delta = op2(k, tf_session_div, m, den, OWN_Y);
    return op2(k, tf_session_sub, p, delta, OWN_XY);
}

static void adam(chain *k, tf_optim_kind kind, tt_update *u)
{
    tf_eager *m = NULL, *v = NULL;
    adam_moments(k, kind, u, &m, &v);
    u->p_out = adam_param(k, kind, u, m, v);
    u->state_out[0] = m;
    u->state_out[1] = v;
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
