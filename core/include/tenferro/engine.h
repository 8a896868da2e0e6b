/*
 * tenferro/engine.h - loading engine plugins and using engines from an app.
 *
 * An engine plugin is a shared object that implements engine_abi.h. The
 * loader finds it on the plugin search path, loads it once per process
 * (never unloading it), checks its descriptor and initialises it. An engine
 * (tf_engine) is one instance of a plugin on one device, created with
 * options (threads, device). Tensors in an engine's memory keep the engine
 * alive: tf_engine_destroy drops the caller's reference and the instance is
 * torn down when the last tensor of it is released.
 *
 * Plugin search path, in order:
 *   1. the directories of TENFERRO_PLUGIN_PATH (':'-separated), as read on
 *      each scan or by-name load;
 *   2. the [plugins] path of the configuration file (config.h);
 *   3. the build tree's plugin folder (set when the library was built;
 *      only while it exists);
 *   4. the installed plugin folder, found relative to the loaded library:
 *      <libdir>/tenferro/plugins.
 * Like the dynamic loader's secure mode, only absolute directories are
 * searched, and directories and plugin files owned by someone other than the
 * user and root, or writable by group or others, are skipped, as are those
 * below a folder (on the path as written or as resolved through symbolic
 * links) that another user owns or that group or others may write without
 * the sticky bit (for folders 3 and 4, only the folders below the one they
 * share with the loaded library count). By-name loads and scans never see
 * them; each one skipped is a TF_LOG_WARN line when a log callback is set,
 * and tf_plugin_path_skipped says what was skipped and why. A path with '/'
 * given explicitly to tf_plugin_load is not checked.
 * A name without '/' ("cpu") is looked up as "tenferro-engine-<name>.so" in
 * each directory in turn; a name with '/' is a path to the file itself.
 *
 * Threads: loading, scanning and tf_plugin_* are thread-safe (the
 * environment must not change meanwhile). A tf_engine is used by one thread
 * at a time (like the seed's `&mut dyn ExecutionEngine`): tf_engine_create's
 * caller, or whoever it hands the engine to, calls tf_tensor_empty,
 * tf_engine_supports, _upload, _download, _execute and _synchronize; the
 * accessors may be called from any thread; tensors of it may be read and
 * released from any thread.
 *
 * Lifecycle: a tf_plugin is owned by the process (loaded once, never freed).
 * A tf_engine is a handle: tf_engine_create / tf_engine_open make it,
 * tf_engine_destroy ends the caller's use of it, while its tensors and the
 * sessions using it keep the instance alive until the last of them goes.
 */
#ifndef TENFERRO_ENGINE_H
#define TENFERRO_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "engine_abi.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tf_plugin tf_plugin;

/* File name prefix and suffix of engine plugins on the search path. */
#define TF_ENGINE_FILE_PREFIX "tenferro-engine-"
#define TF_PLUGIN_FILE_SUFFIX ".so"

/* ---- search path ---- */

/*
 * The current search path: *count directories, in order, as a NULL-terminated
 * array of strings, read from the environment and the configuration file
 * now. The array and strings are allocated for the caller; free them with
 * tf_plugin_path_free. Errors: TF_ERR_VALIDATION ("dirs" or "count": NULL),
 * TF_ERR_OUT_OF_MEMORY.
 */
tf_status tf_plugin_path_get(char ***dirs, size_t *count);
/* Frees an array of tf_plugin_path_get and its strings. NULL is a no-op. */
void tf_plugin_path_free(char **dirs);

/* A directory or plugin file left out of the search, and why. */
typedef struct tf_plugin_path_skip {
    char *path;   /* as given (directories) or found (files) */
    char *reason; /* "relative directory (from TENFERRO_PLUGIN_PATH)...", "unsafe ..." */
} tf_plugin_path_skip;

/*
 * Every entry of the search path that is not searched (relative or unsafe
 * directories) and every unsafe tenferro-*.so file of the searched ones, in
 * search order: *count entries, allocated for the caller; free them with
 * tf_plugin_path_skipped_free. Errors: TF_ERR_VALIDATION ("skipped" or
 * "count": NULL), TF_ERR_OUT_OF_MEMORY.
 */
tf_status tf_plugin_path_skipped(tf_plugin_path_skip **skipped, size_t *count);
/* Frees the `count` entries of tf_plugin_path_skipped and their strings. NULL
   is a no-op. */
void tf_plugin_path_skipped_free(tf_plugin_path_skip *skipped, size_t count);

/* ---- plugins ---- */

/*
 * Loads (or returns the already loaded) engine plugin `name_or_path`. The
 * returned plugin is owned by the process and valid until it exits; do not
 * free it.
 * Errors, each with a message naming the file, what was expected and what
 * was found, and the plugin left unloaded-or-inert:
 *   TF_ERR_VALIDATION              "name": NULL or empty; "out": NULL,
 *   TF_ERR_PLUGIN_NOT_FOUND        no such file (on the search path),
 *   TF_ERR_PLUGIN_LOAD             dlopen refused it (not a shared object...),
 *   TF_ERR_PLUGIN_SYMBOL           no tf_engine_plugin_v1 symbol (nor any other major's),
 *   TF_ERR_PLUGIN_ABI              the file exports another major's entry instead
 *                                  (tf_engine_plugin_v2, ...), the entry returned NULL,
 *                                  or the descriptor states another major,
 *   TF_ERR_PLUGIN_STRUCT_SIZE      descriptor smaller than ABI 1.0's,
 *   TF_ERR_PLUGIN_MISSING_FUNCTION a required function or the name is NULL,
 *   TF_ERR_PLUGIN_INIT             init() failed (its report is the cause); init is
 *                                  never called again: later loads of the file repeat
 *                                  this refusal.
 */
tf_status tf_plugin_load(const char *name_or_path, tf_plugin **out);

/* Accessors; strings are borrowed for the life of the process. A NULL
   plugin gives "" and 0. */
const char *tf_plugin_name(const tf_plugin *plugin);
const char *tf_plugin_version(const tf_plugin *plugin);
const char *tf_plugin_description(const tf_plugin *plugin); /* "" if none */
const char *tf_plugin_file(const tf_plugin *plugin);        /* resolved path */
uint32_t tf_plugin_abi_major(const tf_plugin *plugin);
uint32_t tf_plugin_abi_minor(const tf_plugin *plugin);
uint32_t tf_plugin_capabilities(const tf_plugin *plugin);
uint32_t tf_plugin_device_count(const tf_plugin *plugin);
/* Fills *info (set info->struct_size = sizeof *info first), only on success.
   Errors: TF_ERR_VALIDATION ("plugin" or "info": NULL; "info": struct_size
   not set), TF_ERR_OUT_OF_RANGE ("index": index >= device_count), the
   plugin's own failure (its report as the cause), TF_ERR_BACKEND when the
   plugin leaves `name` or `driver` without a terminating NUL inside its
   array. */
tf_status tf_plugin_device_info(const tf_plugin *plugin, uint32_t index, tf_device_info *info);

/* One file found by tf_plugin_scan. */
typedef struct tf_plugin_candidate {
    char *path;        /* the file */
    const char *kind;  /* "engine" (from the file name) */
    tf_status status;  /* TF_OK if it loaded */
    char *message;     /* why it was refused, "" if loaded */
    tf_plugin *plugin; /* the loaded plugin, NULL if refused */
} tf_plugin_candidate;

/*
 * Tries to load every "tenferro-engine-*.so" in every directory of the
 * search path and reports each (unsafe files are left out: see
 * tf_plugin_path_skipped). The array is allocated for the caller (the
 * plugins in it are the process's); free it with tf_plugin_scan_free.
 * Errors: TF_ERR_VALIDATION ("candidates" or "count": NULL),
 * TF_ERR_OUT_OF_MEMORY; refusals are reported per candidate.
 */
tf_status tf_plugin_scan(tf_plugin_candidate **candidates, size_t *count);
/* Frees the `count` candidates of tf_plugin_scan and their strings (not the
   plugins). NULL is a no-op. */
void tf_plugin_scan_free(tf_plugin_candidate *candidates, size_t count);

/* ---- engines ---- */

/*
 * Creates an instance of `plugin`. `options` may be NULL (defaults); it and
 * its strings are borrowed for the call (options of an older, shorter
 * struct_size are read as far as they go). *out is a new handle; end it
 * with tf_engine_destroy. Any thread; the engine is then used by one thread
 * at a time.
 * Errors: TF_ERR_VALIDATION ("plugin" or "out": NULL), whatever the plugin
 * reports (TF_ERR_BACKEND, TF_ERR_VALIDATION for a bad option, ...), its
 * message as the cause; TF_ERR_OUT_OF_MEMORY.
 */
tf_status tf_engine_create(tf_plugin *plugin, const tf_engine_options *options,
                           tf_engine **out);

/* tf_plugin_load(name) then tf_engine_create with `threads` (0: the
   plugin's default), with the errors of both. */
tf_status tf_engine_open(const char *name_or_path, int threads, tf_engine **out);

/* Ends the caller's handle: the engine must not be used through it again.
   The instance is torn down once its last tensor and session are gone too
   (they hold references). NULL is a no-op. Any thread. */
void tf_engine_destroy(tf_engine *engine);

/* Accessors (any thread; engine must not be NULL). The plugin's name,
   borrowed for the life of the process. */
const char *tf_engine_name(const tf_engine *engine);
/* The plugin the engine is an instance of (owned by the process). */
tf_plugin *tf_engine_get_plugin(const tf_engine *engine);
/* non-zero if the engine computes on host memory (TF_ENGINE_CAP_HOST_MEMORY) */
int tf_engine_uses_host_memory(const tf_engine *engine);

/* Non-zero if the engine implements primitive `prim` (op: its sub-op) for
   these dtypes (inputs' then outputs'; borrowed). Never fails: 0 for a NULL
   engine, NULL dtypes with n_dtypes > 0, or more than 64 dtypes. An engine
   of a newer ABI minor is answered 0 for a primitive, sub-op or dtype this
   library does not know, whatever it says (tf_engine_execute refuses such a
   call on every engine; one of this or an older minor that claims such work
   is wrong, which tenferro check-engine reports).
   On the engine's thread (the plugin's supports() is serialised with its
   work). */
int tf_engine_supports(tf_engine *engine, tf_prim prim, uint32_t op, const tf_dtype *dtypes,
                       size_t n_dtypes);

/* Runs the engine's open deferred batches (runtime.h) and waits for its
   pending work. Errors: TF_ERR_VALIDATION ("engine": NULL), the failure of
   a deferred batch, the engine's own failure (its report as the cause). */
tf_status tf_engine_synchronize(tf_engine *engine);

/*
 * A new dense column-major tensor in the engine's memory (one reference,
 * holding one to the engine); contents unspecified. `shape` is copied.
 * Errors: TF_ERR_VALIDATION ("engine" or "out": NULL), as
 * tf_tensor_from_host for the dtype and shape, and TF_ERR_OUT_OF_MEMORY or
 * the engine's own allocation failure (its report as the cause).
 */
tf_status tf_tensor_empty(tf_engine *engine, tf_dtype dtype, size_t rank, const int64_t *shape,
                          tf_tensor **out);

/*
 * Copies a host-accessible tensor (any strides; borrowed) into a new dense
 * tensor in the engine's memory (one reference). A pending source is
 * computed first. Errors: TF_ERR_VALIDATION ("engine", "src" or "out":
 * NULL), TF_ERR_PLACEMENT ("src": in an engine's device memory),
 * TF_ERR_OUT_OF_MEMORY, the failure of the source's deferred computation,
 * the engine's allocation or upload failure.
 */
tf_status tf_engine_upload(tf_engine *engine, const tf_tensor *src, tf_tensor **out);

/*
 * Copies a tensor of this engine (any strides; borrowed) into a new dense
 * host tensor (one reference). A pending source is computed first.
 * Errors: TF_ERR_VALIDATION ("engine", "src" or "out": NULL),
 * TF_ERR_PLACEMENT ("src": not in this engine's memory - a host tensor is
 * refused too: use it directly), TF_ERR_OUT_OF_MEMORY, the failure of the
 * source's deferred computation, the engine's copy or download failure.
 */
tf_status tf_engine_download(tf_engine *engine, const tf_tensor *src, tf_tensor **out);

/*
 * Executes one primitive of engine_abi.h on tensors. The core checks every
 * argument against the primitive's description before the engine sees it:
 * counts, dtypes, ranks, extents, params (TF_ERR_VALIDATION,
 * TF_ERR_DTYPE_MISMATCH, TF_ERR_SHAPE_MISMATCH, TF_ERR_AXIS_OUT_OF_BOUNDS),
 * that every tensor is readable by this engine (TF_ERR_PLACEMENT, with how
 * to move it), that outputs are dense unless the primitive allows strided
 * outputs and do not share storage with inputs (TF_ERR_VALIDATION), and that
 * the engine supports the combination (TF_ERR_UNSUPPORTED naming op, dtype
 * and engine). Engine failures come back as the engine's status with its
 * message as the cause. `params` is the primitive's params struct (its
 * struct_size set), NULL for primitives without one. Everything is
 * borrowed for the call; the outputs' memory is written, the inputs' only
 * read. Pending inputs are computed first, and open deferred batches that
 * read an output run before it is written.
 */
tf_status tf_engine_execute(tf_engine *engine, tf_prim prim, const void *params, size_t n_inputs,
                            tf_tensor *const *inputs, size_t n_outputs, tf_tensor *const *outputs);

/* Names for messages and tools: "binary", "add", ... ("?" if unknown).
   Static strings; any thread. */
const char *tf_prim_name(tf_prim prim);
const char *tf_prim_op_name(tf_prim prim, uint32_t op);

#ifdef __cplusplus
}
#endif
#endif /* TENFERRO_ENGINE_H */
