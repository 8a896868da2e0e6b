/*
 * linalg_kernels.c - the CPU kernels of tenferro.linalg on LAPACKE: the
 * shared batch walk and errors (linalg_kern.h), then cholesky, solve,
 * triangular_solve, inv, det, slogdet, qr, eigh and lstsq. svd, pinv and
 * norm are linalg_kernels_svd.c's. f32, f64, c64 and c128.
 */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "linalg_kern.h"

/* ---- matrices of a batch ---- */

int64_t la_batch_count(const tf_operand *o, uint32_t mat_axes)
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

/* Copies matrix b of o ([..., m, n]) into dense column-major buf (to_buf), or back. */
static void copy_matrix(const tf_operand *o, int64_t b, void *buf, int to_buf)
{
    uint32_t r = o->rank;
    int64_t m = o->shape[r - 2], n = o->shape[r - 1], si = o->strides[r - 2],
            sj = o->strides[r - 1];
    int64_t base = batch_offset(o, 2, b);
    size_t es = la_es(o->dtype);
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++) {
            char *at = (char *)o->data + (size_t)(base + i * si + j * sj) * es;
            char *bt = (char *)buf + (size_t)(i + j * m) * es;
            if (to_buf)
                memcpy(bt, at, es);
            else
                memcpy(at, bt, es);
        }
}

void la_load(const tf_operand *o, int64_t b, void *buf)
{
    copy_matrix(o, b, buf, 1);
}

/* Copies dense buf into matrix b of the output o (dense column-major over
   the whole tensor, so a matrix of a batch is strided). */
void la_store(const tf_operand *o, int64_t b, const void *buf)
{
    copy_matrix(o, b, (void *)buf, 0);
}

/* Writes vector b of the dense output w [..., n] (buf of w's dtype). */
void la_store_vec(const tf_operand *w, int64_t b, const void *buf)
{
    int64_t n = w->shape[w->rank - 1], nb = la_batch_count(w, 1);
    size_t es = la_es(w->dtype);
    for (int64_t i = 0; i < n; i++)
        memcpy((char *)w->data + (size_t)(w->offset + b + i * nb) * es,
               (const char *)buf + (size_t)i * es, es);
}

tf_status la_fail(const tf_ext_kernel_ctx *k, tf_status st, const char *fmt, int64_t b,
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
tf_status la_fail_kind(const tf_ext_kernel_ctx *k, const char *kind, int64_t b, const char *fmt,
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
 * infinite entries: syev/heev end with info > 0 (no convergence) on NaN,
 * gesdd refuses NaN as an illegal argument (info -5) and returns NaN
 * values with info 0 on an infinity. Checking first makes every such input
 * one failure, "no_convergence", naming the entry (a complex entry is
 * finite when both parts are). `lower`: only the lower triangle is read
 * (eigh).
 */
tf_status la_check_finite(const tf_ext_kernel_ctx *k, const tf_operand *a, const void *buf,
                          int64_t b, int lower)
{
    int64_t m = a->shape[a->rank - 2], n = a->shape[a->rank - 1];
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = lower ? j : 0; i < m; i++) {
            double complex x = la_getz(buf, a->dtype, i + j * m);
            if (!isfinite(creal(x)) || !isfinite(cimag(x)))
                return la_fail_kind(
                    k, "no_convergence", b,
                    "entry (%lld, %lld) is not finite; LAPACK cannot converge on it", (long long)i,
                    (long long)j);
        }
    return TF_OK;
}

void *la_scratch(const tf_ext_kernel_ctx *k, size_t bytes)
{
    return k->host->alloc(k->host->ctx, bytes ? bytes : 1, 0);
}

tf_status la_oom(const tf_ext_kernel_ctx *k)
{
    k->host->report_error(k->host->ctx, TF_ERR_OUT_OF_MEMORY, "linalg: out of scratch memory");
    return TF_ERR_OUT_OF_MEMORY;
}

static void release(const tf_ext_kernel_ctx *k, void *const *bufs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        k->host->free(k->host->ctx, bufs[i]);
}
#define RELEASE_(k, ...) \
    release(k, (void *const[]){__VA_ARGS__}, sizeof((void *[]){__VA_ARGS__}) / sizeof(void *))

/* ---- LU ---- */

static lapack_int getrf(uint32_t dt, lapack_int n, void *a, lapack_int *ipiv)
{
    return LA_PICK(dt, LAPACKE_sgetrf_work(LAPACK_COL_MAJOR, n, n, a, n, ipiv),
                   LAPACKE_dgetrf_work(LAPACK_COL_MAJOR, n, n, a, n, ipiv),
                   LAPACKE_cgetrf_work(LAPACK_COL_MAJOR, n, n, a, n, ipiv),
                   LAPACKE_zgetrf_work(LAPACK_COL_MAJOR, n, n, a, n, ipiv));
}

/* ---- kernels ---- */

tf_status linalg_cholesky_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, const tf_operand *l)
{
    lapack_int n = (lapack_int)a->shape[a->rank - 1];
    if (n == 0)
        return TF_OK; /* empty matrices: nothing to compute or write */
    uint32_t dt = a->dtype;
    size_t es = la_es(dt);
    void *buf = la_scratch(k, (size_t)n * (size_t)n * es);
    if (!buf)
        return la_oom(k);
    tf_status st = TF_OK;
    for (int64_t b = 0, nb = la_batch_count(a, 2); b < nb && !st; b++) {
        la_load(a, b, buf);
        lapack_int info = LA_PICK(dt, LAPACKE_spotrf_work(LAPACK_COL_MAJOR, 'L', n, buf, n),
                                  LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', n, buf, n),
                                  LAPACKE_cpotrf_work(LAPACK_COL_MAJOR, 'L', n, buf, n),
                                  LAPACKE_zpotrf_work(LAPACK_COL_MAJOR, 'L', n, buf, n));
        if (info > 0) {
            st = la_fail_kind(k, "not_positive_definite", b,
                              "the leading minor of order %lld is not positive definite",
                              (long long)info);
            break;
        }
        for (lapack_int j = 1; j < n; j++) /* potrf leaves the upper triangle: zero it */
            for (lapack_int i = 0; i < j; i++)
                memset((char *)buf + (size_t)(i + j * n) * es, 0, es);
        la_store(l, b, buf);
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
    uint32_t dt = a->dtype;
    size_t es = la_es(dt);
    void *am = la_scratch(k, (size_t)n * (size_t)n * es),
         *bm = la_scratch(k, (size_t)n * (size_t)nrhs * es);
    lapack_int *ipiv = la_scratch(k, (size_t)n * sizeof *ipiv);
    tf_status st = am && bm && ipiv ? TF_OK : la_oom(k);
    for (int64_t i = 0, nb = la_batch_count(a, 2); i < nb && !st; i++) {
        la_load(a, i, am);
        la_load(b, i, bm);
        lapack_int info =
            LA_PICK(dt, LAPACKE_sgesv_work(LAPACK_COL_MAJOR, n, nrhs, am, n, ipiv, bm, n),
                    LAPACKE_dgesv_work(LAPACK_COL_MAJOR, n, nrhs, am, n, ipiv, bm, n),
                    LAPACKE_cgesv_work(LAPACK_COL_MAJOR, n, nrhs, am, n, ipiv, bm, n),
                    LAPACKE_zgesv_work(LAPACK_COL_MAJOR, n, nrhs, am, n, ipiv, bm, n));
        if (info > 0)
            st = la_fail_kind(k, "singular", i,
                              "U[%lld,%lld] of its LU factorisation is exactly zero",
                              (long long)info, (long long)info);
        else
            la_store(x, i, bm);
    }
    RELEASE_(k, am, bm, ipiv);
    return st;
}

tf_status linalg_triangular_solve_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a,
                                      const tf_operand *b, int64_t lower, const tf_operand *x)
{
    lapack_int n = (lapack_int)a->shape[a->rank - 1], nrhs = (lapack_int)b->shape[b->rank - 1];
    if (n == 0)
        return TF_OK; /* empty matrices: nothing to compute or write */
    uint32_t dt = a->dtype;
    size_t es = la_es(dt);
    char uplo = lower ? 'L' : 'U';
    void *am = la_scratch(k, (size_t)n * (size_t)n * es),
         *bm = la_scratch(k, (size_t)n * (size_t)nrhs * es);
    tf_status st = am && bm ? TF_OK : la_oom(k);
    for (int64_t i = 0, nb = la_batch_count(a, 2); i < nb && !st; i++) {
        la_load(a, i, am);
        la_load(b, i, bm);
        lapack_int info = LA_PICK(
            dt, LAPACKE_strtrs_work(LAPACK_COL_MAJOR, uplo, 'N', 'N', n, nrhs, am, n, bm, n),
            LAPACKE_dtrtrs_work(LAPACK_COL_MAJOR, uplo, 'N', 'N', n, nrhs, am, n, bm, n),
            LAPACKE_ctrtrs_work(LAPACK_COL_MAJOR, uplo, 'N', 'N', n, nrhs, am, n, bm, n),
            LAPACKE_ztrtrs_work(LAPACK_COL_MAJOR, uplo, 'N', 'N', n, nrhs, am, n, bm, n));
        if (info > 0)
            st = la_fail_kind(k, "singular", i, "diagonal element %lld is exactly zero",
                              (long long)info);
        else
            la_store(x, i, bm);
    }
    RELEASE_(k, am, bm);
    return st;
}

tf_status linalg_inv_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, const tf_operand *y)
{
    lapack_int n = (lapack_int)a->shape[a->rank - 1];
    if (n == 0)
        return TF_OK; /* empty matrices: nothing to compute or write */
    uint32_t dt = a->dtype;
    size_t es = la_es(dt);
    void *am = la_scratch(k, (size_t)n * (size_t)n * es),
         *work = la_scratch(k, (size_t)n * 64 * es);
    lapack_int *ipiv = la_scratch(k, (size_t)n * sizeof *ipiv), lw = n * 64;
    tf_status st = am && work && ipiv ? TF_OK : la_oom(k);
    for (int64_t i = 0, nb = la_batch_count(a, 2); i < nb && !st; i++) {
        la_load(a, i, am);
        lapack_int info = getrf(dt, n, am, ipiv);
        if (info == 0)
            info = LA_PICK(dt, LAPACKE_sgetri_work(LAPACK_COL_MAJOR, n, am, n, ipiv, work, lw),
                           LAPACKE_dgetri_work(LAPACK_COL_MAJOR, n, am, n, ipiv, work, lw),
                           LAPACKE_cgetri_work(LAPACK_COL_MAJOR, n, am, n, ipiv, work, lw),
                           LAPACKE_zgetri_work(LAPACK_COL_MAJOR, n, am, n, ipiv, work, lw));
        if (info > 0)
            st = la_fail_kind(k, "singular", i,
                              "U[%lld,%lld] of its LU factorisation is exactly zero",
                              (long long)info, (long long)info);
        else
            la_store(y, i, am);
    }
    RELEASE_(k, am, work, ipiv);
    return st;
}

/*
 * sign and log|det| of one LU-factored matrix: the sign is +-1 for a real
 * matrix and the unit complex number det / |det| for a complex one; sign 0
 * and log|det| -inf when singular.
 */
static void lu_logdet(uint32_t dt, lapack_int n, const void *lu, const lapack_int *ipiv,
                      lapack_int info, double complex *sign, double *logabs)
{
    double complex sg = 1.0;
    double la = 0.0;
    for (lapack_int i = 0; i < n; i++) {
        double complex u = la_getz(lu, dt, i + i * n);
        double au = cabs(u);
        if (ipiv[i] != i + 1)
            sg = -sg;
        if (au > 0)
            sg *= u / au;
        la += log(au);
    }
    if (la_cx(dt) && info == 0) /* renormalise the rounding of the product of n phases */
        sg /= cabs(sg);
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
    void *am = la_scratch(k, (size_t)n * (size_t)n * la_es(a->dtype));
    lapack_int *ipiv = la_scratch(k, (size_t)(n ? n : 1) * sizeof *ipiv);
    if (!am || !ipiv) {
        RELEASE_(k, am, ipiv);
        return la_oom(k);
    }
    for (int64_t i = 0, nb = la_batch_count(a, 2); i < nb; i++) {
        la_load(a, i, am);
        lapack_int info = n ? getrf(a->dtype, n, am, ipiv) : 0;
        double complex sg;
        double la;
        lu_logdet(a->dtype, n, am, ipiv, info, &sg, &la);
        double complex vals[3] = {sg * exp(la), sg, la};
        const tf_operand *outs[3] = {d, sign, logabs};
        for (int o = 0; o < 3; o++)
            if (outs[o])
                la_putz(outs[o]->data, outs[o]->dtype, outs[o]->offset + i, vals[o]);
    }
    RELEASE_(k, am, ipiv);
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

/* a [..., m, n], m >= n: q [..., m, n] with orthonormal columns, r [..., n, n]
   upper (geqrf: R's diagonal is real, also for complex a). */
tf_status linalg_qr_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, const tf_operand *q,
                        const tf_operand *r)
{
    lapack_int m = (lapack_int)a->shape[a->rank - 2], n = (lapack_int)a->shape[a->rank - 1];
    if (n == 0)
        return TF_OK;
    uint32_t dt = a->dtype;
    size_t es = la_es(dt);
    lapack_int lw = 64 * n;
    void *am = la_scratch(k, (size_t)m * (size_t)n * es),
         *rm = la_scratch(k, (size_t)n * (size_t)n * es);
    void *tau = la_scratch(k, (size_t)n * es), *work = la_scratch(k, (size_t)lw * es);
    tf_status st = am && rm && tau && work ? TF_OK : la_oom(k);
    for (int64_t b = 0, nb = la_batch_count(a, 2); b < nb && !st; b++) {
        la_load(a, b, am);
        lapack_int info =
            LA_PICK(dt, LAPACKE_sgeqrf_work(LAPACK_COL_MAJOR, m, n, am, m, tau, work, lw),
                    LAPACKE_dgeqrf_work(LAPACK_COL_MAJOR, m, n, am, m, tau, work, lw),
                    LAPACKE_cgeqrf_work(LAPACK_COL_MAJOR, m, n, am, m, tau, work, lw),
                    LAPACKE_zgeqrf_work(LAPACK_COL_MAJOR, m, n, am, m, tau, work, lw));
        memset(rm, 0, (size_t)n * (size_t)n * es);
        for (lapack_int j = 0; j < n; j++) /* R: the upper triangle of the factored block */
            for (lapack_int i = 0; i <= j; i++)
                memcpy((char *)rm + (size_t)(i + j * n) * es, (char *)am + (size_t)(i + j * m) * es,
                       es);
        if (info == 0)
            info = LA_PICK(dt, LAPACKE_sorgqr_work(LAPACK_COL_MAJOR, m, n, n, am, m, tau, work, lw),
                           LAPACKE_dorgqr_work(LAPACK_COL_MAJOR, m, n, n, am, m, tau, work, lw),
                           LAPACKE_cungqr_work(LAPACK_COL_MAJOR, m, n, n, am, m, tau, work, lw),
                           LAPACKE_zungqr_work(LAPACK_COL_MAJOR, m, n, n, am, m, tau, work, lw));
        if (info != 0) {
            st = la_fail(k, TF_ERR_BACKEND, "LAPACK geqrf/orgqr failed (info %lld)", b, info);
            break;
        }
        la_store(q, b, am);
        la_store(r, b, rm);
    }
    RELEASE_(k, am, rm, tau, work);
    return st;
}

/* a [..., n, n] symmetric or Hermitian (lower triangle read): w ascending
   [..., n] (real), v [..., n, n] (syev for real a, heev for complex a). */
tf_status linalg_eigh_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, double eps,
                          const tf_operand *w, const tf_operand *v)
{
    lapack_int n = (lapack_int)a->shape[a->rank - 1];
    if (n == 0)
        return TF_OK;
    uint32_t dt = a->dtype;
    size_t es = la_es(dt), res = la_res(dt);
    lapack_int lw = 3 * n + 64 * n;
    void *am = la_scratch(k, (size_t)n * (size_t)n * es), *wm = la_scratch(k, (size_t)n * res);
    void *work = la_scratch(k, (size_t)lw * es), *rwork = la_scratch(k, (size_t)(3 * n) * res);
    tf_status st = am && wm && work && rwork ? TF_OK : la_oom(k);
    for (int64_t b = 0, nb = la_batch_count(a, 2); b < nb && !st; b++) {
        la_load(a, b, am);
        if ((st = la_check_finite(k, a, am, b, 1)))
            break;
        lapack_int info = LA_PICK(
            dt, LAPACKE_ssyev_work(LAPACK_COL_MAJOR, 'V', 'L', n, am, n, wm, work, lw),
            LAPACKE_dsyev_work(LAPACK_COL_MAJOR, 'V', 'L', n, am, n, wm, work, lw),
            LAPACKE_cheev_work(LAPACK_COL_MAJOR, 'V', 'L', n, am, n, wm, work, lw, rwork),
            LAPACKE_zheev_work(LAPACK_COL_MAJOR, 'V', 'L', n, am, n, wm, work, lw, rwork));
        if (info > 0) {
            st = la_fail_kind(k, "no_convergence", b,
                              "%lld off-diagonal elements did not converge to zero",
                              (long long)info);
            break;
        }
        if (info < 0) {
            st = la_fail(k, TF_ERR_BACKEND, "LAPACK syev/heev refused argument %lld", b,
                         -(long long)info);
            break;
        }
        la_store_vec(w, b, wm);
        la_store(v, b, am);
    }
    RELEASE_(k, am, wm, work, rwork);
    return st;
}

/* ---- lstsq ---- */

/*
 * Numerical rank deficiency of a after gels: the diagonal of its R (the
 * upper triangle of the factored am, leading dimension m) against the
 * relative threshold max(m, n) * eps * max_i |R[i,i]|, eps of the dtype's
 * parts (NumPy's matrix_rank tolerance, applied to R's diagonal). The
 * smallest |R[j,j]| bounds the smallest singular value from above, so a
 * diagonal below the threshold means a condition number above
 * 1 / (max(m, n) eps): a solution there is noise (a rank-deficient a gives
 * entries near 1e14). Returns the 0-based j of the smallest diagonal when it
 * is below, else -1.
 */
static int64_t below_rank_threshold(const void *am, lapack_int m, lapack_int n, uint32_t dt,
                                    double *r_min, double *bound)
{
    double lo = INFINITY, hi = 0.0;
    int64_t at = -1;
    for (lapack_int j = 0; j < n; j++) {
        double r = cabs(la_getz(am, dt, (int64_t)j + (int64_t)j * m));
        if (r < lo) {
            lo = r;
            at = j;
        }
        if (r > hi)
            hi = r;
    }
    bool f64 = tf_dtype_real_of((tf_dtype)dt) == TF_F64;
    *r_min = lo;
    *bound = (double)(m > n ? m : n) * (f64 ? DBL_EPSILON : (double)FLT_EPSILON) * hi;
    return at >= 0 && lo <= *bound ? at : -1;
}

/* rank_deficient for batch element b after gels returned `info`, or TF_OK. */
static tf_status rank_check(const tf_ext_kernel_ctx *k, const void *am, lapack_int m,
                            lapack_int n, uint32_t dt, int64_t b, lapack_int info)
{
    if (info > 0)
        return la_fail_kind(k, "rank_deficient", b, "R[%lld,%lld] of its QR factorisation is zero",
                            (long long)info, (long long)info);
    double r_min, bound;
    int64_t j = below_rank_threshold(am, m, n, dt, &r_min, &bound);
    if (j < 0)
        return TF_OK;
    return la_fail_kind(k, "rank_deficient", b,
                        "|R[%lld,%lld]| = %.3g of its QR factorisation is at most max(m, n) * eps "
                        "* max |R[i,i]| = %.3g",
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
    uint32_t dt = a->dtype;
    size_t es = la_es(dt);
    lapack_int lw = (m + nrhs) * 64 + n;
    void *am = la_scratch(k, (size_t)m * (size_t)n * es),
         *bm = la_scratch(k, (size_t)m * (size_t)nrhs * es);
    void *xm = la_scratch(k, (size_t)n * (size_t)nrhs * es), *work = la_scratch(k, (size_t)lw * es);
    tf_status st = am && bm && xm && work ? TF_OK : la_oom(k);
    for (int64_t i = 0, nb = la_batch_count(a, 2); i < nb && !st; i++) {
        la_load(a, i, am);
        la_load(b, i, bm);
        lapack_int info = LA_PICK(
            dt, LAPACKE_sgels_work(LAPACK_COL_MAJOR, 'N', m, n, nrhs, am, ld, bm, ld, work, lw),
            LAPACKE_dgels_work(LAPACK_COL_MAJOR, 'N', m, n, nrhs, am, ld, bm, ld, work, lw),
            LAPACKE_cgels_work(LAPACK_COL_MAJOR, 'N', m, n, nrhs, am, ld, bm, ld, work, lw),
            LAPACKE_zgels_work(LAPACK_COL_MAJOR, 'N', m, n, nrhs, am, ld, bm, ld, work, lw));
        if ((st = rank_check(k, am, m, n, dt, i, info)))
            break;
        for (lapack_int j = 0; j < nrhs; j++) /* the solution: the first n rows of b */
            memcpy((char *)xm + (size_t)(j * n) * es, (char *)bm + (size_t)(j * m) * es,
                   (size_t)n * es);
        la_store(x, i, xm);
    }
    RELEASE_(k, am, bm, xm, work);
    return st;
}
