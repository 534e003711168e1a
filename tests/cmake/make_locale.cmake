# Generates de_DE.UTF-8 (decimal comma) and tr_TR.UTF-8 (dotless i) under DIR for locale_test. Never fails:
# without the locale sources the test skips its setlocale cases with a warning instead.
file(MAKE_DIRECTORY "${DIR}")
foreach(name de_DE tr_TR)
  if(EXISTS "${DIR}/${name}.UTF-8/LC_CTYPE")
    continue()
  endif()
  execute_process(COMMAND "${LOCALEDEF}" -i ${name} -f UTF-8 "${DIR}/${name}.UTF-8" RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(STATUS "localedef could not build ${name}.UTF-8 (${rc}): ${err}")
  endif()
endforeach()
