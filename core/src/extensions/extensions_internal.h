/*
 * extensions_internal.h - extension modules (core/src/extensions), their op
 * records and the
 * epoch-based registry of installed modules (registry.c), shared by the
 * extension loader (extension_load.c) and by-name dispatch
 * (extension_call.c).
 *
 * Lifetimes: a tf_extension_module and its op records live until the
 * process ends (like engine plugins, modules are never unloaded), so a tape
 * node of an extension op can point at its op record without pinning
 * anything. Snapshots are reference counted and freed when the last reader
 * lets go.
 */
#ifndef TF_EXTENSIONS_INTERNAL_H
#define TF_EXTENSIONS_INTERNAL_H

#include <ffi.h>

#include <tenferro/extension.h>

#include "autodiff_internal.h"

/* One op of one module, interned per op descriptor; immortal. */
typedef struct tf_ext_oprec {
    struct tf_ext_oprec *next; /* the module's list */
    tf_extension_module *module;
    const tf_ext_op *desc;
    char name[TF_EXT_MAX_NAME + 1]; /* full name */
    uint32_t n_tensors, n_scalars;
    uint8_t tensor_arg[TF_EXT_MAX_ARGS]; /* argument index of each tensor argument */
    uint8_t scalar_arg[TF_EXT_MAX_ARGS]; /* argument index of each scalar argument */
    uint32_t n_strings;                  /* ABI 1.2 composite ops: string arguments */
    uint8_t string_arg[TF_EXT_MAX_ARGS];
    bool composite; /* compose() set (extension_compose.c); no libffi signature */
    bool has_list;  /* the last argument is a TF_EXT_ARG_TENSORS list */
    /* ABI 1.3: TF_EXT_OP_RULES_READ_OUTPUTS from a 1.3 module, and more than
       one output: the call's output values are kept for its rules */
    bool keeps_outputs;
    ffi_cif cif;                         /* the typed kernel signature */
    ffi_type *types[1 + TF_EXT_MAX_ARGS + TF_EXT_MAX_OUTPUTS];
} tf_ext_oprec;

struct tf_extension_module {
    struct tf_extension_module *next; /* linked descriptors (extension_load.c) */
    char *file;                       /* "" for descriptors linked into the app */
    const tf_extension_module_desc *desc;
    pthread_mutex_t recs_lock;
    tf_ext_oprec *recs;
};

/* The extension cache of one module id in one runtime: inferred calls,
   keyed with the epoch. Lives until the runtime does. */
typedef struct tf_ext_cache_slot {
    struct tf_ext_cache_slot *next;
    char id[TF_EXT_MAX_NAME + 1];
    tf_cache cache;
} tf_ext_cache_slot;

/* An immutable set of installed modules and their ops (sorted by name). */
typedef struct tf_ext_snapshot {
    atomic_size_t refs; /* the registry's reference plus one per reader */
    tf_epoch epoch;
    size_t n_modules;
    tf_extension_module **modules;
    tf_ext_cache_slot **caches; /* caches[i]: the cache of modules[i]'s id */
    size_t n_ops;
    const tf_ext_oprec **ops;
} tf_ext_snapshot;

typedef struct tf_ext_registry {
    tf_rt_ext base; /* first: the runtime holds the registry as its tf_rt_ext */
    _Atomic(tf_ext_snapshot *) current;
    atomic_size_t entering; /* readers between loading `current` and pinning it */
    pthread_mutex_t install_lock;
    _Atomic uint64_t lock_count, publish_count;
    pthread_mutex_t caches_lock; /* guards the list below and `limits` */
    tf_ext_cache_slot *caches;   /* one per module id ever installed */
    tf_cache_limits limits;      /* of every module cache */
} tf_ext_registry;

/* registry.c */
/*
 * Pins rt's current snapshot (lock-free); release with tf__snapshot_unpin.
 * NULL when nothing was ever installed in rt (tf__snapshot_find and
 * tf__snapshot_unpin take NULL).
 */
tf_ext_snapshot *tf__snapshot_pin(tf_runtime *rt);
void tf__snapshot_unpin(tf_ext_snapshot *snap);
const tf_ext_oprec *tf__snapshot_find(const tf_ext_snapshot *snap, const char *name);
/* The extension cache of m's id in snap (m installed there). */
tf_cache *tf__snapshot_cache(const tf_ext_snapshot *snap, const tf_extension_module *m);
/* extension_call.c: the rule of every recorded extension op. */
extern const tf_op_rule tf__rule_extension;

/* extension_load.c */
/* Checks a descriptor's fields (major, size, id, version, install); `file` for messages. */
tf_status tf__extension_check(const char *op, const char *file, const tf_extension_module_desc *d);
/* The module's record of op (made and checked on first use); NULL with the error recorded. */
const tf_ext_oprec *tf__extension_oprec(tf_extension_module *m, const tf_ext_op *op);
/* Whether op of m is a composite (ABI 1.2: compose set, module stating minor >= 2). */
bool tf__extension_op_composite(const tf_extension_module *m, const tf_ext_op *op);
/* Whether s is a valid module id (dots allowed) or op name (one segment). */
bool tf__extension_valid_name(const char *s, bool namespaced);
/* Checks m's declared error kinds (TF_ERR_VALIDATION, argument "error_kinds"). */
tf_status tf__extension_check_kinds(const tf_extension_module *m);
/* m's declared error kind named `kind`, NULL if none. */
const tf_ext_error_kind *tf__extension_find_kind(const tf_extension_module *m, const char *kind);

/* extension_call.c */
extern const tf_ext_ops tf__ext_ops;
/* The rule context the host hands modules; the public part comes first, so
   the host's functions find the op record from the pointer handed back. */
typedef struct tf_ext_host_rule_ctx {
    tf_ext_rule_ctx pub;
    const tf_ext_oprec *rec;
} tf_ext_host_rule_ctx;
void tf__ext_rule_ctx_init(tf_ext_host_rule_ctx *c, tf_session *s, const tf_ext_oprec *r);

/* extension_ops.c: the ABI 1.2 entries of tf__ext_ops (every other built-in op). */
#define TF_EXT_OPS_1_2_ENTRIES                                                              \
    .unary = tf__xo_unary, .binary = tf__xo_binary, .compare = tf__xo_compare,              \
    .select = tf__xo_select, .clamp = tf__xo_clamp, .convert = tf__xo_convert,              \
    .cast = tf__xo_cast, .reduce = tf__xo_reduce, .dot_general = tf__xo_dot_general,        \
    .broadcast_in_dim = tf__xo_broadcast_in_dim, .reverse = tf__xo_reverse,                 \
    .slice = tf__xo_slice, .dynamic_slice = tf__xo_dynamic_slice, .gather = tf__xo_gather,  \
    .scatter = tf__xo_scatter, .pad = tf__xo_pad, .concatenate = tf__xo_concatenate,        \
    .stack = tf__xo_stack, .softmax = tf__xo_softmax, .log_softmax = tf__xo_log_softmax,    \
    .silu = tf__xo_silu, .gelu = tf__xo_gelu, .softplus = tf__xo_softplus,                  \
    .layer_norm = tf__xo_layer_norm, .rms_norm = tf__xo_rms_norm,                           \
    .constant = tf__xo_constant, .constant_from_host = tf__xo_constant_from_host,           \
    .call_args = tf__xo_call_args

tf_status tf__xo_unary(tf_ext_session *s, uint32_t op, tf_ext_tensor *x, tf_ext_tensor **out);
tf_status tf__xo_binary(tf_ext_session *s, uint32_t op, tf_ext_tensor *x, tf_ext_tensor *y,
                        tf_ext_tensor **out);
tf_status tf__xo_compare(tf_ext_session *s, uint32_t op, tf_ext_tensor *x, tf_ext_tensor *y,
                         tf_ext_tensor **out);
tf_status tf__xo_select(tf_ext_session *s, tf_ext_tensor *p, tf_ext_tensor *t, tf_ext_tensor *f,
                        tf_ext_tensor **out);
tf_status tf__xo_clamp(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor *lo, tf_ext_tensor *hi,
                       tf_ext_tensor **out);
tf_status tf__xo_convert(tf_ext_session *s, tf_ext_tensor *x, uint32_t dtype, tf_ext_tensor **out);
tf_status tf__xo_cast(tf_ext_session *s, tf_ext_tensor *x, uint32_t dtype, tf_ext_tensor **out);
tf_status tf__xo_reduce(tf_ext_session *s, uint32_t op, tf_ext_tensor *x, const int *axes,
                        size_t n_axes, tf_ext_tensor **out);
tf_status tf__xo_dot_general(tf_ext_session *s, tf_ext_tensor *lhs, tf_ext_tensor *rhs,
                             const tf_dot_general_params *dims, tf_ext_tensor **out);
tf_status tf__xo_broadcast_in_dim(tf_ext_session *s, tf_ext_tensor *x, uint32_t rank,
                                  const int64_t *shape, const int *dims, tf_ext_tensor **out);
tf_status tf__xo_reverse(tf_ext_session *s, tf_ext_tensor *x, const int *axes, size_t n_axes,
                         tf_ext_tensor **out);
tf_status tf__xo_slice(tf_ext_session *s, tf_ext_tensor *x, const int64_t *start,
                       const int64_t *limit, const int64_t *stride, tf_ext_tensor **out);
tf_status tf__xo_dynamic_slice(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor *starts,
                               const int64_t *sizes, tf_ext_tensor **out);
tf_status tf__xo_gather(tf_ext_session *s, tf_ext_tensor *x, int axis, tf_ext_tensor *index,
                        uint32_t mode, tf_ext_tensor **out);
tf_status tf__xo_scatter(tf_ext_session *s, tf_ext_tensor *base, int axis, tf_ext_tensor *index,
                         tf_ext_tensor *updates, uint32_t mode, uint32_t combine,
                         tf_ext_tensor **out);
tf_status tf__xo_pad(tf_ext_session *s, tf_ext_tensor *x, const int64_t *low, const int64_t *high,
                     const int64_t *interior, double value, tf_ext_tensor **out);
tf_status tf__xo_concatenate(tf_ext_session *s, tf_ext_tensor *const *xs, size_t n, int axis,
                             tf_ext_tensor **out);
tf_status tf__xo_stack(tf_ext_session *s, tf_ext_tensor *const *xs, size_t n, int axis,
                       tf_ext_tensor **out);
tf_status tf__xo_softmax(tf_ext_session *s, tf_ext_tensor *x, int axis, tf_ext_tensor **out);
tf_status tf__xo_log_softmax(tf_ext_session *s, tf_ext_tensor *x, int axis, tf_ext_tensor **out);
tf_status tf__xo_silu(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor **out);
tf_status tf__xo_gelu(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor **out);
tf_status tf__xo_softplus(tf_ext_session *s, tf_ext_tensor *x, tf_ext_tensor **out);
tf_status tf__xo_layer_norm(tf_ext_session *s, tf_ext_tensor *x, size_t n_axes, tf_ext_tensor *w,
                            tf_ext_tensor *b, double eps, tf_ext_tensor **out);
tf_status tf__xo_rms_norm(tf_ext_session *s, tf_ext_tensor *x, size_t n_axes, tf_ext_tensor *w,
                          double eps, tf_ext_tensor **out);
tf_status tf__xo_constant(tf_ext_session *s, uint32_t dtype, uint32_t rank, const int64_t *shape,
                          double value, tf_ext_tensor **out);
tf_status tf__xo_constant_from_host(tf_ext_session *s, uint32_t dtype, uint32_t rank,
                                    const int64_t *shape, const void *data, size_t count,
                                    tf_ext_tensor **out);
tf_status tf__xo_call_args(tf_ext_session *s, const char *name, const tf_ext_arg *args,
                           uint32_t n_args, tf_ext_tensor **outputs, uint32_t n_outputs);

/* extension_outputs.c: ABI 1.3, the output values of a call kept for its rules. */
typedef struct tf_ext_kept tf_ext_kept;
/*
 * A record of the n outputs' values vals[] (retained) of a call of r with
 * tensor arguments tensors[], holding one reference per output, or NULL
 * when r keeps none, nothing would be recorded, or memory is short (the
 * rules then recompute: no error). Each reference goes to one recorded
 * node (tf_attrs.aux) or back through tf__ext_kept_release.
 */
tf_ext_kept *tf__ext_kept_new(tf_session *s, const tf_ext_oprec *r, tf_eager *const *tensors,
                              tf_tensor *const *vals);
/* Gives back one reference (tf_attrs.aux_release); the last frees it. Any thread. */
void tf__ext_kept_release(void *kept);
/* Sets call->outputs to the kept values as constants e[] of s, when node nd
   kept them and the derivative is not recorded; TF_ERR_OUT_OF_MEMORY (not
   recorded) when they cannot be made. */
tf_status tf__ext_rule_outputs_begin(tf_session *s, const tf_node *nd, tf_ext_call *call,
                                     tf_eager **e);
/* Releases what tf__ext_rule_outputs_begin made. */
void tf__ext_rule_outputs_end(const tf_ext_call *call);

/* extension_compose.c: composite ops (ABI 1.2) and the modules' own cache entries. */
/* A by-name call of composite op r (its signature checked here). */
tf_status tf__ext_call_composite(tf_session *s, const tf_ext_oprec *r, const tf_call_arg *args,
                                 size_t n_args, tf_eager **outputs, size_t n_outputs);
/* The same from the ops table (call / call_args), arguments in the ABI's form. */
tf_status tf__ext_compose_fixed(tf_session *s, const tf_ext_oprec *r, tf_eager *const *tensors,
                                const tf_ext_scalar *scalars, tf_eager **outputs);
/* The ABI 1.2 rule-context functions: the module's own cache entries. */
int tf__ext_cache_get(const tf_ext_rule_ctx *ctx, const void *key, size_t key_size,
                      void (*use)(const void *value, size_t value_size, void *user), void *user);
tf_status tf__ext_cache_put(const tf_ext_rule_ctx *ctx, const void *key, size_t key_size,
                            const void *value, size_t value_size);
/* The smallest allocation of a module's cache entry: no smaller than the host's own
   inferred-call entries of the same cache (extension_call.c checks it). */
#define TF_EXT_CACHE_MIN_VALUE 4096

#endif /* TF_EXTENSIONS_INTERNAL_H */
