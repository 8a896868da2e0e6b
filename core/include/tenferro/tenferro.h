/*
 * tenferro/tenferro.h - everything an application includes.
 *
 * Plugin authors include only engine_abi.h (engines) or extension_abi.h
 * (extension modules); they never link libtenferro.
 */
#ifndef TENFERRO_TENFERRO_H
#define TENFERRO_TENFERRO_H

#include "config.h"
#include "dtype.h"
#include "engine.h"
#include "engine_abi.h"
#include "extension.h"
#include "ops.h"
#include "runtime.h"
#include "status.h"
#include "system.h"
#include "tensor.h"
#include "version.h"

#endif /* TENFERRO_TENFERRO_H */
