/*
 * ext_test_util.h - small helpers shared by the extension tests: fixture
 * paths, making f64 eager tensors and reading them back.
 */
#ifndef TF_EXT_TEST_UTIL_H
#define TF_EXT_TEST_UTIL_H

#include <tenferro/extension.h>
#include <tenferro/ops.h>

#include "tf_test.h"

#define FX_PATH(name) TF_EXT_FIXTURE_DIR "/tenferro-ext-fx_" name ".so"

/* A constant (or, with var, a variable) f64 tensor of rt from column-major data. */
static inline tf_eager *ext_tensor(tf_runtime *rt, size_t rank, const int64_t *shape,
                                   const double *data, int var)
{
    size_t n = 1;
    for (size_t i = 0; i < rank; i++)
        n *= (size_t)shape[i];
    tf_tensor *t;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, rank, shape, data, n, &t));
    tf_eager *x;
    if (var)
        TF_ASSERT_OK(tf_runtime_variable_from(rt, t, &x));
    else
        TF_ASSERT_OK(tf_runtime_constant_from(rt, t, &x));
    tf_tensor_release(t);
    return x;
}

/* Copies x's f64 values (column-major) to out (n elements). */
static inline void ext_read(const tf_eager *x, double *out, size_t n)
{
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(x), TF_F64, out, n));
}

#endif /* TF_EXT_TEST_UTIL_H */
