# Replaying what the readers accept (fuzz_sim.c: a node and a JSON trace, replayed on a small
# budget of GPUs, ranks and ops), included by CMakeLists.txt here. Seeds: corpus-sim/ (node and
# trace joined by a "===" line), corpus-trace/ and the trace bad inputs (a trace alone runs on
# the target's built-in node); words: fuzz_sim.dict (the node's and the trace's).
add_executable(fuzz_sim_replay fuzz_sim.c fuzz_hw_replay.c)
target_link_libraries(fuzz_sim_replay PRIVATE icsim_lib)
add_test(NAME fuzz_sim_replay
         COMMAND fuzz_sim_replay ${CMAKE_CURRENT_SOURCE_DIR}/corpus-sim
                 ${CMAKE_CURRENT_SOURCE_DIR}/corpus-trace ${PROJECT_SOURCE_DIR}/scenarios/traces)

if(ICS_FUZZ)
  add_executable(fuzz_sim fuzz_sim.c)
  target_link_libraries(fuzz_sim PRIVATE icsim_fuzz_lib)
  target_compile_options(fuzz_sim PRIVATE ${ics_fuzz_flags} -fsanitize=fuzzer)
  target_link_options(fuzz_sim PRIVATE -fsanitize=fuzzer,address,undefined)
  add_test(NAME fuzz_sim_short
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_short.sh $<TARGET_FILE:fuzz_sim>
                   ${CMAKE_CURRENT_BINARY_DIR}/fuzz_sim_short 30
                   ${CMAKE_CURRENT_SOURCE_DIR}/corpus-sim ${CMAKE_CURRENT_SOURCE_DIR}/corpus-trace
                   -- -dict=${CMAKE_CURRENT_SOURCE_DIR}/fuzz_sim.dict)
  set_tests_properties(fuzz_sim_short PROPERTIES LABELS slow TIMEOUT 120)
endif()
