/*
 * tf_eager_test.h - helpers shared by the cmocka tests of the eager runtime
 * and of the extension modules: the CPU engine opened once per test group,
 * a runtime with one session, host and eager tensors made from column-major
 * data, and assertions on their shapes and values.
 *
 * Every helper fails the current cmocka test (it never returns an error) when
 * a call it makes does not succeed. Values are compared as doubles.
 */
#ifndef TF_EAGER_TEST_H
#define TF_EAGER_TEST_H

#include <tenferro/ops.h>

#include "tf_test.h"

/* The CPU engine (one thread) opened by tft_cpu_setup; NULL before. */
extern tf_engine *g_cpu;

/* cmocka group setup: opens the CPU engine into g_cpu (-1 when it cannot). */
int tft_cpu_setup(void **state);

/* cmocka group teardown: destroys g_cpu. */
int tft_cpu_teardown(void **state);

/* A fresh runtime and a session of it on g_cpu. */
typedef struct tft_env {
    tf_runtime *rt;
    tf_session *s;
} tft_env;

/* Creates a runtime and begins a session on g_cpu; end it with tft_env_end. */
tft_env tft_env_begin(void);

/* Ends e's session and releases its runtime. */
void tft_env_end(tft_env *e);

/* A host tensor of dtype and shape from n column-major elements (copied); the
   caller releases it. */
tf_tensor *tft_host(tf_dtype dtype, size_t rank, const int64_t *shape, const void *data, size_t n);

/* An eager tensor of rt from host data (copied): a variable when `var`, else
   an untracked constant. The caller releases it. */
tf_eager *tft_eager(tf_runtime *rt, tf_dtype dtype, int var, size_t rank, const int64_t *shape,
                    const void *data, size_t n);

/* tft_eager for f64 data. */
tf_eager *tft_f64(tf_runtime *rt, int var, size_t rank, const int64_t *shape, const double *data,
                  size_t n);

/* An untracked constant of rt of dtype (tft_eager with var = 0). */
tf_eager *tft_constant(tf_runtime *rt, tf_dtype dtype, size_t rank, const int64_t *shape,
                       const void *data, size_t n);

/* The gradient of the scalar y with respect to x on g_cpu (functional form);
   the caller releases it. */
tf_eager *tft_grad(tf_runtime *rt, tf_eager *y, tf_eager *x);

/* Asserts x's value has the given rank and shape. */
void tft_expect_shape(const tf_eager *x, size_t rank, const int64_t *shape);

/* Asserts x's value has n (at most 64) elements whose f64 values are within
   rel of `want`, relative to |want|; exactly for 0 and infinities, NaN for
   NaN. */
void tft_expect_near(const tf_eager *x, const double *want, size_t n, double rel);

/* Asserts x's value has the given shape and n (at most 128) elements equal
   to `want` exactly; an i32 value is read as i32, any other as f64. */
void tft_expect_shaped(const tf_eager *x, size_t rank, const int64_t *shape, const double *want,
                       size_t n);

/* Asserts the tensor t (not NULL) has n (at most 16) f64 values equal to
   `want` exactly. */
void tft_expect_values(const tf_tensor *t, const double *want, size_t n);

/* Reads t (c128 or f64, at most cap doubles) into out, the real and the
   imaginary part of each complex element; returns the number of doubles. */
size_t tft_read_parts(const tf_tensor *t, double *out, size_t cap);

/* Asserts a call's status st is `want`, that the thread's last error names
   argument `arg` (unless NULL), and that the call left *out == sentinel. */
void tft_expect_error(tf_status st, tf_status want, const char *arg, tf_eager *out,
                      tf_eager *sentinel);

/* What a failed call must leave in its out-parameter; never dereferenced. */
extern int tft_sentinel_storage;
#define TFT_SENTINEL ((tf_eager *)(void *)&tft_sentinel_storage)

/* Asserts a failed call: its status, that it left `out` (set to
   TFT_SENTINEL first) untouched, and the argument the last error names
   (unless arg is NULL). */
#define TFT_EXPECT_FAIL(call, status, arg, out)                            \
    do {                                                                   \
        (out) = TFT_SENTINEL;                                              \
        TF_ASSERT_STATUS(call, status);                                    \
        assert_ptr_equal((out), TFT_SENTINEL);                             \
        if ((arg) != NULL)                                                 \
            assert_string_equal(tf_error_argument(), (const char *)(arg)); \
    } while (0)

#endif /* TF_EAGER_TEST_H */
