# Generates the de_DE.UTF-8 locale at OUT for locale_test. Never fails: without the locale sources the test skips
# its setlocale case with a warning instead.
if(EXISTS "${OUT}/LC_NUMERIC")
  return()
endif()
get_filename_component(dir "${OUT}" DIRECTORY)
file(MAKE_DIRECTORY "${dir}")
execute_process(COMMAND "${LOCALEDEF}" -i de_DE -f UTF-8 "${OUT}" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(STATUS "localedef could not build de_DE.UTF-8 (${rc}): ${err}")
endif()
