"""Splitting a bash line into simple commands, so blacklist/whitelist regexes see each command.

Used by tools/bash.py; see its docstring for what the regexes can and cannot stop.
"""

from __future__ import annotations

import codecs
import re

MAX_SEGMENTS = 500  # simple commands analysed per line; a line with more is never whitelisted

#: wrapper -> (its options that take a separate argument, positional arguments before the command)
_WRAPPERS: dict[str, tuple[str, int]] = {
    "sudo": ("-u -g -C -D -h -p -r -t -U -T", 0), "doas": ("-u -C", 0), "exec": ("-a", 0),
    "env": ("-u -C -S", 0), "time": ("-f -o", 0), "nice": ("-n", 0), "ionice": ("-c -n -p", 0),
    "timeout": ("-s -k", 1), "stdbuf": ("-i -o -e", 0), "xargs": ("-I -n -P -L -d -s -E -a", 0),
    "chroot": ("", 1),
    **dict.fromkeys("command builtin nohup setsid busybox ! { if then elif else do while until".split(), ("", 0)),
}


_SHELLS = frozenset(("sh", "bash", "dash", "zsh", "ksh", "ash", "mksh"))
_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_REDIR = re.compile(r"\d*(<<<|<<-?|<>|<&|>&|&>>?|>>|>\||<|>)(.*)", re.S)


def _close_paren(s: str, i: int) -> int:
    """Index of the `)` closing the `(` at i, or -1."""
    depth, quote = 0, None
    while i < len(s):
        c = s[i]
        if quote == "'":
            quote = None if c == "'" else quote
        elif c == "\\":
            i += 1
        elif quote == '"':
            quote = None if c == '"' else quote
        elif c in "'\"":
            quote = c
        elif c in "()":
            depth += 1 if c == "(" else -1
            if depth == 0:
                return i
        i += 1
    return -1


def _close_backtick(s: str, i: int) -> int:
    j = i + 1
    while j < len(s) and s[j] != "`":
        j += 2 if s[j] == "\\" else 1
    return j if j < len(s) else -1


def split_commands(line: str) -> tuple[list[str], bool]:
    """The simple commands of a line, substitution bodies included, and whether it parsed cleanly."""
    segs: list[str] = []
    buf: list[str] = []
    ok, quote, i, n = True, None, 0, len(line)

    def flush() -> None:
        seg = "".join(buf).strip()
        if seg:
            segs.append(seg)
        buf.clear()

    while i < n:
        c = line[i]
        if quote == "'":
            quote = None if c == "'" else quote
            buf.append(c)
            i += 1
            continue
        if c == "\\":
            buf.append(line[i : i + 2])
            i += 2
            continue
        tick = c == "`"
        if tick or (line.startswith("(", i + 1) and (c == "$" or (c in "<>" and quote is None))):
            end = _close_backtick(line, i) if tick else _close_paren(line, i + 1)
            body = line[i + (1 if tick else 2) : end if end >= 0 else n]
            inner, inner_ok = split_commands(body.replace("\\`", "`") if tick else body)
            segs.extend(inner)
            ok = ok and inner_ok and end >= 0
            stop = n if end < 0 else end + 1
            buf.append(line[i:stop])
            i = stop
            continue
        if quote == '"':
            quote = None if c == '"' else quote
        elif c in "'\"":
            quote = c
        elif c in ";&|()\n":
            prev, nxt = line[i - 1 : i], line[i + 1 : i + 2]
            redirection = (c == "&" and (prev in ("<", ">") or nxt == ">")) or (c == "|" and prev == ">")
            if not redirection:
                flush()
                i += 1
                continue
        buf.append(c)
        i += 1
    flush()
    return segs, ok and quote is None


def _words(s: str) -> list[tuple[str, str]]:
    """Shell words of a simple command as (raw text, value with quotes and escapes removed)."""
    words: list[tuple[str, str]] = []
    i, n = 0, len(s)
    while i < n:
        if s[i].isspace():
            i += 1
            continue
        start, val = i, []
        while i < n and not s[i].isspace():
            c = s[i]
            if c == "\\":
                val.append(s[i + 1 : i + 2])
                i += 2
            elif c == "$" and s.startswith("'", i + 1):
                j = i + 2
                while j < n and s[j] != "'":
                    j += 2 if s[j] == "\\" else 1
                try:
                    val.append(codecs.decode(s[i + 2 : j], "unicode_escape"))
                except (UnicodeError, ValueError):
                    val.append(s[i + 2 : j])
                i = j + 1
            elif c in "'\"":
                j = i + 1
                while j < n and s[j] != c:
                    if c == '"' and s[j] == "\\" and s[j + 1 : j + 2] in ('"', "\\", "$", "`"):
                        j += 1
                    val.append(s[j : j + 1])
                    j += 1
                i = j + 1
            else:
                val.append(c)
                i += 1
        words.append((s[start:i], "".join(val)))
    return words


def _views(seg: str) -> tuple[list[str], list[str]]:
    """Views of one simple command for the blacklist, and the shell code it runs itself (bash -c, eval)."""
    words = _words(seg)
    views, k = [seg], 0
    while k < len(words):
        raw, val = words[k]
        redirect = _REDIR.fullmatch(raw)
        if _ASSIGN.match(raw):
            k += 1
        elif redirect:
            k += 1 if redirect.group(2) else 2
        elif (wrapper := _WRAPPERS.get(val.rsplit("/", 1)[-1])) is not None:
            takes, positional = wrapper[0].split(), wrapper[1]
            k += 1
            while k < len(words) and words[k][1].startswith("-") and words[k][1] != "-":
                k += 2 if words[k][1] in takes else 1
                if words[k - 1][1] == "--":
                    break
            k += positional
        else:
            break
        views.append(" ".join(r for r, _ in words[k:]))
    if k >= len(words):
        return views, []
    name = words[k][1].rsplit("/", 1)[-1]
    rest = words[k + 1 :]
    views.append(" ".join([name, *(r for r, _ in rest)]))
    views.append(" ".join([name, *(v for _, v in rest)]))
    if name == "eval":
        return views, [" ".join(v for _, v in rest)]
    if name in _SHELLS:
        for j, (_, v) in enumerate(rest):
            if not v.startswith("-") or v.startswith("--"):
                break
            if "c" in v and j + 1 < len(rest):
                return views, [rest[j + 1][1]]
    return views, []


def analyse(line: str) -> tuple[list[str], list[str], bool]:
    """(every simple command, the views the blacklist is matched against, parsed cleanly)."""
    segs, ok = split_commands(line)
    views = [line]
    i = 0
    while i < len(segs):
        seg_views, scripts = _views(segs[i])
        views.extend(seg_views)
        for script in scripts:
            inner, inner_ok = split_commands(script)
            segs.extend(inner)
            ok = ok and inner_ok
        i += 1
        if len(segs) > MAX_SEGMENTS:
            return segs, views, False
    return segs, views, ok


# --- the tool ---------------------------------------------------------------------------------


