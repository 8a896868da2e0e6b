/*
 * tenferro/system.h - process-wide settings: the allocator hook and logging.
 *
 * Like SQLite's sqlite3_config, these settings are global: tensors can be
 * created without any handle (tf_tensor_from_host), so their memory cannot
 * hang off one. Every host allocation of the library, and of every plugin
 * (through tf_host_api.alloc), goes through the allocator set here, which is
 * what lets tests count allocations and make the Nth one fail.
 */
#ifndef TENFERRO_SYSTEM_H
#define TENFERRO_SYSTEM_H

#include <stddef.h>

#include "engine_abi.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * An allocator. alloc returns memory aligned to `align` (a power of two; 0
 * means alignof(max_align_t)) or NULL; free accepts NULL. Both must be
 * thread-safe. The library never calls alloc with size 0.
 */
typedef struct tf_allocator {
    void *(*alloc)(void *user, size_t size, size_t align);
    void (*free)(void *user, void *ptr);
    void *user;
} tf_allocator;

/*
 * Installs `allocator` (copied) for every later allocation, or restores the
 * default (aligned malloc) when it is NULL or either of its functions is
 * NULL. Never fails. Call it only while the library holds no
 * memory (before creating anything, or after releasing everything): memory is
 * always freed through the allocator that allocated it, so switching with
 * live objects is an error the library cannot detect. Not thread-safe with
 * respect to any other call.
 */
void tf_allocator_set(const tf_allocator *allocator);

/* The allocator in effect (copied into *out; NULL out is a no-op). Not
   thread-safe with respect to tf_allocator_set. */
void tf_allocator_get(tf_allocator *out);

/* A log sink: level (tf_log_level), a message borrowed for the call. */
typedef void (*tf_log_fn)(void *user, tf_log_level level, const char *message);

/*
 * Sets the log callback (NULL: silent, the default) and the most verbose
 * level passed to it; `user` is passed back to every call and is the
 * caller's. The library and its plugins never print otherwise. Never
 * fails. Thread-safe; the callback may be called from any thread, several
 * at once, so it must be thread-safe itself.
 */
void tf_log_set(tf_log_fn fn, void *user, tf_log_level max_level);

#ifdef __cplusplus
}
#endif
#endif /* TENFERRO_SYSTEM_H */
