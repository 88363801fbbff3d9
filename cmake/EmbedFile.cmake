# cmake -DIN=FILE -DOUT=FILE.c -DNAME=symbol -P EmbedFile.cmake: writes a C file that
# defines `const char NAME[]`, FILE's bytes and a NUL (the server's chat page lives as
# plain HTML in the source tree and is compiled into the binary).
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE "${OUT}.tmp" "/* Generated from ${IN} by cmake/EmbedFile.cmake. */\nconst char ${NAME}[] = {\n${bytes}0x00};\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
