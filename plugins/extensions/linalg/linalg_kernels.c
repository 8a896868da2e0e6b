/*
 * linalg_kernels.c - the CPU kernels of tenferro.linalg on LAPACKE.
 *
 * Each kernel walks the batch (every axis but the last two), copies one
 * matrix at a time from its strided operand into a dense column-major
 * scratch buffer (host->alloc), calls LAPACK there, and writes the result to
 * the dense output. f32 uses the s* routines, f64 the d* routines.
 */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <lapacke.h>

#include "linalg_internal.h"

/* ---- matrices of a batch ---- */

static int64_t batch_count(const tf_operand *o, uint32_t mat_axes)
{
    int64_t n = 1;
    for (uint32_t i = 0; i + mat_axes < o->rank; i++)
        n *= o->shape[i];
    return n;
}

/* Element offset of batch element b (first batch axis fastest). */
static int64_t batch_offset(const tf_operand *o, uint32_t mat_axes, int64_t b)
{
    int64_t off = o->offset;
    for (uint32_t i = 0; i + mat_axes < o->rank; i++) {
        off += (b % o->shape[i]) * o->strides[i];
        b /= o->shape[i];
    }
    return off;
}

/* Copies matrix b of o ([..., m, n]) into dense column-major buf. */
static void load(const tf_operand *o, int64_t b, void *buf)
{
    uint32_t r = o->rank;
    int64_t m = o->shape[r - 2], n = o->shape[r - 1], si = o->strides[r - 2],
            sj = o->strides[r - 1];
    int64_t base = batch_offset(o, 2, b);
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++) {
            int64_t at = base + i * si + j * sj;
            if (o->dtype == TF_F64)
                ((double *)buf)[i + j * m] = ((const double *)o->data)[at];
            else
                ((float *)buf)[i + j * m] = ((const float *)o->data)[at];
        }
}

/* Copies dense buf into matrix b of the output o (dense column-major over
   the whole tensor, so a matrix of a batch is strided). */
static void store(const tf_operand *o, int64_t b, const void *buf)
{
    uint32_t r = o->rank;
    int64_t m = o->shape[r - 2], n = o->shape[r - 1], si = o->strides[r - 2],
            sj = o->strides[r - 1];
    int64_t base = batch_offset(o, 2, b);
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++) {
            int64_t at = base + i * si + j * sj;
            if (o->dtype == TF_F64)
                ((double *)o->data)[at] = ((const double *)buf)[i + j * m];
            else
                ((float *)o->data)[at] = ((const float *)buf)[i + j * m];
        }
}

static tf_status fail(const tf_ext_kernel_ctx *k, tf_status st, const char *fmt, int64_t b,
                      long long info)
{
    char msg[256], what[160];
    snprintf(what, sizeof what, fmt, info);
    snprintf(msg, sizeof msg, "%s: %s (batch element %lld)", k->op_name, what, (long long)b);
    k->host->report_error(k->host->ctx, st, msg);
    return st;
}

/*
 * A typed failure of kind `kind` (declared in linalg_module.c) for batch
 * element b. A host of extension ABI 1.0 has no report_kind: the failure
 * then is an untyped TF_ERR_BACKEND with the same message.
 */
static tf_status fail_kind(const tf_ext_kernel_ctx *k, const char *kind, int64_t b, const char *fmt,
                           ...) __attribute__((format(printf, 4, 5)));
static tf_status fail_kind(const tf_ext_kernel_ctx *k, const char *kind, int64_t b, const char *fmt,
                           ...)
{
    char msg[256], what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(msg, sizeof msg, "%s: %s (batch element %lld)", k->op_name, what, (long long)b);
    if (TF_ABI_HAS_FIELD(k, tf_ext_kernel_ctx, report_kind) && k->report_kind)
        return k->report_kind(k, kind, b, msg);
    k->host->report_error(k->host->ctx, TF_ERR_BACKEND, msg);
    return TF_ERR_BACKEND;
}

/*
 * LAPACK's iterative eigen/singular-value solvers cannot work on NaN or
 * infinite entries: dsyev/ssyev end with info > 0 (no convergence) on NaN,
 * dgesdd/sgesdd refuse NaN as an illegal argument (info -5) and return NaN
 * values with info 0 on an infinity. Checking first makes every such input
 * one failure, "no_convergence", naming the entry. `lower`: only the lower
 * triangle is read (eigh).
 */
static tf_status check_finite(const tf_ext_kernel_ctx *k, const tf_operand *a, const void *buf,
                              int64_t b, int lower)
{
    int64_t m = a->shape[a->rank - 2], n = a->shape[a->rank - 1];
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = lower ? j : 0; i < m; i++) {
            double x = a->dtype == TF_F64 ? ((const double *)buf)[i + j * m]
                                          : ((const float *)buf)[i + j * m];
            if (!isfinite(x))
                return fail_kind(k, "no_convergence", b,
                                 "entry (%lld, %lld) is not finite; LAPACK cannot converge on it",
                                 (long long)i, (long long)j);
        }
    return TF_OK;
}

static void *scratch(const tf_ext_kernel_ctx *k, size_t bytes)
{
    return k->host->alloc(k->host->ctx, bytes ? bytes : 1, 0);
}

static tf_status oom(const tf_ext_kernel_ctx *k)
{
    k->host->report_error(k->host->ctx, TF_ERR_OUT_OF_MEMORY, "linalg: out of scratch memory");
    return TF_ERR_OUT_OF_MEMORY;
}

/* ---- LU ---- */

static lapack_int getrf(uint32_t dt, lapack_int n, void *a, lapack_int *ipiv)
{
    return dt == TF_F64 ? LAPACKE_dgetrf_work(LAPACK_COL_MAJOR, n, n, a, n, ipiv)
                        : LAPACKE_sgetrf_work(LAPACK_COL_MAJOR, n, n, a, n, ipiv);
}

/* ---- kernels ---- */

tf_status linalg_cholesky_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, const tf_operand *l)
{
    lapack_int n = (lapack_int)a->shape[a->rank - 1];
    if (n == 0)
        return TF_OK; /* empty matrices: nothing to compute or write */
    size_t es = a->dtype == TF_F64 ? 8 : 4;
    void *buf = scratch(k, (size_t)n * (size_t)n * es);
    if (!buf)
        return oom(k);
    tf_status st = TF_OK;
    for (int64_t b = 0, nb = batch_count(a, 2); b < nb && !st; b++) {
        load(a, b, buf);
        lapack_int info = a->dtype == TF_F64
                              ? LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', n, buf, n)
                              : LAPACKE_spotrf_work(LAPACK_COL_MAJOR, 'L', n, buf, n);
        if (info > 0) {
            st = fail_kind(k, "not_positive_definite", b,
                           "the leading minor of order %lld is not positive definite",
                           (long long)info);
            break;
        }
        for (lapack_int j = 1; j < n; j++) /* potrf leaves the upper triangle: zero it */
            for (lapack_int i = 0; i < j; i++)
                memset((char *)buf + (size_t)(i + j * n) * es, 0, es);
        store(l, b, buf);
    }
    k->host->free(k->host->ctx, buf);
    return st;
}

tf_status linalg_solve_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, const tf_operand *b,
                           const tf_operand *x)
{
    lapack_int n = (lapack_int)a->shape[a->rank - 1], nrhs = (lapack_int)b->shape[b->rank - 1];
    if (n == 0)
        return TF_OK; /* empty matrices: nothing to compute or write */
    size_t es = a->dtype == TF_F64 ? 8 : 4;
    void *am = scratch(k, (size_t)n * (size_t)n * es),
         *bm = scratch(k, (size_t)n * (size_t)nrhs * es);
    lapack_int *ipiv = scratch(k, (size_t)(n ? n : 1) * sizeof *ipiv);
    tf_status st = am && bm && ipiv ? TF_OK : oom(k);
    for (int64_t i = 0, nb = batch_count(a, 2); i < nb && !st; i++) {
        load(a, i, am);
        load(b, i, bm);
        lapack_int info = a->dtype == TF_F64
                              ? LAPACKE_dgesv_work(LAPACK_COL_MAJOR, n, nrhs, am, n, ipiv, bm, n)
                              : LAPACKE_sgesv_work(LAPACK_COL_MAJOR, n, nrhs, am, n, ipiv, bm, n);
        if (info > 0)
            st = fail_kind(k, "singular", i, "U[%lld,%lld] of its LU factorisation is exactly zero",
                           (long long)info, (long long)info);
        else
            store(x, i, bm);
    }
    k->host->free(k->host->ctx, am);
    k->host->free(k->host->ctx, bm);
    k->host->free(k->host->ctx, ipiv);
    return st;
}

tf_status linalg_triangular_solve_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a,
                                      const tf_operand *b, int64_t lower, const tf_operand *x)
{
    lapack_int n = (lapack_int)a->shape[a->rank - 1], nrhs = (lapack_int)b->shape[b->rank - 1];
    if (n == 0)
        return TF_OK; /* empty matrices: nothing to compute or write */
    size_t es = a->dtype == TF_F64 ? 8 : 4;
    char uplo = lower ? 'L' : 'U';
    void *am = scratch(k, (size_t)n * (size_t)n * es),
         *bm = scratch(k, (size_t)n * (size_t)nrhs * es);
    tf_status st = am && bm ? TF_OK : oom(k);
    for (int64_t i = 0, nb = batch_count(a, 2); i < nb && !st; i++) {
        load(a, i, am);
        load(b, i, bm);
        lapack_int info =
            a->dtype == TF_F64
                ? LAPACKE_dtrtrs_work(LAPACK_COL_MAJOR, uplo, 'N', 'N', n, nrhs, am, n, bm, n)
                : LAPACKE_strtrs_work(LAPACK_COL_MAJOR, uplo, 'N', 'N', n, nrhs, am, n, bm, n);
        if (info > 0)
            st = fail_kind(k, "singular", i, "diagonal element %lld is exactly zero",
                           (long long)info);
        else
            store(x, i, bm);
    }
    k->host->free(k->host->ctx, am);
    k->host->free(k->host->ctx, bm);
    return st;
}

tf_status linalg_inv_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, const tf_operand *y)
{
    lapack_int n = (lapack_int)a->shape[a->rank - 1];
    if (n == 0)
        return TF_OK; /* empty matrices: nothing to compute or write */
    size_t es = a->dtype == TF_F64 ? 8 : 4;
    void *am = scratch(k, (size_t)n * (size_t)n * es),
         *work = scratch(k, (size_t)(n ? n : 1) * 64 * es);
    lapack_int *ipiv = scratch(k, (size_t)(n ? n : 1) * sizeof *ipiv);
    tf_status st = am && work && ipiv ? TF_OK : oom(k);
    for (int64_t i = 0, nb = batch_count(a, 2); i < nb && !st; i++) {
        load(a, i, am);
        lapack_int info = getrf(a->dtype, n, am, ipiv);
        if (info == 0 && n > 0)
            info = a->dtype == TF_F64
                       ? LAPACKE_dgetri_work(LAPACK_COL_MAJOR, n, am, n, ipiv, work, n * 64)
                       : LAPACKE_sgetri_work(LAPACK_COL_MAJOR, n, am, n, ipiv, work, n * 64);
        if (info > 0)
            st = fail_kind(k, "singular", i, "U[%lld,%lld] of its LU factorisation is exactly zero",
                           (long long)info, (long long)info);
        else
            store(y, i, am);
    }
    k->host->free(k->host->ctx, am);
    k->host->free(k->host->ctx, work);
    k->host->free(k->host->ctx, ipiv);
    return st;
}

/* sign and log|det| of one LU-factored matrix; sign 0 when singular. */
static void lu_logdet(uint32_t dt, lapack_int n, const void *lu, const lapack_int *ipiv,
                      lapack_int info, double *sign, double *logabs)
{
    double sg = 1.0, la = 0.0;
    for (lapack_int i = 0; i < n; i++) {
        double u = dt == TF_F64 ? ((const double *)lu)[i + i * n] : ((const float *)lu)[i + i * n];
        if (ipiv[i] != i + 1)
            sg = -sg;
        if (u < 0)
            sg = -sg;
        la += log(fabs(u));
    }
    if (info > 0) {
        sg = 0.0;
        la = -INFINITY;
    }
    *sign = sg;
    *logabs = la;
}

/* Shared by det and slogdet: writes sign/logabs (or det) of every matrix. */
static tf_status logdet_all(const tf_ext_kernel_ctx *k, const tf_operand *a, const tf_operand *d,
                            const tf_operand *sign, const tf_operand *logabs)
{
    lapack_int n = (lapack_int)a->shape[a->rank - 1];
    size_t es = a->dtype == TF_F64 ? 8 : 4;
    void *am = scratch(k, (size_t)n * (size_t)n * es);
    lapack_int *ipiv = scratch(k, (size_t)(n ? n : 1) * sizeof *ipiv);
    if (!am || !ipiv) {
        k->host->free(k->host->ctx, am);
        k->host->free(k->host->ctx, ipiv);
        return oom(k);
    }
    for (int64_t i = 0, nb = batch_count(a, 2); i < nb; i++) {
        load(a, i, am);
        lapack_int info = n ? getrf(a->dtype, n, am, ipiv) : 0;
        double sg, la;
        lu_logdet(a->dtype, n, am, ipiv, info, &sg, &la);
        double vals[3] = {sg * exp(la), sg, la};
        const tf_operand *outs[3] = {d, sign, logabs};
        for (int o = 0; o < 3; o++) {
            if (!outs[o])
                continue;
            if (a->dtype == TF_F64)
                ((double *)outs[o]->data)[outs[o]->offset + i] = vals[o];
            else
                ((float *)outs[o]->data)[outs[o]->offset + i] = (float)vals[o];
        }
    }
    k->host->free(k->host->ctx, am);
    k->host->free(k->host->ctx, ipiv);
    return TF_OK;
}

tf_status linalg_det_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, const tf_operand *d)
{
    return logdet_all(k, a, d, NULL, NULL);
}

tf_status linalg_slogdet_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a,
                             const tf_operand *sign, const tf_operand *logabsdet)
{
    return logdet_all(k, a, NULL, sign, logabsdet);
}

/* ---- qr (thin) and eigh ---- */

/* a [..., m, n], m >= n: q [..., m, n] with orthonormal columns, r [..., n, n] upper. */
tf_status linalg_qr_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, const tf_operand *q,
                        const tf_operand *r)
{
    lapack_int m = (lapack_int)a->shape[a->rank - 2], n = (lapack_int)a->shape[a->rank - 1];
    if (n == 0)
        return TF_OK;
    size_t es = a->dtype == TF_F64 ? 8 : 4;
    lapack_int lwork = 64 * (n ? n : 1);
    void *am = scratch(k, (size_t)m * (size_t)n * es), *rm = scratch(k, (size_t)n * (size_t)n * es);
    void *tau = scratch(k, (size_t)n * es), *work = scratch(k, (size_t)lwork * es);
    tf_status st = am && rm && tau && work ? TF_OK : oom(k);
    for (int64_t b = 0, nb = batch_count(a, 2); b < nb && !st; b++) {
        load(a, b, am);
        lapack_int info =
            a->dtype == TF_F64
                ? LAPACKE_dgeqrf_work(LAPACK_COL_MAJOR, m, n, am, m, tau, work, lwork)
                : LAPACKE_sgeqrf_work(LAPACK_COL_MAJOR, m, n, am, m, tau, work, lwork);
        memset(rm, 0, (size_t)n * (size_t)n * es);
        for (lapack_int j = 0; j < n; j++) /* R: the upper triangle of the factored block */
            for (lapack_int i = 0; i <= j; i++)
                memcpy((char *)rm + (size_t)(i + j * n) * es, (char *)am + (size_t)(i + j * m) * es,
                       es);
        if (info == 0)
            info = a->dtype == TF_F64
                       ? LAPACKE_dorgqr_work(LAPACK_COL_MAJOR, m, n, n, am, m, tau, work, lwork)
                       : LAPACKE_sorgqr_work(LAPACK_COL_MAJOR, m, n, n, am, m, tau, work, lwork);
        if (info != 0) {
            st = fail(k, TF_ERR_BACKEND, "LAPACK geqrf/orgqr failed (info %lld)", b, info);
            break;
        }
        store(q, b, am);
        store(r, b, rm);
    }
    k->host->free(k->host->ctx, am);
    k->host->free(k->host->ctx, rm);
    k->host->free(k->host->ctx, tau);
    k->host->free(k->host->ctx, work);
    return st;
}

/* Writes vector b of the dense output w [..., n]. */
static void store_vec(const tf_operand *w, int64_t b, const void *buf)
{
    int64_t n = w->shape[w->rank - 1], nb = 1;
    for (uint32_t i = 0; i + 1 < w->rank; i++)
        nb *= w->shape[i];
    for (int64_t i = 0; i < n; i++) {
        int64_t at = w->offset + b + i * nb;
        if (w->dtype == TF_F64)
            ((double *)w->data)[at] = ((const double *)buf)[i];
        else
            ((float *)w->data)[at] = ((const float *)buf)[i];
    }
}

/* a [..., n, n] symmetric (lower triangle read): w ascending [..., n], v [..., n, n]. */
tf_status linalg_eigh_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, double eps,
                          const tf_operand *w, const tf_operand *v)
{
    lapack_int n = (lapack_int)a->shape[a->rank - 1];
    if (n == 0)
        return TF_OK;
    size_t es = a->dtype == TF_F64 ? 8 : 4;
    lapack_int lwork = 3 * n + 64 * n;
    void *am = scratch(k, (size_t)n * (size_t)n * es), *wm = scratch(k, (size_t)n * es);
    void *work = scratch(k, (size_t)lwork * es);
    tf_status st = am && wm && work ? TF_OK : oom(k);
    for (int64_t b = 0, nb = batch_count(a, 2); b < nb && !st; b++) {
        load(a, b, am);
        if ((st = check_finite(k, a, am, b, 1)))
            break;
        lapack_int info =
            a->dtype == TF_F64
                ? LAPACKE_dsyev_work(LAPACK_COL_MAJOR, 'V', 'L', n, am, n, wm, work, lwork)
                : LAPACKE_ssyev_work(LAPACK_COL_MAJOR, 'V', 'L', n, am, n, wm, work, lwork);
        if (info > 0) {
            st = fail_kind(k, "no_convergence", b,
                           "%lld off-diagonal elements did not converge to zero", (long long)info);
            break;
        }
        if (info < 0) {
            st = fail(k, TF_ERR_BACKEND, "LAPACK syev refused argument %lld", b, -(long long)info);
            break;
        }
        store_vec(w, b, wm);
        store(v, b, am);
    }
    k->host->free(k->host->ctx, am);
    k->host->free(k->host->ctx, wm);
    k->host->free(k->host->ctx, work);
    return st;
}

/* ---- lstsq ---- */

/*
 * Numerical rank deficiency of a after gels: the diagonal of its R (the
 * upper triangle of the factored am, leading dimension m) against the
 * relative threshold max(m, n) * eps * max_i |R[i,i]|, eps of the dtype
 * (NumPy's matrix_rank tolerance, applied to R's diagonal). The smallest
 * |R[j,j]| bounds the smallest singular value from above, so a diagonal
 * below the threshold means a condition number above 1 / (max(m, n) eps):
 * a solution there is noise (a rank-deficient a gives entries near 1e14).
 * Returns the 0-based j of the smallest diagonal when it is below, else -1.
 */
static int64_t below_rank_threshold(const void *am, lapack_int m, lapack_int n, bool f64,
                                    double *r_min, double *bound)
{
    double lo = INFINITY, hi = 0.0;
    int64_t at = -1;
    for (lapack_int j = 0; j < n; j++) {
        size_t k = (size_t)j + (size_t)j * (size_t)m;
        double r = fabs(f64 ? ((const double *)am)[k] : (double)((const float *)am)[k]);
        if (r < lo) {
            lo = r;
            at = j;
        }
        if (r > hi)
            hi = r;
    }
    *r_min = lo;
    *bound = (double)(m > n ? m : n) * (f64 ? DBL_EPSILON : (double)FLT_EPSILON) * hi;
    return at >= 0 && lo <= *bound ? at : -1;
}

/* rank_deficient for batch element b after gels returned `info`, or TF_OK. */
static tf_status rank_check(const tf_ext_kernel_ctx *k, const void *am, lapack_int m,
                            lapack_int n, bool f64, int64_t b, lapack_int info)
{
    if (info > 0)
        return fail_kind(k, "rank_deficient", b, "R[%lld,%lld] of its QR factorisation is zero",
                         (long long)info, (long long)info);
    double r_min, bound;
    int64_t j = below_rank_threshold(am, m, n, f64, &r_min, &bound);
    if (j < 0)
        return TF_OK;
    return fail_kind(k, "rank_deficient", b,
                     "|R[%lld,%lld]| = %.3g of its QR factorisation is at most max(m, n) * eps * "
                     "max |R[i,i]| = %.3g",
                     (long long)j + 1, (long long)j + 1, r_min, bound);
}

/* a [..., m, n] of full column rank (m >= n), b [..., m, k]: x [..., n, k]
   minimising ||a x - b|| (QR-based gels); rank_deficient when R's diagonal
   says a is not of full column rank numerically (below_rank_threshold). */
tf_status linalg_lstsq_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, const tf_operand *b,
                           const tf_operand *x)
{
    lapack_int m = (lapack_int)a->shape[a->rank - 2], n = (lapack_int)a->shape[a->rank - 1];
    lapack_int nrhs = (lapack_int)b->shape[b->rank - 1], ld = m > 1 ? m : 1;
    if (n == 0 || nrhs == 0)
        return TF_OK;
    size_t es = a->dtype == TF_F64 ? 8 : 4;
    lapack_int lwork = (m + nrhs) * 64 + n;
    void *am = scratch(k, (size_t)m * (size_t)n * es),
         *bm = scratch(k, (size_t)m * (size_t)nrhs * es);
    void *xm = scratch(k, (size_t)n * (size_t)nrhs * es), *work = scratch(k, (size_t)lwork * es);
    tf_status st = am && bm && xm && work ? TF_OK : oom(k);
    for (int64_t i = 0, nb = batch_count(a, 2); i < nb && !st; i++) {
        load(a, i, am);
        load(b, i, bm);
        lapack_int info = a->dtype == TF_F64 ? LAPACKE_dgels_work(LAPACK_COL_MAJOR, 'N', m, n, nrhs,
                                                                  am, ld, bm, ld, work, lwork)
                                             : LAPACKE_sgels_work(LAPACK_COL_MAJOR, 'N', m, n, nrhs,
                                                                  am, ld, bm, ld, work, lwork);
        if ((st = rank_check(k, am, m, n, a->dtype == TF_F64, i, info)))
            break;
        for (lapack_int j = 0; j < nrhs; j++) /* the solution: the first n rows of b */
            memcpy((char *)xm + (size_t)(j * n) * es, (char *)bm + (size_t)(j * m) * es,
                   (size_t)n * es);
        store(x, i, xm);
    }
    k->host->free(k->host->ctx, am);
    k->host->free(k->host->ctx, bm);
    k->host->free(k->host->ctx, xm);
    k->host->free(k->host->ctx, work);
    return st;
}

/* ---- svd (thin) ---- */

/* gesdd's info: > 0, the bidiagonal iteration did not converge; < 0, a bad argument (a bug). */
static tf_status svd_failed(const tf_ext_kernel_ctx *k, int64_t b, lapack_int info)
{
    if (info > 0)
        return fail_kind(k, "no_convergence", b, "the SVD did not converge (LAPACK info %lld)",
                         (long long)info);
    return fail(k, TF_ERR_BACKEND, "LAPACK gesdd refused argument %lld", b, -(long long)info);
}

static double get(const void *buf, uint32_t dt, int64_t i)
{
    return dt == TF_F64 ? ((const double *)buf)[i] : ((const float *)buf)[i];
}

static void put(void *buf, uint32_t dt, int64_t i, double v)
{
    if (dt == TF_F64)
        ((double *)buf)[i] = v;
    else
        ((float *)buf)[i] = (float)v;
}

/* Scratch of one thin SVD of an m x n matrix (jobz 'S' or 'N'). */
typedef struct svd_work {
    void *u, *vt, *s, *work;
    lapack_int *iwork, lwork;
} svd_work;

static int svd_work_alloc(const tf_ext_kernel_ctx *k, svd_work *w, lapack_int m, lapack_int n,
                          size_t es)
{
    lapack_int kk = m < n ? m : n;
    w->lwork = 4 * kk * kk + 8 * (m + n) + 64 * (m + n);
    w->u = scratch(k, (size_t)m * (size_t)kk * es);
    w->vt = scratch(k, (size_t)kk * (size_t)n * es);
    w->s = scratch(k, (size_t)kk * es);
    w->work = scratch(k, (size_t)w->lwork * es);
    w->iwork = scratch(k, (size_t)(8 * kk) * sizeof *w->iwork);
    return w->u && w->vt && w->s && w->work && w->iwork;
}

static void svd_work_free(const tf_ext_kernel_ctx *k, svd_work *w)
{
    void *bufs[] = {w->u, w->vt, w->s, w->work, w->iwork};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        k->host->free(k->host->ctx, bufs[i]);
}

/* Thin SVD of dense am (destroyed): singular values in w->s, and with
   jobz 'S' the vectors in w->u, w->vt. */
static tf_status svd_run(const tf_ext_kernel_ctx *k, const tf_operand *a, void *am, char jobz,
                         svd_work *w, int64_t b)
{
    lapack_int m = (lapack_int)a->shape[a->rank - 2], n = (lapack_int)a->shape[a->rank - 1];
    lapack_int kk = m < n ? m : n;
    tf_status st = check_finite(k, a, am, b, 0);
    if (st)
        return st;
    lapack_int info = a->dtype == TF_F64
                          ? LAPACKE_dgesdd_work(LAPACK_COL_MAJOR, jobz, m, n, am, m, w->s, w->u, m,
                                                w->vt, kk, w->work, w->lwork, w->iwork)
                          : LAPACKE_sgesdd_work(LAPACK_COL_MAJOR, jobz, m, n, am, m, w->s, w->u, m,
                                                w->vt, kk, w->work, w->lwork, w->iwork);
    return info ? svd_failed(k, b, info) : TF_OK;
}

/* a [..., m, n], k = min(m, n): u [..., m, k], s [..., k] descending, v [..., n, k]. */
tf_status linalg_svd_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, double eps,
                         const tf_operand *u, const tf_operand *s, const tf_operand *v)
{
    lapack_int m = (lapack_int)a->shape[a->rank - 2], n = (lapack_int)a->shape[a->rank - 1];
    lapack_int kk = m < n ? m : n;
    if (kk == 0)
        return TF_OK;
    size_t es = a->dtype == TF_F64 ? 8 : 4;
    svd_work w = {0};
    void *am = scratch(k, (size_t)m * (size_t)n * es),
         *vm = scratch(k, (size_t)n * (size_t)kk * es);
    tf_status st = svd_work_alloc(k, &w, m, n, es) && am && vm ? TF_OK : oom(k);
    for (int64_t b = 0, nb = batch_count(a, 2); b < nb && !st; b++) {
        load(a, b, am);
        if ((st = svd_run(k, a, am, 'S', &w, b)))
            break;
        for (lapack_int i = 0; i < kk; i++) /* v = vt^T */
            for (lapack_int j = 0; j < n; j++)
                memcpy((char *)vm + (size_t)(j + i * n) * es,
                       (char *)w.vt + (size_t)(i + j * kk) * es, es);
        store(u, b, w.u);
        store_vec(s, b, w.s);
        store(v, b, vm);
    }
    svd_work_free(k, &w);
    k->host->free(k->host->ctx, am);
    k->host->free(k->host->ctx, vm);
    return st;
}

/* ---- pinv ---- */

/* Moore-Penrose inverse of a [..., m, n] -> [..., n, m] by SVD; singular
   values <= rcond * s_max count as zero. */
tf_status linalg_pinv_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, double rcond,
                          const tf_operand *p)
{
    lapack_int m = (lapack_int)a->shape[a->rank - 2], n = (lapack_int)a->shape[a->rank - 1];
    lapack_int kk = m < n ? m : n;
    if (kk == 0)
        return TF_OK;
    uint32_t dt = a->dtype;
    size_t es = dt == TF_F64 ? 8 : 4;
    svd_work w = {0};
    void *am = scratch(k, (size_t)m * (size_t)n * es), *pm = scratch(k, (size_t)n * (size_t)m * es);
    tf_status st = svd_work_alloc(k, &w, m, n, es) && am && pm ? TF_OK : oom(k);
    for (int64_t b = 0, nb = batch_count(a, 2); b < nb && !st; b++) {
        load(a, b, am);
        if ((st = svd_run(k, a, am, 'S', &w, b)))
            break;
        double smax = get(w.s, dt, 0);
        for (lapack_int i = 0; i < n; i++) /* p[i, j] = sum_l vt[l, i] u[j, l] / s_l */
            for (lapack_int j = 0; j < m; j++) {
                double acc = 0;
                for (lapack_int l = 0; l < kk; l++) {
                    double sl = get(w.s, dt, l);
                    if (sl <= rcond * smax || sl == 0)
                        continue;
                    acc +=
                        get(w.vt, dt, l + i * (int64_t)kk) * get(w.u, dt, j + l * (int64_t)m) / sl;
                }
                put(pm, dt, i + j * (int64_t)n, acc);
            }
        store(p, b, pm);
    }
    svd_work_free(k, &w);
    k->host->free(k->host->ctx, am);
    k->host->free(k->host->ctx, pm);
    return st;
}

/* ---- norm ---- */

/* Frobenius norm of dense m x n buf, with LAPACK's lassq scaling (no overflow or underflow). */
static double frobenius(const void *buf, uint32_t dt, int64_t mn)
{
    double scale = 0, ssq = 1;
    for (int64_t i = 0; i < mn; i++) {
        double x = fabs(get(buf, dt, i));
        if (x == 0)
            continue;
        if (scale < x) {
            ssq = 1 + ssq * (scale / x) * (scale / x);
            scale = x;
        } else {
            ssq += (x / scale) * (x / scale);
        }
    }
    return scale * sqrt(ssq);
}

/*
 * The column (ord +-1) or row (ord +-inf) whose absolute sum is the largest
 * (ord > 0) or smallest (ord < 0), the first one on ties; its sum in *best.
 */
static int64_t abs_sum_pick(const void *buf, uint32_t dt, int64_t m, int64_t n, double ord,
                            double *best)
{
    int by_col = fabs(ord) == 1, want_max = ord > 0;
    int64_t lines = by_col ? n : m, len = by_col ? m : n, pick = 0;
    for (int64_t l = 0; l < lines; l++) {
        double sum = 0;
        for (int64_t e = 0; e < len; e++)
            sum += fabs(get(buf, dt, by_col ? e + l * m : l + e * m));
        if (l == 0 || (want_max ? sum > *best : sum < *best)) {
            *best = sum;
            pick = l;
        }
    }
    return pick;
}

/* The norm of order `ord` (see linalg_module.c) of each matrix of a [..., m, n] -> [...]. */
tf_status linalg_norm_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, double ord,
                          const tf_operand *out)
{
    lapack_int m = (lapack_int)a->shape[a->rank - 2], n = (lapack_int)a->shape[a->rank - 1];
    lapack_int kk = m < n ? m : n;
    uint32_t dt = a->dtype;
    size_t es = dt == TF_F64 ? 8 : 4;
    int by_svd = ord == 2 || ord == -2 || ord == LINALG_ORD_NUC;
    void *buf = scratch(k, (size_t)m * (size_t)n * es);
    svd_work w = {0};
    tf_status st = buf && (!by_svd || kk == 0 || svd_work_alloc(k, &w, m, n, es)) ? TF_OK : oom(k);
    for (int64_t b = 0, nb = batch_count(a, 2); b < nb && !st; b++) {
        double r = 0; /* every norm of an empty matrix is 0 */
        load(a, b, buf);
        if (kk == 0) {
        } else if (ord == LINALG_ORD_FRO) {
            r = frobenius(buf, dt, (int64_t)m * n);
        } else if (!by_svd) {
            abs_sum_pick(buf, dt, m, n, ord, &r);
        } else if (!(st = svd_run(k, a, buf, 'N', &w, b))) {
            r = ord == 2 ? get(w.s, dt, 0) : ord == -2 ? get(w.s, dt, kk - 1) : 0;
            for (lapack_int i = 0; ord == LINALG_ORD_NUC && i < kk; i++)
                r += get(w.s, dt, i);
        }
        put(out->data, dt, out->offset + b, r);
    }
    if (by_svd && kk > 0)
        svd_work_free(k, &w);
    k->host->free(k->host->ctx, buf);
    return st;
}

/*
 * The subgradient G of the norm of order ord in {+-1, +-2, +-inf} (the
 * rules' helper): ||A + dA|| = ||A|| + <G, dA> + o(dA) where the norm is
 * differentiable. +-1 (+-inf): sign(A) on the picked column (row), zero
 * elsewhere; +-2: u v^T of the largest (smallest) singular value.
 */
tf_status linalg_norm_grad_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, double ord,
                               const tf_operand *g)
{
    lapack_int m = (lapack_int)a->shape[a->rank - 2], n = (lapack_int)a->shape[a->rank - 1];
    lapack_int kk = m < n ? m : n;
    if (kk == 0)
        return TF_OK;
    uint32_t dt = a->dtype;
    size_t es = dt == TF_F64 ? 8 : 4;
    int by_svd = fabs(ord) == 2;
    void *buf = scratch(k, (size_t)m * (size_t)n * es),
         *gm = scratch(k, (size_t)m * (size_t)n * es);
    svd_work w = {0};
    tf_status st = buf && gm && (!by_svd || svd_work_alloc(k, &w, m, n, es)) ? TF_OK : oom(k);
    for (int64_t b = 0, nb = batch_count(a, 2); b < nb && !st; b++) {
        load(a, b, buf);
        memset(gm, 0, (size_t)m * (size_t)n * es);
        if (!by_svd) {
            double best = 0;
            int64_t l = abs_sum_pick(buf, dt, m, n, ord, &best);
            int by_col = fabs(ord) == 1;
            for (int64_t e = 0; e < (by_col ? m : n); e++) {
                int64_t at = by_col ? e + l * m : l + e * (int64_t)m;
                double x = get(buf, dt, at);
                put(gm, dt, at, (x > 0) - (x < 0));
            }
        } else if (!(st = svd_run(k, a, buf, 'S', &w, b))) {
            lapack_int c = ord > 0 ? 0 : kk - 1;
            for (lapack_int j = 0; j < n; j++)
                for (lapack_int i = 0; i < m; i++)
                    put(gm, dt, i + j * (int64_t)m,
                        get(w.u, dt, i + c * (int64_t)m) * get(w.vt, dt, c + j * (int64_t)kk));
        }
        if (!st)
            store(g, b, gm);
    }
    if (by_svd)
        svd_work_free(k, &w);
    k->host->free(k->host->ctx, buf);
    k->host->free(k->host->ctx, gm);
    return st;
}
