# cmake -DIN=file -DOUT=file.cpp -DNAME=kSymbol -DNAMESPACE=ns -P RingsideEmbedText.cmake
# Writes OUT defining `extern const char NAME[]` (in NAMESPACE) holding the text of IN,
# so a file kept readable in the source tree (an HTML template) ships inside the binary.
file(READ "${IN}" text)
set(delim "ringside_embed")
string(FIND "${text}" ")${delim}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw string delimiter )${delim}\"")
endif()
file(WRITE "${OUT}.tmp"
  "// Generated from ${IN} by cmake/RingsideEmbedText.cmake: edit that file.\n"
  "namespace ${NAMESPACE} {\nextern const char ${NAME}[];\n"
  "const char ${NAME}[] = R\"${delim}(${text})${delim}\";\n}\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
