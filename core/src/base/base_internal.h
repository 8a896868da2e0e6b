/*
 * base_internal.h - the bottom layer of the core (core/src/base): the
 * allocation hook and pools, logging, the per-thread error slot, the one
 * hash, the host-services table plugins receive. Every other layer may use
 * it; it uses nothing of theirs.
 *
 * Nothing here is visible to applications or plugins. Internal functions
 * that must be external are named tf__<module>_<verb>.
 */
#ifndef TF_BASE_INTERNAL_H
#define TF_BASE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tenferro/tenferro.h>

#if defined(__GNUC__) || defined(__clang__)
#define TF_API __attribute__((visibility("default")))
#define TF_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define TF_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define TF_API
#define TF_PRINTF(a, b)
#define TF_ALWAYS_INLINE inline
#endif

/* ---- alloc.c ---- */

void *tf__alloc(size_t size); /* aligned for any type; NULL on failure */
void *tf__alloc_aligned(size_t size, size_t align);
void *tf__calloc(size_t count, size_t size); /* zeroed; NULL on overflow or failure */
void tf__free(void *ptr);
char *tf__strdup(const char *s);

/* A text that grows in the library's allocator's memory; start it zeroed.
   After a failed allocation `oom` is set, `s` freed and NULL, and later
   appends do nothing. */
typedef struct tf_text {
    char *s;
    size_t len, cap;
    bool oom;
} tf_text;
void tf__text_printf(tf_text *t, const char *fmt, ...) TF_PRINTF(2, 3);

void tf__log(tf_log_level level, const char *fmt, ...) TF_PRINTF(2, 3);
/* Whether the default allocator is in effect (pooling is allowed then):
   kept by tf_allocator_set, read inline on every pooled allocation. */
extern bool tf__alloc_default;
static inline bool tf__default_allocator(void)
{
    return tf__alloc_default;
}
/* Small fixed-size objects from per-thread free lists (pool.c); `size` must
   be the same at alloc and free. Uninitialised memory. */
void *tf__pool_alloc(size_t size);
void tf__pool_free(void *ptr, size_t size);
/* The table every plugin receives. */
const tf_host_api *tf__host_api(void);

/* ---- the one hash (hash.c) ---- */

/* The seed of a new hash. */
#define TF_HASH_SEED 0xcbf29ce484222325ull

/*
 * Folds the word v into the hash h: the core's one hash, for every cache
 * key, memo table and graph fingerprint (a golden-ratio offset, then a
 * multiply-xorshift round of murmur3's finaliser). Keys live only in this
 * process, so the function may change freely.
 */
static inline uint64_t tf__hash_word(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

/* n words (extents, attribute vectors), one at a time. */
static inline uint64_t tf__hash_words(uint64_t h, const int64_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = tf__hash_word(h, (uint64_t)v[i]);
    return h;
}

/* n bytes (any object without padding), eight at a time. */
uint64_t tf__hash_bytes(uint64_t h, const void *p, size_t n);

/* ---- error.c ---- */

/*
 * Records a failure in this thread's slot and returns `status`. `op` and
 * `argument` may be NULL. The cause is cleared.
 */
tf_status tf__error(tf_status status, const char *op, const char *argument, const char *fmt, ...)
    TF_PRINTF(4, 5);
/* Sets the cause of the failure just recorded. */
void tf__error_cause(const char *fmt, ...) TF_PRINTF(1, 2);
/* Forgets what a plugin reported; called before calling into a plugin. */
void tf__plugin_report_clear(void);
/* Stores what a plugin reported on this thread (host_api.report_error). */
void tf__plugin_report(tf_status status, const char *message);
/* What a plugin reported since the last clear ("" if nothing; the thread's slot). */
const char *tf__plugin_report_text(void);
/* As tf__plugin_report, naming the offending argument (extension infer()). */
void tf__plugin_report_argument(tf_status status, const char *argument, const char *message);
/* Stores a typed extension error (TF_ERR_EXTENSION) of a declared kind; index -1 if none. */
void tf__plugin_report_kind(const char *module_id, const char *kind, const char *kind_message,
                            int64_t index, const char *detail);
/*
 * Records a failure returned by a plugin: the plugin's report (if any)
 * becomes the cause and the argument it named the argument; a plugin that
 * returned TF_OK-looking garbage or an unknown code is mapped to
 * TF_ERR_BACKEND, and so is TF_ERR_EXTENSION without a reported kind. With
 * a kind, the message is "<op>: <kind's message> (<module>/<kind>[, batch
 * element i])" and tf_error_extension_kind answers.
 */
tf_status tf__error_from_plugin(tf_status status, const char *op, const char *fmt, ...)
    TF_PRINTF(3, 4);

#endif /* TF_BASE_INTERNAL_H */
