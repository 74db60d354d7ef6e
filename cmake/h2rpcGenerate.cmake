# h2rpc_generate: C++ code for .proto files, with protoc and protoc-gen-h2rpc.
#
#   h2rpc_generate(TARGET <target> PROTOS <file.proto>...
#                  [IMPORT_DIRS <dir>...] [OUT_DIR <dir>]
#                  [SERVICES_NAMESPACE <name>] [COROUTINES]
#                  [NO_SERVICES] [NO_MESSAGES])
#
# Adds to <target> the generated sources of each .proto: <name>.pb.h/.pb.cc
# (protoc's messages) and <name>.h2rpc.pb.h/.h2rpc.pb.cc (h2rpc's stubs and
# service base classes; see docs/codegen.md), and OUT_DIR to its include
# directories (PUBLIC). <name> is the .proto's path below the first of
# IMPORT_DIRS that holds it; IMPORT_DIRS (default: the current source
# directory) are protoc's -I directories, so imports are relative to them.
# OUT_DIR defaults to ${CMAKE_CURRENT_BINARY_DIR}/h2rpc_generated.
# NO_SERVICES generates the messages only, NO_MESSAGES the h2rpc code only
# (the messages then come from another target). SERVICES_NAMESPACE puts the
# service classes in <package namespace>::<name> (the plugin's
# services_namespace option). COROUTINES also generates
# <name>.h2rpc_coro.pb.h, the C++20 CoroStub and CoroService classes
# (docs/coroutines.md; the plugin's coroutines option), for sources of
# <target> built as C++20. The generated code includes h2rpc's headers:
# link <target> with h2rpc::h2rpc (or h2rpc::h2rpc_static).
function(h2rpc_generate)
  cmake_parse_arguments(PARSE_ARGV 0 arg "NO_SERVICES;NO_MESSAGES;COROUTINES"
                        "TARGET;OUT_DIR;SERVICES_NAMESPACE"
                        "PROTOS;IMPORT_DIRS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR
            "h2rpc_generate: unexpected arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_TARGET OR NOT TARGET "${arg_TARGET}")
    message(FATAL_ERROR "h2rpc_generate: TARGET must name an existing target")
  endif()
  if(NOT arg_PROTOS)
    message(FATAL_ERROR "h2rpc_generate: PROTOS is empty")
  endif()
  if(arg_NO_SERVICES AND arg_NO_MESSAGES)
    message(FATAL_ERROR
            "h2rpc_generate: NO_SERVICES and NO_MESSAGES leave nothing")
  endif()
  if(NOT arg_IMPORT_DIRS)
    set(arg_IMPORT_DIRS "${CMAKE_CURRENT_SOURCE_DIR}")
  endif()
  if(NOT arg_OUT_DIR)
    set(arg_OUT_DIR "${CMAKE_CURRENT_BINARY_DIR}/h2rpc_generated")
  endif()
  get_filename_component(out_dir "${arg_OUT_DIR}" ABSOLUTE
                         BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")

  if(TARGET protobuf::protoc)
    set(protoc "$<TARGET_FILE:protobuf::protoc>")
  elseif(Protobuf_PROTOC_EXECUTABLE)
    set(protoc "${Protobuf_PROTOC_EXECUTABLE}")
  else()
    message(FATAL_ERROR "h2rpc_generate: no protoc (find_package(Protobuf))")
  endif()

  set(include_flags)
  set(import_dirs)
  foreach(dir IN LISTS arg_IMPORT_DIRS)
    get_filename_component(dir "${dir}" ABSOLUTE)
    list(APPEND import_dirs "${dir}")
    list(APPEND include_flags "-I${dir}")
  endforeach()

  set(out_flags)
  set(plugin_depends)
  if(NOT arg_NO_MESSAGES)
    list(APPEND out_flags "--cpp_out=${out_dir}")
  endif()
  if(NOT arg_NO_SERVICES)
    if(NOT TARGET h2rpc::protoc_plugin)
      message(FATAL_ERROR "h2rpc_generate: no h2rpc::protoc_plugin target "
                          "(find_package(h2rpc))")
    endif()
    get_target_property(plugin_target h2rpc::protoc_plugin ALIASED_TARGET)
    if(plugin_target)
      set(plugin_depends "${plugin_target}")  # built in this project
    else()
      set(plugin_depends "$<TARGET_FILE:h2rpc::protoc_plugin>")
    endif()
    set(options)
    if(arg_SERVICES_NAMESPACE)
      list(APPEND options "services_namespace=${arg_SERVICES_NAMESPACE}")
    endif()
    if(arg_COROUTINES)
      list(APPEND options "coroutines")
    endif()
    list(JOIN options "," options)
    if(options)
      string(APPEND options ":")
    endif()
    list(APPEND out_flags
         "--plugin=protoc-gen-h2rpc=$<TARGET_FILE:h2rpc::protoc_plugin>"
         "--h2rpc_out=${options}${out_dir}")
  endif()

  set(all_outputs)
  foreach(proto IN LISTS arg_PROTOS)
    get_filename_component(proto "${proto}" ABSOLUTE)
    set(relative "")
    foreach(dir IN LISTS import_dirs)
      file(RELATIVE_PATH candidate "${dir}" "${proto}")
      if(NOT candidate MATCHES "^\\.\\./")
        set(relative "${candidate}")
        break()
      endif()
    endforeach()
    if(relative STREQUAL "")
      message(FATAL_ERROR "h2rpc_generate: ${proto} is in none of "
                          "IMPORT_DIRS (${import_dirs})")
    endif()
    string(REGEX REPLACE "\\.proto$" "" base "${relative}")
    set(outputs)
    if(NOT arg_NO_MESSAGES)
      list(APPEND outputs "${out_dir}/${base}.pb.h" "${out_dir}/${base}.pb.cc")
    endif()
    if(NOT arg_NO_SERVICES)
      list(APPEND outputs "${out_dir}/${base}.h2rpc.pb.h"
           "${out_dir}/${base}.h2rpc.pb.cc")
      if(arg_COROUTINES)
        list(APPEND outputs "${out_dir}/${base}.h2rpc_coro.pb.h")
      endif()
    endif()
    add_custom_command(
      OUTPUT ${outputs}
      COMMAND "${CMAKE_COMMAND}" -E make_directory "${out_dir}"
      COMMAND ${protoc} ${include_flags} ${out_flags} "${proto}"
      DEPENDS "${proto}" ${plugin_depends}
      COMMENT "h2rpc_generate: ${relative}"
      VERBATIM)
    list(APPEND all_outputs ${outputs})
  endforeach()
  target_sources("${arg_TARGET}" PRIVATE ${all_outputs})
  target_include_directories("${arg_TARGET}" PUBLIC
                             "$<BUILD_INTERFACE:${out_dir}>")
endfunction()
