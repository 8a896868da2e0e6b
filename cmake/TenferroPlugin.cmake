# Building plugins exactly as a third party would: a MODULE library that sees
# only the public headers (never core/src), exports only its entry symbol,
# and never links libtenferro.
#
# tf_add_engine_plugin(NAME <name> SOURCES <files...> [LIBRARIES <libs...>]
#                      [INCLUDES <dirs...>] [OUTPUT_DIR <dir>])
#   builds tenferro-engine-<name>.so (entry tf_engine_plugin_v1).
# tf_add_extension_module (TenferroExtension.cmake) builds tenferro-ext-<name>.so
# the same way. Both land in the build tree's plugin folder unless OUTPUT_DIR
# says otherwise.

# The one implementation behind both: `prefix` is the file-name prefix.
function(tf__add_plugin_module prefix)
  cmake_parse_arguments(P "" "NAME;OUTPUT_DIR" "SOURCES;LIBRARIES;INCLUDES" ${ARGN})
  set(target ${prefix}${P_NAME})
  add_library(${target} MODULE ${P_SOURCES})
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    OUTPUT_NAME ${target}
    C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${TF_PLUGIN_BUILD_DIR})
  if(P_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${P_OUTPUT_DIR})
  endif()
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/core/include ${P_INCLUDES})
  target_link_libraries(${target} PRIVATE ${P_LIBRARIES})
  if(NOT TF_SANITIZE)
    # Every symbol a plugin uses must resolve at link time (sanitizer runtimes
    # live in the executable, so the check is off for those builds).
    target_link_options(${target} PRIVATE -Wl,--no-undefined)
  endif()
  tf_target_warnings(${target})
endfunction()

function(tf_add_engine_plugin)
  tf__add_plugin_module(tenferro-engine- ${ARGN})
endfunction()
