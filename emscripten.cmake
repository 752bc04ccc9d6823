# Toolchain file for the browser build of the core (Emscripten, wasm32 + SIMD128).
# Usage: cmake -DCMAKE_TOOLCHAIN_FILE=emscripten.cmake ...
# Debian's emscripten package keeps its CMake platform file here.
include(/usr/share/emscripten/cmake/Modules/Platform/Emscripten.cmake)
# emcc's JS optimiser (run at link time) needs Debian's acorn module
set(CMAKE_C_LINKER_LAUNCHER ${CMAKE_COMMAND} -E env NODE_PATH=/usr/share/nodejs)
set(CMAKE_CROSSCOMPILING_EMULATOR node)
# Objects are compiled by the clang that emcc runs, with the flags that `emcc
# --cflags` prints (Emscripten's way for a build system to call clang
# itself); links stay emcc's. emcc is a Python program whose start costs
# some 0.25 s a file: this tree took 99 s of CPU through emcc and 71 s so,
# every .wasm and .js it makes the same byte for byte (2-core Zen 4).
execute_process(COMMAND em-config LLVM_ROOT OUTPUT_VARIABLE emcc_llvm_root OUTPUT_STRIP_TRAILING_WHITESPACE
                COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND em-config CLANG_ADD_VERSION OUTPUT_VARIABLE emcc_clang_version OUTPUT_STRIP_TRAILING_WHITESPACE
                COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND emcc --cflags OUTPUT_VARIABLE emcc_cflags OUTPUT_STRIP_TRAILING_WHITESPACE
                COMMAND_ERROR_IS_FATAL ANY)
if(emcc_clang_version STREQUAL "None" OR emcc_clang_version STREQUAL "")
  set(emcc_clang ${emcc_llvm_root}/clang)
else()
  set(emcc_clang ${emcc_llvm_root}/clang-${emcc_clang_version})
endif()
set(CMAKE_C_COMPILE_OBJECT "${emcc_clang} ${emcc_cflags} <DEFINES> <INCLUDES> <FLAGS> -o <OBJECT> -c <SOURCE>")
