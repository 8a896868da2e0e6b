/*
 * cmd_info.c - `tenferro info [--json]`: what this installation can run.
 *
 * Engine plugins (tenferro-engine-*.so) and extension modules
 * (tenferro-ext-*.so) are listed together, each with its kind.
 *
 * It also shows the configuration file in use, the engines it lists and the
 * one it selects (with why earlier choices were skipped), every entry of
 * the plugin search path that was skipped as relative or unsafe, and a
 * warning for an engine whose descriptor's name is not its file's.
 *
 * The JSON form is a stable interface documented in docs/cli.md: fields are
 * only ever added.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tenferro/extension.h>
#include <tenferro/tenferro.h>

#include "cli.h"

static const char *device_type_name(uint32_t type)
{
    switch (type) {
    case TF_DEVICE_CPU: return "cpu";
    case TF_DEVICE_INTEGRATED_GPU: return "integrated_gpu";
    case TF_DEVICE_DISCRETE_GPU: return "discrete_gpu";
    case TF_DEVICE_VIRTUAL_GPU: return "virtual_gpu";
    default: return "other";
    }
}

/*
 * The most devices listed per plugin: a plugin may claim any count (one
 * fixture claims 10^8), and each listed device is a call into it and a line
 * of output. The rest are counted, not listed.
 */
#define INFO_MAX_DEVICES 64u

static uint32_t listed_devices(uint32_t n)
{
    return n < INFO_MAX_DEVICES ? n : INFO_MAX_DEVICES;
}

/* ---- configuration and skipped search-path entries ---- */

/* What the configuration selects: gathered once, printed as text or JSON. */
typedef struct config_view {
    tf_config *config; /* NULL if the file is bad */
    char *error;       /* the config error, NULL if none */
    char *report;      /* tf_config_open_engine's report */
    char *selected;    /* the engine it got, NULL if none */
    tf_plugin_path_skip *skipped;
    size_t nskipped;
} config_view;

static char *dup_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static void config_view_load(config_view *v)
{
    memset(v, 0, sizeof *v);
    if (tf_plugin_path_skipped(&v->skipped, &v->nskipped) != TF_OK)
        v->nskipped = 0;
    if (tf_config_load(&v->config) != TF_OK) {
        v->config = NULL;
        v->error = dup_string(tf_error_message());
        return;
    }
    tf_engine *e = NULL;
    if (tf_config_open_engine(v->config, &e, &v->report) == TF_OK) {
        v->selected = dup_string(tf_engine_name(e));
        tf_engine_destroy(e);
    }
}

static void config_view_free(config_view *v)
{
    tf_config_destroy(v->config);
    free(v->error);
    tf_config_report_free(v->report);
    free(v->selected);
    tf_plugin_path_skipped_free(v->skipped, v->nskipped);
}

static void text_config(const config_view *v)
{
    printf("skipped on the plugin search path:\n");
    if (v->nskipped == 0)
        printf("  nothing\n");
    for (size_t i = 0; i < v->nskipped; i++)
        printf("  %s: %s\n", v->skipped[i].path, v->skipped[i].reason);
    if (v->error) {
        printf("configuration: error: %s\n", v->error);
        return;
    }
    const char *file = tf_config_file(v->config);
    printf("configuration file: %s\n", file[0] ? file : "(none, built-in defaults)");
    printf("engines to try (from %s):", tf_config_engine_source(v->config));
    for (size_t i = 0; i < tf_config_engine_count(v->config); i++)
        printf(" %s", tf_config_engine_at(v->config, i));
    printf("\nselected engine: %s\n", v->selected ? v->selected : "none");
    const char *r = v->report ? v->report : "";
    while (*r) {
        const char *nl = strchr(r, '\n');
        int n = nl ? (int)(nl - r) : (int)strlen(r);
        printf("  %.*s\n", n, r);
        r += n + (nl ? 1 : 0);
    }
}

static void json_string_or_null(const char *s)
{
    if (s)
        tf_cli_json_string(stdout, s);
    else
        printf("null");
}

/* The fields added after extension_abi (docs/cli.md). */
static void json_config(const config_view *v)
{
    printf(",\n  \"plugin_path_skipped\": [");
    for (size_t i = 0; i < v->nskipped; i++) {
        printf(i ? ", {\"path\": " : "{\"path\": ");
        tf_cli_json_string(stdout, v->skipped[i].path);
        printf(", \"reason\": ");
        tf_cli_json_string(stdout, v->skipped[i].reason);
        printf("}");
    }
    printf("],\n  \"config\": {\"file\": ");
    const char *file = v->config ? tf_config_file(v->config) : "";
    json_string_or_null(file[0] ? file : NULL);
    printf(", \"error\": ");
    json_string_or_null(v->error);
    printf(", \"engine_source\": ");
    json_string_or_null(v->config ? tf_config_engine_source(v->config) : NULL);
    printf(", \"engines\": [");
    for (size_t i = 0; v->config && i < tf_config_engine_count(v->config); i++) {
        printf(i ? ", " : "");
        tf_cli_json_string(stdout, tf_config_engine_at(v->config, i));
    }
    printf("], \"selected_engine\": ");
    json_string_or_null(v->selected);
    printf(", \"report\": ");
    json_string_or_null(v->report);
    printf("}");
}

/* ---- the engine's name and its file's ---- */

int tf_cli_engine_file_name(const char *path, char *name, size_t cap)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    size_t pre = strlen(TF_ENGINE_FILE_PREFIX), suf = strlen(TF_PLUGIN_FILE_SUFFIX);
    size_t n = strlen(base);
    name[0] = '\0';
    if (n <= pre + suf || strncmp(base, TF_ENGINE_FILE_PREFIX, pre) != 0 ||
        strcmp(base + n - suf, TF_PLUGIN_FILE_SUFFIX) != 0)
        return 0;
    snprintf(name, cap, "%.*s", (int)(n - pre - suf), base + pre);
    return 1;
}

/* Why the descriptor's name and the file's disagree, into why; 0 if they agree. */
static int name_warning(const tf_plugin_candidate *c, char *why, size_t cap)
{
    char from_file[256];
    const char *name = tf_plugin_name(c->plugin);
    if (!tf_cli_engine_file_name(c->path, from_file, sizeof from_file) ||
        strcmp(from_file, name) == 0)
        return 0;
    snprintf(why, cap,
             "its descriptor names it '%s', its file '%s': configuration files and extension "
             "modules' kernel tables know it as '%s', a load by name finds it as '%s'; the "
             "names must be the same",
             name, from_file, name, from_file);
    return 1;
}

/* ---- text ---- */

static void text_devices(const tf_plugin *p)
{
    uint32_t n = tf_plugin_device_count(p);
    if (n == 0)
        printf("    no devices\n");
    for (uint32_t i = 0; i < listed_devices(n); i++) {
        tf_device_info info = {.struct_size = sizeof info};
        if (tf_plugin_device_info(p, i, &info) != TF_OK) {
            printf("    device %u: unavailable: %s\n", i, tf_error_message());
            continue;
        }
        char units[48], memory[48]; /* 0 is "not known" (engine_abi.h) */
        if (info.compute_units)
            snprintf(units, sizeof units, "%u compute units", info.compute_units);
        else
            snprintf(units, sizeof units, "compute units unknown");
        if (info.memory_bytes)
            snprintf(memory, sizeof memory, "%.1f GiB",
                     (double)info.memory_bytes / (1024.0 * 1024.0 * 1024.0));
        else
            snprintf(memory, sizeof memory, "memory unknown");
        printf("    device %u: %s (%s, %s, %s%s%s)\n", i, info.name, device_type_name(info.type),
               units, memory, (info.flags & TF_DEVICE_FLAG_F64) ? ", f64" : "",
               (info.flags & TF_DEVICE_FLAG_HOST_MEMORY) ? ", host memory" : "");
        if (info.driver[0])
            printf("      driver: %s\n", info.driver);
    }
    if (n > INFO_MAX_DEVICES)
        printf("    ... and %u more devices, not listed (the plugin reports %u; the first %u "
               "are shown)\n",
               n - INFO_MAX_DEVICES, n, INFO_MAX_DEVICES);
}

static void text_extensions(const tf_extension_candidate *x, size_t nx)
{
    for (size_t i = 0; i < nx; i++) {
        if (x[i].status != TF_OK) {
            printf("  %s: %s, refused (%s): %s\n", x[i].path, x[i].kind,
                   tf_status_name(x[i].status), x[i].message);
            continue;
        }
        const tf_extension_module *m = x[i].module;
        printf("  %s: %s '%s' %s, ABI %u.%u, loaded\n", x[i].path, x[i].kind, tf_extension_id(m),
               tf_extension_version(m), tf_extension_abi_major(m), tf_extension_abi_minor(m));
    }
}

static void print_text(char **dirs, size_t ndirs, const tf_plugin_candidate *c, size_t n,
                       const tf_extension_candidate *x, size_t nx, const config_view *v)
{
    printf("tenferro %s (engine ABI %d.%d)\n", tf_version_string(), TF_ENGINE_ABI_MAJOR,
           TF_ENGINE_ABI_MINOR);
    printf("plugin search path:\n");
    if (ndirs == 0)
        printf("  (empty)\n");
    for (size_t i = 0; i < ndirs; i++)
        printf("  %s\n", dirs[i]);
    printf("plugins:\n");
    if (n + nx == 0)
        printf("  none found\n");
    for (size_t i = 0; i < n; i++) {
        if (c[i].status != TF_OK) {
            printf("  %s: %s, refused (%s): %s\n", c[i].path, c[i].kind,
                   tf_status_name(c[i].status), c[i].message);
            continue;
        }
        const tf_plugin *p = c[i].plugin;
        printf("  %s: %s '%s' %s, ABI %u.%u, loaded\n", c[i].path, c[i].kind, tf_plugin_name(p),
               tf_plugin_version(p), tf_plugin_abi_major(p), tf_plugin_abi_minor(p));
        char why[768];
        if (name_warning(&c[i], why, sizeof why))
            printf("    warning: %s\n", why);
        text_devices(p);
    }
    text_extensions(x, nx);
    text_config(v);
}

/* ---- JSON ---- */

static void json_flag_list(const char *const *names, const uint32_t *bits, size_t n,
                           uint32_t flags)
{
    printf("[");
    const char *sep = "";
    for (size_t i = 0; i < n; i++) {
        if (flags & bits[i]) {
            printf("%s\"%s\"", sep, names[i]);
            sep = ", ";
        }
    }
    printf("]");
}

static void json_device(const tf_plugin *p, uint32_t i)
{
    static const char *const names[] = {"f64", "host_memory", "software"};
    static const uint32_t bits[] = {TF_DEVICE_FLAG_F64, TF_DEVICE_FLAG_HOST_MEMORY,
                                    TF_DEVICE_FLAG_SOFTWARE};
    tf_device_info info = {.struct_size = sizeof info};
    printf("        {\"index\": %u, ", i);
    if (tf_plugin_device_info(p, i, &info) != TF_OK) {
        printf("\"error\": ");
        tf_cli_json_string(stdout, tf_error_message());
        printf("}");
        return;
    }
    printf("\"name\": ");
    tf_cli_json_string(stdout, info.name);
    printf(", \"type\": \"%s\", \"compute_units\": %u, \"memory_bytes\": %llu, \"flags\": ",
           device_type_name(info.type), info.compute_units,
           (unsigned long long)info.memory_bytes);
    json_flag_list(names, bits, 3, info.flags);
    printf(", \"driver\": ");
    tf_cli_json_string(stdout, info.driver);
    printf("}");
}

static void json_loaded(const tf_plugin_candidate *c)
{
    const tf_plugin *p = c->plugin;
    static const char *const names[] = {"host_memory", "threads"};
    static const uint32_t bits[] = {TF_ENGINE_CAP_HOST_MEMORY, TF_ENGINE_CAP_THREADS};
    printf("\"status\": \"loaded\", \"name\": ");
    tf_cli_json_string(stdout, tf_plugin_name(p));
    printf(", \"version\": ");
    tf_cli_json_string(stdout, tf_plugin_version(p));
    printf(", \"description\": ");
    tf_cli_json_string(stdout, tf_plugin_description(p));
    printf(", \"abi\": {\"major\": %u, \"minor\": %u}, \"capabilities\": ", tf_plugin_abi_major(p),
           tf_plugin_abi_minor(p));
    json_flag_list(names, bits, 2, tf_plugin_capabilities(p));
    char why[768];
    printf(", \"warnings\": [");
    if (name_warning(c, why, sizeof why))
        tf_cli_json_string(stdout, why);
    printf("]");
    uint32_t n = tf_plugin_device_count(p);
    printf(", \"device_count\": %u,\n      \"devices\": [", n);
    for (uint32_t i = 0; i < listed_devices(n); i++) {
        printf(i ? ",\n" : "\n");
        json_device(p, i);
    }
    printf(n ? "\n      ]" : "]");
}

static void json_extension(const tf_extension_candidate *x)
{
    printf("\"path\": ");
    tf_cli_json_string(stdout, x->path);
    printf(", \"kind\": \"%s\", ", x->kind);
    if (x->status != TF_OK) {
        printf("\"status\": \"refused\", \"error\": \"%s\", \"reason\": ",
               tf_status_name(x->status));
        tf_cli_json_string(stdout, x->message);
        return;
    }
    const tf_extension_module *m = x->module;
    printf("\"status\": \"loaded\", \"name\": ");
    tf_cli_json_string(stdout, tf_extension_id(m));
    printf(", \"version\": ");
    tf_cli_json_string(stdout, tf_extension_version(m));
    printf(", \"description\": ");
    tf_cli_json_string(stdout, tf_extension_description(m));
    printf(", \"abi\": {\"major\": %u, \"minor\": %u}", tf_extension_abi_major(m),
           tf_extension_abi_minor(m));
}

static void print_json(char **dirs, size_t ndirs, const tf_plugin_candidate *c, size_t n,
                       const tf_extension_candidate *x, size_t nx, const config_view *v)
{
    printf("{\n  \"version\": \"%s\",\n  \"engine_abi\": {\"major\": %d, \"minor\": %d},\n",
           tf_version_string(), TF_ENGINE_ABI_MAJOR, TF_ENGINE_ABI_MINOR);
    printf("  \"plugin_path\": [");
    for (size_t i = 0; i < ndirs; i++) {
        printf(i ? ", " : "");
        tf_cli_json_string(stdout, dirs[i]);
    }
    printf("],\n  \"plugins\": [");
    for (size_t i = 0; i < n; i++) {
        printf(i ? ",\n    {" : "\n    {");
        printf("\"path\": ");
        tf_cli_json_string(stdout, c[i].path);
        printf(", \"kind\": \"%s\", ", c[i].kind);
        if (c[i].status == TF_OK) {
            json_loaded(&c[i]);
        } else {
            printf("\"status\": \"refused\", \"error\": \"%s\", \"reason\": ",
                   tf_status_name(c[i].status));
            tf_cli_json_string(stdout, c[i].message);
        }
        printf("}");
    }
    for (size_t i = 0; i < nx; i++) {
        printf(i + n ? ",\n    {" : "\n    {");
        json_extension(&x[i]);
        printf("}");
    }
    printf(n + nx ? "\n  ],\n" : "],\n");
    printf("  \"extension_abi\": {\"major\": %d, \"minor\": %d}", TF_EXTENSION_ABI_MAJOR,
           TF_EXTENSION_ABI_MINOR);
    json_config(v);
    printf("\n}\n");
}

int tf_cli_info(int argc, char **argv)
{
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else {
            fprintf(stderr, "tenferro info: unknown option '%s'\nusage: tenferro info [--json]\n",
                    argv[i]);
            return 2;
        }
    }
    char **dirs;
    size_t ndirs, n, nx;
    tf_plugin_candidate *c;
    tf_extension_candidate *x;
    if (tf_plugin_path_get(&dirs, &ndirs) != TF_OK || tf_plugin_scan(&c, &n) != TF_OK) {
        fprintf(stderr, "tenferro info: %s\n", tf_error_message());
        return 1;
    }
    if (tf_extension_scan(&x, &nx) != TF_OK) {
        fprintf(stderr, "tenferro info: %s\n", tf_error_message());
        tf_plugin_scan_free(c, n);
        tf_plugin_path_free(dirs);
        return 1;
    }
    config_view v;
    config_view_load(&v);
    if (json)
        print_json(dirs, ndirs, c, n, x, nx, &v);
    else
        print_text(dirs, ndirs, c, n, x, nx, &v);
    config_view_free(&v);
    tf_extension_scan_free(x, nx);
    tf_plugin_scan_free(c, n);
    tf_plugin_path_free(dirs);
    return 0;
}
