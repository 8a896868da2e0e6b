/*
 * linalg_rules_spectral.c - reverse (VJP) and forward (JVP) rules of
 * tenferro.linalg's spectral decompositions and what is built on them: eigh,
 * svd, pinv and norm (its spectral orders through the singular values),
 * written only with ops of the host's ops table (so they are recorded and
 * differentiable again; the builder is linalg_lb.h). Matrices on the last
 * two axes; X^T below swaps them. Each section gives its formulas.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "linalg_lb.h"

#define EIGH LINALG_ID ".eigh"

/* ---- eigh ---- */

/* x + v (a scalar of x's dtype). */
static tf_ext_tensor *lb_addc(lb *b, tf_ext_tensor *x, double v)
{
    tf_ext_tensor *c = NULL;
    if (b->st || !x)
        return NULL;
    tf_status st = b->o->scalar(b->s, x, v, &c);
    c = keep(b, st, c);
    return lb_add(b, x, c);
}

/* w [..., n] reshaped to [..., 1, n] (row) or [..., n, 1] (column). */
static tf_ext_tensor *lb_vec2(lb *b, tf_ext_tensor *w, int as_row)
{
    tf_ext_tensor *r = NULL;
    if (b->st || !w)
        return NULL;
    uint32_t rank = b->o->rank(w);
    int64_t shape[TF_MAX_RANK];
    for (uint32_t i = 0; i + 1 < rank; i++)
        shape[i] = b->o->extent(w, i);
    shape[rank - 1] = as_row ? 1 : b->o->extent(w, rank - 1);
    shape[rank] = as_row ? b->o->extent(w, rank - 1) : 1;
    tf_status st = b->o->reshape(b->s, w, rank + 1, shape, &r);
    return keep(b, st, r);
}

/* The identity of w's batch shape, [..., n, n]. */
static tf_ext_tensor *lb_eye(lb *b, tf_ext_tensor *w)
{
    tf_ext_tensor *ones = NULL, *eye = NULL;
    if (b->st || !w)
        return NULL;
    uint32_t rank = b->o->rank(w);
    int64_t shape[TF_MAX_RANK];
    for (uint32_t i = 0; i < rank; i++)
        shape[i] = b->o->extent(w, i);
    tf_status st = b->o->full(b->s, w, rank, shape, 1.0, &ones);
    ones = keep(b, st, ones);
    if (b->st)
        return NULL;
    st = b->o->diag_embed(b->s, ones, &eye);
    return keep(b, st, eye);
}

/*
 * F_ij = E_ij / (E_ij^2 + eps) with E_ij = w_j - w_i, zero on the diagonal:
 * 1 / (w_j - w_i) for eps = 0, a bounded (Lorentzian-broadened) version for
 * eps > 0 that keeps degenerate spectra finite.
 */
static tf_ext_tensor *eig_f(lb *b, tf_ext_tensor *w, double eps)
{
    tf_ext_tensor *e = lb_sub(b, lb_vec2(b, w, 1), lb_vec2(b, w, 0));
    tf_ext_tensor *den = lb_add(b, lb_mul(b, e, e), lb_eye(b, w)); /* 1 on the diagonal */
    if (eps > 0)
        den = lb_addc(b, den, eps);
    tf_ext_tensor *r = NULL;
    if (b->st || !e || !den)
        return NULL;
    tf_status st = b->o->div(b->s, e, den, &r);
    return keep(b, st, r);
}

tf_status linalg_eigh_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                          const int *need, tf_ext_tensor **cin)
{
    lb b = lb_begin(c);
    tf_ext_tensor *wv[2];
    lb_outputs(&b, EIGH, call, 2, wv);
    tf_ext_tensor *w = wv[0], *v = wv[1];
    tf_ext_tensor *vt = lb_transpose_last2(&b, v), *mid;
    if (call->out_index == 0) { /* wbar: V diag(wbar) V^T */
        tf_ext_tensor *d = NULL;
        if (!b.st) {
            tf_status st = b.o->diag_embed(b.s, cot, &d);
            d = keep(&b, st, d);
        }
        mid = d;
    } else { /* Vbar: V (F o (V^T Vbar - Vbar^T V) / 2) V^T */
        tf_ext_tensor *g = lb_matmul(&b, vt, cot);
        tf_ext_tensor *skew = lb_scale(&b, lb_sub(&b, g, lb_transpose_last2(&b, g)), 0.5);
        mid = lb_mul(&b, eig_f(&b, w, call->scalars[0].f), skew);
    }
    lb_set(&b, lb_matmul(&b, lb_matmul(&b, v, mid), vt), &cin[0]);
    return lb_done(&b);
}

tf_status linalg_eigh_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                          tf_ext_tensor *const *tan, tf_ext_tensor **tout)
{
    lb b = lb_begin(c);
    tf_ext_tensor *wv[2];
    lb_outputs(&b, EIGH, call, 2, wv);
    tf_ext_tensor *w = wv[0], *v = wv[1];
    tf_ext_tensor *m = lb_matmul(&b, lb_matmul(&b, lb_transpose_last2(&b, v), tan[0]), v);
    if (call->out_index == 0) {
        tf_ext_tensor *d = NULL;
        if (!b.st && m) {
            tf_status st = b.o->diagonal(b.s, m, &d);
            d = keep(&b, st, d);
        }
        lb_set(&b, d, tout);
    } else {
        lb_set(&b, lb_matmul(&b, v, lb_mul(&b, eig_f(&b, w, call->scalars[0].f), m)), tout);
    }
    return lb_done(&b);
}

/* ---- svd (thin) ----
 * A = U diag(s) V^T, F_ij = 1/(s_j^2 - s_i^2) (regularised by eps as for
 * eigh), P = U^T dA V:
 *   Ubar: Abar = U (F o (U^T Ubar - Ubar^T U)) S V^T + (Ubar - U U^T Ubar) S^-1 V^T
 *   sbar: Abar = U diag(sbar) V^T
 *   Vbar: Abar = U S (F o (V^T Vbar - Vbar^T V)) V^T + U S^-1 (Vbar - V V^T Vbar)^T
 *   ds = diag(P); dU = U (F o (P S + S P^T)) + (dA V - U P) S^-1;
 *   dV = V (F o (S P + P^T S)) + (dA^T U - V P^T) S^-1
 */
#define SVD LINALG_ID ".svd"

typedef struct svd_parts {
    tf_ext_tensor *u, *s, *v, *srow, *scol, *f;
} svd_parts;

static void svd_parts_of(lb *b, const tf_ext_call *call, svd_parts *p)
{
    tf_ext_tensor *o[3];
    memset(p, 0, sizeof *p);
    lb_outputs(b, SVD, call, 3, o); /* the forward's, or recomputed (lb_outputs) */
    if (b->st)
        return;
    p->u = o[0];
    p->s = o[1];
    p->v = o[2];
    p->srow = lb_vec2(b, p->s, 1); /* [..., 1, k]: scales columns */
    p->scol = lb_vec2(b, p->s, 0); /* [..., k, 1]: scales rows */
    /* F only where U's or V's rule reads it: s's rule is U diag(sbar) V^T */
    if (call->out_index != 1)
        p->f = eig_f(b, lb_mul(b, p->s, p->s), call->scalars[0].f);
}

static tf_ext_tensor *lb_div(lb *b, tf_ext_tensor *x, tf_ext_tensor *y)
{
    tf_ext_tensor *r = NULL;
    if (b->st || !x || !y)
        return NULL;
    tf_status st = b->o->div(b->s, x, y, &r);
    return keep(b, st, r);
}

/* F o (X^T Y - Y^T X) */
static tf_ext_tensor *skew_f(lb *b, tf_ext_tensor *f, tf_ext_tensor *x, tf_ext_tensor *y)
{
    tf_ext_tensor *g = lb_matmul(b, lb_transpose_last2(b, x), y);
    return lb_mul(b, f, lb_sub(b, g, lb_transpose_last2(b, g)));
}

tf_status linalg_svd_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                         const int *need, tf_ext_tensor **cin)
{
    lb b = lb_begin(c);
    svd_parts p;
    svd_parts_of(&b, call, &p);
    tf_ext_tensor *vt = lb_transpose_last2(&b, p.v), *abar = NULL;
    if (call->out_index == 1) {
        /* U diag(sbar) V^T as (U with column j scaled by sbar_j) V^T: one product
           fewer than through diag_embed, and the same values (the diagonal
           product only adds zeros) */
        abar = lb_matmul(&b, lb_mul(&b, p.u, lb_vec2(&b, cot, 1)), vt);
    } else if (call->out_index == 0) {
        tf_ext_tensor *core = lb_mul(&b, skew_f(&b, p.f, p.u, cot), p.srow);
        tf_ext_tensor *perp =
            lb_sub(&b, cot, lb_matmul(&b, p.u, lb_matmul(&b, lb_transpose_last2(&b, p.u), cot)));
        abar = lb_add(&b, lb_matmul(&b, lb_matmul(&b, p.u, core), vt),
                      lb_matmul(&b, lb_div(&b, perp, p.srow), vt));
    } else {
        tf_ext_tensor *core = lb_mul(&b, p.scol, skew_f(&b, p.f, p.v, cot));
        tf_ext_tensor *perp = lb_sub(&b, cot, lb_matmul(&b, p.v, lb_matmul(&b, vt, cot)));
        abar = lb_add(&b, lb_matmul(&b, lb_matmul(&b, p.u, core), vt),
                      lb_matmul(&b, lb_div(&b, p.u, p.srow), lb_transpose_last2(&b, perp)));
    }
    lb_set(&b, abar, &cin[0]);
    return lb_done(&b);
}

tf_status linalg_svd_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                         tf_ext_tensor *const *tan, tf_ext_tensor **tout)
{
    lb b = lb_begin(c);
    svd_parts p;
    svd_parts_of(&b, call, &p);
    tf_ext_tensor *da = tan[0];
    tf_ext_tensor *pm = lb_matmul(&b, lb_matmul(&b, lb_transpose_last2(&b, p.u), da), p.v);
    tf_ext_tensor *pt = lb_transpose_last2(&b, pm), *r = NULL;
    if (call->out_index == 1) {
        if (!b.st && pm) {
            tf_status st = b.o->diagonal(b.s, pm, &r);
            r = keep(&b, st, r);
        }
    } else if (call->out_index == 0) {
        tf_ext_tensor *in = lb_add(&b, lb_mul(&b, pm, p.srow), lb_mul(&b, p.scol, pt));
        tf_ext_tensor *rest = lb_sub(&b, lb_matmul(&b, da, p.v), lb_matmul(&b, p.u, pm));
        r = lb_add(&b, lb_matmul(&b, p.u, lb_mul(&b, p.f, in)), lb_div(&b, rest, p.srow));
    } else {
        tf_ext_tensor *in = lb_add(&b, lb_mul(&b, p.scol, pm), lb_mul(&b, pt, p.srow));
        tf_ext_tensor *rest =
            lb_sub(&b, lb_matmul(&b, lb_transpose_last2(&b, da), p.u), lb_matmul(&b, p.v, pt));
        r = lb_add(&b, lb_matmul(&b, p.v, lb_mul(&b, p.f, in)), lb_div(&b, rest, p.srow));
    }
    lb_set(&b, r, tout);
    return lb_done(&b);
}

/* ---- pinv (at points where the rank does not change) ----
 * P = A^+, with I - A P and I - P A the projectors off A's range / row space:
 *   Abar = -P^T Pbar P^T + (I - A P) Pbar^T P P^T + P^T P Pbar^T (I - P A)
 *   dP = -P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P
 */
/* X - A (P X): (I - A P) X without forming the projector. */
static tf_ext_tensor *perp_left(lb *b, tf_ext_tensor *a, tf_ext_tensor *p, tf_ext_tensor *x)
{
    return lb_sub(b, x, lb_matmul(b, a, lb_matmul(b, p, x)));
}

/* X - (X P) A: X (I - P A) (and with A, P swapped: X (I - A P)). */
static tf_ext_tensor *perp_right(lb *b, tf_ext_tensor *x, tf_ext_tensor *p, tf_ext_tensor *a)
{
    return lb_sub(b, x, lb_matmul(b, lb_matmul(b, x, p), a));
}

tf_status linalg_pinv_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                          const int *need, tf_ext_tensor **cin)
{
    lb b = lb_begin(c);
    tf_ext_tensor *a = call->tensors[0], *p = call->output, *pt = lb_transpose_last2(&b, p);
    tf_ext_tensor *ct = lb_transpose_last2(&b, cot);
    tf_ext_tensor *t1 = lb_neg(&b, lb_matmul(&b, lb_matmul(&b, pt, cot), pt));
    tf_ext_tensor *t2 = lb_matmul(&b, perp_left(&b, a, p, ct), lb_matmul(&b, p, pt));
    tf_ext_tensor *t3 = lb_matmul(&b, lb_matmul(&b, pt, p), perp_right(&b, ct, p, a));
    lb_set(&b, lb_add(&b, lb_add(&b, t1, t2), t3), &cin[0]);
    return lb_done(&b);
}

tf_status linalg_pinv_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                          tf_ext_tensor *const *tan, tf_ext_tensor **tout)
{
    lb b = lb_begin(c);
    tf_ext_tensor *a = call->tensors[0], *p = call->output, *pt = lb_transpose_last2(&b, p);
    tf_ext_tensor *dat = lb_transpose_last2(&b, tan[0]);
    tf_ext_tensor *t1 = lb_neg(&b, lb_matmul(&b, lb_matmul(&b, p, tan[0]), p));
    tf_ext_tensor *t2 = lb_matmul(&b, lb_matmul(&b, p, pt), perp_right(&b, dat, a, p));
    tf_ext_tensor *pa_perp = perp_left(&b, p, a, lb_matmul(&b, dat, lb_matmul(&b, pt, p)));
    lb_set(&b, lb_add(&b, lb_add(&b, t1, t2), pa_perp), tout);
    return lb_done(&b);
}

/* ---- norm ----
 * Frobenius:  Abar = nbar A / ||A||;  dn = sum(A o dA) / ||A||  (NaN at A = 0)
 * others:     Abar = nbar G;  dn = sum(G o dA), G the subgradient:
 *   nuclear   G = U V^T (thin SVD, recomputed through svd: differentiable again)
 *   +-2       G = u v^T of the largest / smallest singular value (through svd as
 *             the nuclear norm's, so differentiable again; ties share evenly)
 *   +-1, +-inf  G = sign(A) on the column / row of the largest / smallest
 *             absolute sum, the first one on ties (norm_grad; G is piecewise
 *             constant, so its own derivative is zero)
 */
/* x [...] reshaped to [..., 1] (a value per matrix, beside a vector's axis). */
static tf_ext_tensor *lb_append1(lb *b, tf_ext_tensor *x)
{
    tf_ext_tensor *r = NULL;
    if (b->st || !x)
        return NULL;
    uint32_t rank = b->o->rank(x);
    int64_t shape[TF_MAX_RANK];
    for (uint32_t i = 0; i < rank; i++)
        shape[i] = b->o->extent(x, i);
    shape[rank] = 1;
    tf_status st = b->o->reshape(b->s, x, rank + 1, shape, &r);
    return keep(b, st, r);
}

/*
 * The weights a spectral norm gives the singular values s [..., k]: 1 on the
 * largest (ord 2) or smallest (-2), shared evenly among exact ties (a convex
 * combination of subgradients there), as a row [..., 1, k]. Built from a
 * compare, so it carries no derivative of its own.
 */
static tf_ext_tensor *spectral_weights(lb *b, tf_ext_tensor *s, double ord)
{
    tf_ext_tensor *ext = NULL, *hit = NULL, *m = NULL, *cnt = NULL;
    if (b->st || !s)
        return NULL;
    if (!TF_ABI_HAS_FIELD(b->o, tf_ext_ops, compare) || !b->o->compare) {
        b->c->host->report_error(b->c->host->ctx, TF_ERR_UNSUPPORTED_AD_RULE,
                                 "linalg: the spectral norm's rule needs a host of extension "
                                 "ABI 1.2 or later");
        b->st = TF_ERR_UNSUPPORTED_AD_RULE;
        return NULL;
    }
    int last = (int)b->o->rank(s) - 1;
    uint32_t red = ord > 0 ? TF_EXT_REDUCE_MAX : TF_EXT_REDUCE_MIN;
    tf_status st = b->o->reduce(b->s, red, s, &last, 1, &ext);
    ext = lb_append1(b, keep(b, st, ext)); /* [..., 1]: one per matrix, beside s */
    if (!b->st)
        st = b->o->compare(b->s, TF_COMPARE_EQ, s, ext, &hit);
    hit = keep(b, b->st ? b->st : st, hit);
    if (!b->st)
        st = b->o->cast(b->s, hit, b->o->dtype(s), &m);
    m = keep(b, b->st ? b->st : st, m);
    if (!b->st)
        st = b->o->reduce(b->s, TF_EXT_REDUCE_SUM, m, &last, 1, &cnt);
    cnt = lb_append1(b, keep(b, b->st ? b->st : st, cnt));
    return lb_vec2(b, lb_div(b, m, cnt), 1);
}

static tf_ext_tensor *norm_subgrad(lb *b, const tf_ext_call *call)
{
    double ord = call->scalars[0].f;
    tf_ext_tensor *a = call->tensors[0], *o[3] = {NULL, NULL, NULL};
    if (b->st)
        return NULL;
    bool spectral = fabs(ord) == 2;
    if (ord != LINALG_ORD_NUC && !spectral) {
        tf_ext_tensor *g = NULL;
        tf_status st = b->o->call(b->s, LINALG_ID ".norm_grad", &a, 1, call->scalars, 1, &g, 1);
        return keep(b, st, g);
    }
    /*
     * Through the (differentiable) svd, so that the subgradient has a
     * derivative too: U diag(w) V^T with w all ones (nuclear) or the spectral
     * weights. eps: 1e-300 keeps 1/(s_i^2 - s_j^2) out of the second
     * derivative where two singular values the norm does not pick are equal
     * (0 / 0 otherwise); it changes no other value.
     */
    tf_ext_scalar eps = {spectral ? 1e-300 : 0.0, 0};
    tf_status st = b->o->call(b->s, SVD, &a, 1, &eps, 1, o, 3);
    if (st) {
        b->st = st;
        return NULL;
    }
    tf_ext_tensor *u = keep(b, TF_OK, o[0]), *sv = keep(b, TF_OK, o[1]), *v = keep(b, TF_OK, o[2]);
    if (spectral)
        u = lb_mul(b, u, spectral_weights(b, sv, ord));
    return lb_matmul(b, u, lb_transpose_last2(b, v));
}

tf_status linalg_norm_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                          const int *need, tf_ext_tensor **cin)
{
    lb b = lb_begin(c);
    if (call->scalars[0].f == LINALG_ORD_FRO) {
        tf_ext_tensor *w = lb_expand2(&b, lb_div(&b, cot, call->output));
        lb_set(&b, lb_mul(&b, w, call->tensors[0]), &cin[0]);
    } else {
        lb_set(&b, lb_mul(&b, lb_expand2(&b, cot), norm_subgrad(&b, call)), &cin[0]);
    }
    return lb_done(&b);
}

tf_status linalg_norm_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                          tf_ext_tensor *const *tan, tf_ext_tensor **tout)
{
    lb b = lb_begin(c);
    if (call->scalars[0].f == LINALG_ORD_FRO) {
        tf_ext_tensor *dot = lb_sum2(&b, lb_mul(&b, call->tensors[0], tan[0]));
        lb_set(&b, lb_div(&b, dot, call->output), tout);
    } else {
        lb_set(&b, lb_sum2(&b, lb_mul(&b, norm_subgrad(&b, call), tan[0])), tout);
    }
    return lb_done(&b);
}

/*
 * norm_grad's own derivative: zero for +-1, +-inf (piecewise constant). For
 * +-2 it is refused: norm's rules take that subgradient through svd instead
 * (norm_subgrad), where it has a derivative; norm_grad's kernel picks one
 * singular pair and is not continuous where that singular value is repeated.
 */
static tf_status norm_grad_rule(const tf_ext_rule_ctx *c, const tf_ext_call *call)
{
    if (fabs(call->scalars[0].f) != 2)
        return TF_OK;
    char msg[160];
    snprintf(msg, sizeof msg,
             "%s: the spectral norm (ord 2 or -2) has no second derivative rule",
             c->op_name);
    c->host->report_error(c->host->ctx, TF_ERR_UNSUPPORTED_AD_RULE, msg);
    return TF_ERR_UNSUPPORTED_AD_RULE;
}

tf_status linalg_norm_grad_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                               tf_ext_tensor *cot, const int *need, tf_ext_tensor **cin)
{
    return norm_grad_rule(c, call);
}

tf_status linalg_norm_grad_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                               tf_ext_tensor *const *tan, tf_ext_tensor **tout)
{
    return norm_grad_rule(c, call);
}
