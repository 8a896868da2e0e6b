/*
 * extension_load.c - finding, loading and checking extension modules, and
 * the immortal op records (with their libffi kernel signatures) that
 * installs and tape nodes point at.
 *
 * A module file is loaded by the one module loader (core/src/loader,
 * module.c) as engine plugins are: at most once per process, never
 * unloaded, found on the same search path; what is particular to
 * extensions is the descriptor check and the module record made of it.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "extensions_internal.h"
#include "loader_internal.h"

static pthread_mutex_t g_linked_lock = PTHREAD_MUTEX_INITIALIZER;
static tf_extension_module *g_linked; /* made from linked descriptors, guarded by g_linked_lock */

/* ---- names ---- */

static bool valid_segment(const char *s, size_t n)
{
    if (n == 0 || s[0] < 'a' || s[0] > 'z')
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_'))
            return false;
    }
    return true;
}

bool tf__extension_valid_name(const char *s, bool namespaced)
{
    if (!s || strlen(s) > TF_EXT_MAX_NAME)
        return false;
    size_t segments = 0;
    for (;;) {
        const char *dot = strchr(s, '.');
        size_t n = dot ? (size_t)(dot - s) : strlen(s);
        if (!valid_segment(s, n))
            return false;
        segments++;
        if (!dot)
            break;
        s = dot + 1;
    }
    return namespaced ? segments >= 2 : segments == 1;
}

/* ---- descriptors ---- */

tf_status tf__extension_check(const char *op, const char *file, const tf_extension_module_desc *d)
{
    if (d->struct_size >= offsetof(tf_extension_module_desc, abi_minor) &&
        d->abi_major != TF_EXTENSION_ABI_MAJOR)
        return tf__error(
            TF_ERR_PLUGIN_ABI, op, NULL,
            "extension module '%s': expected extension ABI major %d, found %u.%u", file,
            TF_EXTENSION_ABI_MAJOR, d->abi_major,
            d->struct_size >= offsetof(tf_extension_module_desc, reserved0) ? d->abi_minor : 0u);
    if (d->struct_size < TF_EXTENSION_MODULE_MIN_SIZE)
        return tf__error(TF_ERR_PLUGIN_STRUCT_SIZE, op, NULL,
                         "extension module '%s': descriptor struct_size is %u bytes, expected at "
                         "least %zu (ABI %d.0)",
                         file, d->struct_size, (size_t)TF_EXTENSION_MODULE_MIN_SIZE,
                         TF_EXTENSION_ABI_MAJOR);
    /* A descriptor of a minor this host knows is no larger than that minor's
       struct (1.0 ends at `install`): a larger struct_size is a lie that would
       have the host read error_kinds past the module's object. */
    size_t minor_size = d->abi_minor == 0   ? TF_EXTENSION_MODULE_MIN_SIZE
                        : d->abi_minor == 1 ? TF_EXTENSION_MODULE_SIZE_1_1
                                            : sizeof(tf_extension_module_desc);
    if (d->abi_minor <= TF_EXTENSION_ABI_MINOR && d->struct_size > minor_size)
        return tf__error(TF_ERR_PLUGIN_STRUCT_SIZE, op, NULL,
                         "extension module '%s': descriptor struct_size is %u bytes, expected at "
                         "most %zu for the ABI %d.%u it states",
                         file, d->struct_size, minor_size, TF_EXTENSION_ABI_MAJOR, d->abi_minor);
    if (!d->install || !d->version)
        return tf__error(TF_ERR_PLUGIN_MISSING_FUNCTION, op, d->install ? "version" : "install",
                         "extension module '%s': required descriptor field '%s' is NULL", file,
                         d->install ? "version" : "install");
    if (!tf__extension_valid_name(d->id, true))
        return tf__error(TF_ERR_VALIDATION, op, "id",
                         "extension module '%s': expected a namespaced id (segments of "
                         "[a-z0-9_] starting with a letter, joined by '.', e.g. "
                         "\"tenferro.linalg\"), found \"%s\"",
                         file, d->id ? d->id : "(null)");
    return TF_OK;
}

static tf_extension_module *module_new(const char *file, const tf_extension_module_desc *d)
{
    tf_extension_module *m = tf__calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->file = tf__strdup(file);
    if (!m->file || pthread_mutex_init(&m->recs_lock, NULL) != 0) {
        tf__free(m->file);
        tf__free(m);
        return NULL;
    }
    m->desc = d;
    return m;
}

TF_API tf_status tf_extension_from_descriptor(const tf_extension_module_desc *desc,
                                              tf_extension_module **out)
{
    const char *op = "extension_from_descriptor";
    if (!desc || !out)
        return tf__error(TF_ERR_VALIDATION, op, desc ? "out" : "desc", "%s: NULL argument", op);
    tf_status st = tf__extension_check(op, "(linked descriptor)", desc);
    if (st)
        return st;
    tf_extension_module *m = module_new("", desc);
    if (!m)
        return tf__error(TF_ERR_OUT_OF_MEMORY, op, NULL, "out of memory");
    pthread_mutex_lock(&g_linked_lock); /* owned by the process, like every module */
    m->next = g_linked;
    g_linked = m;
    pthread_mutex_unlock(&g_linked_lock);
    *out = m;
    return TF_OK;
}

/* ---- loading files ---- */

static const void *call_entry(void *sym)
{
    tf_extension_entry_fn entry = (tf_extension_entry_fn)(uintptr_t)sym;
    return entry(tf__host_api(), TF_EXTENSION_ABI_MAJOR, TF_EXTENSION_ABI_MINOR);
}

static tf_status check(const char *op, const char *file, const void *desc)
{
    return tf__extension_check(op, file, desc);
}

static tf_status make(const char *op, const char *file, void *handle, const void *desc,
                      void **object)
{
    (void)handle; /* never closed: the module's op records point into it */
    const tf_extension_module_desc *d = desc;
    tf_extension_module *m = module_new(file, d);
    if (!m)
        return tf__error(TF_ERR_OUT_OF_MEMORY, op, NULL, "out of memory");
    tf__log(TF_LOG_INFO, "loaded extension module '%s' %s from %s", d->id, d->version, file);
    *object = m;
    return TF_OK;
}

static tf_module_set g_modules = TF_MODULE_SET_INIT;

static const tf_module_kind g_extension_kind = {
    .noun = "extension module",
    .what = "extension module",
    .prefix = TF_EXTENSION_FILE_PREFIX,
    .abi = "extension ABI",
    .abi_major = TF_EXTENSION_ABI_MAJOR,
    .abi_minor = TF_EXTENSION_ABI_MINOR,
    .entry = TF_EXTENSION_ENTRY_SYMBOL,
    .entry_stem = "tf_extension_module_v",
    .entry_decl = "TF_EXTENSION_EXPORT const tf_extension_module_desc *" TF_EXTENSION_ENTRY_SYMBOL
                  "(const tf_host_api *host, uint32_t abi_major, uint32_t abi_minor)",
    .call_entry = call_entry,
    .check = check,
    .make = make,
    .set = &g_modules,
};

TF_API tf_status tf_extension_load(const char *name_or_path, tf_extension_module **out)
{
    void *m = NULL;
    tf_status st = tf__module_load(&g_extension_kind, "extension_load", name_or_path, NULL, &m);
    if (st == TF_OK)
        *out = m;
    return st;
}

/* ---- accessors ---- */

TF_API const char *tf_extension_id(const tf_extension_module *m)
{
    return m->desc->id;
}
TF_API const char *tf_extension_version(const tf_extension_module *m)
{
    return m->desc->version;
}
TF_API const char *tf_extension_file(const tf_extension_module *m)
{
    return m->file;
}
TF_API uint32_t tf_extension_abi_major(const tf_extension_module *m)
{
    return m->desc->abi_major;
}

TF_API uint32_t tf_extension_abi_minor(const tf_extension_module *m)
{
    return m->desc->struct_size >= offsetof(tf_extension_module_desc, reserved0)
               ? m->desc->abi_minor
               : 0u;
}

TF_API const char *tf_extension_description(const tf_extension_module *m)
{
    return m->desc->description ? m->desc->description : "";
}

TF_API const void *tf_extension_interface(const tf_extension_module *m, const char *name)
{
    if (!m || !name || tf_extension_abi_minor(m) < 2 ||
        !TF_ABI_HAS_FIELD(m->desc, tf_extension_module_desc, get_interface) ||
        !m->desc->get_interface)
        return NULL;
    return m->desc->get_interface(name);
}

/* ---- scanning ---- */

TF_API void tf_extension_scan_free(tf_extension_candidate *c, size_t count)
{
    if (!c)
        return;
    for (size_t i = 0; i < count; i++) {
        tf__free(c[i].path);
        tf__free(c[i].message);
    }
    tf__free(c);
}

static bool probe(tf_extension_candidate *c)
{
    c->kind = "extension";
    c->status = tf_extension_load(c->path, &c->module);
    if (c->status != TF_OK)
        c->module = NULL;
    c->message = tf__module_refusal_text(c->status);
    return c->message != NULL;
}

TF_API tf_status tf_extension_scan(tf_extension_candidate **candidates, size_t *count)
{
    if (!candidates || !count)
        return tf__error(TF_ERR_VALIDATION, "extension_scan", candidates ? "count" : "candidates",
                         "extension_scan: NULL out-parameter");
    char **files;
    size_t n;
    tf_status st = tf__plugin_scan_files("extension_scan", TF_EXTENSION_FILE_PREFIX, &files, &n);
    if (st)
        return st;
    tf_extension_candidate *c = tf__calloc(n ? n : 1, sizeof *c);
    bool ok = c != NULL;
    for (size_t i = 0; ok && i < n; i++)
        ok = (c[i].path = tf__strdup(files[i])) != NULL && probe(&c[i]);
    tf_plugin_path_free(files);
    if (!ok) {
        tf_extension_scan_free(c, n);
        return tf__error(TF_ERR_OUT_OF_MEMORY, "extension_scan", NULL, "out of memory");
    }
    *candidates = c;
    *count = n;
    return TF_OK;
}

/* ---- error kinds ---- */

/* The declared kinds of d: none for a 1.0 descriptor, which is one that is
   too short or states minor 0 (its struct_size alone could overstate it). */
static uint32_t kinds_of(const tf_extension_module_desc *d, const tf_ext_error_kind **kinds)
{
    bool has = TF_ABI_HAS_FIELD(d, tf_extension_module_desc, n_error_kinds) && d->abi_minor >= 1;
    *kinds = has ? d->error_kinds : NULL;
    return has ? d->n_error_kinds : 0;
}

tf_status tf__extension_check_kinds(const tf_extension_module *m)
{
    const tf_ext_error_kind *k;
    uint32_t n = kinds_of(m->desc, &k);
    const char *id = m->desc->id, *op = "install_extension_module";
    if (n > TF_EXT_MAX_ERROR_KINDS || (n && !k))
        return tf__error(TF_ERR_VALIDATION, op, "error_kinds",
                         "module '%s': expected at most %d error kinds in a non-NULL table, found "
                         "%u%s",
                         id, TF_EXT_MAX_ERROR_KINDS, n, k ? "" : " and a NULL table");
    for (uint32_t i = 0; i < n; i++) {
        const char *name = k[i].name;
        const char *what = NULL;
        if (!name || strlen(name) > TF_EXT_MAX_KIND_NAME || !tf__extension_valid_name(name, false))
            what = "a name of one segment of [a-z0-9_] starting with a letter, at most 63 bytes";
        else if (!k[i].message || !k[i].message[0])
            what = "a non-empty message";
        for (uint32_t j = 0; !what && j < i; j++)
            if (strcmp(k[j].name, name) == 0)
                what = "a name not declared before";
        if (what)
            return tf__error(TF_ERR_VALIDATION, op, "error_kinds",
                             "module '%s': error kind %u (\"%.64s\") is malformed: expected %s", id,
                             i, name ? name : "(null)", what);
    }
    return TF_OK;
}

const tf_ext_error_kind *tf__extension_find_kind(const tf_extension_module *m, const char *kind)
{
    const tf_ext_error_kind *k;
    uint32_t n = kinds_of(m->desc, &k);
    for (uint32_t i = 0; kind && i < n; i++)
        if (strcmp(k[i].name, kind) == 0)
            return &k[i];
    return NULL;
}

/* ---- op records ---- */

bool tf__extension_op_composite(const tf_extension_module *m, const tf_ext_op *op)
{
    /* The field only from a module that states 1.2: an older one's struct
       ends before it, whatever its struct_size claims. */
    return tf_extension_abi_minor(m) >= 2 && TF_ABI_HAS_FIELD(op, tf_ext_op, compose) &&
           op->compose != NULL;
}

/* What is wrong with op's argument kinds, NULL if nothing: strings and a
   (last) tensor list for composite ops only. */
static const char *check_kinds(const tf_ext_op *op, bool composite)
{
    for (uint32_t i = 0; i < op->n_args; i++) {
        uint32_t k = op->arg_kinds[i];
        if (k > TF_EXT_ARG_TENSORS || !op->arg_names[i])
            return "known argument kinds and non-NULL argument names";
        if (k >= TF_EXT_ARG_STRING && !composite)
            return "string and tensor-list arguments only in composite ops (compose set)";
        if (k == TF_EXT_ARG_TENSORS && i + 1 != op->n_args)
            return "a tensor-list argument only as the last argument";
    }
    return NULL;
}

static tf_status check_op(const tf_extension_module *m, const tf_ext_op *op)
{
    const char *id = m->desc->id, *what = NULL;
    bool composite = false;
    if (op->struct_size < offsetof(tf_ext_op, jvp) + sizeof op->jvp)
        what = "struct_size smaller than ABI 1.0's";
    else if (!tf__extension_valid_name(op->name, false))
        what = "a name of one segment of [a-z0-9_] starting with a letter";
    else if (op->n_args > TF_EXT_MAX_ARGS || (op->n_args && (!op->arg_kinds || !op->arg_names)))
        what = "at most 8 arguments, with kinds and names";
    else if (op->n_outputs < 1 || op->n_outputs > TF_EXT_MAX_OUTPUTS)
        what = "1 to 4 outputs";
    else if (!(composite = tf__extension_op_composite(m, op)) && !op->infer)
        what = "an infer function";
    if (!what)
        what = check_kinds(op, composite);
    bool cpu = composite; /* a composite needs no kernel */
    for (uint32_t i = 0; !what && i < op->n_kernels; i++) {
        if (!op->kernels || !op->kernels[i].engine || !op->kernels[i].fn)
            what = "kernels with an engine name and a function";
        else
            cpu = cpu || strcmp(op->kernels[i].engine, "cpu") == 0;
    }
    if (!what && !cpu)
        what = "a kernel for the \"cpu\" engine";
    /* The name only when the op's struct has one: a struct_size too small
       ends the struct before it, and reading past it is reading the module's
       other data (found by tests/fuzz/fuzz_descriptor). */
    bool named = op->struct_size >= offsetof(tf_ext_op, name) + sizeof op->name && op->name &&
                 strlen(op->name) < 64;
    if (what)
        return tf__error(TF_ERR_VALIDATION, "install_extension_module", "op",
                         "module '%s': op '%s' is malformed: expected %s", id,
                         named ? op->name : "?", what);
    return TF_OK;
}

static tf_status rec_init(tf_ext_oprec *r, tf_extension_module *m, const tf_ext_op *op)
{
    r->module = m;
    r->desc = op;
    snprintf(r->name, sizeof r->name, "%s.%s", m->desc->id, op->name);
    if (strlen(m->desc->id) + 1 + strlen(op->name) > TF_EXT_MAX_NAME)
        return tf__error(TF_ERR_VALIDATION, "install_extension_module", "op",
                         "module '%s': the full name of op '%s' exceeds %d bytes", m->desc->id,
                         op->name, TF_EXT_MAX_NAME);
    r->composite = tf__extension_op_composite(m, op);
    /* flags only from a module stating 1.3: an older one's struct ends before them */
    r->keeps_outputs = !r->composite && op->n_outputs > 1 && tf_extension_abi_minor(m) >= 3 &&
                       TF_ABI_HAS_FIELD(op, tf_ext_op, flags) &&
                       (op->flags & TF_EXT_OP_RULES_READ_OUTPUTS);
    uint32_t n = 0;
    r->types[n++] = &ffi_type_pointer; /* the kernel context */
    for (uint32_t i = 0; i < op->n_args; i++) {
        uint32_t k = op->arg_kinds[i];
        if (k == TF_EXT_ARG_TENSOR)
            r->tensor_arg[r->n_tensors++] = (uint8_t)i;
        else if (k == TF_EXT_ARG_STRING)
            r->string_arg[r->n_strings++] = (uint8_t)i;
        else if (k == TF_EXT_ARG_TENSORS)
            r->has_list = true;
        else
            r->scalar_arg[r->n_scalars++] = (uint8_t)i;
        if (r->composite)
            continue; /* compose() is called directly, not through libffi */
        r->types[n++] = k == TF_EXT_ARG_TENSOR ? &ffi_type_pointer
                        : k == TF_EXT_ARG_F64  ? &ffi_type_double
                                               : &ffi_type_sint64;
    }
    if (r->composite)
        return TF_OK;
    for (uint32_t i = 0; i < op->n_outputs; i++)
        r->types[n++] = &ffi_type_pointer;
    if (ffi_prep_cif(&r->cif, FFI_DEFAULT_ABI, n, &ffi_type_sint, r->types) != FFI_OK)
        return tf__error(TF_ERR_RUNTIME_STATE, "install_extension_module", "op",
                         "module '%s': libffi cannot describe the kernel signature of op '%s'",
                         m->desc->id, op->name);
    return TF_OK;
}

const tf_ext_oprec *tf__extension_oprec(tf_extension_module *m, const tf_ext_op *op)
{
    pthread_mutex_lock(&m->recs_lock);
    tf_ext_oprec *r = m->recs;
    while (r && r->desc != op)
        r = r->next;
    tf_status st = TF_OK;
    if (!r && !(st = check_op(m, op))) {
        r = tf__calloc(1, sizeof *r);
        if (!r)
            st = tf__error(TF_ERR_OUT_OF_MEMORY, "install_extension_module", NULL, "out of memory");
        else if ((st = rec_init(r, m, op))) {
            tf__free(r);
            r = NULL;
        } else {
            r->next = m->recs;
            m->recs = r;
        }
    }
    pthread_mutex_unlock(&m->recs_lock);
    return st ? NULL : r;
}
