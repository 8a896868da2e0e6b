/*
 * cpu_iter.c - strided views and the n-d iteration every kernel walks.
 *
 * An iteration takes a few operands of one shape, drops extent-1 axes and
 * merges neighbouring axes whose strides chain for every operand, so that a
 * dense operation becomes a single row and a transposed or sliced one a few
 * long rows. Rows are handed to a row function that holds the vectorisable
 * inner loop. Element offsets are kept as integers and turned into addresses
 * only for elements that exist, so no out-of-object pointer is ever formed.
 * A range of the walk can start anywhere, which is how threads split it.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

void tf__cpu_view_from_operand(cpu_view *v, const tf_operand *op)
{
    v->dtype = op->dtype;
    v->esize = tf_dtype_size((tf_dtype)op->dtype);
    v->rank = (int)op->rank;
    for (int k = 0; k < v->rank; k++) {
        v->shape[k] = op->shape[k];
        v->strides[k] = op->strides[k];
    }
    v->base = op->data;
    /* The offset is applied only when element (0, ...) exists. */
    if (tf__cpu_view_numel(v) > 0) {
        v->base = (char *)op->data + op->offset * (int64_t)v->esize;
    }
}

void tf__cpu_view_dense(cpu_view *v, void *base, uint32_t dtype, int rank, const int64_t *shape)
{
    int64_t stride = 1;
    v->base = base;
    v->dtype = dtype;
    v->esize = tf_dtype_size((tf_dtype)dtype);
    v->rank = rank;
    for (int k = 0; k < rank; k++) {
        v->shape[k] = shape[k];
        v->strides[k] = stride;
        stride *= shape[k] > 0 ? shape[k] : 1;
    }
}

/* Product of the extents, 0 for any zero extent (checked first: the other
   extents of an empty operand may be anything, and their product overflow;
   found by tests/fuzz/fuzz_shapes). */
static int64_t numel_of(int rank, const int64_t *shape)
{
    for (int k = 0; k < rank; k++) {
        if (shape[k] == 0) {
            return 0;
        }
    }
    int64_t n = 1;
    for (int k = 0; k < rank; k++) {
        n *= shape[k];
    }
    return n;
}

int64_t tf__cpu_view_numel(const cpu_view *v)
{
    return numel_of(v->rank, v->shape);
}

int64_t tf__cpu_operand_numel(const tf_operand *op)
{
    return numel_of((int)op->rank, op->shape);
}

int tf__cpu_operand_dense(const tf_operand *op)
{
    /* no elements: any strides describe them */
    return tf__cpu_operand_numel(op) == 0 || tf__cpu_strides_dense(op);
}

void tf__cpu_view_shift(cpu_view *v, int axis, int64_t index)
{
    if (tf__cpu_view_numel(v) > 0 && index < v->shape[axis]) {
        v->base += index * v->strides[axis] * (int64_t)v->esize;
    }
    v->shape[axis] -= index;
}

void tf__cpu_unravel(int64_t linear, int rank, const int64_t *shape, int64_t *idx)
{
    for (int k = 0; k < rank; k++) {
        idx[k] = linear % shape[k];
        linear /= shape[k];
    }
}

int tf__cpu_view_is_injective(const cpu_view *v)
{
    int64_t ext[TF_MAX_RANK], str[TF_MAX_RANK];
    int n = 0;
    for (int k = 0; k < v->rank; k++) {
        if (v->shape[k] == 0) {
            return 1;
        }
        if (v->shape[k] > 1) {
            ext[n] = v->shape[k];
            /* extent > 1: the host bounded |stride| by the memory, so it fits */
            str[n] = (int64_t)tf__cpu_stride_mag(v->strides[k]);
            if (str[n] == 0) {
                return 0;
            }
            n++;
        }
    }
    /* Insertion sort by |stride|; then each stride must clear the span below it. */
    for (int i = 1; i < n; i++) {
        for (int j = i; j > 0 && str[j] < str[j - 1]; j--) {
            int64_t t = str[j];
            str[j] = str[j - 1];
            str[j - 1] = t;
            t = ext[j];
            ext[j] = ext[j - 1];
            ext[j - 1] = t;
        }
    }
    int64_t span = 1;
    for (int i = 0; i < n; i++) {
        if (str[i] < span) {
            return 0;
        }
        span += (ext[i] - 1) * str[i];
    }
    return 1;
}

/* Orders the iteration's axes by operand 0's |stride| (stable). */
static void iter_sort(cpu_iter *it)
{
    for (int i = 1; i < it->rank; i++) {
        for (int j = i; j > 0 && tf__cpu_stride_mag(it->strides[0][j]) < tf__cpu_stride_mag(it->strides[0][j - 1]); j--) {
            int64_t t = it->shape[j];
            it->shape[j] = it->shape[j - 1];
            it->shape[j - 1] = t;
            for (int o = 0; o < it->nops; o++) {
                t = it->strides[o][j];
                it->strides[o][j] = it->strides[o][j - 1];
                it->strides[o][j - 1] = t;
            }
        }
    }
}

/* Merges axis k+1 into axis k wherever every operand's strides chain. */
static void iter_merge(cpu_iter *it)
{
    int out = 0;
    for (int k = 1; k < it->rank; k++) {
        int chain = 1;
        for (int o = 0; o < it->nops; o++) {
            if (it->strides[o][k] != it->strides[o][out] * it->shape[out]) {
                chain = 0;
            }
        }
        if (chain) {
            it->shape[out] *= it->shape[k];
            continue;
        }
        out++;
        it->shape[out] = it->shape[k];
        for (int o = 0; o < it->nops; o++) {
            it->strides[o][out] = it->strides[o][k];
        }
    }
    it->rank = out + 1;
}

void tf__cpu_iter_init(cpu_iter *it, int nops, const cpu_view *const *views, unsigned flags)
{
    const cpu_view *v0 = views[0];
    it->nops = nops;
    it->rank = 0;
    it->total = tf__cpu_view_numel(v0);
    for (int o = 0; o < nops; o++) {
        it->base[o] = views[o]->base;
        it->esize[o] = views[o]->esize;
    }
    for (int k = 0; k < v0->rank; k++) {
        if (v0->shape[k] == 1 && it->total > 0) {
            continue;
        }
        it->shape[it->rank] = v0->shape[k];
        for (int o = 0; o < nops; o++) {
            it->strides[o][it->rank] = views[o]->strides[k];
        }
        it->rank++;
    }
    if (it->rank == 0) {
        it->rank = 1;
        it->shape[0] = 1;
        for (int o = 0; o < nops; o++) {
            it->strides[o][0] = 0;
        }
        return;
    }
    if (it->total == 0) {
        it->rank = 1;
        it->shape[0] = 0;
        for (int o = 0; o < nops; o++) {
            it->strides[o][0] = 0;
        }
        return;
    }
    if (flags & CPU_ITER_SORT) {
        iter_sort(it);
    }
    iter_merge(it);
}

/* Moves the odometer from the start of one row to the start of the next. */
static void iter_next_row(const cpu_iter *it, int64_t *idx, int64_t *off)
{
    for (int o = 0; o < it->nops; o++) {
        off[o] -= idx[0] * it->strides[o][0];
    }
    idx[0] = 0;
    for (int k = 1; k < it->rank; k++) {
        idx[k]++;
        for (int o = 0; o < it->nops; o++) {
            off[o] += it->strides[o][k];
        }
        if (idx[k] < it->shape[k]) {
            return;
        }
        for (int o = 0; o < it->nops; o++) {
            off[o] -= idx[k] * it->strides[o][k];
        }
        idx[k] = 0;
    }
}

int tf__cpu_iter_range(const cpu_iter *it, int64_t begin, int64_t end, cpu_row_fn fn,
                       const void *ctx, cpu_err *err)
{
    int64_t idx[TF_MAX_RANK];
    int64_t off[CPU_MAX_OPS];
    int64_t s0[CPU_MAX_OPS];
    char *p[CPU_MAX_OPS];

    if (begin >= end) {
        return 0;
    }
    tf__cpu_unravel(begin, it->rank, it->shape, idx);
    for (int o = 0; o < it->nops; o++) {
        off[o] = 0;
        for (int k = 0; k < it->rank; k++) {
            off[o] += idx[k] * it->strides[o][k];
        }
        s0[o] = it->strides[o][0];
    }
    for (int64_t pos = begin; pos < end;) {
        int64_t n = it->shape[0] - idx[0];
        n = n < end - pos ? n : end - pos;
        for (int o = 0; o < it->nops; o++) {
            p[o] = it->base[o] + off[o] * (int64_t)it->esize[o];
        }
        if (fn(ctx, n, p, s0, err) != 0) {
            return 1;
        }
        pos += n;
        if (pos < end) {
            iter_next_row(it, idx, off);
        }
    }
    return 0;
}

typedef struct iter_job {
    const cpu_iter *it;
    cpu_row_fn fn;
    const void *ctx;
} iter_job;

static int iter_piece(const void *ctx, int64_t begin, int64_t end, cpu_err *err)
{
    const iter_job *job = ctx;
    return tf__cpu_iter_range(job->it, begin, end, job->fn, job->ctx, err);
}

int tf__cpu_iter_run(const cpu_engine *e, const cpu_iter *it, int64_t grain, cpu_row_fn fn,
                     const void *ctx, cpu_err *err)
{
    if (it->total == 0) {
        return 0;
    }
    iter_job job = {it, fn, ctx};
    return tf__cpu_parallel_for(e, it->total, grain, iter_piece, &job, err);
}
