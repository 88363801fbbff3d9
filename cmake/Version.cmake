# Writes OUT, a C file with the project's version and the git commit of the checkout SRC
# (abbreviated, "-dirty" when files differ from it; "" when SRC is no git checkout or git
# is missing), for `onnx-genai --version`. The file is rewritten only when its text
# changes, so a build at the same commit compiles nothing again.
execute_process(COMMAND git -C "${SRC}" rev-parse --short=12 HEAD
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE rc ERROR_QUIET)
if(NOT rc EQUAL 0)
  set(commit "")
endif()
if(commit)
  execute_process(COMMAND git -C "${SRC}" diff --quiet HEAD -- RESULT_VARIABLE dirty ERROR_QUIET)
  if(dirty EQUAL 1)
    set(commit "${commit}-dirty")
  endif()
endif()
set(text "/* Written by cmake/Version.cmake. */\nconst char og_cli_version[] = \"${VERSION}\";\nconst char og_cli_commit[] = \"${commit}\";\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
