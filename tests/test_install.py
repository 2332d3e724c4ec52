"""`make install` compiles llama-cpp-python without llama.cpp's `common` library: the CMake
arguments the Makefile passes switch it off even though llama-cpp-python's own CMakeLists.txt
forces it on before adding llama.cpp. Checked with the real cmake and make on a two-level project
laid out as llama-cpp-python's is (the real source is a 76 MB download)."""
from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT


def makefile_llama_cmake_args() -> list[str]:
    """The Makefile's LLAMA_CMAKE_ARGS as make itself expands it."""
    res = subprocess.run(
        ["make", "-s", "--no-print-directory", "--eval", "print-llama-args: ; @echo $(LLAMA_CMAKE_ARGS)",
         "print-llama-args"],
        cwd=ROOT, capture_output=True, text=True, check=True)
    return shlex.split(res.stdout)


def configure(tmp_path: Path, args: list[str]) -> str:
    """Configure a project whose top level forces LLAMA_BUILD_COMMON ON (as llama-cpp-python
    0.3.x does) and whose subdirectory is a project named "llama.cpp" declaring the option (as
    llama.cpp does); the value the subdirectory sees, as cmake printed it."""
    src = tmp_path / "src"
    sub = src / "vendor" / "llama.cpp"
    sub.mkdir(parents=True)
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.21)\nproject(llama_cpp NONE)\n"
        'set(LLAMA_BUILD_COMMON ON CACHE BOOL "Build llama.cpp common library" FORCE)\n'
        "add_subdirectory(vendor/llama.cpp)\n")
    (sub / "CMakeLists.txt").write_text(
        'cmake_minimum_required(VERSION 3.14)\nproject("llama.cpp" NONE)\n'
        'option(LLAMA_BUILD_COMMON "llama: build common utils library" OFF)\n'
        'message(STATUS "common=${LLAMA_BUILD_COMMON}")\n')
    res = subprocess.run(["cmake", "-S", str(src), "-B", str(tmp_path / "build"), *args],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    return next(line for line in res.stdout.splitlines() if "common=" in line).split("common=")[1]


@pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("make") is None,
                    reason="cmake or make is not installed here")
def test_the_makefile_switches_off_llama_cpp_common_library_that_llama_cpp_python_forces_on(tmp_path):
    args = makefile_llama_cmake_args()
    assert "-DLLAVA_BUILD=OFF" in args
    include = next(a.split("=", 1)[1] for a in args if a.startswith("-DCMAKE_PROJECT_llama.cpp_INCLUDE="))
    assert Path(include) == ROOT / "packaging" / "llama_cpp_library_only.cmake"
    assert configure(tmp_path / "without", []) == "ON"
    assert configure(tmp_path / "with", args) == "OFF"
