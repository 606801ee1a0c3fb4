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
           COMMAND bash -c "rm -rf \"$1\" && mkdir -p \"$1/corpus\" && \
cp \"$2\"/* \"$3\"/* \"$1/corpus/\" && \
exec \"$0\" -max_total_time=30 -rss_limit_mb=2048 -timeout=10 -max_len=16384 \
-dict=\"$2\"/../fuzz_sim.dict -artifact_prefix=\"$1\"/ \"$1/corpus\""
                   $<TARGET_FILE:fuzz_sim> ${CMAKE_CURRENT_BINARY_DIR}/fuzz_sim_short
                   ${CMAKE_CURRENT_SOURCE_DIR}/corpus-sim ${CMAKE_CURRENT_SOURCE_DIR}/corpus-trace)
  set_tests_properties(fuzz_sim_short PROPERTIES LABELS slow TIMEOUT 120)
endif()
