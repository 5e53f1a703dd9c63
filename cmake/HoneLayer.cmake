# hone_layer(NAME <layer> SOURCES ... DEPS ... [TESTS ...] [SLOW_TESTS ...] [GPU_TESTS ...])
# Declares the static library hone_<layer> and, when tests are on, its test
# binaries: hone_<layer>_tests (fast, label "fast"), hone_<layer>_slow_tests
# (real llama-server and other real engines, label "slow") and
# hone_<layer>_gpu_tests (label "gpu"; they skip cleanly without a GPU).
# A layer can only include what it links.
set(HONE_WARNINGS -Wall -Wextra -Wshadow=local -Wnon-virtual-dtor -Wno-missing-field-initializers)

# hone_add_test_binary(NAME LABEL SOURCES... [SERIAL <gtest filter>]): the tests the
# filter names run alone (RUN_SERIAL): a test that asserts a verdict measured on a real
# engine must not share the two cores with ctest's other slow tests, whose bursts made
# its paired ratios range from 1.4x to 27x and its interval straddle 1.
function(hone_add_test_binary name label)
  cmake_parse_arguments(T "" "SERIAL" "" ${ARGN})
  add_executable(${name} ${T_UNPARSED_ARGUMENTS})
  target_compile_options(${name} PRIVATE ${HONE_WARNINGS})
  if(HONE_WERROR)
    target_compile_options(${name} PRIVATE -Werror)
  endif()
  target_link_libraries(${name} PRIVATE hone_testing GTest::gmock GTest::gtest_main)
  if(T_SERIAL)
    gtest_discover_tests(${name}
      DISCOVERY_TIMEOUT 60 TEST_FILTER "-${T_SERIAL}"
      PROPERTIES LABELS ${label} TIMEOUT 1200
                 ENVIRONMENT "HONE_DATA_DIR=${CMAKE_SOURCE_DIR};HONE_BINARY_DIR=${CMAKE_BINARY_DIR}")
    # 30 minutes: the specialist's session has a 20-minute budget plus its rebuild (it
    # took 925 s and 1084 s in two CI runs) and the test gives `hone run` 30 minutes.
    gtest_discover_tests(${name}
      DISCOVERY_TIMEOUT 60 TEST_FILTER "${T_SERIAL}"
      PROPERTIES LABELS ${label} TIMEOUT 1800 RUN_SERIAL TRUE
                 ENVIRONMENT "HONE_DATA_DIR=${CMAKE_SOURCE_DIR};HONE_BINARY_DIR=${CMAKE_BINARY_DIR}")
  else()
    gtest_discover_tests(${name}
      DISCOVERY_TIMEOUT 60
      PROPERTIES LABELS ${label} TIMEOUT 1200
                 ENVIRONMENT "HONE_DATA_DIR=${CMAKE_SOURCE_DIR};HONE_BINARY_DIR=${CMAKE_BINARY_DIR}")
  endif()
endfunction()

function(hone_layer)
  cmake_parse_arguments(L "" "NAME;SLOW_SERIAL" "SOURCES;DEPS;TESTS;SLOW_TESTS;GPU_TESTS;TEST_DEPS" ${ARGN})
  set(lib hone_${L_NAME})
  add_library(${lib} STATIC ${L_SOURCES})
  target_include_directories(${lib} PUBLIC ${CMAKE_SOURCE_DIR}/src)
  target_compile_options(${lib} PRIVATE ${HONE_WARNINGS})
  if(HONE_WERROR)
    target_compile_options(${lib} PRIVATE -Werror)
  endif()
  target_link_libraries(${lib} PUBLIC ${L_DEPS})
  if(NOT HONE_BUILD_TESTS)
    return()
  endif()
  if(L_TESTS)
    hone_add_test_binary(hone_${L_NAME}_tests fast ${L_TESTS})
    target_link_libraries(hone_${L_NAME}_tests PRIVATE ${lib} ${L_TEST_DEPS})
  endif()
  if(L_SLOW_TESTS AND L_SLOW_SERIAL)  # SLOW_SERIAL: a gtest filter of slow tests run alone
    hone_add_test_binary(hone_${L_NAME}_slow_tests slow ${L_SLOW_TESTS} SERIAL "${L_SLOW_SERIAL}")
    target_link_libraries(hone_${L_NAME}_slow_tests PRIVATE ${lib} ${L_TEST_DEPS})
  elseif(L_SLOW_TESTS)
    hone_add_test_binary(hone_${L_NAME}_slow_tests slow ${L_SLOW_TESTS})
    target_link_libraries(hone_${L_NAME}_slow_tests PRIVATE ${lib} ${L_TEST_DEPS})
  endif()
  if(L_GPU_TESTS)
    hone_add_test_binary(hone_${L_NAME}_gpu_tests gpu ${L_GPU_TESTS})
    target_link_libraries(hone_${L_NAME}_gpu_tests PRIVATE ${lib} ${L_TEST_DEPS})
  endif()
endfunction()
