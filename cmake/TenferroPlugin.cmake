# Building the bundled plugins exactly as a third party would: through the
# helper installed with the CMake package (TenferroPluginHelpers.cmake), so a
# plugin sees only the public headers (tenferro::abi, never core/src),
# exports only its entry symbol, and never links libtenferro.
#
# tf_add_engine_plugin(NAME <name> SOURCES <files...> [LIBRARIES <libs...>]
#                      [INCLUDES <dirs...>] [OUTPUT_DIR <dir>])
#   builds tenferro-engine-<name>.so (entry tf_engine_plugin_v1).
# tf_add_extension_module (TenferroExtension.cmake) builds tenferro-ext-<name>.so
# the same way.
#
# What the in-tree wrappers add to the installed helper: the output lands in
# the build tree's plugin folder (TF_PLUGIN_BUILD_DIR, which the library of
# this build tree searches) unless OUTPUT_DIR says otherwise; the project's
# warning set; and no --no-undefined under sanitizers (their runtimes live in
# the executable, so a plugin's references to them resolve only at load).
include(TenferroPluginHelpers)

# The one implementation behind both wrappers: `kind` is "engine" or "ext".
function(tf__add_plugin_module kind)
  cmake_parse_arguments(P "" "NAME;OUTPUT_DIR" "" ${ARGN})
  if(NOT P_OUTPUT_DIR)
    set(P_OUTPUT_DIR ${TF_PLUGIN_BUILD_DIR})
  endif()
  set(extra "")
  if(TF_SANITIZE)
    set(extra ALLOW_UNDEFINED)
  endif()
  if(kind STREQUAL "engine")
    tenferro_add_engine_plugin(NAME ${P_NAME} OUTPUT_DIR ${P_OUTPUT_DIR} ${P_UNPARSED_ARGUMENTS} ${extra})
    set(target tenferro-engine-${P_NAME})
  else()
    tenferro_add_extension_module(NAME ${P_NAME} OUTPUT_DIR ${P_OUTPUT_DIR} ${P_UNPARSED_ARGUMENTS} ${extra})
    set(target tenferro-ext-${P_NAME})
  endif()
  tf_target_warnings(${target})
endfunction()

function(tf_add_engine_plugin)
  tf__add_plugin_module(engine ${ARGN})
endfunction()
