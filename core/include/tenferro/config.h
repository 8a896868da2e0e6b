/*
 * tenferro/config.h - choosing engines by configuration.
 *
 * An application opens "the configured engine" in one call
 * (tf_engine_open_configured). The choice comes from an INI file (format in
 * docs/apps.md), the first of:
 *   1. the file named by TENFERRO_CONFIG (a named file that is missing or
 *      unreadable is an error, TF_ERR_CONFIG);
 *   2. $XDG_CONFIG_HOME/tenferro/config.ini, or ~/.config/tenferro/config.ini
 *      when XDG_CONFIG_HOME is unset or empty;
 *   3. /etc/tenferro/config.ini.
 * With no file at all the choice is the built-in default: engine "cpu".
 *
 *   [engine]          default = NAME; fallback = NAME, NAME, ... (in order)
 *   [plugins]         path = /abs/dir:/abs/dir2 (joins the plugin search path
 *                     after TENFERRO_PLUGIN_PATH, before the built-in folders)
 *   [engine.NAME]     threads = N (0..1024); device = INDEX or a name
 *                     substring; any other key is passed to the engine as an
 *                     extra option (tf_engine_options.extra_keys/values)
 *
 * Environment overrides: TENFERRO_ENGINE (a comma-separated list of engine
 * names) replaces the default and fallbacks; TENFERRO_PLUGIN_PATH is searched
 * before the config file's plugin folders.
 *
 * Errors in the file (unknown section or key, bad value, a key set twice,
 * an indented continuation line, a line over 198 characters, more than 16
 * engines, sections or options per section, syntax) are TF_ERR_CONFIG with
 * a message naming the file, the line and the key.
 * The file is read anew by every call (nothing is cached).
 *
 * Threads: every function here is thread-safe; the environment must not be
 * changed concurrently. A tf_config is not changed by anything but
 * tf_config_set_threads, which must not run concurrently with other calls
 * on the same config.
 *
 * Lifecycle: tf_config_load and tf_config_load_file make a tf_config that
 * the caller owns and ends with tf_config_destroy; strings its accessors
 * return are borrowed from it until then. A report is the caller's, freed
 * with tf_config_report_free.
 */
#ifndef TENFERRO_CONFIG_H
#define TENFERRO_CONFIG_H

#include <stddef.h>

#include "engine.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tf_config tf_config;

/*
 * Finds and reads the configuration in the order above and applies the
 * environment overrides. End it with tf_config_destroy. Errors:
 * TF_ERR_VALIDATION ("out": NULL), TF_ERR_CONFIG (file, line, key in the
 * message), TF_ERR_OUT_OF_MEMORY.
 */
tf_status tf_config_load(tf_config **out);

/* Reads `path` (which must exist; borrowed for the call) and applies the
   environment overrides. Errors: TF_ERR_VALIDATION ("path": NULL or empty;
   "out": NULL), and those of tf_config_load (a missing or unreadable file
   is TF_ERR_CONFIG). */
tf_status tf_config_load_file(const char *path, tf_config **out);

/* Destroys a configuration and its strings. NULL is a no-op. */
void tf_config_destroy(tf_config *config);

/* The name tf_config_destroy had before the lifecycle vocabulary (tenferro.h);
   kept so that older callers build. */
void tf_config_free(tf_config *config);

/* The accessors below read a NULL config as an empty one ("", 0, NULL; no-op). */

/* The file read, "" when none was found; borrowed from `config`. */
const char *tf_config_file(const tf_config *config);

/* Where the engine list came from: "TENFERRO_ENGINE", "file" or "built-in". */
const char *tf_config_engine_source(const tf_config *config);

/* The engines to try, in order (default first); names borrowed. */
size_t tf_config_engine_count(const tf_config *config);
const char *tf_config_engine_at(const tf_config *config, size_t index); /* NULL if out of range */

/*
 * threads > 0: every engine of `config` is created with that many threads,
 * whatever its [engine.NAME] section says (what a command line's --threads
 * does); 0 restores the file's settings.
 */
void tf_config_set_threads(tf_config *config, int threads);

/* The [plugins] path of the file, "" if none; borrowed. */
const char *tf_config_plugin_path(const tf_config *config);

/*
 * Tries the engines of `config` in order, each created with the options of
 * its [engine.NAME] section, and returns the first that starts. Each is
 * looked for on the plugin search path with the [plugins] path of `config`
 * in the configuration file's place, so a configuration read by
 * tf_config_load_file finds the plugins its own file names. *report (if
 * `report` is non-NULL) gets a text, one line per engine tried: why each was
 * skipped and which was selected; free it with tf_config_report_free. It is
 * set on failure too. The report lives in the library's allocator's memory
 * (tf_allocator_set).
 * Errors: TF_ERR_VALIDATION ("config" or "out": NULL; *report is then
 * NULL), TF_ERR_OUT_OF_MEMORY (also when the report asked for could not be
 * written: no engine is left open and *report is NULL), or the last
 * engine's status, with a message listing every failure.
 */
tf_status tf_config_open_engine(const tf_config *config, tf_engine **out, char **report);

/* tf_config_load then tf_config_open_engine, with the errors of both
   (*report stays NULL when loading fails). */
tf_status tf_engine_open_configured(tf_engine **out, char **report);

/* Frees a report of tf_config_open_engine. NULL is a no-op. */
void tf_config_report_free(char *report);

#ifdef __cplusplus
}
#endif
#endif /* TENFERRO_CONFIG_H */
