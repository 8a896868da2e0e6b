/*
 * train_util.c - the per-thread error slot of libtenferro-train (train.h)
 * and its host memory (through the process's allocator hook, system.h, so
 * that tests can count allocations and make one fail).
 *
 * libtenferro's public API lets an application read the core's error slot
 * but not write it, so this library keeps a slot of its own with the same
 * lifetime rules: overwritten by the next failure on the thread, reset by
 * tf_train_error_clear.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "train_internal.h"

#define TT_MESSAGE_MAX 1024
#define TT_ARGUMENT_MAX 64

typedef struct tt_slot {
    tf_status status;
    char message[TT_MESSAGE_MAX];
    char argument[TT_ARGUMENT_MAX];
} tt_slot;

static _Thread_local tt_slot t_slot;

static void set_argument(const char *arg)
{
    snprintf(t_slot.argument, sizeof t_slot.argument, "%s", arg ? arg : "");
}

tf_status tt_fail(tf_status st, const char *arg, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t_slot.message, sizeof t_slot.message, fmt, ap);
    va_end(ap);
    t_slot.status = st;
    set_argument(arg);
    return st;
}

tf_status tt_fail_core(tf_status st, const char *fmt, ...)
{
    char head[TT_MESSAGE_MAX / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    const char *msg = tf_error_message(), *cause = tf_error_cause();
    snprintf(t_slot.message, sizeof t_slot.message, "%s: %s%s%s", head,
             msg[0] ? msg : tf_status_message(st), cause[0] ? ": " : "", cause);
    t_slot.status = st;
    set_argument(tf_error_argument());
    return st;
}

tf_status tt_check(tf_status st, const char *what)
{
    return st ? tt_fail_core(st, "%s", what) : TF_OK;
}

TF_TRAIN_API const char *tf_train_error_message(void)
{
    return t_slot.message;
}

TF_TRAIN_API const char *tf_train_error_argument(void)
{
    return t_slot.argument;
}

TF_TRAIN_API tf_status tf_train_error_status(void)
{
    return t_slot.status;
}

TF_TRAIN_API void tf_train_error_clear(void)
{
    memset(&t_slot, 0, sizeof t_slot);
}

/* ---- memory ---- */

void *tt_alloc(size_t size)
{
    tf_allocator a;
    tf_allocator_get(&a);
    return a.alloc(a.user, size ? size : 1, 0);
}

void *tt_calloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    size_t bytes = n * size;
    void *p = tt_alloc(bytes);
    if (p)
        memset(p, 0, bytes ? bytes : 1);
    return p;
}

void tt_free(void *p)
{
    if (!p)
        return;
    tf_allocator a;
    tf_allocator_get(&a);
    a.free(a.user, p);
}

int tt_grow(void **array, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 1;
    size_t next = *cap ? 2 * *cap : 8;
    void *bigger = tt_calloc(next, size);
    if (!bigger)
        return 0;
    if (n)
        memcpy(bigger, *array, n * size);
    tt_free(*array);
    *array = bigger;
    *cap = next;
    return 1;
}
