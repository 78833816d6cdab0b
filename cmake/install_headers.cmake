# Run by `cmake --install`: copies the public headers to <prefix>/include/ember/<layer>/ and rewrites their
# includes of Ember's own headers ("core/tensor.h") to the installed form ("ember/core/tensor.h"), so that a
# user's include path needs <prefix>/include only and gains no bare core/, nn/, data/, backends/ folders.
# Inputs (set by the install(CODE) before it): EMBER_SOURCE_DIR, EMBER_HEADER_DEST, EMBER_INSTALL_ONNX.
set(layers base backends core autograd nn optim data distributed observe onnx)
list(JOIN layers "|" layer_regex)
file(GLOB_RECURSE headers RELATIVE "${EMBER_SOURCE_DIR}"
     "${EMBER_SOURCE_DIR}/base/*.h" "${EMBER_SOURCE_DIR}/backends/*.h" "${EMBER_SOURCE_DIR}/core/*.h" "${EMBER_SOURCE_DIR}/autograd/*.h"
     "${EMBER_SOURCE_DIR}/nn/*.h" "${EMBER_SOURCE_DIR}/optim/*.h" "${EMBER_SOURCE_DIR}/data/*.h"
     "${EMBER_SOURCE_DIR}/distributed/*.h" "${EMBER_SOURCE_DIR}/observe/*.h")
list(FILTER headers EXCLUDE REGEX "^backends/cuda/")  # the CUDA backend's internals
list(APPEND headers "include/ember/ember.h")
if(EMBER_INSTALL_ONNX)
  list(APPEND headers "onnx/export.h")  # ember::onnx's API (its graph builder's headers stay internal)
endif()
foreach(header IN LISTS headers)
  file(READ "${EMBER_SOURCE_DIR}/${header}" text)
  string(REGEX REPLACE "#include \"(${layer_regex})/" "#include \"ember/\\1/" text "${text}")
  string(REGEX REPLACE "^include/ember/" "" dest "${header}")
  set(path "${EMBER_HEADER_DEST}/${dest}")
  message(STATUS "Installing: ${path}")
  file(WRITE "${path}" "${text}")
endforeach()
