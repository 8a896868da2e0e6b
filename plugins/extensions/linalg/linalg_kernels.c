/*
 * linalg_kernels.c - the CPU kernels of tenferro.linalg on LAPACKE.
 *
 * Each kernel walks the batch (every axis but the last two), copies one
 * matrix at a time from its strided operand into a dense column-major
 * scratch buffer (host->alloc), calls LAPACK there, and writes the result to
 * the dense output. f32 uses the s* routines, f64 the d* routines.
 */
#include <math.h>
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
            st = fail(k, TF_ERR_VALIDATION,
                      "the matrix is not positive definite (leading minor %lld)", b, info);
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
            st = fail(k, TF_ERR_VALIDATION, "the matrix is singular (U[%lld,%lld] is zero)", i,
                      info);
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
            st = fail(k, TF_ERR_VALIDATION,
                      "the matrix is singular (diagonal element %lld is zero)", i, info);
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
            st = fail(k, TF_ERR_VALIDATION, "the matrix is singular (U[%lld,%lld] is zero)", i,
                      info);
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
        lapack_int info =
            a->dtype == TF_F64
                ? LAPACKE_dsyev_work(LAPACK_COL_MAJOR, 'V', 'L', n, am, n, wm, work, lwork)
                : LAPACKE_ssyev_work(LAPACK_COL_MAJOR, 'V', 'L', n, am, n, wm, work, lwork);
        if (info != 0) {
            st = fail(k, TF_ERR_BACKEND, "the eigenvalue iteration did not converge (info %lld)", b,
                      info);
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

/* a [..., m, n] of full column rank (m >= n), b [..., m, k]: x [..., n, k]
   minimising ||a x - b|| (QR-based gels). */
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
        if (info > 0) {
            st = fail(k, TF_ERR_VALIDATION,
                      "the matrix does not have full column rank (R[%lld] is zero)", i, info);
            break;
        }
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

/* a [..., m, n], k = min(m, n): u [..., m, k], s [..., k] descending, v [..., n, k]. */
tf_status linalg_svd_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, double eps,
                         const tf_operand *u, const tf_operand *s, const tf_operand *v)
{
    lapack_int m = (lapack_int)a->shape[a->rank - 2], n = (lapack_int)a->shape[a->rank - 1];
    lapack_int kk = m < n ? m : n;
    if (kk == 0)
        return TF_OK;
    size_t es = a->dtype == TF_F64 ? 8 : 4;
    lapack_int lwork = 4 * kk * kk + 8 * (m + n) + 64 * (m + n);
    void *am = scratch(k, (size_t)m * (size_t)n * es),
         *um = scratch(k, (size_t)m * (size_t)kk * es);
    void *vt = scratch(k, (size_t)kk * (size_t)n * es),
         *vm = scratch(k, (size_t)n * (size_t)kk * es);
    void *sm = scratch(k, (size_t)kk * es), *work = scratch(k, (size_t)lwork * es);
    lapack_int *iwork = scratch(k, (size_t)(8 * kk) * sizeof *iwork);
    tf_status st = am && um && vt && vm && sm && work && iwork ? TF_OK : oom(k);
    for (int64_t b = 0, nb = batch_count(a, 2); b < nb && !st; b++) {
        load(a, b, am);
        lapack_int info = a->dtype == TF_F64
                              ? LAPACKE_dgesdd_work(LAPACK_COL_MAJOR, 'S', m, n, am, m, sm, um, m,
                                                    vt, kk, work, lwork, iwork)
                              : LAPACKE_sgesdd_work(LAPACK_COL_MAJOR, 'S', m, n, am, m, sm, um, m,
                                                    vt, kk, work, lwork, iwork);
        if (info != 0) {
            st = fail(k, TF_ERR_BACKEND, "the SVD did not converge (info %lld)", b, info);
            break;
        }
        for (lapack_int i = 0; i < kk; i++) /* v = vt^T */
            for (lapack_int j = 0; j < n; j++)
                memcpy((char *)vm + (size_t)(j + i * n) * es,
                       (char *)vt + (size_t)(i + j * kk) * es, es);
        store(u, b, um);
        store_vec(s, b, sm);
        store(v, b, vm);
    }
    void *bufs[] = {am, um, vt, vm, sm, work, iwork};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        k->host->free(k->host->ctx, bufs[i]);
    return st;
}

/* ---- pinv and norm ---- */

/* Moore-Penrose inverse of a [..., m, n] -> [..., n, m] by SVD; singular
   values <= rcond * s_max count as zero. */
tf_status linalg_pinv_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, double rcond,
                          const tf_operand *p)
{
    lapack_int m = (lapack_int)a->shape[a->rank - 2], n = (lapack_int)a->shape[a->rank - 1];
    lapack_int kk = m < n ? m : n;
    if (kk == 0)
        return TF_OK;
    int f64 = a->dtype == TF_F64;
    size_t es = f64 ? 8 : 4;
    lapack_int lwork = 4 * kk * kk + 8 * (m + n) + 64 * (m + n);
    void *am = scratch(k, (size_t)m * (size_t)n * es),
         *um = scratch(k, (size_t)m * (size_t)kk * es);
    void *vt = scratch(k, (size_t)kk * (size_t)n * es),
         *pm = scratch(k, (size_t)n * (size_t)m * es);
    void *sm = scratch(k, (size_t)kk * es), *work = scratch(k, (size_t)lwork * es);
    lapack_int *iwork = scratch(k, (size_t)(8 * kk) * sizeof *iwork);
    tf_status st = am && um && vt && pm && sm && work && iwork ? TF_OK : oom(k);
    for (int64_t b = 0, nb = batch_count(a, 2); b < nb && !st; b++) {
        load(a, b, am);
        lapack_int info = f64 ? LAPACKE_dgesdd_work(LAPACK_COL_MAJOR, 'S', m, n, am, m, sm, um, m,
                                                    vt, kk, work, lwork, iwork)
                              : LAPACKE_sgesdd_work(LAPACK_COL_MAJOR, 'S', m, n, am, m, sm, um, m,
                                                    vt, kk, work, lwork, iwork);
        if (info != 0) {
            st = fail(k, TF_ERR_BACKEND, "the SVD did not converge (info %lld)", b, info);
            break;
        }
        double smax = f64 ? ((double *)sm)[0] : ((float *)sm)[0];
        for (lapack_int i = 0; i < n; i++) /* p[i, j] = sum_l vt[l, i] u[j, l] / s_l */
            for (lapack_int j = 0; j < m; j++) {
                double acc = 0;
                for (lapack_int l = 0; l < kk; l++) {
                    double sl = f64 ? ((double *)sm)[l] : ((float *)sm)[l];
                    if (sl <= rcond * smax || sl == 0)
                        continue;
                    double vli = f64 ? ((double *)vt)[l + i * kk] : ((float *)vt)[l + i * kk];
                    double ujl = f64 ? ((double *)um)[j + l * m] : ((float *)um)[j + l * m];
                    acc += vli * ujl / sl;
                }
                if (f64)
                    ((double *)pm)[i + j * n] = acc;
                else
                    ((float *)pm)[i + j * n] = (float)acc;
            }
        store(p, b, pm);
    }
    void *bufs[] = {am, um, vt, pm, sm, work, iwork};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        k->host->free(k->host->ctx, bufs[i]);
    return st;
}

/* Frobenius norm of each matrix of a [..., m, n] -> [...] (scaled sum of squares). */
tf_status linalg_norm_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, const tf_operand *out)
{
    int64_t m = a->shape[a->rank - 2], n = a->shape[a->rank - 1];
    void *buf = scratch(k, (size_t)(m * n) * (a->dtype == TF_F64 ? 8 : 4));
    if (!buf)
        return oom(k);
    for (int64_t b = 0, nb = batch_count(a, 2); b < nb; b++) {
        load(a, b, buf);
        double scale = 0, ssq = 1; /* LAPACK's lassq scheme: no overflow or underflow */
        for (int64_t i = 0; i < m * n; i++) {
            double x = fabs(a->dtype == TF_F64 ? ((double *)buf)[i] : ((float *)buf)[i]);
            if (x == 0)
                continue;
            if (scale < x) {
                ssq = 1 + ssq * (scale / x) * (scale / x);
                scale = x;
            } else {
                ssq += (x / scale) * (x / scale);
            }
        }
        double r = scale * sqrt(ssq);
        if (a->dtype == TF_F64)
            ((double *)out->data)[out->offset + b] = r;
        else
            ((float *)out->data)[out->offset + b] = (float)r;
    }
    k->host->free(k->host->ctx, buf);
    return TF_OK;
}
