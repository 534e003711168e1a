// Two plugins built on ets::ets_header_only with -fvisibility=hidden, loaded with dlopen(RTLD_LOCAL): a sink that
// one installs receives the other's messages. Hidden, each plugin had a log sink of its own, and a scheduler's sink
// installed through one plugin never heard from the other. (GCC merges the statics of exported inline functions
// across libraries; Clang's weak symbols stay per library under RTLD_LOCAL, so the test asks GCC-built plugins.)
// Usage: plugin_host_test PLUGIN_A PLUGIN_B
#include <dlfcn.h>

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: plugin_host_test PLUGIN_A PLUGIN_B\n");
    return 2;
  }
  void* a = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  void* b = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
  if (!a || !b) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  using Install = void (*)(std::vector<std::string>*);
  using Call = void (*)();
  const auto install = reinterpret_cast<Install>(dlsym(a, "plugin_a_install"));
  const auto clear = reinterpret_cast<Call>(dlsym(a, "plugin_a_clear"));
  const auto log_b = reinterpret_cast<Call>(dlsym(b, "plugin_b_log"));
  if (!install || !clear || !log_b) {
    std::fprintf(stderr, "dlsym: %s\n", dlerror());
    return 1;
  }
  std::vector<std::string> seen;
  install(&seen);
  log_b();
  clear();
  if (seen != std::vector<std::string>{"from plugin B 1"}) {
    std::fprintf(stderr, "FAIL: plugin A's sink got %zu messages from plugin B, expected 1\n", seen.size());
    return 1;
  }
  std::printf("plugin A's sink got plugin B's message\n");
  return 0;
}
