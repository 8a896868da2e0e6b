/*
 * tf_test_run.h - running a command from a test (the CLI tests).
 */
#ifndef TF_TEST_RUN_H
#define TF_TEST_RUN_H

/*
 * Runs `cmd` through the shell and returns its exit status (-1 if it did not
 * exit normally), with everything it wrote on stdout in *out (NUL-terminated,
 * malloc'd: the caller frees it). Fails the current cmocka test if the command
 * cannot be started.
 */
int tf_test_run(const char *cmd, char **out);

#endif /* TF_TEST_RUN_H */
