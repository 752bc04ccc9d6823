# Toolchain file for the browser build of the core (Emscripten, wasm32 + SIMD128).
# Usage: cmake -DCMAKE_TOOLCHAIN_FILE=emscripten.cmake ...
# Debian's emscripten package keeps its CMake platform file here.
include(/usr/share/emscripten/cmake/Modules/Platform/Emscripten.cmake)
# emcc's JS optimiser (run at link time) needs Debian's acorn module
set(CMAKE_C_COMPILER_LAUNCHER ${CMAKE_COMMAND} -E env NODE_PATH=/usr/share/nodejs)
set(CMAKE_C_LINKER_LAUNCHER ${CMAKE_COMMAND} -E env NODE_PATH=/usr/share/nodejs)
set(CMAKE_CROSSCOMPILING_EMULATOR node)
