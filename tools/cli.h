/* cli.h - the subcommands of the tenferro command and their shared helpers. */
#ifndef TF_CLI_H
#define TF_CLI_H

#include <stdio.h>

#include <tenferro/engine.h>

int tf_cli_info(int argc, char **argv);
int tf_cli_demo(int argc, char **argv);
int tf_cli_bench(int argc, char **argv);
int tf_cli_check_engine(int argc, char **argv);
int tf_cli_einsum_path(int argc, char **argv);

/*
 * The engine a subcommand runs on: `name` with `threads` when the user gave
 * --engine, otherwise the configured one (tenferro/config.h; `threads` > 0
 * overrides the file's), saying on stderr which engines were skipped.
 */
tf_status tf_cli_open_engine(const char *name, int threads, tf_engine **out);

/*
 * Parses a whole decimal integer in lo..hi (no sign games, no trailing text,
 * no overflow) into *out; 0 on success, -1 otherwise. Every subcommand's
 * numeric options go through it, so `--threads -3` or `--threads many` is
 * the same usage error everywhere.
 */
int tf_cli_parse_int(const char *text, long lo, long hi, int *out);

/* The range of --threads (as a config file's threads, docs/apps.md). */
#define TF_CLI_MAX_THREADS 1024

/*
 * The engine name a plugin file is found by: <name> of a path whose last
 * component is tenferro-engine-<name>.so, into `name` (cap bytes); 0 when
 * the file is not named so (then name is ""). `tenferro info` and the
 * conformance kit compare it with the descriptor's name.
 */
int tf_cli_engine_file_name(const char *path, char *name, size_t cap);

/* Writes s as a JSON string literal (with quotes) to f. */
void tf_cli_json_string(FILE *f, const char *s);

#endif /* TF_CLI_H */
