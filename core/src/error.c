/*
 * error.c - status names and messages, and the per-thread last-error slot.
 *
 * The slot is thread-local storage with fixed-size buffers: recording an
 * error never allocates, so an out-of-memory failure can always be reported.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

typedef struct error_slot {
    tf_status status;
    char message[768];
    char op[64];
    char argument[64];
    char cause[768];
    /* what a plugin reported during the current call into it */
    tf_status plugin_status;
    char plugin_message[768];
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

TF_API void tf_error_clear(void)
{
    t_slot.status = TF_OK;
    t_slot.message[0] = t_slot.op[0] = t_slot.argument[0] = t_slot.cause[0] = '\0';
}

static void copy_str(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

static tf_status record_v(tf_status status, const char *op, const char *argument,
                          const char *fmt, va_list ap)
{
    t_slot.status = status;
    copy_str(t_slot.op, sizeof t_slot.op, op);
    copy_str(t_slot.argument, sizeof t_slot.argument, argument);
    vsnprintf(t_slot.message, sizeof t_slot.message, fmt, ap);
    t_slot.cause[0] = '\0';
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
    t_slot.plugin_message[0] = '\0';
}

void tf__plugin_report(tf_status status, const char *message)
{
    t_slot.plugin_status = status;
    copy_str(t_slot.plugin_message, sizeof t_slot.plugin_message, message);
}

static bool status_known(tf_status status)
{
    return (int)status > 0 && (int)status < TF_STATUS_COUNT_;
}

tf_status tf__error_from_plugin(tf_status status, const char *op, const char *fmt, ...)
{
    if (!status_known(status))
        status = TF_ERR_BACKEND;
    char report[sizeof t_slot.plugin_message];
    copy_str(report, sizeof report, t_slot.plugin_message);
    va_list ap;
    va_start(ap, fmt);
    record_v(status, op, NULL, fmt, ap);
    va_end(ap);
    if (report[0])
        copy_str(t_slot.cause, sizeof t_slot.cause, report);
    else
        copy_str(t_slot.cause, sizeof t_slot.cause, "(the plugin reported no detail)");
    tf__plugin_report_clear();
    return status;
}
