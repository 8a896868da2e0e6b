/*
 * checkpoint.c - the in-memory checkpoint of checkpoint.h: named tensors in
 * order and string metadata, with the checks on names and keys.
 */
#include <string.h>

#include "checkpoint_internal.h"

char *ck_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = tt_alloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* The length of the UTF-8 sequence starting with byte c and the smallest code point it may
   encode (to refuse overlong forms); 0 for a byte no sequence starts with. */
static int utf8_lead(unsigned char c, uint32_t *min, uint32_t *cp)
{
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if ((c & 0xE0) == 0xC0) {
        *min = 0x80;
        *cp = c & 0x1F;
        return 2;
    }
    if ((c & 0xF0) == 0xE0) {
        *min = 0x800;
        *cp = c & 0x0F;
        return 3;
    }
    if ((c & 0xF8) == 0xF0) {
        *min = 0x10000;
        *cp = c & 0x07;
        return 4;
    }
    return 0;
}

int ck_utf8_valid(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        uint32_t min = 0, cp = 0;
        int len = utf8_lead(u[i], &min, &cp);
        if (len == 0 || i + (size_t)len > n)
            return 0;
        for (int k = 1; k < len; k++) {
            if ((u[i + k] & 0xC0) != 0x80)
                return 0;
            cp = (cp << 6) | (u[i + k] & 0x3F);
        }
        if (len > 1 && (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)))
            return 0;
        i += (size_t)len;
    }
    return 1;
}

TF_TRAIN_API tf_status tf_checkpoint_create(tf_checkpoint **out)
{
    if (!out)
        return tt_fail(TF_ERR_VALIDATION, "out", "checkpoint_create: NULL out");
    tf_checkpoint *ck = tt_calloc(1, sizeof *ck);
    if (!ck)
        return tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "checkpoint_create: out of memory");
    *out = ck;
    return TF_OK;
}

TF_TRAIN_API void tf_checkpoint_destroy(tf_checkpoint *ck)
{
    if (!ck)
        return;
    for (size_t i = 0; i < ck->n; i++) {
        tt_free(ck->items[i].name);
        tf_tensor_release(ck->items[i].tensor);
    }
    for (size_t i = 0; i < ck->n_meta; i++) {
        tt_free(ck->meta[i].key);
        tt_free(ck->meta[i].value);
    }
    tt_free(ck->items);
    tt_free(ck->meta);
    tt_free(ck);
}

tf_status ck_push(tf_checkpoint *ck, char *name, tf_tensor *tensor)
{
    if (!tt_grow((void **)&ck->items, &ck->cap, ck->n, sizeof *ck->items))
        return tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "checkpoint: out of memory");
    ck->items[ck->n++] = (ck_item){name, tensor};
    return TF_OK;
}

/* A name or key: non-empty valid UTF-8 of at most 64 KiB. */
static int good_text(const char *s, int allow_empty)
{
    size_t n = strlen(s);
    return (allow_empty || n > 0) && n <= 65536 && ck_utf8_valid(s, n);
}

TF_TRAIN_API tf_status tf_checkpoint_add(tf_checkpoint *ck, const char *name, tf_tensor *tensor)
{
    if (!ck || !name || !tensor)
        return tt_fail(TF_ERR_VALIDATION, !ck ? "ck" : !name ? "name" : "tensor",
                       "checkpoint_add: NULL argument");
    if (!good_text(name, 0) || strcmp(name, "__metadata__") == 0)
        return tt_fail(TF_ERR_VALIDATION, "name",
                       "checkpoint_add: a name must be non-empty UTF-8 (at most 64 KiB) and "
                       "not \"__metadata__\"");
    if (tf_checkpoint_find(ck, name))
        return tt_fail(TF_ERR_VALIDATION, "name", "checkpoint_add: '%s' is already in it", name);
    if (strcmp(ck_dtype_name(tf_tensor_dtype(tensor)), "?") == 0)
        return tt_fail(TF_ERR_UNSUPPORTED, "tensor",
                       "checkpoint_add: '%s' is %s, which safetensors has no dtype for (store "
                       "its real and imaginary parts as f64 tensors)",
                       name, tf_dtype_name(tf_tensor_dtype(tensor)));
    char *copy = ck_strdup(name);
    if (!copy)
        return tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "checkpoint_add: out of memory");
    tf_status st = ck_push(ck, copy, tensor);
    if (st) {
        tt_free(copy);
        return st;
    }
    tf_tensor_retain(tensor);
    return TF_OK;
}

TF_TRAIN_API tf_status tf_checkpoint_set_meta(tf_checkpoint *ck, const char *key,
                                              const char *value)
{
    if (!ck || !key || !value)
        return tt_fail(TF_ERR_VALIDATION, !ck ? "ck" : !key ? "key" : "value",
                       "checkpoint_set_meta: NULL argument");
    if (!good_text(key, 0))
        return tt_fail(TF_ERR_VALIDATION, "key",
                       "checkpoint_set_meta: a key must be non-empty UTF-8 (at most 64 KiB)");
    if (!good_text(value, 1))
        return tt_fail(TF_ERR_VALIDATION, "value",
                       "checkpoint_set_meta: a value must be UTF-8 (at most 64 KiB)");
    char *v = ck_strdup(value);
    if (!v)
        return tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "checkpoint_set_meta: out of memory");
    for (size_t i = 0; i < ck->n_meta; i++) {
        if (strcmp(ck->meta[i].key, key) == 0) {
            tt_free(ck->meta[i].value);
            ck->meta[i].value = v;
            return TF_OK;
        }
    }
    char *k = ck_strdup(key);
    if (!k || !tt_grow((void **)&ck->meta, &ck->cap_meta, ck->n_meta, sizeof *ck->meta)) {
        tt_free(k);
        tt_free(v);
        return tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "checkpoint_set_meta: out of memory");
    }
    ck->meta[ck->n_meta++] = (ck_meta){k, v};
    return TF_OK;
}

TF_TRAIN_API size_t tf_checkpoint_count(const tf_checkpoint *ck)
{
    return ck->n;
}

TF_TRAIN_API const char *tf_checkpoint_name(const tf_checkpoint *ck, size_t i)
{
    return i < ck->n ? ck->items[i].name : NULL;
}

TF_TRAIN_API tf_tensor *tf_checkpoint_tensor(const tf_checkpoint *ck, size_t i)
{
    return i < ck->n ? ck->items[i].tensor : NULL;
}

TF_TRAIN_API tf_tensor *tf_checkpoint_find(const tf_checkpoint *ck, const char *name)
{
    for (size_t i = 0; ck && name && i < ck->n; i++)
        if (strcmp(ck->items[i].name, name) == 0)
            return ck->items[i].tensor;
    return NULL;
}

TF_TRAIN_API const char *tf_checkpoint_meta(const tf_checkpoint *ck, const char *key)
{
    for (size_t i = 0; ck && key && i < ck->n_meta; i++)
        if (strcmp(ck->meta[i].key, key) == 0)
            return ck->meta[i].value;
    return NULL;
}

TF_TRAIN_API size_t tf_checkpoint_meta_count(const tf_checkpoint *ck)
{
    return ck->n_meta;
}

TF_TRAIN_API const char *tf_checkpoint_meta_key(const tf_checkpoint *ck, size_t i)
{
    return i < ck->n_meta ? ck->meta[i].key : NULL;
}
