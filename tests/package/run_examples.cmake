# Installs the ETS build tree into a scratch prefix, then configures, builds and runs each examples/<name>/ as a
# standalone project against it with find_package(ets CONFIG REQUIRED). Inputs: ETS_BUILD_DIR, WORK_DIR, EXAMPLES_DIR,
# GENERATOR, CONFIG, MODEL (.etsm), TRACE (a trace file the examples predict).
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
if(NOT CONFIG)
  set(CONFIG Release)
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --install ${ETS_BUILD_DIR} --prefix ${prefix} --config ${CONFIG}
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(rc)
  message(FATAL_ERROR "cmake --install failed (${rc})")
endif()
set(runs
  "predict_from_trace|${MODEL}|${TRACE}"
  "scheduler_hook|a=${MODEL}|b=${MODEL}|--|${TRACE}|${TRACE}"
  "c_api|${MODEL}|${TRACE}")
foreach(run ${runs})
  string(REPLACE "|" ";" args "${run}")
  list(POP_FRONT args name)
  set(bdir ${WORK_DIR}/build-${name})
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${EXAMPLES_DIR}/${name} -B ${bdir} -G ${GENERATOR}
                  -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=${CONFIG}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc)
    message(FATAL_ERROR "example ${name}: configure failed\n${out}\n${err}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${bdir} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc)
    message(FATAL_ERROR "example ${name}: build failed\n${out}\n${err}")
  endif()
  execute_process(COMMAND ${bdir}/${name} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc)
    message(FATAL_ERROR "example ${name}: run failed (${rc})\n${out}\n${err}")
  endif()
  message(STATUS "example ${name}:\n${out}")
endforeach()

# scheduler_hook reads an argument naming a file as a path, '=' or not, and refuses two models for one environment
set(hook ${WORK_DIR}/build-scheduler_hook/scheduler_hook)
file(COPY ${MODEL} DESTINATION "${WORK_DIR}/lr=0.1")
get_filename_component(model_name ${MODEL} NAME)
execute_process(COMMAND ${hook} "${WORK_DIR}/lr=0.1/${model_name}" -- ${TRACE} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(rc)
  message(FATAL_ERROR "scheduler_hook with a model path holding '=': rc ${rc}\n${out}\n${err}")
endif()
execute_process(COMMAND ${hook} ${MODEL} ${MODEL} -- ${TRACE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "two models for environment")
  message(FATAL_ERROR "scheduler_hook with two models for one environment: rc ${rc} (want 2)\n${out}\n${err}")
endif()
