/*
 * config_file.h - the parsed configuration file (config_file.c), for the
 * plugin search beside it and for opening the configured engine above it
 * (config/config.c).
 */
#ifndef TF_CONFIG_FILE_H
#define TF_CONFIG_FILE_H

#include <tenferro/config.h>

#include "plugin_path.h"

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

#endif /* TF_CONFIG_FILE_H */
