/*
 * loader_internal.h - finding and loading plugins (core/src/loader): the
 * search path and its safety rules, shared objects opened once and never
 * unloaded, engine plugins' records, and the configuration file the search
 * reads its [plugins] path from (the configured engine itself is opened by
 * the top layer, core/src/config). Uses base only.
 */
#ifndef TF_LOADER_INTERNAL_H
#define TF_LOADER_INTERNAL_H

#include <pthread.h>

#include <tenferro/config.h>

#include "base_internal.h"

/* ---- modules of every kind (module.c) ---- */

/* What a kind of module has loaded, guarded by its lock (module.c). */
typedef struct tf_module_set {
    pthread_mutex_t lock;
    struct tf_loaded *loaded;
} tf_module_set;
#define TF_MODULE_SET_INIT              \
    {                                   \
        PTHREAD_MUTEX_INITIALIZER, NULL \
    }

/*
 * A kind of module: how its files are named, found and entered, how its
 * descriptor is checked and what is made of an accepted one.
 */
typedef struct tf_module_kind {
    const char *noun;   /* in refusals: "plugin '<file>': ..." */
    const char *what;   /* in not-found errors: "no engine plugin named ..." */
    const char *prefix; /* file names: <prefix><name>.so */
    const char *abi;    /* "engine ABI" */
    int abi_major, abi_minor;
    const char *entry;      /* the entry symbol of this major */
    const char *entry_stem; /* the entry symbol less its major, to name another major's */
    const char *entry_decl; /* how to define the entry, for the missing-symbol message */
    /* Calls the entry symbol's function; returns its descriptor (NULL: refused). */
    const void *(*call_entry)(void *sym);
    /* Checks a descriptor, recording and returning a refusal under op. */
    tf_status (*check)(const char *op, const char *file, const void *desc);
    /* Makes the kind's object of an accepted descriptor, once per file, under
       the set's lock; `file` lives as long as the process. A failure other
       than TF_ERR_OUT_OF_MEMORY is remembered: the file is refused again with
       the same error and never made again. */
    tf_status (*make)(const char *op, const char *file, void *handle, const void *desc,
                      void **object);
    tf_module_set *set;
} tf_module_kind;

/*
 * Loads the module `name_or_path` of kind k (a name is searched for as
 * tf__plugin_resolve does, with cfg_path) once per process: opens it, finds
 * the entry, checks the descriptor and makes the object, or returns the one
 * made before. Errors (recorded under op): TF_ERR_VALIDATION (empty name,
 * NULL out), TF_ERR_PLUGIN_NOT_FOUND, TF_ERR_PLUGIN_LOAD (dlopen refused),
 * TF_ERR_PLUGIN_SYMBOL, TF_ERR_PLUGIN_ABI (another major, or the entry
 * returned NULL), the check's and make's refusals, TF_ERR_OUT_OF_MEMORY.
 */
tf_status tf__module_load(const tf_module_kind *k, const char *op, const char *name_or_path,
                          const char *cfg_path, void **out);

/* The major m in 2..9 for which <symbol_stem><m> resolves in handle; 0 if none. */
unsigned tf__module_other_major(void *handle, const char *symbol_stem);

/*
 * A scan candidate's message for status st: "" for TF_OK, else this
 * thread's error message and cause as "message: cause". Allocated
 * (tf__free); NULL when out of memory.
 */
char *tf__module_refusal_text(tf_status st);

/* ---- engine plugins (plugin.c) ---- */

struct tf_plugin {
    const char *file;
    void *handle;
    const tf_engine_plugin *desc;
    void *ctx;
    uint32_t desc_size;
};

/*
 * tf_plugin_load, with `cfg_path` for the configuration file's [plugins]
 * path (as tf__plugin_resolve): tf_config_open_engine searches the path of
 * the configuration it was given, which need not be the file in use.
 */
tf_status tf__plugin_load_in(const char *name_or_path, const char *cfg_path, tf_plugin **out);

/*
 * Checks an engine descriptor as the loader does before calling init: ABI
 * major, struct_size and every required field (`file` names the plugin in
 * messages). Records the error (TF_ERR_PLUGIN_ABI, TF_ERR_PLUGIN_STRUCT_SIZE,
 * TF_ERR_PLUGIN_MISSING_FUNCTION) and returns it; reads only the descriptor.
 * External (not static) so that the descriptor fuzzer (tests/fuzz) can call it.
 */
tf_status tf__plugin_check_descriptor(const char *file, const tf_engine_plugin *d);

/* ---- the search path (search_path.c) ---- */

/*
 * Resolves `name` to a real path (PATH_MAX bytes at `path`): a name with '/'
 * is the file itself, otherwise <dir>/<prefix><name>.so in each directory of
 * the search path. `cfg_path` stands for the configuration file's [plugins]
 * path ("" for none; NULL: the file in use, tf__config_plugin_path). The
 * folders skipped as unsafe or relative are logged once each as warnings.
 * Errors: TF_ERR_PLUGIN_NOT_FOUND naming `kind`, the file, the path tried
 * and each folder skipped with its reason (recorded under `op`).
 */
tf_status tf__plugin_resolve(const char *op, const char *prefix, const char *kind, const char *name,
                             const char *cfg_path, char *path);

/*
 * Every file named <prefix>*.so in the search path's directories (each
 * directory in name order), as a NULL-terminated array freed with
 * tf_plugin_path_free. Errors: TF_ERR_OUT_OF_MEMORY.
 */
tf_status tf__plugin_scan_files(const char *op, const char *prefix, char ***files, size_t *count);

/*
 * The [plugins] path of the configuration file in use (config_file.c) in *path,
 * allocated (tf__free), or NULL when there is none or the file is bad (the
 * error is reported by tf_config_load, not here). Records no error; returns
 * TF_ERR_OUT_OF_MEMORY when memory ran out reading the file, so that a search
 * never goes on without the directories the file names. Only the file counts
 * (not TENFERRO_ENGINE); the answer is remembered until a stat of the file
 * (identity, size, times) changes, for files unchanged for a second.
 */
tf_status tf__config_plugin_path(char **path);

/* ---- the configuration file (config_file.c) ---- */

#define CFG_MAX_ENGINES 16
#define CFG_MAX_SECTIONS 16
#define CFG_MAX_EXTRA 16
#define CFG_MSG 768
/* The most bytes read from a configuration file: a real one is a few hundred
   (a line holds at most 198 characters); anything longer is refused rather
   than read on (TENFERRO_CONFIG=/dev/zero must not spin). */
#define CFG_MAX_BYTES (64L * 1024)

typedef struct engine_section {
    char *name;
    int threads; /* -1: not set */
    char *device;
    size_t n_extra;
    char *keys[CFG_MAX_EXTRA], *values[CFG_MAX_EXTRA];
    /* where each key was set (0: not yet), to refuse a second setting */
    int threads_line, device_line, extra_lines[CFG_MAX_EXTRA];
} engine_section;

struct tf_config {
    char *file;
    const char *source;
    char *engines[CFG_MAX_ENGINES];
    size_t n_engines;
    char *plugin_path;
    char *file_default, *file_fallback;
    engine_section sections[CFG_MAX_SECTIONS];
    size_t n_sections;
    int threads_override; /* > 0: every engine's threads */
};

/* The [engine.NAME] section of c (made when `create`); NULL if none (or no room). */
engine_section *tf__config_section(tf_config *c, const char *name, bool create);

#endif /* TF_LOADER_INTERNAL_H */
