/* The one source of the test-only libets.so (tests/CMakeLists.txt): the library's code comes whole from libets.a. A
   translation unit may not be empty, so it declares the C ABI it exports. */
#include "ets/ets.h"
