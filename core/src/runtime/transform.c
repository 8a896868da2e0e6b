/*
 * transform.c - the AD-transform cache: per-op rule preparations.
 *
 * A rule that needs to derive something from an op's attributes and input
 * metadata before it can run (which axes a broadcast cotangent sums over,
 * the dimension numbers of a transposed contraction, ...) asks for its
 * "transform" here. The result is a small plain struct, built once per
 * (op, attributes, input dtypes and shapes, registry epoch) and kept in the
 * AD context's cache, which runtimes created with the same tf_ad_context
 * share.
 */
#include <string.h>

#include "runtime_internal.h"

static uint64_t transform_key(const tf_runtime *rt, const tf_node *nd, uint32_t variant)
{
    uint64_t h = TF_HASH_SEED;
    tf_epoch epoch = atomic_load(&((tf_runtime *)rt)->epoch);
    h = tf__hash_bytes(h, &epoch, sizeof epoch);
    h = tf__hash_bytes(h, &nd->op, sizeof nd->op);
    h = tf__hash_bytes(h, &variant, sizeof variant);
    if (nd->has_attrs)
        h = tf__attrs_hash(h, nd->attrs);
    for (uint32_t i = 0; i < nd->n_inputs; i++) {
        const tf_tensor *v = nd->inputs[i]->value;
        h = tf__hash_bytes(h, &v->dtype, sizeof v->dtype);
        h = tf__hash_bytes(h, &v->rank, sizeof v->rank);
        h = tf__hash_bytes(h, v->shape, v->rank * sizeof v->shape[0]);
    }
    return h;
}

typedef struct copy_out {
    void *plan;
    size_t size;
} copy_out;

static void copy_plan(const void *value, void *user)
{
    copy_out *c = user;
    memcpy(c->plan, value, c->size);
}

static void free_plan(void *p)
{
    tf__free(p);
}

tf_status tf__ad_transform(tf_session *s, const tf_node *nd, uint32_t variant, size_t size,
                           void (*build)(const tf_node *nd, void *plan), void *plan)
{
    tf_cache *cache = &s->rt->ad->transforms;
    uint64_t key = transform_key(s->rt, nd, variant);
    copy_out c = {plan, size};
    if (tf__cache_get(cache, key, copy_plan, &c))
        return TF_OK;
    build(nd, plan);
    void *keep = tf__alloc(size);
    if (keep) { /* without memory the plan is simply rebuilt next time */
        memcpy(keep, plan, size);
        tf__cache_put(cache, key, keep, size, free_plan);
    }
    return TF_OK;
}
