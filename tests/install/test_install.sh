#!/usr/bin/env bash
# The library as C users meet it: install into a temporary prefix, check what is there
# (versioned soname, static library, header, pkg-config file, CMake package, CLI) and
# that the shared library exports exactly the header's og_ functions, then build
# examples/generate.c as an outside program three ways (pkg-config shared, pkg-config
# static, CMake find_package) and run each on the tiny gpt2 package.
#
#   test_install.sh BUILD_DIR SOURCE_DIR SHARED_DIR
set -uo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd) shared=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/og-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
finish() { echo "$pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit $?; }

if ! cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1; then
  bad "cmake --install: $(tail -3 "$work/install.log")"
  finish
fi
ok "cmake --install $build --prefix <tmp>"

libdir=$(cd "$prefix" && dirname "$(find . -name 'libonnx_genai.a' | head -1)")
libdir=$prefix/${libdir#./}
for f in include/onnx_genai.h bin/onnx-genai; do
  [ -e "$prefix/$f" ] && ok "installed $f" || bad "$f is not installed"
done
for f in libonnx_genai.a libonnx_genai.so pkgconfig/onnx-genai.pc \
         cmake/onnx-genai/onnx-genai-config.cmake cmake/onnx-genai/onnx-genai-config-version.cmake \
         cmake/onnx-genai/onnx-genai-targets.cmake; do
  [ -e "$libdir/$f" ] && ok "installed ${libdir#$prefix/}/$f" || bad "${libdir#$prefix/}/$f is not installed"
done
soname=$(readelf -d "$libdir/libonnx_genai.so" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
real=$(readlink -f "$libdir/libonnx_genai.so")
if [[ "$soname" =~ ^libonnx_genai\.so\.[0-9]+$ ]] && [ -e "$libdir/$soname" ] &&
   [[ "$(basename "$real")" =~ ^libonnx_genai\.so\.[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  ok "soname $soname -> $(basename "$real")"
else
  bad "soname '$soname', library file '$(basename "$real")'"
fi

# Exported symbols: every defined dynamic symbol is one the header declares, and every
# function the header declares is exported.
nm -D --defined-only "$libdir/libonnx_genai.so" | awk '{print $3}' | sed 's/@.*//' |
  grep -v '^$' | sort -u >"$work/exported"
tr ';' '\n' <"$build/onnx_genai_exports.txt" | grep -v '^$' | sort -u >"$work/declared"
extra=$(comm -23 "$work/exported" "$work/declared")
missing=$(comm -13 "$work/exported" "$work/declared")
if [ -z "$extra" ] && [ -z "$missing" ]; then
  ok "nm -D: exactly the $(wc -l <"$work/declared") functions of onnx_genai.h are exported"
else
  bad "nm -D: exported but not in the header: [${extra//$'\n'/ }]; declared but not exported: [${missing//$'\n'/ }]"
fi

model=$shared/models/ortgenai/hf-internal-testing/tiny-random-gpt2-fp32
want="0 0 195 731 731 114 114 114 114 114"
run_example() { # LABEL BINARY [ENV...]
  local label=$1 bin=$2
  shift 2
  if [ ! -d "$model" ]; then
    echo "SKIP $label: run: $model is missing"
    return
  fi
  local got
  got=$(env "$@" "$bin" "$model" 10 0 0 195 731 2>&1)
  [ "$got" = "$want" ] && ok "$label: runs ($got)" || bad "$label: printed '$got', expected '$want'"
}

export PKG_CONFIG_PATH=$libdir/pkgconfig
if flags=$(pkg-config --cflags --libs onnx-genai 2>&1) &&
   cc -std=c11 -Wall -Wextra -Werror "$src/examples/generate.c" $flags -o "$work/gen-pc" 2>"$work/cc.log"; then
  ok "pkg-config: cc examples/generate.c \$(pkg-config --cflags --libs onnx-genai)"
  if readelf -d "$work/gen-pc" | grep -q "NEEDED.*\[$soname\]"; then
    ok "pkg-config: the program needs $soname"
  else
    bad "pkg-config: the program does not record $soname as NEEDED"
  fi
  run_example "pkg-config (shared)" "$work/gen-pc" LD_LIBRARY_PATH="$libdir"
else
  bad "pkg-config build: $flags $(cat "$work/cc.log")"
fi
if flags=$(pkg-config --static --cflags --libs onnx-genai 2>&1) &&
   cc -std=c11 "$src/examples/generate.c" -Wl,-Bstatic -lonnx_genai -Wl,-Bdynamic $flags \
      -o "$work/gen-static" 2>"$work/cc.log"; then
  if readelf -d "$work/gen-static" | grep -q "libonnx_genai"; then
    bad "pkg-config --static: the program still needs libonnx_genai.so"
  else
    ok "pkg-config --static: linked against libonnx_genai.a"
    run_example "pkg-config (static)" "$work/gen-static"
  fi
else
  bad "pkg-config --static build: $flags $(cat "$work/cc.log")"
fi

mkdir -p "$work/outside"
cat >"$work/outside/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.20)
project(outside C)
find_package(onnx-genai 0.1 REQUIRED)
add_executable(gen-shared "$src/examples/generate.c")
target_link_libraries(gen-shared PRIVATE onnx-genai::onnx_genai)
add_executable(gen-static "$src/examples/generate.c")
target_link_libraries(gen-static PRIVATE onnx-genai::onnx_genai_static)
CMAKE
if cmake -S "$work/outside" -B "$work/outside/build" -DCMAKE_PREFIX_PATH="$prefix" \
     -DCMAKE_BUILD_TYPE=Release >"$work/cmake.log" 2>&1 &&
   cmake --build "$work/outside/build" -j2 >>"$work/cmake.log" 2>&1; then
  ok "find_package(onnx-genai): configured and built (shared and static targets)"
  # The imported shared target carries the library's path, so no LD_LIBRARY_PATH: CMake
  # sets the build tree's RPATH.
  run_example "find_package (onnx-genai::onnx_genai)" "$work/outside/build/gen-shared"
  run_example "find_package (onnx-genai::onnx_genai_static)" "$work/outside/build/gen-static"
else
  bad "find_package build: $(tail -15 "$work/cmake.log")"
fi

if out=$("$prefix/bin/onnx-genai" --help 2>&1) && grep -q "generate" <<<"$out"; then
  ok "the installed CLI runs"
else
  bad "installed onnx-genai --help: $(head -3 <<<"$out")"
fi
finish
