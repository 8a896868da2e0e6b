/*
 * extension_internal.h - extension modules, their op records and the
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
#ifndef TF_EXTENSION_INTERNAL_H
#define TF_EXTENSION_INTERNAL_H

#include <ffi.h>

#include <tenferro/extension.h>

#include "eager_internal.h"

/* One op of one module, interned per op descriptor; immortal. */
typedef struct tf_ext_oprec {
    struct tf_ext_oprec *next; /* the module's list */
    tf_extension_module *module;
    const tf_ext_op *desc;
    char name[TF_EXT_MAX_NAME + 1]; /* full name */
    uint32_t n_tensors, n_scalars;
    uint8_t tensor_arg[TF_EXT_MAX_ARGS]; /* argument index of each tensor argument */
    uint8_t scalar_arg[TF_EXT_MAX_ARGS]; /* argument index of each scalar argument */
    ffi_cif cif;                         /* the typed kernel signature */
    ffi_type *types[1 + TF_EXT_MAX_ARGS + TF_EXT_MAX_OUTPUTS];
} tf_ext_oprec;

struct tf_extension_module {
    struct tf_extension_module *next; /* loaded modules, guarded by the loader's lock */
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
    _Atomic(tf_ext_snapshot *) current;
    atomic_size_t entering; /* readers between loading `current` and pinning it */
    pthread_mutex_t install_lock;
    _Atomic uint64_t lock_count, publish_count;
    pthread_mutex_t caches_lock; /* guards the list below and `limits` */
    tf_ext_cache_slot *caches;   /* one per module id ever installed */
    tf_cache_limits limits;      /* of every module cache */
} tf_ext_registry;

/* registry.c */
tf_status tf__registry_create(tf_ext_registry **out);
void tf__registry_destroy(tf_ext_registry *reg);
tf_status tf__registry_install(tf_runtime *rt, tf_extension_module *module, tf_epoch *epoch);
/* Pins the current snapshot (lock-free); release with tf__snapshot_unpin. */
tf_ext_snapshot *tf__snapshot_pin(tf_ext_registry *reg);
void tf__snapshot_unpin(tf_ext_snapshot *snap);
const tf_ext_oprec *tf__snapshot_find(const tf_ext_snapshot *snap, const char *name);
/* The extension cache of m's id in snap (m installed there). */
tf_cache *tf__snapshot_cache(const tf_ext_snapshot *snap, const tf_extension_module *m);
/* Sums (clears) every module cache of the registry. */
void tf__registry_cache_stats(tf_ext_registry *reg, tf_cache_stats *out);
void tf__registry_cache_clear(tf_ext_registry *reg);

/* extension_load.c */
/* Checks a descriptor's fields (major, size, id, version, install); `file` for messages. */
tf_status tf__extension_check(const char *op, const char *file, const tf_extension_module_desc *d);
/* The module's record of op (made and checked on first use); NULL with the error recorded. */
const tf_ext_oprec *tf__extension_oprec(tf_extension_module *m, const tf_ext_op *op);
/* Whether s is a valid module id (dots allowed) or op name (one segment). */
bool tf__extension_valid_name(const char *s, bool namespaced);
/* Checks m's declared error kinds (TF_ERR_VALIDATION, argument "error_kinds"). */
tf_status tf__extension_check_kinds(const tf_extension_module *m);
/* m's declared error kind named `kind`, NULL if none. */
const tf_ext_error_kind *tf__extension_find_kind(const tf_extension_module *m, const char *kind);

/* extension_call.c */
extern const tf_ext_ops tf__ext_ops;

#endif /* TF_EXTENSION_INTERNAL_H */
