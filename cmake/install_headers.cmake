# Run by `cmake --install`: copies the public headers (cmake/public_headers.cmake) to
# <prefix>/include/ember/<layer>/ and rewrites their includes of Ember's own headers ("core/tensor.h") to the
# installed form ("ember/core/tensor.h"), so that a user's include path needs <prefix>/include only and gains
# no bare core/, nn/, data/, backends/ folders.
# Inputs (set by the install(CODE) before it): EMBER_SOURCE_DIR, EMBER_HEADER_DEST, EMBER_INSTALL_ONNX.
set(layers base backends core autograd nn optim data distributed observe onnx)
list(JOIN layers "|" layer_regex)
include("${EMBER_SOURCE_DIR}/cmake/public_headers.cmake")
set(headers ${EMBER_PUBLIC_HEADERS})
if(EMBER_INSTALL_ONNX)
  list(APPEND headers ${EMBER_PUBLIC_ONNX_HEADERS})
endif()
foreach(header IN LISTS headers)
  file(READ "${EMBER_SOURCE_DIR}/${header}" text)
  string(REGEX REPLACE "#include \"(${layer_regex})/" "#include \"ember/\\1/" text "${text}")
  string(REGEX REPLACE "^include/ember/" "" dest "${header}")
  set(path "${EMBER_HEADER_DEST}/${dest}")
  message(STATUS "Installing: ${path}")
  file(WRITE "${path}" "${text}")
endforeach()
