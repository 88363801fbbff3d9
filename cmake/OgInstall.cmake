# The library as C users install it: a shared library with a versioned soname that
# exports only the public API, the static library, the header, a pkg-config file, a CMake
# package config, and the CLI. `pip install .` (scikit-build-core, SKBUILD set) builds
# only the shared library and installs it into the Python package (component "python").
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Exported symbols: exactly the functions the public header declares. The list is read
# from the header at configure time (re-read whenever it changes), so a function added
# to the header is exported without touching this file; everything else (internal
# helpers, even og_-prefixed ones) stays local. tests/install checks `nm -D` against it.
set(OG_PUBLIC_HEADER ${PROJECT_SOURCE_DIR}/include/onnx_genai.h)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${OG_PUBLIC_HEADER})
file(READ ${OG_PUBLIC_HEADER} og_header)
string(REGEX REPLACE "/\\*([^*]|\\*+[^*/])*\\*+/" "" og_header "${og_header}")
string(REGEX MATCHALL "og_[a-z0-9_]+[ \t\n]*\\(" og_calls "${og_header}")
set(og_exports "")
foreach(c IN LISTS og_calls)
  string(REGEX REPLACE "[ \t\n]*\\($" "" c "${c}")
  list(APPEND og_exports "${c}")
endforeach()
list(REMOVE_DUPLICATES og_exports)
list(SORT og_exports)
list(JOIN og_exports ";\n    " og_export_lines)
set(OG_VERSION_SCRIPT ${CMAKE_BINARY_DIR}/onnx_genai.map)
file(CONFIGURE OUTPUT ${OG_VERSION_SCRIPT}
     CONTENT "/* Generated from include/onnx_genai.h by cmake/OgInstall.cmake. */\n{\n  global:\n    ${og_export_lines};\n  local: *;\n};\n")
file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/onnx_genai_exports.txt CONTENT "${og_exports}")

# The shared library is the static one's objects (built position-independent) linked
# whole, so the sources compile once for both.
file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/og_shared_stub.c
     CONTENT "/* The shared library's objects all come from the static library. */\ntypedef int og_shared_stub_unused;\n")
add_library(onnx_genai_shared SHARED ${CMAKE_BINARY_DIR}/og_shared_stub.c)
target_link_libraries(onnx_genai_shared PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,onnx_genai>")
target_include_directories(onnx_genai_shared PUBLIC
                           $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_options(onnx_genai_shared PRIVATE -Wl,--version-script=${OG_VERSION_SCRIPT})
if(NOT OG_SANITIZE AND NOT OG_FUZZ)
  # Every symbol resolved at link time (sanitizer builds leave their runtime's symbols to
  # the executable, so not there).
  target_link_options(onnx_genai_shared PRIVATE -Wl,--no-undefined)
endif()
set_target_properties(onnx_genai_shared PROPERTIES
                      OUTPUT_NAME onnx_genai EXPORT_NAME onnx_genai
                      VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
                      LINK_DEPENDS ${OG_VERSION_SCRIPT})
set_target_properties(onnx_genai PROPERTIES EXPORT_NAME onnx_genai_static)

if(SKBUILD)
  # The Python package loads the library by its path (ctypes), so one file named
  # libonnx_genai.so beside __init__.py is all it needs.
  install(FILES $<TARGET_FILE:onnx_genai_shared> DESTINATION onnx_genai
          RENAME libonnx_genai.so COMPONENT python)
  return()
endif()

set(OG_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/onnx-genai)
install(TARGETS onnx_genai_shared onnx_genai EXPORT onnx-genai-targets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS onnx-genai RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${OG_PUBLIC_HEADER} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT onnx-genai-targets NAMESPACE onnx-genai:: DESTINATION ${OG_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/onnx-genai-config.cmake.in
                              ${CMAKE_BINARY_DIR}/onnx-genai-config.cmake
                              INSTALL_DESTINATION ${OG_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/onnx-genai-config-version.cmake
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/onnx-genai-config.cmake
              ${CMAKE_BINARY_DIR}/onnx-genai-config-version.cmake
        DESTINATION ${OG_CMAKE_DIR})

# pkg-config: the prefix is found from the .pc file's own place, so the file is right
# wherever `cmake --install --prefix P` puts it.
set(og_up "..")
string(REGEX MATCHALL "[^/]+" og_libdir_parts "${CMAKE_INSTALL_LIBDIR}")
foreach(p IN LISTS og_libdir_parts)
  string(APPEND og_up "/..")
endforeach()
set(OG_PC_PREFIX "\${pcfiledir}/${og_up}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/onnx-genai.pc.in ${CMAKE_BINARY_DIR}/onnx-genai.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/onnx-genai.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
