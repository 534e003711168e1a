# Conan 2 recipe for ETS: `conan create . -pr packaging/conan/profiles/debian12 --build=missing` (see docs/getting-started.md).
# The CMake targets it describes are the ones the project's own install exports: ets::ets, ets::ets_header_only, ets::ets_cuda.
import os
import re

from conan import ConanFile
from conan.errors import ConanInvalidConfiguration
from conan.tools.build import check_min_cppstd
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load, rmdir, save

required_conan_version = ">=2.0"


class EtsConan(ConanFile):
    name = "ets"
    description = "Execution-trace based iteration-time prediction for deep-learning training (embeddable C++17)"
    license = "MIT"
    topics = ("deep-learning", "performance-prediction", "scheduling", "lstm")
    package_type = "library"
    settings = "os", "arch", "compiler", "build_type"
    options = {
        "shared": [True, False],
        "fPIC": [True, False],
        "header_only": [True, False],  # ets::ets_header_only alone: the CPU core, no importers / model I/O
        "with_cuda": [True, False],    # ets::ets_cuda; CUDA, cuDNN and CUPTI come from the system
    }
    default_options = {"shared": False, "fPIC": True, "header_only": False, "with_cuda": False}
    # Only what a library build reads: no apps/, tests/, tools/, docs/.
    exports_sources = ("CMakeLists.txt", "LICENSE", "cmake/*", "include/*", "src/*", "cuda/*", "models/*")

    def set_version(self):
        text = load(self, os.path.join(self.recipe_folder, "CMakeLists.txt"))
        self.version = re.search(r"project\(ets VERSION ([0-9.]+)", text).group(1)

    def config_options(self):
        if self.settings.os == "Windows":
            del self.options.fPIC

    def configure(self):
        if self.options.header_only:
            self.options.rm_safe("shared")
            self.options.rm_safe("fPIC")
            self.package_type = "header-library"
        elif self.options.shared:
            self.options.rm_safe("fPIC")

    def layout(self):
        cmake_layout(self, src_folder=".")

    def requirements(self):
        # Public headers include Eigen and fmt; the rest is private to the compiled library.
        self.requires("eigen/[>=3.3 <4]", transitive_headers=True)
        self.requires("fmt/[>=9.1 <12]", transitive_headers=True, transitive_libs=True)
        if not self.options.header_only:
            self.requires("simdjson/[>=3.0 <4]")
            self.requires("sqlite3/[>=3.40 <4]")
            self.requires("zlib/[>=1.2.13 <2]")

    def validate(self):
        if self.settings.get_safe("compiler.cppstd"):
            check_min_cppstd(self, 17)
        if self.options.header_only and self.options.with_cuda:
            raise ConanInvalidConfiguration("ets: with_cuda needs the compiled library (header_only=False)")
        if self.options.get_safe("shared") and self.settings.os == "Windows":
            raise ConanInvalidConfiguration("ets: no DLL exports yet; use shared=False on Windows")

    def package_id(self):
        if self.info.options.header_only:
            self.info.clear()

    def generate(self):
        if self.options.header_only:
            return
        tc = CMakeToolchain(self)
        for opt in ("TESTS", "EXAMPLES", "CLI", "BENCH"):
            tc.cache_variables[f"ETS_BUILD_{opt}"] = False
        tc.cache_variables["ETS_INSTALL"] = True
        tc.cache_variables["ETS_NATIVE"] = False
        tc.cache_variables["ETS_WITH_CUDA"] = bool(self.options.with_cuda)
        tc.generate()
        CMakeDeps(self).generate()

    def _config_header(self):
        """cmake/config.hpp.in rendered the way CMakeLists.txt does, for the header-only package (no CMake run)."""
        major, minor, patch = self.version.split(".")
        values = {"PROJECT_VERSION_MAJOR": major, "PROJECT_VERSION_MINOR": minor, "PROJECT_VERSION_PATCH": patch,
                  "PROJECT_VERSION": self.version, "ETS_BUILT_WITH_CUDA": "0"}
        text = load(self, os.path.join(self.source_folder, "cmake", "config.hpp.in"))
        text = re.sub(r"@(\w+)@", lambda m: values.get(m.group(1), m.group(0)), text)
        left = re.findall(r"@\w+@", text)
        if left:
            raise ConanInvalidConfiguration(f"ets: config.hpp.in has variables the recipe does not know: {left}")
        return text

    def build(self):
        if self.options.header_only:
            save(self, os.path.join(self.build_folder, "generated", "include", "ets", "config.hpp"),
                 self._config_header())
            return
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def package(self):
        copy(self, "LICENSE", self.source_folder, os.path.join(self.package_folder, "licenses"))
        if self.options.header_only:
            copy(self, "*.hpp", os.path.join(self.source_folder, "include"), os.path.join(self.package_folder, "include"))
            copy(self, "*.h", os.path.join(self.source_folder, "include"), os.path.join(self.package_folder, "include"))
            copy(self, "ets/config.hpp", os.path.join(self.build_folder, "generated", "include"),
                 os.path.join(self.package_folder, "include"))
            self._write_platform_modules()
            return
        CMake(self).install()
        # Consumers get Conan's generated config / .pc files instead (they know where the dependencies are).
        rmdir(self, os.path.join(self.package_folder, "lib", "cmake"))
        rmdir(self, os.path.join(self.package_folder, "lib", "pkgconfig"))
        self._write_platform_modules()

    # A [platform_requires] dependency is satisfied by the system and gets no CMakeDeps target, so a component
    # cannot name it. For those, a small build module (shipped in every package, included by ets-config.cmake
    # only when needed) finds the system copy with CMake's own find_package and links it to our targets.
    # name -> (find_package call, imported target, private to the compiled library)
    _system_deps = {
        "eigen": ("find_package(Eigen3 3.3 REQUIRED NO_MODULE)", "Eigen3::Eigen", False),
        "fmt": ("find_package(fmt REQUIRED)", "fmt::fmt", False),
        "simdjson": ("find_package(simdjson REQUIRED)", "simdjson::simdjson", True),
        # CMake 4's FindSQLite3 names its target SQLite3::SQLite3 and deprecates SQLite::SQLite3 (a warning in the
        # consumer's configure); before 4 only the old name exists, so it gets the new one (as ETS's CMakeLists)
        "sqlite3": ("find_package(SQLite3 REQUIRED)\n  if(NOT TARGET SQLite3::SQLite3 AND TARGET SQLite::SQLite3)\n"
                    "    add_library(SQLite3::SQLite3 INTERFACE IMPORTED)\n"
                    "    target_link_libraries(SQLite3::SQLite3 INTERFACE SQLite::SQLite3)\n  endif()",
                    "SQLite3::SQLite3", True),
        "zlib": ("find_package(ZLIB REQUIRED)", "ZLIB::ZLIB", True),
    }
    _modules_dir = os.path.join("lib", "cmake", "ets-conan")

    def _write_platform_modules(self):
        for name, (find, target, private) in self._system_deps.items():
            if private:
                link = (f"if(TARGET ets::ets)\n  target_link_libraries(ets::ets INTERFACE $<LINK_ONLY:{target}>)\n"
                        "endif()\n")
            else:
                link = ("foreach(_ets_t ets::ets_header_only ets::ets)\n  if(TARGET ${_ets_t})\n"
                        f"    target_link_libraries(${{_ets_t}} INTERFACE {target})\n  endif()\nendforeach()\n")
            save(self, os.path.join(self.package_folder, self._modules_dir, f"platform-{name}.cmake"),
                 f"# Written by the ets Conan recipe: {name} comes from the system ([platform_requires]).\n"
                 f"if(NOT TARGET {target})\n  {find}\nendif()\n{link}")

    def _conan_deps(self, *names):
        """Component requires for the dependencies Conan provides; the platform ones go to build modules."""
        reqs, modules = [], []
        for name in names:
            try:
                self.dependencies[name]
                reqs.append(f"{name}::{name}")
            except KeyError:
                modules.append(os.path.join(self._modules_dir, f"platform-{name}.cmake"))
        return reqs, modules

    def package_info(self):
        self.cpp_info.set_property("cmake_file_name", "ets")
        # The components own the ets::ets name; the umbrella target (everything) gets another one.
        self.cpp_info.set_property("cmake_target_name", "ets::ets_all")
        self.cpp_info.set_property("pkg_config_name", "ets_all")
        threads = ["pthread", "m"] if self.settings.os in ("Linux", "FreeBSD") else []

        ho = self.cpp_info.components["ets_header_only"]
        ho.set_property("cmake_target_name", "ets::ets_header_only")
        ho.set_property("pkg_config_name", "ets_header_only")
        ho.requires, modules = self._conan_deps("eigen", "fmt")
        ho.system_libs = threads
        ho.bindirs = []
        ho.libdirs = []
        if self.options.header_only:
            self.cpp_info.set_property("cmake_build_modules", modules)
            return

        lib = self.cpp_info.components["ets"]
        lib.set_property("cmake_target_name", "ets::ets")
        lib.set_property("pkg_config_name", "ets")
        lib.libs = ["ets"]
        lib.defines = ["ETS_COMPILED_LIB"]
        lib.requires, modules = self._conan_deps("eigen", "fmt", "simdjson", "sqlite3", "zlib")
        self.cpp_info.set_property("cmake_build_modules", modules)
        lib.system_libs = threads

        if self.options.with_cuda:
            cu = self.cpp_info.components["ets_cuda"]
            cu.set_property("cmake_target_name", "ets::ets_cuda")
            cu.set_property("pkg_config_name", "ets_cuda")
            cu.libs = ["ets_cuda"]
            cu.defines = ["ETS_HAS_CUDA_BACKEND=1"]
            cu.requires = ["ets"]
            if not self.options.shared:
                # A static libets_cuda.a needs these at the consumer's link; they come from the CUDA install
                # (cuBLAS, for the head GEMM of the cuDNN backend, is loaded at run time, and dl does that).
                cu.system_libs = ["cudnn", "cupti", "cudart", "dl"]
                cuda_lib = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "lib64")
                if os.path.isdir(cuda_lib):
                    cu.libdirs = ["lib", cuda_lib]
