/*
 * cache.c - a bounded LRU map from 64-bit keys to owned values, with stats.
 *
 * Used for the prepared-derivative cache and the AD-transform cache. Keys
 * are fingerprints that already include the registry epoch, so an entry
 * prepared under an older epoch is simply never looked up again and ages
 * out. Lookups hand the value to a callback under the lock, so a value is
 * never freed while someone reads it.
 */
#include <string.h>

#include "runtime_internal.h"

#define CACHE_BUCKETS 256

tf_status tf__cache_init(tf_cache *c, size_t max_entries)
{
    memset(c, 0, sizeof *c);
    c->buckets = tf__calloc(CACHE_BUCKETS, sizeof *c->buckets);
    if (!c->buckets)
        return tf__error(TF_ERR_OUT_OF_MEMORY, "runtime_create", NULL, "out of memory");
    if (pthread_mutex_init(&c->lock, NULL) != 0) {
        tf__free(c->buckets);
        return tf__error(TF_ERR_RUNTIME_STATE, "runtime_create", NULL,
                         "cannot initialise a cache lock");
    }
    c->n_buckets = CACHE_BUCKETS;
    c->limits.max_entries = max_entries;
    return TF_OK;
}

static void unlink_entry(tf_cache *c, tf_cache_entry *e)
{
    tf_cache_entry **pp = &c->buckets[e->key % c->n_buckets];
    while (*pp != e)
        pp = &(*pp)->chain;
    *pp = e->chain;
    if (e->prev)
        e->prev->next = e->next;
    else
        c->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        c->tail = e->prev;
    c->stats.entries--;
    c->stats.retained_bytes -= e->bytes;
}

static void free_entry(tf_cache_entry *e)
{
    if (e->free_value)
        e->free_value(e->value);
    tf__free(e);
}

/* Evicts from the tail until the limits hold. Called with the lock held. */
static void enforce(tf_cache *c)
{
    while (c->tail && (c->stats.entries > c->limits.max_entries ||
                       (c->limits.max_bytes && c->stats.retained_bytes > c->limits.max_bytes))) {
        tf_cache_entry *e = c->tail;
        unlink_entry(c, e);
        c->stats.evictions++;
        free_entry(e);
    }
}

static void drop_all(tf_cache *c)
{
    tf_cache_entry *e = c->head;
    while (e) {
        tf_cache_entry *next = e->next;
        free_entry(e);
        e = next;
    }
    memset(c->buckets, 0, c->n_buckets * sizeof *c->buckets);
    c->head = c->tail = NULL;
    c->stats.entries = 0;
    c->stats.retained_bytes = 0;
}

void tf__cache_destroy(tf_cache *c)
{
    if (!c->buckets)
        return;
    drop_all(c);
    tf__free(c->buckets);
    c->buckets = NULL;
    pthread_mutex_destroy(&c->lock);
}

bool tf__cache_get(tf_cache *c, uint64_t key, void (*use)(const void *value, void *user),
                   void *user)
{
    pthread_mutex_lock(&c->lock);
    tf_cache_entry *e = c->buckets[key % c->n_buckets];
    while (e && e->key != key)
        e = e->chain;
    if (!e) {
        c->stats.misses++;
        pthread_mutex_unlock(&c->lock);
        return false;
    }
    c->stats.hits++;
    if (e != c->head) { /* move to front */
        e->prev->next = e->next;
        if (e->next)
            e->next->prev = e->prev;
        else
            c->tail = e->prev;
        e->prev = NULL;
        e->next = c->head;
        c->head->prev = e;
        c->head = e;
    }
    use(e->value, user);
    pthread_mutex_unlock(&c->lock);
    return true;
}

void tf__cache_put(tf_cache *c, uint64_t key, void *value, size_t bytes,
                   void (*free_value)(void *value))
{
    tf_cache_entry *e = tf__calloc(1, sizeof *e);
    if (!e) {
        if (free_value)
            free_value(value);
        return;
    }
    e->key = key;
    e->value = value;
    e->bytes = bytes + sizeof *e;
    e->free_value = free_value;
    pthread_mutex_lock(&c->lock);
    tf_cache_entry *old = c->buckets[key % c->n_buckets];
    while (old && old->key != key)
        old = old->chain;
    if (old) { /* another thread prepared the same entry first: keep it */
        pthread_mutex_unlock(&c->lock);
        free_entry(e);
        return;
    }
    e->chain = c->buckets[key % c->n_buckets];
    c->buckets[key % c->n_buckets] = e;
    e->next = c->head;
    if (c->head)
        c->head->prev = e;
    c->head = e;
    if (!c->tail)
        c->tail = e;
    c->stats.entries++;
    c->stats.retained_bytes += e->bytes;
    enforce(c);
    pthread_mutex_unlock(&c->lock);
}

void tf__cache_clear(tf_cache *c)
{
    pthread_mutex_lock(&c->lock);
    drop_all(c);
    c->stats.clears++;
    pthread_mutex_unlock(&c->lock);
}

void tf__cache_stats(tf_cache *c, tf_cache_stats *out)
{
    pthread_mutex_lock(&c->lock);
    *out = c->stats;
    pthread_mutex_unlock(&c->lock);
}

void tf__cache_get_limits(tf_cache *c, tf_cache_limits *out)
{
    pthread_mutex_lock(&c->lock);
    *out = c->limits;
    pthread_mutex_unlock(&c->lock);
}

void tf__cache_set_limits(tf_cache *c, const tf_cache_limits *limits)
{
    pthread_mutex_lock(&c->lock);
    c->limits = *limits;
    enforce(c);
    pthread_mutex_unlock(&c->lock);
}
