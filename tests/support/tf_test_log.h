/*
 * tf_test_log.h - captures the library's log lines (tf_log_set) for tests.
 *
 * Lines are kept in order in a fixed buffer (older lines are dropped when it
 * is full). Thread-safe: the callback may run on any thread.
 */
#ifndef TF_TEST_LOG_H
#define TF_TEST_LOG_H

#include <stddef.h>

#include <tenferro/system.h>

/* Starts capturing lines up to max_level; forgets earlier lines. */
void tf_test_log_start(tf_log_level max_level);
/* Stops capturing (the library goes silent again). */
void tf_test_log_stop(void);
/* Forgets the captured lines. */
void tf_test_log_clear(void);
/* Number of captured lines at `level` (or any level if level < 0) containing `needle`. */
size_t tf_test_log_count(int level, const char *needle);
/* Prints the captured lines to stderr (for failure diagnostics). */
void tf_test_log_dump(void);

#endif /* TF_TEST_LOG_H */
