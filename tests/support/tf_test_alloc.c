/*
 * tf_test_alloc.c - the counting, fault-injecting allocator of tf_test_alloc.h.
 *
 * Each block carries a header just below the pointer handed out: a magic
 * word (to catch frees of foreign or already freed pointers), the size and
 * the distance back to what malloc returned (so any alignment can be served).
 */
#include "tf_test_alloc.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>

#include <tenferro/system.h>

#define BLOCK_MAGIC 0x7466616c6c6f6321ull /* live */
#define BLOCK_DEAD 0x6465616464656164ull  /* freed */

typedef struct block_header {
    uint64_t magic;
    size_t size;
    size_t back; /* aligned pointer - raw pointer */
} block_header;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t g_live_blocks, g_live_bytes, g_calls, g_violations;
static size_t g_fail_countdown, g_injected;
static int g_fail_sticky;

static void *counting_alloc(void *user, size_t size, size_t align)
{
    (void)user;
    if (align == 0)
        align = alignof(max_align_t);
    pthread_mutex_lock(&g_lock);
    g_calls++;
    int bad = size == 0 || (align & (align - 1)) != 0;
    if (bad)
        g_violations++;
    int inject = 0;
    if (g_fail_countdown > 0) {
        if (g_fail_countdown == 1) {
            inject = 1;
            if (!g_fail_sticky)
                g_fail_countdown = 0;
        } else {
            g_fail_countdown--;
        }
    }
    if (inject)
        g_injected++;
    pthread_mutex_unlock(&g_lock);
    if (inject || (align & (align - 1)) != 0)
        return NULL;

    size_t room = sizeof(block_header) + align;
    if (size > SIZE_MAX - room)
        return NULL;
    unsigned char *raw = malloc(size + room);
    if (!raw)
        return NULL;
    uintptr_t p = (uintptr_t)raw + sizeof(block_header);
    p = (p + align - 1) & ~(uintptr_t)(align - 1);
    block_header *h = (block_header *)p - 1;
    h->magic = BLOCK_MAGIC;
    h->size = size;
    h->back = (size_t)(p - (uintptr_t)raw);

    pthread_mutex_lock(&g_lock);
    g_live_blocks++;
    g_live_bytes += size;
    pthread_mutex_unlock(&g_lock);
    return (void *)p;
}

static void counting_free(void *user, void *ptr)
{
    (void)user;
    if (!ptr)
        return;
    block_header *h = (block_header *)ptr - 1;
    if (h->magic != BLOCK_MAGIC) {
        /* Foreign or double free: count it and leak rather than corrupt the heap. */
        pthread_mutex_lock(&g_lock);
        g_violations++;
        pthread_mutex_unlock(&g_lock);
        return;
    }
    h->magic = BLOCK_DEAD;
    pthread_mutex_lock(&g_lock);
    g_live_blocks--;
    g_live_bytes -= h->size;
    pthread_mutex_unlock(&g_lock);
    free((unsigned char *)ptr - h->back);
}

void tf_test_alloc_install(void)
{
    tf_allocator a = {counting_alloc, counting_free, NULL};
    tf_allocator_set(&a);
}

void tf_test_alloc_uninstall(void)
{
    tf_allocator_set(NULL);
}

#define GETTER(name, var)              \
    size_t name(void)                  \
    {                                  \
        pthread_mutex_lock(&g_lock);   \
        size_t v = var;                \
        pthread_mutex_unlock(&g_lock); \
        return v;                      \
    }

GETTER(tf_test_alloc_live_blocks, g_live_blocks)
GETTER(tf_test_alloc_live_bytes, g_live_bytes)
GETTER(tf_test_alloc_calls, g_calls)
GETTER(tf_test_alloc_violations, g_violations)
GETTER(tf_test_alloc_injected, g_injected)

void tf_test_alloc_fail_at(size_t n, int sticky)
{
    pthread_mutex_lock(&g_lock);
    g_fail_countdown = n;
    g_fail_sticky = sticky;
    g_injected = 0;
    pthread_mutex_unlock(&g_lock);
}
