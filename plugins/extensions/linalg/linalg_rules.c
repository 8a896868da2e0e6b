/*
 * linalg_rules.c - reverse (VJP) and forward (JVP) rules of tenferro.linalg
 * for inv, solve, triangular_solve, det, slogdet, cholesky, qr and lstsq,
 * written only with ops of the host's ops table (so they are recorded and
 * differentiable again; the builder is linalg_lb.h). The rules of the
 * spectral decompositions (eigh, svd, pinv, norm) are linalg_rules_spectral.c's.
 * Matrices on the last two axes; X^H below swaps them and conjugates (X^T
 * for real X: the formulas hold for f32, f64, c64 and c128 alike, in
 * PyTorch's convention for complex, docs/complex.md); conj(d) is d for real d.
 *
 *   inv      Y = A^-1:  Abar = -Y^H Ybar Y^H;          dY = -Y dA Y
 *   solve    X = A^-1 B: Bbar = solve(A^H, Xbar), Abar = -Bbar X^H;
 *                        dX = solve(A, dB - dA X)
 *   triangular_solve: as solve with the triangle kept: Abar = tri(-Bbar X^H);
 *                        dX = trisolve(A, dB - tri(dA) X)
 *   det      d:  Abar = dbar conj(d) A^-H;             dd = d tau, tau = tr(A^-1 dA)
 *   slogdet  l = log|det A|: Abar = lbar A^-H;         dl = Re tau;
 *            sign (real A): zero derivative; (complex A, sign = det / |det|):
 *            Abar = i Im(conj(sign) sbar) A^-H,        dsign = sign i Im tau
 *   cholesky A = L L^H (A Hermitian):
 *            Abar = L^-H S L^-1, S = (P + tril(P,-1)^H)/2, P = tril(L^H Lbar);
 *            dL = L Phi(L^-1 dA L^-H), Phi(M) = (tril(M) + tril(M,-1))/2
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "linalg_lb.h"

#define INV LINALG_ID ".inv"
#define SOLVE LINALG_ID ".solve"
#define TRISOLVE LINALG_ID ".triangular_solve"

/* ---- inv ---- */

tf_status linalg_inv_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                         const int *need, tf_ext_tensor **cin)
{
    lb b = lb_begin(c);
    tf_ext_tensor *yt = lb_adj(&b, call->output);
    lb_set(&b, lb_neg(&b, lb_matmul(&b, lb_matmul(&b, yt, cot), yt)), &cin[0]);
    return lb_done(&b);
}

tf_status linalg_inv_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                         tf_ext_tensor *const *tan, tf_ext_tensor **tout)
{
    lb b = lb_begin(c);
    tf_ext_tensor *y = call->output;
    lb_set(&b, lb_neg(&b, lb_matmul(&b, lb_matmul(&b, y, tan[0]), y)), tout);
    return lb_done(&b);
}

/* ---- solve and triangular_solve ---- */

static tf_status solve_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                           const int *need, tf_ext_tensor **cin, int64_t lower)
{
    lb b = lb_begin(c);
    tf_ext_tensor *at = lb_adj(&b, call->tensors[0]);
    tf_ext_tensor *bbar =
        lower < 0 ? lb_op(&b, SOLVE, at, cot, -1) : lb_op(&b, TRISOLVE, at, cot, !lower);
    if (need[1])
        lb_set(&b, bbar, &cin[1]);
    if (need[0]) {
        tf_ext_tensor *abar = lb_neg(&b, lb_matmul(&b, bbar, lb_adj(&b, call->output)));
        lb_set(&b, lower < 0 ? abar : lb_tri(&b, abar, (int)lower, 0), &cin[0]);
    }
    return lb_done(&b);
}

static tf_status solve_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                           tf_ext_tensor *const *tan, tf_ext_tensor **tout, int64_t lower)
{
    lb b = lb_begin(c);
    tf_ext_tensor *rhs = tan[1];
    if (tan[0]) {
        tf_ext_tensor *da = lower < 0 ? tan[0] : lb_tri(&b, tan[0], (int)lower, 0);
        tf_ext_tensor *t = lb_matmul(&b, da, call->output);
        rhs = rhs ? lb_sub(&b, rhs, t) : lb_neg(&b, t);
    }
    tf_ext_tensor *a = call->tensors[0];
    lb_set(&b, lower < 0 ? lb_op(&b, SOLVE, a, rhs, -1) : lb_op(&b, TRISOLVE, a, rhs, lower), tout);
    return lb_done(&b);
}

tf_status linalg_solve_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                           const int *need, tf_ext_tensor **cin)
{
    return solve_vjp(c, call, cot, need, cin, -1);
}

tf_status linalg_solve_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                           tf_ext_tensor *const *tan, tf_ext_tensor **tout)
{
    return solve_jvp(c, call, tan, tout, -1);
}

tf_status linalg_trisolve_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                              const int *need, tf_ext_tensor **cin)
{
    return solve_vjp(c, call, cot, need, cin, call->scalars[0].i != 0);
}

tf_status linalg_trisolve_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                              tf_ext_tensor *const *tan, tf_ext_tensor **tout)
{
    return solve_jvp(c, call, tan, tout, call->scalars[0].i != 0);
}

/* ---- det and slogdet ---- */

/* A^-H, recomputed through the module's own inv (differentiable). */
static tf_ext_tensor *inv_h(lb *b, tf_ext_tensor *a)
{
    return lb_adj(b, lb_op(b, INV, a, NULL, -1));
}

/* tau = tr(A^-1 dA) = sum(A^-T o dA) (no conjugation: the derivative is complex-linear). */
static tf_ext_tensor *trace_inv(lb *b, tf_ext_tensor *a, tf_ext_tensor *da)
{
    tf_ext_tensor *it = lb_transpose_last2(b, lb_op(b, INV, a, NULL, -1));
    return lb_sum2(b, lb_mul(b, it, da));
}

/* i Im(x) = (x - conj(x)) / 2: zero for a real x (not issued). */
static tf_ext_tensor *i_imag(lb *b, tf_ext_tensor *x)
{
    return lb_scale(b, lb_sub(b, x, lb_conj(b, x)), 0.5);
}

tf_status linalg_det_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                         const int *need, tf_ext_tensor **cin)
{
    lb b = lb_begin(c);
    tf_ext_tensor *w = lb_expand2(&b, lb_mul(&b, cot, lb_conj(&b, call->output)));
    lb_set(&b, lb_mul(&b, w, inv_h(&b, call->tensors[0])), &cin[0]);
    return lb_done(&b);
}

tf_status linalg_det_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                         tf_ext_tensor *const *tan, tf_ext_tensor **tout)
{
    lb b = lb_begin(c);
    lb_set(&b, lb_mul(&b, call->output, trace_inv(&b, call->tensors[0], tan[0])), tout);
    return lb_done(&b);
}

/* out 0 is the sign: piecewise constant for real A, a unit phase for complex A. */
static int sign_is_constant(lb *b, const tf_ext_call *call)
{
    return call->out_index == 0 && !lb_is_cx(b, call->tensors[0]);
}

tf_status linalg_slogdet_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                             const int *need, tf_ext_tensor **cin)
{
    lb b = lb_begin(c);
    if (sign_is_constant(&b, call))
        return TF_OK;
    tf_ext_tensor *g = call->out_index == 0
                           ? i_imag(&b, lb_mul(&b, lb_conj(&b, call->output), cot))
                           : cot;
    lb_set(&b, lb_mul(&b, lb_expand2(&b, g), inv_h(&b, call->tensors[0])), &cin[0]);
    return lb_done(&b);
}

tf_status linalg_slogdet_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                             tf_ext_tensor *const *tan, tf_ext_tensor **tout)
{
    lb b = lb_begin(c);
    if (sign_is_constant(&b, call))
        return TF_OK;
    tf_ext_tensor *tau = trace_inv(&b, call->tensors[0], tan[0]);
    lb_set(&b, call->out_index == 0 ? lb_mul(&b, call->output, i_imag(&b, tau)) : lb_real(&b, tau),
           tout);
    return lb_done(&b);
}

/* ---- cholesky ---- */

/* Phi(M) = (tril(M) + tril(M, -1)) / 2: the strict lower triangle, half the diagonal. */
static tf_ext_tensor *phi(lb *b, tf_ext_tensor *m)
{
    return lb_scale(b, lb_add(b, lb_tri(b, m, 1, 0), lb_tri(b, m, 1, -1)), 0.5);
}

tf_status linalg_cholesky_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                              const int *need, tf_ext_tensor **cin)
{
    lb b = lb_begin(c);
    tf_ext_tensor *l = call->output, *lt = lb_adj(&b, l);
    tf_ext_tensor *p = lb_tri(&b, lb_matmul(&b, lt, cot), 1, 0);
    tf_ext_tensor *sym = lb_scale(&b, lb_add(&b, p, lb_adj(&b, lb_tri(&b, p, 1, -1))), 0.5);
    tf_ext_tensor *x1 = lb_op(&b, TRISOLVE, lt, sym, 0);            /* L^-H S */
    tf_ext_tensor *x2 = lb_op(&b, TRISOLVE, lt, lb_adj(&b, x1), 0); /* (x1 L^-1)^H */
    lb_set(&b, lb_adj(&b, x2), &cin[0]);
    return lb_done(&b);
}

tf_status linalg_cholesky_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                              tf_ext_tensor *const *tan, tf_ext_tensor **tout)
{
    lb b = lb_begin(c);
    tf_ext_tensor *l = call->output;
    tf_ext_tensor *y = lb_op(&b, TRISOLVE, l, tan[0], 1); /* L^-1 dA */
    tf_ext_tensor *m = lb_adj(&b, lb_op(&b, TRISOLVE, l, lb_adj(&b, y), 1)); /* y L^-H */
    lb_set(&b, lb_matmul(&b, l, phi(&b, m)), tout);
    return lb_done(&b);
}

/* ---- qr (thin, m >= n) ----
 * A = Q R, Q^H Q = I, R upper with a real diagonal (geqrf's). With
 * C = Q^H dA R^-1 and Phi as for cholesky:
 *   Omega = Q^H dQ = Phi(C) - Phi(C)^H (skew-Hermitian; its imaginary
 *   diagonal is i Im diag(C), zero for real A); dR = (C - Omega) R;
 *   dQ = (dA - Q dR) R^-1;
 *   Abar = (Qbar + Q copyltu(M)) R^-H, M = R Rbar^H - Qbar^H Q,
 *   copyltu(M) = Phi(M) + Phi(M)^H (Hermitian with M's lower triangle, Re of
 *   its diagonal).
 */

#define QR LINALG_ID ".qr"

/* x R^-1 for upper triangular R: (R^-H x^H)^H = trisolve(R^H, x^H, lower)^H. */
static tf_ext_tensor *times_rinv(lb *b, tf_ext_tensor *x, tf_ext_tensor *r)
{
    return lb_adj(b, lb_op(b, TRISOLVE, lb_adj(b, r), lb_adj(b, x), 1));
}

/* Phi(M) + Phi(M)^H: M's strict lower triangle mirrored, Re of its diagonal. */
static tf_ext_tensor *copyltu(lb *b, tf_ext_tensor *m)
{
    tf_ext_tensor *p = phi(b, m);
    return lb_add(b, p, lb_adj(b, p));
}

tf_status linalg_qr_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                        const int *need, tf_ext_tensor **cin)
{
    lb b = lb_begin(c);
    tf_ext_tensor *qr[2];
    lb_outputs(&b, QR, call, 2, qr);
    tf_ext_tensor *q = qr[0], *r = qr[1];
    /* one cotangent at a time: Qbar (out 0) or Rbar (out 1), the other zero */
    tf_ext_tensor *m, *inner;
    if (call->out_index == 0) {
        m = lb_neg(&b, lb_matmul(&b, lb_adj(&b, cot), q)); /* -Qbar^H Q */
        inner = lb_add(&b, cot, lb_matmul(&b, q, copyltu(&b, m)));
    } else {
        m = lb_matmul(&b, r, lb_adj(&b, cot)); /* R Rbar^H */
        inner = lb_matmul(&b, q, copyltu(&b, m));
    }
    /* Abar = inner R^-H = (R^-1 inner^H)^H */
    tf_ext_tensor *abar = lb_adj(&b, lb_op(&b, TRISOLVE, r, lb_adj(&b, inner), 0));
    lb_set(&b, abar, &cin[0]);
    return lb_done(&b);
}

tf_status linalg_qr_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                        tf_ext_tensor *const *tan, tf_ext_tensor **tout)
{
    lb b = lb_begin(c);
    tf_ext_tensor *qr[2], *da = tan[0];
    lb_outputs(&b, QR, call, 2, qr);
    tf_ext_tensor *q = qr[0], *r = qr[1];
    tf_ext_tensor *bm = times_rinv(&b, lb_matmul(&b, lb_adj(&b, q), da), r); /* C */
    tf_ext_tensor *omega = lb_skew(&b, phi(&b, bm));
    tf_ext_tensor *dr = lb_matmul(&b, lb_sub(&b, bm, omega), r);
    if (call->out_index == 1)
        lb_set(&b, dr, tout);
    else
        lb_set(&b, times_rinv(&b, lb_sub(&b, da, lb_matmul(&b, q, dr)), r), tout);
    return lb_done(&b);
}

/* ---- lstsq (full column rank) ----
 * X = (A^H A)^-1 A^H B. With G = (A^H A)^-1 Xbar and residual E = B - A X:
 *   Bbar = A G,  Abar = E G^H - A G X^H;
 *   dX = (A^H A)^-1 (dA^H E + A^H (dB - dA X)).
 */
tf_status linalg_lstsq_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                           const int *need, tf_ext_tensor **cin)
{
    lb b = lb_begin(c);
    tf_ext_tensor *a = call->tensors[0], *bb = call->tensors[1], *x = call->output;
    tf_ext_tensor *at = lb_adj(&b, a);
    tf_ext_tensor *g = lb_op(&b, SOLVE, lb_matmul(&b, at, a), cot, -1);
    tf_ext_tensor *ag = lb_matmul(&b, a, g);
    if (need[1])
        lb_set(&b, ag, &cin[1]);
    if (need[0]) {
        tf_ext_tensor *e = lb_sub(&b, bb, lb_matmul(&b, a, x));
        tf_ext_tensor *t1 = lb_matmul(&b, e, lb_adj(&b, g));
        lb_set(&b, lb_sub(&b, t1, lb_matmul(&b, ag, lb_adj(&b, x))), &cin[0]);
    }
    return lb_done(&b);
}

tf_status linalg_lstsq_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                           tf_ext_tensor *const *tan, tf_ext_tensor **tout)
{
    lb b = lb_begin(c);
    tf_ext_tensor *a = call->tensors[0], *bb = call->tensors[1], *x = call->output;
    tf_ext_tensor *at = lb_adj(&b, a), *rhs = NULL;
    if (tan[0]) {
        tf_ext_tensor *e = lb_sub(&b, bb, lb_matmul(&b, a, x));
        tf_ext_tensor *t1 = lb_matmul(&b, lb_adj(&b, tan[0]), e);
        rhs = lb_sub(&b, t1, lb_matmul(&b, at, lb_matmul(&b, tan[0], x)));
    }
    if (tan[1]) {
        tf_ext_tensor *t2 = lb_matmul(&b, at, tan[1]);
        rhs = rhs ? lb_add(&b, rhs, t2) : t2;
    }
    lb_set(&b, lb_op(&b, SOLVE, lb_matmul(&b, at, a), rhs, -1), tout);
    return lb_done(&b);
}

