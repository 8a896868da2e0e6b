/*
 * linalg_kern.h - what the CPU kernel files of tenferro.linalg share
 * (linalg_kernels.c: the batch walk, scratch, errors, LU, Cholesky,
 * triangular solves, det, QR, eigh, lstsq; linalg_kernels_svd.c: svd, pinv,
 * norm).
 *
 * Each kernel walks the batch (every axis but the last two), copies one
 * matrix at a time from its strided operand into a dense column-major
 * scratch buffer (host->alloc), calls LAPACK there, and writes the result to
 * the dense output. f32, f64, c64 and c128 use LAPACK's s*, d*, c* and z*
 * routines; LA_PICK chooses one call by dtype (only the chosen one runs).
 * Complex buffers hold C99 complex values, LAPACK's lapack_complex_*.
 */
#ifndef TF_LINALG_KERN_H
#define TF_LINALG_KERN_H

#include <complex.h>

#include <lapacke.h>

#include "linalg_internal.h"

#define LA_PICK(dt, s_, d_, c_, z_) \
    ((dt) == TF_F64 ? (d_) : (dt) == TF_F32 ? (s_) : (dt) == TF_C128 ? (z_) : (c_))

static inline int la_cx(uint32_t dt)
{
    return tf_dtype_is_complex((tf_dtype)dt);
}

/* Bytes of one element of dt, and of one element of its real parts. */
static inline size_t la_es(uint32_t dt)
{
    return tf_dtype_size((tf_dtype)dt);
}

static inline size_t la_res(uint32_t dt)
{
    return tf_dtype_size(tf_dtype_real_of((tf_dtype)dt));
}

/* Element i of a dense buffer of dtype dt, as a complex double, and back. */
static inline double complex la_getz(const void *buf, uint32_t dt, int64_t i)
{
    switch (dt) {
    case TF_F64: return ((const double *)buf)[i];
    case TF_F32: return ((const float *)buf)[i];
    case TF_C128: return ((const double complex *)buf)[i];
    default: return ((const float complex *)buf)[i];
    }
}

static inline void la_putz(void *buf, uint32_t dt, int64_t i, double complex v)
{
    switch (dt) {
    case TF_F64: ((double *)buf)[i] = creal(v); break;
    case TF_F32: ((float *)buf)[i] = (float)creal(v); break;
    case TF_C128: ((double complex *)buf)[i] = v; break;
    default: ((float complex *)buf)[i] = (float complex)v; break;
    }
}

/* A real element (f32 or f64 buffers: singular values, eigenvalues). */
static inline double la_get(const void *buf, uint32_t dt, int64_t i)
{
    return creal(la_getz(buf, dt, i));
}

int64_t la_batch_count(const tf_operand *o, uint32_t mat_axes);
void la_load(const tf_operand *o, int64_t b, void *buf);
void la_store(const tf_operand *o, int64_t b, const void *buf);
void la_store_vec(const tf_operand *w, int64_t b, const void *buf);
tf_status la_fail(const tf_ext_kernel_ctx *k, tf_status st, const char *fmt, int64_t b,
                  long long info);
tf_status la_fail_kind(const tf_ext_kernel_ctx *k, const char *kind, int64_t b, const char *fmt,
                       ...) __attribute__((format(printf, 4, 5)));
tf_status la_check_finite(const tf_ext_kernel_ctx *k, const tf_operand *a, const void *buf,
                          int64_t b, int lower);
void *la_scratch(const tf_ext_kernel_ctx *k, size_t bytes);
tf_status la_oom(const tf_ext_kernel_ctx *k);

#endif /* TF_LINALG_KERN_H */
