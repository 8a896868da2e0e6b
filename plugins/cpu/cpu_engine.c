/*
 * cpu_engine.c - the CPU reference engine's descriptor and everything that
 * is not a kernel: the entry symbol, init/shutdown, the one device's info (its
 * description and create()'s options are read in cpu_device.c), engine
 * instances (create/destroy with their thread pool), buffers and transfers,
 * supports, the execute dispatch and synchronize.
 *
 * The engine is synchronous: execute returns when the work is done, so
 * download and synchronize never wait. Buffers are host memory from
 * host->alloc with a 64-byte header holding their size and capacity
 * (transfers are bounds checked); the data starts 64 bytes in, so it keeps
 * the 64-byte alignment. Freed buffers are recycled: each engine keeps
 * power-of-two size classes of them up to a byte budget, so issuing an op
 * does not go to the allocator for its output.
 * Every failure is described with host->report_error on the calling thread
 * just before its status is returned.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

#define CPU_PLUGIN_VERSION "0.1.0"
#define CPU_BUFFER_HEADER 64                 /* bytes before a buffer's data; keeps its alignment */
#define CPU_CACHE_BUDGET ((size_t)256 << 20) /* bytes of freed buffers kept per engine */

/* The entry symbol; its declaration is the only exported name. */
TF_ENGINE_EXPORT const tf_engine_plugin *tf_engine_plugin_v1(const tf_host_api *host);

/* The plugin context made by init: the host table and the device's info. */
typedef struct cpu_plugin {
    const tf_host_api *host;
    tf_device_info info;
} cpu_plugin;

/* ---- errors and names ----------------------------------------------------------- */

int tf__cpu_fail(cpu_err *err, tf_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->status = status;
    return 1;
}

static tf_status report(const tf_host_api *host, const cpu_err *err)
{
    host->report_error(host->ctx, err->status, err->msg);
    return err->status;
}

/* Formats, reports and returns `status`. */
static tf_status fail(const tf_host_api *host, tf_status status, const char *fmt, ...)
    CPU_PRINTF(3, 4);

static tf_status fail(const tf_host_api *host, tf_status status, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    host->report_error(host->ctx, status, msg);
    return status;
}

static const char *name_at(const char *const *names, uint32_t count, uint32_t i)
{
    return i < count ? names[i] : "?";
}

/* Tables of names by value, generated from engine_abi.h's lists. */
#define UPPER_NAME(NAME, name, value) [value] = #NAME,
#define LOWER_NAME(NAME, name, value) [value] = #name,

const char *tf__cpu_prim_name(uint32_t prim)
{
    static const char *const names[TF_PRIM_COUNT_] = {TF_PRIM_LIST(UPPER_NAME)};
    return name_at(names, TF_PRIM_COUNT_, prim);
}

const char *tf__cpu_unary_name(uint32_t op)
{
    static const char *const names[TF_UNARY_COUNT_] = {TF_UNARY_OP_LIST(LOWER_NAME)};
    return name_at(names, TF_UNARY_COUNT_, op);
}

const char *tf__cpu_binary_name(uint32_t op)
{
    static const char *const names[TF_BINARY_COUNT_] = {TF_BINARY_OP_LIST(LOWER_NAME)};
    return name_at(names, TF_BINARY_COUNT_, op);
}

const char *tf__cpu_compare_name(uint32_t op)
{
    static const char *const names[TF_COMPARE_COUNT_] = {TF_COMPARE_OP_LIST(LOWER_NAME)};
    return name_at(names, TF_COMPARE_COUNT_, op);
}

const char *tf__cpu_reduce_name(uint32_t op)
{
    static const char *const names[TF_REDUCE_COUNT_] = {TF_REDUCE_OP_LIST(LOWER_NAME)};
    return name_at(names, TF_REDUCE_COUNT_, op);
}

const char *tf__cpu_gather_mode_name(uint32_t mode)
{
    static const char *const names[] = {TF_GATHER_MODE_LIST(LOWER_NAME)};
    return name_at(names, (uint32_t)(sizeof names / sizeof names[0]), mode);
}

const char *tf__cpu_dtype_name(uint32_t dtype)
{
    return tf_dtype_name((tf_dtype)dtype);
}

/* ---- the plugin ------------------------------------------------------------------ */

static tf_status cpu_init(const tf_host_api *host, void **plugin_ctx)
{
    if (host == NULL || plugin_ctx == NULL) {
        return TF_ERR_VALIDATION;
    }
    cpu_plugin *pl = host->alloc(host->ctx, sizeof *pl, 0);
    if (pl == NULL) {
        return fail(host, TF_ERR_OUT_OF_MEMORY, "cpu: init: cannot allocate the plugin context");
    }
    pl->host = host;
    tf__cpu_device_describe(&pl->info);
    *plugin_ctx = pl;
    return TF_OK;
}

static void cpu_shutdown(void *plugin_ctx)
{
    cpu_plugin *pl = plugin_ctx;
    if (pl != NULL) {
        pl->host->free(pl->host->ctx, pl);
    }
}

static uint32_t cpu_device_count(void *plugin_ctx)
{
    (void)plugin_ctx;
    return 1;
}

static tf_status cpu_device_info(void *plugin_ctx, uint32_t index, tf_device_info *info)
{
    const cpu_plugin *pl = plugin_ctx;
    if (info == NULL) {
        return fail(pl->host, TF_ERR_VALIDATION, "cpu: device_info: info is NULL");
    }
    if (index != 0) {
        return fail(pl->host, TF_ERR_VALIDATION,
                    "cpu: device_info: device index %u out of range (the CPU engine has 1 device)",
                    index);
    }
    /* Only the fields the host's struct has room for; its struct_size stays. */
    size_t n = info->struct_size < sizeof pl->info ? info->struct_size : sizeof pl->info;
    const size_t skip = sizeof info->struct_size;
    if (n > skip) {
        memcpy((char *)info + skip, (const char *)&pl->info + skip, n - skip);
    }
    return TF_OK;
}

/* ---- engine instances ------------------------------------------------------------ */

static tf_status cpu_create(void *plugin_ctx, const tf_engine_options *options,
                            tf_engine_state **out)
{
    const cpu_plugin *pl = plugin_ctx;
    const tf_host_api *host = pl->host;
    cpu_options opts;
    if (out == NULL) {
        return fail(host, TF_ERR_VALIDATION, "cpu: create: out is NULL");
    }
    cpu_err err;
    if (tf__cpu_parse_options(pl->info.name, options, &opts, &err) != 0) {
        return report(host, &err);
    }
    cpu_engine *e = host->alloc(host->ctx, sizeof *e, 0);
    if (e == NULL) {
        return fail(host, TF_ERR_OUT_OF_MEMORY, "cpu: create: cannot allocate the engine");
    }
    e->host = host;
    e->threads = opts.threads;
    e->stream_bytes = opts.stream_bytes;
    e->fused = opts.fused;
    e->stream_copy = tf__cpu_stream_copy_choose();
    e->pool = NULL;
    e->jit = opts.jit;
    memset(&e->cache, 0, sizeof e->cache);
    atomic_flag_clear(&e->cache.busy);
    if (tf__cpu_jit_create(host, opts.jit, opts.jit_cc, opts.jit_cache[0] ? opts.jit_cache : NULL,
                           &e->jit_cache, &err) != TF_OK) {
        host->free(host->ctx, e);
        return report(host, &err);
    }
    if (opts.threads > 1) {
        if (tf__cpu_pool_create(host, opts.threads - 1, 1000 * opts.spin_us, &e->pool, &err) !=
            TF_OK) {
            tf__cpu_jit_destroy(e->jit_cache);
            host->free(host->ctx, e);
            return report(host, &err);
        }
    }
    tf__cpu_blas_check(host);
    *out = e;
    return TF_OK;
}

static void cache_drain(cpu_engine *e);

static void cpu_destroy(tf_engine_state *engine)
{
    if (engine == NULL) {
        return;
    }
    tf__cpu_pool_destroy(engine->pool);
    tf__cpu_jit_destroy(engine->jit_cache);
    cache_drain(engine);
    engine->host->free(engine->host->ctx, engine);
}

/* ---- buffers --------------------------------------------------------------------- */

/* The header of a buffer block: its size, its capacity, and the cache link. */
typedef struct buffer_header {
    size_t size;     /* bytes the tensor asked for */
    size_t capacity; /* bytes of data the block holds */
    void *next;      /* next free block of the same class, while cached */
} buffer_header;

static size_t buffer_size(const tf_engine_buffer *b)
{
    buffer_header h;
    memcpy(&h, b, sizeof h);
    return h.size;
}

static char *buffer_data(const tf_engine_buffer *b)
{
    return (char *)b + CPU_BUFFER_HEADER;
}

/* The class whose capacity holds nbytes, or -1 when it is too large to recycle. */
static int size_class(size_t nbytes)
{
    int c = 0;
    while (c < CPU_BUFFER_CLASSES && ((size_t)64 << c) < nbytes)
        c++;
    return c < CPU_BUFFER_CLASSES ? c : -1;
}

/* Holds the cache if no other thread does (see cpu_buffer_cache). */
static int cache_try_hold(cpu_engine *e)
{
    return !atomic_flag_test_and_set_explicit(&e->cache.busy, memory_order_acquire);
}

static void cache_let_go(cpu_engine *e)
{
    atomic_flag_clear_explicit(&e->cache.busy, memory_order_release);
}

/* A cached block of class c, or NULL (none, or the cache is busy). */
static void *cache_take(cpu_engine *e, int c)
{
    if (!cache_try_hold(e)) {
        return NULL;
    }
    char *block = e->cache.head[c];
    if (block) {
        buffer_header h;
        memcpy(&h, block, sizeof h);
        e->cache.head[c] = h.next;
        e->cache.bytes -= h.capacity;
    }
    cache_let_go(e);
    return block;
}

/* Keeps a freed block if the budget allows (and the cache is not busy); false when the
   caller must free it. */
static int cache_keep(cpu_engine *e, char *block)
{
    buffer_header h;
    memcpy(&h, block, sizeof h);
    int c = size_class(h.capacity);
    if (c < 0 || ((size_t)64 << c) != h.capacity)
        return 0;
    if (!cache_try_hold(e)) {
        return 0;
    }
    int kept = 0;
    if (e->cache.bytes + h.capacity <= CPU_CACHE_BUDGET) {
        h.next = e->cache.head[c];
        memcpy(block, &h, sizeof h);
        e->cache.head[c] = block;
        e->cache.bytes += h.capacity;
        kept = 1;
    }
    cache_let_go(e);
    return kept;
}

static void cache_drain(cpu_engine *e)
{
    for (int c = 0; c < CPU_BUFFER_CLASSES; c++) {
        char *block = e->cache.head[c];
        while (block) {
            buffer_header h;
            memcpy(&h, block, sizeof h);
            e->host->free(e->host->ctx, block);
            block = h.next;
        }
        e->cache.head[c] = NULL;
    }
    e->cache.bytes = 0;
}

/* A block holding nbytes of data after its header (from the cache when one fits), or NULL. */
static char *block_take(cpu_engine *e, size_t nbytes)
{
    int c = size_class(nbytes);
    size_t capacity = c >= 0 ? (size_t)64 << c : nbytes;
    char *block = c >= 0 ? cache_take(e, c) : NULL;
    if (block == NULL && capacity <= SIZE_MAX - CPU_BUFFER_HEADER) {
        block = e->host->alloc(e->host->ctx, capacity + CPU_BUFFER_HEADER, 64);
    }
    if (block != NULL) {
        buffer_header h = {nbytes, capacity, NULL};
        memcpy(block, &h, sizeof h);
    }
    return block;
}

/* Keeps the block in the cache, or frees it. */
static void block_give_back(cpu_engine *e, char *block)
{
    if (block != NULL && !cache_keep(e, block)) {
        e->host->free(e->host->ctx, block);
    }
}

static tf_status cpu_buffer_alloc(tf_engine_state *engine, size_t nbytes, tf_engine_buffer **out,
                                  void **host_ptr)
{
    if (out == NULL) {
        return fail(engine->host, TF_ERR_VALIDATION, "cpu: buffer_alloc: out is NULL");
    }
    char *block = block_take(engine, nbytes);
    if (block == NULL) {
        return fail(engine->host, TF_ERR_OUT_OF_MEMORY,
                    "cpu: buffer_alloc: cannot allocate %zu bytes", nbytes);
    }
    *out = (tf_engine_buffer *)(void *)block;
    if (host_ptr != NULL) {
        *host_ptr = block + CPU_BUFFER_HEADER;
    }
    return TF_OK;
}

static void cpu_buffer_free(tf_engine_state *engine, tf_engine_buffer *buffer)
{
    block_give_back(engine, (char *)buffer);
}

/*
 * Kernel scratch (packed operands, partial sums) is made of the same blocks,
 * so it is recycled like buffers and a repeated op does not fault fresh pages
 * in every time. The cache is the one part of the engine a kernel changes; its
 * own flag guards it, so the const of the kernels' engine is cast away here.
 */
void *tf__cpu_alloc(const cpu_engine *e, size_t nbytes, cpu_err *err, const char *what)
{
    char *block = block_take((cpu_engine *)e, nbytes);
    if (block == NULL) {
        tf__cpu_fail(err, TF_ERR_OUT_OF_MEMORY, "cpu: %s: cannot allocate %zu bytes of scratch",
                     what, nbytes);
        return NULL;
    }
    return block + CPU_BUFFER_HEADER;
}

void tf__cpu_free(const cpu_engine *e, void *p)
{
    if (p != NULL) {
        block_give_back((cpu_engine *)e, (char *)p - CPU_BUFFER_HEADER);
    }
}

/* Checks that [offset, offset + nbytes) lies in the buffer. */
static tf_status buffer_range(const cpu_engine *e, const char *what, const tf_engine_buffer *b,
                              size_t offset, size_t nbytes, const void *host_mem)
{
    if (b == NULL || (host_mem == NULL && nbytes > 0)) {
        return fail(e->host, TF_ERR_VALIDATION, "cpu: %s: NULL buffer or host pointer", what);
    }
    size_t size = buffer_size(b);
    if (offset > size || nbytes > size - offset) {
        return fail(e->host, TF_ERR_VALIDATION,
                    "cpu: %s: bytes [%zu, %zu + %zu) outside a buffer of %zu bytes", what, offset,
                    offset, nbytes, size);
    }
    return TF_OK;
}

static tf_status cpu_upload(tf_engine_state *engine, tf_engine_buffer *buffer, size_t offset,
                            const void *src, size_t nbytes)
{
    tf_status st = buffer_range(engine, "upload", buffer, offset, nbytes, src);
    if (st == TF_OK && nbytes > 0) {
        memcpy(buffer_data(buffer) + offset, src, nbytes);
    }
    return st;
}

static tf_status cpu_download(tf_engine_state *engine, const tf_engine_buffer *buffer,
                              size_t offset, void *dst, size_t nbytes)
{
    tf_status st = buffer_range(engine, "download", buffer, offset, nbytes, dst);
    if (st == TF_OK && nbytes > 0) {
        memcpy(dst, buffer_data(buffer) + offset, nbytes);
    }
    return st;
}

static tf_status cpu_buffer_copy(tf_engine_state *engine, const tf_engine_buffer *src,
                                 size_t src_offset, tf_engine_buffer *dst, size_t dst_offset,
                                 size_t nbytes)
{
    tf_status st = buffer_range(engine, "buffer_copy (source)", src, src_offset, nbytes, src);
    if (st == TF_OK) {
        st = buffer_range(engine, "buffer_copy (destination)", dst, dst_offset, nbytes, dst);
    }
    if (st == TF_OK && nbytes > 0) {
        /* The two ranges may be parts of one buffer. */
        memmove(buffer_data(dst) + dst_offset, buffer_data(src) + src_offset, nbytes);
    }
    return st;
}

/* ---- execution ---------------------------------------------------------------------- */

static int cpu_supports(tf_engine_state *engine, uint32_t prim, uint32_t op, const uint32_t *dtypes,
                        uint32_t n_dtypes)
{
    if (prim == TF_PRIM_FUSED && engine != NULL &&
        (engine->fused == CPU_FUSED_OFF ||
         (engine->fused == CPU_FUSED_ONE &&
          (op >= TF_FUSED_MAX_OUTPUTS ? TF_FUSED_QUERY_OUTPUTS(op) != 0 : op > 0)))) {
        /* the option fused=off, or fused=one and several outputs (1.6: a reduced output
           besides elementwise ones is several) */
        return 0;
    }
    return tf__cpu_supports(prim, op, dtypes, n_dtypes);
}

/* The kernel of each primitive: tf__cpu_exec_<name>, for every entry of TF_PRIM_LIST. */
#define EXEC_FN(NAME, name, value) [TF_PRIM_##NAME] = tf__cpu_exec_##name,
static const cpu_prim_fn prim_fns[TF_PRIM_COUNT_] = {TF_PRIM_LIST(EXEC_FN)};

static tf_status cpu_execute(tf_engine_state *engine, const tf_exec *exec)
{
    if (engine == NULL) {
        return TF_ERR_VALIDATION;
    }
    cpu_err err;
    err.status = TF_ERR_BACKEND;
    snprintf(err.msg, sizeof err.msg, "cpu: execute: internal error");
    /* The host's own checks cover everything tf__cpu_validate would check. */
    int validated = exec != NULL && TF_ABI_HAS_FIELD(exec, tf_exec, flags) &&
                    (exec->flags & TF_EXEC_VALIDATED) != 0;
    if ((!validated && tf__cpu_validate(exec, &err) != 0) ||
        prim_fns[exec->prim](engine, exec, &err) != 0) {
        if (err.status == TF_OK) {
            err.status = TF_ERR_BACKEND;
        }
        return report(engine->host, &err);
    }
    return TF_OK;
}

static tf_status cpu_synchronize(tf_engine_state *engine)
{
    (void)engine; /* execute is synchronous: nothing is ever pending */
    return TF_OK;
}

/* ---- descriptor and entry ------------------------------------------------------------- */

static const tf_engine_plugin cpu_descriptor = {
    .struct_size = sizeof(tf_engine_plugin),
    .abi_major = TF_ENGINE_ABI_MAJOR,
    .abi_minor = TF_ENGINE_ABI_MINOR,
    .capabilities = TF_ENGINE_CAP_HOST_MEMORY | TF_ENGINE_CAP_THREADS | TF_ENGINE_CAP_IN_PLACE |
                    TF_ENGINE_CAP_DEFER_CHAINS,
    .name = "cpu",
    .version = CPU_PLUGIN_VERSION,
    .description = "CPU reference engine: OpenBLAS contractions, vectorised loops, thread pool",
    .init = cpu_init,
    .shutdown = cpu_shutdown,
    .device_count = cpu_device_count,
    .device_info = cpu_device_info,
    .create = cpu_create,
    .destroy = cpu_destroy,
    .supports = cpu_supports,
    .buffer_alloc = cpu_buffer_alloc,
    .buffer_free = cpu_buffer_free,
    .upload = cpu_upload,
    .download = cpu_download,
    .buffer_copy = cpu_buffer_copy,
    .execute = cpu_execute,
    .synchronize = cpu_synchronize,
};

TF_ENGINE_EXPORT const tf_engine_plugin *tf_engine_plugin_v1(const tf_host_api *host)
{
    /* No side effects: refuse a host of another major or one lacking what we call. */
    if (host == NULL || host->abi_major != TF_ENGINE_ABI_MAJOR ||
        !TF_ABI_HAS_FIELD(host, tf_host_api, report_error) || host->alloc == NULL ||
        host->free == NULL || host->report_error == NULL) {
        return NULL;
    }
    return &cpu_descriptor;
}
