/*
 * tenferro/extension.h - loading extension modules and calling their ops by
 * name, for applications (module authors read extension_abi.h).
 *
 * An extension module is a shared object tenferro-ext-<name>.so found on
 * the same plugin search path as engines (engine.h). tf_extension_load
 * loads and checks it once per process (never unloading it); the returned
 * tf_extension_module is owned by the process. Installing it into a runtime
 * (tf_runtime_install_extension_module, runtime.h) makes its ops callable
 * through that runtime's sessions with tf_session_call.
 *
 * Threads: every function here is thread-safe. tf_session_call runs on the
 * session's thread like any op; registry lookups take no lock.
 *
 * Lifecycle: modules are owned by the process and never freed or unloaded;
 * a runtime keeps pointers to the modules installed in it. Arrays returned
 * by the scan are the caller's, freed with tf_extension_scan_free.
 */
#ifndef TENFERRO_EXTENSION_H
#define TENFERRO_EXTENSION_H

#include <stddef.h>
#include <stdint.h>

#include "extension_abi.h"
#include "runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* File name prefix of extension modules on the search path. */
#define TF_EXTENSION_FILE_PREFIX "tenferro-ext-"

/*
 * Loads (or returns the already loaded) extension module `name_or_path`: a
 * name without '/' ("linalg") is looked up as tenferro-ext-<name>.so in the
 * plugin search path; a name with '/' is the file. Errors, with a message
 * naming the file, what was expected and what was found (as for engines):
 *   TF_ERR_PLUGIN_NOT_FOUND, TF_ERR_PLUGIN_LOAD,
 *   TF_ERR_PLUGIN_SYMBOL            no tf_extension_module_v1 symbol,
 *   TF_ERR_PLUGIN_ABI               another major's entry
 *                                   (tf_extension_module_v2...), the entry
 *                                   returned NULL, or another major stated,
 *   TF_ERR_PLUGIN_STRUCT_SIZE       descriptor smaller than ABI 1.0's,
 *   TF_ERR_PLUGIN_MISSING_FUNCTION  no install hook or version,
 *   TF_ERR_VALIDATION               malformed module id (argument "id");
 *                                   "name": NULL or empty; "out": NULL,
 *   TF_ERR_OUT_OF_MEMORY.
 * A module's declared error kinds are checked when it is installed.
 * Loading the same file again returns the same module.
 */
tf_status tf_extension_load(const char *name_or_path, tf_extension_module **out);

/*
 * Wraps a descriptor linked into the application (static storage, see
 * extension_abi.h) as a module, checked like a loaded one. Each call makes a
 * new module instance (owned by the process, never freed: call it once per
 * descriptor): installing a second instance with the same id replaces the
 * first. `desc` is borrowed for as long as the process runs. Errors:
 * TF_ERR_VALIDATION ("desc" or "out": NULL), tf_extension_load's descriptor
 * checks, TF_ERR_OUT_OF_MEMORY.
 */
tf_status tf_extension_from_descriptor(const tf_extension_module_desc *desc,
                                       tf_extension_module **out);

/* Accessors (any thread; module must not be NULL); strings borrowed for the
   life of the process. */
const char *tf_extension_id(const tf_extension_module *module);
const char *tf_extension_version(const tf_extension_module *module);
const char *tf_extension_description(const tf_extension_module *module); /* "" if none */
const char *tf_extension_file(const tf_extension_module *module);        /* "" if not from a file */
uint32_t tf_extension_abi_major(const tf_extension_module *module);      /* as the module states */
uint32_t tf_extension_abi_minor(const tf_extension_module *module);

/* One file found by tf_extension_scan (same shape as tf_plugin_candidate). */
typedef struct tf_extension_candidate {
    char *path;
    const char *kind; /* "extension" */
    tf_status status;
    char *message; /* why it was refused, "" if loaded */
    tf_extension_module *module;
} tf_extension_candidate;

/* Tries to load every tenferro-ext-*.so of the search path and reports
   each: *count candidates, allocated for the caller (free them with
   tf_extension_scan_free; the modules are the process's). Errors:
   TF_ERR_VALIDATION ("candidates" or "count": NULL), TF_ERR_OUT_OF_MEMORY;
   refusals are reported per candidate. */
tf_status tf_extension_scan(tf_extension_candidate **candidates, size_t *count);
/* Frees the `count` candidates of tf_extension_scan and their strings (not
   the modules). NULL is a no-op. */
void tf_extension_scan_free(tf_extension_candidate *candidates, size_t count);

/* ---- calling ops by name ---- */

/*
 * One argument of tf_session_call; kind is a tf_ext_arg_kind. Everything
 * is borrowed for the call. Library 0.1 added `str` and `tensors` (for the
 * string and tensor-list arguments of composite ops, extension ABI 1.2):
 * code built against the older, shorter struct must be rebuilt; code that
 * fills it with the TF_ARG_* macros or positional initialisers compiles
 * unchanged.
 */
typedef struct tf_call_arg {
    uint32_t kind;
    tf_eager *tensor; /* TF_EXT_ARG_TENSOR */
    double f;         /* TF_EXT_ARG_F64 */
    int64_t i;        /* TF_EXT_ARG_I64; TF_EXT_ARG_TENSORS: how many */
    const char *str;  /* TF_EXT_ARG_STRING */
    tf_eager *const *tensors; /* TF_EXT_ARG_TENSORS: `i` tensors */
} tf_call_arg;

#define TF_ARG_TENSOR(x) ((tf_call_arg){TF_EXT_ARG_TENSOR, (x), 0.0, 0, NULL, NULL})
#define TF_ARG_F64(v) ((tf_call_arg){TF_EXT_ARG_F64, NULL, (v), 0, NULL, NULL})
#define TF_ARG_I64(v) ((tf_call_arg){TF_EXT_ARG_I64, NULL, 0.0, (v), NULL, NULL})
#define TF_ARG_STRING(s) ((tf_call_arg){TF_EXT_ARG_STRING, NULL, 0.0, 0, (s), NULL})
#define TF_ARG_TENSORS(xs, n) \
    ((tf_call_arg){TF_EXT_ARG_TENSORS, NULL, 0.0, (int64_t)(n), NULL, (xs)})

/*
 * Calls the installed op `name` (its full name, "tenferro.linalg.solve")
 * with n_args arguments, writing n_outputs new references to outputs (only
 * on success). Arguments are borrowed for the call; the results of a
 * kernel op are recorded like a built-in op's (with the module's AD rule)
 * when an input is tracked (composite ops: see below). On the session's
 * thread. Errors: TF_ERR_VALIDATION naming the argument ("session", "name"
 * or "outputs": NULL; "name": no such op installed in the session's
 * runtime; "args": wrong count; the op's own argument name: wrong kind or
 * NULL tensor; "outputs": wrong count), TF_ERR_CONTEXT_MISMATCH, the op's
 * inference errors
 * (TF_ERR_DTYPE_MISMATCH, TF_ERR_SHAPE_MISMATCH...), TF_ERR_UNSUPPORTED when
 * the op has no kernel for the session's engine (message names both), the
 * kernel's errors with its report as the cause: TF_ERR_EXTENSION for a
 * declared error kind of the module (e.g. a singular matrix; see
 * tf_error_extension_kind). Inference errors name the argument in
 * tf_error_argument() when the module says which (ABI 1.1 modules).
 *
 * Composite ops (extension ABI 1.2, e.g. tenferro.einsum.einsum) run on
 * every engine: the op issues built-in ops, which are what is recorded.
 * Their string arguments (TF_ARG_STRING: non-NULL, at most
 * TF_EXT_MAX_STRING bytes) and tensor lists (TF_ARG_TENSORS: 0 to
 * TF_EXT_MAX_LIST tensors, none NULL) are checked like the others
 * (TF_ERR_VALIDATION naming the argument; a list's message gives the
 * element); their own refusals name the argument in tf_error_argument()
 * and say why in the message.
 */
tf_status tf_session_call(tf_session *s, const char *name, const tf_call_arg *args, size_t n_args,
                          tf_eager **outputs, size_t n_outputs);

/*
 * Typed extension errors: when the most recent failure on this thread is
 * TF_ERR_EXTENSION (a kernel reported one of its module's declared error
 * kinds, see extension_abi.h "Typed errors"), sets *module_id ("tenferro.linalg"),
 * *kind ("singular") and *index (the batch element, flattened with the first
 * batch axis fastest; -1 if the module named none) and returns 1. Otherwise
 * sets them to "", "" and -1 and returns 0. Any out-parameter may be NULL.
 * The strings live in the thread's error slot (see tf_error_message). Any
 * thread; answers for the calling thread.
 *
 *   if (st == TF_ERR_EXTENSION && tf_error_extension_kind(&mod, &kind, &i) &&
 *       strcmp(mod, "tenferro.linalg") == 0 && strcmp(kind, "singular") == 0) ...
 */
int tf_error_extension_kind(const char **module_id, const char **kind, int64_t *index);

/*
 * Diagnostics of the registry of rt (which must not be NULL): how many times
 * the install lock was taken (the idempotent re-install of an installed
 * instance never takes it), and how many snapshots were published. Any
 * thread.
 */
uint64_t tf_runtime_extension_lock_count(const tf_runtime *rt);
uint64_t tf_runtime_extension_publish_count(const tf_runtime *rt);
/*
 * The extension caches of rt: one per module id installed (inferred output
 * shapes of by-name calls, keyed with the epoch). tf_runtime_stats.extensions
 * sums them; tf_runtime_extension_cache_stats gives one module's. The
 * limits apply to each module's cache; setting them evicts at once when
 * shrinking. Any thread. Errors: TF_ERR_VALIDATION ("runtime",
 * "module_id", "out" or "limits": NULL; "limits": max_entries 0;
 * "module_id": no module of that id was ever offered to rt - an install
 * that failed after its error kinds were checked counts as offered, its
 * cache is then empty). Nothing changes on error.
 */
tf_status tf_runtime_extension_cache_stats(tf_runtime *rt, const char *module_id,
                                           tf_cache_stats *out);
tf_status tf_runtime_extension_cache_limits(tf_runtime *rt, tf_cache_limits *out);
tf_status tf_runtime_set_extension_cache_limits(tf_runtime *rt, const tf_cache_limits *limits);

/*
 * The module's own table of typed functions for interface `name` (extension
 * ABI 1.2, see extension_abi.h "Interfaces"), e.g.
 * tf_extension_interface(einsum, "tenferro.einsum.planner.v1"); the
 * module's public header describes it. NULL when the module offers no such
 * interface (or states an ABI minor below 2), or for NULL arguments. The
 * table lives as long as the process. Any thread.
 */
const void *tf_extension_interface(const tf_extension_module *module, const char *name);

/* Non-zero if an op of that full name is installed in rt now; 0 for NULL
   arguments. Any thread; takes no lock. */
int tf_runtime_has_op(tf_runtime *rt, const char *name);

#ifdef __cplusplus
}
#endif
#endif /* TENFERRO_EXTENSION_H */
