/*
 * tf_json.h - a small, strict JSON reader for tests (RFC 8259).
 *
 * tf_json_parse builds a DOM: objects (keys in file order), arrays,
 * numbers (double, via strtod), strings (escapes decoded, \uXXXX with
 * surrogate pairs written as UTF-8), true/false and null. It is strict:
 * no comments, trailing commas, leading zeros, NaN/Infinity, unescaped
 * control characters, lone surrogates, duplicate keys or trailing content;
 * numbers that overflow a double are rejected. On error it returns NULL
 * and writes "line L, column C: what was wrong" into err.
 *
 * Ownership: the DOM returned by tf_json_parse / tf_json_parse_file
 * belongs to the caller (free it with tf_json_free); every pointer inside
 * it is borrowed from the DOM. Single-threaded use per DOM; no globals.
 */
#ifndef TF_JSON_H
#define TF_JSON_H

#include <stddef.h>

typedef enum tf_json_type {
    TF_JSON_NULL = 0,
    TF_JSON_BOOL,
    TF_JSON_NUMBER,
    TF_JSON_STRING,
    TF_JSON_ARRAY,
    TF_JSON_OBJECT
} tf_json_type;

typedef struct tf_json tf_json;

struct tf_json {
    tf_json_type type;
    int boolean;    /* TF_JSON_BOOL: 0 or 1 */
    double number;  /* TF_JSON_NUMBER */
    char *string;   /* TF_JSON_STRING: NUL-terminated (may hold \u0000: see length) */
    size_t length;  /* TF_JSON_STRING: bytes, without the terminator */
    size_t count;   /* TF_JSON_ARRAY / TF_JSON_OBJECT: number of items / members */
    tf_json *items; /* count values (array items, object member values) */
    char **keys;    /* TF_JSON_OBJECT: count NUL-terminated keys */
};

/* Parses `len` bytes of `text` (need not be NUL-terminated). NULL on error,
   with a message in err (err may be NULL; err_size includes the NUL). */
tf_json *tf_json_parse(const char *text, size_t len, char *err, size_t err_size);

/* Reads and parses a whole file; errors start with the path. */
tf_json *tf_json_parse_file(const char *path, char *err, size_t err_size);

/* Frees a DOM returned by tf_json_parse*. NULL is a no-op. */
void tf_json_free(tf_json *root);

/* The member `key` of an object; NULL when v is not an object or lacks it. */
const tf_json *tf_json_get(const tf_json *v, const char *key);

/* "null", "bool", "number", "string", "array", "object". */
const char *tf_json_type_name(tf_json_type type);

#endif /* TF_JSON_H */
