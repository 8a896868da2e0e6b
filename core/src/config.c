/*
 * config.c - the configuration file (INI, read with libinih) and opening
 * "the configured engine" with its fallbacks (tenferro/config.h).
 *
 * Parsing never touches the thread's error slot: it fills a message buffer,
 * and only the public entry points turn it into a recorded error. That lets
 * the loader read the [plugins] path quietly (tf__config_plugin_path).
 */
#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tenferro/config.h>

#include "internal.h"
#include "plugin_path.h"

#define CFG_MAX_ENGINES 16
#define CFG_MAX_SECTIONS 16
#define CFG_MAX_EXTRA 16
#define CFG_MSG 768

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

typedef struct parse_state {
    tf_config *cfg;
    const char *file;
    FILE *stream;
    int line;
    bool indented; /* the current line starts with a blank */
    tf_status st;
    int err_line;
    char *msg;                                  /* CFG_MSG bytes */
    int default_line, fallback_line, path_line; /* where each was set, 0: not yet */
} parse_state;

/* ---- freeing ---- */

TF_API void tf_config_free(tf_config *c)
{
    if (!c)
        return;
    tf__free(c->file);
    for (size_t i = 0; i < c->n_engines; i++)
        tf__free(c->engines[i]);
    tf__free(c->plugin_path);
    tf__free(c->file_default);
    tf__free(c->file_fallback);
    for (size_t i = 0; i < c->n_sections; i++) {
        engine_section *s = &c->sections[i];
        tf__free(s->name);
        tf__free(s->device);
        for (size_t k = 0; k < s->n_extra; k++) {
            tf__free(s->keys[k]);
            tf__free(s->values[k]);
        }
    }
    tf__free(c);
}

/* ---- the handler ---- */

static int fail(parse_state *ps, tf_status st, const char *section, const char *key,
                const char *why, const char *value)
{
    ps->st = st;
    ps->err_line = ps->line;
    snprintf(ps->msg, CFG_MSG, "%s:%d: [%s] %s: %s%s%s%s", ps->file, ps->line, section,
             key ? key : "", why, value ? " '" : "", value ? value : "", value ? "'" : "");
    return 0;
}

/*
 * A key set a second time. libinih passes an indented line that follows a
 * pair as a continuation of that pair's value (another call with the same
 * key); the file format has no multi-line values, so that case gets its
 * own explanation.
 */
static int fail_again(parse_state *ps, const char *section, const char *key, int first_line)
{
    char why[160];
    if (ps->indented)
        snprintf(why, sizeof why,
                 "an indented line continues the value set on line %d; values are one line "
                 "(remove the indentation)",
                 first_line);
    else
        snprintf(why, sizeof why, "duplicate key, first set on line %d", first_line);
    return fail(ps, TF_ERR_CONFIG, section, key, why, NULL);
}

/* Replaces *slot with a copy of value; false when out of memory. */
static bool set_string(char **slot, const char *value)
{
    char *s = tf__strdup(value);
    if (!s)
        return false;
    tf__free(*slot);
    *slot = s;
    return true;
}

/* A name list "a, b": every item non-empty and free of blanks. */
static bool valid_list(const char *value, bool single)
{
    const char *p = value;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        size_t n = 0;
        while (p[n] && p[n] != ',' && !isspace((unsigned char)p[n]))
            n++;
        if (n == 0)
            return false;
        p += n;
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            return true;
        if (*p != ',' || single)
            return false;
        p++;
    }
}

/* The number of items of a list that valid_list accepted. */
static size_t list_length(const char *value)
{
    size_t n = 1;
    for (const char *p = value; *p; p++)
        n += *p == ',';
    return n;
}

static bool valid_plugin_path(const char *value)
{
    const char *p = value;
    while (*p) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        if (n == 0 || p[0] != '/')
            return false;
        p += n + (colon ? 1 : 0);
        if (colon && !*p)
            return false;
    }
    return p != value;
}

static engine_section *section_for(tf_config *c, const char *name, bool create)
{
    for (size_t i = 0; i < c->n_sections; i++)
        if (strcmp(c->sections[i].name, name) == 0)
            return &c->sections[i];
    if (!create || c->n_sections == CFG_MAX_SECTIONS)
        return NULL;
    engine_section *s = &c->sections[c->n_sections];
    memset(s, 0, sizeof *s);
    s->threads = -1;
    s->name = tf__strdup(name);
    if (!s->name)
        return NULL;
    c->n_sections++;
    return s;
}

static int engine_key(parse_state *ps, const char *section, const char *key, const char *value)
{
    const char *ename = section + strlen("engine.");
    if (!*ename)
        return fail(ps, TF_ERR_CONFIG, section, key, "engine section without a name", NULL);
    engine_section *s = section_for(ps->cfg, ename, true);
    /* section_for fails for a full table or for lack of memory for the name */
    if (!s && ps->cfg->n_sections < CFG_MAX_SECTIONS)
        return fail(ps, TF_ERR_OUT_OF_MEMORY, section, key, "out of memory", NULL);
    if (!s)
        return fail(ps, TF_ERR_CONFIG, section, key, "too many engine sections (at most 16)", NULL);
    if (strcmp(key, "threads") == 0) {
        if (s->threads_line)
            return fail_again(ps, section, key, s->threads_line);
        char *end;
        errno = 0;
        long t = strtol(value, &end, 10);
        if (!*value || *end || errno || t < 0 || t > 1024)
            return fail(ps, TF_ERR_CONFIG, section, key,
                        "bad value, expected an integer in 0..1024, got", value);
        s->threads = (int)t;
        s->threads_line = ps->line;
        return 1;
    }
    if (strcmp(key, "device") == 0) {
        if (s->device_line)
            return fail_again(ps, section, key, s->device_line);
        s->device_line = ps->line;
        if (!*value)
            return fail(ps, TF_ERR_CONFIG, section, key,
                        "bad value, expected a device index or name", value);
        return set_string(&s->device, value)
                   ? 1
                   : fail(ps, TF_ERR_OUT_OF_MEMORY, section, key, "out of memory", NULL);
    }
    for (size_t k = 0; k < s->n_extra; k++)
        if (strcmp(s->keys[k], key) == 0)
            return fail_again(ps, section, key, s->extra_lines[k]);
    if (s->n_extra == CFG_MAX_EXTRA)
        return fail(ps, TF_ERR_CONFIG, section, key, "too many engine options (at most 16)", NULL);
    s->keys[s->n_extra] = tf__strdup(key);
    s->values[s->n_extra] = tf__strdup(value);
    s->extra_lines[s->n_extra] = ps->line;
    s->n_extra++;
    if (!s->keys[s->n_extra - 1] || !s->values[s->n_extra - 1])
        return fail(ps, TF_ERR_OUT_OF_MEMORY, section, key, "out of memory", NULL);
    return 1;
}

static int handler(void *user, const char *section, const char *key, const char *value)
{
    parse_state *ps = user;
    if (ps->st)
        return 1; /* only the first error is reported */
    tf_config *c = ps->cfg;
    char **slot = NULL;
    if (strncmp(section, "engine.", 7) == 0)
        return engine_key(ps, section, key, value);
    if (strcmp(section, "engine") == 0) {
        if (strcmp(key, "default") == 0 || strcmp(key, "fallback") == 0) {
            bool single = key[0] == 'd';
            int *set_on = single ? &ps->default_line : &ps->fallback_line;
            if (*set_on)
                return fail_again(ps, section, key, *set_on);
            *set_on = ps->line;
            if (!valid_list(value, single))
                return fail(ps, TF_ERR_CONFIG, section, key,
                            single ? "bad value, expected one engine name, got"
                                   : "bad value, expected engine names separated by ',', got",
                            value);
            /* the default comes first: 15 fallbacks at most */
            if (!single && list_length(value) >= CFG_MAX_ENGINES)
                return fail(ps, TF_ERR_CONFIG, section, key,
                            "too many engine names (at most 15 fallbacks), got", value);
            slot = single ? &c->file_default : &c->file_fallback;
        } else {
            return fail(ps, TF_ERR_CONFIG, section, key,
                        "unknown key (expected default or fallback)", NULL);
        }
    } else if (strcmp(section, "plugins") == 0) {
        if (strcmp(key, "path") != 0)
            return fail(ps, TF_ERR_CONFIG, section, key, "unknown key (expected path)", NULL);
        if (ps->path_line)
            return fail_again(ps, section, key, ps->path_line);
        ps->path_line = ps->line;
        if (!valid_plugin_path(value))
            return fail(ps, TF_ERR_CONFIG, section, key,
                        "bad value, expected absolute directories separated by ':', got", value);
        slot = &c->plugin_path;
    } else {
        return fail(ps, TF_ERR_CONFIG, section, key,
                    "unknown section (expected engine, engine.NAME or plugins)", NULL);
    }
    return set_string(slot, value)
               ? 1
               : fail(ps, TF_ERR_OUT_OF_MEMORY, section, key, "out of memory", NULL);
}

/*
 * fgets that counts lines, so that the handler knows where it is. libinih
 * reads into a fixed buffer (num bytes) and would take the rest of a longer
 * line for a line of its own, so such a line ends the parse with an error
 * instead; that also keeps libinih's line numbers (of syntax errors) equal
 * to the file's.
 */
static char *reader(char *str, int num, void *stream)
{
    parse_state *ps = stream;
    if (ps->st)
        return NULL; /* the first error ends the parse */
    char *r = fgets(str, num, ps->stream);
    if (!r)
        return NULL;
    ps->line++;
    ps->indented = r[0] == ' ' || r[0] == '\t';
    size_t n = strlen(r);
    if (n + 1 == (size_t)num && r[n - 1] != '\n') {
        int next = getc(ps->stream);
        if (next != EOF) {
            ps->st = TF_ERR_CONFIG;
            ps->err_line = ps->line;
            snprintf(ps->msg, CFG_MSG, "%s:%d: line longer than %d characters", ps->file, ps->line,
                     num - 2);
            return NULL;
        }
    }
    return r;
}

static tf_status parse_file(tf_config *c, const char *file, char *msg)
{
    FILE *f = fopen(file, "r");
    if (!f) {
        snprintf(msg, CFG_MSG, "%s: cannot read the configuration file: %s", file, strerror(errno));
        return TF_ERR_CONFIG;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        snprintf(msg, CFG_MSG, "%s: cannot read the configuration file: it is a directory", file);
        return TF_ERR_CONFIG;
    }
    parse_state ps = {.cfg = c, .file = file, .stream = f, .msg = msg};
    int r = ini_parse_stream(reader, &ps, handler, &ps);
    fclose(f);
    if (r > 0 && (!ps.st || r < ps.err_line)) {
        snprintf(msg, CFG_MSG, "%s:%d: syntax error (expected [section] or key = value)", file, r);
        return TF_ERR_CONFIG;
    }
    if (!ps.st && r < 0) {
        snprintf(msg, CFG_MSG, "%s: cannot parse the configuration file", file);
        return r == -2 ? TF_ERR_OUT_OF_MEMORY : TF_ERR_CONFIG;
    }
    return ps.st;
}

/* ---- the engine list ---- */

/* Appends the names of a list "a, b" not already there. */
static bool add_names(tf_config *c, const char *list)
{
    const char *p = list;
    while (p && *p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        size_t n = 0;
        while (p[n] && p[n] != ',' && !isspace((unsigned char)p[n]))
            n++;
        if (n == 0)
            break;
        bool seen = false;
        for (size_t i = 0; i < c->n_engines; i++)
            seen |= strlen(c->engines[i]) == n && strncmp(c->engines[i], p, n) == 0;
        if (!seen && c->n_engines < CFG_MAX_ENGINES) {
            char *s = tf__alloc(n + 1);
            if (!s)
                return false;
            memcpy(s, p, n);
            s[n] = '\0';
            c->engines[c->n_engines++] = s;
        }
        p += n;
    }
    return true;
}

static tf_status choose_engines(tf_config *c, char *msg)
{
    const char *env = getenv("TENFERRO_ENGINE");
    bool ok;
    if (env && *env) {
        if (!valid_list(env, false)) {
            snprintf(msg, CFG_MSG,
                     "TENFERRO_ENGINE: bad value, expected engine names separated by ',', "
                     "got '%s'",
                     env);
            return TF_ERR_CONFIG;
        }
        if (list_length(env) > CFG_MAX_ENGINES) {
            snprintf(msg, CFG_MSG, "TENFERRO_ENGINE: too many engine names (at most %d), got '%s'",
                     CFG_MAX_ENGINES, env);
            return TF_ERR_CONFIG;
        }
        c->source = "TENFERRO_ENGINE";
        ok = add_names(c, env);
    } else if (c->file_default || c->file_fallback) {
        c->source = "file";
        ok = add_names(c, c->file_default ? c->file_default : "cpu") &&
             add_names(c, c->file_fallback);
    } else {
        c->source = "built-in";
        ok = add_names(c, "cpu");
    }
    if (!ok)
        snprintf(msg, CFG_MSG, "out of memory");
    return ok ? TF_OK : TF_ERR_OUT_OF_MEMORY;
}

/* ---- finding the file ---- */

/* The file to read into path ("" for none); TF_ERR_CONFIG if TENFERRO_CONFIG is missing. */
static tf_status find_file(char *path, size_t cap, char *msg)
{
    const char *named = getenv("TENFERRO_CONFIG");
    path[0] = '\0';
    if (named && *named) {
        if (access(named, F_OK) != 0) {
            snprintf(msg, CFG_MSG,
                     "%s (named by TENFERRO_CONFIG): cannot read the "
                     "configuration file: %s",
                     named, strerror(errno));
            return TF_ERR_CONFIG;
        }
        snprintf(path, cap, "%s", named);
        return TF_OK;
    }
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    char cand[PATH_MAX];
    if (xdg && *xdg)
        snprintf(cand, sizeof cand, "%s/tenferro/config.ini", xdg);
    else if (home && *home)
        snprintf(cand, sizeof cand, "%s/.config/tenferro/config.ini", home);
    else
        cand[0] = '\0';
    if (cand[0] && access(cand, F_OK) == 0)
        snprintf(path, cap, "%s", cand);
    else if (access("/etc/tenferro/config.ini", F_OK) == 0)
        snprintf(path, cap, "%s", "/etc/tenferro/config.ini");
    return TF_OK;
}

/* Loads `file` ("" for none, NULL to search) without recording an error. */
static tf_status load_quiet(const char *file, tf_config **out, char *msg)
{
    char found[PATH_MAX];
    tf_status st = TF_OK;
    if (!file) {
        st = find_file(found, sizeof found, msg);
        file = found;
    }
    if (st)
        return st;
    tf_config *c = tf__calloc(1, sizeof *c);
    if (!c || !(c->file = tf__strdup(file))) {
        tf__free(c);
        snprintf(msg, CFG_MSG, "out of memory");
        return TF_ERR_OUT_OF_MEMORY;
    }
    if (file[0])
        st = parse_file(c, file, msg);
    if (!st)
        st = choose_engines(c, msg);
    if (st) {
        tf_config_free(c);
        return st;
    }
    *out = c;
    return TF_OK;
}

tf_status tf__config_plugin_path(char **path)
{
    char msg[CFG_MSG];
    tf_config *c;
    *path = NULL;
    tf_status st = load_quiet(NULL, &c, msg);
    if (st)
        return st == TF_ERR_OUT_OF_MEMORY ? st : TF_OK;
    st = TF_OK;
    if (c->plugin_path && !(*path = tf__strdup(c->plugin_path)))
        st = TF_ERR_OUT_OF_MEMORY;
    tf_config_free(c);
    return st;
}

TF_API tf_status tf_config_load(tf_config **out)
{
    if (!out)
        return tf__error(TF_ERR_VALIDATION, "config_load", "out", "config_load: out is NULL");
    char msg[CFG_MSG];
    tf_status st = load_quiet(NULL, out, msg);
    return st ? tf__error(st, "config_load", NULL, "%s", msg) : TF_OK;
}

TF_API tf_status tf_config_load_file(const char *path, tf_config **out)
{
    if (!path || !*path || !out)
        return tf__error(TF_ERR_VALIDATION, "config_load_file", out ? "path" : "out",
                         "config_load_file: %s is NULL or empty", out ? "path" : "out");
    char msg[CFG_MSG];
    tf_status st = load_quiet(path, out, msg);
    return st ? tf__error(st, "config_load_file", NULL, "%s", msg) : TF_OK;
}

/* ---- accessors (a NULL config reads as an empty one) ---- */

TF_API const char *tf_config_file(const tf_config *c)
{
    return c ? c->file : "";
}
TF_API const char *tf_config_engine_source(const tf_config *c)
{
    return c ? c->source : "";
}
TF_API size_t tf_config_engine_count(const tf_config *c)
{
    return c ? c->n_engines : 0;
}

TF_API const char *tf_config_engine_at(const tf_config *c, size_t i)
{
    return c && i < c->n_engines ? c->engines[i] : NULL;
}

TF_API void tf_config_set_threads(tf_config *c, int threads)
{
    if (c)
        c->threads_override = threads > 0 ? threads : 0;
}

TF_API const char *tf_config_plugin_path(const tf_config *c)
{
    return c && c->plugin_path ? c->plugin_path : "";
}

/* ---- opening the configured engine ---- */

static void options_for(const tf_config *c, const char *name, tf_engine_options *o)
{
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->threads = c->threads_override;
    const engine_section *s = section_for((tf_config *)c, name, false);
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

static tf_status try_engine(const tf_config *c, const char *name, tf_engine **out)
{
    tf_plugin *p;
    tf_status st = tf_plugin_load(name, &p);
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
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    tf_status st = TF_ERR_PLUGIN_NOT_FOUND;
    for (size_t i = 0; i < c->n_engines; i++) {
        st = try_engine(c, c->engines[i], out);
        if (st == TF_OK) {
            if (m)
                fprintf(m, "selected engine '%s' (choice %zu of %zu, from %s%s%s)\n", c->engines[i],
                        i + 1, c->n_engines, c->source, strcmp(c->source, "file") == 0 ? " " : "",
                        strcmp(c->source, "file") == 0 ? c->file : "");
            break;
        }
        const char *cause = tf_error_cause();
        if (m)
            fprintf(m, "skipped engine '%s': %s: %s%s%s\n", c->engines[i], tf_status_name(st),
                    tf_error_message(), cause[0] ? ": " : "", cause);
    }
    if (m)
        fclose(m);
    if (st)
        tf__error(st, "config_open_engine", NULL, "no configured engine could start:\n%s",
                  text ? text : "");
    if (report)
        *report = text;
    else
        free(text);
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
    tf_config_free(c);
    return st;
}

TF_API void tf_config_report_free(char *report)
{
    free(report);
}
