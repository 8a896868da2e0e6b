/*
 * tenferro/ops.h - the ops of the eager runtime, issued through a session.
 *
 * Every op takes the session first and returns its result through the last
 * argument (one new reference, written only on success). Inputs are
 * borrowed. Each op validates its arguments before anything is computed or
 * recorded: on error nothing is recorded and no grad slot changes.
 *
 * Elementwise ops broadcast NumPy style, aligning shapes at their last axes
 * as written (natural order): [2,3] + [3] adds the vector to every row;
 * size-1 axes stretch; rank 0 broadcasts against anything.
 *
 * Every differentiable op has a reverse (VJP) and a forward (JVP) rule,
 * written with these same ops, so derivatives are differentiable again.
 * compare, sign and the integer/bool ops have zero derivatives.
 *
 * Axes given as `int` may be negative (counted from the end). An axis list
 * given as (axes, n_axes) with axes == NULL means "all axes"; a non-NULL
 * list with n_axes == 0 means "no axes" (the reduction is the identity).
 *
 * Errors common to all: TF_ERR_VALIDATION (NULL argument; argument named),
 * TF_ERR_CONTEXT_MISMATCH (inputs from different runtimes),
 * TF_ERR_DTYPE_MISMATCH, TF_ERR_SHAPE_MISMATCH, TF_ERR_AXIS_OUT_OF_BOUNDS,
 * TF_ERR_PLACEMENT (a value the session's engine cannot read), and the
 * engine's errors (TF_ERR_UNSUPPORTED, TF_ERR_BACKEND, ...).
 */
#ifndef TENFERRO_OPS_H
#define TENFERRO_OPS_H

#include "runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- unary elementwise (float dtypes; neg/abs/sign also integers) ---- */

#define TF_UNARY_OPS(X)                                                          \
    X(neg) X(abs) X(sign) X(exp) X(log) X(expm1) X(log1p) X(sin) X(cos) X(tanh) \
    X(sqrt) X(rsqrt) X(erf) X(sigmoid)

#define TF_DECLARE_UNARY_(name) \
    tf_status tf_session_##name(tf_session *s, tf_eager *x, tf_eager **out);
TF_UNARY_OPS(TF_DECLARE_UNARY_)
#undef TF_DECLARE_UNARY_

/* ---- binary elementwise (same dtype; broadcasting) ---- */

/* rem: C fmod semantics, the result has the dividend's sign. pow: x^y with
   both differentiable (d/dy uses log x, defined for x > 0). maximum/minimum
   split the gradient evenly on ties. */
#define TF_BINARY_OPS(X) X(add) X(sub) X(mul) X(div) X(pow) X(maximum) X(minimum) X(rem)

#define TF_DECLARE_BINARY_(name) \
    tf_status tf_session_##name(tf_session *s, tf_eager *x, tf_eager *y, tf_eager **out);
TF_BINARY_OPS(TF_DECLARE_BINARY_)
#undef TF_DECLARE_BINARY_

/* ---- compare, select, clamp ---- */

/* A bool tensor of x <direction> y (broadcasting); no derivative. */
tf_status tf_session_compare(tf_session *s, tf_eager *x, tf_eager *y, tf_compare_op direction,
                             tf_eager **out);

/* pred ? on_true : on_false elementwise, broadcasting all three; pred is bool. */
tf_status tf_session_select(tf_session *s, tf_eager *pred, tf_eager *on_true,
                            tf_eager *on_false, tf_eager **out);

/* min(max(x, lo), hi) elementwise with broadcasting, as NumPy's clip: where
   lo > hi the result is hi. Gradients flow to the operand picked (ties go to
   x: x == lo or x == hi gives x); NaN in x gives NaN. */
tf_status tf_session_clamp(tf_session *s, tf_eager *x, tf_eager *lo, tf_eager *hi,
                           tf_eager **out);

/* ---- dtype conversion ---- */

/* Value-preserving conversion: TF_ERR_OUT_OF_RANGE if any element would
   change (see TF_PRIM_CONVERT). Differentiable between float dtypes. */
tf_status tf_session_convert(tf_session *s, tf_eager *x, tf_dtype dtype, tf_eager **out);
/* Lossy cast (truncating, saturating). Differentiable between float dtypes. */
tf_status tf_session_cast(tf_session *s, tf_eager *x, tf_dtype dtype, tf_eager **out);

/* ---- reductions (reduced axes are removed from the shape) ---- */

tf_status tf_session_reduce_sum(tf_session *s, tf_eager *x, const int *axes, size_t n_axes,
                                tf_eager **out);
/* Zero-safe gradient: exact with zeros in the group. */
tf_status tf_session_reduce_prod(tf_session *s, tf_eager *x, const int *axes, size_t n_axes,
                                 tf_eager **out);
/* Gradient split evenly among tied maxima/minima. */
tf_status tf_session_reduce_max(tf_session *s, tf_eager *x, const int *axes, size_t n_axes,
                                tf_eager **out);
tf_status tf_session_reduce_min(tf_session *s, tf_eager *x, const int *axes, size_t n_axes,
                                tf_eager **out);
tf_status tf_session_reduce_mean(tf_session *s, tf_eager *x, const int *axes, size_t n_axes,
                                 tf_eager **out);
/* Sum of squares. */
tf_status tf_session_reduce_sum_squares(tf_session *s, tf_eager *x, const int *axes,
                                        size_t n_axes, tf_eager **out);
/* log(sum(exp(x))) computed stably. */
tf_status tf_session_logsumexp(tf_session *s, tf_eager *x, const int *axes, size_t n_axes,
                               tf_eager **out);

/* ---- contractions ---- */

/* Dimension numbers of dot_general; output axes are [lhs free, rhs free,
   batch in lhs_batch order] (see TF_PRIM_DOT_GENERAL). */
typedef struct tf_dot_dims {
    size_t n_contracting;
    size_t n_batch;
    int lhs_contracting[TF_MAX_RANK];
    int rhs_contracting[TF_MAX_RANK];
    int lhs_batch[TF_MAX_RANK];
    int rhs_batch[TF_MAX_RANK];
} tf_dot_dims;

tf_status tf_session_dot_general(tf_session *s, tf_eager *lhs, tf_eager *rhs,
                                 const tf_dot_dims *dims, tf_eager **out);
/* [m,k] x [k,n] -> [m,n] (rank 2 each). */
tf_status tf_session_matmul(tf_session *s, tf_eager *x, tf_eager *y, tf_eager **out);

/* ---- layout ---- */

/* Same elements in column-major order, new shape (numpy order='F').
   TF_ERR_ELEMENT_COUNT when the shape holds another number of elements (as
   tf_tensor_reshape). */
tf_status tf_session_reshape(tf_session *s, tf_eager *x, size_t rank, const int64_t *shape,
                             tf_eager **out);
/* Output axis i is input axis perm[i]. */
tf_status tf_session_transpose(tf_session *s, tf_eager *x, const int *perm, tf_eager **out);
/* Input axis i becomes output axis dims[i] (strictly increasing). */
tf_status tf_session_broadcast_in_dim(tf_session *s, tf_eager *x, size_t rank,
                                      const int64_t *shape, const int *dims, tf_eager **out);
tf_status tf_session_reverse(tf_session *s, tf_eager *x, const int *axes, size_t n_axes,
                             tf_eager **out);
/* Lower/upper triangle of the matrices on the last two axes (row i on axis
   rank-2, column j on axis rank-1; rank >= 2): tril keeps the elements with
   j - i <= k, triu those with j - i >= k (k may be negative, as in NumPy);
   the rest is zero. */
tf_status tf_session_tril(tf_session *s, tf_eager *x, int64_t k, tf_eager **out);
tf_status tf_session_triu(tf_session *s, tf_eager *x, int64_t k, tf_eager **out);
/* The diagonal of the last two axes as a new last axis (length min of the two). */
tf_status tf_session_diagonal(tf_session *s, tf_eager *x, tf_eager **out);
/* A square matrix on the last two axes with x's last axis on the diagonal. */
tf_status tf_session_diag_embed(tf_session *s, tf_eager *x, tf_eager **out);

/* ---- indexing ---- */

/* x[start:limit:stride] per axis (0 <= start <= limit <= extent, stride >= 1),
   a view of x. Errors: TF_ERR_OUT_OF_RANGE (bounds), TF_ERR_VALIDATION
   (stride < 1). */
tf_status tf_session_slice(tf_session *s, tf_eager *x, const int64_t *start,
                           const int64_t *limit, const int64_t *stride, tf_eager **out);
/* A block of `sizes` (0 <= sizes <= extents) at starts taken from the i32/i64
   vector `starts` (one per axis), each clamped into [0, extent - size]. */
tf_status tf_session_dynamic_slice(tf_session *s, tf_eager *x, tf_eager *starts,
                                   const int64_t *sizes, tf_eager **out);
/* x at `index` (i32/i64 vector) along axis (torch.index_select / np.take).
   Indices outside [0, extent) fail with TF_ERR_OUT_OF_RANGE (from the
   engine). The gradient of repeated indices adds up; index has none. */
tf_status tf_session_index_select(tf_session *s, tf_eager *x, int axis, tf_eager *index,
                                  tf_eager **out);
/* The general gather of TF_PRIM_GATHER: index_select or take-along-axis. */
tf_status tf_session_gather(tf_session *s, tf_eager *x, int axis, tf_eager *index,
                            tf_gather_mode mode, tf_eager **out);
/* out[i] = x[i with i_axis = index[i]]; index has x's rank. */
tf_status tf_session_take_along_axis(tf_session *s, tf_eager *x, int axis, tf_eager *index,
                                     tf_eager **out);
/* base with updates added at (ADD; duplicates add up) / written to (REPLACE;
   of duplicates the last in column-major order wins) the positions a gather
   with the same axis, index and mode reads; updates have the gathered shape.
   REPLACE's gradient reaches only the updates that won (the others get
   zero) and the positions of base that were not overwritten. */
tf_status tf_session_scatter(tf_session *s, tf_eager *base, int axis, tf_eager *index,
                             tf_eager *updates, tf_gather_mode mode, tf_scatter_combine combine,
                             tf_eager **out);
/* Pad with `value`: low before, high after, interior between elements
   (low/high may be negative to crop; interior >= 0). Each output extent,
   low + d + (d-1)*interior + high (low + high when d = 0), must be >= 0
   (TF_ERR_VALIDATION otherwise). E.g. [1,2,3], low 1, high 2, interior 1
   gives [0,1,0,2,0,3,0,0]. */
tf_status tf_session_pad(tf_session *s, tf_eager *x, const int64_t *low, const int64_t *high,
                         const int64_t *interior, double value, tf_eager **out);
/* Join n >= 1 tensors along axis. */
tf_status tf_session_concatenate(tf_session *s, tf_eager *const *xs, size_t n, int axis,
                                 tf_eager **out);
/* Stack n >= 1 same-shape tensors along a new axis (0..rank). */
tf_status tf_session_stack(tf_session *s, tf_eager *const *xs, size_t n, int axis,
                           tf_eager **out);

/* ---- composites (differentiable through their parts) ---- */

tf_status tf_session_softmax(tf_session *s, tf_eager *x, int axis, tf_eager **out);
tf_status tf_session_log_softmax(tf_session *s, tf_eager *x, int axis, tf_eager **out);
tf_status tf_session_silu(tf_session *s, tf_eager *x, tf_eager **out);
/* The exact (erf) form: x * (1 + erf(x / sqrt 2)) / 2. */
tf_status tf_session_gelu(tf_session *s, tf_eager *x, tf_eager **out);
/* log(1 + exp(x)), stable for large |x|. */
tf_status tf_session_softplus(tf_session *s, tf_eager *x, tf_eager **out);
/* Normalise over the last `n_axes` axes: (x - mean) / sqrt(var + eps), then
   * weight + bias (either may be NULL). */
tf_status tf_session_layer_norm(tf_session *s, tf_eager *x, size_t n_axes, tf_eager *weight,
                                tf_eager *bias, double eps, tf_eager **out);
/* x / sqrt(mean(x^2) + eps) over the last `n_axes` axes, * weight (may be NULL). */
tf_status tf_session_rms_norm(tf_session *s, tf_eager *x, size_t n_axes, tf_eager *weight,
                              double eps, tf_eager **out);

/* ---- constants made in the session ---- */

/* A scalar (rank 0) constant of dtype in the session's engine memory. */
tf_status tf_session_scalar(tf_session *s, tf_dtype dtype, double value, tf_eager **out);
/* A constant filled with value, converted as tf_session_cast would: integers
   truncate and saturate (NaN gives 0), bool is value != 0 (NaN is true). */
tf_status tf_session_full(tf_session *s, tf_dtype dtype, size_t rank, const int64_t *shape,
                          double value, tf_eager **out);

#ifdef __cplusplus
}
#endif
#endif /* TENFERRO_OPS_H */
