/*
 * tf_ref.h - reference helpers for the primitive tests of engines.
 *
 * A fixed-seed PRNG, random shapes and values, host tensors of any dtype,
 * strided views of every kind the tensor API can make (transposed, stepped
 * slices, reversed, broadcast, engine-resident), a reference strided element
 * reader and a NaN-aware, tolerance-aware comparison. Everything here follows
 * the public headers only; nothing looks at an engine's code, so the tests
 * built on it are an independent check of every engine.
 *
 * Values travel as tf_scalar: floats in `f`, integers and bool in `i`,
 * complex values as tfr_c(re, im) makes them (re in `f`, the bits of im in
 * `i`; tfr_im reads it back).
 * Helpers that can fail abort the current cmocka test with a message.
 */
#ifndef TF_REF_H
#define TF_REF_H

#include "tf_test.h"

/* ---- PRNG (splitmix64; deterministic for a given seed) ---- */

typedef struct tfr_rng {
    uint64_t state;
} tfr_rng;

void tfr_rng_seed(tfr_rng *rng, uint64_t seed);
uint64_t tfr_rng_u64(tfr_rng *rng);
/* Uniform integer in [lo, hi] (inclusive). */
int64_t tfr_rng_int(tfr_rng *rng, int64_t lo, int64_t hi);
/* Uniform real in [lo, hi). */
double tfr_rng_real(tfr_rng *rng, double lo, double hi);
/* True with probability percent/100. */
int tfr_rng_chance(tfr_rng *rng, int percent);
/* A random permutation of 0..n-1. */
void tfr_rng_perm(tfr_rng *rng, size_t n, int *perm);

/* ---- shapes and column-major indices ---- */

size_t tfr_numel(size_t rank, const int64_t *shape);
/* Advances a column-major multi-index; returns 0 after the last one. */
int tfr_index_next(size_t rank, const int64_t *shape, int64_t *idx);
/* Column-major linear position of idx in a dense tensor of `shape`. */
int64_t tfr_index_linear(size_t rank, const int64_t *shape, const int64_t *idx);
/* Random rank in [0, max_rank], biased towards 1..3. */
size_t tfr_random_rank(tfr_rng *rng, size_t max_rank);
/* Random extents in [1, max_extent], each 0 with probability zero_percent. */
void tfr_random_shape(tfr_rng *rng, size_t rank, int64_t max_extent, int zero_percent,
                      int64_t *shape);

/* ---- values ---- */

tf_scalar tfr_f(double f);
tf_scalar tfr_i(int64_t i);
/* A complex value (c64, c128) and its imaginary part. */
tf_scalar tfr_c(double re, double im);
double tfr_im(tf_scalar v);
/* The value as the dtype holds it: f32 rounded, i32 wrapped, bool 0/1. */
tf_scalar tfr_norm(tf_dtype dtype, tf_scalar v);
/* Element `elem` of typed memory. */
tf_scalar tfr_load(tf_dtype dtype, const void *base, int64_t elem);
void tfr_store(tf_dtype dtype, void *base, int64_t elem, tf_scalar v);
/* The value as a double (for printing and float references). */
double tfr_as_double(tf_dtype dtype, tf_scalar v);
int64_t tfr_int_min(tf_dtype dtype);
int64_t tfr_int_max(tf_dtype dtype);

typedef enum tfr_dist {
    TFR_UNIFORM,         /* floats in [lo, hi); integers in [lo, hi]; bool 0/1 */
    TFR_INTEGRAL,        /* integer values in [lo, hi] for every dtype */
    TFR_WIDE,            /* integers over their whole range, extremes included;
                            floats of magnitudes 1e-3..1e3 of both signs */
    TFR_SPECIAL,         /* floats in [lo, hi) mixed with NaN, +-inf, +-0; integers
                            in [lo, hi] mixed with 0, +-1, the extremes */
    TFR_INTEGRAL_SPECIAL /* TFR_INTEGRAL mixed with the values of TFR_SPECIAL */
} tfr_dist;

typedef struct tfr_gen {
    tfr_dist dist;
    double lo;
    double hi;
} tfr_gen;

tf_scalar tfr_random_value(tfr_rng *rng, tf_dtype dtype, const tfr_gen *gen);

/* ---- host tensors and reading ---- */

/* malloc'd array of n values (never NULL, even for n == 0). */
tf_scalar *tfr_vals_alloc(size_t n);
/* A malloc'd typed array holding vals. */
void *tfr_pack(tf_dtype dtype, size_t n, const tf_scalar *vals);
/* A new host tensor (one reference) with these column-major values. */
tf_tensor *tfr_host(tf_dtype dtype, size_t rank, const int64_t *shape, const tf_scalar *vals);
/* All elements of a host-accessible tensor, column-major (malloc'd). */
tf_scalar *tfr_read(const tf_tensor *tensor);
/*
 * The reference strided reader: the elements of `view` (any strides, offset)
 * read from `storage`, the typed contents of its storage from element 0.
 * Column-major order, malloc'd.
 */
tf_scalar *tfr_read_strided(const tf_tensor *view, const void *storage);

/* ---- inputs of every layout ---- */

typedef enum tfr_layout {
    TFR_DENSE,         /* host tensor from tf_tensor_from_host */
    TFR_TRANSPOSED,    /* tf_tensor_transpose of a host tensor */
    TFR_SLICED,        /* tf_tensor_slice with steps (offset != 0) */
    TFR_REVERSED,      /* tf_tensor_reverse: negative strides */
    TFR_BROADCAST,     /* tf_tensor_broadcast_in_dim from a lower rank: stride 0 */
    TFR_STRIDE0,       /* tf_tensor_view with explicit stride 0 axes */
    TFR_UPLOADED,      /* tf_engine_upload: a dense engine tensor */
    TFR_UPLOADED_VIEW, /* a transposed, reversed view of an engine tensor */
    TFR_MIXED,         /* slice, reverse and transpose of a host tensor */
    TFR_LAYOUT_COUNT_
} tfr_layout;

const char *tfr_layout_name(tfr_layout layout);
tfr_layout tfr_random_layout(tfr_rng *rng);

/* An input tensor with its reference values. */
typedef struct tfr_input {
    tf_tensor *t;    /* the tensor to pass (one reference) */
    tf_scalar *vals; /* its logical values, column-major over its shape */
    size_t n;        /* its element count */
    tfr_layout layout;
} tfr_input;

/*
 * Makes an input of `shape` and `layout` with random values from `gen`.
 * Checks that the view has the asked shape and that tf_tensor_copy_to_host
 * agrees with the reference reader.
 */
void tfr_input_make(tfr_input *in, tfr_rng *rng, tf_engine *engine, tf_dtype dtype, size_t rank,
                    const int64_t *shape, tfr_layout layout, const tfr_gen *gen);
/* As tfr_input_make, with the logical values given (n = numel(shape)). */
void tfr_input_from_vals(tfr_input *in, tfr_rng *rng, tf_engine *engine, tf_dtype dtype,
                         size_t rank, const int64_t *shape, tfr_layout layout,
                         const tf_scalar *vals);
void tfr_input_free(tfr_input *in);

/* A sentinel of the dtype that no test expects by accident. */
tf_scalar tfr_sentinel(tf_dtype dtype);
/* A dense engine tensor filled with tfr_sentinel (uploaded). */
tf_tensor *tfr_output(tf_engine *engine, tf_dtype dtype, size_t rank, const int64_t *shape);
/* A dense engine tensor holding vals (uploaded). */
tf_tensor *tfr_engine_tensor(tf_engine *engine, tf_dtype dtype, size_t rank, const int64_t *shape,
                             const tf_scalar *vals);

/* Kinds of strided output views (for primitives that accept them). */
typedef enum tfr_out_layout {
    TFR_OUT_DIAGONAL,   /* the last axis is the diagonal of a square block */
    TFR_OUT_REVERSED,   /* every axis reversed */
    TFR_OUT_STEPPED,    /* every other element, from element 1 */
    TFR_OUT_TRANSPOSED, /* a random permutation */
    TFR_OUT_REPEATED,   /* stride 0 on some axes: addresses repeat (FILL only) */
    TFR_OUT_LAYOUT_COUNT_
} tfr_out_layout;

const char *tfr_out_layout_name(tfr_out_layout layout);

/*
 * A strided output view of `shape` over a dense engine tensor *root filled
 * with tfr_sentinel. Both returned with one reference.
 */
void tfr_strided_output(tfr_rng *rng, tf_engine *engine, tf_dtype dtype, size_t rank,
                        const int64_t *shape, tfr_out_layout layout, tf_tensor **root,
                        tf_tensor **view);

/*
 * Checks *root after `vals` (column-major over view's shape) were written
 * through `view`: the addressed elements hold vals (repeated addresses must
 * all be written the same value), every other element still the sentinel.
 */
void tfr_check_strided_write_(const char *file, int line, const char *what, const tf_tensor *root,
                              const tf_tensor *view, const tf_scalar *vals);
#define tfr_check_strided_write(what, root, view, vals) \
    tfr_check_strided_write_(__FILE__, __LINE__, what, root, view, vals)

/* ---- comparison ---- */

typedef struct tfr_tol {
    double rtol;
    double atol;
} tfr_tol;

/* f32: 1e-5 relative; f64: 1e-12 relative; exact for integers and bool. */
tfr_tol tfr_tol_default(tf_dtype dtype);

/*
 * Fails the test at the first element where got and want differ: both NaN
 * is equal, infinities must match exactly, floats are close when
 * |got - want| <= rtol * |want| + atol + extra[i] (extra may be NULL),
 * integers and bool must be equal.
 */
void tfr_check_(const char *file, int line, const char *what, tf_dtype dtype, size_t n,
                const tf_scalar *got, const tf_scalar *want, const double *extra, tfr_tol tol);
/* (what, dtype, n, got, want, extra, tol); variadic so compound literals pass through */
#define tfr_check(...) tfr_check_(__FILE__, __LINE__, __VA_ARGS__)

/* Non-zero when got and want agree under tol (no failure). */
int tfr_close(tf_dtype dtype, tf_scalar got, tf_scalar want, double extra, tfr_tol tol);

/* ---- engines ---- */

/* Every UNARY and BINARY op defined for the float dtypes (LOGICAL_NOT, AND, OR and XOR
   are not), in enum order. */
extern const uint32_t tfr_float_unary_ops[18];
extern const uint32_t tfr_float_binary_ops[8];

/*
 * A TF_PRIM_FUSED program given as its steps: the reference result of running them as
 * separate UNARY/BINARY calls on `engine` (the last register, a new tensor of dtype and
 * shape; the caller releases it), and a description "2 inputs: r2=exp(r0) r3=add(r2,r1)"
 * for messages (returns buf).
 */
tf_tensor *tfr_fused_run_steps(tf_engine *engine, uint32_t n_in, uint32_t n_steps,
                               const tf_fused_step *steps, tf_tensor *const *in, tf_dtype dtype,
                               size_t rank, const int64_t *shape);
const char *tfr_fused_describe(uint32_t n_in, uint32_t n_steps, const tf_fused_step *steps,
                               char *buf, size_t size);
/* Float values (f32 or f64, held as doubles) with equal bits, or both NaN: what a FUSED
   call promises against its steps run separately (any NaN equals any NaN, as the kernels'
   vectorised and scalar loops may propagate different payloads). */
int tfr_same_bits(tf_dtype dtype, double got, double want);
/* Fails the test at the first of n elements not tfr_same_bits. */
void tfr_check_same_bits(const char *what, tf_dtype dtype, size_t n, const tf_scalar *got,
                         const tf_scalar *want);
/* n_steps random steps over n_in inputs, every float op (mostly deep chains). */
void tfr_fused_random_steps(tfr_rng *rng, uint32_t n_in, uint32_t n_steps, tf_fused_step *steps);
/*
 * The same for a program of several outputs (ABI 1.3): out[i] gets a new tensor (the
 * caller releases it) holding register n_in + outputs[i], for i < n_out; with n_out 1,
 * outputs is not read and out[0] is the last register.
 */
void tfr_fused_run_outputs(tf_engine *engine, uint32_t n_in, uint32_t n_steps,
                           const tf_fused_step *steps, uint32_t n_out, const uint32_t *outputs,
                           tf_tensor *const *in, tf_dtype dtype, size_t rank, const int64_t *shape,
                           tf_tensor **out);

/*
 * Loads plugin `name` and creates an engine with `threads` and, when key is not NULL,
 * the one extra option key = value. Returns the status; *out is set only on success.
 */
tf_status tfr_engine_create(const char *name, int threads, const char *key, const char *value,
                            tf_engine **out);

/* tf_engine_open(name, threads), failing the test on error. */
tf_engine *tfr_engine_open(const char *name, int threads);

/*
 * Group setup: *engines[i] = tf_engine_open(name, threads[i]) for i < n.
 * Returns 0, or -1 after printing why (and destroying those already open).
 */
int tfr_engines_open(const char *name, const int *threads, tf_engine **const *engines, size_t n);
/* Group teardown: destroys *engines[i] for i < n. Returns 0. */
int tfr_engines_destroy(tf_engine **const *engines, size_t n);

/* Runs tf_engine_execute and fails the test with the error detail unless OK. */
void tfr_exec_ok_(const char *file, int line, const char *what, tf_engine *engine, tf_prim prim,
                  const void *params, size_t n_in, tf_tensor *const *in, size_t n_out,
                  tf_tensor *const *out);
/* (what, engine, prim, params, n_in, in, n_out, out) */
#define tfr_exec_ok(...) tfr_exec_ok_(__FILE__, __LINE__, __VA_ARGS__)
/*
 * Executes a call tf_engine_execute must refuse with `expected` (at most
 * TF_FUSED_MAX_OUTPUTS + 1 outputs): the status, the error slot's status and
 * message, and every output exactly as it was.
 */
void tfr_expect_reject_(const char *file, int line, tf_engine *engine, const char *what,
                        tf_prim prim, const void *params, size_t n_in, tf_tensor *const *in,
                        size_t n_out, tf_tensor *const *out, tf_status expected);
#define tfr_expect_reject(engine, ...) tfr_expect_reject_(__FILE__, __LINE__, engine, __VA_ARGS__)

/* Formats a shape as "[2,3,0]" into buf (static-size caller buffer). */
const char *tfr_shape_str(size_t rank, const int64_t *shape, char *buf, size_t size);

#endif /* TF_REF_H */
