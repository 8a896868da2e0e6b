/*
 * plugin.c - engine plugins: the descriptor check, loading through the
 * module loader (module.c) with init as the step that makes a plugin, the
 * accessors, and the scan of the search path's engine files.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "loader_internal.h"

/* ---- checking a descriptor ---- */

static tf_status check_functions(const char *file, const tf_engine_plugin *d)
{
    struct {
        const char *field;
        bool present;
    } req[] = {
        {"name", d->name && d->name[0]},
        {"version", d->version != NULL},
        {"init", d->init != NULL},
        {"device_count", d->device_count != NULL},
        {"device_info", d->device_info != NULL},
        {"create", d->create != NULL},
        {"destroy", d->destroy != NULL},
        {"supports", d->supports != NULL},
        {"buffer_alloc", d->buffer_alloc != NULL},
        {"buffer_free", d->buffer_free != NULL},
        {"upload", d->upload != NULL},
        {"download", d->download != NULL},
        {"buffer_copy", d->buffer_copy != NULL},
        {"execute", d->execute != NULL},
        {"synchronize", d->synchronize != NULL},
    };
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++)
        if (!req[i].present)
            return tf__error(TF_ERR_PLUGIN_MISSING_FUNCTION, "plugin_load", req[i].field,
                             "plugin '%s': required descriptor field '%s' is %s", file,
                             req[i].field, i == 0 ? "NULL or empty" : "NULL");
    return TF_OK;
}

tf_status tf__plugin_check_descriptor(const char *file, const tf_engine_plugin *d)
{
    if (d->struct_size >= offsetof(tf_engine_plugin, abi_minor) &&
        d->abi_major != TF_ENGINE_ABI_MAJOR)
        return tf__error(TF_ERR_PLUGIN_ABI, "plugin_load", NULL,
                         "plugin '%s': expected engine ABI major %d, found %u.%u", file,
                         TF_ENGINE_ABI_MAJOR, d->abi_major,
                         d->struct_size >= offsetof(tf_engine_plugin, capabilities) ? d->abi_minor
                                                                                    : 0u);
    if (d->struct_size < TF_ENGINE_PLUGIN_MIN_SIZE)
        return tf__error(TF_ERR_PLUGIN_STRUCT_SIZE, "plugin_load", NULL,
                         "plugin '%s': descriptor struct_size is %u bytes, expected at least %zu "
                         "(ABI %d.0)",
                         file, d->struct_size, (size_t)TF_ENGINE_PLUGIN_MIN_SIZE,
                         TF_ENGINE_ABI_MAJOR);
    /* A descriptor of a minor this host knows is no larger than that minor's
       struct (1.0 is the only one yet): a larger struct_size is a lie that
       would have the host read fields past the plugin's object. */
    if (d->abi_minor <= TF_ENGINE_ABI_MINOR && d->struct_size > sizeof(tf_engine_plugin))
        return tf__error(TF_ERR_PLUGIN_STRUCT_SIZE, "plugin_load", NULL,
                         "plugin '%s': descriptor struct_size is %u bytes, expected at most %zu "
                         "for the ABI %d.%u it states",
                         file, d->struct_size, sizeof(tf_engine_plugin), TF_ENGINE_ABI_MAJOR,
                         d->abi_minor);
    return check_functions(file, d);
}

/* ---- loading ---- */

static const void *call_entry(void *sym)
{
    tf_engine_entry_fn entry = (tf_engine_entry_fn)(uintptr_t)sym;
    return entry(tf__host_api());
}

static tf_status check(const char *op, const char *file, const void *desc)
{
    (void)op; /* refusals are plugin_load's, also when tf_config_open_engine loads */
    return tf__plugin_check_descriptor(file, desc);
}

/* The plugin record of an accepted descriptor, after its init succeeded. */
static tf_status make(const char *op, const char *file, void *handle, const void *desc,
                      void **object)
{
    const tf_engine_plugin *d = desc;
    tf_plugin *p = tf__calloc(1, sizeof *p);
    if (!p)
        return tf__error(TF_ERR_OUT_OF_MEMORY, op, NULL, "out of memory");
    tf__plugin_report_clear();
    tf_status st = d->init(tf__host_api(), &p->ctx);
    if (st != TF_OK) {
        tf__free(p);
        return tf__error_from_plugin(TF_ERR_PLUGIN_INIT, op, "plugin '%s': init failed with %s",
                                     file, tf_status_name(st));
    }
    p->file = file;
    p->handle = handle;
    p->desc = d;
    p->desc_size = d->struct_size;
    tf__log(TF_LOG_INFO, "loaded engine plugin '%s' %s from %s", d->name, d->version, file);
    *object = p;
    return TF_OK;
}

static tf_module_set g_plugins = TF_MODULE_SET_INIT;

static const tf_module_kind g_engine_kind = {
    .noun = "plugin",
    .what = "engine plugin",
    .prefix = TF_ENGINE_FILE_PREFIX,
    .abi = "engine ABI",
    .abi_major = TF_ENGINE_ABI_MAJOR,
    .abi_minor = TF_ENGINE_ABI_MINOR,
    .entry = TF_ENGINE_ENTRY_SYMBOL,
    .entry_stem = "tf_engine_plugin_v",
    .entry_decl = "TF_ENGINE_EXPORT const tf_engine_plugin *" TF_ENGINE_ENTRY_SYMBOL
                  "(const tf_host_api *host)",
    .call_entry = call_entry,
    .check = check,
    .make = make,
    .set = &g_plugins,
};

tf_status tf__plugin_load_in(const char *name_or_path, const char *cfg_path, tf_plugin **out)
{
    void *p = NULL;
    tf_status st = tf__module_load(&g_engine_kind, "plugin_load", name_or_path, cfg_path, &p);
    if (st == TF_OK)
        *out = p;
    return st;
}

TF_API tf_status tf_plugin_load(const char *name_or_path, tf_plugin **out)
{
    return tf__plugin_load_in(name_or_path, NULL, out);
}

/* ---- accessors ---- */

/* A NULL plugin reads as "" and 0 (engine.h). */
TF_API const char *tf_plugin_name(const tf_plugin *p)
{
    return p ? p->desc->name : "";
}
TF_API const char *tf_plugin_version(const tf_plugin *p)
{
    return p ? p->desc->version : "";
}
TF_API const char *tf_plugin_file(const tf_plugin *p)
{
    return p ? p->file : "";
}
TF_API uint32_t tf_plugin_abi_major(const tf_plugin *p)
{
    return p ? p->desc->abi_major : 0;
}
TF_API uint32_t tf_plugin_abi_minor(const tf_plugin *p)
{
    return p ? p->desc->abi_minor : 0;
}
TF_API uint32_t tf_plugin_capabilities(const tf_plugin *p)
{
    return p ? p->desc->capabilities : 0;
}

TF_API const char *tf_plugin_description(const tf_plugin *p)
{
    return p && p->desc->description ? p->desc->description : "";
}

TF_API uint32_t tf_plugin_device_count(const tf_plugin *p)
{
    return p ? p->desc->device_count(p->ctx) : 0;
}

TF_API tf_status tf_plugin_device_info(const tf_plugin *p, uint32_t index, tf_device_info *info)
{
    if (!p || !info)
        return tf__error(TF_ERR_VALIDATION, "plugin_device_info", p ? "info" : "plugin",
                         "plugin_device_info: NULL argument");
    if (info->struct_size < offsetof(tf_device_info, flags))
        return tf__error(TF_ERR_VALIDATION, "plugin_device_info", "info",
                         "plugin_device_info: info->struct_size (%u) is not set",
                         info->struct_size);
    uint32_t n = p->desc->device_count(p->ctx);
    if (index >= n)
        return tf__error(TF_ERR_OUT_OF_RANGE, "plugin_device_info", "index",
                         "plugin_device_info: device %u of engine '%s', which has %u", index,
                         p->desc->name, n);
    /* The plugin fills a copy: *info is written only on success, and only
       with strings that end inside their arrays (every caller prints them). */
    tf_device_info got;
    memset(&got, 0, sizeof got);
    got.struct_size = info->struct_size < sizeof got ? info->struct_size : (uint32_t)sizeof got;
    tf__plugin_report_clear();
    tf_status st = p->desc->device_info(p->ctx, index, &got);
    if (st)
        return tf__error_from_plugin(st, "plugin_device_info",
                                     "engine '%s': device_info(%u) failed", p->desc->name, index);
    const char *field =
        TF_ABI_HAS_FIELD(&got, tf_device_info, name) && !memchr(got.name, '\0', sizeof got.name)
            ? "name"
        : TF_ABI_HAS_FIELD(&got, tf_device_info, driver) &&
                !memchr(got.driver, '\0', sizeof got.driver)
            ? "driver"
            : NULL;
    if (field)
        return tf__error(TF_ERR_BACKEND, "plugin_device_info", NULL,
                         "plugin_device_info: engine '%s': device_info(%u) filled '%s' without a "
                         "terminating NUL within its %zu bytes",
                         p->desc->name, index, field,
                         field[0] == 'n' ? sizeof got.name : sizeof got.driver);
    uint32_t size = info->struct_size;
    memcpy(info, &got, got.struct_size);
    info->struct_size = size;
    return TF_OK;
}

/* ---- scanning ---- */

typedef struct cand_list {
    tf_plugin_candidate *items;
    size_t count, cap;
} cand_list;

static bool cand_push(cand_list *cl, const char *path)
{
    if (cl->count == cl->cap) {
        size_t cap = cl->cap ? cl->cap * 2 : 8;
        tf_plugin_candidate *n = tf__calloc(cap, sizeof *n);
        if (!n)
            return false;
        if (cl->count)
            memcpy(n, cl->items, cl->count * sizeof *n);
        tf__free(cl->items);
        cl->items = n;
        cl->cap = cap;
    }
    tf_plugin_candidate *c = &cl->items[cl->count];
    memset(c, 0, sizeof *c);
    c->path = tf__strdup(path);
    if (!c->path)
        return false;
    c->kind = "engine";
    cl->count++;
    return true;
}

static bool probe(tf_plugin_candidate *c)
{
    c->status = tf_plugin_load(c->path, &c->plugin);
    if (c->status != TF_OK)
        c->plugin = NULL;
    c->message = tf__module_refusal_text(c->status);
    return c->message != NULL;
}

TF_API void tf_plugin_scan_free(tf_plugin_candidate *candidates, size_t count)
{
    if (!candidates)
        return;
    for (size_t i = 0; i < count; i++) {
        tf__free(candidates[i].path);
        tf__free(candidates[i].message);
    }
    tf__free(candidates);
}

TF_API tf_status tf_plugin_scan(tf_plugin_candidate **candidates, size_t *count)
{
    if (!candidates || !count)
        return tf__error(TF_ERR_VALIDATION, "plugin_scan", candidates ? "count" : "candidates",
                         "plugin_scan: NULL out-parameter");
    char **files;
    size_t nfiles;
    tf_status st = tf__plugin_scan_files("plugin_scan", TF_ENGINE_FILE_PREFIX, &files, &nfiles);
    if (st)
        return st;
    cand_list cl = {0};
    bool ok = true;
    for (size_t i = 0; ok && i < nfiles; i++)
        ok = cand_push(&cl, files[i]);
    tf_plugin_path_free(files);
    for (size_t i = 0; ok && i < cl.count; i++)
        ok = probe(&cl.items[i]);
    if (!ok) {
        tf_plugin_scan_free(cl.items, cl.count);
        return tf__error(TF_ERR_OUT_OF_MEMORY, "plugin_scan", NULL, "out of memory");
    }
    *candidates = cl.items;
    *count = cl.count;
    return TF_OK;
}
