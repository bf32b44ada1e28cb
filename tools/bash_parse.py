"""Splitting a bash line into simple commands, so blacklist/whitelist regexes see each command.

Bash's grammar is large and a splitter whose idea of "inside a quote" drifts from bash's lets a
command hide inside what looks like one `ls`. So this lexer models a small subset exactly (quotes,
escapes, comments, operators, `(...)`, `$(...)`, `<(...)`, `${...}`), in one pass with an explicit
stack (no recursion, linear time), and records a *doubt* for everything else: here-documents,
`$'...'`, backticks, line continuations, comments holding quotes, `eval`/`source`/`trap`/shells and
other code it cannot see, command names computed at run time, unbalanced input, too many commands,
too deep nesting, too long lines. tools/bash.py never whitelists a doubtful line, and refuses it when
approval is off and a blacklist exists (the blacklist cannot be sure it saw every command).

Hand-written on purpose: `shlex` knows no operators or substitutions, and the bash parsers on PyPI (`bashlex`,
a GPL-licensed port of bash's parser; `tree-sitter-bash`) parse as much as they can but do not say where
their reading may differ from bash's, which is the one thing this security rule needs (the doubt).
"""

from __future__ import annotations

import codecs
import re
import warnings
from dataclasses import dataclass

MAX_LINE = 8192  # longer lines are not analysed: doubtful
MAX_SEGMENTS = 500  # simple commands per line; more is doubtful (all are still matched)
MAX_DEPTH = 10  # nesting of quotes, substitutions and parentheses; deeper is doubtful
MAX_PREFIXES = 16  # assignments, redirections and wrappers before one command; more is doubtful
MAX_WORK = 4 * MAX_LINE  # characters lexed per line, backtick, eval and `sh -c` bodies included

#: wrapper -> (its options that take a separate argument, positional arguments before the command)
_WRAPPERS: dict[str, tuple[str, int]] = {
    "sudo": ("-u -g -C -D -h -p -r -t -U -T", 0), "doas": ("-u -C", 0), "exec": ("-a", 0),
    "env": ("-u -C -S", 0), "time": ("-f -o", 0), "nice": ("-n", 0), "ionice": ("-c -n -p", 0),
    "timeout": ("-s -k", 1), "stdbuf": ("-i -o -e", 0), "xargs": ("-I -n -P -L -d -s -E -a", 0),
    "chroot": ("", 1), "function": ("", 1), "taskset": ("", 1), "chrt": ("", 1), "flock": ("-w -E", 1),
    "strace": ("-o -e -p -s -u -E", 0), "watch": ("-n -d", 0), "runuser": ("-u -g -G", 0), "prlimit": ("-p", 0),
    **dict.fromkeys(["command", "builtin", "nohup", "setsid", "busybox", "unshare", "setpriv", "nsenter", "ltrace",
                     "!", "{", "if", "then", "elif", "else", "do", "while", "until"], ("", 0)),
}
_SHELLS = frozenset(("sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "rbash"))
#: Commands that run code the line does not show, or change how later lines parse.
_OPAQUE = frozenset(("eval", "source", ".", "trap", "alias", "shopt", "hash", "enable", "coproc", "case",
                     "select", "mapfile", "readarray", "fc", *_SHELLS))
_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
REDIR = re.compile(r"\d*(<<<|<<-?|<>|<&|>&|&>>?|>>|>\||<(?!\()|>(?!\())(.*)", re.S)  # `<(` is a word
_DYNAMIC = re.compile(r"[$`*?]|[<>]\(|\[.*\]|\{.*(,|\.\.).*\}")
_COMMENT_DOUBT = re.compile(r"['\"`$\\]")
_CRUDE_CUT = re.compile(r"[;&|()\n`{}]+|\$'|<<")
_UNESCAPE_TICK = re.compile(r"\\([\\`$])")


@dataclass(frozen=True)
class Analysis:
    """Every simple command (substitution bodies included) as written, the texts the blacklist is
    matched against, and why the analysis may have missed something (empty: sure)."""

    segments: tuple[str, ...]
    views: tuple[str, ...]
    doubts: tuple[str, ...]

    @property
    def sure(self) -> bool:
        return not self.doubts


class _Frame:
    """One open construct: `top`, `sub` ($( <( >(, part of a word), `group` ( ... ), `dq` or `param` (${)."""

    __slots__ = ("kind", "redir", "start", "word")

    def __init__(self, kind: str, start: int) -> None:
        self.kind, self.start, self.word, self.redir = kind, start, False, ""


def _lex(s: str, segs: list[str], doubts: list[str], bodies: list[str]) -> None:
    """Append the simple commands of `s` to `segs`, its backtick bodies to `bodies`, doubts to `doubts`."""
    _Lexer(s, segs, doubts, bodies).run()


class _Lexer:
    """One pass over a line: the position, the stack of open constructs, and where the findings go.

    Each character is read by the first of three readers that knows it: what reads the same in every
    construct (`_anywhere`), quotes and substitutions opening outside "..." and ${...} (`_opening`),
    and the rest of the plain shell syntax (`_plain`)."""

    def __init__(self, s: str, segs: list[str], doubts: list[str], bodies: list[str]) -> None:
        self.s, self.i, self.n = s, 0, len(s)
        self.stack = [_Frame("top", 0)]
        self.segs, self.doubts, self.bodies = segs, doubts, bodies

    def run(self) -> None:
        s = self.s
        while self.i < self.n:
            f, c, nxt = self.stack[-1], s[self.i], s[self.i + 1 : self.i + 2]
            redir, f.redir = f.redir, ""
            if not (self._anywhere(f, c, nxt) or self._opening(f, c, nxt)):
                self._plain(f, c, nxt, redir)
        if len(self.stack) > 1:
            self.doubts.append("an unclosed quote, substitution or parenthesis")
        for f in reversed(self.stack):
            if f.kind not in ("dq", "param"):
                self.flush(f, self.n)

    def flush(self, f: _Frame, end: int) -> None:
        if seg := self.s[f.start : end].strip(" \t\n"):  # bash's blanks only: `\v` is part of a word
            self.segs.append(seg)

    def push(self, kind: str, start: int) -> bool:
        if len(self.stack) >= MAX_DEPTH:
            self.doubts.append(f"nesting deeper than {MAX_DEPTH} levels")
            return False
        self.stack.append(_Frame(kind, start))
        return True

    def _anywhere(self, f: _Frame, c: str, nxt: str) -> bool:
        """Backticks, `$(`, `${` and backslashes, in any construct, and the inside of "..." and ${...}."""
        if c == "`":
            self._backticks(f)
        elif c == "$" and nxt in ("(", "{"):
            f.word, self.i = True, self.i + (2 if self.push("sub" if nxt == "(" else "param", self.i + 2) else 1)
        elif c == "\\":
            self._backslash(f, nxt)
        elif f.kind in ("dq", "param"):
            if c == ('"' if f.kind == "dq" else "}"):
                self.stack.pop()
            elif f.kind == "param" and c in "'\"{":
                self.doubts.append("quotes or braces inside ${...}")
            self.i += 1
        else:
            return False
        return True

    def _backticks(self, f: _Frame) -> None:
        """The body is lexed later, on its own."""
        s, n, i = self.s, self.n, self.i
        j = i + 1
        while j < n and s[j] != "`":
            j += 2 if s[j] == "\\" else 1
        self.doubts.append("backticks" if j < n else "an unclosed backtick")
        self.bodies.append(_UNESCAPE_TICK.sub(r"\1", s[i + 1 : j]))
        f.word, self.i = True, j + 1

    def _backslash(self, f: _Frame, nxt: str) -> None:
        if f.kind == "param" or (nxt == "\n" and f.kind != "dq"):
            self.doubts.append("a backslash inside ${...}" if f.kind == "param" else "a line continuation")
        f.word, self.i = f.word or nxt != "\n", self.i + 2  # bash drops backslash-newline before reading words

    def _opening(self, f: _Frame, c: str, nxt: str) -> bool:
        """Quotes and substitutions that open outside "..." and ${...}: '...', $'...', "...", <( and >(."""
        s, n, i = self.s, self.n, self.i
        if c == "'":
            j = s.find("'", i + 1)
            if j < 0:
                self.doubts.append("an unclosed quote")
            f.word, self.i = True, (n if j < 0 else j + 1)
        elif c == "$" and nxt == "'":
            j = i + 2
            while j < n and s[j] != "'":
                j += 2 if s[j] == "\\" else 1
            self.doubts.append("$'...' quoting")
            f.word, self.i = True, j + 1
        elif c == '"' or (c == "$" and nxt == '"'):
            f.word, self.i = True, i + ((1 if c == '"' else 2) if self.push("dq", i) else 1)
        elif c in "<>" and nxt == "(":  # process substitution
            f.word, self.i = True, i + (2 if self.push("sub", i + 2) else 1)
        else:
            return False
        return True

    def _plain(self, f: _Frame, c: str, nxt: str, redir: str) -> None:
        """Comments, blanks, redirections, control operators, parentheses and word characters."""
        if c == "#" and not f.word:  # a comment, to the end of the line
            self._comment(f)
        elif c in " \t":
            f.word, self.i = False, self.i + 1
        elif c in "<>":
            self._redirection(f, c)
        elif c in ";&|\n":
            if not ((c == "&" and (redir or nxt == ">")) or (c == "|" and redir == ">")):
                self.flush(f, self.i)  # a control operator; `>&`, `<&`, `&>` and `>|` are redirections
                f.start = self.i + 1
            f.word, self.i = False, self.i + 1
        elif c == "(":
            self.flush(f, self.i)
            if not self.push("group", self.i + 1):
                f.start = self.i + 1
            self.i += 1
        elif c == ")":
            self._close(f)
        else:
            f.word, self.i = True, self.i + 1

    def _comment(self, f: _Frame) -> None:
        s, i = self.s, self.i
        j = s.find("\n", i)
        j = self.n if j < 0 else j
        if _COMMENT_DOUBT.search(s, i, j):
            self.doubts.append("a comment holding quotes, `$` or backslashes")
        self.flush(f, i)
        f.start, self.i = j, j

    def _redirection(self, f: _Frame, c: str) -> None:
        s, i = self.s, self.i
        if s.startswith("<<", i) and not s.startswith("<<<", i):
            self.doubts.append("a here-document (<<)")
        step = 3 if s.startswith("<<<", i) else 2 if s.startswith("<<", i) else 1
        f.word, f.redir, self.i = False, c, i + step

    def _close(self, f: _Frame) -> None:
        self.flush(f, self.i)
        if f.kind in ("sub", "group"):
            self.stack.pop()
            if f.kind == "group":
                self.stack[-1].start, self.stack[-1].word = self.i + 1, False
        else:
            self.doubts.append("an unbalanced `)`")
            f.start, f.word = self.i + 1, False
        self.i += 1


def words(s: str) -> list[tuple[str, str]]:
    """Shell words of a simple command as (raw text, value with quotes and escapes removed)."""
    words: list[tuple[str, str]] = []
    i, n = 0, len(s)
    while i < n:
        if s[i] in " \t\n":
            i += 1
            continue
        start, val = i, list[str]()
        while i < n and s[i] not in " \t\n":
            c = s[i]
            if (c in "<>" or s.startswith("&>", i)) and val and s[i - 1] not in "<>&" and not "".join(val).isdigit():
                break  # a redirection operator starts a word of its own: `rm>x` is `rm` and `>x`
            if c == "\\":
                val.append(s[i + 1 : i + 2])
                i += 2
            elif c == "$" and s.startswith("'", i + 1):
                j = i + 2
                while j < n and s[j] != "'":
                    j += 2 if s[j] == "\\" else 1
                try:
                    with warnings.catch_warnings():  # bash's escapes are not all Python's
                        warnings.simplefilter("ignore")
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


def command_words(seg: str) -> tuple[list[str], list[tuple[str, str]]]:
    """Normalized views of one simple command (prefixes dropped one by one) and its words from the command on."""
    ws = words(seg)
    views, k = [seg], 0
    while k < len(ws):
        raw, val = ws[k]
        redirect = REDIR.fullmatch(raw)
        if _ASSIGN.match(raw):
            k += 1
        elif redirect:  # its target is the next word when not glued to it
            k += 1 if redirect.group(2) else 2
        elif (wrapper := _WRAPPERS.get(val.rsplit("/", 1)[-1])) is not None:
            takes, positional = wrapper[0].split(), wrapper[1]
            k += 1
            while k < len(ws) and ws[k][1].startswith("-") and ws[k][1] != "-":
                opt = ws[k][1]
                k += 2 if opt in takes else 1
                if opt == "--":
                    break
            k += positional
        else:
            break
        if len(views) <= MAX_PREFIXES:  # past that, bounded work: the caller doubts
            views.append(" ".join(r for r, _ in ws[k:]))
    return views, ws[k:]


def _views(seg: str, doubts: list[str]) -> tuple[list[str], list[str]]:
    """Views of one simple command for the blacklist, and the shell code it runs itself (sh -c, eval)."""
    views, ws = command_words(seg)
    if len(views) > MAX_PREFIXES:
        doubts.append(f"more than {MAX_PREFIXES} assignments, redirections or wrappers before a command")
    if not ws:
        return views, []
    (raw, val), rest, k = ws[0], [], 1
    while k < len(ws):  # the arguments, redirections left out
        redirect = REDIR.fullmatch(ws[k][0])
        k += (1 if redirect.group(2) else 2) if redirect else 1
        rest += [] if redirect else [ws[k - 1]]
    name = val.rsplit("/", 1)[-1]
    views.append(" ".join([name, *(r for r, _ in rest)]))
    views.append(" ".join([name, *(v for _, v in rest)]))
    if _DYNAMIC.search(raw):
        doubts.append(f"a command name computed at run time ({raw[:40]})")
    elif name in _OPAQUE:
        doubts.append(f"`{name}` runs code or changes parsing in ways the line does not show")
    if name == "eval":
        return views, [" ".join(v for _, v in rest)]
    if name in _SHELLS:
        for j, (_, v) in enumerate(rest):
            if not v.startswith("-") or v.startswith("--"):
                break
            if "c" in v and j + 1 < len(rest):
                return views, [rest[j + 1][1]]
    return views, []


def _pieces(line: str) -> list[str]:
    """The line cut at every operator character, quotes ignored: for a doubtful line the blacklist
    also sees these, in case a command hid from the lexer (errs towards finding too much)."""
    return [p for p in (q.strip(" \t'\"") for q in _CRUDE_CUT.split(line)) if p]


def parse_line(line: str) -> Analysis:
    """Analyse a command line once: bounded work, no recursion, doubts instead of guesses."""
    if len(line) > MAX_LINE:
        return Analysis((), (line, *_pieces(line)), (f"longer than {MAX_LINE} characters",))
    segs: list[str] = []
    doubts: list[str] = []
    views = [line]
    work, done, budget = [line], 0, MAX_WORK
    while work:
        text = work.pop()
        budget -= len(text)
        if budget < 0:
            doubts.append("too much nested code to check")
            break
        bodies: list[str] = []
        _lex(text, segs, doubts, bodies)
        while done < len(segs):
            seg_views, scripts = _views(segs[done], doubts)
            views.extend(seg_views)
            bodies.extend(scripts)
            done += 1
        work.extend(bodies)
    if len(segs) > MAX_SEGMENTS:
        doubts.append(f"more than {MAX_SEGMENTS} simple commands")
    if doubts:
        views.extend(_pieces(line))
    return Analysis(tuple(segs), tuple(views), tuple(dict.fromkeys(doubts)))


def split_commands(line: str) -> tuple[list[str], bool]:
    """The simple commands of a line (substitution and `sh -c` bodies included), and whether it is sure."""
    a = parse_line(line)
    return list(a.segments), a.sure


def analyse(line: str) -> tuple[list[str], list[str], bool]:
    """(every simple command, the views the blacklist is matched against, understood fully)."""
    a = parse_line(line)
    return list(a.segments), list(a.views), a.sure
