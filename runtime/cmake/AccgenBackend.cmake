# --8<-- [start:add-backend-usage]
# accgen_add_backend(): compiles accgen's backend runtime, together with a
# backend's generated registrations and its user kernels, into the backend's
# libraries, against the torch that backend builds with.
#
#   accgen_add_backend(accel
#     PACKAGE torch_accel            # the Python package
#     CONFIG_DIR csrc                # holds the generated accgen_config.h
#     GENERATED_SOURCES ${csrc_ops}  # accgen's registrations: compiled in
#                                    # unity batches (Note [Unity batches])
#     SOURCES ${user_sources}        # kernels, tuning: one unit each
#     [DRIVER <target>]              # implements accgen/driver.h;
#                                    # default: accgen::emulator
#     [COLLECTIVES <target>]         # implements accgen/collectives.h;
#                                    # default: the runtime's, over Gloo
#     [DEVICE_SOURCES ${device}]     # device code (accgen/device.h): the
#                                    # module lib<core>_device.so, loaded
#                                    # by accgen::runtime::deviceFunction
#     [PYTHON_MODULE]                # also build <package>._C
#     [SPEC_MODULE <file>]           # the generated backend_spec.py and
#     [MANIFEST <file>]              # accgen-manifest.json, installed as
#                                    # _backend_spec.py and
#                                    # _accgen_manifest.json (the report)
#     [INSTALL_DIR <dir>]            # where the package's files go;
#                                    # default: <package>
#     [NO_INSTALL])                  # build only (tests)
#
# Targets:
#   torch_<name>          the core shared library libtorch_<name>.so: runtime,
#                         registrations, kernels and the driver; usable from
#                         C++ with libtorch alone (alias accgen_backend::core)
#   torch_<name>_python   <package>._C, the Python bindings (PYTHON_MODULE)
# Installed below INSTALL_DIR: lib/libtorch_<name>.so, _C, the runtime's
# Python modules under their source names (runtime/python/: the device
# module _device.py, the torch.compile registration _compile.py, autocompare
# _autocompare.py, the memory tools memory.py, the upstream test runner
# _upstream.py, the conformance checks' package _conformance, the report
# report.py and its package _report, the import hook _after_import.py, the
# library adapters' package integrations), the SPEC_MODULE and MANIFEST, and a
# CMake package for the core
# (share/cmake/torch_<name>: find_package(torch_<name>) gives the imported
# target torch_<name>::torch_<name>).
# --8<-- [end:add-backend-usage]
#
# Note [Runtime shipped as sources]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The runtime is the same for every backend, but it is compiled into each
# backend rather than shipped as a prebuilt library: a backend builds
# against the torch of its own environment, and torch has no stable C++
# ABI between releases. So accgen installs the runtime's sources and this
# function, as pybind11 and nanobind ship theirs, and a backend built
# against another torch gets a runtime built for that torch.
include_guard(GLOBAL)

get_filename_component(_accgen_runtime_dir "${CMAKE_CURRENT_LIST_DIR}/.."
                       ABSOLUTE)
set(ACCGEN_RUNTIME_DIR "${_accgen_runtime_dir}" CACHE INTERNAL
    "accgen's backend runtime sources")

# accgen_find_torch(): imported targets accgen::torch (headers and the
# libraries a CPU extension links) and accgen::torch_python, for the torch
# of the Python that runs the build. Torch is located without importing it
# (an import would autoload the installed backends), and used through these
# targets rather than torch's CMake package, which insists on CUDA for CUDA
# builds of torch.
function(accgen_find_torch)
  if(TARGET accgen::torch)
    return()
  endif()
  find_package(Python3 REQUIRED COMPONENTS Interpreter Development.Module)
  # The torch package's directory and its version, read without importing
  # torch (torch/version.py is plain assignments).
  execute_process(
    COMMAND "${Python3_EXECUTABLE}" -c
      "import importlib.util, os, re; d = importlib.util.find_spec('torch').submodule_search_locations[0]; print(d); print(re.search(r\"__version__\\s*=\\s*'([^']*)'\", open(os.path.join(d, 'version.py')).read()).group(1))"
    OUTPUT_VARIABLE torch_info
    OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE torch_found
    ERROR_QUIET)
  if(NOT torch_found EQUAL 0)
    message(FATAL_ERROR
      "torch is not installed for ${Python3_EXECUTABLE}: `pip install .` "
      "brings the torch release the backend was generated for into an "
      "isolated build; with `pip install --no-build-isolation .`, install it "
      "first.")
  endif()
  string(REPLACE "\n" ";" torch_info "${torch_info}")
  list(GET torch_info 0 torch_dir)
  list(GET torch_info 1 torch_version)
  add_library(accgen::torch INTERFACE IMPORTED GLOBAL)
  target_include_directories(accgen::torch SYSTEM INTERFACE
    "${torch_dir}/include"
    "${torch_dir}/include/torch/csrc/api/include")
  foreach(lib c10 torch torch_cpu)
    find_library(accgen_torch_${lib}_library ${lib}
      PATHS "${torch_dir}/lib" NO_DEFAULT_PATH REQUIRED)
    target_link_libraries(accgen::torch INTERFACE
      "${accgen_torch_${lib}_library}")
  endforeach()
  find_library(accgen_torch_python_library torch_python
    PATHS "${torch_dir}/lib" NO_DEFAULT_PATH REQUIRED)
  add_library(accgen::torch_python INTERFACE IMPORTED GLOBAL)
  target_link_libraries(accgen::torch_python INTERFACE
    accgen::torch "${accgen_torch_python_library}")
  set(ACCGEN_TORCH_DIR "${torch_dir}" CACHE INTERNAL "torch of the build")
  set(ACCGEN_TORCH_VERSION "${torch_version}" CACHE INTERNAL
      "torch.__version__ of the build")
endfunction()

# Sets, in the caller's scope, each setting of config_dir/accgen_config.h
# whose name (after ACCGEN_) matches the regular expression `names`, to its
# value without quotes: `#define ACCGEN_GENERATED_BY "0.1.0"` sets
# ACCGEN_GENERATED_BY to 0.1.0. Settings the file lacks are left as they are.
macro(_accgen_read_config config_dir names)
  file(STRINGS "${config_dir}/accgen_config.h" _accgen_config_lines
       REGEX "^#define ACCGEN_(${names}) ")
  foreach(_accgen_config_line IN LISTS _accgen_config_lines)
    if(_accgen_config_line MATCHES "^#define (ACCGEN_[A-Z_]+) \"?([^\"]*)\"?$")
      set(${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
    endif()
  endforeach()
endmacro()

# Refuses, at configure time, a build that cannot match what the backend
# was generated for (accgen_config.h's ACCGEN_TORCH_RELEASE and
# ACCGEN_GENERATED_BY): a torch of another release than the one the
# generated code was written against, whose C++ ABI and operator schemas
# differ, and an accgen older than the one that generated it, whose runtime
# lacks what the generated code uses.
function(_accgen_check_generated_for name config_dir)
  set(ACCGEN_TORCH_RELEASE "")
  set(ACCGEN_GENERATED_BY "")
  _accgen_read_config("${config_dir}" "TORCH_RELEASE|GENERATED_BY")
  string(REGEX REPLACE "[+].*$" "" torch_release "${ACCGEN_TORCH_VERSION}")
  if(ACCGEN_TORCH_RELEASE AND torch_release AND
     NOT torch_release VERSION_EQUAL ACCGEN_TORCH_RELEASE)
    message(FATAL_ERROR
      "accgen_add_backend(${name}): the backend was generated for torch "
      "${ACCGEN_TORCH_RELEASE} (specs/accgen.lock), but the Python building "
      "it (${Python3_EXECUTABLE}) has torch ${ACCGEN_TORCH_VERSION} at "
      "${ACCGEN_TORCH_DIR}.\n"
      "Build it with torch ${ACCGEN_TORCH_RELEASE} (pip install "
      "torch==${ACCGEN_TORCH_RELEASE}; `pip install .` brings it into an "
      "isolated build), or move the backend to torch ${torch_release}: "
      "`accgen generate --update-lock` with that torch installed, which "
      "reports the schema changes that touch your kernels.")
  endif()
  if(ACCGEN_GENERATED_BY AND DEFINED ACCGEN_PACKAGE_VERSION AND
     ACCGEN_PACKAGE_VERSION VERSION_LESS ACCGEN_GENERATED_BY)
    message(FATAL_ERROR
      "accgen_add_backend(${name}): the backend was generated by accgen "
      "${ACCGEN_GENERATED_BY}, but the accgen package found is "
      "${ACCGEN_PACKAGE_VERSION} (${accgen_DIR}), older.\n"
      "Install accgen ${ACCGEN_GENERATED_BY} or newer (pip install "
      "accgen==${ACCGEN_GENERATED_BY}; `pip install .` brings it into an "
      "isolated build), or regenerate the backend with the accgen you "
      "have.")
  endif()
endfunction()

# The runtime's C++ sources, compiled into every backend in unity
# translation units, so that torch's headers are read once per unit rather
# than once per source: A and B of about equal cost (one per core), and C
# for the distributed sources below.
set(ACCGEN_RUNTIME_SOURCES_A
  emulate/Rule.cpp emulate/Engine.cpp emulate/Aliases.cpp emulate/Launch.cpp
  emulate/Boxed.cpp emulate/Typed.cpp emulate/Loops.cpp Fallback.cpp Registration.cpp Tuning.cpp Driver.cpp
  Generator.cpp Sparse.cpp)
set(ACCGEN_RUNTIME_SOURCES_B
  Builtin.cpp Allocator.cpp HostAllocator.cpp DeviceGuard.cpp Hooks.cpp
  Serialization.cpp HookOps.cpp Quantized.cpp Graph.cpp)
list(TRANSFORM ACCGEN_RUNTIME_SOURCES_A PREPEND "${ACCGEN_RUNTIME_DIR}/src/")
list(TRANSFORM ACCGEN_RUNTIME_SOURCES_B PREPEND "${ACCGEN_RUNTIME_DIR}/src/")
# Profiler.cpp needs torch's Kineto headers and USE_KINETO (Note
# [Profiling device time]); it compiles on its own, outside the unity units
# and the precompiled header, so the macro reaches nothing else.
set(ACCGEN_RUNTIME_PROFILER_SOURCE "${ACCGEN_RUNTIME_DIR}/src/Profiler.cpp")
# torch.distributed: the c10d backend, and the collective interface over
# Gloo unless the backend brings its own (COLLECTIVES). Both read c10d's
# headers, which include all of ATen: a unit of their own.
set(ACCGEN_RUNTIME_DISTRIBUTED_SOURCE "${ACCGEN_RUNTIME_DIR}/src/Distributed.cpp")
set(ACCGEN_RUNTIME_GLOO_SOURCE "${ACCGEN_RUNTIME_DIR}/src/GlooCollectives.cpp")
# Note [The runtime does not read the backend's configuration]: the one
# unit that reads accgen_config.h, compiled with the backend's own.
set(ACCGEN_RUNTIME_CONFIG_SOURCE "${ACCGEN_RUNTIME_DIR}/src/Config.cpp")
set(ACCGEN_RUNTIME_SOURCES ${ACCGEN_RUNTIME_SOURCES_A} ${ACCGEN_RUNTIME_SOURCES_B}
    ${ACCGEN_RUNTIME_PROFILER_SOURCE} ${ACCGEN_RUNTIME_DISTRIBUTED_SOURCE})
set_source_files_properties(${ACCGEN_RUNTIME_SOURCES_A} PROPERTIES
  UNITY_GROUP accgen_runtime_a)
set_source_files_properties(${ACCGEN_RUNTIME_SOURCES_B} PROPERTIES
  UNITY_GROUP accgen_runtime_b)
set_source_files_properties(${ACCGEN_RUNTIME_DISTRIBUTED_SOURCE}
  ${ACCGEN_RUNTIME_GLOO_SOURCE} PROPERTIES UNITY_GROUP accgen_runtime_c)

# Note [Host access] (runtime/src/Driver.cpp), at configure time: a driver
# whose device memory the host cannot address says so in its target's
# ACCGEN_HOST_ADDRESSABLE property (the remote driver: OFF), and a backend
# whose spec runs CPU code over device memory (accgen_config.h's
# ACCGEN_NEEDS_HOST_* lists) is refused against it, naming the entries. The
# runtime refuses the same at device initialization, for drivers that only
# say so when asked (the emulator with ACCGEN_EMU_HOST_ADDRESSABLE=0).
function(_accgen_refuse_host_code name driver config_dir)
  get_target_property(addressable ${driver} ACCGEN_HOST_ADDRESSABLE)
  if(addressable STREQUAL "addressable-NOTFOUND" OR addressable)
    return()
  endif()
  set(ACCGEN_HOST_COPIES 0)
  set(ACCGEN_EMULATE_FALLBACK 0)
  _accgen_read_config("${config_dir}" "NEEDS_HOST_[A-Z]+|HOST_COPIES|EMULATE_FALLBACK")
  set(refused "")
  if(ACCGEN_NEEDS_HOST_ACCESS)
    string(APPEND refused "\n  `stub` entries (ATen's CPU loops): ${ACCGEN_NEEDS_HOST_ACCESS}")
  endif()
  if(NOT ACCGEN_HOST_COPIES)
    if(ACCGEN_NEEDS_HOST_COPIES)
      string(APPEND refused "\n  `emulate` entries: ${ACCGEN_NEEDS_HOST_COPIES}")
    endif()
    if(ACCGEN_EMULATE_FALLBACK)
      string(APPEND refused "\n  the emulate fallback (fallback: emulate), "
             "which runs every operator operators.yaml does not list")
    endif()
  endif()
  if(refused)
    message(FATAL_ERROR
      "accgen_add_backend(${name}): the host cannot address the device "
      "memory of DRIVER ${driver} (its ACCGEN_HOST_ADDRESSABLE is OFF), but "
      "the spec (${config_dir}/accgen_config.h) runs CPU code over it:"
      "${refused}\n"
      "Write a kernel for each (kind: kernel) or run it on the CPU (kind: "
      "fallback, or fallback: cpu); features.host_copies: true runs the "
      "`emulate` entries and the emulate fallback through the CPU fallback "
      "with copies. Then run `accgen generate` again.")
  endif()
endfunction()

# Note [Direct calls within the backend]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A shared library's own functions are called through its PLT and may be
# interposed by another library's of the same name, by default; and its
# calls into torch go through a PLT stub each. Every operator on the device
# makes a few dozen calls among the runtime, the driver and the generated
# wrappers, most of them to small functions whose code is cold by the time
# the next operator comes: each PLT hop is one more cache line to fetch.
# So the backend's calls to its own functions bind within it (a function
# of the backend is the backend's, as with hidden visibility, which the
# runtime's exported C++ API rules out), and calls into torch load their
# address from the GOT, resolved when the library loads. Timed against the
# build without, the two alternating in separate processes, the small CNN's
# training step takes a median 1.093x the CPU's, against 1.128x without
# (docs/operators.md, "Where the device's time goes").
function(_accgen_direct_calls target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE -fno-semantic-interposition -fno-plt)
    target_link_options(${target} PRIVATE "LINKER:-Bsymbolic-functions")
  endif()
endfunction()

function(accgen_add_backend name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "PYTHON_MODULE;NO_INSTALL"
    "PACKAGE;CONFIG_DIR;DRIVER;COLLECTIVES;INSTALL_DIR;SPEC_MODULE;MANIFEST"
    "SOURCES;GENERATED_SOURCES;DEVICE_SOURCES")
  if(NOT arg_PACKAGE OR NOT arg_CONFIG_DIR)
    message(FATAL_ERROR "accgen_add_backend(${name}): PACKAGE and CONFIG_DIR are required")
  endif()
  if(NOT EXISTS "${arg_CONFIG_DIR}/accgen_config.h")
    message(FATAL_ERROR
      "accgen_add_backend(${name}): ${arg_CONFIG_DIR}/accgen_config.h does not "
      "exist; run `accgen generate`")
  endif()
  if(NOT arg_DRIVER)
    set(arg_DRIVER accgen::emulator)
  endif()
  if(NOT arg_INSTALL_DIR)
    set(arg_INSTALL_DIR "${arg_PACKAGE}")
  endif()
  get_filename_component(config_dir "${arg_CONFIG_DIR}" ABSOLUTE)
  _accgen_refuse_host_code(${name} ${arg_DRIVER} "${config_dir}")
  accgen_find_torch()
  _accgen_check_generated_for(${name} "${config_dir}")

  set(core torch_${name})
  set(collectives_source "${ACCGEN_RUNTIME_GLOO_SOURCE}")
  if(arg_COLLECTIVES)
    set(collectives_source "")
  endif()
  get_target_property(driver_includes ${arg_DRIVER} INTERFACE_INCLUDE_DIRECTORIES)

  # The runtime's units, apart from the backend's: nothing of the backend
  # (its name, its configuration directory, its target's name) reaches
  # their compile lines, so a compiler cache serves them to every backend
  # built against the same accgen, torch and driver (Note [The runtime does
  # not read the backend's configuration] in src/Config.cpp). The first
  # backend of a CMake project names the target accgen_runtime, the same in
  # every project.
  set(runtime accgen_runtime)
  if(TARGET ${runtime})
    set(runtime ${core}_runtime)
  endif()
  add_library(${runtime} OBJECT ${ACCGEN_RUNTIME_SOURCES} ${collectives_source})
  target_compile_features(${runtime} PUBLIC cxx_std_20)
  _accgen_direct_calls(${runtime})
  target_include_directories(${runtime} PRIVATE "${ACCGEN_RUNTIME_DIR}/include")
  # The driver's interface headers come with its target.
  target_link_libraries(${runtime} PRIVATE accgen::torch ${arg_DRIVER})
  # Torch's headers dominate every translation unit: one precompiled
  # header, which the backend's own units use too.
  target_precompile_headers(${runtime} PRIVATE
    "${ACCGEN_RUNTIME_DIR}/include/accgen/runtime/Precompiled.h")
  set_source_files_properties(${ACCGEN_RUNTIME_PROFILER_SOURCE} PROPERTIES
    SKIP_UNITY_BUILD_INCLUSION ON
    SKIP_PRECOMPILE_HEADERS ON
    COMPILE_DEFINITIONS USE_KINETO
    INCLUDE_DIRECTORIES "${ACCGEN_TORCH_DIR}/include/kineto")
  set_target_properties(${runtime} PROPERTIES
    UNITY_BUILD ON
    UNITY_BUILD_MODE GROUP
    POSITION_INDEPENDENT_CODE ON)

  add_library(${core} SHARED $<TARGET_OBJECTS:${runtime}> ${ACCGEN_RUNTIME_CONFIG_SOURCE}
              ${arg_GENERATED_SOURCES} ${arg_SOURCES})
  _accgen_unity_batches(${core} ${arg_GENERATED_SOURCES})
  target_compile_features(${core} PUBLIC cxx_std_20)
  _accgen_direct_calls(${core})
  target_include_directories(${core}
    PUBLIC
      "$<BUILD_INTERFACE:${ACCGEN_RUNTIME_DIR}/include>"
      "$<BUILD_INTERFACE:${config_dir}>"
    PRIVATE
      "${CMAKE_CURRENT_SOURCE_DIR}")
  # --8<-- [start:driver-link]
  # DRIVER: accgen::emulator unless given.
  target_link_libraries(${core} PUBLIC accgen::torch
                        PRIVATE ${arg_DRIVER} ${arg_COLLECTIVES})
  # The driver interface's header is part of the runtime's API.
  target_include_directories(${core} PUBLIC "${driver_includes}")
  # --8<-- [end:driver-link]
  target_precompile_headers(${core} REUSE_FROM ${runtime})
  set_source_files_properties(${ACCGEN_RUNTIME_CONFIG_SOURCE} PROPERTIES
    SKIP_UNITY_BUILD_INCLUSION ON
    SKIP_PRECOMPILE_HEADERS ON)
  set_target_properties(${core} PROPERTIES
    UNITY_BUILD ON
    UNITY_BUILD_MODE GROUP
    # No <target>_EXPORTS macro: the backend's units keep the compile line
    # of the runtime's, whose precompiled header they use.
    DEFINE_SYMBOL ""
    OUTPUT_NAME torch_${name}
    # Installed in <package>/lib, torch in site-packages/torch/lib.
    INSTALL_RPATH "$ORIGIN/../../torch/lib")
  add_library(accgen_backend::core ALIAS ${core})

  # Device code: a module of its own, built for the device (here, with the
  # driver's headers only), loaded by the driver beside the core library.
  if(arg_DEVICE_SOURCES)
    add_library(${core}_device MODULE ${arg_DEVICE_SOURCES})
    target_include_directories(${core}_device PRIVATE "${driver_includes}")
    target_compile_features(${core}_device PRIVATE cxx_std_20)
    set_target_properties(${core}_device PROPERTIES PREFIX "lib"
      LIBRARY_OUTPUT_DIRECTORY "$<TARGET_FILE_DIR:${core}>")
    # Read by src/Config.cpp alone.
    set_property(SOURCE ${ACCGEN_RUNTIME_CONFIG_SOURCE} TARGET_DIRECTORY ${core}
      APPEND PROPERTY COMPILE_DEFINITIONS ACCGEN_DEVICE_MODULE="lib${core}_device.so")
    add_dependencies(${core} ${core}_device)
  endif()
  # A driver that runs a program of its own (the remote driver's device
  # process) names its target in the property ACCGEN_DEVICE_PROGRAM; the
  # program goes beside the core library, where the driver looks for it.
  get_target_property(device_program ${arg_DRIVER} ACCGEN_DEVICE_PROGRAM)
  if(NOT arg_NO_INSTALL)
    install(TARGETS ${core} LIBRARY DESTINATION "${arg_INSTALL_DIR}/lib")
    if(arg_DEVICE_SOURCES)
      install(TARGETS ${core}_device LIBRARY DESTINATION "${arg_INSTALL_DIR}/lib")
    endif()
    if(device_program)
      install(PROGRAMS "$<TARGET_FILE:${device_program}>"
              DESTINATION "${arg_INSTALL_DIR}/lib")
    endif()
    _accgen_install_core_package(${name} "${arg_INSTALL_DIR}" "${config_dir}"
                                 "${driver_includes}")
  endif()

  if(arg_PYTHON_MODULE)
    find_package(Python3 REQUIRED COMPONENTS Interpreter Development.Module)
    set(module torch_${name}_python)
    Python3_add_library(${module} MODULE WITH_SOABI
      "${ACCGEN_RUNTIME_DIR}/python/Module.cpp")
    # No precompiled header: pybind11 and torch/csrc dominate this one, and
    # without it the module compiles while the core's header is made. The
    # bindings only forward to the core (nothing on an operator's path runs
    # here), so they are compiled for size of effort, not speed: -O1 takes a
    # third less time than -O3 for this unit.
    target_link_libraries(${module} PRIVATE ${core} accgen::torch_python)
    if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
      target_compile_options(${module} PRIVATE
        $<$<NOT:$<CONFIG:Debug>>:-O1>)
    endif()
    set_target_properties(${module} PROPERTIES
      OUTPUT_NAME _C
      # No <target>_EXPORTS macro: Module.cpp's compile line is the same in
      # every backend (Note [The runtime does not read the backend's
      # configuration]).
      DEFINE_SYMBOL ""
      CXX_VISIBILITY_PRESET hidden
      VISIBILITY_INLINES_HIDDEN ON
      INSTALL_RPATH "$ORIGIN/lib;$ORIGIN/../torch/lib")
    if(NOT arg_NO_INSTALL)
      install(TARGETS ${module} LIBRARY DESTINATION "${arg_INSTALL_DIR}")
      # The Python runtime, under the names it has in the source tree.
      install(FILES "${ACCGEN_RUNTIME_DIR}/python/_device.py"
                    "${ACCGEN_RUNTIME_DIR}/python/_compile.py"
                    "${ACCGEN_RUNTIME_DIR}/python/_autocompare.py"
                    "${ACCGEN_RUNTIME_DIR}/python/memory.py"
                    "${ACCGEN_RUNTIME_DIR}/python/_upstream.py"
                    "${ACCGEN_RUNTIME_DIR}/python/_after_import.py"
                    "${ACCGEN_RUNTIME_DIR}/python/report.py"
              DESTINATION "${arg_INSTALL_DIR}")
      # What the specs say and how the backend was generated: the facts
      # `python -m <package>.report` reads.
      if(arg_SPEC_MODULE AND EXISTS "${arg_SPEC_MODULE}")
        install(FILES "${arg_SPEC_MODULE}" RENAME _backend_spec.py
                DESTINATION "${arg_INSTALL_DIR}")
      endif()
      if(arg_MANIFEST AND EXISTS "${arg_MANIFEST}")
        install(FILES "${arg_MANIFEST}" RENAME _accgen_manifest.json
                DESTINATION "${arg_INSTALL_DIR}")
      endif()
      install(DIRECTORY "${ACCGEN_RUNTIME_DIR}/python/_conformance"
                        "${ACCGEN_RUNTIME_DIR}/python/_report"
                        "${ACCGEN_RUNTIME_DIR}/python/integrations"
              DESTINATION "${arg_INSTALL_DIR}"
              FILES_MATCHING PATTERN "*.py")
    endif()
  endif()
endfunction()

# Note [Unity batches]
# ~~~~~~~~~~~~~~~~~~~~
# Most of a generated registration file's compile time is torch's headers:
# autocast_mode.h alone includes all of ATen, and each emulated shard reads
# the meta headers of its operators. Compiling the generated files in
# batches of up to four reads those once per batch. Files are dealt out
# round-robin, so the heavy ones (Autocast.cpp, CustomOps.cpp, the emulated
# shards) spread over the batches and the batches over the cores. Every
# generated file keeps its helpers in a namespace of its family
# (<namespace>::emulated, ::kernel_wrappers, ...), so files batched together
# cannot clash. User kernels are never batched: their names are their own.
function(_accgen_unity_batches target)
  set(sources ${ARGN})
  list(SORT sources)
  list(LENGTH sources count)
  if(count EQUAL 0)
    return()
  endif()
  math(EXPR batches "(${count} + 3) / 4")
  set(index 0)
  foreach(source IN LISTS sources)
    math(EXPR batch "${index} % ${batches}")
    set_source_files_properties("${source}" TARGET_DIRECTORY ${target}
      PROPERTIES UNITY_GROUP "accgen_ops_${batch}")
    math(EXPR index "${index} + 1")
  endforeach()
endfunction()

# The CMake package of a backend's core library, installed with it: the
# imported target torch_<name>::torch_<name>, its headers (the runtime's,
# the driver interface's and accgen_config.h) and torch's, found beside the
# package in site-packages.
function(_accgen_install_core_package name install_dir config_dir driver_includes)
  set(core torch_${name})
  install(DIRECTORY "${ACCGEN_RUNTIME_DIR}/include/"
          DESTINATION "${install_dir}/include")
  install(FILES "${config_dir}/accgen_config.h"
          DESTINATION "${install_dir}/include")
  foreach(dir IN LISTS driver_includes)
    string(REGEX REPLACE "^\\$<BUILD_INTERFACE:(.*)>$" "\\1" dir "${dir}")
    foreach(header driver.h collectives.h)
      if(EXISTS "${dir}/accgen/${header}")
        install(FILES "${dir}/accgen/${header}"
                DESTINATION "${install_dir}/include/accgen")
      endif()
    endforeach()
  endforeach()
  set(ACCGEN_BACKEND_NAME ${name})
  configure_file("${ACCGEN_RUNTIME_DIR}/cmake/BackendConfig.cmake.in"
                 "${CMAKE_CURRENT_BINARY_DIR}/${core}Config.cmake" @ONLY)
  install(FILES "${CMAKE_CURRENT_BINARY_DIR}/${core}Config.cmake"
          DESTINATION "${install_dir}/share/cmake/${core}")
endfunction()
