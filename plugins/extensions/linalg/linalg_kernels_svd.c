/*
 * linalg_kernels_svd.c - the CPU kernels of tenferro.linalg built on the
 * thin SVD (gesdd): svd, pinv, norm and norm_grad. f32, f64, c64 and c128
 * (singular values and norms real: the parts' dtype).
 */
#include <math.h>
#include <string.h>

#include "linalg_kern.h"

/* gesdd's info: > 0, the bidiagonal iteration did not converge; < 0, a bad argument (a bug). */
static tf_status svd_failed(const tf_ext_kernel_ctx *k, int64_t b, lapack_int info)
{
    if (info > 0)
        return la_fail_kind(k, "no_convergence", b, "the SVD did not converge (LAPACK info %lld)",
                            (long long)info);
    return la_fail(k, TF_ERR_BACKEND, "LAPACK gesdd refused argument %lld", b, -(long long)info);
}

/* Scratch of one thin SVD of an m x n matrix (jobz 'S' or 'N'); rwork for complex. */
typedef struct svd_work {
    void *u, *vt, *s, *work, *rwork;
    lapack_int *iwork, lwork;
} svd_work;

static int svd_work_alloc(const tf_ext_kernel_ctx *k, svd_work *w, lapack_int m, lapack_int n,
                          uint32_t dt)
{
    size_t es = la_es(dt), res = la_res(dt);
    lapack_int kk = m < n ? m : n, mx = m > n ? m : n;
    w->lwork = 4 * kk * kk + 8 * (m + n) + 64 * (m + n);
    /* zgesdd's LRWORK for jobz 'S' (it covers 'N''s 7 kk) */
    size_t lrwork = (size_t)kk * (size_t)(5 * kk + 7) + (size_t)(2 * mx) * (size_t)kk +
                    (size_t)(2 * kk) * (size_t)kk + 1;
    w->u = la_scratch(k, (size_t)m * (size_t)kk * es);
    w->vt = la_scratch(k, (size_t)kk * (size_t)n * es);
    w->s = la_scratch(k, (size_t)kk * res);
    w->work = la_scratch(k, (size_t)w->lwork * es);
    w->rwork = la_scratch(k, la_cx(dt) ? lrwork * res : 1);
    w->iwork = la_scratch(k, (size_t)(8 * kk) * sizeof *w->iwork);
    return w->u && w->vt && w->s && w->work && w->rwork && w->iwork;
}

static void svd_work_free(const tf_ext_kernel_ctx *k, svd_work *w)
{
    void *bufs[] = {w->u, w->vt, w->s, w->work, w->rwork, w->iwork};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        k->host->free(k->host->ctx, bufs[i]);
}

/* Thin SVD of dense am (destroyed): singular values in w->s, and with
   jobz 'S' the vectors in w->u, w->vt (= V^H). */
static tf_status svd_run(const tf_ext_kernel_ctx *k, const tf_operand *a, void *am, char jobz,
                         svd_work *w, int64_t b)
{
    lapack_int m = (lapack_int)a->shape[a->rank - 2], n = (lapack_int)a->shape[a->rank - 1];
    lapack_int kk = m < n ? m : n;
    tf_status st = la_check_finite(k, a, am, b, 0);
    if (st)
        return st;
    uint32_t dt = a->dtype;
    lapack_int info = LA_PICK(dt,
                              LAPACKE_sgesdd_work(LAPACK_COL_MAJOR, jobz, m, n, am, m, w->s, w->u,
                                                  m, w->vt, kk, w->work, w->lwork, w->iwork),
                              LAPACKE_dgesdd_work(LAPACK_COL_MAJOR, jobz, m, n, am, m, w->s, w->u,
                                                  m, w->vt, kk, w->work, w->lwork, w->iwork),
                              LAPACKE_cgesdd_work(LAPACK_COL_MAJOR, jobz, m, n, am, m, w->s, w->u,
                                                  m, w->vt, kk, w->work, w->lwork, w->rwork,
                                                  w->iwork),
                              LAPACKE_zgesdd_work(LAPACK_COL_MAJOR, jobz, m, n, am, m, w->s, w->u,
                                                  m, w->vt, kk, w->work, w->lwork, w->rwork,
                                                  w->iwork));
    return info ? svd_failed(k, b, info) : TF_OK;
}

/*
 * The thin SVD of every matrix of a [..., m, n], k = min(m, n), handed to
 * emit with a dense scratch `out` of out_elems elements of a's dtype;
 * emit writes the batch element's results.
 */
typedef void (*svd_emit)(const tf_operand *a, const svd_work *w, int64_t b, void *out,
                         const void *user);

static tf_status svd_each(const tf_ext_kernel_ctx *k, const tf_operand *a, size_t out_elems,
                          svd_emit emit, const void *user)
{
    lapack_int m = (lapack_int)a->shape[a->rank - 2], n = (lapack_int)a->shape[a->rank - 1];
    if ((m < n ? m : n) == 0)
        return TF_OK;
    size_t es = la_es(a->dtype);
    svd_work w = {0};
    void *am = la_scratch(k, (size_t)m * (size_t)n * es), *om = la_scratch(k, out_elems * es);
    tf_status st = svd_work_alloc(k, &w, m, n, a->dtype) && am && om ? TF_OK : la_oom(k);
    for (int64_t b = 0, nb = la_batch_count(a, 2); b < nb && !st; b++) {
        la_load(a, b, am);
        if (!(st = svd_run(k, a, am, 'S', &w, b)))
            emit(a, &w, b, om, user);
    }
    svd_work_free(k, &w);
    k->host->free(k->host->ctx, am);
    k->host->free(k->host->ctx, om);
    return st;
}

/* svd's outputs u, s, v (user) of one matrix; out: v's scratch. */
static void emit_svd(const tf_operand *a, const svd_work *w, int64_t b, void *vm,
                     const void *user)
{
    const tf_operand *const *usv = user;
    uint32_t dt = a->dtype;
    int64_t m = a->shape[a->rank - 2], n = a->shape[a->rank - 1], kk = m < n ? m : n;
    for (int64_t i = 0; i < kk; i++) /* v = vt^H */
        for (int64_t j = 0; j < n; j++)
            la_putz(vm, dt, j + i * n, conj(la_getz(w->vt, dt, i + j * kk)));
    la_store(usv[0], b, w->u);
    la_store_vec(usv[1], b, w->s);
    la_store(usv[2], b, vm);
}

/* a [..., m, n], k = min(m, n): u [..., m, k], s [..., k] descending, v [..., n, k]
   (a = u diag(s) v^H). */
tf_status linalg_svd_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, double eps,
                         const tf_operand *u, const tf_operand *s, const tf_operand *v)
{
    int64_t m = a->shape[a->rank - 2], n = a->shape[a->rank - 1];
    const tf_operand *usv[3] = {u, s, v};
    return svd_each(k, a, (size_t)n * (size_t)(m < n ? m : n), emit_svd, usv);
}

/* ---- pinv ---- */

typedef struct pinv_args {
    const tf_operand *p;
    double rcond;
} pinv_args;

/* p[i, j] = sum_l conj(vt[l, i] u[j, l]) / s_l over the kept singular values. */
static void emit_pinv(const tf_operand *a, const svd_work *w, int64_t b, void *pm,
                      const void *user)
{
    const pinv_args *pa = user;
    uint32_t dt = a->dtype, rdt = tf_dtype_real_of((tf_dtype)dt);
    int64_t m = a->shape[a->rank - 2], n = a->shape[a->rank - 1], kk = m < n ? m : n;
    double smax = la_get(w->s, rdt, 0);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < m; j++) {
            double complex acc = 0;
            for (int64_t l = 0; l < kk; l++) {
                double sl = la_get(w->s, rdt, l);
                if (sl <= pa->rcond * smax || sl == 0)
                    continue;
                acc += conj(la_getz(w->vt, dt, l + i * kk) * la_getz(w->u, dt, j + l * m)) / sl;
            }
            la_putz(pm, dt, i + j * n, acc);
        }
    la_store(pa->p, b, pm);
}

/* Moore-Penrose inverse of a [..., m, n] -> [..., n, m] by SVD (V S^-1 U^H);
   singular values <= rcond * s_max count as zero. */
tf_status linalg_pinv_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, double rcond,
                          const tf_operand *p)
{
    pinv_args pa = {p, rcond};
    return svd_each(k, a, (size_t)a->shape[a->rank - 2] * (size_t)a->shape[a->rank - 1], emit_pinv,
                    &pa);
}

/* ---- norm ---- */

/* Frobenius norm of dense m x n buf, with LAPACK's lassq scaling (no
   overflow or underflow); a complex entry counts |z|. */
static double frobenius(const void *buf, uint32_t dt, int64_t mn)
{
    double scale = 0, ssq = 1;
    for (int64_t i = 0; i < mn; i++) {
        double x = cabs(la_getz(buf, dt, i));
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
            sum += cabs(la_getz(buf, dt, by_col ? e + l * m : l + e * m));
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
    uint32_t dt = a->dtype, rdt = out->dtype;
    int by_svd = ord == 2 || ord == -2 || ord == LINALG_ORD_NUC;
    void *buf = la_scratch(k, (size_t)m * (size_t)n * la_es(dt));
    svd_work w = {0};
    tf_status st =
        buf && (!by_svd || kk == 0 || svd_work_alloc(k, &w, m, n, dt)) ? TF_OK : la_oom(k);
    for (int64_t b = 0, nb = la_batch_count(a, 2); b < nb && !st; b++) {
        double r = 0; /* every norm of an empty matrix is 0 */
        la_load(a, b, buf);
        if (kk == 0) {
        } else if (ord == LINALG_ORD_FRO) {
            r = frobenius(buf, dt, (int64_t)m * n);
        } else if (!by_svd) {
            abs_sum_pick(buf, dt, m, n, ord, &r);
        } else if (!(st = svd_run(k, a, buf, 'N', &w, b))) {
            r = ord == 2 ? la_get(w.s, rdt, 0) : ord == -2 ? la_get(w.s, rdt, kk - 1) : 0;
            for (lapack_int i = 0; ord == LINALG_ORD_NUC && i < kk; i++)
                r += la_get(w.s, rdt, i);
        }
        la_putz(out->data, rdt, out->offset + b, r);
    }
    if (by_svd && kk > 0)
        svd_work_free(k, &w);
    k->host->free(k->host->ctx, buf);
    return st;
}

/*
 * The subgradient G of the norm of order ord in {+-1, +-2, +-inf} (the
 * rules' helper): ||A + dA|| = ||A|| + Re <G, dA> + o(dA) where the norm is
 * differentiable (<G, dA> = sum(conj(G) dA)). +-1 (+-inf): sign(A) (A / |A|
 * for complex A, 0 at 0) on the picked column (row), zero elsewhere; +-2:
 * u v^H of the largest (smallest) singular value.
 */
tf_status linalg_norm_grad_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, double ord,
                               const tf_operand *g)
{
    lapack_int m = (lapack_int)a->shape[a->rank - 2], n = (lapack_int)a->shape[a->rank - 1];
    lapack_int kk = m < n ? m : n;
    if (kk == 0)
        return TF_OK;
    uint32_t dt = a->dtype;
    size_t es = la_es(dt);
    int by_svd = fabs(ord) == 2;
    void *buf = la_scratch(k, (size_t)m * (size_t)n * es),
         *gm = la_scratch(k, (size_t)m * (size_t)n * es);
    svd_work w = {0};
    tf_status st = buf && gm && (!by_svd || svd_work_alloc(k, &w, m, n, dt)) ? TF_OK : la_oom(k);
    for (int64_t b = 0, nb = la_batch_count(a, 2); b < nb && !st; b++) {
        la_load(a, b, buf);
        memset(gm, 0, (size_t)m * (size_t)n * es);
        if (!by_svd) {
            double best = 0;
            int64_t l = abs_sum_pick(buf, dt, m, n, ord, &best);
            int by_col = fabs(ord) == 1;
            for (int64_t e = 0; e < (by_col ? m : n); e++) {
                int64_t at = by_col ? e + l * m : l + e * (int64_t)m;
                double complex x = la_getz(buf, dt, at);
                double ax = cabs(x);
                la_putz(gm, dt, at, ax > 0 ? x / ax : 0);
            }
        } else if (!(st = svd_run(k, a, buf, 'S', &w, b))) {
            lapack_int c = ord > 0 ? 0 : kk - 1;
            for (lapack_int j = 0; j < n; j++)
                for (lapack_int i = 0; i < m; i++)
                    la_putz(gm, dt, i + j * (int64_t)m,
                            la_getz(w.u, dt, i + c * (int64_t)m) *
                                la_getz(w.vt, dt, c + j * (int64_t)kk));
        }
        if (!st)
            la_store(g, b, gm);
    }
    if (by_svd)
        svd_work_free(k, &w);
    k->host->free(k->host->ctx, buf);
    k->host->free(k->host->ctx, gm);
    return st;
}
