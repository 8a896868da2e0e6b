/*
 * tensor_view.c - views: new (shape, strides, offset) over the same storage.
 *
 * No data moves here. Every view is checked to address only elements inside
 * its storage, so engines and readers can trust any tensor they are given.
 */
#include <string.h>

#include "tensor_internal.h"

/* Normalises a possibly negative axis; false if out of range. */
static bool norm_axis(int axis, uint32_t rank, uint32_t *out)
{
    int64_t a = axis < 0 ? (int64_t)axis + rank : axis;
    if (a < 0 || a >= (int64_t)rank)
        return false;
    *out = (uint32_t)a;
    return true;
}

static tf_status axis_error(const char *op, const char *arg, int axis, uint32_t rank)
{
    return tf__error(TF_ERR_AXIS_OUT_OF_BOUNDS, op, arg,
                     "%s: axis %d is out of bounds for rank %u", op, axis, rank);
}

/* Checks a view against its storage and creates it. */
static tf_status make_view(const char *op, const tf_tensor *t, size_t rank, const int64_t *shape,
                           const int64_t *strides, int64_t offset, tf_tensor **out)
{
    size_t numel, nbytes;
    tf_status st = tf__shape_check(op, t->dtype, rank, shape, &numel, &nbytes);
    if (st)
        return st;
    int64_t dense[TF_MAX_RANK]; /* outlives the check: tf__tensor_new reads it */
    if (numel > 0) {
        if (!strides) {
            tf__dense_strides(rank, shape, dense);
            strides = dense;
        }
        /* spans are bounded by the storage size, so check each term first */
        int64_t elems = (int64_t)(t->storage->nbytes / tf_dtype_size(t->dtype));
        for (size_t i = 0; i < rank; i++) {
            int64_t s = strides[i] == INT64_MIN ? INT64_MAX
                        : strides[i] < 0        ? -strides[i]
                                                : strides[i];
            if (shape[i] > 1 && s > 0 && (s > elems || shape[i] - 1 > elems / s))
                return tf__error(TF_ERR_OUT_OF_RANGE, op, "strides",
                                 "%s: stride %lld of axis %zu reaches outside the storage of "
                                 "%lld elements",
                                 op, (long long)strides[i], i, (long long)elems);
        }
        int64_t lo = offset, hi = offset; /* offset first: offset + reach must not overflow */
        if (offset >= 0 && offset < elems)
            tf__view_extent(rank, shape, strides, offset, &lo, &hi);
        if (offset < 0 || offset >= elems || lo < 0 || hi >= elems)
            return tf__error(TF_ERR_OUT_OF_RANGE, op, "offset",
                             "%s: the view addresses elements %lld..%lld, the storage holds "
                             "0..%lld",
                             op, (long long)lo, (long long)hi, (long long)elems - 1);
    }
    tf_tensor *v = tf__tensor_new(t->storage, t->dtype, rank, shape, strides, offset, numel);
    if (!v)
        return TF_ERR_OUT_OF_MEMORY;
    *out = v;
    return TF_OK;
}

static tf_status check_in_out(const char *op, const tf_tensor *t, tf_tensor **out)
{
    if (!t)
        return tf__error(TF_ERR_VALIDATION, op, "tensor", "%s: tensor is NULL", op);
    if (!out)
        return tf__error(TF_ERR_VALIDATION, op, "out", "%s: out is NULL", op);
    return TF_OK;
}

TF_API tf_status tf_tensor_view(const tf_tensor *t, size_t rank, const int64_t *shape,
                                const int64_t *strides, int64_t offset, tf_tensor **out)
{
    tf_status st = check_in_out("tensor_view", t, out);
    if (st)
        return st;
    return make_view("tensor_view", t, rank, shape, strides, offset, out);
}

TF_API tf_status tf_tensor_reshape(const tf_tensor *t, size_t rank, const int64_t *shape,
                                   tf_tensor **out)
{
    const char *op = "tensor_reshape";
    tf_status st = check_in_out(op, t, out);
    if (st)
        return st;
    size_t numel, nbytes;
    st = tf__shape_check(op, t->dtype, rank, shape, &numel, &nbytes);
    if (st)
        return st;
    if (numel != t->numel)
        return tf__error(TF_ERR_ELEMENT_COUNT, op, "shape",
                         "%s: cannot reshape %zu elements into a shape of %zu", op, t->numel,
                         numel);
    if (!tf__strides_dense(t->rank, t->shape, t->strides))
        return tf__error(TF_ERR_NOT_CONTIGUOUS, op, "tensor",
                         "%s: the tensor is a strided view; materialise it (COPY) first", op);
    return make_view(op, t, rank, shape, NULL, numel ? t->offset : 0, out);
}

TF_API tf_status tf_tensor_transpose(const tf_tensor *t, const int *perm, tf_tensor **out)
{
    const char *op = "tensor_transpose";
    tf_status st = check_in_out(op, t, out);
    if (st)
        return st;
    if (!perm && t->rank)
        return tf__error(TF_ERR_VALIDATION, op, "perm", "%s: perm is NULL", op);
    int64_t shape[TF_MAX_RANK], strides[TF_MAX_RANK];
    bool seen[TF_MAX_RANK] = {false};
    for (uint32_t i = 0; i < t->rank; i++) {
        uint32_t a;
        if (!norm_axis(perm[i], t->rank, &a))
            return axis_error(op, "perm", perm[i], t->rank);
        if (seen[a])
            return tf__error(TF_ERR_VALIDATION, op, "perm",
                             "%s: axis %u appears twice in perm", op, a);
        seen[a] = true;
        shape[i] = t->shape[a];
        strides[i] = t->strides[a];
    }
    return make_view(op, t, t->rank, shape, strides, t->offset, out);
}

TF_API tf_status tf_tensor_slice(const tf_tensor *t, const int64_t *start, const int64_t *limit,
                                 const int64_t *stride, tf_tensor **out)
{
    const char *op = "tensor_slice";
    tf_status st = check_in_out(op, t, out);
    if (st)
        return st;
    if (t->rank && (!start || !limit || !stride))
        return tf__error(TF_ERR_VALIDATION, op, !start ? "start" : !limit ? "limit" : "stride",
                         "%s: NULL bounds", op);
    int64_t shape[TF_MAX_RANK], strides[TF_MAX_RANK];
    int64_t offset = t->offset;
    for (uint32_t i = 0; i < t->rank; i++) {
        if (stride[i] < 1)
            return tf__error(TF_ERR_VALIDATION, op, "stride",
                             "%s: stride %lld of axis %u is not >= 1", op, (long long)stride[i], i);
        if (start[i] < 0 || start[i] > limit[i] || limit[i] > t->shape[i])
            return tf__error(TF_ERR_OUT_OF_RANGE, op, "start",
                             "%s: axis %u: start %lld, limit %lld outside 0..%lld", op, i,
                             (long long)start[i], (long long)limit[i], (long long)t->shape[i]);
        int64_t len = limit[i] - start[i];
        shape[i] = len / stride[i] + (len % stride[i] != 0);
        /* The products below overflow only where they address no element:
           an axis of at most one element (any stride will do there) or an
           empty tensor, whose strides and offset may be anything (found by
           tests/fuzz/fuzz_shapes). */
        if (__builtin_mul_overflow(t->strides[i], stride[i], &strides[i]))
            strides[i] = t->strides[i];
        if (shape[i] > 0 && t->numel > 0)
            offset += start[i] * t->strides[i];
    }
    return make_view(op, t, t->rank, shape, strides, offset, out);
}

TF_API tf_status tf_tensor_broadcast_in_dim(const tf_tensor *t, size_t rank, const int64_t *shape,
                                            const int *dims, tf_tensor **out)
{
    const char *op = "tensor_broadcast_in_dim";
    tf_status st = check_in_out(op, t, out);
    if (st)
        return st;
    if (rank > TF_MAX_RANK)
        return tf__error(TF_ERR_RANK_TOO_LARGE, op, "rank", "%s: rank %zu exceeds %d", op, rank,
                         TF_MAX_RANK);
    if (t->rank > rank)
        return tf__error(TF_ERR_SHAPE_MISMATCH, op, "shape",
                         "%s: cannot broadcast rank %u to rank %zu", op, t->rank, rank);
    /* both read below before make_view's own shape check */
    if (rank && !shape)
        return tf__error(TF_ERR_VALIDATION, op, "shape", "%s: shape is NULL for rank %zu", op,
                         rank);
    if (t->rank && !dims)
        return tf__error(TF_ERR_VALIDATION, op, "dims", "%s: dims is NULL", op);
    int64_t strides[TF_MAX_RANK] = {0};
    for (uint32_t i = 0; i < t->rank; i++) {
        if (dims[i] < 0 || (size_t)dims[i] >= rank)
            return axis_error(op, "dims", dims[i], (uint32_t)rank);
        if (i > 0 && dims[i] <= dims[i - 1])
            return tf__error(TF_ERR_VALIDATION, op, "dims",
                             "%s: dims must be strictly increasing", op);
        int64_t want = shape[dims[i]];
        if (t->shape[i] != 1 && t->shape[i] != want)
            return tf__error(TF_ERR_SHAPE_MISMATCH, op, "shape",
                             "%s: operand axis %u has extent %lld, output axis %d has %lld", op,
                             i, (long long)t->shape[i], dims[i], (long long)want);
        strides[dims[i]] = t->shape[i] == 1 ? 0 : t->strides[i];
    }
    return make_view(op, t, rank, shape, strides, t->offset, out);
}

TF_API tf_status tf_tensor_reverse(const tf_tensor *t, size_t n_axes, const int *axes,
                                   tf_tensor **out)
{
    const char *op = "tensor_reverse";
    tf_status st = check_in_out(op, t, out);
    if (st)
        return st;
    if (n_axes && !axes)
        return tf__error(TF_ERR_VALIDATION, op, "axes", "%s: axes is NULL", op);
    int64_t strides[TF_MAX_RANK];
    memcpy(strides, t->strides, sizeof strides);
    int64_t offset = t->offset;
    bool seen[TF_MAX_RANK] = {false};
    for (size_t i = 0; i < n_axes; i++) {
        uint32_t a;
        if (!norm_axis(axes[i], t->rank, &a))
            return axis_error(op, "axes", axes[i], t->rank);
        if (seen[a])
            return tf__error(TF_ERR_VALIDATION, op, "axes", "%s: axis %u listed twice", op, a);
        seen[a] = true;
        if (t->numel == 0)
            continue; /* nothing to flip; the strides of an empty view may be
                         anything, even INT64_MIN (tests/fuzz/fuzz_shapes) */
        offset += (t->shape[a] - 1) * t->strides[a];
        /* INT64_MIN only on an axis of one element, where the sign is moot */
        strides[a] = t->strides[a] == INT64_MIN ? INT64_MIN : -t->strides[a];
    }
    return make_view(op, t, t->rank, t->shape, strides, offset, out);
}

TF_API tf_status tf_tensor_diagonal(const tf_tensor *t, int a, int b, tf_tensor **out)
{
    const char *op = "tensor_diagonal";
    tf_status st = check_in_out(op, t, out);
    if (st)
        return st;
    uint32_t ua, ub;
    if (!norm_axis(a, t->rank, &ua))
        return axis_error(op, "a", a, t->rank);
    if (!norm_axis(b, t->rank, &ub))
        return axis_error(op, "b", b, t->rank);
    if (ua == ub)
        return tf__error(TF_ERR_VALIDATION, op, "b", "%s: the two axes are the same (%u)", op,
                         ua);
    int64_t shape[TF_MAX_RANK], strides[TF_MAX_RANK];
    uint32_t r = 0;
    for (uint32_t i = 0; i < t->rank; i++) {
        if (i == ua || i == ub)
            continue;
        shape[r] = t->shape[i];
        strides[r++] = t->strides[i];
    }
    shape[r] = t->shape[ua] < t->shape[ub] ? t->shape[ua] : t->shape[ub];
    /* The sum overflows only where no element uses it: an axis of one
       element, or an empty tensor, may have any stride (tests/fuzz/fuzz_shapes). */
    if (__builtin_add_overflow(t->strides[ua], t->strides[ub], &strides[r]))
        strides[r] = t->strides[ua];
    r++;
    return make_view(op, t, r, shape, strides, t->offset, out);
}
