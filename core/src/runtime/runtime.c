/*
 * runtime.c - runtimes and AD contexts: identity, reference counting, the
 * caches and their limits, and the registry of live grad slots.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime_internal.h"

#define DEFAULT_PREPARED_ENTRIES 256
#define DEFAULT_TRANSFORM_ENTRIES 1024

static _Atomic tf_context_id g_next_id = 1;

/* ---- AD context ---- */

TF_API tf_status tf_ad_context_create(tf_ad_context **out)
{
    if (!out)
        return tf__error(TF_ERR_VALIDATION, "ad_context_create", "out", "out is NULL");
    tf_ad_context *ad = tf__calloc(1, sizeof *ad);
    if (!ad)
        return tf__error(TF_ERR_OUT_OF_MEMORY, "ad_context_create", NULL, "out of memory");
    tf_status st = tf__cache_init(&ad->transforms, DEFAULT_TRANSFORM_ENTRIES);
    if (st) {
        tf__free(ad);
        return st;
    }
    atomic_init(&ad->refs, 1);
    *out = ad;
    return TF_OK;
}

TF_API void tf_ad_context_retain(tf_ad_context *ad)
{
    if (ad)
        atomic_fetch_add_explicit(&ad->refs, 1, memory_order_relaxed);
}

TF_API void tf_ad_context_release(tf_ad_context *ad)
{
    if (!ad || atomic_fetch_sub_explicit(&ad->refs, 1, memory_order_acq_rel) != 1)
        return;
    tf__cache_destroy(&ad->transforms);
    tf__free(ad);
}

/* ---- runtime ---- */

/*
 * TENFERRO_DEFER (off, auto, always): the mode the runtime's sessions begin
 * in (docs/runtime.md), for bisecting a problem or exercising an engine's
 * FUSED; unset or empty: TF_DEFER_AUTO. Any other value is an error.
 */
static tf_status env_defer_mode(tf_defer_mode *mode)
{
    static const char *const names[] = {"off", "auto", "always"};
    const char *env = getenv("TENFERRO_DEFER");
    *mode = TF_DEFER_AUTO;
    if (!env || !*env)
        return TF_OK;
    for (int m = 0; m < 3; m++)
        if (strcmp(env, names[m]) == 0) {
            *mode = (tf_defer_mode)m;
            return TF_OK;
        }
    return tf__error(TF_ERR_CONFIG, "runtime_create", NULL,
                     "TENFERRO_DEFER: expected off, auto or always, got '%s'", env);
}

TF_API tf_status tf_runtime_create_with_ad_context(tf_ad_context *ad, tf_runtime **out)
{
    if (!ad || !out)
        return tf__error(TF_ERR_VALIDATION, "runtime_create", ad ? "out" : "ad",
                         "runtime_create: NULL argument");
    tf_defer_mode defer_default;
    tf_status env = env_defer_mode(&defer_default);
    if (env)
        return env;
    tf_runtime *rt = tf__calloc(1, sizeof *rt);
    if (!rt)
        return tf__error(TF_ERR_OUT_OF_MEMORY, "runtime_create", NULL, "out of memory");
    tf_status st = tf__cache_init(&rt->prepared, DEFAULT_PREPARED_ENTRIES);
    if (st == TF_ERR_OUT_OF_MEMORY) { /* already reported as such */
        tf__free(rt);
        return st;
    }
    if (st) {
        tf__free(rt);
        return tf__error(TF_ERR_RUNTIME_STATE, "runtime_create", NULL,
                         "the prepared-derivative cache cannot be configured: %s",
                         tf_error_message());
    }
    if (pthread_mutex_init(&rt->slots_lock, NULL) != 0) {
        tf__cache_destroy(&rt->prepared);
        tf__free(rt);
        return tf__error(TF_ERR_RUNTIME_STATE, "runtime_create", NULL,
                         "cannot initialise the grad-slot lock");
    }
    atomic_init(&rt->refs, 1);
    rt->id = atomic_fetch_add(&g_next_id, 1);
    tf_ad_context_retain(ad);
    rt->ad = ad;
    atomic_init(&rt->epoch, 0);
    atomic_init(&rt->ext, NULL);
    rt->defer = defer_default;
    *out = rt;
    return TF_OK;
}

TF_API tf_status tf_runtime_create(tf_runtime **out)
{
    if (!out)
        return tf__error(TF_ERR_VALIDATION, "runtime_create", "out", "out is NULL");
    tf_ad_context *ad;
    tf_status st = tf_ad_context_create(&ad);
    if (st)
        return st;
    st = tf_runtime_create_with_ad_context(ad, out);
    tf_ad_context_release(ad);
    return st;
}

TF_API void tf_runtime_retain(tf_runtime *rt)
{
    if (rt)
        atomic_fetch_add_explicit(&rt->refs, 1, memory_order_relaxed);
}

TF_API void tf_runtime_release(tf_runtime *rt)
{
    if (!rt || atomic_fetch_sub_explicit(&rt->refs, 1, memory_order_acq_rel) != 1)
        return;
    /* every variable retains its runtime, so no slot can still be registered */
    tf__cache_destroy(&rt->prepared);
    tf_rt_ext *ext = atomic_load_explicit(&rt->ext, memory_order_acquire);
    if (ext)
        ext->hooks->destroy(ext);
    tf_ad_context_release(rt->ad);
    pthread_mutex_destroy(&rt->slots_lock);
    tf__free(rt);
}

TF_API size_t tf_runtime_ref_count(const tf_runtime *rt)
{
    return atomic_load(&((tf_runtime *)rt)->refs);
}

TF_API tf_context_id tf_runtime_id(const tf_runtime *rt)
{
    return rt->id;
}

TF_API tf_epoch tf_runtime_epoch(const tf_runtime *rt)
{
    return atomic_load(&((tf_runtime *)rt)->epoch);
}

/* ---- caches ---- */

static tf_status check_rt(const char *op, tf_runtime *rt, const void *arg, const char *name)
{
    if (!rt)
        return tf__error(TF_ERR_VALIDATION, op, "runtime", "%s: runtime is NULL", op);
    if (!arg)
        return tf__error(TF_ERR_VALIDATION, op, name, "%s: %s is NULL", op, name);
    return TF_OK;
}

TF_API tf_status tf_runtime_clear_caches(tf_runtime *rt)
{
    tf_status st = check_rt("clear_caches", rt, rt, "runtime");
    if (st)
        return st;
    tf__cache_clear(&rt->prepared);
    tf__cache_clear(&rt->ad->transforms);
    tf_rt_ext *ext = atomic_load_explicit(&rt->ext, memory_order_acquire);
    if (ext)
        ext->hooks->cache_clear(ext);
    return TF_OK;
}

TF_API tf_status tf_runtime_clear_prepared_derivative_cache(tf_runtime *rt)
{
    tf_status st = check_rt("clear_prepared_derivative_cache", rt, rt, "runtime");
    if (!st)
        tf__cache_clear(&rt->prepared);
    return st;
}

TF_API tf_status tf_runtime_clear_ad_transform_caches(tf_runtime *rt)
{
    tf_status st = check_rt("clear_ad_transform_caches", rt, rt, "runtime");
    if (!st)
        tf__cache_clear(&rt->ad->transforms);
    return st;
}

TF_API tf_status tf_runtime_cache_stats(tf_runtime *rt, tf_runtime_stats *out)
{
    tf_status st = check_rt("cache_stats", rt, out, "out");
    if (st)
        return st;
    tf__cache_stats(&rt->ad->transforms, &out->ad_transforms);
    tf__cache_stats(&rt->prepared, &out->prepared_derivatives);
    tf_rt_ext *ext = atomic_load_explicit(&rt->ext, memory_order_acquire);
    memset(&out->extensions, 0, sizeof out->extensions);
    if (ext)
        ext->hooks->cache_stats(ext, &out->extensions);
    return TF_OK;
}

static tf_status check_limits(const char *op, tf_runtime *rt, const tf_cache_limits *limits)
{
    tf_status st = check_rt(op, rt, limits, "limits");
    if (st)
        return st;
    if (limits->max_entries == 0)
        return tf__error(TF_ERR_VALIDATION, op, "limits", "%s: max_entries must be > 0", op);
    return TF_OK;
}

TF_API tf_status tf_runtime_ad_transform_cache_limits(tf_runtime *rt, tf_cache_limits *out)
{
    tf_status st = check_rt("ad_transform_cache_limits", rt, out, "out");
    if (!st)
        tf__cache_get_limits(&rt->ad->transforms, out);
    return st;
}

TF_API tf_status tf_runtime_set_ad_transform_cache_limits(tf_runtime *rt,
                                                          const tf_cache_limits *limits)
{
    tf_status st = check_limits("set_ad_transform_cache_limits", rt, limits);
    if (!st)
        tf__cache_set_limits(&rt->ad->transforms, limits);
    return st;
}

TF_API tf_status tf_runtime_prepared_derivative_cache_limits(tf_runtime *rt, tf_cache_limits *out)
{
    tf_status st = check_rt("prepared_derivative_cache_limits", rt, out, "out");
    if (!st)
        tf__cache_get_limits(&rt->prepared, out);
    return st;
}

TF_API tf_status tf_runtime_set_prepared_derivative_cache_limits(tf_runtime *rt,
                                                                 const tf_cache_limits *limits)
{
    tf_status st = check_limits("set_prepared_derivative_cache_limits", rt, limits);
    if (!st)
        tf__cache_set_limits(&rt->prepared, limits);
    return st;
}

/* ---- grad slots ---- */

void tf__slot_register(tf_runtime *rt, tf_grad_slot *slot)
{
    pthread_mutex_lock(&rt->slots_lock);
    slot->prev = NULL;
    slot->next = rt->slots;
    if (rt->slots)
        rt->slots->prev = slot;
    rt->slots = slot;
    pthread_mutex_unlock(&rt->slots_lock);
}

void tf__slot_unregister(tf_runtime *rt, tf_grad_slot *slot)
{
    pthread_mutex_lock(&rt->slots_lock);
    if (slot->prev)
        slot->prev->next = slot->next;
    else
        rt->slots = slot->next;
    if (slot->next)
        slot->next->prev = slot->prev;
    pthread_mutex_unlock(&rt->slots_lock);
}

TF_API tf_status tf_runtime_clear_grads(tf_runtime *rt)
{
    tf_status st = check_rt("clear_grads", rt, rt, "runtime");
    if (st)
        return st;
    pthread_mutex_lock(&rt->slots_lock);
    for (tf_grad_slot *s = rt->slots; s; s = s->next) {
        pthread_mutex_lock(&s->lock);
        tf_tensor *g = s->grad;
        s->grad = NULL;
        pthread_mutex_unlock(&s->lock);
        tf_tensor_release(g);
    }
    pthread_mutex_unlock(&rt->slots_lock);
    return TF_OK;
}
