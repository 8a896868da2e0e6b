/*
 * vk_internal.h - shared declarations of the Vulkan compute engine.
 *
 * The engine is split by concern: vk_engine.c (descriptor, entry, plugin
 * init/shutdown, engine create/destroy, transfers, execute dispatch),
 * vk_device.c (instance, validation messenger, device enumeration and
 * selection, device info), vk_memory.c (device blocks and their
 * sub-allocator, buffers, deferred frees), vk_batch.c (frames, command
 * recording, hazards and barriers, submission, pipelines and the pipeline
 * cache), vk_check.c (supports, and the checks of calls the host did not
 * validate), vk_prims.c (the walks of operands, every primitive's dispatch
 * but DOT_GENERAL's and FUSED's, execute's dispatch table), vk_fused.c
 * (FUSED as one dispatch of its program), vk_spirv.c (the shader module of
 * one FUSED program), vk_dot.c (DOT_GENERAL on the tiled GEMM shader).
 * Everything here has hidden visibility: the plugin exports only
 * tf_engine_plugin_v1.
 */
#ifndef TENFERRO_VK_INTERNAL_H
#define TENFERRO_VK_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

#include <tenferro/engine_abi.h>

#include "vk_shaders.h"

#if defined(__GNUC__) || defined(__clang__)
#define VK_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define VK_PRINTF(fmt, args)
#endif

#define VK_FRAMES 2                    /* batches in flight at once */
#define VK_BATCH_DISPATCHES 512        /* a batch is submitted when it holds this many dispatches */
#define VK_PARAMS_BYTES (512u * 1024u) /* per-frame parameter ring */
#define VK_STAGING_BYTES (16u * 1024u * 1024u) /* per-frame upload/download staging */
#define VK_BLOCK_BYTES \
    (64ull * 1024ull * 1024ull) /* device blocks (larger requests get their own) */
#define VK_ALIGN 256u           /* sub-allocation alignment (>= minStorageBufferOffsetAlignment) */
/* Data bindings 0..12 (FUSED: an output, five inputs, seven more outputs); then
   13 = parameters, 14 = error words (shaders/common.glsl names them so). */
#define VK_MAX_BINDINGS 13
/* Parameter words of the walk of VK_MAX_BINDINGS operands (tf__vk_layout). */
#define VK_LAYOUT_WORDS (9 + 9 * VK_MAX_BINDINGS)
#define VK_HAZARD_SLOTS 64 /* buffers tracked between two barriers */
#define VK_WG 256          /* invocations per workgroup of every shader */

/* Error words written by shaders (binding 14); see shaders/common.glsl. */
#define VK_ERR_OUT_OF_RANGE 1u
#define VK_ERR_DIV_ZERO 2u
#define VK_ERR_INDEX 3u

/* ===================================================================== */
/* Plugin and devices                                                     */
/* ===================================================================== */

/* One physical device as enumerated at init. */
typedef struct vk_physical {
    VkPhysicalDevice handle;
    VkPhysicalDeviceProperties props;
    tf_device_info info;
    uint32_t queue_family; /* a family with compute; UINT32_MAX if none */
    int f64;               /* shaderFloat64 */
    int i64;               /* shaderInt64 (integer arithmetic on i64) */
    int bool8;             /* 8-bit storage and int8 arithmetic (the bool dtype) */
    int subgroups;         /* compute-stage subgroup basic + shuffle operations */
} vk_physical;

/* Failures the debug_fail option injects (a testing aid; see README.md). */
typedef enum vk_fault {
    VK_FAULT_NONE,
    VK_FAULT_DEVICE_LOST, /* the Nth vkQueueSubmit reports VK_ERROR_DEVICE_LOST */
    VK_FAULT_WAIT_LOST,   /* the Nth vkWaitForFences reports VK_ERROR_DEVICE_LOST */
    VK_FAULT_SUBMIT_OOM,  /* the Nth vkQueueSubmit reports VK_ERROR_OUT_OF_DEVICE_MEMORY */
    VK_FAULT_ALLOC_OOM    /* the Nth device-block vkAllocateMemory reports it */
} vk_fault;

/* Engine options beyond the device choice (tf_engine_options extra keys). */
typedef struct vk_options {
    int subgroup_reduce;      /* "subgroup_reduce" = on (default where supported) | off */
    uint64_t memory_limit;    /* "memory_limit" = bytes of device-local memory; 0: no limit */
    vk_fault fault;           /* "debug_fail" = <fault>@<N> */
    uint64_t fault_at;        /* N, counted from 1 */
    uint32_t fused_pipelines; /* "fused_pipelines" = FUSED program pipelines kept */
    int float64;              /* "shader_float64" = on (default where supported) | off */
} vk_options;

/* The plugin context made by init: the instance and the devices. */
typedef struct vk_plugin {
    const tf_host_api *host;
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger; /* VK_NULL_HANDLE without validation */
    PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger;
    atomic_uint validation_messages; /* warnings and errors of the validation layer */
    int validation;                  /* the layer is enabled */
    uint32_t n_devices;
    vk_physical *devices; /* GPU-type devices first, then CPU-type ones */
    char no_driver[160];  /* why there is no instance (no Vulkan driver), "" if there is one */
} vk_plugin;

tf_status tf__vk_instance_create(vk_plugin *pl);
void tf__vk_instance_destroy(vk_plugin *pl);
/* Picks a device from the options (index/name among the allowed types) and reads the rest. */
tf_status tf__vk_device_choose(vk_plugin *pl, const tf_engine_options *o, uint32_t *index,
                               vk_options *opts);

/* ===================================================================== */
/* Engine state                                                           */
/* ===================================================================== */

/* A host-visible buffer, persistently mapped. */
typedef struct vk_hostbuf {
    VkBuffer buf;
    VkDeviceMemory mem;
    void *map;
    VkDeviceSize size;
} vk_hostbuf;

/* A free range of a block. */
typedef struct vk_range {
    VkDeviceSize offset, size;
} vk_range;

/* A device-local block with its free list (sorted by offset, coalesced). */
typedef struct vk_block {
    VkBuffer buf;
    VkDeviceMemory mem;
    VkDeviceSize size;
    vk_range *free;
    uint32_t n_free, cap_free;
    uint32_t live; /* sub-allocations in use */
} vk_block;

struct tf_engine_buffer {
    vk_block *block;
    VkDeviceSize offset; /* in the block, VK_ALIGN aligned */
    VkDeviceSize size;   /* the requested size */
    VkDeviceSize span;   /* the size taken from the block */
    /* Serial of the last batch that touched it (0: none). Written by the recording
       thread, read by buffer_free on any thread. */
    _Atomic uint64_t last_use;
    tf_engine_buffer *next_deferred;
};

/* One batch slot: its command buffer and the per-batch rings. */
typedef struct vk_frame {
    VkCommandBuffer cmd;
    VkFence fence;
    VkDescriptorPool pool;
    vk_hostbuf params;  /* error words at 0, then parameter slots */
    vk_hostbuf staging; /* upload sources and download targets */
    VkDeviceSize params_used, staging_used;
    uint32_t dispatches;
    uint64_t serial; /* of the batch it holds */
    int recording;   /* begun, not yet ended */
    int ended;       /* ended, not yet submitted (a submit failed for lack of memory) */
    int in_flight;   /* submitted, fence not yet waited */
} vk_frame;

/* Specialisation constants 0 .. VK_SPEC_WORDS - 1: every shader has constant 0 (OP);
   fused.comp also 1 .. 18, the program (see vk_fused.c). */
#define VK_SPEC_WORDS 19
/* FUSED programs whose pipelines an engine keeps by default (the "fused_pipelines"
   option); the least recently used one goes when another is compiled. */
#define VK_FUSED_PIPELINES 64

/* A cached pipeline: shader and specialisation constants. */
typedef struct vk_pipeline {
    uint32_t shader;
    uint32_t spec[VK_SPEC_WORDS]; /* all but spec[0] are 0 unless `program` */
    int program;                  /* a FUSED program's: counted against fused_pipelines */
    uint64_t last_use;            /* serial of the last batch that bound it */
    VkPipeline pipe;
} vk_pipeline;

struct tf_engine_state {
    const tf_host_api *host;
    vk_plugin *plugin;
    const vk_physical *phys;
    VkDevice dev;
    VkQueue queue;
    VkCommandPool cmd_pool;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout pipe_layout;
    VkPipelineCache pipe_cache;
    char cache_path[512]; /* "" if there is no cache directory */
    VkShaderModule modules[VK_SHADER_COUNT_];
    vk_pipeline *pipes;
    uint32_t n_pipes, cap_pipes;
    uint32_t n_programs;           /* pipes of FUSED programs */
    uint32_t max_programs;         /* the fused_pipelines option */
    uint32_t mem_device, mem_host; /* memory type indices */
    uint32_t heap;                 /* the heap of mem_device */
    VkDeviceSize heap_size;
    VkDeviceSize max_range; /* maxStorageBufferRange */
    VkDeviceSize param_align;
    int subgroup_reduce; /* REDUCE uses the subgroup shader variants */
    int f64;             /* computes f64 and c128: shaderFloat64, unless shader_float64=off */

    /* Device memory: guarded by `lock` (buffer_alloc/free come from any thread). */
    pthread_mutex_t lock;
    vk_block **blocks;
    uint32_t n_blocks, cap_blocks;
    tf_engine_buffer *deferred; /* freed while pending: released once their batch completes */
    uint64_t completed;         /* every batch with serial <= this has completed */
    VkDeviceSize mem_limit;     /* the memory_limit option (0: none) */
    VkDeviceSize mem_held;      /* bytes of every block */
    uint64_t alloc_calls;       /* device-block vkAllocateMemory calls (fault injection) */

    /* Lost device: set once, read on any thread; afterwards every call but buffer_free and
       destroy fails with TF_ERR_DEVICE_LOST. */
    atomic_int lost;
    char lost_why[160];

    vk_fault fault; /* debug_fail */
    uint64_t fault_at;
    uint64_t submit_calls, wait_calls;

    /* Recording: the host serialises these calls on one instance; rec_lock is held by each
       call that records (and by buffer_alloc on another thread when it must finish pending
       work to reclaim memory). Lock order: rec_lock, then lock. */
    pthread_mutex_t rec_lock;
    vk_frame frames[VK_FRAMES];
    uint32_t cur;         /* frame being recorded */
    uint64_t next_serial; /* serial of the next batch begun */
    const tf_engine_buffer *written[VK_HAZARD_SLOTS];
    const tf_engine_buffer *read[VK_HAZARD_SLOTS];
    uint32_t n_written, n_read;

    /* A data-dependent failure found by a completed batch, reported once. */
    tf_status pending_status;
    char pending_msg[256];
    uint64_t submits; /* number of queue submissions (tests and logs) */
};
typedef struct tf_engine_state vk_engine;

/* ===================================================================== */
/* Errors                                                                 */
/* ===================================================================== */

/* Formats, reports (host->report_error) and returns `status`. */
tf_status tf__vk_fail(const tf_host_api *host, tf_status status, const char *fmt, ...)
    VK_PRINTF(3, 4);
/* Reports a failed Vulkan call: "vulkan: <what>: VkResult <name> (<code>)". */
tf_status tf__vk_fail_vk(const tf_host_api *host, const char *what, VkResult r);
/* The same for a call on the engine's device: VK_ERROR_DEVICE_LOST marks it lost. */
tf_status tf__vk_fail_dev(vk_engine *e, const char *what, VkResult r);
/*
 * Marks the engine lost (once): waits for the device to go idle, counts every
 * batch as completed and releases deferred buffers. Reports and returns
 * `status` (TF_ERR_DEVICE_LOST, or the failure that cost the engine its work).
 */
tf_status tf__vk_lose(vk_engine *e, tf_status status, const char *why);
/* TF_OK, or TF_ERR_DEVICE_LOST (reported) once the engine is lost. Any thread. */
tf_status tf__vk_check_lost(vk_engine *e, const char *what);
void tf__vk_log(const tf_host_api *host, tf_log_level level, const char *fmt, ...) VK_PRINTF(3, 4);
const char *tf__vk_result_name(VkResult r);
const char *tf__vk_prim_name(uint32_t prim);

/* ===================================================================== */
/* Memory                                                                 */
/* ===================================================================== */

tf_status tf__vk_hostbuf_create(vk_engine *e, VkDeviceSize size, VkBufferUsageFlags usage,
                                vk_hostbuf *out);
void tf__vk_hostbuf_destroy(vk_engine *e, vk_hostbuf *hb);
/*
 * A device buffer of nbytes (> 0). Thread-safe. Out of memory while freed
 * buffers wait for pending work, it finishes that work and tries again:
 * `recording` says the caller holds rec_lock (it records work itself).
 */
tf_status tf__vk_buffer_alloc(vk_engine *e, size_t nbytes, int recording, tf_engine_buffer **out);
/* Frees now, or once the last batch that used it completes. Thread-safe. */
void tf__vk_buffer_free(vk_engine *e, tf_engine_buffer *b);
/* Releases deferred buffers whose batches completed (takes the lock). */
void tf__vk_release_deferred(vk_engine *e);
/* Frees every block (teardown; no buffer may be used afterwards). */
void tf__vk_memory_destroy(vk_engine *e);

/* ===================================================================== */
/* Batches and pipelines                                                  */
/* ===================================================================== */

tf_status tf__vk_frames_create(vk_engine *e);
void tf__vk_frames_destroy(vk_engine *e);
tf_status tf__vk_pipelines_create(vk_engine *e);
void tf__vk_pipelines_destroy(vk_engine *e);

/* The push constants of every shader (see shaders/common.glsl). */
typedef struct vk_push {
    uint32_t n, a0, a1, a2;
} vk_push;

/* One dispatch: bindings 0..n_bind-1 (outputs flagged), parameters, push, grid. */
typedef struct vk_dispatch {
    uint32_t shader;
    uint32_t spec;           /* specialisation constant 0 */
    const uint32_t *program; /* constants 1 .. VK_SPEC_WORDS - 1 of a FUSED program, or NULL */
    uint32_t n_bind;
    tf_engine_buffer *bind[VK_MAX_BINDINGS];
    int writes[VK_MAX_BINDINGS];
    const int32_t *params;
    uint32_t n_params;
    vk_push push;
    uint32_t groups[3];
} vk_dispatch;

/* A FUSED program's module (vk_spirv.c): `shader` with each step slot calling the step's
   op, spec its VK_SPEC_WORDS specialisation constants. */
tf_status tf__vk_program_module(vk_engine *e, uint32_t shader, const uint32_t *spec,
                                VkShaderModule *out);
/* Records a dispatch into the open batch (submitting first if it is full). */
tf_status tf__vk_record_dispatch(vk_engine *e, const vk_dispatch *d);
/* Records a copy host -> buffer through the staging area. */
tf_status tf__vk_record_upload(vk_engine *e, tf_engine_buffer *dst, size_t offset, const void *src,
                               size_t nbytes);
/* Records a device copy (ranges must not overlap). */
tf_status tf__vk_record_copy(vk_engine *e, const tf_engine_buffer *src, size_t src_offset,
                             tf_engine_buffer *dst, size_t dst_offset, size_t nbytes);
/* Copies buffer bytes to host memory: records, submits, waits. */
tf_status tf__vk_download(vk_engine *e, const tf_engine_buffer *src, size_t offset, void *dst,
                          size_t nbytes);
/* Submits the open batch (if any) without waiting. */
tf_status tf__vk_submit(vk_engine *e);
/* Submits and waits for every batch (a data error stays pending). rec_lock held. */
tf_status tf__vk_drain(vk_engine *e);
/* Submits and waits for every batch; then reports a pending data error once. */
tf_status tf__vk_finish(vk_engine *e);
/* Waits for the device to go idle (teardown); no report. */
void tf__vk_wait_all(vk_engine *e);

/* ===================================================================== */
/* Primitives                                                             */
/* ===================================================================== */

/* supports(): whether this engine's device runs the call (vk_check.c). */
int tf__vk_supports(const vk_engine *e, uint32_t prim, uint32_t op, const uint32_t *dtypes,
                    uint32_t n_dtypes);
/*
 * The checks of a call without TF_EXEC_VALIDATED: counts, params, dtypes
 * (through supports), FUSED programs, buffers of this engine. Reports and
 * returns the failure, TF_OK when the call may be dispatched (vk_check.c).
 */
tf_status tf__vk_check(vk_engine *e, const tf_exec *x);
/* The sub-operation supports() is asked with: the op, or FUSED's outputs - 1. */
uint32_t tf__vk_exec_op(const tf_exec *x);
/* The outputs of a FUSED call: 1 for a 1.2 host, whose params end before n_outputs. */
uint32_t tf__vk_fused_outputs(const tf_fused_params *pr);

/* Checks the call unless the host validated it, then records its dispatch (vk_prims.c). */
tf_status tf__vk_execute(vk_engine *e, const tf_exec *x);
/*
 * One dispatch function per entry of engine_abi.h's TF_PRIM_LIST, named after it:
 * tf__vk_exec_fill ... tf__vk_exec_fused (execute's table is generated from the same
 * list, so a primitive without its dispatch does not link). The call is valid.
 */
#define VK_EXEC_DECLARE(NAME, name, value) \
    tf_status tf__vk_exec_##name(vk_engine *e, const tf_exec *x);
TF_PRIM_LIST(VK_EXEC_DECLARE)
#undef VK_EXEC_DECLARE
/* COPY of an operand into a dense temporary (used by DOT_GENERAL). */
tf_status tf__vk_copy_op(vk_engine *e, const tf_operand *dst, const tf_operand *src);
/*
 * The walk of nops operands over ops[0]'s shape into the VK_LAYOUT_WORDS words
 * of p, the first nfit checked to fit 32-bit addressing (vk_prims.c, where it
 * is described). Returns 0 when something does not fit.
 */
int tf__vk_layout(const tf_operand *const *ops, uint32_t nops, uint32_t nfit, int keep, int32_t *p,
                  uint64_t *n);
/* Reports that an operand of `prim` exceeds 32-bit addressing (TF_ERR_UNSUPPORTED). */
tf_status tf__vk_too_large(vk_engine *e, uint32_t prim);

/* Groups for `n` invocations, capped (shaders loop with a grid stride). */
uint32_t tf__vk_groups(uint64_t n);

#endif /* TENFERRO_VK_INTERNAL_H */
