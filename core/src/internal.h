/*
 * internal.h - the core's private structures and cross-file helpers.
 *
 * Nothing here is visible to applications or plugins. Internal functions
 * that must be external are named tf__<module>_<verb>.
 */
#ifndef TF_INTERNAL_H
#define TF_INTERNAL_H

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

void *tf__alloc(size_t size);               /* aligned for any type; NULL on failure */
void *tf__alloc_aligned(size_t size, size_t align);
void *tf__calloc(size_t count, size_t size); /* zeroed; NULL on overflow or failure */
void tf__free(void *ptr);
char *tf__strdup(const char *s);
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
tf_status tf__error(tf_status status, const char *op, const char *argument, const char *fmt,
                    ...) TF_PRINTF(4, 5);
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

/* ---- tensor.c ---- */

typedef enum tf_storage_kind {
    TF_STORAGE_HOST_OWNED = 0,    /* allocated by the library */
    TF_STORAGE_HOST_BORROWED = 1, /* the caller's memory, released through a callback */
    TF_STORAGE_ENGINE = 2         /* an engine buffer */
} tf_storage_kind;

typedef struct tf_storage tf_storage;

struct tf_storage {
    atomic_size_t refs;
    tf_storage_kind kind;
    void *host;    /* host address of the memory, NULL for device memory */
    size_t nbytes; /* usable bytes */
    /*
     * Who frees the memory: the caller's callback for borrowed host memory,
     * the engine boundary for engine memory (which sets it with the buffer),
     * so that tensors need to know nothing of engines.
     */
    union {
        struct {
            tf_release_fn fn;
            void *user;
        } borrowed;
        void (*engine)(tf_storage *storage);
    } free;
    tf_engine *engine; /* engine memory: the instance (retained; opaque here) */
    tf_engine_buffer *buffer;
    bool in_block; /* allocated with its first tensor (tf__tensor_block_new) */
    /*
     * Deferred chains (the lazy layer's): the batch that will compute these
     * contents, NULL once they are current (or a mark: lost, unwritten); and
     * how many open batches read this memory. Opaque here: what it means is
     * tf_pending_hooks' business.
     */
    struct tf_batch *_Atomic pending;
    atomic_uint readers;
};

struct tf_tensor {
    atomic_size_t refs;
    tf_dtype dtype;
    uint32_t rank;
    int64_t shape[TF_MAX_RANK];
    int64_t strides[TF_MAX_RANK];
    int64_t offset;
    size_t numel;
    tf_storage *storage;
};

/* Whether a and b have the same rank and extents (a loop, not memcmp: ranks
   are small and this runs for every eager op). */
static inline bool tf__same_shape(const tf_tensor *a, const tf_tensor *b)
{
    if (a->rank != b->rank)
        return false;
    for (uint32_t d = 0; d < a->rank; d++)
        if (a->shape[d] != b->shape[d])
            return false;
    return true;
}

/* The first axis of extent > 1 along which t repeats elements (stride 0), or -1. */
static inline int tf__repeat_axis(const tf_tensor *t)
{
    for (uint32_t d = 0; d < t->rank; d++)
        if (t->strides[d] == 0 && t->shape[d] > 1)
            return (int)d;
    return -1;
}

/*
 * Checks dtype, rank and extents and computes the element count and byte
 * size (overflow-checked). `op` names the caller for messages.
 */
tf_status tf__shape_check(const char *op, tf_dtype dtype, size_t rank, const int64_t *shape,
                          size_t *numel, size_t *nbytes);
/* Dense column-major strides for shape. */
void tf__dense_strides(size_t rank, const int64_t *shape, int64_t *strides);
/* A new tensor (refs 1) over `storage` (retained). NULL on OOM (error recorded). */
tf_tensor *tf__tensor_new(tf_storage *storage, tf_dtype dtype, size_t rank, const int64_t *shape,
                          const int64_t *strides, int64_t offset, size_t numel);
/*
 * A new tensor (refs 1) and a zeroed engine storage (refs 1, held by the
 * tensor) in one pooled block, which lives until both are released: the
 * caller fills the storage's buffer fields. Undo with tf__tensor_block_discard
 * while nothing else refers to it. NULL on OOM (no error recorded).
 */
tf_tensor *tf__tensor_block_new(tf_dtype dtype, size_t rank, const int64_t *shape, size_t numel);
void tf__tensor_block_discard(tf_tensor *t);
/*
 * Whether every element of t reads 1: host memory whose contents are current
 * (never memory a deferred batch has yet to write, never device memory), a
 * broadcast (stride 0 on every axis longer than 1) of one float that is 1.
 */
bool tf__tensor_reads_one(const tf_tensor *t);
/* A new dense host tensor (library-owned memory, contents undefined). */
tf_status tf__tensor_host_empty(tf_dtype dtype, size_t rank, const int64_t *shape,
                                tf_tensor **out);
void tf__storage_retain(tf_storage *storage);
void tf__storage_release(tf_storage *storage);
bool tf__strides_dense(size_t rank, const int64_t *shape, const int64_t *strides);
/*
 * A fill value of `dtype` as the engines read it (tf_scalar): floats take v;
 * integers take v truncated, saturating, NaN as 0; bool takes v != 0 (NaN
 * is true), the truth rule of C, NumPy and CONVERT.
 */
tf_scalar tf__scalar_of(tf_dtype dtype, double v);
/* Lowest and highest element index a view addresses (numel > 0). */
void tf__view_extent(size_t rank, const int64_t *shape, const int64_t *strides, int64_t offset,
                     int64_t *lo, int64_t *hi);

/* ---- engine.c ---- */

/* Slots of an engine's memo of supports() answers (a power of two). */
#define TF_SUPPORTS_MEMO 64

struct tf_engine {
    atomic_size_t refs; /* the application's reference plus one per storage */
    tf_plugin *plugin;
    const tf_engine_plugin *desc;
    tf_engine_state *state;
    uint32_t caps;
    /*
     * supports() answers already given (engine_abi.h makes them constant):
     * each slot 0 or (key << 2 | 2 | answer), written and read relaxed; a
     * lost race only costs another supports() call. See engine.c.
     */
    _Atomic uint64_t supports_memo[TF_SUPPORTS_MEMO];
    /*
     * Deferred chains (the lazy layer's): open batches of this engine, and
     * the lock that serialises running them with the owner's calls into the
     * engine while any is open (a value may be read, and so its batch run,
     * from another thread). The lock is the engine boundary's (engine.c);
     * the list and its count are the lazy layer's.
     */
    pthread_mutex_t defer_lock;
    atomic_uint n_open;
    struct tf_batch *open_batches;
};

void tf__engine_retain(tf_engine *engine);
void tf__engine_release(tf_engine *engine);
/* Whether the engine declared TF_ENGINE_CAP_IN_PLACE. */
bool tf__engine_in_place(const tf_engine *engine);
/*
 * tf_engine_execute of a TF_PRIM_BINARY whose output is inputs[0] itself, for
 * an engine with TF_ENGINE_CAP_IN_PLACE (TF_ERR_UNSUPPORTED otherwise). The
 * caller must own inputs[0]'s memory alone: on failure it may be partly
 * written.
 */
tf_status tf__engine_execute_in_place(tf_engine *engine, tf_prim prim, const void *params,
                                      size_t n_inputs, tf_tensor *const *inputs);
/*
 * Whether the engine runs TF_PRIM_FUSED programs of n_inputs inputs and
 * n_outputs outputs, all of dtype (its supports() answer for op n_outputs - 1,
 * memoised; false for several outputs on an engine built against ABI < 1.3).
 * Each step must still be supported as a UNARY/BINARY call, which
 * tf__engine_execute_fused checks.
 */
bool tf__engine_fuses(tf_engine *engine, tf_dtype dtype, size_t n_inputs, size_t n_outputs);
/* Whether the engine runs prim/op with n operands all of dtype dt (memoised). */
bool tf__engine_supports_uniform(tf_engine *engine, tf_prim prim, uint32_t op, size_t n,
                                 tf_dtype dt);
/*
 * tf_engine_execute of a TF_PRIM_FUSED into outputs[0 .. n_outputs) (params
 * says which step each receives; n_outputs > 1 needs params of ABI 1.3). With
 * alias >= 0 (one output only), outputs[0] is the very view inputs[alias] (the
 * engine must have TF_ENGINE_CAP_IN_PLACE, and the caller must own that memory
 * alone: on failure it may be partly written); with alias < 0 no output shares
 * memory with an input or another output.
 */
tf_status tf__engine_execute_fused(tf_engine *engine, const tf_fused_params *params,
                                   size_t n_inputs, tf_tensor *const *inputs, size_t n_outputs,
                                   tf_tensor *const *outputs, int alias);

/* ---- loader.c ---- */

struct tf_plugin {
    struct tf_plugin *next;
    char *file;
    void *handle;
    const tf_engine_plugin *desc;
    void *ctx;
    uint32_t desc_size;
};

/* ---- prim_check.c ---- */

/*
 * Checks a primitive call against the description in engine_abi.h: counts,
 * params, dtypes, ranks, extents and axes. Records the error and returns it.
 */
tf_status tf__prim_check(tf_prim prim, const void *params, size_t n_inputs,
                         tf_tensor *const *inputs, size_t n_outputs, tf_tensor *const *outputs);
/* The sub-operation code of a call (0 for primitives without one). */
uint32_t tf__prim_op(tf_prim prim, const void *params);
/* Whether the primitive accepts strided outputs. */
bool tf__prim_strided_output(tf_prim prim);

/* ---- what pending memory waits for (tensor.c keeps the hooks) ---- */

/*
 * The lazy layer (defer.c) marks memory whose contents a batch has yet to
 * compute, and registers these hooks before it marks any, so that the
 * readers and writers below it (tensors, the engine boundary) can make that
 * memory current without knowing what a batch is:
 *   flush         the storage is pending: run what computes it (or report
 *                 the mark's error: a lost or unwritten result);
 *   before_write  the storage is pending or open batches read it: run them;
 *   flush_engine  run every open batch of the engine (synchronize).
 */
typedef struct tf_pending_hooks {
    tf_status (*flush)(tf_storage *storage);
    tf_status (*before_write)(const tf_tensor *t);
    tf_status (*flush_engine)(tf_engine *engine);
} tf_pending_hooks;

/* Registers the hooks (the same table every time; the lazy layer's). */
void tf__pending_hooks_set(const tf_pending_hooks *hooks);
/* The hooks; NULL until registered (then nothing can be pending). */
const tf_pending_hooks *tf__pending_hooks(void);

/* Makes t's contents current before they are read. */
static inline tf_status tf__ready(const tf_tensor *t)
{
    if (atomic_load_explicit(&t->storage->pending, memory_order_acquire))
        return tf__pending_hooks()->flush(t->storage);
    return TF_OK;
}
/* Before t's memory is written: also runs the open batches that read it. */
static inline tf_status tf__ready_write(const tf_tensor *t)
{
    const tf_storage *s = t->storage;
    if (atomic_load_explicit(&s->pending, memory_order_acquire) ||
        atomic_load_explicit(&s->readers, memory_order_acquire))
        return tf__pending_hooks()->before_write(t);
    return TF_OK;
}

/* ---- the engine lock (engine.c) ---- */

/*
 * Around a call into e's plugin: tf__engine_lock takes e's lock while e has
 * an open batch (n_open, kept by the lazy layer); tf__engine_lock_slow (for
 * code that changes batches) takes it whatever the count. Both skip it when
 * this thread holds it already and return whether they took it, for
 * tf__engine_unlock.
 */
bool tf__engine_lock_slow(tf_engine *e);
static inline bool tf__engine_lock(tf_engine *e)
{
    return atomic_load_explicit(&e->n_open, memory_order_acquire) != 0 &&
           tf__engine_lock_slow(e);
}
void tf__engine_unlock_slow(tf_engine *e);
static inline void tf__engine_unlock(tf_engine *e, bool taken)
{
    if (taken)
        tf__engine_unlock_slow(e);
}

#endif /* TF_INTERNAL_H */
