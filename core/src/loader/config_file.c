/*
 * config_file.c - the configuration file (INI, read with libinih) of
 * tenferro/config.h: finding it, reading it strictly, its accessors, and the
 * [plugins] path the plugin search reads from it (the configured engine is
 * opened a layer above, config/config.c).
 *
 * Parsing never touches the thread's error slot: it fills a message buffer,
 * and only the public entry points turn it into a recorded error. That lets
 * the loader read the [plugins] path quietly (tf__config_plugin_path).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <tenferro/config.h>

#include "loader_internal.h"

typedef struct parse_state {
    tf_config *cfg;
    const char *file;
    FILE *stream;
    int line;
    bool indented;   /* the current line starts with a blank */
    bool after_pair; /* a key = value line came since the last [section] */
    long bytes;      /* read so far */
    tf_status st;
    int err_line;
    char *msg;                                  /* CFG_MSG bytes */
    int default_line, fallback_line, path_line; /* where each was set, 0: not yet */
} parse_state;

/* ---- freeing ---- */

TF_API void tf_config_destroy(tf_config *c)
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

TF_API void tf_config_free(tf_config *c)
{
    tf_config_destroy(c);
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

engine_section *tf__config_section(tf_config *c, const char *name, bool create)
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
    engine_section *s = tf__config_section(ps->cfg, ename, true);
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
    if (!*key) /* "= value": libinih passes an empty name */
        return fail(ps, TF_ERR_CONFIG, section, key, "a pair without a key (expected key = value)",
                    NULL);
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

/* Ends the parse with a TF_ERR_CONFIG naming the current line. */
static char *read_failed(parse_state *ps, const char *fmt, ...) TF_PRINTF(2, 3);
static char *read_failed(parse_state *ps, const char *fmt, ...)
{
    char why[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    ps->st = TF_ERR_CONFIG;
    ps->err_line = ps->line;
    snprintf(ps->msg, CFG_MSG, "%s:%d: %s", ps->file, ps->line, why);
    return NULL;
}

/*
 * What libinih lets through and the file format does not have: a pair split
 * at ':' (libinih splits at the first '=' or ':'; the format has only '='),
 * and text after a section's ']' (libinih ignores it; only a comment may
 * follow). A continuation line (indented, after a pair; libinih's rule) is
 * left to the handler, which refuses it with its own reason.
 */
static char *check_separator(parse_state *ps, char *line)
{
    const char *p = line;
    if (ps->line == 1 && strncmp(p, "\xef\xbb\xbf", 3) == 0)
        p += 3; /* a UTF-8 byte order mark, which libinih skips */
    p += strspn(p, " \t");
    if (*p == ';' || *p == '#' || *p == '\n')
        return line; /* a comment or a blank line */
    if (*p == '[') {
        ps->after_pair = false;
        const char *end = strchr(p, ']');
        if (end) /* no ']' at all is libinih's syntax error */
            end += 1 + strspn(end + 1, " \t");
        if (end && *end != '\n' && *end != ';')
            return read_failed(ps, "text after the section's ']' (only a comment may follow)");
        return line;
    }
    if (ps->indented && ps->after_pair)
        return line;
    ps->after_pair = true;
    if (p[strcspn(p, "=:")] == ':')
        return read_failed(ps, "expected key = value, found ':' first (the separator is '=')");
    return line;
}

/*
 * The next line into str (num bytes), as fgets would, but read byte by byte
 * so that nothing in it can hide from libinih's parse, which stops at a NUL
 * and reads a longer line as two: a NUL byte, a line of more than num - 2
 * characters (the line ending, "\n" or "\r\n", not counted; a last line
 * without one included) and a file of more than CFG_MAX_BYTES each end the
 * parse with an error. Counts lines for the handler, so libinih's line
 * numbers (of syntax errors) stay the file's.
 */
static char *reader(char *str, int num, void *stream)
{
    parse_state *ps = stream;
    if (ps->st)
        return NULL; /* the first error ends the parse */
    long limit = num - 2, n = 0;
    int c = getc(ps->stream);
    if (c == EOF)
        return NULL;
    ps->line++;
    for (; c != EOF; c = getc(ps->stream)) {
        if (++ps->bytes > CFG_MAX_BYTES)
            return read_failed(ps, "the file is longer than %ld bytes", CFG_MAX_BYTES);
        if (c == '\n')
            break;
        if (c == '\0')
            return read_failed(ps, "a NUL byte at column %ld", n + 1);
        if (n <= limit)
            str[n] = (char)c;
        n++;
    }
    if (n > 0 && n <= limit + 1 && str[n - 1] == '\r')
        n--;
    if (n > limit)
        return read_failed(ps, "line longer than %ld characters", limit);
    str[n] = '\n';
    str[n + 1] = '\0';
    ps->indented = str[0] == ' ' || str[0] == '\t';
    return check_separator(ps, str);
}

/* The null device, which reads as an empty file (TENFERRO_CONFIG=/dev/null). */
static bool is_null_device(const struct stat *st)
{
    struct stat null;
    return S_ISCHR(st->st_mode) && stat("/dev/null", &null) == 0 && S_ISCHR(null.st_mode) &&
           null.st_rdev == st->st_rdev;
}

/*
 * Opens `file` for parsing: only a regular file (or /dev/null) is read. A
 * FIFO would block the open and the read, a device such as /dev/zero never
 * ends; opened without blocking, then checked on the descriptor itself.
 */
static FILE *open_config(const char *file, char *msg, struct stat *out)
{
    int fd = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    const char *why = NULL;
    memset(out, 0, sizeof *out);
    if (fd < 0 || fstat(fd, &st) != 0)
        why = strerror(errno);
    else if (S_ISDIR(st.st_mode))
        why = "it is a directory";
    else if (!S_ISREG(st.st_mode) && !is_null_device(&st))
        why = "it is not a regular file (a FIFO, socket or device)";
    FILE *f = why ? NULL : fdopen(fd, "r");
    if (!f) {
        snprintf(msg, CFG_MSG, "%s: cannot read the configuration file: %s", file,
                 why ? why : strerror(errno));
        if (fd >= 0)
            close(fd);
    } else {
        *out = st;
    }
    return f;
}

/* Parses `file` into c; *st gets what fstat said of it (zeroed if not opened). */
static tf_status parse_file(tf_config *c, const char *file, char *msg, struct stat *st)
{
    FILE *f = open_config(file, msg, st);
    if (!f)
        return TF_ERR_CONFIG;
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
    struct stat file_st;
    if (file[0])
        st = parse_file(c, file, msg, &file_st);
    if (!st)
        st = choose_engines(c, msg);
    if (st) {
        tf_config_destroy(c);
        return st;
    }
    *out = c;
    return TF_OK;
}

/*
 * The loader asks for the [plugins] path on every search (each engine or
 * module loaded by name, each scan), so the last answer is remembered with
 * the identity, size and modification time of the file it came from, and
 * given again while a stat of the file says the same. A file changed less
 * than a second before it was read (by its change time, which no one can
 * set back) is not remembered: a second change within the timestamps'
 * granularity would not show (git's "racily clean" rule). No allocation:
 * the value is at most a line long.
 */
#define PATH_CACHE_SETTLE_NS 1000000000LL

static struct {
    pthread_mutex_t lock;
    bool valid;
    char file[PATH_MAX];
    struct stat st;
    char path[256]; /* "" for none */
} g_path_cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* The remembered path of `file` into out (cap bytes); false if none fits. */
static bool path_cached(const char *file, char *out, size_t cap)
{
    struct stat st;
    if (stat(file, &st) != 0 || !S_ISREG(st.st_mode))
        return false;
    pthread_mutex_lock(&g_path_cache.lock);
    bool hit = g_path_cache.valid && strcmp(g_path_cache.file, file) == 0 &&
               same_file(&g_path_cache.st, &st);
    if (hit)
        snprintf(out, cap, "%s", g_path_cache.path);
    pthread_mutex_unlock(&g_path_cache.lock);
    return hit;
}

static void path_remember(const char *file, const struct stat *st, const char *path)
{
    struct timespec now;
    if (!S_ISREG(st->st_mode) || strlen(file) >= sizeof g_path_cache.file ||
        strlen(path) >= sizeof g_path_cache.path || clock_gettime(CLOCK_REALTIME, &now) != 0)
        return;
    long long age = (long long)(now.tv_sec - st->st_ctim.tv_sec) * 1000000000LL +
                    (now.tv_nsec - st->st_ctim.tv_nsec);
    if (age < PATH_CACHE_SETTLE_NS)
        return;
    pthread_mutex_lock(&g_path_cache.lock);
    g_path_cache.valid = true;
    snprintf(g_path_cache.file, sizeof g_path_cache.file, "%s", file);
    g_path_cache.st = *st;
    snprintf(g_path_cache.path, sizeof g_path_cache.path, "%s", path);
    pthread_mutex_unlock(&g_path_cache.lock);
}

/* The file's [plugins] path alone: TENFERRO_ENGINE and a bad file add nothing. */
tf_status tf__config_plugin_path(char **path)
{
    char file[PATH_MAX], msg[CFG_MSG], cached[256];
    *path = NULL;
    if (find_file(file, sizeof file, msg) != TF_OK || !file[0])
        return TF_OK;
    const char *found = cached;
    tf_config *c = NULL;
    if (!path_cached(file, cached, sizeof cached)) {
        struct stat st;
        if (!(c = tf__calloc(1, sizeof *c)))
            return TF_ERR_OUT_OF_MEMORY;
        tf_status pst = parse_file(c, file, msg, &st);
        if (pst == TF_ERR_OUT_OF_MEMORY) {
            tf_config_destroy(c);
            return pst;
        }
        found = !pst && c->plugin_path ? c->plugin_path : "";
        path_remember(file, &st, found);
    }
    tf_status st = found[0] && !(*path = tf__strdup(found)) ? TF_ERR_OUT_OF_MEMORY : TF_OK;
    tf_config_destroy(c);
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
