# The libraries h2rpc builds on, from the system (Debian 12's -dev packages),
# found the same way by h2rpc's own build and by h2rpcConfig.cmake:
#   h2rpc_find_dependencies(find_package REQUIRED)   # h2rpc's build
#   h2rpc_find_dependencies(find_dependency)         # h2rpcConfig.cmake
# nghttp2 and libmicrohttpd (the Prometheus endpoint) come from pkg-config
# (neither ships a CMake package), as PkgConfig::h2rpc_nghttp2 and
# PkgConfig::h2rpc_microhttpd; http_parser (HTTP/1.1 requests), which ships
# neither, by its header and library names, as h2rpc::http_parser; Abseil
# from its CMake package (absl::<module>), Protobuf, OpenSSL and ZLIB from
# CMake's own find modules.
macro(h2rpc_find_dependencies find)
  cmake_language(CALL ${find} Protobuf ${ARGN})
  cmake_language(CALL ${find} OpenSSL ${ARGN})
  cmake_language(CALL ${find} ZLIB ${ARGN})
  cmake_language(CALL ${find} absl CONFIG ${ARGN})
  cmake_language(CALL ${find} PkgConfig ${ARGN})
  if(NOT TARGET PkgConfig::h2rpc_nghttp2)
    pkg_check_modules(h2rpc_nghttp2 REQUIRED IMPORTED_TARGET libnghttp2)
  endif()
  if(NOT TARGET PkgConfig::h2rpc_microhttpd)
    pkg_check_modules(h2rpc_microhttpd REQUIRED IMPORTED_TARGET libmicrohttpd)
  endif()
  if(NOT TARGET h2rpc::http_parser)
    find_path(H2RPC_HTTP_PARSER_INCLUDE_DIR http_parser.h REQUIRED)
    find_library(H2RPC_HTTP_PARSER_LIBRARY http_parser REQUIRED)
    add_library(h2rpc::http_parser UNKNOWN IMPORTED)
    set_target_properties(
      h2rpc::http_parser PROPERTIES
      IMPORTED_LOCATION "${H2RPC_HTTP_PARSER_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${H2RPC_HTTP_PARSER_INCLUDE_DIR}")
  endif()
endmacro()
