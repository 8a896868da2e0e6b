/*
 * runtime_internal.h - the eager runtime (core/src/runtime): runtimes and
 * their AD contexts, caches, grad slots, scopes, eager tensors and the tape
 * nodes they carry, sessions, and the AD-transform cache. The tape is not a
 * global list: every recorded result owns a node that points at its inputs,
 * so independent graphs on different threads never touch shared state.
 * Uses base, loader, tensor, engine and lazy.
 */
#ifndef TF_RUNTIME_INTERNAL_H
#define TF_RUNTIME_INTERNAL_H

#include <pthread.h>

#include <tenferro/ops.h>
#include <tenferro/runtime.h>

#include "lazy_internal.h"

/* ---- caches (cache.c) ---- */

typedef struct tf_cache_entry {
    struct tf_cache_entry *prev, *next; /* LRU list, most recent first */
    struct tf_cache_entry *chain;       /* hash chain */
    uint64_t key;
    size_t bytes;
    void *value;
    void (*free_value)(void *value);
} tf_cache_entry;

typedef struct tf_cache {
    pthread_mutex_t lock;
    tf_cache_entry **buckets;
    size_t n_buckets;
    tf_cache_entry *head, *tail;
    tf_cache_limits limits;
    tf_cache_stats stats;
} tf_cache;

tf_status tf__cache_init(tf_cache *c, size_t max_entries);
void tf__cache_destroy(tf_cache *c);
/* Looks key up; on a hit calls use(value, user) under the lock and returns true. */
bool tf__cache_get(tf_cache *c, uint64_t key, void (*use)(const void *value, void *user),
                   void *user);
/* Inserts (takes ownership of value; frees it at once if it cannot be kept). */
void tf__cache_put(tf_cache *c, uint64_t key, void *value, size_t bytes,
                   void (*free_value)(void *value));
void tf__cache_clear(tf_cache *c);
void tf__cache_stats(tf_cache *c, tf_cache_stats *out);
void tf__cache_get_limits(tf_cache *c, tf_cache_limits *out);
void tf__cache_set_limits(tf_cache *c, const tf_cache_limits *limits);

/* ---- AD context and runtime (runtime.c) ---- */

struct tf_ad_context {
    atomic_size_t refs;
    tf_cache transforms; /* the AD-transform cache */
};

typedef struct tf_grad_slot {
    struct tf_grad_slot *prev, *next; /* the runtime's list of live slots */
    pthread_mutex_t lock;
    tf_tensor *grad; /* accumulated gradient, NULL when empty */
} tf_grad_slot;

struct tf_runtime {
    atomic_size_t refs;
    tf_context_id id;
    tf_ad_context *ad;
    tf_cache prepared; /* the prepared-derivative cache */
    _Atomic tf_epoch epoch;
    pthread_mutex_t slots_lock;
    tf_grad_slot *slots; /* live variables' slots */
    /*
     * The extension layer's state (registry.c: the installed modules and
     * their caches), made by the first install or setting that needs it;
     * NULL until then. Opaque here: freed, summed and cleared through its
     * hooks, so that the runtime calls nothing above it.
     */
    struct tf_rt_ext *_Atomic ext;
    tf_defer_mode defer;         /* new sessions' mode: TENFERRO_DEFER, else AUTO */
};

/* What a runtime's extension state answers to (the extension layer fills it in). */
typedef struct tf_rt_ext_hooks {
    void (*destroy)(struct tf_rt_ext *ext);
    void (*cache_stats)(struct tf_rt_ext *ext, tf_cache_stats *out); /* summed over modules */
    void (*cache_clear)(struct tf_rt_ext *ext);
} tf_rt_ext_hooks;

/* The head of a runtime's extension state. */
typedef struct tf_rt_ext {
    const tf_rt_ext_hooks *hooks;
} tf_rt_ext;

void tf__slot_register(tf_runtime *rt, tf_grad_slot *slot);
void tf__slot_unregister(tf_runtime *rt, tf_grad_slot *slot);

/* ---- scopes (scope.c) ---- */

/* Whether ops of rt issued on this thread are recorded at all. */
bool tf__recording(const tf_runtime *rt);
/* Whether untracked results are recorded too (trace capture). */
bool tf__capturing(const tf_runtime *rt);
/* Forces no recording on this thread (backward's own ops); returns a token. */
uint32_t tf__suspend_begin(tf_runtime *rt);
void tf__suspend_end(tf_runtime *rt, uint32_t token);

/* ---- tape nodes ---- */

/*
 * Attributes of a recorded op; which fields mean what is up to the op. All
 * plain data, except `aux`: a reference a higher layer hands the node
 * (extension ops keep their call's output values there, extension_call.c),
 * which the runtime gives back with aux_release(aux) when the node's
 * attributes are freed. tf__record copies the attrs into the node only when
 * it keeps one (the caller checks the result's `node` to know whether the
 * reference was taken). Neither is part of tf__attrs_hash.
 */
typedef struct tf_attrs {
    int64_t v[3][TF_MAX_RANK]; /* up to three integer vectors */
    uint32_t n[3];             /* their lengths */
    int64_t i[2];              /* integer scalars */
    double f;                  /* a float scalar */
    uint64_t mask;             /* an axis mask */
    tf_dot_dims dot;           /* dot_general only */
    void *aux;                 /* NULL, or a reference aux_release gives back */
    void (*aux_release)(void *aux);
} tf_attrs;

/*
 * A recorded op. It lives inside its result's tf_eager (one allocation, one
 * cache line pair), and its attributes, which most ops do not have, live
 * apart: a backward walk touches only the first 48 bytes.
 */
/* The bits of tf_node.unread (and of tf_op_rule.unread, ops_internal.h): values a
   node's rules never read, input i (i < 7) or the result. */
#define TF_UNREAD_IN(i) ((uint8_t)(1u << (i)))
#define TF_UNREAD_OUT ((uint8_t)0x80u)

typedef struct tf_node {
    uint16_t op;        /* tf_op_id */
    uint16_t n_inputs;
    uint8_t has_attrs;  /* 0: `attrs` is the shared all-zero set (recorded without any) */
    uint8_t unread;     /* the rule's TF_UNREAD_* bits, 0 when recorded for a capture */
    /*
     * What rules would otherwise read off the tensors (a walk back through a
     * long tape finds them cold): bit i of like_out, input i (i < 8) has the
     * result's dtype and shape; dtype, the result's.
     */
    uint8_t like_out;
    uint8_t dtype;
    tf_eager **inputs; /* retained; points at `inline_inputs` for up to 3 */
    tf_eager *inline_inputs[3];
    const tf_attrs *attrs; /* never NULL; owned (pooled) when has_attrs */
} tf_node;

struct tf_eager {
    atomic_size_t refs;
    tf_runtime *rt;     /* retained */
    tf_tensor *value;   /* retained */
    tf_node *node;      /* the op that produced it, when recorded: &node_store */
    tf_grad_slot *slot; /* variables only */
    atomic_size_t unread_refs; /* of refs: recorded nodes whose rules never read the value */
    atomic_size_t tape_refs;   /* of refs: recorded nodes (those of unread_refs included) */
    /*
     * A derivative's graph walk (autodiff.c) writes the tensor's index here
     * after claiming `walk_id` for its walk; a tensor another live walk holds
     * goes to that walk's own map instead.
     */
    _Atomic uint64_t walk_id;
    size_t walk_index;
    bool tracked;       /* a variable, or depends on one through recorded ops */
    tf_node node_store;
};

/*
 * Whether anything may still read the value of `owner`, an eager tensor: a
 * reference other than the nodes that only need its shape, or its own
 * node's rule reading it. The `wanted` of sessions' tf_lazy: asked by a
 * deferred batch deciding which results to write (defer.c), on the
 * session's own thread, while the tensor is alive.
 */
int tf__eager_owner_wanted(const void *owner);

/* Folds a, member by member (never its padding bytes), into an FNV-1a hash. */
uint64_t tf__attrs_hash(uint64_t h, const tf_attrs *a);

/* A new eager tensor over value (retained); NULL on OOM (error recorded). */
tf_eager *tf__eager_new(tf_runtime *rt, tf_tensor *value, bool tracked);
/* The same, taking over the caller's reference to value (released on OOM). */
tf_eager *tf__eager_adopt(tf_runtime *rt, tf_tensor *value, bool tracked);

/* ---- sessions (session.c) ---- */

struct tf_session {
    tf_runtime *rt;
    tf_engine *engine;
    /*
     * Deferred chains (lazy.h): the session's mode (those the application
     * begins: the runtime's TENFERRO_DEFER mode, else TF_DEFER_AUTO; its
     * derivatives' sessions begin in it too) and its batch.
     */
    tf_lazy lazy;
};

/* A session of rt on engine deferring in `mode` (for sessions on the stack). */
static inline tf_session tf__session_make(tf_runtime *rt, tf_engine *engine, uint8_t mode)
{
    return (tf_session){.rt = rt,
                        .engine = engine,
                        .lazy = {.engine = engine, .mode = mode, .wanted = tf__eager_owner_wanted}};
}

/* ---- the AD-transform cache (transform.c) ---- */

/*
 * The AD-transform cache (transform.c): fills `plan` (a plain struct of
 * `size` bytes) with what node nd's rule derives from its attributes and
 * input metadata, calling build() only on a cache miss. `variant` tells
 * apart several plans of one op (e.g. reverse vs forward).
 */
tf_status tf__ad_transform(tf_session *s, const tf_node *nd, uint32_t variant, size_t size,
                           void (*build)(const tf_node *nd, void *plan), void *plan);

#endif /* TF_RUNTIME_INTERNAL_H */
