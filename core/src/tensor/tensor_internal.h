/*
 * tensor_internal.h - tensors and their storage (core/src/tensor): dtype,
 * shape and strided views over refcounted storage, host or engine memory,
 * and the hooks through which pending memory is made current (the lazy
 * layer registers them). Uses base only; knows nothing of engines' insides.
 */
#ifndef TF_TENSOR_INTERNAL_H
#define TF_TENSOR_INTERNAL_H

#include "base_internal.h"

/* ---- tensor.c ---- */

typedef enum tf_storage_kind {
    TF_STORAGE_HOST_OWNED = 0,    /* allocated by the library */
    TF_STORAGE_HOST_BORROWED = 1, /* the caller's memory, released through a callback */
    TF_STORAGE_ENGINE = 2         /* an engine buffer */
} tf_storage_kind;

typedef struct tf_storage tf_storage;

struct tf_storage {
    atomic_size_t refs;
    tf_storage_kind kind;
    void *host;    /* host address of the memory, NULL for device memory */
    size_t nbytes; /* usable bytes */
    /*
     * host != NULL, fixed when the storage is made: what is read without the
     * memory being current (tf_tensor_is_host_accessible, a read's placement
     * check), since while it is pending the lazy layer may exchange host and
     * buffer with those of another storage under the engine's lock
     * (defer_run.c, run_donated).
     */
    bool host_accessible;
    /*
     * Who frees the memory: the caller's callback for borrowed host memory,
     * the engine boundary for engine memory (which sets it with the buffer),
     * so that tensors need to know nothing of engines.
     */
    union {
        struct {
            tf_release_fn fn;
            void *user;
        } borrowed;
        void (*engine)(tf_storage *storage);
    } free;
    tf_engine *engine; /* engine memory: the instance (retained; opaque here) */
    tf_engine_buffer *buffer;
    bool in_block; /* allocated with its first tensor (tf__tensor_block_new) */
    /*
     * Deferred chains (the lazy layer's): the batch that will compute these
     * contents, NULL once they are current (or a mark: lost, unwritten); and
     * how many open batches read this memory. Opaque here: what it means is
     * tf_pending_hooks' business.
     */
    struct tf_batch *_Atomic pending;
    atomic_uint readers;
    /*
     * What the host knows of the contents: elements [0, fill_n) all hold
     * fill_value, of dtype fill_dtype (f32 or f64; fill_value is exact in
     * it). Set by a FILL of dense memory from element 0 (engine.c), cleared
     * before any other write; fill_n 0: nothing known. The lazy layer reads
     * such a constant as a FUSED immediate rather than as memory.
     */
    _Atomic int64_t fill_n;
    double fill_value;
    tf_dtype fill_dtype;
};

struct tf_tensor {
    atomic_size_t refs;
    tf_dtype dtype;
    uint32_t rank;
    int64_t shape[TF_MAX_RANK];
    int64_t strides[TF_MAX_RANK];
    int64_t offset;
    size_t numel;
    tf_storage *storage;
};

/* Whether t has rank `rank` and the extents shape[0..rank) (a loop, not memcmp:
   ranks are small and this runs for every eager op). */
static inline bool tf__same_extents(const tf_tensor *t, size_t rank, const int64_t *shape)
{
    if (t->rank != rank)
        return false;
    for (uint32_t d = 0; d < t->rank; d++)
        if (t->shape[d] != shape[d])
            return false;
    return true;
}

/* Whether a and b have the same rank and extents. */
static inline bool tf__same_shape(const tf_tensor *a, const tf_tensor *b)
{
    return tf__same_extents(a, b->rank, b->shape);
}

/* Whether a and b are the same view: memory, offset, dtype, extents and strides
   (the extents too: with axes of extent 1, a [1, 4] view and its transpose have
   the same strides). */
static inline bool tf__same_view(const tf_tensor *a, const tf_tensor *b)
{
    if (a == b)
        return true;
    if (a->storage != b->storage || a->offset != b->offset || a->dtype != b->dtype ||
        !tf__same_shape(a, b))
        return false;
    for (uint32_t d = 0; d < a->rank; d++)
        if (a->strides[d] != b->strides[d])
            return false;
    return true;
}

/* The first axis of extent > 1 along which t repeats elements (stride 0), or -1. */
static inline int tf__repeat_axis(const tf_tensor *t)
{
    for (uint32_t d = 0; d < t->rank; d++)
        if (t->strides[d] == 0 && t->shape[d] > 1)
            return (int)d;
    return -1;
}

/*
 * Checks dtype, rank and extents and computes the element count and byte
 * size (overflow-checked). `op` names the caller for messages.
 */
tf_status tf__shape_check(const char *op, tf_dtype dtype, size_t rank, const int64_t *shape,
                          size_t *numel, size_t *nbytes);
/* Dense column-major strides for shape. */
void tf__dense_strides(size_t rank, const int64_t *shape, int64_t *strides);
/* A new tensor (refs 1) over `storage` (retained). NULL on OOM (error recorded). */
tf_tensor *tf__tensor_new(tf_storage *storage, tf_dtype dtype, size_t rank, const int64_t *shape,
                          const int64_t *strides, int64_t offset, size_t numel);
/*
 * A new tensor (refs 1) and a zeroed engine storage (refs 1, held by the
 * tensor) in one pooled block, which lives until both are released: the
 * caller fills the storage's buffer fields. Undo with tf__tensor_block_discard
 * while nothing else refers to it. NULL on OOM (no error recorded).
 */
tf_tensor *tf__tensor_block_new(tf_dtype dtype, size_t rank, const int64_t *shape, size_t numel);
void tf__tensor_block_discard(tf_tensor *t);
/*
 * Whether every element of t reads 1: host memory whose contents are current
 * (never memory a deferred batch has yet to write, never device memory), a
 * broadcast (stride 0 on every axis longer than 1) of one float that is 1.
 */
bool tf__tensor_reads_one(const tf_tensor *t);
/* A new dense host tensor (library-owned memory, contents undefined). */
tf_status tf__tensor_host_empty(tf_dtype dtype, size_t rank, const int64_t *shape,
                                tf_tensor **out);
void tf__storage_retain(tf_storage *storage);
void tf__storage_release(tf_storage *storage);
bool tf__strides_dense(size_t rank, const int64_t *shape, const int64_t *strides);
/*
 * A fill value of `dtype` as the engines read it (tf_scalar): floats take v;
 * integers take v truncated, saturating, NaN as 0; bool takes v != 0 (NaN
 * is true), the truth rule of C, NumPy and CONVERT.
 */
tf_scalar tf__scalar_of(tf_dtype dtype, double v);
/* Lowest and highest element index a view addresses (numel > 0). */
void tf__view_extent(size_t rank, const int64_t *shape, const int64_t *strides, int64_t offset,
                     int64_t *lo, int64_t *hi);

/* ---- what pending memory waits for (tensor.c keeps the hooks) ---- */

/*
 * The lazy layer (defer.c) marks memory whose contents a batch has yet to
 * compute, and registers these hooks before it marks any, so that the
 * readers and writers below it (tensors, the engine boundary) can make that
 * memory current without knowing what a batch is:
 *   flush         the storage is pending: run what computes it (or report
 *                 the mark's error: a lost or unwritten result);
 *   before_write  the storage is pending or open batches read it: run them;
 *   flush_engine  run every open batch of the engine (synchronize).
 */
typedef struct tf_pending_hooks {
    tf_status (*flush)(tf_storage *storage);
    tf_status (*before_write)(const tf_tensor *t);
    tf_status (*flush_engine)(tf_engine *engine);
} tf_pending_hooks;

/* Registers the hooks (the same table every time; the lazy layer's). */
void tf__pending_hooks_set(const tf_pending_hooks *hooks);
/* The hooks; NULL until registered (then nothing can be pending). */
const tf_pending_hooks *tf__pending_hooks(void);

/* Makes t's contents current before they are read. */
static inline tf_status tf__ready(const tf_tensor *t)
{
    if (atomic_load_explicit(&t->storage->pending, memory_order_acquire))
        return tf__pending_hooks()->flush(t->storage);
    return TF_OK;
}
/* Before t's memory is written: also runs the open batches that read it. */
static inline tf_status tf__ready_write(const tf_tensor *t)
{
    const tf_storage *s = t->storage;
    if (atomic_load_explicit(&s->pending, memory_order_acquire) ||
        atomic_load_explicit(&s->readers, memory_order_acquire))
        return tf__pending_hooks()->before_write(t);
    return TF_OK;
}

#endif /* TF_TENSOR_INTERNAL_H */
