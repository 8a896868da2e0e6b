/*
 * error.c - status names and messages, and the per-thread last-error slot.
 *
 * The slot is thread-local storage with fixed-size buffers: recording an
 * error never allocates, so an out-of-memory failure can always be reported.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <tenferro/extension.h>

#include "base_internal.h"

typedef struct error_slot {
    tf_status status;
    char message[768];
    char op[64];
    char argument[64];
    char cause[768];
    /* the typed error of an extension module (status TF_ERR_EXTENSION) */
    char ext_module[TF_EXT_MAX_NAME + 1];
    char ext_kind[TF_EXT_MAX_KIND_NAME + 1];
    int64_t ext_index;
    /* what a plugin reported during the current call into it */
    tf_status plugin_status;
    char plugin_message[768];
    char plugin_argument[64]; /* the argument it named ("" if none) */
    bool plugin_has_kind;     /* it reported one of its module's error kinds */
    char plugin_module[TF_EXT_MAX_NAME + 1];
    char plugin_kind[TF_EXT_MAX_KIND_NAME + 1];
    char plugin_kind_message[256];
    int64_t plugin_index;
} error_slot;

static _Thread_local error_slot t_slot;

TF_API const char *tf_status_name(tf_status status)
{
    switch (status) {
#define TF_STATUS_NAME_(name, value, msg) \
    case name:                            \
        return #name;
        TF_STATUS_LIST(TF_STATUS_NAME_)
#undef TF_STATUS_NAME_
    }
    return "TF_UNKNOWN_STATUS";
}

TF_API const char *tf_status_message(tf_status status)
{
    switch (status) {
#define TF_STATUS_MSG_(name, value, msg) \
    case name:                           \
        return msg;
        TF_STATUS_LIST(TF_STATUS_MSG_)
#undef TF_STATUS_MSG_
    }
    return "unknown status code";
}

TF_API tf_status tf_error_status(void)
{
    return t_slot.status;
}

TF_API const char *tf_error_message(void)
{
    return t_slot.message;
}

TF_API const char *tf_error_op(void)
{
    return t_slot.op;
}

TF_API const char *tf_error_argument(void)
{
    return t_slot.argument;
}

TF_API const char *tf_error_cause(void)
{
    return t_slot.cause;
}

TF_API int tf_error_extension_kind(const char **module_id, const char **kind, int64_t *index)
{
    bool typed = t_slot.status == TF_ERR_EXTENSION && t_slot.ext_kind[0];
    if (module_id)
        *module_id = typed ? t_slot.ext_module : "";
    if (kind)
        *kind = typed ? t_slot.ext_kind : "";
    if (index)
        *index = typed ? t_slot.ext_index : -1;
    return typed;
}

static void clear_extension(void)
{
    t_slot.ext_module[0] = t_slot.ext_kind[0] = '\0';
    t_slot.ext_index = -1;
}

TF_API void tf_error_clear(void)
{
    t_slot.status = TF_OK;
    t_slot.message[0] = t_slot.op[0] = t_slot.argument[0] = t_slot.cause[0] = '\0';
    clear_extension();
}

/* Reads at most cap - 1 bytes of src: a plugin's string may lack its NUL. */
static void copy_str(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%.*s", (int)(cap - 1), src ? src : "");
}

static tf_status record_v(tf_status status, const char *op, const char *argument, const char *fmt,
                          va_list ap)
{
    t_slot.status = status;
    copy_str(t_slot.op, sizeof t_slot.op, op);
    copy_str(t_slot.argument, sizeof t_slot.argument, argument);
    vsnprintf(t_slot.message, sizeof t_slot.message, fmt, ap);
    t_slot.cause[0] = '\0';
    clear_extension();
    tf__log(TF_LOG_DEBUG, "%s: %s", tf_status_name(status), t_slot.message);
    return status;
}

tf_status tf__error(tf_status status, const char *op, const char *argument, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record_v(status, op, argument, fmt, ap);
    va_end(ap);
    return status;
}

void tf__error_cause(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t_slot.cause, sizeof t_slot.cause, fmt, ap);
    va_end(ap);
}

void tf__plugin_report_clear(void)
{
    t_slot.plugin_status = TF_OK;
    t_slot.plugin_message[0] = t_slot.plugin_argument[0] = '\0';
    t_slot.plugin_has_kind = false;
}

void tf__plugin_report(tf_status status, const char *message)
{
    tf__plugin_report_clear(); /* the latest report wins, whole */
    t_slot.plugin_status = status;
    copy_str(t_slot.plugin_message, sizeof t_slot.plugin_message, message);
}

const char *tf__plugin_report_text(void)
{
    return t_slot.plugin_status ? t_slot.plugin_message : "";
}

void tf__plugin_report_argument(tf_status status, const char *argument, const char *message)
{
    tf__plugin_report(status, message);
    copy_str(t_slot.plugin_argument, sizeof t_slot.plugin_argument, argument);
}

void tf__plugin_report_kind(const char *module_id, const char *kind, const char *kind_message,
                            int64_t index, const char *detail)
{
    tf__plugin_report(TF_ERR_EXTENSION, detail);
    t_slot.plugin_has_kind = true;
    copy_str(t_slot.plugin_module, sizeof t_slot.plugin_module, module_id);
    copy_str(t_slot.plugin_kind, sizeof t_slot.plugin_kind, kind);
    copy_str(t_slot.plugin_kind_message, sizeof t_slot.plugin_kind_message, kind_message);
    t_slot.plugin_index = index < 0 ? -1 : index;
}

/* Known to this build: the X-macro list decides, not a separately kept count. */
static bool status_known(tf_status status)
{
    return (int)status > 0 && strcmp(tf_status_name(status), "TF_UNKNOWN_STATUS") != 0;
}

/* The slot's message and extension fields for a typed extension error. */
static void record_kind(const char *op)
{
    copy_str(t_slot.ext_module, sizeof t_slot.ext_module, t_slot.plugin_module);
    copy_str(t_slot.ext_kind, sizeof t_slot.ext_kind, t_slot.plugin_kind);
    t_slot.ext_index = t_slot.plugin_index;
    char where[48] = "";
    if (t_slot.ext_index >= 0)
        snprintf(where, sizeof where, ", batch element %lld", (long long)t_slot.ext_index);
    snprintf(t_slot.message, sizeof t_slot.message, "%s: %s (%s/%s%s)", op ? op : "",
             t_slot.plugin_kind_message, t_slot.ext_module, t_slot.ext_kind, where);
}

tf_status tf__error_from_plugin(tf_status status, const char *op, const char *fmt, ...)
{
    if (!status_known(status))
        status = TF_ERR_BACKEND;
    /* TF_ERR_EXTENSION always comes with a declared kind; without one it is
       a module bug, reported as an engine-level failure. */
    bool typed = status == TF_ERR_EXTENSION && t_slot.plugin_has_kind;
    bool untyped_extension = status == TF_ERR_EXTENSION && !typed;
    if (untyped_extension)
        status = TF_ERR_BACKEND;
    char report[sizeof t_slot.plugin_message], argument[sizeof t_slot.plugin_argument];
    copy_str(report, sizeof report, t_slot.plugin_message);
    copy_str(argument, sizeof argument, t_slot.plugin_argument);
    va_list ap;
    va_start(ap, fmt);
    record_v(status, op, argument, fmt, ap);
    va_end(ap);
    if (typed)
        record_kind(op);
    if (untyped_extension) {
        size_t n = strlen(t_slot.message);
        snprintf(t_slot.message + n, sizeof t_slot.message - n,
                 " (it returned TF_ERR_EXTENSION without reporting a declared error kind)");
    }
    if (report[0])
        copy_str(t_slot.cause, sizeof t_slot.cause, report);
    else
        copy_str(t_slot.cause, sizeof t_slot.cause, "(the plugin reported no detail)");
    tf__plugin_report_clear();
    return status;
}
