/*
 * vk_batch.c - the execution model: work is recorded into the command
 * buffer of the current frame and submitted in batches, never one submit
 * per op.
 *
 * A batch is submitted when the host needs a value (download, synchronize),
 * when it holds VK_BATCH_DISPATCHES dispatches or its parameter/staging
 * rings are full. Up to VK_FRAMES batches are in flight; recording into a
 * frame first waits for that frame's previous batch. Buffers freed while a
 * batch may use them are released when it completes (vk_memory.c).
 *
 * Hazards: the buffers written and read since the last barrier are tracked;
 * a dispatch or copy that reads something written, or writes something read
 * or written, since then gets one global memory barrier first. Independent
 * dispatches run without barriers.
 *
 * Pipelines are made lazily on first use, keyed by shader and
 * specialisation constant, through a VkPipelineCache loaded at create from
 * $XDG_CACHE_HOME/tenferro/vulkan-<pipelineCacheUUID>.bin (or
 * ~/.cache/...) and saved back at destroy; failures there only log.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "vk_internal.h"

/* ---- pipeline cache file ----------------------------------------------------------- */

static int make_dirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int bad = mkdir(path, 0700) != 0 && errno != EEXIST;
        *p = '/';
        if (bad)
            return -1;
    }
    return 0;
}

static void cache_path(vk_engine *e)
{
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    char uuid[2 * VK_UUID_SIZE + 1];
    for (unsigned i = 0; i < VK_UUID_SIZE; i++)
        snprintf(uuid + 2 * i, 3, "%02x", e->phys->props.pipelineCacheUUID[i]);
    e->cache_path[0] = '\0';
    if (xdg != NULL && xdg[0] == '/')
        snprintf(e->cache_path, sizeof e->cache_path, "%s/tenferro/vulkan-%s.bin", xdg, uuid);
    else if (home != NULL && home[0] == '/')
        snprintf(e->cache_path, sizeof e->cache_path, "%s/.cache/tenferro/vulkan-%s.bin", home,
                 uuid);
}

/* Reads the cache file into host memory; *data NULL when there is none. */
static void cache_read(vk_engine *e, void **data, size_t *size)
{
    *data = NULL;
    *size = 0;
    if (e->cache_path[0] == '\0')
        return;
    FILE *f = fopen(e->cache_path, "rb");
    if (f == NULL)
        return;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0)
        n = ftell(f);
    if (n > 0 && fseek(f, 0, SEEK_SET) == 0) {
        *data = e->host->alloc(e->host->ctx, (size_t)n, 0);
        if (*data != NULL && fread(*data, 1, (size_t)n, f) == (size_t)n) {
            *size = (size_t)n;
        } else {
            e->host->free(e->host->ctx, *data);
            *data = NULL;
            tf__vk_log(e->host, TF_LOG_WARN, "vulkan: cannot read the pipeline cache %s",
                       e->cache_path);
        }
    }
    fclose(f);
}

static void cache_save(vk_engine *e)
{
    size_t size = 0;
    if (e->cache_path[0] == '\0' || e->pipe_cache == VK_NULL_HANDLE ||
        vkGetPipelineCacheData(e->dev, e->pipe_cache, &size, NULL) != VK_SUCCESS || size == 0)
        return;
    void *data = e->host->alloc(e->host->ctx, size, 0);
    if (data == NULL)
        return;
    char tmp[sizeof e->cache_path + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", e->cache_path);
    int ok = vkGetPipelineCacheData(e->dev, e->pipe_cache, &size, data) == VK_SUCCESS &&
             make_dirs(tmp) == 0;
    FILE *f = ok ? fopen(tmp, "wb") : NULL;
    ok = f != NULL && fwrite(data, 1, size, f) == size;
    if (f != NULL)
        ok = fclose(f) == 0 && ok;
    ok = ok && rename(tmp, e->cache_path) == 0;
    if (!ok) {
        remove(tmp);
        tf__vk_log(e->host, TF_LOG_WARN, "vulkan: cannot write the pipeline cache %s",
                   e->cache_path);
    }
    e->host->free(e->host->ctx, data);
}

/* ---- layouts and pipelines ------------------------------------------------------------- */

tf_status tf__vk_pipelines_create(vk_engine *e)
{
    VkDescriptorSetLayoutBinding binds[VK_MAX_BINDINGS + 2];
    for (uint32_t i = 0; i < VK_MAX_BINDINGS + 2; i++)
        binds[i] =
            (VkDescriptorSetLayoutBinding){.binding = i,
                                           .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                           .descriptorCount = 1,
                                           .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo li = {.sType =
                                              VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                          .bindingCount = VK_MAX_BINDINGS + 2,
                                          .pBindings = binds};
    VkResult r = vkCreateDescriptorSetLayout(e->dev, &li, NULL, &e->set_layout);
    if (r != VK_SUCCESS)
        return tf__vk_fail_vk(e->host, "create: vkCreateDescriptorSetLayout", r);
    VkPushConstantRange pr = {
        .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = sizeof(vk_push)};
    VkPipelineLayoutCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                     .setLayoutCount = 1,
                                     .pSetLayouts = &e->set_layout,
                                     .pushConstantRangeCount = 1,
                                     .pPushConstantRanges = &pr};
    r = vkCreatePipelineLayout(e->dev, &pi, NULL, &e->pipe_layout);
    if (r != VK_SUCCESS)
        return tf__vk_fail_vk(e->host, "create: vkCreatePipelineLayout", r);

    cache_path(e);
    void *data;
    size_t size;
    cache_read(e, &data, &size);
    VkPipelineCacheCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
                                    .initialDataSize = size,
                                    .pInitialData = data};
    r = vkCreatePipelineCache(e->dev, &ci, NULL, &e->pipe_cache);
    if (r != VK_SUCCESS && data != NULL) {
        /* A stale or damaged file: start empty. */
        tf__vk_log(e->host, TF_LOG_WARN, "vulkan: ignoring the pipeline cache %s", e->cache_path);
        ci.initialDataSize = 0;
        ci.pInitialData = NULL;
        r = vkCreatePipelineCache(e->dev, &ci, NULL, &e->pipe_cache);
    }
    e->host->free(e->host->ctx, data);
    if (r != VK_SUCCESS)
        return tf__vk_fail_vk(e->host, "create: vkCreatePipelineCache", r);
    return TF_OK;
}

void tf__vk_pipelines_destroy(vk_engine *e)
{
    if (e->dev == VK_NULL_HANDLE)
        return;
    cache_save(e);
    for (uint32_t i = 0; i < e->n_pipes; i++)
        vkDestroyPipeline(e->dev, e->pipes[i].pipe, NULL);
    e->host->free(e->host->ctx, e->pipes);
    e->pipes = NULL;
    e->n_pipes = e->cap_pipes = e->n_programs = 0;
    for (uint32_t i = 0; i < VK_SHADER_COUNT_; i++) {
        if (e->modules[i] != VK_NULL_HANDLE)
            vkDestroyShaderModule(e->dev, e->modules[i], NULL);
        e->modules[i] = VK_NULL_HANDLE;
    }
    if (e->pipe_cache != VK_NULL_HANDLE)
        vkDestroyPipelineCache(e->dev, e->pipe_cache, NULL);
    if (e->pipe_layout != VK_NULL_HANDLE)
        vkDestroyPipelineLayout(e->dev, e->pipe_layout, NULL);
    if (e->set_layout != VK_NULL_HANDLE)
        vkDestroyDescriptorSetLayout(e->dev, e->set_layout, NULL);
    e->pipe_cache = VK_NULL_HANDLE;
    e->pipe_layout = VK_NULL_HANDLE;
    e->set_layout = VK_NULL_HANDLE;
}

/* Drops the least recently used FUSED program pipeline that no pending batch holds. */
static void program_evict(vk_engine *e)
{
    uint32_t victim = UINT32_MAX;
    for (uint32_t i = 0; i < e->n_pipes; i++) {
        const vk_pipeline *p = &e->pipes[i];
        if (p->program && p->last_use <= e->completed &&
            (victim == UINT32_MAX || p->last_use < e->pipes[victim].last_use))
            victim = i;
    }
    if (victim == UINT32_MAX)
        return; /* every one is in a pending batch: the cache stays over its bound for now */
    tf__vk_log(e->host, TF_LOG_DEBUG, "vulkan: pipeline %s program dropped",
               tf__vk_spirv[e->pipes[victim].shader].name);
    vkDestroyPipeline(e->dev, e->pipes[victim].pipe, NULL);
    e->pipes[victim] = e->pipes[--e->n_pipes];
    e->n_programs--;
}

/*
 * The pipeline of d's shader and specialisation constants, made on first use.
 * It is marked used by batch `serial`: a FUSED program's pipeline is destroyed
 * (to keep at most max_programs) only once no pending batch can hold it.
 */
static tf_status pipeline_get(vk_engine *e, const vk_dispatch *d, uint64_t serial, VkPipeline *out)
{
    uint32_t shader = d->shader, spec[VK_SPEC_WORDS] = {d->spec};
    if (d->program != NULL)
        memcpy(spec + 1, d->program, (VK_SPEC_WORDS - 1) * sizeof *spec);
    for (uint32_t i = 0; i < e->n_pipes; i++) {
        vk_pipeline *p = &e->pipes[i];
        if (p->shader == shader && p->spec[0] == spec[0] &&
            memcmp(p->spec, spec, sizeof spec) == 0) {
            p->last_use = serial;
            *out = p->pipe;
            return TF_OK;
        }
    }
    const tf_host_api *host = e->host;
    if (d->program == NULL && e->modules[shader] == VK_NULL_HANDLE) {
        VkShaderModuleCreateInfo mi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                       .codeSize = tf__vk_spirv[shader].size,
                                       .pCode = tf__vk_spirv[shader].code};
        VkResult r = vkCreateShaderModule(e->dev, &mi, NULL, &e->modules[shader]);
        if (r != VK_SUCCESS)
            return tf__vk_fail_vk(host, "vkCreateShaderModule", r);
    }
    if (d->program != NULL && e->n_programs >= e->max_programs)
        program_evict(e);
    if (e->n_pipes == e->cap_pipes) {
        uint32_t cap = e->cap_pipes ? 2 * e->cap_pipes : 32;
        vk_pipeline *np = host->alloc(host->ctx, cap * sizeof *np, 0);
        if (np == NULL)
            return tf__vk_fail(host, TF_ERR_OUT_OF_MEMORY, "vulkan: out of memory (pipelines)");
        if (e->n_pipes)
            memcpy(np, e->pipes, e->n_pipes * sizeof *np);
        host->free(host->ctx, e->pipes);
        e->pipes = np;
        e->cap_pipes = cap;
    }
    static const VkSpecializationMapEntry entries[VK_SPEC_WORDS] = {
        {0, 0, 4},   {1, 4, 4},   {2, 8, 4},   {3, 12, 4},  {4, 16, 4},  {5, 20, 4},  {6, 24, 4},
        {7, 28, 4},  {8, 32, 4},  {9, 36, 4},  {10, 40, 4}, {11, 44, 4}, {12, 48, 4}, {13, 52, 4},
        {14, 56, 4}, {15, 60, 4}, {16, 64, 4}, {17, 68, 4}, {18, 72, 4}};
    uint32_t n_spec = d->program != NULL ? VK_SPEC_WORDS : 1;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* A FUSED program has a module of its own, needed only while its pipeline is made. */
    VkShaderModule module = e->modules[shader];
    if (d->program != NULL) {
        tf_status st = tf__vk_program_module(e, shader, spec, &module);
        if (st != TF_OK)
            return st;
    }
    VkSpecializationInfo si = {.mapEntryCount = n_spec,
                               .pMapEntries = entries,
                               .dataSize = n_spec * sizeof *spec,
                               .pData = spec};
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = module,
                  .pName = "main",
                  .pSpecializationInfo = &si},
        .layout = e->pipe_layout,
    };
    VkPipeline p;
    VkResult r = vkCreateComputePipelines(e->dev, e->pipe_cache, 1, &ci, NULL, &p);
    if (d->program != NULL)
        vkDestroyShaderModule(e->dev, module, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (r != VK_SUCCESS)
        return tf__vk_fail(host, TF_ERR_BACKEND,
                           "vulkan: vkCreateComputePipelines(%s, spec %u): %s",
                           tf__vk_spirv[shader].name, spec[0], tf__vk_result_name(r));
    vk_pipeline *np = &e->pipes[e->n_pipes++];
    *np = (vk_pipeline){
        .shader = shader, .program = d->program != NULL, .last_use = serial, .pipe = p};
    memcpy(np->spec, spec, sizeof spec);
    e->n_programs += d->program != NULL;
    /* Once per pipeline and engine: which kernels a workload uses (the tests read it), and
       what making it cost. */
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
    if (d->program != NULL)
        tf__vk_log(host, TF_LOG_DEBUG, "vulkan: pipeline %s spec %u program %08x (%.1f ms)",
                   tf__vk_spirv[shader].name, spec[0], spec[1], ms);
    else
        tf__vk_log(host, TF_LOG_DEBUG, "vulkan: pipeline %s spec %u (%.1f ms)",
                   tf__vk_spirv[shader].name, spec[0], ms);
    *out = p;
    return TF_OK;
}

/* ---- frames ------------------------------------------------------------------------------ */

tf_status tf__vk_frames_create(vk_engine *e)
{
    VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                  .queueFamilyIndex = e->phys->queue_family};
    VkResult r = vkCreateCommandPool(e->dev, &pi, NULL, &e->cmd_pool);
    if (r != VK_SUCCESS)
        return tf__vk_fail_vk(e->host, "create: vkCreateCommandPool", r);
    VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                               .descriptorCount = VK_BATCH_DISPATCHES * (VK_MAX_BINDINGS + 2)};
    for (uint32_t i = 0; i < VK_FRAMES; i++) {
        vk_frame *f = &e->frames[i];
        VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                          .commandPool = e->cmd_pool,
                                          .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                          .commandBufferCount = 1};
        VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        VkDescriptorPoolCreateInfo di = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                         .maxSets = VK_BATCH_DISPATCHES,
                                         .poolSizeCount = 1,
                                         .pPoolSizes = &ps};
        r = vkAllocateCommandBuffers(e->dev, &ai, &f->cmd);
        if (r == VK_SUCCESS)
            r = vkCreateFence(e->dev, &fi, NULL, &f->fence);
        if (r == VK_SUCCESS)
            r = vkCreateDescriptorPool(e->dev, &di, NULL, &f->pool);
        if (r != VK_SUCCESS)
            return tf__vk_fail_vk(e->host, "create: frame resources", r);
        tf_status st = tf__vk_hostbuf_create(e, VK_PARAMS_BYTES, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                                             &f->params);
        if (st == TF_OK)
            st = tf__vk_hostbuf_create(
                e, VK_STAGING_BYTES,
                VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT, &f->staging);
        if (st != TF_OK)
            return st;
    }
    return TF_OK;
}

void tf__vk_frames_destroy(vk_engine *e)
{
    for (uint32_t i = 0; i < VK_FRAMES; i++) {
        vk_frame *f = &e->frames[i];
        if (f->recording)
            vkEndCommandBuffer(f->cmd);
        f->recording = 0;
        tf__vk_hostbuf_destroy(e, &f->params);
        tf__vk_hostbuf_destroy(e, &f->staging);
        if (f->pool != VK_NULL_HANDLE)
            vkDestroyDescriptorPool(e->dev, f->pool, NULL);
        if (f->fence != VK_NULL_HANDLE)
            vkDestroyFence(e->dev, f->fence, NULL);
        f->pool = VK_NULL_HANDLE;
        f->fence = VK_NULL_HANDLE;
    }
    if (e->cmd_pool != VK_NULL_HANDLE)
        vkDestroyCommandPool(e->dev, e->cmd_pool, NULL); /* frees the command buffers */
    e->cmd_pool = VK_NULL_HANDLE;
}

/* The error words of a finished frame become the pending status. */
static void collect_errors(vk_engine *e, vk_frame *f)
{
    uint32_t *err = f->params.map;
    if (err[0] != 0 && e->pending_status == TF_OK) {
        if (err[0] == VK_ERR_DIV_ZERO) {
            e->pending_status = TF_ERR_VALIDATION;
            snprintf(e->pending_msg, sizeof e->pending_msg,
                     "vulkan: BINARY on integers: division by zero (element %u of a batched op)",
                     err[1]);
        } else if (err[0] == VK_ERR_INDEX) {
            e->pending_status = TF_ERR_OUT_OF_RANGE;
            snprintf(e->pending_msg, sizeof e->pending_msg,
                     "vulkan: GATHER/SCATTER: an index is outside [0, extent) (output element "
                     "%u of a batched op)",
                     err[1]);
        } else {
            e->pending_status = TF_ERR_OUT_OF_RANGE;
            snprintf(e->pending_msg, sizeof e->pending_msg,
                     "vulkan: checked CONVERT: element %u would change value", err[1]);
        }
    }
}

/* The debug_fail option: whether this call (the count-th of its kind) is the one to fail. */
static int injected(const vk_engine *e, vk_fault fault, uint64_t count)
{
    return e->fault == fault && count == e->fault_at;
}

static tf_status frame_wait(vk_engine *e, vk_frame *f)
{
    if (!f->in_flight)
        return TF_OK;
    VkResult r = injected(e, VK_FAULT_WAIT_LOST, ++e->wait_calls)
                     ? VK_ERROR_DEVICE_LOST
                     : vkWaitForFences(e->dev, 1, &f->fence, VK_TRUE, UINT64_MAX);
    if (r != VK_SUCCESS)
        return tf__vk_fail_dev(e, "vkWaitForFences", r); /* out of memory: waited again later */
    f->in_flight = 0;
    collect_errors(e, f);
    pthread_mutex_lock(&e->lock);
    if (f->serial > e->completed)
        e->completed = f->serial;
    pthread_mutex_unlock(&e->lock);
    tf__vk_release_deferred(e);
    return TF_OK;
}

/* The frame to record into, begun (waiting for its previous batch if needed). */
static tf_status frame_open(vk_engine *e, vk_frame **out)
{
    vk_frame *f = &e->frames[e->cur];
    if (f->ended) {
        /* A batch whose submit failed for lack of memory goes first, in order. */
        tf_status st = tf__vk_submit(e);
        if (st != TF_OK)
            return st;
        f = &e->frames[e->cur];
    }
    if (!f->recording) {
        tf_status st = frame_wait(e, f);
        if (st != TF_OK)
            return st;
        VkResult r = vkResetFences(e->dev, 1, &f->fence);
        if (r == VK_SUCCESS)
            r = vkResetDescriptorPool(e->dev, f->pool, 0);
        VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                       .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
        if (r == VK_SUCCESS)
            r = vkBeginCommandBuffer(f->cmd, &bi);
        if (r != VK_SUCCESS)
            return tf__vk_fail_dev(e, "beginning a batch", r);
        f->recording = 1;
        f->dispatches = 0;
        f->params_used = e->param_align > 16 ? e->param_align : 16; /* error words first */
        memset(f->params.map, 0, 16); /* the previous batch of this frame has completed */
        f->staging_used = 0;
        f->serial = ++e->next_serial;
        e->n_written = e->n_read = 0;
    }
    *out = f;
    return TF_OK;
}

/* Ends the recording of the current frame; a failure loses its work, so the engine. */
static tf_status frame_end(vk_engine *e, vk_frame *f)
{
    /* Make every write of the batch visible to the host once its fence signals. */
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask =
                              VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(f->cmd,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    f->recording = 0;
    VkResult r = vkEndCommandBuffer(f->cmd);
    if (r != VK_SUCCESS) {
        /* The command buffer is invalid: the work of every op recorded into it is gone,
           and results the caller was promised can no longer be produced. */
        char why[160];
        snprintf(why, sizeof why,
                 "a batch of %u dispatches could not be completed "
                 "(vkEndCommandBuffer: %s)",
                 f->dispatches, tf__vk_result_name(r));
        return tf__vk_lose(e,
                           r == VK_ERROR_DEVICE_LOST ? TF_ERR_DEVICE_LOST
                           : r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY
                               ? TF_ERR_OUT_OF_MEMORY
                               : TF_ERR_BACKEND,
                           why);
    }
    f->ended = 1;
    return TF_OK;
}

/*
 * Submits the current frame's batch. When vkQueueSubmit fails for lack of
 * memory, the spec leaves the command buffer and everything it references
 * untouched: the frame stays ended, the caller gets TF_ERR_OUT_OF_MEMORY, and
 * the next call that records or waits submits it again, so no recorded work
 * is lost and order is kept.
 */
tf_status tf__vk_submit(vk_engine *e)
{
    vk_frame *f = &e->frames[e->cur];
    if (f->recording) {
        tf_status st = frame_end(e, f);
        if (st != TF_OK)
            return st;
    }
    if (!f->ended)
        return TF_OK;
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .commandBufferCount = 1,
                       .pCommandBuffers = &f->cmd};
    uint64_t call = ++e->submit_calls;
    VkResult r = injected(e, VK_FAULT_DEVICE_LOST, call) ? VK_ERROR_DEVICE_LOST
                 : injected(e, VK_FAULT_SUBMIT_OOM, call)
                     ? VK_ERROR_OUT_OF_DEVICE_MEMORY
                     : vkQueueSubmit(e->queue, 1, &si, f->fence);
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
        return tf__vk_fail(e->host, TF_ERR_OUT_OF_MEMORY,
                           "vulkan: vkQueueSubmit of a batch of %u dispatches: %s (the batch is "
                           "kept and submitted again by the next call)",
                           f->dispatches, tf__vk_result_name(r));
    if (r != VK_SUCCESS)
        return tf__vk_fail_dev(e, "vkQueueSubmit", r);
    f->ended = 0;
    f->in_flight = 1;
    e->submits++;
    e->cur = (e->cur + 1) % VK_FRAMES;
    return TF_OK;
}

void tf__vk_wait_all(vk_engine *e)
{
    if (atomic_load(&e->lost))
        return;
    tf__vk_submit(e); /* a batch that cannot be submitted now is dropped with the engine */
    for (uint32_t i = 0; i < VK_FRAMES && !atomic_load(&e->lost); i++)
        frame_wait(e, &e->frames[i]);
}

tf_status tf__vk_drain(vk_engine *e)
{
    tf_status st = tf__vk_check_lost(e, "finishing pending work");
    if (st == TF_OK)
        st = tf__vk_submit(e);
    for (uint32_t i = 0; i < VK_FRAMES && st == TF_OK; i++)
        st = frame_wait(e, &e->frames[i]);
    return st;
}

tf_status tf__vk_finish(vk_engine *e)
{
    tf_status st = tf__vk_drain(e);
    if (st != TF_OK)
        return st;
    if (e->pending_status != TF_OK) {
        st = e->pending_status;
        e->pending_status = TF_OK;
        return tf__vk_fail(e->host, st, "%s", e->pending_msg);
    }
    return TF_OK;
}

/* ---- hazards ----------------------------------------------------------------------------- */

static int listed(const tf_engine_buffer *const *list, uint32_t n, const tf_engine_buffer *b)
{
    for (uint32_t i = 0; i < n; i++) {
        if (list[i] == b)
            return 1;
    }
    return 0;
}

/* Puts a barrier before an access to `reads` and `writes` if it depends on earlier work. */
static void order_access(vk_engine *e, vk_frame *f, const tf_engine_buffer *const *reads,
                         uint32_t n_reads, const tf_engine_buffer *const *writes, uint32_t n_writes)
{
    int need = e->n_written + n_writes > VK_HAZARD_SLOTS || e->n_read + n_reads > VK_HAZARD_SLOTS;
    for (uint32_t i = 0; i < n_reads && !need; i++)
        need = listed(e->written, e->n_written, reads[i]);
    for (uint32_t i = 0; i < n_writes && !need; i++)
        need = listed(e->written, e->n_written, writes[i]) || listed(e->read, e->n_read, writes[i]);
    if (need) {
        VkMemoryBarrier mb = {
            .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
            .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                             VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT,
            .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                             VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT};
        VkPipelineStageFlags stages =
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
        vkCmdPipelineBarrier(f->cmd, stages, stages, 0, 1, &mb, 0, NULL, 0, NULL);
        e->n_written = e->n_read = 0;
    }
    for (uint32_t i = 0; i < n_reads; i++) {
        if (!listed(e->read, e->n_read, reads[i]))
            e->read[e->n_read++] = reads[i];
    }
    for (uint32_t i = 0; i < n_writes; i++) {
        if (!listed(e->written, e->n_written, writes[i]))
            e->written[e->n_written++] = writes[i];
    }
}

/* ---- recording --------------------------------------------------------------------------- */

uint32_t tf__vk_groups(uint64_t n)
{
    uint64_t g = (n + VK_WG - 1) / VK_WG;
    return g == 0 ? 1u : (g > 65535u ? 65535u : (uint32_t)g);
}

static void touch(vk_frame *f, const tf_engine_buffer *b)
{
    atomic_store_explicit(&((tf_engine_buffer *)b)->last_use, f->serial, memory_order_relaxed);
}

tf_status tf__vk_record_dispatch(vk_engine *e, const vk_dispatch *d)
{
    VkDeviceSize pbytes = (d->n_params ? d->n_params : 1) * sizeof(int32_t);
    VkDeviceSize pspan = (pbytes + e->param_align - 1) / e->param_align * e->param_align;
    vk_frame *f;
    tf_status st = frame_open(e, &f);
    if (st == TF_OK &&
        (f->dispatches == VK_BATCH_DISPATCHES || f->params_used + pspan > f->params.size)) {
        st = tf__vk_submit(e);
        if (st == TF_OK)
            st = frame_open(e, &f);
    }
    VkPipeline pipe = VK_NULL_HANDLE;
    if (st == TF_OK)
        st = pipeline_get(e, d, f->serial, &pipe);
    if (st != TF_OK)
        return st;
    VkDescriptorSet set;
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                      .descriptorPool = f->pool,
                                      .descriptorSetCount = 1,
                                      .pSetLayouts = &e->set_layout};
    VkResult r = vkAllocateDescriptorSets(e->dev, &ai, &set);
    if (r != VK_SUCCESS)
        return tf__vk_fail_vk(e->host, "vkAllocateDescriptorSets", r);
    VkDeviceSize poff = f->params_used;
    if (d->n_params)
        memcpy((char *)f->params.map + poff, d->params, d->n_params * sizeof(int32_t));
    f->params_used += pspan;

    VkDescriptorBufferInfo infos[VK_MAX_BINDINGS + 2];
    VkWriteDescriptorSet writes[VK_MAX_BINDINGS + 2];
    const tf_engine_buffer *rd[VK_MAX_BINDINGS], *wr[VK_MAX_BINDINGS];
    uint32_t n_rd = 0, n_wr = 0;
    for (uint32_t i = 0; i < d->n_bind; i++) {
        tf_engine_buffer *b = d->bind[i];
        infos[i] = (VkDescriptorBufferInfo){b->block->buf, b->offset, b->span};
        if (d->writes[i])
            wr[n_wr++] = b;
        else
            rd[n_rd++] = b;
        touch(f, b);
    }
    infos[d->n_bind] = (VkDescriptorBufferInfo){f->params.buf, poff, pspan};
    infos[d->n_bind + 1] = (VkDescriptorBufferInfo){f->params.buf, 0, 16};
    for (uint32_t i = 0; i < d->n_bind + 2; i++) {
        uint32_t binding = i < d->n_bind ? i : VK_MAX_BINDINGS + (i - d->n_bind);
        writes[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                           .dstSet = set,
                                           .dstBinding = binding,
                                           .descriptorCount = 1,
                                           .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                           .pBufferInfo = &infos[i]};
    }
    vkUpdateDescriptorSets(e->dev, d->n_bind + 2, writes, 0, NULL);
    order_access(e, f, rd, n_rd, wr, n_wr);
    vkCmdBindPipeline(f->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
    vkCmdBindDescriptorSets(f->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, e->pipe_layout, 0, 1, &set, 0,
                            NULL);
    vkCmdPushConstants(f->cmd, e->pipe_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof d->push,
                       &d->push);
    vkCmdDispatch(f->cmd, d->groups[0], d->groups[1], d->groups[2]);
    f->dispatches++;
    return TF_OK;
}

tf_status tf__vk_record_upload(vk_engine *e, tf_engine_buffer *dst, size_t offset, const void *src,
                               size_t nbytes)
{
    while (nbytes > 0) {
        vk_frame *f;
        tf_status st = frame_open(e, &f);
        if (st != TF_OK)
            return st;
        VkDeviceSize room = f->staging.size - f->staging_used;
        if (room < 4096 && room < nbytes) {
            if ((st = tf__vk_submit(e)) != TF_OK || (st = frame_open(e, &f)) != TF_OK)
                return st;
            room = f->staging.size;
        }
        size_t chunk = nbytes < room ? nbytes : (size_t)room;
        memcpy((char *)f->staging.map + f->staging_used, src, chunk);
        const tf_engine_buffer *w = dst;
        order_access(e, f, NULL, 0, &w, 1);
        VkBufferCopy c = {f->staging_used, dst->offset + offset, chunk};
        vkCmdCopyBuffer(f->cmd, f->staging.buf, dst->block->buf, 1, &c);
        touch(f, dst);
        f->staging_used = (f->staging_used + chunk + 15) / 16 * 16;
        src = (const char *)src + chunk;
        offset += chunk;
        nbytes -= chunk;
    }
    return TF_OK;
}

tf_status tf__vk_record_copy(vk_engine *e, const tf_engine_buffer *src, size_t src_offset,
                             tf_engine_buffer *dst, size_t dst_offset, size_t nbytes)
{
    vk_frame *f;
    tf_status st = frame_open(e, &f);
    if (st != TF_OK || nbytes == 0)
        return st;
    const tf_engine_buffer *w = dst;
    order_access(e, f, &src, 1, &w, 1);
    VkBufferCopy c = {src->offset + src_offset, dst->offset + dst_offset, nbytes};
    vkCmdCopyBuffer(f->cmd, src->block->buf, dst->block->buf, 1, &c);
    touch(f, src);
    touch(f, dst);
    return TF_OK;
}

tf_status tf__vk_download(vk_engine *e, const tf_engine_buffer *src, size_t offset, void *dst,
                          size_t nbytes)
{
    do {
        vk_frame *f;
        tf_status st = frame_open(e, &f);
        if (st != TF_OK)
            return st;
        VkDeviceSize room = f->staging.size - f->staging_used;
        if (room < 4096 && room < nbytes) {
            if ((st = tf__vk_submit(e)) != TF_OK || (st = frame_open(e, &f)) != TF_OK)
                return st;
            room = f->staging.size;
        }
        size_t chunk = nbytes < room ? nbytes : (size_t)room;
        VkDeviceSize at = f->staging_used;
        if (chunk > 0) {
            order_access(e, f, &src, 1, NULL, 0);
            VkBufferCopy c = {src->offset + offset, at, chunk};
            vkCmdCopyBuffer(f->cmd, src->block->buf, f->staging.buf, 1, &c);
            touch(f, src);
            f->staging_used += chunk;
        }
        /* The last chunk also finishes every earlier batch and reports their errors. */
        if ((st = tf__vk_finish(e)) != TF_OK)
            return st;
        memcpy(dst, (const char *)f->staging.map + at, chunk);
        dst = (char *)dst + chunk;
        offset += chunk;
        nbytes -= chunk;
    } while (nbytes > 0);
    return TF_OK;
}
