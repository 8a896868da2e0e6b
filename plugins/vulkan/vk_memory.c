/*
 * vk_memory.c - device memory: large device-local blocks, each one VkBuffer
 * over one VkDeviceMemory, carved by a first-fit sub-allocator with a
 * sorted, coalescing free list; and host-visible buffers (staging and
 * parameter rings).
 *
 * buffer_alloc and buffer_free may come from any thread, so the blocks are
 * guarded by engine->lock. A buffer freed while a batch that uses it may
 * still run is parked on the deferred list and released once that batch's
 * fence has been waited (tf__vk_release_deferred), so freeing never forces
 * a submit or a wait. A block that becomes empty is returned to the driver,
 * except the first, which stays for reuse.
 *
 * Out of device memory (the driver's, or the memory_limit option's), an
 * allocation tries a smaller block, gives empty blocks back, and finishes
 * pending work that holds freed buffers, before failing with
 * TF_ERR_OUT_OF_MEMORY (see block_add and tf__vk_buffer_alloc).
 */
#include <string.h>

#include "vk_internal.h"

static VkDeviceSize round_up(VkDeviceSize v, VkDeviceSize a)
{
    return (v + a - 1) / a * a;
}

tf_status tf__vk_hostbuf_create(vk_engine *e, VkDeviceSize size, VkBufferUsageFlags usage,
                                vk_hostbuf *out)
{
    memset(out, 0, sizeof *out);
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                             .size = size,
                             .usage = usage,
                             .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VkResult r = vkCreateBuffer(e->dev, &bi, NULL, &out->buf);
    if (r != VK_SUCCESS)
        return tf__vk_fail_vk(e->host, "vkCreateBuffer (host-visible)", r);
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(e->dev, out->buf, &req);
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .allocationSize = req.size,
                               .memoryTypeIndex = e->mem_host};
    r = vkAllocateMemory(e->dev, &ai, NULL, &out->mem);
    if (r == VK_SUCCESS)
        r = vkBindBufferMemory(e->dev, out->buf, out->mem, 0);
    if (r == VK_SUCCESS)
        r = vkMapMemory(e->dev, out->mem, 0, VK_WHOLE_SIZE, 0, &out->map);
    if (r != VK_SUCCESS) {
        tf__vk_hostbuf_destroy(e, out);
        return tf__vk_fail_vk(e->host, "allocating host-visible memory", r);
    }
    out->size = size;
    return TF_OK;
}

void tf__vk_hostbuf_destroy(vk_engine *e, vk_hostbuf *hb)
{
    if (hb->buf != VK_NULL_HANDLE)
        vkDestroyBuffer(e->dev, hb->buf, NULL);
    if (hb->mem != VK_NULL_HANDLE)
        vkFreeMemory(e->dev, hb->mem, NULL); /* unmaps */
    memset(hb, 0, sizeof *hb);
}

static void block_destroy(vk_engine *e, vk_block *b)
{
    if (b->buf != VK_NULL_HANDLE)
        vkDestroyBuffer(e->dev, b->buf, NULL);
    if (b->mem != VK_NULL_HANDLE)
        vkFreeMemory(e->dev, b->mem, NULL);
    e->host->free(e->host->ctx, b->free);
    e->host->free(e->host->ctx, b);
}

/*
 * A new block of `size` bytes with one free range; lock held. Host memory
 * failures are reported here; a failed Vulkan call is returned in *vr (and
 * TF_ERR_OUT_OF_MEMORY / TF_ERR_BACKEND) for the caller to report.
 */
static tf_status block_create(vk_engine *e, VkDeviceSize size, vk_block **out, VkResult *vr)
{
    const tf_host_api *host = e->host;
    *vr = VK_SUCCESS;
    if (e->n_blocks == e->cap_blocks) {
        uint32_t cap = e->cap_blocks ? 2 * e->cap_blocks : 8;
        vk_block **nb = host->alloc(host->ctx, cap * sizeof *nb, 0);
        if (nb == NULL)
            return tf__vk_fail(host, TF_ERR_OUT_OF_MEMORY, "vulkan: buffer_alloc: out of memory");
        if (e->n_blocks)
            memcpy(nb, e->blocks, e->n_blocks * sizeof *nb);
        host->free(host->ctx, e->blocks);
        e->blocks = nb;
        e->cap_blocks = cap;
    }
    vk_block *b = host->alloc(host->ctx, sizeof *b, 0);
    vk_range *fr = host->alloc(host->ctx, 8 * sizeof *fr, 0);
    if (b == NULL || fr == NULL) {
        host->free(host->ctx, b);
        host->free(host->ctx, fr);
        return tf__vk_fail(host, TF_ERR_OUT_OF_MEMORY, "vulkan: buffer_alloc: out of memory");
    }
    memset(b, 0, sizeof *b);
    b->free = fr;
    b->cap_free = 8;
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                             .size = size,
                             .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                             .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VkResult r = vkCreateBuffer(e->dev, &bi, NULL, &b->buf);
    if (r == VK_SUCCESS) {
        VkMemoryRequirements req;
        vkGetBufferMemoryRequirements(e->dev, b->buf, &req);
        VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                   .allocationSize = req.size,
                                   .memoryTypeIndex = e->mem_device};
        /* debug_fail=alloc_oom@N: the Nth call reports exhaustion instead of allocating. */
        int fail = e->fault == VK_FAULT_ALLOC_OOM && ++e->alloc_calls == e->fault_at;
        r = fail ? VK_ERROR_OUT_OF_DEVICE_MEMORY : vkAllocateMemory(e->dev, &ai, NULL, &b->mem);
        if (r == VK_SUCCESS)
            r = vkBindBufferMemory(e->dev, b->buf, b->mem, 0);
    }
    if (r != VK_SUCCESS) {
        block_destroy(e, b);
        *vr = r;
        return r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY
                   ? TF_ERR_OUT_OF_MEMORY
                   : TF_ERR_BACKEND;
    }
    b->size = size;
    b->free[0] = (vk_range){0, size};
    b->n_free = 1;
    e->blocks[e->n_blocks++] = b;
    e->mem_held += size;
    *out = b;
    return TF_OK;
}

/* First fit in one block; lock held. */
static int block_take(vk_block *b, VkDeviceSize span, VkDeviceSize *offset)
{
    for (uint32_t i = 0; i < b->n_free; i++) {
        vk_range *r = &b->free[i];
        if (r->size < span)
            continue;
        *offset = r->offset;
        r->offset += span;
        r->size -= span;
        if (r->size == 0) {
            memmove(r, r + 1, (b->n_free - i - 1) * sizeof *r);
            b->n_free--;
        }
        b->live++;
        return 1;
    }
    return 0;
}

/* Returns [offset, offset + span) to the block's free list; lock held. */
static int block_give(vk_engine *e, vk_block *b, VkDeviceSize offset, VkDeviceSize span)
{
    uint32_t i = 0;
    while (i < b->n_free && b->free[i].offset < offset)
        i++;
    int merge_prev = i > 0 && b->free[i - 1].offset + b->free[i - 1].size == offset;
    int merge_next = i < b->n_free && offset + span == b->free[i].offset;
    if (merge_prev && merge_next) {
        b->free[i - 1].size += span + b->free[i].size;
        memmove(&b->free[i], &b->free[i + 1], (b->n_free - i - 1) * sizeof *b->free);
        b->n_free--;
    } else if (merge_prev) {
        b->free[i - 1].size += span;
    } else if (merge_next) {
        b->free[i].offset = offset;
        b->free[i].size += span;
    } else {
        if (b->n_free == b->cap_free) {
            vk_range *nf = e->host->alloc(e->host->ctx, 2 * b->cap_free * sizeof *nf, 0);
            if (nf == NULL)
                return 0; /* the range is lost to this block until teardown */
            memcpy(nf, b->free, b->n_free * sizeof *nf);
            e->host->free(e->host->ctx, b->free);
            b->free = nf;
            b->cap_free *= 2;
        }
        memmove(&b->free[i + 1], &b->free[i], (b->n_free - i) * sizeof *b->free);
        b->free[i] = (vk_range){offset, span};
        b->n_free++;
    }
    b->live--;
    return 1;
}

/* Returns every block without a live buffer to the driver; 0 if there was none. Lock held. */
static int drop_empty_blocks(vk_engine *e)
{
    int dropped = 0;
    for (uint32_t i = 0; i < e->n_blocks;) {
        vk_block *b = e->blocks[i];
        if (b->live > 0) {
            i++;
            continue;
        }
        e->mem_held -= b->size;
        e->blocks[i] = e->blocks[--e->n_blocks];
        block_destroy(e, b);
        dropped = 1;
    }
    return dropped;
}

/* The size of a new block for a request of `span` bytes: 0 when memory_limit forbids it. */
static VkDeviceSize block_size(const vk_engine *e, VkDeviceSize span)
{
    VkDeviceSize size = span > VK_BLOCK_BYTES ? span : VK_BLOCK_BYTES;
    size = size < e->max_range ? size : e->max_range;
    if (e->mem_limit > 0) {
        VkDeviceSize room = e->mem_limit > e->mem_held ? e->mem_limit - e->mem_held : 0;
        if (span > room)
            return 0;
        size = size < room ? size : room;
    }
    return size;
}

static int vk_oom(VkResult r)
{
    return r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY;
}

/*
 * A new block that holds at least `span` bytes; lock held. A whole block is
 * tried first, then, if the driver is out of memory, a block of exactly the
 * request (a nearly full device may still hold that). When the limit or the
 * driver still refuses, the blocks no buffer lives in (the first block is
 * kept for reuse otherwise) are given back and everything is tried again.
 */
static tf_status block_add(vk_engine *e, size_t nbytes, VkDeviceSize span, vk_block **out)
{
    VkResult vr = VK_SUCCESS;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (attempt == 1 && !drop_empty_blocks(e))
            break;
        VkDeviceSize size = block_size(e, span);
        if (size == 0)
            continue;
        tf_status st = block_create(e, size, out, &vr);
        if (st == TF_OK || vr == VK_SUCCESS)
            return st; /* done, or out of host memory (reported) */
        if (vk_oom(vr) && size > span) {
            st = block_create(e, span, out, &vr);
            if (st == TF_OK || vr == VK_SUCCESS)
                return st;
        }
        if (!vk_oom(vr))
            break;
    }
    unsigned long long held = (unsigned long long)e->mem_held;
    unsigned long long heap = (unsigned long long)e->heap_size;
    if (vr == VK_SUCCESS) /* only the limit refused */
        return tf__vk_fail(e->host, TF_ERR_OUT_OF_MEMORY,
                           "vulkan: buffer_alloc: out of device memory: %zu bytes asked for, but "
                           "the engine's memory_limit is %llu bytes and it holds %llu in %u "
                           "block(s) (heap %u, %llu bytes)",
                           nbytes, (unsigned long long)e->mem_limit, held, e->n_blocks, e->heap,
                           heap);
    return tf__vk_fail(e->host, vk_oom(vr) ? TF_ERR_OUT_OF_MEMORY : TF_ERR_BACKEND,
                       "vulkan: buffer_alloc: %s: %zu bytes asked for; vkAllocateMemory on heap "
                       "%u (%llu bytes, device-local) failed with %s; the engine holds %llu "
                       "bytes in %u block(s)",
                       vk_oom(vr) ? "out of device memory" : "allocation failed", nbytes, e->heap,
                       heap, tf__vk_result_name(vr), held, e->n_blocks);
}

/* A range of span bytes from the blocks, or a new block; lock held. */
static tf_status carve(vk_engine *e, size_t nbytes, VkDeviceSize span, vk_block **found,
                       VkDeviceSize *offset)
{
    for (uint32_t i = 0; i < e->n_blocks; i++) {
        if (block_take(e->blocks[i], span, offset)) {
            *found = e->blocks[i];
            return TF_OK;
        }
    }
    tf_status st = block_add(e, nbytes, span, found);
    if (st == TF_OK)
        block_take(*found, span, offset);
    return st;
}

tf_status tf__vk_buffer_alloc(vk_engine *e, size_t nbytes, int recording, tf_engine_buffer **out)
{
    const tf_host_api *host = e->host;
    if (nbytes > e->max_range - VK_ALIGN)
        return tf__vk_fail(host, TF_ERR_OUT_OF_MEMORY,
                           "vulkan: buffer_alloc: %zu bytes exceed the device's largest storage "
                           "buffer (%llu bytes)",
                           nbytes, (unsigned long long)e->max_range);
    VkDeviceSize span = round_up(nbytes > 0 ? nbytes : 1, VK_ALIGN);
    tf_engine_buffer *buf = host->alloc(host->ctx, sizeof *buf, 0);
    if (buf == NULL)
        return tf__vk_fail(host, TF_ERR_OUT_OF_MEMORY, "vulkan: buffer_alloc: out of memory");
    memset(buf, 0, sizeof *buf);
    atomic_init(&buf->last_use, 0);
    vk_block *found = NULL;
    VkDeviceSize offset = 0;
    pthread_mutex_lock(&e->lock);
    tf_status st = carve(e, nbytes, span, &found, &offset);
    if (st == TF_ERR_OUT_OF_MEMORY && e->deferred != NULL) {
        /* Buffers freed while pending work uses them hold memory until that work is done:
           finish it (the recording lock orders this with the thread that records) and try
           again, so "free something, allocate again" works without a synchronize. */
        pthread_mutex_unlock(&e->lock);
        if (!recording)
            pthread_mutex_lock(&e->rec_lock);
        tf_status drained = tf__vk_drain(e);
        if (!recording)
            pthread_mutex_unlock(&e->rec_lock);
        pthread_mutex_lock(&e->lock);
        st = drained != TF_OK ? drained : carve(e, nbytes, span, &found, &offset);
    }
    pthread_mutex_unlock(&e->lock);
    if (st != TF_OK) {
        host->free(host->ctx, buf);
        return st;
    }
    buf->block = found;
    buf->offset = offset;
    buf->size = nbytes;
    buf->span = span;
    *out = buf;
    return TF_OK;
}

/* Gives the range back and frees an empty block (not the first); lock held. */
static void release(vk_engine *e, tf_engine_buffer *buf)
{
    vk_block *b = buf->block;
    block_give(e, b, buf->offset, buf->span);
    if (b->live == 0 && e->n_blocks > 1 && e->blocks[0] != b) {
        for (uint32_t i = 0; i < e->n_blocks; i++) {
            if (e->blocks[i] == b) {
                e->blocks[i] = e->blocks[--e->n_blocks];
                break;
            }
        }
        e->mem_held -= b->size;
        block_destroy(e, b);
    }
    e->host->free(e->host->ctx, buf);
}

void tf__vk_buffer_free(vk_engine *e, tf_engine_buffer *buf)
{
    if (buf == NULL)
        return;
    pthread_mutex_lock(&e->lock);
    if (atomic_load_explicit(&buf->last_use, memory_order_relaxed) > e->completed) {
        buf->next_deferred = e->deferred;
        e->deferred = buf;
    } else {
        release(e, buf);
    }
    pthread_mutex_unlock(&e->lock);
}

void tf__vk_release_deferred(vk_engine *e)
{
    pthread_mutex_lock(&e->lock);
    tf_engine_buffer **link = &e->deferred;
    while (*link != NULL) {
        tf_engine_buffer *b = *link;
        if (atomic_load_explicit(&b->last_use, memory_order_relaxed) <= e->completed) {
            *link = b->next_deferred;
            release(e, b);
        } else {
            link = &b->next_deferred;
        }
    }
    pthread_mutex_unlock(&e->lock);
}

void tf__vk_memory_destroy(vk_engine *e)
{
    pthread_mutex_lock(&e->lock);
    while (e->deferred != NULL) {
        tf_engine_buffer *b = e->deferred;
        e->deferred = b->next_deferred;
        e->host->free(e->host->ctx, b);
    }
    for (uint32_t i = 0; i < e->n_blocks; i++)
        block_destroy(e, e->blocks[i]);
    e->host->free(e->host->ctx, e->blocks);
    e->blocks = NULL;
    e->n_blocks = e->cap_blocks = 0;
    e->mem_held = 0;
    pthread_mutex_unlock(&e->lock);
}
