#!/usr/bin/python3
# Dataset collector CLI: runs ≥ 3 timing passes per configuration in fresh processes, then labels them with `ets label`.
# Resumable (skips finished passes and labelled configs), one failing config never stops a run; see docs/dataset.md.
"""Collect ETS training traces.

    /usr/bin/python3 tools/collect/collect.py                     # the whole manifest, 3 passes, labels into data/
    /usr/bin/python3 tools/collect/collect.py --limit 10 --passes 2   # pilot
    /usr/bin/python3 tools/collect/collect.py --configs ids.txt --device cuda --passes 1 --out gpu-out/data

Work is done in blocks of --block configs: for each block, pass 1, 2, 3 each run in a fresh worker process over a
freshly shuffled order, so one configuration's passes are minutes apart with other configurations in between; the
block's configurations are then labelled. Interrupt at any time; the next run resumes.

Speed gate (--speed-gate, default 5%): every pass records speed probes (a GEMM loop, small tensor ops). A block's pass
whose probe medians lie further than that from the environment's reference (the first gated pass, kept in
OUT/speed_ref.json beside the labels, or --speed-ref) ran while the machine was faster or slower than the rest of the
collection: it is set aside (raw/<id>/pass<N>.slow-<time>.*), the collector pauses --speed-pause minutes and runs it
again, and after --speed-retries such runs it stops (exit 3), to be resumed later.

Config gate (--config-gate, default 10%): a configuration whose own probes, right before or right after it, ran more
than that slower than the reference met a slow spell too short to move the block's medians: its pass is set aside
(raw/<id>/pass<N>.slow-config-<time>.*) and run again in a fresh worker, at most --config-retries times.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tools.collect import configs as C  # noqa: E402
from tools.collect import env as E  # noqa: E402  (no torch import in env at module level)
from tools.atomic_file import atomic_write  # noqa: E402


class Progress:
    """One-line progress bar with ETA on stderr (plain lines when stderr is not a terminal)."""

    def __init__(self, total: int, label: str = ""):
        self.total, self.done, self.fails, self.t0, self.label = max(1, total), 0, 0, time.time(), label
        self.tty = sys.stderr.isatty()
        self.last_plain = 0.0

    def update(self, note: str, ok: bool = True) -> None:
        self.done += 1
        self.fails += 0 if ok else 1
        el = time.time() - self.t0
        eta = el / self.done * (self.total - self.done)
        width = 30
        fill = int(width * self.done / self.total)
        line = (f"[{'#' * fill}{'.' * (width - fill)}] {self.done}/{self.total} {100 * self.done / self.total:5.1f}% "
                f"elapsed {_hms(el)} eta {_hms(eta)} fails {self.fails} | {note}")
        if self.tty:
            sys.stderr.write("\r\x1b[2K" + line[:160])
            sys.stderr.flush()
        elif time.time() - self.last_plain > 10 or self.done == self.total:
            sys.stderr.write(line + "\n")
            self.last_plain = time.time()

    def close(self) -> None:
        if self.tty:
            sys.stderr.write("\n")


def _hms(s: float) -> str:
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


class Interrupted(Exception):
    """SIGINT or SIGTERM reached the collector: it stops its worker, removes its temporaries and exits 128 + signal."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _interrupt(signum, frame):
    raise Interrupted(signum)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _hold_signals() -> None:
    """While the collector cleans up after an interruption, a second Ctrl-C or SIGTERM must not cut the clean-up."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)


class Collector:
    def __init__(self, args):
        self.a = args
        self.out = os.path.abspath(args.out)
        self.raw = os.path.abspath(args.raw or os.path.join(self.out, "raw"))
        self.traces = os.path.join(self.out, "traces")
        self.state = os.path.join(self.out, "collect")
        for d in (self.out, self.raw, self.traces, self.state):
            os.makedirs(d, exist_ok=True)
        self.log_path = os.path.join(self.state, "run.jsonl")
        self.ets = args.ets or _find_ets()
        self.settings = E.pass_settings(args.warmup, args.iters, args.isolate, args.heap_mb, getattr(args, "rt", False),
                                        args.tail_steps)
        # Beside the labels, not in collect/ (local state): a collection resumed on another day or machine, and its
        # retest, must gate on the speed the first labels were taken at. An older collection's file in collect/ is
        # moved here where there is none.
        self.speed_ref_path = os.path.join(self.out, "speed_ref.json")
        old_ref = os.path.join(self.state, "speed_ref.json")
        if not os.path.exists(self.speed_ref_path) and os.path.exists(old_ref):
            os.replace(old_ref, self.speed_ref_path)  # moved, not copied: deleting the new file must drop it
        # One dataset is one environment (docs/dataset.md). label_envs: the environments of OUT's labels, those there
        # when run() started and each one this run writes; pass_envs: where no label exists yet, the environments of
        # the passes OUT already records (a collection begun with --no-label), joined by each pass this run keeps.
        self.label_envs, self.pass_envs = set(), set()
        self.check_envs = False  # off for a --quick dry run, whose labels may come from any host

    # ---- bookkeeping
    def log(self, **ev) -> None:
        ev["t"] = round(time.time(), 3)
        with open(self.log_path, "a") as fh:
            fh.write(json.dumps(ev, sort_keys=True) + "\n")

    def status(self, cid: str, p: int):
        path = os.path.join(self.raw, cid, f"pass{p}.status.json")
        try:
            with open(path) as fh:
                return json.load(fh)
        except (OSError, ValueError):
            return None

    def pass_env(self, cid: str, p: int) -> str:
        """The environment id a pass recorded ("" when none)."""
        return _status_env(self.status(cid, p))

    def label_path(self, cfg: dict) -> str:
        return os.path.join(self.traces, cfg["split"], cfg["id"] + ".etst.gz")

    def needs_pass(self, cid: str, p: int) -> bool:
        st = self.status(cid, p)
        if st is None:
            return True
        if st.get("ok"):
            # done only while its trace is still there (--prune-raw / --invalidate remove traces) and it ran with
            # this collection's settings (a --quick pass into the same --out is not a full pass)
            settings = st.get("settings")
            # a label's passes all ran one way: a pass counts only for a collection with its own --isolate and
            # --heap-mb and --tail-steps (one from before any existed, without settings, only with none of them)
            same = settings == self.settings if settings is not None else not (
                self.a.isolate or self.a.heap_mb or self.a.tail_steps)
            trace = os.path.join(self.raw, cid, f"pass{p}.json.gz")
            return not (same and os.path.exists(trace))
        return self.a.retry_failed

    # ---- passes
    def run_pass(self, ids: list, p: int, progress: Progress) -> None:
        """Runs one pass over ids in fresh worker processes (one per config with --isolate, in the same order)."""
        if self.a.isolate:
            # Every pass of every config in a process of its own: a profiled iteration depends on what the process
            # ran before it (docs/dataset.md), so a label must not depend on its block neighbours.
            for cid in ids:
                self._run_worker([cid], p, progress)
        else:
            self._run_worker(ids, p, progress)

    def _run_worker(self, ids: list, p: int, progress: Progress) -> None:
        """Runs ids in fresh worker processes, in order; a crashed worker is blamed on its current config."""
        todo = list(ids)
        while todo:
            ids_file = os.path.join(self.state, f"ids-pass{p}-{os.getpid()}.txt")
            with open(ids_file, "w") as fh:
                fh.write("\n".join(todo) + "\n")
            cmd = (["chrt", "-f", "10"] if self.a.rt else []) + [sys.executable, "-u", os.path.join(HERE, "worker.py"), "--ids", ids_file, "--pass", str(p),
                   "--raw", self.raw, "--device", self.a.device, "--warmup", str(self.a.warmup),
                   "--iters", str(self.a.iters), "--tail-steps", str(self.a.tail_steps),
                   "--max-iter-s", str(self.a.max_iter_s),
                   "--env-out", self.env_tmp(p), "--heap-mb", str(self.a.heap_mb),
                   "--export-nested", self.a.export_nested]
            if self.a.isolate:
                cmd.append("--isolated")
            if self.a.rt:
                cmd.append("--rt")
            # stderr goes to a file, not a pipe: a worker that writes much to stderr while the collector reads stdout
            # would otherwise block both forever
            err_path = os.path.join(self.state, f"worker-pass{p}-{os.getpid()}.stderr")
            err_fh = open(err_path, "w+")
            proc = None
            finished = set()
            try:
                proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err_fh, text=True, cwd=ROOT)
                assert proc.stdout is not None
                for line in proc.stdout:
                    parts = line.split()
                    if len(parts) == 4 and parts[0] == "DONE":
                        cid, ok, secs = parts[1], parts[2] == "1", float(parts[3])
                        finished.add(cid)
                        st = self.status(cid, p) or {}
                        self.log(ev="pass", config=cid, **{"pass": p}, ok=ok, secs=secs,
                                 error=st.get("error", ""))
                        progress.update(f"{cid} p{p} {secs:.1f}s{'' if ok else ' FAILED'}", ok)
                rc = proc.wait()
            except Interrupted:
                # stop the worker (it would run on, orphaned, and write passes no one logs) and leave nothing of its
                _hold_signals()
                if proc is not None:
                    _stop(proc)
                err_fh.close()
                paths = [err_path, ids_file, self.env_tmp(p)]
                if proc is not None:
                    paths.append(os.path.join(self.raw, f".current-{proc.pid}"))
                for path in paths:
                    try:
                        os.remove(path)
                    except OSError:
                        pass
                raise
            err_fh.seek(0)
            err = err_fh.read()
            err_fh.close()
            # the worker is gone: neither file is needed any more, whatever happens next (a clean pass breaks out
            # of this loop below, a worker that died at once stops the run)
            for path in (err_path, ids_file):
                try:
                    os.remove(path)
                except OSError:
                    pass
            todo = [c for c in todo if c not in finished]
            if rc == 0 and not todo:
                break
            # the worker died (segfault, OOM kill, ...): blame the config it was running, then go on without it
            marker = os.path.join(self.raw, f".current-{proc.pid}")
            culprit = None
            if os.path.exists(marker):
                with open(marker) as fh:
                    culprit = fh.read().strip()
                os.remove(marker)
            if culprit is not None and culprit in finished:
                # it died after finishing that config (its DONE line came, its status is written): nothing to
                # blame, and its good pass stays; the rest runs in a new worker (this one made progress)
                self.log(ev="crash", config=None, after=culprit, **{"pass": p}, rc=rc, stderr=err[-500:])
                continue
            if culprit is None and not finished:
                # died before starting any config (an import error, a broken environment): blaming each config in
                # turn would start one failing process per config; stop and say why
                sys.exit(f"collect.py: the worker exited with {rc} before its first config:\n{err[-2000:]}")
            if culprit is None and todo:
                culprit = todo[0]
            if culprit:
                d = os.path.join(self.raw, culprit)
                os.makedirs(d, exist_ok=True)
                rec = {"ok": False, "config": culprit, "pass": p, "error": f"worker crashed rc={rc}",
                       "stderr_tail": err[-2000:]}
                with open(os.path.join(d, f"pass{p}.status.json"), "w") as fh:
                    json.dump(rec, fh, indent=1)
                self.log(ev="crash", config=culprit, **{"pass": p}, rc=rc, stderr=err[-500:])
                progress.update(f"{culprit} p{p} CRASHED rc={rc}", False)
                todo = [c for c in todo if c != culprit]
            if rc != 0 and not culprit:
                break

    # ---- environment records
    def env_tmp(self, p: int) -> str:
        """Where the workers of pass p write their environment record, until the pass is kept (keep_env_record)."""
        return os.path.join(self.state, f".env-pass{p}-{os.getpid()}.json")

    def keep_env_record(self, p: int, keep: bool) -> None:
        """The record of pass p's workers becomes OUT/collect/env-<environment>.json, one per environment (card.py
        reads the one of its labels' environment), when the pass is kept; a pass set aside for its environment
        leaves none: every pass used to overwrite collect/env-pass<N>.json, so the card's env table could describe
        a host whose passes were all rejected."""
        tmp = self.env_tmp(p)
        try:
            with open(tmp) as fh:
                rec = json.load(fh)
        except (OSError, ValueError):
            rec = None
        if keep and isinstance(rec, dict):
            env = re.sub(r"[^A-Za-z0-9._-]", "_", str(rec.get("environment") or "unknown"))
            os.replace(tmp, os.path.join(self.state, f"env-{env}.json"))
            return
        try:
            os.remove(tmp)
        except OSError:
            pass

    # ---- speed gate
    def pass_speed(self, ids: list, p: int):
        """(environment, {probe: median}) over the passes of ids that succeeded with speed probes; None without."""
        envs, probes = [], {k: [] for k in E.SPEED_PROBES}
        for cid in ids:
            st = self.status(cid, p) or {}
            probe = E.pass_probe(st)
            if probe is None:
                continue
            envs.append(_status_env(st))
            for k in E.SPEED_PROBES:
                probes[k].append(probe[k])
        if not envs:
            return None
        return statistics.mode(envs), {k: statistics.median(v) for k, v in probes.items()}

    def speed_reference(self, env: str, measured: dict, ids: list, p: int) -> dict:
        """The environment's reference probe medians: --speed-ref, else the stored one, else `measured`, pass p of
        ids (stored)."""
        try:
            with open(self.speed_ref_path) as fh:
                refs = json.load(fh)
        except (OSError, ValueError):
            refs = {}
        if self.a.speed_ref:
            ref = dict(zip(E.SPEED_PROBES, self.a.speed_ref), source="--speed-ref")
        elif env in refs:
            return refs[env]
        else:
            # which passes it came from: --invalidate drops a reference taken in a window it moves aside
            ref = dict(measured, source="first gated pass", passes=sorted(ids), gated_pass=p,
                       span_unix=self._pass_span(ids, p))
        if refs.get(env) != ref:
            refs[env] = ref
            atomic_write(self.speed_ref_path, json.dumps(refs, indent=1, sort_keys=True))
            self.log(ev="speed_ref", environment=env, **ref)
        return ref

    def _pass_span(self, ids: list, p: int) -> list:
        """[first start, last end] in unix seconds of pass p of ids (as --invalidate reads them); [] without times."""
        spans = [w for w in (_pass_window(self.status(cid, p)) for cid in ids) if w]
        return [round(min(w[0] for w in spans), 3), round(max(w[1] for w in spans), 3)] if spans else []

    def move_pass(self, cid: str, p: int, tag: str) -> None:
        """Moves a pass's status and trace to pass<p>.<tag>.*, so that the next run collects it again; never deleted."""
        d = os.path.join(self.raw, cid)
        for ext in (".status.json", ".json.gz"):
            src = os.path.join(d, f"pass{p}{ext}")
            if os.path.exists(src):
                os.replace(src, os.path.join(d, f"pass{p}.{tag}{ext}"))

    def set_aside(self, ids: list, p: int, why: str) -> None:
        """Moves the pass files of ids to pass<p>.<why>-<time>.*: kept for the record, run again."""
        stamp = time.strftime("%Y%m%d%H%M%S")
        for cid in ids:
            d = os.path.join(self.raw, cid)
            tag, k = f"{why}-{stamp}", 1
            while os.path.exists(os.path.join(d, f"pass{p}.{tag}.status.json")):  # set aside twice in one second
                k += 1
                tag = f"{why}-{stamp}-{k}"
            self.move_pass(cid, p, tag)

    def unjudged(self, block: list, p: int) -> list:
        """The configs of block whose pass p counts (done, with this collection's settings) and has not been judged
        by the speed gate yet: those this attempt ran, and those that finished before an interruption."""
        return [cid for cid in block if not self.needs_pass(cid, p) and not (self.status(cid, p) or {}).get("speed_judged")]

    def mark_judged(self, ids: list, p: int, verdict: dict) -> None:
        """Records in each pass's status that the speed gate took it, so that a resumed run does not judge it again."""
        for cid in ids:
            st = self.status(cid, p)
            if st is None:
                continue
            st["speed_judged"] = verdict
            atomic_write(os.path.join(self.raw, cid, f"pass{p}.status.json"), json.dumps(st, indent=1, sort_keys=True))

    def slow_configs(self, ids: list, p: int, ref: dict) -> dict:
        """{config: slowness} of the passes p of ids whose own probes, before or after the configuration, ran more
        than --config-gate slower than the reference (E.pass_slowness)."""
        out = {}
        for cid in ids:
            slow = E.pass_slowness(self.status(cid, p), ref)
            if slow is not None and slow > self.a.config_gate:
                out[cid] = slow
        return out

    def config_reruns(self, cid: str, p: int) -> int:
        """How often pass p of cid was set aside by the per-config gate (its pass<p>.slow-config-* files): counted
        from the files, so that a resumed run does not start the count again."""
        d = os.path.join(self.raw, cid)
        try:
            names = os.listdir(d)
        except OSError:
            return 0
        return sum(1 for f in names if f.startswith(f"pass{p}.slow-config-") and f.endswith(".status.json"))

    def gated_pass(self, block: list, p: int, progress: Progress, rng: random.Random) -> str:
        """Runs pass p of the block's configs that need it, in a fresh shuffled order, until the probes of every pass
        p of the block not judged yet (this attempt's, and any that finished before an interruption) match the
        reference speed: "" then, "speed" when the retries ran out, "environment:<id>" when it ran in an environment
        other than the dataset's (set aside, before its speed is judged or becomes a reference).

        Two gates. The config gate (--config-gate) looks at each configuration's own probes, before and after it: a
        slow spell of a few seconds (a host that switches speed, docs/dataset.md) spoils the configurations it
        overlaps. The block gate compares the medians of the other configurations' probes with the reference: a
        machine slower or faster for the whole pass (a pass with every configuration slow is one). A spell's passes
        are set aside as pass<p>.slow-config-* and run again in a fresh worker, at most --config-retries times each;
        after that the last one is kept, its slowness recorded in its status (speed_judged.config_slow)."""
        attempt = 0  # block-gate retries used
        rerun = False  # this attempt re-runs configurations the config gate set aside
        while True:
            ids = [cid for cid in block if self.needs_pass(cid, p)]
            rng.shuffle(ids)  # a fresh order per pass: slow spells hit different configs each time
            if ids:
                self.run_pass(ids, p, progress)
                other_env = self.other_environment(ids, p)
                self.keep_env_record(p, not other_env)
                if other_env:
                    self.set_aside(ids, p, "other-env")
                    return "environment:" + other_env
            judge = self.unjudged(block, p)
            speed = self.pass_speed(judge, p) if self.a.speed_gate > 0 and judge else None
            if speed is None:
                return ""  # gate off, or no probes to judge by (every pass failed, or an old worker)
            env, got = speed
            ref = self.speed_reference(env, got, judge, p)
            # The block gate judges the machine's speed over the pass by the configurations that met no slow spell:
            # spells short enough for the config gate to catch one by one would otherwise move the medians (many
            # configurations in spells make a block look 7% slow) and send the whole block round again.
            slow = self.slow_configs(judge, p, ref) if self.a.config_gate > 0 else {}
            clean = self.pass_speed([c for c in judge if c not in slow], p) if slow else None
            if clean is not None:
                got = clean[1]
            rel = {k: got[k] / ref[k] - 1.0 for k in E.SPEED_PROBES}
            off = {k: v for k, v in rel.items() if abs(v) > self.a.speed_gate}
            if not rerun:
                # a re-run of a few configurations is judged one by one below: the median of their probes is no
                # measure of the machine over a pass
                self.log(ev="speed", **{"pass": p}, configs=len(judge), ran=len(ids), environment=env,
                         attempt=attempt, **{k: round(got[k], 4) for k in E.SPEED_PROBES},
                         **{k + "_rel": round(v, 4) for k, v in rel.items()}, ok=not off,
                         **({"in_spells": len(slow)} if slow else {}))
            if off and not rerun:
                desc = ", ".join(f"{k} {100 * v:+.1f}%" for k, v in off.items())
                sys.stderr.write(f"\ncollect: pass {p} of {len(judge)} configs ran off the reference speed ({desc}; "
                                 f"gate ±{100 * self.a.speed_gate:.0f}%): set aside\n")
                self.set_aside(judge, p, "slow")
                if attempt >= self.a.speed_retries:
                    return "speed"
                attempt += 1
                sys.stderr.write(f"collect: pausing {self.a.speed_pause:g} min, then running it again "
                                 f"({attempt}/{self.a.speed_retries})\n")
                progress.total += len(judge)
                time.sleep(60.0 * self.a.speed_pause)
                continue
            verdict = {"t": round(time.time(), 3), "environment": env, "attempt": attempt,
                       **{k + "_rel": round(v, 4) for k, v in rel.items()}}
            again = sorted(c for c in slow if self.config_reruns(c, p) < self.a.config_retries)
            for cid in judge:
                if cid in again:
                    continue
                self.mark_judged([cid], p, dict(verdict, config_slow=round(slow[cid], 4)) if cid in slow else verdict)
            if not again:
                return ""
            self.log(ev="config_speed", **{"pass": p}, environment=env, gate=self.a.config_gate,
                     again={c: round(slow[c], 4) for c in again},
                     kept={c: round(v, 4) for c, v in slow.items() if c not in again})
            self.set_aside(again, p, "slow-config")
            progress.total += len(again)
            rerun = True
            if self.a.config_pause > 0:
                time.sleep(self.a.config_pause)

    # ---- labelling
    def label(self, cfg: dict) -> bool:
        cid, P = cfg["id"], self.a.passes
        files = [os.path.join(self.raw, cid, f"pass{p}.json.gz") for p in range(1, P + 1)]
        out = self.label_path(cfg)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        envs = [self.pass_env(cid, p) for p in range(1, P + 1)]
        if len(set(envs)) > 1:
            # a collection resumed on another host (or after an env.py change): a median over both is the time of
            # neither; --redo-unlabelled collects the config again, keeping these passes aside
            self.log(ev="label", config=cid, ok=False, rc=None, stdout="",
                     stderr=f"its passes ran in different environments ({', '.join(e or '?' for e in envs)}); "
                            "not labelled")
            return False
        if self.check_envs and self.label_envs and envs and envs[0] and envs[0] not in self.label_envs:
            # passes collected earlier with --no-label on another host: not labelled into this dataset
            self.log(ev="label", config=cid, ok=False, rc=None, stdout="",
                     stderr=f"its passes ran in {envs[0]}, the labels in {self.out} in "
                            f"{', '.join(sorted(self.label_envs))}; not labelled")
            return False
        k = cfg["knobs"]
        cmd = [self.ets, "label", *files, "-o", out, "--id", cid, "--family", cfg["family"],
               "--model", C.model_name(cfg), "--batch-size", str(k["batch_size"]), "--optimizer", k["optimizer"],
               "--split", cfg["split"], "--threshold", str(self.a.disagree), "--tolerance", str(self.a.tolerance),
               "--per-op", self.a.per_op]
        if envs and envs[0]:
            cmd += ["--environment", envs[0]]
        r = subprocess.run(cmd, capture_output=True, text=True)
        ok = r.returncode == 0 and os.path.exists(out)
        self.log(ev="label", config=cid, ok=ok, rc=r.returncode, stderr=r.stderr.strip()[-800:],
                 stdout=r.stdout.strip()[-800:])
        if ok and self.check_envs and envs and envs[0]:
            self.label_envs.add(envs[0])  # the dataset's environment from its first label on
        if ok and self.a.prune_raw and not _keep_raw_sample(cid):
            for p in range(1, P + 1):
                try:
                    os.remove(files[p - 1])
                except OSError:
                    pass
        return ok

    # ---- driver
    def existing_labels(self) -> list:
        """(path, tail steps, environment) of the labels already in OUT; an unreadable label is card.py's to report,
        not a setting to compare."""
        from tools.collect.card import label_files, label_head
        out = []
        for path in label_files(self.out):
            try:
                head = label_head(path)
                out.append((path, int(head.get("extra", {}).get("tail_steps", "0")), head.get("environment") or ""))
            except (OSError, ValueError, EOFError, AttributeError, TypeError, zlib.error):
                continue
        return out

    def other_tail_labels(self, labels: list) -> list:
        """Labels already in OUT collected with another --tail-steps than this run's: a dataset must close its
        labels' last iterations one way (docs/dataset.md, Labels), so topping one up must keep its setting."""
        return [(path, n) for path, n, _ in labels if n != self.a.tail_steps]

    def recorded_pass_envs(self) -> set:
        """The environments of the successful passes OUT records (raw/<id>/pass<N>.status.json; passes set aside
        are not counted)."""
        import glob
        envs = set()
        for path in glob.glob(os.path.join(glob.escape(self.raw), "*", "pass*.status.json")):
            if not re.fullmatch(r"pass\d+\.status\.json", os.path.basename(path)):
                continue
            try:
                with open(path) as fh:
                    st = json.load(fh)
            except (OSError, ValueError):
                continue
            if isinstance(st, dict) and st.get("ok") and _status_env(st):
                envs.add(_status_env(st))
        return envs

    def dataset_envs(self) -> set:
        """The environments this dataset is taken in: its labels', else (no label yet) its recorded passes'."""
        return self.label_envs or self.pass_envs

    def other_environment(self, ids: list, p: int) -> str:
        """The environment a pass of ids ran in when OUT's labels (or, before any label, its recorded passes) were
        all taken in others ("" otherwise): a collection continued on another host type would mix two machine
        speeds into one dataset. A pass that is kept makes its environment the dataset's when OUT had none."""
        if not self.check_envs:
            return ""
        known = self.dataset_envs()
        if known:
            for cid in ids:
                env = self.pass_env(cid, p)
                if env and env not in known:
                    return env
        else:
            self.pass_envs.update(e for e in (self.pass_env(cid, p) for cid in ids) if e)
        return ""

    def run(self, cfgs: list) -> int:
        """Collects cfgs (_run); SIGINT or SIGTERM stops the worker, removes the run's temporaries, logs an
        'interrupted' end event and returns 128 + the signal (130 for Ctrl-C), without a traceback."""
        previous = {sig: signal.signal(sig, _interrupt) for sig in STOP_SIGNALS}
        try:
            return self._run(cfgs)
        except Interrupted as e:
            _hold_signals()
            name = signal.Signals(e.signum).name
            sys.stderr.write(f"\ncollect: interrupted ({name}); finished passes are kept, the same command "
                             "resumes\n")
            self.log(ev="end", stopped="interrupted", signal=name)
            return 128 + e.signum
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _run(self, cfgs: list) -> int:
        P = self.a.passes
        labels = self.existing_labels()
        # a dry run (--quick) is not a dataset: its labels may come from any host
        self.check_envs = not getattr(self.a, "quick", False)
        self.label_envs = {env for _, _, env in labels if env} if self.check_envs else set()
        self.pass_envs = self.recorded_pass_envs() if self.check_envs and not self.label_envs else set()
        if not self.a.no_label:
            other = self.other_tail_labels(labels)
            if other:
                path, n = other[0]
                sys.stderr.write(f"collect: {len(other)} labels in {self.out} (e.g. {os.path.basename(path)}) were "
                                 f"collected with --tail-steps {n}, this run with {self.a.tail_steps}: pass "
                                 f"--tail-steps {n} (the labels of one dataset end their iterations one way) or "
                                 f"collect into another --out\n")
                return 2
        pending = [c for c in cfgs if self.a.no_label or not os.path.exists(self.label_path(c))]
        if self.a.redo_unlabelled:
            self._forget_unlabelled(pending)
        units = sum(1 for c in pending for p in range(1, P + 1) if self.needs_pass(c["id"], p))
        skipped = len(cfgs) - len(pending)
        sys.stderr.write(f"collect: {len(cfgs)} configs selected, {skipped} already labelled, "
                         f"{units} config-passes to run, {P} passes, blocks of {self.a.block}, device {self.a.device}\n")
        self.log(ev="start", configs=len(cfgs), skipped=skipped, units=units, passes=P, argv=sys.argv[1:])
        prog = Progress(units)
        labelled = label_fail = 0
        rng = random.Random(self.a.seed)
        for b0 in range(0, len(pending), self.a.block):
            block = pending[b0:b0 + self.a.block]
            for p in range(1, P + 1):
                stop = self.gated_pass([c["id"] for c in block], p, prog, rng)
                if stop.startswith("environment:"):
                    prog.close()
                    other_env = stop.split(":", 1)[1]
                    sys.stderr.write(f"collect: stopped: this pass ran in environment {other_env}, but the "
                                     f"{'labels' if self.label_envs else 'passes'} in {self.out} were taken in "
                                     f"{', '.join(sorted(self.dataset_envs()))}: one dataset "
                                     "is one machine speed. Continue it on a host of that environment, or collect into "
                                     "another --out (this pass is set aside in raw/ as pass<N>.other-env-*)\n")
                    self.log(ev="end", stopped="environment", environment=other_env)
                    return 2
                if stop:
                    prog.close()
                    sys.stderr.write(f"collect: stopped: the machine stayed off its reference speed "
                                     f"({self.speed_ref_path}) through {self.a.speed_retries} "
                                     f"retr{'y' if self.a.speed_retries == 1 else 'ies'}; resume later "
                                     "with the same command (finished passes are kept). A machine that stays at "
                                     "another speed would mix two speeds into one dataset: collect it into another "
                                     "--out (or, knowingly, pass --speed-ref). A reference that itself came from a "
                                     "slow or disturbed spell (compare tools/collect/drift.py's medians) is dropped "
                                     "by --invalidate over that spell, or by deleting the file\n")
                    self.log(ev="end", stopped="speed")
                    return 3
            if self.a.no_label:
                continue
            for c in block:
                if all((self.status(c["id"], p) or {}).get("ok") for p in range(1, P + 1)):
                    if self.label(c):
                        labelled += 1
                    else:
                        label_fail += 1
        prog.close()
        fails = self._failures(pending)
        sys.stderr.write(f"collect: done; labelled {labelled} now, label failures {label_fail}, "
                         f"configs with a failed pass {len(fails)} (see {self.log_path})\n")
        for cid, err in list(fails.items())[:20]:
            sys.stderr.write(f"  {cid}: {err[:160]}\n")
        self.log(ev="end", labelled=labelled, label_fail=label_fail, pass_fail=len(fails))
        return 0

    def _forget_unlabelled(self, cfgs) -> None:
        """Configs whose passes all succeeded but whose labelling failed (passes disagree, Σ check) get a fresh
        set of passes: the old ones are kept aside as pass<N>.rejected-<time>.*, never overwritten."""
        stamp = time.strftime("%Y%m%d%H%M%S")
        failed = {}
        try:
            with open(self.log_path) as fh:
                for line in fh:
                    # a line cut by a kill or a full disk, with the next run's lines after it: skip it, read on
                    try:
                        ev = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(ev, dict) and ev.get("ev") == "label" and "config" in ev:
                        # (failed, when): the last label event decides; its time tells the passes it judged
                        failed[ev["config"]] = (not ev.get("ok"), ev.get("t"))
        except OSError:
            pass
        n = 0
        for c in cfgs:
            bad, when = failed.get(c["id"], (False, None))
            if not bad:
                continue
            sts = [self.status(c["id"], p) or {} for p in range(1, self.a.passes + 1)]
            if not all(st.get("ok") for st in sts):
                continue
            # only the passes that failed labelling: a pass finished after the failed label event is a fresh one
            # (a --redo-unlabelled run interrupted before it labelled them), not one to reject again
            old = [p for p, st in enumerate(sts, 1)
                   if when is None or "finished_unix" not in st or float(st["finished_unix"]) <= float(when)]
            for p in old:
                self.move_pass(c["id"], p, f"rejected-{stamp}")
            n += 1 if old else 0
        if n:
            sys.stderr.write(f"collect: {n} unlabelled configs get fresh passes (--redo-unlabelled)\n")
            self.log(ev="redo", configs=n)

    def invalidate(self, cfgs, windows) -> int:
        """Passes that ran (even partly) inside a disturbed time window — a build or benchmark on the same
        machine — are moved aside as pass<N>.disturbed-<time>.*, and the configuration's label with them
        (to raw/<id>/label.disturbed-<time>.etst.gz), so that the next run collects them again. Nothing is deleted."""
        stamp = time.strftime("%Y%m%d%H%M%S")
        n_pass = n_cfg = 0
        moved = set()
        for c in cfgs:
            hit = []
            for p in range(1, self.a.passes + 1):
                w = _pass_window(self.status(c["id"], p))
                if w and _overlaps(w, windows):
                    hit.append(p)
            if not hit:
                continue
            d = os.path.join(self.raw, c["id"])
            for p in hit:
                self.move_pass(c["id"], p, f"disturbed-{stamp}")
            lab = self.label_path(c)
            if os.path.exists(lab):
                os.replace(lab, os.path.join(d, f"label.disturbed-{stamp}.etst.gz"))
            n_pass += len(hit)
            n_cfg += 1
            moved.update((c["id"], p) for p in hit)
            self.log(ev="invalidate", config=c["id"], passes=hit, windows=windows)
        sys.stderr.write(f"collect: {n_pass} passes of {n_cfg} configs ran in a disturbed window; moved aside\n")
        self._drop_disturbed_refs(moved, windows)
        return n_cfg

    def _drop_disturbed_refs(self, moved: set, windows) -> None:
        """A reference taken from a pass now moved aside, within the window, measured the disturbed speed: every
        later pass would be judged against it and set aside as slow. It goes, so the next gated pass sets a new one.
        A --speed-ref reference stays (the user's); one that does not list its passes (older collections) stays
        with a hint to delete it."""
        try:
            with open(self.speed_ref_path) as fh:
                refs = json.load(fh)
        except (OSError, ValueError):
            return
        dropped = []
        for env, ref in list(refs.items()):
            if not isinstance(ref, dict) or ref.get("source") != "first gated pass":
                continue
            if "passes" in ref:
                # one of its passes moved aside, and it was taken in the window (a pass of the same id and number
                # run again later, by --retry-failed, may be the one that moved)
                span = ref.get("span_unix") or []
                hit = any((cid, ref.get("gated_pass")) in moved for cid in ref["passes"]) and (
                    len(span) != 2 or _overlaps(span, windows))
            else:
                hit = False
                sys.stderr.write(f"collect: the speed reference of {env or '?'} in {self.speed_ref_path} does not "
                                 "say which passes it came from; if they ran in a disturbed window, delete it (the "
                                 "next gated pass sets a new one) or pass --speed-ref\n")
            if hit:
                dropped.append(env)
                del refs[env]
        if dropped:
            atomic_write(self.speed_ref_path, json.dumps(refs, indent=1, sort_keys=True))
            self.log(ev="speed_ref_dropped", environments=dropped, windows=windows)
            sys.stderr.write(f"collect: the speed reference of {', '.join(e or '?' for e in dropped)} came from a "
                             "pass moved aside; the next gated pass sets a new one\n")

    def _failures(self, cfgs) -> dict:
        out = {}
        for c in cfgs:
            for p in range(1, self.a.passes + 1):
                st = self.status(c["id"], p)
                if st is not None and not st.get("ok"):
                    out[c["id"]] = st.get("error", "?")
        return out


def _stop(proc) -> None:
    """Terminates a worker and waits for it (killed after 10 s)."""
    try:
        proc.terminate()
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    except OSError:
        pass
    if proc.stdout is not None:
        proc.stdout.close()


def _keep_raw_sample(cid: str) -> bool:
    # raw Kineto JSON is kept for a deterministic ~5% sample (the card's "raw sample")
    return C.seed_of(cid) % 20 == 0


def _status_env(st) -> str:
    """The environment id in a pass's status ("" when none)."""
    return ((st or {}).get("env") or {}).get("environment") or ""


def _pass_window(st) -> tuple:
    """(start, end) in unix seconds of a pass from its status; None without its finishing time."""
    if not st or "finished_unix" not in st:
        return None
    end = float(st["finished_unix"])
    return end - float(st.get("wall_s", 0.0)), end


def _overlaps(span, windows) -> bool:
    return any(span[0] < w1 and span[1] > w0 for w0, w1 in windows)


def _manifest_differs(path: str) -> str:
    """Why the manifest at path is not the one this tree generates ("" when it is)."""
    try:
        with open(path) as fh:
            have = json.load(fh).get("configs", [])
    except (OSError, ValueError, AttributeError) as e:
        return f"unreadable: {e}"
    want = C.manifest()["configs"]
    if have == want:
        return ""
    if not isinstance(have, list):
        return "its \"configs\" is not a list"
    have_ids = {c.get("id") for c in have if isinstance(c, dict)}
    want_ids = {c["id"] for c in want}
    if have_ids != want_ids:
        return (f"{len(have)} configurations against {len(want)}; {len(want_ids - have_ids)} missing, "
                f"{len(have_ids - want_ids)} unknown")
    return "the same ids, generated differently"


def _when(text: str) -> float:
    """Unix seconds from unix seconds or a local ISO date-time."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        import datetime
        return datetime.datetime.fromisoformat(text).timestamp()


def _find_ets() -> str:
    for d in ("build-dataset", "build"):
        p = os.path.join(ROOT, d, "ets")
        if os.path.exists(p):
            return p
    return shutil.which("ets") or os.path.join(ROOT, "build", "ets")


def select(args, ap=None) -> list:
    """The selected configurations. Refuses (ap.error: usage, exit 2) unknown --families names, a --configs file
    that cannot be read and ids in it that name no configuration."""
    def refuse(msg):
        if ap is None:
            raise ValueError(msg)
        ap.error(msg)

    fams = [f.strip() for f in args.families.split(",") if f.strip()] if args.families is not None else None
    if fams is not None and not fams:  # "--families ," or "--families ''" would have selected everything
        refuse("--families names no family; leave it out to select every family")
    if fams:
        unknown = [f for f in fams if f not in C.FAMILIES]
        if unknown:
            refuse(f"--families: unknown {', '.join(unknown)}; known families: {', '.join(C.FAMILIES)}")
    if args.configs:
        try:
            with open(args.configs) as fh:
                ids = [ln.split("#")[0].strip() for ln in fh]
        except (OSError, UnicodeDecodeError) as e:
            refuse(f"--configs {args.configs}: {e.strerror if isinstance(e, OSError) else e}")
        ids = [i for i in ids if i]
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:  # run twice in one worker, the second time warm: neither the fresh-process rule nor one label
            refuse(f"--configs {args.configs}: {len(twice)} id(s) named more than once ({', '.join(twice[:5])}"
                   f"{', ...' if len(twice) > 5 else ''})")
        known = set(C.all_ids())  # the manifest's ids exactly: "resnet-5" or "resnet-0999" name nothing
        bad = [i for i in ids if i not in known]
        if bad:
            refuse(f"--configs {args.configs}: {len(bad)} line(s) name no configuration ({', '.join(bad[:5])}"
                   f"{', ...' if len(bad) > 5 else ''}); an id is FAMILY-NNNN with FAMILY one of "
                   f"{', '.join(C.FAMILIES)}")
        if fams:
            ids = [i for i in ids if C.parse_id(i)[0] in fams]
    else:
        ids = C.all_ids(fams)
        # a fixed interleaving so that --limit N samples every family rather than the first one
        random.Random(1234).shuffle(ids)
    if args.limit:
        ids = ids[:args.limit]
    return [C.config(i) for i in ids]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=None, help="dataset root (default: data/; data/quick/ with --quick, so a dry run "
                    "never mixes its short passes into the dataset)")
    ap.add_argument("--raw", default="", help="raw Kineto JSON folder (default: OUT/raw)")
    ap.add_argument("--passes", type=int, default=None, help="timing passes per config (default 3; 2 with --quick)")
    ap.add_argument("--families", default=None, help="comma-separated family names (default: all)")
    ap.add_argument("--configs", default="", help="file with one config id per line")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--block", type=int, default=40, help="configs per block (passes alternate within a block)")
    ap.add_argument("--heap-mb", type=int, default=8192,
                    help="MiB of heap each worker pre-faults before its first config, so that the profiler's growing "
                         "event buffers cost no page faults inside the timed ops (docs/dataset.md); 0: off")
    ap.add_argument("--isolate", action="store_true",
                    help="run every config's pass in a worker process of its own (same shuffled order), so that no "
                         "label depends on the configs profiled before it in the same process")
    ap.add_argument("--warmup", type=int, default=None, help="unprofiled warm-up iterations (default 3; 1 with --quick)")
    ap.add_argument("--iters", type=int, default=None,
                    help="profiled iterations per pass, ≥ 5 (default 6; 5 with --quick)")
    ap.add_argument("--tail-steps", type=int, default=1,
                    help="profiled steps after the last labelled one, recorded only so that its first op closes the "
                         "labelled one's last gap (default 1; 0: the last labelled iteration ends at its ProfilerStep# "
                         "span, as collections before 2026-12-04 did; docs/dataset.md)")
    ap.add_argument("--max-iter-s", type=float, default=None,
                    help="skip configs whose warm-up iteration is slower (default 2.0; 1.0 with --quick)")
    ap.add_argument("--export-nested", default="needed", choices=["needed", "all"],
                    help="CPU raw traces: 'needed' (default) writes the outermost ops and only the nested ops ETS's "
                         "importer reads (same labels, ~3x faster export, ~3x smaller files); 'all' every op")
    ap.add_argument("--disagree", type=float, default=0.10, help="pass-disagreement flag threshold (max/min-1)")
    ap.add_argument("--tolerance", type=float, default=0.03, help="max |Σ labels - measured| / measured")
    ap.add_argument("--per-op", default="bracket", choices=["bracket", "pooled", "pass-median"],
                    help="per-op label statistic (ets label --per-op); bracket = mean over the iterations bracketing "
                         "the label, summing to it (docs/dataset.md)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ets", default="", help="path of the ets tool (default: build-dataset/ets or build/ets)")
    ap.add_argument("--rt", action="store_true",
                    help="run workers SCHED_FIFO (chrt -f 10): shields timings from other processes on a busy "
                         "machine, but RT throttling then stalls ~50 ms per second; default off (collect on a quiet machine)")
    ap.add_argument("--retry-failed", action="store_true", help="re-run passes that failed before")
    ap.add_argument("--redo-unlabelled", action="store_true",
                    help="re-collect all passes of configs whose labelling failed (old passes kept aside)")
    ap.add_argument("--invalidate", action="append", default=[], metavar="START,END",
                    help="move aside the passes (and labels) that ran inside this time window, local ISO times "
                         "like 2026-11-29T15:02,2026-11-29T15:09 or unix seconds; repeatable; then exit")
    ap.add_argument("--speed-gate", type=float, default=None,
                    help="re-run a block's pass whose speed-probe medians differ from the reference by more than "
                         "this fraction (default 0.05, 0 with --quick; 0: off)")
    ap.add_argument("--speed-ref", default="", metavar="GEMM_MS,SMALL_OPS_MS",
                    help="reference probe medians (e.g. from tools/collect/drift.py); default: the first gated pass "
                         "of the environment, kept in OUT/speed_ref.json")
    ap.add_argument("--speed-pause", type=float, default=5.0, help="minutes to wait before re-running a slow pass")
    ap.add_argument("--speed-retries", type=int, default=6,
                    help="re-runs of a slow pass before the collector stops (exit 3; resumable)")
    ap.add_argument("--config-gate", type=float, default=None,
                    help="re-run a configuration's pass whose own probes, before or after it, ran more than this "
                         "fraction slower than the reference (default 0.10, 0 with --quick; 0: off)")
    ap.add_argument("--config-retries", type=int, default=3,
                    help="re-runs of one configuration's slow pass; then its last pass is kept (default 3)")
    ap.add_argument("--config-pause", type=float, default=5.0,
                    help="seconds to wait before re-running the configurations the config gate set aside")
    ap.add_argument("--no-label", action="store_true", help="collect raw passes only")
    ap.add_argument("--prune-raw", action="store_true", help="delete raw JSON of labelled configs (keeps a 5%% sample)")
    ap.add_argument("--quick", action="store_true", help="CI / dry run: 1 warm-up, 5 iterations, 2 passes, small block")
    ap.add_argument("--print-ids", action="store_true", help="print the selected config ids and exit")
    ap.add_argument("--manifest", action="store_true", help="(re)write OUT/manifest.json and exit")
    args = ap.parse_args(argv)
    # What the user did not give: --quick's small values (a dry run's labels are not kept, so no speed gate either),
    # else the defaults. An explicit value always wins.
    quick = {"warmup": 1, "iters": 5, "max_iter_s": 1.0, "passes": 2, "speed_gate": 0.0, "config_gate": 0.0}
    defaults = {"warmup": 3, "iters": 6, "max_iter_s": 2.0, "passes": 3, "speed_gate": 0.05, "config_gate": 0.10}
    for name, default in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, quick[name] if args.quick else default)
    if args.quick:
        args.block = min(args.block, 8)
    if args.out is None:
        args.out = os.path.join(ROOT, "data", "quick") if args.quick else os.path.join(ROOT, "data")
    if args.iters < 1 or args.passes < 1 or args.warmup < 1:
        ap.error("--iters, --passes and --warmup must be ≥ 1")
    if args.block < 1:
        ap.error("--block must be ≥ 1")
    if args.tail_steps < 0:
        ap.error("--tail-steps must be ≥ 0")
    if args.heap_mb < 0:
        ap.error("--heap-mb must be ≥ 0 (0: off)")
    try:
        total_mb = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") >> 20
    except (OSError, ValueError):
        total_mb = 0
    if total_mb and args.heap_mb > 0.75 * total_mb:
        # the pre-fault stays resident for the worker's whole life, beside the model being profiled
        ap.error(f"--heap-mb {args.heap_mb} is more than 3/4 of this machine's {total_mb} MiB of memory; "
                 "pass a smaller size (or 0: no pre-fault)")
    if args.limit < 0:
        ap.error("--limit must be ≥ 0 (0: no limit)")
    if not 0 <= args.speed_gate < 1 or args.speed_pause < 0 or args.speed_retries < 0:
        ap.error("--speed-gate takes a fraction in [0, 1); --speed-pause and --speed-retries must be ≥ 0")
    if not 0 <= args.config_gate < 10 or args.config_retries < 0 or not 0 <= args.config_pause < 3600:
        ap.error("--config-gate takes a fraction ≥ 0 (0: off); --config-retries must be ≥ 0 and --config-pause "
                 "0 to 3600 seconds")
    if args.speed_ref:
        try:
            args.speed_ref = [float(x) for x in args.speed_ref.split(",")]
        except ValueError:
            args.speed_ref = []
        if len(args.speed_ref) != len(E.SPEED_PROBES) or not all(0 < x < float("inf") for x in args.speed_ref):
            ap.error("--speed-ref takes GEMM_MS,SMALL_OPS_MS, two positive numbers")

    if args.manifest:
        os.makedirs(args.out, exist_ok=True)
        m = C.write_manifest(os.path.join(args.out, "manifest.json"))
        print(f"wrote {len(m['configs'])} configs: {m['counts']}")
        return 0
    cfgs = select(args, ap)  # checks the selection before any folder or file is created
    if args.invalidate and not args.print_ids:
        # checked, like the selection, before anything is written: a mistyped --out must not become a dataset
        # skeleton (manifest, raw/, traces/, collect/), nor a bad window be refused after the manifest was written
        try:
            windows = [tuple(_when(x) for x in w.split(",")) for w in args.invalidate]
        except ValueError as e:
            ap.error(f"--invalidate: {e}")
        if any(len(w) != 2 or w[0] >= w[1] for w in windows):
            ap.error("--invalidate takes START,END with START before END")
        raw = os.path.abspath(args.raw or os.path.join(args.out, "raw"))
        if not os.path.isdir(raw):
            ap.error(f"--invalidate: {raw} does not exist: no passes to move aside (is --out {args.out} the "
                     "collection's folder?)")
        Collector(args).invalidate(cfgs, windows)
        return 0
    mpath = os.path.join(args.out, "manifest.json")
    fresh_manifest = not args.print_ids and not os.path.exists(mpath)
    if fresh_manifest:
        os.makedirs(args.out, exist_ok=True)
        C.write_manifest(mpath)  # the full manifest, whatever this run selects: splits and card need it
    if args.print_ids:
        print("\n".join(c["id"] for c in cfgs))
        return 0
    stale = "" if fresh_manifest else _manifest_differs(mpath)
    if stale:
        # the splits, card.py and `ets train`'s split check read OUT/manifest.json: labels of configurations it does
        # not list would be trained on with no split check, and the card would count them under no domain
        sys.stderr.write(f"collect: {mpath} is not this tree's manifest ({stale}): rewrite it with --manifest "
                         "(after moving an older dataset's labels aside) or collect into another --out\n")
        return 2
    if not args.no_label and not os.path.exists(args.ets or _find_ets()):
        ap.error("the ets tool was not found; build it (cmake -S . -B build-dataset -DCMAKE_BUILD_TYPE=Release && "
                 "cmake --build build-dataset --target ets_cli) or pass --ets")
    return Collector(args).run(cfgs)


if __name__ == "__main__":
    sys.exit(main())
