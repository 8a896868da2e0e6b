/*
 * linalg_module.c - the tenferro.linalg extension module: its descriptor,
 * entry symbol, install hook and the shape/dtype inference of each op.
 *
 * Ops (full names "tenferro.linalg.<op>"; A is [..., n, n], leading axes
 * are batch axes; f32, f64, c64 or c128, every tensor argument of one
 * dtype; for complex a every transpose below is the conjugate transpose
 * ^H, and symmetric reads Hermitian):
 *   cholesky(a) -> l               lower Cholesky factor, a = l l^H (reads a's
 *                                  lower triangle; the AD rules treat a as
 *                                  symmetric / Hermitian)
 *   solve(a, b) -> x               a x = b, b [..., n, k] with a's batch axes
 *   triangular_solve(a, b, lower) -> x   a triangular (lower != 0: its lower
 *                                  triangle, else its upper one), b as for solve
 *   inv(a) -> y                    the inverse
 *   det(a) -> d                    determinant, shape [...] (0 for an exactly
 *                                  singular matrix)
 *   slogdet(a) -> sign, logabsdet  sign 0 and logabsdet -inf when singular;
 *                                  for complex a sign = det / |det| (a's
 *                                  dtype), logabsdet real (the parts' dtype)
 *   qr(a) -> q, r                  thin QR of [..., m, n], m >= n
 *   lstsq(a, b) -> x               least squares for a [..., m, n] of full
 *                                  column rank (m >= n), b [..., m, k];
 *                                  rank_deficient when a diagonal of R is at
 *                                  most max(m, n) eps max |R[i,i]|
 *   svd(a, eps: f64) -> u, s, v    thin SVD, a = u diag(s) v^H, s descending
 *                                  and real;
 *                                  eps as for eigh (for s_j^2 - s_i^2)
 *   pinv(a, rcond: f64) -> p       Moore-Penrose inverse [..., n, m] by SVD,
 *                                  dropping singular values <= rcond * max;
 *                                  the rules hold where the rank is constant
 *   norm(a, ord: f64) -> n         the matrix norm of order ord of each matrix,
 *                                  [...], real: 'F' Frobenius, 'N' nuclear, 2 / -2
 *                                  largest / smallest singular value, 1 / -1
 *                                  max / min absolute column sum, INFINITY /
 *                                  -INFINITY max / min absolute row sum
 *   norm_grad(a, ord: f64) -> g    the subgradient norm's rules use (ord +-1,
 *                                  +-2, +-inf); not meant for applications
 *   eigh(a, eps: f64) -> w, v      a symmetric or Hermitian (lower triangle
 *                                  read), w ascending and real [..., n];
 *                                  the rules use
 *                                  (w_j - w_i) / ((w_j - w_i)^2 + eps) for
 *                                  1 / (w_j - w_i): eps = 0 is exact, eps > 0
 *                                  keeps degenerate spectra finite
 * Data-dependent failures are the typed errors declared in k_kinds below
 * (TF_ERR_EXTENSION, kinds singular, not_positive_definite, rank_deficient,
 * no_convergence), naming the op and the batch element.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "linalg_internal.h"

/* Refuses argument `arg` (its index in the op's signature: 'a' is 0, 'b' or the scalar 1). */
static tf_status refuse_arg(const tf_ext_rule_ctx *c, tf_status st, uint32_t arg, const char *msg)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s: %s", c->op_name, msg);
    if (TF_ABI_HAS_FIELD(c, tf_ext_rule_ctx, report_argument) && c->report_argument)
        return c->report_argument(c, st, arg, buf);
    c->host->report_error(c->host->ctx, st, buf); /* an ABI 1.0 host */
    return st;
}

/* f32, f64, c64 or c128: the dtypes with LAPACK routines (and derivatives). */
static int linalg_dtype(uint32_t dt)
{
    return tf_dtype_is_inexact((tf_dtype)dt);
}

/* Refuses argument 'a' of a dtype without LAPACK routines (integers, bool), naming it. */
static tf_status refuse_dtype(const tf_ext_rule_ctx *c, const tf_ext_meta *a)
{
    char msg[96];
    snprintf(msg, sizeof msg, "argument 'a' must be f32, f64, c64 or c128, not %s",
             tf_dtype_name((tf_dtype)a->dtype));
    return refuse_arg(c, TF_ERR_DTYPE_MISMATCH, 0, msg);
}

/*
 * b must have a's dtype: a real/complex mix is refused rather than promoted
 * (convert the real operand first, tf_session_convert), as is f32 with f64.
 */
static tf_status check_same_dtype(const tf_ext_rule_ctx *c, const tf_ext_meta *a,
                                  const tf_ext_meta *b)
{
    if (b->dtype == a->dtype)
        return TF_OK;
    char msg[128];
    snprintf(msg, sizeof msg, "argument 'b' (%s) must have a's dtype (%s)",
             tf_dtype_name((tf_dtype)b->dtype), tf_dtype_name((tf_dtype)a->dtype));
    return refuse_arg(c, TF_ERR_DTYPE_MISMATCH, 1, msg);
}

/* The dtype of a's real parts: a's own for f32/f64, f32/f64 for c64/c128. */
static uint32_t real_of(const tf_ext_meta *a)
{
    return tf_dtype_real_of((tf_dtype)a->dtype);
}

/* a must be a float or complex batch of matrices (rank >= 2). */
static tf_status check_matrix(const tf_ext_rule_ctx *c, const tf_ext_meta *a)
{
    if (!linalg_dtype(a->dtype))
        return refuse_dtype(c, a);
    if (a->rank < 2)
        return refuse_arg(c, TF_ERR_SHAPE_MISMATCH, 0, "argument 'a' must have rank >= 2");
    return TF_OK;
}

/* a must be a float or complex batch of square matrices. */
static tf_status check_square(const tf_ext_rule_ctx *c, const tf_ext_meta *a)
{
    tf_status st = check_matrix(c, a);
    if (st)
        return st;
    if (a->shape[a->rank - 1] != a->shape[a->rank - 2])
        return refuse_arg(c, TF_ERR_SHAPE_MISMATCH, 0,
                          "argument 'a' must be square on its last two axes");
    return TF_OK;
}

static tf_status infer_same(const tf_ext_rule_ctx *c, const tf_ext_meta *t, uint32_t nt,
                            const tf_ext_scalar *s, uint32_t ns, tf_ext_meta *out)
{
    tf_status st = check_square(c, &t[0]);
    if (st)
        return st;
    out[0] = t[0];
    return TF_OK;
}

static tf_status infer_solve(const tf_ext_rule_ctx *c, const tf_ext_meta *t, uint32_t nt,
                             const tf_ext_scalar *s, uint32_t ns, tf_ext_meta *out)
{
    tf_status st = check_square(c, &t[0]);
    if (st)
        return st;
    const tf_ext_meta *a = &t[0], *b = &t[1];
    if ((st = check_same_dtype(c, a, b)))
        return st;
    if (b->rank != a->rank)
        return refuse_arg(c, TF_ERR_SHAPE_MISMATCH, 1,
                          "argument 'b' must have a's rank ([..., n, k])");
    for (uint32_t i = 0; i + 1 < a->rank; i++)
        if (b->shape[i] != a->shape[i])
            return refuse_arg(c, TF_ERR_SHAPE_MISMATCH, 1,
                              "argument 'b' must have a's batch axes and n rows");
    out[0] = *b;
    return TF_OK;
}

static tf_status infer_lstsq(const tf_ext_rule_ctx *c, const tf_ext_meta *t, uint32_t nt,
                             const tf_ext_scalar *s, uint32_t ns, tf_ext_meta *out)
{
    const tf_ext_meta *a = &t[0], *b = &t[1];
    if (!linalg_dtype(a->dtype))
        return refuse_dtype(c, a);
    tf_status st = check_same_dtype(c, a, b);
    if (st)
        return st;
    if (a->rank < 2 || a->shape[a->rank - 2] < a->shape[a->rank - 1])
        return refuse_arg(c, TF_ERR_SHAPE_MISMATCH, 0,
                          "argument 'a' must be [..., m, n] with m >= n");
    if (b->rank != a->rank)
        return refuse_arg(c, TF_ERR_SHAPE_MISMATCH, 1,
                          "argument 'b' must have a's rank ([..., m, k])");
    for (uint32_t i = 0; i + 1 < a->rank; i++)
        if (b->shape[i] != a->shape[i])
            return refuse_arg(c, TF_ERR_SHAPE_MISMATCH, 1,
                              "argument 'b' must have a's batch axes and m rows");
    out[0] = *b;
    out[0].shape[b->rank - 2] = a->shape[a->rank - 1];
    return TF_OK;
}

static tf_status infer_svd(const tf_ext_rule_ctx *c, const tf_ext_meta *t, uint32_t nt,
                           const tf_ext_scalar *s, uint32_t ns, tf_ext_meta *out)
{
    const tf_ext_meta *a = &t[0];
    tf_status st = check_matrix(c, a);
    if (st)
        return st;
    if (!(s[0].f >= 0))
        return refuse_arg(c, TF_ERR_VALIDATION, 1, "argument 'eps' must be >= 0");
    int64_t m = a->shape[a->rank - 2], n = a->shape[a->rank - 1], k = m < n ? m : n;
    out[0] = out[1] = out[2] = *a;
    out[0].shape[a->rank - 1] = k; /* u [..., m, k] */
    out[1].rank = a->rank - 1;     /* s [..., k], real */
    out[1].dtype = real_of(a);
    out[1].shape[a->rank - 2] = k;
    out[2].shape[a->rank - 2] = n; /* v [..., n, k] */
    out[2].shape[a->rank - 1] = k;
    return TF_OK;
}

static tf_status infer_pinv(const tf_ext_rule_ctx *c, const tf_ext_meta *t, uint32_t nt,
                            const tf_ext_scalar *s, uint32_t ns, tf_ext_meta *out)
{
    const tf_ext_meta *a = &t[0];
    tf_status st = check_matrix(c, a);
    if (st)
        return st;
    if (!(s[0].f >= 0 && s[0].f < 1))
        return refuse_arg(c, TF_ERR_VALIDATION, 1, "argument 'rcond' must be in [0, 1)");
    out[0] = *a;
    out[0].shape[a->rank - 2] = a->shape[a->rank - 1];
    out[0].shape[a->rank - 1] = a->shape[a->rank - 2];
    return TF_OK;
}

static int valid_ord(double ord, int with_named)
{
    return ord == 1 || ord == -1 || ord == 2 || ord == -2 || ord == INFINITY || ord == -INFINITY ||
           (with_named && (ord == LINALG_ORD_FRO || ord == LINALG_ORD_NUC));
}

static tf_status infer_norm(const tf_ext_rule_ctx *c, const tf_ext_meta *t, uint32_t nt,
                            const tf_ext_scalar *s, uint32_t ns, tf_ext_meta *out)
{
    const tf_ext_meta *a = &t[0];
    tf_status st = check_matrix(c, a);
    if (st)
        return st;
    if (!valid_ord(s[0].f, 1))
        return refuse_arg(c, TF_ERR_VALIDATION, 1,
                          "argument 'ord' must be 'F', 'N', 1, -1, 2, -2, INFINITY or -INFINITY");
    out[0] = *a;
    out[0].rank = a->rank - 2;
    out[0].dtype = real_of(a); /* a norm is real */
    return TF_OK;
}

static tf_status infer_norm_grad(const tf_ext_rule_ctx *c, const tf_ext_meta *t, uint32_t nt,
                                 const tf_ext_scalar *s, uint32_t ns, tf_ext_meta *out)
{
    tf_status st = check_matrix(c, &t[0]);
    if (st)
        return st;
    if (!valid_ord(s[0].f, 0))
        return refuse_arg(c, TF_ERR_VALIDATION, 1,
                          "argument 'ord' must be 1, -1, 2, -2, INFINITY or -INFINITY");
    out[0] = t[0];
    return TF_OK;
}

static tf_status infer_det(const tf_ext_rule_ctx *c, const tf_ext_meta *t, uint32_t nt,
                           const tf_ext_scalar *s, uint32_t ns, tf_ext_meta *out)
{
    tf_status st = check_square(c, &t[0]);
    if (st)
        return st;
    out[0] = t[0];
    out[0].rank = t[0].rank - 2;
    if (c->op_name && strstr(c->op_name, "slogdet")) { /* sign: a's dtype; logabsdet: real */
        out[1] = out[0];
        out[1].dtype = real_of(&t[0]);
    }
    return TF_OK;
}

static tf_status infer_qr(const tf_ext_rule_ctx *c, const tf_ext_meta *t, uint32_t nt,
                          const tf_ext_scalar *s, uint32_t ns, tf_ext_meta *out)
{
    const tf_ext_meta *a = &t[0];
    if (!linalg_dtype(a->dtype))
        return refuse_dtype(c, a);
    if (a->rank < 2 || a->shape[a->rank - 2] < a->shape[a->rank - 1])
        return refuse_arg(c, TF_ERR_SHAPE_MISMATCH, 0,
                          "argument 'a' must be [..., m, n] with m >= n (thin QR)");
    out[0] = *a;
    out[1] = *a;
    out[1].shape[a->rank - 2] = a->shape[a->rank - 1];
    return TF_OK;
}

static tf_status infer_eigh(const tf_ext_rule_ctx *c, const tf_ext_meta *t, uint32_t nt,
                            const tf_ext_scalar *s, uint32_t ns, tf_ext_meta *out)
{
    tf_status st = check_square(c, &t[0]);
    if (st)
        return st;
    if (!(s[0].f >= 0))
        return refuse_arg(c, TF_ERR_VALIDATION, 1, "argument 'eps' must be >= 0");
    out[0] = t[0];
    out[0].rank = t[0].rank - 1;
    out[0].dtype = real_of(&t[0]); /* the eigenvalues of a Hermitian matrix are real */
    out[1] = t[0];
    return TF_OK;
}

static const uint32_t k_a[] = {TF_EXT_ARG_TENSOR};
static const uint32_t k_ae[] = {TF_EXT_ARG_TENSOR, TF_EXT_ARG_F64};
static const char *const n_ae[] = {"a", "eps"};
static const char *const n_ar[] = {"a", "rcond"};
static const char *const n_ao[] = {"a", "ord"};
static const char *const n_a[] = {"a"};
static const uint32_t k_ab[] = {TF_EXT_ARG_TENSOR, TF_EXT_ARG_TENSOR};
static const char *const n_ab[] = {"a", "b"};
static const uint32_t k_abl[] = {TF_EXT_ARG_TENSOR, TF_EXT_ARG_TENSOR, TF_EXT_ARG_I64};
static const char *const n_abl[] = {"a", "b", "lower"};

#define KERNELS_(fn) \
    static const tf_ext_kernel k_##fn[] = {{"cpu", TF_EXT_KERNEL_FN(linalg_##fn##_cpu)}}
KERNELS_(cholesky);
KERNELS_(solve);
KERNELS_(triangular_solve);
KERNELS_(inv);
KERNELS_(det);
KERNELS_(slogdet);
KERNELS_(qr);
KERNELS_(eigh);
KERNELS_(lstsq);
KERNELS_(svd);
KERNELS_(pinv);
KERNELS_(norm);
KERNELS_(norm_grad);

/* flags (ABI 1.3): TF_EXT_OP_RULES_READ_OUTPUTS for the multi-output ops whose rules
   read their other outputs (qr, eigh, svd), so that first-order rules get them from
   the forward call rather than running its kernel again */
#define OPF_(nm, kinds, names, nout, inf, vjp, jvp, doc, flags)                               \
    {                                                                                         \
        sizeof(tf_ext_op), sizeof(kinds) / sizeof(kinds[0]), nout, 1, #nm, kinds, names, inf, \
            k_##nm, vjp, jvp, doc, NULL /* ABI 1.2: not a composite */, flags, 0              \
    }
#define OP_(nm, kinds, names, nout, inf, vjp, jvp, doc) \
    OPF_(nm, kinds, names, nout, inf, vjp, jvp, doc, 0)
#define READS_OUTPUTS_ TF_EXT_OP_RULES_READ_OUTPUTS

static const tf_ext_op k_ops[] = {
    OP_(cholesky, k_a, n_a, 1, infer_same, linalg_cholesky_vjp, linalg_cholesky_jvp,
        "lower Cholesky factor of a symmetric (Hermitian) positive definite matrix"),
    OP_(solve, k_ab, n_ab, 1, infer_solve, linalg_solve_vjp, linalg_solve_jvp,
        "x with a x = b (LU with partial pivoting)"),
    OP_(triangular_solve, k_abl, n_abl, 1, infer_solve, linalg_trisolve_vjp, linalg_trisolve_jvp,
        "x with a x = b for triangular a"),
    OP_(inv, k_a, n_a, 1, infer_same, linalg_inv_vjp, linalg_inv_jvp, "matrix inverse"),
    OP_(det, k_a, n_a, 1, infer_det, linalg_det_vjp, linalg_det_jvp, "determinant"),
    OP_(slogdet, k_a, n_a, 2, infer_det, linalg_slogdet_vjp, linalg_slogdet_jvp,
        "sign and log of the absolute value of the determinant"),
    OPF_(qr, k_a, n_a, 2, infer_qr, linalg_qr_vjp, linalg_qr_jvp,
         "thin QR (Householder): q [..., m, n], r [..., n, n], m >= n", READS_OUTPUTS_),
    OPF_(eigh, k_ae, n_ae, 2, infer_eigh, linalg_eigh_vjp, linalg_eigh_jvp,
         "symmetric (Hermitian) eigendecomposition: ascending real w, eigenvectors v; eps regularises the "
         "derivative for close eigenvalues",
         READS_OUTPUTS_),
    OP_(lstsq, k_ab, n_ab, 1, infer_lstsq, linalg_lstsq_vjp, linalg_lstsq_jvp,
        "least squares x minimising ||a x - b|| for full column rank a (QR)"),
    OPF_(svd, k_ae, n_ae, 3, infer_svd, linalg_svd_vjp, linalg_svd_jvp,
         "thin SVD: u [..., m, k], s [..., k] descending, v [..., n, k], k = min(m, n)",
         READS_OUTPUTS_),
    OP_(pinv, k_ae, n_ar, 1, infer_pinv, linalg_pinv_vjp, linalg_pinv_jvp,
        "Moore-Penrose inverse by SVD; singular values <= rcond * max are dropped"),
    OP_(norm, k_ae, n_ao, 1, infer_norm, linalg_norm_vjp, linalg_norm_jvp,
        "matrix norm of order ord: 'F', 'N', 1, -1, 2, -2, INFINITY, -INFINITY"),
    OP_(norm_grad, k_ae, n_ao, 1, infer_norm_grad, linalg_norm_grad_vjp, linalg_norm_grad_jvp,
        "the subgradient of norm for ord +-1, +-2, +-inf (used by norm's rules)"),
};

static tf_status install(const tf_host_api *host, const tf_ext_registrar *reg)
{
    for (size_t i = 0; i < sizeof k_ops / sizeof k_ops[0]; i++) {
        tf_status st = reg->add_op(reg->candidate, &k_ops[i]);
        if (st)
            return st;
    }
    return TF_OK;
}

/* The typed errors of the kernels (extension_abi.h "Typed errors"). */
static const tf_ext_error_kind k_kinds[] = {
    {"singular", "the matrix is singular"},                           /* solve, inv, trisolve */
    {"not_positive_definite", "the matrix is not positive definite"}, /* cholesky */
    {"rank_deficient", "the matrix does not have full column rank"},  /* lstsq */
    {"no_convergence", "the eigenvalue or singular value iteration did not converge"},
};

static const tf_extension_module_desc k_desc = {
    sizeof(tf_extension_module_desc),
    TF_EXTENSION_ABI_MAJOR,
    TF_EXTENSION_ABI_MINOR,
    0,
    LINALG_ID,
    "0.3.0",
    "dense linear algebra (LAPACKE): cholesky, solve, triangular_solve, inv, det, slogdet, qr, "
    "eigh, lstsq, svd, pinv, norm",
    install,
    k_kinds,
    sizeof k_kinds / sizeof k_kinds[0],
    0,
    NULL, /* ABI 1.2: no interfaces */
};

TF_EXTENSION_EXPORT const tf_extension_module_desc *
tf_extension_module_v1(const tf_host_api *host, uint32_t abi_major, uint32_t abi_minor);

TF_EXTENSION_EXPORT const tf_extension_module_desc *
tf_extension_module_v1(const tf_host_api *host, uint32_t abi_major, uint32_t abi_minor)
{
    if (abi_major != TF_EXTENSION_ABI_MAJOR || !host)
        return NULL;
    return &k_desc;
}
