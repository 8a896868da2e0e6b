/*
 * train_test.h - helpers shared by the tests of libtenferro-train: the CPU
 * engine, parameters in the engine's memory, reading values back, and the
 * assertion that a train-library call failed the way it should.
 */
#ifndef TF_TRAIN_TEST_H
#define TF_TRAIN_TEST_H

#include <tenferro/optim.h>

#include "tf_eager_test.h"

/* A variable of rt in g_cpu's memory holding n f64 values of `shape` (copied). */
tf_eager *trt_param(tf_runtime *rt, size_t rank, const int64_t *shape, const double *v, size_t n);

/* The same for n values of any dtype (v holds that dtype's elements). */
tf_eager *trt_param_of(tf_runtime *rt, tf_dtype dtype, size_t rank, const int64_t *shape,
                       const void *v, size_t n);

/* Copies x's n f64 values (any placement on g_cpu or the host) into out. */
void trt_read(const tf_tensor *x, double *out, size_t n);

/* The gradient in x's slot as n f64 values (asserts there is one). */
void trt_grad(tf_eager *x, double *out, size_t n);

/* Asserts the train library's last failure: status, and argument unless NULL. */
void trt_expect_fail(tf_status st, tf_status want, const char *arg);

/* Asserts |a - b| <= tol max(1, |b|) elementwise, naming `what` and the index. */
void trt_expect_close(const char *what, const double *a, const double *b, size_t n, double tol);

/* Asserts the n doubles have identical bits. */
void trt_expect_bits(const char *what, const double *a, const double *b, size_t n);

#endif /* TF_TRAIN_TEST_H */
