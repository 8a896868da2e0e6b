/* abi_only.c - a plugin author's file: compiles against the ABI header alone. */
#include <tenferro/engine_abi.h>

unsigned abi_only_major(void);
unsigned abi_only_major(void)
{
    return TF_ENGINE_ABI_MAJOR;
}
