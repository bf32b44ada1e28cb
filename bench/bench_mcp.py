"""MCP: tools-array size, provider-cache prefix reuse, and per-call latency (`python -m bench.bench_mcp`).

1. Tools array: the bytes of the request's `tools` with 5 servers x 20 tools, eager vs lazy (the real
   engine against the scripted model; built-ins included, MCP part shown separately).
2. Prefix reuse: a 10-turn session that loads 3 tools (one at turns 2, 4 and 6, each then used), in
   eager, lazy native and lazy proxy mode. Providers render the tools array before the messages, so the
   cacheable prefix of request N+1 is what it shares with request N, byte for byte, over
   `tools + messages`. Reported: the mean and minimum share of each request's bytes that repeats the
   previous request's prefix (a large new tool result lowers it without breaking the cache), the
   requests whose previous request is not their prefix (cache breaks), the bytes a provider cannot
   take from the previous prefix, and the bytes of all requests.
3. Per-call latency: our persistent session (MCPConnection) against the adapters' two ways: their
   persistent session (`async with client.session(name)` + `load_mcp_tools(session)`, the fair peer) and
   their default path (`get_tools()` then a call, which opens a new session for each call), over stdio
   and Streamable HTTP.
Everything runs on 127.0.0.1 with bounded loops.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools

from ania.fakes.openai_server import Calls, Recorded, Reply, ScriptedOpenAI
from bench.common import Ours, table
from services.mcp.config import ServerSpec
from services.mcp.conn import MCPConnection
from tests.mcp_servers.harness import HTTPServer, stdio_spec, write_config
from tools.mcp import engine_tools

N_SERVERS, N_TOOLS, TURNS = 5, 20, 10
LOADS = {2: "get", 4: "search", 6: "export"}  # turn → verb of the tool loaded (and used) in that turn


def many(prefix: str) -> tuple[str, ...]:
    """demo_server.py arguments for a server of N_TOOLS generated tools named after `prefix`."""
    return ("--many", str(N_TOOLS), "--prefix", prefix)


def rendered(r: Recorded) -> bytes:
    """What a provider caches, in its order: the tools array, then the messages."""
    return (json.dumps(r.tools, ensure_ascii=False) + json.dumps(r.messages, ensure_ascii=False)).encode()


def common_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    lo, hi = 0, n  # binary search on equal prefixes (fast for long bodies)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def script_for(mode: str, turn: int, loaded: list[str]) -> list[Any]:
    """The model's steps for one turn: load (lazy) and use the turn's new tool, or use the last one."""
    verb = LOADS.get(turn)
    if turn == 1:
        if mode == "eager":
            return [Reply("hi")]
        return [Calls([("mcp_discover", {"keyword": "records"})]), Reply("found them")]
    if verb is not None:
        name = f"mcp__s{len(loaded) + 1}__{verb}_s{len(loaded) + 1}_item0"
        loaded.append(name)
        steps: list[Any] = [] if mode == "eager" else [Calls([("mcp_load", {"names": [name]})])]
    elif not loaded:
        return [Reply(f"answer {turn}")]
    else:
        name = loaded[-1]
        steps = []
    args = {"query": f"turn {turn}"}
    call = ("mcp_call", {"name": name, "arguments": args}) if mode == "proxy" else (name, args)
    return [*steps, Calls([call]), Reply(f"answer {turn}")]


async def session_run(servers: list[HTTPServer], root: Path, mode: str) -> dict[str, Any]:
    mcp = {"lazy_load": mode != "eager", "lazy_mode": "proxy" if mode == "proxy" else "native"}
    write_config(root / "config", {f"s{i + 1}": s.spec() for i, s in enumerate(servers)})
    with ScriptedOpenAI() as llm:
        ours = await Ours.start(llm, root, mcp=mcp)
        try:
            first_tools = json.dumps(ours.tool_schemas(), ensure_ascii=False).encode()
            mcp_tools = json.dumps([t.schema for t in engine_tools(ours.engine.services.mcp)]).encode()
            loaded: list[str] = []
            for turn in range(1, TURNS + 1):
                llm.script(script_for(mode, turn, loaded))
                await ours.turn(f"question {turn}")
            reqs = list(llm.requests)
        finally:
            await ours.close()
    bodies = [rendered(r) for r in reqs]
    common = [common_prefix(a, b) for a, b in itertools.pairwise(bodies)]
    shares = [c / len(b) for c, b in zip(common, bodies[1:], strict=False)]
    # The previous request is a prefix of the next one except for the messages array's closing "]".
    breaks = sum(c < len(a) - 1 for c, a in zip(common, bodies, strict=False))
    fresh = len(bodies[0]) + sum(len(b) - c for c, b in zip(common, bodies[1:], strict=False))
    return {"mode": mode, "tools": len(first_tools), "mcp": len(mcp_tools), "requests": len(reqs),
            "mean": statistics.mean(shares), "min": min(shares), "total": sum(len(b) for b in bodies),
            "breaks": breaks, "fresh": fresh}


async def latency(servers: list[HTTPServer], n_persistent: int, n_default: int) -> list[list[Any]]:
    rows = []
    paths = (("stdio", stdio_spec(*many("s0")), max(2, n_default // 4)),
             ("streamable_http", servers[0].spec(), n_default))
    for label, raw, n_def in paths:
        spec = ServerSpec.parse("bench", raw)
        conn = MCPConnection(spec, connect_timeout=15, call_timeout=30)
        t0 = time.perf_counter()
        await conn.connect()
        connect_ms = (time.perf_counter() - t0) * 1000
        tool = conn.tools[0].name
        per = []
        try:
            for i in range(n_persistent):
                t0 = time.perf_counter()
                await conn.call(tool, {"query": f"q{i}"})
                per.append(time.perf_counter() - t0)
        finally:
            await conn.close()
        conn_cfg = {k: v for k, v in spec.connection(None).items() if v is not None and k != "httpx_client_factory"}
        client = MultiServerMCPClient({"bench": conn_cfg})  # type: ignore[dict-item]
        held = []
        async with client.session("bench") as session:
            loaded = await load_mcp_tools(session)
            held_tool = next(t for t in loaded if t.name == tool)
            for i in range(n_persistent):
                t0 = time.perf_counter()
                await held_tool.ainvoke({"query": f"q{i}"})
                held.append(time.perf_counter() - t0)
        get, call = [], []
        for i in range(n_def):
            t0 = time.perf_counter()
            tools = await client.get_tools()
            t1 = time.perf_counter()
            await next(t for t in tools if t.name == tool).ainvoke({"query": f"q{i}"})
            call.append(time.perf_counter() - t1)
            get.append(t1 - t0)
        p, d = statistics.median(per) * 1000, statistics.median(call) * 1000
        h = statistics.median(held) * 1000
        rows.append([label, f"{connect_ms:.0f} ms once", f"{p:.2f} ms", f"{h:.2f} ms ({h / p:.1f}x)",
                     f"{statistics.median(get) * 1000:.1f} ms", f"{d:.1f} ms ({d / p:.0f}x)",
                     f"{n_persistent} / {n_def}"])
    return rows


async def run(n_persistent: int, n_default: int) -> str:
    servers = [HTTPServer("streamable-http", extra=many(f"s{i + 1}")) for i in range(N_SERVERS)]
    for s in servers:
        s.spawn()
    try:
        for s in servers:
            s.wait()
        with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
            modes = [await session_run(servers, Path(tmp) / m, m) for m in ("eager", "native", "proxy")]
        lat = await latency(servers, n_persistent, n_default)
    finally:
        for s in servers:
            s.stop()
    eager = next(m for m in modes if m["mode"] == "eager")
    size_rows = [[m["mode"] if m["mode"] == "eager" else f"lazy {m['mode']}", m["tools"], m["mcp"],
                  f"{m['tools'] / eager['tools']:.1%}", f"{m['mcp'] / eager['mcp']:.1%}"] for m in modes]
    reuse_rows = [[m["mode"] if m["mode"] == "eager" else f"lazy {m['mode']}", m["requests"], f"{m['mean']:.1%}",
                   f"{m['min']:.1%}", m["breaks"], f"{m['fresh'] / 1024:.0f} KiB", f"{m['total'] / 1024:.0f} KiB"]
                  for m in modes]
    return "\n\n".join([
        f"Tools array of the first request, {N_SERVERS} servers x {N_TOOLS} tools (bytes)\n" + table(
            ["mode", "request tools", "MCP tools only", "request vs eager", "MCP vs eager"], size_rows),
        f"Prefix reuse over a {TURNS}-turn session loading 3 tools (tools + messages, request N vs N-1)\n" + table(
            ["mode", "requests", "mean reused", "min reused", "prefix breaks", "not from prefix", "all bytes"],
            reuse_rows),
        "Per-call latency (median): our persistent session vs the adapters' persistent session (the fair peer) "
        "and their default path (a new session per call)\n" + table(
            ["transport", "ours: connect", "ours: call", "adapters session: call", "adapters get_tools",
             "adapters default: call", "n"],
            lat),
    ])


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="bench.bench_mcp", description=__doc__.splitlines()[0])
    p.add_argument("--mcp-calls", type=int, default=100, help="persistent calls per transport (default 100)")
    p.add_argument("--mcp-default-calls", type=int, default=20,
                   help="adapter default-path calls over HTTP (default 20)")
    p.add_argument("--quick", action="store_true", help="20 persistent calls, 8 default-path calls")
    args, _ = p.parse_known_args(argv)
    n, d = (20, 8) if args.quick else (max(5, min(args.mcp_calls, 2000)), max(4, min(args.mcp_default_calls, 100)))
    print(run_sync(n, d))


def run_sync(n: int, d: int) -> str:
    return asyncio.run(run(n, d))


if __name__ == "__main__":
    main()
