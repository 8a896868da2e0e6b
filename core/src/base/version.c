/* version.c - the run-time version query. */
#include "base_internal.h"

TF_API int tf_version_number(void)
{
    return TF_VERSION_NUMBER;
}

TF_API const char *tf_version_string(void)
{
    return TF_VERSION_STRING;
}
