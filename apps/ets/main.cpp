// Entry point of the `ets` tool: dispatches to registered subcommands, turns every error into one line + exit code.
// Exit codes: 0 ok, 1 runtime failure (ets::Error), 2 usage error.
#include <cmath>
#include <cstdio>
#include <exception>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli.hpp"
#include "ets/error.hpp"
#include "ets/log.hpp"
#include "ets/version.hpp"

namespace ets::cli {

bool Args::flag(const std::string& name) const {
  for (const auto& f : flags)
    if (f == name) return true;
  return false;
}

std::string Args::value(const std::string& name, const std::string& fallback) const {
  auto it = values.find(name);
  return it == values.end() ? fallback : it->second;
}

static std::map<std::string, Command>& registry() {
  static std::map<std::string, Command> r;
  return r;
}

Register::Register(Command command) { registry()[command.name] = std::move(command); }

const std::map<std::string, Command>& commands() { return registry(); }

static bool contains(const std::vector<std::string>& v, const std::string& s) {
  for (const auto& x : v)
    if (x == s) return true;
  return false;
}

Args parse(const Spec& spec, const std::vector<std::string>& argv) {
  Args args;
  bool only_positional = false;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (only_positional || a.size() < 2 || a[0] != '-' || a == "-") {
      args.positional.push_back(a);
      continue;
    }
    if (a == "--") {
      only_positional = true;
      continue;
    }
    std::string name = a, inline_value;
    bool has_inline = false;
    if (auto eq = a.find('='); eq != std::string::npos && a.rfind("--", 0) == 0) {
      name = a.substr(0, eq);
      inline_value = a.substr(eq + 1);
      has_inline = true;
    }
    if (contains(spec.flags, name) && !has_inline) {
      args.flags.push_back(name);
    } else if (contains(spec.value_options, name)) {
      if (has_inline) {
        args.values[name] = inline_value;
      } else {
        if (i + 1 >= argv.size()) throw std::invalid_argument("option " + name + " needs a value");
        args.values[name] = argv[++i];
      }
    } else {
      throw std::invalid_argument("unknown option '" + a + "'");
    }
  }
  if (args.positional.size() < spec.min_positional)
    throw std::invalid_argument("missing argument; usage: ets " + spec.usage);
  return args;
}

Tracer::LoadOptions load_options(const Args& args) {
  Tracer::LoadOptions opt;
  if (args.has("--rank")) {
    try {
      opt.rank = std::stoi(args.value("--rank"));
    } catch (const std::exception&) {
      throw std::invalid_argument("--rank takes an integer, got '" + args.value("--rank") + "'");
    }
  }
  opt.keep_incomplete = args.flag("--keep-incomplete");
  return opt;
}

std::string json_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      o += fmt::format("\\u{:04x}", static_cast<int>(c));
      continue;
    }
    o += c;
  }
  return o;
}

std::string json_number(double v) { return std::isfinite(v) ? fmt::format("{:.3f}", v) : "null"; }

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

static void print_help() {
  std::printf("ets %s — predict the iteration time of DL training jobs from execution traces\n\n",
              ets::version_string());
  std::printf("usage: ets <command> [options]\n       ets --version | --help\n\ncommands:\n");
  for (const auto& [name, cmd] : commands()) std::printf("  %-10s %s\n", name.c_str(), cmd.summary.c_str());
  std::printf("\n'ets <command> --help' shows a command's options.\n");
}

}  // namespace ets::cli

int main(int argc, char** argv) {
  using namespace ets::cli;
  std::vector<std::string> rest(argv + 1, argv + argc);
  if (rest.empty()) {
    print_help();
    return 2;
  }
  const std::string first = rest.front();
  if (first == "--version" || first == "-V") {
    std::printf("ets %s%s\n", ets::version_string(), ets::built_with_cuda() ? " (cuda)" : "");
    return 0;
  }
  if (first == "--help" || first == "-h" || first == "help") {
    print_help();
    return 0;
  }
  auto it = commands().find(first);
  if (it == commands().end()) {
    std::fprintf(stderr, "ets: unknown command '%s' (try 'ets --help')\n", first.c_str());
    return 2;
  }
  const Command& cmd = it->second;
  rest.erase(rest.begin());
  if (!rest.empty() && (rest.front() == "--help" || rest.front() == "-h")) {
    std::printf("usage: ets %s\n%s\n", cmd.spec.usage.c_str(), cmd.summary.c_str());
    return 0;
  }
  // The library is silent by default; the CLI shows warnings on stderr.
  ets::set_log_sink([](ets::LogLevel level, std::string_view msg) {
    std::cerr << (level >= ets::LogLevel::warn ? "ets: warning: " : "ets: ") << msg << '\n';
  }, ets::LogLevel::warn);
  try {
    Args args = parse(cmd.spec, rest);
    return cmd.run(args);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "ets %s: %s\n", first.c_str(), e.what());
    return 2;
  } catch (const ets::Error& e) {
    std::fprintf(stderr, "ets %s: %s\n", first.c_str(), e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ets %s: unexpected error: %s\n", first.c_str(), e.what());
    return 1;
  }
}
