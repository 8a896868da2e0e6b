/*
 * eager.c - eager tensors: creation, reference counting (iterative, so that
 * dropping a long chain of recorded ops cannot overflow the stack), grad
 * slots, detach.
 */
#include <string.h>

#include "runtime_internal.h"

tf_eager *tf__eager_adopt(tf_runtime *rt, tf_tensor *value, bool tracked)
{
    tf_eager *x = tf__pool_alloc(sizeof *x);
    if (x)
        memset(x, 0, sizeof *x);
    if (!x) {
        tf_tensor_release(value);
        tf__error(TF_ERR_OUT_OF_MEMORY, "eager", NULL, "out of memory allocating an eager tensor");
        return NULL;
    }
    atomic_init(&x->refs, 1);
    tf_runtime_retain(rt);
    x->rt = rt;
    x->value = value;
    x->tracked = tracked;
    return x;
}

tf_eager *tf__eager_new(tf_runtime *rt, tf_tensor *value, bool tracked)
{
    tf_tensor_retain(value);
    return tf__eager_adopt(rt, value, tracked);
}

static tf_status check_new(const char *op, tf_tensor *t, tf_runtime *rt, tf_eager **out)
{
    if (!t || !rt || !out)
        return tf__error(TF_ERR_VALIDATION, op,
                         !t    ? "tensor"
                         : !rt ? "runtime"
                               : "out",
                         "%s: NULL argument", op);
    return TF_OK;
}

TF_API tf_status tf_eager_from_tensor(tf_tensor *t, tf_runtime *rt, tf_eager **out)
{
    tf_status st = check_new("eager_from_tensor", t, rt, out);
    if (st)
        return st;
    tf_eager *x = tf__eager_new(rt, t, false);
    if (!x)
        return TF_ERR_OUT_OF_MEMORY;
    *out = x;
    return TF_OK;
}

static tf_status make_variable(const char *op, tf_tensor *t, tf_runtime *rt, tf_eager **out)
{
    tf_status st = check_new(op, t, rt, out);
    if (st)
        return st;
    if (!tf_dtype_is_inexact(t->dtype))
        return tf__error(TF_ERR_DTYPE_MISMATCH, op, "tensor",
                         "%s: only f32, f64, c64 and c128 tensors can require gradients (got %s)",
                         op, tf_dtype_name(t->dtype));
    tf_grad_slot *slot = tf__calloc(1, sizeof *slot);
    if (!slot)
        return tf__error(TF_ERR_OUT_OF_MEMORY, op, NULL, "%s: out of memory", op);
    if (pthread_mutex_init(&slot->lock, NULL) != 0) {
        tf__free(slot);
        return tf__error(TF_ERR_RUNTIME_STATE, op, NULL, "%s: cannot create a slot lock", op);
    }
    tf_eager *x = tf__eager_new(rt, t, true);
    if (!x) {
        pthread_mutex_destroy(&slot->lock);
        tf__free(slot);
        return TF_ERR_OUT_OF_MEMORY;
    }
    x->slot = slot;
    tf__slot_register(rt, slot);
    *out = x;
    return TF_OK;
}

TF_API tf_status tf_eager_requires_grad(tf_tensor *t, tf_runtime *rt, tf_eager **out)
{
    return make_variable("eager_requires_grad", t, rt, out);
}

TF_API tf_status tf_runtime_variable_from(tf_runtime *rt, tf_tensor *t, tf_eager **out)
{
    return make_variable("variable_from", t, rt, out);
}

TF_API tf_status tf_runtime_constant_from(tf_runtime *rt, tf_tensor *t, tf_eager **out)
{
    tf_status st = check_new("constant_from", t, rt, out);
    if (st)
        return st;
    tf_eager *x = tf__eager_new(rt, t, false);
    if (!x)
        return TF_ERR_OUT_OF_MEMORY;
    *out = x;
    return TF_OK;
}

TF_API void tf_eager_retain(tf_eager *x)
{
    if (x)
        atomic_fetch_add_explicit(&x->refs, 1, memory_order_relaxed);
}

static void free_slot(tf_runtime *rt, tf_grad_slot *slot)
{
    tf__slot_unregister(rt, slot);
    tf_tensor_release(slot->grad);
    pthread_mutex_destroy(&slot->lock);
    tf__free(slot);
}

/*
 * Frees x and every input whose last reference x held, without recursion:
 * dead tensors are chained through their (no longer needed) value pointer.
 */
TF_API void tf_eager_release(tf_eager *x)
{
    if (!x || atomic_fetch_sub_explicit(&x->refs, 1, memory_order_acq_rel) != 1)
        return;
    tf_eager *dead = x;
    tf__lazy_disown(x->value, x);
    tf_tensor_release(x->value);
    x->value = NULL;
    while (dead) {
        tf_eager *e = dead;
        dead = (tf_eager *)e->value; /* the chain link */
        if (e->node) {
            for (uint32_t i = 0; i < e->node->n_inputs; i++) {
                tf_eager *in = e->node->inputs[i];
                /* uncounted first: refs >= tape_refs >= unread_refs always */
                if (i < 7 && (e->node->unread & TF_UNREAD_IN(i)))
                    atomic_fetch_sub_explicit(&in->unread_refs, 1, memory_order_relaxed);
                atomic_fetch_sub_explicit(&in->tape_refs, 1, memory_order_relaxed);
                if (atomic_fetch_sub_explicit(&in->refs, 1, memory_order_acq_rel) == 1) {
                    tf__lazy_disown(in->value, in);
                    tf_tensor_release(in->value);
                    in->value = (tf_tensor *)dead;
                    dead = in;
                }
            }
            if (e->node->inputs != e->node->inline_inputs)
                tf__free(e->node->inputs);
            if (e->node->has_attrs) {
                tf_attrs *a = (tf_attrs *)e->node->attrs;
                if (a->aux)
                    a->aux_release(a->aux); /* a higher layer's reference (tf_attrs) */
                tf__pool_free(a, sizeof(tf_attrs));
            }
        }
        if (e->slot)
            free_slot(e->rt, e->slot);
        tf_runtime_release(e->rt);
        tf__pool_free(e, sizeof *e);
    }
}

int tf__eager_owner_wanted(const void *owner)
{
    const tf_eager *x = owner;
    /* refs first: between the loads refs may only fall (see defer.c), so a
       holder seen by neither count was there; an answer of TAPE that came
       too late only leaves the value pending longer, never changes it */
    size_t refs = atomic_load_explicit(&x->refs, memory_order_acquire);
    bool own = x->node && !(x->node->unread & TF_UNREAD_OUT); /* its own rule reads it */
    if (!own && refs <= atomic_load_explicit(&x->unread_refs, memory_order_acquire))
        return TF_LAZY_UNREAD;
    return refs > atomic_load_explicit(&x->tape_refs, memory_order_acquire) ? TF_LAZY_READ
                                                                            : TF_LAZY_TAPE;
}

TF_API tf_tensor *tf_eager_value(const tf_eager *x)
{
    return x ? x->value : NULL;
}

TF_API tf_status tf_eager_grad(tf_eager *x, tf_tensor **out)
{
    if (!x || !out)
        return tf__error(TF_ERR_VALIDATION, "eager_grad", x ? "out" : "tensor",
                         "eager_grad: NULL argument");
    tf_tensor *g = NULL;
    if (x->slot) {
        pthread_mutex_lock(&x->slot->lock);
        g = x->slot->grad;
        tf_tensor_retain(g);
        pthread_mutex_unlock(&x->slot->lock);
    }
    *out = g;
    return TF_OK;
}

TF_API tf_status tf_eager_clear_grad(tf_eager *x)
{
    if (!x)
        return tf__error(TF_ERR_VALIDATION, "eager_clear_grad", "tensor", "tensor is NULL");
    if (!x->slot)
        return TF_OK;
    pthread_mutex_lock(&x->slot->lock);
    tf_tensor *g = x->slot->grad;
    x->slot->grad = NULL;
    pthread_mutex_unlock(&x->slot->lock);
    tf_tensor_release(g);
    return TF_OK;
}

TF_API int tf_eager_tracks_grad(const tf_eager *x)
{
    return x && x->tracked;
}

TF_API tf_context_id tf_eager_context_id(const tf_eager *x)
{
    return x->rt->id;
}

TF_API int tf_eager_same_context(const tf_eager *a, const tf_eager *b)
{
    return a && b && a->rt == b->rt;
}

TF_API tf_status tf_eager_detach(tf_eager *x, tf_eager **out)
{
    if (!x || !out)
        return tf__error(TF_ERR_VALIDATION, "eager_detach", x ? "out" : "tensor",
                         "eager_detach: NULL argument");
    tf_eager *d = tf__eager_new(x->rt, x->value, false);
    if (!d)
        return TF_ERR_OUT_OF_MEMORY;
    *out = d;
    return TF_OK;
}

/*
 * A copy of the value: host-addressable values are copied on the host; a
 * value in device memory must be downloaded through its engine first.
 */
TF_API tf_status tf_eager_detach_into(tf_eager *x, tf_runtime *rt, tf_eager **out)
{
    const char *op = "eager_detach_into";
    if (!x || !rt || !out)
        return tf__error(TF_ERR_VALIDATION, op,
                         !x    ? "tensor"
                         : !rt ? "runtime"
                               : "out",
                         "%s: NULL argument", op);
    tf_tensor *v = x->value;
    if (!tf_tensor_is_host_accessible(v))
        return tf__error(TF_ERR_PLACEMENT, op, "tensor",
                         "%s: the value is in the device memory of engine '%s'; download it "
                         "(tf_engine_download) and import the host copy",
                         op, tf_engine_name(tf_tensor_engine(v)));
    size_t n = v->numel, esize = tf_dtype_size(v->dtype);
    void *tmp = tf__alloc(n * esize);
    if (!tmp)
        return tf__error(TF_ERR_OUT_OF_MEMORY, op, NULL, "%s: out of memory", op);
    tf_tensor *copy = NULL;
    tf_status st = tf_tensor_copy_to_host(v, v->dtype, tmp, n);
    if (!st)
        st = tf_tensor_from_host(v->dtype, v->rank, v->shape, tmp, n, &copy);
    tf__free(tmp);
    if (st)
        return st;
    tf_eager *d = tf__eager_new(rt, copy, false);
    tf_tensor_release(copy);
    if (!d)
        return TF_ERR_OUT_OF_MEMORY;
    *out = d;
    return TF_OK;
}

uint64_t tf__attrs_hash(uint64_t h, const tf_attrs *a)
{
    for (int k = 0; k < 3; k++)
        h = tf__hash_words(tf__hash_word(h, a->n[k]), a->v[k], TF_MAX_RANK);
    h = tf__hash_words(h, a->i, 2);
    uint64_t fbits;
    memcpy(&fbits, &a->f, sizeof fbits);
    h = tf__hash_word(tf__hash_word(h, fbits), a->mask);
    const tf_dot_dims *d = &a->dot;
    h = tf__hash_word(tf__hash_word(h, d->n_contracting), d->n_batch);
    for (int k = 0; k < TF_MAX_RANK; k++) {
        h = tf__hash_word(h, (uint64_t)(uint32_t)d->lhs_contracting[k] << 32 |
                                 (uint32_t)d->rhs_contracting[k]);
        h = tf__hash_word(h, (uint64_t)(uint32_t)d->lhs_batch[k] << 32 | (uint32_t)d->rhs_batch[k]);
    }
    return h;
}
