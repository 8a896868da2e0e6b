/*
 * checkpoint_json.c - the safetensors header: a strict JSON reader for
 * exactly the form the format defines, the checks that the entries describe
 * the data section, and the writer.
 *
 * The reader is a recursive descent over the header bytes that knows the
 * schema (an object of tensor entries and "__metadata__"), so that every
 * refusal says what was expected where ("header byte 17: expected ':'").
 * Strings are checked for UTF-8 and decoded (escapes, \uXXXX with surrogate
 * pairs); a NUL is refused, as no C string can hold it. Numbers are plain
 * non-negative integers (no sign, fraction or exponent; what safetensors
 * writers produce), refused when they overflow.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint_internal.h"

typedef struct jp {
    const char *s;
    size_t n, i;
    const char *path;
} jp;

static tf_status bad(const jp *p, const char *what)
{
    return tt_fail(TF_ERR_VALIDATION, "path", "checkpoint_load: '%s': header byte %zu: %s",
                   p->path, p->i, what);
}

static void ws(jp *p)
{
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' ||
                           p->s[p->i] == '\r'))
        p->i++;
}

static int peek(jp *p, char c)
{
    ws(p);
    return p->i < p->n && p->s[p->i] == c;
}

static tf_status expect(jp *p, char c)
{
    if (!peek(p, c)) {
        char msg[64];
        snprintf(msg, sizeof msg, "expected '%c'%s", c, p->i < p->n ? "" : " (end of header)");
        return bad(p, msg);
    }
    p->i++;
    return TF_OK;
}

/* ---- strings ---- */

static int hex4(const char *s, uint32_t *out)
{
    uint32_t v = 0;
    for (int k = 0; k < 4; k++) {
        char c = s[k];
        int d = c >= '0' && c <= '9' ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return 0;
        v = v * 16 + (uint32_t)d;
    }
    *out = v;
    return 1;
}

static size_t put_utf8(char *d, uint32_t cp)
{
    if (cp < 0x80) {
        d[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        d[0] = (char)(0xC0 | (cp >> 6));
        d[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        d[0] = (char)(0xE0 | (cp >> 12));
        d[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        d[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    d[0] = (char)(0xF0 | (cp >> 18));
    d[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    d[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    d[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A \uXXXX escape (with its low surrogate if it is a high one) at p->i (after the 'u'). */
static tf_status unicode_escape(jp *p, uint32_t *cp)
{
    if (p->i + 4 > p->n || !hex4(p->s + p->i, cp))
        return bad(p, "expected four hex digits after \\u");
    p->i += 4;
    if (*cp >= 0xDC00 && *cp <= 0xDFFF)
        return bad(p, "a low surrogate without a high one");
    if (*cp >= 0xD800 && *cp <= 0xDBFF) {
        uint32_t lo;
        if (p->i + 6 > p->n || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u' ||
            !hex4(p->s + p->i + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
            return bad(p, "a high surrogate without a low one");
        p->i += 6;
        *cp = 0x10000 + ((*cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    if (*cp == 0)
        return bad(p, "a string holds \\u0000 (NUL)");
    return TF_OK;
}

static tf_status escape(jp *p, char *d, size_t *k)
{
    if (p->i >= p->n)
        return bad(p, "unterminated string");
    char c = p->s[p->i++];
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *at = strchr(from, c);
    if (c && at) {
        d[(*k)++] = to[at - from];
        return TF_OK;
    }
    if (c != 'u')
        return bad(p, "an unknown escape");
    uint32_t cp;
    tf_status st = unicode_escape(p, &cp);
    if (!st)
        *k += put_utf8(d + *k, cp);
    return st;
}

/* A string at p->i: *out gets a NUL-terminated copy (tt_free it). */
static tf_status string(jp *p, char **out)
{
    tf_status st = expect(p, '"');
    if (st)
        return st;
    size_t start = p->i, end = start;
    while (end < p->n && p->s[end] != '"')
        end += p->s[end] == '\\' ? 2 : 1;
    if (end >= p->n)
        return bad(p, "unterminated string");
    if (!ck_utf8_valid(p->s + start, end - start))
        return bad(p, "a string is not valid UTF-8");
    char *d = tt_alloc(end - start + 1); /* decoding never lengthens */
    if (!d)
        return tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "checkpoint_load: out of memory");
    size_t k = 0;
    while (!st && p->i < end) {
        unsigned char c = (unsigned char)p->s[p->i];
        if (c < 0x20) {
            st = bad(p, "a control character in a string");
        } else if (c == '\\') {
            p->i++;
            st = escape(p, d, &k);
        } else {
            d[k++] = (char)c;
            p->i++;
        }
    }
    if (st) {
        tt_free(d);
        return st;
    }
    p->i = end + 1;
    d[k] = '\0';
    *out = d;
    return TF_OK;
}

/* ---- numbers and arrays ---- */

static tf_status integer(jp *p, uint64_t max, uint64_t *out)
{
    ws(p);
    size_t start = p->i;
    uint64_t v = 0;
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
        unsigned d = (unsigned)(p->s[p->i] - '0');
        if (v > (max - d) / 10)
            return bad(p, "an integer too large");
        v = v * 10 + d;
        p->i++;
    }
    if (p->i == start)
        return bad(p, "expected a non-negative integer");
    if (p->s[start] == '0' && p->i - start > 1)
        return bad(p, "an integer with a leading zero");
    if (p->i < p->n && strchr(".eE-+", p->s[p->i]))
        return bad(p, "expected an integer (no sign, fraction or exponent)");
    *out = v;
    return TF_OK;
}

/* An array of at most `max_n` integers <= max: *n gets the count. */
static tf_status int_array(jp *p, uint64_t max, uint64_t *v, size_t max_n, size_t *n,
                           tf_status too_long)
{
    tf_status st = expect(p, '[');
    *n = 0;
    if (st || peek(p, ']'))
        return st ? st : (p->i++, TF_OK);
    for (;;) {
        if (*n == max_n)
            return too_long == TF_ERR_UNSUPPORTED
                       ? tt_fail(TF_ERR_UNSUPPORTED, "path",
                                 "checkpoint_load: '%s': header byte %zu: a shape of more "
                                 "than %d axes (TF_MAX_RANK)",
                                 p->path, p->i, TF_MAX_RANK)
                       : bad(p, "too many numbers in an array");
        if ((st = integer(p, max, &v[(*n)++])))
            return st;
        if (peek(p, ']')) {
            p->i++;
            return TF_OK;
        }
        if ((st = expect(p, ',')))
            return st;
    }
}

/* ---- the schema ---- */

static const struct {
    const char *name;
    int dtype; /* tf_dtype, or -1: a safetensors dtype tenferro lacks */
} k_dtypes[] = {
    {"F32", TF_F32}, {"F64", TF_F64}, {"I32", TF_I32}, {"I64", TF_I64}, {"BOOL", TF_BOOL},
    {"F16", -1},     {"BF16", -1},    {"F8_E4M3", -1}, {"F8_E5M2", -1}, {"I8", -1},
    {"U8", -1},      {"I16", -1},     {"U16", -1},     {"U32", -1},     {"U64", -1},
    {"C64", TF_C64}, /* complex64: (re, im) f32 pairs; safetensors has no complex128 */
};

const char *ck_dtype_name(tf_dtype dtype)
{
    for (size_t i = 0; i < sizeof k_dtypes / sizeof k_dtypes[0]; i++)
        if (k_dtypes[i].dtype == (int)dtype)
            return k_dtypes[i].name;
    return "?";
}

static tf_status dtype_of(jp *p, const char *name, tf_dtype *out)
{
    for (size_t i = 0; i < sizeof k_dtypes / sizeof k_dtypes[0]; i++) {
        if (strcmp(k_dtypes[i].name, name) != 0)
            continue;
        if (k_dtypes[i].dtype < 0)
            return tt_fail(TF_ERR_UNSUPPORTED, "path",
                           "checkpoint_load: '%s': header byte %zu: dtype %s is valid "
                           "safetensors, but tenferro has no such dtype",
                           p->path, p->i, name);
        *out = (tf_dtype)k_dtypes[i].dtype;
        return TF_OK;
    }
    char msg[96];
    snprintf(msg, sizeof msg, "unknown dtype '%.40s'", name);
    return bad(p, msg);
}

/* One field of a tensor entry; `seen` has a bit per field. */
static tf_status entry_field(jp *p, const char *key, ck_entry *e, unsigned *seen)
{
    static const char *const fields[] = {"dtype", "shape", "data_offsets"};
    unsigned f = 0;
    while (f < 3 && strcmp(key, fields[f]) != 0)
        f++;
    if (f == 3)
        return bad(p, "a tensor entry has a field other than dtype, shape and data_offsets");
    if (*seen & (1u << f))
        return bad(p, "a tensor entry repeats a field");
    *seen |= 1u << f;
    if (f == 0) {
        char *name = NULL;
        tf_status st = string(p, &name);
        if (!st)
            st = dtype_of(p, name, &e->dtype);
        tt_free(name);
        return st;
    }
    uint64_t v[TF_MAX_RANK];
    size_t n = 0;
    if (f == 1) {
        tf_status st = int_array(p, INT64_MAX, v, TF_MAX_RANK, &n, TF_ERR_UNSUPPORTED);
        e->rank = n;
        for (size_t k = 0; k < n; k++)
            e->shape[k] = (int64_t)v[k];
        return st;
    }
    tf_status st = int_array(p, UINT64_MAX, v, 2, &n, TF_ERR_VALIDATION);
    if (!st && n != 2)
        return bad(p, "data_offsets must be [begin, end]");
    e->begin = v[0];
    e->end = v[1];
    return st;
}

static tf_status entry(jp *p, ck_entry *e)
{
    tf_status st = expect(p, '{');
    unsigned seen = 0;
    while (!st && !peek(p, '}')) {
        if (seen && (st = expect(p, ',')))
            break;
        char *key = NULL;
        if ((st = string(p, &key)))
            break;
        st = expect(p, ':');
        if (!st)
            st = entry_field(p, key, e, &seen);
        tt_free(key);
    }
    if (st)
        return st;
    p->i++;
    return seen == 7 ? TF_OK : bad(p, "a tensor entry lacks dtype, shape or data_offsets");
}

static tf_status metadata(jp *p, ck_header *h)
{
    tf_status st = expect(p, '{');
    int first = 1;
    while (!st && !peek(p, '}')) {
        if (!first && (st = expect(p, ',')))
            break;
        first = 0;
        char *key = NULL, *value = NULL;
        if ((st = string(p, &key)))
            break;
        if (!(st = expect(p, ':')) && !peek(p, '"'))
            st = bad(p, "a metadata value must be a string");
        if (!st)
            st = string(p, &value);
        if (!st && !tt_grow((void **)&h->meta, &h->cap_meta, h->n_meta, sizeof *h->meta))
            st = tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "checkpoint_load: out of memory");
        if (st) {
            tt_free(key);
            tt_free(value);
            break;
        }
        h->meta[h->n_meta++] = (ck_meta){key, value};
    }
    if (!st)
        p->i++;
    return st;
}

/* One member of the top-level object: "__metadata__" or a tensor entry. */
static tf_status member(jp *p, ck_header *h, int *had_meta)
{
    char *key = NULL;
    tf_status st = string(p, &key);
    if (!st)
        st = expect(p, ':');
    if (!st && strcmp(key, "__metadata__") == 0) {
        tt_free(key);
        if (*had_meta)
            return bad(p, "\"__metadata__\" appears twice");
        *had_meta = 1;
        return metadata(p, h);
    }
    if (!st && key[0] == '\0')
        st = bad(p, "an empty tensor name");
    if (!st && !tt_grow((void **)&h->e, &h->cap, h->n, sizeof *h->e))
        st = tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "checkpoint_load: out of memory");
    if (st) {
        tt_free(key);
        return st;
    }
    ck_entry *e = &h->e[h->n++];
    memset(e, 0, sizeof *e);
    e->name = key;
    return entry(p, e);
}

static tf_status document(jp *p, ck_header *h)
{
    if (p->n == 0 || p->s[0] != '{')
        return bad(p, "the header must begin with '{'");
    tf_status st = expect(p, '{');
    int had_meta = 0, first = 1;
    while (!st && !peek(p, '}')) {
        if (!first && (st = expect(p, ',')))
            return st;
        first = 0;
        st = member(p, h, &had_meta);
    }
    if (st)
        return st;
    p->i++;
    ws(p); /* the writers pad with spaces; JSON allows any whitespace */
    return p->i == p->n ? TF_OK : bad(p, "bytes after the header's object");
}

/* ---- the checks of the whole ---- */

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const ck_entry *const *)a)->name, (*(const ck_entry *const *)b)->name);
}

static int by_key(const void *a, const void *b)
{
    return strcmp(((const ck_meta *)a)->key, ((const ck_meta *)b)->key);
}

static int by_offsets(const void *a, const void *b)
{
    const ck_entry *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* Refuses repeated tensor names and metadata keys. */
static tf_status check_unique(const char *path, ck_header *h)
{
    const ck_entry **names = tt_calloc(h->n ? h->n : 1, sizeof *names);
    if (!names)
        return tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "checkpoint_load: out of memory");
    for (size_t i = 0; i < h->n; i++)
        names[i] = &h->e[i];
    if (h->n)
        qsort(names, h->n, sizeof *names, by_name);
    tf_status st = TF_OK;
    for (size_t i = 1; i < h->n && !st; i++)
        if (strcmp(names[i]->name, names[i - 1]->name) == 0)
            st = tt_fail(TF_ERR_VALIDATION, "path",
                         "checkpoint_load: '%s': the tensor name '%.200s' appears twice", path,
                         names[i]->name);
    tt_free(names);
    ck_meta *sorted = tt_calloc(h->n_meta ? h->n_meta : 1, sizeof *sorted);
    if (!st && !sorted)
        st = tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "checkpoint_load: out of memory");
    if (!st) {
        if (h->n_meta)
            memcpy(sorted, h->meta, h->n_meta * sizeof *sorted);
        if (h->n_meta)
            qsort(sorted, h->n_meta, sizeof *sorted, by_key);
        for (size_t i = 1; i < h->n_meta && !st; i++)
            if (strcmp(sorted[i].key, sorted[i - 1].key) == 0)
                st = tt_fail(TF_ERR_VALIDATION, "path",
                             "checkpoint_load: '%s': the metadata key '%.200s' appears twice",
                             path, sorted[i].key);
    }
    tt_free(sorted);
    return st;
}

/* The byte size of an entry's shape and dtype (0 and *ok = 0 on overflow). */
static uint64_t entry_bytes(const ck_entry *e, int *ok)
{
    uint64_t n = tf_dtype_size(e->dtype);
    *ok = 1;
    for (size_t k = 0; k < e->rank; k++) {
        uint64_t d = (uint64_t)e->shape[k];
        if (d && n > INT64_MAX / d) {
            *ok = 0;
            return 0;
        }
        n *= d;
    }
    return n;
}

/* Each entry's size fits its shape, and the entries tile [0, data_len) exactly. */
static tf_status check_tiling(const char *path, ck_header *h, uint64_t data_len)
{
    for (size_t i = 0; i < h->n; i++) {
        const ck_entry *e = &h->e[i];
        int ok;
        uint64_t bytes = entry_bytes(e, &ok);
        if (!ok || e->end < e->begin || e->end - e->begin != bytes)
            return tt_fail(TF_ERR_VALIDATION, "path",
                           "checkpoint_load: '%s': tensor '%.200s': data_offsets [%llu, %llu] "
                           "do not hold a %s tensor of its shape (%s bytes)",
                           path, e->name, (unsigned long long)e->begin,
                           (unsigned long long)e->end, ck_dtype_name(e->dtype),
                           ok ? "another number of" : "an overflowing number of");
    }
    if (h->n)
        qsort(h->e, h->n, sizeof *h->e, by_offsets);
    uint64_t at = 0;
    for (size_t i = 0; i < h->n; i++) {
        const ck_entry *e = &h->e[i];
        if (e->begin != at)
            return tt_fail(TF_ERR_VALIDATION, "path",
                           "checkpoint_load: '%s': tensor '%.200s' begins at data byte %llu, "
                           "where %s",
                           path, e->name, (unsigned long long)e->begin,
                           e->begin < at ? "it overlaps the tensor before it"
                                         : "it leaves a hole after the tensor before it");
        if (e->end > data_len)
            return tt_fail(TF_ERR_VALIDATION, "path",
                           "checkpoint_load: '%s': tensor '%.200s' ends at data byte %llu, past "
                           "the end of the file's %llu bytes of data (truncated?)",
                           path, e->name, (unsigned long long)e->end,
                           (unsigned long long)data_len);
        at = e->end;
    }
    if (at != data_len)
        return tt_fail(TF_ERR_VALIDATION, "path",
                       "checkpoint_load: '%s': %llu bytes of data follow the last tensor", path,
                       (unsigned long long)(data_len - at));
    return TF_OK;
}

void ck_header_free(ck_header *h)
{
    for (size_t i = 0; i < h->n; i++)
        tt_free(h->e[i].name);
    for (size_t i = 0; i < h->n_meta; i++) {
        tt_free(h->meta[i].key);
        tt_free(h->meta[i].value);
    }
    tt_free(h->e);
    tt_free(h->meta);
    memset(h, 0, sizeof *h);
}

tf_status ck_header_parse(const char *path, const char *json, size_t len, uint64_t data_len,
                          ck_header *h)
{
    memset(h, 0, sizeof *h);
    jp p = {json, len, 0, path};
    tf_status st = document(&p, h);
    if (!st)
        st = check_unique(path, h);
    if (!st)
        st = check_tiling(path, h, data_len);
    if (st)
        ck_header_free(h);
    return st;
}

/* ---- the writer ---- */

typedef struct buf {
    char *s;
    size_t n, cap;
    int failed;
} buf;

static void put(buf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *bigger = tt_alloc(cap);
        if (!bigger) {
            b->failed = 1;
            return;
        }
        if (b->n)
            memcpy(bigger, b->s, b->n);
        tt_free(b->s);
        b->s = bigger;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
}

static void puts_(buf *b, const char *s)
{
    put(b, s, strlen(s));
}

static void put_string(buf *b, const char *s)
{
    puts_(b, "\"");
    for (const unsigned char *u = (const unsigned char *)s; *u; u++) {
        char esc[8];
        if (*u == '"' || *u == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*u;
            put(b, esc, 2);
        } else if (*u < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *u);
            puts_(b, esc);
        } else {
            put(b, (const char *)u, 1);
        }
    }
    puts_(b, "\"");
}

static void put_entry(buf *b, const ck_entry *e)
{
    char num[48];
    put_string(b, e->name);
    puts_(b, ":{\"dtype\":\"");
    puts_(b, ck_dtype_name(e->dtype));
    puts_(b, "\",\"shape\":[");
    for (size_t k = 0; k < e->rank; k++) {
        snprintf(num, sizeof num, "%s%lld", k ? "," : "", (long long)e->shape[k]);
        puts_(b, num);
    }
    snprintf(num, sizeof num, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)e->begin,
             (unsigned long long)e->end);
    puts_(b, num);
}

tf_status ck_header_write(const ck_header *h, char **json, size_t *len)
{
    buf b = {NULL, 0, 0, 0};
    puts_(&b, "{");
    if (h->n_meta) {
        puts_(&b, "\"__metadata__\":{");
        for (size_t i = 0; i < h->n_meta; i++) {
            if (i)
                puts_(&b, ",");
            put_string(&b, h->meta[i].key);
            puts_(&b, ":");
            put_string(&b, h->meta[i].value);
        }
        puts_(&b, "}");
    }
    for (size_t i = 0; i < h->n; i++) {
        if (i || h->n_meta)
            puts_(&b, ",");
        put_entry(&b, &h->e[i]);
    }
    puts_(&b, "}");
    while (!b.failed && (8 + b.n) % 8)
        puts_(&b, " ");
    if (b.failed) {
        tt_free(b.s);
        return tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "checkpoint_save: out of memory");
    }
    *json = b.s;
    *len = b.n;
    return TF_OK;
}
