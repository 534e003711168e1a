// `ets train --data DIR --out M`: trains the BiLSTM on DIR's train split, early-stops on the val split's
// iteration-level MRE and writes the .etsm; a progress bar with ETA goes to stderr. All logic is ModelTrainer's.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "cli.hpp"
#include "ets/dataset_split.hpp"
#include "ets/error.hpp"
#include "ets/evaluator.hpp"
#include "ets/feature_spec.hpp"
#include "ets/model_file.hpp"
#include "ets/model_trainer.hpp"

namespace ets::cli {
namespace {

// The model is written after the training: a place it cannot be written must be found out before it.
void check_writable(const std::string& out) {
  const std::string why = detail::unwritable_reason(out, true);  // a pipe or device is written in place
  ETS_CHECK(why.empty(), Errc::io, "ets.model.9", "cannot write model file '{}': {}", out, why);
}

double positive_option(const Args& a, const std::string& name, double fallback, bool zero_ok) {
  const double v = number_option(a, name, fallback);
  if (!(zero_ok ? v >= 0 : v > 0))
    throw std::invalid_argument(name + (zero_ok ? " must be >= 0" : " must be > 0") + ", not '" + a.value(name) + "'");
  return v;
}

std::string hms(double s) {
  const long t = static_cast<long>(s < 0 ? 0 : s);
  return t >= 3600 ? fmt::format("{}h{:02}m", t / 3600, t % 3600 / 60) : fmt::format("{}m{:02}s", t / 60, t % 60);
}

int run_train(const Args& a) {
  const auto t_command = std::chrono::steady_clock::now();
  const auto seconds_so_far = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t_command).count();
  };
  const std::string data = a.value("--data"), out = a.value("--out");
  if (data.empty() || out.empty()) throw std::invalid_argument("needs --data DIR and --out MODEL.etsm");
  ModelTrainer::Options o;
  // Ranges as the trainer and the model file accept them: a bad value is a usage error before any data is read.
  o.hidden = static_cast<int>(integer_option(a, "--hidden", 0, 0, 65536));
  o.layers = static_cast<int>(integer_option(a, "--layers", o.layers, 1, 64));
  const std::string cell = a.value("--cell", "lstm");
  if (cell != "lstm" && cell != "gru") throw std::invalid_argument("--cell must be lstm or gru, not '" + cell + "'");
  o.cell = cell == "gru" ? RnnCell::gru : RnnCell::lstm;
  o.width = static_cast<int>(integer_option(a, "--width", o.width, 1, 4096));
  // (a narrow window without --stride gets stride = width, not a default stride wider than it)
  o.stride = static_cast<int>(integer_option(a, "--stride", std::min(o.stride, o.width), 1, o.width));
  o.threads = static_cast<int>(integer_option(a, "--threads", 0, 0, kMaxThreads));
  const std::uint64_t max_bytes = size_option(a, "--max-bytes", default_max_trace_bytes());  // per dataset file
  auto& t = o.train;
  // at least one: 0 epochs would write the untrained starting weights as a model
  t.epochs = static_cast<int>(integer_option(a, "--epochs", t.epochs, 1, std::numeric_limits<int>::max()));
  t.batch = static_cast<int>(integer_option(a, "--batch", t.batch, 1, std::numeric_limits<int>::max()));
  t.lr = positive_option(a, "--lr", t.lr, false);
  t.seed = static_cast<std::uint64_t>(
      integer_option(a, "--seed", static_cast<long long>(t.seed), 0, std::numeric_limits<long long>::max()));
  t.threads = o.threads;
  t.patience = static_cast<int>(integer_option(a, "--patience", t.patience, 0, std::numeric_limits<int>::max()));
  t.weight_decay = positive_option(a, "--weight-decay", t.weight_decay, true);
  t.clip_norm = positive_option(a, "--clip", t.clip_norm, true);
  t.ema_decay = number_option(a, "--ema", t.ema_decay);
  if (!(t.ema_decay >= 0 && t.ema_decay < 1))
    throw std::invalid_argument("--ema must be in [0, 1) (0 = off), not '" + a.value("--ema") + "'");
  o.loss_time_power = number_option(a, "--loss-weight", 0.0);
  if (!(o.loss_time_power >= 0 && o.loss_time_power <= 2))
    throw std::invalid_argument("--loss-weight must be in [0, 2] (0 = off), not '" + a.value("--loss-weight") + "'");
  // the budget covers the whole command (loading, encoding, training, final validation), not just the optimiser
  const double budget_s = 60.0 * number_option(a, "--max-minutes", 15.0);
  if (budget_s < 0) throw std::invalid_argument("--max-minutes must be >= 0 (0 = no time budget)");
  t.anneal_within_budget = a.flag("--anneal-to-budget");
  o.features.backward_twin = !a.flag("--no-backward-twin");
  if (t.anneal_within_budget && budget_s == 0)
    throw std::invalid_argument("--anneal-to-budget follows the time budget: it needs --max-minutes > 0");
  t.max_windows_per_epoch = integer_option(a, "--max-windows", 0, 0, std::numeric_limits<long long>::max());
  t.checkpoint_path = a.value("--checkpoint");
  t.resume = a.flag("--resume");
  if (t.resume && t.checkpoint_path.empty()) throw std::invalid_argument("--resume needs --checkpoint PATH");
  o.hardware_env = a.value("--environment");
  // no model ets predict cannot load (one taken from the traces is checked by ModelTrainer::train, ets.train.20)
  require_printable_environment("--environment", o.hardware_env);
  o.provenance["dataset"] = data;
  if (a.has("--commit")) o.provenance["git_commit"] = a.value("--commit");

  const std::string train_split = a.value("--train-split", "train"), val_split = a.value("--val-split", "val");
  if (train_split.empty()) throw std::invalid_argument("--train-split needs a split name");
  if (!val_split.empty() && same_split(data, val_split, train_split))  // "traces/train", "train/": the same directory
    throw std::invalid_argument("--val-split " + val_split + " is the training split: early stopping would score "
                                "the data it trains on (--val-split \"\" trains without validation)");
  if (o.hidden > 0) {  // (0: H = F, known once the data is read; the default network is small)
    // The weights, their gradients and Adam's two moments at the least, counted with one input feature: said
    // before the data is read, and before an overcommitting kernel lets the allocation succeed and then kills the
    // process while it fills memory.
    LstmConfig c{1, o.hidden, o.layers, 2, true};
    c.cell = o.cell;
    // and the model file's bound, which the trainer would only check once the data is read and encoded
    const double parameters = weight_bytes(c) / sizeof(float);
    if (parameters > static_cast<double>(ModelFile::kMaxBytes / sizeof(float)))
      throw std::invalid_argument(fmt::format(
          "--hidden {} and --layers {} make at least {:.0f} parameters, more than the {} (2 GiB of floats) a model file "
          "holds", o.hidden, o.layers, parameters, ModelFile::kMaxBytes / sizeof(float)));
    check_fits_in_memory(4 * weight_bytes(c), "--hidden and --layers (weights, gradients, Adam's moments)");
  }
  refuse_dash_output("--out", out);
  if (!t.checkpoint_path.empty()) refuse_dash_output("--checkpoint", t.checkpoint_path);
  // nor may they replace a trace being trained on (the next run fails on it as an unknown format) or a manifest
  for (const auto& [option, path] : {std::pair<const char*, std::string>{"--out", out}, {"--checkpoint", t.checkpoint_path}})
    if (!path.empty() && inside_dataset(path, data, {train_split, val_split}))
      throw std::invalid_argument(std::string(option) + " '" + path + "' lies in the dataset --data " + data +
                                  " (its traces or its manifest): it would be overwritten");
  check_writable(out);
  // The model would replace the checkpoint (and a later --resume would fail on it with ets.train.9)
  if (!t.checkpoint_path.empty() && same_file(out, t.checkpoint_path))
    throw std::invalid_argument("--out and --checkpoint name the same file '" + out + "'");
  if (!t.checkpoint_path.empty()) {  // written at the first validation: minutes in, so found out now
    const std::string why = detail::unwritable_reason(t.checkpoint_path, false);
    ETS_CHECK(why.empty(), Errc::io, "ets.train.11", "cannot write checkpoint '{}': {}", t.checkpoint_path, why);
  }

  const bool quiet = a.flag("--quiet"), tty = isatty(fileno(stderr)) != 0;
  if (!quiet) std::fprintf(stderr, "ets train: loading %s ...\n", data.c_str());
  const auto train = DatasetSplit::load(data, train_split, o.threads, max_bytes);
  // --val-split "": no validation (no early stopping; the last weights are kept)
  const auto val = val_split.empty() ? DatasetSplit{} : DatasetSplit::load(data, val_split, o.threads, max_bytes);
  // What training will use: traces with per-op labels, validation traces with a measured time (as ModelTrainer)
  const auto usable_train = std::count_if(train.traces.begin(), train.traces.end(),
                                          [](const ExecutionTrace& x) { return FeatureSpec::has_labels(x); });
  const auto usable_val = std::count_if(val.traces.begin(), val.traces.end(), Evaluator::scorable);
  if (!quiet)
    std::fprintf(stderr, "ets train: %zu train traces (%ld labelled), %zu val traces (%ld with a measured time)\n",
                 train.traces.size(), static_cast<long>(usable_train), val.traces.size(), static_cast<long>(usable_val));
  if (usable_val == 0)
    std::fprintf(stderr, "ets train: warning: %s: no early stopping; the last weights are kept\n",
                 val_split.empty() ? "no validation split" : "no validation trace carries a measured time");
  {
    std::map<std::string, std::size_t> envs;
    for (const auto& x : train.traces) ++envs[x.meta.environment];
    if (envs.size() > 1) {
      std::string list;
      for (const auto& [e, n] : envs) list += fmt::format("{}'{}' ({})", list.empty() ? "" : ", ", e, n);
      std::fprintf(stderr,
                   "ets train: warning: the training traces come from %zu hardware environments (%s); a model "
                   "predicts for one (--environment names it)\n",
                   envs.size(), list.c_str());
    }
  }
  if (budget_s > 0) {
    // After the trainer stops: freeing the encoded windows (~3 GB on the full dataset), writing and checking the
    // model, and the process's exit. On 2026-12-02, with 2 s kept here, a 15-minute run on the full dataset had
    // used all of it when the model was saved (wall_seconds 900.0) and exited 0.5 s later (4.8 GB peak RSS).
    constexpr double kSaveReserve = 5.0;
    o.max_seconds = std::max(1e-3, budget_s - seconds_so_far() - kSaveReserve);
  }

  double last_line_s = -1e9;  // not a terminal (a log file): a line per evaluation and at most one a minute between
  t.progress = [&](const Trainer::Progress& p) {
    // Ctrl-C, SIGTERM (Slurm's scancel and time limit, a Kubernetes pod's termination) or SIGHUP: the trainer stops
    // and returns the best weights so far, which are written; then the command ends by that signal
    if (StopSignals::received() != 0) return false;
    if (quiet) return true;
    // the bar follows the ETA, which a time budget shortens (the planned epochs would take hours)
    const double frac = p.elapsed_s + p.eta_s > 0 ? std::clamp(p.elapsed_s / (p.elapsed_s + p.eta_s), 0.0, 1.0) : 0.0;
    const int fill = static_cast<int>(30 * frac);
    std::string line = fmt::format("[{}{}] epoch {}/{} step {}/{} loss {:.4f}", std::string(static_cast<std::size_t>(fill), '#'),
                                   std::string(static_cast<std::size_t>(30 - fill), '.'), p.epoch + 1, p.epochs, p.step,
                                   p.steps_total, p.train_loss);
    if (p.val_metric >= 0) line += fmt::format(" val MRE {:.2f}% (best {:.2f}%)", 100 * p.val_metric, 100 * p.best_val_metric);
    line += fmt::format(" {:.0f} win/s elapsed {} eta {}", p.windows_per_s, hms(p.elapsed_s), hms(p.eta_s));
    if (tty)
      std::fprintf(stderr, "\r\x1b[2K%s%s", line.c_str(), p.evaluated ? "\n" : "");
    else if (p.evaluated || p.elapsed_s - last_line_s >= 60.0) {
      std::fprintf(stderr, "%s\n", line.c_str());
      last_line_s = p.elapsed_s;
    }
    std::fflush(stderr);
    return true;
  };
  const auto r = [&] {
    const StopSignals stopping;  // the caller's signal handling is back once training returns, or throws
    return ModelTrainer::train(train.traces, val.traces, o);
  }();
  const int stop_signal = StopSignals::received();
  if (r.training.cancelled)
    std::fprintf(stderr, "\nets train: interrupted%s: writing the best weights so far (epoch %d)\n",
                 stop_signal == SIGTERM ? " (SIGTERM)" : stop_signal == SIGHUP ? " (SIGHUP)" : "",
                 r.training.best_epoch + 1);
  save_model(r.model, out);
  const auto& tr = r.training;
  const double wall_s = seconds_so_far();
  // -1 means "not validated"; a diverged validation can be NaN or infinite: JSON gets null for all three
  const auto metric = [](double v) {
    return v >= 0 ? json_number(v, 6) : std::string("null");
  };
  if (a.flag("--json")) {
    std::string history;
    for (const auto& e : tr.history)
      history += fmt::format("{}{{\"epoch\":{},\"train_loss\":{},\"val_mre\":{},\"lr\":{:.3g},\"seconds\":{:.1f}}}",
                             history.empty() ? "" : ",", e.epoch, metric(e.train_loss), metric(e.val_metric), e.lr,
                             e.seconds);
    std::printf("%s\n",
                fmt::format("{{\"model\":\"{}\",\"train_traces\":{},\"val_traces\":{},\"train_windows\":{},\"epochs\":{},"
                            "\"best_epoch\":{},\"steps\":{},\"batch\":{},\"val_mre\":{},\"seconds\":{:.1f},"
                            "\"wall_seconds\":{:.1f},\"windows_per_s\":{:.0f},\"kernels\":\"{}\",\"early_stopped\":{},"
                            "\"out_of_time\":{},\"interrupted\":{},\"history\":[{}]}}",
                            json_escape(out), r.train_traces, r.val_traces, r.train_windows, tr.epochs_run,
                            tr.best_epoch >= 0 ? std::to_string(tr.best_epoch) : std::string("null"),
                            tr.steps, t.batch, metric(r.val_mre), tr.seconds, wall_s, tr.windows_per_s,
                            json_escape(tr.kernels), tr.early_stopped ? "true" : "false",
                            tr.out_of_time ? "true" : "false", tr.cancelled ? "true" : "false", history)
                    .c_str());
  } else {
    std::printf("%s\n",
                fmt::format("wrote {}: {} train traces ({} windows), {} epochs (best {}{}), val MRE {}, trained in {} "
                            "({} in all), {:.0f} windows/s ({} kernels)",
                            out, r.train_traces, r.train_windows, tr.epochs_run,
                            tr.best_epoch >= 0 ? std::to_string(tr.best_epoch + 1) : std::string("none"),
                            tr.early_stopped  ? ", early stop"
                            : tr.out_of_time  ? ", time budget"
                            : tr.cancelled    ? ", interrupted"
                                              : "",
                            r.val_mre >= 0 && std::isfinite(r.val_mre) ? fmt::format("{:.2f}%", 100 * r.val_mre)
                                                                       : std::string("n/a"),
                            hms(tr.seconds), hms(wall_s), tr.windows_per_s, tr.kernels)
                    .c_str());
  }
  if (tr.cancelled) StopSignals::end_by_received();  // the model is written: now end as the signal asked
  return 0;
}

const Register train_cmd{Command{
    "train", "train a predictor on a dataset",
    Spec{"train --data DIR --out M.etsm [--epochs N] [--batch B] [--lr X] [--hidden H] [--layers L] [--cell lstm|gru] "
         "[--width W] "
         "[--stride S] [--seed N] [--threads T] [--patience P] [--max-minutes M] [--max-windows N] [--weight-decay X] "
         "[--clip X] [--ema D] [--loss-weight P] [--anneal-to-budget] [--no-backward-twin] [--checkpoint PATH [--resume]] [--train-split S] "
         "[--val-split S] "
         "[--environment E] [--commit C] [--max-bytes SIZE] [--quiet] [--json]",
         {"--resume", "--quiet", "--json", "--anneal-to-budget", "--no-backward-twin"},
         {"--data", "--out", "--epochs", "--batch", "--lr", "--hidden", "--layers", "--cell", "--width", "--stride", "--seed",
          "--threads", "--patience", "--max-minutes", "--max-windows", "--weight-decay", "--clip", "--ema",
          "--loss-weight", "--checkpoint", "--train-split", "--val-split", "--environment", "--commit", "--max-bytes"},
         0,
         {{"--data DIR", "dataset directory: trains on its --train-split, early-stops on its --val-split (required)"},
          {"--out M.etsm", "model file to write (required)"},
          {"--epochs N", "maximum epochs, at least 1 (default 40)"},
          {"--batch B", "windows per optimizer step (default 256)"},
          {"--lr X", "peak learning rate of the warm-up + cosine schedule (default 0.002)"},
          {"--hidden H", "hidden units per direction (default 0: the feature count; at most 2^29 parameters in all)"},
          {"--layers L", "recurrent layers, 1 to 64 (default 4)"},
          {"--cell lstm|gru", "recurrent cell (default lstm)"},
          {"--width W", "ops per window, 1 to 4096 (default 12)"},
          {"--stride S", "ops between the starts of consecutive windows, 1 to W (default 4, or W when W < 4)"},
          {"--seed N", "seed of the initial weights and the shuffling (default 42)"},
          {"--threads T", "threads for loading, training and validation (default 0: the CPUs this process may use)"},
          {"--patience P", "stop after P validations without improvement (default 6; 0: never)"},
          {"--max-minutes M", "wall-clock budget of the whole command, in minutes (default 15; 0: none)"},
          {"--max-windows N", "train each epoch on N of the shuffled windows (default 0: all)"},
          {"--weight-decay X", "decoupled (AdamW) weight decay (default 0)"},
          {"--clip X", "bound on the global gradient norm (default 1; 0: off)"},
          {"--ema D", "validate and keep an exponential moving average of the weights, D in [0, 1) (default 0: off)"},
          {"--loss-weight P",
           "weigh each op's loss by ((time + gap) / mean)^P, clipped to [0.1, 10]; P in [0, 2] (default 0: off)"},
          {"--anneal-to-budget",
           "the cosine decay follows the time budget when ahead of the steps, reaching its floor at its end"},
          {"--no-backward-twin", "describe a backward op by itself, not by its forward twin (the features of models before it)"},
          {"--checkpoint PATH", "write a checkpoint to PATH after every validation"},
          {"--resume", "continue from the --checkpoint file if it exists"},
          {"--train-split S", "split of DIR to train on (default train)"},
          {"--val-split S", "split of DIR to validate on, not the train split (default val; \"\": none)"},
          {"--environment E", "hardware environment of the model (default: the training traces' most common)"},
          {"--commit C", "git commit recorded in the model's provenance"},
          max_bytes_help(),
          {"--quiet", "no progress on stderr"},
          {"--json", "print the result (with the per-epoch history) as one JSON object"}},
         {},
         0},  // no positional argument: a stray word is a usage error, not dropped
    run_train}};

}  // namespace
}  // namespace ets::cli
