/*
 * tf_json.c - the strict JSON reader of tf_json.h: a recursive-descent
 * parser over a byte span that builds the DOM directly. Nesting is bounded
 * (MAX_DEPTH) so hostile input cannot exhaust the stack.
 */
#include "tf_json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 256

typedef struct parser {
    const char *p, *end, *start;
    char *err;
    size_t err_size;
    int failed;
    int depth;
} parser;

/* Records the first error with its line and column. Returns 0 so callers can
   `return fail(...)`. */
static int fail(parser *ps, const char *fmt, ...)
{
    if (ps->failed)
        return 0;
    ps->failed = 1;
    if (!ps->err || ps->err_size == 0)
        return 0;
    size_t line = 1, col = 1;
    for (const char *q = ps->start; q < ps->p && q < ps->end; q++) {
        if (*q == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    int n = snprintf(ps->err, ps->err_size, "line %zu, column %zu: ", line, col);
    if (n < 0 || (size_t)n >= ps->err_size)
        return 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->err + n, ps->err_size - (size_t)n, fmt, ap);
    va_end(ap);
    return 0;
}

static void skip_ws(parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static const char *describe(const parser *ps)
{
    return ps->p >= ps->end ? "end of input" : "unexpected character";
}

/* Frees what a value owns (not the value itself). */
static void clear_value(tf_json *v)
{
    if (v->type == TF_JSON_STRING) {
        free(v->string);
    } else if (v->type == TF_JSON_ARRAY || v->type == TF_JSON_OBJECT) {
        for (size_t i = 0; i < v->count; i++) {
            clear_value(&v->items[i]);
            if (v->keys)
                free(v->keys[i]);
        }
        free(v->items);
        free(v->keys);
    }
    memset(v, 0, sizeof *v);
}

static int parse_value(parser *ps, tf_json *out);

/* ---- literals and numbers ---- */

static int parse_literal(parser *ps, const char *word, tf_json *out)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return fail(ps, "invalid literal (expected '%s')", word);
    ps->p += n;
    if (word[0] == 'n') {
        out->type = TF_JSON_NULL;
    } else {
        out->type = TF_JSON_BOOL;
        out->boolean = word[0] == 't';
    }
    return 1;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Checks the JSON number grammar, then converts the span with strtod. */
static int parse_number(parser *ps, tf_json *out)
{
    const char *q = ps->p;
    if (q < ps->end && *q == '-')
        q++;
    if (q >= ps->end || !is_digit(*q))
        return fail(ps, "invalid number: expected a digit");
    if (*q == '0' && q + 1 < ps->end && is_digit(q[1]))
        return fail(ps, "invalid number: leading zero");
    while (q < ps->end && is_digit(*q))
        q++;
    if (q < ps->end && *q == '.') {
        q++;
        if (q >= ps->end || !is_digit(*q))
            return fail(ps, "invalid number: expected a digit after '.'");
        while (q < ps->end && is_digit(*q))
            q++;
    }
    if (q < ps->end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < ps->end && (*q == '+' || *q == '-'))
            q++;
        if (q >= ps->end || !is_digit(*q))
            return fail(ps, "invalid number: expected a digit in the exponent");
        while (q < ps->end && is_digit(*q))
            q++;
    }
    size_t n = (size_t)(q - ps->p);
    char small[64], *buf = n < sizeof small ? small : malloc(n + 1);
    if (!buf)
        return fail(ps, "out of memory");
    memcpy(buf, ps->p, n);
    buf[n] = '\0';
    errno = 0;
    double d = strtod(buf, NULL);
    int overflow = errno == ERANGE && isinf(d);
    if (buf != small)
        free(buf);
    if (overflow)
        return fail(ps, "number out of the range of a double");
    out->type = TF_JSON_NUMBER;
    out->number = d;
    ps->p = q;
    return 1;
}

/* ---- strings ---- */

typedef struct sbuf {
    char *data;
    size_t len, cap;
} sbuf;

static int sbuf_put(sbuf *b, const char *bytes, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 32;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d)
            return 0;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, bytes, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 1;
}

static int put_utf8(sbuf *b, uint32_t cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return sbuf_put(b, u, n);
}

/* Reads the 4 hex digits after "\u". */
static int read_hex4(parser *ps, uint32_t *cp)
{
    if (ps->end - ps->p < 4)
        return fail(ps, "truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = ps->p[i];
        int d = is_digit(c)              ? c - '0'
                : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                         : -1;
        if (d < 0)
            return fail(ps, "invalid hex digit in \\u escape");
        v = v * 16 + (uint32_t)d;
    }
    ps->p += 4;
    *cp = v;
    return 1;
}

/* A \uXXXX escape (ps->p just after the 'u'), joining surrogate pairs. */
static int parse_unicode(parser *ps, sbuf *b)
{
    uint32_t cp;
    if (!read_hex4(ps, &cp))
        return 0;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return fail(ps, "lone low surrogate in \\u escape");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        uint32_t lo;
        if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u')
            return fail(ps, "high surrogate not followed by a \\u low surrogate");
        ps->p += 2;
        if (!read_hex4(ps, &lo))
            return 0;
        if (lo < 0xDC00 || lo > 0xDFFF)
            return fail(ps, "high surrogate not followed by a low surrogate");
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    return put_utf8(b, cp) ? 1 : fail(ps, "out of memory");
}

static int parse_escape(parser *ps, sbuf *b)
{
    if (ps->p >= ps->end)
        return fail(ps, "unterminated string");
    char c = *ps->p++, r;
    switch (c) {
    case '"': r = '"'; break;
    case '\\': r = '\\'; break;
    case '/': r = '/'; break;
    case 'b': r = '\b'; break;
    case 'f': r = '\f'; break;
    case 'n': r = '\n'; break;
    case 'r': r = '\r'; break;
    case 't': r = '\t'; break;
    case 'u': return parse_unicode(ps, b);
    default: ps->p--; return fail(ps, "invalid escape '\\%c'", c);
    }
    return sbuf_put(b, &r, 1) ? 1 : fail(ps, "out of memory");
}

/* A string (ps->p at the opening quote) into a new NUL-terminated buffer. */
static int parse_string_raw(parser *ps, char **str, size_t *len)
{
    sbuf b = {NULL, 0, 0};
    ps->p++;
    if (!sbuf_put(&b, "", 0))
        return fail(ps, "out of memory");
    for (;;) {
        if (ps->p >= ps->end) {
            free(b.data);
            return fail(ps, "unterminated string");
        }
        const char *q = ps->p;
        while (q < ps->end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20)
            q++;
        if (!sbuf_put(&b, ps->p, (size_t)(q - ps->p))) {
            free(b.data);
            return fail(ps, "out of memory");
        }
        ps->p = q;
        if (q >= ps->end)
            continue;
        if (*q == '"')
            break;
        if ((unsigned char)*q < 0x20) {
            free(b.data);
            return fail(ps, "unescaped control character in string");
        }
        ps->p++;
        if (!parse_escape(ps, &b)) {
            free(b.data);
            return 0;
        }
    }
    ps->p++;
    *str = b.data;
    *len = b.len;
    return 1;
}

static int parse_string(parser *ps, tf_json *out)
{
    if (!parse_string_raw(ps, &out->string, &out->length))
        return 0;
    out->type = TF_JSON_STRING;
    return 1;
}

/* ---- arrays and objects ---- */

/* Grows v->items (and v->keys for objects) to hold one more member. */
static int grow(parser *ps, tf_json *v, size_t *cap)
{
    if (v->count < *cap)
        return 1;
    size_t ncap = *cap ? *cap * 2 : 8;
    tf_json *items = realloc(v->items, ncap * sizeof *items);
    if (!items)
        return fail(ps, "out of memory");
    v->items = items;
    if (v->type == TF_JSON_OBJECT) {
        char **keys = realloc(v->keys, ncap * sizeof *keys);
        if (!keys)
            return fail(ps, "out of memory");
        v->keys = keys;
    }
    *cap = ncap;
    return 1;
}

static int parse_array(parser *ps, tf_json *out)
{
    size_t cap = 0;
    out->type = TF_JSON_ARRAY;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        return 1;
    }
    for (;;) {
        if (!grow(ps, out, &cap))
            return 0;
        tf_json *item = &out->items[out->count];
        memset(item, 0, sizeof *item);
        if (!parse_value(ps, item)) {
            clear_value(item);
            return 0;
        }
        out->count++;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == ']') {
            ps->p++;
            return 1;
        }
        return fail(ps, "expected ',' or ']' in array (%s)", describe(ps));
    }
}

static int parse_member(parser *ps, tf_json *obj, size_t *cap)
{
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != '"')
        return fail(ps, "expected a string key in object (%s)", describe(ps));
    if (!grow(ps, obj, cap))
        return 0;
    char *key;
    size_t klen;
    const char *key_at = ps->p;
    if (!parse_string_raw(ps, &key, &klen))
        return 0;
    for (size_t i = 0; i < obj->count; i++)
        if (strcmp(obj->keys[i], key) == 0) {
            ps->p = key_at;
            free(key);
            return fail(ps, "duplicate key \"%s\"", obj->keys[i]);
        }
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != ':') {
        free(key);
        return fail(ps, "expected ':' after object key (%s)", describe(ps));
    }
    ps->p++;
    tf_json *item = &obj->items[obj->count];
    memset(item, 0, sizeof *item);
    if (!parse_value(ps, item)) {
        free(key);
        clear_value(item);
        return 0;
    }
    obj->keys[obj->count++] = key;
    return 1;
}

static int parse_object(parser *ps, tf_json *out)
{
    size_t cap = 0;
    out->type = TF_JSON_OBJECT;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return 1;
    }
    for (;;) {
        if (!parse_member(ps, out, &cap))
            return 0;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == '}') {
            ps->p++;
            return 1;
        }
        return fail(ps, "expected ',' or '}' in object (%s)", describe(ps));
    }
}

static int parse_value(parser *ps, tf_json *out)
{
    skip_ws(ps);
    if (ps->p >= ps->end)
        return fail(ps, "expected a value (end of input)");
    if (ps->depth >= MAX_DEPTH)
        return fail(ps, "nesting deeper than %d", MAX_DEPTH);
    ps->depth++;
    int ok;
    switch (*ps->p) {
    case '{': ok = parse_object(ps, out); break;
    case '[': ok = parse_array(ps, out); break;
    case '"': ok = parse_string(ps, out); break;
    case 't': ok = parse_literal(ps, "true", out); break;
    case 'f': ok = parse_literal(ps, "false", out); break;
    case 'n': ok = parse_literal(ps, "null", out); break;
    default:
        ok = (*ps->p == '-' || is_digit(*ps->p))
                 ? parse_number(ps, out)
                 : fail(ps, "unexpected character '%c' where a value was expected", *ps->p);
    }
    ps->depth--;
    return ok;
}

/* ---- public entry points ---- */

tf_json *tf_json_parse(const char *text, size_t len, char *err, size_t err_size)
{
    parser ps = {text, text + len, text, err, err_size, 0, 0};
    if (err && err_size)
        err[0] = '\0';
    if (!text && len) {
        fail(&ps, "NULL text");
        return NULL;
    }
    tf_json *root = calloc(1, sizeof *root);
    if (!root) {
        fail(&ps, "out of memory");
        return NULL;
    }
    if (parse_value(&ps, root)) {
        skip_ws(&ps);
        if (ps.p == ps.end)
            return root;
        fail(&ps, "trailing content after the value");
    }
    clear_value(root);
    free(root);
    return NULL;
}

/* Reads a whole file into a malloc'ed buffer. */
static char *read_all(FILE *f, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *nb = realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            return NULL;
        }
        buf = nb;
        cap *= 2;
    }
    *len = n;
    return buf;
}

tf_json *tf_json_parse_file(const char *path, char *err, size_t err_size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (err && err_size)
            snprintf(err, err_size, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t len = 0;
    char *text = read_all(f, &len);
    int read_error = ferror(f);
    fclose(f);
    if (!text || read_error) {
        free(text);
        if (err && err_size)
            snprintf(err, err_size, "%s: %s", path, text ? "read error" : "out of memory");
        return NULL;
    }
    char msg[512];
    tf_json *root = tf_json_parse(text, len, msg, sizeof msg);
    free(text);
    if (!root && err && err_size)
        snprintf(err, err_size, "%s: %s", path, msg);
    return root;
}

void tf_json_free(tf_json *root)
{
    if (!root)
        return;
    clear_value(root);
    free(root);
}

const tf_json *tf_json_get(const tf_json *v, const char *key)
{
    if (!v || v->type != TF_JSON_OBJECT || !key)
        return NULL;
    for (size_t i = 0; i < v->count; i++)
        if (strcmp(v->keys[i], key) == 0)
            return &v->items[i];
    return NULL;
}

const char *tf_json_type_name(tf_json_type type)
{
    switch (type) {
    case TF_JSON_NULL: return "null";
    case TF_JSON_BOOL: return "bool";
    case TF_JSON_NUMBER: return "number";
    case TF_JSON_STRING: return "string";
    case TF_JSON_ARRAY: return "array";
    case TF_JSON_OBJECT: return "object";
    }
    return "?";
}
