/*
 * alloc.c - the process-wide allocator hook, logging, and the host-services
 * table given to plugins.
 *
 * Every host allocation of the library and its plugins goes through the
 * allocator set with tf_allocator_set, so tests can count allocations and
 * fail the Nth one.
 */
#include <stdalign.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base_internal.h"

static void *default_alloc(void *user, size_t size, size_t align)
{
    (void)user;
    if (align <= alignof(max_align_t))
        return malloc(size ? size : 1); /* malloc already aligns this much, faster */
    void *p = NULL;
    if (posix_memalign(&p, align, size ? size : 1) != 0)
        return NULL;
    return p;
}

static void default_free(void *user, void *ptr)
{
    (void)user;
    free(ptr);
}

static tf_allocator g_alloc = {default_alloc, default_free, NULL};

bool tf__alloc_default = true;

TF_API void tf_allocator_set(const tf_allocator *allocator)
{
    if (allocator && allocator->alloc && allocator->free)
        g_alloc = *allocator;
    else
        g_alloc = (tf_allocator){default_alloc, default_free, NULL};
    tf__alloc_default = g_alloc.alloc == default_alloc;
}

TF_API void tf_allocator_get(tf_allocator *out)
{
    if (out)
        *out = g_alloc;
}

void *tf__alloc_aligned(size_t size, size_t align)
{
    return g_alloc.alloc(g_alloc.user, size ? size : 1, align);
}

void *tf__alloc(size_t size)
{
    return tf__alloc_aligned(size, 0);
}

void *tf__calloc(size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        return NULL;
    void *p = tf__alloc(count * size);
    if (p)
        memset(p, 0, count * size);
    return p;
}

void tf__free(void *ptr)
{
    if (ptr)
        g_alloc.free(g_alloc.user, ptr);
}

char *tf__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = tf__alloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

void tf__text_printf(tf_text *t, const char *fmt, ...)
{
    if (t->oom)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t need = t->len + (size_t)n + 1;
    if (need > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < need)
            cap *= 2;
        char *bigger = tf__alloc(cap);
        if (!bigger) {
            tf__free(t->s);
            *t = (tf_text){NULL, 0, 0, true};
            return;
        }
        if (t->len)
            memcpy(bigger, t->s, t->len);
        tf__free(t->s);
        t->s = bigger;
        t->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

/* ---- logging ---- */

static _Atomic(tf_log_fn) g_log_fn;
static void *_Atomic g_log_user;
static atomic_int g_log_level;

TF_API void tf_log_set(tf_log_fn fn, void *user, tf_log_level max_level)
{
    atomic_store(&g_log_user, user);
    atomic_store(&g_log_level, (int)max_level);
    atomic_store(&g_log_fn, fn);
}

static void log_emit(tf_log_level level, const char *message)
{
    tf_log_fn fn = atomic_load(&g_log_fn);
    if (fn && (int)level <= atomic_load(&g_log_level))
        fn(atomic_load(&g_log_user), level, message);
}

void tf__log(tf_log_level level, const char *fmt, ...)
{
    if (!atomic_load(&g_log_fn))
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    log_emit(level, buf);
}

/* ---- the host-services table ---- */

static void *host_alloc(void *ctx, size_t size, size_t align)
{
    (void)ctx;
    if (align > 4096 || (align & (align - 1)) != 0)
        return NULL;
    return tf__alloc_aligned(size, align);
}

static void host_free(void *ctx, void *ptr)
{
    (void)ctx;
    tf__free(ptr);
}

static void host_report_error(void *ctx, tf_status status, const char *message)
{
    (void)ctx;
    tf__plugin_report(status, message ? message : "");
}

static void host_log(void *ctx, tf_log_level level, const char *message)
{
    (void)ctx;
    if (message) /* bounded: a plugin's string may lack its NUL */
        tf__log(level, "%.1023s", message);
}

static const tf_host_api g_host_api = {
    .struct_size = sizeof(tf_host_api),
    .abi_major = TF_ENGINE_ABI_MAJOR,
    .abi_minor = TF_ENGINE_ABI_MINOR,
    .ctx = NULL,
    .alloc = host_alloc,
    .free = host_free,
    .report_error = host_report_error,
    .log = host_log,
};

const tf_host_api *tf__host_api(void)
{
    return &g_host_api;
}
