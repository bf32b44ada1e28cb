"""One soak run, in order: the plan, the two fakes as processes, the bot, the traffic and faults for the run's
minutes with samples every two seconds, a clean stop, then the checks and the table. Exit 1 when a check
fails, with the seed that plays the same run again.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.soak import checks, faults, ledger, report
from bench.soak.bot import ROOT, BotProcess, write_config
from bench.soak.traffic import PROCESS_FAULTS, Plan, make_plan
from core.settings.flow import FlowSettings

SAMPLE_SEC = 2.0
BOOT_SEC = 6.0  # traffic starts this long after the bot is started
MODEL_FAULT = ("fault=", "slow=")
NOTICE_WINDOW_SEC = FlowSettings().notice_window_sec  # the soak runs the flow's defaults (bot.write_config)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__)
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--groups", type=int, default=8)
    p.add_argument("--privates", type=int, default=4)
    p.add_argument("--seed", type=int, default=int(time.time()) % 100_000)
    p.add_argument("--rate", type=float, default=0.8, help="messages a second on average (bursts on top)")
    p.add_argument("--dir", type=Path, default=None, help="work directory (default: a temporary one, removed)")
    args = p.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)  # a CI timeout or `kill`: stop the processes, undo chattr
    work = args.dir or Path(tempfile.mkdtemp(prefix="ania-soak-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        ok = soak(args, work)
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    again = (f"python -m bench.soak --minutes {args.minutes:g} --groups {args.groups} --privates {args.privates} "
             f"--rate {args.rate:g} --seed {args.seed}")
    print(("all checks passed" if ok else "A CHECK FAILED") + f"; seed {args.seed}: {again}", flush=True)
    return 0 if ok else 1


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spawn(module: str, *args: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-m", module, *args], cwd=ROOT, stdout=out, stderr=out)


def wait_file(path: Path, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text()):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{path} did not appear")
        time.sleep(0.1)
    return path.read_text()


def soak(args: argparse.Namespace, work: Path) -> bool:
    seconds = args.minutes * 60
    plan = make_plan(args.seed, seconds, args.groups, args.privates, args.rate)
    (work / "plan.json").write_text(json.dumps(plan.as_json()))
    print(f"soak: seed {args.seed}, {args.minutes:g} min, {len(plan.messages)} messages over "
          f"{args.groups} groups and {args.privates} private chats, {len(plan.faults)} faults; work dir {work}",
          flush=True)
    model = spawn("bench.soak.model_proc", str(work / "model.port"), str(work / "model.json"), "9",
                  log=work / "model.log")
    onebot_port = free_port()
    start = time.time() + BOOT_SEC
    onebot = spawn("bench.soak.onebot_proc", str(work / "plan.json"), str(onebot_port), str(start),
                   str(work / "onebot.json"), log=work / "onebot.log")
    llm_url = f"http://127.0.0.1:{wait_file(work / 'model.port')}/v1"
    write_config(work / "config", llm_url, f"ws://127.0.0.1:{onebot_port}/")
    bot = BotProcess(work / "config", work / "data", work / "bot.log")
    kills: list[float] = []
    refused: list[tuple[float, float]] = []
    locked: list[tuple[float, float]] = []
    notes: dict[str, list[str]] = {}
    try:
        bot.start()
        drive(plan, bot, start, kills, notes, refused, locked)
        stopped = time.time()
        (work / "samples.json").write_text(json.dumps([vars(x) for x in bot.samples]))
        (work / "faults.json").write_text(json.dumps({"kills": kills, "refused": refused, "locked": locked,
                                                            "notes": notes}))
        code = bot.stop()
        notes.setdefault("clean stop", []).append(f"exit {code}")
        onebot.terminate()
        onebot.wait(30)
        results = judge(plan, bot, work, kills, notes, stopped, code, refused, locked)
    finally:
        for proc in (onebot, model):
            if proc.poll() is None:
                proc.terminate()
                proc.wait(30)
        if bot.proc is not None and bot.proc.poll() is None:
            bot.stop()
    model_log = json.loads((work / "model.json").read_text()) if (work / "model.json").exists() else {}
    return finish(args, plan, results, model_log, work)


def drive(plan: Plan, bot: BotProcess, start: float, kills: list[float], notes: dict[str, list[str]],
          refused: list[tuple[float, float]], locked: list[tuple[float, float]]) -> None:
    """Sample every SAMPLE_SEC and play the faults done from outside at their times, until the run's end."""
    todo = [f for f in plan.faults if f.kind in PROCESS_FAULTS]
    end = start + plan.seconds
    while time.time() < end:
        bot.sample()
        while todo and time.time() >= start + todo[0].at:
            fault = todo.pop(0)
            if fault.kind == "kill9":
                kills.append(time.time())
                faults.kill_and_restart(bot)
                notes.setdefault("kill9", []).append("started again; the fake kept its side, the bot dialled it")
            elif fault.kind == "sqlite_lock":
                began = time.time()
                notes.setdefault("sqlite_lock", []).append(faults.hold_sqlite_lock(bot.data))
                locked.append((began, time.time()))
            else:
                began = time.time()
                said = faults.refuse_writes(bot.data)
                notes.setdefault("writes_refused", []).append(said)
                if not said.startswith("not available"):
                    refused.append((began, time.time()))
            if bot.proc is not None and bot.proc.poll() is not None:
                notes.setdefault("bot died", []).append(f"after {fault.kind}: exit {bot.proc.returncode}")
                bot.start()
        time.sleep(SAMPLE_SEC)


def judge(plan: Plan, bot: BotProcess, work: Path, kills: list[float], notes: dict[str, list[str]],
          stopped: float, code: int | None, refused: list[tuple[float, float]],
          locked: list[tuple[float, float]]) -> dict[str, Any]:
    record = json.loads((work / "onebot.json").read_text())
    rows = ledger.query_rows(bot.data)
    out = checks.outcomes(record, rows, kills, locked)
    fired, kept, clock_statuses = checks.clock_check(bot.data, stopped - 10, refused)
    resource_checks, figures = checks.resources(bot.samples, bot.starts[-1])
    chats = sorted({m.chat for m in plan.messages})
    log_text = (work / "bot.log").read_text(errors="replace")
    tracebacks = log_text.count("Traceback")
    unhandled = log_text.count("exception was never retrieved") + log_text.count("Unhandled exception")
    found: list[checks.Check] = [
        checks.Check("nothing lost", not out["lost"], f"{len(out['lost'])} lost" +
                     (": " + "; ".join(out["lost"][:8]) if out["lost"] else "")),
        checks.Check("nothing doubled", not out["doubled"], f"{len(out['doubled'])} answered twice" +
                     (": " + ", ".join(out["doubled"][:8]) if out["doubled"] else "")),
        *flow_checks(record, rows, kills),
        checks.Check("the bot never died on its own", "bot died" not in notes, "; ".join(notes.get("bot died", []))
                     or f"{len(bot.starts) - 1} restart(s), all after a kill -9"),
        checks.Check("clean stop (SIGTERM)", code == 0, f"exit {code}"),
        checks.Check("no unhandled exception in the bot's log", unhandled == 0,
                     f"{unhandled} unhandled; {tracebacks} traceback(s) of handled errors in all"),
        fired, kept, checks.integrity(bot.data), *checks.sessions_check(bot, chats), *resource_checks,
    ]
    batches = [len(r["message_ids"]) for r in rows if len(r["message_ids"]) > 1]
    return {"record": record, "out": out, "checks": found, "figures": figures, "clock": clock_statuses,
            "notes": notes, "rows": len(rows), "batches": batches, "statuses": Counter(r["status"] for r in rows)}


def flow_checks(record: dict[str, Any], rows: list[dict[str, Any]], kills: list[float]) -> list[checks.Check]:
    """The group-chat flow's invariants (ledger): no message in two rows, a batch's answer quotes its last
    message, and refusal notices at most once per member and window."""
    twice = ledger.twice_in_log(rows, ledger.marker_by_id(record))
    quoted, wrong = ledger.quotes(record)
    refusals, notices, told_twice = ledger.notices_per_window(rows, NOTICE_WINDOW_SEC, kills)
    return [
        checks.Check("nothing doubled in the query log", not twice, f"{len(twice)} message(s) in two rows" +
                     (": " + ", ".join(twice[:8]) if twice else "")),
        checks.Check("an answer quotes its batch's last message", not wrong,
                     report.tally_text(quoted) + (": " + "; ".join(wrong[:5]) if wrong else "")),
        checks.Check("refusal notices at most once per member and window", not told_twice,
                     f"{refusals} refused (rate_limited/queue_full), {notices} notice(s) sent" +
                     (": told twice: " + ", ".join(told_twice[:5]) if told_twice else "")),
    ]


def finish(args: argparse.Namespace, plan: Plan, results: dict[str, Any], model_log: dict[str, Any],
           work: Path) -> bool:
    out, record, figures = results["out"], results["record"], results["figures"]
    latency = sorted(out["latency"].values())
    model_time: dict[str, float] = {}
    for r in model_log.get("requests", []):
        for marker in r["markers"][:1]:
            model_time[marker] = model_time.get(marker, 0.0) + r["delay"]
    plain = [m.marker for m in plan.messages if m.marker in out["latency"] and "do=" not in m.text
             and not any(w in m.text for w in MODEL_FAULT) and m.kind in ("mention", "reply", "private")]
    overhead = sorted(out["latency"][k] - model_time.get(k, 0.0) for k in plain)
    model_faults: dict[str, Counter[str]] = {}
    for m in plan.messages:
        if "fault=" in m.text and m.marker in out["category"]:
            kind = m.text.split("fault=")[1].split()[0]
            model_faults.setdefault(kind, Counter())[out["category"][m.marker]] += 1
    kinds = Counter(m.kind for m in plan.messages)
    facts = [
        ("run", f"{args.minutes:g} min, seed {args.seed}, {args.groups} groups + {args.privates} private chats"),
        ("messages sent by the fake", f"{len(record['messages'])} ({report.tally_text(kinds)})"),
        ("outcomes of marked messages", report.tally_text(out["tally"])),
        ("replies the fake received", str(len(record["replies"]))),
        ("query-log rows", f"{results['rows']} ({report.tally_text(results['statuses'])})"),
        ("turns that answered several messages", f"{len(results['batches'])} (messages in them: "
         f"{sum(results['batches'])}, largest {max(results['batches'], default=0)})"),
        ("model requests", str(model_log.get("count", "?"))),
        ("scheduled task runs", report.tally_text(results["clock"])),
        ("approvals answered by an admin", str(record["approvals"]["answered"])),
        ("latency message → reply p50 / p95 / p99 (all replied)", report.percentile_text(checks.percentiles(latency))),
        ("same, plain messages, minus the model's own time", report.percentile_text(checks.percentiles(overhead))),
        ("resident memory first / last / peak (since the last restart)",
         " / ".join(f"{figures.get(k, 0):.0f} MB" for k in ("rss_first_mb", "rss_last_mb", "rss_peak_mb"))),
    ]
    facts += [(f"{name} floor middle third → last third (peak)", f"{v[0]} → {v[1]} ({v[2]})")
              for name in ("fds", "threads", "tasks") if (v := figures.get(name))]
    rows = report.fault_rows(Counter(f.kind for f in plan.faults), {k: dict(v) for k, v in model_faults.items()},
                             record, results["notes"])
    text = report.table(f"Soak run, seed {args.seed}", results["checks"], facts, rows)
    print(text, flush=True)
    (work / "report.md").write_text(text + "\n")
    return all(c.passed for c in results["checks"])
