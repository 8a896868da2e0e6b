/*
 * search_path.c - where plugin and extension files are looked for: the
 * search path (TENFERRO_PLUGIN_PATH, the configuration file's [plugins]
 * path, the folder beside this library, the installed folder), the safety
 * rules that skip writable folders and files, resolving a name to a file,
 * and listing the files of a kind for the scans. Loading them is module.c's.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loader_internal.h"

/* ---- the search path ---- */

/* Room for why a path is unsafe (it may name a folder) and for a skip's reason. */
#define WHY_MAX (PATH_MAX + 128)
#define REASON_MAX (WHY_MAX + 96)

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The directory holding this library, into buf; false if unknown. */
static bool library_dir(char *buf, size_t cap)
{
    static const char anchor = 0; /* any object of this library */
    Dl_info info;
    if (!dladdr((const void *)&anchor, &info) || !info.dli_fname)
        return false;
    char real[PATH_MAX];
    if (!realpath(info.dli_fname, real))
        return false;
    char *slash = strrchr(real, '/');
    if (!slash)
        return false;
    *slash = '\0';
    return snprintf(buf, cap, "%s", real) < (int)cap;
}

typedef struct path_list {
    char **dirs;
    size_t count, cap;
} path_list;

static bool path_push(path_list *pl, const char *dir, size_t len)
{
    if (pl->count + 2 > pl->cap) {
        size_t cap = pl->cap ? pl->cap * 2 : 8;
        char **d = tf__calloc(cap, sizeof *d);
        if (!d)
            return false;
        if (pl->count)
            memcpy(d, pl->dirs, pl->count * sizeof *d);
        tf__free(pl->dirs);
        pl->dirs = d;
        pl->cap = cap;
    }
    char *s = tf__alloc(len + 1);
    if (!s)
        return false;
    memcpy(s, dir, len);
    s[len] = '\0';
    pl->dirs[pl->count++] = s;
    pl->dirs[pl->count] = NULL;
    return true;
}

TF_API void tf_plugin_path_free(char **dirs)
{
    if (!dirs)
        return;
    for (char **d = dirs; *d; d++)
        tf__free(*d);
    tf__free(dirs);
}

/* Directories and files skipped on the way, with why; may be NULL. */
typedef struct skip_list {
    tf_plugin_path_skip *items;
    size_t count, cap;
    bool oom;
} skip_list;

static void skip_push(skip_list *sk, const char *path, const char *reason)
{
    if (!sk || sk->oom)
        return;
    if (sk->count == sk->cap) {
        size_t cap = sk->cap ? sk->cap * 2 : 8;
        tf_plugin_path_skip *n = tf__calloc(cap, sizeof *n);
        if (!n) {
            sk->oom = true;
            return;
        }
        if (sk->count)
            memcpy(n, sk->items, sk->count * sizeof *n);
        tf__free(sk->items);
        sk->items = n;
        sk->cap = cap;
    }
    tf_plugin_path_skip *e = &sk->items[sk->count++];
    e->path = tf__strdup(path);
    e->reason = tf__strdup(reason);
    sk->oom = !e->path || !e->reason;
}

/* Why `st` (a plugin folder or file) may not be trusted: another user owns
   it, or someone other than its owner may write it. */
static bool leaf_unsafe(const struct stat *st, char *why, size_t cap)
{
    if (st->st_uid != 0 && st->st_uid != geteuid()) {
        snprintf(why, cap, "owned by uid %u, neither the user nor root", (unsigned)st->st_uid);
        return true;
    }
    if (st->st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(why, cap, "writable by %s (mode %03o)",
                 (st->st_mode & S_IWOTH) ? "others" : "its group", (unsigned)(st->st_mode & 0777));
        return true;
    }
    return false;
}

/*
 * Whoever may rename or replace the entries of a folder controls what every
 * path through it leads to. A folder on the way is trusted when the user or
 * root owns it and only its owner may write it, or when it has the sticky
 * bit (like /tmp): others may then add entries there, but not rename or
 * delete the user's.
 */
static bool ancestor_unsafe(const char *dir, char *why, size_t cap)
{
    struct stat st;
    if (stat(dir, &st) != 0)
        return false; /* gone meanwhile: the check of the path itself decides */
    if (st.st_uid != 0 && st.st_uid != geteuid()) {
        snprintf(why, cap, "the folder %s on its way is owned by uid %u, neither the user nor root",
                 dir, (unsigned)st.st_uid);
        return true;
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
        snprintf(why, cap, "the folder %s on its way is writable by %s and not sticky (mode %04o)",
                 dir, (st.st_mode & S_IWOTH) ? "others" : "its group",
                 (unsigned)(st.st_mode & 07777));
        return true;
    }
    return false;
}

/* Whether `dir` is `trusted` or a folder above it (trusted may be NULL). */
static bool at_or_above(const char *dir, const char *trusted)
{
    size_t n = strlen(dir);
    if (!trusted || strncmp(dir, trusted, n) != 0)
        return false;
    return trusted[n] == '\0' || trusted[n] == '/' || (n > 0 && dir[n - 1] == '/');
}

/*
 * Every folder above the absolute `path`, from "/" down, by ancestor_unsafe,
 * except `trusted` (NULL for none) and the folders above it: those were
 * judged already.
 */
static bool ancestors_unsafe(const char *path, const char *trusted, char *why, size_t cap)
{
    char dir[PATH_MAX];
    size_t len = strlen(path);
    if (path[0] != '/' || len >= sizeof dir)
        return false;
    memcpy(dir, path, len + 1);
    while (len > 1 && dir[len - 1] == '/') /* "/a/b/" is /a/b: above it are / and /a */
        dir[--len] = '\0';
    if (len > 1 && !at_or_above("/", trusted) && ancestor_unsafe("/", why, cap))
        return true;
    for (size_t i = 1; i < len; i++) {
        if (dir[i] != '/' || dir[i - 1] == '/')
            continue;
        dir[i] = '\0';
        bool bad = !at_or_above(dir, trusted) && ancestor_unsafe(dir, why, cap);
        dir[i] = '/';
        if (bad)
            return true;
    }
    return false;
}

/*
 * Why `path` (an absolute directory or plugin file) must not be trusted,
 * into `why` (cap bytes; WHY_MAX holds any reason): it is owned by someone
 * other than the user and root, or writable by group or others; or a folder
 * above it, as written or as resolved through symbolic links, is owned by
 * someone else or writable by group or others without the sticky bit.
 * `trusted` (NULL for none) and the folders above it, as written and as
 * resolved, are left out: they were judged already. False when it is safe
 * or does not exist.
 */
static bool path_unsafe_below(const char *path, const char *trusted, char *why, size_t cap)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return false;
    if (leaf_unsafe(&st, why, cap))
        return true;
    /* The folders of the path as written (a symbolic link on the way is an
       entry of one of them) and of the path it resolves to (the folders the
       links lead through). */
    if (ancestors_unsafe(path, trusted, why, cap))
        return true;
    char real[PATH_MAX], real_trusted[PATH_MAX];
    if (!realpath(path, real) || strcmp(real, path) == 0)
        return false;
    if (trusted && !realpath(trusted, real_trusted))
        trusted = NULL;
    return ancestors_unsafe(real, trusted ? real_trusted : NULL, why, cap);
}

/*
 * Logs a skip of the search path as a warning, once per process for each
 * path and reason: every search builds the path anew (a check-engine run
 * loads two engines, `tenferro info` lists and scans), and the same folder
 * skipped for the same reason is news only the first time. Up to
 * WARNED_MAX different skips are remembered; past that they are logged
 * again. Guarded by g_warned_lock.
 */
#define WARNED_MAX 64
static pthread_mutex_t g_warned_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_warned[WARNED_MAX];
static size_t g_n_warned;

static void warn_skip_once(const char *what, const char *path, const char *reason)
{
    /* each string with its NUL: "ab"+"c" differs from "a"+"bc" */
    uint64_t h = tf__hash_bytes(TF_HASH_SEED, path, strlen(path) + 1);
    h = tf__hash_bytes(h, reason, strlen(reason) + 1);
    bool seen = false;
    pthread_mutex_lock(&g_warned_lock);
    for (size_t i = 0; i < g_n_warned && !seen; i++)
        seen = g_warned[i] == h;
    if (!seen && g_n_warned < WARNED_MAX)
        g_warned[g_n_warned++] = h;
    pthread_mutex_unlock(&g_warned_lock);
    if (!seen)
        tf__log(TF_LOG_WARN, "plugin search path: skipped %s%s: %s", what, path, reason);
}

/*
 * Adds one directory entry of a path list, unless it is relative or unsafe
 * (judged below `trusted`, see push_builtin_dirs; NULL for all of it).
 */
static bool push_checked(path_list *pl, skip_list *sk, const char *dir, size_t len,
                         const char *origin, const char *trusted)
{
    char d[PATH_MAX], why[WHY_MAX], reason[REASON_MAX];
    if (len == 0 || len >= sizeof d)
        return true;
    memcpy(d, dir, len);
    d[len] = '\0';
    if (d[0] != '/')
        snprintf(reason, sizeof reason,
                 "relative directory (from %s); only absolute ones are searched", origin);
    else if (path_unsafe_below(d, trusted, why, sizeof why))
        snprintf(reason, sizeof reason, "unsafe directory (from %s): %s", origin, why);
    else
        return path_push(pl, d, len);
    /* A search warns through the log callback (once, warn_skip_once);
       with sk the caller reports the skips itself: tf_plugin_path_skipped
       returns them, tf__plugin_resolve names them in its error. */
    if (sk)
        skip_push(sk, d, reason);
    else
        warn_skip_once("", d, reason);
    return true;
}

static bool push_list(path_list *pl, skip_list *sk, const char *list, const char *origin)
{
    while (list && *list) {
        const char *colon = strchr(list, ':');
        size_t len = colon ? (size_t)(colon - list) : strlen(list);
        if (!push_checked(pl, sk, list, len, origin, NULL))
            return false;
        list = colon ? colon + 1 : NULL;
    }
    return true;
}

/*
 * The build tree's plugin folder counts only for the library of that build
 * tree; an installed copy finds its plugins relative to itself.
 *
 * Both are judged only below the library's own folder: whoever controls the
 * folders above it could have replaced the library itself, the code running
 * now, so refusing its plugins for them would protect nothing. It keeps a
 * build tree working in a checkout another user owns (a container running
 * as root over a mounted checkout); the plugin folder itself, and anything
 * between it and the shared folder, is still checked in full.
 */
static bool push_builtin_dirs(path_list *pl, skip_list *sk)
{
    char libdir[PATH_MAX], dir[PATH_MAX + 32];
    if (!library_dir(libdir, sizeof libdir))
        return true;
    char built_lib[PATH_MAX];
    if (realpath(TF_BUILD_LIB_DIR, built_lib) && strcmp(built_lib, libdir) == 0 &&
        is_dir(TF_PLUGIN_BUILD_DIR) &&
        !push_checked(pl, sk, TF_PLUGIN_BUILD_DIR, strlen(TF_PLUGIN_BUILD_DIR), "the build tree",
                      libdir))
        return false;
    int n = snprintf(dir, sizeof dir, "%s/%s", libdir, TF_PLUGIN_INSTALL_SUBDIR);
    if (n > 0 && (size_t)n < sizeof dir && is_dir(dir) &&
        !push_checked(pl, sk, dir, (size_t)n, "the library's folder", libdir))
        return false;
    return true;
}

/*
 * The search path: TENFERRO_PLUGIN_PATH, the config file's, the built-in
 * folders. `cfg_path` is the [plugins] path of a configuration the caller
 * holds (tf_config_open_engine: "" for none); NULL reads the file in use
 * (tf__config_plugin_path).
 */
static bool build_path(path_list *pl, skip_list *sk, const char *cfg_path)
{
    if (!path_push(pl, "", 0)) /* makes the array exist even when empty */
        return false;
    tf__free(pl->dirs[0]);
    pl->count = 0;
    pl->dirs[0] = NULL;
    char *cfg = NULL;
    if (!cfg_path && tf__config_plugin_path(&cfg) != TF_OK)
        return false; /* out of memory: never search without the file's directories */
    bool ok = push_list(pl, sk, getenv("TENFERRO_PLUGIN_PATH"), "TENFERRO_PLUGIN_PATH") &&
              push_list(pl, sk, cfg_path ? cfg_path : cfg, "the configuration file") &&
              push_builtin_dirs(pl, sk);
    tf__free(cfg);
    return ok;
}

TF_API tf_status tf_plugin_path_get(char ***dirs, size_t *count)
{
    if (!dirs || !count)
        return tf__error(TF_ERR_VALIDATION, "plugin_path_get", dirs ? "count" : "dirs",
                         "plugin_path_get: NULL out-parameter");
    path_list pl = {0};
    if (!build_path(&pl, NULL, NULL)) {
        tf_plugin_path_free(pl.dirs);
        return tf__error(TF_ERR_OUT_OF_MEMORY, "plugin_path_get", NULL, "out of memory");
    }
    *dirs = pl.dirs;
    *count = pl.count;
    return TF_OK;
}

TF_API void tf_plugin_path_skipped_free(tf_plugin_path_skip *skipped, size_t count)
{
    for (size_t i = 0; skipped && i < count; i++) {
        tf__free(skipped[i].path);
        tf__free(skipped[i].reason);
    }
    tf__free(skipped);
}

static bool plugin_file_name(const char *name);

/* Unsafe plugin files (tenferro-*.so) of a searched directory. */
static void skip_unsafe_files(skip_list *sk, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        char path[PATH_MAX], why[WHY_MAX], reason[REASON_MAX];
        int n = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (!plugin_file_name(e->d_name) || n <= 0 || (size_t)n >= sizeof path ||
            !path_unsafe_below(path, dir, why, sizeof why))
            continue;
        snprintf(reason, sizeof reason, "unsafe plugin file: %s", why);
        skip_push(sk, path, reason);
    }
    closedir(d);
}

TF_API tf_status tf_plugin_path_skipped(tf_plugin_path_skip **skipped, size_t *count)
{
    if (!skipped || !count)
        return tf__error(TF_ERR_VALIDATION, "plugin_path_skipped", skipped ? "count" : "skipped",
                         "plugin_path_skipped: NULL out-parameter");
    path_list pl = {0};
    skip_list sk = {0};
    bool ok = build_path(&pl, &sk, NULL);
    for (size_t i = 0; ok && i < pl.count; i++)
        skip_unsafe_files(&sk, pl.dirs[i]);
    tf_plugin_path_free(pl.dirs);
    if (!ok || sk.oom) {
        tf_plugin_path_skipped_free(sk.items, sk.count);
        return tf__error(TF_ERR_OUT_OF_MEMORY, "plugin_path_skipped", NULL, "out of memory");
    }
    *skipped = sk.items;
    *count = sk.count;
    return TF_OK;
}

/* ---- resolving a name ---- */

/*
 * The folders of the search path skipped on the way (sk) into `out`, as
 * "; skipped DIR: REASON" each, and logged as warnings (once each).
 */
static void skips_text(const skip_list *sk, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < sk->count; i++) {
        warn_skip_once("", sk->items[i].path, sk->items[i].reason);
        if (used < cap)
            used += (size_t)snprintf(out + used, cap - used, "; skipped %s: %s", sk->items[i].path,
                                     sk->items[i].reason);
    }
}

tf_status tf__plugin_resolve(const char *op, const char *prefix, const char *kind, const char *name,
                             const char *cfg_path, char *path)
{
    if (strchr(name, '/')) {
        if (!realpath(name, path))
            return tf__error(TF_ERR_PLUGIN_NOT_FOUND, op, "name", "%s file '%s' not found: %s",
                             kind, name, strerror(errno));
        return TF_OK;
    }
    path_list pl = {0};
    skip_list sk = {0};
    if (!build_path(&pl, &sk, cfg_path)) {
        tf_plugin_path_free(pl.dirs);
        tf_plugin_path_skipped_free(sk.items, sk.count);
        return tf__error(TF_ERR_OUT_OF_MEMORY, op, NULL, "out of memory");
    }
    char skipped[1024];
    skips_text(&sk, skipped, sizeof skipped); /* sk.oom: fewer reasons, the search goes on */
    tf_plugin_path_skipped_free(sk.items, sk.count);
    char tried[2048] = "";
    size_t used = 0;
    for (size_t i = 0; i < pl.count; i++) {
        char cand[PATH_MAX];
        int n = snprintf(cand, sizeof cand, "%s/%s%s%s", pl.dirs[i], prefix, name,
                         TF_PLUGIN_FILE_SUFFIX);
        char why[WHY_MAX];
        if (n > 0 && (size_t)n < sizeof cand && realpath(cand, path)) {
            /* cand, not path: the checks cover the folders of both, those
               of its directory (judged when the search path was made) aside */
            if (!path_unsafe_below(cand, pl.dirs[i], why, sizeof why)) {
                tf_plugin_path_free(pl.dirs);
                return TF_OK;
            }
            warn_skip_once("unsafe ", cand, why);
            if (used < sizeof tried)
                used += (size_t)snprintf(tried + used, sizeof tried - used,
                                         "%s(skipped unsafe %s: %s)", i ? ":" : "", cand, why);
            continue;
        }
        if (used < sizeof tried)
            used += (size_t)snprintf(tried + used, sizeof tried - used, "%s%s", i ? ":" : "",
                                     pl.dirs[i]);
    }
    tf_plugin_path_free(pl.dirs);
    return tf__error(TF_ERR_PLUGIN_NOT_FOUND, op, "name",
                     "no %s named '%s' (file %s%s%s) on the plugin search path '%s'%s", kind, name,
                     prefix, name, TF_PLUGIN_FILE_SUFFIX, tried, skipped);
}

/* ---- scanning ---- */

static bool name_matches(const char *name, const char *prefix)
{
    size_t n = strlen(name), p = strlen(prefix), s = strlen(TF_PLUGIN_FILE_SUFFIX);
    return n > p + s && strncmp(name, prefix, p) == 0 &&
           strcmp(name + n - s, TF_PLUGIN_FILE_SUFFIX) == 0;
}

/* Any plugin or extension file: tenferro-*.so. */
static bool plugin_file_name(const char *name)
{
    return name_matches(name, "tenferro-");
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends the files of one directory named prefix*.so, in name order. */
static bool scan_dir(path_list *files, const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    if (!d)
        return true; /* an unreadable directory holds no candidates */
    path_list names = {0};
    bool ok = true;
    struct dirent *e;
    while (ok && (e = readdir(d))) {
        char path[PATH_MAX], why[WHY_MAX];
        int n = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (!name_matches(e->d_name, prefix) || n <= 0 || (size_t)n >= sizeof path)
            continue;
        if (path_unsafe_below(path, dir, why, sizeof why)) /* listed by path_skipped */
            warn_skip_once("unsafe ", path, why);
        else
            ok = path_push(&names, e->d_name, strlen(e->d_name));
    }
    closedir(d);
    if (ok && names.count)
        qsort(names.dirs, names.count, sizeof *names.dirs, cmp_str);
    for (size_t i = 0; ok && i < names.count; i++) {
        char path[PATH_MAX];
        int n = snprintf(path, sizeof path, "%s/%s", dir, names.dirs[i]);
        ok = n > 0 && (size_t)n < sizeof path && path_push(files, path, (size_t)n);
    }
    tf_plugin_path_free(names.dirs);
    return ok;
}

tf_status tf__plugin_scan_files(const char *op, const char *prefix, char ***files, size_t *count)
{
    char **dirs;
    size_t ndirs;
    tf_status st = tf_plugin_path_get(&dirs, &ndirs);
    if (st)
        return st;
    path_list fl = {0};
    bool ok = path_push(&fl, "", 0); /* makes the array exist even when empty */
    if (ok) {
        tf__free(fl.dirs[0]);
        fl.count = 0;
        fl.dirs[0] = NULL;
    }
    for (size_t i = 0; ok && i < ndirs; i++)
        ok = scan_dir(&fl, dirs[i], prefix);
    tf_plugin_path_free(dirs);
    if (!ok) {
        tf_plugin_path_free(fl.dirs);
        return tf__error(TF_ERR_OUT_OF_MEMORY, op, NULL, "out of memory");
    }
    *files = fl.dirs;
    *count = fl.count;
    return TF_OK;
}
