/*
 * json_check.h - a strict JSON well-formedness checker for tests of the
 * command's --json output (RFC 8259 grammar; no values are built).
 */
#ifndef TF_JSON_CHECK_H
#define TF_JSON_CHECK_H

/* Non-zero if `text` is exactly one well-formed JSON value (plus whitespace). */
int json_check(const char *text);

#endif
