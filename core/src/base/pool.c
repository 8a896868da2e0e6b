/*
 * pool.c - per-thread free lists for the library's small fixed-size objects
 * (tensors, storages, eager tensors, tape nodes).
 *
 * Issuing an op creates a handful of these and dropping its result frees
 * them, so recycling them per thread keeps the allocator off the hot path
 * and takes no lock. A thread keeps up to POOL_BUDGET bytes of free blocks
 * (the bookkeeping of some ten thousand recorded ops) until it exits.
 * Blocks are recycled only while the default allocator is in effect: with
 * an application allocator (and in the fault-injection tests) every object
 * is allocated and freed through it, one by one.
 */
#include <pthread.h>
#include <stdlib.h>

#include "base_internal.h"

#define POOL_CLASSES 16               /* 64-byte size classes: 64 .. 1024 bytes */
#define POOL_BUDGET ((size_t)16 << 20) /* bytes of free blocks kept per thread */

typedef struct pool_block {
    struct pool_block *next;
} pool_block;

typedef struct pool {
    pool_block *head[POOL_CLASSES];
    size_t bytes; /* bytes held in the lists */
} pool;

static _Thread_local pool *t_pool;
static pthread_key_t g_key;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_key_ok;

/* Frees a thread's cached blocks when the thread exits. */
static void pool_destroy(void *p)
{
    pool *pl = p;
    for (int c = 0; c < POOL_CLASSES; c++) {
        pool_block *b = pl->head[c];
        while (b) {
            pool_block *next = b->next;
            free(b);
            b = next;
        }
    }
    free(pl);
}

static void make_key(void)
{
    g_key_ok = pthread_key_create(&g_key, pool_destroy) == 0;
}

/* This thread's pool, created on first use; NULL if that is impossible. */
static pool *my_pool(void)
{
    if (t_pool)
        return t_pool;
    pthread_once(&g_once, make_key);
    if (!g_key_ok)
        return NULL;
    pool *pl = calloc(1, sizeof *pl); /* the default allocator's own memory */
    if (pl && pthread_setspecific(g_key, pl) != 0) {
        free(pl);
        pl = NULL;
    }
    t_pool = pl;
    return pl;
}

static int size_class(size_t size)
{
    return size ? (int)((size - 1) / 64) : 0;
}

void *tf__pool_alloc(size_t size)
{
    int c = size_class(size);
    if (c < POOL_CLASSES && tf__default_allocator()) {
        pool *pl = t_pool;
        if (pl && pl->head[c]) {
            pool_block *b = pl->head[c];
            pl->head[c] = b->next;
            pl->bytes -= (size_t)(c + 1) * 64;
            return b;
        }
        return tf__alloc((size_t)(c + 1) * 64);
    }
    return tf__alloc(size);
}

void tf__pool_free(void *ptr, size_t size)
{
    if (!ptr)
        return;
    int c = size_class(size);
    if (c < POOL_CLASSES && tf__default_allocator()) {
        pool *pl = my_pool();
        if (pl && pl->bytes + (size_t)(c + 1) * 64 <= POOL_BUDGET) {
            pool_block *b = ptr;
            b->next = pl->head[c];
            pl->head[c] = b;
            pl->bytes += (size_t)(c + 1) * 64;
            return;
        }
    }
    tf__free(ptr);
}
