/*
 * module.c - the one module loader: opening a shared object, finding its
 * versioned entry symbol, checking the descriptor it returns, and keeping
 * what was loaded, for every kind of module (engine plugins in plugin.c,
 * extension modules in core/src/extensions). What differs between kinds is
 * a tf_module_kind: the entry's name and arguments, the descriptor check and
 * the object made from an accepted descriptor.
 *
 * A file is loaded at most once per process and kind (keyed by its resolved
 * path) and never unloaded: nothing from it can outlive it that way. A file
 * whose object could not be made for a reason other than memory (an engine's
 * init failing) is refused again with the same error, never retried. Every
 * refusal names the file and what was expected versus found, and leaves the
 * host as it was; a refused file stays mapped but inert.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "loader_internal.h"

/* One file of one kind: its object, or the refusal to repeat. */
typedef struct tf_loaded {
    struct tf_loaded *next;
    char *file;
    void *object;      /* NULL: refused */
    tf_status refused; /* the refusal's status, message and cause */
    char *message, *cause;
} tf_loaded;

unsigned tf__module_other_major(void *handle, const char *symbol_stem)
{
    for (unsigned m = 2; m <= 9; m++) {
        char sym[64];
        snprintf(sym, sizeof sym, "%s%u", symbol_stem, m);
        if (dlsym(handle, sym))
            return m;
    }
    return 0;
}

/* Opens `file` and returns its checked descriptor; records every refusal. */
static tf_status open_checked(const tf_module_kind *k, const char *op, const char *file,
                              void **handle, const void **desc)
{
    dlerror();
    void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        tf__error(TF_ERR_PLUGIN_LOAD, op, NULL,
                  "%s '%s': expected a loadable shared object, dlopen refused it", k->noun, file);
        tf__error_cause("%s", why ? why : "unknown dlopen error");
        return TF_ERR_PLUGIN_LOAD;
    }
    void *sym = dlsym(h, k->entry);
    if (!sym) {
        unsigned m = tf__module_other_major(h, k->entry_stem);
        if (m)
            return tf__error(TF_ERR_PLUGIN_ABI, op, NULL,
                             "%s '%s': expected symbol %s (%s %d), found %s%u (ABI %u)", k->noun,
                             file, k->entry, k->abi, k->abi_major, k->entry_stem, m, m);
        return tf__error(TF_ERR_PLUGIN_SYMBOL, op, NULL,
                         "%s '%s': expected the entry symbol %s, found none (define it as %s, "
                         "with C linkage, and build with -fvisibility=hidden; "
                         "nm -D --defined-only FILE lists what a file exports)",
                         k->noun, file, k->entry, k->entry_decl);
    }
    const void *d = k->call_entry(sym);
    if (!d)
        return tf__error(TF_ERR_PLUGIN_ABI, op, NULL,
                         "%s '%s': expected a descriptor, the entry returned NULL (it refuses "
                         "host %s %d.%d)",
                         k->noun, file, k->abi, k->abi_major, k->abi_minor);
    tf_status st = k->check(op, file, d);
    if (st)
        return st;
    *handle = h;
    *desc = d;
    return TF_OK;
}

/* Remembers the refusal just recorded in this thread's error slot; without
   memory to remember it, the file is simply tried again next time. */
static void remember_refusal(tf_module_set *set, const char *file, tf_status st)
{
    tf_loaded *r = tf__calloc(1, sizeof *r);
    if (r) {
        r->file = tf__strdup(file);
        r->message = tf__strdup(tf_error_message());
        r->cause = tf__strdup(tf_error_cause());
    }
    if (!r || !r->file || !r->message || !r->cause) {
        if (r) {
            tf__free(r->file);
            tf__free(r->message);
            tf__free(r->cause);
        }
        tf__free(r);
        return;
    }
    r->refused = st;
    r->next = set->loaded;
    set->loaded = r;
}

static tf_status load_locked(const tf_module_kind *k, const char *op, const char *file, void **out)
{
    tf_module_set *set = k->set;
    for (const tf_loaded *l = set->loaded; l; l = l->next) {
        if (strcmp(l->file, file) != 0)
            continue;
        if (l->object) {
            *out = l->object;
            return TF_OK;
        }
        tf__error(l->refused, op, NULL, "%s", l->message);
        tf__error_cause("%s", l->cause);
        return l->refused;
    }
    void *handle = NULL;
    const void *desc = NULL;
    tf_status st = open_checked(k, op, file, &handle, &desc);
    if (st)
        return st;
    tf_loaded *l = tf__calloc(1, sizeof *l);
    char *fcopy = tf__strdup(file);
    if (!l || !fcopy) {
        tf__free(l);
        tf__free(fcopy);
        return tf__error(TF_ERR_OUT_OF_MEMORY, op, NULL, "out of memory");
    }
    void *object = NULL;
    st = k->make(op, fcopy, handle, desc, &object);
    if (st) {
        tf__free(l);
        tf__free(fcopy);
        if (st != TF_ERR_OUT_OF_MEMORY)
            remember_refusal(set, file, st);
        return st;
    }
    l->file = fcopy;
    l->object = object;
    l->next = set->loaded;
    set->loaded = l;
    *out = object;
    return TF_OK;
}

tf_status tf__module_load(const tf_module_kind *k, const char *op, const char *name_or_path,
                          const char *cfg_path, void **out)
{
    if (!name_or_path || !*name_or_path)
        return tf__error(TF_ERR_VALIDATION, op, "name", "%s: empty name", op);
    if (!out)
        return tf__error(TF_ERR_VALIDATION, op, "out", "%s: out is NULL", op);
    char file[PATH_MAX];
    tf_status st = tf__plugin_resolve(op, k->prefix, k->what, name_or_path, cfg_path, file);
    if (st)
        return st;
    pthread_mutex_lock(&k->set->lock);
    st = load_locked(k, op, file, out);
    pthread_mutex_unlock(&k->set->lock);
    return st;
}

char *tf__module_refusal_text(tf_status st)
{
    if (st == TF_OK)
        return tf__strdup("");
    char msg[1600];
    const char *cause = tf_error_cause();
    snprintf(msg, sizeof msg, "%s%s%s", tf_error_message(), cause[0] ? ": " : "", cause);
    return tf__strdup(msg);
}
