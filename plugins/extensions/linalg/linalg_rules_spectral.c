/*
 * linalg_rules_spectral.c - reverse (VJP) and forward (JVP) rules of
 * tenferro.linalg's spectral decompositions and what is built on them: eigh,
 * svd, pinv and norm (its spectral orders through the singular values),
 * written only with ops of the host's ops table (so they are recorded and
 * differentiable again; the builder is linalg_lb.h). Matrices on the last
 * two axes; X^H below swaps them and conjugates (X^T for real X: one rule
 * for f32, f64, c64 and c128, in PyTorch's convention for complex,
 * docs/complex.md). Each section gives its formulas.
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
    tf_ext_tensor *ones = NULL;
    if (b->st || !w)
        return NULL;
    uint32_t rank = b->o->rank(w);
    int64_t shape[TF_MAX_RANK];
    for (uint32_t i = 0; i < rank; i++)
        shape[i] = b->o->extent(w, i);
    tf_status st = b->o->full(b->s, w, rank, shape, 1.0, &ones);
    return lb_diag_embed(b, keep(b, st, ones));
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
    return lb_div(b, e, den);
}

/* ---- eigh ----
 * A = V diag(w) V^H, w real; F as eig_f; M = V^H dA V:
 *   wbar: Abar = V diag(wbar) V^H;  Vbar: Abar = V (F o (V^H Vbar - Vbar^H V) / 2) V^H
 *   dw = Re diag(M);  dV = V (F o M)
 * For complex A each eigenvector's phase is a free gauge: a loss must not
 * depend on it (Im diag(V^H Vbar) = 0), and dV has diag(V^H dV) = 0.
 */
tf_status linalg_eigh_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                          const int *need, tf_ext_tensor **cin)
{
    lb b = lb_begin(c);
    tf_ext_tensor *wv[2];
    lb_outputs(&b, EIGH, call, 2, wv);
    tf_ext_tensor *w = wv[0], *v = wv[1];
    tf_ext_tensor *vt = lb_adj(&b, v), *left;
    if (call->out_index == 0) { /* wbar: V diag(wbar) V^H, as (V's column j times wbar_j) V^H */
        left = lb_mul(&b, v, lb_vec2(&b, cot, 1));
    } else { /* Vbar: V (F o (V^H Vbar - Vbar^H V) / 2) V^H */
        tf_ext_tensor *skew = lb_scale(&b, lb_skew(&b, lb_matmul(&b, vt, cot)), 0.5);
        left = lb_matmul(&b, v, lb_mul(&b, eig_f(&b, w, call->scalars[0].f), skew));
    }
    lb_set(&b, lb_matmul(&b, left, vt), &cin[0]);
    return lb_done(&b);
}

tf_status linalg_eigh_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                          tf_ext_tensor *const *tan, tf_ext_tensor **tout)
{
    lb b = lb_begin(c);
    tf_ext_tensor *wv[2];
    lb_outputs(&b, EIGH, call, 2, wv);
    tf_ext_tensor *w = wv[0], *v = wv[1];
    tf_ext_tensor *m = lb_matmul(&b, lb_matmul(&b, lb_adj(&b, v), tan[0]), v);
    if (call->out_index == 0) {
        lb_set(&b, lb_real(&b, lb_diagonal(&b, m)), tout);
    } else {
        lb_set(&b, lb_matmul(&b, v, lb_mul(&b, eig_f(&b, w, call->scalars[0].f), m)), tout);
    }
    return lb_done(&b);
}

/* ---- svd (thin) ----
 * A = U diag(s) V^H, s real, F_ij = 1/(s_j^2 - s_i^2) (regularised by eps
 * as for eigh), P = U^H dA V, J = U^H Ubar, K = V^H Vbar:
 *   Ubar: Abar = U ((F o (J - J^H)) S + D) V^H + (Ubar - U J) S^-1 V^H
 *   sbar: Abar = U diag(sbar) V^H
 *   Vbar: Abar = U (S (F o (K - K^H)) - D') V^H + U S^-1 (Vbar - V K)^H
 *   ds = Re diag(P); dU = U (F o (P S + S P^H) + E) + (dA V - U P) S^-1;
 *   dV = V (F o (S P + P^H S) - E) + (dA^H U - V P^H) S^-1
 * with, for complex A only (zero for real A), the imaginary-diagonal terms
 * D = Q o (J - J^H), D' = Q o (K - K^H), E = Q o (P - P^H), Q = diag(1/(4 s)):
 * a common phase of u_j and v_j is a free gauge, fixed here by splitting
 * i Im P_jj / s_j evenly between U^H dU and -V^H dV. A loss must not depend
 * on the gauge (Im diag(U^H Ubar + V^H Vbar) = 0); for such a loss the
 * gradient is PyTorch's (which puts the whole term on U), and D - D' is
 * its i Im diag(U^H Ubar) / s.
 */
#define SVD LINALG_ID ".svd"

typedef struct svd_parts {
    tf_ext_tensor *u, *s, *v, *srow, *scol, *f, *q; /* q: Q above (complex A, U's or V's rule) */
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
    if (call->out_index != 1 && lb_is_cx(b, p->u)) {
        tf_ext_tensor *quarter = NULL;
        tf_status st = b->o->scalar(b->s, p->s, 0.25, &quarter);
        quarter = keep(b, st, quarter);
        p->q = lb_diag_embed(b, lb_div(b, quarter, p->s));
    }
}

/* x + sign Q o y (the imaginary-diagonal term; x itself for real A). */
static tf_ext_tensor *plus_q(lb *b, const svd_parts *p, tf_ext_tensor *x, tf_ext_tensor *y,
                             int sign)
{
    if (!p->q)
        return x;
    tf_ext_tensor *t = lb_mul(b, p->q, y);
    return sign > 0 ? lb_add(b, x, t) : lb_sub(b, x, t);
}



tf_status linalg_svd_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                         const int *need, tf_ext_tensor **cin)
{
    lb b = lb_begin(c);
    svd_parts p;
    svd_parts_of(&b, call, &p);
    tf_ext_tensor *vt = lb_adj(&b, p.v), *abar = NULL;
    if (call->out_index == 1) {
        /* U diag(sbar) V^H as (U with column j scaled by sbar_j) V^H: one product
           fewer than through diag_embed, and the same values (the diagonal
           product only adds zeros) */
        abar = lb_matmul(&b, lb_mul(&b, p.u, lb_vec2(&b, cot, 1)), vt);
    } else if (call->out_index == 0) {
        tf_ext_tensor *j = lb_matmul(&b, lb_adj(&b, p.u), cot), *sk = lb_skew(&b, j);
        tf_ext_tensor *core = plus_q(&b, &p, lb_mul(&b, lb_mul(&b, p.f, sk), p.srow), sk, 1);
        tf_ext_tensor *perp = lb_sub(&b, cot, lb_matmul(&b, p.u, j));
        abar = lb_add(&b, lb_matmul(&b, lb_matmul(&b, p.u, core), vt),
                      lb_matmul(&b, lb_div(&b, perp, p.srow), vt));
    } else {
        tf_ext_tensor *kk = lb_matmul(&b, vt, cot), *sk = lb_skew(&b, kk);
        tf_ext_tensor *core = plus_q(&b, &p, lb_mul(&b, p.scol, lb_mul(&b, p.f, sk)), sk, -1);
        tf_ext_tensor *perp = lb_sub(&b, cot, lb_matmul(&b, p.v, kk));
        abar = lb_add(&b, lb_matmul(&b, lb_matmul(&b, p.u, core), vt),
                      lb_matmul(&b, lb_div(&b, p.u, p.srow), lb_adj(&b, perp)));
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
    tf_ext_tensor *pm = lb_matmul(&b, lb_matmul(&b, lb_adj(&b, p.u), da), p.v);
    tf_ext_tensor *pt = call->out_index == 1 ? NULL : lb_adj(&b, pm), *r = NULL;
    tf_ext_tensor *pskew = p.q ? lb_sub(&b, pm, pt) : NULL; /* P - P^H */
    if (call->out_index == 1) {
        r = lb_real(&b, lb_diagonal(&b, pm));
    } else if (call->out_index == 0) {
        tf_ext_tensor *in = lb_add(&b, lb_mul(&b, pm, p.srow), lb_mul(&b, p.scol, pt));
        tf_ext_tensor *rest = lb_sub(&b, lb_matmul(&b, da, p.v), lb_matmul(&b, p.u, pm));
        r = lb_add(&b, lb_matmul(&b, p.u, plus_q(&b, &p, lb_mul(&b, p.f, in), pskew, 1)),
                   lb_div(&b, rest, p.srow));
    } else {
        tf_ext_tensor *in = lb_add(&b, lb_mul(&b, p.scol, pm), lb_mul(&b, pt, p.srow));
        tf_ext_tensor *rest = lb_sub(&b, lb_matmul(&b, lb_adj(&b, da), p.u), lb_matmul(&b, p.v, pt));
        r = lb_add(&b, lb_matmul(&b, p.v, plus_q(&b, &p, lb_mul(&b, p.f, in), pskew, -1)),
                   lb_div(&b, rest, p.srow));
    }
    lb_set(&b, r, tout);
    return lb_done(&b);
}

/* ---- pinv (at points where the rank does not change) ----
 * P = A^+, with I - A P and I - P A the projectors off A's range / row space:
 *   Abar = -P^H Pbar P^H + (I - A P) Pbar^H P P^H + P^H P Pbar^H (I - P A)
 *   dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P
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
    tf_ext_tensor *a = call->tensors[0], *p = call->output, *pt = lb_adj(&b, p);
    tf_ext_tensor *ct = lb_adj(&b, cot);
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
    tf_ext_tensor *a = call->tensors[0], *p = call->output, *pt = lb_adj(&b, p);
    tf_ext_tensor *dat = lb_adj(&b, tan[0]);
    tf_ext_tensor *t1 = lb_neg(&b, lb_matmul(&b, lb_matmul(&b, p, tan[0]), p));
    tf_ext_tensor *t2 = lb_matmul(&b, lb_matmul(&b, p, pt), perp_right(&b, dat, a, p));
    tf_ext_tensor *pa_perp = perp_left(&b, p, a, lb_matmul(&b, dat, lb_matmul(&b, pt, p)));
    lb_set(&b, lb_add(&b, lb_add(&b, t1, t2), pa_perp), tout);
    return lb_done(&b);
}

/* ---- norm ----
 * Frobenius:  Abar = nbar A / ||A||;  dn = Re sum(conj(A) o dA) / ||A||  (NaN at A = 0)
 * others:     Abar = nbar G;  dn = Re sum(conj(G) o dA), G the subgradient:
 *   nuclear   G = U V^H (thin SVD, recomputed through svd: differentiable again)
 *   +-2       G = u v^H of the largest / smallest singular value (through svd as
 *             the nuclear norm's, so differentiable again; ties share evenly)
 *   +-1, +-inf  G = sign(A) (A / |A|) on the column / row of the largest / smallest
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
    return lb_matmul(b, u, lb_adj(b, v));
}

/* Re sum(conj(g) o t) over the last two axes: <g, t> of the real inner product. */
static tf_ext_tensor *real_dot2(lb *b, tf_ext_tensor *g, tf_ext_tensor *t)
{
    return lb_real(b, lb_sum2(b, lb_mul(b, lb_conj(b, g), t)));
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
        tf_ext_tensor *dot = real_dot2(&b, call->tensors[0], tan[0]);
        lb_set(&b, lb_div(&b, dot, call->output), tout);
    } else {
        lb_set(&b, real_dot2(&b, norm_subgrad(&b, call), tan[0]), tout);
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
