# tf_add_extension_module(NAME <name> SOURCES <files...> [LIBRARIES <libs...>] [OUTPUT_DIR d])
#
# Builds an extension module exactly as a third party would: a MODULE library
# named tenferro-ext-<name>.so that sees only the public headers (never
# core/src), exports only its entry symbol tf_extension_module_v1, and never
# links libtenferro. It lands in the build tree's plugin folder unless
# OUTPUT_DIR says otherwise.
function(tf_add_extension_module)
  cmake_parse_arguments(P "" "NAME;OUTPUT_DIR" "SOURCES;LIBRARIES;INCLUDES" ${ARGN})
  set(target tenferro-ext-${P_NAME})
  add_library(${target} MODULE ${P_SOURCES})
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    OUTPUT_NAME tenferro-ext-${P_NAME}
    C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${TF_PLUGIN_BUILD_DIR})
  if(P_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${P_OUTPUT_DIR})
  endif()
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/core/include ${P_INCLUDES})
  target_link_libraries(${target} PRIVATE ${P_LIBRARIES})
  if(NOT TF_SANITIZE)
    target_link_options(${target} PRIVATE -Wl,--no-undefined)
  endif()
  tf_target_warnings(${target})
endfunction()
