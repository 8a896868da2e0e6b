# embed_text.cmake - writes the text of IN as `static const char NAME[]` into OUT.
# Usage: cmake -DIN=file -DOUT=file.h -DNAME=identifier -P embed_text.cmake
file(READ "${IN}" text)
string(REPLACE "\\" "\\\\" text "${text}")
string(REPLACE "\"" "\\\"" text "${text}")
string(REPLACE "\n" "\\n\"\n\"" text "${text}")
file(WRITE "${OUT}" "/* generated from ${IN} by embed_text.cmake: do not edit */\nstatic const char ${NAME}[] =\n\"${text}\";\n")
