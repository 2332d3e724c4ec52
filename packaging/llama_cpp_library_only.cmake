# Read by llama.cpp's own CMakeLists.txt right after its `project("llama.cpp" ...)` line, when
# llama-cpp-python is compiled by `make install` (the Makefile passes this file's path as
# -DCMAKE_PROJECT_llama.cpp_INCLUDE through CMAKE_ARGS).
#
# llama-cpp-python forces LLAMA_BUILD_COMMON ON, which compiles llama.cpp's `common` library
# (argument parsing, chat parsers, model download, an HTTP client) that the Python package never
# loads: half of the whole compile. Switching it off here, after that FORCE and before llama.cpp's
# option(), leaves libllama, libggml, libggml-base and libggml-cpu as they were (the same machine
# code: benchmarks/RESULTS.md, "Later still: the install without llama.cpp's `common` library").
set(LLAMA_BUILD_COMMON OFF CACHE BOOL "llama: build common utils library" FORCE)
