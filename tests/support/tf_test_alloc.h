/*
 * tf_test_alloc.h - a counting, fault-injecting allocator for tests.
 *
 * Installed with tf_allocator_set (system.h), it sees every host allocation
 * of the library and of its plugins. It counts live blocks and bytes, checks
 * the library's side of the allocator contract (no size 0, power-of-two
 * alignment honoured, only its own pointers freed) and can make the Nth
 * allocation from now fail, SQLite style. Thread-safe.
 */
#ifndef TF_TEST_ALLOC_H
#define TF_TEST_ALLOC_H

#include <stddef.h>

/* Installs the counting allocator (resets nothing; see tf_test_alloc_reset). */
void tf_test_alloc_install(void);
/* Restores the library's default allocator. */
void tf_test_alloc_uninstall(void);

/* Blocks and bytes allocated and not yet freed. */
size_t tf_test_alloc_live_blocks(void);
size_t tf_test_alloc_live_bytes(void);
/* Allocation requests seen so far (failed ones included). */
size_t tf_test_alloc_calls(void);
/* Contract violations seen so far: size 0, bad alignment, foreign or double free. */
size_t tf_test_alloc_violations(void);

/*
 * Makes the nth allocation request from now fail (1: the next one), and
 * every later one too when `sticky`; n = 0 turns injection off.
 */
void tf_test_alloc_fail_at(size_t n, int sticky);
/* Injected failures since the last tf_test_alloc_fail_at. */
size_t tf_test_alloc_injected(void);

#endif /* TF_TEST_ALLOC_H */
