/*
 * linalg_rules.c - reverse (VJP) and forward (JVP) rules of tenferro.linalg
 * for inv, solve, triangular_solve, det, slogdet, cholesky, qr and lstsq,
 * written only with ops of the host's ops table (so they are recorded and
 * differentiable again; the builder is linalg_lb.h). The rules of the
 * spectral decompositions (eigh, svd, pinv, norm) are linalg_rules_spectral.c's. Matrices on the last two axes; X^T below swaps
 * them. The transposes are where a complex version would conjugate.
 *
 *   inv      Y = A^-1:  Abar = -Y^T Ybar Y^T;          dY = -Y dA Y
 *   solve    X = A^-1 B: Bbar = solve(A^T, Xbar), Abar = -Bbar X^T;
 *                        dX = solve(A, dB - dA X)
 *   triangular_solve: as solve with the triangle kept: Abar = tri(-Bbar X^T);
 *                        dX = trisolve(A, dB - tri(dA) X)
 *   det      d:  Abar = dbar d A^-T;                   dd = d tr(A^-1 dA)
 *   slogdet  l = log|det A|: Abar = lbar A^-T;         dl = tr(A^-1 dA);
 *            sign has zero derivative
 *   cholesky A = L L^T (A symmetric):
 *            Abar = L^-T S L^-1, S = (P + tril(P,-1)^T)/2, P = tril(L^T Lbar);
 *            dL = L Phi(L^-1 dA L^-T), Phi(M) = (tril(M) + tril(M,-1))/2
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
    tf_ext_tensor *yt = lb_transpose_last2(&b, call->output);
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
    tf_ext_tensor *at = lb_transpose_last2(&b, call->tensors[0]);
    tf_ext_tensor *bbar =
        lower < 0 ? lb_op(&b, SOLVE, at, cot, -1) : lb_op(&b, TRISOLVE, at, cot, !lower);
    if (need[1])
        lb_set(&b, bbar, &cin[1]);
    if (need[0]) {
        tf_ext_tensor *abar = lb_neg(&b, lb_matmul(&b, bbar, lb_transpose_last2(&b, call->output)));
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

/* A^-T, recomputed through the module's own inv (differentiable). */
static tf_ext_tensor *inv_t(lb *b, tf_ext_tensor *a)
{
    return lb_transpose_last2(b, lb_op(b, INV, a, NULL, -1));
}

tf_status linalg_det_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                         const int *need, tf_ext_tensor **cin)
{
    lb b = lb_begin(c);
    tf_ext_tensor *w = lb_expand2(&b, lb_mul(&b, cot, call->output));
    lb_set(&b, lb_mul(&b, w, inv_t(&b, call->tensors[0])), &cin[0]);
    return lb_done(&b);
}

tf_status linalg_det_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                         tf_ext_tensor *const *tan, tf_ext_tensor **tout)
{
    lb b = lb_begin(c);
    tf_ext_tensor *tr = lb_sum2(&b, lb_mul(&b, inv_t(&b, call->tensors[0]), tan[0]));
    lb_set(&b, lb_mul(&b, call->output, tr), tout);
    return lb_done(&b);
}

tf_status linalg_slogdet_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                             const int *need, tf_ext_tensor **cin)
{
    if (call->out_index == 0)
        return TF_OK; /* the sign is piecewise constant */
    lb b = lb_begin(c);
    lb_set(&b, lb_mul(&b, lb_expand2(&b, cot), inv_t(&b, call->tensors[0])), &cin[0]);
    return lb_done(&b);
}

tf_status linalg_slogdet_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                             tf_ext_tensor *const *tan, tf_ext_tensor **tout)
{
    if (call->out_index == 0)
        return TF_OK;
    lb b = lb_begin(c);
    lb_set(&b, lb_sum2(&b, lb_mul(&b, inv_t(&b, call->tensors[0]), tan[0])), tout);
    return lb_done(&b);
}

/* ---- cholesky ---- */

tf_status linalg_cholesky_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                              const int *need, tf_ext_tensor **cin)
{
    lb b = lb_begin(c);
    tf_ext_tensor *l = call->output, *lt = lb_transpose_last2(&b, l);
    tf_ext_tensor *p = lb_tri(&b, lb_matmul(&b, lt, cot), 1, 0);
    tf_ext_tensor *sym =
        lb_scale(&b, lb_add(&b, p, lb_transpose_last2(&b, lb_tri(&b, p, 1, -1))), 0.5);
    tf_ext_tensor *x1 = lb_op(&b, TRISOLVE, lt, sym, 0);                        /* L^-T S */
    tf_ext_tensor *x2 = lb_op(&b, TRISOLVE, lt, lb_transpose_last2(&b, x1), 0); /* (x1 L^-1)^T */
    lb_set(&b, lb_transpose_last2(&b, x2), &cin[0]);
    return lb_done(&b);
}

tf_status linalg_cholesky_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                              tf_ext_tensor *const *tan, tf_ext_tensor **tout)
{
    lb b = lb_begin(c);
    tf_ext_tensor *l = call->output;
    tf_ext_tensor *y = lb_op(&b, TRISOLVE, l, tan[0], 1); /* L^-1 dA */
    tf_ext_tensor *m = lb_transpose_last2(&b, lb_op(&b, TRISOLVE, l, lb_transpose_last2(&b, y), 1));
    tf_ext_tensor *phi = lb_scale(&b, lb_add(&b, lb_tri(&b, m, 1, 0), lb_tri(&b, m, 1, -1)), 0.5);
    lb_set(&b, lb_matmul(&b, l, phi), tout);
    return lb_done(&b);
}

/* ---- qr (thin, m >= n) ---- */

#define QR LINALG_ID ".qr"


/* x R^-1 for upper triangular R: (R^-T x^T)^T = trisolve(R^T, x^T, lower)^T. */
static tf_ext_tensor *times_rinv(lb *b, tf_ext_tensor *x, tf_ext_tensor *r)
{
    tf_ext_tensor *rt = lb_transpose_last2(b, r);
    return lb_transpose_last2(b, lb_op(b, TRISOLVE, rt, lb_transpose_last2(b, x), 1));
}

/* M + M^T - diag(M) built from the lower triangle of M (copyltu). */
static tf_ext_tensor *copyltu(lb *b, tf_ext_tensor *m)
{
    tf_ext_tensor *lo = lb_tri(b, m, 1, -1);
    return lb_add(b, lb_tri(b, m, 1, 0), lb_transpose_last2(b, lo));
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
        m = lb_neg(&b, lb_matmul(&b, lb_transpose_last2(&b, cot), q)); /* -Qbar^T Q */
        inner = lb_add(&b, cot, lb_matmul(&b, q, copyltu(&b, m)));
    } else {
        m = lb_matmul(&b, r, lb_transpose_last2(&b, cot)); /* R Rbar^T */
        inner = lb_matmul(&b, q, copyltu(&b, m));
    }
    /* Abar = inner R^-T = (R^-1 inner^T)^T */
    tf_ext_tensor *abar =
        lb_transpose_last2(&b, lb_op(&b, TRISOLVE, r, lb_transpose_last2(&b, inner), 0));
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
    tf_ext_tensor *bm = times_rinv(&b, lb_matmul(&b, lb_transpose_last2(&b, q), da), r);
    tf_ext_tensor *lo = lb_tri(&b, bm, 1, -1);
    tf_ext_tensor *omega = lb_sub(&b, lo, lb_transpose_last2(&b, lo));
    tf_ext_tensor *dr = lb_matmul(&b, lb_sub(&b, bm, omega), r);
    if (call->out_index == 1)
        lb_set(&b, dr, tout);
    else
        lb_set(&b, times_rinv(&b, lb_sub(&b, da, lb_matmul(&b, q, dr)), r), tout);
    return lb_done(&b);
}

/* ---- lstsq (full column rank) ----
 * X = (A^T A)^-1 A^T B. With G = (A^T A)^-1 Xbar and residual E = B - A X:
 *   Bbar = A G,  Abar = E G^T - A G X^T;
 *   dX = (A^T A)^-1 (dA^T E + A^T (dB - dA X)).
 */
tf_status linalg_lstsq_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                           const int *need, tf_ext_tensor **cin)
{
    lb b = lb_begin(c);
    tf_ext_tensor *a = call->tensors[0], *bb = call->tensors[1], *x = call->output;
    tf_ext_tensor *at = lb_transpose_last2(&b, a);
    tf_ext_tensor *g = lb_op(&b, SOLVE, lb_matmul(&b, at, a), cot, -1);
    tf_ext_tensor *ag = lb_matmul(&b, a, g);
    if (need[1])
        lb_set(&b, ag, &cin[1]);
    if (need[0]) {
        tf_ext_tensor *e = lb_sub(&b, bb, lb_matmul(&b, a, x));
        tf_ext_tensor *t1 = lb_matmul(&b, e, lb_transpose_last2(&b, g));
        lb_set(&b, lb_sub(&b, t1, lb_matmul(&b, ag, lb_transpose_last2(&b, x))), &cin[0]);
    }
    return lb_done(&b);
}

tf_status linalg_lstsq_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                           tf_ext_tensor *const *tan, tf_ext_tensor **tout)
{
    lb b = lb_begin(c);
    tf_ext_tensor *a = call->tensors[0], *bb = call->tensors[1], *x = call->output;
    tf_ext_tensor *at = lb_transpose_last2(&b, a), *rhs = NULL;
    if (tan[0]) {
        tf_ext_tensor *e = lb_sub(&b, bb, lb_matmul(&b, a, x));
        tf_ext_tensor *t1 = lb_matmul(&b, lb_transpose_last2(&b, tan[0]), e);
        rhs = lb_sub(&b, t1, lb_matmul(&b, at, lb_matmul(&b, tan[0], x)));
    }
    if (tan[1]) {
        tf_ext_tensor *t2 = lb_matmul(&b, at, tan[1]);
        rhs = rhs ? lb_add(&b, rhs, t2) : t2;
    }
    lb_set(&b, lb_op(&b, SOLVE, lb_matmul(&b, at, a), rhs, -1), tout);
    return lb_done(&b);
}

