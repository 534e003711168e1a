# cmake -DFILE=path -DMAX_BYTES=n -P check_file_size.cmake: fails when FILE is missing or larger than MAX_BYTES
# (the shipped model's limit from issue #7: 5 MB).
if(NOT EXISTS "${FILE}")
  message(FATAL_ERROR "${FILE} does not exist")
endif()
file(SIZE "${FILE}" size)
if(size GREATER MAX_BYTES)
  message(FATAL_ERROR "${FILE} is ${size} bytes, over the limit of ${MAX_BYTES}")
endif()
message(STATUS "${FILE}: ${size} bytes (limit ${MAX_BYTES})")
