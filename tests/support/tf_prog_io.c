/*
 * tf_prog_io.c - reading program files (formats 1 and 2 of
 * shared/oracle/OPS.md) into tf_prog.h's representation, and writing one
 * out in format 2. The reader is strict: every malformed part is an error
 * naming where it is, never a silently skipped op.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tf_prog.h"

/* ===================================================================== */
/* Reading                                                                */
/* ===================================================================== */

typedef struct reader {
    tfp_program *p;
    char *err;
    size_t err_size;
    const char *names[TFP_MAX_LEAVES * 2 + 1024]; /* value id -> the file's name */
    uint32_t n_names;
} reader;

static bool fail(reader *rd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(reader *rd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (rd->err && rd->err_size)
        vsnprintf(rd->err, rd->err_size, fmt, ap);
    va_end(ap);
    return false;
}

static const tf_json *member(reader *rd, const tf_json *obj, const char *key, tf_json_type type,
                             const char *where)
{
    const tf_json *v = tf_json_get(obj, key);
    if (!v)
        fail(rd, "%s: no member \"%s\"", where, key);
    else if (v->type != type)
        fail(rd, "%s.%s: expected %s, found %s", where, key, tf_json_type_name(type),
             tf_json_type_name(v->type));
    return v && v->type == type ? v : NULL;
}

static bool is_int(const tf_json *v)
{
    return v->type == TF_JSON_NUMBER && v->number == floor(v->number) && fabs(v->number) < 9e15;
}

static bool read_dtype(reader *rd, const tf_json *obj, tfp_dtype *out, const char *where)
{
    const tf_json *d = tf_json_get(obj, "dtype");
    if (!d) {
        if (rd->p->format == 1) {
            *out = TFP_F64;
            return true;
        }
        return fail(rd, "%s: no member \"dtype\"", where);
    }
    static const char *const names[] = {"f64", "c128", "bool", "i64"};
    for (int i = 0; d->type == TF_JSON_STRING && i < 4; i++)
        if (strcmp(d->string, names[i]) == 0) {
            *out = (tfp_dtype)i;
            rd->p->has_complex = rd->p->has_complex || *out == TFP_C128;
            return true;
        }
    return fail(rd, "%s.dtype: unknown dtype", where);
}

/* {shape, dtype, data_col_major} into d. */
static bool read_data(reader *rd, const tf_json *obj, tfp_data *d, const char *where)
{
    memset(d, 0, sizeof *d);
    const tf_json *shape = member(rd, obj, "shape", TF_JSON_ARRAY, where);
    const tf_json *data = shape ? member(rd, obj, "data_col_major", TF_JSON_ARRAY, where) : NULL;
    if (!data || !read_dtype(rd, obj, &d->dtype, where))
        return false;
    if (shape->count > TF_MAX_RANK)
        return fail(rd, "%s.shape: rank %zu is too large", where, shape->count);
    size_t numel = 1;
    for (size_t i = 0; i < shape->count; i++) {
        if (!is_int(&shape->items[i]) || shape->items[i].number < 0 ||
            shape->items[i].number > 1e6)
            return fail(rd, "%s.shape[%zu]: not an extent", where, i);
        d->shape[i] = (int64_t)shape->items[i].number;
        numel *= (size_t)d->shape[i];
    }
    d->rank = (uint32_t)shape->count;
    size_t want = d->dtype == TFP_C128 ? 2 * numel : numel;
    if (data->count != want)
        return fail(rd, "%s.data_col_major: %zu numbers for %zu elements", where, data->count,
                    numel);
    d->count = want;
    d->data = want ? malloc(want * sizeof *d->data) : NULL;
    if (want && !d->data)
        return fail(rd, "%s: out of memory", where);
    for (size_t i = 0; i < want; i++) {
        const tf_json *v = &data->items[i];
        if (v->type == TF_JSON_BOOL && d->dtype == TFP_BOOL) {
            d->data[i] = v->boolean;
            continue;
        }
        if (v->type != TF_JSON_NUMBER || ((d->dtype == TFP_I64 || d->dtype == TFP_BOOL) &&
                                          !is_int(v))) {
            tfp_data_free(d);
            return fail(rd, "%s.data_col_major[%zu]: not a %s", where, i,
                        d->dtype == TFP_I64 ? "integer" : "number");
        }
        d->data[i] = v->number;
    }
    return true;
}

static bool bind_name(reader *rd, const char *name, const char *where)
{
    for (uint32_t i = 0; i < rd->n_names; i++)
        if (strcmp(rd->names[i], name) == 0)
            return fail(rd, "%s: \"%s\" is defined twice", where, name);
    if (rd->n_names == sizeof rd->names / sizeof rd->names[0])
        return fail(rd, "%s: too many values", where);
    rd->names[rd->n_names++] = name;
    return true;
}

static bool lookup(reader *rd, const tf_json *name, uint32_t *id, const char *where)
{
    if (name->type == TF_JSON_STRING)
        for (uint32_t i = 0; i < rd->n_names; i++)
            if (strcmp(rd->names[i], name->string) == 0) {
                *id = i;
                return true;
            }
    return fail(rd, "%s: not a defined name", where);
}

static bool read_leaves(reader *rd, const char *key, tfp_leaf *leaves, uint32_t *n, bool need)
{
    const tf_json *arr = tf_json_get(rd->p->dom, key);
    if (!arr && !need)
        return true;
    if (!(arr = member(rd, rd->p->dom, key, TF_JSON_ARRAY, "program")))
        return false;
    if (arr->count > TFP_MAX_LEAVES || (need && arr->count == 0))
        return fail(rd, "%s: %zu entries", key, arr->count);
    for (size_t i = 0; i < arr->count; i++) {
        char where[48];
        snprintf(where, sizeof where, "%s[%zu]", key, i);
        const tf_json *name = member(rd, &arr->items[i], "name", TF_JSON_STRING, where);
        memset(&leaves[i], 0, sizeof leaves[i]);
        if (!name || !read_data(rd, &arr->items[i], &leaves[i].value, where))
            return false;
        (*n)++;
        const tf_json *layout = tf_json_get(&arr->items[i], "layout"); /* the checker's */
        if (layout && (!is_int(layout) || layout->number < 0 || layout->number > TFP_STRIDED))
            return fail(rd, "%s.layout: not a layout", where);
        leaves[i].layout = layout ? (tfp_layout)layout->number : TFP_DENSE;
        if (!bind_name(rd, name->string, where))
            return false;
    }
    return true;
}

static bool read_attr(reader *rd, tfp_op *op, const char *key, const tf_json *v,
                      const char *where)
{
    bool ok;
    if (v->type == TF_JSON_NULL) {
        ok = tfp_attr_null(op, key);
    } else if (v->type == TF_JSON_NUMBER) {
        ok = tfp_attr_num(op, key, v->number);
    } else if (v->type == TF_JSON_STRING) {
        ok = strlen(v->string) < sizeof op->attrs[0].str && tfp_attr_str(op, key, v->string);
    } else if (v->type == TF_JSON_ARRAY) {
        int64_t *ints = malloc((v->count ? v->count : 1) * sizeof *ints);
        ok = ints != NULL;
        for (size_t i = 0; ok && i < v->count; i++) {
            ok = is_int(&v->items[i]);
            if (ok)
                ints[i] = (int64_t)v->items[i].number;
        }
        ok = ok && tfp_attr_ints(op, key, ints, v->count);
        free(ints);
    } else {
        tfp_data t;
        if (!read_data(rd, v, &t, where))
            return false;
        ok = tfp_attr_tensor(op, key, &t);
    }
    return ok || fail(rd, "%s.attrs.%s: malformed (or too many attributes)", where, key);
}

static bool read_op(reader *rd, const tf_json *o, size_t i)
{
    char where[32];
    snprintf(where, sizeof where, "ops[%zu]", i);
    const tf_json *name = member(rd, o, "op", TF_JSON_STRING, where);
    const tf_json *out = name ? member(rd, o, "out", TF_JSON_STRING, where) : NULL;
    const tf_json *args = out ? member(rd, o, "args", TF_JSON_ARRAY, where) : NULL;
    const tf_json *attrs = args ? member(rd, o, "attrs", TF_JSON_OBJECT, where) : NULL;
    if (!attrs)
        return false;
    if (args->count > TFP_MAX_ARGS || strlen(name->string) >= sizeof rd->p->ops[0].name)
        return fail(rd, "%s: %zu arguments or a long name", where, args->count);
    uint32_t ids[TFP_MAX_ARGS];
    for (size_t k = 0; k < args->count; k++) {
        char at[64];
        snprintf(at, sizeof at, "%.32s.args[%zu]", where, k);
        if (!lookup(rd, &args->items[k], &ids[k], at))
            return false;
    }
    tfp_op op;
    tfp_op_init(&op, name->string, (uint32_t)args->count, ids);
    bool ok = true;
    for (size_t k = 0; ok && k < attrs->count; k++)
        ok = read_attr(rd, &op, attrs->keys[k], &attrs->items[k], where);
    ok = ok && (tfp_program_push(rd->p, &op) || fail(rd, "%s: out of memory", where));
    tfp_op_free(&op);
    return ok && bind_name(rd, out->string, where);
}

static bool read_header(reader *rd)
{
    tfp_program *p = rd->p;
    const tf_json *format = member(rd, p->dom, "format", TF_JSON_STRING, "program");
    if (!format)
        return false;
    if (strcmp(format->string, "tenferro-oracle/1") == 0)
        p->format = 1;
    else if (strcmp(format->string, "tenferro-oracle/2") == 0)
        p->format = 2;
    else
        return fail(rd, "unknown format \"%s\"", format->string);
    const tf_json *features = tf_json_get(p->dom, "features");
    for (size_t i = 0; features && features->type == TF_JSON_ARRAY && i < features->count; i++)
        if (features->items[i].type == TF_JSON_STRING &&
            strcmp(features->items[i].string, "c128") == 0)
            p->has_complex = true; /* complex(x, y) makes c128 from f64 leaves */
    const char *keys[] = {"seed", "index", "attempt"};
    uint64_t *dst[] = {&p->seed, &p->index, &p->attempt};
    for (int i = 0; i < 3; i++) {
        const tf_json *v = tf_json_get(p->dom, keys[i]);
        if (v && is_int(v) && v->number >= 0)
            *dst[i] = (uint64_t)v->number;
    }
    return true;
}

static bool read_tail(reader *rd)
{
    tfp_program *p = rd->p;
    const tf_json *out = member(rd, p->dom, "output", TF_JSON_STRING, "program");
    const tf_json *w = out ? member(rd, p->dom, "loss_weights", TF_JSON_OBJECT, "program") : NULL;
    if (!w || !lookup(rd, out, &p->output, "output") ||
        !read_data(rd, w, &p->weights, "loss_weights"))
        return false;
    const tf_json *tangents = tf_json_get(p->dom, "tangents");
    for (uint32_t i = 0; tangents && i < p->n_inputs; i++) {
        const tf_json *t = tf_json_get(tangents, rd->names[i]);
        char where[48];
        snprintf(where, sizeof where, "tangents.%s", rd->names[i]);
        if (t && !read_data(rd, t, &p->inputs[i].tangent, where))
            return false;
    }
    const tf_json *hv = tf_json_get(p->dom, "hvp_vector");
    if (hv) {
        const tf_json *in = member(rd, hv, "input", TF_JSON_STRING, "hvp_vector");
        if (!in || !lookup(rd, in, &p->hvp_input, "hvp_vector.input") ||
            !read_data(rd, hv, &p->hvp_v, "hvp_vector"))
            return false;
        if (p->hvp_input >= p->n_inputs)
            return fail(rd, "hvp_vector.input: not an input");
    }
    return true;
}

bool tfp_data_from_json(const tf_json *obj, int format, tfp_data *out, char *err,
                        size_t err_size)
{
    tfp_program p;
    tfp_program_init(&p);
    p.format = format;
    reader rd = {.p = &p, .err = err, .err_size = err_size};
    if (!obj || obj->type != TF_JSON_OBJECT) {
        memset(out, 0, sizeof *out);
        return fail(&rd, "not a tensor object");
    }
    return read_data(&rd, obj, out, "tensor");
}

bool tfp_read_dom(tf_json *dom, tfp_program *p, char *err, size_t err_size)
{
    tfp_program_init(p);
    p->dom = dom;
    reader rd = {.p = p, .err = err, .err_size = err_size};
    if (!read_header(&rd) || !read_leaves(&rd, "inputs", p->inputs, &p->n_inputs, true) ||
        !read_leaves(&rd, "constants", p->consts, &p->n_consts, false))
        return false;
    const tf_json *ops = member(&rd, dom, "ops", TF_JSON_ARRAY, "program");
    if (!ops)
        return false;
    for (size_t i = 0; i < ops->count; i++)
        if (!read_op(&rd, &ops->items[i], i))
            return false;
    return read_tail(&rd);
}

bool tfp_read_file(const char *path, tfp_program *p, char *err, size_t err_size)
{
    char jerr[512];
    tf_json *dom = tf_json_parse_file(path, jerr, sizeof jerr);
    if (!dom) {
        tfp_program_init(p);
        snprintf(err, err_size, "%s", jerr);
        return false;
    }
    char rerr[512];
    if (tfp_read_dom(dom, p, rerr, sizeof rerr))
        return true;
    snprintf(err, err_size, "%s: %s", path, rerr);
    return false;
}

/* ===================================================================== */
/* Writing                                                                */
/* ===================================================================== */

static const char *dtype_name(tfp_dtype d)
{
    static const char *const names[] = {"f64", "c128", "bool", "i64"};
    return names[d];
}

static void write_ints(FILE *f, const int64_t *v, size_t n)
{
    fputc('[', f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, i ? ", %lld" : "%lld", (long long)v[i]);
    fputc(']', f);
}

/* The shortest decimal form that reads back as v (OPS.md's convention). */
static void write_number(FILE *f, double v)
{
    char buf[32];
    if (v == floor(v) && fabs(v) < 1e15) {
        fprintf(f, "%.1f", v);
        return;
    }
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    fputs(buf, f);
}

/* "shape": ..., "dtype": ..., "data_col_major": [...] (an object's members). */
static void write_members(FILE *f, const tfp_data *d)
{
    fputs("\"shape\": ", f);
    write_ints(f, d->shape, d->rank);
    fprintf(f, ", \"dtype\": \"%s\", \"data_col_major\": [", dtype_name(d->dtype));
    for (size_t i = 0; i < d->count; i++) {
        if (i)
            fputs(", ", f);
        if (d->dtype == TFP_I64 || d->dtype == TFP_BOOL)
            fprintf(f, "%lld", (long long)d->data[i]);
        else
            write_number(f, d->data[i]);
    }
    fputc(']', f);
}

static void write_data(FILE *f, const tfp_data *d)
{
    fputc('{', f);
    write_members(f, d);
    fputc('}', f);
}

/* Leaves with the checker's "layout" (format 2 readers ignore it). */
static void write_leaves(FILE *f, const tfp_program *p, const char *key, const tfp_leaf *l,
                         uint32_t n, uint32_t first)
{
    char name[16];
    fprintf(f, "  \"%s\": [", key);
    for (uint32_t i = 0; i < n; i++) {
        fprintf(f, "%s\n    {\"name\": \"%s\", ", i ? "," : "",
                tfp_value_name(p, first + i, name, sizeof name));
        write_members(f, &l[i].value);
        fprintf(f, ", \"layout\": %d}", (int)l[i].layout);
    }
    fputs(n ? "\n  ],\n" : "],\n", f);
}

static void write_attr(FILE *f, const tfp_attr *a)
{
    fprintf(f, "\"%s\": ", a->key);
    switch (a->kind) {
    case TFP_A_NULL:
        fputs("null", f);
        break;
    case TFP_A_NUM:
        write_number(f, a->num);
        break;
    case TFP_A_INTS:
        write_ints(f, a->ints, a->n);
        break;
    case TFP_A_STR:
        fprintf(f, "\"%s\"", a->str);
        break;
    case TFP_A_TENSOR:
        write_data(f, &a->tensor);
        break;
    }
}

static void write_ops(FILE *f, const tfp_program *p)
{
    char name[16];
    fputs("  \"ops\": [", f);
    for (uint32_t k = 0; k < p->n_ops; k++) {
        const tfp_op *op = &p->ops[k];
        fprintf(f, "%s\n    {\"out\": \"%s\", \"op\": \"%s\", \"args\": [", k ? "," : "",
                tfp_value_name(p, tfp_op_value(p, k), name, sizeof name), op->name);
        for (uint32_t i = 0; i < op->n_args; i++)
            fprintf(f, "%s\"%s\"", i ? ", " : "", tfp_value_name(p, op->args[i], name, sizeof name));
        fputs("], \"attrs\": {", f);
        for (uint32_t i = 0; i < op->n_attrs; i++) {
            if (i)
                fputs(", ", f);
            write_attr(f, &op->attrs[i]);
        }
        fputs("}}", f);
    }
    fputs("\n  ],\n", f);
}

bool tfp_write_file(const tfp_program *p, const char *path, const char *extra)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    char name[16];
    fprintf(f, "{\n  \"format\": \"tenferro-oracle/2\",\n  \"seed\": %llu, \"index\": %llu, "
               "\"attempt\": %llu,\n",
            (unsigned long long)p->seed, (unsigned long long)p->index,
            (unsigned long long)p->attempt);
    write_leaves(f, p, "inputs", p->inputs, p->n_inputs, 0);
    write_leaves(f, p, "constants", p->consts, p->n_consts, p->n_inputs);
    write_ops(f, p);
    fprintf(f, "  \"output\": \"%s\",\n  \"loss_weights\": ",
            tfp_value_name(p, p->output, name, sizeof name));
    write_data(f, &p->weights);
    fputs(",\n  \"tangents\": {", f);
    for (uint32_t i = 0, first = 1; i < p->n_inputs; i++) {
        if (!p->inputs[i].tangent.count)
            continue;
        fprintf(f, "%s\"%s\": ", first ? "" : ", ", tfp_value_name(p, i, name, sizeof name));
        write_data(f, &p->inputs[i].tangent);
        first = 0;
    }
    fputs("}", f);
    if (p->hvp_v.count) {
        fprintf(f, ",\n  \"hvp_vector\": {\"input\": \"%s\", ",
                tfp_value_name(p, p->hvp_input, name, sizeof name));
        write_members(f, &p->hvp_v);
        fputs("}", f);
    }
    if (extra)
        fprintf(f, ",\n  \"checker\": %s", extra);
    fputs("\n}\n", f);
    return fclose(f) == 0;
}
