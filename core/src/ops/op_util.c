/*
 * op_util.c - what every op implementation shares: argument checks, engine
 * calls, NumPy broadcasting, axis lists, recording on the tape, and the
 * small differentiable building blocks that AD rules are written with.
 */
#include <math.h>
#include <string.h>

#include "ops_internal.h"

/* ---- recording ---- */

/* All-zero attributes, shared by every node recorded without any. */
static const tf_attrs no_attrs;

/* Fills the node of result `value`; false on OOM (nothing retained then). */
static bool node_init(tf_node *node, uint32_t op, const tf_attrs *attrs, tf_eager *const *inputs,
                      uint32_t n, const tf_tensor *value, bool capture)
{
    node->op = (uint16_t)op;
    node->n_inputs = (uint16_t)n;
    node->dtype = (uint8_t)value->dtype;
    node->like_out = 0;
    for (uint32_t i = 0; i < n && i < 8; i++)
        node->like_out |= (uint8_t)((inputs[i]->value->dtype == value->dtype &&
                                     tf__same_shape(inputs[i]->value, value))
                                    << i);
    node->has_attrs = attrs != NULL;
    /* a capture is replayed with its recorded values: it reads them all */
    node->unread = capture ? 0 : tf__op_rule(op)->unread;
    node->inputs = node->inline_inputs;
    node->attrs = &no_attrs;
    if (n > 3 && !(node->inputs = tf__calloc(n, sizeof *node->inputs)))
        return false;
    if (attrs) {
        tf_attrs *a = tf__pool_alloc(sizeof *a);
        if (!a) {
            if (node->inputs != node->inline_inputs)
                tf__free(node->inputs);
            return false;
        }
        *a = *attrs;
        node->attrs = a;
    }
    for (uint32_t i = 0; i < n; i++) {
        tf_eager_retain(inputs[i]); /* before counting it: refs >= tape_refs >= unread_refs */
        atomic_fetch_add_explicit(&inputs[i]->tape_refs, 1, memory_order_relaxed);
        if (i < 7 && (node->unread & TF_UNREAD_IN(i)))
            atomic_fetch_add_explicit(&inputs[i]->unread_refs, 1, memory_order_relaxed);
        node->inputs[i] = inputs[i];
    }
    return true;
}

tf_status tf__record(tf_session *s, uint32_t op, const tf_attrs *attrs, tf_eager *const *inputs,
                     uint32_t n_inputs, tf_tensor *value, tf_eager **out)
{
    if (n_inputs > UINT16_MAX) {
        tf_tensor_release(value);
        return tf__error(TF_ERR_VALIDATION, tf__op_rule(op)->name, "inputs",
                         "%s: more than %u inputs", tf__op_rule(op)->name, UINT16_MAX);
    }
    bool rec = tf__recording(s->rt);
    bool tracked = false;
    for (uint32_t i = 0; rec && i < n_inputs; i++)
        tracked = tracked || inputs[i]->tracked;
    bool capture = rec && tf__capturing(s->rt);
    bool keep_node = rec && (tracked || capture);
    /* x takes over the caller's reference to value (released with the error) */
    tf_eager *x = tf__eager_adopt(s->rt, value, tracked);
    if (!x)
        return TF_ERR_OUT_OF_MEMORY;
    tf__lazy_adopt(x->value, x); /* a deferred result: its batch asks x who reads it */
    if (keep_node && !node_init(&x->node_store, op, attrs, inputs, n_inputs, x->value, capture)) {
        tf_eager_release(x);
        return tf__error(TF_ERR_OUT_OF_MEMORY, tf__op_rule(op)->name, NULL,
                         "%s: out of memory recording the op", tf__op_rule(op)->name);
    }
    if (keep_node)
        x->node = &x->node_store;
    *out = x;
    return TF_OK;
}

tf_status tf__check_inputs(const char *op, tf_session *s, tf_eager *const *xs, size_t n,
                           const char *const *names, tf_eager **out)
{
    if (!s)
        return tf__error(TF_ERR_VALIDATION, op, "session", "%s: session is NULL", op);
    if (!out)
        return tf__error(TF_ERR_VALIDATION, op, "out", "%s: out is NULL", op);
    for (size_t i = 0; i < n; i++) {
        if (!xs[i])
            return tf__null_arg(op, names[i]);
        if (xs[i]->rt != s->rt)
            return tf__error(TF_ERR_CONTEXT_MISMATCH, op, names[i],
                             "%s: %s belongs to runtime %llu, the session to runtime %llu; move "
                             "it with tf_eager_detach_into (or import its value with "
                             "tf_runtime_constant_from) first",
                             op, names[i], (unsigned long long)xs[i]->rt->id,
                             (unsigned long long)s->rt->id);
    }
    return TF_OK;
}

/* ---- engine calls ---- */

tf_status tf__empty(tf_session *s, tf_dtype dtype, size_t rank, const int64_t *shape,
                    tf_tensor **out)
{
    return tf_tensor_empty(s->engine, dtype, rank, shape, out);
}

tf_status tf__exec(tf_session *s, tf_prim prim, const void *params, size_t n_in,
                   tf_tensor *const *in, tf_tensor *out)
{
    return tf_engine_execute(s->engine, prim, params, n_in, in, 1, &out);
}

tf_status tf__exec_new(tf_session *s, tf_prim prim, const void *params, size_t n_in,
                       tf_tensor *const *in, tf_dtype dtype, size_t rank, const int64_t *shape,
                       tf_tensor **out)
{
    tf_tensor *t;
    tf_status st = tf__empty(s, dtype, rank, shape, &t);
    if (!st && (st = tf__exec(s, prim, params, n_in, in, t)))
        tf_tensor_release(t);
    if (!st)
        *out = t;
    return st;
}

tf_status tf__null_arg(const char *op, const char *arg)
{
    return tf__error(TF_ERR_VALIDATION, op, arg, "%s: %s is NULL", op, arg);
}

/* ---- broadcasting ---- */

/* Whether every tensor of xs has xs[0]'s shape (the common case of eager code). */
static bool shapes_equal(tf_tensor *const *xs, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (!tf__same_shape(xs[i], xs[0]))
            return false;
    return true;
}

tf_status tf__broadcast_shapes(const char *op, tf_tensor *const *xs, size_t n, int64_t *shape,
                               size_t *rank)
{
    if (n > 0 && shapes_equal(xs, n)) {
        for (uint32_t d = 0; d < xs[0]->rank; d++)
            shape[d] = xs[0]->shape[d];
        *rank = xs[0]->rank;
        return TF_OK;
    }
    size_t r = 0;
    for (size_t i = 0; i < n; i++)
        if (xs[i]->rank > r)
            r = xs[i]->rank;
    for (size_t d = 0; d < r; d++)
        shape[d] = 1;
    for (size_t i = 0; i < n; i++) {
        const tf_tensor *x = xs[i];
        size_t lead = r - x->rank;
        for (size_t d = 0; d < x->rank; d++) {
            int64_t e = x->shape[d], *o = &shape[lead + d];
            if (e == *o || e == 1)
                continue;
            if (*o != 1)
                return tf__error(TF_ERR_SHAPE_MISMATCH, op, NULL,
                                 "%s: operand %zu has extent %lld on its axis %zu, which does "
                                 "not broadcast against %lld",
                                 op, i, (long long)e, d, (long long)*o);
            *o = e;
        }
    }
    *rank = r;
    return TF_OK;
}

tf_status tf__broadcast_view(const tf_tensor *x, size_t rank, const int64_t *shape, tf_tensor **out)
{
    int dims[TF_MAX_RANK];
    for (uint32_t i = 0; i < x->rank; i++)
        dims[i] = (int)(rank - x->rank + i);
    return tf_tensor_broadcast_in_dim(x, rank, shape, dims, out);
}

/* ---- axes ---- */

tf_status tf__norm_axis(const char *op, const char *arg, int axis, uint32_t rank, uint32_t *out)
{
    int64_t a = axis < 0 ? (int64_t)axis + rank : axis;
    if (a < 0 || a >= (int64_t)rank)
        return tf__error(TF_ERR_AXIS_OUT_OF_BOUNDS, op, arg,
                         "%s: axis %d is out of bounds for rank %u", op, axis, rank);
    *out = (uint32_t)a;
    return TF_OK;
}

tf_status tf__axes_mask(const char *op, const int *axes, size_t n_axes, uint32_t rank,
                        uint64_t *mask)
{
    if (!axes) {
        *mask = rank ? (rank >= 64 ? ~0ull : (1ull << rank) - 1) : 0;
        return TF_OK;
    }
    uint64_t m = 0;
    for (size_t i = 0; i < n_axes; i++) {
        uint32_t a = 0;
        tf_status st = tf__norm_axis(op, "axes", axes[i], rank, &a);
        if (st)
            return st;
        if (m >> a & 1)
            return tf__error(TF_ERR_VALIDATION, op, "axes", "%s: axis %u listed twice", op, a);
        m |= 1ull << a;
    }
    *mask = m;
    return TF_OK;
}

/* ---- differentiable building blocks for rules ---- */

tf_status tf__scalar_like(tf_session *s, const tf_eager *like, double value, tf_eager **out)
{
    return tf_session_full(s, like->value->dtype, 0, NULL, value, out);
}

tf_status tf__zeros_like(tf_session *s, const tf_eager *like, tf_eager **out)
{
    return tf_session_full(s, like->value->dtype, like->value->rank, like->value->shape, 0.0, out);
}

tf_status tf__sum_to_shape(tf_session *s, tf_eager *x, size_t rank, const int64_t *shape,
                           tf_eager **out)
{
    const tf_tensor *v = x->value;
    size_t lead = v->rank - rank;
    int axes[TF_MAX_RANK];
    size_t n = 0;
    for (size_t d = 0; d < v->rank; d++)
        if (d < lead || (shape[d - lead] == 1 && v->shape[d] != 1))
            axes[n++] = (int)d;
    if (n == 0 && v->rank == rank) {
        tf_eager_retain(x);
        *out = x;
        return TF_OK;
    }
    tf_eager *sum;
    tf_status st = tf_session_reduce_sum(s, x, axes, n, &sum);
    if (st)
        return st;
    st = tf_session_reshape(s, sum, rank, shape, out);
    tf_eager_release(sum);
    return st;
}

/*
 * Whether `acc + b` may be written over acc's own memory: the sum would be an
 * untracked, unrecorded tensor of acc's dtype and shape, and acc, its value
 * and that value's memory are referenced by the caller alone (so no one can
 * see the change, and b - holding references of its own - cannot overlap
 * it). Backward's private cotangent sums are the case this serves.
 *
 * This is the core's one test of the in-place rule (docs/runtime.md,
 * "Writing in place"): only the holder of the only counted reference to an
 * eager tensor, its tensor and its storage may write it, and only one who
 * owns that reference (a caller passing a borrowed acc must not ask). A
 * deferred batch holds references to what it reads and writes, so its
 * memory fails the counts too; tf__ready_write runs the batches that read
 * memory before any write into it.
 */
bool tf__can_add_in_place(tf_session *s, const tf_eager *acc, const tf_eager *b)
{
    const tf_tensor *a = acc->value, *v = b->value;
    const tf_storage *st = a->storage;
    if (atomic_load_explicit(&acc->refs, memory_order_acquire) != 1 ||
        atomic_load_explicit(&a->refs, memory_order_acquire) != 1 ||
        atomic_load_explicit(&st->refs, memory_order_acquire) != 1)
        return false;
    if (acc->tracked || acc->node || acc->slot || acc->rt != s->rt || b->rt != s->rt)
        return false;
    if (st->kind != TF_STORAGE_ENGINE || st->engine != s->engine || !tf__engine_in_place(s->engine))
        return false;
    if (a->dtype != v->dtype || !tf_dtype_is_float(a->dtype) || !tf__same_shape(a, v))
        return false;
    if (!tf__strides_dense(a->rank, a->shape, a->strides))
        return false;
    /* tf_session_add would record a node (and track the sum) in these cases */
    return !(tf__recording(s->rt) && (b->tracked || tf__capturing(s->rt)));
}

/*
 * The one place a cotangent sum writes in place. `take`: the caller hands
 * over its reference to b, so b's memory may be written when that reference
 * is the only one left; otherwise b is borrowed and only *acc's memory may
 * be (see "Writing in place" in docs/runtime.md).
 */
static tf_status accumulate(tf_session *s, tf_eager **acc, tf_eager *b, bool take)
{
    if (!*acc) {
        if (!take)
            tf_eager_retain(b);
        *acc = b;
        return TF_OK;
    }
    tf_binary_params p = {sizeof p, TF_BINARY_ADD};
    tf_status st;
    /*
     * A term the session's open batch still computes (a rule's deferred
     * result) joins that batch as one more step: summed in place, it would
     * make the batch run now, and be written only to be read back at once.
     */
    bool pending =
        tf__lazy_in_batch(&s->lazy, b->value) || tf__lazy_in_batch(&s->lazy, (*acc)->value);
    if (!pending && tf__can_add_in_place(s, *acc, b)) {
        tf_tensor *in[2] = {(*acc)->value, b->value};
        st = tf__engine_execute_in_place(s->engine, TF_PRIM_BINARY, &p, 2, in);
    } else if (take && !pending && tf__can_add_in_place(s, b, *acc)) {
        /*
         * The other way round (float addition commutes exactly): the running
         * sum may be a view no one can write (backward's first cotangent is
         * often a broadcast of the seed), while b is the fresh, private
         * result of a rule. Only a reference handed over makes b's count of
         * one mean "no one else": a borrowed b is counted by its owner, who
         * may still read it (a rule passing one cotangent to two inputs).
         */
        tf_tensor *in[2] = {b->value, (*acc)->value};
        st = tf__engine_execute_in_place(s->engine, TF_PRIM_BINARY, &p, 2, in);
        if (!st) {
            tf_eager_release(*acc);
            *acc = b;
            return TF_OK;
        }
    } else {
        tf_eager *sum;
        st = tf_session_add(s, *acc, b, &sum);
        if (!st) {
            tf_eager_release(*acc);
            *acc = sum;
        }
    }
    if (take)
        tf_eager_release(b);
    return st;
}

tf_status tf__accumulate(tf_session *s, tf_eager **acc, tf_eager *b)
{
    return accumulate(s, acc, b, false);
}

tf_status tf__accumulate_take(tf_session *s, tf_eager **acc, tf_eager *b)
{
    return accumulate(s, acc, b, true);
}
