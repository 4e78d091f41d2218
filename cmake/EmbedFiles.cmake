# cmake -DOUT=file.cc -DNAME=sym -DFILES="a;b" -P EmbedFiles.cmake
# Writes a C++ source with `const std::vector<std::pair<std::string,std::string>> NAME` holding
# (file name, contents) for each input file, in the given order.
set(body "#include <string>\n#include <utility>\n#include <vector>\nnamespace tunectl {\n")
string(APPEND body "extern const std::vector<std::pair<std::string, std::string>> ${NAME};\n")
string(APPEND body "const std::vector<std::pair<std::string, std::string>> ${NAME} = {\n")
foreach(f IN LISTS FILES)
  file(READ "${f}" content)
  get_filename_component(base "${f}" NAME)
  string(APPEND body "  {\"${base}\", R\"tunectl_embed(${content})tunectl_embed\"},\n")
endforeach()
string(APPEND body "};\n}  // namespace tunectl\n")
file(WRITE "${OUT}.tmp" "${body}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
