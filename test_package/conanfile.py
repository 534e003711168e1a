# Conan test_package: builds and runs a small consumer of the freshly created ets package.
# It links ets::ets_header_only when the package is header-only, ets::ets otherwise (and ets::ets_cuda with CUDA).
import os

from conan import ConanFile
from conan.tools.build import can_run
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout


class EtsTestConan(ConanFile):
    settings = "os", "arch", "compiler", "build_type"
    test_type = "explicit"

    def requirements(self):
        self.requires(self.tested_reference_str)

    def layout(self):
        cmake_layout(self)

    def generate(self):
        opts = self.dependencies["ets"].options
        tc = CMakeToolchain(self)
        tc.user_presets_path = False  # no CMakeUserPresets.json left in the source tree
        tc.cache_variables["ETS_TEST_TARGET"] = "ets_header_only" if opts.header_only else "ets"
        tc.cache_variables["ETS_TEST_CUDA"] = bool(opts.get_safe("with_cuda"))
        tc.generate()
        CMakeDeps(self).generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def test(self):
        if can_run(self):
            self.run(os.path.join(self.cpp.build.bindir, "test_package"), env="conanrun")
