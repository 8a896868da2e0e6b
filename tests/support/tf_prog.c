/*
 * tf_prog.c - the program representation of tf_prog.h: data, attributes,
 * ops and programs (building, copying, freeing), and the error measure.
 * Reading and writing files is tf_prog_io.c; running programs tf_prog_run.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tf_prog.h"

const char *tfp_value_name(const tfp_program *p, uint32_t id, char *buf, size_t size)
{
    if (id < p->n_inputs)
        snprintf(buf, size, "x%u", id);
    else if (id < p->n_inputs + p->n_consts)
        snprintf(buf, size, "c%u", id - p->n_inputs);
    else
        snprintf(buf, size, "t%u", id - p->n_inputs - p->n_consts + 1);
    return buf;
}

/* ---- data ---- */

size_t tfp_data_numel(const tfp_data *d)
{
    size_t n = 1;
    for (uint32_t i = 0; i < d->rank; i++)
        n *= (size_t)d->shape[i];
    return n;
}

void tfp_data_free(tfp_data *d)
{
    free(d->data);
    d->data = NULL;
    d->count = 0;
}

bool tfp_data_copy(tfp_data *dst, const tfp_data *src)
{
    *dst = *src;
    dst->data = NULL;
    if (src->count == 0)
        return true;
    dst->data = malloc(src->count * sizeof *dst->data);
    if (!dst->data) {
        dst->count = 0;
        return false;
    }
    memcpy(dst->data, src->data, src->count * sizeof *dst->data);
    return true;
}

/* ---- attributes and ops ---- */

const tfp_attr *tfp_attr_get(const tfp_op *op, const char *key)
{
    for (uint32_t i = 0; i < op->n_attrs; i++)
        if (strcmp(op->attrs[i].key, key) == 0)
            return &op->attrs[i];
    return NULL;
}

void tfp_op_init(tfp_op *op, const char *name, uint32_t n_args, const uint32_t *args)
{
    memset(op, 0, sizeof *op);
    snprintf(op->name, sizeof op->name, "%s", name);
    op->n_args = n_args < TFP_MAX_ARGS ? n_args : TFP_MAX_ARGS;
    for (uint32_t i = 0; i < op->n_args; i++)
        op->args[i] = args[i];
}

static void attr_free(tfp_attr *a)
{
    free(a->ints);
    a->ints = NULL;
    tfp_data_free(&a->tensor);
}

void tfp_op_free(tfp_op *op)
{
    for (uint32_t i = 0; i < op->n_attrs; i++)
        attr_free(&op->attrs[i]);
    op->n_attrs = 0;
}

static tfp_attr *attr_new(tfp_op *op, const char *key, tfp_attr_kind kind)
{
    if (op->n_attrs == TFP_MAX_ATTRS)
        return NULL;
    tfp_attr *a = &op->attrs[op->n_attrs++];
    memset(a, 0, sizeof *a);
    snprintf(a->key, sizeof a->key, "%s", key);
    a->kind = kind;
    return a;
}

bool tfp_attr_num(tfp_op *op, const char *key, double v)
{
    tfp_attr *a = attr_new(op, key, TFP_A_NUM);
    if (a)
        a->num = v;
    return a != NULL;
}

bool tfp_attr_null(tfp_op *op, const char *key)
{
    return attr_new(op, key, TFP_A_NULL) != NULL;
}

bool tfp_attr_str(tfp_op *op, const char *key, const char *v)
{
    tfp_attr *a = attr_new(op, key, TFP_A_STR);
    if (a)
        snprintf(a->str, sizeof a->str, "%s", v);
    return a != NULL;
}

bool tfp_attr_ints(tfp_op *op, const char *key, const int64_t *v, size_t n)
{
    tfp_attr *a = attr_new(op, key, TFP_A_INTS);
    if (!a)
        return false;
    a->n = n;
    a->ints = malloc((n ? n : 1) * sizeof *a->ints);
    if (!a->ints) {
        op->n_attrs--;
        return false;
    }
    if (n)
        memcpy(a->ints, v, n * sizeof *v);
    return true;
}

bool tfp_attr_tensor(tfp_op *op, const char *key, tfp_data *t)
{
    tfp_attr *a = attr_new(op, key, TFP_A_TENSOR);
    if (!a) {
        tfp_data_free(t);
        return false;
    }
    a->tensor = *t;
    t->data = NULL;
    t->count = 0;
    return true;
}

/* A deep copy of src's attributes into dst (whose own are not freed). */
static bool op_copy(tfp_op *dst, const tfp_op *src)
{
    *dst = *src;
    for (uint32_t i = 0; i < src->n_attrs; i++) {
        tfp_attr *a = &dst->attrs[i];
        const tfp_attr *b = &src->attrs[i];
        a->ints = NULL;
        a->tensor.data = NULL;
        bool ok = tfp_data_copy(&a->tensor, &b->tensor);
        if (ok && b->kind == TFP_A_INTS) {
            a->ints = malloc((b->n ? b->n : 1) * sizeof *a->ints);
            ok = a->ints != NULL;
            if (ok && b->n)
                memcpy(a->ints, b->ints, b->n * sizeof *a->ints);
        }
        if (!ok) {
            dst->n_attrs = i + 1;
            tfp_op_free(dst);
            return false;
        }
    }
    return true;
}

/* ---- programs ---- */

void tfp_program_init(tfp_program *p)
{
    memset(p, 0, sizeof *p);
    p->format = 2;
}

static void leaf_free(tfp_leaf *l)
{
    tfp_data_free(&l->value);
    tfp_data_free(&l->tangent);
}

void tfp_program_free(tfp_program *p)
{
    for (uint32_t i = 0; i < p->n_inputs; i++)
        leaf_free(&p->inputs[i]);
    for (uint32_t i = 0; i < p->n_consts; i++)
        leaf_free(&p->consts[i]);
    for (uint32_t k = 0; k < p->n_ops; k++)
        tfp_op_free(&p->ops[k]);
    free(p->ops);
    tfp_data_free(&p->weights);
    tfp_data_free(&p->hvp_v);
    tf_json_free(p->dom);
    tfp_program_init(p);
}

bool tfp_program_push(tfp_program *p, const tfp_op *op)
{
    if (p->n_ops == p->cap_ops) {
        uint32_t cap = p->cap_ops ? 2 * p->cap_ops : 16;
        tfp_op *ops = realloc(p->ops, cap * sizeof *ops);
        if (!ops)
            return false;
        p->ops = ops;
        p->cap_ops = cap;
    }
    if (!op_copy(&p->ops[p->n_ops], op))
        return false;
    p->n_ops++;
    return true;
}

void tfp_program_pop(tfp_program *p)
{
    if (p->n_ops)
        tfp_op_free(&p->ops[--p->n_ops]);
}

static bool leaf_copy(tfp_leaf *dst, const tfp_leaf *src)
{
    dst->layout = src->layout;
    if (!tfp_data_copy(&dst->value, &src->value))
        return false;
    if (!tfp_data_copy(&dst->tangent, &src->tangent)) {
        tfp_data_free(&dst->value);
        return false;
    }
    return true;
}

bool tfp_program_copy(tfp_program *dst, const tfp_program *src)
{
    tfp_program_init(dst);
    dst->format = src->format;
    dst->seed = src->seed;
    dst->index = src->index;
    dst->attempt = src->attempt;
    dst->output = src->output;
    dst->hvp_input = src->hvp_input;
    dst->has_complex = src->has_complex;
    bool ok = tfp_data_copy(&dst->weights, &src->weights) &&
              tfp_data_copy(&dst->hvp_v, &src->hvp_v);
    for (uint32_t i = 0; ok && i < src->n_inputs; i++, dst->n_inputs++)
        ok = leaf_copy(&dst->inputs[i], &src->inputs[i]);
    for (uint32_t i = 0; ok && i < src->n_consts; i++, dst->n_consts++)
        ok = leaf_copy(&dst->consts[i], &src->consts[i]);
    for (uint32_t k = 0; ok && k < src->n_ops; k++)
        ok = tfp_program_push(dst, &src->ops[k]);
    if (!ok)
        tfp_program_free(dst);
    return ok;
}

/* ---- comparing ---- */

static double magnitude(const tfp_data *d, size_t k)
{
    return d->dtype == TFP_C128 ? hypot(d->data[2 * k], d->data[2 * k + 1]) : fabs(d->data[k]);
}

double tfp_err(const tfp_data *got, const tfp_data *ref, double floor)
{
    if (got->dtype != ref->dtype || got->rank != ref->rank || got->count != ref->count ||
        memcmp(got->shape, ref->shape, got->rank * sizeof got->shape[0]) != 0)
        return INFINITY;
    size_t n = tfp_data_numel(ref);
    double scale = floor, diff = 0.0;
    for (size_t k = 0; k < n; k++)
        scale = fmax(scale, magnitude(ref, k));
    for (size_t k = 0; k < n; k++) {
        double d = ref->dtype == TFP_C128
                       ? hypot(got->data[2 * k] - ref->data[2 * k],
                               got->data[2 * k + 1] - ref->data[2 * k + 1])
                       : fabs(got->data[k] - ref->data[k]);
        if (!(d <= diff)) /* NaN too */
            diff = d;
    }
    return diff / scale;
}

/* ---- editing programs (the generator and the shrinker) ---- */

/* Every reference to a value id >= from moves by delta (the output included). */
static void shift_ids(tfp_program *p, uint32_t from, int delta, uint32_t first_op)
{
    for (uint32_t k = first_op; k < p->n_ops; k++)
        for (uint32_t i = 0; i < p->ops[k].n_args; i++)
            if (p->ops[k].args[i] >= from)
                p->ops[k].args[i] = (uint32_t)((int)p->ops[k].args[i] + delta);
    if (p->output >= from)
        p->output = (uint32_t)((int)p->output + delta);
}

void tfp_program_drop_op(tfp_program *p, uint32_t k, uint32_t replacement)
{
    uint32_t id = tfp_op_value(p, k);
    for (uint32_t j = k + 1; j < p->n_ops; j++)
        for (uint32_t i = 0; i < p->ops[j].n_args; i++)
            if (p->ops[j].args[i] == id)
                p->ops[j].args[i] = replacement;
    if (p->output == id)
        p->output = replacement;
    tfp_op_free(&p->ops[k]);
    memmove(&p->ops[k], &p->ops[k + 1], (p->n_ops - k - 1) * sizeof p->ops[0]);
    p->n_ops--;
    shift_ids(p, id + 1, -1, k);
}

bool tfp_value_used(const tfp_program *p, uint32_t id)
{
    if (p->output == id)
        return true;
    for (uint32_t k = 0; k < p->n_ops; k++)
        for (uint32_t i = 0; i < p->ops[k].n_args; i++)
            if (p->ops[k].args[i] == id)
                return true;
    return false;
}

void tfp_program_drop_const(tfp_program *p, uint32_t c)
{
    uint32_t id = p->n_inputs + c;
    tfp_data_free(&p->consts[c].value);
    tfp_data_free(&p->consts[c].tangent);
    memmove(&p->consts[c], &p->consts[c + 1], (p->n_consts - c - 1) * sizeof p->consts[0]);
    p->n_consts--;
    shift_ids(p, id + 1, -1, 0);
}

void tfp_program_drop_input(tfp_program *p, uint32_t i)
{
    tfp_data_free(&p->inputs[i].value);
    tfp_data_free(&p->inputs[i].tangent);
    memmove(&p->inputs[i], &p->inputs[i + 1], (p->n_inputs - i - 1) * sizeof p->inputs[0]);
    p->n_inputs--;
    if (p->hvp_input > i)
        p->hvp_input--;
    shift_ids(p, i + 1, -1, 0);
}
