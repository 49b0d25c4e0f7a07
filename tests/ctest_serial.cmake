# Read by ctest after the discovered tests (TEST_INCLUDE_FILES, tests/CMakeLists.txt). The tests named here judge the
# machine's load (they start processes that burn cores, or read a verdict that other processes change): each runs
# alone, never beside another test of a parallel ctest (-j2 in tools/test.sh and tools/sanitize.sh), which their
# verdicts would count as other processes' CPU. tests/arch/serial_names_test.py checks that each name is a test.
foreach(t
    SlowedComputeProcess.ChildrenBurningTheCoresAreOtherProcesses
    SlowedComputeProcess.TwiceAsManyThreadsAsCoresIsOwnOversubscription
    SlowedComputeProcess.AnotherThreadsOpenMpTeamMakesTheIntraOpThreadsSleep
    SlowedComputeProcess.ACgroupQuotaOfOneCoreIsTheUsableCountAndTheCause
    DataBoundProcess.ASlowReaderIsNamedAsTheLoadersShortage)
  set_tests_properties("${t}" PROPERTIES RUN_SERIAL TRUE)
endforeach()
