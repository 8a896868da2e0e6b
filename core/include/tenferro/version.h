/*
 * tenferro/version.h - library version, at compile time and at run time.
 *
 * The library version (TF_VERSION_*) is independent of the plugin ABI
 * versions (TF_ENGINE_ABI_* in engine_abi.h): the library can gain functions
 * without a plugin noticing, and the ABI can gain a minor without the
 * library's major changing.
 */
#ifndef TENFERRO_VERSION_H
#define TENFERRO_VERSION_H

#ifdef __cplusplus
extern "C" {
#endif

#define TF_VERSION_MAJOR 0
#define TF_VERSION_MINOR 1
#define TF_VERSION_PATCH 0
#define TF_VERSION_STRING "0.1.0"

/* MAJOR * 10000 + MINOR * 100 + PATCH, for #if comparisons. */
#define TF_VERSION_NUMBER (TF_VERSION_MAJOR * 10000 + TF_VERSION_MINOR * 100 + TF_VERSION_PATCH)

/*
 * The version of the library actually loaded, as TF_VERSION_NUMBER would
 * give it. Compare with TF_VERSION_NUMBER to detect a header/library skew.
 * Any thread.
 */
int tf_version_number(void);

/* The loaded library's version string, e.g. "0.1.0". Static. Any thread. */
const char *tf_version_string(void);

#ifdef __cplusplus
}
#endif
#endif /* TENFERRO_VERSION_H */
