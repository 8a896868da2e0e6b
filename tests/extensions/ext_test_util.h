/*
 * ext_test_util.h - small helpers shared by the extension tests: fixture
 * paths, making f64 eager tensors and reading them back (the programs that
 * call ext_tensor link tf_eager_test).
 */
#ifndef TF_EXT_TEST_UTIL_H
#define TF_EXT_TEST_UTIL_H

#include <tenferro/extension.h>
#include <tenferro/ops.h>

#include "tf_eager_test.h"

#define FX_PATH(name) TF_EXT_FIXTURE_DIR "/tenferro-ext-fx_" name ".so"

/* A constant (or, with var, a variable) f64 tensor of rt from column-major
   data (tft_f64 with the element count taken from the shape). */
static inline tf_eager *ext_tensor(tf_runtime *rt, size_t rank, const int64_t *shape,
                                   const double *data, int var)
{
    size_t n = 1;
    for (size_t i = 0; i < rank; i++)
        n *= (size_t)shape[i];
    return tft_f64(rt, var, rank, shape, data, n);
}

/* Copies x's f64 values (column-major) to out (n elements). */
static inline void ext_read(const tf_eager *x, double *out, size_t n)
{
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(x), TF_F64, out, n));
}

#endif /* TF_EXT_TEST_UTIL_H */
