/*
 * cpu_jit_store.c - compiled programs kept between processes.
 *
 * Without it every process compiles its hot programs again: tens of
 * milliseconds each, on the calling thread, inside the first steps of a
 * training loop (docs/performance.md). With it a program is compiled once per
 * user and machine: the compiler (cpu_jit.c) builds into a private folder
 * inside this one and renames the object to <hash of its source>.so, one
 * atomic step, so that a reader sees a whole file or none; a later process
 * that prepares the same program loads that file at the program's first run.
 *
 * What makes a stored file safe to load:
 * - the folder is this user's and open to no one else (owner and mode checked
 *   with lstat, so a symbolic link is refused too); a folder that is not is
 *   never used (the option jit_cache=DIR: engine creation fails and says why);
 * - the file is a regular file of this user that only they can write, opened
 *   without following links;
 * - every compiled program carries its own full source as the string
 *   tfjit_source, and a loaded file is used only when that string is exactly
 *   the source this process generated: the source names the compiler, its
 *   flags (the instruction sets this process sees) and the calling
 *   convention, so a hash collision, a file left by another version or made
 *   for another processor, or one cut short is unloaded and compiled afresh.
 * Between the checks and dlopen only this user's own processes could swap a
 * file in a folder only they can write; that is the boundary kept.
 */
#define _POSIX_C_SOURCE 200809L

#include "cpu_jit_store.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Makes every missing folder of path (an absolute path) with mode 0700. */
static int make_folders(const char *path)
{
    char p[sizeof((cpu_jit_store *)0)->dir];
    snprintf(p, sizeof p, "%s", path);
    for (char *c = p + 1;; c++) {
        if (*c == '/' || *c == '\0') {
            const char keep = *c;
            *c = '\0';
            if (mkdir(p, 0700) != 0 && errno != EEXIST) {
                return -1;
            }
            *c = keep;
            if (keep == '\0') {
                return 0;
            }
        }
    }
}

/* NULL when path is a private folder of this user, else why not. */
static const char *not_private(const char *path, struct stat *st)
{
    if (make_folders(path) != 0) {
        return strerror(errno);
    }
    if (lstat(path, st) != 0) {
        return strerror(errno);
    }
    if (!S_ISDIR(st->st_mode)) {
        return "not a folder";
    }
    if (st->st_uid != geteuid()) {
        return "another user's folder";
    }
    if ((st->st_mode & 077) != 0) {
        return "open to group or others (expected mode 0700)";
    }
    return NULL;
}

int tf__cpu_jit_store_init(cpu_jit_store *s, const char *opt, cpu_err *err)
{
    memset(s, 0, sizeof *s);
    s->state = JIT_STORE_UNUSABLE;
    if (opt != NULL && strcmp(opt, "off") == 0) {
        return 0;
    }
    if (opt == NULL || strcmp(opt, "auto") == 0) {
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        int w = -1;
        if (xdg != NULL && xdg[0] == '/') {
            w = snprintf(s->dir, sizeof s->dir, "%s/tenferro/jit", xdg);
        } else if (home != NULL && home[0] == '/') {
            w = snprintf(s->dir, sizeof s->dir, "%s/.cache/tenferro/jit", home);
        }
        if (w < 0 || (size_t)w >= sizeof s->dir) {
            s->dir[0] = '\0'; /* no cache folder to use: compile in every process */
            return 0;
        }
        s->state = JIT_STORE_UNCHECKED;
        return 0;
    }
    if (opt[0] != '/' || strlen(opt) >= sizeof s->dir - 32) {
        return tf__cpu_fail(err, TF_ERR_VALIDATION,
                            "cpu: create: option jit_cache = \"%s\" (expected auto, off or an "
                            "absolute path of at most %zu bytes)",
                            opt, sizeof s->dir - 33);
    }
    snprintf(s->dir, sizeof s->dir, "%s", opt);
    struct stat st;
    const char *why = not_private(s->dir, &st);
    if (why != NULL) {
        return tf__cpu_fail(err, TF_ERR_VALIDATION, "cpu: create: option jit_cache = \"%s\": %s",
                            opt, why);
    }
    s->state = JIT_STORE_USABLE;
    return 0;
}

int tf__cpu_jit_store_usable(cpu_jit_store *s)
{
    if (s->state == JIT_STORE_UNCHECKED) {
        struct stat st;
        s->state = not_private(s->dir, &st) == NULL ? JIT_STORE_USABLE : JIT_STORE_UNUSABLE;
    }
    return s->state == JIT_STORE_USABLE;
}

void *tf__cpu_jit_store_load(const cpu_jit_store *s, const char *name, const char *src)
{
    char path[sizeof s->dir + 64];
    snprintf(path, sizeof path, "%s/%s", s->dir, name);
    const int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        return NULL;
    }
    struct stat st;
    const int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
                   (st.st_mode & 022) == 0;
    close(fd);
    if (!ok) {
        return NULL;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        return NULL;
    }
    const char *text = dlsym(h, "tfjit_source");
    if (text == NULL || strcmp(text, src) != 0) {
        dlclose(h);
        return NULL;
    }
    return h;
}
