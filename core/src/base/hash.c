/*
 * hash.c - the core's one hash over bytes (the word forms are inline in
 * base_internal.h): caches of inferred extension calls, AD transforms and module
 * blobs key their entries with it.
 */
#include <string.h>

#include "base_internal.h"

uint64_t tf__hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (; n >= 8; n -= 8, b += 8) {
        uint64_t w;
        memcpy(&w, b, 8);
        h = tf__hash_word(h, w);
    }
    uint64_t tail = (uint64_t)n << 56; /* the length, so that trailing zeros count */
    for (size_t i = 0; i < n; i++)
        tail |= (uint64_t)b[i] << (8 * i);
    return tf__hash_word(h, tail);
}
