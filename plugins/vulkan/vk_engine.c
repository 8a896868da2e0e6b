/*
 * vk_engine.c - the Vulkan engine's descriptor and lifecycle: the entry
 * symbol, plugin init/shutdown (the instance and devices, vk_device.c),
 * device info, engine instances (logical device, one compute queue,
 * memory types, frames, pipeline layout and cache) and their complete
 * teardown, buffers and transfers, execute and synchronize.
 *
 * The engine is asynchronous: execute records work and returns; download
 * and synchronize submit and wait, and report any data-dependent failure
 * found by the batches since the last report (engine_abi.h allows this).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vk_internal.h"

#define VK_PLUGIN_VERSION "0.1.0"

/* The entry symbol; its declaration is the only exported name. */
TF_ENGINE_EXPORT const tf_engine_plugin *tf_engine_plugin_v1(const tf_host_api *host);

/* ---- errors and logs ---------------------------------------------------------------- */

tf_status tf__vk_fail(const tf_host_api *host, tf_status status, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    host->report_error(host->ctx, status, msg);
    return status;
}

const char *tf__vk_result_name(VkResult r)
{
    switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_FORMAT_NOT_SUPPORTED: return "VK_ERROR_FORMAT_NOT_SUPPORTED";
    case VK_ERROR_FRAGMENTED_POOL: return "VK_ERROR_FRAGMENTED_POOL";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "VkResult";
    }
}

tf_status tf__vk_fail_vk(const tf_host_api *host, const char *what, VkResult r)
{
    tf_status st = r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY
                       ? TF_ERR_OUT_OF_MEMORY
                       : TF_ERR_BACKEND;
    return tf__vk_fail(host, st, "vulkan: %s: %s (%d)", what, tf__vk_result_name(r), (int)r);
}

tf_status tf__vk_fail_dev(vk_engine *e, const char *what, VkResult r)
{
    if (r != VK_ERROR_DEVICE_LOST)
        return tf__vk_fail_vk(e->host, what, r);
    char why[160];
    snprintf(why, sizeof why, "the device was lost (%s: VK_ERROR_DEVICE_LOST)", what);
    return tf__vk_lose(e, TF_ERR_DEVICE_LOST, why);
}

tf_status tf__vk_lose(vk_engine *e, tf_status status, const char *why)
{
    if (atomic_load(&e->lost) == 0) {
        snprintf(e->lost_why, sizeof e->lost_why, "%s", why);
        atomic_store(&e->lost, 1);
        /* A lost device answers at once; an injected loss (debug_fail) waits here for the
           work really submitted, so nothing is freed under a running batch. */
        vkDeviceWaitIdle(e->dev);
        for (uint32_t i = 0; i < VK_FRAMES; i++)
            e->frames[i].in_flight = 0;
        /* No batch will run again: every buffer may be released now. */
        pthread_mutex_lock(&e->lock);
        e->completed = UINT64_MAX;
        pthread_mutex_unlock(&e->lock);
        tf__vk_release_deferred(e);
        e->pending_status = TF_OK;
        tf__vk_log(e->host, TF_LOG_ERROR, "vulkan: engine on \"%s\" unusable: %s",
                   e->phys->info.name, e->lost_why);
    }
    return tf__vk_fail(e->host, status,
                       "vulkan: engine on \"%s\" unusable: %s; every later call fails with "
                       "TF_ERR_DEVICE_LOST (free its buffers, destroy it, create a new engine)",
                       e->phys->info.name, e->lost_why);
}

tf_status tf__vk_check_lost(vk_engine *e, const char *what)
{
    if (atomic_load(&e->lost) == 0)
        return TF_OK;
    return tf__vk_fail(e->host, TF_ERR_DEVICE_LOST,
                       "vulkan: %s: the engine on \"%s\" is unusable since %s; create a new "
                       "engine",
                       what, e->phys->info.name, e->lost_why);
}

void tf__vk_log(const tf_host_api *host, tf_log_level level, const char *fmt, ...)
{
    if (!TF_ABI_HAS_FIELD(host, tf_host_api, log) || host->log == NULL)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    host->log(host->ctx, level, msg);
}

const char *tf__vk_prim_name(uint32_t prim)
{
#define PRIM_NAME(NAME, name, value) [TF_PRIM_##NAME] = #NAME,
    static const char *const names[TF_PRIM_COUNT_] = {TF_PRIM_LIST(PRIM_NAME)};
#undef PRIM_NAME
    return prim < TF_PRIM_COUNT_ ? names[prim] : "?";
}

/* ---- plugin level ------------------------------------------------------------------- */

static tf_status vk_init(const tf_host_api *host, void **plugin_ctx)
{
    if (host == NULL || plugin_ctx == NULL)
        return TF_ERR_VALIDATION;
    vk_plugin *pl = host->alloc(host->ctx, sizeof *pl, 0);
    if (pl == NULL)
        return tf__vk_fail(host, TF_ERR_OUT_OF_MEMORY, "vulkan: init: out of memory");
    memset(pl, 0, sizeof *pl);
    pl->host = host;
    atomic_init(&pl->validation_messages, 0u);
    tf_status st = tf__vk_instance_create(pl);
    if (st != TF_OK) {
        host->free(host->ctx, pl);
        return st;
    }
    tf__vk_log(host, TF_LOG_INFO, "vulkan: %u device(s)%s", pl->n_devices,
               pl->validation ? ", validation layer on" : "");
    *plugin_ctx = pl;
    return TF_OK;
}

static void vk_shutdown(void *plugin_ctx)
{
    vk_plugin *pl = plugin_ctx;
    if (pl == NULL)
        return;
    tf__vk_instance_destroy(pl);
    pl->host->free(pl->host->ctx, pl);
}

static uint32_t vk_device_count(void *plugin_ctx)
{
    return ((const vk_plugin *)plugin_ctx)->n_devices;
}

static tf_status vk_device_info(void *plugin_ctx, uint32_t index, tf_device_info *info)
{
    const vk_plugin *pl = plugin_ctx;
    if (info == NULL)
        return tf__vk_fail(pl->host, TF_ERR_VALIDATION, "vulkan: device_info: info is NULL");
    if (index >= pl->n_devices)
        return tf__vk_fail(pl->host, TF_ERR_VALIDATION,
                           "vulkan: device_info: device index %u out of range (%u devices)", index,
                           pl->n_devices);
    const tf_device_info *d = &pl->devices[index].info;
    size_t n = info->struct_size < sizeof *d ? info->struct_size : sizeof *d;
    const size_t skip = sizeof info->struct_size;
    if (n > skip)
        memcpy((char *)info + skip, (const char *)d + skip, n - skip);
    return TF_OK;
}

/* ---- engine instances ---------------------------------------------------------------- */

static int memory_type(const VkPhysicalDeviceMemoryProperties *mp, VkMemoryPropertyFlags want,
                       VkMemoryPropertyFlags prefer)
{
    int fallback = -1;
    for (uint32_t i = 0; i < mp->memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = mp->memoryTypes[i].propertyFlags;
        if ((f & want) != want)
            continue;
        if ((f & prefer) == prefer)
            return (int)i;
        if (fallback < 0)
            fallback = (int)i;
    }
    return fallback;
}

static tf_status device_create(vk_engine *e)
{
    const vk_physical *p = e->phys;
    float priority = 1.0f;
    VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                  .queueFamilyIndex = p->queue_family,
                                  .queueCount = 1,
                                  .pQueuePriorities = &priority};
    VkPhysicalDeviceVulkan12Features f12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
        .storageBuffer8BitAccess = p->bool8 ? VK_TRUE : VK_FALSE,
        .shaderInt8 = p->bool8 ? VK_TRUE : VK_FALSE};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = p->bool8 ? &f12 : NULL};
    f2.features.shaderFloat64 = p->f64 ? VK_TRUE : VK_FALSE;
    f2.features.shaderInt64 = p->i64 ? VK_TRUE : VK_FALSE;
    VkDeviceCreateInfo di = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                             .pNext = &f2,
                             .queueCreateInfoCount = 1,
                             .pQueueCreateInfos = &qi};
    VkResult r = vkCreateDevice(p->handle, &di, NULL, &e->dev);
    if (r != VK_SUCCESS) {
        e->dev = VK_NULL_HANDLE;
        return tf__vk_fail_vk(e->host, "create: vkCreateDevice", r);
    }
    vkGetDeviceQueue(e->dev, p->queue_family, 0, &e->queue);

    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(p->handle, &mp);
    int dev = memory_type(&mp, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
    if (dev < 0)
        dev = memory_type(&mp, 0, 0);
    int host =
        memory_type(&mp, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                    VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    if (dev < 0 || host < 0)
        return tf__vk_fail(e->host, TF_ERR_BACKEND,
                           "vulkan: create: device \"%s\" has no usable memory type", p->info.name);
    e->mem_device = (uint32_t)dev;
    e->mem_host = (uint32_t)host;
    e->heap = mp.memoryTypes[dev].heapIndex;
    e->heap_size = mp.memoryHeaps[e->heap].size;
    e->max_range = p->props.limits.maxStorageBufferRange;
    VkDeviceSize align = p->props.limits.minStorageBufferOffsetAlignment;
    e->param_align = align > 16 ? align : 16;
    if (align > VK_ALIGN)
        return tf__vk_fail(e->host, TF_ERR_BACKEND,
                           "vulkan: create: minStorageBufferOffsetAlignment %llu > %u",
                           (unsigned long long)align, VK_ALIGN);
    /* Every pipeline shares one set layout of VK_MAX_BINDINGS + 2 = 15 storage buffers (FUSED
       names them all), above the spec's guaranteed 4 per stage (the 24 per set it guarantees
       cover it); desktop drivers and lavapipe allow thousands. */
    uint32_t per_stage = p->props.limits.maxPerStageDescriptorStorageBuffers;
    if (per_stage < VK_MAX_BINDINGS + 2)
        return tf__vk_fail(e->host, TF_ERR_BACKEND,
                           "vulkan: create: device \"%s\" allows %u storage buffers per shader "
                           "stage; the engine needs %u",
                           p->info.name, per_stage, VK_MAX_BINDINGS + 2);
    return TF_OK;
}

static void vk_destroy(tf_engine_state *engine)
{
    vk_engine *e = engine;
    if (e == NULL)
        return;
    if (e->dev != VK_NULL_HANDLE) {
        tf__vk_wait_all(e);
        vkDeviceWaitIdle(e->dev);
        tf__vk_frames_destroy(e);
        tf__vk_pipelines_destroy(e);
        tf__vk_memory_destroy(e);
        vkDestroyDevice(e->dev, NULL);
    }
    pthread_mutex_destroy(&e->rec_lock);
    pthread_mutex_destroy(&e->lock);
    e->host->free(e->host->ctx, e);
}

static tf_status vk_create(void *plugin_ctx, const tf_engine_options *options,
                           tf_engine_state **out)
{
    vk_plugin *pl = plugin_ctx;
    const tf_host_api *host = pl->host;
    if (out == NULL)
        return tf__vk_fail(host, TF_ERR_VALIDATION, "vulkan: create: out is NULL");
    uint32_t index;
    vk_options opts;
    tf_status st = tf__vk_device_choose(pl, options, &index, &opts);
    if (st != TF_OK)
        return st;
    vk_engine *e = host->alloc(host->ctx, sizeof *e, 0);
    if (e == NULL)
        return tf__vk_fail(host, TF_ERR_OUT_OF_MEMORY, "vulkan: create: out of memory");
    memset(e, 0, sizeof *e);
    e->host = host;
    e->plugin = pl;
    e->phys = &pl->devices[index];
    e->subgroup_reduce = opts.subgroup_reduce && e->phys->subgroups;
    e->f64 = opts.float64 && e->phys->f64;
    e->mem_limit = opts.memory_limit;
    e->max_programs = opts.fused_pipelines;
    e->fault = opts.fault;
    e->fault_at = opts.fault_at;
    atomic_init(&e->lost, 0);
    if (pthread_mutex_init(&e->lock, NULL) != 0) {
        host->free(host->ctx, e);
        return tf__vk_fail(host, TF_ERR_BACKEND, "vulkan: create: pthread_mutex_init failed");
    }
    if (pthread_mutex_init(&e->rec_lock, NULL) != 0) {
        pthread_mutex_destroy(&e->lock);
        host->free(host->ctx, e);
        return tf__vk_fail(host, TF_ERR_BACKEND, "vulkan: create: pthread_mutex_init failed");
    }
    st = device_create(e);
    if (st == TF_OK)
        st = tf__vk_pipelines_create(e);
    if (st == TF_OK)
        st = tf__vk_frames_create(e);
    if (st != TF_OK) {
        vk_destroy(e);
        return st;
    }
    tf__vk_log(host, TF_LOG_INFO, "vulkan: engine on \"%s\" (%s), %s reductions%s",
               e->phys->info.name, e->phys->info.driver,
               e->subgroup_reduce ? "subgroup" : "shared-memory",
               e->fault != VK_FAULT_NONE ? ", debug_fail set (testing only)" : "");
    *out = e;
    return TF_OK;
}

/* ---- buffers and transfers ----------------------------------------------------------- */

static tf_status vk_buffer_alloc(tf_engine_state *engine, size_t nbytes, tf_engine_buffer **out,
                                 void **host_ptr)
{
    if (out == NULL)
        return tf__vk_fail(engine->host, TF_ERR_VALIDATION, "vulkan: buffer_alloc: out is NULL");
    tf_status st = tf__vk_check_lost(engine, "buffer_alloc");
    if (st == TF_OK)
        st = tf__vk_buffer_alloc(engine, nbytes, 0, out);
    if (st == TF_OK && host_ptr != NULL)
        *host_ptr = NULL;
    return st;
}

static void vk_buffer_free(tf_engine_state *engine, tf_engine_buffer *buffer)
{
    tf__vk_buffer_free(engine, buffer);
}

static tf_status range_ok(const vk_engine *e, const char *what, const tf_engine_buffer *b,
                          size_t offset, size_t nbytes, const void *host_mem)
{
    if (b == NULL || (host_mem == NULL && nbytes > 0))
        return tf__vk_fail(e->host, TF_ERR_VALIDATION, "vulkan: %s: NULL buffer or host pointer",
                           what);
    if (offset > b->size || nbytes > b->size - offset)
        return tf__vk_fail(e->host, TF_ERR_VALIDATION,
                           "vulkan: %s: bytes [%zu, %zu + %zu) outside a buffer of %llu bytes",
                           what, offset, offset, nbytes, (unsigned long long)b->size);
    return TF_OK;
}

static tf_status vk_upload_locked(tf_engine_state *engine, tf_engine_buffer *buffer, size_t offset,
                                  const void *src, size_t nbytes)
{
    tf_status st = range_ok(engine, "upload", buffer, offset, nbytes, src);
    if (st == TF_OK)
        st = tf__vk_check_lost(engine, "upload");
    if (st == TF_OK && nbytes > 0)
        st = tf__vk_record_upload(engine, buffer, offset, src, nbytes);
    return st;
}

static tf_status vk_download_locked(tf_engine_state *engine, const tf_engine_buffer *buffer,
                                    size_t offset, void *dst, size_t nbytes)
{
    tf_status st = range_ok(engine, "download", buffer, offset, nbytes, dst);
    if (st == TF_OK)
        st = tf__vk_check_lost(engine, "download");
    if (st == TF_OK)
        st = tf__vk_download(engine, buffer, offset, dst, nbytes);
    return st;
}

static tf_status vk_buffer_copy_locked(tf_engine_state *engine, const tf_engine_buffer *src,
                                       size_t src_offset, tf_engine_buffer *dst, size_t dst_offset,
                                       size_t nbytes)
{
    vk_engine *e = engine;
    tf_status st = range_ok(e, "buffer_copy (source)", src, src_offset, nbytes, src);
    if (st == TF_OK)
        st = range_ok(e, "buffer_copy (destination)", dst, dst_offset, nbytes, dst);
    if (st == TF_OK)
        st = tf__vk_check_lost(e, "buffer_copy");
    if (st != TF_OK || nbytes == 0)
        return st;
    int overlap =
        src == dst && src_offset < dst_offset + nbytes && dst_offset < src_offset + nbytes;
    if (!overlap)
        return tf__vk_record_copy(e, src, src_offset, dst, dst_offset, nbytes);
    /* vkCmdCopyBuffer forbids overlapping regions: go through a temporary. */
    tf_engine_buffer *tmp;
    st = tf__vk_buffer_alloc(e, nbytes, 1, &tmp);
    if (st != TF_OK)
        return st;
    st = tf__vk_record_copy(e, src, src_offset, tmp, 0, nbytes);
    if (st == TF_OK)
        st = tf__vk_record_copy(e, tmp, 0, dst, dst_offset, nbytes);
    tf__vk_buffer_free(e, tmp); /* released once the batch completes */
    return st;
}

/* ---- execution ------------------------------------------------------------------------ */

static int vk_supports(tf_engine_state *engine, uint32_t prim, uint32_t op, const uint32_t *dtypes,
                       uint32_t n_dtypes)
{
    return engine != NULL && tf__vk_supports(engine, prim, op, dtypes, n_dtypes);
}

static tf_status vk_execute_locked(tf_engine_state *engine, const tf_exec *exec)
{
    if (engine == NULL || exec == NULL)
        return TF_ERR_VALIDATION;
    tf_status st = tf__vk_check_lost(engine, "execute");
    return st != TF_OK ? st : tf__vk_execute(engine, exec);
}

static tf_status vk_synchronize_locked(tf_engine_state *engine)
{
    tf_status st = tf__vk_check_lost(engine, "synchronize");
    return st != TF_OK ? st : tf__vk_finish(engine);
}

/* ---- the entry points that record: each holds rec_lock (see vk_internal.h) --------------- */

static tf_status vk_upload(tf_engine_state *engine, tf_engine_buffer *buffer, size_t offset,
                           const void *src, size_t nbytes)
{
    pthread_mutex_lock(&engine->rec_lock);
    tf_status st = vk_upload_locked(engine, buffer, offset, src, nbytes);
    pthread_mutex_unlock(&engine->rec_lock);
    return st;
}

static tf_status vk_download(tf_engine_state *engine, const tf_engine_buffer *buffer, size_t offset,
                             void *dst, size_t nbytes)
{
    pthread_mutex_lock(&engine->rec_lock);
    tf_status st = vk_download_locked(engine, buffer, offset, dst, nbytes);
    pthread_mutex_unlock(&engine->rec_lock);
    return st;
}

static tf_status vk_buffer_copy(tf_engine_state *engine, const tf_engine_buffer *src,
                                size_t src_offset, tf_engine_buffer *dst, size_t dst_offset,
                                size_t nbytes)
{
    pthread_mutex_lock(&engine->rec_lock);
    tf_status st = vk_buffer_copy_locked(engine, src, src_offset, dst, dst_offset, nbytes);
    pthread_mutex_unlock(&engine->rec_lock);
    return st;
}

static tf_status vk_execute(tf_engine_state *engine, const tf_exec *exec)
{
    if (engine == NULL)
        return TF_ERR_VALIDATION;
    pthread_mutex_lock(&engine->rec_lock);
    tf_status st = vk_execute_locked(engine, exec);
    pthread_mutex_unlock(&engine->rec_lock);
    return st;
}

static tf_status vk_synchronize(tf_engine_state *engine)
{
    pthread_mutex_lock(&engine->rec_lock);
    tf_status st = vk_synchronize_locked(engine);
    pthread_mutex_unlock(&engine->rec_lock);
    return st;
}

/* ---- descriptor and entry ---------------------------------------------------------------- */

static const tf_engine_plugin vk_descriptor = {
    .struct_size = sizeof(tf_engine_plugin),
    .abi_major = TF_ENGINE_ABI_MAJOR,
    .abi_minor = TF_ENGINE_ABI_MINOR,
    /* FUSED runs a program as one pass of code compiled for it, faster than its steps as
       separate dispatches (README.md, "FUSED"): the host may defer chains into it. */
    .capabilities = TF_ENGINE_CAP_DEFER_CHAINS,
    .name = "vulkan",
    .version = VK_PLUGIN_VERSION,
    .description = "Vulkan compute engine: embedded SPIR-V, batched command buffers",
    .init = vk_init,
    .shutdown = vk_shutdown,
    .device_count = vk_device_count,
    .device_info = vk_device_info,
    .create = vk_create,
    .destroy = vk_destroy,
    .supports = vk_supports,
    .buffer_alloc = vk_buffer_alloc,
    .buffer_free = vk_buffer_free,
    .upload = vk_upload,
    .download = vk_download,
    .buffer_copy = vk_buffer_copy,
    .execute = vk_execute,
    .synchronize = vk_synchronize,
};

TF_ENGINE_EXPORT const tf_engine_plugin *tf_engine_plugin_v1(const tf_host_api *host)
{
    if (host == NULL || host->abi_major != TF_ENGINE_ABI_MAJOR ||
        !TF_ABI_HAS_FIELD(host, tf_host_api, report_error) || host->alloc == NULL ||
        host->free == NULL || host->report_error == NULL)
        return NULL;
    return &vk_descriptor;
}
