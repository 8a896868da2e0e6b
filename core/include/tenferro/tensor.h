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
 * Threads: tensors are immutable once created, so every function here may
 * be called from any thread; retain/release are atomic.
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
 * On success *out holds one reference (release with tf_tensor_release).
 */
tf_status tf_tensor_from_host(tf_dtype dtype, size_t rank, const int64_t *shape,
                              const void *data, size_t count, tf_tensor **out);

/*
 * Creates a host tensor over the caller's memory without copying it. `data`
 * is borrowed until `release(user, data)` is called, which happens exactly
 * once when the last reference to the storage goes away (release may be
 * NULL). The caller must not change the memory while tensors over it are in
 * use. On failure release is not called and nothing is kept. `data` must be
 * aligned to the element size (4 bytes for f32 and i32, 8 for f64 and i64):
 * engines read the elements in place. A misaligned buffer is refused with
 * TF_ERR_VALIDATION naming "data" (tf_tensor_from_host copies from any
 * address). Errors otherwise as tf_tensor_from_host.
 */
tf_status tf_tensor_wrap_host(tf_dtype dtype, size_t rank, const int64_t *shape, void *data,
                              size_t count, tf_release_fn release, void *user,
                              tf_tensor **out);

/* Adds a reference. NULL is a no-op. */
void tf_tensor_retain(tf_tensor *tensor);

/* Drops a reference; the last one frees the tensor (and its storage when no
   other tensor uses it). NULL is a no-op. */
void tf_tensor_release(tf_tensor *tensor);

/* ---- metadata (never fail; the tensor must be valid) ---- */

tf_dtype tf_tensor_dtype(const tf_tensor *tensor);
size_t tf_tensor_rank(const tf_tensor *tensor);
/* rank extents; borrowed, valid while the tensor is. NULL-safe for rank 0 users: never NULL. */
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
/* non-zero if a and b are views of the same storage */
int tf_tensor_shares_storage(const tf_tensor *a, const tf_tensor *b);

/* ---- reading ---- */

/*
 * Reads the tensor as a host slice: *data gets the address of its first
 * element (borrowed, valid while the tensor is), *count its element count.
 * Errors: TF_ERR_DTYPE_MISMATCH (dtype differs from the tensor's),
 * TF_ERR_PLACEMENT (device memory: download it through its engine first),
 * TF_ERR_NOT_CONTIGUOUS (a strided view: copy it with tf_tensor_copy_to_host
 * or materialise it).
 */
tf_status tf_tensor_data(const tf_tensor *tensor, tf_dtype dtype, const void **data,
                         size_t *count);

/*
 * Copies the elements of a host-accessible tensor of any strides into `dst`
 * in column-major order. `count` must equal tf_tensor_numel.
 * Errors: TF_ERR_DTYPE_MISMATCH, TF_ERR_PLACEMENT, TF_ERR_ELEMENT_COUNT,
 * TF_ERR_VALIDATION (NULL dst with count > 0).
 */
tf_status tf_tensor_copy_to_host(const tf_tensor *tensor, tf_dtype dtype, void *dst,
                                 size_t count);

/* ---- views: share the storage; no data moves ---- */

/*
 * A view with explicit shape, strides (in elements; 0 broadcasts, negative
 * reverses; NULL means contiguous column-major) and offset (in elements,
 * from the start of the storage). Every addressable element must lie inside
 * the storage. Errors: TF_ERR_RANK_TOO_LARGE, TF_ERR_SHAPE_OVERFLOW,
 * TF_ERR_VALIDATION (negative extent), TF_ERR_OUT_OF_RANGE (an element
 * outside the storage), TF_ERR_OUT_OF_MEMORY.
 */
tf_status tf_tensor_view(const tf_tensor *tensor, size_t rank, const int64_t *shape,
                         const int64_t *strides, int64_t offset, tf_tensor **out);

/*
 * Same elements in column-major order, new shape. The tensor must be
 * contiguous (TF_ERR_NOT_CONTIGUOUS otherwise; materialise it first).
 * Errors also TF_ERR_ELEMENT_COUNT (products differ), TF_ERR_SHAPE_OVERFLOW,
 * TF_ERR_RANK_TOO_LARGE.
 */
tf_status tf_tensor_reshape(const tf_tensor *tensor, size_t rank, const int64_t *shape,
                            tf_tensor **out);

/* Output axis i is input axis perm[i] (a permutation of 0..rank-1, negatives
   allowed). Errors: TF_ERR_VALIDATION (not a permutation), TF_ERR_AXIS_OUT_OF_BOUNDS. */
tf_status tf_tensor_transpose(const tf_tensor *tensor, const int *perm, tf_tensor **out);

/*
 * Elements start, start+stride, ... < limit on every axis (one entry per
 * axis; stride >= 1; 0 <= start <= limit <= extent). Errors:
 * TF_ERR_OUT_OF_RANGE (bounds), TF_ERR_VALIDATION (stride < 1, NULL).
 */
tf_status tf_tensor_slice(const tf_tensor *tensor, const int64_t *start, const int64_t *limit,
                          const int64_t *stride, tf_tensor **out);

/*
 * Input axis i becomes output axis dims[i] (strictly increasing); each input
 * extent is 1 (stretched with stride 0) or equal to shape[dims[i]]; output
 * axes not in dims are new and stretched. Errors: TF_ERR_SHAPE_MISMATCH,
 * TF_ERR_AXIS_OUT_OF_BOUNDS, TF_ERR_VALIDATION, TF_ERR_RANK_TOO_LARGE.
 */
tf_status tf_tensor_broadcast_in_dim(const tf_tensor *tensor, size_t rank, const int64_t *shape,
                                     const int *dims, tf_tensor **out);

/* Flips the element order along each listed axis (negative strides). Errors:
   TF_ERR_AXIS_OUT_OF_BOUNDS, TF_ERR_VALIDATION (an axis listed twice). */
tf_status tf_tensor_reverse(const tf_tensor *tensor, size_t n_axes, const int *axes,
                            tf_tensor **out);

/*
 * The diagonal of axes a and b (distinct, equal extents... or not: the
 * diagonal has min(extent_a, extent_b) elements) as a view: both axes are
 * removed and the diagonal becomes the last axis. Errors:
 * TF_ERR_AXIS_OUT_OF_BOUNDS, TF_ERR_VALIDATION (a == b).
 */
tf_status tf_tensor_diagonal(const tf_tensor *tensor, int a, int b, tf_tensor **out);

#ifdef __cplusplus
}
#endif
#endif /* TENFERRO_TENSOR_H */
