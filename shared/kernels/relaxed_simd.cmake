# Writes the Emscripten library relaxed_simd.js (see relaxed_simd.js.in) with
# the two builds of relaxed_tile.c's module in it, after checking that their
# code reads no global (a stack pointer would mean a stack in the client's
# memory that nobody reserved).
#   cmake -DNM=llvm-nm-16 "-DOBJECTS=a.o;b.o" -DSHARED=a.wasm -DPLAIN=b.wasm
#         -DTEMPLATE=relaxed_simd.js.in -DOUT=relaxed_simd.js -P relaxed_simd.cmake
foreach(object IN LISTS OBJECTS)
  execute_process(COMMAND ${NM} ${object} OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "relaxed_simd: ${NM} ${object} failed")
  endif()
  string(REGEX REPLACE "[^\n]* T relaxed_(panel|f32_panel|fused|one_panel|dot_kind)\n" "" others "${symbols}")
  if(NOT others STREQUAL "")
    message(FATAL_ERROR "relaxed_simd: relaxed_tile.c must use no stack, global or call, but ${object} names:\n${others}")
  endif()
endforeach()
file(READ ${SHARED} RELAXED_SHARED_HEX HEX)
file(READ ${PLAIN} RELAXED_PLAIN_HEX HEX)
configure_file(${TEMPLATE} ${OUT} @ONLY)
