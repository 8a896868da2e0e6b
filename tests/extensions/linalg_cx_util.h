/*
 * linalg_cx_util.h - complex matrices for the tests of tenferro.linalg on
 * c64/c128 (test_linalg_complex.c, test_linalg_complex_ad.c): random and
 * Hermitian positive definite batches, eager tensors from them, and host
 * products to check identities with. Matrices are column-major batches
 * [B, m, n] with the batch index fastest (CX(p, b, i, j, B, m)), as tensors
 * of shape [B, m, n] lay them out. Static functions: included once.
 */
#ifndef TF_LINALG_CX_UTIL_H
#define TF_LINALG_CX_UTIL_H

#include <complex.h>
#include <math.h>

#include "linalg_test_util.h"

typedef double complex cx;

#define CX(p, b, i, j, B, m) (p)[(b) + (i) * (B) + (j) * (B) * (m)]

static inline double cx_urand(unsigned *st)
{
    unsigned x = *st ? *st : 0x9e3779b9u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *st = x;
    return (x >> 8) / 16777216.0 - 0.5;
}

/* n entries with both parts uniform in [-0.5, 0.5). */
static inline void cx_random(cx *p, size_t n, unsigned *st)
{
    for (size_t k = 0; k < n; k++) {
        double re = cx_urand(st);
        p[k] = re + I * cx_urand(st);
    }
}

/* A batch [B, n, n] of random matrices plus `shift` on the diagonal (well conditioned). */
static inline void cx_shifted(cx *p, int64_t B, int64_t n, double shift, unsigned *st)
{
    cx_random(p, (size_t)(B * n * n), st);
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < n; i++)
            CX(p, b, i, i, B, n) += shift;
}

/* c = op(a) op(b) for a batch: op 'N' (as is) or 'H' (conjugate transpose);
   op(a) is m x k, op(b) k x n; a, b stored with their own row counts. */
static inline void cx_prod(int64_t B, int64_t m, int64_t k, int64_t n, const cx *a, char ta,
                           const cx *b, char tb, cx *c)
{
    for (int64_t q = 0; q < B; q++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                cx acc = 0;
                for (int64_t l = 0; l < k; l++) {
                    cx x = ta == 'H' ? conj(CX(a, q, l, i, B, k)) : CX(a, q, i, l, B, m);
                    cx y = tb == 'H' ? conj(CX(b, q, j, l, B, n)) : CX(b, q, l, j, B, k);
                    acc += x * y;
                }
                CX(c, q, i, j, B, m) = acc;
            }
}

/* A Hermitian positive definite batch [B, n, n]: X X^H + n I for a random X. */
static inline void cx_hpd(cx *p, int64_t B, int64_t n, unsigned *st)
{
    cx x[256];
    cx_random(x, (size_t)(B * n * n), st);
    cx_prod(B, n, n, n, x, 'N', x, 'H', p);
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < n; i++)
            CX(p, b, i, i, B, n) = creal(CX(p, b, i, i, B, n)) + (double)n;
}

/* max |a - b| over n entries */
static inline double cx_maxdiff(const cx *a, const cx *b, size_t n)
{
    double m = 0;
    for (size_t k = 0; k < n; k++)
        m = fmax(m, cabs(a[k] - b[k]));
    return m;
}

/* An eager constant of e's runtime of dtype dt (c128, or c64 by a cast) with
   shape [B, m, n] (rank 2 when B is 0). */
static inline tf_eager *cx_eager(tft_env *e, tf_dtype dt, int64_t B, int64_t m, int64_t n,
                                 const cx *p)
{
    int64_t sh3[3] = {B, m, n};
    size_t count = (size_t)((B ? B : 1) * m * n);
    tf_eager *x128 = B ? tft_constant(e->rt, TF_C128, 3, sh3, p, count)
                       : tft_constant(e->rt, TF_C128, 2, sh3 + 1, p, count);
    if (dt == TF_C128)
        return x128;
    tf_eager *x;
    TF_ASSERT_OK(tf_session_cast(e->s, x128, dt, &x));
    tf_eager_release(x128);
    return x;
}

/* x's values as c128 (n elements). */
static inline void cx_read(const tf_eager *x, cx *out, size_t n)
{
    assert_int_equal(tf_tensor_numel(tf_eager_value(x)), n);
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(x), TF_C128, out, n));
}

/* x's real values as f64 (n elements); asserts x is real. */
static inline void cx_read_real(const tf_eager *x, double *out, size_t n)
{
    assert_false(tf_dtype_is_complex(tf_tensor_dtype(tf_eager_value(x))));
    assert_int_equal(tf_tensor_numel(tf_eager_value(x)), n);
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(x), TF_F64, out, n));
}

/* Calls tenferro.linalg.<op> with args, n_out outputs. */
static inline tf_status cx_call(tf_session *s, const char *op, const tf_call_arg *args, size_t n,
                                tf_eager **out, size_t n_out)
{
    char name[64];
    snprintf(name, sizeof name, "tenferro.linalg.%s", op);
    return tf_session_call(s, name, args, n, out, n_out);
}

#endif /* TF_LINALG_CX_UTIL_H */
