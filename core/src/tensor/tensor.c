/*
 * tensor.c - tensors and their storage: creation from host data, reference
 * counting, metadata, and reading back to the host.
 *
 * A tensor is an immutable (dtype, shape, strides, offset) over a refcounted
 * tf_storage. Storage is host memory owned by the library, host memory
 * borrowed from the caller, or an engine buffer (which keeps its engine
 * alive).
 */
#include <string.h>

#include "tensor_internal.h"

/* ---- shapes ---- */

tf_status tf__shape_check(const char *op, tf_dtype dtype, size_t rank, const int64_t *shape,
                          size_t *numel, size_t *nbytes)
{
    if (!tf_dtype_is_valid((int)dtype))
        return tf__error(TF_ERR_VALIDATION, op, "dtype", "%s: dtype %d is not a tf_dtype", op,
                         (int)dtype);
    if (rank > TF_MAX_RANK)
        return tf__error(TF_ERR_RANK_TOO_LARGE, op, "rank", "%s: rank %zu exceeds TF_MAX_RANK (%d)",
                         op, rank, TF_MAX_RANK);
    if (rank > 0 && !shape)
        return tf__error(TF_ERR_VALIDATION, op, "shape", "%s: shape is NULL for rank %zu", op,
                         rank);
    bool empty = false;
    for (size_t i = 0; i < rank; i++) {
        if (shape[i] < 0)
            return tf__error(TF_ERR_VALIDATION, op, "shape", "%s: extent %zu is negative (%lld)",
                             op, i, (long long)shape[i]);
        empty = empty || shape[i] == 0;
    }
    size_t n = empty ? 0 : 1;
    /* byte offsets must fit int64_t, so the limit is INT64_MAX bytes */
    const uint64_t limit = (uint64_t)INT64_MAX / tf_dtype_size(dtype);
    for (size_t i = 0; i < rank && !empty; i++) {
        if ((uint64_t)shape[i] > limit / n)
            return tf__error(TF_ERR_SHAPE_OVERFLOW, op, "shape",
                             "%s: the element count of the rank-%zu shape overflows (extent %zu "
                             "is %lld)",
                             op, rank, i, (long long)shape[i]);
        n *= (size_t)shape[i];
    }
    *numel = n;
    *nbytes = n * tf_dtype_size(dtype);
    return TF_OK;
}

void tf__dense_strides(size_t rank, const int64_t *shape, int64_t *strides)
{
    int64_t s = 1;
    for (size_t i = 0; i < rank; i++) {
        strides[i] = s;
        if (shape[i] > 0 && s <= INT64_MAX / shape[i]) /* only zero-size shapes can overflow */
            s *= shape[i];
    }
}

bool tf__strides_dense(size_t rank, const int64_t *shape, const int64_t *strides)
{
    /* No elements: any strides describe them. Checked first, because the
       running product of the extents before a zero one may overflow (found
       by tests/fuzz/fuzz_shapes: [3, 2^62 + 1, 0]). */
    for (size_t i = 0; i < rank; i++)
        if (shape[i] == 0)
            return true;
    int64_t s = 1;
    for (size_t i = 0; i < rank; i++) {
        if (shape[i] != 1 && strides[i] != s)
            return false;
        s *= shape[i];
    }
    return true;
}

void tf__view_extent(size_t rank, const int64_t *shape, const int64_t *strides, int64_t offset,
                     int64_t *lo, int64_t *hi)
{
    int64_t l = offset, h = offset;
    for (size_t i = 0; i < rank; i++) {
        int64_t span = (shape[i] - 1) * strides[i];
        if (span < 0)
            l += span;
        else
            h += span;
    }
    *lo = l;
    *hi = h;
}

tf_scalar tf__scalar_of(tf_dtype dtype, double v)
{
    tf_scalar r = {v, 0};
    if (dtype == TF_BOOL)
        r.i = v != 0.0; /* NaN != 0 */
    else if (v != v)
        r.i = 0;
    else if (v >= 9.2233720368547758e18)
        r.i = INT64_MAX;
    else if (v <= -9.2233720368547758e18)
        r.i = INT64_MIN;
    else
        r.i = (int64_t)v;
    return r;
}

/* ---- what pending memory waits for ---- */

static const tf_pending_hooks *_Atomic g_pending_hooks;

void tf__pending_hooks_set(const tf_pending_hooks *hooks)
{
    atomic_store_explicit(&g_pending_hooks, hooks, memory_order_release);
}

const tf_pending_hooks *tf__pending_hooks(void)
{
    return atomic_load_explicit(&g_pending_hooks, memory_order_acquire);
}

/* ---- storage ---- */

/*
 * An engine tensor and its storage, allocated together: one pooled block per
 * op result instead of two. The tensor's release drops its storage
 * reference; the block goes back to the pool with the storage, whose last
 * reference may be held by views made of the tensor.
 */
typedef struct tensor_block {
    tf_tensor tensor;
    tf_storage storage;
} tensor_block;

static tensor_block *block_of(tf_storage *s)
{
    return (tensor_block *)(void *)((char *)s - offsetof(tensor_block, storage));
}

static bool in_own_block(const tf_tensor *t)
{
    return t->storage->in_block && t->storage == &((const tensor_block *)(const void *)t)->storage;
}

void tf__storage_retain(tf_storage *storage)
{
    atomic_fetch_add_explicit(&storage->refs, 1, memory_order_relaxed);
}

void tf__storage_release(tf_storage *storage)
{
    if (atomic_fetch_sub_explicit(&storage->refs, 1, memory_order_acq_rel) != 1)
        return;
    switch (storage->kind) {
    case TF_STORAGE_HOST_OWNED: break; /* the bytes live in the same block as the storage */
    case TF_STORAGE_HOST_BORROWED:
        if (storage->free.borrowed.fn)
            storage->free.borrowed.fn(storage->free.borrowed.user, storage->host);
        break;
    case TF_STORAGE_ENGINE:
        storage->free.engine(storage); /* the buffer, and the storage's engine reference */
        if (storage->in_block)         /* its first tensor has been released already */
            tf__pool_free(block_of(storage), sizeof(tensor_block));
        else
            tf__pool_free(storage, sizeof *storage); /* engine storages are pooled */
        return;
    }
    tf__free(storage);
}

/* Offset of the data in a host-owned storage block (keeps 64-byte alignment). */
#define STORAGE_DATA_OFFSET ((sizeof(tf_storage) + 63) & ~(size_t)63)

static tf_storage *storage_new_owned(size_t nbytes)
{
    size_t need = nbytes ? nbytes : 1;
    if (need > SIZE_MAX - STORAGE_DATA_OFFSET)
        return NULL;
    tf_storage *s = tf__alloc_aligned(STORAGE_DATA_OFFSET + need, 64);
    if (!s)
        return NULL;
    memset(s, 0, sizeof *s);
    atomic_init(&s->refs, 1);
    s->kind = TF_STORAGE_HOST_OWNED;
    s->host = (char *)s + STORAGE_DATA_OFFSET;
    s->host_accessible = true;
    s->nbytes = nbytes;
    return s;
}

/* Fills a new tensor (refs 1) over storage (not retained: the callers' business). */
static void tensor_init(tf_tensor *t, tf_storage *storage, tf_dtype dtype, size_t rank,
                        const int64_t *shape, const int64_t *strides, int64_t offset, size_t numel)
{
    atomic_init(&t->refs, 1);
    t->dtype = dtype;
    t->rank = (uint32_t)rank;
    /* unused entries stay zero: both arrays are cleared whole (a fixed size, so a
       few vector stores rather than library calls: every op result comes through
       here), then the rank's entries copied in element loops (ranks are small) */
    memset(t->shape, 0, sizeof t->shape);
    memset(t->strides, 0, sizeof t->strides);
    for (size_t d = 0; d < rank; d++)
        t->shape[d] = shape[d];
    if (strides)
        for (size_t d = 0; d < rank; d++)
            t->strides[d] = strides[d];
    else
        tf__dense_strides(rank, shape, t->strides);
    t->offset = offset;
    t->numel = numel;
    t->storage = storage;
}

tf_tensor *tf__tensor_new(tf_storage *storage, tf_dtype dtype, size_t rank, const int64_t *shape,
                          const int64_t *strides, int64_t offset, size_t numel)
{
    tf_tensor *t = tf__pool_alloc(sizeof *t);
    if (!t) {
        tf__error(TF_ERR_OUT_OF_MEMORY, "tensor", NULL, "out of memory allocating a tensor");
        return NULL;
    }
    tensor_init(t, storage, dtype, rank, shape, strides, offset, numel);
    tf__storage_retain(storage);
    return t;
}

tf_tensor *tf__tensor_block_new(tf_dtype dtype, size_t rank, const int64_t *shape, size_t numel)
{
    tensor_block *b = tf__pool_alloc(sizeof *b);
    if (!b)
        return NULL;
    tf_storage *s = &b->storage;
    *s = (tf_storage){.kind = TF_STORAGE_ENGINE, .in_block = true};
    atomic_init(&s->refs, 1); /* the tensor's reference, its only one */
    tensor_init(&b->tensor, s, dtype, rank, shape, NULL, 0, numel);
    return &b->tensor;
}

void tf__tensor_block_discard(tf_tensor *t)
{
    tf__pool_free(t, sizeof(tensor_block));
}

/* ---- creation ---- */

static tf_status check_host_args(const char *op, tf_dtype dtype, size_t rank, const int64_t *shape,
                                 const void *data, size_t count, tf_tensor **out, size_t *numel,
                                 size_t *nbytes)
{
    if (!out)
        return tf__error(TF_ERR_VALIDATION, op, "out", "%s: out is NULL", op);
    tf_status st = tf__shape_check(op, dtype, rank, shape, numel, nbytes);
    if (st)
        return st;
    if (count != *numel)
        return tf__error(TF_ERR_ELEMENT_COUNT, op, "count",
                         "%s: %zu elements given for a shape of %zu elements", op, count, *numel);
    if (!data && count > 0)
        return tf__error(TF_ERR_VALIDATION, op, "data", "%s: data is NULL for %zu elements", op,
                         count);
    return TF_OK;
}

TF_API tf_status tf_tensor_from_host(tf_dtype dtype, size_t rank, const int64_t *shape,
                                     const void *data, size_t count, tf_tensor **out)
{
    size_t numel, nbytes;
    tf_status st =
        check_host_args("tensor_from_host", dtype, rank, shape, data, count, out, &numel, &nbytes);
    if (st)
        return st;
    tf_storage *s = storage_new_owned(nbytes);
    if (!s)
        return tf__error(TF_ERR_OUT_OF_MEMORY, "tensor_from_host", NULL,
                         "tensor_from_host: out of memory for %zu bytes", nbytes);
    if (nbytes)
        memcpy(s->host, data, nbytes);
    tf_tensor *t = tf__tensor_new(s, dtype, rank, shape, NULL, 0, numel);
    tf__storage_release(s);
    if (!t)
        return TF_ERR_OUT_OF_MEMORY;
    *out = t;
    return TF_OK;
}

tf_status tf__tensor_host_empty(tf_dtype dtype, size_t rank, const int64_t *shape, tf_tensor **out)
{
    size_t numel, nbytes;
    tf_status st = tf__shape_check("tensor_host_empty", dtype, rank, shape, &numel, &nbytes);
    if (st)
        return st;
    tf_storage *s = storage_new_owned(nbytes);
    if (!s)
        return tf__error(TF_ERR_OUT_OF_MEMORY, "tensor_host_empty", NULL,
                         "out of memory for %zu bytes", nbytes);
    tf_tensor *t = tf__tensor_new(s, dtype, rank, shape, NULL, 0, numel);
    tf__storage_release(s);
    if (!t)
        return TF_ERR_OUT_OF_MEMORY;
    *out = t;
    return TF_OK;
}

TF_API tf_status tf_tensor_wrap_host(tf_dtype dtype, size_t rank, const int64_t *shape, void *data,
                                     size_t count, tf_release_fn release, void *user,
                                     tf_tensor **out)
{
    size_t numel, nbytes;
    tf_status st =
        check_host_args("tensor_wrap_host", dtype, rank, shape, data, count, out, &numel, &nbytes);
    if (st)
        return st;
    if (!data)
        return tf__error(TF_ERR_VALIDATION, "tensor_wrap_host", "data",
                         "tensor_wrap_host: data is NULL");
    /* Engines load elements in place (and may vectorise on that), so a
       misaligned buffer is refused rather than copied behind the caller's back. */
    size_t align = tf_dtype_align(dtype);
    if ((uintptr_t)data % align != 0)
        return tf__error(TF_ERR_VALIDATION, "tensor_wrap_host", "data",
                         "tensor_wrap_host: data %p is not aligned to %zu bytes, as %s elements "
                         "must be; copy it with tf_tensor_from_host instead",
                         data, align, tf_dtype_name(dtype));
    tf_storage *s = tf__alloc(sizeof *s);
    if (!s)
        return tf__error(TF_ERR_OUT_OF_MEMORY, "tensor_wrap_host", NULL,
                         "tensor_wrap_host: out of memory");
    memset(s, 0, sizeof *s);
    atomic_init(&s->refs, 1);
    s->kind = TF_STORAGE_HOST_BORROWED;
    s->host = data;
    s->host_accessible = data != NULL;
    s->nbytes = nbytes;
    tf_tensor *t = tf__tensor_new(s, dtype, rank, shape, NULL, 0, numel);
    if (!t) {
        tf__free(s); /* release is not called on failure */
        return TF_ERR_OUT_OF_MEMORY;
    }
    /* only now does the storage own the caller's memory */
    s->free.borrowed.fn = release;
    s->free.borrowed.user = user;
    tf__storage_release(s);
    *out = t;
    return TF_OK;
}

TF_API void tf_tensor_retain(tf_tensor *tensor)
{
    if (tensor)
        atomic_fetch_add_explicit(&tensor->refs, 1, memory_order_relaxed);
}

TF_API void tf_tensor_release(tf_tensor *tensor)
{
    if (!tensor)
        return;
    if (atomic_fetch_sub_explicit(&tensor->refs, 1, memory_order_acq_rel) != 1)
        return;
    bool own = in_own_block(tensor); /* then the storage's release frees the tensor too */
    tf__storage_release(tensor->storage);
    if (!own)
        tf__pool_free(tensor, sizeof *tensor);
}

/* ---- metadata ---- */

TF_API tf_dtype tf_tensor_dtype(const tf_tensor *t)
{
    return t->dtype;
}
TF_API size_t tf_tensor_rank(const tf_tensor *t)
{
    return t->rank;
}
TF_API const int64_t *tf_tensor_shape(const tf_tensor *t)
{
    return t->shape;
}
TF_API const int64_t *tf_tensor_strides(const tf_tensor *t)
{
    return t->strides;
}
TF_API int64_t tf_tensor_offset(const tf_tensor *t)
{
    return t->offset;
}
TF_API size_t tf_tensor_numel(const tf_tensor *t)
{
    return t->numel;
}

TF_API int tf_tensor_is_contiguous(const tf_tensor *t)
{
    return tf__strides_dense(t->rank, t->shape, t->strides);
}

TF_API tf_placement tf_tensor_placement(const tf_tensor *t)
{
    return t->storage->kind == TF_STORAGE_ENGINE ? TF_PLACEMENT_ENGINE : TF_PLACEMENT_HOST;
}

TF_API tf_engine *tf_tensor_engine(const tf_tensor *t)
{
    return t->storage->kind == TF_STORAGE_ENGINE ? t->storage->engine : NULL;
}

TF_API int tf_tensor_is_host_accessible(const tf_tensor *t)
{
    return t->storage->host_accessible;
}

TF_API int tf_tensor_shares_storage(const tf_tensor *a, const tf_tensor *b)
{
    return a && b && a->storage == b->storage;
}

/* ---- reading ---- */

static tf_status check_readable(const char *op, const tf_tensor *t, tf_dtype dtype)
{
    if (!t)
        return tf__error(TF_ERR_VALIDATION, op, "tensor", "%s: tensor is NULL", op);
    if (t->dtype != dtype)
        return tf__error(TF_ERR_DTYPE_MISMATCH, op, "dtype", "%s: the tensor holds %s, read as %s",
                         op, tf_dtype_name(t->dtype), tf_dtype_name(dtype));
    if (!t->storage->host_accessible) /* host itself only once current */
        return tf__error(TF_ERR_PLACEMENT, op, "tensor",
                         "%s: the tensor is in an engine's device memory, not the host's; "
                         "download it first (tf_engine_download with tf_tensor_engine(tensor))",
                         op);
    return tf__ready(t); /* a deferred result is computed before it is read */
}

TF_API tf_status tf_tensor_data(const tf_tensor *t, tf_dtype dtype, const void **data,
                                size_t *count)
{
    if (t && (!data || !count)) /* before check_readable computes a pending value */
        return tf__error(TF_ERR_VALIDATION, "tensor_data", data ? "count" : "data",
                         "tensor_data: NULL out-parameter");
    tf_status st = check_readable("tensor_data", t, dtype);
    if (st)
        return st;
    if (!tf__strides_dense(t->rank, t->shape, t->strides))
        return tf__error(TF_ERR_NOT_CONTIGUOUS, "tensor_data", "tensor",
                         "tensor_data: the tensor is a strided view; copy it with "
                         "tf_tensor_copy_to_host or materialise it first");
    /* An empty view's offset may be anything (no element checks it): no
       address is formed from it (tests/fuzz/fuzz_shapes). */
    *data = t->numel ? (const char *)t->storage->host + t->offset * (int64_t)tf_dtype_size(t->dtype)
                     : t->storage->host;
    *count = t->numel;
    return TF_OK;
}

/* Copies elements of a strided host view into dense column-major dst. */
static void gather_strided(const tf_tensor *t, char *dst)
{
    size_t esize = tf_dtype_size(t->dtype);
    const char *base = (const char *)t->storage->host;
    int64_t idx[TF_MAX_RANK] = {0};
    int64_t pos = t->offset;
    for (size_t n = 0; n < t->numel; n++) {
        memcpy(dst + n * esize, base + pos * (int64_t)esize, esize);
        for (uint32_t d = 0; d < t->rank; d++) {
            if (t->shape[d] == 1)
                continue; /* never steps; its stride may be anything (tests/fuzz) */
            pos += t->strides[d];
            if (++idx[d] < t->shape[d])
                break;
            pos -= t->strides[d] * t->shape[d];
            idx[d] = 0;
        }
    }
}

TF_API tf_status tf_tensor_copy_to_host(const tf_tensor *t, tf_dtype dtype, void *dst, size_t count)
{
    tf_status st = check_readable("tensor_copy_to_host", t, dtype);
    if (st)
        return st;
    if (count != t->numel)
        return tf__error(TF_ERR_ELEMENT_COUNT, "tensor_copy_to_host", "count",
                         "tensor_copy_to_host: room for %zu elements, the tensor has %zu", count,
                         t->numel);
    if (!dst && count)
        return tf__error(TF_ERR_VALIDATION, "tensor_copy_to_host", "dst",
                         "tensor_copy_to_host: dst is NULL");
    if (!count)
        return TF_OK;
    size_t esize = tf_dtype_size(t->dtype);
    if (tf__strides_dense(t->rank, t->shape, t->strides))
        memcpy(dst, (const char *)t->storage->host + t->offset * (int64_t)esize, count * esize);
    else
        gather_strided(t, dst);
    return TF_OK;
}

bool tf__tensor_reads_one(const tf_tensor *t)
{
    const tf_storage *st = t->storage;
    if (!st->host_accessible || t->numel == 0 || !tf_dtype_is_float(t->dtype) ||
        atomic_load_explicit(&((tf_storage *)st)->pending, memory_order_acquire))
        return false;
    for (uint32_t k = 0; k < t->rank; k++)
        if (t->shape[k] != 1 && t->strides[k] != 0)
            return false;
    const char *p = (const char *)st->host + (size_t)t->offset * tf_dtype_size(t->dtype);
    if (t->dtype == TF_F32) {
        float v;
        memcpy(&v, p, sizeof v);
        return v == 1.0f;
    }
    double v;
    memcpy(&v, p, sizeof v);
    return v == 1.0;
}
