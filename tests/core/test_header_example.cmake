# test_header_example.cmake - extracts the example program of tenferro.h.
#
#   cmake -DHEADER=<.../tenferro.h> -DOUT=<.../header_example.c> -P test_header_example.cmake
#
# Writes the lines between the header's two marker lines to OUT, with a #line
# directive so that a compiler error points into the header. Fails (and so
# fails the build) when a marker is missing, appears twice or out of order, or
# what lies between them is not a program. tests/core/CMakeLists.txt compiles
# the result against the public headers and registers it as test_header_example,
# so the program the header documents cannot rot.
if(NOT DEFINED HEADER OR NOT DEFINED OUT)
  message(FATAL_ERROR
          "usage: cmake -DHEADER=tenferro.h -DOUT=program.c -P ${CMAKE_CURRENT_LIST_FILE}")
endif()
set(begin_marker "/* ---- tenferro.h example program: begin ---- */\n")
set(end_marker "/* ---- tenferro.h example program: end ---- */")

file(READ "${HEADER}" text)
string(FIND "${text}" "${begin_marker}" first_begin)
string(FIND "${text}" "${begin_marker}" last_begin REVERSE)
string(FIND "${text}" "${end_marker}" first_end)
string(FIND "${text}" "${end_marker}" last_end REVERSE)
if(first_begin EQUAL -1 OR first_end EQUAL -1)
  message(FATAL_ERROR "${HEADER}: the example program's marker lines are missing "
                      "(expected '${end_marker}' and its begin line)")
endif()
if(NOT first_begin EQUAL last_begin OR NOT first_end EQUAL last_end OR first_end LESS first_begin)
  message(FATAL_ERROR "${HEADER}: expected one begin marker line followed by one end marker")
endif()

string(LENGTH "${begin_marker}" begin_length)
math(EXPR start "${first_begin} + ${begin_length}")
math(EXPR length "${first_end} - ${start}")
string(SUBSTRING "${text}" ${start} ${length} program)
string(FIND "${program}" "int main(void)" has_main)
if(has_main EQUAL -1)
  message(FATAL_ERROR "${HEADER}: the text between the example markers has no 'int main(void)'")
endif()

# The program's first line is the line after the begin marker.
string(SUBSTRING "${text}" 0 ${start} before)
string(REGEX MATCHALL "\n" newlines "${before}")
list(LENGTH newlines line)
math(EXPR line "${line} + 1")
file(WRITE "${OUT}" "/* Extracted from tenferro.h at build time: edit the program there. */\n"
                    "#line ${line} \"${HEADER}\"\n${program}")
