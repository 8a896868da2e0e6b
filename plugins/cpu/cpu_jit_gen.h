/*
 * cpu_jit_gen.h - the hot-program compiler's code generator (cpu_jit_gen.c),
 * which cpu_jit.c's table and compiler call.
 */
#ifndef TF_CPU_JIT_GEN_H
#define TF_CPU_JIT_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "cpu_fused.h"

#define JIT_KEY_WORDS 160 /* a key's words, at most (see tf__cpu_jit_key) */
/* The calling convention of a compiled program: tfjit_run's parameters, the order of
   p (outputs, then inputs), rows[k] the row of step k. Named in every generated file's
   first line, so that a stored program (cpu_jit_store.c) made under another is never
   loaded: bump it with any change to them. */
#define JIT_CALL_VERSION 1

/* A generated source: p[0 .. len) of cap bytes; overflow once a write did not fit. */
typedef struct cpu_jit_src {
    char *p;
    size_t len, cap;
    int overflow;
} cpu_jit_src;

/* Whether the compiler covers the prepared program at all. */
int tf__cpu_jit_covers(const fused_prog *fp);
/* The key of a prepared program (dtype, steps, where each register lives, in place or
   not) into key[0 .. n); returns n (< JIT_KEY_WORDS). */
int tf__cpu_jit_key(const fused_prog *fp, int32_t *key);
uint64_t tf__cpu_jit_key_hash(const int32_t *key, int n);

/* The compiler's fixed arguments (before the files and the instruction-set flags), and
   the instruction-set flags this process sees (cpu_jit.c's comment): NULL-terminated. */
extern const char *const tf__cpu_jit_cc_args[];
const char *const *tf__cpu_jit_isa_flags(void);
/* The flags that compiling steps of cpu_vmath.c's rows inline needs (its OpenMP simd
   pragmas, no errno; glibc's -lm, which the compiler always gets, brings libmvec as
   needed), where they are so compiled (cpu_jit_gen.c, vmath_inline); else none.
   NULL-terminated. */
const char *const *tf__cpu_jit_vmath_flags(void);

/*
 * fp's whole source into *b (allocated; the caller frees b->p): a first line naming
 * the calling convention and the compiler's command cc with its arguments (so that
 * they are part of what a stored program is matched against), cpu_ops.h, the
 * functions. 0, or 1 with *err filled (no memory; a source too long).
 */
int tf__cpu_jit_source(const char *cc, const fused_prog *fp, cpu_jit_src *b, cpu_err *err);
/* The file the compiler gets: the source, then the source again as the string
   tfjit_source, by which a stored program is recognised (cpu_jit_store.c). Allocated
   (the caller frees it), its length in *len; NULL without memory. */
char *tf__cpu_jit_with_own_text(const cpu_jit_src *b, size_t *len);
/* The name a program is stored under: the FNV-1a hash of its source (the file is
   recognised by the whole source, the name only finds it). */
void tf__cpu_jit_store_name(const cpu_jit_src *b, char name[32]);

#endif /* TF_CPU_JIT_GEN_H */
