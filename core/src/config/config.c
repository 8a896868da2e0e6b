/*
 * config.c - opening "the configured engine" (tenferro/config.h): each engine
 * of a configuration in order, with the options of its [engine.NAME]
 * section, and a report of why each earlier choice was skipped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "loader_internal.h"

/* ---- opening the configured engine ---- */

static void options_for(const tf_config *c, const char *name, tf_engine_options *o)
{
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->threads = c->threads_override;
    const engine_section *s = tf__config_section((tf_config *)c, name, false);
    if (!s)
        return;
    if (!c->threads_override)
        o->threads = s->threads < 0 ? 0 : s->threads;
    if (s->device) {
        const char *d = s->device;
        size_t n = strspn(d, "0123456789");
        if (d[n] == '\0' && n < 10)
            o->device_index = (uint32_t)strtoul(d, NULL, 10);
        else
            o->device_name = d;
    }
    o->n_extra = (uint32_t)s->n_extra;
    o->extra_keys = (const char *const *)s->keys;
    o->extra_values = (const char *const *)s->values;
}

/* The engine `name`, found on the search path with this configuration's
   [plugins] path in the file's place (c may come from tf_config_load_file). */
static tf_status try_engine(const tf_config *c, const char *name, tf_engine **out)
{
    tf_plugin *p;
    tf_status st = tf__plugin_load_in(name, c->plugin_path ? c->plugin_path : "", &p);
    if (st)
        return st;
    tf_engine_options o;
    options_for(c, name, &o);
    return tf_engine_create(p, &o, out);
}

TF_API tf_status tf_config_open_engine(const tf_config *c, tf_engine **out, char **report)
{
    if (report)
        *report = NULL;
    if (!c || !out)
        return tf__error(TF_ERR_VALIDATION, "config_open_engine", c ? "out" : "config",
                         "config_open_engine: NULL argument");
    tf_text text = {0}; /* in the library's allocator: tf_config_report_free frees it */
    tf_engine *e = NULL;
    tf_status st = TF_ERR_PLUGIN_NOT_FOUND;
    for (size_t i = 0; i < c->n_engines; i++) {
        st = try_engine(c, c->engines[i], &e);
        if (st == TF_OK) {
            tf__text_printf(&text, "selected engine '%s' (choice %zu of %zu, from %s%s%s)\n",
                            c->engines[i], i + 1, c->n_engines, c->source,
                            strcmp(c->source, "file") == 0 ? " " : "",
                            strcmp(c->source, "file") == 0 ? c->file : "");
            break;
        }
        const char *cause = tf_error_cause();
        tf__text_printf(&text, "skipped engine '%s': %s: %s%s%s\n", c->engines[i],
                        tf_status_name(st), tf_error_message(), cause[0] ? ": " : "", cause);
    }
    tf__text_printf(&text, "%s", ""); /* a text even when no engine was tried */
    if (report && text.oom) {         /* the report asked for cannot be given: nothing is opened */
        tf_engine_destroy(e);
        return tf__error(TF_ERR_OUT_OF_MEMORY, "config_open_engine", NULL, "out of memory");
    }
    if (st)
        tf__error(st, "config_open_engine", NULL, "no configured engine could start:\n%s",
                  text.s ? text.s : "");
    else
        *out = e;
    if (report)
        *report = text.s;
    else
        tf__free(text.s);
    return st;
}

TF_API tf_status tf_engine_open_configured(tf_engine **out, char **report)
{
    if (report)
        *report = NULL;
    tf_config *c;
    tf_status st = tf_config_load(&c);
    if (st)
        return st;
    st = tf_config_open_engine(c, out, report);
    tf_config_destroy(c);
    return st;
}

TF_API void tf_config_report_free(char *report)
{
    tf__free(report);
}
