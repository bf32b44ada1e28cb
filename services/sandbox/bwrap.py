"""The bubblewrap sandbox of the bash tool: what a model-written command may see and reach.

Like Claude Code's sandbox on Linux: the command runs in new user, PID, IPC, UTS, cgroup and (unless
`bash.network`) network namespaces, as an unprivileged uid, with the workspace read-write, the
system directories read-only, a private /tmp, fresh /proc and /dev (read-only but for /dev/shm), and
nothing else: not the bot's repository, virtualenv, config or data directories, not its environment
(a minimal one is passed), not the bot's process (`/proc/$PPID` is the sandbox's own init). Killing
the sandbox kills every process in its PID namespace, `setsid` ones included; `--die-with-parent`
ends it if the bot dies.

Whether bwrap works is probed once per process by running a trivial sandboxed command.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from services.processes import minimal_env

#: System directories bound read-only (symlinks, as /bin -> usr/bin, are recreated as symlinks).
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
#: Secrets under /etc hidden even so (the command reads /etc as the bot's own user).
MASKED = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d",
          "/etc/ssh", "/etc/ssl/private")
SANDBOX_UID = 65534  # nobody
SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
PROBE_TIMEOUT = 10.0


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def _under(path: Path, roots: Iterable[str]) -> bool:
    return any(path == Path(r) or Path(r) in path.parents for r in roots)


def bot_dirs(*extra: Path) -> list[Path]:
    """Directories of the bot itself (repository, virtualenv, config and data dirs, `extra`)."""
    repo = Path(__file__).resolve().parents[1]
    dirs = [repo, *extra]
    if sys.prefix != sys.base_prefix:  # a virtualenv, never the system prefix itself
        dirs.append(Path(sys.prefix))
    for name, default in (("ANIA_CONFIG_DIR", "./config"), ("ANIA_DATA_DIR", "./data")):
        dirs.append(Path(os.environ.get(name, default)))
    return [Path(os.path.realpath(d)) for d in dirs]


def bwrap_args(workdir: Path, *, network: bool = False, hide: Iterable[Path] = (),
               disable_userns: bool = True, tmp_mb: int = 0) -> list[str]:
    """The bwrap command line (without the command): see the module docstring for the policy.
    `hide` lists directories of the bot that would otherwise be visible inside a bound system dir;
    `tmp_mb` caps the private /tmp and /dev/shm (tmpfs: memory) where this bwrap can (0: no cap)."""
    bwrap = bwrap_path() or "bwrap"
    args = [bwrap, "--die-with-parent", "--new-session", "--unshare-user", "--uid", str(SANDBOX_UID),
            "--gid", str(SANDBOX_UID), "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--cap-drop", "ALL"]
    args += ["--disable-userns"] if disable_userns else []
    args += [] if network else ["--unshare-net"]
    for d in SYSTEM_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    for m in MASKED:  # symlinks are left alone: mounting over one could break every sandbox
        if os.path.islink(m):
            continue
        if os.path.isdir(m):
            args += ["--tmpfs", m, "--remount-ro", m]
        elif os.path.isfile(m):
            args += ["--ro-bind", "/dev/null", m]
    resolv = Path(os.path.realpath("/etc/resolv.conf"))
    if network and not _under(resolv, SYSTEM_DIRS):  # e.g. systemd-resolved's file under /run
        args += ["--ro-bind-try", str(resolv), str(resolv)]
    size = ["--size", str(tmp_mb * 1024 * 1024)] if tmp_mb and tmpfs_size_works() else []
    # /dev is a tmpfs too: read-only, and /dev/shm capped like /tmp (memory a command could fill)
    args += ["--proc", "/proc", "--dev", "/dev", *size, "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]  # noqa: S108 - a fresh tmpfs mounted inside the sandbox, not a host temp file
    args += [*size, "--tmpfs", "/tmp"]  # noqa: S108 - a fresh tmpfs mounted inside the sandbox, not a host temp file
    ws = Path(os.path.realpath(workdir))
    for h in hide:
        if _under(h, SYSTEM_DIRS) and not _under(h, [str(ws)]) and os.path.isdir(h):
            args += ["--tmpfs", str(h)]
    return [*args, "--bind", str(ws), str(ws), "--chdir", str(ws)]


def sandbox_env(workdir: Path) -> dict[str, str]:
    """The environment of bwrap itself and so of the command (PID 1 inside shows bwrap's)."""
    env = minimal_env(str(Path(os.path.realpath(workdir))))
    env["PATH"] = SANDBOX_PATH
    return env


def _probe(disable_userns: bool) -> str | None:
    """Run `true` in a real sandbox; None when it works, else what went wrong."""
    with tempfile.TemporaryDirectory(prefix="ania-bwrap-probe-") as ws:
        argv = [*bwrap_args(Path(ws), disable_userns=disable_userns), "/bin/sh", "-c", "echo ok > probe; cat probe"]
        try:
            done = subprocess.run(argv, check=False, env=sandbox_env(Path(ws)), capture_output=True,  # noqa: S603 - argv is bwrap's own arguments and a constant probe command
                                  timeout=PROBE_TIMEOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        except (OSError, subprocess.SubprocessError) as e:
            return str(e)
        if done.returncode == 0 and done.stdout.strip() == b"ok":
            return None
        return (done.stderr.decode(errors="replace").strip() or f"exit code {done.returncode}")[:300]


@functools.cache
def tmpfs_size_works() -> bool:
    """Whether this bwrap can cap a tmpfs (`--size`, bubblewrap 0.8 and later)."""
    try:
        done = subprocess.run([bwrap_path() or "bwrap", "--help"], check=False, capture_output=True,  # noqa: S603 - the configured bwrap binary with a constant --help
                              timeout=PROBE_TIMEOUT, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return False
    return b"--size" in done.stdout


@functools.cache
def probe() -> tuple[bool, bool, str]:
    """(bwrap works, it supports --disable-userns, why not); computed once per process."""
    if not bwrap_path():
        return False, False, "bwrap is not installed (apt-get install bubblewrap)"
    error = _probe(True)
    if error is None:
        return True, True, ""
    if _probe(False) is None:  # an older bwrap without --disable-userns
        return True, False, ""
    return False, False, error


def bwrap_works() -> bool:
    return probe()[0]
