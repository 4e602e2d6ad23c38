# Helpers shared by every area: warnings, sanitizers, library and test declarations.

add_library(lmcache_build_flags INTERFACE)
target_compile_options(lmcache_build_flags INTERFACE -Wall -Wextra -Wno-unused-parameter)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  # GCC 12 reports -Wrestrict false positives inside std::string concatenation at -O3
  # (GCC bug 105651); they are not in our code.
  target_compile_options(lmcache_build_flags INTERFACE -Wno-restrict)
endif()
if(LMCACHE_WERROR)
  target_compile_options(lmcache_build_flags INTERFACE -Werror)
endif()
if(LMCACHE_SANITIZE STREQUAL "address")
  target_compile_options(lmcache_build_flags INTERFACE
    -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_link_options(lmcache_build_flags INTERFACE -fsanitize=address,undefined)
elseif(LMCACHE_SANITIZE STREQUAL "thread")
  target_compile_options(lmcache_build_flags INTERFACE -fsanitize=thread -fno-omit-frame-pointer)
  target_link_options(lmcache_build_flags INTERFACE -fsanitize=thread)
elseif(NOT LMCACHE_SANITIZE STREQUAL "")
  message(FATAL_ERROR "LMCACHE_SANITIZE must be '', 'address' or 'thread' (got '${LMCACHE_SANITIZE}')")
endif()
# The components whose coverage by `lmcache-conform --reference` the kit's gate measures
# (conformance/coverage/README.md). With LMCACHE_COVERAGE, only their libraries get gcov
# counters: the rest of the build runs at full speed.
set(LMCACHE_COVERAGE_COMPONENTS
  reference/lmcache/serde reference/lmcache/wrapper reference/lmcache/l2 reference/lmcache/fp8
  storage/lmcache/bridge storage/lmcache/resp storage/lmcache/fs)
if(LMCACHE_COVERAGE AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  message(FATAL_ERROR "LMCACHE_COVERAGE needs gcc (the gate reads gcov counters with gcovr)")
endif()
# The fuzz build (LMCACHE_BUILD_FUZZERS, fuzz/README.md): every library gets libFuzzer's coverage
# instrumentation and ASan+UBSan, so that what a fuzzer reaches is both guided and checked; the
# fuzz targets themselves link libFuzzer (lmcache_add_fuzzer below). libFuzzer is clang's, and
# TSan cannot be combined with ASan.
if(LMCACHE_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "LMCACHE_BUILD_FUZZERS=ON needs clang (libFuzzer ships with clang: Debian "
                        "packages clang-14 and libclang-rt-14-dev), but the C++ compiler is "
                        "${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}: configure a fresh "
                        "build directory with -DCMAKE_C_COMPILER=clang-14 "
                        "-DCMAKE_CXX_COMPILER=clang++-14")
  endif()
  if(LMCACHE_SANITIZE STREQUAL "thread")
    message(FATAL_ERROR "LMCACHE_BUILD_FUZZERS=ON cannot be combined with LMCACHE_SANITIZE=thread: "
                        "the fuzzers run under ASan+UBSan, which TSan excludes; use a build "
                        "directory of its own for each")
  endif()
  target_compile_options(lmcache_build_flags INTERFACE
    -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
    -fno-omit-frame-pointer)
  target_link_options(lmcache_build_flags INTERFACE -fsanitize=address,undefined)
endif()
install(TARGETS lmcache_build_flags EXPORT lmcacheTargets)

# lmcache_add_library(<name> [NO_COVERAGE] SOURCES ... [HEADERS ...] [DEPS ...] [PRIVATE_DEPS ...])
# Declared in a component folder <area>/lmcache/<component>/: builds lmcache_<name> (alias
# lmcache::<name>), exports it, and installs exactly HEADERS (the component's public headers,
# listed by hand: nothing under internal/, no test support) to include/lmcache/<component>/.
# The include root is the area folder, so sources include "lmcache/<component>/foo.h".
# NO_COVERAGE: a library of a measured component (LMCACHE_COVERAGE_COMPONENTS) that the kit's
# gate leaves out all the same (its CMakeLists says why).
function(lmcache_add_library name)
  cmake_parse_arguments(ARG "NO_COVERAGE" "" "SOURCES;HEADERS;DEPS;PRIVATE_DEPS" ${ARGN})
  cmake_path(GET CMAKE_CURRENT_SOURCE_DIR FILENAME component)
  cmake_path(GET CMAKE_CURRENT_SOURCE_DIR PARENT_PATH lmcache_dir)
  cmake_path(GET lmcache_dir PARENT_PATH area_root)
  foreach(header IN LISTS ARG_HEADERS)
    if(header MATCHES "(^|/)internal/|_test|testing/")
      message(FATAL_ERROR "lmcache_add_library(${name}): '${header}' is private; list only "
                          "public headers in HEADERS")
    endif()
  endforeach()
  add_library(lmcache_${name} ${ARG_SOURCES})
  add_library(lmcache::${name} ALIAS lmcache_${name})
  set_target_properties(lmcache_${name} PROPERTIES EXPORT_NAME ${name})
  target_include_directories(lmcache_${name} PUBLIC
    $<BUILD_INTERFACE:${area_root}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(lmcache_${name} PUBLIC ${ARG_DEPS} $<BUILD_INTERFACE:lmcache_build_flags>
                                        PRIVATE ${ARG_PRIVATE_DEPS})
  cmake_path(RELATIVE_PATH CMAKE_CURRENT_SOURCE_DIR BASE_DIRECTORY ${PROJECT_SOURCE_DIR}
             OUTPUT_VARIABLE component_dir)
  if(LMCACHE_COVERAGE AND component_dir IN_LIST LMCACHE_COVERAGE_COMPONENTS AND NOT ARG_NO_COVERAGE)
    # atomic counters: the components run on many threads, and racing plain increments leave
    # negative counts that gcov prints and gcovr refuses ("branch 6 taken -1").
    # -Bsymbolic-functions: the library's calls to inline and template functions (a
    # make_shared<T>'s constructor, say) run its own counted copies. Otherwise the dynamic linker
    # may bind them to an uncounted copy that a library loaded earlier also emits (the kit's,
    # built at -Og under the sanitizers), and lines the kit drives read as uncovered.
    target_compile_options(lmcache_${name} PRIVATE --coverage -fprofile-update=atomic)
    target_link_options(lmcache_${name} PRIVATE --coverage LINKER:-Bsymbolic-functions)
  endif()
  install(TARGETS lmcache_${name} EXPORT lmcacheTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(FILES ${ARG_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/lmcache/${component})
endfunction()

# lmcache_add_private_library(<target> INCLUDE_DIRS ... SOURCES ... [DEPS ...] [PRIVATE_DEPS ...]
#                             [ALIAS <name>])
# A static library that is never installed (test support, a program's private code): <target>
# from SOURCES, INCLUDE_DIRS its public include roots, linked PUBLIC with DEPS and PRIVATE with
# PRIVATE_DEPS and the project's flags; ALIAS adds lmcache::<name>.
function(lmcache_add_private_library target)
  cmake_parse_arguments(ARG "" "ALIAS" "INCLUDE_DIRS;SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS OR NOT ARG_SOURCES OR NOT ARG_INCLUDE_DIRS)
    message(FATAL_ERROR "lmcache_add_private_library(${target}): needs SOURCES and INCLUDE_DIRS "
                        "(unknown arguments: '${ARG_UNPARSED_ARGUMENTS}')")
  endif()
  add_library(${target} STATIC ${ARG_SOURCES})
  if(ARG_ALIAS)
    add_library(lmcache::${ARG_ALIAS} ALIAS ${target})
  endif()
  target_include_directories(${target} PUBLIC ${ARG_INCLUDE_DIRS})
  target_link_libraries(${target} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS} lmcache_build_flags)
endfunction()

# lmcache_add_to_concurrency_tests(<target>)
# `cmake --build <dir> --target lmcache_concurrency_tests` builds just what TSan runs.
function(lmcache_add_to_concurrency_tests target)
  if(NOT TARGET lmcache_concurrency_tests)
    add_custom_target(lmcache_concurrency_tests)
  endif()
  add_dependencies(lmcache_concurrency_tests ${target})
endfunction()

# _lmcache_gtest_executable(<name> <caller> <unparsed-args> SOURCES ... DEPS ...)
# The test binary of lmcache_add_test() and lmcache_add_conformance_test(): fails the
# configuration on arguments the caller did not recognise, then builds <name> from SOURCES,
# linked with DEPS, GoogleTest (main included) and the project's flags. In a sanitizer build the
# binary's own sources compile at -O0, still instrumented: the code under test is the libraries'
# (built at the build type's level), the test sources are mostly gtest and RapidCheck templates,
# and -O0 halves their compile time under ASan+UBSan (README.md, "How long scripts/test.sh
# takes"). OPTIMIZED_SOURCES (a subset of SOURCES) keep the build type's level: sources whose own
# loops do the work (the exhaustive fp8 checks: 4x slower at -O0 under ASan).
function(_lmcache_gtest_executable name caller unparsed)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;DEFINITIONS;OPTIMIZED_SOURCES" ${ARGN})
  if(unparsed)
    message(FATAL_ERROR "${caller}(${name}): unknown arguments ${unparsed}")
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main
                                        lmcache_build_flags)
  target_compile_definitions(${name} PRIVATE ${ARG_DEFINITIONS})
  if(LMCACHE_SANITIZE AND NOT ARG_OPTIMIZED_SOURCES)
    target_compile_options(${name} PRIVATE -O0)
  elseif(LMCACHE_SANITIZE)
    set(plain ${ARG_SOURCES})
    list(REMOVE_ITEM plain ${ARG_OPTIMIZED_SOURCES})
    set_property(SOURCE ${plain} APPEND PROPERTY COMPILE_OPTIONS -O0)
  endif()
endfunction()

# lmcache_add_test(<name> SOURCES ... DEPS ... LABELS ... [DEFINITIONS ...] [TIMEOUT s]
#                  [CONCURRENCY] [OPTIMIZED_SOURCES ...])
# DEFINITIONS: private compile definitions (a build without tests has no target to give them
# to, so they are passed here rather than set afterwards). One gtest binary = one ctest entry
# carrying LABELS (per-binary, not per-case: each process pays libtorch's start-up). CONCURRENCY declares that the binary holds thread-heavy cases;
# which ones is decided by their names, never by a list here: every case whose full gtest name
# contains "Concurrency" (suite `FooConcurrency`, or instantiation `XConcurrency/...`). In the
# TSan build (LMCACHE_SANITIZE=thread) only those run, as `<name>.concurrency` (label
# "concurrency"). In other builds a unit ctest `<name>.concurrency_subset` fails when a
# CONCURRENCY binary has no such case, or when another binary has one that TSan would skip
# (cmake/concurrency_subset.sh). The TSan build compiles only the sources that can hold such a
# case: every source not named *_test.cc, and each *_test.cc whose text says "Concurrency"
# (read at configure time; an edit of it configures again). OPTIMIZED_SOURCES: see
# _lmcache_gtest_executable.
function(lmcache_add_test name)
  if(NOT LMCACHE_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "CONCURRENCY" "TIMEOUT"
    "SOURCES;DEPS;LABELS;DEFINITIONS;OPTIMIZED_SOURCES" ${ARGN})
  set(sources ${ARG_SOURCES})
  if(LMCACHE_SANITIZE STREQUAL "thread")
    set(sources)
    foreach(source ${ARG_SOURCES})
      if(source MATCHES "_test\\.cc$")
        get_filename_component(path ${source} ABSOLUTE)
        set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${path})
        file(STRINGS ${path} concurrency_lines REGEX "Concurrency" LIMIT_COUNT 1)
        if(NOT concurrency_lines)
          continue()
        endif()
      endif()
      list(APPEND sources ${source})
    endforeach()
    if(NOT sources)
      set(sources ${ARG_SOURCES})  # a binary with no concurrency case still links
    endif()
  endif()
  _lmcache_gtest_executable(${name} lmcache_add_test "${ARG_UNPARSED_ARGUMENTS}"
    SOURCES ${sources} DEPS ${ARG_DEPS} DEFINITIONS ${ARG_DEFINITIONS}
    OPTIMIZED_SOURCES ${ARG_OPTIMIZED_SOURCES})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  set(subset ${PROJECT_SOURCE_DIR}/cmake/concurrency_subset.sh)
  if(ARG_CONCURRENCY)
    lmcache_add_to_concurrency_tests(${name})
  endif()
  if(LMCACHE_SANITIZE STREQUAL "thread")
    if(ARG_CONCURRENCY)
      add_test(NAME ${name}.concurrency COMMAND bash ${subset} $<TARGET_FILE:${name}> run)
      set_tests_properties(${name}.concurrency PROPERTIES LABELS "concurrency" TIMEOUT ${ARG_TIMEOUT})
    endif()
    return()
  endif()
  add_test(NAME ${name} COMMAND ${name})
  set(labels ${ARG_LABELS})
  if(ARG_CONCURRENCY)
    list(APPEND labels concurrency)
    set(expect expect-some)
  else()
    set(expect expect-none)
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${labels}" TIMEOUT ${ARG_TIMEOUT})
  add_test(NAME ${name}.concurrency_subset
    COMMAND bash ${subset} $<TARGET_FILE:${name}> ${expect} ${CMAKE_BINARY_DIR})
  set_tests_properties(${name}.concurrency_subset PROPERTIES LABELS unit TIMEOUT 60)
endfunction()

# The conformance properties that exercise threads (concurrent submitters, close under load, the
# stateful models with tasks in flight): what the TSan build runs of a conformance suite. The
# properties' names are the kit's public vocabulary (conformance/.../property_list.h), so they
# cannot carry the "Concurrency" marker: they are matched by these patterns, prefixed with an
# instantiation when one is given.
set(LMCACHE_CONFORMANCE_THREAD_HEAVY
  "*.Concurrent*" "*.DeterministicAcrossThreads/*" "*.StatefulModel/*" "*.Close*"
  "*.ResourcesBoundedOverManyTasks/*" "*.SameKeyInFlight/*")

# lmcache_conformance_thread_heavy_filter(<out-var> [<instantiation-prefix>])
# The gtest filter of LMCACHE_CONFORMANCE_THREAD_HEAVY, e.g. "Bases/*.Concurrent*:...".
function(lmcache_conformance_thread_heavy_filter out)
  set(patterns ${LMCACHE_CONFORMANCE_THREAD_HEAVY})
  if(ARGC GREATER 1)
    list(TRANSFORM patterns PREPEND "${ARGV1}/")
  endif()
  list(JOIN patterns ":" filter)
  set(${out} "${filter}" PARENT_SCOPE)
endfunction()

# lmcache_add_conformance_test(<name> SOURCES ... DEPS ... [NOT_UNDER_TSAN])
# A component's own run of the conformance suites (<component>_conformance_test.cc beside it,
# instantiated as a vendor instantiates them), label "conformance", at quick depth in every
# build. TSan: only the thread-heavy properties, as `<name>.concurrency` (label "concurrency");
# NOT_UNDER_TSAN registers nothing there (real storage: its threads are the connector's, which
# the components' own concurrency tests hold). The suites' time limits stay at scale 1: a correct
# implementation never waits one out, so shorter limits would save nothing and only let a CI
# machine loaded by the other tests fail it.
function(lmcache_add_conformance_test name)
  if(NOT LMCACHE_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "NOT_UNDER_TSAN" "" "SOURCES;DEPS" ${ARGN})
  if(ARG_NOT_UNDER_TSAN AND LMCACHE_SANITIZE STREQUAL "thread")
    return()
  endif()
  _lmcache_gtest_executable(${name} lmcache_add_conformance_test "${ARG_UNPARSED_ARGUMENTS}"
    SOURCES ${ARG_SOURCES} DEPS ${ARG_DEPS} lmcache::conformance)
  if(LMCACHE_SANITIZE STREQUAL "thread")
    lmcache_add_to_concurrency_tests(${name})
    lmcache_conformance_thread_heavy_filter(filter)
    add_test(NAME ${name}.concurrency COMMAND ${name} --gtest_filter=${filter})
    set_tests_properties(${name}.concurrency PROPERTIES LABELS concurrency TIMEOUT 900
      ENVIRONMENT "LMCACHE_CONFORMANCE_DEPTH=quick")
    return()
  endif()
  # Quick depth in every build: conformance_runner.reference holds the same reference
  # implementations to standard depth (in the Release build).
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS conformance TIMEOUT 900
    ENVIRONMENT "LMCACHE_CONFORMANCE_DEPTH=quick")
endfunction()

# lmcache_add_fuzzer(<name> SOURCES ... LIBS ... CORPUS <dir>... [DICT file] [RUNS n]
#                    [MAX_TOTAL_TIME s] [MAX_LEN bytes])
# With LMCACHE_BUILD_FUZZERS only (nothing otherwise): the libFuzzer target <name>_fuzzer, at
# <build>/fuzzers/, from SOURCES (which define LLVMFuzzerTestOneInput), linked with LIBS and built
# with -fsanitize=fuzzer,address,undefined (-fno-sanitize-recover=undefined: UB aborts as a crash
# does); `cmake --build <dir> --target lmcache_fuzzers` builds every one. Registers the ctest
# fuzz.<name> (label "fuzz"): RUNS executions (default 20000) from the checked-in CORPUS folders,
# which are only read (new inputs go to a fresh folder of the build tree), with a fixed seed so
# that a run is repeatable; MAX_TOTAL_TIME (default 30 s) only bounds a slow machine. MAX_LEN
# (default 4096) caps an input's size; DICT is a libFuzzer dictionary. The flags a longer run needs
# too (MAX_LEN, DICT) and the CORPUS folders are written beside the binary, <name>.flags and
# <name>.corpus, for scripts/fuzz.sh. cmake/run_fuzzer.sh runs the ctest and says how to replay a
# failure.
function(lmcache_add_fuzzer name)
  if(NOT LMCACHE_BUILD_FUZZERS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "DICT;RUNS;MAX_TOTAL_TIME;MAX_LEN" "SOURCES;LIBS;CORPUS" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS OR NOT ARG_SOURCES OR NOT ARG_CORPUS)
    message(FATAL_ERROR "lmcache_add_fuzzer(${name}): needs SOURCES and CORPUS "
                        "(unknown arguments: '${ARG_UNPARSED_ARGUMENTS}')")
  endif()
  if(NOT ARG_RUNS)
    set(ARG_RUNS 20000)
  endif()
  if(NOT ARG_MAX_TOTAL_TIME)
    set(ARG_MAX_TOTAL_TIME 30)
  endif()
  if(NOT ARG_MAX_LEN)
    set(ARG_MAX_LEN 4096)
  endif()
  set(target ${name}_fuzzer)
  set(out_dir ${CMAKE_BINARY_DIR}/fuzzers)
  add_executable(${target} ${ARG_SOURCES})
  # The area folder is the include root, as for a library ("lmcache/fuzz/fuzz_support.h").
  cmake_path(GET CMAKE_CURRENT_SOURCE_DIR PARENT_PATH lmcache_dir)
  cmake_path(GET lmcache_dir PARENT_PATH area_root)
  target_include_directories(${target} PRIVATE ${area_root})
  target_link_libraries(${target} PRIVATE ${ARG_LIBS} lmcache_build_flags)
  target_compile_options(${target} PRIVATE -fsanitize=fuzzer)
  target_link_options(${target} PRIVATE -fsanitize=fuzzer)
  set_target_properties(${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${out_dir})
  if(NOT TARGET lmcache_fuzzers)
    add_custom_target(lmcache_fuzzers)
  endif()
  add_dependencies(lmcache_fuzzers ${target})

  set(flags -max_len=${ARG_MAX_LEN})
  if(ARG_DICT)
    list(APPEND flags -dict=${ARG_DICT})
  endif()
  list(JOIN flags "\n" flag_lines)
  list(JOIN ARG_CORPUS "\n" corpus_lines)
  file(WRITE ${out_dir}/${name}.flags "${flag_lines}\n")
  file(WRITE ${out_dir}/${name}.corpus "${corpus_lines}\n")

  add_test(NAME fuzz.${name}
    COMMAND bash ${PROJECT_SOURCE_DIR}/cmake/run_fuzzer.sh $<TARGET_FILE:${target}>
            ${CMAKE_CURRENT_BINARY_DIR}/${name}.work ${flags} -runs=${ARG_RUNS}
            -max_total_time=${ARG_MAX_TOTAL_TIME} -seed=1 -timeout=20 -rss_limit_mb=2048
            -print_final_stats=1 -- ${ARG_CORPUS})
  # Past the time bound with room for start-up and the final report: a hang is reported.
  math(EXPR test_timeout "${ARG_MAX_TOTAL_TIME} * 2 + 60")
  set_tests_properties(fuzz.${name} PROPERTIES LABELS fuzz TIMEOUT ${test_timeout})
endfunction()
