# The command line's option handling (fuzz_cli.c: `icsim train` and `icsim collective` parsed and
# checked, stopping before any hardware model is loaded; `icsim infer` up to its model catalog),
# included by CMakeLists.txt here. The CLI is not in libicsim, so its seven files are compiled
# into the target. Both ctests run in an
# empty directory: the target looks names up in the working directory.
set(ics_cli_fuzz_sources ${PROJECT_SOURCE_DIR}/sim/cli/cli_train.c
    ${PROJECT_SOURCE_DIR}/sim/cli/cli_collective.c ${PROJECT_SOURCE_DIR}/sim/cli/cli_common.c
    ${PROJECT_SOURCE_DIR}/sim/cli/cli_progress.c
    ${PROJECT_SOURCE_DIR}/sim/cli/cli_step.c ${PROJECT_SOURCE_DIR}/sim/cli/cli_coll_nccltests.c
    ${PROJECT_SOURCE_DIR}/sim/cli/cli_infer.c)
set(ics_cli_fuzz_work ${CMAKE_CURRENT_BINARY_DIR}/fuzz_cli_work)
file(MAKE_DIRECTORY ${ics_cli_fuzz_work})

add_executable(fuzz_cli_replay fuzz_cli.c fuzz_hw_replay.c ${ics_cli_fuzz_sources})
target_link_libraries(fuzz_cli_replay PRIVATE icsim_lib)
add_test(NAME fuzz_cli_replay COMMAND fuzz_cli_replay ${CMAKE_CURRENT_SOURCE_DIR}/corpus-cli
         WORKING_DIRECTORY ${ics_cli_fuzz_work})

if(ICS_FUZZ)
  # the catalog where the shipped icsim finds it (libicsim's copy here has no path definitions)
  set_property(SOURCE ${PROJECT_SOURCE_DIR}/sim/workload/model.c TARGET_DIRECTORY icsim_fuzz_lib
               APPEND PROPERTY COMPILE_DEFINITIONS
               ICS_DEFAULT_MODELS="${PROJECT_SOURCE_DIR}/models/models.json")
  add_executable(fuzz_cli fuzz_cli.c ${ics_cli_fuzz_sources})
  target_link_libraries(fuzz_cli PRIVATE icsim_fuzz_lib)
  target_compile_options(fuzz_cli PRIVATE ${ics_fuzz_flags} -fsanitize=fuzzer)
  target_link_options(fuzz_cli PRIVATE -fsanitize=fuzzer,address,undefined)
  # seeds: corpus-cli/; words: fuzz_cli.dict; stderr (one message per input) closed
  add_test(NAME fuzz_cli_short
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_short.sh $<TARGET_FILE:fuzz_cli>
                   ${CMAKE_CURRENT_BINARY_DIR}/fuzz_cli_short 30 ${CMAKE_CURRENT_SOURCE_DIR}/corpus-cli
                   -- -max_len=4096 -close_fd_mask=2
                   -dict=${CMAKE_CURRENT_SOURCE_DIR}/fuzz_cli.dict)
  set_tests_properties(fuzz_cli_short PROPERTIES LABELS slow TIMEOUT 120)
endif()
