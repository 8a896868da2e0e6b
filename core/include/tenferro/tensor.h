/*
 * tenferro/tensor.h - tensors: dtype, shape, strided views over shared storage.
 *
 * A tf_tensor is an immutable description (dtype, shape, strides in elements,
 * offset in elements) of a refcounted storage. The storage is host memory
 * (copied in by tf_tensor_from_host, or borrowed from the caller by
 * tf_tensor_wrap_host) or memory of an engine (see engine.h). Views share the
 * storage and keep it alive. Shapes are column-major: the contiguous layout
 * of [d0, d1, ...] has strides [1, d0, d0*d1, ...], so element (i0, i1, ...)
 * of contiguous data is at i0 + d0*(i1 + d1*(i2 + ...)).
 *
 * Rank 0 (shape []) has one element. Extents may be 0.
 *
 * Complex elements (TF_C64, TF_C128) are C99 `float complex` / `double
 * complex` values: the real part, then the imaginary part. Counts, shapes,
 * strides and offsets count elements, never parts: a c128 tensor of 3
 * elements holds 6 doubles, and tf_tensor_from_host takes count 3.
 *
 * Ownership: a tensor written through an out-parameter is one new
 * reference (release it with tf_tensor_release); tensor arguments are
 * borrowed for the call; a view holds its own reference to the storage, so
 * the tensor it was made from may be released first. A tensor in an
 * engine's memory keeps that engine alive (engine.h).
 *
 * Threads: tensors are immutable once created, so every function here may
 * be called from any thread; retain/release are atomic.
 *
 * Deferred values: a tensor made by a session op may still be pending
 * (runtime.h, "Deferred elementwise chains"). The readers here
 * (tf_tensor_data, tf_tensor_copy_to_host) compute it first, and then
 * return that computation's failure: an engine error, or TF_ERR_BACKEND
 * when an earlier failure lost the value. Metadata and views never wait.
 *
 * Axes: where a function takes an axis as `int`, negative values count from
 * the end (-1 is the last axis).
 */
#ifndef TENFERRO_TENSOR_H
#define TENFERRO_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "dtype.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tf_tensor tf_tensor;
typedef struct tf_engine tf_engine;

/* Where a tensor's storage lives. */
typedef enum tf_placement {
    TF_PLACEMENT_HOST = 0,  /* host memory the application gave or the library allocated */
    TF_PLACEMENT_ENGINE = 1 /* memory of an engine instance (tf_tensor_engine) */
} tf_placement;

/* Called once when the last reference to borrowed memory goes away. */
typedef void (*tf_release_fn)(void *user, void *data);

/*
 * Creates a host tensor holding a copy of `count` elements of column-major
 * `data` (copied; the caller keeps `data`). `shape` (rank entries, copied)
 * may be NULL for rank 0. `data` may be NULL only when count is 0.
 * Errors: TF_ERR_VALIDATION (bad dtype, NULL pointer, negative extent,
 * argument named), TF_ERR_RANK_TOO_LARGE (rank > TF_MAX_RANK),
 * TF_ERR_SHAPE_OVERFLOW (the element count or byte size overflows),
 * TF_ERR_ELEMENT_COUNT (count != product of shape), TF_ERR_OUT_OF_MEMORY.
 * The argument names: "out", "dtype", "shape", "rank", "count", "data".
 * On success *out holds one reference (release with tf_tensor_release).
 */
tf_status tf_tensor_from_host(tf_dtype dtype, size_t rank, const int64_t *shape,
                              const void *data, size_t count, tf_tensor **out);

/*
 * Creates a host tensor over the caller's memory without copying it. `data`
 * is borrowed until `release(user, data)` is called, which happens exactly
 * once when the last reference to the storage goes away, on the thread that
 * drops it (release may be NULL). The caller must not change the memory
 * while tensors over it are in use. On failure release is not called and
 * nothing is kept. `data` must be non-NULL (even for 0 elements) and
 * aligned to the element's alignment, tf_dtype_align (4 bytes for f32, i32
 * and c64, 8 for f64, i64 and c128): engines read the elements in place. A NULL or misaligned buffer is
 * refused with TF_ERR_VALIDATION naming "data" (tf_tensor_from_host copies
 * from any address). Errors otherwise as tf_tensor_from_host.
 */
tf_status tf_tensor_wrap_host(tf_dtype dtype, size_t rank, const int64_t *shape, void *data,
                              size_t count, tf_release_fn release, void *user,
                              tf_tensor **out);

/* Adds a reference. NULL is a no-op. */
void tf_tensor_retain(tf_tensor *tensor);

/* Drops a reference; the last one frees the tensor (and its storage when no
   other tensor uses it: owned memory is freed, borrowed memory handed to its
   release callback, engine memory returned to its engine). NULL is a no-op. */
void tf_tensor_release(tf_tensor *tensor);

/* ---- metadata (never fail; the tensor must not be NULL, except for
   tf_tensor_shares_storage) ---- */

tf_dtype tf_tensor_dtype(const tf_tensor *tensor);
size_t tf_tensor_rank(const tf_tensor *tensor);
/* rank extents; borrowed, valid while the tensor is; never NULL (even for rank 0). */
const int64_t *tf_tensor_shape(const tf_tensor *tensor);
/* rank strides in elements; borrowed, valid while the tensor is. */
const int64_t *tf_tensor_strides(const tf_tensor *tensor);
/* offset of element 0 from the start of the storage, in elements */
int64_t tf_tensor_offset(const tf_tensor *tensor);
/* product of the extents (1 for rank 0) */
size_t tf_tensor_numel(const tf_tensor *tensor);
/* non-zero if the tensor's strides are dense column-major (extents of 1 may
   have any stride; the offset may be anything), i.e. it is readable as one
   slice with tf_tensor_data */
int tf_tensor_is_contiguous(const tf_tensor *tensor);
tf_placement tf_tensor_placement(const tf_tensor *tensor);
/* The engine whose memory holds the tensor (borrowed), NULL for host tensors. */
tf_engine *tf_tensor_engine(const tf_tensor *tensor);
/* non-zero if the host can address the memory (host tensors, and tensors of
   engines that compute on host memory) */
int tf_tensor_is_host_accessible(const tf_tensor *tensor);
/* non-zero if a and b are views of the same storage; 0 if either is NULL */
int tf_tensor_shares_storage(const tf_tensor *a, const tf_tensor *b);

/* ---- reading ---- */

/*
 * Reads the tensor as a host slice: *data gets the address of its first
 * element (borrowed, valid while the tensor is; read-only), *count its
 * element count. A pending value is computed first (see "Deferred values").
 * Errors: TF_ERR_VALIDATION ("tensor", "data" or "count": NULL),
 * TF_ERR_DTYPE_MISMATCH ("dtype": differs from the tensor's),
 * TF_ERR_PLACEMENT ("tensor": device memory; download it through its
 * engine first), TF_ERR_NOT_CONTIGUOUS ("tensor": a strided view; copy it
 * with tf_tensor_copy_to_host or materialise it), and the failure of the
 * deferred computation.
 */
tf_status tf_tensor_data(const tf_tensor *tensor, tf_dtype dtype, const void **data,
                         size_t *count);

/*
 * Copies the elements of a host-accessible tensor of any strides into `dst`
 * (the caller's, count elements) in column-major order. `count` must equal
 * tf_tensor_numel. A pending value is computed first.
 * Errors: TF_ERR_VALIDATION ("tensor": NULL; "dst": NULL with count > 0),
 * TF_ERR_DTYPE_MISMATCH ("dtype"), TF_ERR_PLACEMENT ("tensor"),
 * TF_ERR_ELEMENT_COUNT ("count"), and the failure of the deferred
 * computation.
 */
tf_status tf_tensor_copy_to_host(const tf_tensor *tensor, tf_dtype dtype, void *dst,
                                 size_t count);

/* ---- views: share the storage; no data moves ----
 * Each returns a new tensor (one reference) over `tensor`'s storage, which it
 * keeps alive; array arguments are copied. All fail with TF_ERR_VALIDATION
 * ("tensor" or "out": NULL) and TF_ERR_OUT_OF_MEMORY besides the errors
 * listed, and every view is checked to address only elements inside the
 * storage. */

/*
 * A view with explicit shape, strides (in elements; 0 broadcasts, negative
 * reverses; NULL means contiguous column-major) and offset (in elements,
 * from the start of the storage). Every addressable element must lie inside
 * the storage. Errors: TF_ERR_RANK_TOO_LARGE ("rank"),
 * TF_ERR_SHAPE_OVERFLOW ("shape"), TF_ERR_VALIDATION ("shape": NULL for
 * rank > 0, or a negative extent), TF_ERR_OUT_OF_RANGE ("strides" or
 * "offset": an element outside the storage).
 */
tf_status tf_tensor_view(const tf_tensor *tensor, size_t rank, const int64_t *shape,
                         const int64_t *strides, int64_t offset, tf_tensor **out);

/*
 * Same elements in column-major order, new shape. The tensor must be
 * contiguous (TF_ERR_NOT_CONTIGUOUS "tensor" otherwise; materialise it
 * first). Errors also TF_ERR_ELEMENT_COUNT ("shape": products differ),
 * TF_ERR_VALIDATION ("shape": NULL for rank > 0, or a negative extent),
 * TF_ERR_SHAPE_OVERFLOW ("shape"), TF_ERR_RANK_TOO_LARGE ("rank").
 */
tf_status tf_tensor_reshape(const tf_tensor *tensor, size_t rank, const int64_t *shape,
                            tf_tensor **out);

/* Output axis i is input axis perm[i] (a permutation of 0..rank-1, negatives
   allowed). Errors: TF_ERR_VALIDATION ("perm": NULL for rank > 0, or not a
   permutation), TF_ERR_AXIS_OUT_OF_BOUNDS ("perm"). */
tf_status tf_tensor_transpose(const tf_tensor *tensor, const int *perm, tf_tensor **out);

/*
 * Elements start, start+stride, ... < limit on every axis (one entry per
 * axis; stride >= 1; 0 <= start <= limit <= extent). Errors:
 * TF_ERR_OUT_OF_RANGE ("start": either bound outside that range),
 * TF_ERR_VALIDATION ("start", "limit" or "stride": NULL for rank > 0;
 * "stride": below 1).
 */
tf_status tf_tensor_slice(const tf_tensor *tensor, const int64_t *start, const int64_t *limit,
                          const int64_t *stride, tf_tensor **out);

/*
 * Input axis i becomes output axis dims[i] (strictly increasing); each input
 * extent is 1 (stretched with stride 0) or equal to shape[dims[i]]; output
 * axes not in dims are new and stretched. Errors: TF_ERR_SHAPE_MISMATCH
 * ("shape": rank below the tensor's, or an extent that does not match),
 * TF_ERR_AXIS_OUT_OF_BOUNDS ("dims": outside 0..rank-1), TF_ERR_VALIDATION
 * ("shape" or "dims": NULL where needed; "dims": not increasing; "shape": a
 * negative extent), TF_ERR_RANK_TOO_LARGE ("rank").
 */
tf_status tf_tensor_broadcast_in_dim(const tf_tensor *tensor, size_t rank, const int64_t *shape,
                                     const int *dims, tf_tensor **out);

/* Flips the element order along each of the n_axes listed axes (negative
   strides; axes may be NULL when n_axes is 0). Errors:
   TF_ERR_AXIS_OUT_OF_BOUNDS ("axes"), TF_ERR_VALIDATION ("axes": NULL with
   n_axes > 0, or an axis listed twice). */
tf_status tf_tensor_reverse(const tf_tensor *tensor, size_t n_axes, const int *axes,
                            tf_tensor **out);

/*
 * The diagonal of the distinct axes a and b as a view: both axes are removed
 * and the diagonal, of min(extent_a, extent_b) elements, becomes the last
 * axis. Errors: TF_ERR_AXIS_OUT_OF_BOUNDS ("a" or "b"), TF_ERR_VALIDATION
 * ("b": the same axis as a).
 */
tf_status tf_tensor_diagonal(const tf_tensor *tensor, int a, int b, tf_tensor **out);

#ifdef __cplusplus
}
#endif
#endif /* TENFERRO_TENSOR_H */
