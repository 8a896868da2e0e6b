# TenferroInstallDocs.cmake - the documentation as installed (cmake -P).
#
#   cmake -DTF_SRC=<source tree> -DTF_OUT=<folder> -DTF_DOC_TO_PREFIX=<path>
#         -DTF_INCLUDEDIR=<include dir> -P TenferroInstallDocs.cmake
#
# Writes into TF_OUT (emptied first) the tree installed as
# <prefix>/share/doc/tenferro: README.md, docs/*.md, the figures docs/*.png,
# sdk/README.md and the SDK's templates (sdk/templates/**), laid out as in the
# source tree so that
# links between them stay as they are. Links of the Markdown files that lead
# elsewhere are rewritten for the installed tree:
#   - to a public header (core/include/tenferro/..., train/include/tenferro/...,
#     plugins/extensions/einsum/include/tenferro/...): to the installed header,
#     <prefix>/<TF_INCLUDEDIR>/tenferro/..., TF_DOC_TO_PREFIX being the way
#     from share/doc/tenferro up to the prefix;
#   - to anything else of the source tree (a source file, a test, a plugin's
#     folder): the link becomes its text, followed by the path it named and
#     "in the tenferro source tree", since an installed tree has no such file.
# Anchors (#section) are kept. tests/install/test_docs.sh checks that every
# relative link of the installed tree resolves.
cmake_minimum_required(VERSION 3.20)

foreach(v TF_SRC TF_OUT TF_DOC_TO_PREFIX TF_INCLUDEDIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "TenferroInstallDocs.cmake: ${v} is not set")
  endif()
endforeach()

# The installed documents, relative to TF_SRC (and to TF_OUT).
file(GLOB tf_doc_files RELATIVE ${TF_SRC} ${TF_SRC}/README.md ${TF_SRC}/docs/*.md
     ${TF_SRC}/docs/*.png ${TF_SRC}/sdk/README.md)
file(GLOB_RECURSE tf_template_files RELATIVE ${TF_SRC} ${TF_SRC}/sdk/templates/*)
list(APPEND tf_doc_files ${tf_template_files})
list(SORT tf_doc_files)

# Whether `path` (relative to TF_SRC, normalized) is installed with the docs.
function(tf_doc_installed path out)
  set(yes FALSE)
  if(path STREQUAL "README.md" OR path MATCHES "^(docs|sdk)(/|$)")
    if(EXISTS ${TF_SRC}/${path})
      set(yes TRUE)
    endif()
  endif()
  set(${out} ${yes} PARENT_SCOPE)
endfunction()

# The link `link` of the document `doc` (both relative) as the installed tree needs it,
# in ${out}; ${out}_drop is the source path when the link must become plain text.
function(tf_doc_link doc link out)
  set(${out} "${link}" PARENT_SCOPE)
  set(${out}_drop "" PARENT_SCOPE)
  if(link MATCHES "^[a-zA-Z][a-zA-Z0-9+.-]*:" OR link MATCHES "^#" OR link STREQUAL "")
    return() # a URL, an anchor of the same page
  endif()
  string(REGEX MATCH "#.*$" anchor "${link}")
  string(REGEX REPLACE "#.*$" "" path "${link}")
  get_filename_component(dir "${doc}" DIRECTORY)
  if(dir)
    set(target "${dir}/${path}")
  else()
    set(target "${path}")
  endif()
  cmake_path(NORMAL_PATH target)
  string(REGEX REPLACE "/$" "" target "${target}")
  if(target MATCHES "^(core|train|plugins/extensions/einsum)/include/tenferro(/.*)?$")
    set(rest "${CMAKE_MATCH_2}")
    set(up "${TF_DOC_TO_PREFIX}")
    if(dir)
      string(REGEX REPLACE "[^/]+" ".." dir_up "${dir}")
      set(up "${dir_up}/${up}")
    endif()
    set(${out} "${up}/${TF_INCLUDEDIR}/tenferro${rest}${anchor}" PARENT_SCOPE)
    return()
  endif()
  tf_doc_installed("${target}" installed)
  if(NOT installed)
    set(${out}_drop "${target}" PARENT_SCOPE)
  endif()
endfunction()

# The targets of the links "](target)" in text, in ${out} (a list: no target has a ';'
# or a bracket, which CMake lists would split on or keep together).
function(tf_doc_links text out)
  set(links "")
  set(rest "${text}")
  while(TRUE)
    string(FIND "${rest}" "](" at)
    if(at EQUAL -1)
      break()
    endif()
    math(EXPR at "${at} + 2")
    string(SUBSTRING "${rest}" ${at} -1 rest)
    string(REGEX MATCH "^[^]()\n ;[]*\\)" m "${rest}")
    if(m)
      string(REGEX REPLACE "\\)$" "" m "${m}")
      list(APPEND links "${m}")
    endif()
  endwhile()
  list(REMOVE_DUPLICATES links)
  set(${out} "${links}" PARENT_SCOPE)
endfunction()

function(tf_doc_rewrite doc text out)
  tf_doc_links("${text}" links)
  foreach(link IN LISTS links)
    tf_doc_link("${doc}" "${link}" new)
    if(new_drop)
      string(REPLACE "](${link})" "](@@TF_DROP@@)" text "${text}")
      foreach(same "[`${new_drop}`]" "[${new_drop}]") # the link's text is the path itself
        string(REPLACE "${same}(@@TF_DROP@@)" "`${new_drop}` (in the tenferro source tree)" text
               "${text}")
      endforeach()
      string(REGEX REPLACE "\\[([^]\n]*)\\]\\(@@TF_DROP@@\\)"
             "\\1 (`${new_drop}` in the tenferro source tree)" text "${text}")
    elseif(NOT new STREQUAL link)
      string(REPLACE "](${link})" "](${new})" text "${text}")
    endif()
  endforeach()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${TF_OUT})
foreach(doc IN LISTS tf_doc_files)
  get_filename_component(sub "${doc}" DIRECTORY)
  if(doc MATCHES "\\.md$")
    file(READ ${TF_SRC}/${doc} text)
    tf_doc_rewrite("${doc}" "${text}" text)
    file(WRITE ${TF_OUT}/${doc} "${text}")
  else()
    file(COPY ${TF_SRC}/${doc} DESTINATION ${TF_OUT}/${sub})
  endif()
endforeach()
