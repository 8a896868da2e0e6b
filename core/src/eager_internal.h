/*
 * eager_internal.h - the eager runtime's private structures: runtimes, grad
 * slots, eager tensors, tape nodes, sessions, and the op/rule table.
 *
 * The tape is not a global list: every recorded result owns a node that
 * points at its inputs, so independent graphs on different threads never
 * touch shared state. Backward walks from the output through these links.
 */
#ifndef TF_EAGER_INTERNAL_H
#define TF_EAGER_INTERNAL_H

#include <pthread.h>

#include <tenferro/ops.h>
#include <tenferro/runtime.h>

#include "internal.h"
#include "lazy.h"

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

/* Attributes of a recorded op; which fields mean what is up to the op. */
typedef struct tf_attrs {
    int64_t v[3][TF_MAX_RANK]; /* up to three integer vectors */
    uint32_t n[3];             /* their lengths */
    int64_t i[2];              /* integer scalars */
    double f;                  /* a float scalar */
    uint64_t mask;             /* an axis mask */
    tf_dot_dims dot;           /* dot_general only */
} tf_attrs;

/*
 * A recorded op. It lives inside its result's tf_eager (one allocation, one
 * cache line pair), and its attributes, which most ops do not have, live
 * apart: a backward walk touches only the first 48 bytes.
 */
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
bool tf__eager_owner_wanted(const void *owner);

/* Folds a, member by member (never its padding bytes), into an FNV-1a hash. */
uint64_t tf__attrs_hash(uint64_t h, const tf_attrs *a);

/* A new eager tensor over value (retained); NULL on OOM (error recorded). */
tf_eager *tf__eager_new(tf_runtime *rt, tf_tensor *value, bool tracked);

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

/* ---- ops and their rules (op_table.c) ---- */

/*
 * The recorded ops, one list per family so that each family's file owns its
 * line. Ids are internal (never cross an ABI) and may be renumbered freely.
 */
#define TF_OPS_ELEMENTWISE(X)                                                            \
    X(neg) X(abs) X(sign) X(exp) X(log) X(expm1) X(log1p) X(sin) X(cos) X(tanh) X(sqrt) \
    X(rsqrt) X(erf) X(sigmoid) X(add) X(sub) X(mul) X(div) X(pow) X(maximum)            \
    X(minimum) X(rem) X(compare) X(select) X(convert)
#define TF_OPS_REDUCE(X) X(reduce_sum) X(reduce_prod) X(reduce_max) X(reduce_min)
#define TF_OPS_CONTRACT(X) X(dot_general)
#define TF_OPS_LAYOUT(X) X(reshape) X(transpose) X(broadcast_in_dim) X(reverse)
#define TF_OPS_INDEX(X)                                                                  \
    X(slice) X(pad) X(concatenate) X(gather) X(scatter) X(dynamic_slice)               \
    X(dynamic_update_slice) X(diagonal) X(diag_embed)

#define TF_OPS_EXTENSION(X) X(extension) /* any extension op (extension_call.c) */

#define TF_OP_LIST(X)                                                                      \
    TF_OPS_ELEMENTWISE(X) TF_OPS_REDUCE(X) TF_OPS_CONTRACT(X) TF_OPS_LAYOUT(X) TF_OPS_INDEX(X) \
    TF_OPS_EXTENSION(X)

typedef enum tf_op_id {
#define TF_OP_ENUM_(name) TF_OP_##name,
    TF_OP_LIST(TF_OP_ENUM_)
#undef TF_OP_ENUM_
    TF_OP_COUNT_
} tf_op_id;

/*
 * Reverse rule: given the output `out`, its node and the cotangent `cot`
 * of the output, sets cot_in[i] (a new reference) for each input i with
 * need[i]; leaving it NULL means a zero cotangent. Written with session
 * ops, so the result is differentiable again.
 */
typedef tf_status (*tf_vjp_fn)(tf_session *s, tf_eager *out, const tf_node *node, tf_eager *cot,
                               const bool *need, tf_eager **cot_in);

/*
 * Forward rule: given the tangents of the inputs (NULL = zero), sets
 * *tan_out (a new reference, or NULL for a zero tangent).
 */
typedef tf_status (*tf_jvp_fn)(tf_session *s, tf_eager *out, const tf_node *node,
                               tf_eager *const *tan_in, tf_eager **tan_out);

struct tf_fx;
/*
 * Optional: the reverse rule as elementwise programs (rule_fx.h). For each needed
 * input j, builds its cotangent in fx[j] and sets res[j] to its reference
 * (TF_FX_NONE: no contribution). Returns false when this node's cotangents are
 * not such programs (an input that needs a reduction, mixed dtypes, a program
 * too long); then vjp runs. Backward calls it only when it records nothing.
 * Every cotangent it builds has the result's dtype and shape (so the caller
 * shapes it after `cot`, which is warm, rather than after the input).
 */
typedef bool (*tf_vjp_fx_fn)(const tf_node *node, tf_eager *out, tf_eager *cot,
                             const bool *need, struct tf_fx *fx, uint32_t *res);

typedef struct tf_op_rule {
    const char *name;
    tf_vjp_fn vjp; /* NULL: no reverse rule (TF_ERR_UNSUPPORTED_AD_RULE) */
    tf_jvp_fn jvp; /* NULL: no forward rule */
    tf_vjp_fx_fn vjp_fx; /* NULL: vjp only */
    /*
     * Values none of the three rules reads (only shape and dtype): bit i
     * (TF_UNREAD_IN(i), i < 7) for input i, TF_UNREAD_OUT for the result.
     * A deferred batch need not write a result that only such readers
     * hold. A bit set wrongly makes backward read a value never computed:
     * a TF_ERR_RUNTIME_STATE error (the suites' TENFERRO_DEFER=always runs
     * would show it). 0, the default, claims nothing.
     */
    uint8_t unread;
} tf_op_rule;

#define TF_UNREAD_IN(i) ((uint8_t)(1u << (i)))
#define TF_UNREAD_OUT ((uint8_t)0x80u)

const tf_op_rule *tf__op_rule(uint32_t op);
/*
 * Registers the rule of TF_OP_extension nodes (the extension layer's,
 * extension_call.c), before the first extension op can be recorded: the
 * ops below the extension layer never name it.
 */
void tf__op_rule_set_extension(const tf_op_rule *rule);

/* ---- helpers for op implementations (op_util.c) ---- */

/*
 * Records (or not) the result of an op: wraps `value` (reference taken
 * over) in a new eager tensor of s's runtime, with a node when recording is
 * on and an input is tracked (or capture is on). On failure releases value.
 */
tf_status tf__record(tf_session *s, uint32_t op, const tf_attrs *attrs, tf_eager *const *inputs,
                     uint32_t n_inputs, tf_tensor *value, tf_eager **out);

/* Checks s, inputs non-NULL and from s's runtime. `names` name the inputs. */
tf_status tf__check_inputs(const char *op, tf_session *s, tf_eager *const *xs, size_t n,
                           const char *const *names, tf_eager **out);

/* A new dense tensor of the session's engine. */
tf_status tf__empty(tf_session *s, tf_dtype dtype, size_t rank, const int64_t *shape,
                    tf_tensor **out);
/* Runs one primitive on the session's engine. */
tf_status tf__exec(tf_session *s, tf_prim prim, const void *params, size_t n_in,
                   tf_tensor *const *in, tf_tensor *out);

/* NumPy broadcast of n shapes into shape/rank; TF_ERR_SHAPE_MISMATCH names `op`. */
tf_status tf__broadcast_shapes(const char *op, tf_tensor *const *xs, size_t n, int64_t *shape,
                               size_t *rank);
/* A stride-0 view of x broadcast (NumPy alignment) to shape. */
tf_status tf__broadcast_view(const tf_tensor *x, size_t rank, const int64_t *shape,
                             tf_tensor **out);
/* Normalises axis lists: NULL = all; sets mask. Errors name `op`. */
tf_status tf__axes_mask(const char *op, const int *axes, size_t n_axes, uint32_t rank,
                        uint64_t *mask);
tf_status tf__norm_axis(const char *op, const char *arg, int axis, uint32_t rank, uint32_t *out);

/* Reductions (ops_reduce.c): the reduced-shape value, and the forward of a
   recorded reduction op. */
tf_status tf__reduce_value(tf_session *s, tf_reduce_op op, tf_tensor *v, uint64_t mask,
                           tf_tensor **out);
tf_status tf__reduce_forward(tf_session *s, uint32_t opid, tf_reduce_op op, tf_eager *x,
                             const int *axes, size_t n_axes, tf_eager **out);

/*
 * The AD-transform cache (transform.c): fills `plan` (a plain struct of
 * `size` bytes) with what node nd's rule derives from its attributes and
 * input metadata, calling build() only on a cache miss. `variant` tells
 * apart several plans of one op (e.g. reverse vs forward).
 */
tf_status tf__ad_transform(tf_session *s, const tf_node *nd, uint32_t variant, size_t size,
                           void (*build)(const tf_node *nd, void *plan), void *plan);

/* Session-op building blocks used by rules (all differentiable). */
tf_status tf__scalar_like(tf_session *s, const tf_eager *like, double value, tf_eager **out);
tf_status tf__zeros_like(tf_session *s, const tf_eager *like, tf_eager **out);
/* Sums a broadcast cotangent back to `shape` (reduce over stretched axes, reshape). */
tf_status tf__sum_to_shape(tf_session *s, tf_eager *x, size_t rank, const int64_t *shape,
                           tf_eager **out);
/*
 * Adds b into *acc (*acc may be NULL: it takes a reference to b). b is
 * borrowed and never written; the sum is written over *acc's own memory when
 * no one else can see it (tf__can_add_in_place), else it is a new tensor.
 */
tf_status tf__accumulate(tf_session *s, tf_eager **acc, tf_eager *b);
/*
 * The same, taking over the caller's reference to b (released on every
 * path): then the sum may also be written over b's memory when that
 * reference was the only one, *acc becoming b. A caller that will read b
 * again must use tf__accumulate: its pointer is not a reference.
 */
tf_status tf__accumulate_take(tf_session *s, tf_eager **acc, tf_eager *b);
/*
 * Whether `acc + b` may be written over acc's own memory: acc, its value and
 * that memory are held by the caller alone, acc is an untracked, unrecorded
 * dense float tensor of b's dtype and shape in the session engine's memory,
 * the engine takes in-place calls, and the sum would record nothing.
 */
bool tf__can_add_in_place(tf_session *s, const tf_eager *acc, const tf_eager *b);

#endif /* TF_EAGER_INTERNAL_H */
