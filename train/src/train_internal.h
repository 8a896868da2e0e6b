/*
 * train_internal.h - shared by the files of libtenferro-train: the library's
 * per-thread error slot (train.h) and the helpers that fill it.
 *
 * The library uses only the public headers of libtenferro (tenferro/...).
 */
#ifndef TF_TRAIN_INTERNAL_H
#define TF_TRAIN_INTERNAL_H

#include <stddef.h>

#include <tenferro/tenferro.h>
#include <tenferro/train.h>

#if defined(__GNUC__) || defined(__clang__)
#define TT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TT_PRINTF(f, a)
#endif

/*
 * Records a failure of this library: status, the refused argument (NULL:
 * none) and a message. Returns st, for `return tt_fail(...)`.
 */
tf_status tt_fail(tf_status st, const char *arg, const char *fmt, ...) TT_PRINTF(3, 4);

/*
 * Records the failure `st` of a libtenferro call this library made: the
 * message is what fmt says, then the core's message and cause; the argument
 * is the core's. Returns st.
 */
tf_status tt_fail_core(tf_status st, const char *fmt, ...) TT_PRINTF(2, 3);

/* Host memory through the process's allocator hook (system.h), like the core's. */
void *tt_alloc(size_t size);
void *tt_calloc(size_t n, size_t size); /* zeroed; NULL on overflow */
void tt_free(void *p);                  /* NULL is a no-op */
/* Grows *array (of *cap elements of `size` bytes, *n in use) to hold one more. */
int tt_grow(void **array, size_t *cap, size_t n, size_t size);

/* Passes st through, recording it as tt_fail_core(st, "%s", what) when it is a failure. */
tf_status tt_check(tf_status st, const char *what);

#endif /* TF_TRAIN_INTERNAL_H */
