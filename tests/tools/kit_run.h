/*
 * kit_run.h - running `tenferro check-engine` from a test and reading its
 * report (test_check_engine.c, test_check_engine_iso.c).
 */
#ifndef TF_KIT_RUN_H
#define TF_KIT_RUN_H

/* The kit, run without the caller's plugin search path. */
#define KIT "env -u TENFERRO_PLUGIN_PATH " TF_CLI_PATH " check-engine "
/* The fixture engine with one selectable defect (tests/plugins/fixtures/wrong.c). */
#define WRONG TF_FIXTURE_DIR "/tenferro-engine-wrong.so"
/* The fixture engine that fails on demand, here its reduced FUSED calls
   (tests/plugins/fixtures/faulty.c, option reduce). */
#define FAULTY TF_FIXTURE_DIR "/tenferro-engine-faulty.so"

/* Runs `cmd` (stderr joined to stdout), returns its exit status and output in *out (kept
   until the next run or kit_teardown, so that a failing assertion leaks nothing). */
int kit_run(const char *cmd, char **out);
/* Fails the test unless `text` is in out. */
void kit_expect(const char *out, const char *text);
/* Fails the test unless a failure line of the report starts with `start`. */
void kit_expect_failure(const char *out, const char *start);
/* The table row starting with `row`, up to its end of line (static buffer); fails the
   test when there is none. */
const char *kit_row(const char *out, const char *row);
/* A cmocka group teardown: frees the last output. */
int kit_teardown(void **state);

#endif /* TF_KIT_RUN_H */
