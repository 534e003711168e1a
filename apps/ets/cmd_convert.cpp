// `ets convert IN... -o OUT.etst[.gz]`: any trace Tracer::load reads, converted to ETS's canonical trace file.
// Iterations of all inputs go to one file, in argument order (a warning when they describe different jobs);
// .gz output is gzip-compressed.
#include <cstdio>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <sys/stat.h>

#include <fmt/format.h>

#include "cli.hpp"
#include "ets/error.hpp"
#include "ets/trace_file.hpp"
#include "ets/tracer.hpp"

namespace ets::cli {
namespace {

int run_convert(const Args& args) {
  const std::string out = args.has("-o") ? args.value("-o") : args.value("--output");
  if (out.empty()) throw std::invalid_argument("missing -o OUT.etst (or OUT.etst.gz)");
  require_etst_output("-o", out);
  if (!args.flag("--quiet")) refuse_dash_output("-o", out);  // the summary line would land in the trace file
  const Tracer::LoadOptions opt = load_options(args);
  const std::string why = detail::unwritable_reason(out, true);  // before the inputs are read
  ETS_CHECK(why.empty(), Errc::io, "ets.etst.1", "cannot write '{}': {}", out, why);

  std::vector<ExecutionTrace> all;
  std::size_t ops = 0;
  std::set<std::pair<dev_t, ino_t>> inputs;  // one file under two names (x, ./x, a link) writes its iterations twice
  for (const std::string& path : args.positional) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && !inputs.insert({st.st_dev, st.st_ino}).second)
      std::fprintf(stderr, "ets convert: warning: '%s' is an input given before: its iterations are written twice\n",
                   path.c_str());
    for (auto& t : Tracer::load(path, opt)) {
      ops += t.ops.size();
      all.push_back(std::move(t));
    }
  }
  // A file that predict and inspect refuse (ets.predict.4) is not a conversion
  ETS_CHECK(!all.empty(), Errc::invalid_trace, "ets.cli.4", "no iteration in {}: nothing to write to '{}'",
            args.positional.size() == 1 ? "'" + args.positional.front() + "'"
                                        : fmt::format("the {} inputs", args.positional.size()),
            out);
  // Iterations keep their own metadata, but predict and inspect stand a file for one job: say when it holds several.
  std::set<std::string> jobs;
  for (const auto& t : all)
    jobs.insert(fmt::format("{} (batch size {}) on '{}'", t.meta.model.empty() ? "?" : t.meta.model,
                            t.meta.batch_size, t.meta.device));
  if (jobs.size() > 1) {
    std::string list;
    for (const auto& j : jobs) list += (list.empty() ? "" : ", ") + j;
    std::fprintf(stderr,
                 "ets convert: warning: %s holds %zu different jobs (%s); predict and inspect take a file for one job\n",
                 out.c_str(), jobs.size(), list.c_str());
  }
  write_trace_file(out, all);
  if (!args.flag("--quiet"))
    std::fputs(fmt::format("{}: {} iteration(s), {} op(s) from {} file(s)\n", out, all.size(), ops,
                           args.positional.size())
                   .c_str(),
               stdout);
  return 0;
}

const Register convert_cmd{Command{
    "convert", "convert traces to the canonical ETS trace file (.etst / .etst.gz)",
    Spec{"convert TRACE... -o OUT.etst[.gz] [--batch-size N] [--rank N] [--keep-incomplete] [--max-bytes SIZE] [--quiet]",
         {"--keep-incomplete", "--quiet"},
         {"-o", "--output", "--batch-size", "--rank", "--max-bytes"},
         1,
         {{"-o, --output OUT", "file to write: OUT.etst, or OUT.etst.gz gzip-compressed (required)"},
          batch_size_help(),
          rank_help(),
          keep_incomplete_help(),
          max_bytes_help(),
          {"--quiet", "do not print the summary line (iterations, ops, files)"}}},
    run_convert}};

}  // namespace
}  // namespace ets::cli
