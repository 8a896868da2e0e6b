/*
 * tenferro/ops.h - the ops of the eager runtime, issued through a session.
 *
 * Every op takes the session first and returns its result through the last
 * argument: one new reference to a new eager tensor of the session's
 * runtime, written only on success. Inputs are borrowed for the call (a
 * recorded result keeps its own references to them). Each op validates
 * its arguments before anything is computed or recorded: on error nothing
 * is recorded, no grad slot changes, and no result is made.
 *
 * Results. A result is tracked and recorded on the tape (runtime.h, "The
 * tape") when recording is on for the calling thread and an input is
 * tracked. Its value is a new dense tensor in the memory of the session's
 * engine, except for the view ops - reshape of a contiguous x, transpose,
 * broadcast_in_dim, reverse, slice, diagonal - whose value is a view
 * sharing x's storage (tensor.h), wherever that lies. Elementwise results,
 * and a reduction of one, may be computed later, in one batch (runtime.h,
 * "Deferred elementwise chains").
 *
 * Threads: the session's thread (a session is used by one thread at a
 * time); inputs may come from any thread.
 *
 * Broadcasting. Elementwise ops broadcast NumPy style, aligning shapes at
 * their last axes as written (natural order): [2,3] + [3] adds the vector
 * to every row; size-1 axes stretch; rank 0 broadcasts against anything.
 *
 * Derivatives. Every differentiable op has a reverse (VJP) and a forward
 * (JVP) rule, written with these same ops, so derivatives are
 * differentiable again. Only f32, f64, c64 and c128 values carry
 * derivatives (complex ones in PyTorch's convention, docs/complex.md);
 * compare, sign and the integer/bool ops have zero derivatives, as have
 * the index arguments of the indexing ops.
 *
 * Axes given as `int` may be negative (counted from the end). For the
 * reductions, an axis list given as (axes, n_axes) with axes == NULL means
 * "all axes", and a non-NULL list with n_axes == 0 "no axes" (the
 * reduction is the identity); tf_session_reverse's NULL list means no axes.
 *
 * Errors common to all ops (each op's comment lists its own):
 *   TF_ERR_VALIDATION       "session", "out", or the input's name (as
 *                           declared: "x", "y", "lhs", "pred", ...): NULL;
 *   TF_ERR_CONTEXT_MISMATCH the input named: of another runtime than the
 *                           session's (tf_eager_detach_into moves it);
 *   TF_ERR_OUT_OF_MEMORY;
 *   engine errors: the core's checks of the primitive call, among them
 *   TF_ERR_PLACEMENT for a value the session's engine cannot read (the
 *   message says how to move it) and TF_ERR_UNSUPPORTED for a combination
 *   the engine does not implement, and the engine's own failures
 *   (TF_ERR_BACKEND, TF_ERR_DEVICE_LOST, ...) with its report as the cause.
 * A dtype an elementwise primitive does not define (exp of an integer, add
 * of bools) is found by that check: TF_ERR_DTYPE_MISMATCH naming the
 * primitive's argument ("inputs[0]") and the primitive ("unary", "binary",
 * "reduce") rather than the op.
 */
#ifndef TENFERRO_OPS_H
#define TENFERRO_OPS_H

#include "runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- unary elementwise ----
 * f(x) elementwise, with x's dtype and shape. Defined for f32 and f64;
 * neg, abs and sign also for i32 and i64; none for bool (TF_ERR_DTYPE_MISMATCH,
 * "inputs[0]"). For c64 and c128: neg, abs (giving the part dtype), sign
 * (z / |z|, 0 at 0), exp, log, sin, cos, tanh, sqrt and rsqrt (principal
 * branches); expm1, log1p, erf and sigmoid are TF_ERR_DTYPE_MISMATCH ("x"),
 * naming the op and the dtype. Values follow C99 Annex F (log(0) = -Inf, sqrt(-1) = NaN;
 * docs/runtime.md, "Numerical edge cases"). Errors: the common ones only.
 */

/* X(NAME, name) for each: tf_session_<name>, which the engine computes as
   TF_UNARY_<NAME> (engine_abi.h). The one list of the unary ops: the
   library's op table, rules and by-code calls are generated from it. */
#define TF_UNARY_OPS(X)                                                                           \
    X(NEG, neg)                                                                                   \
    X(ABS, abs)                                                                                   \
    X(SIGN, sign) X(EXP, exp) X(LOG, log) X(EXPM1, expm1) X(LOG1P, log1p) X(SIN, sin) X(COS, cos) \
        X(TANH, tanh) X(SQRT, sqrt) X(RSQRT, rsqrt) X(ERF, erf) X(SIGMOID, sigmoid)

#define TF_DECLARE_UNARY_(NAME, name) \
    tf_status tf_session_##name(tf_session *s, tf_eager *x, tf_eager **out);
TF_UNARY_OPS(TF_DECLARE_UNARY_)
#undef TF_DECLARE_UNARY_

/* ---- complex parts ----
 * conj(z), real(z), imag(z) and angle(z) = atan2(imag, real) of a c64 or
 * c128 z; real, imag and angle give the part dtype (f32 for c64, f64 for
 * c128), conj z's dtype. Complex only: a real x is TF_ERR_DTYPE_MISMATCH
 * ("x"), nothing made. Derivatives in PyTorch's convention (docs/complex.md).
 */
/* X(NAME, name) for each: tf_session_<name>, computed as TF_UNARY_<NAME>. */
#define TF_COMPLEX_UNARY_OPS(X) X(CONJ, conj) X(REAL, real) X(IMAG, imag) X(ANGLE, angle)

#define TF_DECLARE_UNARY_(NAME, name) \
    tf_status tf_session_##name(tf_session *s, tf_eager *x, tf_eager **out);
TF_COMPLEX_UNARY_OPS(TF_DECLARE_UNARY_)
#undef TF_DECLARE_UNARY_

/* re + i im elementwise (broadcasting): two f32 tensors give c64, two f64
   c128. Errors: TF_ERR_DTYPE_MISMATCH ("im": another dtype than re; "re":
   not f32 or f64), TF_ERR_SHAPE_MISMATCH (no broadcast). */
tf_status tf_session_complex(tf_session *s, tf_eager *re, tf_eager *im, tf_eager **out);

/* ---- binary elementwise ----
 * x <op> y elementwise, broadcasting, with their dtype. Defined for f32,
 * f64, i32 and i64; for bool only maximum and minimum (others:
 * TF_ERR_DTYPE_MISMATCH, "inputs[0]"). Integer division or remainder by
 * zero, and an integer pow to a negative power, are engine errors
 * (TF_ERR_VALIDATION on the CPU engine). rem: C fmod semantics, the result
 * has the dividend's sign. pow: x^y with both differentiable (d/dy uses
 * log x, defined for x > 0). maximum/minimum propagate NaN, order -0 < +0,
 * and split the gradient evenly on ties.
 * Complex (c64, c128): add, sub, mul, div and pow (the principal branch,
 * engine_abi.h "Complex dtypes"); maximum, minimum and rem are
 * TF_ERR_DTYPE_MISMATCH ("x"), naming the op and the dtype. A real float
 * and a complex operand promote as NumPy does (f32 with c64 gives c64, f64
 * with c64 or f32 with c128 gives c128; c64 with c128 gives c128) by a
 * recorded convert of the other operand, so a real input gets a real
 * cotangent.
 * Errors: TF_ERR_DTYPE_MISMATCH ("y": another dtype than x, other than
 * those promotions), TF_ERR_SHAPE_MISMATCH (shapes that do not broadcast;
 * no argument named).
 */
/* X(NAME, name) for each: tf_session_<name>, computed as TF_BINARY_<NAME>. */
#define TF_BINARY_OPS(X) \
    X(ADD, add)          \
    X(SUB, sub) X(MUL, mul) X(DIV, div) X(POW, pow) X(MAX, maximum) X(MIN, minimum) X(REM, rem)

#define TF_DECLARE_BINARY_(NAME, name) \
    tf_status tf_session_##name(tf_session *s, tf_eager *x, tf_eager *y, tf_eager **out);
TF_BINARY_OPS(TF_DECLARE_BINARY_)
#undef TF_DECLARE_BINARY_

/* ---- compare, select, clamp ---- */

/* A bool tensor of x <direction> y (broadcasting); no derivative. x and y
   may have any one dtype; complex ones only EQ and NE (ordering:
   TF_ERR_DTYPE_MISMATCH, "direction"). Errors: TF_ERR_DTYPE_MISMATCH ("y": another dtype
   than x), TF_ERR_SHAPE_MISMATCH (no broadcast), TF_ERR_VALIDATION
   ("direction": not a tf_compare_op). */
tf_status tf_session_compare(tf_session *s, tf_eager *x, tf_eager *y, tf_compare_op direction,
                             tf_eager **out);

/* pred ? on_true : on_false elementwise, broadcasting all three, with
   on_true's dtype; the gradient flows to the operand picked. Errors:
   TF_ERR_DTYPE_MISMATCH ("on_false": another dtype than on_true; "pred":
   not bool), TF_ERR_SHAPE_MISMATCH (no broadcast). */
tf_status tf_session_select(tf_session *s, tf_eager *pred, tf_eager *on_true, tf_eager *on_false,
                            tf_eager **out);

/* min(max(x, lo), hi) elementwise with broadcasting, as NumPy's clip: where
   lo > hi the result is hi. Gradients flow to the operand picked (ties go to
   x: x == lo or x == hi gives x); NaN in x gives NaN. Built from recorded
   compare and select ops. Errors: TF_ERR_DTYPE_MISMATCH ("lo" or "hi":
   another dtype than x), TF_ERR_SHAPE_MISMATCH (no broadcast). */
tf_status tf_session_clamp(tf_session *s, tf_eager *x, tf_eager *lo, tf_eager *hi, tf_eager **out);

/* ---- dtype conversion ---- */

/* x converted to `dtype`, value-preserving: TF_ERR_OUT_OF_RANGE (from the
   engine) if any element would change (see TF_PRIM_CONVERT).
   Differentiable between float and complex dtypes (complex to real only
   by cast). Errors: TF_ERR_VALIDATION ("dtype": not a tf_dtype),
   TF_ERR_OUT_OF_RANGE. */
tf_status tf_session_convert(tf_session *s, tf_eager *x, tf_dtype dtype, tf_eager **out);
/* x cast to `dtype`, lossy (truncating, saturating; NaN to an integer is 0;
   complex to real keeps the real part). Differentiable between float and
   complex dtypes. Errors: TF_ERR_VALIDATION ("dtype":
   not a tf_dtype). */
tf_status tf_session_cast(tf_session *s, tf_eager *x, tf_dtype dtype, tf_eager **out);

/* ---- reductions ----
 * Reduce x over `axes` (see the axis lists above); the reduced axes are
 * removed from the shape, so reducing all axes gives rank 0. An empty group
 * gives the identity (sum 0, prod 1, max -Inf, min +Inf, mean NaN,
 * logsumexp -Inf). sum and prod are not defined for bool
 * (TF_ERR_DTYPE_MISMATCH, "inputs[0]"); max and min are defined for every
 * dtype but c64 and c128 (TF_ERR_DTYPE_MISMATCH, "x", naming op and dtype).
 * Errors of each: TF_ERR_AXIS_OUT_OF_BOUNDS ("axes": an axis outside
 * [-rank, rank)), TF_ERR_VALIDATION ("axes": an axis listed twice).
 */

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
/* Sum over the group divided by its size (f32, f64, c64, c128 only:
   TF_ERR_DTYPE_MISMATCH, "x"). */
tf_status tf_session_reduce_mean(tf_session *s, tf_eager *x, const int *axes, size_t n_axes,
                                 tf_eager **out);
/* Sum of squares (x * x, then a sum; not for bool). */
tf_status tf_session_reduce_sum_squares(tf_session *s, tf_eager *x, const int *axes, size_t n_axes,
                                        tf_eager **out);
/* log(sum(exp(x))) computed stably (shifted by the group's maximum); f32
   and f64 only (TF_ERR_DTYPE_MISMATCH, "x"). */
tf_status tf_session_logsumexp(tf_session *s, tf_eager *x, const int *axes, size_t n_axes,
                               tf_eager **out);

/* ---- contractions ---- */

/* Dimension numbers of dot_general: n_contracting pairs of axes summed
   over, n_batch pairs of axes kept in step; axes may be negative; each axis
   of an operand appears at most once in its two lists. Output axes are
   [lhs free, rhs free, batch in lhs_batch order] (see TF_PRIM_DOT_GENERAL). */
typedef struct tf_dot_dims {
    size_t n_contracting;
    size_t n_batch;
    int lhs_contracting[TF_MAX_RANK];
    int rhs_contracting[TF_MAX_RANK];
    int lhs_batch[TF_MAX_RANK];
    int rhs_batch[TF_MAX_RANK];
} tf_dot_dims;

/*
 * The general contraction of lhs and rhs by `dims` (borrowed), with their
 * dtype: f32, f64, c64, c128, i32 or i64. Errors: TF_ERR_VALIDATION ("dims": NULL, or
 * more contracting and batch axes than an operand has; "lhs_contracting",
 * "lhs_batch", "rhs_contracting", "rhs_batch": an axis listed twice),
 * TF_ERR_AXIS_OUT_OF_BOUNDS (those names: an axis out of range),
 * TF_ERR_DTYPE_MISMATCH ("rhs": another dtype than lhs; "lhs": bool),
 * TF_ERR_SHAPE_MISMATCH ("dims": paired axes of different extents),
 * TF_ERR_RANK_TOO_LARGE ("dims": the result would exceed TF_MAX_RANK).
 */
tf_status tf_session_dot_general(tf_session *s, tf_eager *lhs, tf_eager *rhs,
                                 const tf_dot_dims *dims, tf_eager **out);
/* [m,k] x [k,n] -> [m,n] (rank 2 each). Errors: TF_ERR_SHAPE_MISMATCH ("x"
   or "y": not rank 2; "y": inner extents differ), TF_ERR_DTYPE_MISMATCH
   ("y": another dtype than x; "x": bool). */
tf_status tf_session_matmul(tf_session *s, tf_eager *x, tf_eager *y, tf_eager **out);

/* ---- layout ---- */

/* Same elements in column-major order, new shape (numpy order='F'; `shape`
   copied): a view of x when x is contiguous, else a dense copy made on the
   session's engine first. Errors: TF_ERR_ELEMENT_COUNT ("shape": another
   number of elements), TF_ERR_VALIDATION ("shape": NULL for rank > 0, or a
   negative extent), TF_ERR_RANK_TOO_LARGE ("rank"),
   TF_ERR_SHAPE_OVERFLOW ("shape"). */
tf_status tf_session_reshape(tf_session *s, tf_eager *x, size_t rank, const int64_t *shape,
                             tf_eager **out);
/* A view: output axis i is input axis perm[i] (rank entries, negatives
   allowed). Errors: TF_ERR_VALIDATION ("perm": NULL for rank > 0, or an
   axis listed twice), TF_ERR_AXIS_OUT_OF_BOUNDS ("perm"). */
tf_status tf_session_transpose(tf_session *s, tf_eager *x, const int *perm, tf_eager **out);
/* A stride-0 view of x in `shape` (rank entries): input axis i becomes
   output axis dims[i] (non-negative, strictly increasing), its extent 1 or
   equal to shape[dims[i]]. Errors: TF_ERR_VALIDATION ("shape" or "dims":
   NULL where needed; "dims": not increasing; "shape": a negative extent),
   TF_ERR_AXIS_OUT_OF_BOUNDS ("dims"), TF_ERR_SHAPE_MISMATCH ("shape": rank
   below x's, or an extent that does not match), TF_ERR_RANK_TOO_LARGE
   ("rank"). */
tf_status tf_session_broadcast_in_dim(tf_session *s, tf_eager *x, size_t rank, const int64_t *shape,
                                      const int *dims, tf_eager **out);
/* A view of x with the element order flipped along each of the n_axes
   listed axes (axes may be NULL when n_axes is 0). Errors:
   TF_ERR_VALIDATION ("axes": NULL with n_axes > 0, or an axis listed twice),
   TF_ERR_AXIS_OUT_OF_BOUNDS ("axes"). */
tf_status tf_session_reverse(tf_session *s, tf_eager *x, const int *axes, size_t n_axes,
                             tf_eager **out);
/* Lower/upper triangle of the matrices on the last two axes (row i on axis
   rank-2, column j on axis rank-1; rank >= 2): tril keeps the elements with
   j - i <= k, triu those with j - i >= k (k may be negative, as in NumPy);
   the rest is zero. Errors: TF_ERR_SHAPE_MISMATCH ("x": rank below 2). */
tf_status tf_session_tril(tf_session *s, tf_eager *x, int64_t k, tf_eager **out);
tf_status tf_session_triu(tf_session *s, tf_eager *x, int64_t k, tf_eager **out);
/* A view: the diagonal of the last two axes as a new last axis (length the
   smaller extent). Errors: TF_ERR_SHAPE_MISMATCH ("x": rank below 2). */
tf_status tf_session_diagonal(tf_session *s, tf_eager *x, tf_eager **out);
/* A square matrix on the last two axes with x's last axis on the diagonal,
   zero elsewhere (rank + 1). Errors: TF_ERR_SHAPE_MISMATCH ("x": rank 0),
   TF_ERR_RANK_TOO_LARGE ("x": rank TF_MAX_RANK). */
tf_status tf_session_diag_embed(tf_session *s, tf_eager *x, tf_eager **out);

/* ---- indexing ---- */

/* x[start:limit:stride] per axis (rank entries each, copied; 0 <= start <=
   limit <= extent, stride >= 1), a view of x. Errors: TF_ERR_OUT_OF_RANGE
   ("start" or "limit": bounds), TF_ERR_VALIDATION ("start", "limit" or
   "stride": NULL for rank > 0; "stride": below 1). */
tf_status tf_session_slice(tf_session *s, tf_eager *x, const int64_t *start, const int64_t *limit,
                           const int64_t *stride, tf_eager **out);
/* A block of `sizes` (0 <= sizes <= extents) at starts taken from the i32/i64
   vector `starts` (one per axis), each clamped into [0, extent - size].
   Differentiable in x. Errors: TF_ERR_DTYPE_MISMATCH ("starts": not i32 or
   i64), TF_ERR_SHAPE_MISMATCH ("starts": not a vector of rank entries;
   "sizes": above an extent), TF_ERR_VALIDATION ("sizes": NULL for rank > 0,
   or negative). */
tf_status tf_session_dynamic_slice(tf_session *s, tf_eager *x, tf_eager *starts,
                                   const int64_t *sizes, tf_eager **out);
/* x at `index` (i32/i64 vector) along axis (torch.index_select / np.take).
   Indices outside [0, extent) fail with TF_ERR_OUT_OF_RANGE (from the
   engine). The gradient of repeated indices adds up; index has none.
   Errors: TF_ERR_DTYPE_MISMATCH ("index": not i32 or i64),
   TF_ERR_AXIS_OUT_OF_BOUNDS ("axis"), TF_ERR_SHAPE_MISMATCH ("index": not
   rank 1), TF_ERR_OUT_OF_RANGE. */
tf_status tf_session_index_select(tf_session *s, tf_eager *x, int axis, tf_eager *index,
                                  tf_eager **out);
/* The general gather of TF_PRIM_GATHER: index_select or take-along-axis by
   `mode`, with those ops' errors and TF_ERR_VALIDATION ("mode": not a
   tf_gather_mode). */
tf_status tf_session_gather(tf_session *s, tf_eager *x, int axis, tf_eager *index,
                            tf_gather_mode mode, tf_eager **out);
/* out[i] = x[i with i_axis = index[i]], with index's shape: index has x's
   rank and off `axis` no extent above x's. Errors as index_select, with
   TF_ERR_SHAPE_MISMATCH ("index") for those shape rules. */
tf_status tf_session_take_along_axis(tf_session *s, tf_eager *x, int axis, tf_eager *index,
                                     tf_eager **out);
/* base with updates added at (ADD; duplicates add up) / written to (REPLACE;
   of duplicates the last in column-major order wins) the positions a gather
   with the same axis, index and mode reads; updates have the gathered shape.
   REPLACE's gradient reaches only the updates that won (the others get
   zero) and the positions of base that were not overwritten. Errors: those
   of the gather (on base), TF_ERR_VALIDATION ("combine": not a
   tf_scatter_combine), TF_ERR_DTYPE_MISMATCH ("updates": another dtype than
   base; "base": ADD of bool), TF_ERR_SHAPE_MISMATCH ("updates": not the
   gathered shape). */
tf_status tf_session_scatter(tf_session *s, tf_eager *base, int axis, tf_eager *index,
                             tf_eager *updates, tf_gather_mode mode, tf_scatter_combine combine,
                             tf_eager **out);
/* Pad with `value`: low before, high after, interior between elements
   (low/high may be negative to crop; interior >= 0). Each output extent,
   low + d + (d-1)*interior + high (low + high when d = 0), must be >= 0
   (TF_ERR_VALIDATION "low" or "high" otherwise). E.g. [1,2,3], low 1, high
   2, interior 1 gives [0,1,0,2,0,3,0,0]. Errors also: TF_ERR_VALIDATION
   ("low", "high" or "interior": NULL for rank > 0; "interior": negative),
   TF_ERR_SHAPE_OVERFLOW ("high"). */
tf_status tf_session_pad(tf_session *s, tf_eager *x, const int64_t *low, const int64_t *high,
                         const int64_t *interior, double value, tf_eager **out);
/* Join the n >= 1 tensors xs[0..n) (array borrowed) of one dtype along
   axis; off axis their shapes agree. Errors: TF_ERR_VALIDATION ("xs": NULL;
   "n": 0; "xs[i]": that element NULL), TF_ERR_CONTEXT_MISMATCH ("xs[i]"),
   TF_ERR_DTYPE_MISMATCH ("xs"), TF_ERR_SHAPE_MISMATCH ("xs"),
   TF_ERR_AXIS_OUT_OF_BOUNDS ("axis"), TF_ERR_SHAPE_OVERFLOW ("xs"). */
tf_status tf_session_concatenate(tf_session *s, tf_eager *const *xs, size_t n, int axis,
                                 tf_eager **out);
/* Stack n >= 1 same-shape tensors along a new axis (0..rank, or -rank-1..-1).
   Errors as concatenate, with TF_ERR_SHAPE_MISMATCH ("xs": shapes differ),
   TF_ERR_RANK_TOO_LARGE ("xs": rank TF_MAX_RANK),
   TF_ERR_AXIS_OUT_OF_BOUNDS ("axis"). */
tf_status tf_session_stack(tf_session *s, tf_eager *const *xs, size_t n, int axis, tf_eager **out);

/* ---- composites ----
 * Built from the ops above, which are what is recorded (so they are
 * differentiable through their parts). f32 and f64 only
 * (TF_ERR_DTYPE_MISMATCH, "x").
 */

/* exp(x) / sum(exp(x)) along axis, and its log, computed from x minus the
   maximum. Errors: TF_ERR_AXIS_OUT_OF_BOUNDS ("axis"). */
tf_status tf_session_softmax(tf_session *s, tf_eager *x, int axis, tf_eager **out);
tf_status tf_session_log_softmax(tf_session *s, tf_eager *x, int axis, tf_eager **out);
/* x * sigmoid(x). */
tf_status tf_session_silu(tf_session *s, tf_eager *x, tf_eager **out);
/* The exact (erf) form: x * (1 + erf(x / sqrt 2)) / 2. */
tf_status tf_session_gelu(tf_session *s, tf_eager *x, tf_eager **out);
/* log(1 + exp(x)), stable for large |x|. */
tf_status tf_session_softplus(tf_session *s, tf_eager *x, tf_eager **out);
/* Normalise over the last `n_axes` axes: (x - mean) / sqrt(var + eps), then
   * weight + bias (either may be NULL; each has exactly those axes' shape).
   Errors: TF_ERR_AXIS_OUT_OF_BOUNDS ("n_axes": above the rank),
   TF_ERR_VALIDATION ("eps": negative or NaN), TF_ERR_CONTEXT_MISMATCH,
   TF_ERR_DTYPE_MISMATCH or TF_ERR_SHAPE_MISMATCH ("weight" or "bias"). */
tf_status tf_session_layer_norm(tf_session *s, tf_eager *x, size_t n_axes, tf_eager *weight,
                                tf_eager *bias, double eps, tf_eager **out);
/* x / sqrt(mean(x^2) + eps) over the last `n_axes` axes, * weight (may be
   NULL). Errors as layer_norm. */
tf_status tf_session_rms_norm(tf_session *s, tf_eager *x, size_t n_axes, tf_eager *weight,
                              double eps, tf_eager **out);

/* ---- constants made in the session ----
 * Untracked constants, in the memory of the session's engine. Errors:
 * TF_ERR_VALIDATION ("dtype": not a tf_dtype; "shape": NULL for rank > 0,
 * or a negative extent), TF_ERR_RANK_TOO_LARGE ("rank"),
 * TF_ERR_SHAPE_OVERFLOW ("shape"); the messages name tensor_empty, which
 * makes the tensor.
 */

/* A scalar (rank 0) constant of dtype, converted as tf_session_full does. */
tf_status tf_session_scalar(tf_session *s, tf_dtype dtype, double value, tf_eager **out);
/* A constant of `shape` (copied) filled with value, converted as
   tf_session_cast would: integers truncate and saturate (NaN gives 0), bool
   is value != 0 (NaN is true). */
tf_status tf_session_full(tf_session *s, tf_dtype dtype, size_t rank, const int64_t *shape,
                          double value, tf_eager **out);

#ifdef __cplusplus
}
#endif
#endif /* TENFERRO_OPS_H */
