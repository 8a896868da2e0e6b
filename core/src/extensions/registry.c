/*
 * registry.c - the epoch-based registry of a runtime's extension modules.
 *
 * The installed modules and their ops form an immutable snapshot published
 * through one atomic pointer. Readers (by-name dispatch, the idempotent
 * install check) pin it without a lock: they announce themselves in
 * `entering`, load the pointer, take a reference on the snapshot and leave
 * `entering`. A publisher swaps the pointer, then waits until `entering` is
 * zero (a window of two atomic operations per reader), after which every
 * reader that saw the old snapshot holds a reference to it; it then drops
 * the registry's reference, and the last reader frees the old snapshot.
 *
 * Installing the instance already installed returns the current epoch from
 * a pinned snapshot, without the install lock. Any other install runs under
 * the one install lock: it copies the current snapshot into a candidate
 * (dropping the ops of a module with the same id, which it replaces), runs
 * the module's install hook against the candidate, validates the result
 * and publishes it with the next epoch, or discards it whole.
 *
 * Each module id installed in the runtime gets an extension cache (inferred
 * by-name calls, keyed with the epoch) that lives as long as the runtime;
 * snapshots point at the caches of their modules.
 *
 * The registry lives in the runtime (not the AD context): the epoch is the
 * runtime's, and extension ops' AD rules travel with their tape nodes (the
 * node points at the immortal op record), so runtimes sharing an AD context
 * stay independent.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extensions_internal.h"

#define DEFAULT_CACHE_ENTRIES 256 /* per module */

/* ---- snapshots ---- */

static void snapshot_free(tf_ext_snapshot *snap)
{
    if (!snap)
        return;
    tf__free(snap->modules);
    tf__free(snap->caches);
    tf__free((void *)snap->ops);
    tf__free(snap);
}

static tf_ext_snapshot *snapshot_new(size_t cap_modules, size_t cap_ops)
{
    tf_ext_snapshot *snap = tf__calloc(1, sizeof *snap);
    if (!snap)
        return NULL;
    snap->modules = tf__calloc(cap_modules ? cap_modules : 1, sizeof *snap->modules);
    snap->caches = tf__calloc(cap_modules ? cap_modules : 1, sizeof *snap->caches);
    snap->ops = tf__calloc(cap_ops ? cap_ops : 1, sizeof *snap->ops);
    if (!snap->modules || !snap->caches || !snap->ops) {
        snapshot_free(snap);
        return NULL;
    }
    atomic_init(&snap->refs, 1);
    return snap;
}

static tf_ext_registry *registry_in(tf_runtime *rt)
{
    return (tf_ext_registry *)(void *)atomic_load_explicit(&rt->ext, memory_order_acquire);
}

tf_ext_snapshot *tf__snapshot_pin(tf_runtime *rt)
{
    tf_ext_registry *reg = registry_in(rt);
    if (!reg)
        return NULL;
    atomic_fetch_add(&reg->entering, 1);
    tf_ext_snapshot *snap = atomic_load(&reg->current);
    atomic_fetch_add(&snap->refs, 1);
    atomic_fetch_sub(&reg->entering, 1);
    return snap;
}

void tf__snapshot_unpin(tf_ext_snapshot *snap)
{
    if (snap && atomic_fetch_sub_explicit(&snap->refs, 1, memory_order_acq_rel) == 1)
        snapshot_free(snap);
}

static int cmp_op(const void *a, const void *b)
{
    return strcmp((*(const tf_ext_oprec *const *)a)->name, (*(const tf_ext_oprec *const *)b)->name);
}

const tf_ext_oprec *tf__snapshot_find(const tf_ext_snapshot *snap, const char *name)
{
    if (!snap)
        return NULL;
    size_t lo = 0, hi = snap->n_ops;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(snap->ops[mid]->name, name);
        if (c == 0)
            return snap->ops[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

tf_cache *tf__snapshot_cache(const tf_ext_snapshot *snap, const tf_extension_module *m)
{
    for (size_t i = 0; i < snap->n_modules; i++)
        if (snap->modules[i] == m)
            return &snap->caches[i]->cache;
    return NULL;
}

static bool snapshot_has(const tf_ext_snapshot *snap, const tf_extension_module *m)
{
    for (size_t i = 0; i < snap->n_modules; i++)
        if (snap->modules[i] == m)
            return true;
    return false;
}

/* ---- the registry ---- */

static void registry_destroy(tf_ext_registry *reg);
static void registry_cache_stats(tf_ext_registry *reg, tf_cache_stats *out);
static void registry_cache_clear(tf_ext_registry *reg);

static void hook_destroy(tf_rt_ext *ext)
{
    registry_destroy((tf_ext_registry *)(void *)ext);
}

static void hook_stats(tf_rt_ext *ext, tf_cache_stats *out)
{
    registry_cache_stats((tf_ext_registry *)(void *)ext, out);
}

static void hook_clear(tf_rt_ext *ext)
{
    registry_cache_clear((tf_ext_registry *)(void *)ext);
}

static const tf_rt_ext_hooks k_hooks = {hook_destroy, hook_stats, hook_clear};

static tf_status registry_create(tf_ext_registry **out)
{
    tf_ext_registry *reg = tf__calloc(1, sizeof *reg);
    tf_ext_snapshot *empty = snapshot_new(1, 1);
    if (!reg || !empty) {
        tf__free(reg);
        snapshot_free(empty);
        return tf__error(TF_ERR_OUT_OF_MEMORY, "extension registry", NULL, "out of memory");
    }
    bool locked = pthread_mutex_init(&reg->install_lock, NULL) == 0;
    if (!locked || pthread_mutex_init(&reg->caches_lock, NULL) != 0) {
        if (locked)
            pthread_mutex_destroy(&reg->install_lock);
        tf__free(reg);
        snapshot_free(empty);
        return tf__error(TF_ERR_RUNTIME_STATE, "extension registry", NULL,
                         "cannot initialise the extension registry's locks");
    }
    reg->base.hooks = &k_hooks;
    reg->limits.max_entries = DEFAULT_CACHE_ENTRIES;
    atomic_init(&reg->current, empty);
    atomic_init(&reg->entering, 0);
    atomic_init(&reg->lock_count, 0);
    atomic_init(&reg->publish_count, 0);
    *out = reg;
    return TF_OK;
}

/*
 * rt's registry, made by the first caller that needs one (an install, a
 * cache-limit setting); NULL with the error recorded when it cannot be
 * made. Two threads making it at once keep the first one published.
 */
static tf_ext_registry *registry_made(tf_runtime *rt)
{
    tf_ext_registry *reg = registry_in(rt), *mine = NULL;
    if (reg)
        return reg;
    if (registry_create(&mine))
        return NULL;
    tf_rt_ext *none = NULL;
    if (!atomic_compare_exchange_strong_explicit(&rt->ext, &none, &mine->base, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        registry_destroy(mine);
        return (tf_ext_registry *)(void *)none;
    }
    tf__op_rule_set_extension(&tf__rule_extension); /* before any extension op is recorded */
    return mine;
}

static void registry_destroy(tf_ext_registry *reg)
{
    if (!reg)
        return;
    tf__snapshot_unpin(atomic_load(&reg->current));
    for (tf_ext_cache_slot *c = reg->caches, *next; c; c = next) {
        next = c->next;
        tf__cache_destroy(&c->cache);
        tf__free(c);
    }
    pthread_mutex_destroy(&reg->install_lock);
    pthread_mutex_destroy(&reg->caches_lock);
    tf__free(reg);
}

/* ---- the candidate an install hook fills ---- */

struct tf_ext_candidate {
    tf_ext_snapshot *snap;
    size_t cap_ops;
    tf_extension_module *module;
    tf_status failure; /* the first add_op failure, kept even if the hook ignores it */
};

static tf_status candidate_add_op(tf_ext_candidate *c, const tf_ext_op *op)
{
    const char *id = c->module->desc->id;
    if (!op)
        return c->failure = tf__error(TF_ERR_VALIDATION, "install_extension_module", "op",
                                      "module '%s': add_op got a NULL op", id);
    const tf_ext_oprec *rec = tf__extension_oprec(c->module, op);
    if (!rec)
        return c->failure = tf_error_status();
    for (size_t i = 0; i < c->snap->n_ops; i++)
        if (strcmp(c->snap->ops[i]->name, rec->name) == 0)
            return c->failure = tf__error(TF_ERR_VALIDATION, "install_extension_module", "op",
                                          "module '%s': duplicate op name '%s'", id, rec->name);
    if (c->snap->n_ops == c->cap_ops) {
        size_t cap = c->cap_ops * 2;
        const tf_ext_oprec **ops = tf__calloc(cap, sizeof *ops);
        if (!ops)
            return c->failure = tf__error(TF_ERR_OUT_OF_MEMORY, "install_extension_module", NULL,
                                          "out of memory");
        memcpy(ops, c->snap->ops, c->snap->n_ops * sizeof *ops);
        tf__free((void *)c->snap->ops);
        c->snap->ops = ops;
        c->cap_ops = cap;
    }
    c->snap->ops[c->snap->n_ops++] = rec;
    return TF_OK;
}

/* The cache slot of module id `id`, made on first use (under the install lock). */
static tf_ext_cache_slot *cache_slot(tf_ext_registry *reg, const char *id)
{
    pthread_mutex_lock(&reg->caches_lock);
    tf_ext_cache_slot *c = reg->caches;
    while (c && strcmp(c->id, id) != 0)
        c = c->next;
    if (!c && (c = tf__calloc(1, sizeof *c))) {
        snprintf(c->id, sizeof c->id, "%s", id);
        if (tf__cache_init(&c->cache, reg->limits.max_entries) != TF_OK) {
            tf__free(c);
            c = NULL;
        } else {
            tf__cache_set_limits(&c->cache, &reg->limits);
            c->next = reg->caches;
            reg->caches = c;
        }
    }
    pthread_mutex_unlock(&reg->caches_lock);
    return c;
}

/* A copy of base without the modules (and their ops) whose id is m's. */
static tf_ext_candidate *candidate_new(tf_ext_registry *reg, const tf_ext_snapshot *base,
                                       tf_extension_module *m)
{
    tf_ext_cache_slot *slot = cache_slot(reg, m->desc->id);
    if (!slot)
        return NULL;
    tf_ext_candidate *c = tf__calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->module = m;
    c->cap_ops = base->n_ops + 16;
    c->snap = snapshot_new(base->n_modules + 1, c->cap_ops);
    if (!c->snap) {
        tf__free(c);
        return NULL;
    }
    for (size_t i = 0; i < base->n_modules; i++) {
        if (strcmp(base->modules[i]->desc->id, m->desc->id) != 0) {
            c->snap->caches[c->snap->n_modules] = base->caches[i];
            c->snap->modules[c->snap->n_modules++] = base->modules[i];
        }
    }
    for (size_t i = 0; i < base->n_ops; i++)
        if (strcmp(base->ops[i]->module->desc->id, m->desc->id) != 0)
            c->snap->ops[c->snap->n_ops++] = base->ops[i];
    c->snap->caches[c->snap->n_modules] = slot;
    c->snap->modules[c->snap->n_modules++] = m;
    return c;
}

/* Runs the hook and checks what it declared. */
static tf_status candidate_fill(tf_ext_candidate *c)
{
    const tf_extension_module_desc *d = c->module->desc;
    tf_ext_registrar reg = {sizeof reg, 0, c, candidate_add_op};
    tf__plugin_report_clear();
    tf_status st = d->install(tf__host_api(), &reg);
    if (st != TF_OK && !c->failure)
        return tf__error_from_plugin(TF_ERR_RUNTIME_STATE, "install_extension_module",
                                     "module '%s': its install hook failed with %s", d->id,
                                     tf_status_name(st));
    if (c->failure == TF_ERR_OUT_OF_MEMORY) /* not the module's fault: said as it is */
        return tf__error(TF_ERR_OUT_OF_MEMORY, "install_extension_module", NULL,
                         "module '%s': out of memory installing it", d->id);
    if (c->failure) {
        char why[512];
        snprintf(why, sizeof why, "%s", tf_error_message());
        tf__error(TF_ERR_RUNTIME_STATE, "install_extension_module", "module",
                  "module '%s': the install transaction is invalid", d->id);
        tf__error_cause("%s", why);
        return TF_ERR_RUNTIME_STATE;
    }
    qsort((void *)c->snap->ops, c->snap->n_ops, sizeof *c->snap->ops, cmp_op);
    return TF_OK;
}

/* Swaps in snap (under the install lock) and retires the old snapshot. */
static void publish(tf_runtime *rt, tf_ext_registry *reg, tf_ext_snapshot *snap)
{
    tf_ext_snapshot *old = atomic_load(&reg->current);
    snap->epoch = old->epoch + 1;
    atomic_store(&reg->current, snap);
    atomic_store(&rt->epoch, snap->epoch);
    atomic_fetch_add(&reg->publish_count, 1);
    while (atomic_load(&reg->entering) != 0)
        sched_yield();
    tf__snapshot_unpin(old);
}

static tf_status install_locked(tf_runtime *rt, tf_ext_registry *reg, tf_extension_module *m,
                                tf_epoch *epoch)
{
    tf_ext_snapshot *base = atomic_load(&reg->current); /* stable under the lock */
    if (snapshot_has(base, m)) {                        /* another thread got here first */
        *epoch = base->epoch;
        return TF_OK;
    }
    tf_ext_candidate *c = candidate_new(reg, base, m);
    if (!c)
        return tf__error(TF_ERR_OUT_OF_MEMORY, "install_extension_module", NULL, "out of memory");
    tf_status st = candidate_fill(c);
    if (st) {
        snapshot_free(c->snap);
        tf__free(c);
        return st;
    }
    publish(rt, reg, c->snap);
    *epoch = c->snap->epoch;
    tf__free(c);
    tf__log(TF_LOG_INFO, "installed extension module '%s' %s at epoch %llu", m->desc->id,
            m->desc->version, (unsigned long long)*epoch);
    return TF_OK;
}

TF_API tf_status tf_runtime_install_extension_module(tf_runtime *rt, tf_extension_module *m,
                                                     tf_epoch *epoch)
{
    if (!rt || !m || !epoch)
        return tf__error(TF_ERR_VALIDATION, "install_extension_module",
                         !rt  ? "runtime"
                         : !m ? "module"
                              : "epoch",
                         "install_extension_module: NULL argument");
    tf_ext_registry *reg = registry_made(rt);
    if (!reg)
        return tf_error_status();
    tf_ext_snapshot *snap = tf__snapshot_pin(rt);
    bool installed = snapshot_has(snap, m);
    tf_epoch current = snap->epoch;
    tf__snapshot_unpin(snap);
    if (installed) { /* the read-only fast path: no lock */
        *epoch = current;
        return TF_OK;
    }
    /* An instance installed before passed this check: only new ones need it,
       and it runs before anything is touched. */
    tf_status st = tf__extension_check_kinds(m);
    if (st)
        return st;
    pthread_mutex_lock(&reg->install_lock);
    atomic_fetch_add(&reg->lock_count, 1);
    st = install_locked(rt, reg, m, epoch);
    pthread_mutex_unlock(&reg->install_lock);
    return st;
}

/* ---- diagnostics ---- */

TF_API uint64_t tf_runtime_extension_lock_count(const tf_runtime *rt)
{
    tf_ext_registry *reg = registry_in((tf_runtime *)rt);
    return reg ? atomic_load(&reg->lock_count) : 0;
}

TF_API uint64_t tf_runtime_extension_publish_count(const tf_runtime *rt)
{
    tf_ext_registry *reg = registry_in((tf_runtime *)rt);
    return reg ? atomic_load(&reg->publish_count) : 0;
}

TF_API int tf_runtime_has_op(tf_runtime *rt, const char *name)
{
    if (!rt || !name)
        return 0;
    tf_ext_snapshot *snap = tf__snapshot_pin(rt);
    int found = tf__snapshot_find(snap, name) != NULL;
    tf__snapshot_unpin(snap);
    return found;
}

/* ---- the module caches ---- */

static void add_stats(tf_cache_stats *sum, const tf_cache_stats *s)
{
    sum->entries += s->entries;
    sum->retained_bytes += s->retained_bytes;
    sum->hits += s->hits;
    sum->misses += s->misses;
    sum->evictions += s->evictions;
    sum->clears += s->clears;
}

static void registry_cache_stats(tf_ext_registry *reg, tf_cache_stats *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&reg->caches_lock);
    for (tf_ext_cache_slot *c = reg->caches; c; c = c->next) {
        tf_cache_stats one;
        tf__cache_stats(&c->cache, &one);
        add_stats(out, &one);
    }
    pthread_mutex_unlock(&reg->caches_lock);
}

static void registry_cache_clear(tf_ext_registry *reg)
{
    pthread_mutex_lock(&reg->caches_lock);
    for (tf_ext_cache_slot *c = reg->caches; c; c = c->next)
        tf__cache_clear(&c->cache);
    pthread_mutex_unlock(&reg->caches_lock);
}

TF_API tf_status tf_runtime_extension_cache_stats(tf_runtime *rt, const char *module_id,
                                                  tf_cache_stats *out)
{
    const char *op = "extension_cache_stats";
    if (!rt || !module_id || !out)
        return tf__error(TF_ERR_VALIDATION, op,
                         !rt          ? "runtime"
                         : !module_id ? "module_id"
                                      : "out",
                         "%s: NULL argument", op);
    tf_ext_registry *reg = registry_in(rt);
    tf_ext_cache_slot *c = NULL;
    if (reg) {
        pthread_mutex_lock(&reg->caches_lock);
        c = reg->caches;
        while (c && strcmp(c->id, module_id) != 0)
            c = c->next;
        if (c)
            tf__cache_stats(&c->cache, out);
        pthread_mutex_unlock(&reg->caches_lock);
    }
    if (!c)
        return tf__error(TF_ERR_VALIDATION, op, "module_id",
                         "%s: no module '%s' was ever installed in runtime %llu", op, module_id,
                         (unsigned long long)rt->id);
    return TF_OK;
}

TF_API tf_status tf_runtime_extension_cache_limits(tf_runtime *rt, tf_cache_limits *out)
{
    if (!rt || !out)
        return tf__error(TF_ERR_VALIDATION, "extension_cache_limits", rt ? "out" : "runtime",
                         "extension_cache_limits: NULL argument");
    tf_ext_registry *reg = registry_in(rt);
    if (!reg) { /* none yet: the limits the first one will have */
        *out = (tf_cache_limits){.max_entries = DEFAULT_CACHE_ENTRIES, .max_bytes = 0};
        return TF_OK;
    }
    pthread_mutex_lock(&reg->caches_lock);
    *out = reg->limits;
    pthread_mutex_unlock(&reg->caches_lock);
    return TF_OK;
}

TF_API tf_status tf_runtime_set_extension_cache_limits(tf_runtime *rt,
                                                       const tf_cache_limits *limits)
{
    const char *op = "set_extension_cache_limits";
    if (!rt || !limits)
        return tf__error(TF_ERR_VALIDATION, op, rt ? "limits" : "runtime", "%s: NULL argument", op);
    if (limits->max_entries == 0)
        return tf__error(TF_ERR_VALIDATION, op, "limits", "%s: max_entries must be > 0", op);
    tf_ext_registry *reg = registry_made(rt);
    if (!reg)
        return tf_error_status();
    pthread_mutex_lock(&reg->caches_lock);
    reg->limits = *limits;
    for (tf_ext_cache_slot *c = reg->caches; c; c = c->next)
        tf__cache_set_limits(&c->cache, limits);
    pthread_mutex_unlock(&reg->caches_lock);
    return TF_OK;
}
