/*
 * cpu_jit_store.h - the hot-program compiler's folder of compiled programs,
 * kept between processes (cpu_jit_store.c).
 */
#ifndef TF_CPU_JIT_STORE_H
#define TF_CPU_JIT_STORE_H

#include <stddef.h>

#include "cpu_internal.h"

enum {
    JIT_STORE_UNCHECKED = 0,
    JIT_STORE_USABLE = 1,
    JIT_STORE_UNUSABLE = -1
};

typedef struct cpu_jit_store {
    char dir[400]; /* "" when there is none (jit_cache=off, or no home folder) */
    int state;     /* JIT_STORE_*: made and checked at first use, under the jit table's lock */
} cpu_jit_store;

/*
 * Sets s up from the option jit_cache: NULL or "auto", the user's cache folder
 * ($XDG_CACHE_HOME/tenferro/jit, else $HOME/.cache/tenferro/jit; none when
 * neither is an absolute path), made and checked at first use and left unused,
 * without an error, if it cannot be made private; "off", none; an absolute
 * path, that folder, made and checked now: TF_ERR_VALIDATION with the reason
 * when it cannot be (not absolute, too long, not a folder, not this user's or
 * open to others). Returns 0 or 1 (err filled).
 */
int tf__cpu_jit_store_init(cpu_jit_store *s, const char *opt, cpu_err *err);

/* Whether s's folder is there to use (made and checked the first time). */
int tf__cpu_jit_store_usable(cpu_jit_store *s);

/*
 * The program `name` (a file name in the folder) loaded with dlopen, or NULL:
 * when there is no such file, it is not a regular file of this user that only
 * they can write, it does not load, or its tfjit_source string is not exactly
 * src (the full generated source, which names the compiler, its flags and the
 * calling convention: a file made from anything else is never used).
 */
void *tf__cpu_jit_store_load(const cpu_jit_store *s, const char *name, const char *src);

#endif /* TF_CPU_JIT_STORE_H */
